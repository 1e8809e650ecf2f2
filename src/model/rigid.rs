//! Rigid bodies in the plane (q = (x, y, θ), M = diag(m, m, J)) or in space
//! (position + unit quaternion; linear velocity + body-axis angular velocity, so
//! M = diag(m I, J_body) is constant as in Anitescu–Potra §2.3.5), touching each
//! other and static half-spaces.
//!
//! A body can be fixed in place (infinite mass: M⁻¹ = 0 on its block, no
//! force, never integrated): the walls of a silo or a ramp. It keeps its
//! coordinates in q, so indices and drawing stay those of any body, but a
//! contact with it carries only the moving body's block, as a contact with
//! a half-space does, and two fixed bodies never collide.

use super::element::ForceElement;
use super::joint::Joint;
use super::margin::Margin;
use super::pair_memo::{MemoLog, PairKey, PairMemo};
use super::perturbation::{Perturbation, PerturbationForce};
use super::reuse::{Cursor, Identified, Reuse};
use super::{
    Block, BroadPhase, Contact, ContactFrame, ContactId, ContactJacobian, ContactSet,
    ImpactCoefficients, Other, pyramid_directions_into,
};
use crate::geometry::{PairContact, Shape, pair, ray};
use crate::pair_thread::{self, PairThread, both};
use nalgebra::{
    DMatrix, DVector, DVectorViewMut, Isometry2, Isometry3, Matrix3, Quaternion, Translation3,
    UnitQuaternion, Vector2, Vector3,
};
use serde::{Deserialize, Serialize};

/// Whether bodies move in the x–y plane or in space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Dimension {
    /// Bodies move in the x–y plane (y up unless gravity says otherwise).
    Planar,
    /// Bodies move in space.
    Spatial,
}

/// A rigid body.
#[derive(Debug, Clone, PartialEq)]
pub struct Body {
    /// Unique name (CSV columns are `name.x`, …).
    pub name: String,
    /// Its shape in body axes.
    pub shape: Shape,
    /// Mass, kg.
    pub mass: f64,
    /// Principal moments of inertia about the body axes, kg·m² (the plane uses z).
    pub inertia: Vector3<f64>,
}

/// A static half-space {x : n̄·x ≥ offset} bounding the admissible region: a
/// table, an incline or a wall.
#[derive(Debug, Clone, PartialEq)]
pub struct HalfSpace {
    /// Unique name.
    pub name: String,
    /// Unit normal pointing out of the solid, into the free space.
    pub normal: Vector3<f64>,
    /// n̄·x of the surface, m.
    pub offset: f64,
}

/// A harmonic force a cos(ω t + φ) applied at a body's centre of mass (ω = 0,
/// φ = 0: a constant force).
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    /// The body it acts on.
    pub body: usize,
    /// Amplitude a, world frame, N.
    pub amplitude: Vector3<f64>,
    /// Angular frequency ω, rad/s.
    pub omega: f64,
    /// Phase φ, rad.
    pub phase: f64,
}

/// Where a ray meets a body ([`RigidSystem::ray_cast`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BodyHit {
    /// The body hit.
    pub body: usize,
    /// Distance along the ray, in units of its direction's length.
    pub distance: f64,
    /// The hit point, world frame, m.
    pub point: Vector3<f64>,
    /// The surface's outward unit normal there, world frame (in the plane,
    /// the normal of the plane, +z).
    pub normal: Vector3<f64>,
}

/// Rigid bodies, static surfaces and gravity, with joints, force elements and
/// external loads.
#[derive(Debug, Clone)]
pub struct RigidSystem {
    /// Plane or space.
    pub dimension: Dimension,
    /// The moving bodies.
    pub bodies: Vec<Body>,
    /// The static half-spaces.
    pub surfaces: Vec<HalfSpace>,
    /// Gravitational acceleration, m/s² (z ignored in the plane).
    pub gravity: Vector3<f64>,
    /// Newton's impact law per body material (parallel to `bodies`).
    pub body_impact: Vec<ImpactCoefficients>,
    /// Newton's impact law per surface material (parallel to `surfaces`).
    pub surface_impact: Vec<ImpactCoefficients>,
    /// Bilateral joints (Anitescu–Potra (1)); bodies they join do not collide.
    pub joints: Vec<Joint>,
    /// Springs and dampers (Anitescu–Potra (26)).
    pub elements: Vec<ForceElement>,
    /// External forces at the centres of mass.
    pub loads: Vec<Load>,
    /// A hand on a body (the viewer's mouse spring), held through each step
    /// as an external load ([`Self::hold_perturbation`]).
    pub perturbation: Option<Perturbation>,
    /// The perturbation's generalized force for the current step (set by
    /// [`Self::hold_perturbation`]), N.
    held_perturbation: Option<DVector<f64>>,
    /// The diagonal of M (m per translation, J per rotation), kg or kg·m².
    mass: DVector<f64>,
    /// Its inverse, per velocity (0 on a fixed body's block).
    mass_inverse: DVector<f64>,
    /// Which bodies are fixed in place (parallel to `bodies`).
    fixed: Vec<bool>,
}

impl RigidSystem {
    /// Builds the system and its constant mass matrix. Masses and inertias must be
    /// positive (the scene loader checks this and names the field).
    pub fn new(
        dimension: Dimension,
        bodies: Vec<Body>,
        surfaces: Vec<HalfSpace>,
        gravity: Vector3<f64>,
    ) -> Self {
        let per = velocity_size(dimension);
        let dof = per * bodies.len();
        let mut mass = DVector::zeros(dof);
        for (i, body) in bodies.iter().enumerate() {
            let o = i * per;
            match dimension {
                Dimension::Planar => {
                    mass[o] = body.mass;
                    mass[o + 1] = body.mass;
                    mass[o + 2] = body.inertia.z;
                }
                Dimension::Spatial => {
                    for a in 0..3 {
                        mass[o + a] = body.mass;
                        mass[o + 3 + a] = body.inertia[a];
                    }
                }
            }
        }
        let mass_inverse = mass.map(|m| 1.0 / m);
        Self {
            body_impact: vec![ImpactCoefficients::default(); bodies.len()],
            surface_impact: vec![ImpactCoefficients::default(); surfaces.len()],
            dimension,
            bodies,
            surfaces,
            gravity,
            joints: Vec::new(),
            elements: Vec::new(),
            loads: Vec::new(),
            perturbation: None,
            held_perturbation: None,
            fixed: vec![false; mass.len() / per.max(1)],
            mass,
            mass_inverse,
        }
    }

    /// Fixes body i in place (infinite mass) or frees it again. A fixed
    /// body's velocity must be zero; [`Self::integrate`] leaves it where it is
    /// whatever v says.
    pub fn set_fixed(&mut self, i: usize, fixed: bool) {
        let Some(slot) = self.fixed.get_mut(i) else {
            return;
        };
        *slot = fixed;
        for a in self.block(i).range() {
            self.mass_inverse[a] = if fixed { 0.0 } else { 1.0 / self.mass[a] };
        }
    }

    /// The largest speed of any point of a moving body at velocities `v`:
    /// its centre's speed plus |ω| times its bounding radius, m/s.
    pub fn max_point_speed(&self, v: &DVector<f64>) -> f64 {
        (0..self.bodies.len())
            .filter(|&i| !self.is_fixed(i))
            .map(|i| {
                let block = self.block(i);
                let s = &v.as_slice()[block.start..block.start + block.len];
                let (linear, angular) = match self.dimension {
                    Dimension::Planar => (s[0].hypot(s[1]), s[2].abs()),
                    Dimension::Spatial => (
                        Vector3::new(s[0], s[1], s[2]).norm(),
                        Vector3::new(s[3], s[4], s[5]).norm(),
                    ),
                };
                linear + angular * bounding_radius(&self.bodies[i].shape)
            })
            .fold(0.0, f64::max)
    }

