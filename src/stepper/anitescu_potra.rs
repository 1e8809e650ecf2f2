//! The Anitescu–Potra (2002) linearly implicit time-stepping scheme for stiff
//! multibody dynamics with contact and friction, and the semi-implicit Euler
//! LCP (7) it extends (the same step with every force explicit).
//!
//! One step from (qˡ, vˡ):
//! - the mixed LCP (12)–(16): M̂ vˡ⁺¹ − ν c_ν − Σ (n c_n + D β) = M vˡ + h k̂,
//!   νᵀ vˡ⁺¹ = 0 for the joints (13), and for the active contacts nᵀ vˡ⁺¹ ≥ 0 ⊥
//!   c_n ≥ 0 (14) with the friction rows (15)–(16). M̂ (32) holds M,
//!   h δ ∇ψ∇ψᵀ and h² γ ∇φ∇φᵀ; k̂ (33) the springs' γ φ ∇φ, the non-stiff
//!   force k₁ and the gyroscopic term as its mean over the step under the
//!   implicit midpoint rule (`Model::linearly_implicit`), which keeps a free
//!   body's energy where the linearized K_c of §2.3.5 loses it. The Euler LCP
//!   (7) has M̂ = M and k̂ = k over the step (`Model::forces_over_step`).
//! - x = vˡ⁺¹ and y = c_ν are eliminated as in Theorem 2.1: with
//!   W = M̂⁻¹ − M̂⁻¹ν (νᵀM̂⁻¹ν)⁻¹ νᵀM̂⁻¹ the velocity is vˡ⁺¹ = W(M vˡ + h k̂ + J z),
//!   leaving the LCP (24) in z = (β̃, c̃_n, λ̃) with G = JᵀWJ — the layout of
//!   [`crate::solver::lemke::assembly`] with W in place of M⁻¹.
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
use super::projection::project;
use super::report::EndGap;
use super::scheme::{Advance, Scheme};
use super::settings::StepSettings;
use super::step::ActiveSet;
use super::step::{Detached, Solver, Step};
use crate::collision::{self, ContactSet};
use crate::lcp::LcpStatus;
use crate::model::{BlockInverse, Component, Contact, ContactId, MassInverse, Model, State};
use crate::params::Params;
use crate::solver::{ContactProblem, ContactSolution, Failed, Form, Layout, SolverOptions};
use nalgebra::{DMatrix, DVector, Vector3};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

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
    /// max(|v*|, |v|, [`crate::solver::LemkeSettings::velocity_floor`]), m/s.
    scale: f64,
}

/// The buffers of a step, kept between steps.
#[derive(Debug, Clone, Default)]
struct Scratch {
    /// The contacts at the start of each round.
    candidates: ContactSet,
    /// The contacts at a collision.
    at_collision: ContactSet,
    /// The contacts of the last accepted solve.
    last: ContactSet,
    /// The gaps after a round.
    after: Vec<(ContactId, f64)>,
}

