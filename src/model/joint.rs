//! Bilateral joints between two rigid bodies (or a body and the world): the
//! equality constraints Θ(q) = 0 of Anitescu–Potra (1) and their gradients
//! ν = ∇Θ in velocity coordinates, which enter a step as the rows (13)
//! νᵀ vˡ⁺¹ = 0 and are eliminated exactly by Theorem 2.1's Schur complement.

use super::rigid::{Dimension, RigidSystem};
use nalgebra::{DMatrix, DVector, UnitQuaternion, Vector3};

/// Which relative motions a joint removes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JointKind {
    /// The plane's revolute joint: the anchor points coincide (2 rows).
    Pin,
    /// A ball-and-socket joint in space: the anchor points coincide (3 rows).
    Ball,
    /// A revolute joint in space: the anchors coincide and the axis, fixed in
    /// both bodies, stays common (3 + 2 rows). Axes in each body's frame.
    Hinge {
        /// The hinge axis in the first body's frame (unit).
        axis_a: Vector3<f64>,
        /// The same axis in the second body's (or the world's) frame (unit).
        axis_b: Vector3<f64>,
    },
    /// No relative motion: the anchors coincide and the relative orientation
    /// stays `rest` (2 + 1 rows in the plane, 3 + 3 in space).
    Fixed {
        /// The relative orientation R_b⁻¹ R_a held by the joint.
        rest: UnitQuaternion<f64>,
    },
}

/// A joint between body `a` and body `b` (`None`: the world).
#[derive(Debug, Clone, PartialEq)]
pub struct Joint {
    /// Unique name.
    pub name: String,
    /// What it constrains.
    pub kind: JointKind,
    /// The first body.
    pub a: usize,
    /// The second body, or the fixed world frame.
    pub b: Option<usize>,
    /// The anchor in a's body frame, m.
    pub anchor_a: Vector3<f64>,
    /// The anchor in b's body frame (world frame when b is the world), m.
    pub anchor_b: Vector3<f64>,
}

/// The equality rows of all joints at some q: Θ(q) and the gradients
/// ν = [ν⁽¹⁾ … ν⁽ᵐ⁾] (one column per row, in velocity coordinates).
#[derive(Debug, Clone, PartialEq)]
pub struct JointRows {
    /// Θ(q), m or rad.
    pub values: DVector<f64>,
    /// ν, dof × m.
    pub gradients: DMatrix<f64>,
}

impl Joint {
    /// Number of equality rows.
    pub fn rows(&self, dimension: Dimension) -> usize {
        match (self.kind, dimension) {
            (JointKind::Pin, _) => 2,
            (JointKind::Ball, _) => 3,
            (JointKind::Hinge { .. }, _) => 5,
            (JointKind::Fixed { .. }, Dimension::Planar) => 3,
            (JointKind::Fixed { .. }, Dimension::Spatial) => 6,
        }
    }

    /// The anchor of each side in the world at q, m.
    pub fn anchors(&self, system: &RigidSystem, q: &DVector<f64>) -> (Vector3<f64>, Vector3<f64>) {
        let pa = system.world_point(q, self.a, &self.anchor_a);
        let pb = match self.b {
            Some(b) => system.world_point(q, b, &self.anchor_b),
            None => self.anchor_b,
        };
        (pa, pb)
    }
}

/// Θ and ν of every joint of the system at q.
pub fn joint_rows(system: &RigidSystem, q: &DVector<f64>) -> JointRows {
    let dim = system.dimension;
    let m: usize = system.joints.iter().map(|j| j.rows(dim)).sum();
    let dof = system.dof();
    let mut values = DVector::zeros(m);
    let mut gradients = DMatrix::zeros(dof, m);
    let mut row = 0;
    let axes: Vec<Vector3<f64>> = match dim {
        Dimension::Planar => vec![Vector3::x(), Vector3::y()],
        Dimension::Spatial => vec![Vector3::x(), Vector3::y(), Vector3::z()],
    };
    let rotation = |body: Option<usize>| match body {
        Some(i) => system.rotation(q, i),
        None => UnitQuaternion::identity(),
    };
    for joint in &system.joints {
        let (pa, pb) = joint.anchors(system, q);
        // Coincident anchors: Θ = p_a − p_b along each world axis.
        for axis in &axes {
            values[row] = axis.dot(&(pa - pb));
            let mut column = gradients.column_mut(row);
            system.add_point_gradient(q, joint.a, &pa, axis, 1.0, &mut column);
            if let Some(b) = joint.b {
                system.add_point_gradient(q, b, &pb, axis, -1.0, &mut column);
            }
            row += 1;
        }
        let (ra, rb) = (rotation(Some(joint.a)), rotation(joint.b));
        match joint.kind {
            JointKind::Pin | JointKind::Ball => {}
            JointKind::Hinge { axis_a, axis_b } => {
                // The axis of a stays orthogonal to two vectors orthogonal to b's
                // axis: Θ = (R_a â)·(R_b pₖ); dΘ/dt = (ω_a − ω_b)·(A × Pₖ).
                let a_world = ra * axis_a;
                let (p1, p2) = orthonormal_pair(&axis_b);
                for p in [p1, p2] {
                    let p_world = rb * p;
                    values[row] = a_world.dot(&p_world);
                    let w = a_world.cross(&p_world);
                    let mut column = gradients.column_mut(row);
                    system.add_rotation_gradient(q, joint.a, &w, 1.0, &mut column);
                    if let Some(b) = joint.b {
                        system.add_rotation_gradient(q, b, &w, -1.0, &mut column);
                    }
                    row += 1;
                }
            }
            JointKind::Fixed { rest } => match dim {
                Dimension::Planar => {
                    let angle = |r: UnitQuaternion<f64>| r.scaled_axis().z;
                    let target = angle(rest);
                    let relative = angle(rb.inverse() * ra);
                    values[row] = wrap_angle(relative - target);
                    let mut column = gradients.column_mut(row);
                    system.add_rotation_gradient(q, joint.a, &Vector3::z(), 1.0, &mut column);
                    if let Some(b) = joint.b {
                        system.add_rotation_gradient(q, b, &Vector3::z(), -1.0, &mut column);
                    }
                    row += 1;
                }
                Dimension::Spatial => {
                    // The world-frame rotation error of a relative to where the
                    // joint holds it; its rate is ω_a − ω_b to first order.
                    let error = (ra * (rb * rest).inverse()).scaled_axis();
                    for axis in &axes {
                        values[row] = axis.dot(&error);
                        let mut column = gradients.column_mut(row);
                        system.add_rotation_gradient(q, joint.a, axis, 1.0, &mut column);
                        if let Some(b) = joint.b {
                            system.add_rotation_gradient(q, b, axis, -1.0, &mut column);
                        }
                        row += 1;
                    }
                }
            },
        }
    }
    JointRows { values, gradients }
}

/// Two unit vectors orthogonal to `axis` and to each other.
pub fn orthonormal_pair(axis: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let n = axis.normalize();
    let helper = if n.x.abs() < 0.9 {
        Vector3::x()
    } else {
        Vector3::y()
    };
    let p1 = (helper - n * n.dot(&helper)).normalize();
    (p1, n.cross(&p1))
}

/// An angle in (−π, π].
pub fn wrap_angle(angle: f64) -> f64 {
    let two_pi = 2.0 * std::f64::consts::PI;
    let wrapped = angle.rem_euclid(two_pi);
    if wrapped > std::f64::consts::PI {
        wrapped - two_pi
    } else {
        wrapped
    }
}
