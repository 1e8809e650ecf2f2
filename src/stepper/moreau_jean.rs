//! Moreau's midpoint rule with Newton's impact law (Glocker & Studer 2005 §5,
//! after Moreau 1988): the Moreau–Jean time-stepping scheme. Moreau 1998 §5.4
//! states the same step for the inelastic law: midtime t_m, midposition q_m,
//! the contacts active at q_m, the implicit velocity inclusion (19), i.e.
//! u_f = prox(W_m, u_i + hF_m) (20), and q_f = q_m + (h/2) u_f.
//!
//! One step from (q^A, u^A) over Δt = h:
//! 1. the midpoint q^M = q^A + (h/2) u^A (step 2);
//! 2. M and h evaluated at q^M (the force with u^A, at t^M; step 3a), and the
//!    index set 𝓗 = {i | g_Ni(q^M) ≤ 0} (step 3b);
//! 3. u^E from the velocity-level inclusion (17): M(u^E − u^A) − hΔt =
//!    Σ(w_N Λ_N + w_T Λ_T), ξ_N = γ_N^E + ε_N γ_N^A, ξ_T = γ_T^E + ε_T γ_T^A,
//!    −Λ_N ∈ Upr(ξ_N), −Λ_T ∈ μΛ_N Sgn(ξ_T) (12). In the plane this is the LCP
//!    (33) arranged as (27) ([`super::glocker_studer`]); in space the same
//!    impact law on the k-edge friction pyramid, i.e. the Stewart–Trinkle LCP
//!    (29) on velocity level with the restitution terms ε_N γ_N^A and
//!    ε_T D̃ᵀu^A in its right-hand side;
//! 4. q^E = q^M + (h/2) u^E (step 5).
//!
//! With h = 0 the same problem is the pure impact map (§6, last paragraph):
//! [`impact`] gives post-impact velocities.
//!
//! The index set 𝓗 of step 3b grows predictively: a contact that u^E would
//! close by t^E joins it and (17) is solved again ([`ACTIVATION_GAMMA`]);
//! NSGS lets such contacts join during its sweeps instead, one solve a step
//! ([`super::solve::Activation`]). So
//! bodies overlap by up to about (h/2)·|γ_N| during an impact and are not
//! pushed back: while a contact overlaps it stays in 𝓗 and is held on
//! velocity level only.

use super::glocker_studer::{PlanarContact, PlanarImpactLcp};
use super::report;
use super::settings::StepSettings;
use super::solve::{Activation, ContactProblem, ContactSolver, solve_or_fail};
use super::warm::WarmStart;
use super::{ContactReport, ContactState, StepReport, StepTimings};
use crate::lcp::{self, Lcp, LcpStatus, LemkeOptions};
use crate::model::{Contact, ContactId, Model, State};
use crate::params::{Params, SolverKind};
use nalgebra::{DVector, Vector3};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Instant;
use thiserror::Error;

/// γ of the predictive activation (see [`MoreauJean::solve`]): a contact
/// joins the index set when g(q^M) + γh·γ_N(u^E) < −tol. With γ = ½ the
/// prediction is the end of the step, q^E = q^M + (h/2)u^E (step 5), so every
/// contact left out ends the step open; the next step's midpoint may still
/// reach (h/2)|γ_N| into a contact that is approaching, which is then held
/// there on velocity level. γ = 1 (up to the next midpoint) removes that
/// overlap (a box corner in the pile at 0.15 m/s: 0.3 mm) but holds contacts
/// up to h|γ_N| early, and at h = 1e-4 the woodpecker's descent per period
/// then varies by 2.2 % instead of 2 %.
pub const ACTIVATION_GAMMA: f64 = 0.5;

