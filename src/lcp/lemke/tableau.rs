//! Lemke's tableau: the complementary pivoting itself (Cottle, Pang & Stone
//! 1992 §4.4), generic over how the basis is factored ([`Factor`]): the
//! lexicographic ratio test on B⁻¹'s columns, the pivot, the final check.

use super::{BasisSolve, refined_within_backward_error};
use crate::lcp::budget;
use crate::lcp::{LcpMatrix, LcpSolution, LcpStatus, LemkeOptions, Validation};
use nalgebra::DVector;
use std::collections::HashSet;

/// Index of a variable in the augmented system: wᵢ = i, zᵢ = n + i, z₀ = 2n.
pub(super) type Var = usize;

/// "No such index" in the position maps.
pub(super) const NONE: usize = usize::MAX;

/// The first columns of B⁻¹ the lexicographic ratio test keeps between its
/// tests ([`Factor::update_column`]); ties that last longer read rows.
pub(super) const LEX_COLUMNS: usize = 64;

/// The columns of the augmented system [I, −M, −d].
pub(super) struct Columns<'a, M: ?Sized> {
    pub(super) m: &'a M,
    /// The covering vector d.
    pub(super) covering: Vec<f64>,
    pub(super) n: usize,
}

impl<M: LcpMatrix + ?Sized> Columns<'_, M> {
    /// out += Σ value·(column of var) over `vars`.
    pub(super) fn add_columns(&self, vars: &[(Var, f64)], out: &mut [f64]) {
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
    pub(super) fn column(&self, var: Var) -> Vec<f64> {
        let mut out = vec![0.0; self.n];
        self.add_columns(&[(var, 1.0)], &mut out);
        out
    }
}

