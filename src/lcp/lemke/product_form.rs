//! B⁻¹ in product form over a factorization of the basis block that carries
//! information: the representation for large contact LCPs.
//!
//! With the basis partitioned by the unit columns of its basic wⱼ (see
//! [`super::compressed`]), B x = b is x_C = S⁻¹ b_K and x_wⱼ = bⱼ − A_jC x_C
//! with S = A_KC. Instead of keeping the n × m matrix B⁻¹[:, K] (O(n·m) a
//! pivot, O(m³ + n·m²) a factorization, which on a pile of 100 bodies —
//! n ≈ 1,200, m ≈ 870 — cost a second a step), this keeps
//! - a factorization of S from the matrix itself when it has one
//!   ([`LcpMatrix::factor_block`]: for contacts between rigid bodies the
//!   sparse LU of the KKT form [I, −W^½J_Cᵀ; −J_KW^½, −P_KC], whose size is
//!   the bodies' degrees of freedom plus m and whose nonzeros are the
//!   Jacobian blocks — J. E. Lloyd's observation (UBC TR-2005-01, §3) that a
//!   pivot's linear system is best solved through the mass matrix and the
//!   contact Jacobians), else a dense LU of S;
//! - the rows A_wC x_C through products with M ([`Columns::add_columns`]);
//! - the pivots since the factorization as eta columns (the product form of
//!   the inverse: B_p⁻¹ = E_p ⋯ E₁ B₀⁻¹ with E = I − (ā − e_r) e_rᵀ / ā_r),
//!   refactorized every [`super::LemkeOptions::refactor_every`] pivots.
//!
//! A pivot costs one solve with the factorization, one product with M and
//! O(n) per eta; a row of B⁻¹ (the lexicographic test's ties) the transposed
//! solve and a product with Mᵀ. The lexicographic test reads B⁻¹ column by
//! column, and its first columns are kept from one test to the next
//! ([`Factor::update_column`]): a solve when first read after a
//! factorization, then only the etas of the pivots since. The scale of rounding noise, max |B⁻¹ᵢⱼ|,
//! which the explicit tableau keeps exactly, is estimated at each
//! factorization by an alternating search over rows and columns of B₀⁻¹
//! (a handful of solves each way) and raised whenever a solve shows a
//! larger entry along the pivots (|(B⁻¹a)ᵢ| ≤ max |B⁻¹| ‖a‖₁). The thresholds
//! that use it (a pivot entry against rounding noise, q̄ entries flushed to
//! zero) then see the same scale as the tableau's: with ‖B⁻¹‖∞ instead,
//! up to n times larger, more of q̄ was flushed and degenerate problems
//! (a tower of boxes) took other, worse pivot paths.

use super::{BasisSolve, Columns, Factor, NONE, Var};
use crate::lcp::{BlockSolver, LcpMatrix};
use faer::linalg::solvers::Solve;

/// S factored densely, for matrices without a structured factorization.
struct DenseBlock {
    lu: faer::linalg::solvers::PartialPivLu<f64>,
}

impl BlockSolver for DenseBlock {
    fn solve(&self, b: &mut [f64]) {
        let m = b.len();
        self.lu
            .solve_in_place(faer::MatMut::from_column_major_slice_mut(b, m, 1));
    }

    fn solve_transpose(&self, b: &mut [f64]) {
        let m = b.len();
        self.lu
            .solve_transpose_in_place(faer::MatMut::from_column_major_slice_mut(b, m, 1));
    }
}

with_avx2! {
    /// out ← out − v a, entry by entry: most of applying an eta column, whose
    /// ā is dense on the islands of stacked boxes.
    fn subtract_scaled(out: &mut [f64], a: &[f64], v: f64) {
        for (o, &x) in out.iter_mut().zip(a) {
            *o -= x * v;
        }
    }
}