/// The stepper and what it remembers between steps: the last LCP basis, a warm
/// start when the same contacts form the index set again.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MoreauJean {
    /// The warm start of the planar LCP (33), reused for the same contacts.
    warm: WarmStart,
    /// The solver of the pyramid form (29), with its warm start by contact
    /// identity.
    pub solver: ContactSolver,
    /// Keep each step's LCP in the report (for `--dump-lcp`).
    pub record_lcp: bool,
    /// Tolerances.
    pub settings: StepSettings,
}

/// The impulses of one contact of the index set.
#[derive(Debug, Clone, PartialEq)]
struct ContactImpulse {
    normal: f64,
    /// Along the generalized tangent w_T (plane) or |Σ βᵢ t(θᵢ)| (space).
    tangential: f64,
    friction: Vector3<f64>,
    sliding: bool,
    /// Carries a normal impulse above round-off.
    pressed: bool,
}

/// What the velocity-level problem (17) gave.
struct Solved {
    status: LcpStatus,
    residual: f64,
    pivots: usize,
    solves: usize,
    velocity: DVector<f64>,
    contacts: Vec<Contact>,
    impulses: Vec<ContactImpulse>,
    lcp_size: usize,
    largest_island: usize,
    lcp: Option<Lcp>,
}

/// The result of the impact map (h = 0).
#[derive(Debug, Clone, PartialEq)]
pub struct Impact {
    /// Post-impact velocities u⁺.
    pub velocity: DVector<f64>,
    /// The impulses of the closed contacts (gap ≤ 0 at q), gaps at q.
    pub contacts: Vec<ContactReport>,
}

/// Why the impact map has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("the impact LCP ended with {status}: {}", status.reason())]
pub struct ImpactError {
    /// How Lemke's method ended.
    pub status: LcpStatus,
}

/// Newton's impact law alone (Glocker–Studer §6: (33) with Δt = 0): the
/// post-impact velocities of `state` for the contacts closed at `state.q`
/// (g ≤ 0), with ε_N, ε_T per contact and μ from `params`.
pub fn impact(model: &Model, params: &Params, state: &State) -> Result<Impact, ImpactError> {
    let mut stepper = MoreauJean::default();
    let mut timings = StepTimings::default();
    let solved = stepper.solve(
        model,
        params,
        &state.q,
        &state.v,
        state.t,
        0.0,
        &mut timings,
    );
    if solved.status != LcpStatus::Solved {
        return Err(ImpactError {
            status: solved.status,
        });
    }
    let contacts = solved
        .contacts
        .iter()
        .zip(&solved.impulses)
        .map(|(c, p)| report(c, p, c.gap))
        .collect();
    Ok(Impact {
        velocity: solved.velocity,
        contacts,
    })
}

impl MoreauJean {
    /// Forgets the warm start (after a reset or a scene change).
    pub fn clear(&mut self) {
        self.warm.clear();
        self.solver.clear();
    }

