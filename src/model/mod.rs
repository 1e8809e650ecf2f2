//! The mechanical model: generalized coordinates q, velocities v, a constant
//! mass matrix M, the applied forces k(q, v, t) and the unilateral contacts with
//! their gap, generalized normal n and friction directions D.
//!
//! Two kinds share one interface: rigid bodies with shapes ([`rigid`]) and
//! generalized linear systems in Glocker–Studer's form ([`linear`]). Steppers see
//! only [`Model`], [`State`] and [`Contact`]; they never look at shapes.

pub mod block_inverse;
pub mod contact;
pub mod element;
pub mod jacobian;
pub mod joint;
pub mod linear;
pub mod perturbation;
pub mod rigid;

use crate::params::{ModelFeatures, Params};
use nalgebra::{DMatrix, DVector, Vector3};

pub use block_inverse::{BlockInverse, Component};
pub use contact::{Contact, ContactFrame, ContactId, Other};
pub use element::{Coefficients, ElementKind, ElementState, ForceElement, Measure, Twist};
pub use jacobian::{Block, ContactJacobian};
pub use joint::{Joint, JointKind, JointRows};
pub use linear::{AffineContact, Harmonic, LinearSystem};
pub use perturbation::{Perturbation, PerturbationForce};
pub use rigid::{Body, BodyHit, Dimension, HalfSpace, Load, RigidSystem};

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

/// A contact's or a material's coefficients of Newton's impact law
/// (Glocker–Studer (11): ξ_N = γ_N⁺ + ε_N γ_N⁻, ξ_T = γ_T⁺ + ε_T γ_T⁻). `None`
/// takes the scene-wide default: ε_N = [`Params::restitution`], ε_T = 0.
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

    /// (ε_N, ε_T) with the defaults filled in: ε_N = `restitution` (the
    /// scene-wide coefficient), ε_T = 0.
    pub fn resolve(self, restitution: f64) -> (f64, f64) {
        (
            self.normal.unwrap_or(restitution),
            self.tangential.unwrap_or(0.0),
        )
    }
}

/// The stiff terms of Anitescu–Potra's linearly implicit step: M̂ (32) is
/// M + h·`velocity` + h²·`position`, and k̂ (33) the force kept explicit.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearlyImplicit {
    /// h-coefficient: Σ δ ∇ψ∇ψᵀ (−∇_v k).
    pub velocity: DMatrix<f64>,
    /// h²-coefficient: Σ γ ∇φ∇φᵀ (−∇_q k).
    pub position: DMatrix<f64>,
    /// k̂ = k₁ − Σ γ φ ∇φ, N.
    pub k_hat: DVector<f64>,
}

