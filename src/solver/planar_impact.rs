//! The LCP (33) of Glocker & Studer 2005 §6: planar frictional contacts with
//! Newton's impact law, on velocity level.
//!
//! For the k contacts of the index set, of which the k_f with friction have a
//! tangent w_T, the unknowns and slacks are arranged as in (27),
//!
//! ```text
//! 0 ≤ (ξ_N, ξ_R, Λ_L) ⊥ (Λ_N, Λ_R, ξ_L) ≥ 0,
//! ```
//!
//! with Λ_R = μΛ_N + Λ_T (24), Λ_L = μΛ_N − Λ_T (25), ξ_T = ξ_R − ξ_L (26), and
//!
//! ```text
//! ⎛ξ_N⎞   ⎡ W_NᵀM⁻¹(W_N − W_Tμ)  W_NᵀM⁻¹W_T  0 ⎤⎛Λ_N⎞   ⎛ W_Nᵀu* + ε_N γ_N^A ⎞
//! ⎜ξ_R⎟ = ⎢ W_TᵀM⁻¹(W_N − W_Tμ)  W_TᵀM⁻¹W_T  E ⎥⎜Λ_R⎟ + ⎜ W_Tᵀu* + ε_T γ_T^A ⎟   (33)
//! ⎝Λ_L⎠   ⎣ 2μ                   −E           0 ⎦⎝ξ_L⎠   ⎝ 0                  ⎠
//! ```
//!
//! where u* = u^A + M⁻¹h Δt is the velocity without contact impulses (so
//! W_Nᵀu* = W_NᵀM⁻¹hΔt + γ_N^A for scleronomic contacts, ŵ = 0). Placing Λ_L
//! and ξ_L this way needs no matrix inversion beyond M⁻¹ (§6). Contacts without
//! friction (μ = 0 or w_T = 0) keep only their normal row.

use crate::lcp::Lcp;
use nalgebra::{DMatrix, DVector};

/// One contact of the index set, in the paper's symbols.
#[derive(Debug, Clone)]
pub struct PlanarContact {
    /// Generalized normal force direction w_N.
    pub w_n: DVector<f64>,
    /// Generalized tangential force direction w_T (None: frictionless).
    pub w_t: Option<DVector<f64>>,
    /// Friction coefficient μ.
    pub mu: f64,
    /// The normal term of the law, ξ_N = γ_N^E + this: ε_N γ_N^A for
    /// Newton's law (12).
    pub normal_term: f64,
    /// Tangential restitution ε_T.
    pub eps_t: f64,
}

/// The assembled LCP (33) and what is needed to turn its solution into
/// impulses and the end velocity u^E (32).
pub struct PlanarImpactLcp {
    /// The LCP y = A x + b of (33).
    pub lcp: Lcp,
    /// Number of contacts k.
    pub contacts: usize,
    /// For each friction row, the contact it belongs to.
    pub friction_of: Vec<usize>,
    /// [W_N W_T] (normal columns first).
    jacobian: DMatrix<f64>,
    /// M⁻¹ [W_N W_T].
    minv_jacobian: DMatrix<f64>,
    /// The diagonal of M⁻¹.
    mass_inverse_diagonal: DVector<f64>,
    mu: Vec<f64>,
}

/// Impulses of one contact recovered from a solution of (33).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanarImpulse {
    /// Normal impulse Λ_N ≥ 0, N·s.
    pub normal: f64,
    /// Tangential impulse Λ_T ∈ [−μΛ_N, μΛ_N], N·s (along w_T).
    pub tangential: f64,
    /// Tangential slip ξ_T = ξ_R − ξ_L (26); zero when sticking.
    pub slip: f64,
}

