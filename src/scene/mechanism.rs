//! The mechanism part of a rigid scene: joints, force elements and loads,
//! named by body and given in the world at the initial pose, resolved into
//! body-frame anchors and axes.

use super::spec::{JointKindSpec, RigidSpec};
use super::{Checker, SceneError};
use crate::model::{Dimension, ForceElement, Joint, JointKind, Load, Measure, RigidSystem, Twist};
use nalgebra::{DVector, UnitQuaternion, Vector3};
use std::collections::HashSet;

/// Joints, force elements and loads, resolved against the bodies at the
/// initial pose q (anchors and axes given in the world become body-frame).
pub(super) fn build_mechanism(
    spec: &RigidSpec,
    system: &mut RigidSystem,
    q: &DVector<f64>,
    check: &Checker<'_>,
) -> Result<(), SceneError> {
    let dim = spec.dimension;
    let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
    let mut names = HashSet::new();
    let body_names: Vec<String> = system.bodies.iter().map(|b| b.name.clone()).collect();
    let fixed: Vec<bool> = (0..body_names.len()).map(|i| system.is_fixed(i)).collect();
    let body = |section: &'static str,
                quoted: &str,
                field: &'static str,
                name: &str,
                path: String|
     -> Result<usize, SceneError> {
        let i = body_names.iter().position(|b| b == name).ok_or_else(|| {
            check.error(
                &[section, quoted, field],
                path.clone(),
                format!("no body named `{name}`"),
            )
        })?;
        if fixed[i] {
            return Err(check.error(
                &[section, quoted, field],
                path,
                format!(
                    "`{name}` is fixed in place: joints, force elements and loads act on moving bodies"
                ),
            ));
        }
        Ok(i)
    };
    let local = |system: &RigidSystem, i: Option<usize>, world: Vector3<f64>| match i {
        Some(i) => system.rotation(q, i).inverse() * (world - system.position(q, i)),
        None => world,
    };
    let mut joints = Vec::new();
    for (i, j) in spec.joints.iter().enumerate() {
        let quoted = format!("\"{}\"", j.name);
        let at = |field: &'static str| vec!["joints", quoted.as_str(), field];
        let path = |field: &str| format!("joints[{i}].{field}");
        if !names.insert(j.name.clone()) {
            return Err(check.error(&at("name"), path("name"), "duplicate joint name"));
        }
        let a = body("joints", &quoted, "a", &j.a, path("a"))?;
        let b = match &j.b {
            Some(name) => Some(body("joints", &quoted, "b", name, path("b"))?),
            None => None,
        };
        if b == Some(a) {
            return Err(check.error(&at("b"), path("b"), "a joint needs two different bodies"));
        }
        if !finite(&j.at) {
            return Err(check.error(&at("at"), path("at"), "must be finite"));
        }
        let point = Vector3::from(j.at);
        let rotation =
            |i: Option<usize>| i.map_or(UnitQuaternion::identity(), |i| system.rotation(q, i));
        let kind = match (j.kind, dim) {
            (JointKindSpec::Pin, Dimension::Planar) => JointKind::Pin,
            (JointKindSpec::Ball, Dimension::Spatial) => JointKind::Ball,
            (JointKindSpec::Hinge(axis), Dimension::Spatial) => {
                let axis = Vector3::from(axis);
                if !finite(axis.as_slice()) || axis.norm() == 0.0 {
                    return Err(check.error(
                        &at("kind"),
                        path("kind"),
                        "the hinge axis must be a non-zero finite vector",
                    ));
                }
                let axis = axis.normalize();
                JointKind::Hinge {
                    axis_a: rotation(Some(a)).inverse() * axis,
                    axis_b: rotation(b).inverse() * axis,
                }
            }
            (JointKindSpec::Fixed, _) => JointKind::Fixed {
                rest: rotation(b).inverse() * rotation(Some(a)),
            },
            (JointKindSpec::Pin, Dimension::Spatial) => {
                return Err(check.error(
                    &at("kind"),
                    path("kind"),
                    "`Pin` is the planar revolute joint; in space use `Hinge((x, y, z))` or `Ball`",
                ));
            }
            (_, Dimension::Planar) => {
                return Err(check.error(
                    &at("kind"),
                    path("kind"),
                    "planar scenes take `Pin` or `Fixed` joints",
                ));
            }
        };
        joints.push(Joint {
            name: j.name.clone(),
            kind,
            a,
            b,
            anchor_a: local(system, Some(a), point),
            anchor_b: local(system, b, point),
        });
    }
    system.joints = joints;

    let mut elements = Vec::new();
    for (i, e) in spec.elements.iter().enumerate() {
        let quoted = format!("\"{}\"", e.name);
        let at = |field: &'static str| vec!["elements", quoted.as_str(), field];
        let path = |field: &str| format!("elements[{i}].{field}");
        if !names.insert(e.name.clone()) {
            return Err(check.error(&at("name"), path("name"), "duplicate joint or element name"));
        }
        let a = body("elements", &quoted, "a", &e.a, path("a"))?;
        let b = match &e.b {
            Some(name) => Some(body("elements", &quoted, "b", name, path("b"))?),
            None => None,
        };
        if b == Some(a) {
            return Err(check.error(&at("b"), path("b"), "an element needs two different bodies"));
        }
        let twist = match (e.measure, dim, e.axis) {
            (Measure::Angle, Dimension::Spatial, Some(axis))
                if finite(&axis) && Vector3::from(axis).norm() > 0.0 =>
            {
                let axis = Vector3::from(axis).normalize();
                let (reference, _) = crate::model::joint::orthonormal_pair(&axis);
                let inverse = |i: Option<usize>| {
                    i.map_or(UnitQuaternion::identity(), |i| system.rotation(q, i))
                        .inverse()
                };
                Some(Twist {
                    axis_a: inverse(Some(a)) * axis,
                    reference_a: inverse(Some(a)) * reference,
                    reference_b: inverse(b) * reference,
                })
            }
            (Measure::Angle, Dimension::Spatial, _) => {
                return Err(check.error(
                    &at("measure"),
                    path("axis"),
                    "a torsional (`Angle`) element in space needs a non-zero finite `axis: (x, y, z)`",
                ));
            }
            _ => None,
        };
        for (value, field) in [(e.stiffness, "stiffness"), (e.damping, "damping")] {
            if let Some(x) = value
                && !(x.is_finite() && x >= 0.0)
            {
                return Err(check.error(
                    &at(field),
                    path(field),
                    format!("must be ≥ 0, found {x}"),
                ));
            }
        }
        let point_a = match e.at_a {
            Some(p) => Vector3::from(p),
            None => system.position(q, a),
        };
        let point_b = match (e.at_b, b) {
            (Some(p), _) => Vector3::from(p),
            (None, Some(b)) => system.position(q, b),
            (None, None) if e.measure == Measure::Angle => Vector3::zeros(),
            (None, None) => {
                return Err(check.error(
                    &at("at_b"),
                    path("at_b"),
                    "an element attached to the world needs its world point `at_b`",
                ));
            }
        };
        if !finite(point_a.as_slice()) || !finite(point_b.as_slice()) {
            return Err(check.error(&at("at_a"), path("at_a"), "anchors must be finite"));
        }
        let mut element = ForceElement {
            name: e.name.clone(),
            kind: e.kind,
            measure: e.measure,
            a,
            b,
            anchor_a: local(system, Some(a), point_a),
            anchor_b: local(system, b, point_b),
            rest: 0.0,
            twist,
            stiffness: e.stiffness,
            damping: e.damping,
        };
        element.rest = match e.rest {
            Some(r) if r.is_finite() && (r >= 0.0 || e.measure == Measure::Angle) => r,
            Some(r) => {
                return Err(check.error(
                    &at("rest"),
                    path("rest"),
                    format!("a rest length must be finite and ≥ 0, found {r}"),
                ));
            }
            None => element.measure_at(system, q),
        };
        elements.push(element);
    }
    system.elements = elements;

    let mut loads = Vec::new();
    for (i, l) in spec.loads.iter().enumerate() {
        let quoted = format!("\"{}\"", l.body);
        let path = |field: &str| format!("loads[{i}].{field}");
        let index = body("loads", &quoted, "body", &l.body, path("body"))?;
        if !finite(&l.force) || !l.omega.is_finite() || !l.phase.is_finite() {
            return Err(check.error(
                &["loads", quoted.as_str(), "force"],
                path("force"),
                "force, omega and phase must be finite",
            ));
        }
        loads.push(Load {
            body: index,
            amplitude: Vector3::from(l.force),
            omega: l.omega,
            phase: l.phase,
        });
    }
    system.loads = loads;
    Ok(())
}