pub(super) struct ProductForm {
    n: usize,
    /// For each original row j, the basis row of the basic wⱼ (`NONE`
    /// where wⱼ is not basic), at the factorization.
    unit_row: Vec<usize>,
    /// For each basis row, the original row j whose unit column wⱼ sits
    /// there (`NONE` where a z or z₀ does): `unit_row` inverted.
    row_unit: Vec<usize>,
    /// The basic z's columns (`wanted[j]` for zⱼ basic), the only entries
    /// of A_wCᵀ ũ that [`ProductForm::transpose_initial_many`] reads.
    wanted: Vec<bool>,
    /// The basis rows of C (the basic z's, then z₀), in the order of S's
    /// columns.
    c_rows: Vec<usize>,
    /// The variable basic in each of them.
    c_vars: Vec<Var>,
    /// K: the original rows no unit column covers, in the order of S's rows.
    k_rows: Vec<usize>,
    block: Box<dyn BlockSolver>,
    /// The pivots since the factorization: (row r, ā, whether every entry
    /// of ā is finite).
    etas: Vec<(usize, Vec<f64>, bool)>,
    /// Estimate of ‖B⁻¹‖∞ (see the module doc).
    norm: f64,
}

impl ProductForm {
    /// The partition and the factorization of S, without the norm estimate
    /// (`None` if B is singular).
    pub(super) fn factor<M: LcpMatrix + ?Sized>(
        columns: &Columns<'_, M>,
        basis: &[Var],
    ) -> Option<Self> {
        let n = columns.n;
        let mut unit_row = vec![NONE; n];
        let mut row_unit = vec![NONE; basis.len()];
        let mut wanted = vec![false; n];
        let mut c_rows = Vec::new();
        let mut z0_row = None;
        for (row, &var) in basis.iter().enumerate() {
            if var < n {
                unit_row[var] = row;
                row_unit[row] = var;
            } else if var < 2 * n {
                wanted[var - n] = true;
                c_rows.push(row);
            } else {
                z0_row = Some(row);
            }
        }
        // z₀'s column last: the block's columns are M's, then −d.
        c_rows.extend(z0_row);
        let k_rows: Vec<usize> = (0..n).filter(|&j| unit_row[j] == NONE).collect();
        if k_rows.len() != c_rows.len() {
            return None;
        }
        let c_vars: Vec<Var> = c_rows.iter().map(|&r| basis[r]).collect();
        let z_columns: Vec<usize> = c_vars
            .iter()
            .filter(|&&v| v < 2 * n)
            .map(|&v| v - n)
            .collect();
        let covering = z0_row.map(|_| columns.covering.as_slice());
        let block = match columns.m.factor_block(&k_rows, &z_columns, covering) {
            Some(block) => block,
            None => dense_block(columns, &k_rows, &c_vars)?,
        };
        Some(Self {
            n,
            unit_row,
            row_unit,
            wanted,
            c_rows,
            c_vars,
            k_rows,
            block,
            etas: Vec::new(),
            norm: 1.0,
        })
    }

    /// x = B₀⁻¹ a (basis-row indexing) for a dense a (original rows).
    pub(super) fn solve_initial<M: LcpMatrix + ?Sized>(
        &self,
        columns: &Columns<'_, M>,
        a: &[f64],
        out: &mut [f64],
    ) {
        let mut x: Vec<f64> = self.k_rows.iter().map(|&j| a[j]).collect();
        if !x.is_empty() {
            self.block.solve(&mut x);
        }
        out.iter_mut().for_each(|o| *o = 0.0);
        let mut product = vec![0.0; self.n];
        let pairs: Vec<(Var, f64)> = self
            .c_vars
            .iter()
            .zip(&x)
            .filter(|&(_, &v)| v != 0.0)
            .map(|(&var, &v)| (var, v))
            .collect();
        if !pairs.is_empty() {
            columns.add_columns(&pairs, &mut product);
        }
        for (&row, &v) in self.c_rows.iter().zip(&x) {
            out[row] = v;
        }
        for (j, &row) in self.unit_row.iter().enumerate() {
            if row != NONE {
                out[row] = a[j] - product[j];
            }
        }
    }

