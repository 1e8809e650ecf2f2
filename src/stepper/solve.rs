//! The contact problem every scheme poses, and the one solver of it: what
//! a solve gave ([`ContactSolution`], whatever the form and the method), the
//! warm start by contact identity, and the fallbacks every scheme shares.
//!
//! Two contacts are coupled in (29) only through a body they share (the
//! entries of JᵀWJ are sums over shared body blocks, and Ẽ and μ̃ stay within
//! a contact). With a block-diagonal W the LCP is therefore block-diagonal
//! over the connected components of the graph of bodies joined by contacts —
//! a pile's separate heaps, or balls that do not touch — and each component
//! is solved on its own: exactly the same solution set, in time that grows
//! with the size of each island instead of the whole scene. Each island is
//! solved by Lemke on the operator [`ContactLcp`] (Lloyd's method,
//! [`crate::lcp::solve_structured`]), never forming M. A dense W (a
//! generalized linear system, or Anitescu–Potra's joints' Schur complement)
//! couples everything and keeps the dense tableau ([`dense`]); Moreau–Jean's
//! planar LCP (33) is solved there too.

mod dense;
mod island;
mod islands;
mod memo;
mod solution;

pub use dense::{PlanarSolve, Regularized, solve_or_fail, solve_regularized};
use island::{IslandJob, IslandWork};
pub(super) use islands::friction_starts;
pub use islands::{Islands, islands};
use islands::{frictionless_basis, global_indices};
pub use solution::{ContactSolution, Failed, Unknowns};

use super::assembly::Layout;
use super::contact_lcp::ContactLcp;
use super::nsgs::{self, NsgsLimits};
use super::settings::StepSettings;
use super::warm::{Form, LastImpulses, WarmStart};
use crate::lcp::{self, Lcp, LcpMatrix, LcpSolution, LcpStatus, LemkeOptions};
use crate::model::{Contact, ContactId, MassInverse};
use crate::params::{FrictionCone, Params, SolverKind};
use nalgebra::{DMatrix, DVector};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

/// Lemke's options for the steppers' contact LCPs: the defaults without
/// restarts from other complementary bases
/// ([`LemkeOptions::restarts`]). Lemke's method from the covering vector
/// processes these LCPs (Stewart–Trinkle §3.2, Anitescu–Potra Theorem 2.2),
/// so a ray is rounding, which the perturbed retries and the compliance
/// ladder address; a restart from zᵢ basic follows the same rounding to a
/// ray again. Measured on `chain.ron` under the Euler LCP with springs of
/// 10⁹ past the explicit limit (its state at 10⁴⁴): 46 restarts of 700–850
/// pivots each on a dense LCP of 792 unknowns, 4 minutes, before the step
/// was reported failed.
pub fn contact_options() -> LemkeOptions {
    LemkeOptions {
        restarts: 0,
        ..LemkeOptions::default()
    }
}

/// [`solve_or_fail`] for an operator.
fn solve_structured_or_fail<M: LcpMatrix + ?Sized>(
    m: &M,
    q: &DVector<f64>,
    options: &LemkeOptions,
) -> LcpSolution {
    let cold = || LemkeOptions {
        warm_start: None,
        warm_fallback: None,
        ..options.clone()
    };
    lcp::solve_structured(m, q, options)
        .or_else(|_| lcp::solve_structured(m, q, &cold()))
        .unwrap_or_else(|_| failed_solution(m.size()))
}

/// Lemke's solution on an island, refined in velocity space
/// ([`ContactLcp::polish`]) when the velocities it gives are sums of terms
/// more than `settings.polish_cancellation` times the velocity scale (a
/// light body under a heavy one); see [`refine`] for when the refinement
/// replaces Lemke's (z, w) and for the `starts` of its repair. Returns the
/// refined velocity change (flat) to use instead of W J z.
/// `cancellation` is `lcp.cancellation(&candidate.z)`.
fn polish(
    lcp: &ContactLcp<'_>,
    rhs: &DVector<f64>,
    candidate: &mut LcpSolution,
    starts: &[&[usize]],
    cancellation: f64,
    velocity_scale: f64,
    settings: &StepSettings,
) -> Option<Vec<f64>> {
    if !needs_refinement(
        cancellation,
        candidate,
        lcp.mass_spread(),
        velocity_scale,
        settings,
    ) {
        return None;
    }
    let start = candidate.z.clone();
    let lambdas = lcp.layout.lambdas();
    let impulse_rows: Vec<bool> = (0..lcp.layout.size())
        .map(|i| lambdas.contains(&i))
        .collect();
    refine(candidate, starts, rhs, &impulse_rows, |basis| {
        lcp.polish(rhs, basis, &start)
            .map(|p| (p.z, p.w, p.velocity_change))
    })
}