    /// Advances `state` by one step of `params.dt`. When the LCP is not solved
    /// the state is left unchanged and the report carries the status.
    pub fn step(&mut self, model: &Model, params: &Params, state: &mut State) -> StepReport {
        let start = Instant::now();
        let mut timings = StepTimings::default();
        let h = params.dt;
        self.solver.begin_step(params);
        // Step 2: the midpoint.
        let q_mid = model.integrate(&state.q, &state.v, 0.5 * h);
        let solved = self.solve(
            model,
            params,
            &q_mid,
            &state.v,
            state.t + 0.5 * h,
            h,
            &mut timings,
        );
        if solved.status != LcpStatus::Solved {
            self.warm.clear();
            let failed = report::Failure {
                status: solved.status,
                residual: solved.residual,
                lcp_size: solved.lcp_size,
                pivots: solved.pivots,
                solves: solved.solves,
                sweeps: self.solver.sweeps(),
                lcp: solved.lcp,
            };
            return report::failure(model, params, state, failed, timings, start);
        }
        // Step 5: q^E = q^M + (h/2) u^E.
        let q_end = model.integrate(&q_mid, &solved.velocity, 0.5 * h);
        let clock = Instant::now();
        // For the report only (end gaps, the deepest one): the static part
        // of the margin. The velocity part, 2h·max|v| with the angular
        // velocities among v, reaches past every neighbour of a spinning
        // grain and made this call most of a granular step.
        let margin = self.settings.margin_fraction * model.length_scale();
        let after = model.contacts(&q_end, params.friction_edges(), margin);
        timings.geometry += clock.elapsed();
        let min_gap = after.iter().map(|c| c.gap).fold(f64::INFINITY, f64::min);
        let gaps: HashMap<ContactId, f64> = after.iter().map(|c| (c.id, c.gap)).collect();
        let contacts = solved
            .contacts
            .iter()
            .zip(&solved.impulses)
            .map(|(c, p)| {
                let gap = gaps.get(&c.id).copied().map_or(
                    c.gap + 0.5 * h * c.jacobian.normal_dot(&solved.velocity),
                    |gap| gap,
                );
                report(c, p, gap)
            })
            .collect();
        state.q = q_end;
        state.v = solved.velocity;
        state.t += h;
        let (kinetic, potential) = model.energy(&state.q, &state.v, params);
        timings.total = start.elapsed();
        StepReport {
            t: state.t,
            contacts,
            lcp_size: solved.lcp_size,
            largest_island: solved.largest_island,
            pivots: solved.pivots,
            solves: solved.solves,
            sweeps: self.solver.sweeps(),
            status: LcpStatus::Solved,
            residual: solved.residual,
            kinetic_energy: kinetic,
            potential_energy: potential,
            min_gap,
            timings,
            lcp: solved.lcp,
        }
    }

    /// Steps 3–4: the index set at `q_mid` and u^E from (17) with Δt = `h`
    /// (h = 0: the impact map).
    ///
    /// The index set starts as step 3b's 𝓗 = {i | g_Ni(q^M) ≤ 0} and grows
    /// predictively: a contact outside it that the step's own u^E would close
    /// by the end of the step, g_Ni(q^M) + [`ACTIVATION_GAMMA`]·h·γ_Ni(u^E)
    /// < −tol (step 5 to first order, γ = ½; Siconos's
    /// MoreauJeanOSI activates on the same prediction y + γhẏ ≤ 0), joins it
    /// and (17) is solved again, at most `active_set_rounds` times. Without
    /// this a contact whose gap is 1e-17 at q^M is left out, and a sliding box
    /// whose friction tilts it drives that corner through the table unopposed
    /// (4 cm in one step at h = 0.05).
    #[allow(clippy::too_many_arguments)]
    fn solve(
        &mut self,
        model: &Model,
        params: &Params,
        q_mid: &DVector<f64>,
        u_start: &DVector<f64>,
        t_mid: f64,
        h: f64,
        timings: &mut StepTimings,
    ) -> Solved {
        // u* = u^A + M⁻¹ h Δt, with h(q^M, u^A, t^M) (step 3a).
        let free = if h > 0.0 {
            let force = model.forces(q_mid, u_start, t_mid, params);
            u_start + model.apply_mass_inverse(&force) * h
        } else {
            u_start.clone()
        };
        let clock = Instant::now();
        // The candidates for predictive activation: contacts whose gap at q^M
        // the step's velocities can close by t^E, (h/2)·(two bodies' point
        // speeds) at most. Not the stepper's 2h·max|v| margin: with the
        // grains' spins among v it reaches every neighbour of a silo.
        let margin = if h > 0.0 {
            self.settings.margin_fraction * model.length_scale() + h * model.max_point_speed(&free)
        } else {
            0.0
        };
        let candidates = model.contacts(q_mid, params.friction_edges(), margin);
        timings.geometry += clock.elapsed();
        // Step 3b: 𝓗 = {i | g_Ni(q^M) ≤ 0}.
        let mut active: Vec<bool> = candidates.iter().map(|c| c.gap <= 0.0).collect();
        let tolerance = self.settings.gap_tolerance * model.length_scale();
        // NSGS on block-diagonal W does the rounds inside its sweeps
        // (`Activation`): the silo's grains, pressed into their neighbours,
        // took 6.3 solves a step of 115 sweeps each, restarting each round
        // (715 sweeps a step; 298 now).
        if h > 0.0 && self.solver.activates(&model.mass_inverse_form()) {
            let gaps: Vec<f64> = candidates.iter().map(|c| c.gap).collect();
            let activation = Activation {
                gaps: &gaps,
                initially: &active,
                lead: ACTIVATION_GAMMA * h,
                tolerance,
            };
            return self.solve_index_set(
                model,
                params,
                candidates,
                &free,
                u_start,
                timings,
                Some(activation),
            );
        }
        let (mut pivots, mut solves, mut rounds) = (0, 0, 0);
        loop {
            let contacts: Vec<Contact> = candidates
                .iter()
                .zip(&active)
                .filter(|(_, on)| **on)
                .map(|(c, _)| c.clone())
                .collect();
            let mut solved =
                self.solve_index_set(model, params, contacts, &free, u_start, timings, None);
            pivots += solved.pivots;
            solves += solved.solves;
            solved.pivots = pivots;
            solved.solves = solves;
            if h == 0.0 || solved.status != LcpStatus::Solved {
                return solved;
            }
            let mut grew = false;
            for (c, on) in candidates.iter().zip(active.iter_mut()) {
                let predicted =
                    c.gap + ACTIVATION_GAMMA * h * c.jacobian.normal_dot(&solved.velocity);
                if !*on && predicted < -tolerance {
                    *on = true;
                    grew = true;
                }
            }
            rounds += 1;
            if !grew || rounds >= self.settings.active_set_rounds.max(1) {
                return solved;
            }
        }
    }

