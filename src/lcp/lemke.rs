//! Lemke's complementary pivot method with lexicographic degeneracy resolution.
//!
//! This is Cottle, Pang & Stone, *The Linear Complementarity Problem*, Algo. 4.4.1,
//! the method Stewart & Trinkle (1996, §4) used. The augmented system is
//!
//! ```text
//!     w − M z − d z₀ = q,      w, z, z₀ ≥ 0,   wᵢ zᵢ = 0,
//! ```
//!
//! with covering vector d > 0 (default e = (1, …, 1)). The method keeps the
//! basis B (n of the columns of [I, −M, −d]) and q̄ = B⁻¹q. The minimum-ratio
//! test is lexicographic on the rows of [q̄ | B⁻¹] (CPS §4.9), which keeps every
//! tableau lexico-positive so degenerate problems cannot cycle. The
//! representation of B⁻¹ is refactorized from the basis columns every
//! [`LemkeOptions::refactor_every`] pivots and the final basis is solved once
//! more, so rounding does not accumulate along long pivot paths.
//!
//! The pivoting rules live here once; two representations of B⁻¹ carry them:
//! - [`solve`]: the explicit tableau ([`dense`]), B⁻¹ as an n × n matrix and an
//!   O(n²) rank-one update per pivot — the reference implementation;
//! - [`solve_structured`]: after J. E. Lloyd, "Fast implementation of Lemke's
//!   algorithm for rigid body contact simulation" (UBC TR-2005-01), the basis
//!   is partitioned by the unit columns of its basic wⱼ, so that B⁻¹ is kept
//!   only on the m columns those do not cover ([`compressed`]: n × m for the
//!   m basic z's and z₀, a pivot in O(n·m)), and M is reached only through
//!   [`LcpMatrix`] — for a contact problem through the contacts' Jacobian
//!   blocks and the bodies' mass blocks, so M is never formed. It is the
//!   explicit tableau's arithmetic on the columns that are not unit vectors:
//!   the same pivots up to rounding, and the same noise scale for the
//!   tolerances. (The rows of the basic w's are kept because max |B⁻¹| —
//!   the scale that tells a pivot entry from rounding noise — is known only
//!   with them; inverting the m × m block S = A_KC alone leaves it bounded,
//!   not known, and piles of boxes then fail.)
//!   From [`LemkeOptions::product_form_from`] unknowns on (large islands,
//!   where m reaches the hundreds) B⁻¹ is kept in product form over a
//!   factorization of that block ([`product_form`]): for contacts, the
//!   sparse LU of its KKT form through the bodies' mass blocks and the
//!   contact Jacobians, Lloyd's per-pivot system, with max |B⁻¹| estimated.

mod compressed;
mod dense;
mod partition;
mod product_form;
mod tableau;

use super::budget::{self, Run};
use super::{Lcp, LcpError, LcpMatrix, LcpSolution, LcpStatus, Validation};
use nalgebra::{DMatrix, DVector};
use partition::Partition;
use std::sync::Arc;
use tableau::{Columns, Factor, NONE, Tableau, Var};