/// Whether Lemke's `candidate` is refined in velocity space ([`refine`]):
/// its velocities are sums of impulse terms up to `cancellation` (m/s),
/// more than `settings.polish_cancellation` times the velocity scale; or,
/// when Lemke did not end on a complementary basis (a ray, whose z says
/// nothing), the inverse masses of the LCP's bodies span more than that
/// ratio (`mass_spread`: a gram and 10⁸ kg in one LCP).
fn needs_refinement(
    cancellation: f64,
    candidate: &LcpSolution,
    mass_spread: f64,
    velocity_scale: f64,
    settings: &StepSettings,
) -> bool {
    cancellation > settings.polish_cancellation * velocity_scale
        || (!complementary(candidate) && mass_spread > settings.polish_cancellation)
}

/// max/min of the positive entries of `values` (1 when there are none).
pub(super) fn spread(values: impl IntoIterator<Item = f64>) -> f64 {
    let (low, high) = values
        .into_iter()
        .filter(|&d| d > 0.0)
        .fold((f64::INFINITY, 0.0_f64), |(l, h), d| (l.min(d), h.max(d)));
    if high > 0.0 { high / low } else { 1.0 }
}

/// Whether Lemke ended on a complementary basis: solved, or a numerical
/// failure of its final check.
fn complementary(candidate: &LcpSolution) -> bool {
    match candidate.status {
        LcpStatus::Solved => true,
        LcpStatus::NumericalFailure => !candidate.basis.is_empty(),
        _ => false,
    }
}

/// A solution of [`refine`]: its relative residual, (z, w), the velocity
/// change and the basis.
struct Refined<V> {
    /// See [`repair`].
    violation: f64,
    residual: f64,
    z: DVector<f64>,
    w: DVector<f64>,
    change: V,
    basis: Vec<usize>,
}

/// The violation (see [`repair`]) at which [`refine`]'s repair stops: a
/// basis whose refined pair is complementary to rounding. (A pair within
/// `max_residual` is accepted when no start reaches it, but a basis wrong by
/// 10⁻⁷ m/s on a contact under 10⁸ kg moves it by 10⁻⁹ m a step, 1 J.)
const REPAIR_TARGET: f64 = 1e-12;

/// Rounds of [`refine`]'s basis repair.
const REPAIR_ROUNDS: usize = 32;

/// Replaces Lemke's `candidate` for LCP(·, `q`) by a solution refined in
/// velocity space: `polish` gives (z, w, Δv) at a basis (the indices whose
/// z is basic), with w computed from Δv itself. It starts at Lemke's final
/// basis when Lemke ended on a complementary one, then at each of `starts`
/// (the warm start, …); while the refined pair is not complementary to
/// rounding ([`REPAIR_TARGET`], measured by [`repair`] in the units of each
/// row: velocities against q, `impulse_rows` against z), the basis is
/// repaired (negative basic zᵢ leave; else the most negative wᵢ enters), up
/// to [`REPAIR_ROUNDS`] times from each start. Lemke's own w is a sum of
/// the large terms, and where it passed on its componentwise backward error
/// it can hide a wrong basis by 10⁻³ m/s (a friction row), or end Lemke on
/// a ray from rounding; the refined w shows and settles it. The least
/// violating refinement replaces the candidate when it is complementary
/// within Lemke's `max_residual`; else the candidate stays as it was (and
/// goes down the regularization ladder if it is not solved). Returns Δv
/// when the candidate was replaced (it is then `Solved`).
fn refine<V>(
    candidate: &mut LcpSolution,
    starts: &[&[usize]],
    q: &DVector<f64>,
    impulse_rows: &[bool],
    mut polish: impl FnMut(&[usize]) -> Option<(DVector<f64>, DVector<f64>, V)>,
) -> Option<V> {
    let own = complementary(candidate).then_some(candidate.basis.as_slice());
    let options = contact_options();
    let scale = q.amax().max(1.0);
    let mut best: Option<Refined<V>> = None;
    for start in own.into_iter().chain(starts.iter().copied()) {
        repair(start, scale, impulse_rows, &mut polish, &mut best);
        if best.as_ref().is_some_and(|b| b.violation <= REPAIR_TARGET) {
            break;
        }
    }
    let Refined {
        residual,
        violation: _,
        z,
        w,
        change,
        basis,
    } = best?;
    if residual > options.max_residual {
        return None;
    }
    candidate.z = z;
    candidate.w = w;
    candidate.residual = residual;
    candidate.basis = basis;
    candidate.status = LcpStatus::Solved;
    Some(change)
}