/// M⁻¹ of a model, as the contact assembly uses it.
#[derive(Debug, Clone, Copy)]
pub enum MassInverse<'a> {
    /// Diagonal (rigid bodies): 1/m and 1/J per velocity.
    Diagonal(&'a DVector<f64>),
    /// Dense (a generalized linear system).
    Dense(&'a DMatrix<f64>),
    /// Block-diagonal over the components of the coupling pattern
    /// (Anitescu–Potra's W after the joints' elimination).
    Blocks(&'a BlockInverse),
}

impl MassInverse<'_> {
    /// M⁻¹x.
    pub fn apply(&self, x: &DVector<f64>) -> DVector<f64> {
        match self {
            Self::Diagonal(d) => x.component_mul(d),
            Self::Dense(m) => *m * x,
            Self::Blocks(w) => w.apply(x),
        }
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
    /// The unit vector opposite to gravity of a rigid system
    /// ([`RigidSystem::up`]); z for a linear system, whose contacts have no
    /// place in space.
    pub fn up(&self) -> Vector3<f64> {
        match self {
            Self::Rigid(s) => s.up(),
            Self::Linear(_) => Vector3::z(),
        }
    }

    /// Number of generalized velocities.
    pub fn dof(&self) -> usize {
        match self {
            Self::Rigid(s) => s.dof(),
            Self::Linear(s) => s.dof(),
        }
    }

    /// The constant mass matrix M as a dense dof × dof matrix (built on each
    /// call: for small systems, the coupled steppers and tests).
    pub fn mass_matrix(&self) -> DMatrix<f64> {
        match self {
            Self::Rigid(s) => s.mass_matrix(),
            Self::Linear(s) => s.mass_matrix().clone(),
        }
    }

    /// M⁻¹ as a dense matrix (built on each call, like [`Self::mass_matrix`]).
    pub fn mass_inverse(&self) -> DMatrix<f64> {
        match self {
            Self::Rigid(s) => DMatrix::from_diagonal(s.mass_inverse_diagonal()),
            Self::Linear(s) => s.mass_inverse().clone(),
        }
    }

    /// M⁻¹ in the form the contact assembly uses: per velocity for rigid
    /// bodies (M is diagonal in their coordinates), dense for a linear system.
    pub fn mass_inverse_form(&self) -> MassInverse<'_> {
        match self {
            Self::Rigid(s) => MassInverse::Diagonal(s.mass_inverse_diagonal()),
            Self::Linear(s) => MassInverse::Dense(s.mass_inverse()),
        }
    }

    /// M⁻¹x, in O(dof) for rigid bodies.
    pub fn apply_mass_inverse(&self, x: &DVector<f64>) -> DVector<f64> {
        self.mass_inverse_form().apply(x)
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
            Self::Rigid(s) => {
                s.forces(q, v)
                    + s.load_forces(t)
                    + element::element_forces(s, q, v, coefficients(params))
            }
            Self::Linear(s) => s.forces(q, v, t),
        }
    }

    /// The force a step of `h` from (q, v, t) applies, N or N·m: [`Self::forces`]
    /// with the gyroscopic torque −ω × Iω replaced by its mean over the
    /// step under the implicit midpoint rule,
    /// [`RigidSystem::gyroscopic_impulse`]/h, which keeps a free body's
    /// kinetic energy and angular momentum. The same as [`Self::forces`] for
    /// linear systems, planar bodies and h = 0.
    pub fn forces_over_step(
        &self,
        q: &DVector<f64>,
        v: &DVector<f64>,
        t: f64,
        h: f64,
        params: &Params,
    ) -> DVector<f64> {
        match self {
            Self::Rigid(s) if s.dimension == Dimension::Spatial && h > 0.0 => {
                self.nonstiff_forces(q, t)
                    + element::element_forces(s, q, v, coefficients(params))
                    + s.gyroscopic_impulse(v, h) / h
            }
            _ => self.forces(q, v, t, params),
        }
    }

    /// The non-stiff force k₁(t, q, v) of Anitescu–Potra (26): gravity and
    /// loads (rigid), f₀ + Σ a cos(ωt + φ) (linear), N. Excludes the
    /// gyroscopic term, the force elements and a linear system's K q + C v.
    pub fn nonstiff_forces(&self, q: &DVector<f64>, t: f64) -> DVector<f64> {
        match self {
            Self::Rigid(s) => s.forces(q, &DVector::zeros(s.dof())) + s.load_forces(t),
            Self::Linear(s) => {
                let zero = DVector::zeros(s.dof());
                s.forces(&zero, &zero, t)
            }
        }
    }

    /// The terms of the linearly implicit step of `h` at (q, v, t): M̂ (32)
    /// = M + h·`velocity` + h²·`position` and k̂ (33). The springs and
    /// dampers are linearized as in (32)–(33); the gyroscopic torque is not
    /// (its K_c would make the free body lose energy) but enters k̂ as its
    /// mean over the step under the implicit midpoint rule
    /// ([`Self::forces_over_step`]).
    pub fn linearly_implicit(
        &self,
        q: &DVector<f64>,
        v: &DVector<f64>,
        t: f64,
        h: f64,
        params: &Params,
    ) -> LinearlyImplicit {
        match self {
            Self::Rigid(s) => {
                let mut velocity = DMatrix::zeros(s.dof(), s.dof());
                let mut position = DMatrix::zeros(s.dof(), s.dof());
                let mut k_hat = self.nonstiff_forces(q, t);
                if h > 0.0 {
                    k_hat += s.gyroscopic_impulse(v, h) / h;
                }
                for e in self.element_states(q, params) {
                    let outer = &e.gradient * e.gradient.transpose();
                    velocity += &outer * e.damping;
                    position += &outer * e.stiffness;
                    k_hat -= &e.gradient * (e.stiffness * e.phi);
                }
                LinearlyImplicit {
                    velocity,
                    position,
                    k_hat,
                }
            }
            // (10)–(11) with ∇_q k = −K and ∇_v k = −C: k̂ = f(t) − K q.
            Self::Linear(s) => LinearlyImplicit {
                velocity: s.damping.clone(),
                position: s.stiffness.clone(),
                k_hat: self.nonstiff_forces(q, t) - &s.stiffness * q,
            },
        }
    }

    /// Every force element evaluated at q (empty for linear systems).
    pub fn element_states(&self, q: &DVector<f64>, params: &Params) -> Vec<ElementState> {
        match self {
            Self::Rigid(s) => s
                .elements
                .iter()
                .flat_map(|e| e.evaluate(s, q, coefficients(params)))
                .collect(),
            Self::Linear(_) => Vec::new(),
        }
    }

    /// The joints' equality rows Θ(q) and gradients ν (none for linear systems).
    pub fn joint_rows(&self, q: &DVector<f64>) -> JointRows {
        match self {
            Self::Rigid(s) => joint::joint_rows(s, q),
            Self::Linear(s) => JointRows {
                values: DVector::zeros(0),
                gradients: DMatrix::zeros(s.dof(), 0),
            },
        }
    }

    /// What the parameters are checked against ([`Params::validate`]).
    pub fn features(&self) -> ModelFeatures {
        ModelFeatures {
            planar: self.is_planar(),
            rigid: matches!(self, Self::Rigid(_)),
            joints: self.has_joints(),
            springs_take_stiffness: self.uses_stiffness(),
            dampers_take_damping: self.uses_damping(),
        }
    }

    /// Whether the model has bilateral joints (only the steppers with equality
    /// rows, [`crate::params::StepperKind::supports_joints`], can step it).
    pub fn has_joints(&self) -> bool {
        matches!(self, Self::Rigid(s) if !s.joints.is_empty())
    }

    /// Whether some spring takes its stiffness from [`Params::stiffness`] (the
    /// viewer enables its stiffness slider on this).
    pub fn uses_stiffness(&self) -> bool {
        matches!(self, Self::Rigid(s)
            if s.elements.iter().any(|e| e.kind.has_spring() && e.stiffness.is_none()))
    }

    /// Whether some damper takes its coefficient from [`Params::damping`] (the
    /// viewer enables its damping slider on this).
    pub fn uses_damping(&self) -> bool {
        matches!(self, Self::Rigid(s)
            if s.elements.iter().any(|e| e.kind.has_damper() && e.damping.is_none()))
    }

    /// What to draw for each force element at q: its name and its two anchors in
    /// world coordinates, m (a torsional element gives its bodies' centres).
    pub fn force_element_segments(
        &self,
        q: &DVector<f64>,
    ) -> Vec<(String, Vector3<f64>, Vector3<f64>)> {
        let Self::Rigid(s) = self else {
            return Vec::new();
        };
        s.elements
            .iter()
            .map(|e| {
                let (pa, pb) = match e.measure {
                    Measure::Distance => e.anchors(s, q),
                    Measure::Angle => (
                        s.position(q, e.a),
                        e.b.map_or(e.anchor_b, |b| s.position(q, b)),
                    ),
                };
                (e.name.clone(), pa, pb)
            })
            .collect()
    }

    /// What to draw for each joint at q: its name and the anchor on each side in
    /// world coordinates, m (they coincide up to the joint drift).
    pub fn joint_anchors(&self, q: &DVector<f64>) -> Vec<(String, Vector3<f64>, Vector3<f64>)> {
        let Self::Rigid(s) = self else {
            return Vec::new();
        };
        s.joints
            .iter()
            .map(|j| {
                let (pa, pb) = j.anchors(s, q);
                (j.name.clone(), pa, pb)
            })
            .collect()
    }

    /// The configuration reached from q moving with constant velocity v for h
    /// seconds (unit quaternions stay unit).
    pub fn integrate(&self, q: &DVector<f64>, v: &DVector<f64>, h: f64) -> DVector<f64> {
        match self {
            Self::Rigid(s) => s.integrate(q, v, h),
            Self::Linear(_) => q + v * h,
        }
    }

    /// Per body, into `keep`, whether its coordinates in `a` and `b` (its
    /// velocities with `velocity`, else its position coordinates) are the
    /// same to the bit; fixed bodies are always kept. Whether any moving body
    /// is kept; false for a linear system (`keep` empty), which has no
    /// bodies to keep.
    pub fn same_bodies(
        &self,
        a: &DVector<f64>,
        b: &DVector<f64>,
        velocity: bool,
        keep: &mut Vec<bool>,
    ) -> bool {
        keep.clear();
        let Self::Rigid(s) = self else {
            return false;
        };
        let n = if velocity {
            rigid::velocity_size(s.dimension)
        } else {
            rigid::position_size(s.dimension)
        };
        let comparable = a.len() == b.len();
        let mut any = false;
        for i in 0..s.bodies.len() {
            if s.is_fixed(i) {
                keep.push(true);
                continue;
            }
            let range = i * n..(i + 1) * n;
            let same = comparable
                && a.as_slice()[range.clone()]
                    .iter()
                    .zip(&b.as_slice()[range])
                    .all(|(x, y)| x.to_bits() == y.to_bits());
            any |= same;
            keep.push(same);
        }
        any
    }

    /// A bound on how fast any gap can close at velocities `v`: the largest
    /// point speed of a rigid body (centre speed plus |ω| times its bounding
    /// radius), or max |vᵢ| times the length scale (at least 1) for a linear
    /// system, m/s.
    pub fn max_point_speed(&self, v: &DVector<f64>) -> f64 {
        match self {
            Self::Rigid(s) => s.max_point_speed(v),
            Self::Linear(_) => v.amax() * self.length_scale().max(1.0),
        }
    }

    /// Kinetic and potential energy, J.
    pub fn energy(&self, q: &DVector<f64>, v: &DVector<f64>, params: &Params) -> (f64, f64) {
        let kinetic = match self {
            Self::Rigid(s) => 0.5 * v.dot(&v.component_mul(s.mass_diagonal())),
            Self::Linear(s) => 0.5 * v.dot(&(s.mass_matrix() * v)),
        };
        let potential = match self {
            Self::Rigid(s) => {
                s.potential_energy(q) + element::spring_energy(s, q, coefficients(params))
            }
            Self::Linear(s) => s.potential_energy(q),
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
        coefficients.resolve(params.restitution)
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

/// The live parameters' coefficients for the force elements that set none
/// of their own.
fn coefficients(params: &Params) -> Coefficients {
    Coefficients {
        stiffness: params.stiffness,
        damping: params.damping,
    }
}

/// (cos θᵢ, sin θᵢ) for θᵢ = 2πi/k, i = 0, …, k − 1: the angles of the
/// friction directions t(θᵢ) = cos θᵢ t₁ + sin θᵢ t₂ of Stewart–Trinkle §3
/// ([`tangent_frame`]).
pub fn pyramid_angles(k: usize) -> Vec<(f64, f64)> {
    (0..k)
        .map(|i| {
            let theta = 2.0 * std::f64::consts::PI * i as f64 / k as f64;
            (theta.cos(), theta.sin())
        })
        .collect()
}

/// The two unit tangents (t₁, t₂) from which the friction directions of a
/// contact with unit normal n̄ are made: t₁ is n̄ × up normalized (or a
/// fixed perpendicular when n̄ is vertical), t₂ = t₁ × n̄.
pub fn tangent_frame(normal: &Vector3<f64>, up: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let cross = normal.cross(up);
    let length = cross.norm();
    // `cross / length` is nalgebra's `normalize`, without its second norm.
    let t1 = if length > 1e-9 {
        cross / length
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
    (t1, t1.cross(normal))
}