/// Knobs of Lemke's method. `Default` gives the textbook method from e.
#[derive(Debug, Clone, PartialEq)]
pub struct LemkeOptions {
    /// Pivot limit; `None` means [`default_max_pivots`] of the problem size.
    pub max_pivots: Option<usize>,
    /// A covering vector d > 0 other than e.
    pub covering: Option<DVector<f64>>,
    /// Warm start: the indices i whose zᵢ was basic in a previous solution (e.g.
    /// the previous time step's active set, [`LcpSolution::basis`]). If that basis
    /// is singular, or the warm run does not end `Solved`, a cold start follows.
    pub warm_start: Option<Vec<usize>>,
    /// A second warm start, tried when the first is singular or its run does
    /// not end `Solved`, before the cold start: e.g. the contacts' normal
    /// impulses alone when the previous basis with friction ends on a ray (a
    /// start from another complementary basis has none of the cold start's
    /// guarantees, so a smaller change of basis is more likely to succeed).
    pub warm_fallback: Option<Vec<usize>>,
    /// When the cold start from the covering vector ends on a ray, try this many
    /// advanced starts from other complementary bases (zᵢ basic for one index i,
    /// then for pairs {i, j}) before reporting `RayTermination`. Lemke's method
    /// from e provably works for copositive-plus M (and for the Stewart–Trinkle
    /// matrices, §3.2), but can end on a ray when a solution exists for others,
    /// e.g. bimatrix games (Cottle–Pang–Stone Example 4.4.23). 0 disables.
    pub restarts: usize,
    /// Break ties in the minimum-ratio test lexicographically (the default). With
    /// `false` ties go to the lowest row index, the textbook rule that can cycle
    /// on degenerate problems; it is kept to show why the default matters.
    pub lexicographic: bool,
    /// Relative tolerance: a pivot entry must exceed this times the entering
    /// column's largest entry; ratios closer than this (relatively) are ties.
    pub pivot_tolerance: f64,
    /// Refactorize B⁻¹ from scratch after this many pivots (at least the size
    /// of what is inverted, so the refactorization costs no more per pivot on
    /// average than an update).
    pub refactor_every: usize,
    /// A `Solved` result whose relative residual exceeds this is reported as
    /// `NumericalFailure` instead, unless it passes `max_backward_error`.
    pub max_residual: f64,
    /// [`solve_structured`] keeps B⁻¹ in product form over a factorization
    /// of the basis block ([`product_form`]: the matrix's own, e.g. a
    /// contact problem's sparse KKT form) from this many unknowns on, and
    /// the compressed tableau ([`compressed`]) below.
    pub product_form_from: usize,
    /// A `Solved` result that fails `max_residual` is still accepted when its
    /// basis, solved afresh and refined twice with the residual M z + q from
    /// M's own products, has a componentwise backward error
    /// ([`super::backward_error`]) of at most this: every row exact to within
    /// this fraction of the terms it is summed from. Rows of a light body
    /// carrying a heavy one sum terms 10⁶ times the data, and their rounding
    /// alone fails `max_residual`; a wrong basis leaves some row violated by
    /// a physical amount, far above roundoff relative to its terms.
    pub max_backward_error: f64,
    /// Keys whose ranks give the fractions fᵢ of the perturbed retries' p =
    /// δ max(1, ‖q‖∞) (1 + fᵢ), fᵢ = (rank of key i + ½)/n (see
    /// [`perturbed`], which ranks them only when a retry runs); `None`, or
    /// a length other than the LCP's, gives fᵢ = {iφ}. A caller whose rows
    /// persist from one solve to the next (contacts, by identity) passes
    /// keys that follow the rows, so that consecutive perturbed problems
    /// agree where their rows do and a warm start stays near their
    /// solution.
    pub perturbation_keys: Option<Arc<[u64]>>,
}

impl Default for LemkeOptions {
    fn default() -> Self {
        Self {
            max_pivots: None,
            covering: None,
            warm_start: None,
            warm_fallback: None,
            restarts: 32,
            lexicographic: true,
            pivot_tolerance: 1e-12,
            refactor_every: 64,
            max_residual: 1e-6,
            product_form_from: PRODUCT_FORM_FROM,
            max_backward_error: 1e-13,
            perturbation_keys: None,
        }
    }
}

/// The default of [`LemkeOptions::product_form_from`]. Below it the
/// compressed tableau is cheaper than any factorization's set-up; its
/// O(m³ + n·m²) factorizations and O(n·m) pivots grow with the m basic
/// columns, and from a few hundred unknowns on the product form's sparse
/// factorization costs less: on the generated piles of 100–210 bodies, 200
/// takes 5–15 % fewer instructions than 300 and leaves the pile of 22 the
/// same to the bit (no island of 200 there). A product-form run that fails
/// is retried on the compressed tableau ([`solve_structured`]).
pub const PRODUCT_FORM_FROM: usize = 200;

/// The default pivot limit for a problem of size n: generous enough for
/// Murty's exponential example up to n = 13, small enough to stop a runaway.
pub fn default_max_pivots(n: usize) -> usize {
    (100 * n).max(10_000)
}

/// Solves `lcp` with Lemke's method on the explicit tableau (the reference
/// implementation).
///
/// Errors only for invalid options; every algorithmic outcome is a status. When
/// rounding ruins a run (`NumericalFailure`: an ill-conditioned basis, as with the
/// rank-deficient contact Jacobians of a pile), the solve is repeated once with a
/// 100× larger pivot tolerance and a refactorization every 8 pivots.
pub fn solve(lcp: &Lcp, options: &LemkeOptions) -> Result<LcpSolution, LcpError> {
    solve_dense(&lcp.m, &lcp.q, options)
}

/// [`solve`], and where its runs end in `NumericalFailure` or on a ray,
/// [`solve_structured`] on the same M and q from the start, with the
/// pivots of both counted: the two are Lemke's method with the same rules
/// on different representations of B⁻¹, and on a degenerate LCP of a pile
/// at rest their roundings can part, one ending on a false ray or a failed
/// residual check where the other solves (an island of 440 unknowns of
/// `pile.ron` under NSGS on the pyramid: the explicit tableau failed after
/// 629 pivots, the structured runs solved it in 254, residual 4e-14). The
/// result of the second is returned unless the first was solved. A run
/// that stops at the pivot limit is not repeated: it has used its budget.
pub fn solve_either(lcp: &Lcp, options: &LemkeOptions) -> Result<LcpSolution, LcpError> {
    let first = solve(lcp, options)?;
    if !matches!(
        first.status,
        LcpStatus::NumericalFailure | LcpStatus::RayTermination
    ) {
        return Ok(first);
    }
    let mut second = solve_structured(&lcp.m, &lcp.q, options)?;
    second.pivots += first.pivots;
    Ok(second)
}

