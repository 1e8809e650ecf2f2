//! The contact problem on a dense tableau: when W couples every contact (a
//! generalized linear system's M⁻¹, or Anitescu–Potra's joints' Schur
//! complement), and Moreau–Jean's planar LCP (33), which is dense in M⁻¹.
//!
//! Three ways, chosen by the [`Form`]: the whole LCP (29) with the
//! regularization ladder ([`solve_regularized`]); Anitescu–Potra's LCP (24)
//! equilibrated and split into the independent parts of its matrix, each
//! with the ladder; and (33) by Lemke alone (the scheme falls back to (29)
//! when that fails). All three start warm from the one cache
//! ([`crate::solver::warm`]), contact by contact.

use super::assembly::Impulses;
use super::islands::frictionless_basis;
use super::ladder::{Passes, ladder, proximal_passes};
use super::{contact_options, failed_solution};
use crate::lcp::{self, Lcp, LcpSolution, LcpStatus, LemkeOptions};
use crate::model::ContactId;
use crate::solver::ContactSolver;
use crate::solver::options::{LemkeSettings, SolverOptions};
use crate::solver::planar_impact::PlanarImpactLcp;
use crate::solver::problem::{ContactProblem, Layout};
use crate::solver::solution::{ContactSolution, Unknowns};
use crate::solver::warm::{Form, Slots, normals_only};
use nalgebra::{DMatrix, DVector};

/// Lemke on an assembled LCP. A rejected warm start is retried cold; a
/// rejected problem (non-finite data from a diverging state) is a numerical
/// failure of the step, never a panic.
pub fn solve_or_fail(problem: &Lcp, options: &LemkeOptions) -> LcpSolution {
    let cold = || LemkeOptions {
        warm_start: None,
        warm_fallback: None,
        ..options.clone()
    };
    lcp::solve(problem, options)
        .or_else(|_| lcp::solve(problem, &cold()))
        .unwrap_or_else(|_| failed_solution(problem.size()))
}

/// The whole LCP (29) of `problem`, assembled through `impulses`, with the
/// scheme's friction terms added to the β̃ rows.
pub(super) fn whole_lcp(problem: &ContactProblem<'_>, impulses: &Impulses<'_>) -> Lcp {
    let mut lcp = impulses.lcp(problem.free, problem.normal_terms, problem.mu);
    let nb = impulses.layout.friction;
    for (i, term) in problem.friction_terms.iter().enumerate().take(nb) {
        lcp.q[i] += term;
    }
    lcp
}

/// The LCP (29) over the contacts of `problem` that took part in a solve
/// (`active[j]`, in their order; all of them when `None`): what NSGS solved,
/// kept for `--dump-lcp` and for comparing it with Lemke on the same LCP.
pub(in crate::solver) fn taking_part_lcp(
    problem: &ContactProblem<'_>,
    active: Option<&[bool]>,
) -> Lcp {
    let mut contacts = Vec::new();
    let (mut normal_terms, mut friction_terms, mut mu) = (Vec::new(), Vec::new(), Vec::new());
    let mut first = 0;
    for (j, c) in problem.contacts.iter().enumerate() {
        let k = c.jacobian.friction_count();
        if active.is_none_or(|a| a[j]) {
            contacts.push(*c);
            normal_terms.push(problem.normal_terms[j]);
            mu.push(problem.mu[j]);
            if let Some(terms) = problem.friction_terms.get(first..first + k) {
                friction_terms.extend_from_slice(terms);
            }
        }
        first += k;
    }
    let taking_part = ContactProblem {
        contacts: &contacts,
        map: problem.map,
        dof: problem.dof,
        free: problem.free,
        normal_terms: &normal_terms,
        friction_terms: &friction_terms,
        relaxed_normal_terms: None,
        mu: &mu,
        activation: None,
        up: problem.up,
    };
    whole_lcp(
        &taking_part,
        &Impulses::new(&contacts, problem.map, problem.dof),
    )
}

