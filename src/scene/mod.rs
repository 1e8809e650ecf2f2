//! Scene files (RON): loaded and validated in one place, turned into a
//! [`Model`], the initial [`State`] and the scene's [`Params`].
//!
//! A scene names its bodies, shapes, initial state, gravity, the stepper
//! settings (h, k edges, μ, duration …) and a camera hint for the viewer. Every
//! error names the file, the line and column, and the field. See `scenes/*.ron`
//! for examples and the README for the format.

pub mod comparison;
pub mod drawing;
pub mod generate;
pub mod granular;
mod linear;
mod locate;
pub mod magnitude;
mod mechanism;
pub mod overlap;
mod planar;
mod spec;
pub mod write;

pub use spec::{
    AffineContactSpec, BodySpec, CameraHint, ForceElementSpec, HarmonicSpec, JointKindSpec,
    JointSpec, LinearSpec, LoadSpec, Orientation, RigidSpec, SceneFile, SurfaceSpec, SystemSpec,
};

use crate::model::rigid::default_inertia;
use crate::model::{Body, Dimension, HalfSpace, ImpactCoefficients, Model, RigidSystem, State};
use crate::params::Params;
use locate::locate;
use magnitude::{MIN_INERTIA, MIN_MASS_OR_SIZE};
use nalgebra::{DVector, Quaternion, UnitQuaternion, Vector3};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a scene could not be loaded.
#[derive(Debug, Error)]
pub enum SceneError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file is longer than [`MAX_SCENE_BYTES`] (or does not end, like
    /// `/dev/zero`).
    #[error(
        "{}: larger than {} MiB, the most a {kind} file may hold (is it a {kind}?)",
        path.display(),
        MAX_SCENE_BYTES >> 20
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// What it should have been: "scene" or "snapshot".
        kind: &'static str,
    },
    /// The file is not valid RON for a scene, or a value is out of range.
    #[error("{}:{line}:{column}: {field}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The field, as a path like `bodies[2].mass` (or `syntax`).
        field: String,
        /// What is wrong and what is allowed.
        message: String,
    },
}

/// A loaded, validated scene.
#[derive(Debug, Clone)]
pub struct Scene {
    /// Display name.
    pub name: String,
    /// One paragraph on what the scene shows.
    pub description: String,
    /// Where it was loaded from.
    pub path: PathBuf,
    /// The mechanical model.
    pub model: Model,
    /// The initial state.
    pub initial: State,
    /// The scene's parameters (before CLI or panel overrides).
    pub params: Params,
    /// Where the viewer's camera should look.
    pub camera: CameraHint,
    /// The parsed file, for the viewer (surface sizes, drawing hints).
    pub file: SceneFile,
    /// The `drawing` section with coordinate names resolved (empty when none).
    pub drawing: Vec<drawing::Part>,
}

/// The most of a scene file that is read, bytes (16 MiB): a generated pile
/// of 5,000 bodies takes under 1 MB, and `run /dev/zero` stops here instead
/// of reading without end.
pub const MAX_SCENE_BYTES: u64 = 16 << 20;

impl Scene {
    /// Appends a body to a rigid scene: to its model and to its file (so that
    /// drawing and "save scene as" see it), validated like a body of a scene
    /// file. Errors name `path`, the line and column in `source` (the text the
    /// spec came from; empty for bodies made by code) and the field as
    /// `bodies[index]…`. Returns the body with its coordinates and velocities,
    /// which the caller appends to the state.
    pub fn add_body(
        &mut self,
        spec: &BodySpec,
        index: usize,
        source: &str,
        path: &Path,
    ) -> Result<BuiltBody, SceneError> {
        let check = Checker { source, path };
        let (Model::Rigid(system), SystemSpec::Rigid(file)) =
            (&mut self.model, &mut self.file.system)
        else {
            return Err(check.error(
                &["bodies"],
                "bodies",
                "a generalized linear system has no bodies to add to",
            ));
        };
        let numbers = spec
            .position
            .iter()
            .chain(&spec.velocity)
            .chain(&spec.angular_velocity)
            .chain(spec.inertia.iter().flatten())
            .chain(std::iter::once(&spec.mass));
        if let Some(x) = numbers.copied().find(|&x| !magnitude::allowed(x)) {
            return Err(check.error(
                &["bodies", format!("\"{}\"", spec.name).as_str()],
                format!("bodies[{index}]"),
                format!(
                    "must be finite and at most {:e} in magnitude (SI units), found {x:e}",
                    magnitude::MAX_MAGNITUDE
                ),
            ));
        }
        let mut names: HashSet<String> = system
            .bodies
            .iter()
            .map(|b| b.name.clone())
            .chain(system.surfaces.iter().map(|s| s.name.clone()))
            .collect();
        let built = build_body(spec, index, system.dimension, &mut names, &check)?;
        let added = system.push_body(built.body.clone(), built.impact);
        system.set_fixed(added, built.fixed);
        file.bodies.push(spec.clone());
        Ok(built)
    }