    /// Whether body i is fixed in place.
    pub fn is_fixed(&self, i: usize) -> bool {
        self.fixed.get(i).copied().unwrap_or(false)
    }

    /// Appends a body (it joins the running scene: contacts find it from the
    /// next step; identities of existing contacts keep their indices) and
    /// returns its index. The caller extends the state by the body's
    /// coordinates and velocities.
    pub fn push_body(&mut self, body: Body, impact: ImpactCoefficients) -> usize {
        let per = velocity_size(self.dimension);
        let start = self.mass.len();
        let diagonal: Vec<f64> = match self.dimension {
            Dimension::Planar => vec![body.mass, body.mass, body.inertia.z],
            Dimension::Spatial => vec![
                body.mass,
                body.mass,
                body.mass,
                body.inertia.x,
                body.inertia.y,
                body.inertia.z,
            ],
        };
        debug_assert_eq!(diagonal.len(), per);
        self.mass.resize_vertically_mut(start + per, 0.0);
        self.mass_inverse.resize_vertically_mut(start + per, 0.0);
        for (a, m) in diagonal.into_iter().enumerate() {
            self.mass[start + a] = m;
            self.mass_inverse[start + a] = 1.0 / m;
        }
        self.bodies.push(body);
        self.body_impact.push(impact);
        self.fixed.push(false);
        self.held_perturbation = None;
        self.bodies.len() - 1
    }

    /// Keeps only the first `count` bodies (undoes [`Self::push_body`]).
    /// Bodies that a joint, force element or load refers to are kept: only
    /// bodies added at run time, which have none, are ever removed.
    pub fn truncate_bodies(&mut self, count: usize) {
        let referenced = self
            .joints
            .iter()
            .flat_map(|j| std::iter::once(j.a).chain(j.b))
            .chain(
                self.elements
                    .iter()
                    .flat_map(|e| std::iter::once(e.a).chain(e.b)),
            )
            .chain(self.loads.iter().map(|l| l.body))
            .map(|i| i + 1)
            .max()
            .unwrap_or(0);
        let count = count.max(referenced);
        if count >= self.bodies.len() {
            return;
        }
        let per = velocity_size(self.dimension);
        self.bodies.truncate(count);
        self.body_impact.truncate(count);
        self.fixed.truncate(count);
        self.mass.resize_vertically_mut(count * per, 0.0);
        self.mass_inverse.resize_vertically_mut(count * per, 0.0);
        if self.perturbation.as_ref().is_some_and(|p| p.body >= count) {
            self.perturbation = None;
        }
        self.held_perturbation = None;
    }

    /// The perturbation evaluated at (q, v): F = k (target − p) − c ṗ at the
    /// grab point p (in the plane z is dropped). `None` without one or when
    /// it names no body.
    pub fn perturbation_force(
        &self,
        q: &DVector<f64>,
        v: &DVector<f64>,
    ) -> Option<PerturbationForce> {
        let p = self.perturbation.as_ref()?;
        if p.body >= self.bodies.len() || q.len() != self.config_size() || v.len() != self.dof() {
            return None;
        }
        let point = self.world_point(q, p.body, &p.grab);
        let r = point - self.position(q, p.body);
        let velocity =
            self.linear_velocity(v, p.body) + self.angular_velocity(q, v, p.body).cross(&r);
        let mut force = (p.target - point) * p.stiffness - velocity * p.damping;
        if self.dimension == Dimension::Planar {
            force.z = 0.0;
        }
        Some(PerturbationForce {
            body: p.body,
            point,
            target: p.target,
            force,
        })
    }

    /// Evaluates the perturbation at the state a step starts from and holds
    /// its generalized force Jᵀ F (force and torque r × F about the centre of
    /// mass) for [`Self::load_forces`] until the next call.
    pub fn hold_perturbation(&mut self, q: &DVector<f64>, v: &DVector<f64>) {
        self.held_perturbation = self
            .perturbation_force(q, v)
            .filter(|f| !self.is_fixed(f.body))
            .and_then(|f| {
                let mut k = DVector::zeros(self.dof());
                self.add_point_gradient(q, f.body, &f.point, &f.force, 1.0, &mut k.column_mut(0));
                k.iter().all(|x| x.is_finite()).then_some(k)
            });
    }

    /// The nearest body that the ray from `origin` along `direction` (world
    /// frame, m) hits at q: in space the ray meets the body's surface; in the
    /// plane, where the ray crosses z = 0 inside the body's outline.
    pub fn ray_cast(
        &self,
        q: &DVector<f64>,
        origin: &Vector3<f64>,
        direction: &Vector3<f64>,
    ) -> Option<BodyHit> {
        if q.len() != self.config_size() {
            return None;
        }
        let planar = self.dimension == Dimension::Planar;
        let mut best: Option<BodyHit> = None;
        for (i, body) in self.bodies.iter().enumerate() {
            let x = self.position(q, i);
            let r = self.rotation(q, i);
            let local_origin = r.inverse() * (origin - x);
            let local_direction = r.inverse() * direction;
            let hit = if planar {
                ray::cast_planar(&body.shape, &local_origin, &local_direction)
            } else {
                ray::cast(&body.shape, &local_origin, &local_direction)
            };
            if let Some((distance, normal)) = hit
                && best.as_ref().is_none_or(|b| distance < b.distance)
            {
                best = Some(BodyHit {
                    body: i,
                    distance,
                    point: origin + direction * distance,
                    normal: r * normal,
                });
            }
        }
        best
    }

    /// Where a point fixed in body i's frame (`local`, m) is in the world at q.
    pub fn world_point(&self, q: &DVector<f64>, i: usize, local: &Vector3<f64>) -> Vector3<f64> {
        self.position(q, i) + self.rotation(q, i) * local
    }

    /// Adds sign · ∇(u·p) to `column`: the generalized gradient of the world
    /// point `point` fixed in body i, projected on the world direction u
    /// ([u; (r × u)_z] in the plane, [u; Rᵀ(r × u)] in space).
    pub fn add_point_gradient(
        &self,
        q: &DVector<f64>,
        i: usize,
        point: &Vector3<f64>,
        u: &Vector3<f64>,
        sign: f64,
        column: &mut DVectorViewMut<'_, f64>,
    ) {
        let r = point - self.position(q, i);
        let o = i * velocity_size(self.dimension);
        let translational = match self.dimension {
            Dimension::Planar => 2,
            Dimension::Spatial => 3,
        };
        for a in 0..translational {
            column[o + a] += sign * u[a];
        }
        self.add_rotation_gradient(q, i, &r.cross(u), sign, column);
    }

    /// Adds sign · (the map from body i's velocity to ω·w) to `column`, for a
    /// world vector w: w_z in the plane, Rᵀw on the body-axis ω in space.
    pub fn add_rotation_gradient(
        &self,
        q: &DVector<f64>,
        i: usize,
        w: &Vector3<f64>,
        sign: f64,
        column: &mut DVectorViewMut<'_, f64>,
    ) {
        let o = i * velocity_size(self.dimension);
        match self.dimension {
            Dimension::Planar => column[o + 2] += sign * w.z,
            Dimension::Spatial => {
                let body = self.rotation(q, i).inverse() * w;
                for a in 0..3 {
                    column[o + 3 + a] += sign * body[a];
                }
            }
        }
    }

    /// The external loads at time t as a generalized force, N: the scene's
    /// loads and the perturbation held for this step.
    pub fn load_forces(&self, t: f64) -> DVector<f64> {
        let per = velocity_size(self.dimension);
        let translational = match self.dimension {
            Dimension::Planar => 2,
            Dimension::Spatial => 3,
        };
        let mut k = DVector::zeros(self.dof());
        for load in &self.loads {
            let f = load.amplitude * (load.omega * t + load.phase).cos();
            for a in 0..translational {
                k[load.body * per + a] += f[a];
            }
        }
        if let Some(held) = &self.held_perturbation
            && held.len() == k.len()
        {
            k += held;
        }
        k
    }