impl PlanarImpactLcp {
    /// Builds (33) for `contacts` with M⁻¹ = `mass_inverse`, the free velocity
    /// u* = u^A + M⁻¹hΔt and the velocity u^A at the start of the step.
    pub fn new(
        contacts: &[PlanarContact],
        mass_inverse: &DMatrix<f64>,
        free: &DVector<f64>,
        u_a: &DVector<f64>,
    ) -> Self {
        let dof = free.len();
        let k = contacts.len();
        let friction_of: Vec<usize> = (0..k)
            .filter(|&i| contacts[i].mu > 0.0 && contacts[i].w_t.is_some())
            .collect();
        let kf = friction_of.len();
        let mut jacobian = DMatrix::zeros(dof, k + kf);
        for (i, c) in contacts.iter().enumerate() {
            jacobian.set_column(i, &c.w_n);
        }
        for (r, &i) in friction_of.iter().enumerate() {
            if let Some(w_t) = &contacts[i].w_t {
                jacobian.set_column(k + r, w_t);
            }
        }
        let minv_jacobian = super::linalg::apply_mass_inverse(mass_inverse, &jacobian);
        // Wᵀ M⁻¹ W for W = [W_N W_T].
        let delassus = jacobian.tr_mul(&minv_jacobian);
        let size = k + 2 * kf;
        let mut a = DMatrix::zeros(size, size);
        // Columns Λ_N: Wᵀ M⁻¹ (W_N − W_T μ), (33) first block column.
        for i in 0..k {
            for row in 0..k + kf {
                a[(row, i)] = delassus[(row, i)];
            }
        }
        for (r, &i) in friction_of.iter().enumerate() {
            let mu = contacts[i].mu;
            for row in 0..k + kf {
                a[(row, i)] -= mu * delassus[(row, k + r)];
            }
            // Columns Λ_R: Wᵀ M⁻¹ W_T.
            for row in 0..k + kf {
                a[(row, k + r)] = delassus[(row, k + r)];
            }
            a[(k + r, k + kf + r)] = 1.0; // E
            a[(k + kf + r, i)] = 2.0 * mu; // 2μ
            a[(k + kf + r, k + r)] = -1.0; // −E
        }
        let mut b = DVector::zeros(size);
        let jt_free = jacobian.tr_mul(free);
        let jt_start = jacobian.tr_mul(u_a);
        for (i, c) in contacts.iter().enumerate() {
            b[i] = jt_free[i] + c.normal_term;
        }
        for (r, &i) in friction_of.iter().enumerate() {
            b[k + r] = jt_free[k + r] + contacts[i].eps_t * jt_start[k + r];
        }
        Self {
            lcp: Lcp { m: a, q: b },
            contacts: k,
            friction_of,
            jacobian,
            minv_jacobian,
            mass_inverse_diagonal: mass_inverse.diagonal(),
            mu: contacts.iter().map(|c| c.mu).collect(),
        }
    }

    /// The contacts' impulses from a solution x = (Λ_N, Λ_R, ξ_L), y = (ξ_N,
    /// ξ_R, Λ_L): Λ_T = Λ_R − μΛ_N (24), ξ_T = ξ_R − ξ_L (26).
    pub fn impulses(&self, x: &DVector<f64>, y: &DVector<f64>) -> Vec<PlanarImpulse> {
        let (k, kf) = (self.contacts, self.friction_of.len());
        let mut out: Vec<PlanarImpulse> = (0..k)
            .map(|i| PlanarImpulse {
                normal: x[i],
                tangential: 0.0,
                slip: 0.0,
            })
            .collect();
        for (r, &i) in self.friction_of.iter().enumerate() {
            out[i].tangential = x[k + r] - self.mu[i] * x[i];
            out[i].slip = y[k + r] - x[k + kf + r];
        }
        out
    }

    /// The velocity change M⁻¹(W_N Λ_N + W_T Λ_T) of (32).
    pub fn velocity_change(&self, impulses: &[PlanarImpulse]) -> DVector<f64> {
        let k = self.contacts;
        let mut lambda = DVector::zeros(k + self.friction_of.len());
        for (i, p) in impulses.iter().enumerate() {
            lambda[i] = p.normal;
        }
        for (r, &i) in self.friction_of.iter().enumerate() {
            lambda[k + r] = impulses[i].tangential;
        }
        &self.minv_jacobian * lambda
    }

    /// The impulses λ = (Λ_N, Λ_T) of the columns of [W_N W_T] for x =
    /// (Λ_N, Λ_R, ξ_L): Λ_T = Λ_R − μΛ_N (24).
    fn lambda(&self, x: &DVector<f64>) -> DVector<f64> {
        let k = self.contacts;
        let mut lambda = DVector::zeros(k + self.friction_of.len());
        lambda.rows_mut(0, k).copy_from(&x.rows(0, k));
        for (r, &i) in self.friction_of.iter().enumerate() {
            lambda[k + r] = x[k + r] - self.mu[i] * x[i];
        }
        lambda
    }

    /// max/min of the positive diagonal of M⁻¹ (how far apart the masses
    /// are).
    pub fn mass_spread(&self) -> f64 {
        super::linalg::spread(self.mass_inverse_diagonal.iter().copied())
    }

    /// The largest sum of magnitudes |M⁻¹ W λ| over one velocity for a
    /// solution x: how large the terms are whose sum gives the velocity.
    pub fn cancellation(&self, x: &DVector<f64>) -> f64 {
        let lambda = self.lambda(x);
        self.minv_jacobian
            .row_iter()
            .map(|row| {
                row.iter()
                    .zip(lambda.iter())
                    .map(|(a, l)| (a * l).abs())
                    .sum()
            })
            .fold(0.0, f64::max)
    }

