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
//! close by t^E joins it and (17) is solved again
//! ([`StepSettings::activation_lead`]);
//! NSGS lets such contacts join during its sweeps instead, one solve a step
//! ([`super::solve::Activation`]). So
//! bodies overlap by up to about (h/2)·|γ_N| during an impact and are not
//! pushed back: while a contact overlaps it stays in 𝓗 and is held on
//! velocity level only.

use super::ContactReport;
use super::driver::{ActiveSet, Advance, Scheme, Step};
use super::glocker_studer::{PlanarContact, PlanarImpactLcp};
use super::report::{self, EndGap, Ending};
use super::settings::StepSettings;
use super::solve::{Activation, ContactProblem, ContactSolution, ContactSolver, Failed};
use super::warm::Form;
use crate::lcp::LcpStatus;
use crate::model::{Contact, ContactId, Model, State};
use crate::params::{Params, SolverKind};
use nalgebra::DVector;
use std::time::Instant;
use thiserror::Error;

/// The Moreau–Jean scheme (its memory, the warm start, is the driver's).
#[derive(Debug, Clone, Copy, Default)]
pub struct MoreauJean;

/// What the velocity-level problem (17) gave: the index set and its solve.
struct Solved {
    /// u* = u^A + M⁻¹hΔt, the velocity without contact impulses.
    free: DVector<f64>,
    /// The contacts posed (those that took part: see the solution's
    /// `active`).
    contacts: Vec<Contact>,
    solution: ContactSolution,
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
/// (g ≤ 0), with ε_N, ε_T per contact and μ from `params`. Solved by Lemke
/// from a cold start.
pub fn impact(model: &Model, params: &Params, state: &State) -> Result<Impact, ImpactError> {
    let settings = StepSettings::default();
    let active = ActiveSet::new();
    let mut solver = ContactSolver::default();
    let mut step = Step::new(model, params, state, &settings, &active, &mut solver);
    let solved = solve(&mut step, &state.q, state.t, 0.0);
    if solved.solution.status != LcpStatus::Solved {
        return Err(ImpactError {
            status: solved.solution.status,
        });
    }
    let ending = Ending {
        gaps: &[],
        missing: EndGap::Posed,
        velocity: &solved.solution.velocity,
        velocity_scale: settings.velocity_scale(&solved.free),
        zero: settings.zero,
    };
    let contacts = report::contact_reports(
        &solved.contacts,
        &solved.solution,
        &ending,
        &mut Default::default(),
    );
    Ok(Impact {
        velocity: solved.solution.velocity,
        contacts,
    })
}

impl Scheme for MoreauJean {
    fn advance(&self, step: &mut Step<'_>) -> Result<Advance, Failed> {
        let (model, state, settings) = (step.model, step.state, step.settings);
        let h = step.params.dt;
        // Step 2: the midpoint.
        let q_mid = model.integrate(&state.q, &state.v, 0.5 * h);
        let solved = solve(step, &q_mid, state.t + 0.5 * h, h);
        let solution = solved.solution.solved()?;
        // Step 5: q^E = q^M + (h/2) u^E.
        let q_end = model.integrate(&q_mid, &solution.velocity, 0.5 * h);
        // For the report only (end gaps, the deepest one): the static part
        // of the margin. The velocity part, 2h·max|v| with the angular
        // velocities among v, reaches past every neighbour of a spinning
        // grain and made this call most of a granular step.
        let end_gaps = step.gaps(&q_end, settings.static_margin(model));
        Ok(Advance {
            q: q_end,
            v: solution.velocity.clone(),
            contacts: solved.contacts,
            solution,
            velocity_scale: settings.velocity_scale(&solved.free),
            end_gaps,
            missing: EndGap::Predicted { lead: 0.5 * h },
            active: ActiveSet::new(),
        })
    }
}

/// Steps 3–4: the index set at `q_mid` and u^E from (17) with Δt = `h`
/// (h = 0: the impact map), starting from the step's u^A.
///
/// The index set starts as step 3b's 𝓗 = {i | g_Ni(q^M) ≤ 0} and grows
/// predictively: a contact outside it that the step's own u^E would close
/// by the end of the step, g_Ni(q^M) + γ·h·γ_Ni(u^E) < −tol (step 5 to
/// first order, γ = [`StepSettings::activation_lead`]), joins it and (17)
/// is solved again, at most `active_set_rounds` times. Without this a
/// contact whose gap is 1e-17 at q^M is left out, and a sliding box whose
/// friction tilts it drives that corner through the table unopposed (4 cm
/// in one step at h = 0.05).
fn solve(step: &mut Step<'_>, q_mid: &DVector<f64>, t_mid: f64, h: f64) -> Solved {
    let (model, params, settings) = (step.model, step.params, step.settings);
    let u_start = &step.state.v;
    // u* = u^A + M⁻¹ h Δt, with h(q^M, u^A, t^M) (step 3a).
    let free = if h > 0.0 {
        let force = model.forces(q_mid, u_start, t_mid, params);
        u_start + model.apply_mass_inverse(&force) * h
    } else {
        u_start.clone()
    };
    // The candidates for predictive activation: contacts whose gap at q^M
    // the step's velocities can close by t^E, (h/2)·(two bodies' point
    // speeds) at most. Not the stepper's 2h·max|v| margin: with the
    // grains' spins among v it reaches every neighbour of a silo.
    let margin = if h > 0.0 {
        settings.static_margin(model) + h * model.max_point_speed(&free)
    } else {
        0.0
    };
    let candidates = step.contacts(q_mid, margin);
    // Step 3b: 𝓗 = {i | g_Ni(q^M) ≤ 0}.
    let mut active: Vec<bool> = candidates.iter().map(|c| c.gap <= 0.0).collect();
    let tolerance = settings.gap_tolerance * model.length_scale();
    let lead = settings.activation_lead * h;
    // NSGS on block-diagonal W does the rounds inside its sweeps
    // (`Activation`): the silo's grains, pressed into their neighbours,
    // took 6.3 solves a step of 115 sweeps each, restarting each round
    // (715 sweeps a step; 298 now).
    if h > 0.0 && step.activates() {
        let gaps: Vec<f64> = candidates.iter().map(|c| c.gap).collect();
        let activation = Activation {
            gaps: &gaps,
            initially: &active,
            lead,
            tolerance,
        };
        let solution = solve_index_set(step, &candidates, &free, Some(activation));
        return Solved {
            free,
            contacts: candidates,
            solution,
        };
    }
    let mut rounds = 0;
    loop {
        let contacts: Vec<Contact> = candidates
            .iter()
            .zip(&active)
            .filter(|(_, on)| **on)
            .map(|(c, _)| c.clone())
            .collect();
        let solution = solve_index_set(step, &contacts, &free, None);
        if h == 0.0 || solution.status != LcpStatus::Solved {
            return Solved {
                free,
                contacts,
                solution,
            };
        }
        let mut grew = false;
        for (c, on) in candidates.iter().zip(active.iter_mut()) {
            let predicted = c.gap + lead * c.jacobian.normal_dot(&solution.velocity);
            if !*on && predicted < -tolerance {
                *on = true;
                grew = true;
            }
        }
        rounds += 1;
        if !grew || rounds >= settings.active_set_rounds.max(1) {
            return Solved {
                free,
                contacts,
                solution,
            };
        }
    }
}

/// Step 4 on a given index set: u^E from (17); with `activation`, on the
/// contacts of `contacts` that it activates.
fn solve_index_set(
    step: &mut Step<'_>,
    contacts: &[Contact],
    free: &DVector<f64>,
    activation: Option<Activation<'_>>,
) -> ContactSolution {
    if contacts.is_empty() {
        return ContactSolution::empty(free);
    }
    let (model, params) = (step.model, step.params);
    let restitution: Vec<(f64, f64)> = contacts
        .iter()
        .map(|c| model.restitution(&c.id, params))
        .collect();
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
        let problem = PlanarImpactLcp::new(&planar, &model.mass_inverse(), free, &step.state.v);
        step.timings.lcp_build += clock.elapsed();
        let ids: Vec<ContactId> = contacts.iter().map(|c| c.id).collect();
        let solution = step.solve_planar(problem, &ids, free);
        if solution.status == LcpStatus::Solved {
            return solution;
        }
    }
    solve_pyramid(step, contacts, &restitution, free, activation)
}