    /// The gyroscopic matrix K_c(vˡ) of Anitescu–Potra §2.3.5 (28): with the
    /// linear velocity in the world, only the rotational block −[𝓘ω]× remains,
    /// so K_c(v₁) v₂ = ω₂ × 𝓘ω₁; antisymmetric (29). Zero in the plane.
    pub fn gyroscopic_matrix(&self, v: &DVector<f64>) -> DMatrix<f64> {
        let dof = self.dof();
        let mut kc = DMatrix::zeros(dof, dof);
        if self.dimension == Dimension::Planar {
            return kc;
        }
        for (i, body) in self.bodies.iter().enumerate() {
            let o = i * 6 + 3;
            let w = Vector3::new(v[o], v[o + 1], v[o + 2]);
            let a = body.inertia.component_mul(&w);
            let block = -a.cross_matrix();
            kc.view_mut((o, o), (3, 3)).copy_from(&block);
        }
        kc
    }

    /// Whether bodies i and j are joined (joined bodies do not collide).
    pub fn joined(&self, i: usize, j: usize) -> bool {
        self.joints
            .iter()
            .any(|jt| (jt.a == i && jt.b == Some(j)) || (jt.a == j && jt.b == Some(i)))
    }

    /// The name of a contact's other side, a body or a surface (`None` for
    /// the world or an index past the last).
    pub fn other_name(&self, other: Other) -> Option<&str> {
        match other {
            Other::Body(j) => self.bodies.get(j).map(|b| b.name.as_str()),
            Other::Surface(k) => self.surfaces.get(k).map(|s| s.name.as_str()),
            Other::World => None,
        }
    }

    /// Number of generalized velocities.
    pub fn dof(&self) -> usize {
        velocity_size(self.dimension) * self.bodies.len()
    }

    /// Number of generalized coordinates.
    pub fn config_size(&self) -> usize {
        position_size(self.dimension) * self.bodies.len()
    }

    /// The constant mass matrix as a dense matrix (built on each call).
    pub fn mass_matrix(&self) -> DMatrix<f64> {
        DMatrix::from_diagonal(&self.mass)
    }

    /// The diagonal of M, per velocity (kg, kg·m²).
    pub fn mass_diagonal(&self) -> &DVector<f64> {
        &self.mass
    }

    /// The diagonal of M⁻¹, per velocity.
    pub fn mass_inverse_diagonal(&self) -> &DVector<f64> {
        &self.mass_inverse
    }

    /// The velocity block of body i.
    pub fn block(&self, i: usize) -> Block {
        let len = velocity_size(self.dimension);
        Block {
            start: i * len,
            len,
        }
    }

    /// The unit vector opposite to gravity (z when there is none in space, y in
    /// the plane).
    pub fn up(&self) -> Vector3<f64> {
        let g = self.gravity_in_plane();
        if g.norm() > 0.0 {
            -g.normalize()
        } else if self.dimension == Dimension::Planar {
            Vector3::y()
        } else {
            Vector3::z()
        }
    }

    fn gravity_in_plane(&self) -> Vector3<f64> {
        match self.dimension {
            Dimension::Planar => Vector3::new(self.gravity.x, self.gravity.y, 0.0),
            Dimension::Spatial => self.gravity,
        }
    }

    /// Index of the body named `name`.
    pub fn body_index(&self, name: &str) -> Option<usize> {
        self.bodies.iter().position(|b| b.name == name)
    }

    /// The largest extent of a moving body, m (of any body when all are
    /// fixed): the scale of contact margins and gap tolerances, which a
    /// silo's walls would otherwise stretch to every grain's neighbourhood.
    pub fn length_scale(&self) -> f64 {
        let extent = |moving: bool| {
            self.bodies
                .iter()
                .enumerate()
                .filter(|(i, _)| !moving || !self.is_fixed(*i))
                .map(|(_, b)| bounding_radius(&b.shape))
                .fold(0.0, f64::max)
        };
        let moving = extent(true);
        if moving > 0.0 { moving } else { extent(false) }.max(1e-3)
    }

    /// Position of body i's centre of mass, m.
    pub fn position(&self, q: &DVector<f64>, i: usize) -> Vector3<f64> {
        let o = i * position_size(self.dimension);
        match self.dimension {
            Dimension::Planar => Vector3::new(q[o], q[o + 1], 0.0),
            Dimension::Spatial => Vector3::new(q[o], q[o + 1], q[o + 2]),
        }
    }

    /// Orientation of body i.
    pub fn rotation(&self, q: &DVector<f64>, i: usize) -> UnitQuaternion<f64> {
        let o = i * position_size(self.dimension);
        match self.dimension {
            Dimension::Planar => UnitQuaternion::from_axis_angle(&Vector3::z_axis(), q[o + 2]),
            Dimension::Spatial => UnitQuaternion::from_quaternion(Quaternion::new(
                q[o + 3],
                q[o + 4],
                q[o + 5],
                q[o + 6],
            )),
        }
    }

    /// Linear velocity of body i's centre of mass, m/s.
    pub fn linear_velocity(&self, v: &DVector<f64>, i: usize) -> Vector3<f64> {
        let o = i * velocity_size(self.dimension);
        match self.dimension {
            Dimension::Planar => Vector3::new(v[o], v[o + 1], 0.0),
            Dimension::Spatial => Vector3::new(v[o], v[o + 1], v[o + 2]),
        }
    }

    /// Angular velocity of body i in world axes, rad/s.
    pub fn angular_velocity(&self, q: &DVector<f64>, v: &DVector<f64>, i: usize) -> Vector3<f64> {
        let o = i * velocity_size(self.dimension);
        match self.dimension {
            Dimension::Planar => Vector3::new(0.0, 0.0, v[o + 2]),
            Dimension::Spatial => self.rotation(q, i) * Vector3::new(v[o + 3], v[o + 4], v[o + 5]),
        }
    }

    /// Gravity and, in space, the gyroscopic torque −ω × Jω in body axes.
    pub fn forces(&self, _q: &DVector<f64>, v: &DVector<f64>) -> DVector<f64> {
        let per = velocity_size(self.dimension);
        let mut k = DVector::zeros(self.dof());
        for (i, body) in self.bodies.iter().enumerate() {
            if self.is_fixed(i) {
                continue;
            }
            let o = i * per;
            match self.dimension {
                Dimension::Planar => {
                    k[o] = body.mass * self.gravity.x;
                    k[o + 1] = body.mass * self.gravity.y;
                }
                Dimension::Spatial => {
                    for a in 0..3 {
                        k[o + a] = body.mass * self.gravity[a];
                    }
                    let w = Vector3::new(v[o + 3], v[o + 4], v[o + 5]);
                    let jw = body.inertia.component_mul(&w);
                    let gyro = -w.cross(&jw);
                    for a in 0..3 {
                        k[o + 3 + a] = gyro[a];
                    }
                }
            }
        }
        k
    }

