//! B⁻¹ stored only on the columns that carry information (Lloyd 2005, §3:
//! the basis partitioned by the unit columns of its basic w's).
//!
//! Order B's columns as the basic wⱼ's unit columns and the set C of the
//! other basic variables (z's and z₀), and its rows as those the unit columns
//! cover and the rest K (|K| = |C| = m when B is regular):
//!
//! ```text
//!     B = ⎡ I  A_wC ⎤      B⁻¹ = ⎡ I  −A_wC S⁻¹ ⎤      S = A_KC.
//!         ⎣ 0  A_KC ⎦            ⎣ 0    S⁻¹     ⎦
//! ```
//!
//! So B⁻¹ is the identity on the covered columns and nonzero only in the m
//! columns K: this keeps R = B⁻¹[:, K], n × m, and the unit entries
//! implicitly. A pivot is the tableau's rank-one update on those m columns,
//! plus one column gained (a w leaves: its row joins K) or dropped (a w
//! enters: its column becomes a unit column again), O(n·m) instead of O(n²);
//! the entering column of M comes from [`crate::lcp::LcpMatrix`], which for a
//! contact problem reads the contacts' Jacobian blocks and the bodies' mass
//! blocks, so M is never formed. The arithmetic is the explicit tableau's,
//! restricted to the columns that are not unit vectors: the same pivots, the
//! same B⁻¹ entries for the lexicographic test and the same noise scale. For
//! contact problems m, the basic impulses, is a fraction of n, and Lemke
//! started from the frictionless problem keeps the friction variables of the
//! inactive contacts out of it.

use super::{BasisSolve, Columns, Factor, NONE, Partition, Var};
use crate::lcp::LcpMatrix;

/// From this many basic z's on, −A_wC S⁻¹ is formed as one dense product.
const DENSE_PRODUCT_FROM: usize = 64;

pub(super) struct CompressedBasis {
    n: usize,
    /// K: the original rows no basic w covers, one per stored column.
    k_rows: Vec<usize>,
    /// For each original row j, its column in `columns` (`NONE` when wⱼ is
    /// basic).
    k_pos: Vec<usize>,
    /// B⁻¹[:, K], one vector of length n (by basis row) per column.
    columns: Vec<Vec<f64>>,
    /// max |entry| of each stored column.
    column_max: Vec<f64>,
}

impl CompressedBasis {
    /// The factor of the basis that `partition` splits.
    fn from_partition<M: LcpMatrix + ?Sized>(
        columns: &Columns<'_, M>,
        partition: Partition,
    ) -> Option<Self> {
        let n = columns.n;
        let m = partition.others.len();
        let inverse = partition.inverse()?;
        let mut stored = vec![vec![0.0; n]; m];
        // The C rows: S⁻¹.
        for (c, &row) in partition.others.iter().enumerate() {
            for (k, column) in stored.iter_mut().enumerate() {
                column[row] = inverse[(c, k)];
            }
        }
        // The rows of the basic wⱼ: −A_wC S⁻¹.
        if m < DENSE_PRODUCT_FROM {
            for (c, a) in partition.full.iter().enumerate() {
                for (j, &unit) in partition.unit_row.iter().enumerate() {
                    if unit != NONE && a[j] != 0.0 {
                        for (k, column) in stored.iter_mut().enumerate() {
                            column[unit] -= a[j] * inverse[(c, k)];
                        }
                    }
                }
            }
        } else {
            // One matrix product: entry by entry, the loop above writes
            // across all m stored columns for every nonzero of A_wC, which
            // on a pile's islands (m in the hundreds) cost more than the
            // pivots themselves.
            let covered: Vec<(usize, usize)> = partition
                .unit_row
                .iter()
                .enumerate()
                .filter(|&(_, &unit)| unit != NONE)
                .map(|(j, &unit)| (j, unit))
                .collect();
            let a_wc = faer::Mat::from_fn(covered.len(), m, |t, c| partition.full[c][covered[t].0]);
            let s_inv = faer::Mat::from_fn(m, m, |c, k| inverse[(c, k)]);
            let product = &a_wc * &s_inv;
            for (k, column) in stored.iter_mut().enumerate() {
                for (t, &(_, unit)) in covered.iter().enumerate() {
                    column[unit] = -product[(t, k)];
                }
            }
        }
        let mut k_pos = vec![NONE; n];
        for (k, &j) in partition.uncovered.iter().enumerate() {
            k_pos[j] = k;
        }
        let column_max = stored.iter().map(|c| max_abs(c)).collect();
        Some(Self {
            n,
            k_rows: partition.uncovered,
            k_pos,
            columns: stored,
            column_max,
        })
    }
}

impl<M: LcpMatrix + ?Sized> Factor<M> for CompressedBasis {
    fn new(columns: &Columns<'_, M>, basis: &[Var]) -> Option<Self> {
        Self::from_partition(columns, Partition::of(columns, basis)?)
    }