    /// Step 4 on a given index set: u^E from (17); with `activation`, on
    /// the contacts of `contacts` that it activates.
    #[allow(clippy::too_many_arguments)]
    fn solve_index_set(
        &mut self,
        model: &Model,
        params: &Params,
        contacts: Vec<Contact>,
        free: &DVector<f64>,
        u_start: &DVector<f64>,
        timings: &mut StepTimings,
        activation: Option<Activation<'_>>,
    ) -> Solved {
        if contacts.is_empty() {
            self.warm.clear();
            return Solved {
                status: LcpStatus::Solved,
                residual: 0.0,
                pivots: 0,
                solves: 0,
                velocity: free.clone(),
                contacts,
                impulses: Vec::new(),
                lcp_size: 0,
                largest_island: 0,
                lcp: None,
            };
        }
        let restitution: Vec<(f64, f64)> = contacts
            .iter()
            .map(|c| model.restitution(&c.id, params))
            .collect();
        let ids: Vec<ContactId> = contacts.iter().map(|c| c.id).collect();
        let mut solves = 0;
        let mut pivots = 0;
        // In the plane (and without friction anywhere) the LCP (33); Lemke has no
        // guarantee for its matrix, so when it fails the same law is posed as
        // the copositive-plus (29) form, which Lemke always processes. NSGS
        // takes the (29) form directly (the two-direction law in the plane):
        // (33) is dense in the model's M⁻¹.
        if (model.is_planar() || params.mu == 0.0)
            && params.solver == SolverKind::Lemke
            && activation.is_none()
        {
            let clock = Instant::now();
            let dof = model.dof();
            let planar: Vec<PlanarContact> = contacts
                .iter()
                .zip(&restitution)
                .map(|(c, &(eps_n, eps_t))| {
                    let t = (c.jacobian.friction_count() > 0)
                        .then(|| c.jacobian.dense_direction(0, dof))
                        .filter(|t| t.amax() > 0.0);
                    PlanarContact {
                        w_n: c.jacobian.dense_normal(dof),
                        w_t: t,
                        mu: params.mu,
                        eps_n,
                        eps_t,
                    }
                })
                .collect();
            let problem = PlanarImpactLcp::new(&planar, &model.mass_inverse(), free, u_start);
            timings.lcp_build += clock.elapsed();
            let warm_start = self.warm.exact(33, &ids, problem.lcp.size());
            let solution = timed_lemke(&problem.lcp, warm_start, timings);
            if solution.status == LcpStatus::Solved {
                self.warm.record_exact(33, &ids, &solution.basis);
            }
            solves += 1;
            pivots += solution.pivots;
            if solution.status == LcpStatus::Solved {
                let impulses = problem.impulses(&solution.z, &solution.w);
                let velocity = free + problem.velocity_change(&impulses);
                let scale = velocity_scale(free);
                let impulse_tol = self.settings.zero * solution.z.amax();
                let impulses = contacts
                    .iter()
                    .zip(&impulses)
                    .map(|(c, p)| {
                        let friction = c
                            .frame
                            .as_ref()
                            .and_then(|f| f.tangents.first())
                            .map_or_else(Vector3::zeros, |t| t * p.tangential);
                        ContactImpulse {
                            normal: p.normal,
                            tangential: p.tangential,
                            friction,
                            sliding: p.slip.abs() > self.settings.zero * scale,
                            pressed: p.normal > impulse_tol,
                        }
                    })
                    .collect();
                return Solved {
                    status: LcpStatus::Solved,
                    residual: solution.residual,
                    pivots,
                    solves,
                    velocity,
                    contacts,
                    impulses,
                    lcp_size: problem.lcp.size(),
                    largest_island: problem.lcp.size(),
                    lcp: self.record_lcp.then_some(problem.lcp),
                };
            }
        }
        let mut solved = self.solve_pyramid(
            model,
            params,
            contacts,
            &restitution,
            free,
            u_start,
            timings,
            activation,
        );
        solved.solves += solves;
        solved.pivots += pivots;
        solved
    }