    /// uᵀB₀⁻¹ (original-row indexing) for u in basis-row indexing, zero
    /// off `places` (the basis rows where it may not be).
    fn transpose_initial<M: LcpMatrix + ?Sized>(
        &self,
        columns: &Columns<'_, M>,
        u: &[f64],
        places: &[usize],
    ) -> Vec<f64> {
        let mut out = self.transpose_initial_many(columns, &[(u, places)]);
        out.pop().unwrap_or_default()
    }

    /// uᵀB₀⁻¹ for each (u, places) of `us` (u zero off its places), with
    /// one solve of the block for all of them
    /// ([`BlockSolver::solve_transpose_columns`]).
    fn transpose_initial_many<M: LcpMatrix + ?Sized>(
        &self,
        columns: &Columns<'_, M>,
        us: &[(&[f64], &[usize])],
    ) -> Vec<Vec<f64>> {
        let n = self.n;
        let m = self.c_rows.len();
        let mut outs = Vec::with_capacity(us.len());
        let mut stacked = Vec::with_capacity(m * us.len());
        let mut transposed = vec![0.0; n];
        let mut covered = Vec::new();
        for &(u, places) in us {
            let mut out = vec![0.0; n];
            // ũ on the covered rows: the identity part, and the rows A_wC it
            // meets through the unit columns' equations, in increasing j
            // (the order the product sums them in).
            covered.clear();
            covered.extend(places.iter().filter_map(|&row| {
                let j = self.row_unit[row];
                (j != NONE && u[row] != 0.0).then_some((j, u[row]))
            }));
            covered.sort_unstable_by_key(|&(j, _)| j);
            for &(j, value) in &covered {
                out[j] = value;
            }
            // g = A_wCᵀ ũ: A's z columns are −M's, z₀'s is −d.
            transposed.fill(0.0);
            if !covered.is_empty() {
                columns
                    .m
                    .add_transpose_product(&covered, &self.wanted, &mut transposed);
            }
            let d_dot: f64 = if columns.covering.is_empty() {
                0.0
            } else {
                covered.iter().map(|&(j, v)| v * columns.covering[j]).sum()
            };
            // (u_C − g)ᵀ S⁻¹ on K.
            stacked.extend(self.c_rows.iter().zip(&self.c_vars).map(|(&row, &var)| {
                let g = if var < 2 * n {
                    -transposed[var - n]
                } else {
                    -d_dot
                };
                u[row] - g
            }));
            outs.push(out);
        }
        if m > 0 {
            self.block.solve_transpose_columns(&mut stacked, us.len());
        }
        for (out, v) in outs.iter_mut().zip(stacked.chunks_exact(m.max(1))) {
            for (&j, &value) in self.k_rows.iter().zip(v) {
                out[j] = value;
            }
        }
        outs
    }

    /// out ← E_p ⋯ E_{from+1} out: the etas from the `from`-th on, each
    /// E = I − (ā − e_r) e_rᵀ / ā_r (out in basis-row indexing).
    fn apply_etas(&self, from: usize, out: &mut [f64]) {
        for (r, abar, _) in &self.etas[from..] {
            let v = out[*r] / abar[*r];
            if v != 0.0 {
                subtract_scaled(out, abar, v);
            }
            out[*r] = v;
        }
    }