/// How a [`solve_regularized`] call ended: the solution, the LCP it solves
/// when a fallback produced it, and the ladder level that solved it (0: the
/// problem itself; i: the i-th regularization), to start the next step at.
pub struct Regularized {
    /// Lemke's result (pivots count every attempt).
    pub solution: LcpSolution,
    /// The regularized LCP the solution solves, when it is not `problem`.
    pub fallback: Option<Lcp>,
    /// The level that solved it (or the last one tried).
    pub level: usize,
}

/// Lemke on `problem` and, while it is not solved, on `relaxed` (the same LCP
/// with the scheme's own relaxation, or `problem` again) with a compliance of
/// each [`LemkeSettings::regularization`] times the largest diagonal entry
/// added to the first `blocks` diagonal entries (those of JᵀM⁻¹J).
///
/// Dependent normals (a box held by more contacts than it has freedoms) make
/// the tableau's bases nearly singular; the compliance, far below anything
/// visible, separates the dependent rows. A settled pile of boxes needs it on
/// every step, and a failed unregularized attempt costs a cold start of
/// thousands of pivots, so a first attempt adds the compliance of level
/// `first` (the level that solved the previous step) to `problem` itself, when it
/// has at least [`LemkeSettings::remember_regularization_from`] unknowns,
/// warm; only if that fails does the ladder run from the bottom. The
/// attempts on `problem` start from `options.warm_start` (Lemke goes cold by
/// itself when the warm start fails), the relaxed ones cold. A compliance's
/// solution is then refined by proximal point iterations
/// ([`LemkeSettings::proximal_defect`]), continued with smaller compliances
/// while its defect stays above the bound
/// ([`LemkeSettings::compliance_continuation`]); a defect left above it fails
/// the rung.
pub fn solve_regularized(
    problem: &Lcp,
    relaxed: Option<&Lcp>,
    blocks: usize,
    options: &LemkeOptions,
    settings: &LemkeSettings,
    first: usize,
    refine: &mut dyn FnMut(&mut LcpSolution),
) -> Regularized {
    let cold = contact_options();
    let mut pivots = 0;
    let mut last = None;
    let levels = settings.regularization.len();
    for (level, relax, warm) in ladder(problem.size(), levels, settings, first) {
        let options = if warm { options } else { &cold };
        let (candidate, fallback) = if level == 0 {
            let mut candidate = solve_or_fail(problem, options);
            refine(&mut candidate);
            (candidate, None)
        } else {
            let base = if relax {
                relaxed.unwrap_or(problem)
            } else {
                problem
            };
            let mut next = base.clone();
            // Δ of the first `blocks` rows (JᵀWJ), for the defect's floor.
            let diagonal: DVector<f64> =
                DVector::from_fn(
                    next.size(),
                    |i, _| if i < blocks { base.m[(i, i)] } else { 0.0 },
                );
            let regularization = settings.regularization[level - 1] * next.m.diagonal().amax();
            for i in 0..blocks {
                next.m[(i, i)] += regularization;
            }
            let mut candidate = solve_or_fail(&next, options);
            // The compliance εI on the first `blocks` rows, refined by
            // proximal passes from z⁰ = 0 (the problem solved above), then,
            // while their defect stays above its bound, at a compliance a
            // hundred times smaller from the last solution and its basis
            // (see `proximal_passes`); else the rung failed.
            if candidate.status == LcpStatus::Solved {
                let weights: Vec<f64> = (0..next.size())
                    .map(|i| if i < blocks { 1.0 } else { 0.0 })
                    .collect();
                let mut centre = DVector::zeros(next.size());
                let first = candidate.pivots;
                let mut passes = 0;
                let mut current = regularization;
                let (refined, shifted, ended) = proximal_passes(
                    &base.q,
                    &weights,
                    diagonal.as_slice(),
                    regularization,
                    &mut centre,
                    candidate,
                    settings,
                    &mut passes,
                    |reg, shifted, again| {
                        if reg != current {
                            next.m.copy_from(&base.m);
                            for i in 0..blocks {
                                next.m[(i, i)] += reg;
                            }
                            current = reg;
                        }
                        next.q.copy_from(shifted);
                        solve_or_fail(&next, again)
                    },
                );
                // Every solve's pivots once, the first and the passes'.
                candidate = LcpSolution {
                    pivots: first + passes,
                    ..refined
                };
                if ended == Passes::StageFailed {
                    // `next` is the stage's LCP that failed.
                    candidate.status = LcpStatus::NumericalFailure;
                } else {
                    // The LCP the kept solution solves (a failed last pass
                    // left its own right-hand side in `next`).
                    next.q = shifted.unwrap_or_else(|| base.q.clone());
                    if ended == Passes::Unconverged {
                        candidate.status = LcpStatus::NumericalFailure;
                    }
                }
            }
            (candidate, Some(next))
        };
        pivots += candidate.pivots;
        let solved = candidate.status == LcpStatus::Solved;
        last = Some(Regularized {
            solution: LcpSolution {
                pivots,
                ..candidate
            },
            fallback,
            level,
        });
        if solved {
            break;
        }
    }
    last.unwrap_or_else(|| unreachable!("the ladder has at least level 0"))
}

