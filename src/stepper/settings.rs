//! The numerical settings the steppers share: every tolerance that was a
//! literal in one of them, documented once. These are not live parameters
//! ([`crate::params::Params`] holds what a user turns); they are the scheme's
//! own choices, with defaults that the tests and the papers' numbers rely on.

use crate::model::Model;
use nalgebra::DVector;
use serde::{Deserialize, Serialize};

/// The steppers' numerical settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepSettings {
    /// Contacts are looked for within `margin_fraction` of the largest body
    /// size, plus what the bodies can close in two steps at their current speed.
    pub margin_fraction: f64,
    /// Active-set rounds (Stewart–Trinkle §4) per fixed-point iteration: a
    /// contact found violated after a solve joins and the step is solved again.
    pub active_set_rounds: usize,
    /// Deepest end-of-step gap, relative to the largest body size, that ends
    /// Stewart–Trinkle's fixed-point iterations (§3.6).
    pub gap_tolerance: f64,
    /// Fixed-point iterations allowed to reach `gap_tolerance` when
    /// `ncp_iterations` asks for fewer.
    pub gap_iterations: usize,
    /// Relative compliances added, in turn, to the diagonal of JᵀM⁻¹J when
    /// Lemke fails on dependent normals (a box held by more contacts than it
    /// has freedoms): far below anything visible, enough to separate the
    /// dependent rows.
    pub regularization: [f64; 2],
    /// Relative compliances ε tried, in turn, on an island of rigid-body
    /// contacts ([`super::solve::ContactSolver`]) when Lemke fails on its
    /// own LCP: ε·Δᵢᵢ added to each diagonal entry of JᵀWJ (Δ its diagonal),
    /// a contact stiffness of about m/(ε h²) — for ε = 10⁻³ and h = 5 ms a
    /// spring of 1 kHz — whose static deflection the proximal shift of the
    /// right-hand side removes (see there).
    pub compliance: [f64; 3],
    /// LCPs of at least this many unknowns start from the compliance that
    /// solved the previous step ([`super::solve::solve_regularized`]): on a
    /// settled pile of boxes the unregularized attempt fails on every step and
    /// its cold restart costs hundreds of pivots. Smaller LCPs always try the
    /// scheme's own, unregularized problem first; a failed attempt costs
    /// little there.
    pub remember_regularization_from: usize,
    /// Relative size below which an impulse or a slip velocity is zero (the
    /// contact states stick, slip and separating).
    pub zero: f64,
}

impl Default for StepSettings {
    fn default() -> Self {
        Self {
            margin_fraction: 0.05,
            active_set_rounds: 8,
            gap_tolerance: 1e-8,
            gap_iterations: 8,
            regularization: [1e-6, 1e-4],
            compliance: [1e-4, 1e-3, 1e-2],
            remember_regularization_from: 100,
            zero: 1e-9,
        }
    }
}

impl StepSettings {
    /// How far ahead contacts are looked for at velocity v, m.
    pub fn contact_margin(&self, model: &Model, v: &DVector<f64>, h: f64) -> f64 {
        let scale = model.length_scale();
        self.margin_fraction * scale + 2.0 * h * v.amax() * scale.max(1.0)
    }
}