    /// q advanced by h v: x += h v, θ += h ω in the plane, R ← R exp(h ω_body)
    /// in space (exact for constant ω, so the quaternion stays unit).
    pub fn integrate(&self, q: &DVector<f64>, v: &DVector<f64>, h: f64) -> DVector<f64> {
        let mut out = q.clone();
        let (pq, pv) = (position_size(self.dimension), velocity_size(self.dimension));
        for i in 0..self.bodies.len() {
            if self.is_fixed(i) {
                continue;
            }
            let (oq, ov) = (i * pq, i * pv);
            match self.dimension {
                Dimension::Planar => {
                    for a in 0..3 {
                        out[oq + a] += h * v[ov + a];
                    }
                }
                Dimension::Spatial => {
                    for a in 0..3 {
                        out[oq + a] += h * v[ov + a];
                    }
                    let w = Vector3::new(v[ov + 3], v[ov + 4], v[ov + 5]);
                    let r = self.rotation(q, i) * UnitQuaternion::from_scaled_axis(w * h);
                    let r = UnitQuaternion::new_normalize(*r.quaternion());
                    out[oq + 3] = r.w;
                    out[oq + 4] = r.i;
                    out[oq + 5] = r.j;
                    out[oq + 6] = r.k;
                }
            }
        }
        out
    }

    /// Gravitational potential energy −Σ m g·x, J.
    pub fn potential_energy(&self, q: &DVector<f64>) -> f64 {
        let g = self.gravity_in_plane();
        (0..self.bodies.len())
            .map(|i| -self.bodies[i].mass * g.dot(&self.position(q, i)))
            .sum()
    }

    /// The impact-law coefficients of a contact: its two materials combined.
    pub fn impact_coefficients(&self, id: &ContactId) -> ImpactCoefficients {
        let first = self.body_impact.get(id.a).copied().unwrap_or_default();
        let other = match id.b {
            Other::Body(j) => self.body_impact.get(j).copied(),
            Other::Surface(s) => self.surface_impact.get(s).copied(),
            Other::World => None,
        };
        first.combine(other.unwrap_or_default())
    }