    /// e_rᵀE_p ⋯ E₁ (basis-row indexing): row r of B⁻¹ is this times B₀⁻¹.
    /// With it, the rows where it may be nonzero (increasing); it is zero
    /// off them.
    fn eta_row(&self, r: usize) -> (Vec<f64>, Vec<usize>) {
        let mut u = vec![0.0; self.n];
        u[r] = 1.0;
        // uᵀE_p ⋯ E₁: each eta changes only its own row's component, so u
        // is zero off r and the etas' rows (`places`, increasing). uᵀā is
        // summed over those places in the dense sum's order: the terms left
        // out are zeros (ā finite), and zeros never change a partial sum
        // that is not zero (a zero partial sum plus t is t, whatever the
        // zero's sign), so the sum is the dense sum's, bit for bit, unless
        // it is zero, where the dense sum decides the zero's sign. O(p²)
        // for p etas instead of O(p n): the generated pile of 200 spent
        // 8.7 % of its first 2 s here (`perf`, one thread).
        let mut places = vec![r];
        for (pivot, abar, finite) in self.etas.iter().rev() {
            let mut dot: f64 = places.iter().map(|&i| u[i] * abar[i]).sum();
            if dot == 0.0 || !finite {
                dot = u.iter().zip(abar).map(|(x, y)| x * y).sum();
            }
            let ur = u[*pivot];
            u[*pivot] = ur - (dot - ur) / abar[*pivot];
            // (uᵀE)_r = u_r − (uᵀā − u_r)/ā_r, the others unchanged.
            if let Err(at) = places.binary_search(pivot) {
                places.insert(at, *pivot);
            }
        }
        (u, places)
    }

    /// An estimate of max |(B₀⁻¹)ᵢⱼ|, the explicit tableau's noise scale:
    /// an alternating search over rows and columns of B₀⁻¹ (a row by the
    /// transposed solve, the column through its largest entry by the solve,
    /// the row through that column's largest entry, …), started from the
    /// row that one solve with a vector of signs shows largest. Each step
    /// can only raise the value found; it stops when it does not, or after
    /// four rounds. It is a lower bound, usually the maximum itself (the
    /// entries of B⁻¹ that matter sit in a few rows), and the solves along
    /// the pivots raise it when they show more ([`Factor::apply`]).
    fn estimate_max_entry<M: LcpMatrix + ?Sized>(&self, columns: &Columns<'_, M>) -> f64 {
        let n = self.n;
        let largest = |v: &[f64]| {
            v.iter()
                .enumerate()
                .fold((0, 0.0_f64), |(bi, bm), (i, &x)| {
                    if x.abs() > bm { (i, x.abs()) } else { (bi, bm) }
                })
        };
        let mut column = vec![0.0; n];
        let sign: Vec<f64> = (0..n)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        self.solve_initial(columns, &sign, &mut column);
        let (mut row, _) = largest(&column);
        let mut best = 0.0_f64;
        for _ in 0..4 {
            let mut u = vec![0.0; n];
            u[row] = 1.0;
            let entries = self.transpose_initial(columns, &u, &[row]);
            let (j, value) = largest(&entries);
            if !value.is_finite() {
                return f64::INFINITY;
            }
            if value <= best {
                break;
            }
            best = value;
            let mut unit = vec![0.0; n];
            unit[j] = 1.0;
            self.solve_initial(columns, &unit, &mut column);
            let (i, value) = largest(&column);
            if !value.is_finite() {
                return f64::INFINITY;
            }
            if value <= best {
                break;
            }
            best = value;
            row = i;
        }
        best
    }
}

/// S = A_KC formed from the basis columns and factored densely.
fn dense_block<M: LcpMatrix + ?Sized>(
    columns: &Columns<'_, M>,
    k_rows: &[usize],
    c_vars: &[Var],
) -> Option<Box<dyn BlockSolver>> {
    let m = c_vars.len();
    let full: Vec<Vec<f64>> = c_vars.iter().map(|&var| columns.column(var)).collect();
    let block = faer::Mat::from_fn(m, m, |k, c| full[c][k_rows[k]]);
    let lu = block.partial_piv_lu();
    Some(Box::new(DenseBlock { lu }))
}