/// Newton's impact law on the k-edge friction pyramid: the LCP (29) on
/// velocity level, σ = ñᵀu^E + ε_N γ_N^A ≥ 0 and ρ = D̃ᵀu^E + ε_T D̃ᵀu^A + Ẽλ
/// ≥ 0 (ξ_N and ξ_T of (11) in place of the relative velocities).
fn solve_pyramid(
    step: &mut Step<'_>,
    contacts: &[Contact],
    restitution: &[(f64, f64)],
    free: &DVector<f64>,
    activation: Option<Activation<'_>>,
) -> ContactSolution {
    let u_start = &step.state.v;
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
            (0..c.jacobian.friction_count()).map(move |i| eps_t * c.jacobian.dot(i + 1, u_start))
        })
        .collect();
    let mu = vec![step.params.mu; contacts.len()];
    let problem = ContactProblem {
        contacts: &refs,
        map: step.mass_inverse(),
        dof: step.model.dof(),
        free,
        normal_terms: &normal_terms,
        friction_terms: &friction_terms,
        relaxed_normal_terms: None,
        mu: &mu,
        activation,
    };
    step.solve(&problem, Form::Impact)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene;
    use std::path::Path;

    /// What the tests read of one contact's impulse: normal, tangential,
    /// pressed (normal impulse above round-off) and sliding.
    fn impulses(solved: &Solved) -> Vec<(f64, f64, bool, bool)> {
        let settings = StepSettings::default();
        let solution = &solved.solution;
        let impulse_zero = settings.zero * solution.z.amax();
        let speed_zero = settings.zero * settings.velocity_scale(&solved.free);
        solution
            .impulses(&solved.contacts)
            .map(|p| {
                (
                    p.normal,
                    p.tangential,
                    p.normal > impulse_zero,
                    p.slip > speed_zero,
                )
            })
            .collect()
    }

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
        let settings = StepSettings::default();
        let tolerance = settings.gap_tolerance * model.length_scale();
        let mut state = scene.initial.clone();
        let mut solver = ContactSolver::default();
        let active = ActiveSet::new();
        let (mut checked, mut joined) = (0, 0);
        for _ in 0..80 {
            solver.begin_step(params);
            let q_mid = model.integrate(&state.q, &state.v, 0.5 * h);
            let t_mid = state.t + 0.5 * h;
            let mut step = Step::new(model, params, &state, &settings, &active, &mut solver);
            let solved = solve(&mut step, &q_mid, t_mid, h);
            let solves = step.solves();
            let solution = &solved.solution;
            assert_eq!(solution.status, LcpStatus::Solved, "t = {}", state.t);
            assert!(solves <= 1, "t = {}: {} solves", state.t, solves);
            let in_set: std::collections::HashSet<_> = solved
                .contacts
                .iter()
                .enumerate()
                .filter(|(j, _)| solution.active.as_ref().is_none_or(|a| a[*j]))
                .map(|(_, c)| c.id)
                .collect();
            for c in model.contacts(&q_mid, params.friction_edges(), 0.02) {
                if in_set.contains(&c.id) {
                    joined += usize::from(c.gap > 0.0);
                    continue;
                }
                let predicted = c.gap + 0.5 * h * c.jacobian.normal_dot(&solution.velocity);
                assert!(
                    predicted >= -tolerance,
                    "t = {}: contact {:?} left out closes to {predicted:e}",
                    state.t,
                    c.id
                );
                checked += 1;
            }
            state.q = model.integrate(&q_mid, &solution.velocity, 0.5 * h);
            state.v = solved.solution.velocity;
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
        let settings = StepSettings::default();
        let active = ActiveSet::new();
        let mut state = scene.initial.clone();
        let mut solver = ContactSolver::default();
        let mut other = ContactSolver::default();
        let (mut slides, mut sticks) = (0, 0);
        for _ in 0..3000 {
            let q_mid = model.integrate(&state.q, &state.v, 0.5 * h);
            let t_mid = state.t + 0.5 * h;
            let mut step = Step::new(model, params, &state, &settings, &active, &mut solver);
            let planar = solve(&mut step, &q_mid, t_mid, h);
            assert_eq!(planar.solution.status, LcpStatus::Solved);
            assert!(step.solves() <= 1, "(33) solved by Lemke");
            if !planar.contacts.is_empty() {
                let restitution: Vec<(f64, f64)> = planar
                    .contacts
                    .iter()
                    .map(|c| model.restitution(&c.id, params))
                    .collect();
                let force = model.forces(&q_mid, &state.v, t_mid, params);
                let free = &state.v + model.mass_inverse() * force * h;
                let mut step = Step::new(model, params, &state, &settings, &active, &mut other);
                let pyramid = Solved {
                    solution: solve_pyramid(&mut step, &planar.contacts, &restitution, &free, None),
                    free,
                    contacts: planar.contacts.clone(),
                };
                assert_eq!(pyramid.solution.status, LcpStatus::Solved);
                let scale = state.v.amax().max(1.0);
                let difference = (&planar.solution.velocity - &pyramid.solution.velocity).amax();
                assert!(
                    difference < 1e-9 * scale,
                    "t = {}: (33) {} vs (29) {}",
                    state.t,
                    planar.solution.velocity,
                    pyramid.solution.velocity
                );
                let (planar_impulses, pyramid_impulses) = (impulses(&planar), impulses(&pyramid));
                let impulse_scale = planar_impulses.iter().map(|p| p.0).fold(1e-9, f64::max);
                for (a, b) in planar_impulses.iter().zip(&pyramid_impulses) {
                    assert!((a.0 - b.0).abs() < 1e-7 * impulse_scale);
                    assert!((a.1 - b.1).abs() < 1e-7 * impulse_scale);
                    slides += usize::from(a.2 && a.3);
                    sticks += usize::from(a.2 && !a.3);
                }
            }
            state.q = model.integrate(&q_mid, &planar.solution.velocity, 0.5 * h);
            state.v = planar.solution.velocity;
            state.t += h;
        }
        assert!(
            slides > 0 && sticks > 0,
            "{slides} sliding, {sticks} sticking"
        );
    }
}