impl Scheme for AnitescuPotra {
    fn advance(&self, step: &mut Step<'_>) -> Result<Advance, Failed> {
        let (model, params, state, settings) = (step.model, step.params, step.state, step.settings);
        let sc = step.scratch.get::<Scratch>();
        let mut mixed = Mixed {
            model,
            params,
            settings,
            implicit: self.implicit,
            solver: &mut step.solver,
            lcp_build: &mut step.lcp_build,
        };
        let h = params.dt;
        let touch = settings.touch_distance * model.length_scale().max(1.0);
        let margin = settings.contact_margin(model, &state.v, h);
        let (mut q, mut v, mut t) = (state.q.clone(), state.v.clone(), state.t);
        let mut remaining = h;
        let mut last: Option<Velocity> = None;
        // Changed within the step by each accepted solve; the driver keeps it
        // only when the whole step is taken.
        let mut active = step.active.clone();
        for round in 0..=settings.max_collisions {
            step.geometry.contacts(&q, margin, &mut sc.candidates);
            let candidates = sc.candidates.as_slice();
            let selected: Vec<&Contact> = candidates
                .iter()
                .filter(|c| c.gap <= touch || active.contains(&c.id))
                .collect();
            let at = State {
                q: q.clone(),
                v: v.clone(),
                t,
            };
            let solved = mixed.velocity(&at, remaining, &selected)?;
            let q_new = model.integrate(&q, &solved.solved.velocity, remaining);
            step.geometry.gaps(&q_new, 0.0, &mut sc.after);
            let chosen: BTreeSet<ContactId> = selected.iter().map(|c| c.id).collect();
            // Contacts that closed within the step: (gap before, gap after).
            let mut colliding: Vec<(ContactId, f64, f64)> = sc
                .after
                .iter()
                .filter(|(id, gap)| *gap < 0.0 && !chosen.contains(id))
                .filter_map(|&(id, gap)| {
                    candidates
                        .iter()
                        .find(|k| k.id == id)
                        .map(|k| (id, k.gap, gap))
                })
                .collect();
            // And those the step passed through: open at both ends (a body
            // faster than its obstacle is thick), their linearized gap
            // crossing zero where the path finds them touching.
            let clock = Instant::now();
            let velocity = &solved.solved.velocity;
            for k in candidates {
                let through = k.gap + remaining * k.jacobian.normal_dot(velocity);
                if k.gap > touch
                    && through < 0.0
                    && !chosen.contains(&k.id)
                    && !colliding.iter().any(|c| c.0 == k.id)
                    && passes(model, &q, velocity, remaining, k, through, touch)
                {
                    colliding.push((k.id, k.gap, through));
                }
            }
            step.geometry.add_time(clock.elapsed());
            if colliding.is_empty() || round == settings.max_collisions {
                active = still_active(&selected, &solved, settings);
                active.extend(colliding.iter().map(|c| c.0));
                q = q_new;
                v = solved.solved.velocity.clone();
                t += remaining;
                sc.last.copy_from(selected.iter().copied());
                last = Some(solved);
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
                step.geometry.add_time(clock.elapsed());
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
                let shorter = mixed.velocity(&at, dt, &selected)?;
                velocity = shorter.solved.velocity;
            }
            let q_collision = model.integrate(&q, &velocity, dt);
            step.geometry
                .contacts(&q_collision, margin, &mut sc.at_collision);
            let impact: Vec<&Contact> = sc
                .at_collision
                .as_slice()
                .iter()
                .filter(|c| c.gap <= touch || c.id == first || active.contains(&c.id))
                .collect();
            // Inelastic impact: the same LCP with h = 0 (§3).
            let at = State {
                q: q_collision.clone(),
                v: velocity.clone(),
                t: t + dt,
            };
            let impulse = mixed.velocity(&at, 0.0, &impact)?;
            active = still_active(&impact, &impulse, settings);
            active.insert(first);
            q = q_collision;
            v = impulse.solved.velocity.clone();
            t += dt;
            remaining -= dt;
            sc.last.copy_from(impact.iter().copied());
            last = Some(impulse);
        }
        let Some(last) = last else {
            unreachable!("the loop ends with an accepted step")
        };

        // Projection (§2.3.4) of the joints and the theoretically active
        // contacts (§3): those that penetrate and those that carry an impulse.
        let clock = Instant::now();
        let solved = &last.solved;
        let impulse_zero = settings.zero * solved.z.amax();
        let holding: BTreeSet<ContactId> = sc
            .last
            .as_slice()
            .iter()
            .enumerate()
            .filter(|(j, _)| solved.z[solved.normal_index(*j)] > impulse_zero)
            .map(|(_, c)| c.id)
            .collect();
        q = project(model, params, settings, &q, &active, &holding);
        step.geometry.add_time(clock.elapsed());
        step.geometry.gaps(&q, margin, &mut step.buffers.end_gaps);
        std::mem::swap(&mut step.buffers.solved, &mut sc.last);
        debug_assert!((t - (state.t + h)).abs() <= 1e-9 * h.max(1.0));
        Ok(Advance {
            q,
            v,
            solution: last.solved,
            velocity_scale: last.scale,
            missing: EndGap::Open,
            active,
            gap_bound: None,
            nearest: f64::INFINITY,
        })
    }
}

/// What posing and solving (12)–(16) needs of a step.
struct Mixed<'s, 'a> {
    model: &'a Model,
    params: &'a Params,
    settings: &'a StepSettings,
    implicit: bool,
    solver: &'s mut Solver<'a>,
    lcp_build: &'s mut Duration,
}