/// [`solve`] on a borrowed M and q (NSGS's local blocks, solved once per
/// contact and sweep, are not copied into an [`Lcp`]).
pub fn solve_dense(
    m: &DMatrix<f64>,
    q: &DVector<f64>,
    options: &LemkeOptions,
) -> Result<LcpSolution, LcpError> {
    solve_with::<_, dense::DenseBasis>(m, q, options)
}

/// Solves LCP(M, q) with Lemke's method for an M given as an [`LcpMatrix`],
/// keeping only the inverse of the basic z's block (Lloyd's method): the same
/// pivoting rules, statuses, pivot limit, retries and residual check as
/// [`solve`], without ever forming M or an n × n inverse.
pub fn solve_structured<M: LcpMatrix + ?Sized>(
    m: &M,
    q: &DVector<f64>,
    options: &LemkeOptions,
) -> Result<LcpSolution, LcpError> {
    let n = m.size();
    if q.len() != n {
        return Err(LcpError::Dimension {
            rows: n,
            cols: n,
            q_len: q.len(),
        });
    }
    if !m.magnitude().is_finite() {
        return Err(LcpError::NotFinite { what: "M" });
    }
    if q.iter().any(|x| !x.is_finite()) {
        return Err(LcpError::NotFinite { what: "q" });
    }
    if n < options.product_form_from {
        return solve_with::<M, compressed::CompressedBasis>(m, q, options);
    }
    let product = solve_with::<M, product_form::ProductForm>(m, q, options)?;
    if matches!(product.status, LcpStatus::Solved | LcpStatus::OverBudget) {
        return Ok(product);
    }
    // The product form decides its pivots against an estimate of max |B⁻¹|
    // (see [`product_form`]); on the degenerate LCPs of a settled pile that
    // estimate can refuse a true pivot and end on a false ray, or accept a
    // noisy one. The compressed tableau tracks max |B⁻¹| exactly, the
    // reference's decisions: measured on an island of 1,500 unknowns of
    // `pile_100.ron` at t = 2.97 s, the product form ended on a ray after
    // 29,383 pivots (14 s) and the compressed tableau solved it from the
    // same start in 1,135 pivots (0.46 s), residual 8e-17.
    let mut compressed = solve_with::<M, compressed::CompressedBasis>(m, q, options)?;
    compressed.pivots += product.pivots;
    Ok(compressed)
}

/// [`solve`] and [`solve_structured`] with the representation `F`.
fn solve_with<M: LcpMatrix + ?Sized, F: Factor<M>>(
    m: &M,
    q: &DVector<f64>,
    options: &LemkeOptions,
) -> Result<LcpSolution, LcpError> {
    let (first, cycled) = solve_once::<M, F>(m, q, options, Run::Cold)?;
    if matches!(first.status, LcpStatus::Solved | LcpStatus::OverBudget)
        || (first.status == LcpStatus::MaxPivots && !cycled)
    {
        return Ok(first);
    }
    let mut spent = first.pivots;
    // First the perturbed problems (see `perturbed`), then the retries of
    // the unperturbed one below.
    for delta in PERTURBATIONS {
        let mut next = perturbed::<M, F>(m, q, delta, options)?;
        spent += next.pivots;
        next.pivots = spent;
        if matches!(next.status, LcpStatus::Solved | LcpStatus::OverBudget) {
            return Ok(next);
        }
    }
    if first.status == LcpStatus::RayTermination {
        let mut first = first;
        first.pivots = spent;
        return Ok(first);
    }
    // Rounding broke the lexicographic order (a basis repeated) or the basis
    // became ill-conditioned: retry with a larger pivot tolerance and frequent
    // refactorization, then with a covering vector whose distinct entries break
    // the ties of a degenerate q from the first pivot on.
    let n = m.size();
    let mut retries = vec![LemkeOptions {
        pivot_tolerance: options.pivot_tolerance * 100.0,
        refactor_every: options.refactor_every.min(8),
        warm_start: None,
        warm_fallback: None,
        ..options.clone()
    }];
    if options.covering.is_none() {
        retries.push(LemkeOptions {
            covering: Some(DVector::from_fn(n, |i, _| 1.0 + i as f64 / n.max(1) as f64)),
            warm_start: None,
            warm_fallback: None,
            ..options.clone()
        });
    }
    let mut last = first;
    last.pivots = spent;
    for retry in retries {
        let (mut next, _) = solve_once::<M, F>(m, q, &retry, Run::Retry)?;
        spent += next.pivots;
        next.pivots = spent;
        let done = matches!(next.status, LcpStatus::Solved | LcpStatus::OverBudget);
        last = next;
        if done {
            break;
        }
    }
    Ok(last)
}

