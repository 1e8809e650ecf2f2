//! The Anitescu–Potra (2002) linearly implicit time-stepping scheme for stiff
//! multibody dynamics with contact and friction, and the semi-implicit Euler
//! LCP (7) it extends (the same step with every force explicit).
//!
//! One step from (qˡ, vˡ):
//! - the mixed LCP (12)–(16): M̂ vˡ⁺¹ − ν c_ν − Σ (n c_n + D β) = M vˡ + h k̂,
//!   νᵀ vˡ⁺¹ = 0 for the joints (13), and for the active contacts nᵀ vˡ⁺¹ ≥ 0 ⊥
//!   c_n ≥ 0 (14) with the friction rows (15)–(16). M̂ (32) holds M, h K_c (the
//!   gyroscopic term, §2.3.5), h δ ∇ψ∇ψᵀ and h² γ ∇φ∇φᵀ; k̂ (33) the springs'
//!   γ φ ∇φ and the non-stiff force k₁. The Euler LCP (7) has M̂ = M and k̂ = k.
//! - x = vˡ⁺¹ and y = c_ν are eliminated as in Theorem 2.1: with
//!   W = M̂⁻¹ − M̂⁻¹ν (νᵀM̂⁻¹ν)⁻¹ νᵀM̂⁻¹ the velocity is vˡ⁺¹ = W(M vˡ + h k̂ + J z),
//!   leaving the LCP (24) in z = (β̃, c̃_n, λ̃) with G = JᵀWJ — the layout of
//!   [`super::assembly`] with W in place of M⁻¹.
//! - active set (§3): contacts touching at qˡ plus those active before; a
//!   contact leaves when its normal velocity is positive after the solve. A
//!   contact that closes within the step is a collision: the collision time is
//!   found on its gap (regula falsi), the shorter step is solved again for the
//!   velocity v⁻ that reaches it, the same LCP is solved there with h = 0
//!   (inelastic impact) and the rest of the step is taken from there. The LCP
//!   is equilibrated (diagonal scaling) before Lemke, for mass ratios like
//!   Fig. 6's 1 : 10⁸, and solved part by part: contacts that share no body
//!   and no coupling through W form LCPs of their own.
//! - projection (§2.3.4, [`super::projection`]): the joints, the penetrating
//!   active contacts and those carrying an impulse are projected back onto
//!   Θ = 0, Φ = 0 in the metric of M (positions only; the velocity is kept).

use super::StepTimings;
use super::assembly::Layout;
use super::driver::{ActiveSet, Advance, Scheme, Step};
use super::projection::project;
use super::report::EndGap;
use super::settings::StepSettings;
use super::solve::{ContactProblem, ContactSolution, ContactSolver, Failed};
use super::warm::Form;
use crate::lcp::LcpStatus;
use crate::model::{Contact, ContactId, MassInverse, Model, State};
use crate::params::Params;
use nalgebra::{DMatrix, DVector};
use std::collections::BTreeSet;
use std::time::Instant;

/// The scheme: linearly implicit (12)–(16) with (32)–(33), or the Euler LCP
/// (7) with every force explicit. Its memory, the active set, is the
/// driver's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnitescuPotra {
    implicit: bool,
}

impl AnitescuPotra {
    /// The linearly implicit scheme (12)–(16) with (32)–(33).
    pub const LINEARLY_IMPLICIT: Self = Self { implicit: true };

    /// The semi-implicit Euler LCP (7): every force explicit.
    pub const EULER: Self = Self { implicit: false };
}

/// One solve of (12)–(16) and the velocity scale of its tolerances.
struct Velocity {
    solved: ContactSolution,
    /// max(|v*|, |v|, [`StepSettings::velocity_floor`]), m/s.
    scale: f64,
}