/// [`refine`]'s repair from one `start` basis, keeping in `best` the
/// refined solution of least violation.
fn repair<V>(
    start: &[usize],
    scale: f64,
    impulse_rows: &[bool],
    polish: &mut impl FnMut(&[usize]) -> Option<(DVector<f64>, DVector<f64>, V)>,
    best: &mut Option<Refined<V>>,
) {
    let options = contact_options();
    let n = impulse_rows.len();
    let mut basis = start.to_vec();
    basis.sort_unstable();
    // An index whose entry made the basis block singular (a fourth corner
    // normal on a face resting flat) is not tried again; where leaving
    // together did (a friction direction and the slip speed λ it carried),
    // only the most negative leaves.
    let mut entered = None;
    let mut left: Vec<(usize, f64)> = Vec::new();
    let mut excluded = Vec::new();
    for _ in 0..REPAIR_ROUNDS {
        let Some((mut z, w, change)) = polish(&basis) else {
            if let Some(i) = entered.take() {
                basis.retain(|&b| b != i);
                excluded.push(i);
                continue;
            }
            if left.len() > 1 {
                let most = left
                    .iter()
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|&(i, _)| i);
                basis.extend(left.iter().map(|&(i, _)| i).filter(|&i| Some(i) != most));
                basis.sort_unstable();
                left.retain(|&(i, _)| Some(i) == most);
                continue;
            }
            break;
        };
        // A basic zᵢ at zero comes back as rounding of either sign.
        let floor = options.tolerance * z.amax();
        for zi in z.iter_mut() {
            if *zi < 0.0 && *zi >= -floor {
                *zi = 0.0;
            }
        }
        let residual = lcp::Validation::of(&z, &w, scale).relative();
        // How far the pair is from complementary in its own units: w on
        // the basic rows and below zero on the others, relative to q (a
        // velocity) or on `impulse_rows` (μc_n − Σβ) to z; z below zero,
        // relative to z. Lemke's z·w weighs a rounding of w by an impulse of
        // 10⁷ N·s and cannot reach the target.
        let z_scale = z.amax().max(f64::MIN_POSITIVE);
        let violation = (0..n)
            .map(|i| {
                let unit = if impulse_rows[i] { z_scale } else { scale };
                if basis.binary_search(&i).is_ok() {
                    (w[i].abs() / unit).max(-z[i] / z_scale)
                } else {
                    -w[i] / unit
                }
            })
            .fold(0.0, f64::max);
        let negative: Vec<(usize, f64)> = basis
            .iter()
            .filter(|&&i| z[i] < 0.0)
            .map(|&i| (i, z[i]))
            .collect();
        let entering = (0..n)
            .filter(|i| basis.binary_search(i).is_err() && !excluded.contains(i) && w[*i] < 0.0)
            .min_by(|&a, &b| w[a].total_cmp(&w[b]));
        if best.as_ref().is_none_or(|b| violation < b.violation) {
            *best = Some(Refined {
                violation,
                residual,
                z,
                w,
                change,
                basis: basis.clone(),
            });
        }
        if violation <= REPAIR_TARGET {
            break;
        }
        entered = None;
        left.clear();
        if !negative.is_empty() {
            basis.retain(|i| !negative.iter().any(|&(j, _)| j == *i));
            left = negative;
        } else if let Some(i) = entering {
            basis.push(i);
            basis.sort_unstable();
            entered = Some(i);
        } else {
            break;
        }
    }
}

pub(super) fn failed_solution(n: usize) -> LcpSolution {
    LcpSolution {
        z: DVector::zeros(n),
        w: DVector::zeros(n),
        status: LcpStatus::NumericalFailure,
        pivots: 0,
        residual: f64::INFINITY,
        basis: Vec::new(),
        warm_started: false,
    }
}