impl Mixed<'_, '_> {
    /// One solve of (12)–(16) at `state` with step `h` for the given
    /// contacts, through the step's solver.
    fn velocity(
        &mut self,
        state: &State,
        h: f64,
        contacts: &[&Contact],
    ) -> Result<Velocity, Failed> {
        let clock = Instant::now();
        let posed = pose(
            self.model,
            self.params,
            state,
            h,
            contacts.len(),
            self.implicit,
        );
        *self.lcp_build += clock.elapsed();
        let scale = posed.scale(state, self.settings);
        let solved = match &posed.schur {
            Some(schur) => self
                .solver
                .solve(&posed.problem(contacts, schur), Form::Mixed),
            None => self.solver.unsolvable(posed.unsolvable(contacts)),
        };
        solved.solved().map(|solved| Velocity { solved, scale })
    }
}

/// The paper's removal rule (§3): of the contacts just solved, those whose
/// normal velocity is not positive stay active; contacts that were not in
/// the solve (out of reach) are dropped. A contact that carries an impulse
/// stays too: by complementarity its normal velocity is zero, and what the
/// solve reports there is rounding. Under a mass ratio of 1e11 (1 g under
/// 10⁸ kg in the plane) the heavy box's 9.8·10⁶ N·s came out with a relative
/// error of 4e-5, its contacts with the light box read 2.9e-6 m/s apart, left
/// the active set with their gap of 3e-8 m (above the touch tolerance), and
/// in the next step the heavy box fell into the light one unheld (2.2 mm,
/// then through it), every LCP solved. (Stewart–Trinkle keeps the same set.)
fn still_active(contacts: &[&Contact], solved: &Velocity, settings: &StepSettings) -> ActiveSet {
    let s = &solved.solved;
    let impulse_zero = settings.zero * s.z.amax();
    contacts
        .iter()
        .enumerate()
        .filter(|(j, _)| {
            let normal = s.normal_index(*j);
            s.z[normal] > impulse_zero || s.w[normal] <= settings.zero * solved.scale
        })
        .map(|(_, c)| c.id)
        .collect()
}

/// The mixed LCP (12)–(16) at a state, before the contact solve: W after
/// the joints' elimination (`None` when it does not exist) and v* = W(M v +
/// h k̂).
struct Posed {
    schur: Option<BlockInverse>,
    free: DVector<f64>,
    dof: usize,
    mu: Vec<f64>,
    gap_terms: Vec<f64>,
    up: Vector3<f64>,
}

/// Eliminates the joints of (12)–(16) at `state` with step `h`, for
/// `contacts` contacts: linearly implicit ((32)–(33)) when `implicit`, else
/// the Euler LCP (7). With h = 0 it is the inelastic impact LCP of §3.
fn pose(
    model: &Model,
    params: &Params,
    state: &State,
    h: f64,
    contacts: usize,
    implicit: bool,
) -> Posed {
    let dof = model.dof();
    let mass = &model.mass_matrix();
    let (q, v) = (&state.q, &state.v);
    let (m_hat, k_hat) = if h == 0.0 {
        (mass.clone(), DVector::zeros(dof))
    } else if implicit {
        let terms = model.linearly_implicit(q, v, state.t, h, params);
        (
            mass + terms.velocity * h + terms.position * (h * h), // (32)
            terms.k_hat,                                          // (33)
        )
    } else {
        (
            mass.clone(),
            model.forces_over_step(q, v, state.t, h, params),
        ) // (7)
    };
    let rhs = mass * v + k_hat * h; // right side of (12)
    let schur = block_inverse(&m_hat, &model.joint_rows(q).gradients);
    let free = match &schur {
        Some(w) => w.apply(&rhs),
        None => v.clone(),
    };
    Posed {
        schur,
        free,
        dof,
        mu: vec![params.mu; contacts],
        // Active contacts are constrained at the velocity level (14): no gap term.
        gap_terms: vec![0.0; contacts],
        up: model.up(),
    }
}