    /// Every potential contact at q with gap ≤ margin into `out` (its
    /// storage reused): body–surface features whose bounding sphere is within
    /// reach, then the body pairs the broad phase ([`candidate_pairs`])
    /// finds, in the order (i, j) with i < j. With `threads` 2 and at least
    /// [`PARALLEL_PAIRS`] candidate pairs, the narrow phase and the
    /// Jacobians of the pairs' two halves are computed on two threads
    /// ([`crate::pair_thread`]); the contacts and their order are the same.
    pub fn contacts_into<'m>(
        &self,
        q: &DVector<f64>,
        edges: usize,
        margin: impl Into<Margin<'m>>,
        out: &mut ContactSet,
        threads: usize,
    ) {
        self.contacts_reusing(q, edges, margin, out, threads, None, &mut Vec::new());
    }

    /// [`Self::contacts_into`], copying from `reuse.previous` the surface
    /// contacts of kept bodies and the contacts of pairs of two kept bodies
    /// ([`super::reuse`]). `sources` gets, for each contact of `out`, its
    /// index in `reuse.previous`, or [`NOT_COPIED`] for one computed (left
    /// empty without `reuse`).
    #[allow(clippy::too_many_arguments)]
    pub fn contacts_reusing<'m>(
        &self,
        q: &DVector<f64>,
        edges: usize,
        margin: impl Into<Margin<'m>>,
        out: &mut ContactSet,
        threads: usize,
        reuse: Option<Reuse<'_, Contact>>,
        sources: &mut Vec<usize>,
    ) {
        let margin = margin.into();
        out.clear();
        sources.clear();
        let previous: &[Contact] = reuse.map_or(&[], |r| r.previous);
        let mut broad = std::mem::take(&mut out.broad);
        // A visited contact into its slot: computed, or copied.
        let place = |f: &Found, slot: &mut Contact| match *f {
            Found::Point(p) => {
                self.fill_contact(q, p.id, p.gap, p.point_a, p.b, p.normal, edges, slot);
            }
            Found::Copy(k) => slot.clone_from(&previous[k]),
        };
        let mut take = |f: Found| {
            place(&f, out.push_slot());
            if reuse.is_some() {
                sources.push(f.source());
            }
        };
        self.visit_surfaces(q, margin, reuse, &mut take);
        self.broad_phase(q, margin, &mut broad, threads);
        let BroadPhase {
            pairs,
            points,
            points_b,
            found,
            found_b,
            kept,
            ..
        } = &mut broad;
        let (memo, [log, log_b]) = kept.begin();
        match parallel(threads, pairs.len(), PARALLEL_PAIRS) {
            None => {
                let memo = memo.map(|memo| (memo, &mut *log));
                self.visit_pairs(q, margin, pairs, points, memo, reuse, take);
            }
            Some(pair) => {
                let (first, second) = pairs.split_at(pairs.len() / 2);
                found.clear();
                found_b.clear();
                let collect = |pairs: &[(usize, usize)],
                               points: &mut Vec<PairContact>,
                               log: &mut MemoLog,
                               into: &mut Vec<Found>| {
                    let memo = memo.map(|memo| (memo, log));
                    self.visit_pairs(q, margin, pairs, points, memo, reuse, |f| into.push(f));
                };
                both(
                    Some(pair),
                    true,
                    || collect(first, points, log, found),
                    || collect(second, points_b, log_b, found_b),
                );
                let start = out.len();
                for _ in 0..found.len() + found_b.len() {
                    out.push_slot();
                }
                let (into_first, into_second) =
                    out.as_mut_slice()[start..].split_at_mut(found.len());
                let fill = |slots: &mut [Contact], found: &[Found]| {
                    for (slot, f) in slots.iter_mut().zip(found) {
                        place(f, slot);
                    }
                };
                both(
                    Some(pair),
                    true,
                    || fill(into_first, found),
                    || fill(into_second, found_b),
                );
                if reuse.is_some() {
                    sources.extend(found.iter().chain(found_b.iter()).map(Found::source));
                }
            }
        }
        kept.end();
        out.broad = broad;
    }

    /// The identities and gaps of [`Self::contacts_into`], without their
    /// Jacobians and frames (what a stepper needs to check the end of a
    /// step), appended to `out`, with the broad phase's work space `broad`
    /// (the narrow phase on two threads as there).
    pub fn gaps_into<'m>(
        &self,
        q: &DVector<f64>,
        margin: impl Into<Margin<'m>>,
        out: &mut Vec<(ContactId, f64)>,
        broad: &mut BroadPhase,
        threads: usize,
    ) {
        self.gaps_reusing(q, margin, out, broad, threads, None);
    }

    /// [`Self::gaps_into`], copying from `reuse.previous` the gaps of kept
    /// bodies' surface features and of pairs of two kept bodies
    /// ([`super::reuse`]).
    pub fn gaps_reusing<'m>(
        &self,
        q: &DVector<f64>,
        margin: impl Into<Margin<'m>>,
        out: &mut Vec<(ContactId, f64)>,
        broad: &mut BroadPhase,
        threads: usize,
        reuse: Option<Reuse<'_, (ContactId, f64)>>,
    ) {
        let margin = margin.into();
        let previous: &[(ContactId, f64)] = reuse.map_or(&[], |r| r.previous);
        let gap = |f: Found| match f {
            Found::Point(p) => (p.id, p.gap),
            Found::Copy(k) => previous[k],
        };
        self.visit_surfaces(q, margin, reuse, |f| out.push(gap(f)));
        self.broad_phase(q, margin, broad, threads);
        let BroadPhase {
            pairs,
            points,
            points_b,
            gaps_b,
            kept,
            ..
        } = broad;
        let (memo, [log, log_b]) = kept.begin();
        let collect = |pairs: &[(usize, usize)],
                       points: &mut Vec<PairContact>,
                       log: &mut MemoLog,
                       into: &mut Vec<(ContactId, f64)>| {
            let memo = memo.map(|memo| (memo, log));
            self.visit_pairs(q, margin, pairs, points, memo, reuse, |f| into.push(gap(f)));
        };
        match parallel(threads, pairs.len(), PARALLEL_PAIRS) {
            None => collect(pairs, points, log, out),
            Some(pair) => {
                let (first, second) = pairs.split_at(pairs.len() / 2);
                gaps_b.clear();
                both(
                    Some(pair),
                    true,
                    || collect(first, points, log, out),
                    || collect(second, points_b, log_b, gaps_b),
                );
                out.extend_from_slice(gaps_b);
            }
        }
        kept.end();
    }

    /// Calls `found` for every potential contact of a moving body with a
    /// surface at q whose gap is at most `margin`, body by body; with
    /// `reuse`, a kept body's items of `reuse.previous` instead
    /// ([`Found::Copy`]).
    fn visit_surfaces<T: Identified>(
        &self,
        q: &DVector<f64>,
        margin: Margin<'_>,
        reuse: Option<Reuse<'_, T>>,
        mut found: impl FnMut(Found),
    ) {
        let mut cursor = reuse.map(|r| (r.keep, Cursor::new(r.previous)));
        for (i, body) in self.bodies.iter().enumerate() {
            if self.is_fixed(i) {
                continue;
            }
            if let Some((keep, cursor)) = &mut cursor
                && keep[i]
            {
                cursor.surfaces(i).for_each(|k| found(Found::Copy(k)));
                continue;
            }
            let x = self.position(q, i);
            let r = self.rotation(q, i);
            let reach = bounding_radius(&body.shape);
            let margin = margin.body(i);
            for (s, surface) in self.surfaces.iter().enumerate() {
                if surface.normal.dot(&x) - surface.offset - reach > margin {
                    continue;
                }
                for (feature, witness, radius) in
                    surface_features(&body.shape, &x, &r, self.dimension)
                {
                    let gap = surface.normal.dot(&witness) - surface.offset - radius;
                    if gap <= margin {
                        let point = witness - surface.normal * radius;
                        let id = ContactId {
                            a: i,
                            b: Other::Surface(s),
                            feature,
                            cut: 0,
                        };
                        found(Found::Point(FoundPoint {
                            id,
                            gap,
                            point_a: point,
                            b: None,
                            normal: surface.normal,
                        }));
                    }
                }
            }
        }
    }

    /// The candidate body pairs at q into `broad.pairs`.
    fn broad_phase(
        &self,
        q: &DVector<f64>,
        margin: Margin<'_>,
        broad: &mut BroadPhase,
        threads: usize,
    ) {
        broad.boxes.clear();
        // A margin of one distance pads every box in the sweep; per-body
        // reaches pad each box by its own ([`Margin::pad`]), and the sweep
        // then pads nothing more.
        let uniform = margin.is_uniform();
        broad.boxes.extend((0..self.bodies.len()).map(|i| {
            let (centre, half) = world_box(
                &self.bodies[i].shape,
                self.position(q, i),
                &self.rotation(q, i),
            );
            if uniform {
                (centre, half)
            } else {
                (centre, half.add_scalar(margin.pad(i)))
            }
        }));
        let margin = if uniform { margin.widest() } else { 0.0 };
        // The last sweep's pairs when its boxes cover these ([`LastSweep`]):
        // those whose boxes meet, the same list as a sweep's.
        let pad = 0.5 * margin.max(0.0);
        let axes = axes(self.dimension);
        broad.reused = broad.last.covers(&broad.boxes, pad, axes);
        if broad.reused {
            let boxes = &broad.boxes;
            broad.pairs.clear();
            broad.pairs.extend(
                broad
                    .last
                    .pairs()
                    .iter()
                    .filter(|&&(a, b)| !boxes_apart(boxes, a, b, pad, axes)),
            );
            return;
        }
        candidate_pairs_into(
            &broad.boxes,
            margin,
            self.dimension,
            &mut broad.sweep,
            &mut broad.pairs,
            threads,
        );
        broad.last.record(&broad.boxes, pad, &broad.pairs);
    }

    /// Calls `found` as [`Self::visit_surfaces`] does for the potential
    /// contacts of the body pairs `pairs` (sorted), with `points` the narrow
    /// phase's scratch; with `reuse`, a pair of two kept bodies' items of
    /// `reuse.previous` instead.
    #[allow(clippy::too_many_arguments)]
    fn visit_pairs<T: Identified>(
        &self,
        q: &DVector<f64>,
        margin: Margin<'_>,
        pairs: &[(usize, usize)],
        points: &mut Vec<PairContact>,
        mut memo: Option<(&PairMemo, &mut MemoLog)>,
        reuse: Option<Reuse<'_, T>>,
        mut found: impl FnMut(Found),
    ) {
        let mut cursor = reuse.and_then(|r| {
            let first = *pairs.first()?;
            Some((r.keep, Cursor::at_pair(r.previous, first)))
        });
        for &(i, j) in pairs {
            if self.joined(i, j) || (self.is_fixed(i) && self.is_fixed(j)) {
                continue;
            }
            if let Some((keep, cursor)) = &mut cursor
                && keep[i]
                && keep[j]
            {
                cursor.pair(i, j).for_each(|k| found(Found::Copy(k)));
                continue;
            }
            // The moving body comes first: its block is the contact's only
            // one when the other is fixed.
            let (i, j) = if self.is_fixed(i) { (j, i) } else { (i, j) };
            let memo = memo.as_mut().map(|(memo, log)| (&**memo, &mut **log));
            self.pair_contacts(q, i, j, margin.pair(i, j), points, memo);
            for pc in points.iter() {
                let id = ContactId {
                    a: i,
                    b: Other::Body(j),
                    feature: pc.feature,
                    cut: 0,
                };
                found(Found::Point(FoundPoint {
                    id,
                    gap: pc.gap,
                    point_a: pc.point_a,
                    b: Some((j, pc.point_b)),
                    normal: pc.normal,
                }));
            }
        }
    }

    /// The narrow phase of bodies i and j into `out` (replaced); with a
    /// `memo`, the points it keeps for the two shapes at these poses, or
    /// those computed, logged for it.
    fn pair_contacts(
        &self,
        q: &DVector<f64>,
        i: usize,
        j: usize,
        margin: f64,
        out: &mut Vec<PairContact>,
        memo: Option<(&PairMemo, &mut MemoLog)>,
    ) {
        out.clear();
        let (a, b) = (&self.bodies[i], &self.bodies[j]);
        let (xa, xb) = (self.position(q, i), self.position(q, j));
        let reach = bounding_radius(&a.shape) + bounding_radius(&b.shape) + margin;
        if (xa - xb).norm() > reach {
            return;
        }
        // A box's bounding sphere reaches far past its faces (a silo's wall
        // holds every grain inside it): the exact sphere–box distance rules
        // out most such pairs before the narrow phase.
        let apart = |boxed: usize, half: &[f64; 3], sphere: usize, radius: f64| {
            let local = self.rotation(q, boxed).inverse()
                * (self.position(q, sphere) - self.position(q, boxed));
            let planar = self.dimension == Dimension::Planar;
            let outside = Vector3::from_fn(|k, _| {
                if planar && k == 2 {
                    0.0
                } else {
                    (local[k].abs() - half[k]).max(0.0)
                }
            });
            // Conservative by a round-off slack: a pair this test rejects
            // is one the narrow phase would find apart too.
            outside.norm() - radius > margin + 1e-9 * (radius + half[0] + half[1] + half[2])
        };
        match (a.shape, b.shape) {
            (Shape::Box { half_extents }, Shape::Sphere { radius })
                if apart(i, &half_extents, j, radius) =>
            {
                return;
            }
            (Shape::Sphere { radius }, Shape::Box { half_extents })
                if apart(j, &half_extents, i, radius) =>
            {
                return;
            }
            _ => {}
        }
        // Two balls are not kept: their own short path (`pair::balls_3d`)
        // is a few dozen operations.
        let balls = matches!(
            (a.shape, b.shape),
            (Shape::Sphere { .. }, Shape::Sphere { .. })
        );
        let mut memo = memo.filter(|_| !balls).and_then(|(memo, log)| {
            let n = position_size(self.dimension);
            let pose = |k: usize| &q.as_slice()[k * n..(k + 1) * n];
            let key = PairKey::new(a.shape, b.shape, pose(i), pose(j), margin)?;
            Some((memo, log, key))
        });
        if let Some((memo, log, key)) = &mut memo
            && let Some(points) = memo.find((i, j), key, log)
        {
            out.extend_from_slice(points);
            return;
        }
        match self.dimension {
            Dimension::Planar => {
                let pose = |x: Vector3<f64>, k: usize| {
                    let o = k * position_size(self.dimension);
                    Isometry2::new(Vector2::new(x.x, x.y), q[o + 2])
                };
                pair::contacts_2d_into(&a.shape, &pose(xa, i), &b.shape, &pose(xb, j), margin, out);
            }
            Dimension::Spatial => {
                let pose = |x: Vector3<f64>, k: usize| {
                    Isometry3::from_parts(Translation3::from(x), self.rotation(q, k))
                };
                pair::contacts_3d_into(&a.shape, &pose(xa, i), &b.shape, &pose(xb, j), margin, out);
            }
        }
        if let Some((_, log, key)) = memo {
            log.computed((i, j), key, out);
        }
    }

    /// Maps a world contact (point on body a, optional body b with its point,
    /// normal from b into a) to generalized n and D.
    #[allow(clippy::too_many_arguments)]
    fn fill_contact(
        &self,
        q: &DVector<f64>,
        id: ContactId,
        gap: f64,
        point_a: Vector3<f64>,
        b: Option<(usize, Vector3<f64>)>,
        normal: Vector3<f64>,
        edges: usize,
        out: &mut Contact,
    ) {
        let k = match self.dimension {
            Dimension::Planar => 2,
            Dimension::Spatial => edges,
        };
        let Contact {
            id: out_id,
            gap: out_gap,
            jacobian,
            frame,
        } = out;
        *out_id = id;
        *out_gap = gap;
        let frame = frame.get_or_insert_with(|| ContactFrame {
            point: point_a,
            normal,
            tangents: Vec::with_capacity(k),
        });
        frame.point = point_a;
        frame.normal = normal;
        let tangents = &mut frame.tangents;
        tangents.clear();
        match self.dimension {
            Dimension::Planar => {
                let t = Vector3::new(-normal.y, normal.x, 0.0);
                tangents.extend([t, -t]);
            }
            Dimension::Spatial => pyramid_directions_into(&normal, &self.up(), k, tangents),
        }
        // A fixed body has no velocities: the contact is on a's block alone.
        let b_moving = b.filter(|(j, _)| !self.is_fixed(*j));
        let blocks = [
            self.block(id.a),
            b_moving.map_or(self.block(id.a), |(j, _)| self.block(j)),
        ];
        let count = if b_moving.is_some() { 2 } else { 1 };
        jacobian.reset(&blocks[..count], k);
        self.add_jacobian(q, id.a, &point_a, 1.0, &normal, tangents, jacobian, 0);
        if let Some((j, point_b)) = b_moving {
            self.add_jacobian(q, j, &point_b, -1.0, &normal, tangents, jacobian, 1);
        }
    }

    /// Writes sign · (body i's contact Jacobian)ᵀ applied to the normal and
    /// tangents into block `slot` of `jacobian`: [n̄; (r × n̄)_z] in the plane,
    /// [n̄; Rᵀ(r × n̄)] in space.
    #[allow(clippy::too_many_arguments)]
    fn add_jacobian(
        &self,
        q: &DVector<f64>,
        i: usize,
        point: &Vector3<f64>,
        sign: f64,
        normal: &Vector3<f64>,
        tangents: &[Vector3<f64>],
        jacobian: &mut ContactJacobian,
        slot: usize,
    ) {
        let r = point - self.position(q, i);
        let mut write = |row: usize, values: &[f64]| {
            for (o, v) in jacobian.block_row_mut(row, slot).iter_mut().zip(values) {
                *o += sign * v;
            }
        };
        match self.dimension {
            Dimension::Planar => {
                let map = |u: &Vector3<f64>| [u.x, u.y, r.x * u.y - r.y * u.x];
                write(0, &map(normal));
                for (c, t) in tangents.iter().enumerate() {
                    write(c + 1, &map(t));
                }
            }
            Dimension::Spatial => {
                let rt: Matrix3<f64> = self
                    .rotation(q, i)
                    .to_rotation_matrix()
                    .matrix()
                    .transpose();
                let map = |u: &Vector3<f64>| {
                    let ang = rt * r.cross(u);
                    [u.x, u.y, u.z, ang.x, ang.y, ang.z]
                };
                write(0, &map(normal));
                for (c, t) in tangents.iter().enumerate() {
                    write(c + 1, &map(t));
                }
            }
        }
    }
}