/// The fractions (rank + ½)/n of `keys` (ties by index): n distinct
/// values 1/n apart in (0, 1), far above rounding at any δ, where the keys'
/// own values (hashes) could come within 1/n² of each other.
pub fn fractions_by_rank(keys: &[u64]) -> Vec<f64> {
    let mut order: Vec<(u64, usize)> = keys.iter().copied().zip(0..).collect();
    order.sort_unstable();
    let n = keys.len() as f64;
    let mut fractions = vec![0.0; keys.len()];
    for (rank, &(_, i)) in order.iter().enumerate() {
        fractions[i] = (rank as f64 + 0.5) / n;
    }
    fractions
}

/// Relative sizes δ of the perturbations of q that [`solve_with`] tries
/// when a run fails numerically (see [`perturbed`]).
const PERTURBATIONS: [f64; 2] = [1e-8, 1e-7];

/// Lemke on LCP(M, q + p), p = δ max(1, ‖q‖∞) (1 + fᵢ) with fᵢ the
/// ranks of [`LemkeOptions::perturbation_keys`] or else {iφ}, the fractional part of i
/// times the golden ratio, from the warm starts and then cold, checked
/// against the unperturbed q.
///
/// The lexicographic rule is exact arithmetic's answer to degeneracy: it
/// resolves ties as if q carried the perturbation (ε, ε², …, εⁿ) for an
/// infinitesimal ε (Cottle–Pang–Stone §4.9). In floating point a tie is
/// recognised only within a tolerance, and on the highly degenerate LCPs
/// of a settled pile (every λ row has qᵢ = 0, resting contacts have qᵢ
/// ≈ 0, and the normals of a box's corner contacts are dependent) the
/// path then passes through bases whose max |B⁻¹| reaches 10¹⁴ and ends
/// on a false ray or a wrong basis. A small explicit perturbation with
/// distinct entries removes the ties instead of resolving them: measured
/// on three islands of 940–1,500 unknowns of `pile_100.ron` whose
/// unperturbed runs failed (residual 2e-2), δ = 1e-8 or 1e-7 solved each
/// in 420–590 pivots. The solution of the perturbed problem satisfies the
/// original to within the perturbation (w ≥ −2δ max(1, ‖q‖∞), z and z·w
/// as exact); it is accepted only when that passes `max_residual`.
fn perturbed<M: LcpMatrix + ?Sized, F: Factor<M>>(
    m: &M,
    q: &DVector<f64>,
    delta: f64,
    options: &LemkeOptions,
) -> Result<LcpSolution, LcpError> {
    const GOLDEN: f64 = 0.618_033_988_749_894_9;
    let scale = q.amax().max(1.0);
    let given = options
        .perturbation_keys
        .as_deref()
        .filter(|keys| keys.len() == q.len())
        .map(fractions_by_rank);
    let fraction = |i: usize| {
        given
            .as_ref()
            .map_or_else(|| (i as f64 * GOLDEN).fract(), |f| f[i])
    };
    let shifted = DVector::from_fn(q.len(), |i, _| q[i] + delta * scale * (1.0 + fraction(i)));
    let n = m.size();
    let max_pivots = options.max_pivots.unwrap_or_else(|| default_max_pivots(n));
    // Checked against the unperturbed q: the final basis of the perturbed
    // problem is usually that of the unperturbed one too (the lexicographic
    // rule's limit ε → 0), and then its own solve is exact; otherwise the
    // perturbed solution is taken if it passes the residual check.
    let check = |mut solution: LcpSolution| {
        if solution.status == LcpStatus::Solved {
            if let Ok(mut exact) = feasible_warm(m, q, &solution.basis, options) {
                exact.pivots = solution.pivots;
                exact.warm_started = solution.warm_started;
                return exact;
            }
            let w = super::product_plus(m, &solution.z, q);
            let residual = Validation::of(&solution.z, &w, scale).relative();
            solution.w = w;
            solution.residual = residual;
            if residual.is_nan() || residual > options.max_residual {
                solution.status = LcpStatus::NumericalFailure;
            }
        }
        solution
    };
    // From the warm starts first, as the unperturbed run does: a settled
    // pile's basis carries over from step to step.
    let mut spent = 0;
    let warm_starts = [&options.warm_start, &options.warm_fallback];
    for basis in warm_starts.into_iter().flatten() {
        let handed = match feasible_warm(m, &shifted, basis, options) {
            Ok(solution) => {
                let mut solution = check(solution);
                if solution.status == LcpStatus::Solved {
                    solution.pivots = spent;
                    return Ok(solution);
                }
                None
            }
            Err(handed) => handed,
        };
        if let Some(mut tableau) = Tableau::<M, F>::warm(m, &shifted, basis, handed, options) {
            tableau.plain = true;
            let status = budget::running(Run::PerturbedWarm, || {
                tableau.run(max_pivots.saturating_sub(spent))
            });
            spent += tableau.pivots;
            if status == LcpStatus::OverBudget {
                let mut solution = tableau.finish(status, true);
                solution.pivots = spent;
                return Ok(solution);
            }
            if status == LcpStatus::Solved {
                let mut solution = check(tableau.finish(status, true));
                if solution.status == LcpStatus::Solved {
                    solution.pivots = spent;
                    return Ok(solution);
                }
            }
        }
    }
    let Some(mut tableau) = Tableau::<M, F>::cold(m, &shifted, vec![1.0; n], options) else {
        return Ok(no_cold_start(q, spent));
    };
    tableau.plain = true;
    let status = budget::running(Run::PerturbedCold, || {
        tableau.run(max_pivots.saturating_sub(spent))
    });
    let mut solution = check(tableau.finish(status, false));
    solution.pivots += spent;
    Ok(solution)
}

