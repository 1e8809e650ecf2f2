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
    /// Normal restitution ε_N.
    pub eps_n: f64,
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
        let minv_jacobian = super::assembly::apply_mass_inverse(mass_inverse, &jacobian);
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
            b[i] = jt_free[i] + c.eps_n * jt_start[i];
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

    /// [W_N W_T], for tests and reports.
    pub fn jacobian(&self) -> &DMatrix<f64> {
        &self.jacobian
    }
}
