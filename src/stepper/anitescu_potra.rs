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

use super::assembly::{Impulses, Layout};
use super::projection::project;
use super::report;
use super::settings::StepSettings;
use super::solve::solve_regularized;
use super::{ContactReport, StepReport, StepTimings};
use crate::lcp::{Lcp, LcpSolution, LcpStatus, LemkeOptions};
use crate::model::{Contact, ContactId, MassInverse, Model, State};
use crate::params::Params;
use nalgebra::{DMatrix, DVector};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// Collisions resolved within one step before the rest of the step is taken
/// with the remaining contacts left to the projection.
const MAX_COLLISIONS: usize = 8;

/// The stepper and its active contact set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AnitescuPotra {
    implicit: bool,
    active: BTreeSet<ContactId>,
    /// Keep each step's final LCP in the report (for `--dump-lcp`).
    pub record_lcp: bool,
    /// Tolerances.
    pub settings: StepSettings,
}

impl AnitescuPotra {
    /// The linearly implicit scheme (12)–(16) with (32)–(33).
    pub fn linearly_implicit() -> Self {
        Self {
            implicit: true,
            active: BTreeSet::new(),
            record_lcp: false,
            settings: StepSettings::default(),
        }
    }

    /// The semi-implicit Euler LCP (7): every force explicit.
    pub fn euler() -> Self {
        Self {
            implicit: false,
            ..Self::linearly_implicit()
        }
    }

    /// Forgets the active set (after a reset or a scene change).
    pub fn clear(&mut self) {
        self.active.clear();
    }