    /// Keeps the first `count` bodies of a rigid scene's model and file
    /// (removes bodies added by [`Self::add_body`]; bodies that joints,
    /// elements or loads name are kept).
    pub fn truncate_bodies(&mut self, count: usize) {
        if let Model::Rigid(system) = &mut self.model {
            system.truncate_bodies(count);
            let kept = system.bodies.len();
            if let SystemSpec::Rigid(file) = &mut self.file.system {
                file.bodies.truncate(kept);
            }
        }
    }

    /// The number of bodies (0 for a linear system).
    pub fn body_count(&self) -> usize {
        match &self.model {
            Model::Rigid(s) => s.bodies.len(),
            Model::Linear(_) => 0,
        }
    }
}

/// Loads and validates a scene file (reading at most [`MAX_SCENE_BYTES`]).
pub fn load(path: &Path) -> Result<Scene, SceneError> {
    let source = read_text(path, "scene")?;
    parse(&source, path)
}

/// The text of a scene or snapshot file (`kind` names which in errors),
/// reading at most [`MAX_SCENE_BYTES`]: `/dev/zero` stops there.
pub fn read_text(path: &Path, kind: &'static str) -> Result<String, SceneError> {
    use std::io::Read;
    let io = |source| SceneError::Io {
        path: path.to_owned(),
        source,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_SCENE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(io)?;
    if bytes.len() as u64 > MAX_SCENE_BYTES {
        return Err(SceneError::TooLarge {
            path: path.to_owned(),
            kind,
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let before = String::from_utf8_lossy(valid);
        SceneError::Invalid {
            path: path.to_owned(),
            line: before.matches('\n').count() + 1,
            column: before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1,
            field: "syntax".to_owned(),
            message: "the file is not UTF-8 text".to_owned(),
        }
    })
}

/// Parses and validates scene text; `path` names it in errors.
pub fn parse(source: &str, path: &Path) -> Result<Scene, SceneError> {
    // Editors on Windows may start the file with a UTF-8 byte-order mark,
    // which RON reads as a stray character before the opening `(`.
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    if comparison::is_comparison(source) {
        return Err(Checker { source, path }.error(
            &["Comparison"],
            "Comparison",
            "a comparison of two runs, not a scene: run it with `contactlab compare FILE`",
        ));
    }
    let options =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    let file: SceneFile = options.from_str(source).map_err(|e| ron_error(&e, path))?;
    check_magnitudes(source, path)?;
    build(file, source, path)
}

/// The magnitude rule over every number of a scene or snapshot text: the
/// first one that is not finite or exceeds [`magnitude::MAX_MAGNITUDE`] is
/// an error at its line and column.
pub fn check_magnitudes(source: &str, path: &Path) -> Result<(), SceneError> {
    match magnitude::first_violation(source) {
        Some((anchors, field, value)) => {
            let (line, column) = magnitude::position(source, &anchors);
            Err(SceneError::Invalid {
                path: path.to_owned(),
                line,
                column,
                field,
                message: format!(
                    "must be finite and at most {:e} in magnitude (SI units), found {value:e}",
                    magnitude::MAX_MAGNITUDE
                ),
            })
        }
        None => Ok(()),
    }
}

/// A RON parse error as a [`SceneError`] naming the file, the line and
/// column, and the field when RON names one.
pub fn ron_error(e: &ron::error::SpannedError, path: &Path) -> SceneError {
    let field = match &e.code {
        ron::Error::NoSuchStructField { found, .. } => found.clone(),
        ron::Error::MissingStructField { field, .. } => field.to_string(),
        ron::Error::DuplicateStructField { field, .. } => field.to_string(),
        _ => "syntax".to_owned(),
    };
    SceneError::Invalid {
        path: path.to_owned(),
        line: e.span.start.line,
        column: e.span.start.col,
        field,
        message: e.code.to_string(),
    }
}

/// An error at the field reached by following `anchors` (quoted names, field
/// names) through `source`, for checks made after parsing.
pub fn invalid_at(
    source: &str,
    path: &Path,
    anchors: &[&str],
    field: impl Into<String>,
    message: impl Into<String>,
) -> SceneError {
    Checker { source, path }.error(anchors, field, message)
}

struct Checker<'a> {
    source: &'a str,
    path: &'a Path,
}

impl Checker<'_> {
    /// An error at the field reached by following `anchors` through the text.
    fn error(
        &self,
        anchors: &[&str],
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> SceneError {
        let (line, column) = locate(self.source, anchors);
        SceneError::Invalid {
            path: self.path.to_owned(),
            line,
            column,
            field: field.into(),
            message: message.into(),
        }
    }

    /// A positive quantity the dynamics divide by, at least `min` (`unit`
    /// for the message).
    fn at_least(
        &self,
        value: f64,
        min: f64,
        unit: &str,
        anchors: &[&str],
        field: &str,
    ) -> Result<(), SceneError> {
        if !(value.is_finite() && value > 0.0) {
            Err(self.error(
                anchors,
                field,
                format!("must be a positive number, found {value}"),
            ))
        } else if value < min {
            Err(self.error(
                anchors,
                field,
                format!(
                    "must be at least {min:e} {unit} (the dynamics divide by it), found {value:e}"
                ),
            ))
        } else {
            Ok(())
        }
    }
}

fn build(file: SceneFile, source: &str, path: &Path) -> Result<Scene, SceneError> {
    let check = Checker { source, path };
    let params = file.params.clone();
    let (model, initial) = match &file.system {
        SystemSpec::Rigid(spec) => build_rigid(spec, &check)?,
        SystemSpec::Linear(spec) => linear::build_linear(spec, &check)?,
    };
    params.validate(&model.features()).map_err(|e| {
        check.error(
            &["params", e.field],
            format!("params.{}", e.field),
            e.message,
        )
    })?;
    if !file.allow_initial_overlap
        && let Some(found) = overlap::deepest(&model, &initial, params.edges)
    {
        let (name, field, message) = overlap::describe(&model, &found);
        let quoted = format!("\"{name}\"");
        let anchors: &[&str] = match &model {
            Model::Rigid(_) => &["bodies", quoted.as_str(), "position"],
            Model::Linear(_) => &["initial_position"],
        };
        return Err(check.error(anchors, field, message));
    }
    let names = drawing::coordinate_names(&model);
    let mut parts = Vec::new();
    for (i, part) in file.drawing.iter().enumerate() {
        let quoted = format!("\"{}\"", part.name);
        let resolved = drawing::resolve(part, &names).map_err(|(field, message)| {
            check.error(
                &[
                    "drawing",
                    quoted.as_str(),
                    field.split('.').next().unwrap_or(""),
                ],
                format!("drawing[{i}].{field}"),
                message,
            )
        })?;
        parts.push(resolved);
    }
    if let Some(name) = &file.camera.follow {
        let body = match &model {
            Model::Rigid(s) => s.body_index(name).is_some(),
            Model::Linear(_) => false,
        };
        if !body && !parts.iter().any(|p| &p.name == name) {
            return Err(check.error(
                &["camera", "follow"],
                "camera.follow",
                format!("no body or drawing part named `{name}`"),
            ));
        }
    }
    Ok(Scene {
        drawing: parts,
        name: file.name.clone(),
        description: file.description.clone(),
        path: path.to_owned(),
        model,
        initial,
        params,
        camera: file.camera.clone(),
        file,
    })
}

/// Checks that optional restitution coefficients lie in [0, 1].
fn impact_coefficients(
    normal: Option<f64>,
    tangential: Option<f64>,
    check: &Checker<'_>,
    anchors: &[&str],
    field: &str,
) -> Result<ImpactCoefficients, SceneError> {
    for (value, name) in [
        (normal, "restitution"),
        (tangential, "tangential_restitution"),
    ] {
        if let Some(e) = value
            && !(0.0..=1.0).contains(&e)
        {
            let mut at = anchors.to_vec();
            at.push(name);
            return Err(check.error(
                &at,
                format!("{field}.{name}"),
                format!("restitution must be in [0, 1], found {e}"),
            ));
        }
    }
    Ok(ImpactCoefficients { normal, tangential })
}

/// A body of a scene file, validated and turned into the model's body, its
/// material and its initial coordinates and velocities.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltBody {
    /// The model's body.
    pub body: Body,
    /// Its material's impact-law coefficients.
    pub impact: ImpactCoefficients,
    /// Its initial coordinates (x, y, θ or position and unit quaternion).
    pub q: Vec<f64>,
    /// Its initial velocities (angular velocity in body axes in space).
    pub v: Vec<f64>,
    /// Fixed in place.
    pub fixed: bool,
}