/// A representation of B⁻¹ for the tableau.
pub(super) trait Factor<M: LcpMatrix + ?Sized>: Sized {
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
    /// Row r of B⁻¹ where the factor keeps it whole, without a copy; `None`
    /// where it must be computed ([`Factor::row`]).
    fn row_ref(&self, r: usize) -> Option<&[f64]> {
        let _ = r;
        None
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

/// An incremental hash of the set of basic variables (Zobrist): the XOR of a
/// fixed random word per variable, updated in O(1) per pivot.
pub(super) fn zobrist(var: Var) -> u64 {
    // splitmix64
    let mut x = (var as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

pub(super) struct Tableau<'a, M: ?Sized, F> {
    pub(super) columns: Columns<'a, M>,
    pub(super) q: &'a DVector<f64>,
    /// max(1, ‖q‖∞): the scale of q's rounding noise.
    pub(super) q_scale: f64,
    pub(super) n: usize,
    pub(super) factor: F,
    /// max |B⁻¹ᵢⱼ| (or the factor's estimate), refreshed after every pivot.
    pub(super) binv_max: f64,
    /// B⁻¹ q: the values of the basic variables.
    pub(super) qbar: Vec<f64>,
    /// The variable basic in each row.
    pub(super) basis: Vec<Var>,
    /// [`zobrist`] hash of the basis.
    pub(super) key: u64,
    pub(super) pivots: usize,
    pub(super) since_refactor: usize,
    pub(super) pivot_tolerance: f64,
    pub(super) refactor_every: usize,
    pub(super) max_residual: f64,
    pub(super) product_form_from: usize,
    pub(super) max_backward_error: f64,
    pub(super) lexicographic: bool,
    /// Set when a basis repeats: rounding broke the lexicographic order.
    pub(super) cycled: bool,
    /// The textbook zero tests, for a perturbed q ([`perturbed`]): a pivot
    /// entry is compared with the entering column alone and q̄ is never
    /// flushed, since the perturbation leaves no ties to make exact and
    /// the noise bounds scaled by max |B⁻¹| would erase it.
    pub(super) plain: bool,
    /// Set once the first pivot has brought z₀ in (or no pivot is needed).
    pub(super) entering: Option<Var>,
    /// Scratch: the entering column and B⁻¹ times it.
    pub(super) column: Vec<f64>,
    pub(super) abar: Vec<f64>,
    /// Scratch: the rows the ratio test may pivot on.
    pub(super) candidates: Vec<usize>,
    /// The first columns of B⁻¹ the lexicographic test has read since the
    /// last factorization, each with the pivots applied to it
    /// ([`Factor::update_column`]).
    pub(super) lex_columns: Vec<(Vec<f64>, Option<usize>)>,
}

impl<'a, M: LcpMatrix + ?Sized, F: Factor<M>> Tableau<'a, M, F> {
    pub(super) fn with_basis(
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
            q_scale: q.amax().max(1.0),
            n,
            binv_max: factor.max_entry(),
            factor,
            qbar,
            basis,
            key,
            pivots: 0,
            since_refactor: 0,
            pivot_tolerance: options.pivot_tolerance,
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
            candidates: Vec::with_capacity(n),
            lex_columns: Vec::new(),
        };
        tableau.flush_q_noise();
        Some(tableau)
    }

    /// The identity basis (every w basic). `None` only when the data are
    /// not finite after all: an operator whose entries are finite can still
    /// overflow in its products.
    pub(super) fn cold(
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
    pub(super) fn warm(
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

    pub(super) fn complement(&self, var: Var) -> Var {
        if var < self.n {
            var + self.n
        } else {
            var - self.n
        }
    }

    /// ā = B⁻¹ A_var into `self.abar`; returns max |A_var|.
    pub(super) fn enter(&mut self, var: Var) -> f64 {
        self.column.iter_mut().for_each(|x| *x = 0.0);
        self.columns.add_columns(&[(var, 1.0)], &mut self.column);
        self.factor
            .apply(&self.columns, &self.basis, &self.column, &mut self.abar);
        self.column.iter().fold(0.0_f64, |m, x| m.max(x.abs()))
    }

    /// Runs pivots until termination; returns how it ended.
    pub(super) fn run(&mut self, max_pivots: usize) -> LcpStatus {
        let n = self.n;
        let scale = self.q_scale;
        if self
            .qbar
            .iter()
            .all(|&x| x >= -self.pivot_tolerance * scale)
        {
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
        if budget::take_pivot() {
            return LcpStatus::OverBudget;
        }
        let mut leaving = self.pivot(r, z0);
        self.entering = Some(self.complement(leaving));

        let mut seen = HashSet::new();
        while let Some(entering) = self.entering {
            if self.pivots >= max_pivots {
                return LcpStatus::MaxPivots;
            }
            if budget::take_pivot() {
                return LcpStatus::OverBudget;
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
            let threshold = self.pivot_tolerance * amax.max(noise).max(f64::MIN_POSITIVE);
            let floor = self.pivot_tolerance * amax.max(f64::MIN_POSITIVE);
            let mut candidates = std::mem::take(&mut self.candidates);
            candidates.clear();
            for (i, &a) in self.abar.iter().enumerate() {
                if a > threshold
                    || (!self.plain
                        && a > floor
                        && a > self.pivot_tolerance * self.row_max(i) * column_max)
                {
                    candidates.push(i);
                }
            }
            if candidates.is_empty() {
                return LcpStatus::RayTermination;
            }
            let abar = std::mem::take(&mut self.abar);
            let chosen = self.lexico_min_ratio(&candidates, &abar);
            self.abar = abar;
            self.candidates = candidates;
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
    pub(super) fn lexico_min_ratio(&mut self, candidates: &[usize], a: &[f64]) -> Option<usize> {
        let z0 = 2 * self.n;
        let mut ties = min_ties(self.pivot_tolerance, candidates, |i| self.qbar[i], a);
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
        let (mut ratios, mut next) = (Vec::new(), Vec::new());
        while ties.len() > 1 && column < self.n && column < LEX_COLUMNS {
            if self.lex_columns.len() <= column {
                self.lex_columns.push((Vec::new(), None));
            }
            let (y, applied) = &mut self.lex_columns[column];
            if !self.factor.update_column(&self.columns, column, y, applied) {
                break;
            }
            let y = &self.lex_columns[column].0;
            min_ties_into(
                self.pivot_tolerance,
                &ties,
                |i| y[i],
                a,
                &mut ratios,
                &mut next,
            );
            std::mem::swap(&mut ties, &mut next);
            column += 1;
        }
        if ties.len() == 1 {
            return ties.first().copied();
        }
        // Rows of B⁻¹ only for the tied rows, found by their row index in
        // O(1): a test can run through all n columns with n rows tied
        // (Murty's problem), and a search among the rows made it O(n³).
        let kept: Vec<&[f64]> = ties
            .iter()
            .filter_map(|&i| self.factor.row_ref(i))
            .collect();
        let computed = if kept.len() == ties.len() {
            Vec::new()
        } else {
            self.factor.rows(&self.columns, &self.basis, &ties)
        };
        let rows: Vec<&[f64]> = if kept.len() == ties.len() {
            kept
        } else {
            computed.iter().map(Vec::as_slice).collect()
        };
        lexico_rest(self.pivot_tolerance, &ties, &rows, column, self.n, a)
    }

    /// Pivots `entering` into row `r` (with `self.abar` = B⁻¹ A_entering);
    /// returns the variable that left.
    pub(super) fn pivot(&mut self, r: usize, entering: Var) -> Var {
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
    pub(super) fn flush_q_noise(&mut self) {
        if self.plain {
            return;
        }
        let scale = self.q_scale;
        let q_floor = self.pivot_tolerance * scale * self.binv_max.max(1.0);
        for i in 0..self.n {
            let x = self.qbar[i];
            if x != 0.0
                && x.abs() <= q_floor
                && x.abs() <= self.pivot_tolerance * scale * self.row_max(i).max(1.0)
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
    pub(super) fn row_max(&self, i: usize) -> f64 {
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
    pub(super) fn refactor(&mut self) -> bool {
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
    pub(super) fn z_from(&self, values: &[f64]) -> DVector<f64> {
        let n = self.n;
        let floor = self.pivot_tolerance * self.q_scale;
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
    pub(super) fn check(&self, z: &DVector<f64>) -> (DVector<f64>, Validation) {
        super::super::validate_with(self.columns.m, self.q, z)
    }

    /// Reads z off the basis, recomputes w = M z + q and checks the residual.
    pub(super) fn finish(mut self, status: LcpStatus, warm_started: bool) -> LcpSolution {
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
                    residual = Validation::of(&refined_z, &refined_w, self.q_scale).relative();
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
pub(super) const FINISHED_RESIDUAL: f64 = 1e-12;

/// The candidates whose ratio numerator(i)/a(i) is within the tie tolerance
/// of the minimum. The tolerance scales with the minimum and with the typical
/// ratio size max|numerator| / max a, so it follows the data's units.
pub(super) fn min_ties(
    tolerance: f64,
    candidates: &[usize],
    numerator: impl Fn(usize) -> f64,
    a: &[f64],
) -> Vec<usize> {
    let mut out = Vec::new();
    min_ties_into(
        tolerance,
        candidates,
        numerator,
        a,
        &mut Vec::new(),
        &mut out,
    );
    out
}

/// The lexicographic test's remaining columns, from `column` on, over the
/// tied rows `ties` whose rows of B⁻¹ are `rows` (in the same order): the
/// decisions of [`min_ties_into`] applied column by column, made in time
/// that follows the nonzero entries.
///
/// A column where every tied row is exactly zero leaves the ties as they are
/// (all ratios 0, a tolerance of 0), and at any column only the rows whose
/// next nonzero entry lies there have a ratio other than 0. So each row keeps
/// the column of its next nonzero entry, found by one contiguous scan of its
/// row, in a heap; a step of the test reads only the rows whose entries are
/// nonzero in its column, and the rows that are zero there survive or leave
/// together. On Murty's problem n rows stay tied through most of the n
/// columns, one leaving at each: read column by column that is n²/2 ratios a
/// pivot, here n²/2 entries scanned and n ratios.
fn lexico_rest(
    tolerance: f64,
    ties: &[usize],
    rows: &[&[f64]],
    column: usize,
    n: usize,
    a: &[f64],
) -> Option<usize> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let m = ties.len();
    let next_nonzero = |row: &[f64], from: usize| {
        row[from..n]
            .iter()
            .position(|&x| x != 0.0)
            .map_or(n, |p| from + p)
    };
    let mut heap: BinaryHeap<Reverse<(usize, usize)>> = rows
        .iter()
        .enumerate()
        .map(|(k, row)| Reverse((next_nonzero(row, column.min(n)), k)))
        .collect();
    let mut alive = vec![true; m];
    let mut count = m;
    // a_max over the rows alive: the rows by decreasing a, the first alive.
    let mut by_a: Vec<usize> = (0..m).collect();
    by_a.sort_by(|&x, &y| a[ties[y]].total_cmp(&a[ties[x]]));
    let mut largest = 0;
    let mut group: Vec<(usize, f64)> = Vec::new();
    while count > 1 {
        let Some(&Reverse((at, _))) = heap.peek() else {
            break;
        };
        if at >= n {
            break;
        }
        group.clear();
        while let Some(&Reverse((c, k))) = heap.peek() {
            if c != at {
                break;
            }
            heap.pop();
            group.push((k, 0.0));
        }
        while !alive[by_a[largest]] {
            largest += 1;
        }
        let a_max = a[ties[by_a[largest]]];
        let zeros = count - group.len();
        let mut min = if zeros > 0 { 0.0 } else { f64::INFINITY };
        let mut num_max = 0.0_f64;
        for (k, ratio) in group.iter_mut() {
            let x = rows[*k][at];
            let r = x / a[ties[*k]];
            if !r.is_finite() {
                return None;
            }
            *ratio = r;
            min = min.min(r);
            num_max = num_max.max(x.abs());
        }
        let tol = tolerance * min.abs().max(num_max / a_max);
        if zeros > 0 && 0.0 - min > tol {
            for Reverse((_, k)) in heap.drain() {
                alive[k] = false;
            }
            count -= zeros;
        }
        for &(k, r) in &group {
            if r - min <= tol {
                heap.push(Reverse((next_nonzero(rows[k], at + 1), k)));
            } else {
                alive[k] = false;
                count -= 1;
            }
        }
    }
    alive.iter().position(|&x| x).map(|k| ties[k])
}

/// [`min_ties`] into `out` (replaced), with `ratios` as work space: one pass
/// over the candidates for the ratios and the scales, one for the filter.
pub(super) fn min_ties_into(
    tolerance: f64,
    candidates: &[usize],
    numerator: impl Fn(usize) -> f64,
    a: &[f64],
    ratios: &mut Vec<f64>,
    out: &mut Vec<usize>,
) {
    out.clear();
    ratios.clear();
    let (mut min, mut num_max, mut a_max) = (f64::INFINITY, 0.0_f64, 0.0_f64);
    for &i in candidates {
        let x = numerator(i);
        let r = x / a[i];
        if !r.is_finite() {
            return;
        }
        ratios.push(r);
        min = min.min(r);
        num_max = num_max.max(x.abs());
        a_max = a_max.max(a[i]);
    }
    let tol = tolerance * min.abs().max(num_max / a_max);
    out.extend(
        candidates
            .iter()
            .zip(ratios.iter())
            .filter(|&(_, &r)| r - min <= tol)
            .map(|(&i, _)| i),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// The lexicographic test read column by column: every tied row's
    /// ratio at every column, the decisions of [`min_ties_into`].
    fn column_by_column(
        tolerance: f64,
        ties: &[usize],
        rows: &[&[f64]],
        n: usize,
        a: &[f64],
    ) -> Option<usize> {
        let slot = |i: usize| ties.iter().position(|&t| t == i).expect("a tie");
        let mut current = ties.to_vec();
        let (mut ratios, mut next) = (Vec::new(), Vec::new());
        let mut column = 0;
        while current.len() > 1 && column < n {
            min_ties_into(
                tolerance,
                &current,
                |i| rows[slot(i)][column],
                a,
                &mut ratios,
                &mut next,
            );
            std::mem::swap(&mut current, &mut next);
            column += 1;
        }
        current.first().copied()
    }

    #[test]
    fn the_rest_of_the_lexicographic_test_decides_as_column_by_column() {
        let mut rng = StdRng::seed_from_u64(7);
        for trial in 0..2_000 {
            let n = 1 + trial % 13;
            // Sparse rows whose nonzeros repeat a few values, so that rows
            // tie over several columns and leave both singly and together.
            let values = [1.0, -1.0, 2.0, 0.5, 1.0 + 1e-14, -3.0];
            let matrix: Vec<Vec<f64>> = (0..n)
                .map(|_| {
                    (0..n)
                        .map(|_| {
                            if rng.random_bool(0.7) {
                                0.0
                            } else {
                                values[rng.random_range(0..values.len())]
                            }
                        })
                        .collect()
                })
                .collect();
            let a: Vec<f64> = (0..n)
                .map(|_| [1.0, 2.0, 0.5][rng.random_range(0..3)])
                .collect();
            let ties: Vec<usize> = (0..n).filter(|_| rng.random_bool(0.8)).collect();
            if ties.len() < 2 {
                continue;
            }
            let rows: Vec<&[f64]> = ties.iter().map(|&i| matrix[i].as_slice()).collect();
            let from = rng.random_range(0..n);
            let tail: Vec<Vec<f64>> = rows
                .iter()
                .map(|r| {
                    let mut r = r.to_vec();
                    r[..from].fill(0.0);
                    r
                })
                .collect();
            let tail_rows: Vec<&[f64]> = tail.iter().map(Vec::as_slice).collect();
            assert_eq!(
                lexico_rest(1e-12, &ties, &tail_rows, from, n, &a),
                column_by_column(1e-12, &ties, &tail_rows, n, &a),
                "trial {trial}: rows {matrix:?}, a {a:?}, ties {ties:?}, from {from}"
            );
        }
    }
}
