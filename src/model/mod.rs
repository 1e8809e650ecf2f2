//! The mechanical model: generalized coordinates q, velocities v, a constant
//! mass matrix M, the applied forces k(q, v, t) and the unilateral contacts with
//! their gap, generalized normal n and friction directions D.
//!
//! Two kinds share one interface: rigid bodies with shapes ([`rigid`]) and
//! generalized linear systems in Glocker–Studer's form ([`linear`]). Steppers see
//! only [`Model`], [`State`] and [`Contact`]; they never look at shapes.

pub mod linear;
pub mod rigid;

use crate::params::Params;
use nalgebra::{DMatrix, DVector, Vector3};

pub use linear::{AffineContact, Harmonic, LinearSystem};
pub use rigid::{Body, Dimension, HalfSpace, RigidSystem};

/// Positions, velocities and time of a model.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// Generalized coordinates q (per planar body x, y, θ; per spatial body x, y,
    /// z, qw, qx, qy, qz; per coordinate of a linear system its value).
    pub q: DVector<f64>,
    /// Generalized velocities v (per planar body vx, vy, ω; per spatial body the
    /// linear velocity and the angular velocity in body axes).
    pub v: DVector<f64>,
    /// Simulation time, s.
    pub t: f64,
}

/// What the second side of a contact is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Other {
    /// Another body, by index.
    Body(usize),
    /// A static surface (half-space), by index.
    Surface(usize),
    /// The fixed frame of a linear system's affine contact.
    World,
}

/// The identity of a potential contact, stable across steps while the same
/// features touch. The active set of Stewart–Trinkle §4 is a set of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContactId {
    /// The first body (or, in a linear system, the contact's index).
    pub a: usize,
    /// The other side.
    pub b: Other,
    /// Which feature pair (corner, end cap, manifold point, …).
    pub feature: u32,
}

/// Where a contact is in the world, for drawing and reports.
#[derive(Debug, Clone, PartialEq)]
pub struct ContactFrame {
    /// Contact point on the first body, world frame, m.
    pub point: Vector3<f64>,
    /// Unit normal pointing from the other side into the first body.
    pub normal: Vector3<f64>,
    /// The unit friction directions t(θᵢ) in the world (the pyramid's edges).
    pub tangents: Vec<Vector3<f64>>,
}

/// A potential contact evaluated at some configuration q.
#[derive(Debug, Clone, PartialEq)]
pub struct Contact {
    /// Stable identity.
    pub id: ContactId,
    /// Signed gap f(q), m (negative when penetrating).
    pub gap: f64,
    /// Generalized normal n = ∇f(q) in velocity coordinates.
    pub normal: DVector<f64>,
    /// Generalized friction directions D = [d₁ … d_k] (Stewart–Trinkle §3).
    pub friction: DMatrix<f64>,
    /// The contact in world coordinates (absent for linear systems).
    pub frame: Option<ContactFrame>,
}

/// A contact's or a material's coefficients of Newton's impact law
/// (Glocker–Studer (11): ξ_N = γ_N⁺ + ε_N γ_N⁻, ξ_T = γ_T⁺ + ε_T γ_T⁻). `None`
/// takes the scene-wide default: ε_N = `params.restitution`, ε_T = 0.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ImpactCoefficients {
    /// Normal restitution ε_N ∈ [0, 1].
    pub normal: Option<f64>,
    /// Tangential restitution ε_T ∈ [0, 1].
    pub tangential: Option<f64>,
}

impl ImpactCoefficients {
    /// The coefficients of a contact between two materials: where both set a
    /// value the smaller one (a contact is never more elastic than either side),
    /// else the one that is set.
    pub fn combine(self, other: Self) -> Self {
        let pick = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        Self {
            normal: pick(self.normal, other.normal),
            tangential: pick(self.tangential, other.tangential),
        }
    }

    /// (ε_N, ε_T) with the defaults filled in.
    pub fn resolve(self, params: &Params) -> (f64, f64) {
        (
            self.normal.unwrap_or(params.restitution),
            self.tangential.unwrap_or(0.0),
        )
    }
}

/// A model of either kind.
#[derive(Debug, Clone)]
pub enum Model {
    /// Rigid bodies with shapes and static surfaces.
    Rigid(RigidSystem),
    /// A generalized linear system M q̈ + C q̇ + K q = f(t) with affine contacts.
    Linear(LinearSystem),
}