impl ContactSolver {
    /// [`Self::solve`] with a dense W: the LCP (29) assembled whole, then
    /// solved whole (ladder, warm start, the remembered level) or, for
    /// [`Form::Mixed`], equilibrated and by parts ([`Self::solve_parts`]).
    pub(in crate::solver) fn solve_dense(
        &mut self,
        problem: &ContactProblem<'_>,
        form: Form,
        options: &SolverOptions,
    ) -> ContactSolution {
        let settings = &options.lemke;
        let keeps = |size| options.keeps(size);
        let contacts = problem.contacts;
        let impulses = Impulses::new(contacts, problem.map, problem.dof);
        let layout = impulses.layout;
        if form.by_parts() {
            return self.solve_parts(problem, &impulses, form, options);
        }
        let lcp = whole_lcp(problem, &impulses);
        let relaxed = problem.relaxed_normal_terms.map(|terms| {
            let mut relaxed = lcp.clone();
            for (j, (term, own)) in terms.iter().zip(problem.normal_terms).enumerate() {
                relaxed.q[layout.normal(j)] += term - own;
            }
            relaxed
        });
        let ids: Vec<ContactId> = contacts.iter().map(|c| c.id).collect();
        let friction: Vec<usize> = contacts
            .iter()
            .map(|c| c.jacobian.friction_count())
            .collect();
        let warm_start = self.warm.basis(form, &ids, &friction, layout);
        let warm_fallback = normals_only(warm_start.as_ref(), layout.normals());
        let warm_start = warm_start.or_else(|| {
            form.frictionless_start()
                .then(|| frictionless_basis(&lcp.m, &lcp.q, layout, false))
                .flatten()
        });
        let options = LemkeOptions {
            warm_start,
            warm_fallback,
            ..contact_options()
        };
        let regularized = solve_regularized(
            &lcp,
            relaxed.as_ref(),
            layout.friction + layout.contacts,
            &options,
            settings,
            self.dense_level,
            &mut |_| {},
        );
        self.dense_level = regularized.level;
        let island = regularized.solution;
        if island.status == LcpStatus::Solved {
            self.warm
                .record(form, &ids, &friction, layout, &island.basis);
        }
        let velocity = problem.free + impulses.velocity_change(&island.z);
        ContactSolution {
            status: island.status,
            residual: island.residual,
            pivots: island.pivots,
            unknowns: Unknowns::Pyramid(layout),
            z: island.z,
            w: island.w,
            velocity,
            lcp_size: layout.size(),
            islands: 1,
            largest_island: layout.size(),
            reused: 0,
            sweeps: 0,
            lcp: keeps(layout.size()).then(|| regularized.fallback.unwrap_or(lcp)),
            active: None,
        }
    }