impl ProductForm {
    /// The factor with its estimate of max |B⁻¹| ([`Factor::max_entry`]);
    /// `None` if that is not finite.
    fn with_norm<M: LcpMatrix + ?Sized>(mut self, columns: &Columns<'_, M>) -> Option<Self> {
        let norm = self.estimate_max_entry(columns);
        if !norm.is_finite() {
            return None;
        }
        let covered = self.unit_row.iter().any(|&r| r != NONE);
        self.norm = if covered { norm.max(1.0) } else { norm };
        Some(self)
    }
}

impl<M: LcpMatrix + ?Sized> Factor<M> for ProductForm {
    fn new(columns: &Columns<'_, M>, basis: &[Var]) -> Option<Self> {
        Self::factor(columns, basis)?.with_norm(columns)
    }

    fn from_solve(columns: &Columns<'_, M>, basis: &[Var], solve: BasisSolve) -> Option<Self> {
        match solve {
            BasisSolve::Product(factor) => factor.with_norm(columns),
            BasisSolve::Partition(_) => Self::new(columns, basis),
        }
    }

    fn apply(&mut self, columns: &Columns<'_, M>, _: &[Var], a: &[f64], out: &mut [f64]) {
        self.solve_initial(columns, a, out);
        self.apply_etas(0, out);
        // A solve that shows a larger entry raises the noise scale:
        // |(B⁻¹a)ᵢ| ≤ max |B⁻¹| ‖a‖₁.
        let a_sum: f64 = a.iter().map(|x| x.abs()).sum();
        if a_sum > 0.0 {
            let out_max = out.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
            self.norm = self.norm.max(out_max / a_sum);
        }
    }

    fn row(&self, columns: &Columns<'_, M>, _: &[Var], r: usize) -> Vec<f64> {
        let (u, places) = self.eta_row(r);
        self.transpose_initial(columns, &u, &places)
    }

    fn rows(&self, columns: &Columns<'_, M>, _: &[Var], rs: &[usize]) -> Vec<Vec<f64>> {
        let us: Vec<(Vec<f64>, Vec<usize>)> = rs.iter().map(|&r| self.eta_row(r)).collect();
        let refs: Vec<(&[f64], &[usize])> = us
            .iter()
            .map(|(u, places)| (u.as_slice(), places.as_slice()))
            .collect();
        self.transpose_initial_many(columns, &refs)
    }

    /// B₀⁻¹ e_j by a solve, then the etas not yet applied
    /// ([`ProductForm::apply_etas`], as [`Factor::apply`]: the same
    /// operations on the same vector as a fresh `apply` of e_j).
    fn update_column(
        &self,
        columns: &Columns<'_, M>,
        j: usize,
        column: &mut Vec<f64>,
        applied: &mut Option<usize>,
    ) -> bool {
        let from = match *applied {
            Some(k) => k,
            None => {
                let mut unit = vec![0.0; self.n];
                unit[j] = 1.0;
                column.clear();
                column.resize(self.n, 0.0);
                self.solve_initial(columns, &unit, column);
                0
            }
        };
        self.apply_etas(from, column);
        *applied = Some(self.etas.len());
        true
    }

    fn pivot(&mut self, _: &Columns<'_, M>, _: &[Var], r: usize, _: Var, abar: &[f64]) {
        let finite = abar.iter().all(|x| x.is_finite());
        self.etas.push((r, abar.to_vec(), finite));
    }

    fn max_entry(&self) -> f64 {
        self.norm
    }

    fn refactor_period(&self, refactor_every: usize) -> usize {
        refactor_every
    }
}

#[cfg(test)]
mod tests {
    use super::super::dense::DenseBasis;
    use super::*;
    use nalgebra::DMatrix;