    /// Newton's impact law on the k-edge friction pyramid: the LCP (29) on
    /// velocity level, σ = ñᵀu^E + ε_N γ_N^A ≥ 0 and ρ = D̃ᵀu^E + ε_T D̃ᵀu^A + Ẽλ
    /// ≥ 0 (ξ_N and ξ_T of (11) in place of the relative velocities).
    #[allow(clippy::too_many_arguments)]
    fn solve_pyramid(
        &mut self,
        model: &Model,
        params: &Params,
        contacts: Vec<Contact>,
        restitution: &[(f64, f64)],
        free: &DVector<f64>,
        u_start: &DVector<f64>,
        timings: &mut StepTimings,
        activation: Option<Activation<'_>>,
    ) -> Solved {
        let clock = Instant::now();
        let refs: Vec<&Contact> = contacts.iter().collect();
        let normal_terms: Vec<f64> = contacts
            .iter()
            .zip(restitution)
            .map(|(c, &(eps_n, _))| eps_n * c.jacobian.normal_dot(u_start))
            .collect();
        let friction_terms: Vec<f64> = contacts
            .iter()
            .zip(restitution)
            .flat_map(|(c, &(_, eps_t))| {
                (0..c.jacobian.friction_count())
                    .map(move |i| eps_t * c.jacobian.dot(i + 1, u_start))
            })
            .collect();
        let mu = vec![params.mu; contacts.len()];
        let problem = ContactProblem {
            contacts: &refs,
            map: model.mass_inverse_form(),
            dof: model.dof(),
            free,
            normal_terms: &normal_terms,
            friction_terms: &friction_terms,
            relaxed_normal_terms: None,
            mu: &mu,
            activation,
        };
        self.solver.keep_lcp = self.record_lcp;
        let solution = self.solver.solve(&problem, 29, false, &self.settings);
        timings.lemke += clock.elapsed();
        let layout = solution.layout;
        let velocity = free + &solution.velocity_change;
        let scale = velocity_scale(free);
        let zero = self.settings.zero;
        let impulse_tol = zero * solution.z.amax();
        let mut column = 0;
        let contact_impulses: Vec<ContactImpulse> = contacts
            .iter()
            .enumerate()
            .map(|(j, c)| {
                let k = c.jacobian.friction_count();
                let beta: Vec<f64> = solution.z.rows(column, k).iter().copied().collect();
                column += k;
                let (friction, tangential) = report::friction_impulse(c, &beta);
                let normal = solution.z[layout.normal(j)];
                ContactImpulse {
                    normal,
                    tangential,
                    friction,
                    sliding: solution.z[layout.lambda(j)] > zero * scale,
                    pressed: normal > impulse_tol,
                }
            })
            .collect();
        // Under activation, the contacts that took part form the index set.
        let (contacts, contact_impulses) = match &solution.active {
            Some(active) => contacts
                .into_iter()
                .zip(contact_impulses)
                .zip(active)
                .filter(|(_, on)| **on)
                .map(|(pair, _)| pair)
                .unzip(),
            None => (contacts, contact_impulses),
        };
        // The size of (29) over the index set (k + 2 unknowns a contact).
        let lcp_size = if solution.active.is_some() {
            contacts
                .iter()
                .map(|c| c.jacobian.friction_count() + 2)
                .sum()
        } else {
            layout.size()
        };
        Solved {
            status: solution.status,
            residual: solution.residual,
            pivots: solution.pivots,
            solves: 1,
            velocity,
            contacts,
            impulses: contact_impulses,
            lcp_size,
            largest_island: solution.largest_island,
            lcp: solution.lcp,
        }
    }
}