impl Posed {
    /// The contact problem (24) with W = `schur`.
    fn problem<'a>(
        &'a self,
        contacts: &'a [&'a Contact],
        schur: &'a BlockInverse,
    ) -> ContactProblem<'a> {
        ContactProblem {
            contacts,
            map: MassInverse::Blocks(schur),
            dof: self.dof,
            free: &self.free,
            normal_terms: &self.gap_terms,
            friction_terms: &[],
            relaxed_normal_terms: None,
            mu: &self.mu,
            activation: None,
            up: self.up,
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
                .max(settings.lemke.velocity_floor)
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
    let mut parts = Detached::default();
    let options = SolverOptions {
        threads: settings.threads,
        keep_lcp: record_lcp.then_some(usize::MAX),
        ..SolverOptions::lemke(settings.lemke)
    };
    let mut step = parts.step_with(model, params, state, &settings, options);
    let mut mixed = Mixed {
        model,
        params,
        settings: &settings,
        implicit,
        solver: &mut step.solver,
        lcp_build: &mut step.lcp_build,
    };
    let solved = match mixed.velocity(state, h, contacts) {
        Ok(velocity) => velocity.solved,
        Err(failed) => *failed,
    };
    timings.lcp_build += step.lcp_build;
    timings.lemke += step.solver.time();
    solved
}

/// W of Theorem 2.1 component by component ([`BlockInverse`]): M̂ and the
/// joint columns restricted to each component of their coupling pattern,
/// eliminated by [`eliminate_joints`]. `None` when a component's M̂ is
/// singular or its S⁺ does not exist, as for the whole.
pub fn block_inverse(m_hat: &DMatrix<f64>, nu: &DMatrix<f64>) -> Option<BlockInverse> {
    let groups = BlockInverse::components(m_hat, nu);
    let dof = m_hat.nrows();
    let mut group_of = vec![0; dof];
    for (g, velocities) in groups.iter().enumerate() {
        for &i in velocities {
            group_of[i] = g;
        }
    }
    // A joint column lies in one component (the components join what it
    // touches); an all-zero column constrains nothing.
    let mut columns: Vec<Vec<usize>> = vec![Vec::new(); groups.len()];
    for (c, column) in nu.column_iter().enumerate() {
        if let Some(i) = column.iter().position(|&x| x != 0.0) {
            columns[group_of[i]].push(c);
        }
    }
    let mut components = Vec::with_capacity(groups.len());
    for (velocities, cols) in groups.into_iter().zip(columns) {
        let g = velocities.len();
        let block = DMatrix::from_fn(g, g, |a, b| m_hat[(velocities[a], velocities[b])]);
        let nu_g = DMatrix::from_fn(g, cols.len(), |a, c| nu[(velocities[a], cols[c])]);
        let w = eliminate_joints(&block, &nu_g)?;
        components.push(Component { velocities, w });
    }
    Some(BlockInverse::new(dof, components))
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
    let s_plus = crate::solver::linalg::pseudo_inverse(nu.tr_mul(&minv_nu))?;
    let nu_t_minv = nu.transpose() * &inverse;
    Some(&inverse - minv_nu * s_plus * nu_t_minv)
}

/// The gap of contact `id` at q + s·h·v, if it is found there.
fn gap_along(
    model: &Model,
    q: &DVector<f64>,
    v: &DVector<f64>,
    h: f64,
    id: ContactId,
    s: f64,
) -> Option<f64> {
    let reach = model.length_scale() + h * v.amax() * model.length_scale().max(1.0);
    collision::gaps(model, &model.integrate(q, v, s * h), reach)
        .into_iter()
        .find(|c| c.0 == id)
        .map(|c| c.1)
}

/// Whether the path q + s·h·v meets `contact` (gap g₀ at s = 0, linearized
/// gap `through` < 0 at s = 1) at the linear estimate s = g₀/(g₀ − through):
/// its gap there is at most `tolerance`. A contact that turns away before it
/// closes does not; a thin obstacle passed in one step does.
fn passes(
    model: &Model,
    q: &DVector<f64>,
    v: &DVector<f64>,
    h: f64,
    contact: &Contact,
    through: f64,
    tolerance: f64,
) -> bool {
    let s = contact.gap / (contact.gap - through);
    gap_along(model, q, v, h, contact.id, s)
        .is_some_and(|gap| gap <= tolerance.max(1e-9 * contact.gap))
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
    let gap = |s: f64| gap_along(model, q, v, h, id, s);
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