/// The level of [`ladder`]'s first attempt.
fn first_level(size: usize, levels: usize, settings: &StepSettings, first: usize) -> usize {
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
/// the LCP has at least [`StepSettings::remember_regularization_from`]
/// unknowns, then the problem itself (warm), then each level on the relaxed
/// problem (cold).
pub(super) fn ladder(
    size: usize,
    levels: usize,
    settings: &StepSettings,
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
/// [`StepSettings::proximal_defect`] times ‖q‖∞, the centre moves to the
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
/// last solution and its basis ([`StepSettings::compliance_continuation`]
/// stages): the defect is C|z − z⁰|, so each stage takes it down a
/// hundredfold where the passes could not. Measured on a 1 kg box under
/// 10⁶ kg among the stacks of `tests/mass_ratios.rs` (Moreau–Jean, in
/// space): 4.8e-2 m/s after the passes at ε = 1e-4 (it used to be taken, and
/// the heavy box sank 0.22 mm), 4.5e-3 at 1e-6, 4.8e-9 at 1e-8, within the
/// bound and without a pivot. The bound is never below the resolution of
/// the velocity the impulses make, ε max Δᵢ|zᵢ| (`diagonal` is Δ).
#[allow(clippy::too_many_arguments)]
pub(super) fn proximal_passes(
    q: &DVector<f64>,
    weights: &[f64],
    diagonal: &[f64],
    epsilon: f64,
    centre: &mut DVector<f64>,
    mut solution: LcpSolution,
    settings: &StepSettings,
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

/// The contact LCP (29) a scheme poses for one solve: the contacts, W (M⁻¹
/// or the joints' Schur complement), the velocity without contact impulses
/// and the scheme's right-hand-side terms.
pub struct ContactProblem<'a> {
    /// The contacts, in the order of the LCP's blocks.
    pub contacts: &'a [&'a Contact],
    /// W, the map from generalized impulse to velocity change.
    pub map: MassInverse<'a>,
    /// Generalized velocities of the model.
    pub dof: usize,
    /// v*, the velocity without contact impulses.
    pub free: &'a DVector<f64>,
    /// Added to each contact's normal row: γ/h (Stewart–Trinkle), ε_N γ_N^A
    /// (Moreau–Jean) or 0 (Anitescu–Potra).
    pub normal_terms: &'a [f64],
    /// Added to the friction rows, contact after contact (ε_T D̃ᵀu^A of
    /// Moreau–Jean); empty for none.
    pub friction_terms: &'a [f64],
    /// The scheme's relaxation of `normal_terms`, solved with the
    /// regularization when the LCP itself fails (Stewart–Trinkle's γ ≥ 0).
    pub relaxed_normal_terms: Option<&'a [f64]>,
    /// μ per contact.
    pub mu: &'a [f64],
    /// Moreau–Jean's predictive activation done inside the NSGS sweeps
    /// (see [`Activation`]); `None`: every contact takes part.
    pub activation: Option<Activation<'a>>,
}

/// Contacts that take part only once the velocity would close them: a
/// contact j with `initially[j]` false carries no impulse until, before the
/// first sweep (at the warm start's velocity) or at one of the sweeps'
/// residual checks (every few sweeps), g_j + `lead`·γ_Nj(u) <
/// −`tolerance` at the current velocity u; from then on it takes part. The
/// solve ends when the residual is met and no contact joins at that check:
/// the fixed point of Moreau–Jean's rounds ([`super::moreau_jean`]), reached
/// without restarting the sweeps for each round. Joining at every check
/// rather than only at convergence lets a load travel through new contacts
/// in the same sweeps; a contact that an intermediate velocity closes joins
/// though the final one might not have (the silo's index set: the same
/// mean size, 8,079 unknowns against 8,078 with restarted rounds),
/// and then only holds u_N^E ≥ −ε_N u_N^A like any contact of 𝓗. Only NSGS
/// on block-diagonal W honours it ([`ContactSolver::activates`]).
#[derive(Debug, Clone, Copy)]
pub struct Activation<'a> {
    /// g_N at the point of prediction (q^M), per contact.
    pub gaps: &'a [f64],
    /// Whether each contact takes part from the start.
    pub initially: &'a [bool],
    /// γh: the gap predicted at u is g + γh·γ_N(u).
    pub lead: f64,
    /// A predicted gap below −tolerance activates, m.
    pub tolerance: f64,
}

/// The solver of [`ContactProblem`]s and what it remembers between steps:
/// the bases by contact identity and the regularization that the islands
/// needed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ContactSolver {
    /// The bases of the last solve by contact identity, for every form.
    warm: WarmStart,
    /// The impulses of the last solve in which each contact took part, the
    /// centre of the proximal shift and NSGS's warm start.
    impulses: LastImpulses,
    /// The ladder level that solved each body's island last time, by the
    /// body's first velocity index.
    levels: HashMap<usize, usize>,
    /// The level that solved the last dense LCP.
    dense_level: usize,
    /// Keep each solve's LCP when it has at most this many unknowns (for
    /// `--dump-lcp`); `None`: keep none.
    #[serde(skip)]
    pub keep_lcp: Option<usize>,
    /// Solve by NSGS within these limits instead of Lemke (rigid bodies,
    /// block-diagonal W); set from the parameters each step.
    #[serde(skip)]
    pub nsgs: Option<NsgsLimits>,
    /// NSGS sweeps since [`Self::begin_step`].
    #[serde(skip)]
    sweeps: usize,
}