/// Candidate pairs from which the narrow phase runs on two threads: below,
/// the handshake costs more than half the pairs' narrow phase.
pub const PARALLEL_PAIRS: usize = 512;

/// The helper thread for a geometry pass over `count` items (pairs,
/// bodies), when `threads` allows two, there are at least `least` items and
/// two threads were the faster when last measured.
fn parallel(threads: usize, count: usize, least: usize) -> Option<&'static PairThread> {
    if threads >= 2 && count >= least && pair_thread::pays() {
        pair_thread::shared()
    } else {
        None
    }
}

/// A potential contact as the narrow phase found it, before its Jacobian.
#[derive(Debug, Clone, Copy)]
pub struct FoundPoint {
    id: ContactId,
    gap: f64,
    point_a: Vector3<f64>,
    b: Option<(usize, Vector3<f64>)>,
    normal: Vector3<f64>,
}

/// What a search visits: a point the narrow phase found, or the index of an
/// earlier search's item to copy ([`super::reuse`]).
#[derive(Debug, Clone, Copy)]
pub enum Found {
    Point(FoundPoint),
    Copy(usize),
}

/// The source a search that copies records for a contact it computed.
pub const NOT_COPIED: usize = usize::MAX;

impl Found {
    /// The earlier item's index, or [`NOT_COPIED`].
    fn source(&self) -> usize {
        match self {
            Self::Point(_) => NOT_COPIED,
            Self::Copy(k) => *k,
        }
    }
}

/// The broad phase: the body pairs (i, j), i < j, whose bounding spheres
/// (centre, radius) come within `margin` of each other on every axis, by
/// sweep and prune along the axis of largest spread. Sorting costs
/// O(N log N); the sweep visits only pairs whose intervals overlap on that
/// axis. Returned sorted, so the contacts come out in the same order as from
/// an all-pairs loop.
pub fn candidate_pairs(
    spheres: &[(Vector3<f64>, f64)],
    margin: f64,
    dimension: Dimension,
) -> Vec<(usize, usize)> {
    let boxes: Vec<_> = spheres
        .iter()
        .map(|&(c, r)| (c, Vector3::repeat(r)))
        .collect();
    let mut pairs = Vec::new();
    candidate_pairs_into(
        &boxes,
        margin,
        dimension,
        &mut SweepSpace::default(),
        &mut pairs,
        1,
    );
    pairs
}

/// The broad phase's work space, kept between searches.
#[derive(Debug, Clone, Default)]
pub struct SweepSpace {
    /// Bodies sorted along the sweep axis, with their boxes' lower ends
    /// (the plain sweep).
    order: Vec<(f64, usize)>,
    /// Each small body's row (its cells across the sweep axis), its box's
    /// lower end along the axis and its index, sorted.
    cells: Vec<(i64, i64, f64, usize)>,
    /// The rows: cell indices and their range in `cells`.
    rows: Vec<(i64, i64, usize, usize)>,
    /// Bodies too large for a row, tested against every other.
    large: Vec<usize>,
    /// Whether each body is in `large`.
    is_large: Vec<bool>,
    /// Half extents across the sweep axis, for the median.
    extents: Vec<f64>,
    /// The second thread's pairs, and the two halves merged.
    pairs_b: Vec<(usize, usize)>,
    merged: Vec<(usize, usize)>,
}