impl Scheme for AnitescuPotra {
    fn advance(&self, step: &mut Step<'_>) -> Result<Advance, Failed> {
        let (model, params, state, settings) = (step.model, step.params, step.state, step.settings);
        let h = params.dt;
        let touch = settings.touch_tolerance * model.length_scale().max(1.0);
        let margin = settings.contact_margin(model, &state.v, h);
        let (mut q, mut v, mut t) = (state.q.clone(), state.v.clone(), state.t);
        let mut remaining = h;
        let mut last: Option<(Velocity, Vec<Contact>)> = None;
        // Changed within the step by each accepted solve; the driver keeps it
        // only when the whole step is taken.
        let mut active = step.active.clone();
        for round in 0..=settings.max_collisions {
            let candidates = step.contacts(&q, margin);
            let selected: Vec<&Contact> = candidates
                .iter()
                .filter(|c| c.gap <= touch || active.contains(&c.id))
                .collect();
            let at = State {
                q: q.clone(),
                v: v.clone(),
                t,
            };
            let solved = self.velocity(step, &at, remaining, &selected)?;
            let q_new = model.integrate(&q, &solved.solved.velocity, remaining);
            let after = step.gaps(&q_new, 0.0);
            let chosen: BTreeSet<ContactId> = selected.iter().map(|c| c.id).collect();
            // Contacts that closed within the step: (gap before, gap after).
            let colliding: Vec<(ContactId, f64, f64)> = after
                .iter()
                .filter(|(id, gap)| *gap < 0.0 && !chosen.contains(id))
                .filter_map(|&(id, gap)| {
                    candidates
                        .iter()
                        .find(|k| k.id == id)
                        .map(|k| (id, k.gap, gap))
                })
                .collect();
            let selected_owned: Vec<Contact> = selected.iter().map(|&c| c.clone()).collect();
            if colliding.is_empty() || round == settings.max_collisions {
                active = still_active(&selected_owned, &solved, settings);
                active.extend(colliding.iter().map(|c| c.0));
                q = q_new;
                v = solved.solved.velocity.clone();
                t += remaining;
                last = Some((solved, selected_owned));
                break;
            }
            // The earliest collision, by linear interpolation of its gap, then
            // refined on the gap along the step's path.
            let (first, fraction) = colliding
                .iter()
                .map(|&(id, g0, g1)| (id, (g0 / (g0 - g1)).clamp(0.0, 1.0)))
                .fold((colliding[0].0, f64::INFINITY), |best, c| {
                    if c.1 < best.1 { c } else { best }
                });
            // The step is cut at the collision: the velocity v⁻ reaching it is
            // that of a step of the shorter length (the implicit forces act
            // over it), so solve again with h' = s h, twice, each time
            // refining s on the gap along the new path.
            let mut velocity = solved.solved.velocity.clone();
            let (mut dt, mut estimate) = (remaining, fraction);
            for _ in 0..2 {
                let clock = Instant::now();
                let fraction = collision_fraction(model, &q, &velocity, dt, first, estimate, touch);
                step.timings.geometry += clock.elapsed();
                if fraction >= 1.0 {
                    break;
                }
                dt *= fraction;
                estimate = 1.0;
                let at = State {
                    q: q.clone(),
                    v: v.clone(),
                    t,
                };
                let shorter = self.velocity(step, &at, dt, &selected)?;
                velocity = shorter.solved.velocity;
            }
            let q_collision = model.integrate(&q, &velocity, dt);
            let at_collision = step.contacts(&q_collision, margin);
            let impact: Vec<&Contact> = at_collision
                .iter()
                .filter(|c| c.gap <= touch || c.id == first || active.contains(&c.id))
                .collect();
            // Inelastic impact: the same LCP with h = 0 (§3).
            let at = State {
                q: q_collision.clone(),
                v: velocity.clone(),
                t: t + dt,
            };
            let impulse = self.velocity(step, &at, 0.0, &impact)?;
            let impact_owned: Vec<Contact> = impact.iter().map(|&c| c.clone()).collect();
            active = still_active(&impact_owned, &impulse, settings);
            active.insert(first);
            q = q_collision;
            v = impulse.solved.velocity.clone();
            t += dt;
            remaining -= dt;
            last = Some((impulse, impact_owned));
        }
        let Some((last, contacts)) = last else {
            unreachable!("the loop ends with an accepted step")
        };

        // Projection (§2.3.4) of the joints and the theoretically active
        // contacts (§3): those that penetrate and those that carry an impulse.
        let clock = Instant::now();
        let solved = &last.solved;
        let impulse_zero = settings.zero * solved.z.amax();
        let holding: BTreeSet<ContactId> = contacts
            .iter()
            .enumerate()
            .filter(|(j, _)| solved.z[solved.normal_index(*j)] > impulse_zero)
            .map(|(_, c)| c.id)
            .collect();
        q = project(model, params, settings, &q, &active, &holding);
        step.timings.geometry += clock.elapsed();
        let end_gaps = step.gaps(&q, margin);
        debug_assert!((t - (state.t + h)).abs() <= 1e-9 * h.max(1.0));
        Ok(Advance {
            q,
            v,
            contacts,
            solution: last.solved,
            velocity_scale: last.scale,
            end_gaps,
            missing: EndGap::Open,
            active,
        })
    }
}