    fn from_solve(columns: &Columns<'_, M>, basis: &[Var], solve: BasisSolve) -> Option<Self> {
        match solve {
            BasisSolve::Partition(partition) => Self::from_partition(columns, partition),
            BasisSolve::Product(_) => Self::new(columns, basis),
        }
    }

    fn apply(&mut self, _: &Columns<'_, M>, basis: &[Var], a: &[f64], out: &mut [f64]) {
        let n = self.n;
        for (o, &var) in out.iter_mut().zip(basis) {
            *o = if var < n { a[var] } else { 0.0 };
        }
        for (column, &j) in self.columns.iter().zip(&self.k_rows) {
            let value = a[j];
            if value != 0.0 {
                for (o, x) in out.iter_mut().zip(column) {
                    *o += value * x;
                }
            }
        }
    }

    fn row(&self, _: &Columns<'_, M>, basis: &[Var], r: usize) -> Vec<f64> {
        let mut out = vec![0.0; self.n];
        if basis[r] < self.n {
            out[basis[r]] = 1.0;
        }
        for (column, &j) in self.columns.iter().zip(&self.k_rows) {
            out[j] += column[r];
        }
        out
    }

    fn pivot(&mut self, _: &Columns<'_, M>, basis: &[Var], r: usize, var: Var, abar: &[f64]) {
        let n = self.n;
        let inv = 1.0 / abar[r];
        // The rank-one update B⁻¹ − (ā − e_r) B⁻¹_r / ā_r on the stored columns.
        for (column, largest) in self.columns.iter_mut().zip(&mut self.column_max) {
            let pivot_entry = column[r] * inv;
            if pivot_entry == 0.0 {
                continue;
            }
            // x − āᵢ x_r / ā_r on every row (zero at r), then row r itself.
            *largest = update_column(column, abar, pivot_entry, r);
        }
        let leaving = basis[r];
        if leaving < n {
            // wⱼ leaves: row r's unit entry at column j spreads into a new
            // stored column.
            let column: Vec<f64> = abar
                .iter()
                .enumerate()
                .map(|(i, &a)| if i == r { inv } else { -a * inv })
                .collect();
            self.column_max.push(max_abs(&column));
            self.columns.push(column);
            self.k_pos[leaving] = self.k_rows.len();
            self.k_rows.push(leaving);
        }
        if var < n {
            // wᵢ enters: its column is e_r again, held implicitly.
            let k = self.k_pos[var];
            self.columns.swap_remove(k);
            self.column_max.swap_remove(k);
            self.k_rows.swap_remove(k);
            self.k_pos[var] = NONE;
            if k < self.k_rows.len() {
                self.k_pos[self.k_rows[k]] = k;
            }
        }
    }

    fn max_entry(&self) -> f64 {
        let stored = self.column_max.iter().fold(0.0_f64, |m, &x| m.max(x));
        // The unit entries of the basic w's rows.
        if self.k_rows.len() < self.n {
            stored.max(1.0)
        } else {
            stored
        }
    }

    fn refactor_period(&self, refactor_every: usize) -> usize {
        refactor_every.max(self.k_rows.len())
    }
}

/// max |xᵢ| (0 for an empty slice), in eight independent lanes so that it
/// vectorizes: a pivot recomputes it for every stored column, and the serial
/// `fold` of `f64::max` took longer than the column's update itself.
fn max_abs(x: &[f64]) -> f64 {
    let mut lanes = [0.0_f64; 8];
    let chunks = x.chunks_exact(8);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            let a = v.abs();
            *lane = if a > *lane { a } else { *lane };
        }
    }
    let most = lanes.iter().fold(0.0_f64, |m, &v| m.max(v));
    tail.iter().fold(most, |m, v| m.max(v.abs()))
}

/// x ← x − p·ā on every row, then x_r ← p; returns max |xᵢ| afterwards. One
/// pass in eight lanes, branch-free, so that it vectorizes.
fn update_column(x: &mut [f64], abar: &[f64], p: f64, r: usize) -> f64 {
    let mut lanes = [0.0_f64; 8];
    let mut chunks = x.chunks_exact_mut(8);
    let mut a_chunks = abar.chunks_exact(8);
    for (chunk, a) in (&mut chunks).zip(&mut a_chunks) {
        for ((lane, v), &a) in lanes.iter_mut().zip(chunk).zip(a) {
            *v -= a * p;
            let m = v.abs();
            *lane = if m > *lane { m } else { *lane };
        }
    }
    let mut most = lanes.iter().fold(0.0_f64, |m, &v| m.max(v));
    for (v, &a) in chunks.into_remainder().iter_mut().zip(a_chunks.remainder()) {
        *v -= a * p;
        most = most.max(v.abs());
    }
    // Row r: its update above gave x_r − ā_r p ≈ 0, which the maximum may
    // have counted; that rounding residue is below every other entry's scale.
    x[r] = p;
    most.max(p.abs())
}