/// The result when not even the cold start's tableau can be built (products
/// of finite data that overflow): z = 0, a numerical failure after the
/// `pivots` already spent.
fn no_cold_start(q: &DVector<f64>, pivots: usize) -> LcpSolution {
    LcpSolution {
        z: DVector::zeros(q.len()),
        w: q.clone(),
        status: LcpStatus::NumericalFailure,
        pivots,
        residual: f64::INFINITY,
        basis: Vec::new(),
        warm_started: false,
    }
}

/// One run of the method (from the warm starts, then from the covering
/// vector, counted as `cold`); the flag says whether a basis repeated
/// (cycling).
fn solve_once<M: LcpMatrix + ?Sized, F: Factor<M>>(
    m: &M,
    q: &DVector<f64>,
    options: &LemkeOptions,
    cold: Run,
) -> Result<(LcpSolution, bool), LcpError> {
    let n = m.size();
    let max_pivots = options.max_pivots.unwrap_or_else(|| default_max_pivots(n));
    let covering = match &options.covering {
        Some(d) => {
            if d.len() != n || d.iter().any(|&x| !(x.is_finite() && x > 0.0)) {
                return Err(LcpError::Covering { expected: n });
            }
            d.as_slice().to_vec()
        }
        None => vec![1.0; n],
    };
    let warm_starts = [&options.warm_start, &options.warm_fallback];
    for basis in warm_starts.into_iter().flatten() {
        if let Some(&index) = basis.iter().find(|&&i| i >= n) {
            return Err(LcpError::WarmStart { index, n });
        }
    }

    let mut pivots_spent = 0;
    for basis in warm_starts.into_iter().flatten() {
        let handed = match feasible_warm(m, q, basis, options) {
            Ok(solution) => return Ok((solution, false)),
            Err(handed) => handed,
        };
        if let Some(mut tableau) = Tableau::<M, F>::warm(m, q, basis, handed, options) {
            let status = budget::running(Run::Warm, || {
                tableau.run(max_pivots.saturating_sub(pivots_spent))
            });
            pivots_spent += tableau.pivots;
            if matches!(status, LcpStatus::Solved | LcpStatus::OverBudget) {
                let mut solution = tableau.finish(status, true);
                solution.pivots = pivots_spent;
                return Ok((solution, false));
            }
        }
    }
    let Some(mut tableau) = Tableau::<M, F>::cold(m, q, covering, options) else {
        return Ok((no_cold_start(q, pivots_spent), false));
    };
    let status = budget::running(cold, || {
        tableau.run(max_pivots.saturating_sub(pivots_spent))
    });
    let cycled = tableau.cycled;
    let mut solution = tableau.finish(status, false);
    solution.pivots += pivots_spent;
    if solution.status == LcpStatus::RayTermination {
        for start in restart_bases(n).take(options.restarts) {
            let Some(mut tableau) = Tableau::<M, F>::warm(m, q, &start, None, options) else {
                continue;
            };
            let status = budget::running(Run::Retry, || tableau.run(max_pivots));
            let pivots = tableau.pivots;
            if matches!(status, LcpStatus::Solved | LcpStatus::OverBudget) {
                let mut restarted = tableau.finish(status, false);
                restarted.pivots += solution.pivots;
                return Ok((restarted, false));
            }
            solution.pivots += pivots;
        }
    }
    Ok((solution, cycled))
}