/// Validates body `i` of a rigid scene of dimension `dim`; `names` holds the
/// names taken so far (bodies and surfaces must differ).
fn build_body(
    b: &BodySpec,
    i: usize,
    dim: Dimension,
    names: &mut HashSet<String>,
    check: &Checker<'_>,
) -> Result<BuiltBody, SceneError> {
    let quoted = format!("\"{}\"", b.name);
    let at = |field: &'static str| vec!["bodies", quoted.as_str(), field];
    let name_of = |field: &str| format!("bodies[{i}].{field}");
    let written = format!("{:?}", b.name);
    csv_column_name(&b.name, check, &["bodies", &written], &name_of("name"))?;
    if !names.insert(b.name.clone()) {
        return Err(check.error(
            &["bodies", quoted.as_str(), quoted.as_str()],
            name_of("name"),
            format!(
                "duplicate name `{}`: body and surface names must be unique",
                b.name
            ),
        ));
    }
    check.at_least(
        b.mass,
        MIN_MASS_OR_SIZE,
        "kg",
        &at("mass"),
        &name_of("mass"),
    )?;
    check_shape(&b.shape, check, &at("shape"), &name_of("shape"))?;
    let inertia = match b.inertia {
        Some(j) => {
            let used: &[usize] = if dim == Dimension::Planar {
                &[2]
            } else {
                &[0, 1, 2]
            };
            for &a in used {
                check.at_least(
                    j[a],
                    MIN_INERTIA,
                    "kg·m²",
                    &at("inertia"),
                    &name_of("inertia"),
                )?;
            }
            if dim == Dimension::Spatial {
                triangle_inequality(j, check, &at("inertia"), &name_of("inertia"))?;
            }
            Vector3::from(j)
        }
        None => default_inertia(&b.shape, b.mass, dim),
    };
    let rotation = match b.orientation {
        Orientation::Angle(a) => UnitQuaternion::from_axis_angle(&Vector3::z_axis(), a),
        Orientation::AxisAngle(axis, angle) => {
            let axis = Vector3::from(axis);
            if axis.norm() == 0.0 || !axis.iter().all(|x| x.is_finite()) {
                return Err(check.error(
                    &at("orientation"),
                    name_of("orientation"),
                    "the rotation axis must be a non-zero vector",
                ));
            }
            UnitQuaternion::from_axis_angle(&nalgebra::Unit::new_normalize(axis), angle)
        }
        Orientation::Quaternion([w, x, y, z]) => {
            let quat = Quaternion::new(w, x, y, z);
            if quat.norm() == 0.0 || !quat.coords.iter().all(|x| x.is_finite()) {
                return Err(check.error(
                    &at("orientation"),
                    name_of("orientation"),
                    "the quaternion must be non-zero",
                ));
            }
            UnitQuaternion::from_quaternion(quat)
        }
    };
    if dim == Dimension::Planar && !matches!(b.orientation, Orientation::Angle(_)) {
        return Err(check.error(
            &at("orientation"),
            name_of("orientation"),
            "planar bodies take `Angle(θ)` (radians about z)",
        ));
    }
    let all_finite = b
        .position
        .iter()
        .chain(b.velocity.iter())
        .chain(b.angular_velocity.iter())
        .all(|x| x.is_finite());
    if !all_finite {
        return Err(check.error(
            &at("position"),
            name_of("position"),
            "positions and velocities must be finite",
        ));
    }
    if b.fixed {
        for (field, value) in [
            ("velocity", b.velocity),
            ("angular_velocity", b.angular_velocity),
        ] {
            if value.iter().any(|x| *x != 0.0) {
                return Err(check.error(
                    &at(field),
                    name_of(field),
                    "a fixed body does not move: its velocity must be zero (or omitted)",
                ));
            }
        }
    }
    let (q, v) = match dim {
        Dimension::Planar => {
            let Orientation::Angle(theta) = b.orientation else {
                unreachable!("checked above")
            };
            (
                vec![b.position[0], b.position[1], theta],
                vec![b.velocity[0], b.velocity[1], b.angular_velocity[2]],
            )
        }
        Dimension::Spatial => {
            // The scene gives ω in world axes; the state keeps body axes.
            let body_w = rotation.inverse() * Vector3::from(b.angular_velocity);
            let mut q = b.position.to_vec();
            q.extend([rotation.w, rotation.i, rotation.j, rotation.k]);
            let mut v = b.velocity.to_vec();
            v.extend(body_w.iter());
            (q, v)
        }
    };
    let impact = impact_coefficients(
        b.restitution,
        b.tangential_restitution,
        check,
        &["bodies", quoted.as_str()],
        &format!("bodies[{i}]"),
    )?;
    Ok(BuiltBody {
        body: Body {
            name: b.name.clone(),
            shape: b.shape,
            mass: b.mass,
            inertia,
        },
        impact,
        q,
        v,
        fixed: b.fixed,
    })
}

