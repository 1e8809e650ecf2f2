//! The Stewart–Trinkle (1996) implicit time-stepping scheme, eq. (25)–(29).
//!
//! One step from (qˡ, vˡ):
//! - M, n, D are evaluated at the predicted q̂ = qˡ + h vˡ, the force k at the
//!   midpoint qˡ + h vˡ/2 (§3, remark 4);
//! - each contact's constraint is linearized at q̂: f(q̂) + nᵀ(qˡ⁺¹ − q̂) ≥ 0 with
//!   qˡ⁺¹ = qˡ + h vˡ⁺¹, i.e. σ = nᵀvˡ⁺¹ + (nᵀqˡ − α₀)/h ≥ 0 where
//!   (nᵀqˡ − α₀)/h = f(q̂)/h − nᵀv̂ (v̂ the velocity q̂ was predicted with) —
//!   taken here as the secant through f(qˡ) and f(q̂) (`secant_contact`), the
//!   same constraint to first order, so that the energy bound of §3.3 and the
//!   gap bound hold on piles, where the tangent's curvature error added energy;
//! - the mixed LCP (25)–(28) is reduced to the pure LCP (29) and solved by Lemke;
//! - active set (§4): the contacts active at the previous step plus those violated
//!   at q̂; after the solve, contacts violated at qˡ⁺¹ are added and the step is
//!   solved again;
//! - the nonlinear version (§3.6) repeats the solve with n, D re-evaluated at the
//!   latest qˡ⁺¹ (`ncp_iterations` fixed-point iterations; 1 = linearized);
//!   whatever `ncp_iterations` says, up to [`StepSettings::gap_iterations`]
//!   are taken while the step ends more than [`StepSettings::relative_gap`]
//!   (relative to the body size) inside.