/// The solution at a warm basis that is already feasible, without a
/// tableau: one solve of B x = q through the [`Partition`] (an LU of the m × m
/// block A_KC and m columns of M), where building the tableau's factor would
/// also form the n × m rest of B⁻¹ for pivots that are not needed. This is
/// the common case of a resting scene, whose active set does not change from
/// one step to the next. `Err` when B is singular, x is not feasible by a
/// margin of the pivot tolerance, or the residual check fails: the caller
/// then runs the tableau from the same basis, which decides as before, and
/// builds its factor from the [`BasisSolve`] handed back (`None` when B was
/// singular), which the partition's columns of M then are not formed again
/// for.
fn feasible_warm<M: LcpMatrix + ?Sized>(
    m: &M,
    q: &DVector<f64>,
    z_basic: &[usize],
    options: &LemkeOptions,
) -> Result<LcpSolution, Option<Box<BasisSolve>>> {
    let n = m.size();
    let mut basis: Vec<Var> = (0..n).collect();
    for &i in z_basic {
        basis[i] = n + i;
    }
    // z₀'s column (the covering vector) is not among the basis columns.
    let columns = Columns {
        m,
        covering: Vec::new(),
        n,
    };
    let solver = BasisSolve::of(&columns, &basis, options.product_form_from).ok_or(None)?;
    let Some(x) = solver.solve(&columns, q.as_slice()) else {
        return Err(Some(Box::new(solver)));
    };
    let basic: Vec<usize> = (0..n).filter(|&i| basis[i] >= n).collect();
    let floor = options.pivot_tolerance * q.amax().max(1.0);
    if x.iter().all(|v| v.is_finite() && *v >= -floor) {
        let mut z = DVector::zeros(n);
        for (row, &var) in basis.iter().enumerate() {
            if var >= n {
                z[var - n] = x[row].max(0.0);
            }
        }
        let (w, check) = super::validate_with(m, q, &z);
        let residual = check.relative();
        if residual <= options.max_residual {
            return Ok(LcpSolution {
                z,
                w,
                status: LcpStatus::Solved,
                pivots: 0,
                residual,
                basis: basic,
                warm_started: true,
            });
        }
    }
    // Rounding noise of rows with large terms (a light body under a heavy
    // one) shows as slightly negative entries and a large zᵢwᵢ; the basis
    // may still be the solution to working precision.
    let Some((z, w)) = refined_within_backward_error(
        &columns,
        q,
        &basis,
        &solver,
        Some(x),
        options.max_backward_error,
    ) else {
        return Err(Some(Box::new(solver)));
    };
    let residual = super::validate_with(m, q, &z).1.relative();
    Ok(LcpSolution {
        z,
        w,
        status: LcpStatus::Solved,
        pivots: 0,
        residual,
        basis: basic,
        warm_started: true,
    })
}

/// A fresh factorization of a basis for its solves: the [`Partition`] (an
/// LU of A_KC) below `product_form_from` unknowns,
/// [`product_form::ProductForm`]'s factorization of the same block (the
/// matrix's own, e.g. a contact problem's sparse KKT form) from there on.
enum BasisSolve {
    Partition(Partition),
    Product(product_form::ProductForm),
}

impl BasisSolve {
    /// `None` if B is singular.
    fn of<M: LcpMatrix + ?Sized>(
        columns: &Columns<'_, M>,
        basis: &[Var],
        product_form_from: usize,
    ) -> Option<Self> {
        Some(if columns.n >= product_form_from {
            Self::Product(product_form::ProductForm::factor(columns, basis)?)
        } else {
            Self::Partition(Partition::of(columns, basis)?)
        })
    }

    /// x with B x = b; `None` if A_KC is singular or x is not finite.
    fn solve<M: LcpMatrix + ?Sized>(
        &self,
        columns: &Columns<'_, M>,
        b: &[f64],
    ) -> Option<Vec<f64>> {
        let x = match self {
            Self::Partition(partition) => partition.solve(columns, b)?,
            Self::Product(product) => {
                let mut x = vec![0.0; columns.n];
                product.solve_initial(columns, b, &mut x);
                x
            }
        };
        x.iter().all(|v| v.is_finite()).then_some(x)
    }
}

/// Refinement steps of [`refined_within_backward_error`]: each gains the
/// digits the basis's condition number leaves (five at a mass ratio of
/// 10¹¹), and the residual w = M z + q comes from M's own products, for a
/// contact problem J(W(Jᵀz)) body by body, so a heavy body's velocity is
/// not lost in the sum a + b of a light and a heavy inverse mass that an
/// entry of M holds.
const REFINEMENT_STEPS: usize = 2;

