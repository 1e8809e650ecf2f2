//! One contact's Coulomb problem on the circular cone, solved exactly: the
//! local problem of NSGS in space (Moreau 1998, after (20); Acary &
//! Brogliato 2008 ch. 13, Siconos's fc3d one-contact solvers).
//!
//! In the contact's frame (normal n, orthonormal tangents t₁, t₂) the
//! unknowns are the impulse r = (r_N, r_T) and the relative velocity
//! u = W r + q, with W the contact's 3 × 3 Delassus block JM⁻¹Jᵀ and q the
//! velocity the other impulses and the scheme's terms leave. Coulomb's law
//! in De Saxcé's form:
//!
//! ```text
//!   K ∋ r ⊥ û ∈ K*,   û = u + μ‖u_T‖ e_N,   K = {‖r_T‖ ≤ μ r_N}
//! ```
//!
//! has three cases, tried in turn ([`solve`]):
//! - take-off, r = 0, exactly when q_N ≥ 0;
//! - sticking, u = 0: r = −W⁻¹q, when it lies in K;
//! - sliding, u_N = 0, r_T = −μ r_N s with s = u_T/‖u_T‖. Writing
//!   s = (cos φ, sin φ), u_N = 0 gives r_N(φ) = −q_N / (W_NN − μ W_NT·s), and
//!   the slip must be along s: g(φ) = s⊥·u_T(φ) = 0 with s·u_T ≥ 0. g is a
//!   trigonometric polynomial of degree 2 (the quartic of Siconos's
//!   `fc3d_onecontact_quartic`); it is solved by Newton's method on φ from
//!   the slip direction of the previous impulse or of the normal impulse
//!   alone, and, should Newton leave the admissible range, by bisection
//!   between the sign changes of g on a fixed grid. Either ends at machine
//!   precision in φ. For a sphere W_NT = 0 and W_TT = c I, and the first
//!   Newton step lands on the closed form s = q_T/‖q_T‖.

use nalgebra::{Matrix3, Vector2, Vector3};

/// Newton steps on φ before the grid search takes over.
pub(super) const NEWTON_STEPS: usize = 40;
/// Grid points of the fallback search over φ ∈ [0, 2π).
pub(super) const GRID: usize = 72;

/// The projection of x onto K_μ = {‖x_T‖ ≤ μ x_N} (x = (x_N, x_T₁, x_T₂)).
pub fn project(x: &Vector3<f64>, mu: f64) -> Vector3<f64> {
    // √(y² + z²) rather than `hypot`, which was a tenth of the silo's step;
    // impulses and velocities are far from where the squares overflow.
    let t = (x.y * x.y + x.z * x.z).sqrt();
    if t <= mu * x.x {
        return *x;
    }
    if mu * t <= -x.x {
        return Vector3::zeros();
    }
    let a = (x.x + mu * t) / (1.0 + mu * mu);
    Vector3::new(a, mu * a * x.y / t, mu * a * x.z / t)
}

/// The natural-map error of one contact (Siconos's fc3d error,
/// Acary & Brogliato 2008 ch. 13): r − Π_K(r − ρ û), with û De Saxcé's
/// modified velocity and ρ > 0 a velocity-to-impulse scale. Zero exactly
/// when (r, u) satisfies Coulomb's law.
pub fn natural_map(r: &Vector3<f64>, u: &Vector3<f64>, mu: f64, rho: f64) -> Vector3<f64> {
    let modified = Vector3::new(u.x + mu * (u.y * u.y + u.z * u.z).sqrt(), u.y, u.z);
    r - project(&(r - modified * rho), mu)
}