impl Model {
    /// Number of generalized velocities.
    pub fn dof(&self) -> usize {
        match self {
            Self::Rigid(s) => s.dof(),
            Self::Linear(s) => s.dof(),
        }
    }

    /// The constant mass matrix M.
    pub fn mass_matrix(&self) -> &DMatrix<f64> {
        match self {
            Self::Rigid(s) => s.mass_matrix(),
            Self::Linear(s) => s.mass_matrix(),
        }
    }

    /// M⁻¹, computed once.
    pub fn mass_inverse(&self) -> &DMatrix<f64> {
        match self {
            Self::Rigid(s) => s.mass_inverse(),
            Self::Linear(s) => s.mass_inverse(),
        }
    }

    /// The applied generalized force k(q, v, t) (gravity, gyroscopic terms,
    /// springs, dampers, external forces), N or N·m.
    pub fn forces(
        &self,
        q: &DVector<f64>,
        v: &DVector<f64>,
        t: f64,
        params: &Params,
    ) -> DVector<f64> {
        match self {
            Self::Rigid(s) => s.forces(q, v),
            Self::Linear(s) => s.forces(q, v, t, params),
        }
    }

    /// The configuration reached from q moving with constant velocity v for h
    /// seconds (unit quaternions stay unit).
    pub fn integrate(&self, q: &DVector<f64>, v: &DVector<f64>, h: f64) -> DVector<f64> {
        match self {
            Self::Rigid(s) => s.integrate(q, v, h),
            Self::Linear(_) => q + v * h,
        }
    }

    /// All potential contacts at q whose gap is at most `margin`, with k = `edges`
    /// friction directions in space.
    pub fn contacts(&self, q: &DVector<f64>, edges: usize, margin: f64) -> Vec<Contact> {
        match self {
            Self::Rigid(s) => s.contacts(q, edges, margin),
            Self::Linear(s) => s.contacts(q, margin),
        }
    }

    /// Kinetic and potential energy, J.
    pub fn energy(&self, q: &DVector<f64>, v: &DVector<f64>, params: &Params) -> (f64, f64) {
        let kinetic = 0.5 * v.dot(&(self.mass_matrix() * v));
        let potential = match self {
            Self::Rigid(s) => s.potential_energy(q),
            Self::Linear(s) => s.potential_energy(q, params),
        };
        (kinetic, potential)
    }

    /// The restitution coefficients (ε_N, ε_T) of a contact (Glocker–Studer
    /// (11)): the contact's or its materials' own values, else ε_N =
    /// `params.restitution` and ε_T = 0.
    pub fn restitution(&self, id: &ContactId, params: &Params) -> (f64, f64) {
        let coefficients = match self {
            Self::Rigid(s) => s.impact_coefficients(id),
            Self::Linear(s) => s.impact_coefficients(id),
        };
        coefficients.resolve(params)
    }

    /// Whether contacts carry 2 friction directions (plane) or k (space).
    pub fn is_planar(&self) -> bool {
        match self {
            Self::Rigid(s) => s.dimension == Dimension::Planar,
            Self::Linear(_) => true,
        }
    }

    /// A length scale of the model, m, for tolerances (largest body size, or 1).
    pub fn length_scale(&self) -> f64 {
        match self {
            Self::Rigid(s) => s.length_scale(),
            Self::Linear(_) => 1.0,
        }
    }
}

/// Builds the k friction directions of Stewart–Trinkle §3 in the world: t₁ is
/// n̄ × up normalized (or a fixed perpendicular when n̄ is vertical), t₂ = t₁ × n̄
/// and t(θᵢ) = cos θᵢ t₁ + sin θᵢ t₂ with θᵢ = 2πi/k.
pub fn pyramid_directions(normal: &Vector3<f64>, up: &Vector3<f64>, k: usize) -> Vec<Vector3<f64>> {
    let cross = normal.cross(up);
    let t1 = if cross.norm() > 1e-9 {
        cross.normalize()
    } else {
        // n̄ is vertical: the fixed perpendicular is the horizontal axis of least
        // alignment with n̄ (x for a z-up world).
        let axis = if normal.x.abs() < 0.9 {
            Vector3::x()
        } else {
            Vector3::y()
        };
        (axis - normal * normal.dot(&axis)).normalize()
    };
    let t2 = t1.cross(normal);
    (0..k)
        .map(|i| {
            let theta = 2.0 * std::f64::consts::PI * i as f64 / k as f64;
            t1 * theta.cos() + t2 * theta.sin()
        })
        .collect()
}