    /// Advances `state` by `params.dt`. When an LCP is not solved the state is
    /// left unchanged and the report carries the status.
    pub fn step(&mut self, model: &Model, params: &Params, state: &mut State) -> StepReport {
        let start = Instant::now();
        let mut timings = StepTimings::default();
        let h = params.dt;
        let touch = touch_tolerance(model);
        let margin = self.settings.contact_margin(model, &state.v, h);
        let (mut q, mut v, mut t) = (state.q.clone(), state.v.clone(), state.t);
        let mut remaining = h;
        let (mut pivots, mut solves) = (0, 0);
        let mut last: Option<(VelocityStep, Vec<Contact>)> = None;
        let active_before = self.active.clone();
        for round in 0..=MAX_COLLISIONS {
            let clock = Instant::now();
            let candidates = model.contacts(&q, params.edges, margin);
            timings.geometry += clock.elapsed();
            let selected: Vec<&Contact> = candidates
                .iter()
                .filter(|c| c.gap <= touch || self.active.contains(&c.id))
                .collect();
            let solved = solve_velocity(
                model,
                params,
                &State {
                    q: q.clone(),
                    v: v.clone(),
                    t,
                },
                remaining,
                &selected,
                self.implicit,
                self.record_lcp,
                &mut timings,
            );
            pivots += solved.pivots;
            solves += 1;
            if solved.status != LcpStatus::Solved {
                self.active = active_before;
                return self.failed(
                    model, params, state, &solved, pivots, solves, timings, start,
                );
            }
            let q_new = model.integrate(&q, &solved.velocity, remaining);
            let clock = Instant::now();
            let after = model.contacts(&q_new, params.edges, 0.0);
            timings.geometry += clock.elapsed();
            let chosen: BTreeSet<ContactId> = selected.iter().map(|c| c.id).collect();
            // Contacts that closed within the step: (gap before, gap after).
            let colliding: Vec<(ContactId, f64, f64)> = after
                .iter()
                .filter(|c| c.gap < 0.0 && !chosen.contains(&c.id))
                .filter_map(|c| {
                    candidates
                        .iter()
                        .find(|k| k.id == c.id)
                        .map(|k| (c.id, k.gap, c.gap))
                })
                .collect();
            let selected_owned: Vec<Contact> = selected.iter().map(|&c| c.clone()).collect();
            if colliding.is_empty() || round == MAX_COLLISIONS {
                self.update_active(&selected_owned, &solved);
                self.active.extend(colliding.iter().map(|c| c.0));
                q = q_new;
                v = solved.velocity.clone();
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
            let mut velocity = solved.velocity.clone();
            let (mut dt, mut estimate) = (remaining, fraction);
            for _ in 0..2 {
                let clock = Instant::now();
                let fraction =
                    collision_fraction(model, params, &q, &velocity, dt, first, estimate, touch);
                timings.geometry += clock.elapsed();
                if fraction >= 1.0 {
                    break;
                }
                dt *= fraction;
                estimate = 1.0;
                let shorter = solve_velocity(
                    model,
                    params,
                    &State {
                        q: q.clone(),
                        v: v.clone(),
                        t,
                    },
                    dt,
                    &selected,
                    self.implicit,
                    self.record_lcp,
                    &mut timings,
                );
                pivots += shorter.pivots;
                solves += 1;
                if shorter.status != LcpStatus::Solved {
                    self.active = active_before;
                    return self.failed(
                        model, params, state, &shorter, pivots, solves, timings, start,
                    );
                }
                velocity = shorter.velocity;
            }
            let q_collision = model.integrate(&q, &velocity, dt);
            let clock = Instant::now();
            let at_collision = model.contacts(&q_collision, params.edges, margin);
            timings.geometry += clock.elapsed();
            let impact: Vec<&Contact> = at_collision
                .iter()
                .filter(|c| c.gap <= touch || c.id == first || self.active.contains(&c.id))
                .collect();
            // Inelastic impact: the same LCP with h = 0 (§3).
            let impulse = solve_velocity(
                model,
                params,
                &State {
                    q: q_collision.clone(),
                    v: velocity.clone(),
                    t: t + dt,
                },
                0.0,
                &impact,
                self.implicit,
                self.record_lcp,
                &mut timings,
            );
            pivots += impulse.pivots;
            solves += 1;
            if impulse.status != LcpStatus::Solved {
                self.active = active_before;
                return self.failed(
                    model, params, state, &impulse, pivots, solves, timings, start,
                );
            }
            let impact_owned: Vec<Contact> = impact.iter().map(|&c| c.clone()).collect();
            self.update_active(&impact_owned, &impulse);
            self.active.insert(first);
            q = q_collision;
            v = impulse.velocity.clone();
            t += dt;
            remaining -= dt;
            last = Some((impulse, impact_owned));
        }
        let Some((solved, selected)) = last else {
            unreachable!("the loop ends with an accepted step")
        };

        // Projection (§2.3.4) of the joints and the theoretically active
        // contacts (§3): those that penetrate and those that carry an impulse.
        let clock = Instant::now();
        let impulse_tol = self.settings.zero * solved.z.amax();
        let holding: BTreeSet<ContactId> = selected
            .iter()
            .enumerate()
            .filter(|(j, _)| solved.z[solved.layout.normal(*j)] > impulse_tol)
            .map(|(_, c)| c.id)
            .collect();
        q = project(model, params, &q, &self.active, &holding);
        let after = model.contacts(&q, params.edges, margin);
        timings.geometry += clock.elapsed();
        let min_gap = after.iter().map(|c| c.gap).fold(f64::INFINITY, f64::min);
        let reports = contact_reports(&selected, &solved, &after, &self.settings);
        state.q = q;
        state.v = v;
        state.t += h;
        debug_assert!((t - state.t).abs() <= 1e-9 * h.max(1.0));
        let (kinetic, potential) = model.energy(&state.q, &state.v, params);
        timings.total = start.elapsed();
        StepReport {
            t: state.t,
            contacts: reports,
            lcp_size: solved.layout.size(),
            largest_island: solved.layout.size(),
            pivots,
            solves,
            sweeps: 0,
            status: LcpStatus::Solved,
            residual: solved.residual,
            kinetic_energy: kinetic,
            potential_energy: potential,
            min_gap,
            timings,
            lcp: solved.lcp,
        }
    }

    /// The paper's removal rule (§3): of the contacts just solved, those whose
    /// normal velocity is not positive stay active; contacts that were not in
    /// the solve (out of reach) are dropped.
    fn update_active(&mut self, contacts: &[Contact], solved: &VelocityStep) {
        self.active = contacts
            .iter()
            .enumerate()
            .filter(|(j, _)| {
                solved.w[solved.layout.normal(*j)] <= self.settings.zero * solved.velocity_scale
            })
            .map(|(_, c)| c.id)
            .collect();
    }

    #[allow(clippy::too_many_arguments)]
    fn failed(
        &mut self,
        model: &Model,
        params: &Params,
        state: &State,
        solved: &VelocityStep,
        pivots: usize,
        solves: usize,
        timings: StepTimings,
        start: Instant,
    ) -> StepReport {
        let failed = report::Failure {
            status: solved.status,
            residual: solved.residual,
            lcp_size: solved.layout.size(),
            pivots,
            solves,
            sweeps: 0,
            lcp: solved.lcp.clone(),
        };
        report::failure(model, params, state, failed, timings, start)
    }
}

/// What one solve of the mixed LCP (12)–(16) gave.
#[derive(Debug, Clone)]
pub struct VelocityStep {
    /// vˡ⁺¹ (or v⁺ of an impact when h = 0).
    pub velocity: DVector<f64>,
    /// How Lemke ended.
    pub status: LcpStatus,
    /// Relative complementarity residual.
    pub residual: f64,
    /// Lemke pivots.
    pub pivots: usize,
    /// The LCP's block layout.
    pub layout: Layout,
    /// z = (β̃, c̃_n, λ̃), impulses in N·s.
    pub z: DVector<f64>,
    /// w = (σ̃, ρ̃, ζ̃).
    pub w: DVector<f64>,
    /// A velocity scale for tolerances, m/s.
    pub velocity_scale: f64,
    /// The LCP, when asked for.
    pub lcp: Option<Lcp>,
}

/// Solves (12)–(16) at `state` with step `h` for the given active contacts:
/// linearly implicit ((32)–(33)) when `implicit`, else the Euler LCP (7).
/// With h = 0 it is the inelastic impact LCP of §3.
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
) -> VelocityStep {
    let clock = Instant::now();
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
    let layout = Layout::of(contacts);
    let failure = |status: LcpStatus| VelocityStep {
        velocity: v.clone(),
        status,
        residual: f64::NAN,
        pivots: 0,
        layout,
        z: DVector::zeros(layout.size()),
        w: DVector::zeros(layout.size()),
        velocity_scale: 1.0,
        lcp: None,
    };
    let Some(schur) = eliminate_joints(&m_hat, &model.joint_rows(q).gradients) else {
        return failure(LcpStatus::NumericalFailure);
    };
    let free = &schur * &rhs;
    let impulses = Impulses::new(contacts, MassInverse::Dense(&schur), dof);
    let mu = vec![params.mu; contacts.len()];
    // Active contacts are constrained at the velocity level (14): no gap term.
    let gap_terms = vec![0.0; contacts.len()];
    let problem = impulses.lcp(&free, &gap_terms, &mu);
    // Bodies of very different masses (Fig. 6: 1 and 1e8 kg) give rows of
    // JᵀWJ that differ by the mass ratio; Lemke's tolerances need them
    // equilibrated. With D = diag(1/√Gᵢᵢ) on (β̃, c̃_n) and √G_nn on λ̃, LCP(DGD, Dq)
    // has the solutions D⁻¹z and keeps the structure Theorem 2.2 relies on.
    let scaling = equilibration(&problem, layout, contacts);
    let scaled = Lcp {
        m: DMatrix::from_fn(problem.m.nrows(), problem.m.ncols(), |i, j| {
            scaling[i] * problem.m[(i, j)] * scaling[j]
        }),
        q: problem.q.component_mul(&scaling),
    };
    timings.lcp_build += clock.elapsed();

    let clock = Instant::now();
    // Theorem 2.2 guarantees a solution; dependent normals (a box on four
    // corners, or rigidly linked bodies in the stiff limit) make bases nearly
    // singular, and the shared regularization of the scaled JᵀWJ separates
    // the dependent rows, as in the Stewart–Trinkle stepper.
    let blocks = layout.friction + layout.contacts;
    let mut solution = solve_by_islands(&scaled, blocks);
    solution.z.component_mul_assign(&scaling);
    solution.w.component_div_assign(&scaling);
    timings.lemke += clock.elapsed();
    let velocity = &free + impulses.velocity_change(&solution.z);
    VelocityStep {
        velocity,
        status: solution.status,
        residual: solution.residual,
        pivots: solution.pivots,
        layout,
        z: solution.z,
        w: solution.w,
        velocity_scale: free.amax().max(v.amax()).max(1e-3),
        lcp: record_lcp.then_some(problem),
    }
}