fn build_rigid(spec: &RigidSpec, check: &Checker<'_>) -> Result<(Model, State), SceneError> {
    let dim = spec.dimension;
    if dim == Dimension::Planar
        && let Some((anchors, field, message)) = planar::first_out_of_plane(spec)
    {
        let anchors: Vec<&str> = anchors.iter().map(String::as_str).collect();
        return Err(check.error(&anchors, field, message));
    }
    let mut names = HashSet::new();
    let mut bodies = Vec::new();
    let mut body_impact = Vec::new();
    let mut surface_impact = Vec::new();
    let mut q = Vec::new();
    let mut v = Vec::new();
    let mut fixed = Vec::new();
    for (i, b) in spec.bodies.iter().enumerate() {
        let built = build_body(b, i, dim, &mut names, check)?;
        fixed.push(built.fixed);
        q.extend(built.q);
        v.extend(built.v);
        body_impact.push(built.impact);
        bodies.push(built.body);
    }
    let (q, v) = (DVector::from_vec(q), DVector::from_vec(v));
    let mut surfaces = Vec::new();
    for (i, s) in spec.surfaces.iter().enumerate() {
        let quoted = format!("\"{}\"", s.name);
        if !names.insert(s.name.clone()) {
            return Err(check.error(
                &["surfaces", quoted.as_str(), quoted.as_str()],
                format!("surfaces[{i}].name"),
                format!(
                    "duplicate name `{}`: body and surface names must be unique",
                    s.name
                ),
            ));
        }
        let normal = Vector3::from(s.normal);
        if normal.norm() == 0.0
            || !normal.iter().all(|x| x.is_finite())
            || (dim == Dimension::Planar && normal.z != 0.0)
        {
            return Err(check.error(
                &["surfaces", quoted.as_str(), "normal"],
                format!("surfaces[{i}].normal"),
                "must be a non-zero finite vector (with z = 0 in planar scenes)",
            ));
        }
        let normal = normal.normalize();
        surface_impact.push(impact_coefficients(
            s.restitution,
            s.tangential_restitution,
            check,
            &["surfaces", quoted.as_str()],
            &format!("surfaces[{i}]"),
        )?);
        surfaces.push(HalfSpace {
            name: s.name.clone(),
            normal,
            offset: normal.dot(&Vector3::from(s.point)),
        });
    }
    if !spec.gravity.iter().all(|x| x.is_finite()) {
        return Err(check.error(&["gravity"], "gravity", "must be finite"));
    }
    let mut system = RigidSystem::new(dim, bodies, surfaces, Vector3::from(spec.gravity));
    system.body_impact = body_impact;
    system.surface_impact = surface_impact;
    for (i, _) in fixed.iter().enumerate().filter(|(_, f)| **f) {
        system.set_fixed(i, true);
    }
    mechanism::build_mechanism(spec, &mut system, &q, check)?;
    Ok((Model::Rigid(system), State { q, v, t: 0.0 }))
}