    /// A deterministic pseudo-random number in [−1, 1).
    fn noise(seed: &mut u64) -> f64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    /// The product form and the explicit tableau give the same B⁻¹a and the
    /// same rows of B⁻¹ along a sequence of pivots, for bases with and
    /// without z₀.
    #[test]
    fn product_form_matches_the_explicit_inverse_along_pivots() {
        let n = 24;
        let mut seed = 7;
        for trial in 0..20 {
            let m = DMatrix::from_fn(n, n, |_, _| noise(&mut seed)) + DMatrix::identity(n, n) * 3.0;
            let covering: Vec<f64> = (0..n).map(|_| 1.0 + noise(&mut seed).abs()).collect();
            let columns = Columns { m: &m, covering, n };
            let mut basis: Vec<Var> = (0..n).collect();
            for (i, b) in basis.iter_mut().enumerate() {
                if (i + trial) % 3 == 0 {
                    *b = n + i;
                }
            }
            if trial % 2 == 1 {
                // z₀ replaces a basic w.
                let r = basis.iter().position(|&v| v < n).unwrap();
                basis[r] = 2 * n;
            }
            let mut dense = <DenseBasis as Factor<DMatrix<f64>>>::new(&columns, &basis).unwrap();
            let mut product = <ProductForm as Factor<DMatrix<f64>>>::new(&columns, &basis).unwrap();
            // Columns of B⁻¹ kept along the pivots, read at every other
            // step (so that some catch up on two pivots at once).
            let mut kept: Vec<(usize, Vec<f64>, Option<usize>)> = [0, 5, n - 1]
                .iter()
                .map(|&j| (j, Vec::new(), None))
                .collect();
            for step in 0..12 {
                if step % 2 == 0 {
                    for (j, column, applied) in &mut kept {
                        assert!(<ProductForm as Factor<DMatrix<f64>>>::update_column(
                            &product, &columns, *j, column, applied
                        ));
                        let mut unit = vec![0.0; n];
                        unit[*j] = 1.0;
                        let mut x = vec![0.0; n];
                        dense.apply(&columns, &basis, &unit, &mut x);
                        for i in 0..n {
                            assert!(
                                (x[i] - column[i]).abs() < 1e-9 * (1.0 + x[i].abs()),
                                "trial {trial} step {step} column {j} row {i}: {} vs {}",
                                x[i],
                                column[i]
                            );
                        }
                    }
                }
                let a: Vec<f64> = (0..n).map(|_| noise(&mut seed)).collect();
                let (mut x, mut y) = (vec![0.0; n], vec![0.0; n]);
                dense.apply(&columns, &basis, &a, &mut x);
                product.apply(&columns, &basis, &a, &mut y);
                for i in 0..n {
                    assert!(
                        (x[i] - y[i]).abs() < 1e-9 * (1.0 + x[i].abs()),
                        "trial {trial} step {step} apply row {i}: {} vs {}",
                        x[i],
                        y[i]
                    );
                }
                for r in 0..n {
                    let (p, q) = (
                        dense.row(&columns, &basis, r),
                        product.row(&columns, &basis, r),
                    );
                    for j in 0..n {
                        assert!(
                            (p[j] - q[j]).abs() < 1e-9 * (1.0 + p[j].abs()),
                            "trial {trial} step {step} row {r} col {j}: {} vs {}",
                            p[j],
                            q[j]
                        );
                    }
                }
                // A pivot: some variable not basic enters at the row of its
                // largest ā.
                let entering = loop {
                    let v = ((noise(&mut seed) + 1.0) * n as f64) as usize;
                    if !basis.contains(&v) {
                        break v;
                    }
                };
                let col = columns.column(entering);
                dense.apply(&columns, &basis, &col, &mut x);
                product.apply(&columns, &basis, &col, &mut y);
                let r = (0..n)
                    .max_by(|&i, &j| x[i].abs().total_cmp(&x[j].abs()))
                    .unwrap();
                dense.pivot(&columns, &basis, r, entering, &x);
                product.pivot(&columns, &basis, r, entering, &y);
                basis[r] = entering;
            }
        }
    }
}