/// What the solver reuses from solve to solve; not memory (a solve's result
/// does not depend on it), kept by the stepper apart from the checkpoints.
#[derive(Debug, Clone, Default)]
pub struct SolveBuffers {
    /// NSGS's buffers.
    nsgs: nsgs::Workspace,
    /// The islands of a problem.
    islands: Islands,
    /// What the solve records, swapped into the solver's memory when every
    /// island is solved: the bases, the impulses and the ladder levels.
    warm: WarmStart,
    impulses: LastImpulses,
    levels: HashMap<usize, usize>,
    /// The first friction row of each contact.
    starts: Vec<usize>,
    /// The islands solved earlier in the step, or carried from the step
    /// before ([`memo`]).
    memo: memo::Memo,
    /// Each island's data and solve ([`island`]), and the two threads'
    /// work spaces.
    jobs: Vec<IslandJob>,
    work: [IslandWork; 2],
}

impl SolveBuffers {
    /// Starts a step at time `t`: only the islands of the step that ended
    /// at `t` may be reused, under [`memo::Strict`]'s checks.
    pub fn begin_step(&mut self, t: f64) {
        self.memo.begin_step(t);
    }

    /// Ends a step, accepted, at time `t`.
    pub fn end_step(&mut self, t: f64) {
        self.memo.end_step(t);
    }
}

impl ContactSolver {
    /// A solver's memory as a snapshot kept it: the warm start, the last
    /// impulses by contact, the ladder levels by body and of the dense LCP.
    pub fn restored(
        warm: WarmStart,
        impulses: LastImpulses,
        levels: HashMap<usize, usize>,
        dense_level: usize,
    ) -> Self {
        Self {
            warm,
            impulses,
            levels,
            dense_level,
            ..Self::default()
        }
    }

    /// Takes the solver of the coming step from `params` (Lemke, or NSGS
    /// with its tolerance and sweep limit) and zeroes its sweep count.
    pub fn begin_step(&mut self, params: &Params, settings: &StepSettings) {
        self.nsgs = (params.solver == SolverKind::Nsgs).then_some(NsgsLimits {
            tolerance: params.tolerance,
            max_sweeps: params.max_iterations,
            circular: params.cone() == FrictionCone::Circular,
            acceleration: super::nsgs::DEFAULT_ACCELERATION,
            threads: settings.threads,
        });
        self.sweeps = 0;
    }

    /// Whether a solve keeps its LCP of `size` unknowns ([`Self::keep_lcp`]).
    fn keeps(&self, size: usize) -> bool {
        self.keep_lcp.is_some_and(|most| size <= most)
    }

    /// NSGS sweeps since [`Self::begin_step`].
    pub fn sweeps(&self) -> usize {
        self.sweeps
    }

    /// Forgets the warm start and the regularization levels.
    pub fn clear(&mut self) {
        self.warm.clear();
        self.impulses.clear();
        self.levels.clear();
        self.dense_level = 0;
    }

    /// Solves `problem`, posed in formulation `form` (a tag for the warm
    /// start: a basis is reused only in the same formulation; the form also
    /// chooses the method, see [`Form`]). The velocity of the solution is
    /// v* + W J z.
    pub fn solve(
        &mut self,
        problem: &ContactProblem<'_>,
        form: Form,
        settings: &StepSettings,
        buffers: &mut SolveBuffers,
    ) -> ContactSolution {
        match problem.map {
            MassInverse::Diagonal(w) => match self.nsgs {
                Some(limits) => self.solve_nsgs(problem, w.as_slice(), limits, buffers),
                None => self.solve_islands(
                    problem,
                    w.as_slice(),
                    form,
                    form.frictionless_start(),
                    settings,
                    buffers,
                ),
            },
            MassInverse::Dense(_) | MassInverse::Blocks(_) => {
                self.solve_dense(problem, form, settings)
            }
        }
    }

    /// Whether [`Self::solve`] honours [`ContactProblem::activation`] for a
    /// model whose W is `map`: NSGS on block-diagonal W.
    pub fn activates(&self, map: &MassInverse<'_>) -> bool {
        self.nsgs.is_some() && matches!(map, MassInverse::Diagonal(_))
    }