    /// Anitescu–Potra's LCP (24), equilibrated and solved part by part:
    /// the parts of [`Impulses::parts`] (contacts that share no component of
    /// W), each assembled alone and started warm from the bases its
    /// contacts had; the whole LCP is formed only when it is to be kept.
    ///
    /// Bodies of very different masses (Fig. 6: 1 and 1e8 kg) give rows of
    /// JᵀWJ that differ by the mass ratio; Lemke's tolerances need them
    /// equilibrated. With D = diag(1/√Gᵢᵢ) on (β̃, c̃_n) and √G_nn on λ̃,
    /// LCP(DGD, Dq) has the solutions D⁻¹z and keeps the structure Theorem
    /// 2.2 relies on (and the same bases). Theorem 2.2 guarantees a solution;
    /// dependent normals (a box on four corners, or rigidly linked bodies in
    /// the stiff limit) make bases nearly singular, and the regularization
    /// ladder on the scaled JᵀWJ separates the dependent rows.
    ///
    /// Solved as one, a pile's LCP (24) — degenerate as a whole — lost
    /// Lemke's lexicographic order to rounding and ended on a ray at step
    /// 43 of `pile.ron`; by parts it falls into parts of 10–40 unknowns
    /// solved in 0–16 pivots. Forming only the parts also keeps a settled
    /// pile of 100 bodies (LCPs of 1,500–3,000 unknowns) from assembling,
    /// scaling and scanning n × n dense matrices on every solve.
    pub(super) fn solve_parts(
        &mut self,
        problem: &ContactProblem<'_>,
        impulses: &Impulses<'_>,
        form: Form,
        options: &SolverOptions,
    ) -> ContactSolution {
        let settings = &options.lemke;
        let layout = impulses.layout;
        let ids: Vec<ContactId> = problem.contacts.iter().map(|c| c.id).collect();
        let friction: Vec<usize> = problem
            .contacts
            .iter()
            .map(|c| c.jacobian.friction_count())
            .collect();
        let warm = self.warm.basis(form, &ids, &friction, layout);
        let scaling = equilibration(&impulses.delassus_diagonal(), layout);
        let normals = layout.normals();
        let n = layout.size();
        let mut solution = LcpSolution {
            z: DVector::zeros(n),
            w: DVector::zeros(n),
            status: LcpStatus::Solved,
            pivots: 0,
            residual: 0.0,
            basis: Vec::new(),
            warm_started: false,
        };
        let velocity_scale = settings.velocity_scale(problem.free);
        let mut polished_change = DVector::zeros(problem.dof);
        let mut plain = Vec::new();
        for part in impulses.parts() {
            let (index, mut lcp) =
                impulses.lcp_part(&part, problem.free, problem.normal_terms, problem.mu);
            for (a, &i) in index.iter().enumerate() {
                if let Some(term) = problem
                    .friction_terms
                    .get(i)
                    .filter(|_| i < layout.friction)
                {
                    lcp.q[a] += term;
                }
            }
            let scaled = Lcp {
                m: DMatrix::from_fn(index.len(), index.len(), |a, b| {
                    scaling[index[a]] * lcp.m[(a, b)] * scaling[index[b]]
                }),
                q: DVector::from_fn(index.len(), |a, _| lcp.q[a] * scaling[index[a]]),
            };
            let part_blocks = index.iter().filter(|&&i| i < normals.end).count();
            let local = |basis: &[usize], keep: &dyn Fn(usize) -> bool| -> Vec<usize> {
                basis
                    .iter()
                    .filter(|&&i| keep(i))
                    .filter_map(|i| index.binary_search(i).ok())
                    .collect()
            };
            let options = LemkeOptions {
                warm_start: warm.as_deref().map(|b| local(b, &|_| true)),
                warm_fallback: warm.as_deref().map(|b| local(b, &|i| normals.contains(&i))),
                ..contact_options()
            };
            // Lemke's solution refined in velocity space when the
            // velocities are sums of large impulse terms (see
            // `super::polish`; here through the part's dense block).
            let mut refined = None;
            let mut refine = |candidate: &mut LcpSolution| {
                let unscaled_z =
                    DVector::from_fn(index.len(), |a, _| candidate.z[a] * scaling[index[a]]);
                let terms = (0..index.len())
                    .map(|a| (unscaled_z[a] * lcp.m[(a, a)]).abs())
                    .fold(0.0, f64::max);
                let spread = impulses.mass_spread(&part);
                if !super::polish::needs_refinement(
                    terms,
                    candidate,
                    spread,
                    velocity_scale,
                    settings,
                ) {
                    return;
                }
                // In unscaled terms: z = D z', w = D⁻¹ w', the residual
                // against q.
                let mut unscaled = LcpSolution {
                    z: unscaled_z.clone(),
                    w: DVector::from_fn(index.len(), |a, _| candidate.w[a] / scaling[index[a]]),
                    ..candidate.clone()
                };
                // Where Lemke's own basis is not settled: the warm start,
                // then the normal impulses basic (bodies resting on each
                // other), as many as are independent.
                let resting = independent(
                    &lcp.m,
                    (0..index.len()).filter(|&a| normals.contains(&index[a])),
                );
                let starts: Vec<&[usize]> = options
                    .warm_start
                    .as_deref()
                    .into_iter()
                    .chain([&resting[..]])
                    .collect();
                let lambdas = layout.lambdas();
                let impulse_rows: Vec<bool> = index.iter().map(|i| lambdas.contains(i)).collect();
                let refined_part =
                    super::polish::refine(&mut unscaled, &starts, &lcp.q, &impulse_rows, |basis| {
                        impulses.polish(&lcp.m, &index, &lcp.q, basis, &unscaled_z, problem.mu)
                    });
                let Some(dv) = refined_part else {
                    return;
                };
                for (a, &i) in index.iter().enumerate() {
                    unscaled.z[a] /= scaling[i];
                    unscaled.w[a] *= scaling[i];
                }
                *candidate = unscaled;
                refined = Some(dv);
            };
            let regularized = solve_regularized(
                &scaled,
                None,
                part_blocks,
                &options,
                settings,
                0,
                &mut refine,
            );
            let solved = regularized.solution;
            // A refinement counts only if its solution is the one kept.
            match refined.filter(|_| regularized.level == 0) {
                Some(dv) => polished_change += &dv,
                None => plain.extend(index.iter().copied()),
            }
            for (a, &i) in index.iter().enumerate() {
                solution.z[i] = solved.z[a] * scaling[i];
                solution.w[i] = solved.w[a] / scaling[i];
            }
            solution
                .basis
                .extend(solved.basis.iter().map(|&a| index[a]));
            solution.pivots += solved.pivots;
            solution.residual = solution.residual.max(solved.residual);
            if solved.status != LcpStatus::Solved {
                solution.status = solved.status;
                break;
            }
        }
        solution.basis.sort_unstable();
        if solution.status == LcpStatus::Solved {
            self.warm
                .record(form, &ids, &friction, layout, &solution.basis);
        }
        // The parts Lemke's z stands for, then the refined ones' Δv.
        let mut unrefined = DVector::zeros(n);
        for &i in &plain {
            unrefined[i] = solution.z[i];
        }
        let velocity = problem.free + impulses.velocity_change(&unrefined) + polished_change;
        let kept = options.keeps(n).then(|| whole_lcp(problem, impulses));
        ContactSolution {
            status: solution.status,
            residual: solution.residual,
            pivots: solution.pivots,
            unknowns: Unknowns::Pyramid(layout),
            z: solution.z,
            w: solution.w,
            velocity,
            lcp_size: layout.size(),
            islands: 1,
            largest_island: layout.size(),
            reused: 0,
            sweeps: 0,
            active: None,
            lcp: kept,
        }
    }

