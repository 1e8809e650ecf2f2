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

/// Lemke on `problem`, then, while it is not solved, on `relaxed` (the same
/// LCP with the scheme's own relaxation, or `problem` again) with a compliance
/// of each [`StepSettings::regularization`] times the largest diagonal entry
/// added to the first `blocks` diagonal entries (those of JᵀM⁻¹J).
///
/// Dependent normals (a box held by more contacts than it has freedoms) make
/// the tableau's bases nearly singular; the compliance, far below anything
/// visible, separates the dependent rows. Returns the solution and, when a
/// fallback produced it, the LCP it solves. Pivots count every attempt.
pub fn solve_regularized(
    problem: &Lcp,
    relaxed: Option<&Lcp>,
    blocks: usize,
    options: &LemkeOptions,
    settings: &StepSettings,
) -> (LcpSolution, Option<Lcp>) {
    let mut solution = solve_or_fail(problem, options);
    let mut used = None;
    for relative in settings.regularization {
        if solution.status == LcpStatus::Solved {
            break;
        }
        let mut next = relaxed.unwrap_or(problem).clone();
        let regularization = relative * next.m.diagonal().amax();
        for i in 0..blocks {
            next.m[(i, i)] += regularization;
        }
        let earlier = solution.pivots;
        solution = solve_or_fail(&next, &LemkeOptions::default());
        solution.pivots += earlier;
        used = Some(next);
    }
    (solution, used)
}
