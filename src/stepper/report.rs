//! The parts of a step report every scheme shares: each contact's impulses
//! read from a solve whatever its form (the friction-impulse fold), its
//! state, its gap at the end of the step, and the report of a step that
//! failed.

use super::{ContactReport, ContactState, StepReport, StepTimings};
use crate::model::{Contact, ContactId, Model, State};
use crate::params::Params;
use crate::solver::{ContactSolution, Unknowns};
use nalgebra::Vector3;
use rustc_hash::FxHashMap as HashMap;
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

/// What one contact received from a solve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContactImpulse {
    /// Normal impulse c_n (Λ_N), N·s.
    pub normal: f64,
    /// Friction impulse in the world, N·s (zero for linear systems).
    pub friction: Vector3<f64>,
    /// Friction impulse along the generalized tangent, N·s.
    pub tangential: f64,
    /// How fast it slides: λ of (29), |ξ_T| of (33), m/s.
    pub slip: f64,
}

impl ContactSolution {
    /// Each contact's impulses, for `contacts` in the order the problem was
    /// posed.
    pub fn impulses<'s>(
        &'s self,
        contacts: &'s [Contact],
    ) -> impl Iterator<Item = ContactImpulse> + 's {
        let mut column = 0;
        contacts
            .iter()
            .enumerate()
            .map(move |(j, contact)| match &self.unknowns {
                Unknowns::Pyramid(layout) => {
                    let k = contact.jacobian.friction_count();
                    let beta = &self.z.as_slice()[column..column + k];
                    column += k;
                    let (friction, tangential) = friction_impulse(contact, beta);
                    ContactImpulse {
                        normal: self.z[layout.normal(j)],
                        friction,
                        tangential,
                        slip: self.z[layout.lambda(j)],
                    }
                }
                Unknowns::Planar(impulses) => {
                    let p = impulses[j];
                    // Λ_T along w_T, which is the first friction direction.
                    let friction = contact
                        .frame
                        .as_ref()
                        .and_then(|f| f.tangents.first())
                        .map_or_else(Vector3::zeros, |t| t * p.tangential);
                    ContactImpulse {
                        normal: p.normal,
                        friction,
                        tangential: p.tangential,
                        slip: p.slip.abs(),
                    }
                }
            })
    }
}

/// The gap a contact reports when it is not found near the new
/// configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EndGap {
    /// Its gap in the problem plus `lead` times its normal velocity after the
    /// step (g + lead·nᵀv), m.
    Predicted {
        /// Seconds ahead.
        lead: f64,
    },
    /// Its gap in the problem (the impact map: no time passes).
    Posed,
    /// Infinite: it opened past the margin.
    Open,
}

/// What a contact report is built from besides the solve.
pub struct Ending<'a> {
    /// The gaps near the new configuration, m.
    pub gaps: &'a [(ContactId, f64)],
    /// The gap of a contact not among them.
    pub missing: EndGap,
    /// The velocity after the step (for [`EndGap::Predicted`]).
    pub velocity: &'a nalgebra::DVector<f64>,
    /// The slip speed scale, m/s.
    pub velocity_scale: f64,
    /// Relative size below which an impulse or a slip speed is zero.
    pub zero: f64,
}

/// The reports of the contacts that took part in `solution`, posed over
/// `contacts`: impulses, state and gap at the end of the step, into
/// `reports` (replaced; the storage of its reports is reused). `lookup` is a
/// map reused between steps.
pub fn contact_reports(
    contacts: &[Contact],
    solution: &ContactSolution,
    ending: &Ending<'_>,
    lookup: &mut HashMap<ContactId, f64>,
    reports: &mut Vec<ContactReport>,
) {
    lookup.clear();
    lookup.extend(ending.gaps.iter().copied());
    let impulse_zero = ending.zero * solution.z.amax();
    let speed_zero = ending.zero * ending.velocity_scale;
    let taking_part = |j: usize| solution.active.as_ref().is_none_or(|a| a[j]);
    let mut written = 0;
    let found = contacts
        .iter()
        .zip(solution.impulses(contacts))
        .enumerate()
        .filter(|(j, _)| taking_part(*j))
        .map(|(_, (contact, p))| {
            let gap = lookup
                .get(&contact.id)
                .copied()
                .unwrap_or_else(|| match ending.missing {
                    EndGap::Predicted { lead } => {
                        contact.gap + lead * contact.jacobian.normal_dot(ending.velocity)
                    }
                    EndGap::Posed => contact.gap,
                    EndGap::Open => f64::INFINITY,
                });
            (contact, p, gap)
        });
    for (contact, p, gap) in found {
        let state = contact_state(p.normal, impulse_zero, p.slip, speed_zero);
        match reports.get_mut(written) {
            Some(report) => {
                report.id = contact.id;
                report.gap = gap;
                report.normal_impulse = p.normal;
                report.friction_impulse = p.friction;
                report.tangential_impulse = p.tangential;
                report.state = state;
                report.frame.clone_from(&contact.frame);
            }
            None => reports.push(ContactReport {
                id: contact.id,
                gap,
                normal_impulse: p.normal,
                friction_impulse: p.friction,
                tangential_impulse: p.tangential,
                state,
                frame: contact.frame.clone(),
            }),
        }
        written += 1;
    }
    reports.truncate(written);
}

/// What failed in a step, for [`failure`].
pub struct Failure {
    /// The solve that failed.
    pub solution: ContactSolution,
    /// Pivots over the step.
    pub pivots: usize,
    /// Solves over the step.
    pub solves: usize,
    /// NSGS sweeps over the step.
    pub sweeps: usize,
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
    let solution = failed.solution;
    StepReport {
        t: state.t,
        contacts: Vec::new(),
        lcp_size: solution.lcp_size,
        largest_island: solution.lcp_size,
        pivots: failed.pivots,
        solves: failed.solves,
        sweeps: failed.sweeps,
        status: solution.status,
        residual: solution.residual,
        kinetic_energy: kinetic,
        potential_energy: potential,
        min_gap: f64::NAN,
        gap_bound: None,
        substeps: 1,
        timings,
        lcp: solution.lcp,
    }
}
