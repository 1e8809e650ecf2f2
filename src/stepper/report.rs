//! The parts of a step report every scheme builds the same way: a contact's
//! friction impulse in the world and its state, and the report of a step
//! that failed.

use super::{ContactState, StepReport, StepTimings};
use crate::lcp::{Lcp, LcpStatus};
use crate::model::{Contact, Model, State};
use crate::params::Params;
use nalgebra::Vector3;
use std::time::Instant;

/// The friction impulse Σ βᵢ t(θᵢ) of a contact in the world, N·s, and the
/// impulse along its generalized tangent (β₀ − β₁ for the planar pair, the
/// world impulse's length in space).
pub fn friction_impulse(contact: &Contact, beta: &[f64]) -> (Vector3<f64>, f64) {
    let world = contact.frame.as_ref().map_or_else(Vector3::zeros, |f| {
        f.tangents
            .iter()
            .zip(beta)
            .fold(Vector3::zeros(), |s, (t, b)| s + t * *b)
    });
    let tangential = if beta.len() == 2 {
        beta[0] - beta[1]
    } else {
        world.norm()
    };
    (world, tangential)
}

/// Stick, slip or separating from the normal impulse c_n and the sliding
/// speed λ (both against their thresholds).
pub fn contact_state(c_n: f64, impulse_zero: f64, lambda: f64, speed_zero: f64) -> ContactState {
    if c_n <= impulse_zero {
        ContactState::Separating
    } else if lambda > speed_zero {
        ContactState::Slip
    } else {
        ContactState::Stick
    }
}

/// What failed in a step, for [`failure`].
pub struct Failure {
    /// How the last solve ended.
    pub status: LcpStatus,
    /// Its residual.
    pub residual: f64,
    /// Its LCP size.
    pub lcp_size: usize,
    /// Pivots over the step.
    pub pivots: usize,
    /// Solves over the step.
    pub solves: usize,
    /// NSGS sweeps over the step.
    pub sweeps: usize,
    /// The LCP, when kept.
    pub lcp: Option<Lcp>,
}

/// The report of a step that was not taken: the state is unchanged, its
/// energy is reported, and no contacts.
pub fn failure(
    model: &Model,
    params: &Params,
    state: &State,
    failed: Failure,
    mut timings: StepTimings,
    start: Instant,
) -> StepReport {
    let (kinetic, potential) = model.energy(&state.q, &state.v, params);
    timings.total = start.elapsed();
    StepReport {
        t: state.t,
        contacts: Vec::new(),
        lcp_size: failed.lcp_size,
        largest_island: failed.lcp_size,
        pivots: failed.pivots,
        solves: failed.solves,
        sweeps: failed.sweeps,
        status: failed.status,
        residual: failed.residual,
        kinetic_energy: kinetic,
        potential_energy: potential,
        min_gap: f64::NAN,
        timings,
        lcp: failed.lcp,
    }
}
