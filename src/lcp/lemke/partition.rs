//! A basis partitioned as Lemke's compressed and product-form tableaux hold
//! it: the basic columns of z against the rows they cover, its block A_KC
//! factored once and shared by the solves that follow.

use super::tableau::{Columns, NONE, Var};
use crate::lcp::LcpMatrix;
use nalgebra::{DMatrix, DVector};

/// The basis split by the unit columns of its basic wⱼ: with K the rows no
/// unit column covers and C the other columns, B x = b gives x_C = A_KC⁻¹ b_K
/// and x_wⱼ = bⱼ − A_jC x_C, so only the m×m block A_KC (m = |C|) needs a
/// factorization.
pub(super) struct Partition {
    /// Row of the basic wⱼ for each j (`NONE` where wⱼ is not basic).
    pub(super) unit_row: Vec<usize>,
    /// Rows whose basic variable is a z or z₀ (the set C).
    pub(super) others: Vec<usize>,
    /// The rows K no unit column covers.
    pub(super) uncovered: Vec<usize>,
    /// A_KC.
    pub(super) block: DMatrix<f64>,
    /// The columns of C, dense (A_KC is read from them; the factors need
    /// their A_jC rows too, so each is computed once).
    pub(super) full: Vec<Vec<f64>>,
    /// The LU of A_KC, made at the first [`Partition::solve`] and kept for
    /// the next (a refinement's).
    pub(super) lu: std::cell::OnceCell<BlockLu>,
}

/// An LU of A_KC with partial pivoting: nalgebra's unblocked one below 48
/// rows (faer's set-up dominates at the sizes of a few contacts), faer's
/// from there on.
pub(super) enum BlockLu {
    Small(nalgebra::linalg::LU<f64, nalgebra::Dyn, nalgebra::Dyn>),
    Large(faer::linalg::solvers::PartialPivLu<f64>),
}

impl Partition {
    /// `None` if |K| ≠ |C| (B singular).
    pub(super) fn of<M: LcpMatrix + ?Sized>(
        columns: &Columns<'_, M>,
        basis: &[Var],
    ) -> Option<Self> {
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
    pub(super) fn inverse(&self) -> Option<DMatrix<f64>> {
        match self.lu.get() {
            Some(BlockLu::Large(lu)) => inverse_from_lu(lu),
            _ => invert(&self.block),
        }
    }

    /// x with B x = b from the LU of A_KC, in O(m³ + n·b) for the first
    /// solve and O(m² + n·b) for the next, instead of the O(n³) of a full
    /// LU. `None` if A_KC is singular.
    pub(super) fn solve<M: LcpMatrix + ?Sized>(
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
pub(super) fn invert(block: &DMatrix<f64>) -> Option<DMatrix<f64>> {
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
pub(super) fn inverse_from_lu(
    lu: &faer::linalg::solvers::PartialPivLu<f64>,
) -> Option<DMatrix<f64>> {
    use faer::linalg::solvers::DenseSolveCore;
    let inverse = lu.inverse();
    let out = DMatrix::from_fn(inverse.nrows(), inverse.ncols(), |i, j| inverse[(i, j)]);
    out.iter().all(|x| x.is_finite()).then_some(out)
}
