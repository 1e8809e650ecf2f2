//! Lemke's complementary pivot method with lexicographic degeneracy resolution.
//!
//! This is Cottle, Pang & Stone, *The Linear Complementarity Problem*, Algo. 4.4.1
//! on an explicit tableau, the method Stewart & Trinkle (1996, §4) used. The
//! augmented system is
//!
//! ```text
//!     w − M z − d z₀ = q,      w, z, z₀ ≥ 0,   wᵢ zᵢ = 0,
//! ```
//!
//! with covering vector d > 0 (default e = (1, …, 1)). The tableau keeps the
//! basis inverse B⁻¹ and q̄ = B⁻¹q explicitly; each pivot is an O(n²) rank-one
//! update. The minimum-ratio test is lexicographic on the rows of [q̄ | B⁻¹]
//! (CPS §4.9), which keeps every tableau lexico-positive so degenerate problems
//! cannot cycle. The inverse is refactorized from the basis columns every
//! [`LemkeOptions::refactor_every`] pivots and once at the end, so rounding does
//! not accumulate along long pivot paths.

use super::{Lcp, LcpError, LcpSolution, LcpStatus};
use nalgebra::{DMatrix, DVector};

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
    /// Refactorize B⁻¹ from scratch after this many pivots (at least n, so the
    /// O(n³) refactorization costs O(n²) per pivot on average).
    pub refactor_every: usize,
    /// A `Solved` result whose relative residual exceeds this is reported as
    /// `NumericalFailure` instead.
    pub max_residual: f64,
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
        }
    }
}

/// The default pivot limit for a problem of size n: generous enough for
/// Murty's exponential example up to n = 13, small enough to stop a runaway.
pub fn default_max_pivots(n: usize) -> usize {
    (100 * n).max(10_000)
}