impl AnitescuPotra {
    /// One solve of (12)–(16) at `state` with step `h` for the given
    /// contacts, through the step's solver.
    fn velocity(
        &self,
        step: &mut Step<'_>,
        state: &State,
        h: f64,
        contacts: &[&Contact],
    ) -> Result<Velocity, Failed> {
        let clock = Instant::now();
        let posed = pose(step, state, h, contacts.len(), self.implicit);
        step.timings.lcp_build += clock.elapsed();
        let scale = posed.scale(state, step.settings);
        let solved = match &posed.schur {
            Some(schur) => step.solve(&posed.problem(contacts, schur), Form::Mixed),
            None => step.unsolvable(posed.unsolvable(contacts)),
        };
        solved.solved().map(|solved| Velocity { solved, scale })
    }
}

/// The paper's removal rule (§3): of the contacts just solved, those whose
/// normal velocity is not positive stay active; contacts that were not in
/// the solve (out of reach) are dropped.
fn still_active(contacts: &[Contact], solved: &Velocity, settings: &StepSettings) -> ActiveSet {
    let s = &solved.solved;
    contacts
        .iter()
        .enumerate()
        .filter(|(j, _)| s.w[s.normal_index(*j)] <= settings.zero * solved.scale)
        .map(|(_, c)| c.id)
        .collect()
}

/// The mixed LCP (12)–(16) at a state, before the contact solve: W after
/// the joints' elimination (`None` when it does not exist) and v* = W(M v +
/// h k̂).
struct Posed {
    schur: Option<DMatrix<f64>>,
    free: DVector<f64>,
    dof: usize,
    mu: Vec<f64>,
    gap_terms: Vec<f64>,
}

/// Eliminates the joints of (12)–(16) at `state` with step `h`, for
/// `contacts` contacts: linearly implicit ((32)–(33)) when `implicit`, else
/// the Euler LCP (7). With h = 0 it is the inelastic impact LCP of §3.
fn pose(step: &Step<'_>, state: &State, h: f64, contacts: usize, implicit: bool) -> Posed {
    let (model, params) = (step.model, step.params);
    let dof = model.dof();
    let mass = &model.mass_matrix();
    let (q, v) = (&state.q, &state.v);
    let (m_hat, k_hat) = if h == 0.0 {
        (mass.clone(), DVector::zeros(dof))
    } else if implicit {
        let terms = model.linearly_implicit(q, v, state.t, params);
        (
            mass + terms.velocity * h + terms.position * (h * h), // (32)
            terms.k_hat,                                          // (33)
        )
    } else {
        (mass.clone(), model.forces(q, v, state.t, params)) // (7)
    };
    let rhs = mass * v + k_hat * h; // right side of (12)
    let schur = eliminate_joints(&m_hat, &model.joint_rows(q).gradients);
    let free = schur.as_ref().map_or_else(|| v.clone(), |w| w * &rhs);
    Posed {
        schur,
        free,
        dof,
        mu: vec![params.mu; contacts],
        // Active contacts are constrained at the velocity level (14): no gap term.
        gap_terms: vec![0.0; contacts],
    }
}

impl Posed {
    /// The contact problem (24) with W = `schur`.
    fn problem<'a>(
        &'a self,
        contacts: &'a [&'a Contact],
        schur: &'a DMatrix<f64>,
    ) -> ContactProblem<'a> {
        ContactProblem {
            contacts,
            map: MassInverse::Dense(schur),
            dof: self.dof,
            free: &self.free,
            normal_terms: &self.gap_terms,
            friction_terms: &[],
            relaxed_normal_terms: None,
            mu: &self.mu,
            activation: None,
        }
    }

    /// The solve of a problem whose joints cannot be eliminated.
    fn unsolvable(&self, contacts: &[&Contact]) -> ContactSolution {
        ContactSolution::failed(
            &self.free,
            Layout::of(contacts),
            LcpStatus::NumericalFailure,
            f64::NAN,
        )
    }

    /// The velocity scale of the solve's tolerances: max(|v*|, |v|, floor);
    /// 1 m/s when the problem could not be posed.
    fn scale(&self, state: &State, settings: &StepSettings) -> f64 {
        if self.schur.is_some() {
            self.free
                .amax()
                .max(state.v.amax())
                .max(settings.velocity_floor)
        } else {
            1.0
        }
    }
}