    /// [`Self::solve`] by NSGS, warm-started from the impulses each contact
    /// had in the last solve it took part in.
    fn solve_nsgs(
        &mut self,
        problem: &ContactProblem<'_>,
        w: &[f64],
        limits: NsgsLimits,
        buffers: &mut SolveBuffers,
    ) -> ContactSolution {
        let solved = nsgs::solve(problem, w, &self.impulses, limits, &mut buffers.nsgs);
        self.sweeps += solved.sweeps;
        let layout = Layout::of(problem.contacts);
        let starts = friction_starts(problem.contacts);
        if solved.status == LcpStatus::Solved {
            self.impulses.clear();
            for (j, c) in problem.contacts.iter().enumerate() {
                let k = c.jacobian.friction_count();
                let normal = solved.z[layout.normal(j)];
                let beta = &solved.z.as_slice()[starts[j]..starts[j] + k];
                // A contact without impulse is kept as none: every reader
                // takes a missing contact for zeros (the 5,000-grain silo
                // has ten candidates for each contact that carries a load).
                if normal == 0.0 && beta.iter().all(|&b| b == 0.0) {
                    continue;
                }
                self.impulses
                    .insert(c.id, std::iter::once(normal).chain(beta.iter().copied()));
            }
            // A later Lemke solve starts afresh.
            self.warm.clear();
        }
        // The size of (29) over the contacts that took part (k + 2 unknowns
        // a contact).
        let lcp_size = solved.active.as_ref().map_or(layout.size(), |active| {
            problem
                .contacts
                .iter()
                .zip(active)
                .filter(|(_, on)| **on)
                .map(|(c, _)| c.jacobian.friction_count() + 2)
                .sum()
        });
        // The LCP (29) over the contacts that took part, when NSGS solved one.
        let lcp = (self.keeps(lcp_size) && nsgs::solves_lcp(problem, &limits))
            .then(|| dense::taking_part_lcp(problem, solved.active.as_deref()));
        ContactSolution {
            status: solved.status,
            residual: solved.residual,
            pivots: 0,
            unknowns: Unknowns::Pyramid(layout),
            z: solved.z,
            w: solved.w,
            velocity: problem.free + solved.velocity_change,
            lcp_size,
            islands: usize::from(layout.size() > 0),
            largest_island: layout.size(),
            reused: 0,
            sweeps: solved.sweeps,
            lcp,
            active: solved.active,
        }
    }

    /// The right-hand side of (29) for contacts `members` of `problem`, laid
    /// out by `lcp`, into `q`: Jᵀv* plus the scheme's terms `normal_terms`
    /// and `problem.friction_terms`.
    fn rhs(
        problem: &ContactProblem<'_>,
        lcp: &ContactLcp<'_>,
        members: &[usize],
        starts: &[usize],
        normal_terms: &[f64],
        q: &mut Vec<f64>,
    ) {
        q.clear();
        q.resize(lcp.layout.size(), 0.0);
        for (local, &j) in members.iter().enumerate() {
            let c = problem.contacts[j];
            for r in 0..=c.jacobian.friction_count() {
                q[lcp.index(local, r)] = c.jacobian.dot(r, problem.free);
            }
        }
        let mut row = 0;
        for (local, &j) in members.iter().enumerate() {
            q[lcp.layout.normal(local)] += normal_terms[j];
            let k = problem.contacts[j].jacobian.friction_count();
            if !problem.friction_terms.is_empty() {
                for i in 0..k {
                    q[row + i] += problem.friction_terms[starts[j] + i];
                }
            }
            row += k;
        }
    }

