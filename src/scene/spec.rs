//! The serde types of a scene file, field by field as they appear in RON.

use crate::geometry::Shape;
use crate::model::{Dimension, ElementKind, Measure};
use crate::params::Params;
use serde::{Deserialize, Serialize};

/// The top level of a scene file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Scene")]
pub struct SceneFile {
    /// Display name.
    pub name: String,
    /// What the scene shows (one paragraph).
    #[serde(default)]
    pub description: String,
    /// Stepper settings: dt, duration, mu, edges, ncp_iterations, stepper, …
    /// (missing fields take their defaults).
    #[serde(default)]
    pub params: Params,
    /// Where the viewer's camera looks.
    #[serde(default)]
    pub camera: CameraHint,
    /// The mechanical system.
    pub system: SystemSpec,
    /// How to draw coordinates that are not bodies (see [`super::drawing`]);
    /// omitted: nothing extra.
    #[serde(default)]
    pub drawing: Vec<super::drawing::DrawingPart>,
    /// Let bodies start inside each other or a surface (deeper than
    /// [`super::overlap::tolerance`]); omitted: false, and such a start is an
    /// error naming the two sides and the depth.
    #[serde(default)]
    pub allow_initial_overlap: bool,
}

/// Where the viewer's camera should look.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CameraHint {
    /// The point looked at, world frame, m.
    pub target: [f64; 3],
    /// Distance from the target (planar: half the visible height), m.
    pub distance: f64,
    /// A body or drawing part the camera follows (keeping the framing it has
    /// at the start); omitted: the camera stays.
    pub follow: Option<String>,
}

impl Default for CameraHint {
    fn default() -> Self {
        Self {
            target: [0.0, 0.5, 0.0],
            distance: 3.0,
            follow: None,
        }
    }
}

/// Either kind of system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SystemSpec {
    /// Rigid bodies and half-spaces.
    Rigid(RigidSpec),
    /// A generalized linear system (Glocker–Studer form).
    Linear(LinearSpec),
}

/// Rigid bodies and static surfaces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RigidSpec {
    /// `Planar` (x–y plane) or `Spatial`.
    pub dimension: Dimension,
    /// Gravitational acceleration, m/s².
    pub gravity: [f64; 3],
    /// The bodies.
    pub bodies: Vec<BodySpec>,
    /// The static half-spaces.
    #[serde(default)]
    pub surfaces: Vec<SurfaceSpec>,
    /// Bilateral joints (need the anitescu-potra or euler-lcp stepper).
    #[serde(default)]
    pub joints: Vec<JointSpec>,
    /// Springs, dampers and spring–dampers.
    #[serde(default)]
    pub elements: Vec<ForceElementSpec>,
    /// External forces a cos(ωt + φ) at centres of mass.
    #[serde(default)]
    pub loads: Vec<LoadSpec>,
}

/// What a joint constrains.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum JointKindSpec {
    /// Planar revolute joint.
    Pin,
    /// Spatial ball-and-socket joint.
    Ball,
    /// Spatial revolute joint about this world axis (at the initial pose).
    Hinge([f64; 3]),
    /// No relative motion (weld), or a body fixed to the world.
    Fixed,
}

/// A joint between two bodies, or a body and the world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JointSpec {
    /// Unique name.
    pub name: String,
    /// `Pin` (plane), `Ball`, `Hinge((x, y, z))` (space) or `Fixed`.
    pub kind: JointKindSpec,
    /// The first body's name.
    pub a: String,
    /// The second body's name; omitted: the world.
    #[serde(default)]
    pub b: Option<String>,
    /// The joint's point in the world at the initial pose, m.
    pub at: [f64; 3],
}

/// A spring, damper or spring–damper. A spring part takes `stiffness` if given,
/// else `params.stiffness`; a damper part `damping`, else `params.damping`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForceElementSpec {
    /// Unique name.
    pub name: String,
    /// `Spring`, `Damper` or `SpringDamper`.
    pub kind: ElementKind,
    /// `Distance` between the anchors (default) or relative `Angle` (torsional).
    #[serde(default = "default_measure")]
    pub measure: Measure,
    /// The first body's name.
    pub a: String,
    /// The second body's name; omitted: the world.
    #[serde(default)]
    pub b: Option<String>,
    /// a's anchor in the world at the initial pose, m; omitted: its centre.
    #[serde(default)]
    pub at_a: Option<[f64; 3]>,
    /// b's anchor in the world at the initial pose, m; omitted: its centre
    /// (required when b is the world).
    #[serde(default)]
    pub at_b: Option<[f64; 3]>,
    /// Rest length (m) or angle (rad); omitted: the initial value.
    #[serde(default)]
    pub rest: Option<f64>,
    /// The twist axis of a spatial `Angle` element, world frame at the initial
    /// pose (required there; planar elements turn about z).
    #[serde(default)]
    pub axis: Option<[f64; 3]>,
    /// Own stiffness γ; omitted: `params.stiffness`.
    #[serde(default)]
    pub stiffness: Option<f64>,
    /// Own damping δ; omitted: `params.damping`.
    #[serde(default)]
    pub damping: Option<f64>,
}

