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
//! 4. q^E = q^M + (h/2) u^E (step 5), guarded ([`guard_end`]).
//!
//! With h = 0 the same problem is the pure impact map (§6, last paragraph):
//! [`impact`] gives post-impact velocities.
//!
//! The index set 𝓗 of step 3b grows predictively: a contact that u^E would
//! close by t^E, g(q^M) + γh·γ_N(u^E) < 0, joins it and (17) is solved
//! again ([`StepSettings::activation_lead`]); NSGS lets such contacts join
//! during its sweeps instead, one solve a step ([`crate::solver::Activation`]).
//! A contact that joins while still open (g(q^M) > 0) has not been struck
//! yet: with ε_N = 0 its law is on the end gap, ξ_N = γ_N^E + g(q^M)/(γh) ≥ 0
//! (with γ = ½, g(q^E) ≥ 0 to first order), so its bodies close it and end
//! touching rather than stopping short of it; with ε_N > 0 Newton's law
//! (12) holds as for a closed contact, so the rebound keeps ε_N of the
//! approach speed.
//!
//! Held on velocity level only, a contact that the first half-step carries
//! past touching would stay overlapped by (h/2)|γ_N|, and a body faster
//! than its obstacle is thick would pass it before any contact is looked
//! for. Rigid bodies therefore take a guarded midpoint ([`super::guard`]):
//! the contacts that the bodies can reach within the first half-step,
//! found at q^A with each body's own reach (as Stewart–Trinkle finds its
//! contacts), whose linearized gap g(q^A) + (h/2)γ_N(u^A) falls below
//! min(g(q^A), 0) by more than [`StepSettings::guard_depth`] are lifted back
//! to it. So q^M is never past a contact, step 3b sees the impact, and the
//! impact law acts on the whole approach speed. The lift moves positions
//! only: it neither adds nor takes kinetic energy. The end q^E is guarded
//! the same way against the creep of contacts held within a tolerance.

use super::ContactReport;
use super::guard::Guard;
use super::report::{self, EndGap, Ending};
use super::scheme::{Advance, Scheme};
use super::settings::StepSettings;
use super::step::ActiveSet;
use super::step::{Detached, Solver, Step};
use crate::collision::{ContactSet, Reaches};
use crate::lcp::LcpStatus;
use crate::model::{Contact, ContactId, ContactJacobian, Model, Other, State};
use crate::params::{Params, SolverKind};
use crate::solver::planar_impact::{PlanarContact, PlanarImpactLcp};
use crate::solver::{Activation, ContactProblem, ContactSolution, Failed, Form, PlanarSolve};
use nalgebra::DVector;
use rustc_hash::FxHashMap as HashMap;
use std::time::Instant;
use thiserror::Error;

mod guarded;
pub(crate) use guarded::kept_overlap;
use guarded::{Depths, guard_end, guard_midpoint, nearest_end_gap};

/// The Moreau–Jean scheme (its memory, the warm start, is the driver's).
#[derive(Debug, Clone, Copy, Default)]
pub struct MoreauJean;

/// The buffers of a step, kept between steps.
#[derive(Debug, Clone, Default)]
struct Scratch {
    /// The candidates at q^M.
    candidates: ContactSet,
    /// Which of them are in the index set 𝓗.
    active: Vec<bool>,
    /// Their gaps at q^M, m.
    gaps: Vec<f64>,
    /// The index set of a round.
    index_set: ContactSet,
    /// The per-contact terms of a solve.
    terms: Terms,
    /// The contacts at q^A within the first half-step's reach.
    start: ContactSet,
    /// Their search's per-body reaches.
    reaches: Reaches,
    /// The position guard's work space.
    guard: Guard,
    /// How far the guard's search looks past each body's reach for the
    /// bodies its lift moves, m.
    lifted: Vec<f64>,
    /// Whether `start` holds this step's search at q^A.
    searched: bool,
    /// The identities and gaps (as bits) of the midpoint guard's search
    /// before the one in `start` ([`guard_midpoint`]).
    searched_before: HashMap<ContactId, u64>,
    /// The gaps at q^A of the candidates whose linear start gap is past
    /// their depth, from `start` (NaN where it has none) ([`guard_end`]).
    true_start: HashMap<ContactId, f64>,
    /// The least gap at q^A of each of their pairs (∞ where it has none).
    pair_start: HashMap<(usize, Other), f64>,
}