/// Solves (12)–(16) at `state` with step `h` for the given active contacts:
/// linearly implicit ((32)–(33)) when `implicit`, else the Euler LCP (7).
/// With h = 0 it is the inelastic impact LCP of §3. A solve from a cold
/// start, outside any step (Lemke time is added to `timings`); `record_lcp`
/// keeps the LCP in the solution.
#[allow(clippy::too_many_arguments)]
pub fn solve_velocity(
    model: &Model,
    params: &Params,
    state: &State,
    h: f64,
    contacts: &[&Contact],
    implicit: bool,
    record_lcp: bool,
    timings: &mut StepTimings,
) -> ContactSolution {
    let settings = StepSettings::default();
    let active = ActiveSet::new();
    let mut solver = ContactSolver::default();
    solver.keep_lcp = record_lcp;
    let mut step = Step::new(model, params, state, &settings, &active, &mut solver);
    let scheme = AnitescuPotra { implicit };
    let solved = match scheme.velocity(&mut step, state, h, contacts) {
        Ok(velocity) => velocity.solved,
        Err(failed) => *failed,
    };
    timings.lcp_build += step.timings.lcp_build;
    timings.lemke += step.timings.lemke;
    solved
}

/// W = M̂⁻¹ − M̂⁻¹ν S⁺ νᵀM̂⁻¹ with S = νᵀM̂⁻¹ν: the map from generalized impulse
/// to velocity once the joint rows (13) are eliminated (Theorem 2.1). A
/// pseudo-inverse drops dependent joint rows, as the theorem's proof does.
pub fn eliminate_joints(m_hat: &DMatrix<f64>, nu: &DMatrix<f64>) -> Option<DMatrix<f64>> {
    let inverse = m_hat.clone().lu().try_inverse()?;
    if nu.ncols() == 0 {
        return Some(inverse);
    }
    let minv_nu = &inverse * nu;
    let s_plus = super::assembly::pseudo_inverse(nu.tr_mul(&minv_nu))?;
    let nu_t_minv = nu.transpose() * &inverse;
    Some(&inverse - minv_nu * s_plus * nu_t_minv)
}

/// The fraction s ∈ [0, 1] of the step at which contact `id` closes along the
/// path q + s h v: regula falsi (Illinois) on its gap from the linear estimate,
/// so the impact is solved where the gap is zero to within `tolerance`.
fn collision_fraction(
    model: &Model,
    q: &DVector<f64>,
    v: &DVector<f64>,
    h: f64,
    id: ContactId,
    estimate: f64,
    tolerance: f64,
) -> f64 {
    let reach = model.length_scale() + h * v.amax() * model.length_scale().max(1.0);
    let gap = |s: f64| {
        model
            .gaps(&model.integrate(q, v, s * h), reach)
            .into_iter()
            .find(|c| c.0 == id)
            .map(|c| c.1)
    };
    let (Some(mut g_lo), Some(mut g_hi)) = (gap(0.0), gap(1.0)) else {
        return estimate;
    };
    if g_lo <= 0.0 || g_hi >= 0.0 {
        return estimate;
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    let mut best = estimate;
    let mut side = 0;
    for _ in 0..40 {
        let s = (lo * g_hi - hi * g_lo) / (g_hi - g_lo);
        let Some(g) = gap(s) else {
            break;
        };
        best = s;
        if g.abs() <= tolerance {
            break;
        }
        if g > 0.0 {
            lo = s;
            g_lo = g;
            if side == 1 {
                g_hi *= 0.5;
            }
            side = 1;
        } else {
            hi = s;
            g_hi = g;
            if side == -1 {
                g_lo *= 0.5;
            }
            side = -1;
        }
    }
    best
}