/// The principal moments of inertia of any rigid body satisfy the triangle
/// inequality, Iₐ ≤ I_b + I_c (each is an integral of a sum of two squared
/// coordinates over the mass); a thin plate meets it with equality, which
/// rounding may miss by a few ulps.
fn triangle_inequality(
    j: [f64; 3],
    check: &Checker<'_>,
    anchors: &[&str],
    field: &str,
) -> Result<(), SceneError> {
    const AXES: [&str; 3] = ["x", "y", "z"];
    for a in 0..3 {
        let (b, c) = ((a + 1) % 3, (a + 2) % 3);
        if j[a] > (j[b] + j[c]) * (1.0 + 1e-12) {
            return Err(check.error(
                anchors,
                field,
                format!(
                    "({}, {}, {}) kg·m² is no rigid body's: I{} = {} exceeds I{} + I{} = {} (principal moments satisfy the triangle inequality)",
                    j[0], j[1], j[2], AXES[a], j[a], AXES[b], AXES[c], j[b] + j[c]
                ),
            ));
        }
    }
    Ok(())
}

/// The CSV columns after the bodies' or coordinates' own, one per step
/// report quantity (`contactlab run`'s CSV): a coordinate may not be named
/// as one of them.
pub const SUMMARY_COLUMNS: [&str; 8] = [
    "kinetic_energy",
    "potential_energy",
    "active_contacts",
    "lcp_size",
    "lcp_pivots",
    "min_gap",
    "residual",
    "nsgs_sweeps",
];