/// z at the complementary basis `basis` (variables by row), from its
/// factorization `solver` (and its solve `x` of B x = q, when already made)
/// refined [`REFINEMENT_STEPS`] times, negative entries
/// set to zero; with w = M z + q, when its componentwise backward error
/// ([`super::backward_error`]) is at most `limit`. `None` when the basis is
/// singular or the error is larger: the basis is then not a solution to
/// working precision.
fn refined_within_backward_error<M: LcpMatrix + ?Sized>(
    columns: &Columns<'_, M>,
    q: &DVector<f64>,
    basis: &[Var],
    solver: &BasisSolve,
    x: Option<Vec<f64>>,
    limit: f64,
) -> Option<(DVector<f64>, DVector<f64>)> {
    let n = columns.n;
    let solve = |b: &[f64]| solver.solve(columns, b);
    let x = match x {
        Some(x) => x,
        None => solve(q.as_slice())?,
    };
    let mut z = DVector::zeros(n);
    for (row, &var) in basis.iter().enumerate() {
        if (n..2 * n).contains(&var) {
            z[var - n] = x[row];
        }
    }
    for _ in 0..REFINEMENT_STEPS {
        // B δ = q − B x is w on the rows K of the basic z's (and zero on the
        // rows of the basic w's, whose values are w itself): δ_C = A_KC⁻¹ w_K.
        let w = super::product_plus(columns.m, &z, q);
        let delta = solve(w.as_slice())?;
        for (row, &var) in basis.iter().enumerate() {
            if (n..2 * n).contains(&var) {
                z[var - n] += delta[row];
            }
        }
    }
    if !z.iter().all(|v| v.is_finite()) {
        return None;
    }
    z.iter_mut().for_each(|v| *v = v.max(0.0));
    let w = super::product_plus(columns.m, &z, q);
    super::within_backward_error(columns.m, q, &z, &w, limit).then_some((z, w))
}

