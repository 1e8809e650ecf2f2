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
//!   are taken while the step ends more than [`StepSettings::gap_tolerance`]
//!   (relative to the body size) inside.

use super::driver::{Advance, Scheme, Step};
use super::report::EndGap;
use super::settings::StepSettings;
use super::solve::{ContactProblem, ContactSolution, Failed};
use super::warm::Form;
use crate::model::{Contact, ContactId, Other};
use nalgebra::{DVector, Vector3};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeSet;
use std::time::Instant;

/// Indices of the candidates that stand in for required contacts that came
/// back under another feature (a sphere passing from a box's face to its
/// edge): for each body pair with a required contact not among `known`, the
/// pair's candidate with the smallest predicted gap. Without them the
/// iterations alternate between the two features and one ends deep inside.
fn stand_ins(
    candidates: &[Contact],
    predicted: &[f64],
    required: &BTreeSet<ContactId>,
    known: &BTreeSet<ContactId>,
) -> BTreeSet<usize> {
    let vanished: BTreeSet<(usize, Other)> = required
        .iter()
        .filter(|id| !known.contains(id))
        .map(|id| (id.a, id.b))
        .collect();
    let mut nearest: HashMap<(usize, Other), (usize, f64)> = HashMap::default();
    for (i, (c, &gap)) in candidates.iter().zip(predicted).enumerate() {
        let pair = (c.id.a, c.id.b);
        if vanished.contains(&pair) {
            let best = nearest.entry(pair).or_insert((i, gap));
            if gap < best.1 {
                *best = (i, gap);
            }
        }
    }
    nearest.values().map(|&(i, _)| i).collect()
}

/// The Stewart–Trinkle scheme (its memory, the active set and the warm
/// start, is the driver's).
#[derive(Debug, Clone, Copy, Default)]
pub struct StewartTrinkle;

/// One iterate of §3.6: the solve, vˡ⁺¹, qˡ⁺¹, the contacts solved for, the
/// deepest gap at qˡ⁺¹ and the gaps there within the margin.
struct Iterate {
    solved: ContactSolution,
    q: DVector<f64>,
    contacts: Vec<Contact>,
    deepest: f64,
    after: Vec<(ContactId, f64)>,
}