/// Lemke, with the regularization ladder, on each independent part of
/// `problem`: the connected components of its matrix's nonzero pattern, i.e.
/// groups of contacts that share no body and are not coupled through W (a
/// damper or a joint between their bodies puts entries there and joins
/// them). Each part is an LCP (24) of its own with the same structure, and
/// the solutions together solve the whole. A pile's 170-unknown LCP,
/// degenerate as a whole (boxes on several corners; Lemke's lexicographic
/// order is lost to rounding and it ends on a ray at step 43 of
/// `pile.ron`), falls into parts of 10–40 unknowns solved in 0–16 pivots.
/// The first `blocks` unknowns (β̃, c̃_n) take the regularization.
fn solve_by_islands(problem: &Lcp, blocks: usize) -> LcpSolution {
    let n = problem.size();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for i in 0..n {
        for j in (i + 1)..n {
            if problem.m[(i, j)] != 0.0 || problem.m[(j, i)] != 0.0 {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a] = b;
            }
        }
    }
    let mut parts: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..n {
        parts.entry(root(&mut parent, i)).or_default().push(i);
    }
    let mut whole = LcpSolution {
        z: DVector::zeros(n),
        w: problem.q.clone(),
        status: LcpStatus::Solved,
        pivots: 0,
        residual: 0.0,
        basis: Vec::new(),
        warm_started: false,
    };
    // Ascending indices keep each part's (β̃, c̃_n) rows ahead of its λ̃ rows.
    for index in parts.into_values() {
        let part = Lcp {
            m: DMatrix::from_fn(index.len(), index.len(), |a, b| {
                problem.m[(index[a], index[b])]
            }),
            q: DVector::from_fn(index.len(), |a, _| problem.q[index[a]]),
        };
        let part_blocks = index.iter().filter(|&&i| i < blocks).count();
        let solved = solve_regularized(
            &part,
            None,
            part_blocks,
            &LemkeOptions::default(),
            &StepSettings::default(),
            0,
        )
        .solution;
        for (a, &i) in index.iter().enumerate() {
            whole.z[i] = solved.z[a];
            whole.w[i] = solved.w[a];
        }
        whole.basis.extend(solved.basis.iter().map(|&a| index[a]));
        whole.pivots += solved.pivots;
        whole.residual = whole.residual.max(solved.residual);
        if solved.status != LcpStatus::Solved {
            whole.status = solved.status;
            break;
        }
    }
    whole
}