    /// Moreau–Jean's planar LCP (33) by Lemke, warm from the bases its
    /// contacts had in the last (33).
    pub fn solve_planar(
        &mut self,
        planar: PlanarSolve<'_>,
        options: &SolverOptions,
    ) -> ContactSolution {
        let settings = &options.lemke;
        let PlanarSolve { problem, ids, free } = planar;
        let size = problem.lcp.size();
        let keep = options.keeps(size);
        let form = Form::PlanarImpact;
        let warm_start = self.warm.basis_slots(form, ids, planar_slots(&problem));
        // Should the mapped basis end on a ray, its normal impulses alone.
        let warm_fallback = warm_start.as_ref().map(|b| {
            b.iter()
                .copied()
                .filter(|&i| i < problem.contacts)
                .collect()
        });
        let options = LemkeOptions {
            warm_start,
            warm_fallback,
            ..contact_options()
        };
        let mut solution = solve_or_fail(&problem.lcp, &options);
        // Refined in velocity space when the velocities are sums of large
        // impulse terms (see `super::polish::refine`).
        let refined = if super::polish::needs_refinement(
            problem.cancellation(&solution.z),
            &solution,
            problem.mass_spread(),
            settings.velocity_scale(free),
            settings,
        ) {
            let start = solution.z.clone();
            let velocity_rows = problem.contacts + problem.friction_of.len();
            let impulse_rows: Vec<bool> = (0..size).map(|i| i >= velocity_rows).collect();
            super::polish::refine(
                &mut solution,
                options.warm_start.as_deref().as_slice(),
                &problem.lcp.q,
                &impulse_rows,
                |basis| problem.polish(basis, &start),
            )
        } else {
            None
        };
        let solved = solution.status == LcpStatus::Solved;
        if solved {
            self.warm.begin(form);
            self.warm
                .add_slots(ids, planar_slots(&problem), size, &solution.basis);
        }
        let impulses = if solved {
            problem.impulses(&solution.z, &solution.w)
        } else {
            Vec::new()
        };
        let velocity = if let Some(du) = refined.filter(|_| solved) {
            free + du
        } else if solved {
            free + problem.velocity_change(&impulses)
        } else {
            free.clone()
        };
        ContactSolution {
            status: solution.status,
            residual: solution.residual,
            pivots: solution.pivots,
            unknowns: Unknowns::Planar(impulses),
            z: solution.z,
            w: solution.w,
            velocity,
            lcp_size: size,
            islands: 1,
            largest_island: size,
            reused: 0,
            sweeps: 0,
            active: None,
            lcp: keep.then_some(problem.lcp),
        }
    }
}