/// The contact's impulse r with u = W r + q on Coulomb's cone of friction
/// μ (module documentation). `w_inverse` is W⁻¹; `previous` the last
/// impulse, whose slip direction starts Newton's method; `isotropic` is
/// [`decoupled_and_isotropic`]`(w)`, which NSGS decides once per contact
/// instead of at each visit. The cases every grain meets (take-off,
/// sticking, a sphere's closed-form slide) are inlined into the sweep; the
/// general slide ([`slide`]) is not.
#[inline(always)]
pub fn solve(
    w: &Matrix3<f64>,
    w_inverse: &Matrix3<f64>,
    q: &Vector3<f64>,
    mu: f64,
    previous: &Vector3<f64>,
    isotropic: bool,
) -> Vector3<f64> {
    if q.x >= 0.0 {
        return Vector3::zeros();
    }
    let stick = -(w_inverse * q);
    // ‖r_T‖ ≤ μ r_N compared squared (μ r_N > 0): no square root on the
    // path every sticking contact takes.
    if stick.x > 0.0 && stick.y * stick.y + stick.z * stick.z <= (mu * stick.x) * (mu * stick.x) {
        return stick;
    }
    let normal_only = Vector3::new(-q.x / w[(0, 0)], 0.0, 0.0);
    if mu == 0.0 {
        return normal_only;
    }
    if isotropic {
        // W = diag(a, b, b), a sphere's contact (its point on the line of
        // centres): r_N = −q_N/a, and u_T = b r_T + q_T is parallel to r_T
        // only along q_T, so the slip is along q_T and r_T = −μ r_N q_T/|q_T|.
        // Not sticking means |q_T| > μ b r_N > 0: the slip speed
        // |q_T| − μ b r_N is positive. No Newton iterations.
        let r_n = normal_only.x;
        let slip = (q.y * q.y + q.z * q.z).sqrt();
        return Vector3::new(r_n, -mu * r_n * q.y / slip, -mu * r_n * q.z / slip);
    }
    slide(w, q, mu, previous, &stick, &normal_only)
}

/// [`solve`]'s sliding case for a general block W: Newton's method on the
/// slip angle from three starts, then a grid.
#[inline(never)]
pub(super) fn slide(
    w: &Matrix3<f64>,
    q: &Vector3<f64>,
    mu: f64,
    previous: &Vector3<f64>,
    stick: &Vector3<f64>,
    normal_only: &Vector3<f64>,
) -> Vector3<f64> {
    let slide = Sliding { w, q, mu };
    // Starts: the previous friction's slip direction (−r_T), then the slip
    // under the normal impulse alone, then the sticking impulse's −r_T.
    let slip_alone = (w * normal_only + q).fixed_rows::<2>(1).into_owned();
    let starts = [
        -previous.fixed_rows::<2>(1).into_owned(),
        slip_alone,
        -stick.fixed_rows::<2>(1).into_owned(),
    ];
    for start in starts {
        if start.norm() > 0.0
            && let Some(phi) = slide.newton(start.y.atan2(start.x))
        {
            return slide.impulse(phi);
        }
    }
    slide.grid().map_or(*normal_only, |phi| slide.impulse(phi))
}

/// W = diag(a, b, b) to within 1e-12 of its diagonal: no coupling between
/// the normal and the tangents, the same compliance along both tangents.
pub fn decoupled_and_isotropic(w: &Matrix3<f64>) -> bool {
    let scale = 1e-12 * w[(0, 0)].max(w[(1, 1)]);
    [
        w[(0, 1)],
        w[(0, 2)],
        w[(1, 2)],
        w[(1, 0)],
        w[(2, 0)],
        w[(2, 1)],
    ]
    .iter()
    .all(|x| x.abs() <= scale)
        && (w[(1, 1)] - w[(2, 2)]).abs() <= scale
}

/// The sliding case's equation in the slip angle φ.
pub(super) struct Sliding<'a> {
    pub(super) w: &'a Matrix3<f64>,
    pub(super) q: &'a Vector3<f64>,
    pub(super) mu: f64,
}

/// g(φ) and what decides whether its root is a solution.
pub(super) struct Evaluation {
    /// s⊥·u_T: zero when the slip is along s.
    pub(super) g: f64,
    /// dg/dφ.
    pub(super) slope: f64,
    /// r_N(φ) > 0 with a positive denominator.
    pub(super) admissible: bool,
    /// s·u_T: the slip speed, ≥ 0 at a solution.
    pub(super) speed: f64,
}