/// Solves `lcp` with Lemke's method.
///
/// Errors only for invalid options; every algorithmic outcome is a status. When
/// rounding ruins a run (`NumericalFailure`: an ill-conditioned basis, as with the
/// rank-deficient contact Jacobians of a pile), the solve is repeated once with a
/// 100× larger pivot tolerance and a refactorization every 8 pivots.
pub fn solve(lcp: &Lcp, options: &LemkeOptions) -> Result<LcpSolution, LcpError> {
    let (first, cycled) = solve_once(lcp, options)?;
    if first.status != LcpStatus::NumericalFailure && !cycled {
        return Ok(first);
    }
    // Rounding broke the lexicographic order (a basis repeated) or the basis
    // became ill-conditioned: retry with a larger pivot tolerance and frequent
    // refactorization, then with a covering vector whose distinct entries break
    // the ties of a degenerate q from the first pivot on.
    let n = lcp.size();
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
    let mut spent = first.pivots;
    let mut last = first;
    for retry in retries {
        let (mut next, _) = solve_once(lcp, &retry)?;
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

/// One run of the method; the flag says whether a basis repeated (cycling).
fn solve_once(lcp: &Lcp, options: &LemkeOptions) -> Result<(LcpSolution, bool), LcpError> {
    let n = lcp.size();
    let max_pivots = options.max_pivots.unwrap_or_else(|| default_max_pivots(n));
    let covering = match &options.covering {
        Some(d) => {
            if d.len() != n || d.iter().any(|&x| !(x.is_finite() && x > 0.0)) {
                return Err(LcpError::Covering { expected: n });
            }
            d.clone()
        }
        None => DVector::from_element(n, 1.0),
    };
    let warm_starts = [&options.warm_start, &options.warm_fallback];
    for basis in warm_starts.into_iter().flatten() {
        if let Some(&index) = basis.iter().find(|&&i| i >= n) {
            return Err(LcpError::WarmStart { index, n });
        }
    }

    let mut pivots_spent = 0;
    for basis in warm_starts.into_iter().flatten() {
        if let Some(mut tableau) = Tableau::warm(lcp, basis, options) {
            let status = tableau.run(max_pivots.saturating_sub(pivots_spent));
            pivots_spent += tableau.pivots;
            if status == LcpStatus::Solved {
                let mut solution = tableau.finish(status, true);
                solution.pivots = pivots_spent;
                return Ok((solution, false));
            }
        }
    }
    let mut tableau = Tableau::cold(lcp, covering, options);
    let status = tableau.run(max_pivots.saturating_sub(pivots_spent));
    let cycled = tableau.cycled;
    let mut solution = tableau.finish(status, false);
    solution.pivots += pivots_spent;
    if solution.status == LcpStatus::RayTermination {
        for start in restart_bases(n).take(options.restarts) {
            let Some(mut tableau) = Tableau::warm(lcp, &start, options) else {
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

/// The complementary bases tried after a ray: {0}, {1}, …, then {0,1}, {0,2}, ….
fn restart_bases(n: usize) -> impl Iterator<Item = Vec<usize>> {
    let singles = (0..n).map(|i| vec![i]);
    let pairs = (0..n).flat_map(move |i| (i + 1..n).map(move |j| vec![i, j]));
    singles.chain(pairs)
}

/// A basis split by [`Tableau::partition`].
struct Partition {
    /// Row of the basic wⱼ for each j (usize::MAX where wⱼ is not basic).
    unit_row: Vec<usize>,
    /// Rows whose basic variable is a z or z₀ (the set C).
    others: Vec<usize>,
    /// The rows K no unit column covers.
    uncovered: Vec<usize>,
    /// The original columns of the C variables.
    columns: Vec<DVector<f64>>,
    /// A_KC.
    block: DMatrix<f64>,
}

/// Index of a variable in the augmented system: wᵢ = i, zᵢ = n + i, z₀ = 2n.
type Var = usize;

struct Tableau<'a> {
    lcp: &'a Lcp,
    n: usize,
    /// Column of z₀ in the original system is −d.
    covering: DVector<f64>,
    /// (B⁻¹)ᵀ, stored transposed so that each row of B⁻¹ is a contiguous column.
    binv_t: DMatrix<f64>,
    /// max |B⁻¹ᵢⱼ|, refreshed after every pivot (the scale of rounding noise).
    binv_max: f64,
    /// max |B⁻¹ᵢⱼ| over each row i of B⁻¹ (column of `binv_t`), so that a pivot,
    /// which changes only the rows with a nonzero entering entry, refreshes
    /// `binv_max` without a pass over all n² entries.
    row_max: Vec<f64>,
    /// B⁻¹ q: the values of the basic variables.
    qbar: DVector<f64>,
    /// The variable basic in each row.
    basis: Vec<Var>,
    pivots: usize,
    since_refactor: usize,
    tolerance: f64,
    refactor_every: usize,
    max_residual: f64,
    lexicographic: bool,
    /// Set when a basis repeats: rounding broke the lexicographic order.
    cycled: bool,
    /// Set once the first pivot has brought z₀ in (or no pivot is needed).
    entering: Option<Var>,
}

impl<'a> Tableau<'a> {
    fn cold(lcp: &'a Lcp, covering: DVector<f64>, options: &LemkeOptions) -> Self {
        let n = lcp.size();
        Self {
            lcp,
            n,
            covering,
            binv_t: DMatrix::identity(n, n),
            binv_max: 1.0,
            row_max: vec![1.0; n],
            qbar: lcp.q.clone(),
            basis: (0..n).collect(),
            pivots: 0,
            since_refactor: 0,
            tolerance: options.tolerance,
            refactor_every: options.refactor_every.max(1),
            max_residual: options.max_residual,
            lexicographic: options.lexicographic,
            cycled: false,
            entering: None,
        }
    }

    /// Starts from the complementary basis with z basic at `z_basic` and w
    /// elsewhere, using d = B e so that z₀'s column in that basis is −e.
    /// `None` if that basis is singular.
    fn warm(lcp: &'a Lcp, z_basic: &[usize], options: &LemkeOptions) -> Option<Self> {
        let n = lcp.size();
        let mut basis: Vec<Var> = (0..n).collect();
        for &i in z_basic {
            basis[i] = n + i;
        }
        let mut tableau = Self::cold(lcp, DVector::zeros(n), options);
        tableau.basis = basis;
        let mut covering = DVector::from_element(n, 1.0);
        for &i in z_basic {
            covering[i] = 0.0;
        }
        for &i in z_basic {
            covering -= lcp.m.column(i);
        }
        tableau.covering = covering;
        let binv = tableau.basis_inverse()?;
        tableau.qbar = &binv * &lcp.q;
        tableau.binv_t = binv.transpose();
        tableau.flush_noise();
        Some(tableau)
    }

    /// The original column of variable `var` in [I, −M, −d].
    fn column(&self, var: Var) -> DVector<f64> {
        let n = self.n;
        if var < n {
            let mut e = DVector::zeros(n);
            e[var] = 1.0;
            e
        } else if var < 2 * n {
            -self.lcp.m.column(var - n)
        } else {
            -&self.covering
        }
    }

    /// B⁻¹ times the original column of `var`, in O(n²).
    fn entering_column(&self, var: Var) -> DVector<f64> {
        let n = self.n;
        if var < n {
            self.binv_t.row(var).transpose()
        } else if var < 2 * n {
            -self.binv_t.tr_mul(&self.lcp.m.column(var - n))
        } else {
            -self.binv_t.tr_mul(&self.covering)
        }
    }

    /// The set of basic variables, hashed.
    fn basis_key(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut sorted = self.basis.clone();
        sorted.sort_unstable();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        sorted.hash(&mut hasher);
        hasher.finish()
    }

    fn complement(&self, var: Var) -> Var {
        if var < self.n {
            var + self.n
        } else {
            var - self.n
        }
    }

    /// Runs pivots until termination; returns how it ended.
    fn run(&mut self, max_pivots: usize) -> LcpStatus {
        let n = self.n;
        let scale = self.lcp.scale();
        if self.qbar.iter().all(|&x| x >= -self.tolerance * scale) {
            return LcpStatus::Solved;
        }
        // First pivot: z₀ enters; its column −B⁻¹d is negative in every row, and
        // the leaving row is the lexicographic minimum of [q̄ᵢ | B⁻¹ᵢ] / |āᵢ|, which
        // makes every row of the new tableau lexico-positive.
        let z0 = 2 * n;
        let abar = self.entering_column(z0);
        if abar.iter().any(|&a| a >= 0.0) {
            // Only possible with a warm start whose d = B e is not covering.
            return LcpStatus::NumericalFailure;
        }
        if max_pivots == 0 {
            return LcpStatus::MaxPivots;
        }
        let rows: Vec<usize> = (0..n).collect();
        let negated = -&abar;
        let Some(r) = self.lexico_min_ratio(&rows, &negated) else {
            return LcpStatus::NumericalFailure;
        };
        let mut leaving = self.pivot(r, z0, &abar);
        self.entering = Some(self.complement(leaving));

        let mut seen = std::collections::HashSet::new();
        while let Some(entering) = self.entering {
            if self.pivots >= max_pivots {
                return LcpStatus::MaxPivots;
            }
            // In exact arithmetic the lexicographic rule never revisits a basis.
            if self.lexicographic && !seen.insert(self.basis_key()) {
                self.cycled = true;
                return LcpStatus::MaxPivots;
            }
            let abar = self.entering_column(entering);
            let amax = abar.amax();
            if !amax.is_finite() {
                return LcpStatus::NumericalFailure;
            }
            // Entries below the rounding noise of B⁻¹A_j (≈ ‖B⁻¹‖ ‖A_j‖ ε) are
            // zeros in exact arithmetic; pivoting on one makes B singular.
            let noise = self.binv_max * self.column(entering).amax();
            let threshold = self.tolerance * amax.max(noise).max(f64::MIN_POSITIVE);
            let candidates: Vec<usize> = (0..n).filter(|&i| abar[i] > threshold).collect();
            if candidates.is_empty() {
                return LcpStatus::RayTermination;
            }
            let Some(r) = self.lexico_min_ratio(&candidates, &abar) else {
                return LcpStatus::NumericalFailure;
            };
            leaving = self.pivot(r, entering, &abar);
            if leaving == z0 {
                return LcpStatus::Solved;
            }
            self.entering = Some(self.complement(leaving));
            if self.since_refactor >= self.refactor_every.max(n) && !self.refactor() {
                return LcpStatus::NumericalFailure;
            }
        }
        LcpStatus::Solved
    }

    /// The row among `candidates` minimizing [q̄ᵢ | B⁻¹ᵢ] / aᵢ lexicographically;
    /// among ties on q̄ᵢ/aᵢ the row of z₀ is preferred (CPS Algo. 4.4.1, step 3).
    fn lexico_min_ratio(&self, candidates: &[usize], a: &DVector<f64>) -> Option<usize> {
        let z0 = 2 * self.n;
        let mut ties = self.min_ties(candidates, |i| self.qbar[i], a);
        if ties.is_empty() {
            return None;
        }
        if let Some(&r) = ties.iter().find(|&&i| self.basis[i] == z0) {
            return Some(r);
        }
        if !self.lexicographic {
            return ties.iter().min().copied();
        }
        let mut column = 0;
        while ties.len() > 1 && column < self.n {
            ties = self.min_ties(&ties, |i| self.binv_t[(column, i)], a);
            column += 1;
        }
        ties.first().copied()
    }

    /// The candidates whose ratio numerator(i)/a(i) is within the tie tolerance
    /// of the minimum. The tolerance scales with the minimum and with the typical
    /// ratio size max|numerator| / max a, so it follows the data's units.
    fn min_ties(
        &self,
        candidates: &[usize],
        numerator: impl Fn(usize) -> f64,
        a: &DVector<f64>,
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
        let tol = self.tolerance * min.abs().max(num_max / a_max);
        ratios
            .into_iter()
            .filter(|&(_, r)| r - min <= tol)
            .map(|(i, _)| i)
            .collect()
    }

    /// Pivots `entering` into row `r` (column `abar` = B⁻¹ A_entering); returns
    /// the variable that left.
    fn pivot(&mut self, r: usize, entering: Var, abar: &DVector<f64>) -> Var {
        let inv = 1.0 / abar[r];
        self.qbar[r] *= inv;
        self.binv_t.column_mut(r).scale_mut(inv);
        self.row_max[r] = self.binv_t.column(r).amax();
        let n = self.n;
        let pivot_row: Vec<f64> = self.binv_t.column(r).iter().copied().collect();
        let q_r = self.qbar[r];
        let data = self.binv_t.as_mut_slice();
        for i in 0..n {
            let a = abar[i];
            if i != r && a != 0.0 {
                self.qbar[i] -= a * q_r;
                // One pass: the row update of B⁻¹ and its new largest entry.
                let mut largest = 0.0_f64;
                for (x, p) in data[i * n..(i + 1) * n].iter_mut().zip(&pivot_row) {
                    *x -= a * p;
                    largest = largest.max(x.abs());
                }
                self.row_max[i] = largest;
            }
        }
        self.pivots += 1;
        self.since_refactor += 1;
        self.flush_q_noise();
        std::mem::replace(&mut self.basis[r], entering)
    }

    /// Sets entries of q̄ that are rounding noise to exactly zero.
    ///
    /// Degenerate problems (many zero qᵢ) rely on exact ties in the ratio test; a
    /// q̄ᵢ of 1e-15 where exact arithmetic gives 0 would break a tie arbitrarily and
    /// with it the lexico-positivity that prevents cycling.
    fn flush_noise(&mut self) {
        for (m, column) in self.row_max.iter_mut().zip(self.binv_t.column_iter()) {
            *m = column.amax();
        }
        self.flush_q_noise();
    }

    /// The same with the per-row maxima already up to date (after a pivot).
    fn flush_q_noise(&mut self) {
        self.binv_max = self.row_max.iter().fold(0.0_f64, |m, &x| m.max(x));
        let q_floor = self.tolerance * self.lcp.scale() * self.binv_max.max(1.0);
        for x in self.qbar.iter_mut() {
            if x.abs() <= q_floor {
                *x = 0.0;
            }
        }
    }

    /// The basis split by the unit columns of its basic wⱼ: with K the rows no
    /// unit column covers and C the other columns, B x = b gives x_C = A_KC⁻¹
    /// b_K and x_wⱼ = bⱼ − A_jC x_C, so only the m×m block A_KC (m = |C|) needs
    /// a factorization. `None` if |K| ≠ |C| (B singular).
    fn partition(&self) -> Option<Partition> {
        let n = self.n;
        let mut unit_row = vec![usize::MAX; n];
        let mut others = Vec::new();
        for (row, &var) in self.basis.iter().enumerate() {
            if var < n {
                unit_row[var] = row;
            } else {
                others.push(row);
            }
        }
        let uncovered: Vec<usize> = (0..n).filter(|&j| unit_row[j] == usize::MAX).collect();
        let m = others.len();
        if uncovered.len() != m {
            return None;
        }
        let columns: Vec<DVector<f64>> =
            others.iter().map(|&r| self.column(self.basis[r])).collect();
        let block = DMatrix::from_fn(m, m, |k, c| columns[c][uncovered[k]]);
        Some(Partition {
            unit_row,
            others,
            uncovered,
            columns,
            block,
        })
    }

    /// B⁻¹ from the basis columns through [`Self::partition`]. `None` if B is
    /// singular.
    fn basis_inverse(&self) -> Option<DMatrix<f64>> {
        let n = self.n;
        let Partition {
            unit_row,
            others,
            uncovered,
            columns,
            block,
        } = self.partition()?;
        let m = others.len();
        let a_inv = if m == 0 { block } else { block.try_inverse()? };
        if a_inv.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut binv = DMatrix::zeros(n, n);
        for (c, &row) in others.iter().enumerate() {
            for (k, &j) in uncovered.iter().enumerate() {
                binv[(row, j)] = a_inv[(c, k)];
            }
        }
        // Rows of the basic wⱼ: e_jᵀ − A_jC A_KC⁻¹ (spread over the K columns),
        // all at once as one matrix product.
        let covered: Vec<usize> = (0..n).filter(|&j| unit_row[j] != usize::MAX).collect();
        let a_wc = DMatrix::from_fn(covered.len(), m, |r, c| columns[c][covered[r]]);
        let product = a_wc * &a_inv;
        for (r, &j) in covered.iter().enumerate() {
            let row = unit_row[j];
            binv[(row, j)] = 1.0;
            for (k, &jj) in uncovered.iter().enumerate() {
                binv[(row, jj)] -= product[(r, k)];
            }
        }
        Some(binv)
    }

    /// x with B x = b through [`Self::partition`]: an LU solve of A_KC, then
    /// x_w = b_w − A_wC x_C, in O(m³ + nm) instead of the O(n³) of a full LU.
    /// `None` if A_KC is singular.
    fn basis_solve(&self, b: &DVector<f64>) -> Option<DVector<f64>> {
        let n = self.n;
        let Partition {
            unit_row,
            others,
            uncovered,
            columns,
            block,
        } = self.partition()?;
        let m = others.len();
        let b_k = DVector::from_fn(m, |k, _| b[uncovered[k]]);
        let x_c = if m == 0 { b_k } else { block.lu().solve(&b_k)? };
        let mut x = DVector::zeros(n);
        for (c, &row) in others.iter().enumerate() {
            x[row] = x_c[c];
        }
        for j in 0..n {
            let row = unit_row[j];
            if row != usize::MAX {
                x[row] = b[j] - (0..m).map(|c| columns[c][j] * x_c[c]).sum::<f64>();
            }
        }
        Some(x)
    }

    /// Recomputes B⁻¹ and q̄ from the basis columns; false if B is singular.
    fn refactor(&mut self) -> bool {
        self.since_refactor = 0;
        match self.basis_inverse() {
            Some(binv) => {
                self.qbar = &binv * &self.lcp.q;
                self.binv_t = binv.transpose();
                self.flush_noise();
                true
            }
            _ => false,
        }
    }

    /// z from the values of the basic variables; a basic zᵢ that rounding left
    /// at −1e-17 is zero.
    fn z_from(&self, values: &DVector<f64>) -> DVector<f64> {
        let n = self.n;
        let floor = self.tolerance * self.lcp.scale();
        let mut z = DVector::zeros(n);
        for (row, &var) in self.basis.iter().enumerate() {
            if (n..2 * n).contains(&var) {
                let v = values[row];
                z[var - n] = if v < 0.0 && v > -floor { 0.0 } else { v };
            }
        }
        z
    }

    /// Reads z off the basis, recomputes w = M z + q and checks the residual.
    fn finish(mut self, status: LcpStatus, warm_started: bool) -> LcpSolution {
        let mut status = status;
        let (z, residual) = if status == LcpStatus::Solved && self.pivots > 0 {
            // A fresh LU solve of the final basis is usually the more accurate;
            // on a nearly singular basis the tableau's own q̄ can be better. Keep
            // whichever satisfies the LCP better.
            let from_tableau = self.z_from(&self.qbar);
            let refined = self
                .basis_solve(&self.lcp.q)
                .filter(|x| x.iter().all(|v| v.is_finite()))
                .map(|x| self.z_from(&x));
            let candidates = std::iter::once(from_tableau).chain(refined);
            candidates
                .map(|z| {
                    let r = self.lcp.validate(&z).relative();
                    (z, r)
                })
                .fold(
                    None,
                    |best: Option<(DVector<f64>, f64)>, (z, r)| match best {
                        Some((bz, br)) if br <= r => Some((bz, br)),
                        _ => Some((z, r)),
                    },
                )
                .unwrap_or_else(|| unreachable!("at least one candidate"))
        } else {
            let z = self.z_from(&self.qbar);
            let r = self.lcp.validate(&z).relative();
            (z, r)
        };
        let n = self.n;
        let w = &self.lcp.m * &z + &self.lcp.q;
        if status == LcpStatus::Solved && (residual.is_nan() || residual > self.max_residual) {
            status = LcpStatus::NumericalFailure;
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