fn default_measure() -> Measure {
    Measure::Distance
}

/// A force a cos(ωt + φ) at a body's centre of mass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// The body's name.
    pub body: String,
    /// Amplitude a, world frame, N.
    pub force: [f64; 3],
    /// ω, rad/s (0: constant).
    #[serde(default)]
    pub omega: f64,
    /// φ, rad.
    #[serde(default)]
    pub phase: f64,
}

/// One rigid body and its initial state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodySpec {
    /// Unique name.
    pub name: String,
    /// Shape in body axes.
    pub shape: Shape,
    /// Mass, kg.
    pub mass: f64,
    /// Principal inertia about the body axes, kg·m² (planar scenes use z);
    /// omitted: that of a solid shape.
    #[serde(default)]
    pub inertia: Option<[f64; 3]>,
    /// Initial centre of mass, m.
    pub position: [f64; 3],
    /// Initial orientation.
    #[serde(default)]
    pub orientation: Orientation,
    /// Initial linear velocity, m/s.
    #[serde(default)]
    pub velocity: [f64; 3],
    /// Initial angular velocity in world axes, rad/s (planar scenes use z).
    #[serde(default)]
    pub angular_velocity: [f64; 3],
    /// Display colour (sRGB, 0–1); omitted: chosen by the viewer.
    #[serde(default)]
    pub color: Option<[f32; 3]>,
    /// Normal restitution ε_N of this body's material (Glocker–Studer (11)); omitted:
    /// `params.restitution`. A contact between two materials
    /// that both set it takes the smaller value.
    #[serde(default)]
    pub restitution: Option<f64>,
    /// Tangential restitution ε_T of this body's material; omitted: 0.
    #[serde(default)]
    pub tangential_restitution: Option<f64>,
    /// Fixed in place (infinite mass, not a joint): a wall, a ramp, a silo's
    /// side. Its velocities must be zero; it takes no joints, force elements
    /// or loads. Omitted: false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub fixed: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// An orientation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Orientation {
    /// Rotation about z by this angle, rad (the only form in planar scenes).
    Angle(f64),
    /// Rotation about an axis (world frame) by an angle, rad.
    AxisAngle([f64; 3], f64),
    /// A quaternion (w, x, y, z), normalized on load.
    Quaternion([f64; 4]),
}

impl Default for Orientation {
    fn default() -> Self {
        Self::Angle(0.0)
    }
}

/// A static half-space {x : n̄·(x − point) ≥ 0}.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SurfaceSpec {
    /// Unique name.
    pub name: String,
    /// Normal pointing into the free space (normalized on load).
    pub normal: [f64; 3],
    /// A point on the surface, m.
    #[serde(default)]
    pub point: [f64; 3],
    /// Half the drawn size of the surface, m (drawing only).
    #[serde(default = "default_extent")]
    pub extent: f64,
    /// Normal restitution ε_N of this surface's material (Glocker–Studer (11)); omitted:
    /// `params.restitution`.
    #[serde(default)]
    pub restitution: Option<f64>,
    /// Tangential restitution ε_T of this surface's material; omitted: 0.
    #[serde(default)]
    pub tangential_restitution: Option<f64>,
}

fn default_extent() -> f64 {
    5.0
}

/// A generalized linear system M q̈ + C q̇ + K q = f + Σ a cos(ωt + φ).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearSpec {
    /// Coordinate names.
    pub coordinates: Vec<String>,
    /// Mass matrix M, row by row.
    pub mass: Vec<Vec<f64>>,
    /// Stiffness K (omitted: zero).
    #[serde(default)]
    pub stiffness: Option<Vec<Vec<f64>>>,
    /// Damping C (omitted: zero).
    #[serde(default)]
    pub damping: Option<Vec<Vec<f64>>>,
    /// Constant force f (omitted: zero).
    #[serde(default)]
    pub force: Option<Vec<f64>>,
    /// Harmonic forces.
    #[serde(default)]
    pub harmonics: Vec<HarmonicSpec>,
    /// Unilateral contacts with affine gaps.
    #[serde(default)]
    pub contacts: Vec<AffineContactSpec>,
    /// q(0).
    pub initial_position: Vec<f64>,
    /// q̇(0).
    pub initial_velocity: Vec<f64>,
}

/// A harmonic force a cos(ωt + φ).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarmonicSpec {
    /// Amplitude per coordinate.
    pub amplitude: Vec<f64>,
    /// ω, rad/s.
    pub omega: f64,
    /// φ, rad.
    #[serde(default)]
    pub phase: f64,
}

/// A contact g = g0 + w_nᵀq ≥ 0 with friction along ±w_t.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AffineContactSpec {
    /// Name.
    pub name: String,
    /// g0.
    pub g0: f64,
    /// w_N.
    pub w_n: Vec<f64>,
    /// w_T.
    pub w_t: Vec<f64>,
    /// Normal restitution ε_N of this contact (Glocker–Studer (11)); omitted:
    /// `params.restitution`.
    #[serde(default)]
    pub restitution: Option<f64>,
    /// Tangential restitution ε_T of this contact; omitted: 0.
    #[serde(default)]
    pub tangential_restitution: Option<f64>,
}