/// Moreau–Jean's planar LCP (33) to solve: the problem, its contacts and u*.
pub struct PlanarSolve<'p> {
    /// The LCP (33).
    pub problem: PlanarImpactLcp,
    /// Its contacts, in order.
    pub ids: &'p [ContactId],
    /// u*, the velocity without contact impulses.
    pub free: &'p DVector<f64>,
}

/// The unknowns of each contact of (33), in order: Λ_N at its index, and
/// with friction (the r-th friction row) Λ_R at k + r and ξ_L at k + k_f + r.
pub(super) fn planar_slots(problem: &PlanarImpactLcp) -> impl Iterator<Item = Slots> + '_ {
    let (k, kf) = (problem.contacts, problem.friction_of.len());
    (0..k).map(move |i| {
        let row = problem.friction_of.binary_search(&i).ok();
        Slots::planar(i, row.map(|r| (k + r, k + kf + r)))
    })
}

/// The diagonal scaling of the LCP from the diagonal of JᵀWJ: 1/√Gᵢᵢ on the β̃ and c̃_n rows, √G_nn of
/// the contact on its λ row (so μ̃ keeps its value).
pub(super) fn equilibration(delassus: &DVector<f64>, layout: Layout) -> DVector<f64> {
    let size = layout.size();
    let scale = delassus.amax().max(f64::MIN_POSITIVE);
    let diagonal = |i: usize| delassus[i].max(1e-14 * scale);
    let mut d = DVector::from_element(size, 1.0);
    for i in 0..layout.friction + layout.contacts {
        d[i] = 1.0 / diagonal(i).sqrt();
    }
    for j in 0..layout.contacts {
        d[layout.lambda(j)] = diagonal(layout.normal(j)).sqrt();
    }
    d
}

/// The indices of `candidates`, in order, whose principal block of `m`
/// stays well-conditioned as each joins (a box face resting flat has four
/// corner normals and three freedoms: three of them).
pub(super) fn independent(m: &DMatrix<f64>, candidates: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut chosen: Vec<usize> = Vec::new();
    for i in candidates {
        chosen.push(i);
        let k = chosen.len();
        let block = DMatrix::from_fn(k, k, |r, c| m[(chosen[r], chosen[c])]);
        let ratio = crate::solver::linalg::pivot_ratio(&block.lu());
        if ratio.is_nan() || ratio <= 1e-10 {
            chosen.pop();
        }
    }
    chosen
}
