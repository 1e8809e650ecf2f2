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
//!   tolerances. (Inverting only the m × m block S = A_KC and reaching the
//!   rest through products with M, O(m²) a pivot, was tried: without the
//!   rows of the basic w's, max |B⁻¹| — the scale that tells a pivot entry
//!   from rounding noise — is only bounded, not known, and piles of boxes
//!   then failed steps that the tableau solves.)
//!   From [`LemkeOptions::product_form_from`] unknowns on (large islands,
//!   where m reaches the hundreds) B⁻¹ is kept in product form over a
//!   factorization of that block ([`product_form`]): for contacts, the
//!   sparse LU of its KKT form through the bodies' mass blocks and the
//!   contact Jacobians, Lloyd's per-pivot system, with max |B⁻¹| estimated.

mod compressed;
mod dense;
mod product_form;

use super::{Lcp, LcpError, LcpMatrix, LcpSolution, LcpStatus, Validation};
use nalgebra::{DMatrix, DVector};
use std::collections::HashSet;

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
    pub tolerance: f64,
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
            tolerance: 1e-12,
            refactor_every: 64,
            max_residual: 1e-6,
            product_form_from: PRODUCT_FORM_FROM,
            max_backward_error: 1e-13,
        }
    }
}

/// The default of [`LemkeOptions::product_form_from`]. Below it the
/// compressed tableau is cheaper than any factorization's set-up; its
/// O(m³ + n·m²) factorizations and O(n·m) pivots grow with the m basic
/// columns, and from a few hundred unknowns on the product form's sparse
/// factorization costs less. Traced on the generated pile of 200 (1 s from
/// the drop, each island's solve timed with its set-up): with the default
/// at 800 it spent 58 % of its solve time on islands of 300–800 unknowns at
/// 377 µs a pivot, against 218 µs on the product form's islands of
/// 800–1,500; from 300 on, 110 µs a pivot there (seventeenth session). `benches/scale.rs` (2 s
/// of each pile, the same day): 800 → 300 took the pile of 50 from 3.80 to
/// 3.61 ms a step, of 100 from 16.1 to 13.1, of 200 from 53.6 to 48.7 (at
/// 329 → 378 pivots a step); 250 and 400 did about as well. The 22-body
/// pile and `pile.ron` (islands up to about 400 unknowns) took the same
/// pivots and time, the standing tower (480 unknowns) 0.157 instead of
/// 0.147 ms a step, and it stands (`tests/piles.rs`; with an earlier
/// session's product form it crept after 6 s). 300 → 200 (twenty-seventh
/// session, after the product form's kept columns, its factorizations
/// kept by pattern and block, and the final basis's q̄ taken when it meets
/// 1e-12): instructions over the first second of the generated piles (one
/// thread, callgrind, which counts the same on a busy machine) 5.6–9.2 %
/// fewer at N = 100 and 120, 7.0–14.9 % at 190, 200 and 210, 1 % more at
/// 50, the pile of 22 the same to the bit (no island of 200 there); the
/// pivots a step move by a few per cent either way with the rounding, less
/// than the instructions. 150 did worse at 190–200. A product-form run that
/// fails is retried on the compressed tableau ([`solve_structured`]).
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
    if product.status == LcpStatus::Solved {
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
    let (first, cycled) = solve_once::<M, F>(m, q, options)?;
    if first.status == LcpStatus::Solved || (first.status == LcpStatus::MaxPivots && !cycled) {
        return Ok(first);
    }
    let mut spent = first.pivots;
    // First the perturbed problems (see `perturbed`), then the retries of
    // the unperturbed one below.
    for delta in PERTURBATIONS {
        let mut next = perturbed::<M, F>(m, q, delta, options)?;
        spent += next.pivots;
        next.pivots = spent;
        if next.status == LcpStatus::Solved {
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
        tolerance: options.tolerance * 100.0,
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
        let (mut next, _) = solve_once::<M, F>(m, q, &retry)?;
        spent += next.pivots;
        next.pivots = spent;
        let solved = next.status == LcpStatus::Solved;
        last = next;
        if solved {
            break;
        }
    }
    Ok(last)
}

/// Relative sizes δ of the perturbations of q that [`solve_with`] tries
/// when a run fails numerically (see [`perturbed`]).
const PERTURBATIONS: [f64; 2] = [1e-8, 1e-7];

/// Lemke cold from e on LCP(M, q + p), p = δ max(1, ‖q‖∞) (1 + {iφ}) with
/// {iφ} the fractional part of i times the golden ratio, checked against
/// the unperturbed q.
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
    let shifted = DVector::from_fn(q.len(), |i, _| {
        q[i] + delta * scale * (1.0 + (i as f64 * GOLDEN).fract())
    });
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
            let status = tableau.run(max_pivots.saturating_sub(spent));
            spent += tableau.pivots;
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
    let status = tableau.run(max_pivots.saturating_sub(spent));
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

/// One run of the method; the flag says whether a basis repeated (cycling).
fn solve_once<M: LcpMatrix + ?Sized, F: Factor<M>>(
    m: &M,
    q: &DVector<f64>,
    options: &LemkeOptions,
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
            let status = tableau.run(max_pivots.saturating_sub(pivots_spent));
            pivots_spent += tableau.pivots;
            if status == LcpStatus::Solved {
                let mut solution = tableau.finish(status, true);
                solution.pivots = pivots_spent;
                return Ok((solution, false));
            }
        }
    }
    let Some(mut tableau) = Tableau::<M, F>::cold(m, q, covering, options) else {
        return Ok((no_cold_start(q, pivots_spent), false));
    };
    let status = tableau.run(max_pivots.saturating_sub(pivots_spent));
    let cycled = tableau.cycled;
    let mut solution = tableau.finish(status, false);
    solution.pivots += pivots_spent;
    if solution.status == LcpStatus::RayTermination {
        for start in restart_bases(n).take(options.restarts) {
            let Some(mut tableau) = Tableau::<M, F>::warm(m, q, &start, None, options) else {
                continue;
            };
            let status = tableau.run(max_pivots);
            let pivots = tableau.pivots;
            if status == LcpStatus::Solved {
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
    let floor = options.tolerance * q.amax().max(1.0);
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

/// Index of a variable in the augmented system: wᵢ = i, zᵢ = n + i, z₀ = 2n.
type Var = usize;

/// "No such index" in the position maps.
const NONE: usize = usize::MAX;

/// The first columns of B⁻¹ the lexicographic ratio test keeps between its
/// tests ([`Factor::update_column`]); ties that last longer read rows.
const LEX_COLUMNS: usize = 64;

/// The columns of the augmented system [I, −M, −d].
struct Columns<'a, M: ?Sized> {
    m: &'a M,
    /// The covering vector d.
    covering: Vec<f64>,
    n: usize,
}

impl<M: LcpMatrix + ?Sized> Columns<'_, M> {
    /// out += Σ value·(column of var) over `vars`.
    fn add_columns(&self, vars: &[(Var, f64)], out: &mut [f64]) {
        let n = self.n;
        if let [(var, value)] = *vars
            && (n..2 * n).contains(&var)
        {
            // One column of −M (every entering z), without the list.
            if value != 0.0 {
                self.m.add_column(var - n, -value, out);
            }
            return;
        }
        let mut z = Vec::with_capacity(vars.len());
        for &(var, value) in vars {
            if value == 0.0 {
                continue;
            }
            if var < n {
                out[var] += value;
            } else if var < 2 * n {
                z.push((var - n, -value));
            } else {
                for (o, d) in out.iter_mut().zip(&self.covering) {
                    *o -= value * d;
                }
            }
        }
        if !z.is_empty() {
            self.m.add_product(&z, out);
        }
    }

    /// The column of `var`, dense.
    fn column(&self, var: Var) -> Vec<f64> {
        let mut out = vec![0.0; self.n];
        self.add_columns(&[(var, 1.0)], &mut out);
        out
    }
}

/// A representation of B⁻¹ for the tableau.
trait Factor<M: LcpMatrix + ?Sized>: Sized {
    /// The factor of `basis` (the variable basic in each row); `None` if B is
    /// singular.
    fn new(columns: &Columns<'_, M>, basis: &[Var]) -> Option<Self>;
    /// [`Factor::new`], given a fresh factorization of the same basis made
    /// for its solves ([`feasible_warm`]), whose work it takes over where
    /// it can.
    fn from_solve(columns: &Columns<'_, M>, basis: &[Var], solve: BasisSolve) -> Option<Self> {
        let _ = solve;
        Self::new(columns, basis)
    }
    /// out = B⁻¹ a for a dense n-vector a.
    fn apply(&mut self, columns: &Columns<'_, M>, basis: &[Var], a: &[f64], out: &mut [f64]);
    /// Row r of B⁻¹, dense.
    fn row(&self, columns: &Columns<'_, M>, basis: &[Var], r: usize) -> Vec<f64>;
    /// Rows `rs` of B⁻¹, dense, each as [`Factor::row`] gives it.
    fn rows(&self, columns: &Columns<'_, M>, basis: &[Var], rs: &[usize]) -> Vec<Vec<f64>> {
        rs.iter().map(|&r| self.row(columns, basis, r)).collect()
    }
    /// Brings `column`, column j of B⁻¹ after the first `applied` pivots
    /// since the factorization (`None`: not computed), up to the current
    /// basis, where the factor keeps the pivots as a product form that
    /// makes this cheaper than a solve; false (and nothing done) where it
    /// does not.
    fn update_column(
        &self,
        _columns: &Columns<'_, M>,
        _j: usize,
        _column: &mut Vec<f64>,
        _applied: &mut Option<usize>,
    ) -> bool {
        false
    }
    /// Updates the factor for `var` replacing `basis[r]`, where `abar` = B⁻¹ a
    /// was the last [`Factor::apply`] (of var's column) and `basis` is the old
    /// basis.
    fn pivot(&mut self, columns: &Columns<'_, M>, basis: &[Var], r: usize, var: Var, abar: &[f64]);
    /// max |B⁻¹ᵢⱼ| or an estimate within a small factor (the scale of rounding
    /// noise).
    fn max_entry(&self) -> f64;
    /// How many pivots between refactorizations, given the option's minimum.
    fn refactor_period(&self, refactor_every: usize) -> usize;
}

/// The basis split by the unit columns of its basic wⱼ: with K the rows no
/// unit column covers and C the other columns, B x = b gives x_C = A_KC⁻¹ b_K
/// and x_wⱼ = bⱼ − A_jC x_C, so only the m×m block A_KC (m = |C|) needs a
/// factorization.
struct Partition {
    /// Row of the basic wⱼ for each j (`NONE` where wⱼ is not basic).
    unit_row: Vec<usize>,
    /// Rows whose basic variable is a z or z₀ (the set C).
    others: Vec<usize>,
    /// The rows K no unit column covers.
    uncovered: Vec<usize>,
    /// A_KC.
    block: DMatrix<f64>,
    /// The columns of C, dense (A_KC is read from them; the factors need
    /// their A_jC rows too, so each is computed once).
    full: Vec<Vec<f64>>,
    /// The LU of A_KC, made at the first [`Partition::solve`] and kept for
    /// the next (a refinement's).
    lu: std::cell::OnceCell<BlockLu>,
}

/// An LU of A_KC with partial pivoting: nalgebra's unblocked one below 48
/// rows (faer's set-up dominates at the sizes of a few contacts), faer's
/// from there on.
enum BlockLu {
    Small(nalgebra::linalg::LU<f64, nalgebra::Dyn, nalgebra::Dyn>),
    Large(faer::linalg::solvers::PartialPivLu<f64>),
}

impl Partition {
    /// `None` if |K| ≠ |C| (B singular).
    fn of<M: LcpMatrix + ?Sized>(columns: &Columns<'_, M>, basis: &[Var]) -> Option<Self> {
        let n = columns.n;
        let mut unit_row = vec![NONE; n];
        let mut others = Vec::new();
        for (row, &var) in basis.iter().enumerate() {
            if var < n {
                unit_row[var] = row;
            } else {
                others.push(row);
            }
        }
        let uncovered: Vec<usize> = (0..n).filter(|&j| unit_row[j] == NONE).collect();
        let m = others.len();
        if uncovered.len() != m {
            return None;
        }
        let full: Vec<Vec<f64>> = others.iter().map(|&r| columns.column(basis[r])).collect();
        let block = DMatrix::from_fn(m, m, |k, c| full[c][uncovered[k]]);
        Some(Self {
            unit_row,
            others,
            uncovered,
            block,
            full,
            lu: std::cell::OnceCell::new(),
        })
    }

    /// A_KC⁻¹ ([`invert`]), from the LU a [`Self::solve`] kept where it is
    /// faer's (the same operations), so that a partition handed from
    /// [`feasible_warm`] to the compressed tableau is not factored again.
    fn inverse(&self) -> Option<DMatrix<f64>> {
        match self.lu.get() {
            Some(BlockLu::Large(lu)) => inverse_from_lu(lu),
            _ => invert(&self.block),
        }
    }

    /// x with B x = b from the LU of A_KC, in O(m³ + n·b) for the first
    /// solve and O(m² + n·b) for the next, instead of the O(n³) of a full
    /// LU. `None` if A_KC is singular.
    fn solve<M: LcpMatrix + ?Sized>(
        &self,
        columns: &Columns<'_, M>,
        b: &[f64],
    ) -> Option<Vec<f64>> {
        let m = self.others.len();
        let b_k = DVector::from_fn(m, |k, _| b[self.uncovered[k]]);
        let x_c = if m == 0 {
            b_k
        } else {
            let lu = self.lu.get_or_init(|| {
                if m < 48 {
                    BlockLu::Small(self.block.clone().lu())
                } else {
                    BlockLu::Large(
                        faer::Mat::from_fn(m, m, |i, j| self.block[(i, j)]).partial_piv_lu(),
                    )
                }
            });
            match lu {
                BlockLu::Small(lu) => lu.solve(&b_k)?,
                BlockLu::Large(lu) => {
                    let rhs = faer::Mat::from_fn(m, 1, |i, _| b_k[i]);
                    let x = faer::linalg::solvers::Solve::solve(lu, &rhs);
                    DVector::from_fn(m, |i, _| x[(i, 0)])
                }
            }
        };
        let mut x = vec![0.0; columns.n];
        // A_C x_C from the columns already at hand.
        let mut product = vec![0.0; columns.n];
        for (column, &value) in self.full.iter().zip(x_c.iter()) {
            if value != 0.0 {
                for (p, a) in product.iter_mut().zip(column) {
                    *p += value * a;
                }
            }
        }
        for (c, &row) in self.others.iter().enumerate() {
            x[row] = x_c[c];
        }
        for (j, &row) in self.unit_row.iter().enumerate() {
            if row != NONE {
                x[row] = b[j] - product[j];
            }
        }
        Some(x)
    }
}

/// The inverse of a regular square block by an LU with partial pivoting
/// (faer's, several times nalgebra's speed at a few hundred rows); `None`
/// when a pivot vanishes or the inverse is not finite.
fn invert(block: &DMatrix<f64>) -> Option<DMatrix<f64>> {
    let m = block.nrows();
    if m < 48 {
        // Below that nalgebra's unblocked LU is as fast.
        return block
            .clone()
            .try_inverse()
            .filter(|x| x.iter().all(|v| v.is_finite()));
    }
    inverse_from_lu(&faer::Mat::from_fn(m, m, |i, j| block[(i, j)]).partial_piv_lu())
}

/// The inverse from faer's LU of the block, as [`invert`] forms it; `None`
/// when it is not finite.
fn inverse_from_lu(lu: &faer::linalg::solvers::PartialPivLu<f64>) -> Option<DMatrix<f64>> {
    use faer::linalg::solvers::DenseSolveCore;
    let inverse = lu.inverse();
    let out = DMatrix::from_fn(inverse.nrows(), inverse.ncols(), |i, j| inverse[(i, j)]);
    out.iter().all(|x| x.is_finite()).then_some(out)
}

/// An incremental hash of the set of basic variables (Zobrist): the XOR of a
/// fixed random word per variable, updated in O(1) per pivot.
fn zobrist(var: Var) -> u64 {
    // splitmix64
    let mut x = (var as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

struct Tableau<'a, M: ?Sized, F> {
    columns: Columns<'a, M>,
    q: &'a DVector<f64>,
    n: usize,
    factor: F,
    /// max |B⁻¹ᵢⱼ| (or the factor's estimate), refreshed after every pivot.
    binv_max: f64,
    /// B⁻¹ q: the values of the basic variables.
    qbar: Vec<f64>,
    /// The variable basic in each row.
    basis: Vec<Var>,
    /// [`zobrist`] hash of the basis.
    key: u64,
    pivots: usize,
    since_refactor: usize,
    tolerance: f64,
    refactor_every: usize,
    max_residual: f64,
    product_form_from: usize,
    max_backward_error: f64,
    lexicographic: bool,
    /// Set when a basis repeats: rounding broke the lexicographic order.
    cycled: bool,
    /// The textbook zero tests, for a perturbed q ([`perturbed`]): a pivot
    /// entry is compared with the entering column alone and q̄ is never
    /// flushed, since the perturbation leaves no ties to make exact and
    /// the noise bounds scaled by max |B⁻¹| would erase it.
    plain: bool,
    /// Set once the first pivot has brought z₀ in (or no pivot is needed).
    entering: Option<Var>,
    /// Scratch: the entering column and B⁻¹ times it.
    column: Vec<f64>,
    abar: Vec<f64>,
    /// The first columns of B⁻¹ the lexicographic test has read since the
    /// last factorization, each with the pivots applied to it
    /// ([`Factor::update_column`]).
    lex_columns: Vec<(Vec<f64>, Option<usize>)>,
}

impl<'a, M: LcpMatrix + ?Sized, F: Factor<M>> Tableau<'a, M, F> {
    fn with_basis(
        m: &'a M,
        q: &'a DVector<f64>,
        covering: Vec<f64>,
        basis: Vec<Var>,
        handed: Option<Box<BasisSolve>>,
        options: &LemkeOptions,
    ) -> Option<Self> {
        let n = m.size();
        let columns = Columns { m, covering, n };
        let mut factor = match handed {
            Some(solve) => F::from_solve(&columns, &basis, *solve)?,
            None => F::new(&columns, &basis)?,
        };
        let mut qbar = vec![0.0; n];
        factor.apply(&columns, &basis, q.as_slice(), &mut qbar);
        if qbar.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let key = basis.iter().fold(0, |k, &v| k ^ zobrist(v));
        let mut tableau = Self {
            columns,
            q,
            n,
            binv_max: factor.max_entry(),
            factor,
            qbar,
            basis,
            key,
            pivots: 0,
            since_refactor: 0,
            tolerance: options.tolerance,
            refactor_every: options.refactor_every.max(1),
            max_residual: options.max_residual,
            product_form_from: options.product_form_from,
            max_backward_error: options.max_backward_error,
            lexicographic: options.lexicographic,
            cycled: false,
            plain: false,
            entering: None,
            column: vec![0.0; n],
            abar: vec![0.0; n],
            lex_columns: Vec::new(),
        };
        tableau.flush_q_noise();
        Some(tableau)
    }

    /// The identity basis (every w basic). `None` only when the data are
    /// not finite after all: an operator whose entries are finite can still
    /// overflow in its products.
    fn cold(
        m: &'a M,
        q: &'a DVector<f64>,
        covering: Vec<f64>,
        options: &LemkeOptions,
    ) -> Option<Self> {
        let n = m.size();
        Self::with_basis(m, q, covering, (0..n).collect(), None, options)
    }

    /// Starts from the complementary basis with z basic at `z_basic` and w
    /// elsewhere, using d = B e so that z₀'s column in that basis is −e,
    /// its factor from `handed` where given (a factorization of that basis,
    /// [`feasible_warm`]'s). `None` if that basis is singular.
    fn warm(
        m: &'a M,
        q: &'a DVector<f64>,
        z_basic: &[usize],
        handed: Option<Box<BasisSolve>>,
        options: &LemkeOptions,
    ) -> Option<Self> {
        let n = m.size();
        let mut basis: Vec<Var> = (0..n).collect();
        for &i in z_basic {
            basis[i] = n + i;
        }
        let mut covering = vec![1.0; n];
        for &i in z_basic {
            covering[i] = 0.0;
        }
        let z: Vec<(usize, f64)> = z_basic.iter().map(|&i| (i, -1.0)).collect();
        m.add_product(&z, &mut covering);
        Self::with_basis(m, q, covering, basis, handed, options)
    }

    fn complement(&self, var: Var) -> Var {
        if var < self.n {
            var + self.n
        } else {
            var - self.n
        }
    }

    /// ā = B⁻¹ A_var into `self.abar`; returns max |A_var|.
    fn enter(&mut self, var: Var) -> f64 {
        self.column.iter_mut().for_each(|x| *x = 0.0);
        self.columns.add_columns(&[(var, 1.0)], &mut self.column);
        self.factor
            .apply(&self.columns, &self.basis, &self.column, &mut self.abar);
        self.column.iter().fold(0.0_f64, |m, x| m.max(x.abs()))
    }

    /// Runs pivots until termination; returns how it ended.
    fn run(&mut self, max_pivots: usize) -> LcpStatus {
        let n = self.n;
        let scale = self.q.amax().max(1.0);
        if self.qbar.iter().all(|&x| x >= -self.tolerance * scale) {
            return LcpStatus::Solved;
        }
        // First pivot: z₀ enters; its column −B⁻¹d is negative in every row, and
        // the leaving row is the lexicographic minimum of [q̄ᵢ | B⁻¹ᵢ] / |āᵢ|, which
        // makes every row of the new tableau lexico-positive.
        let z0 = 2 * n;
        self.enter(z0);
        if self.abar.iter().any(|&a| a >= 0.0) {
            // Only possible with a warm start whose d = B e is not covering.
            return LcpStatus::NumericalFailure;
        }
        if max_pivots == 0 {
            return LcpStatus::MaxPivots;
        }
        let rows: Vec<usize> = (0..n).collect();
        let negated: Vec<f64> = self.abar.iter().map(|a| -a).collect();
        let Some(r) = self.lexico_min_ratio(&rows, &negated) else {
            return LcpStatus::NumericalFailure;
        };
        let mut leaving = self.pivot(r, z0);
        self.entering = Some(self.complement(leaving));

        let mut seen = HashSet::new();
        while let Some(entering) = self.entering {
            if self.pivots >= max_pivots {
                return LcpStatus::MaxPivots;
            }
            // In exact arithmetic the lexicographic rule never revisits a basis.
            if self.lexicographic && !seen.insert(self.key) {
                self.cycled = true;
                return LcpStatus::MaxPivots;
            }
            let column_max = self.enter(entering);
            let amax = self.abar.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
            if !amax.is_finite() {
                return LcpStatus::NumericalFailure;
            }
            // Entries below the rounding noise of B⁻¹A_j (≈ ‖B⁻¹‖ ‖A_j‖ ε) are
            // zeros in exact arithmetic; pivoting on one makes B singular.
            // An entry below that bound is still taken when its own row of
            // B⁻¹ is small enough to make it significant (`row_max`).
            let noise = if self.plain {
                0.0
            } else {
                self.binv_max * column_max
            };
            let threshold = self.tolerance * amax.max(noise).max(f64::MIN_POSITIVE);
            let floor = self.tolerance * amax.max(f64::MIN_POSITIVE);
            let candidates: Vec<usize> = (0..n)
                .filter(|&i| {
                    let a = self.abar[i];
                    a > threshold
                        || (!self.plain
                            && a > floor
                            && a > self.tolerance * self.row_max(i) * column_max)
                })
                .collect();
            if candidates.is_empty() {
                return LcpStatus::RayTermination;
            }
            let abar = std::mem::take(&mut self.abar);
            let chosen = self.lexico_min_ratio(&candidates, &abar);
            self.abar = abar;
            let Some(r) = chosen else {
                return LcpStatus::NumericalFailure;
            };
            leaving = self.pivot(r, entering);
            if leaving == z0 {
                return LcpStatus::Solved;
            }
            self.entering = Some(self.complement(leaving));
            if self.since_refactor >= self.factor.refactor_period(self.refactor_every)
                && !self.refactor()
            {
                return LcpStatus::NumericalFailure;
            }
        }
        LcpStatus::Solved
    }

    /// The row among `candidates` minimizing [q̄ᵢ | B⁻¹ᵢ] / aᵢ lexicographically;
    /// among ties on q̄ᵢ/aᵢ the row of z₀ is preferred (CPS Algo. 4.4.1, step 3).
    fn lexico_min_ratio(&mut self, candidates: &[usize], a: &[f64]) -> Option<usize> {
        let z0 = 2 * self.n;
        let mut ties = min_ties(self.tolerance, candidates, |i| self.qbar[i], a);
        if ties.is_empty() {
            return None;
        }
        if let Some(&r) = ties.iter().find(|&&i| self.basis[i] == z0) {
            return Some(r);
        }
        if !self.lexicographic {
            return ties.iter().min().copied();
        }
        if ties.len() == 1 {
            return ties.first().copied();
        }
        // Columns of B⁻¹ where the factor keeps them cheaply: the ties
        // last a dozen columns or more on the piles' degenerate bases (23
        // tied rows a test, broken after 17 columns on average, on the
        // pile of 200 from t = 0.8 s), and the same first columns serve
        // every test until the next factorization, brought up to date by
        // the pivots since.
        let mut column = 0;
        while ties.len() > 1 && column < self.n && column < LEX_COLUMNS {
            if self.lex_columns.len() <= column {
                self.lex_columns.push((Vec::new(), None));
            }
            let (y, applied) = &mut self.lex_columns[column];
            if !self.factor.update_column(&self.columns, column, y, applied) {
                break;
            }
            let y = &self.lex_columns[column].0;
            ties = min_ties(self.tolerance, &ties, |i| y[i], a);
            column += 1;
        }
        if ties.len() == 1 {
            return ties.first().copied();
        }
        // Rows of B⁻¹ only for the tied rows.
        let rows: Vec<(usize, Vec<f64>)> = ties
            .iter()
            .copied()
            .zip(self.factor.rows(&self.columns, &self.basis, &ties))
            .collect();
        let row_of = |i: usize| {
            &rows
                .iter()
                .find(|(r, _)| *r == i)
                .unwrap_or_else(|| unreachable!("ties are a subset of the rows computed"))
                .1
        };
        while ties.len() > 1 && column < self.n {
            ties = min_ties(self.tolerance, &ties, |i| row_of(i)[column], a);
            column += 1;
        }
        ties.first().copied()
    }

    /// Pivots `entering` into row `r` (with `self.abar` = B⁻¹ A_entering);
    /// returns the variable that left.
    fn pivot(&mut self, r: usize, entering: Var) -> Var {
        self.factor
            .pivot(&self.columns, &self.basis, r, entering, &self.abar);
        let inv = 1.0 / self.abar[r];
        self.qbar[r] *= inv;
        let q_r = self.qbar[r];
        for (i, (x, &a)) in self.qbar.iter_mut().zip(&self.abar).enumerate() {
            if i != r && a != 0.0 {
                *x -= a * q_r;
            }
        }
        self.pivots += 1;
        self.since_refactor += 1;
        self.binv_max = self.factor.max_entry();
        self.flush_q_noise();
        let left = std::mem::replace(&mut self.basis[r], entering);
        self.key ^= zobrist(left) ^ zobrist(entering);
        left
    }

    /// Sets entries of q̄ that are rounding noise to exactly zero.
    ///
    /// Degenerate problems (many zero qᵢ) rely on exact ties in the ratio test; a
    /// q̄ᵢ of 1e-15 where exact arithmetic gives 0 would break a tie arbitrarily and
    /// with it the lexico-positivity that prevents cycling. The noise of q̄ᵢ
    /// is bounded by row i of B⁻¹ (`row_max`), not by its largest entry.
    fn flush_q_noise(&mut self) {
        if self.plain {
            return;
        }
        let scale = self.q.amax().max(1.0);
        let q_floor = self.tolerance * scale * self.binv_max.max(1.0);
        for i in 0..self.n {
            let x = self.qbar[i];
            if x != 0.0
                && x.abs() <= q_floor
                && x.abs() <= self.tolerance * scale * self.row_max(i).max(1.0)
            {
                self.qbar[i] = 0.0;
            }
        }
    }

    /// max |B⁻¹ᵢⱼ| over row i: the scale of the rounding noise of q̄ᵢ and āᵢ,
    /// asked only for a value that the global bound max |B⁻¹| (`binv_max`)
    /// would take for zero (O(n) each). The large entries of B⁻¹ sit in the
    /// rows of few basic variables: a body of 1 kg under one of 10⁶ kg makes
    /// max |B⁻¹| ≈ 10⁶ (their contacts' Delassus block [[a, −a], [−a, a + b]]
    /// has the mass ratio a/b for condition number), and with it every q̄ᵢ
    /// and āᵢ below 10⁻⁶ elsewhere would be flushed or refused as a pivot,
    /// among them the heavy body's own coupling (relative size b/a, the pivot
    /// that makes B⁻¹ large in the first place) and the velocities of the
    /// other contacts; measured, a spatial stack of 1 kg under 10⁶ kg ended
    /// on such a false ray.
    fn row_max(&self, i: usize) -> f64 {
        // A row of the product form costs a solve with the factorization;
        // its large islands keep the global bound.
        if self.binv_max <= 1.0 || self.n >= self.product_form_from {
            return self.binv_max;
        }
        self.factor
            .row(&self.columns, &self.basis, i)
            .iter()
            .fold(0.0_f64, |m, v| m.max(v.abs()))
    }

    /// Recomputes the factor and q̄ from the basis columns; false if B is
    /// singular.
    fn refactor(&mut self) -> bool {
        self.since_refactor = 0;
        for (_, applied) in &mut self.lex_columns {
            *applied = None;
        }
        let Some(mut factor) = F::new(&self.columns, &self.basis) else {
            return false;
        };
        let mut qbar = vec![0.0; self.n];
        factor.apply(&self.columns, &self.basis, self.q.as_slice(), &mut qbar);
        if qbar.iter().any(|x| !x.is_finite()) {
            return false;
        }
        self.factor = factor;
        self.qbar = qbar;
        self.binv_max = self.factor.max_entry();
        self.flush_q_noise();
        true
    }

    /// z from the values of the basic variables; a basic zᵢ that rounding left
    /// at −1e-17 is zero.
    fn z_from(&self, values: &[f64]) -> DVector<f64> {
        let n = self.n;
        let floor = self.tolerance * self.q.amax().max(1.0);
        let mut z = DVector::zeros(n);
        for (row, &var) in self.basis.iter().enumerate() {
            if (n..2 * n).contains(&var) {
                let v = values[row];
                z[var - n] = if v < 0.0 && v > -floor { 0.0 } else { v };
            }
        }
        z
    }

    /// w = M z + q and the check of (z, w).
    fn check(&self, z: &DVector<f64>) -> (DVector<f64>, Validation) {
        super::validate_with(self.columns.m, self.q, z)
    }

    /// Reads z off the basis, recomputes w = M z + q and checks the residual.
    fn finish(mut self, status: LcpStatus, warm_started: bool) -> LcpSolution {
        let mut status = status;
        let from_tableau = self.z_from(&self.qbar);
        let (w, check) = self.check(&from_tableau);
        let tableau_residual = check.relative();
        // The final basis's fresh factorization, once made: the refinement
        // below solves with it too.
        let (mut solver, mut fresh) = (None, None);
        let (z, w, residual) = if status == LcpStatus::Solved
            && self.pivots > 0
            && (self.n < self.product_form_from
                || tableau_residual.is_nan()
                || tableau_residual > FINISHED_RESIDUAL)
        {
            // A fresh LU solve of the final basis is usually the more accurate;
            // on a nearly singular basis the tableau's own q̄ can be better. Keep
            // whichever satisfies the LCP better.
            solver = BasisSolve::of(&self.columns, &self.basis, self.product_form_from);
            fresh = solver
                .as_ref()
                .and_then(|solver| solver.solve(&self.columns, self.q.as_slice()));
            let refined = fresh.as_ref().map(|x| self.z_from(x));
            let mut best = (from_tableau, w, tableau_residual);
            if let Some(z) = refined {
                let (w, check) = self.check(&z);
                let r = check.relative();
                if r < best.2 || best.2.is_nan() {
                    best = (z, w, r);
                }
            }
            best
        } else {
            (from_tableau, w, tableau_residual)
        };
        let n = self.n;
        let (mut z, mut w, mut residual) = (z, w, residual);
        if status == LcpStatus::Solved && (residual.is_nan() || residual > self.max_residual) {
            // See `LemkeOptions::max_backward_error`.
            let solver = solver
                .or_else(|| BasisSolve::of(&self.columns, &self.basis, self.product_form_from));
            match solver.and_then(|solver| {
                refined_within_backward_error(
                    &self.columns,
                    self.q,
                    &self.basis,
                    &solver,
                    fresh,
                    self.max_backward_error,
                )
            }) {
                Some((refined_z, refined_w)) => {
                    residual =
                        Validation::of(&refined_z, &refined_w, self.q.amax().max(1.0)).relative();
                    (z, w) = (refined_z, refined_w);
                }
                None => status = LcpStatus::NumericalFailure,
            }
        }
        let basis = self
            .basis
            .iter()
            .filter(|&&v| (n..2 * n).contains(&v))
            .map(|&v| v - n)
            .collect();
        self.entering = None;
        LcpSolution {
            z,
            w,
            status,
            pivots: self.pivots,
            residual,
            basis,
            warm_started,
        }
    }
}

/// The relative residual at or below which [`Tableau::finish`] takes the
/// product form's own q̄ without a fresh factorization of the final basis
/// (a sparse LU of its KKT form, as dear as a refactorization). On the
/// generated pile of 200 over its first second, 70 % of the product form's
/// runs with pivots end with q̄ at a residual of 1e-12 or less; the fresh
/// solve then gains a digit or two that nothing downstream needs
/// ([`LemkeOptions::max_residual`] is 1e-6). Below the product form's size
/// the final basis is always solved afresh: its dense LU is cheap, and a
/// small LCP comes out exact where q̄ carries the pivots' rounding.
const FINISHED_RESIDUAL: f64 = 1e-12;

/// The candidates whose ratio numerator(i)/a(i) is within the tie tolerance
/// of the minimum. The tolerance scales with the minimum and with the typical
/// ratio size max|numerator| / max a, so it follows the data's units.
fn min_ties(
    tolerance: f64,
    candidates: &[usize],
    numerator: impl Fn(usize) -> f64,
    a: &[f64],
) -> Vec<usize> {
    let ratios: Vec<(usize, f64)> = candidates
        .iter()
        .map(|&i| (i, numerator(i) / a[i]))
        .collect();
    if ratios.iter().any(|(_, r)| !r.is_finite()) {
        return Vec::new();
    }
    let min = ratios.iter().fold(f64::INFINITY, |m, &(_, r)| m.min(r));
    let num_max = candidates
        .iter()
        .fold(0.0_f64, |m, &i| m.max(numerator(i).abs()));
    let a_max = candidates.iter().fold(0.0_f64, |m, &i| m.max(a[i]));
    let tol = tolerance * min.abs().max(num_max / a_max);
    ratios
        .into_iter()
        .filter(|&(_, r)| r - min <= tol)
        .map(|(i, _)| i)
        .collect()
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
}
