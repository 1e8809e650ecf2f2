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
use super::perturbation::{Perturbation, PerturbationForce};
use super::{Block, ContactId, ImpactCoefficients, Other};
use crate::geometry::{Shape, ray};
use nalgebra::{DMatrix, DVector, DVectorViewMut, Matrix3, Quaternion, UnitQuaternion, Vector3};
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
            .map(|i| self.point_speed(v, i))
            .fold(0.0, f64::max)
    }

    /// The fastest speed of any point of body i at velocity v: |v| + |ω|·r
    /// with r its bounding radius, m/s.
    pub fn point_speed(&self, v: &DVector<f64>, i: usize) -> f64 {
        let block = self.block(i);
        let s = &v.as_slice()[block.start..block.start + block.len];
        let (linear, angular) = match self.dimension {
            Dimension::Planar => (s[0].hypot(s[1]), s[2].abs()),
            Dimension::Spatial => (
                Vector3::new(s[0], s[1], s[2]).norm(),
                Vector3::new(s[3], s[4], s[5]).norm(),
            ),
        };
        linear + angular * self.bodies[i].shape.bounding_radius()
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

    /// The gyroscopic impulse of a step of `h`, N·m·s per angular velocity
    /// (zero elsewhere): I(ω⁺ − ω) in each spatial body's axes, with ω⁺ from
    /// the implicit midpoint rule on Euler's equations of the free body,
    ///
    /// ```text
    ///   I (ω⁺ − ω) = −h ω̄ × I ω̄,   ω̄ = (ω + ω⁺)/2,
    /// ```
    ///
    /// solved by Newton's method. The rule keeps both quadratic invariants
    /// of the free body, the kinetic energy ½ωᵀIω and |Iω| (Hairer, Lubich &
    /// Wanner, *Geometric Numerical Integration*, §IV.2 and §VII.5), where
    /// the explicit −h ω × Iω makes a spinning box gain energy every step.
    /// With h = 0 it is zero.
    pub fn gyroscopic_impulse(&self, v: &DVector<f64>, h: f64) -> DVector<f64> {
        let mut out = DVector::zeros(self.dof());
        if self.dimension == Dimension::Planar || h == 0.0 {
            return out;
        }
        for (i, body) in self.bodies.iter().enumerate() {
            if self.is_fixed(i) {
                continue;
            }
            let o = i * 6 + 3;
            let w = Vector3::new(v[o], v[o + 1], v[o + 2]);
            let impulse = body
                .inertia
                .component_mul(&(midpoint_spin(&body.inertia, &w, h) - w));
            out.fixed_rows_mut::<3>(o).copy_from(&impulse);
        }
        out
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
                .map(|(_, b)| b.shape.bounding_radius())
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
                    let gyro = -w.cross(&body.inertia.component_mul(&w));
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

/// Newton steps of [`midpoint_spin`] at most; it converges quadratically
/// from ω, in 3–5 steps at the spins of the scenes.
const MIDPOINT_NEWTON_STEPS: usize = 50;

/// ω⁺ of the implicit midpoint rule on Euler's equations of a free body
/// with principal inertia `inertia`, from ω = `w` over `h`
/// ([`RigidSystem::gyroscopic_impulse`]): the root of
/// F(ω⁺) = I(ω⁺ − ω) + h ω̄ × Iω̄ by Newton's method, with
/// F′ = I + (h/2)([ω̄]ₓI − [Iω̄]ₓ). Newton stops when a step no longer
/// changes ω⁺ beyond rounding; past [`MIDPOINT_NEWTON_STEPS`], or on a
/// singular F′ (|ω| h of order one), it keeps the last iterate.
fn midpoint_spin(inertia: &Vector3<f64>, w: &Vector3<f64>, h: f64) -> Vector3<f64> {
    let i = Matrix3::from_diagonal(inertia);
    let mut next = *w;
    for _ in 0..MIDPOINT_NEWTON_STEPS {
        let mean = 0.5 * (w + next);
        let momentum = inertia.component_mul(&mean);
        let f = inertia.component_mul(&(next - w)) + h * mean.cross(&momentum);
        let jacobian = i + 0.5 * h * (mean.cross_matrix() * i - momentum.cross_matrix());
        let Some(step) = jacobian.lu().solve(&f) else {
            break;
        };
        next -= step;
        if step.norm() <= 4.0 * f64::EPSILON * next.norm() {
            break;
        }
    }
    next
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