/// The diagonal scaling of the LCP: 1/√Gᵢᵢ on the β̃ and c̃_n rows, √G_nn of
/// the contact on its λ row (so μ̃ keeps its value).
fn equilibration(problem: &Lcp, layout: Layout, contacts: &[&Contact]) -> DVector<f64> {
    let size = layout.size();
    let scale = problem.m.diagonal().amax().max(f64::MIN_POSITIVE);
    let diagonal = |i: usize| problem.m[(i, i)].max(1e-14 * scale);
    let mut d = DVector::from_element(size, 1.0);
    for i in 0..layout.friction + layout.contacts {
        d[i] = 1.0 / diagonal(i).sqrt();
    }
    for j in 0..contacts.len() {
        d[layout.lambda(j)] = diagonal(layout.normal(j)).sqrt();
    }
    d
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
#[allow(clippy::too_many_arguments)]
fn collision_fraction(
    model: &Model,
    params: &Params,
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
            .contacts(&model.integrate(q, v, s * h), params.edges, reach)
            .into_iter()
            .find(|c| c.id == id)
            .map(|c| c.gap)
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

/// Contacts with a gap below this join the active set at the start of a step.
fn touch_tolerance(model: &Model) -> f64 {
    1e-9 * model.length_scale().max(1.0)
}

/// The per-contact reports of the final solve.
fn contact_reports(
    selected: &[Contact],
    solved: &VelocityStep,
    after: &[Contact],
    settings: &StepSettings,
) -> Vec<ContactReport> {
    let layout = solved.layout;
    let impulse_tol = settings.zero * solved.z.amax();
    let mut column = 0;
    selected
        .iter()
        .enumerate()
        .map(|(j, contact)| {
            let k = contact.jacobian.friction_count();
            let beta: Vec<f64> = solved.z.rows(column, k).iter().copied().collect();
            column += k;
            let c_n = solved.z[layout.normal(j)];
            let lambda = solved.z[layout.lambda(j)];
            let state = report::contact_state(
                c_n,
                impulse_tol,
                lambda,
                settings.zero * solved.velocity_scale,
            );
            let (friction_impulse, tangential_impulse) = report::friction_impulse(contact, &beta);
            let gap = after
                .iter()
                .find(|c| c.id == contact.id)
                .map_or(f64::INFINITY, |c| c.gap);
            ContactReport {
                id: contact.id,
                gap,
                normal_impulse: c_n,
                friction_impulse,
                tangential_impulse,
                state,
                frame: contact.frame.clone(),
            }
        })
        .collect()
}
