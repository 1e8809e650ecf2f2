//! The explicit tableau: B⁻¹ as an n × n matrix, updated by an O(n²)
//! rank-one pivot. The reference representation of [`super::solve`].

use super::{Columns, Factor, NONE, Partition, Var};
use crate::lcp::LcpMatrix;
use nalgebra::DMatrix;

pub(super) struct DenseBasis {
    /// (B⁻¹)ᵀ, stored transposed so that each row of B⁻¹ is a contiguous column.
    binv_t: DMatrix<f64>,
    /// max |B⁻¹ᵢⱼ| over each row i of B⁻¹ (column of `binv_t`), so that a pivot,
    /// which changes only the rows with a nonzero entering entry, refreshes
    /// the maximum without a pass over all n² entries.
    row_max: Vec<f64>,
}

impl<M: LcpMatrix + ?Sized> Factor<M> for DenseBasis {
    /// B⁻¹ from the basis columns through [`Partition`]: the inverse of A_KC
    /// in the C rows, and e_jᵀ − A_jC A_KC⁻¹ in the rows of the basic wⱼ.
    fn new(columns: &Columns<'_, M>, basis: &[Var]) -> Option<Self> {
        let n = columns.n;
        let Partition {
            unit_row,
            others,
            uncovered,
            block,
            full,
            ..
        } = Partition::of(columns, basis)?;
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
        let covered: Vec<usize> = (0..n).filter(|&j| unit_row[j] != NONE).collect();
        let a_wc = DMatrix::from_fn(covered.len(), m, |r, c| full[c][covered[r]]);
        let product = a_wc * &a_inv;
        for (r, &j) in covered.iter().enumerate() {
            let row = unit_row[j];
            binv[(row, j)] = 1.0;
            for (k, &jj) in uncovered.iter().enumerate() {
                binv[(row, jj)] -= product[(r, k)];
            }
        }
        let binv_t = binv.transpose();
        let row_max = binv_t.column_iter().map(|c| c.amax()).collect();
        Some(Self { binv_t, row_max })
    }

    fn apply(&mut self, _: &Columns<'_, M>, _: &[Var], a: &[f64], out: &mut [f64]) {
        // out = B⁻¹ a = (B⁻¹ᵀ)ᵀ a, one contiguous column per entry, summed
        // over a's nonzeros only (an entering wⱼ's column is a unit vector)
        // in their order: the same sums as over every entry.
        let nonzero: Vec<usize> = (0..a.len()).filter(|&k| a[k] != 0.0).collect();
        let n = self.binv_t.nrows();
        let data = self.binv_t.as_slice();
        for (i, o) in out.iter_mut().enumerate() {
            let row = &data[i * n..(i + 1) * n];
            *o = nonzero.iter().map(|&k| row[k] * a[k]).sum();
        }
    }

    fn row(&self, _: &Columns<'_, M>, _: &[Var], r: usize) -> Vec<f64> {
        self.binv_t.column(r).iter().copied().collect()
    }

    fn row_ref(&self, r: usize) -> Option<&[f64]> {
        let n = self.binv_t.nrows();
        Some(&self.binv_t.as_slice()[r * n..(r + 1) * n])
    }

    fn pivot(&mut self, _: &Columns<'_, M>, _: &[Var], r: usize, _: Var, abar: &[f64]) {
        let n = self.binv_t.nrows();
        let inv = 1.0 / abar[r];
        self.binv_t.column_mut(r).scale_mut(inv);
        self.row_max[r] = self.binv_t.column(r).amax();
        let pivot_row: Vec<f64> = self.binv_t.column(r).iter().copied().collect();
        let data = self.binv_t.as_mut_slice();
        for (i, &a) in abar.iter().enumerate() {
            if i != r && a != 0.0 {
                let row = &mut data[i * n..(i + 1) * n];
                for (x, p) in row.iter_mut().zip(&pivot_row) {
                    *x -= a * p;
                }
                self.row_max[i] = largest_magnitude(row);
            }
        }
    }

    fn max_entry(&self) -> f64 {
        self.row_max.iter().fold(0.0_f64, |m, &x| m.max(x))
    }

    fn refactor_period(&self, refactor_every: usize) -> usize {
        refactor_every.max(self.binv_t.nrows())
    }
}

/// max |xᵢ| (0 for none), with four running maxima so that the comparisons
/// do not wait on each other; the maximum does not depend on the order.
fn largest_magnitude(x: &[f64]) -> f64 {
    let mut m = [0.0_f64; 4];
    let mut chunks = x.chunks_exact(4);
    for c in &mut chunks {
        for k in 0..4 {
            m[k] = m[k].max(c[k].abs());
        }
    }
    let tail = chunks
        .remainder()
        .iter()
        .fold(0.0_f64, |t, v| t.max(v.abs()));
    m.iter().fold(tail, |t, &v| t.max(v))
}
