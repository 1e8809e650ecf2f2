//! The serde types of a scene file, field by field as they appear in RON.

use crate::geometry::Shape;
use crate::model::Dimension;
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
}

/// Where the viewer's camera should look.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CameraHint {
    /// The point looked at, world frame, m.
    pub target: [f64; 3],
    /// Distance from the target (planar: half the visible height), m.
    pub distance: f64,
}

impl Default for CameraHint {
    fn default() -> Self {
        Self {
            target: [0.0, 0.5, 0.0],
            distance: 3.0,
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