    fn solve_islands(
        &mut self,
        problem: &ContactProblem<'_>,
        w: &[f64],
        form: Form,
        frictionless_start: bool,
        settings: &StepSettings,
        buffers: &mut SolveBuffers,
    ) -> ContactSolution {
        let contacts = problem.contacts;
        let layout = Layout::of(contacts);
        let starts = &mut buffers.starts;
        starts.clear();
        starts.extend(contacts.iter().scan(0, |row, c| {
            let start = *row;
            *row += c.jacobian.friction_count();
            Some(start)
        }));
        let starts = &buffers.starts;
        let size = layout.size();
        let mut solution = ContactSolution {
            status: LcpStatus::Solved,
            residual: 0.0,
            pivots: 0,
            unknowns: Unknowns::Pyramid(layout),
            z: DVector::zeros(size),
            w: DVector::zeros(size),
            velocity: problem.free.clone(),
            lcp_size: size,
            islands: 0,
            largest_island: 0,
            reused: 0,
            sweeps: 0,
            lcp: self.keeps(size).then(|| Lcp {
                m: DMatrix::zeros(size, size),
                q: DVector::zeros(size),
            }),
            active: None,
        };
        let mut velocity_change = DVector::zeros(problem.dof);
        let velocity_scale = settings.velocity_scale(problem.free);
        // What this solve records, kept only when every island is solved.
        buffers.warm.begin(form);
        buffers.impulses.clear();
        buffers.levels.clear();
        buffers.islands.find(contacts);
        // Each island's data, and whether the step solved its LCP already,
        // bit for bit ([`memo`]).
        buffers.memo.begin();
        let count = buffers.islands.len();
        if buffers.jobs.len() < count {
            buffers.jobs.resize_with(count, IslandJob::default);
        }
        for g in 0..count {
            let members = buffers.islands.get(g);
            let job = &mut buffers.jobs[g];
            job.solved = None;
            global_indices(members, contacts, starts, layout, &mut job.global_of);
            // The island's contacts' identities, friction directions and
            // body blocks.
            job.ids.clear();
            job.ids.extend(members.iter().map(|&j| contacts[j].id));
            job.friction.clear();
            job.friction.extend(
                members
                    .iter()
                    .map(|&j| contacts[j].jacobian.friction_count()),
            );
            job.blocks.clear();
            job.blocks.extend(
                members
                    .iter()
                    .flat_map(|&j| contacts[j].jacobian.blocks().iter().map(|b| b.start)),
            );
            let velocities = &mut job.velocities;
            velocities.clear();
            for &j in members {
                for b in contacts[j].jacobian.blocks() {
                    velocities.extend(b.range());
                }
            }
            velocities.sort_unstable();
            velocities.dedup();
            let found = {
                let terms = |j: usize, key: &mut Vec<u64>| {
                    let c = contacts[j];
                    let k = c.jacobian.friction_count();
                    key.push(problem.mu[j].to_bits());
                    key.push(problem.normal_terms[j].to_bits());
                    if let Some(relaxed) = problem.relaxed_normal_terms {
                        key.push(relaxed[j].to_bits());
                    }
                    if !problem.friction_terms.is_empty() {
                        key.extend(
                            problem.friction_terms[starts[j]..starts[j] + k]
                                .iter()
                                .map(|x| x.to_bits()),
                        );
                    }
                };
                let velocities = &*velocities;
                let on_velocities = |key: &mut Vec<u64>| {
                    key.push(form as u64);
                    key.push(u64::from(frictionless_start));
                    for &i in velocities {
                        key.push(i as u64);
                        key.push(problem.free[i].to_bits());
                        key.push(w[i].to_bits());
                    }
                };
                buffers
                    .memo
                    .find(members, contacts, terms, on_velocities, &mut job.key)
            };
            job.local = Layout {
                contacts: members.len(),
                friction: job.friction.iter().sum(),
            };
            job.first = job
                .blocks
                .iter()
                .filter_map(|b| self.levels.get(b))
                .copied()
                .max()
                .unwrap_or(0);
            let rungs = settings.compliance.len();
            let plain_first = first_level(job.local.size(), rungs, settings, job.first) == 0;
            // An island carried from the step before is reused only where a
            // solve would give it again ([`memo::Strict`]).
            job.found = found.filter(|&i| {
                let found = buffers.memo.entry(i);
                !found.carried
                    || found.strict.as_ref().is_some_and(|strict| {
                        plain_first
                            && strict.cancellation <= settings.polish_cancellation * velocity_scale
                            && self.warm.basis(form, &job.ids, &job.friction, job.local)
                                == strict.warm
                    })
            });
        }
        // The islands to compute, on two threads from PARALLEL_UNKNOWNS
        // unknowns ([`island`]).
        let shared = island::Shared {
            problem,
            w,
            form,
            frictionless_start,
            settings,
            velocity_scale,
            starts,
        };
        let [first, second] = &mut buffers.work;
        first.todo.clear();
        first
            .todo
            .extend((0..count).filter(|&g| buffers.jobs[g].found.is_none()));
        let unknowns: usize = first
            .todo
            .iter()
            .map(|&g| buffers.jobs[g].local.size())
            .sum();
        let pair = (settings.threads >= 2
            && solution.lcp.is_none()
            && first.todo.len() >= 2
            && unknowns >= island::PARALLEL_UNKNOWNS
            && crate::pair_thread::pays())
        .then(crate::pair_thread::shared)
        .flatten();
        let (jobs, islands) = (&buffers.jobs, &buffers.islands);
        match pair {
            Some(pair) => {
                let queue = island::Queue::largest_first(jobs, &first.todo);
                let this = &*self;
                crate::pair_thread::both(
                    Some(pair),
                    true,
                    || this.solve_taken(&shared, jobs, islands, first, &queue),
                    || this.solve_taken(&shared, jobs, islands, second, &queue),
                );
            }
            None => self.solve_jobs(&shared, jobs, islands, first, solution.lcp.as_mut()),
        }
        for work in &mut buffers.work {
            for (g, solved) in work.done.drain(..) {
                buffers.jobs[g].solved = Some(solved);
            }
        }
        // The islands in their order, as one loop over them would take them.
        for g in 0..count {
            let members = buffers.islands.get(g);
            let job = &mut buffers.jobs[g];
            let (ids, friction, local) = (&job.ids, &job.friction, job.local);
            if let Some(i) = job.found {
                let found = buffers.memo.entry(i);
                for (i, &g) in job.global_of.iter().enumerate() {
                    solution.z[g] = found.z[i];
                    solution.w[g] = found.w[i];
                }
                if let Some(dump) = solution.lcp.as_mut() {
                    // The island's LCP for the dump, as solved (no
                    // compliance, no equilibration).
                    let work = &mut buffers.work[0];
                    let jacobians = members.iter().map(|&j| &contacts[j].jacobian).collect();
                    work.mu.clear();
                    work.mu.extend(members.iter().map(|&j| problem.mu[j]));
                    let storage = std::mem::take(&mut work.lcp);
                    let lcp = ContactLcp::new_in(jacobians, w, &work.mu, storage);
                    let mut q = std::mem::take(&mut work.q);
                    Self::rhs(problem, &lcp, members, starts, problem.normal_terms, &mut q);
                    write_island(dump, &job.global_of, &lcp.to_dense(), &q, |_| 1.0);
                    work.q = q;
                    work.lcp = lcp.into_storage();
                }
                for &(i, dv) in &found.velocity {
                    velocity_change[i] += dv;
                }
                record_impulses(&mut buffers.impulses, ids, friction, local, &found.z);
                buffers.warm.add(ids, friction, local, &found.basis);
                for &b in &job.blocks {
                    buffers.levels.insert(b, 0);
                }
                solution.islands += 1;
                solution.reused += 1;
                solution.largest_island = solution.largest_island.max(local.size());
                solution.residual = solution.residual.max(found.residual);
                buffers.memo.keep_found(i);
                continue;
            }
            // Not computed: an island before it failed.
            let Some(island) = job.solved.take() else {
                break;
            };
            solution.islands += 1;
            solution.largest_island = solution.largest_island.max(local.size());
            solution.pivots += island.pivots;
            solution.residual = solution.residual.max(island.residual);
            for &b in &job.blocks {
                buffers.levels.insert(b, island.level);
            }
            if island.status != LcpStatus::Solved {
                solution.status = island.status;
                break;
            }
            for (i, &g) in job.global_of.iter().enumerate() {
                solution.z[g] = island.z[i];
                solution.w[g] = island.w[i];
            }
            for &(i, dv) in &island.velocity {
                velocity_change[i] += dv;
            }
            // The scheme's own LCP (no compliance) is remembered; the
            // island's velocities are its own, so the change on them is
            // this island's alone.
            if island.level == 0 {
                buffers.memo.keep(&mut job.key, members, contacts, |entry| {
                    entry.z.clear();
                    entry.z.extend_from_slice(island.z.as_slice());
                    entry.w.clear();
                    entry.w.extend_from_slice(island.w.as_slice());
                    entry.basis.clone_from(&island.basis);
                    entry.velocity.clone_from(&island.velocity);
                    entry.residual = island.residual;
                    entry.strict = island.strict.clone();
                });
            }
            record_impulses(
                &mut buffers.impulses,
                ids,
                friction,
                local,
                island.z.as_slice(),
            );
            buffers.warm.add(ids, friction, local, &island.basis);
            // The velocity change's storage goes back to the thread with
            // fewer spares.
            let [first, second] = &mut buffers.work;
            let fewer = if first.spare.len() <= second.spare.len() {
                first
            } else {
                second
            };
            fewer.spare.push(island.velocity);
        }
        if solution.status == LcpStatus::Solved {
            std::mem::swap(&mut self.impulses, &mut buffers.impulses);
            std::mem::swap(&mut self.levels, &mut buffers.levels);
            std::mem::swap(&mut self.warm, &mut buffers.warm);
        }
        // v* + W J z, the impulses summed before v* is added.
        solution.velocity += &velocity_change;
        solution
    }
}

/// An island's impulses z (laid out as (29) by `local`, the contacts'
/// `friction` directions each) into `impulses` by contact: c_n, then β.
fn record_impulses(
    impulses: &mut LastImpulses,
    ids: &[ContactId],
    friction: &[usize],
    local: Layout,
    z: &[f64],
) {
    let mut first = 0;
    for (j, (&id, &k)) in ids.iter().zip(friction).enumerate() {
        impulses.insert(
            id,
            std::iter::once(z[local.normal(j)]).chain(z[first..first + k].iter().copied()),
        );
        first += k;
    }
}

/// An island's LCP (its operator `dense`, equilibrated by `scale`, and its
/// right-hand side `q`) into the whole problem's `dump` at the indices
/// `global_of`, without the equilibration.
fn write_island(
    dump: &mut Lcp,
    global_of: &[usize],
    dense: &DMatrix<f64>,
    q: &[f64],
    scale: impl Fn(usize) -> f64,
) {
    for (i, &gi) in global_of.iter().enumerate() {
        dump.q[gi] = q[i];
        for (k, &gk) in global_of.iter().enumerate() {
            dump.m[(gi, gk)] = dense[(i, k)] / (scale(i) * scale(k));
        }
    }
}
