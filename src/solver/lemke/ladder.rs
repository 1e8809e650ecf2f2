//! The regularization ladder that follows a failed Lemke solve: compliances
//! added to the diagonal of JᵀWJ, each solve re-centred by proximal point
//! iterations (Rockafellar 1976) until it solves the scheme's own LCP.

use super::contact_options;
use crate::lcp::{LcpSolution, LcpStatus, LemkeOptions};
use crate::solver::options::LemkeSettings;
use nalgebra::DVector;

/// The level of [`ladder`]'s first attempt.
pub(super) fn first_level(
    size: usize,
    levels: usize,
    settings: &LemkeSettings,
    first: usize,
) -> usize {
    if size >= settings.remember_regularization_from {
        first.min(levels)
    } else {
        0
    }
}

/// One attempt of the regularization ladder: the level (0: none), whether
/// the scheme's relaxed right-hand side is used, and whether the warm start
/// is given.
pub(super) type Attempt = (usize, bool, bool);

/// The attempts of the ladder for an LCP of `size` unknowns whose previous
/// solve needed level `first`: that level on the problem itself (warm) when
/// the LCP has at least [`LemkeSettings::remember_regularization_from`]
/// unknowns, then the problem itself (warm), then each level on the relaxed
/// problem (cold).
pub(super) fn ladder(
    size: usize,
    levels: usize,
    settings: &LemkeSettings,
    first: usize,
) -> Vec<Attempt> {
    let first = first_level(size, levels, settings, first);
    let sticky = (first > 0).then_some((first, false, true));
    sticky
        .into_iter()
        .chain(std::iter::once((0, false, true)))
        .chain((1..=levels).map(|l| (l, true, false)))
        .collect()
}

/// How [`proximal_passes`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Passes {
    /// The defect is within its bound: the solution solves the scheme's LCP.
    Within,
    /// The passes and every stage of the continuation left it above.
    Unconverged,
    /// A stage of the continuation was not solved (the last call of
    /// `solve` failed; the solution is the stage's before).
    StageFailed,
}

/// Proximal point iterations (Rockafellar 1976) after a compliance C = εw
/// (`epsilon` times the diagonal `weights`) solved LCP(M + C, q − C z⁰) with
/// `solution`, z⁰ being `centre`: that solution solves the scheme's own
/// LCP(M, q) only up to the defect C(z − z⁰), a velocity. A contact with no
/// impulse of its own to start from (z⁰ = 0: a new identity, such as the
/// corner ids parry swaps between steps) under a heavy load on a light body
/// makes it large: a 1 g box under 10⁸ kg, Δ = 10³, ε = 10⁻⁴ and z =
/// 2.45·10⁶ N·s gave a defect of 2.4·10⁵ m/s, and the box left at 9.4·10⁵ m/s
/// in a "solved" step. While the defect exceeds
/// [`LemkeSettings::proximal_defect`] times ‖q‖∞, the centre moves to the
/// solution and `solve` (given ε, the shifted right-hand side and Lemke's
/// options warm from the last basis: no pivots while the active set holds)
/// solves again; each pass shrinks the defect by C/(λ + C) in each of M's
/// eigendirections λ (10⁻⁴ a pass there). Returns the last solved
/// solution, the right-hand side q − C z⁰ it solves when that is not the
/// one `solution` came with, and how it ended. Pivots are added to
/// `pivots`.
///
/// A defect left above the bound is a velocity the step would take that
/// the scheme's LCP does not allow, so the caller must not report it as
/// solved: along an eigendirection λ ≪ C the passes barely move. A 1 g box
/// under 10⁸ kg in space (Moreau–Jean) had M's smallest eigenvalue about
/// 10⁻⁸ against C = 0.1 on the light box's rows; after the 8 passes its
/// defect was 0.07–0.34 m/s against a bound of 10⁻⁷, and the heavy box sank
/// 1.2 mm a step into the light one, 14 mm in all, every step "solved". The
/// passes then continue with a compliance a hundred times smaller, from the
/// last solution and its basis ([`LemkeSettings::compliance_continuation`]
/// stages): the defect is C|z − z⁰|, so each stage takes it down a
/// hundredfold where the passes could not (a 1 kg box under 10⁶ kg among
/// the stacks of `tests/mass_ratios.rs`: 4.8e-2 m/s after the passes at
/// ε = 1e-4, 4.8e-9 at 1e-8, within the bound and without a pivot). The
/// bound is never below the resolution of
/// the velocity the impulses make, ε max Δᵢ|zᵢ| (`diagonal` is Δ).
#[allow(clippy::too_many_arguments)]
pub(super) fn proximal_passes(
    q: &DVector<f64>,
    weights: &[f64],
    diagonal: &[f64],
    epsilon: f64,
    centre: &mut DVector<f64>,
    mut solution: LcpSolution,
    settings: &LemkeSettings,
    pivots: &mut usize,
    mut solve: impl FnMut(f64, &DVector<f64>, &LemkeOptions) -> LcpSolution,
) -> (LcpSolution, Option<DVector<f64>>, Passes) {
    // The bound, and never below what f64 resolves of a velocity made of
    // these impulses: ε Δᵢ|zᵢ| on the row of the largest. A 1 g box under
    // 10⁸ kg carries 10⁷ N·s on Δ ≈ 10³, so its velocity is known to 2e-6
    // m/s, and the defect's floor there (1.05e-7 m/s) is rounding.
    let resolution = |z: &DVector<f64>| {
        f64::EPSILON
            * diagonal
                .iter()
                .zip(z.iter())
                .map(|(d, z)| (d * z).abs())
                .fold(0.0, f64::max)
    };
    let bound = settings.proximal_defect * q.amax().max(f64::MIN_POSITIVE);
    let within = |z: &DVector<f64>, centre: &DVector<f64>, epsilon: f64| {
        let defect = weights
            .iter()
            .zip(z.iter().zip(centre.iter()))
            .map(|(w, (z, z0))| epsilon * w * (z - z0).abs())
            .fold(0.0, f64::max);
        defect <= bound.max(resolution(z))
    };
    // q − C z⁰ for the centre z⁰ and the compliance εw.
    let shifted = |centre: &DVector<f64>, epsilon: f64| {
        DVector::from_fn(q.len(), |i, _| q[i] - epsilon * weights[i] * centre[i])
    };
    let warm = |solution: &LcpSolution| LemkeOptions {
        warm_start: Some(solution.basis.clone()),
        ..contact_options()
    };
    let mut rhs = None;
    let mut epsilon = epsilon;
    for stage in 0..=settings.compliance_continuation {
        if stage > 0 {
            // The next stage: a compliance a hundred times smaller,
            // centred on the last solution, from its basis.
            epsilon *= 0.01;
            centre.copy_from(&solution.z);
            let start = shifted(centre, epsilon);
            let next = solve(epsilon, &start, &warm(&solution));
            *pivots += next.pivots;
            if next.status != LcpStatus::Solved {
                return (solution, rhs, Passes::StageFailed);
            }
            solution = next;
            rhs = Some(start);
        }
        for _ in 0..settings.proximal_iterations {
            if within(&solution.z, centre, epsilon) {
                break;
            }
            centre.copy_from(&solution.z);
            let again = shifted(centre, epsilon);
            let next = solve(epsilon, &again, &warm(&solution));
            *pivots += next.pivots;
            if next.status != LcpStatus::Solved {
                break;
            }
            solution = next;
            rhs = Some(again);
        }
        if within(&solution.z, centre, epsilon) {
            return (solution, rhs, Passes::Within);
        }
    }
    (solution, rhs, Passes::Unconverged)
}