impl Scheme for StewartTrinkle {
    fn advance(&self, step: &mut Step<'_>) -> Result<Advance, Failed> {
        let (model, params, state, settings) = (step.model, step.params, step.state, step.settings);
        let h = params.dt;
        // Force at the midpoint qˡ + h vˡ/2 (eq. (25)).
        let q_mid = model.integrate(&state.q, &state.v, 0.5 * h);
        let force = model.forces(&q_mid, &state.v, state.t + 0.5 * h, params);
        let free = &state.v + model.apply_mass_inverse(&force) * h;
        let margin = settings.contact_margin(model, &state.v, h);

        let start_contacts = step.contacts(&state.q, margin);
        let start_gaps = StartGaps::new(&start_contacts);
        let mut q_hat = model.integrate(&state.q, &state.v, h);
        let mut v_hat = state.v.clone();
        let mut result = None;
        let mut best: Option<Iterate> = None;
        let mut previous_deepest = f64::NEG_INFINITY;
        let mut anderson = Anderson::default();
        let asked = params.ncp_iterations.max(1);
        // The contacts every iteration must keep: the previous step's active set,
        // then every contact an earlier iteration had to include. Without the
        // memory, a contact that one iteration resolved is no longer violated at
        // the next q̂, drops out, and is violated again: the iterations oscillate.
        let mut required = step.active.clone();
        let length = model.length_scale();
        for iteration in 0..asked.max(settings.gap_iterations) {
            let found = step.contacts(&q_hat, margin);
            let clock = Instant::now();
            // f(q̂): which contacts the prediction violates.
            let mut predicted: Vec<f64> = found.iter().map(|c| c.gap).collect();
            let at_prediction: BTreeSet<ContactId> = found.iter().map(|c| c.id).collect();
            let mut candidates: Vec<Contact> = found
                .into_iter()
                .map(|c| secant_contact(c, &start_gaps, &v_hat, h, length, settings))
                .collect();
            // The contacts of qˡ that q̂ no longer shows, linearized at qˡ
            // (f(qˡ) + h nᵀvˡ⁺¹ ≥ 0, γ = f(qˡ)/h ≥ 0 as the energy bound
            // needs). Two boxes that approach corner to face can report, at
            // q̂, only an edge–edge contact (the separating axis switched as
            // they overlapped); without the corner the LCP lets them sink
            // millimetres into each other. A contact that q̂ shows under
            // another feature id (exactly aligned boxes, whose coinciding
            // corners parry names either way) is not added twice.
            for c in &start_contacts {
                if !at_prediction.contains(&c.id) && !shown_elsewhere(c, &candidates, length) {
                    predicted.push(c.gap + h * c.jacobian.normal_dot(&v_hat));
                    candidates.push(c.clone());
                }
            }
            step.timings.geometry += clock.elapsed();
            let known: BTreeSet<ContactId> = candidates.iter().map(|c| c.id).collect();
            // The rounds below add only known contacts to `required`, so the
            // stand-ins for vanished ones are fixed for this iteration.
            let stand_ins = stand_ins(&candidates, &predicted, &required, &known);
            for round in 0..settings.active_set_rounds.max(1) {
                let selected: Vec<&Contact> = candidates
                    .iter()
                    .zip(&predicted)
                    .enumerate()
                    .filter(|(i, (c, gap))| {
                        **gap <= 0.0 || required.contains(&c.id) || stand_ins.contains(i)
                    })
                    .map(|(_, (c, _))| c)
                    .collect();
                let solved = solve(step, &selected, &free).solved()?;
                let q_new = model.integrate(&state.q, &solved.velocity, h);
                // Contacts violated at qˡ⁺¹ that were left out join and we solve again.
                // The gaps at qˡ⁺¹ within the margin: the violated ones here,
                // all of them for the report if this iterate is kept.
                let after = step.gaps(&q_new, margin);
                let chosen: BTreeSet<ContactId> = selected.iter().map(|c| c.id).collect();
                let missing: Vec<ContactId> = after
                    .iter()
                    .filter(|(id, gap)| *gap < 0.0 && !chosen.contains(id) && known.contains(id))
                    .map(|(id, _)| *id)
                    .collect();
                let deepest = after.iter().map(|(_, gap)| *gap).fold(0.0, f64::min);
                let done = missing.is_empty() || round + 1 >= settings.active_set_rounds;
                required.extend(missing);
                if done {
                    required.extend(chosen);
                    result = Some(Iterate {
                        solved,
                        q: q_new,
                        contacts: selected.iter().map(|&c| c.clone()).collect(),
                        deepest,
                        after,
                    });
                    break;
                }
            }
            let Some(latest) = result.take() else {
                continue;
            };
            let deepest = latest.deepest;
            let converged = deepest >= -settings.gap_tolerance * model.length_scale();
            // The next point of linearization. The iteration v̂ ↦ vˡ⁺¹(v̂)
            // converges linearly (ratio 0.6 on a pile's box corners), so it is
            // extrapolated by Anderson acceleration over the last iterates;
            // when the end gap got worse than the iteration before (the
            // secants of a strongly curved gap, such as two nearly parallel
            // box edges, alternate between two states), the midpoint of v̂ and
            // vˡ⁺¹ is taken instead and the history dropped.
            let next = if deepest < previous_deepest {
                anderson.clear();
                (&v_hat + &latest.solved.velocity) * 0.5
            } else {
                anderson.next(&v_hat, &latest.solved.velocity)
            };
            previous_deepest = deepest;
            // Every iterate keeps the energy bound (γ = f(qˡ)/h ≥ 0 with the
            // impulse along its own secant), so the least penetrating one is
            // kept.
            if best.as_ref().is_none_or(|b| deepest > b.deepest) || converged {
                best = Some(latest);
            }
            if iteration + 1 >= asked && converged {
                break;
            }
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
        let active = best
            .contacts
            .iter()
            .enumerate()
            .filter(|(j, _)| {
                let normal = solved.normal_index(*j);
                solved.z[normal] > impulse_zero || solved.w[normal] <= zero * velocity_scale
            })
            .map(|(_, c)| c.id)
            .collect();
        Ok(Advance {
            q: best.q,
            v: solved.velocity.clone(),
            contacts: best.contacts,
            solution: solved,
            velocity_scale,
            end_gaps: best.after,
            missing: EndGap::Predicted { lead: h },
            active,
        })
    }
}

/// Builds and solves (29) for the selected contacts.
fn solve(step: &mut Step<'_>, selected: &[&Contact], free: &DVector<f64>) -> ContactSolution {
    let h = step.params.dt;
    // `secant_contact` left each contact's gap at the start of the step.
    let gap_terms: Vec<f64> = selected.iter().map(|c| c.gap / h).collect();
    // Dependent normals can also make the gaps of contacts that start
    // inside inconsistent (LCP(N, 0) has solutions with zᵀb < 0, and
    // Lemke's guarantee, CPS Thm. 4.4.12 and §3.2, is lost); the fallback
    // asks those contacts only not to close further.
    let clamped: Vec<f64> = gap_terms.iter().map(|g| g.max(0.0)).collect();
    let mu = vec![step.params.mu; selected.len()];
    let problem = ContactProblem {
        contacts: selected,
        map: step.mass_inverse(),
        dof: step.model.dof(),
        free,
        normal_terms: &gap_terms,
        friction_terms: &[],
        relaxed_normal_terms: Some(&clamped),
        mu: &mu,
        activation: None,
    };
    step.solve(&problem, Form::Position)
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
    mut contact: Contact,
    start_gaps: &StartGaps,
    v_hat: &DVector<f64>,
    h: f64,
    length: f64,
    settings: &StepSettings,
) -> Contact {
    let slope = contact.jacobian.normal_dot(v_hat);
    let Some(start) = start_gaps.of(&contact) else {
        // A contact that came within the margin during the step: the paper's
        // linearization, held at γ ≥ 0 so that it cannot add energy.
        contact.gap = (contact.gap - h * slope).max(0.0);
        return contact;
    };
    let blocks: Vec<_> = contact.jacobian.blocks().to_vec();
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
        for b in &blocks {
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
    contact
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
struct StartGaps {
    by_id: HashMap<ContactId, f64>,
    by_pair: HashMap<(usize, Other), PointGaps>,
}

/// Contact points (world, m) with their gaps (m).
type PointGaps = Vec<(Vector3<f64>, f64)>;

impl StartGaps {
    fn new(contacts: &[Contact]) -> Self {
        let mut by_id = HashMap::default();
        let mut by_pair: HashMap<(usize, Other), PointGaps> = HashMap::default();
        for c in contacts {
            by_id.insert(c.id, c.gap);
            if let Some(frame) = &c.frame {
                by_pair
                    .entry((c.id.a, c.id.b))
                    .or_default()
                    .push((frame.point, c.gap));
            }
        }
        Self { by_id, by_pair }
    }

    /// f(qˡ) of the contact, if the same contact was there at qˡ.
    fn of(&self, contact: &Contact) -> Option<f64> {
        if let Some(&gap) = self.by_id.get(&contact.id) {
            return Some(gap);
        }
        let point = contact.frame.as_ref()?.point;
        self.by_pair
            .get(&(contact.id.a, contact.id.b))?
            .iter()
            .min_by(|x, y| (x.0 - point).norm().total_cmp(&(y.0 - point).norm()))
            .map(|&(_, gap)| gap)
    }
}

/// Anderson acceleration of a fixed-point iteration x ↦ g(x) (Walker & Ni,
/// SIAM J. Numer. Anal. 49, 2011) with a memory of two: the next x is the
/// combination of the last g's whose residuals g − x combine to the
/// smallest one. For a linearly converging iteration this removes the
/// dominant error component in one step.
#[derive(Default)]
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