use super::report::EndGap;
use super::scheme::{Advance, Scheme};
use super::settings::StepSettings;
use super::step::{Solver, Step};
use crate::collision::{ContactSet, NOT_COPIED, Reaches, Reuse};
use crate::model::{Block, Contact, ContactId, Other};
use crate::params::SolverKind;
use crate::solver::lemke::islands::Islands;
use crate::solver::{ContactProblem, ContactSolution, Failed, Form};
use nalgebra::{DVector, Vector3};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The Stewart–Trinkle scheme (its memory, the active set and the warm
/// start, is the driver's).
#[derive(Debug, Clone, Copy, Default)]
pub struct StewartTrinkle;

/// What a step keeps from one iteration of §3.6 to the next, and the
/// buffers it fills, kept between steps.
#[derive(Debug, Clone, Default)]
struct Scratch {
    /// The contacts at qˡ.
    start: ContactSet,
    /// Their gaps by identity, and with their points by body pair
    /// ([`StartGaps`]).
    start_by_id: HashMap<ContactId, f64>,
    start_by_pair: Vec<PointGap>,
    /// The candidates of an iteration: the contacts at q̂ as secants, then
    /// those of qˡ that q̂ no longer shows.
    candidates: ContactSet,
    /// Their gaps predicted at q̂, m.
    predicted: Vec<f64>,
    /// The last iteration's candidates and predicted gaps, its v̂, and how
    /// many of the candidates its search found (the rest were added after
    /// it): the next search copies the contacts of bodies whose v̂, so
    /// whose q̂, is the same to the bit ([`crate::model::reuse`]).
    held: ContactSet,
    held_predicted: Vec<f64>,
    held_v: DVector<f64>,
    held_found: usize,
    /// Per body, whether a search copies it, and where each contact of the
    /// latest search was copied from.
    keep: Vec<bool>,
    sources: Vec<usize>,
    /// The last end-gap search of the step: its q and its gaps.
    gaps_at: DVector<f64>,
    gaps_last: Vec<(ContactId, f64)>,
    /// Identities found at q̂, and among the candidates.
    at_prediction: HashSet<ContactId>,
    known: HashSet<ContactId>,
    /// The contacts every iteration must keep.
    required: HashSet<ContactId>,
    /// The contacts of a round's solve.
    chosen: HashSet<ContactId>,
    /// Which candidates stand in for vanished required contacts.
    stand_ins: StandIns,
    /// The candidates a round selects.
    selected: Vec<usize>,
    /// The gaps at qˡ⁺¹ of the round just solved.
    round_gaps: Vec<(ContactId, f64)>,
    /// The contacts and end gaps of the latest iterate and of the best one.
    latest: ContactSet,
    latest_gaps: Vec<(ContactId, f64)>,
    best: ContactSet,
    best_gaps: Vec<(ContactId, f64)>,
    /// The right-hand-side terms of (29): γ/h, the relaxed max(γ, 0)/h, μ.
    gap_terms: Vec<f64>,
    clamped: Vec<f64>,
    mu: Vec<f64>,
    anderson: Anderson,
    /// The velocity indices of the islands that converged, and the work
    /// space that finds them ([`settled_velocities`]).
    settled: Vec<usize>,
    settling: Settling,
    /// The step's cutting planes at end points.
    cuts: Cuts,
    /// The search margin's per-body reaches.
    reaches: Reaches,
}

/// One iterate of §3.6: the solve, qˡ⁺¹ and the deepest gap at qˡ⁺¹ (its
/// contacts and end gaps are in the scratch's `latest` and `best`).
struct Iterate {
    solved: ContactSolution,
    q: DVector<f64>,
    deepest: f64,
}

impl Scheme for StewartTrinkle {
    fn advance(&self, step: &mut Step<'_>) -> Result<Advance, Failed> {
        let (model, params, state, settings) = (step.model, step.params, step.state, step.settings);
        let sc = step.scratch.get::<Scratch>();
        let h = params.dt;
        // Force at the midpoint qˡ + h vˡ/2 (eq. (25)).
        let q_mid = model.integrate(&state.q, &state.v, 0.5 * h);
        let force = model.forces_over_step(&q_mid, &state.v, state.t + 0.5 * h, h, params);
        let free = &state.v + model.apply_mass_inverse(&force) * h;
        let margin = settings.contact_reaches(model, &state.v, h, &mut sc.reaches);
        // The iterations below hold the islands whose gaps are met, so their
        // pairs come back at the same poses.
        step.geometry.keep_pairs();
        step.geometry.contacts(&state.q, margin, &mut sc.start);
        let length = model.length_scale();
        let start_gaps = StartGaps::new(
            sc.start.as_slice(),
            &mut sc.start_by_id,
            &mut sc.start_by_pair,
            Reach {
                velocity: &state.v,
                fixed: 0.01 * length,
                per_speed: 2.0 * h * length.max(1.0),
            },
        );
        let mut q_hat = model.integrate(&state.q, &state.v, h);
        let mut v_hat = state.v.clone();
        let mut result = None;
        let mut best: Option<Iterate> = None;
        let mut previous_deepest = f64::NEG_INFINITY;
        sc.anderson.clear();
        sc.cuts.clear();
        // Nothing is copied across steps (the margin changes).
        sc.gaps_last.clear();
        let asked = params.ncp_iterations.max(1);
        // The contacts every iteration must keep: the previous step's active set,
        // then every contact an earlier iteration had to include. Without the
        // memory, a contact that one iteration resolved is no longer violated at
        // the next q̂, drops out, and is violated again: the iterations oscillate.
        sc.required.clear();
        sc.required.extend(step.active.iter().copied());
        // Past `gap_iterations`, a step goes on only while its best iterate
        // still ends deeper than `gap_guarantee` (up to
        // `extra_gap_iterations` more).
        let base = asked.max(settings.gap_iterations);
        for iteration in 0..base + settings.extra_gap_iterations {
            let guarantee_kept = best
                .as_ref()
                .is_none_or(|b: &Iterate| b.deepest >= -settings.gap_guarantee);
            if iteration >= base && guarantee_kept {
                break;
            }
            // The contacts at q̂. Islands held since the last iteration
            // (`settled_velocities`) keep v̂, so q̂, to the bit: their
            // bodies' contacts, secants and predicted gaps are copied from
            // the last iteration's (they are what a search and the secant
            // give again), the rest computed.
            std::mem::swap(&mut sc.candidates, &mut sc.held);
            std::mem::swap(&mut sc.predicted, &mut sc.held_predicted);
            let reuse = (iteration > 0
                && model.same_bodies(&sc.held_v, &v_hat, true, &mut sc.keep))
            .then(|| Reuse {
                keep: &sc.keep,
                previous: &sc.held.as_slice()[..sc.held_found],
            });
            step.geometry.contacts_reusing(
                &q_hat,
                margin,
                &mut sc.candidates,
                reuse,
                &mut sc.sources,
            );
            sc.held_found = sc.candidates.len();
            copy_into(&mut sc.held_v, &v_hat);
            // f(q̂): which contacts the prediction violates.
            sc.predicted.clear();
            sc.at_prediction.clear();
            for (i, c) in sc.candidates.as_mut_slice().iter_mut().enumerate() {
                sc.at_prediction.insert(c.id);
                match sc.sources.get(i).copied().unwrap_or(NOT_COPIED) {
                    NOT_COPIED => {
                        sc.predicted.push(c.gap);
                        secant_contact(c, &start_gaps, &v_hat, h, length, settings);
                    }
                    k => sc.predicted.push(sc.held_predicted[k]),
                }
            }
            // The contacts of qˡ that q̂ no longer shows, linearized at qˡ
            // (f(qˡ) + h nᵀvˡ⁺¹ ≥ 0, γ = f(qˡ)/h ≥ 0 as the energy bound
            // needs). Two boxes that approach corner to face can report, at
            // q̂, only an edge–edge contact (the separating axis switched as
            // they overlapped); without the corner the LCP lets them sink
            // millimetres into each other. A contact that q̂ shows under
            // another feature id (exactly aligned boxes, whose coinciding
            // corners parry names either way) is not added twice.
            for c in sc.start.as_slice() {
                if !sc.at_prediction.contains(&c.id)
                    && !shown_elsewhere(c, sc.candidates.as_slice(), length)
                {
                    sc.predicted.push(c.gap + h * c.jacobian.normal_dot(&v_hat));
                    sc.candidates.push_copy(c);
                }
            }
            // The cuts come last (the step's contact reports leave them out
            // by position) and are always selected.
            for c in sc.cuts.rows.as_slice() {
                sc.predicted.push(c.gap + h * c.jacobian.normal_dot(&v_hat));
                sc.candidates.push_copy(c);
            }
            sc.known.clear();
            sc.known
                .extend(sc.candidates.as_slice().iter().map(|c| c.id));
            // The rounds below add only known contacts to `required`, so the
            // stand-ins for vanished ones are fixed for this iteration.
            sc.stand_ins.find(
                &sc.required,
                &sc.known,
                sc.candidates.as_slice(),
                &sc.predicted,
            );
            for round in 0..settings.active_set_rounds.max(1) {
                let candidates = sc.candidates.as_slice();
                sc.selected.clear();
                sc.selected.extend(
                    candidates
                        .iter()
                        .zip(&sc.predicted)
                        .enumerate()
                        .filter(|(i, (c, gap))| {
                            **gap <= 0.0
                                || c.id.cut != 0
                                || sc.required.contains(&c.id)
                                || sc.stand_ins.marks[*i]
                        })
                        .map(|(i, _)| i),
                );
                let selected: Vec<&Contact> = sc.selected.iter().map(|&i| &candidates[i]).collect();
                let terms = Terms {
                    gap_terms: &mut sc.gap_terms,
                    clamped: &mut sc.clamped,
                    mu: &mut sc.mu,
                };
                let solved = solve(&mut step.solver, params, &selected, &free, terms).solved()?;
                let q_new = model.integrate(&state.q, &solved.velocity, h);
                // Contacts violated at qˡ⁺¹ that were left out join and we solve again.
                // The gaps at qˡ⁺¹ within the margin: the violated ones here,
                // all of them for the report if this iterate is kept.
                // The gaps of bodies whose qˡ⁺¹ the last search of the
                // step saw to the bit are copied from it.
                let reuse = (!sc.gaps_last.is_empty()
                    && model.same_bodies(&sc.gaps_at, &q_new, false, &mut sc.keep))
                .then(|| Reuse {
                    keep: &sc.keep,
                    previous: &sc.gaps_last,
                });
                step.geometry
                    .gaps_reusing(&q_new, margin, &mut sc.round_gaps, reuse);
                sc.gaps_last.clone_from(&sc.round_gaps);
                copy_into(&mut sc.gaps_at, &q_new);
                sc.chosen.clear();
                sc.chosen.extend(selected.iter().map(|c| c.id));
                let deepest = sc
                    .round_gaps
                    .iter()
                    .map(|(_, gap)| *gap)
                    .fold(0.0, f64::min);
                let mut missing = false;
                for &(id, gap) in &sc.round_gaps {
                    if gap < 0.0 && !sc.chosen.contains(&id) && sc.known.contains(&id) {
                        sc.required.insert(id);
                        missing = true;
                    }
                }
                let done = !missing || round + 1 >= settings.active_set_rounds;
                if done {
                    sc.required.extend(sc.chosen.iter().copied());
                    sc.latest.copy_from(selected.iter().copied());
                    std::mem::swap(&mut sc.latest_gaps, &mut sc.round_gaps);
                    result = Some(Iterate {
                        solved,
                        q: q_new,
                        deepest,
                    });
                    break;
                }
            }
            let Some(latest) = result.take() else {
                continue;
            };
            let deepest = latest.deepest;
            // Past the iterations every step may take, an iterate that ends
            // deeper than the promise leaves cuts at its end point.
            if settings.end_point_cuts
                && params.solver == SolverKind::Lemke
                && iteration + 1 >= base
                && deepest < -settings.gap_guarantee
            {
                step.geometry
                    .contacts(&latest.q, margin, &mut sc.cuts.at_end);
                sc.cuts
                    .take(&start_gaps, &latest.solved.velocity, h, length, settings);
            }
            let converged = deepest >= -settings.relative_gap * model.length_scale();
            let last = iteration + 1 >= asked && converged;
            // Islands that converged keep their point of linearization
            // from here on: each island's own iterations (§3.6) stop where
            // its gaps are met, its LCP comes back bit for bit and the
            // solver reuses its solution (`solve::memo`), while the others
            // go on. Under Lemke, once the iterations asked for are done,
            // and not after the first iteration, whose point is the last
            // step's velocity: holding islands there left the settled
            // `pile.ron` at 11.7 pivots a step (t = 1–1.25 s) against 4.6
            // without holding and 3.1 when held from the second iteration.
            sc.settled.clear();
            if params.solver == SolverKind::Lemke && iteration + 1 >= asked.max(2) {
                settled_velocities(
                    sc.latest.as_slice(),
                    &sc.latest_gaps,
                    settings.relative_gap * model.length_scale(),
                    &mut sc.settling,
                    &mut sc.settled,
                );
            }
            // The next point of linearization. The iteration v̂ ↦ vˡ⁺¹(v̂)
            // converges linearly (ratio 0.6 on a pile's box corners), so it is
            // extrapolated by Anderson acceleration over the last iterates;
            // when the end gap got worse than the iteration before (the
            // secants of a strongly curved gap, such as two nearly parallel
            // box edges, alternate between two states), the midpoint of v̂ and
            // vˡ⁺¹ is taken instead and the history dropped. (Not needed
            // after the last iteration.)
            let next = (!last).then(|| {
                let mut next = if deepest < previous_deepest {
                    sc.anderson.clear();
                    (&v_hat + &latest.solved.velocity) * 0.5
                } else {
                    sc.anderson.next(&v_hat, &latest.solved.velocity)
                };
                for &i in &sc.settled {
                    next[i] = v_hat[i];
                }
                next
            });
            previous_deepest = deepest;
            // Every iterate keeps the energy bound (γ = f(qˡ)/h ≥ 0 with the
            // impulse along its own secant), so the least penetrating one is
            // kept.
            if best.as_ref().is_none_or(|b| deepest > b.deepest) || converged {
                best = Some(latest);
                std::mem::swap(&mut sc.best, &mut sc.latest);
                std::mem::swap(&mut sc.best_gaps, &mut sc.latest_gaps);
            }
            let Some(next) = next else {
                break;
            };
            q_hat = model.integrate(&state.q, &next, h);
            v_hat = next;
        }
        let Some(best) = best else {
            unreachable!("the settings allow at least one round and one iteration");
        };

        // The next active set (§4): the contacts that push or touch.
        let solved = best.solved;
        let velocity_scale = settings.velocity_scale(&free);
        let zero = settings.zero;
        let impulse_zero = zero * solved.z.amax();
        let active = sc
            .best
            .as_slice()
            .iter()
            .enumerate()
            .filter(|(_, c)| c.id.cut == 0)
            .filter(|(j, _)| {
                let normal = solved.normal_index(*j);
                solved.z[normal] > impulse_zero || solved.w[normal] <= zero * velocity_scale
            })
            .map(|(_, c)| c.id)
            .collect();
        // The contact reports leave the cuts out: they are the last rows of
        // the LCP, and the reports read the solution by position.
        let found = sc
            .best
            .as_slice()
            .iter()
            .take_while(|c| c.id.cut == 0)
            .count();
        debug_assert!(sc.best.as_slice()[found..].iter().all(|c| c.id.cut != 0));
        sc.best.truncate(found);
        std::mem::swap(&mut step.buffers.solved, &mut sc.best);
        std::mem::swap(&mut step.buffers.end_gaps, &mut sc.best_gaps);
        // The position-level promise (§3.3 with the iterations of §3.6):
        // no end gap below −gap_guarantee, nor below the deepest gap the
        // step started from when that is deeper (an overlap the scene opted
        // into is not pushed out at once, since γ = f(qˡ)/h < 0 is relaxed
        // to 0 when the LCP needs it). NSGS stops at its tolerance instead.
        let start_deepest = sc
            .start
            .as_slice()
            .iter()
            .map(|c| c.gap)
            .fold(0.0, f64::min);
        let gap_bound = (params.solver == SolverKind::Lemke)
            .then_some((-settings.gap_guarantee).min(start_deepest));
        Ok(Advance {
            q: best.q,
            v: solved.velocity.clone(),
            solution: solved,
            velocity_scale,
            missing: EndGap::Predicted { lead: h },
            active,
            gap_bound,
            nearest: f64::INFINITY,
        })
    }
}

/// `source` into `target`, in its storage when the lengths agree (a
/// `DVector`'s `clone_from` allocates anew).
fn copy_into(target: &mut DVector<f64>, source: &DVector<f64>) {
    if target.len() == source.len() {
        target.copy_from(source);
    } else {
        *target = source.clone();
    }
}

/// Cutting planes at the end points of a step's iterates
/// ([`StepSettings::end_point_cuts`]).
///
/// Where a pair's contact points change from one iterate of §3.6 to the
/// next (a box landing on a sphere, whose contact moves from the box's face
/// to its edge; the points of a manifold sliding along the edges as the
/// bodies turn), every row of the LCP at q̂ can be met while the iterate
/// still ends deep at points that q̂ did not show (`pile.ron` at h = 0.03 s:
/// a box landing on a sphere at t = 0.18 s ended 1.7 mm deep after every
/// iteration; taken whole with the cuts). A cut is such a
/// violated contact found at qˡ⁺¹, linearized there: the secant of
/// [`secant_contact`] through f(qˡ) along that iterate's vˡ⁺¹, so that
/// f(qˡ) + h sᵀvˡ⁺¹ = f(qˡ⁺¹). Its γ = f(qˡ)/h is the same as any
/// contact's, and its impulse acts along its own row, so a cut keeps the
/// energy bound of §3.3 as every other row does; it is a valid inequality
/// of the true gap to first order, which removes the iterate it came from.
/// The cuts stay rows of every later iteration of the step (the next
/// solves must keep them) and are never reported nor carried to the next
/// step's active set. The cut is taken at the iterate's end point, not at
/// q̂ of earlier iterates: rows there are met already, and the violation is
/// elsewhere.
#[derive(Debug, Clone, Default)]
struct Cuts {
    /// The cut rows, named by their contact with `cut` = 1, 2, … in the
    /// order taken.
    rows: ContactSet,
    /// The contacts found at the end point being cut.
    at_end: ContactSet,
}

impl Cuts {
    fn clear(&mut self) {
        self.rows.clear();
    }

    /// Takes as cuts the contacts of `at_end` (found at an iterate's qˡ⁺¹)
    /// deeper than the promise, linearized along the iterate's `velocity`.
    fn take(
        &mut self,
        start_gaps: &StartGaps<'_>,
        velocity: &DVector<f64>,
        h: f64,
        length: f64,
        settings: &StepSettings,
    ) {
        for c in self.at_end.as_mut_slice() {
            if c.gap < -settings.gap_guarantee {
                // The secant finds f(qˡ) by the contact's own identity.
                secant_contact(c, start_gaps, velocity, h, length, settings);
                c.id.cut = u32::try_from(self.rows.len() + 1).unwrap_or(u32::MAX);
                self.rows.push_copy(c);
            }
        }
    }
}

/// What [`settled_velocities`] reuses from call to call: the islands and
/// the bodies whose end gaps are not met.
#[derive(Debug, Clone, Default)]
struct Settling {
    islands: Islands,
    deep: HashSet<usize>,
}

/// The velocity indices, into `out`, of the islands of `chosen` (the
/// contacts an iterate solved) whose every end gap in `end_gaps` (those at
/// its qˡ⁺¹) on one of their moving bodies is at least −`tolerance`.
fn settled_velocities(
    chosen: &[Contact],
    end_gaps: &[(ContactId, f64)],
    tolerance: f64,
    work: &mut Settling,
    out: &mut Vec<usize>,
) {
    let refs: Vec<&Contact> = chosen.iter().collect();
    // The moving bodies whose end gaps are not met.
    let deep = &mut work.deep;
    deep.clear();
    for (id, gap) in end_gaps {
        if *gap < -tolerance {
            deep.insert(id.a);
            if let Other::Body(b) = id.b {
                deep.insert(b);
            }
        }
    }
    work.islands.find(&refs);
    for g in 0..work.islands.len() {
        let island = work.islands.get(g);
        // A contact's second body moves when it has a second block.
        let met = island.iter().all(|&j| {
            let c = &chosen[j];
            let second = match c.id.b {
                Other::Body(b) if c.jacobian.blocks().len() > 1 => Some(b),
                _ => None,
            };
            !deep.contains(&c.id.a) && second.is_none_or(|b| !deep.contains(&b))
        });
        if met {
            for &j in island {
                for b in chosen[j].jacobian.blocks() {
                    out.extend(b.range());
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
}

/// The candidates that stand in for required contacts that came back under
/// another feature (a sphere passing from a box's face to its edge): for
/// each body pair with a required contact not among the known ones, the
/// pair's candidate with the smallest predicted gap. Without them the
/// iterations alternate between the two features and one ends deep inside.
#[derive(Debug, Clone, Default)]
struct StandIns {
    /// Whether each candidate is one.
    marks: Vec<bool>,
    vanished: HashSet<(usize, Other)>,
    nearest: HashMap<(usize, Other), (usize, f64)>,
}

impl StandIns {
    /// Marks the stand-ins among `candidates` (gaps `predicted` at q̂).
    fn find(
        &mut self,
        required: &HashSet<ContactId>,
        known: &HashSet<ContactId>,
        candidates: &[Contact],
        predicted: &[f64],
    ) {
        self.vanished.clear();
        self.vanished.extend(
            required
                .iter()
                .filter(|id| !known.contains(id))
                .map(|id| (id.a, id.b)),
        );
        self.nearest.clear();
        for (i, (c, &gap)) in candidates.iter().zip(predicted).enumerate() {
            let pair = (c.id.a, c.id.b);
            if self.vanished.contains(&pair) {
                let best = self.nearest.entry(pair).or_insert((i, gap));
                if gap < best.1 {
                    *best = (i, gap);
                }
            }
        }
        self.marks.clear();
        self.marks.resize(candidates.len(), false);
        for &(i, _) in self.nearest.values() {
            self.marks[i] = true;
        }
    }
}

/// The buffers of the right-hand-side terms of (29).
struct Terms<'b> {
    gap_terms: &'b mut Vec<f64>,
    clamped: &'b mut Vec<f64>,
    mu: &'b mut Vec<f64>,
}

/// Builds and solves (29) for the selected contacts.
fn solve(
    solver: &mut Solver<'_>,
    params: &crate::params::Params,
    selected: &[&Contact],
    free: &DVector<f64>,
    terms: Terms<'_>,
) -> ContactSolution {
    let h = params.dt;
    // `secant_contact` left each contact's gap at the start of the step.
    terms.gap_terms.clear();
    terms.gap_terms.extend(selected.iter().map(|c| c.gap / h));
    // Dependent normals can also make the gaps of contacts that start
    // inside inconsistent (LCP(N, 0) has solutions with zᵀb < 0, and
    // Lemke's guarantee, CPS Thm. 4.4.12 and §3.2, is lost); the fallback
    // asks those contacts only not to close further.
    terms.clamped.clear();
    terms
        .clamped
        .extend(terms.gap_terms.iter().map(|g| g.max(0.0)));
    terms.mu.clear();
    terms.mu.resize(selected.len(), params.mu);
    let problem = ContactProblem {
        contacts: selected,
        map: solver.mass_inverse(),
        dof: free.len(),
        free,
        normal_terms: terms.gap_terms,
        friction_terms: &[],
        relaxed_normal_terms: Some(terms.clamped),
        mu: terms.mu,
        activation: None,
        up: solver.up(),
    };
    solver.solve(&problem, Form::Position)
}

/// The contact as Stewart–Trinkle's constraint on vˡ⁺¹, linearized so that
/// the step can neither add energy nor end inside.
///
/// The paper linearizes f at q̂: f(q̂) + nᵀ(qˡ⁺¹ − q̂) ≥ 0, i.e. σ = nᵀvˡ⁺¹ + γ
/// with γ = f(q̂)/h − nᵀv̂. The energy argument of §3.3 needs c_n γ ≥ 0
/// (ΔE = −Σ c_n γ − Σ λ eᵀβ − ½‖Δv‖²_M), but γ differs from f(qˡ)/h by the
/// curvature of f along the step, O(h ‖v‖² κ), which is negative for a box
/// corner rising past its centre or one sphere rolling on another: a settled
/// pile then gains up to 1e-5 of its energy per step. Clamping γ at 0 keeps
/// the energy but lets the same curvature push the contact 2 mm deep.
///
/// Here the constraint is the secant from the start of the step: γ =
/// f(qˡ)/h ≥ 0 and the normal row is s = n + α v̂_b / ‖v̂_b‖² with α = (f(q̂) −
/// f(qˡ))/h − nᵀv̂, on the contact's own body blocks b, so that f(qˡ) + h sᵀv̂
/// = f(q̂) exactly. The impulse acts along the same s, so c_n γ ≥ 0 and the
/// energy bound holds; at the fixed point of the iterations of §3.6 (v̂ =
/// vˡ⁺¹) the end gap f(qˡ⁺¹) = f(qˡ) + h sᵀvˡ⁺¹ ≥ 0 exactly. Contacts not
/// found at qˡ (farther than the margin then) keep the paper's linearization,
/// with γ ≥ 0 as well. `gap` of the returned contact is f(qˡ) (or the
/// linearized value), what the LCP's right-hand side needs.
fn secant_contact(
    contact: &mut Contact,
    start_gaps: &StartGaps<'_>,
    v_hat: &DVector<f64>,
    h: f64,
    length: f64,
    settings: &StepSettings,
) {
    let slope = contact.jacobian.normal_dot(v_hat);
    let Some(start) = start_gaps.of(contact) else {
        // A contact that came within the margin during the step: the paper's
        // linearization, held at γ ≥ 0 so that it cannot add energy.
        contact.gap = (contact.gap - h * slope).max(0.0);
        return;
    };
    let mut blocks = [Block { start: 0, len: 0 }; 2];
    let count = contact.jacobian.blocks().len();
    blocks[..count].copy_from_slice(contact.jacobian.blocks());
    let blocks = &blocks[..count];
    let speed2: f64 = blocks
        .iter()
        .flat_map(|b| v_hat.as_slice()[b.range()].iter())
        .map(|x| x * x)
        .sum();
    let alpha = (contact.gap - start) / h - slope;
    // Below round-off of the gaps the secant and the tangent are the same.
    if h * speed2.sqrt() > settings.secant_round_off * length {
        let mut offset = 0;
        let row = contact.jacobian.row_mut(0);
        for b in blocks {
            for (x, v) in row[offset..offset + b.len]
                .iter_mut()
                .zip(&v_hat.as_slice()[b.range()])
            {
                *x += alpha * v / speed2;
            }
            offset += b.len;
        }
    }
    contact.gap = start;
}

/// Whether `contact` (found at qˡ) appears among `candidates` (found at q̂)
/// under another feature id: a contact of the same pair within 1 % of the
/// body size with a normal within 10°.
fn shown_elsewhere(contact: &Contact, candidates: &[Contact], length: f64) -> bool {
    let Some(frame) = &contact.frame else {
        return false;
    };
    candidates.iter().any(|c| {
        c.id.a == contact.id.a
            && c.id.b == contact.id.b
            && c.frame.as_ref().is_some_and(|f| {
                (f.point - frame.point).norm() <= 0.01 * length
                    && f.normal.dot(&frame.normal) >= 10f64.to_radians().cos()
            })
    })
}

/// The gaps f(qˡ) at the start of the step, by contact identity and, for a
/// contact whose feature changed during the step (a sphere rolling from a
/// box's face onto its edge), by body pair and nearest contact point.
///
/// A contact found again under its identity takes its own start gap
/// wherever its point went: its features are the same, so its gap is the
/// same function of the poses. The crossing of two nearly parallel box
/// edges (aligned bricks side by side or stacked) moves by the edges'
/// offset over their angle, centimetres in a step under rounding-level
/// turns; taken as a new contact there, its linearization's γ ≥ 0 would
/// hide a start gap below zero, and the struck stack of aligned bricks
/// (`benches/scenes/stacked_wall.ron`) would end steps 3–5 µm deep at every
/// halving. A contact of the pair under another identity takes the nearest
/// start point's gap only where that point lies within [`Reach`] of the
/// contact's point now: the secant of [`secant_contact`] holds the gap at
/// f(qˡ) + h sᵀv, and a start gap read at another place of the pair is a
/// wrong f(qˡ) by as much as the gaps differ along the pair. Measured on the
/// generated pile of 120 (t = 0.96 s): two boxes face to face, the face
/// tilted so that its far end stood 0.65 mm open; at q̂ parry gave a point
/// at the near end that qˡ had not shown, the nearest point of qˡ was the
/// far end, 0.11 m away, and the step took its 0.65 mm as the near end's
/// room and ended 64 µm deep after every fixed-point iteration (and at
/// every halving down to h/8; 40 µm there). A point farther keeps the
/// paper's linearization (see `secant_contact`).
struct StartGaps<'b> {
    by_id: &'b HashMap<ContactId, f64>,
    /// (body pair, contact point in the world, gap), sorted by pair, in the
    /// contacts' order within a pair.
    by_pair: &'b [PointGap],
    reach: Reach<'b>,
}

/// How far from a contact's point now its point at qˡ may lie: 1 % of the
/// body size plus what its bodies move in two steps at their velocity at
/// qˡ, as in `StepSettings::contact_margin` but for the contact's own
/// bodies (a body thrown through the scene does not widen every pair's).
struct Reach<'b> {
    velocity: &'b DVector<f64>,
    /// m.
    fixed: f64,
    /// 2h max(L, 1): m per unit of the fastest velocity entry.
    per_speed: f64,
}

impl Reach<'_> {
    /// The reach of `contact`, m.
    fn of(&self, contact: &Contact) -> f64 {
        let speed = contact
            .jacobian
            .blocks()
            .iter()
            .flat_map(|b| self.velocity.as_slice()[b.range()].iter())
            .fold(0.0, |m: f64, x| m.max(x.abs()));
        self.fixed + self.per_speed * speed
    }
}

/// A body pair, a contact point of it (world, m) and its gap (m).
type PointGap = ((usize, Other), Vector3<f64>, f64);

impl<'b> StartGaps<'b> {
    /// The gaps of `contacts`, kept in `by_id` and `by_pair` (replaced).
    fn new(
        contacts: &[Contact],
        by_id: &'b mut HashMap<ContactId, f64>,
        by_pair: &'b mut Vec<PointGap>,
        reach: Reach<'b>,
    ) -> Self {
        by_id.clear();
        by_pair.clear();
        for c in contacts {
            by_id.insert(c.id, c.gap);
            if let Some(frame) = &c.frame {
                by_pair.push(((c.id.a, c.id.b), frame.point, c.gap));
            }
        }
        // Stable: within a pair the contacts keep their order.
        by_pair.sort_by_key(|(pair, _, _)| *pair);
        Self {
            by_id,
            by_pair,
            reach,
        }
    }

    /// f(qˡ) of the contact, if the same contact was there at qˡ (by
    /// identity, or nearby in the same pair).
    fn of(&self, contact: &Contact) -> Option<f64> {
        let point = contact.frame.as_ref().map(|f| f.point);
        let reach = || self.reach.of(contact);
        if let Some(&gap) = self.by_id.get(&contact.id) {
            return Some(gap);
        }
        let point = point?;
        let pair = (contact.id.a, contact.id.b);
        let first = self.by_pair.partition_point(|(p, _, _)| *p < pair);
        self.by_pair[first..]
            .iter()
            .take_while(|(p, _, _)| *p == pair)
            .map(|(_, then, gap)| ((then - point).norm(), *gap))
            .min_by(|x, y| x.0.total_cmp(&y.0))
            .filter(|(distance, _)| *distance <= reach())
            .map(|(_, gap)| gap)
    }
}

/// Anderson acceleration of a fixed-point iteration x ↦ g(x) (Walker & Ni,
/// SIAM J. Numer. Anal. 49, 2011) with a memory of two: the next x is the
/// combination of the last g's whose residuals g − x combine to the
/// smallest one. For a linearly converging iteration this removes the
/// dominant error component in one step.
#[derive(Debug, Clone, Default)]
struct Anderson {
    /// (x, g(x)) of the previous iterates, oldest first.
    history: Vec<(DVector<f64>, DVector<f64>)>,
}

impl Anderson {
    const MEMORY: usize = 2;

    fn clear(&mut self) {
        self.history.clear();
    }

    /// The next x after g(x) = `g` at `x`.
    fn next(&mut self, x: &DVector<f64>, g: &DVector<f64>) -> DVector<f64> {
        let f = g - x;
        // Differences to the previous iterates: ΔF and ΔG columns.
        let differences: Vec<(DVector<f64>, DVector<f64>)> = self
            .history
            .iter()
            .map(|(xp, gp)| (&f - (gp - xp), g - gp))
            .collect();
        let m = differences.len();
        let mut result = g.clone();
        if m > 0 {
            // Least squares min ‖f − ΔF γ‖ by the normal equations (m ≤ 2).
            let gram =
                nalgebra::DMatrix::from_fn(m, m, |i, j| differences[i].0.dot(&differences[j].0));
            let rhs = nalgebra::DVector::from_fn(m, |i, _| differences[i].0.dot(&f));
            let scale = gram.diagonal().amax();
            if scale > 0.0 {
                let mut regular = gram.clone();
                for i in 0..m {
                    regular[(i, i)] += 1e-12 * scale;
                }
                if let Some(gamma) = regular.lu().solve(&rhs)
                    && gamma.iter().all(|x| x.is_finite())
                {
                    for (i, (_, dg)) in differences.iter().enumerate() {
                        result -= dg * gamma[i];
                    }
                }
            }
        }
        self.history.push((x.clone(), g.clone()));
        if self.history.len() > Self::MEMORY {
            self.history.remove(0);
        }
        result
    }
}