    /// yᵢ of (33) with the velocity change Δu given: Wᵢᵀ Δu + bᵢ (+ ξ_L on
    /// a ξ_R row), or 2μΛ_N − Λ_R on a Λ_L row.
    fn slack(&self, i: usize, du: &DVector<f64>, x: &DVector<f64>) -> f64 {
        let (k, kf) = (self.contacts, self.friction_of.len());
        if i < k + kf {
            let velocity = self.jacobian.column(i).dot(du) + self.lcp.q[i];
            if i >= k {
                velocity + x[i + kf]
            } else {
                velocity
            }
        } else {
            let r = i - k - kf;
            2.0 * self.mu[self.friction_of[r]] * x[self.friction_of[r]] - x[k + r]
        }
    }

    /// The solution of (33) at the complementary basis `basis` (the indices
    /// whose xᵢ is basic), refined by Newton steps with the velocity change
    /// Δu = M⁻¹Wλ an unknown of its own, as
    /// [`super::lemke::assembly::Impulses::polish`] does for (29): each
    /// step solves A_KK δx = −y_K − W_Kᵀ r with r = M⁻¹Wλ(x) − Δu, then
    /// Δu += r + M⁻¹Wλ(δx). Returns (x, y, Δu); `None` when the block is
    /// singular or a step is not finite.
    pub fn polish(
        &self,
        basis: &[usize],
        x: &DVector<f64>,
    ) -> Option<(DVector<f64>, DVector<f64>, DVector<f64>)> {
        let size = self.lcp.size();
        let columns = self.jacobian.ncols();
        let a = &self.lcp.m;
        let block =
            super::linalg::BasisBlock::new(DMatrix::from_fn(basis.len(), basis.len(), |r, c| {
                a[(basis[r], basis[c])]
            }));
        let mut x_basic = DVector::zeros(size);
        for &i in basis {
            x_basic[i] = x[i];
        }
        let mut x = x_basic;
        let du = super::linalg::velocity_newton(
            &block,
            basis,
            &mut x,
            |x| &self.minv_jacobian * self.lambda(x),
            |row, v| {
                let i = basis[row];
                if i < columns {
                    self.jacobian.column(i).dot(v)
                } else {
                    0.0
                }
            },
            |row, du, x| self.slack(basis[row], du, x),
        )?;
        let y = DVector::from_fn(size, |i, _| self.slack(i, &du, &x));
        Some((x, y, du))
    }

    /// [W_N W_T], for tests and reports.
    pub fn jacobian(&self) -> &DMatrix<f64> {
        &self.jacobian
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lcp::{LcpStatus, LemkeOptions};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// At the basis Lemke ends on, the refinement in velocity space gives
    /// back Lemke's solution on well-conditioned random (33): x to 1e-9 of
    /// its scale, y = A x + b and Δu = M⁻¹Wλ (impulses Λ_T = Λ_R − μΛ_N).
    #[test]
    fn the_refinement_keeps_lemkes_solution_of_33() {
        let mut rng = StdRng::seed_from_u64(33);
        let mut checked = 0;
        for _ in 0..60 {
            let dof = rng.random_range(3..9);
            let k = rng.random_range(1..6);
            let contacts: Vec<PlanarContact> = (0..k)
                .map(|_| PlanarContact {
                    w_n: DVector::from_fn(dof, |_, _| rng.random_range(-1.0..1.0)),
                    w_t: rng
                        .random_bool(0.7)
                        .then(|| DVector::from_fn(dof, |_, _| rng.random_range(-1.0..1.0))),
                    mu: rng.random_range(0.0..1.0),
                    normal_term: rng.random_range(-1.0..1.0),
                    eps_t: 0.0,
                })
                .collect();
            let mass_inverse =
                DMatrix::from_diagonal(&DVector::from_fn(dof, |_, _| rng.random_range(0.2..5.0)));
            let free = DVector::from_fn(dof, |_, _| rng.random_range(-1.0..1.0));
            let u_a = DVector::from_fn(dof, |_, _| rng.random_range(-1.0..1.0));
            let problem = PlanarImpactLcp::new(&contacts, &mass_inverse, &free, &u_a);
            let solution =
                crate::lcp::solve(&problem.lcp, &LemkeOptions::default()).expect("valid options");
            if solution.status != LcpStatus::Solved {
                continue;
            }
            let Some((x, y, du)) = problem.polish(&solution.basis, &solution.z) else {
                panic!("Lemke's basis block factors");
            };
            let scale = solution.z.amax().max(1e-12);
            assert!((&x - &solution.z).amax() <= 1e-9 * scale);
            let expected = &problem.lcp.m * &x + &problem.lcp.q;
            assert!((&y - &expected).amax() <= 1e-9 * problem.lcp.q.amax().max(1.0));
            let impulses = problem.impulses(&x, &y);
            let change = problem.velocity_change(&impulses);
            assert!((&du - &change).amax() <= 1e-9 * change.amax().max(1.0));
            checked += 1;
        }
        assert!(checked >= 30, "most random (33) are solved ({checked})");
    }
}