/// The per-contact terms of one solve.
#[derive(Debug, Clone, Default)]
struct Terms {
    /// (ε_N, ε_T) of each contact.
    restitution: Vec<(f64, f64)>,
    /// The right-hand-side terms of (29) and μ.
    normal_terms: Vec<f64>,
    friction_terms: Vec<f64>,
    mu: Vec<f64>,
}

/// What the velocity-level problem (17) gave: u* and the solve, posed over
/// the scratch's candidates (under activation) or its index set.
struct Solved {
    /// u* = u^A + M⁻¹hΔt, the velocity without contact impulses.
    free: DVector<f64>,
    solution: ContactSolution,
    /// Whether the solve was posed over every candidate.
    candidates: bool,
}

impl Solved {
    /// The contacts the solve was posed over (those that took part: see the
    /// solution's `active`).
    fn contacts<'s>(&self, scratch: &'s Scratch) -> &'s [Contact] {
        if self.candidates {
            scratch.candidates.as_slice()
        } else {
            scratch.index_set.as_slice()
        }
    }
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
    let mut parts = Detached::default();
    let mut step = parts.step(model, params, state, &settings);
    let solved = solve(&mut step, &state.q, state.t, 0.0);
    if !solved.solution.status.advances() {
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
    let mut contacts = Vec::new();
    report::contact_reports(
        solved.contacts(step.scratch.get()),
        &solved.solution,
        &ending,
        &mut Default::default(),
        &mut contacts,
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
        // Step 2: the midpoint, guarded.
        let mut q_mid = model.integrate(&state.q, &state.v, 0.5 * h);
        let lift = guard_midpoint(step, h);
        if let Some(lift) = &lift {
            q_mid = model.integrate(&q_mid, lift, 1.0);
        }
        let Solved {
            free,
            solution,
            candidates,
        } = solve(step, &q_mid, state.t + 0.5 * h, h);
        let solution = solution.solved()?;
        // Step 5: q^E = q^M + (h/2) u^E.
        let mut q_end = model.integrate(&q_mid, &solution.velocity, 0.5 * h);
        if let Some(settle) = guard_end(step, h, lift.as_ref(), &solution.velocity) {
            q_end = model.integrate(&q_end, &settle, 1.0);
        }
        // For the report only (end gaps, the deepest one): the static part
        // of the margin. The velocity part, 2h·max|v| with the angular
        // velocities among v, reaches past every neighbour of a spinning
        // grain and made this call most of a granular step.
        step.geometry.gaps(
            &q_end,
            settings.static_margin(model),
            &mut step.buffers.end_gaps,
        );
        // The report's min_gap when no contact is near the end.
        let nearest = if step.buffers.end_gaps.is_empty() {
            nearest_end_gap(step, h, &solution.velocity)
        } else {
            f64::INFINITY
        };
        let sc = step.scratch.get::<Scratch>();
        let posed = if candidates {
            &mut sc.candidates
        } else {
            &mut sc.index_set
        };
        std::mem::swap(&mut step.buffers.solved, posed);
        Ok(Advance {
            q: q_end,
            v: solution.velocity.clone(),
            solution,
            velocity_scale: settings.velocity_scale(&free),
            missing: EndGap::Predicted { lead: 0.5 * h },
            active: ActiveSet::new(),
            gap_bound: None,
            nearest,
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
    let sc = step.scratch.get::<Scratch>();
    let u_start = &step.state.v;
    // u* = u^A + M⁻¹ h Δt, with h(q^M, u^A, t^M) (step 3a).
    let free = if h > 0.0 {
        let force = model.forces_over_step(q_mid, u_start, t_mid, h, params);
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
    step.geometry.contacts(q_mid, margin, &mut sc.candidates);
    let candidates = sc.candidates.as_slice();
    // Step 3b: 𝓗 = {i | g_Ni(q^M) ≤ 0}.
    sc.active.clear();
    sc.active.extend(candidates.iter().map(|c| c.gap <= 0.0));
    let tolerance = settings.relative_gap * model.length_scale();
    let lead = settings.activation_lead * h;
    let mut posing = Posing {
        model,
        params,
        u_start,
        free: &free,
        open: Depths::of(model, settings)
            .filter(|_| h > 0.0)
            .map(|(depths, _)| Open { lead, depths }),
        at_rest: at_rest(settings, model, h),
        solver: &mut step.solver,
        lcp_build: &mut step.lcp_build,
        terms: &mut sc.terms,
    };
    // NSGS on block-diagonal W does the rounds inside its sweeps
    // (`Activation`): the silo's grains, pressed into their neighbours,
    // took 6.3 solves a step of 115 sweeps each, restarting each round
    // (715 sweeps a step; 298 now).
    if h > 0.0 && posing.solver.activates() {
        sc.gaps.clear();
        sc.gaps.extend(candidates.iter().map(|c| c.gap));
        let activation = Activation {
            gaps: &sc.gaps,
            initially: &sc.active,
            lead,
            depth: tolerance,
        };
        let mut solution = posing.index_set(candidates, Some(activation));
        // Impulses within a loose tolerance can do work: a settling heap at
        // a relative residual of 1e-3 gained up to 1.3e-4 J in a step, at
        // 2e-3 J of kinetic energy. So the sweeps go on, at a tighter
        // tolerance, while the impulses' work over the step is positive.
        for _ in 0..ENERGY_TIGHTENINGS {
            if !solution.status.advances() {
                break;
            }
            let (work, scale) = contact_work(candidates, &solution, u_start);
            if work <= WORK_ROUND_OFF * scale || !posing.solver.tighten(0.1) {
                break;
            }
            let tighter = posing.index_set(candidates, Some(activation));
            if !tighter.status.advances() {
                break;
            }
            solution = tighter;
        }
        return Solved {
            free,
            solution,
            candidates: true,
        };
    }
    let mut rounds = 0;
    loop {
        sc.index_set.copy_from(
            candidates
                .iter()
                .zip(&sc.active)
                .filter(|(_, on)| **on)
                .map(|(c, _)| c),
        );
        let solution = posing.index_set(sc.index_set.as_slice(), None);
        let mut grew = false;
        if h != 0.0 && solution.status.advances() {
            for (c, on) in candidates.iter().zip(sc.active.iter_mut()) {
                let predicted = c.gap + lead * c.jacobian.normal_dot(&solution.velocity);
                if !*on && predicted < -tolerance {
                    *on = true;
                    grew = true;
                }
            }
            rounds += 1;
        }
        if !grew || rounds >= settings.active_set_rounds.max(1) {
            return Solved {
                free,
                solution,
                candidates: false,
            };
        }
    }
}

/// Times a step's NSGS solve is taken again, each at a tenth of the last
/// tolerance, while its impulses do positive work ([`contact_work`]).
const ENERGY_TIGHTENINGS: usize = 3;

/// Row r of a contact's Jacobian times v, for each r asked: n and the four
/// directions of a granular contact in one pass over its blocks, the same
/// sums as a row at a time.
fn row_dots<'a>(jac: &'a ContactJacobian, v: &'a DVector<f64>) -> impl Fn(usize) -> f64 + 'a {
    let five = (jac.friction_count() == 4).then(|| jac.dots::<5>(v));
    move |r| five.map_or_else(|| jac.dot(r, v), |d| d[r])
}

/// The positive work, as a share of the sum of its terms' magnitudes, taken
/// for round-off.
const WORK_ROUND_OFF: f64 = 1e-12;

/// The work of `solution`'s contact impulses over the step, W =
/// Σⱼ rⱼ·Jⱼ(u^A + u^E)/2 (the change of kinetic energy they make under the
/// midpoint rule), and the sum of the terms' magnitudes, J.
fn contact_work(
    contacts: &[Contact],
    solution: &ContactSolution,
    u_start: &DVector<f64>,
) -> (f64, f64) {
    let Some(layout) = solution.layout() else {
        return (0.0, 0.0);
    };
    let mean = (u_start + &solution.velocity) * 0.5;
    let z = solution.z.as_slice();
    let mut start = 0;
    let (mut work, mut scale) = (0.0, 0.0);
    for (j, c) in contacts.iter().enumerate() {
        let k = c.jacobian.friction_count();
        let dot = row_dots(&c.jacobian, &mean);
        let mut add = |impulse: f64, row: usize| {
            if impulse != 0.0 {
                let term = impulse * dot(row);
                work += term;
                scale += term.abs();
            }
        };
        add(z[layout.normal(j)], 0);
        for i in 0..k {
            add(z[start + i], i + 1);
        }
        start += k;
    }
    (work, scale)
}

/// What posing and solving (17) needs of a step.
struct Posing<'s, 'a> {
    model: &'a Model,
    params: &'a Params,
    /// u^A.
    u_start: &'a DVector<f64>,
    /// u*.
    free: &'s DVector<f64>,
    /// Where a contact still open at q^M by more than its pair's depth,
    /// with ε_N = 0, takes the law on its end gap, ξ_N = γ_N^E + g/(γh);
    /// `None` for Newton's law on every contact (a linear system, the
    /// impact map).
    open: Option<Open<'a>>,
    /// The separation speed γ_N^A up to which a contact counts as at rest
    /// ([`at_rest`]).
    at_rest: f64,
    solver: &'s mut Solver<'a>,
    lcp_build: &'s mut std::time::Duration,
    terms: &'s mut Terms,
}

/// The separation speed up to which a contact counts as at rest
/// ([`normal_term`]): the activation's resolution, `relative_gap`·L, over
/// the step (∞ for the impact map, h = 0).
fn at_rest(settings: &StepSettings, model: &Model, h: f64) -> f64 {
    if h > 0.0 {
        settings.relative_gap * model.length_scale() / h
    } else {
        f64::INFINITY
    }
}

/// The law on the end gap of a contact still open (see [`Posing::open`]).
#[derive(Clone, Copy)]
struct Open<'a> {
    /// γh.
    lead: f64,
    /// Which contacts count as touching.
    depths: Depths<'a>,
}

/// The normal term of `contact`'s law for the approach speed γ_N^A =
/// `approach`: ε_N γ_N^A (11), or g/(γh) for a contact still open with
/// ε_N = 0 under `open`; γ_N^A itself where that is larger and the
/// contact separates faster than `at_rest`.
///
/// A contact of 𝓗 that separates at u^A (γ_N^A > 0) is not struck, and
/// Newton's law, meant for an approach, would hold it at γ_N^E ≥ −ε_N γ_N^A
/// while it is pressed again: its impulse then works Λ_N(γ_N^A + γ_N^E)/2 > 0
/// over the step, kinetic energy the step adds (a grain leaving a
/// neighbour that gravity presses back within the step). With the term
/// max(t, γ_N^A), t the law's own, ξ_N = γ_N^E + max(t, γ_N^A) ≥ 0 ⊥ Λ_N ≥ 0
/// gives Λ_N(γ_N^A + γ_N^E)/2 = Λ_N(γ_N^A − max(t, γ_N^A))/2 ≤ 0: no normal
/// impulse adds energy. For an approach the term is the law's own (ε_N γ_N^A
/// ≥ γ_N^A with ε_N ≤ 1). A contact held at max = γ_N^A has a midpoint
/// normal velocity of at least zero, so it ends the step no closer than it
/// began. Separations slower than `at_rest` (the activation's resolution,
/// `relative_gap`·L over the step) are round-off of a contact at rest and
/// keep the law's own term: the work they leave is below Λ_N·`at_rest`/2.
fn normal_term(
    open: Option<Open<'_>>,
    contact: &Contact,
    eps_n: f64,
    approach: f64,
    at_rest: f64,
) -> f64 {
    let term = match open {
        Some(open) if eps_n == 0.0 && contact.gap > open.depths.pair(contact) => {
            contact.gap / open.lead
        }
        _ => eps_n * approach,
    };
    if approach > at_rest {
        term.max(approach)
    } else {
        term
    }
}

impl Posing<'_, '_> {
    /// Step 4 on a given index set: u^E from (17); with `activation`, on
    /// the contacts of `contacts` that it activates.
    fn index_set(
        &mut self,
        contacts: &[Contact],
        activation: Option<Activation<'_>>,
    ) -> ContactSolution {
        if contacts.is_empty() {
            return ContactSolution::empty(self.free);
        }
        let (model, params, free) = (self.model, self.params, self.free);
        let (u_start, open, at_rest) = (self.u_start, self.open, self.at_rest);
        let restitution = &mut self.terms.restitution;
        restitution.clear();
        restitution.extend(contacts.iter().map(|c| model.restitution(&c.id, params)));
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
                .zip(restitution.iter())
                .map(|(c, &(eps_n, eps_t))| {
                    let t = (c.jacobian.friction_count() > 0)
                        .then(|| c.jacobian.dense_direction(0, dof))
                        .filter(|t| t.amax() > 0.0);
                    let w_n = c.jacobian.dense_normal(dof);
                    let approach = w_n.dot(u_start);
                    PlanarContact {
                        normal_term: normal_term(open, c, eps_n, approach, at_rest),
                        w_n,
                        w_t: t,
                        mu: params.mu,
                        eps_t,
                    }
                })
                .collect();
            let problem = PlanarImpactLcp::new(&planar, &model.mass_inverse(), free, self.u_start);
            *self.lcp_build += clock.elapsed();
            let ids: Vec<ContactId> = contacts.iter().map(|c| c.id).collect();
            let solution = self.solver.solve_planar(PlanarSolve {
                problem,
                ids: &ids,
                free,
            });
            if solution.status == LcpStatus::Solved {
                return solution;
            }
        }
        self.pyramid(contacts, activation)
    }

    /// Newton's impact law on the k-edge friction pyramid: the LCP (29) on
    /// velocity level, σ = ñᵀu^E + ε_N γ_N^A ≥ 0 and ρ = D̃ᵀu^E + ε_T D̃ᵀu^A +
    /// Ẽλ ≥ 0 (ξ_N and ξ_T of (11) in place of the relative velocities),
    /// with the contacts' (ε_N, ε_T) in `terms.restitution`.
    fn pyramid(
        &mut self,
        contacts: &[Contact],
        activation: Option<Activation<'_>>,
    ) -> ContactSolution {
        let u_start = self.u_start;
        let refs: Vec<&Contact> = contacts.iter().collect();
        let (open, at_rest) = (self.open, self.at_rest);
        let Terms {
            restitution,
            normal_terms,
            friction_terms,
            mu,
        } = &mut *self.terms;
        normal_terms.clear();
        friction_terms.clear();
        for (c, &(eps_n, eps_t)) in contacts.iter().zip(restitution.iter()) {
            let jac = &c.jacobian;
            let k = jac.friction_count();
            let row = row_dots(jac, u_start);
            normal_terms.push(normal_term(open, c, eps_n, row(0), at_rest));
            friction_terms.extend((0..k).map(|i| eps_t * row(i + 1)));
        }
        mu.clear();
        mu.resize(contacts.len(), self.params.mu);
        let problem = ContactProblem {
            contacts: &refs,
            map: self.solver.mass_inverse(),
            dof: self.model.dof(),
            free: self.free,
            normal_terms,
            friction_terms,
            relaxed_normal_terms: None,
            mu,
            activation,
            up: self.solver.up(),
        };
        self.solver.solve(&problem, Form::Impact)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene;
    use std::path::Path;

    /// What the tests read of one contact's impulse: normal, tangential,
    /// pressed (normal impulse above round-off) and sliding.
    fn impulses(solved: &Solved, contacts: &[Contact]) -> Vec<(f64, f64, bool, bool)> {
        let settings = StepSettings::default();
        let solution = &solved.solution;
        let impulse_zero = settings.zero * solution.z.amax();
        let speed_zero = settings.zero * settings.velocity_scale(&solved.free);
        solution
            .impulses(contacts)
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
        let tolerance = settings.relative_gap * model.length_scale();
        let mut state = scene.initial.clone();
        let mut parts = Detached::default();
        let (mut checked, mut joined) = (0, 0);
        for _ in 0..80 {
            let q_mid = model.integrate(&state.q, &state.v, 0.5 * h);
            let t_mid = state.t + 0.5 * h;
            let options = settings.solver_options(params, None);
            let mut step = parts.step_with(model, params, &state, &settings, options);
            let solved = solve(&mut step, &q_mid, t_mid, h);
            let solves = step.solver.solves();
            let solution = &solved.solution;
            assert_eq!(solution.status, LcpStatus::Solved, "t = {}", state.t);
            assert!(solves <= 1, "t = {}: {} solves", state.t, solves);
            let in_set: std::collections::HashSet<_> = solved
                .contacts(step.scratch.get())
                .iter()
                .enumerate()
                .filter(|(j, _)| solution.active.as_ref().is_none_or(|a| a[*j]))
                .map(|(_, c)| c.id)
                .collect();
            for c in crate::collision::contacts(model, &q_mid, params.friction_edges(), 0.02) {
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
        let mut state = scene.initial.clone();
        let mut parts = Detached::default();
        let mut other = Detached::default();
        let (mut slides, mut sticks) = (0, 0);
        for _ in 0..3000 {
            let q_mid = model.integrate(&state.q, &state.v, 0.5 * h);
            let t_mid = state.t + 0.5 * h;
            let mut step = parts.step(model, params, &state, &settings);
            let planar = solve(&mut step, &q_mid, t_mid, h);
            assert_eq!(planar.solution.status, LcpStatus::Solved);
            assert!(step.solver.solves() <= 1, "(33) solved by Lemke");
            let contacts = planar.contacts(step.scratch.get()).to_vec();
            if !contacts.is_empty() {
                let force = model.forces_over_step(&q_mid, &state.v, t_mid, h, params);
                let free = &state.v + model.mass_inverse() * force * h;
                let mut step = other.step(model, params, &state, &settings);
                let mut terms = Terms {
                    restitution: contacts
                        .iter()
                        .map(|c| model.restitution(&c.id, params))
                        .collect(),
                    ..Terms::default()
                };
                let mut posing = Posing {
                    model,
                    params,
                    u_start: &state.v,
                    free: &free,
                    open: None,
                    at_rest: at_rest(&settings, model, h),
                    solver: &mut step.solver,
                    lcp_build: &mut step.lcp_build,
                    terms: &mut terms,
                };
                let solution = posing.pyramid(&contacts, None);
                let pyramid = Solved {
                    solution,
                    free,
                    candidates: false,
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
                let (planar_impulses, pyramid_impulses) =
                    (impulses(&planar, &contacts), impulses(&pyramid, &contacts));
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