/// Lemke from `warm_start` (or cold), its time added to the step's.
fn timed_lemke(
    problem: &Lcp,
    warm_start: Option<Vec<usize>>,
    timings: &mut StepTimings,
) -> lcp::LcpSolution {
    let clock = Instant::now();
    let options = LemkeOptions {
        warm_start,
        ..LemkeOptions::default()
    };
    let solution = solve_or_fail(problem, &options);
    timings.lemke += clock.elapsed();
    solution
}

fn report(contact: &Contact, impulse: &ContactImpulse, gap: f64) -> ContactReport {
    let state = if !impulse.pressed {
        ContactState::Separating
    } else if impulse.sliding {
        ContactState::Slip
    } else {
        ContactState::Stick
    };
    ContactReport {
        id: contact.id,
        gap,
        normal_impulse: impulse.normal,
        friction_impulse: impulse.friction,
        tangential_impulse: impulse.tangential,
        state,
        frame: contact.frame.clone(),
    }
}

fn velocity_scale(v: &DVector<f64>) -> f64 {
    v.amax().max(1e-3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene;
    use std::path::Path;

    /// NSGS activates contacts inside its sweeps (`Activation`) and ends at
    /// the fixed point of the rounds in one solve: on a small silo pouring
    /// onto its hopper, every contact within 2 cm that is left out of 𝓗 is
    /// predicted open at t^E by u^E (g + (h/2)γ_N(u^E) ≥ −tol), and each
    /// step takes one solve.
    #[test]
    fn nsgs_activation_ends_at_the_rounds_fixed_point_in_one_solve() {
        let scene = crate::scene::granular::silo(150).expect("silo");
        let model = &scene.model;
        let params = &scene.params;
        assert_eq!(params.solver, SolverKind::Nsgs);
        let h = params.dt;
        let tolerance = StepSettings::default().gap_tolerance * model.length_scale();
        let mut state = scene.initial.clone();
        let mut stepper = MoreauJean::default();
        let (mut checked, mut joined) = (0, 0);
        for _ in 0..80 {
            let mut timings = StepTimings::default();
            stepper.solver.begin_step(params);
            let q_mid = model.integrate(&state.q, &state.v, 0.5 * h);
            let t_mid = state.t + 0.5 * h;
            let solved = stepper.solve(model, params, &q_mid, &state.v, t_mid, h, &mut timings);
            assert_eq!(solved.status, LcpStatus::Solved, "t = {}", state.t);
            assert!(
                solved.solves <= 1,
                "t = {}: {} solves",
                state.t,
                solved.solves
            );
            let in_set: std::collections::HashSet<_> =
                solved.contacts.iter().map(|c| c.id).collect();
            for c in model.contacts(&q_mid, params.friction_edges(), 0.02) {
                if in_set.contains(&c.id) {
                    joined += usize::from(c.gap > 0.0);
                    continue;
                }
                let predicted = c.gap + 0.5 * h * c.jacobian.normal_dot(&solved.velocity);
                assert!(
                    predicted >= -tolerance,
                    "t = {}: contact {:?} left out closes to {predicted:e}",
                    state.t,
                    c.id
                );
                checked += 1;
            }
            state.q = model.integrate(&q_mid, &solved.velocity, 0.5 * h);
            state.v = solved.velocity;
            state.t += h;
        }
        assert!(checked > 1000, "{checked} contacts left out were checked");
        assert!(joined > 0, "no open contact joined 𝓗 by its prediction");
    }

    /// The LCP (33) and the pyramid form (29) pose the same law: along the
    /// woodpecker's first 0.3 s (impacts, jamming, sliding, sticking) both give
    /// the same u^E and impulses at every step, and Lemke solves (33) itself.
    #[test]
    fn planar_lcp_33_and_pyramid_form_29_agree() {
        let scene = scene::load(Path::new("scenes/woodpecker.ron")).expect("scene");
        let model = &scene.model;
        let params = &scene.params;
        let h = params.dt;
        let mut state = scene.initial.clone();
        let mut stepper = MoreauJean::default();
        let mut other = MoreauJean::default();
        let (mut slides, mut sticks) = (0, 0);
        for _ in 0..3000 {
            let mut timings = StepTimings::default();
            let q_mid = model.integrate(&state.q, &state.v, 0.5 * h);
            let t_mid = state.t + 0.5 * h;
            let planar = stepper.solve(model, params, &q_mid, &state.v, t_mid, h, &mut timings);
            assert_eq!(planar.status, LcpStatus::Solved);
            assert!(planar.solves <= 1, "(33) solved by Lemke");
            if !planar.contacts.is_empty() {
                let restitution: Vec<(f64, f64)> = planar
                    .contacts
                    .iter()
                    .map(|c| model.restitution(&c.id, params))
                    .collect();
                let force = model.forces(&q_mid, &state.v, t_mid, params);
                let free = &state.v + model.mass_inverse() * force * h;
                let pyramid = other.solve_pyramid(
                    model,
                    params,
                    planar.contacts.clone(),
                    &restitution,
                    &free,
                    &state.v,
                    &mut timings,
                    None,
                );
                assert_eq!(pyramid.status, LcpStatus::Solved);
                let scale = state.v.amax().max(1.0);
                let difference = (&planar.velocity - &pyramid.velocity).amax();
                assert!(
                    difference < 1e-9 * scale,
                    "t = {}: (33) {} vs (29) {}",
                    state.t,
                    planar.velocity,
                    pyramid.velocity
                );
                let impulse_scale = planar
                    .impulses
                    .iter()
                    .map(|p| p.normal)
                    .fold(1e-9, f64::max);
                for (a, b) in planar.impulses.iter().zip(&pyramid.impulses) {
                    assert!((a.normal - b.normal).abs() < 1e-7 * impulse_scale);
                    assert!((a.tangential - b.tangential).abs() < 1e-7 * impulse_scale);
                    slides += usize::from(a.pressed && a.sliding);
                    sticks += usize::from(a.pressed && !a.sliding);
                }
            }
            state.q = model.integrate(&q_mid, &planar.velocity, 0.5 * h);
            state.v = planar.velocity;
            state.t += h;
        }
        assert!(
            slides > 0 && sticks > 0,
            "{slides} sliding, {sticks} sticking"
        );
    }
}