/// The broad phase on world-aligned boxes (centre, half extents, m): the
/// pairs (i, j), i < j, whose boxes come within `margin` of each other on
/// every axis, into `pairs` (replaced, sorted), with `space` as work space.
///
/// Sweep and prune along the axis of largest spread, in rows: the plane
/// across that axis is cut into square cells as wide as the widest small
/// box plus the margin, every small box goes to the row (column of cells
/// along the axis) of its centre, and each row is swept against itself and
/// its four neighbours ahead, two sorted lists at a time. Two boxes that
/// come within the margin across the axis have centres at most a cell
/// apart, so every pair is found once. A box more than twice the
/// median's extent across the axis (a silo's wall, a table) is tested
/// against every other. A sweep along one axis alone visits every body in
/// a slab as wide as a grain: the 5,000-grain silo's column has a few
/// hundred grains in each, and the sweep took 4 ms of a 57 ms step. When
/// more than a quarter of the boxes are large (a pile of mixed bodies) or
/// more than [`MOST_LARGE`], or there are few boxes, the plain sweep along
/// the axis is used. With `threads` 2 and at least [`PARALLEL_BODIES`]
/// boxes, two threads sweep half the rows each and their sorted pairs are
/// merged: the same list.
pub fn candidate_pairs_into(
    boxes: &[(Vector3<f64>, Vector3<f64>)],
    margin: f64,
    dimension: Dimension,
    space: &mut SweepSpace,
    pairs: &mut Vec<(usize, usize)>,
    threads: usize,
) {
    pairs.clear();
    let axes = axes(dimension);
    let n = boxes.len();
    if n < 2 {
        return;
    }
    // The axis along which the centres spread most separates the most pairs.
    let mean = boxes.iter().fold(Vector3::zeros(), |s, (c, _)| s + c) / n as f64;
    let spread = boxes
        .iter()
        .fold(Vector3::zeros(), |s: Vector3<f64>, (c, _)| {
            s + (c - mean).component_mul(&(c - mean))
        });
    let axis = (0..axes)
        .max_by(|&a, &b| spread[a].total_cmp(&spread[b]))
        .unwrap_or(0);
    let pad = 0.5 * margin.max(0.0);
    let apart = |a: usize, b: usize| boxes_apart(boxes, a, b, pad, axes);
    // Across the axis: one other axis in the plane, two in space.
    let across = [(axis + 1) % axes, (axis + 2) % axes];
    let across = &across[..axes - 1];
    let extent = |i: usize| across.iter().fold(0.0_f64, |m, &x| m.max(boxes[i].1[x]));
    space.extents.clear();
    space.extents.extend((0..n).map(extent));
    let middle = n / 2;
    let median = *space
        .extents
        .select_nth_unstable_by(middle, f64::total_cmp)
        .1;
    let limit = 2.0 * median;
    // Non-finite boxes are large too: tested against every other, they are
    // left to the narrow phase, which rejects them.
    let small = |i: usize| {
        let (c, h) = boxes[i];
        extent(i) <= limit && c.iter().chain(h.iter()).all(|x| x.is_finite())
    };
    space.is_large.clear();
    space.is_large.extend((0..n).map(|i| !small(i)));
    space.large.clear();
    space.large.extend((0..n).filter(|&i| space.is_large[i]));
    let widest = (0..n)
        .filter(|&i| !space.is_large[i])
        .fold(0.0_f64, |m, i| m.max(extent(i)));
    let cell = 2.0 * (widest + pad);
    let large = space.large.len();
    if n < 8 || large > MOST_LARGE.min(n / 4) || !(cell > 0.0 && cell.is_finite()) {
        sweep_along(boxes, axis, pad, &apart, &mut space.order, pairs);
        pairs.sort_unstable();
        return;
    }
    let index = |x: f64| (x / cell).floor() as i64;
    space.cells.clear();
    space
        .cells
        .extend((0..n).filter(|&i| !space.is_large[i]).map(|i| {
            let (c, h) = boxes[i];
            let second = across.get(1).map_or(0, |&x| index(c[x]));
            (index(c[across[0]]), second, c[axis] - h[axis] - pad, i)
        }));
    space.cells.sort_unstable_by(|a, b| {
        (a.0, a.1)
            .cmp(&(b.0, b.1))
            .then(a.2.total_cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    space.rows.clear();
    let mut start = 0;
    for k in 1..=space.cells.len() {
        let (r, s) = (space.cells[start].0, space.cells[start].1);
        if k == space.cells.len() || (space.cells[k].0, space.cells[k].1) != (r, s) {
            space.rows.push((r, s, start, k));
            start = k;
        }
    }
    let SweepSpace {
        cells,
        rows,
        large,
        is_large,
        pairs_b,
        merged,
        ..
    } = space;
    let (cells, rows, large, is_large) = (&*cells, &*rows, &*large, &*is_large);
    // The rows `rows[part]` against themselves and their neighbours ahead,
    // and, with `large_too`, the large boxes against every body, into
    // `pairs`, sorted.
    let sweep_rows =
        |part: std::ops::Range<usize>, large_too: bool, pairs: &mut Vec<(usize, usize)>| {
            // Cell k's box against the boxes of cells `ahead` (sorted by their
            // lower ends) that start before it ends.
            let mut meet = |k: usize, ahead: std::ops::Range<usize>| {
                let (c, h) = boxes[cells[k].3];
                let lows = cells[ahead].iter().map(|&(_, _, lo, b)| (lo, b));
                meet_ahead(cells[k].3, c[axis] + h[axis] + pad, lows, &apart, pairs);
            };
            for &(r, s, start, end) in &rows[part] {
                // Within the row.
                for a in start..end {
                    meet(a, a + 1..end);
                }
                // With the neighbours ahead: each pair of neighbouring rows once.
                for (dr, ds) in [(0, 1), (1, -1), (1, 0), (1, 1)] {
                    let key = (r + dr, s + ds);
                    let Ok(at) = rows.binary_search_by(|row| (row.0, row.1).cmp(&key)) else {
                        continue;
                    };
                    let (_, _, other, other_end) = rows[at];
                    // Two lists sorted by their lower ends: whichever starts
                    // first meets the other's boxes that start before it ends.
                    let (mut a, mut b) = (start, other);
                    while a < end && b < other_end {
                        if cells[a].2 <= cells[b].2 {
                            meet(a, b..other_end);
                            a += 1;
                        } else {
                            meet(b, a..end);
                            b += 1;
                        }
                    }
                }
            }
            if large_too {
                for &i in large {
                    for (j, &j_large) in is_large.iter().enumerate() {
                        // Large with large once, at the first of the two.
                        if j == i || (j_large && j < i) {
                            continue;
                        }
                        if !apart(i, j) {
                            pairs.push((i.min(j), i.max(j)));
                        }
                    }
                }
            }
            pairs.sort_unstable();
        };
    // Two threads sweep half the rows each (the second also the large
    // boxes) and sort their pairs; the two sorted lists merge into the
    // same list as one thread's.
    match parallel(threads, n, PARALLEL_BODIES) {
        None => sweep_rows(0..rows.len(), true, pairs),
        Some(helper) => {
            let half = rows.len() / 2;
            pairs_b.clear();
            both(
                Some(helper),
                true,
                || sweep_rows(0..half, false, pairs),
                || sweep_rows(half..rows.len(), true, pairs_b),
            );
            merged.clear();
            merged.reserve(pairs.len() + pairs_b.len());
            let (mut a, mut b) = (pairs.iter().peekable(), pairs_b.iter().peekable());
            while let (Some(&&x), Some(&&y)) = (a.peek(), b.peek()) {
                if x <= y {
                    merged.push(x);
                    a.next();
                } else {
                    merged.push(y);
                    b.next();
                }
            }
            merged.extend(a);
            merged.extend(b);
            std::mem::swap(pairs, merged);
        }
    }
}

/// The axes a broad phase compares: two in the plane, three in space.
fn axes(dimension: Dimension) -> usize {
    match dimension {
        Dimension::Planar => 2,
        Dimension::Spatial => 3,
    }
}

/// Whether boxes a and b (centre, half extents) are more than 2 `pad`
/// apart on one of the first `axes` axes.
fn boxes_apart(
    boxes: &[(Vector3<f64>, Vector3<f64>)],
    a: usize,
    b: usize,
    pad: f64,
    axes: usize,
) -> bool {
    let ((ca, ha), (cb, hb)) = (boxes[a], boxes[b]);
    (0..axes).any(|x| (ca[x] - cb[x]).abs() > ha[x] + hb[x] + 2.0 * pad)
}

/// Bodies from which the broad phase's rows are swept on two threads (the
/// 1,000-grain silo's geometry 1.50 → 1.37 ms a step, the hourglass's 0.74
/// → 0.57, the silo of 5,000's 7.1 → 6.1).
pub const PARALLEL_BODIES: usize = 512;

/// The most large boxes [`candidate_pairs_into`] tests against every body
/// (each costs a pass over all of them); with more, the plain sweep.
const MOST_LARGE: usize = 64;

/// The plain sweep and prune along `axis`: every pair whose boxes overlap
/// there within 2 `pad` is tested on every axis.
fn sweep_along(
    boxes: &[(Vector3<f64>, Vector3<f64>)],
    axis: usize,
    pad: f64,
    apart: &impl Fn(usize, usize) -> bool,
    order: &mut Vec<(f64, usize)>,
    pairs: &mut Vec<(usize, usize)>,
) {
    order.clear();
    order.extend(
        boxes
            .iter()
            .enumerate()
            .map(|(i, (c, half))| (c[axis] - half[axis] - pad, i)),
    );
    order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (k, &(_, a)) in order.iter().enumerate() {
        let (ca, ha) = boxes[a];
        // Non-finite positions never pass the test; they are left to the
        // narrow phase, which rejects them.
        meet_ahead(
            a,
            ca[axis] + ha[axis] + pad,
            order[k + 1..].iter().copied(),
            apart,
            pairs,
        );
    }
}

/// Body `a`, whose box ends at `top` along the sweep axis, against the
/// bodies `ahead` (lower ends along the axis, ascending): those that start
/// before `top` and are not `apart` from it join `pairs`.
fn meet_ahead(
    a: usize,
    top: f64,
    ahead: impl Iterator<Item = (f64, usize)>,
    apart: &impl Fn(usize, usize) -> bool,
    pairs: &mut Vec<(usize, usize)>,
) {
    for (lo, b) in ahead {
        if lo > top {
            break;
        }
        if !apart(a, b) {
            pairs.push((a.min(b), a.max(b)));
        }
    }
}

/// A body's world-aligned bounding box (centre, half extents), m: a box's
/// is |R| h, a capsule's (core along its x axis) |R e_x| ℓ + r. Tighter
/// than the bounding sphere, whose cube around a silo's wall reaches every
/// grain in it (the 1,000-grain silo: 12,000 candidate pairs a search for
/// 2,000 contacts).
pub fn world_box(
    shape: &Shape,
    x: Vector3<f64>,
    r: &UnitQuaternion<f64>,
) -> (Vector3<f64>, Vector3<f64>) {
    let half = match *shape {
        Shape::Sphere { radius } => Vector3::repeat(radius),
        Shape::Capsule {
            half_length,
            radius,
        } => (r * Vector3::x()).abs() * half_length + Vector3::repeat(radius),
        Shape::Box { half_extents } => {
            r.to_rotation_matrix().matrix().abs() * Vector3::from(half_extents)
        }
    };
    (x, half)
}

/// Coordinates per body.
pub fn position_size(dimension: Dimension) -> usize {
    match dimension {
        Dimension::Planar => 3,
        Dimension::Spatial => 7,
    }
}

/// Velocities per body.
pub fn velocity_size(dimension: Dimension) -> usize {
    match dimension {
        Dimension::Planar => 3,
        Dimension::Spatial => 6,
    }
}

/// Radius of a sphere about the centre of mass containing the shape, m.
pub fn bounding_radius(shape: &Shape) -> f64 {
    match *shape {
        Shape::Sphere { radius } => radius,
        Shape::Capsule {
            half_length,
            radius,
        } => half_length + radius,
        Shape::Box { half_extents } => Vector3::from(half_extents).norm(),
    }
}

/// The features a shape can touch a half-space with: (feature id, world point,
/// radius). A sphere touches with its centre (radius r), a capsule with its two
/// end-cap centres (the paper's rod constraints f± = y ± (l/2) sin θ − ρ), a box
/// with its corners (radius 0).
fn surface_features(
    shape: &Shape,
    x: &Vector3<f64>,
    r: &UnitQuaternion<f64>,
    dimension: Dimension,
) -> impl Iterator<Item = (u32, Vector3<f64>, f64)> {
    let mut features = [(0, Vector3::zeros(), 0.0); 8];
    let count = match *shape {
        Shape::Sphere { radius } => {
            features[0] = (0, *x, radius);
            1
        }
        Shape::Capsule {
            half_length,
            radius,
        } => {
            for (f, s) in [-1.0, 1.0].iter().enumerate() {
                features[f] = (
                    f as u32,
                    x + r * Vector3::new(s * half_length, 0.0, 0.0),
                    radius,
                );
            }
            2
        }
        Shape::Box { half_extents } => {
            let [hx, hy, hz] = half_extents;
            let corners = match dimension {
                Dimension::Planar => 4,
                Dimension::Spatial => 8,
            };
            for (f, feature) in features.iter_mut().enumerate().take(corners) {
                let corner = match dimension {
                    Dimension::Planar => {
                        let (a, b) = [(-1., -1.), (1., -1.), (1., 1.), (-1., 1.)][f];
                        Vector3::new(a * hx, b * hy, 0.0)
                    }
                    Dimension::Spatial => {
                        let s = |bit: usize| if f & bit == 0 { -1.0 } else { 1.0 };
                        Vector3::new(s(1) * hx, s(2) * hy, s(4) * hz)
                    }
                };
                *feature = (f as u32, x + r * corner, 0.0);
            }
            corners
        }
    };
    features.into_iter().take(count)
}

/// The default principal inertia of a solid shape of mass m, kg·m². In the plane
/// a sphere is a disk (½ m r² about z).
pub fn default_inertia(shape: &Shape, mass: f64, dimension: Dimension) -> Vector3<f64> {
    match *shape {
        Shape::Sphere { radius } => match dimension {
            Dimension::Planar => Vector3::repeat(0.5 * mass * radius * radius),
            Dimension::Spatial => Vector3::repeat(0.4 * mass * radius * radius),
        },
        Shape::Capsule {
            half_length,
            radius,
        } => {
            // A solid cylinder of the capsule's full length: about the axis ½ m r²,
            // across it m (L²/12 + r²/4).
            let length = 2.0 * (half_length + radius);
            let across = mass * (length * length / 12.0 + radius * radius / 4.0);
            Vector3::new(0.5 * mass * radius * radius, across, across)
        }
        Shape::Box { half_extents } => {
            let [a, b, c] = half_extents.map(|h| 2.0 * h);
            Vector3::new(
                mass * (b * b + c * c) / 12.0,
                mass * (a * a + c * c) / 12.0,
                mass * (a * a + b * b) / 12.0,
            )
        }
    }
}
