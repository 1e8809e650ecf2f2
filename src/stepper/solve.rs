//! Lemke on a stepper's LCP with the fallbacks every scheme shares.

use super::settings::StepSettings;
use crate::lcp::{self, Lcp, LcpSolution, LcpStatus, LemkeOptions};
use nalgebra::DVector;

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
        .unwrap_or_else(|_| LcpSolution {
            z: DVector::zeros(problem.size()),
            w: DVector::zeros(problem.size()),
            status: LcpStatus::NumericalFailure,
            pivots: 0,
            residual: f64::INFINITY,
            basis: Vec::new(),
            warm_started: false,
        })
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
/// each [`StepSettings::regularization`] times the largest diagonal entry
/// added to the first `blocks` diagonal entries (those of JᵀM⁻¹J).
///
/// Dependent normals (a box held by more contacts than it has freedoms) make
/// the tableau's bases nearly singular; the compliance, far below anything
/// visible, separates the dependent rows. A settled pile of boxes needs it on
/// every step, and a failed unregularized attempt costs a cold start of
/// thousands of pivots, so a first attempt adds the compliance of level
/// `first` (the level that solved the previous step) to `problem` itself, when it
/// has at least [`StepSettings::remember_regularization_from`] unknowns,
/// warm; only if that fails does the ladder run from the bottom. The
/// attempts on `problem` start from `options.warm_start` (Lemke goes cold by
/// itself when the warm start fails), the relaxed ones cold.
pub fn solve_regularized(
    problem: &Lcp,
    relaxed: Option<&Lcp>,
    blocks: usize,
    options: &LemkeOptions,
    settings: &StepSettings,
    first: usize,
) -> Regularized {
    let levels = settings.regularization.len();
    let first = if problem.size() >= settings.remember_regularization_from {
        first.min(levels)
    } else {
        0
    };
    // (level, relaxed, warm): the remembered level on the problem itself, then
    // the ladder as it always was.
    let sticky = (first > 0).then_some((first, false, true));
    let ladder = std::iter::once((0, false, true)).chain((1..=levels).map(|l| (l, true, false)));
    let cold = LemkeOptions::default();
    let mut pivots = 0;
    let mut last = None;
    for (level, relax, warm) in sticky.into_iter().chain(ladder) {
        let options = if warm { options } else { &cold };
        let (candidate, fallback) = if level == 0 {
            (solve_or_fail(problem, options), None)
        } else {
            let base = if relax {
                relaxed.unwrap_or(problem)
            } else {
                problem
            };
            let mut next = base.clone();
            let regularization = settings.regularization[level - 1] * next.m.diagonal().amax();
            for i in 0..blocks {
                next.m[(i, i)] += regularization;
            }
            (solve_or_fail(&next, options), Some(next))
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