/// Body and coordinate names head CSV columns (`NAME.x`, …), so they must
/// be non-empty and hold no comma, double quote, line break or other control
/// character, which a CSV reader would split or misread (refused here rather
/// than quoted per RFC 4180, so every column name stays a plain token).
fn csv_column_name(
    name: &str,
    check: &Checker<'_>,
    anchors: &[&str],
    field: &str,
) -> Result<(), SceneError> {
    let bad = name
        .chars()
        .find(|&c| c == ',' || c == '"' || c.is_control());
    let message = match bad {
        _ if name.is_empty() => "must not be empty: it names CSV columns".to_owned(),
        Some(c) => format!(
            "{name:?} cannot name a CSV column: it holds {c:?}; use no commas, double quotes, line breaks or control characters"
        ),
        None => return Ok(()),
    };
    Err(check.error(anchors, field, message))
}

fn check_shape(
    shape: &crate::geometry::Shape,
    check: &Checker<'_>,
    anchors: &[&str],
    field: &str,
) -> Result<(), SceneError> {
    use crate::geometry::Shape;
    let size = |x: f64| x.is_finite() && x >= MIN_MASS_OR_SIZE;
    let ok = match *shape {
        Shape::Sphere { radius } => size(radius),
        Shape::Capsule {
            half_length,
            radius,
        } => half_length.is_finite() && half_length >= 0.0 && size(radius),
        Shape::Box { half_extents } => half_extents.into_iter().all(size),
    };
    if ok {
        Ok(())
    } else {
        Err(check.error(
            anchors,
            field,
            format!(
                "shape dimensions must be positive, and radii and half extents at least {MIN_MASS_OR_SIZE:e} m"
            ),
        ))
    }
}