/// The complementary bases tried after a ray: {0}, {1}, …, then {0,1}, {0,2}, ….
fn restart_bases(n: usize) -> impl Iterator<Item = Vec<usize>> {
    let singles = (0..n).map(|i| vec![i]);
    let pairs = (0..n).flat_map(move |i| (i + 1..n).map(move |j| vec![i, j]));
    singles.chain(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Vector3;

    /// Stewart–Trinkle's LCP (29) for a unit cube of mass `mass` resting
    /// flat on a table through `corners` contacts spaced around a circle in
    /// its bottom face (dependent normals: `corners` rows on 3 freedoms),
    /// k friction directions each, zero gaps, v = 0 and gravity over h.
    fn resting_box(corners: usize, k: usize, mass: f64, mu: f64) -> Lcp {
        let (g, h) = (9.81, 0.01);
        let inertia = mass / 6.0;
        let w_diag = [
            1.0 / mass,
            1.0 / mass,
            1.0 / mass,
            1.0 / inertia,
            1.0 / inertia,
            1.0 / inertia,
        ];
        let wrench = |p: Vector3<f64>, d: Vector3<f64>| {
            let r = p.cross(&d);
            DVector::from_vec(vec![d.x, d.y, d.z, r.x, r.y, r.z])
        };
        let mut normals = Vec::new();
        let mut friction = Vec::new();
        for c in 0..corners {
            let angle = 2.0 * std::f64::consts::PI * c as f64 / corners as f64;
            let p = Vector3::new(0.5 * angle.cos(), 0.5 * angle.sin(), -0.5);
            normals.push(wrench(p, Vector3::z()));
            for i in 0..k {
                let theta = 2.0 * std::f64::consts::PI * i as f64 / k as f64;
                friction.push(wrench(p, Vector3::new(theta.cos(), theta.sin(), 0.0)));
            }
        }
        let (nb, nc) = (corners * k, corners);
        let columns: Vec<&DVector<f64>> = friction.iter().chain(&normals).collect();
        let dot = |a: &DVector<f64>, b: &DVector<f64>| {
            (0..6).map(|i| a[i] * w_diag[i] * b[i]).sum::<f64>()
        };
        let size = nb + 2 * nc;
        let mut m = DMatrix::zeros(size, size);
        for (i, a) in columns.iter().enumerate() {
            for (j, b) in columns.iter().enumerate() {
                m[(i, j)] = dot(a, b);
            }
        }
        for j in 0..nc {
            for i in 0..k {
                m[(j * k + i, nb + nc + j)] = 1.0; // Ẽ
                m[(nb + nc + j, j * k + i)] = -1.0; // −Ẽᵀ
            }
            m[(nb + nc + j, nb + j)] = mu; // μ̃
        }
        let free = DVector::from_vec(vec![0.0, 0.0, -g * h, 0.0, 0.0, 0.0]);
        let q = DVector::from_fn(size, |i, _| columns.get(i).map_or(0.0, |c| c.dot(&free)));
        Lcp { m, q }
    }

    /// The perturbed run solves the degenerate LCP of a box held by more
    /// contacts than it has freedoms: within its perturbation of the
    /// unperturbed problem (z ≥ 0, w ≥ −2δ max(1, ‖q‖∞)), and the impulses
    /// hold the box: their normal parts sum to m g h and friction is zero
    /// (nothing pushes sideways), to the perturbation's order: the loaded
    /// corners move at −pᵢ ∈ [−2δs, −δs] (s = max(1, ‖q‖∞)), so the box's
    /// velocity, and with it each impulse sum over m, is off by at most 2δs.
    #[test]
    fn a_perturbed_run_solves_a_box_resting_on_dependent_contacts() {
        let (g, h) = (9.81, 0.01);
        for (corners, k, mass) in [(4, 4, 1.0), (8, 8, 2.0), (6, 4, 1e3), (12, 16, 0.5)] {
            let lcp = resting_box(corners, k, mass, 0.5);
            let scale = lcp.q.amax().max(1.0);
            for delta in PERTURBATIONS {
                let dense = perturbed::<_, dense::DenseBasis>(
                    &lcp.m,
                    &lcp.q,
                    delta,
                    &LemkeOptions::default(),
                );
                let compressed = perturbed::<_, compressed::CompressedBasis>(
                    &lcp.m,
                    &lcp.q,
                    delta,
                    &LemkeOptions::default(),
                );
                let product = perturbed::<_, product_form::ProductForm>(
                    &lcp.m,
                    &lcp.q,
                    delta,
                    &LemkeOptions::default(),
                );
                for (name, solution) in [
                    ("dense", dense),
                    ("compressed", compressed),
                    ("product form", product),
                ] {
                    let solution = solution.unwrap_or_else(|e| panic!("{e}"));
                    let what =
                        format!("{corners} corners, k = {k}, {mass} kg, δ = {delta:e}, {name}");
                    assert_eq!(solution.status, LcpStatus::Solved, "{what}");
                    let w = &lcp.m * &solution.z + &lcp.q;
                    assert!(solution.z.min() >= 0.0, "{what}: z {}", solution.z.min());
                    assert!(w.min() >= -2.0 * delta * scale, "{what}: w {:e}", w.min());
                    let nb = corners * k;
                    let bound = 2.0 * delta * scale * mass + 1e-12 * mass * g * h;
                    let normal: f64 = solution.z.rows(nb, corners).sum();
                    let friction = solution.z.rows(0, nb).amax();
                    assert!(
                        (normal - mass * g * h).abs() <= bound,
                        "{what}: Σc_n {normal} vs m g h {}",
                        mass * g * h
                    );
                    assert!(friction <= bound, "{what}: friction {friction}");
                }
            }
        }
    }

    /// Every pivot a budget counts is counted under the run it was taken
    /// in, and the runs' counts add up to the solution's pivots: a cold
    /// solve's all cold, a solve from a wrong warm basis's all warm, and the
    /// perturbed run's under its start.
    #[test]
    fn a_watch_counts_each_pivot_under_its_run() {
        use super::budget::{Budget, Limits, Watch, watching, within};
        let counted = |f: &dyn Fn() -> LcpSolution| {
            let watch = Arc::new(Watch::default());
            let solution = watching(watch.clone(), || {
                within(Some(Budget::start(Limits::NONE)), f)
            });
            assert_eq!(solution.status, LcpStatus::Solved);
            (solution.pivots as u64, watch.pivots_by_run())
        };
        let murty = Lcp::murty(8);
        let (pivots, by_run) = counted(&|| solve(&murty, &LemkeOptions::default()).unwrap());
        assert!(pivots > 0);
        assert_eq!(by_run, [0, pivots, 0, 0, 0]);
        let from_one = LemkeOptions {
            warm_start: Some(vec![0]),
            ..LemkeOptions::default()
        };
        let (pivots, by_run) = counted(&|| solve(&murty, &from_one).unwrap());
        assert!(pivots > 0);
        assert_eq!(by_run, [pivots, 0, 0, 0, 0]);
        let lcp = resting_box(8, 4, 1.0, 0.5);
        let (pivots, by_run) = counted(&|| {
            perturbed::<_, dense::DenseBasis>(&lcp.m, &lcp.q, 1e-8, &LemkeOptions::default())
                .unwrap()
        });
        assert!(pivots > 0);
        assert_eq!(by_run, [0, 0, 0, pivots, 0]);
    }
}