impl Sliding<'_> {
    pub(super) fn direction(phi: f64) -> (Vector2<f64>, Vector2<f64>) {
        let (sin, cos) = phi.sin_cos();
        (Vector2::new(cos, sin), Vector2::new(-sin, cos))
    }

    pub(super) fn impulse(&self, phi: f64) -> Vector3<f64> {
        let (s, _) = Self::direction(phi);
        let w_nt = Vector2::new(self.w[(0, 1)], self.w[(0, 2)]);
        let r_n = -self.q.x / (self.w[(0, 0)] - self.mu * w_nt.dot(&s));
        Vector3::new(r_n, -self.mu * r_n * s.x, -self.mu * r_n * s.y)
    }

    pub(super) fn evaluate(&self, phi: f64) -> Evaluation {
        let (s, perp) = Self::direction(phi);
        let w = self.w;
        let mu = self.mu;
        let w_nt = Vector2::new(w[(0, 1)], w[(0, 2)]);
        let w_tn = Vector2::new(w[(1, 0)], w[(2, 0)]);
        let w_tt = w.fixed_view::<2, 2>(1, 1);
        let q_t = Vector2::new(self.q.y, self.q.z);
        let d = w[(0, 0)] - mu * w_nt.dot(&s);
        let r_n = -self.q.x / d;
        let a = w_tn - w_tt * s * mu;
        let u_t = a * r_n + q_t;
        // d' = −μ W_NT·s⊥, r_N' = −r_N d'/d, u_T' = r_N' a − μ r_N W_TT s⊥,
        // g' = −s·u_T + s⊥·u_T'.
        let d_slope = -mu * w_nt.dot(&perp);
        let r_n_slope = -r_n * d_slope / d;
        let u_t_slope = a * r_n_slope - w_tt * perp * (mu * r_n);
        let speed = s.dot(&u_t);
        Evaluation {
            g: perp.dot(&u_t),
            slope: -speed + perp.dot(&u_t_slope),
            admissible: d > 0.0 && r_n > 0.0,
            speed,
        }
    }

    /// Whether φ solves the sliding case to round-off.
    pub(super) fn accept(&self, e: &Evaluation) -> bool {
        let scale = self.q.norm();
        e.admissible && e.speed >= -1e-12 * scale
    }

    pub(super) fn newton(&self, mut phi: f64) -> Option<f64> {
        for _ in 0..NEWTON_STEPS {
            let e = self.evaluate(phi);
            if !e.admissible || e.slope == 0.0 || !e.g.is_finite() {
                return None;
            }
            let step = e.g / e.slope;
            phi -= step;
            if step.abs() <= 4.0 * f64::EPSILON * phi.abs().max(1.0) {
                let e = self.evaluate(phi);
                return self.accept(&e).then_some(phi);
            }
        }
        None
    }

    /// The admissible root of g with the largest slip speed among the sign
    /// changes on the grid, refined by bisection.
    pub(super) fn grid(&self) -> Option<f64> {
        let step = std::f64::consts::TAU / GRID as f64;
        let mut best: Option<(f64, f64)> = None;
        let mut last = self.evaluate(0.0);
        for i in 1..=GRID {
            let phi = i as f64 * step;
            let e = self.evaluate(phi);
            if last.admissible && e.admissible && (last.g <= 0.0) != (e.g <= 0.0) {
                let (mut lo, mut hi) = (phi - step, phi);
                let rising = last.g <= 0.0;
                for _ in 0..64 {
                    let mid = 0.5 * (lo + hi);
                    if (self.evaluate(mid).g <= 0.0) == rising {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                let root = 0.5 * (lo + hi);
                let at = self.evaluate(root);
                if self.accept(&at) && best.is_none_or(|(_, speed)| at.speed > speed) {
                    best = Some((root, at.speed));
                }
            }
            last = e;
        }
        best.map(|(phi, _)| phi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(w: &Matrix3<f64>, q: &Vector3<f64>, mu: f64) -> Vector3<f64> {
        let inverse = w.try_inverse().expect("W is positive definite");
        let r = solve(
            w,
            &inverse,
            q,
            mu,
            &Vector3::zeros(),
            decoupled_and_isotropic(w),
        );
        let u = w * r + q;
        let error = natural_map(&r, &u, mu, 1.0 / w[(0, 0)]);
        assert!(
            error.norm() <= 1e-12 * (r.norm() + q.norm()),
            "W = {w}, q = {q}, μ = {mu}: r = {r}, u = {u}, error {error}"
        );
        r
    }

    #[test]
    fn the_three_cases_of_a_sphere() {
        let w = Matrix3::from_diagonal(&Vector3::new(1.0, 3.5, 3.5));
        // Take-off.
        assert_eq!(
            check(&w, &Vector3::new(0.2, 1.0, 0.0), 0.5),
            Vector3::zeros()
        );
        // Sticking: a small tangential velocity.
        let r = check(&w, &Vector3::new(-1.0, 0.7, 0.0), 0.5);
        assert!((r - Vector3::new(1.0, -0.2, 0.0)).norm() < 1e-15);
        // Sliding: the friction μ r_N against q_T.
        let r = check(&w, &Vector3::new(-1.0, 3.0, 4.0), 0.5);
        assert!((r - Vector3::new(1.0, -0.3, -0.4)).norm() < 1e-14, "{r}");
    }

    /// The closed form for W = diag(a, b, b) against Newton's method on the
    /// slip angle (the same W with a coupling of 1e-9, below which the
    /// closed form is not taken): the same impulse in every direction.
    #[test]
    fn a_sphere_slides_along_its_free_slip_as_newton_finds() {
        let w = Matrix3::from_diagonal(&Vector3::new(2.0, 7.0, 7.0));
        let mut coupled = w;
        coupled[(1, 2)] = 1e-9;
        coupled[(2, 1)] = 1e-9;
        assert!(decoupled_and_isotropic(&w) && !decoupled_and_isotropic(&coupled));
        for i in 0..24 {
            let phi = i as f64 * std::f64::consts::TAU / 24.0;
            let q = Vector3::new(-1.0, 3.0 * phi.cos(), 3.0 * phi.sin());
            let closed = check(&w, &q, 0.4);
            let newton = check(&coupled, &q, 0.4);
            assert!((closed - newton).norm() < 1e-8, "{closed} vs {newton}");
            assert!((closed.y.hypot(closed.z) - 0.4 * closed.x).abs() < 1e-15);
        }
    }

    #[test]
    fn coupled_blocks_satisfy_the_law_in_every_direction() {
        // A box corner's block: W_NT ≠ 0 and an anisotropic W_TT.
        let j = Matrix3::new(1.0, 0.3, -0.2, 0.1, 1.0, 0.4, -0.3, 0.2, 1.0);
        let w = j * Matrix3::from_diagonal(&Vector3::new(1.0, 2.0, 0.5)) * j.transpose();
        for mu in [0.1, 0.5, 1.0] {
            for i in 0..36 {
                let phi = i as f64 * std::f64::consts::TAU / 36.0;
                for speed in [0.01, 0.5, 5.0] {
                    let q = Vector3::new(-1.0, speed * phi.cos(), speed * phi.sin());
                    check(&w, &q, mu);
                }
            }
        }
    }

    #[test]
    fn the_projection_lands_on_the_cone() {
        let x = Vector3::new(1.0, 3.0, 4.0);
        let p = project(&x, 0.5);
        assert!((p.y.hypot(p.z) - 0.5 * p.x).abs() < 1e-15);
        assert_eq!(
            project(&Vector3::new(-5.0, 1.0, 0.0), 0.5),
            Vector3::zeros()
        );
        assert_eq!(
            project(&Vector3::new(2.0, 0.5, 0.0), 0.5),
            Vector3::new(2.0, 0.5, 0.0)
        );
    }
}
