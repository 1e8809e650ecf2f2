//! Linear complementarity problems and their solver.
//!
//! Every stepper in contactlab reduces one time step to LCP(M, q): find `z ≥ 0`
//! with `w = M z + q ≥ 0` and `zᵀw = 0` (Stewart–Trinkle 1996, eq. (17) and (29)).
//! This module holds the problem type ([`Lcp`]), the interface through which
//! Lemke's method reads M ([`LcpMatrix`]: a dense matrix, or the contact
//! operator JᵀWJ of a stepper that is never formed), the result type
//! ([`LcpSolution`], [`LcpStatus`]), the check every caller can run on what it
//! got ([`Validation`]), Lemke's method ([`lemke`]) and the Siconos `.dat`
//! exchange format ([`siconos`]).

pub mod budget;
pub mod lemke;
pub mod siconos;

use nalgebra::{DMatrix, DVector};
use std::fmt;
use thiserror::Error;

pub use lemke::{LemkeOptions, solve, solve_dense, solve_either, solve_structured};

/// The matrix M of an LCP as Lemke's method uses it: entries, columns and
/// products with sparse vectors. A dense matrix is one; a stepper's contact
/// problem is another, which computes them from the contacts' Jacobian
/// blocks and the bodies' mass blocks without forming M.
pub trait LcpMatrix {
    /// The size n.
    fn size(&self) -> usize;
    /// The entry Mᵢⱼ.
    fn entry(&self, i: usize, j: usize) -> f64;
    /// out += α·M₍:,ⱼ₎ (`out` has length n).
    fn add_column(&self, j: usize, alpha: f64, out: &mut [f64]);
    /// out += M x for x given by its nonzeros (index, value); `out` has
    /// length n.
    fn add_product(&self, x: &[(usize, f64)], out: &mut [f64]) {
        for &(j, value) in x {
            self.add_column(j, value, out);
        }
    }
    /// max |Mᵢⱼ| or an upper bound within a small factor of it: the scale of
    /// rounding noise in products with M.
    fn magnitude(&self) -> f64;
    /// outⱼ += (Mᵀ x)ⱼ for x given by its nonzeros (the rows of B⁻¹ that
    /// Lemke's lexicographic test asks for), at every j with `wanted[j]`:
    /// the caller reads only those (the basic z's), and the others may or
    /// may not be updated. The default reads entries.
    fn add_transpose_product(&self, x: &[(usize, f64)], wanted: &[bool], out: &mut [f64]) {
        for &(i, value) in x {
            for (j, o) in out.iter_mut().enumerate() {
                if !wanted[j] {
                    continue;
                }
                let m = self.entry(i, j);
                if m != 0.0 {
                    *o += value * m;
                }
            }
        }
    }
    /// A factorization of S = [−M_KC | −d_K], the block of a Lemke basis
    /// that its unit columns do not cover: the rows `rows` (K), the columns
    /// of M at `columns` (the basic z's), then −d on K when a covering
    /// vector d is given (z₀ basic). `None` when the matrix knows no cheaper
    /// way than forming S (the caller then factors it densely) or S is
    /// singular.
    fn factor_block(
        &self,
        rows: &[usize],
        columns: &[usize],
        covering: Option<&[f64]>,
    ) -> Option<Box<dyn BlockSolver>> {
        let _ = (rows, columns, covering);
        None
    }
}

/// A factorization of a square block S of a Lemke basis ([`LcpMatrix::factor_block`]).
pub trait BlockSolver {
    /// b ← S⁻¹ b.
    fn solve(&self, b: &mut [f64]);
    /// b ← S⁻ᵀ b.
    fn solve_transpose(&self, b: &mut [f64]);
    /// Each of the `count` columns of `b` (m × `count`, column-major) ←
    /// S⁻ᵀ times it: one pass over a sparse factorization serves several
    /// right-hand sides (the lexicographic ratio test's tied rows).
    fn solve_transpose_columns(&self, b: &mut [f64], count: usize) {
        if count == 0 {
            return;
        }
        let m = b.len() / count;
        for column in b.chunks_exact_mut(m) {
            self.solve_transpose(column);
        }
    }
}

impl LcpMatrix for DMatrix<f64> {
    fn size(&self) -> usize {
        self.nrows()
    }

    fn entry(&self, i: usize, j: usize) -> f64 {
        self[(i, j)]
    }

    fn add_column(&self, j: usize, alpha: f64, out: &mut [f64]) {
        for (o, m) in out.iter_mut().zip(self.column(j).iter()) {
            *o += alpha * m;
        }
    }

    fn add_transpose_product(&self, x: &[(usize, f64)], wanted: &[bool], out: &mut [f64]) {
        for &(i, value) in x {
            for ((o, m), _) in out
                .iter_mut()
                .zip(self.row(i).iter())
                .zip(wanted)
                .filter(|(_, w)| **w)
            {
                *o += value * m;
            }
        }
    }

    fn magnitude(&self) -> f64 {
        self.amax()
    }
}

/// Checks `z` against LCP(M, q) for any [`LcpMatrix`]: recomputes w = M z + q
/// and reports the violations, like [`Lcp::validate`].
pub fn validate_with<M: LcpMatrix + ?Sized>(
    m: &M,
    q: &DVector<f64>,
    z: &DVector<f64>,
) -> (DVector<f64>, Validation) {
    let w = product_plus(m, z, q);
    let check = Validation::of(z, &w, q.amax().max(1.0));
    (w, check)
}

/// The componentwise backward error of z as a solution of LCP(M, q), with
/// w = M z + q as computed: the largest relative change of one row's data
/// that makes (z, w) exactly complementary. Row i is measured against the
/// magnitude of the terms it is summed from, ρᵢ = |qᵢ| + Σⱼ |Mᵢⱼ zⱼ|, so a
/// row whose w is exact to working precision scores about the unit
/// roundoff however large its terms:
/// - wᵢ < 0 needs qᵢ raised by −wᵢ: −wᵢ/ρᵢ;
/// - zᵢ > 0 with wᵢ > 0 needs either qᵢ lowered by wᵢ (wᵢ/ρᵢ) or zᵢ set to
///   zero, which changes every row k by |Mₖᵢ zᵢ|/ρₖ; the smaller counts;
/// - zᵢ < 0 must be set to zero, as above.
///
/// [`Validation::relative`] divides every violation by max(1, ‖q‖∞) and
/// multiplies complementarity by zᵢ: a box of 1 kg under one of 10⁶ kg
/// carries zᵢ ≈ 10⁵ N·s through contacts whose wᵢ can only be computed to
/// ≈ 10⁻¹¹ m/s (the sum of impulses of 10⁵ on a body of 1 kg), so zᵢwᵢ is
/// 10⁻⁶ of ‖q‖ for a solution exact to working precision. Relative to ρᵢ
/// that row scores 10⁻¹⁶. Costs two columns of M per nonzero zⱼ.
pub fn backward_error<M: LcpMatrix + ?Sized>(
    m: &M,
    q: &DVector<f64>,
    z: &DVector<f64>,
    w: &DVector<f64>,
) -> f64 {
    let n = q.len();
    let mut terms: Vec<f64> = q.iter().map(|x| x.abs()).collect();
    // Two passes over one column buffer: ρ first, then each column's
    // largest relative change. Keeping every column instead cost n values
    // per nonzero zⱼ (tens of megabytes on a pile's islands).
    let mut column = vec![0.0; n];
    for (j, &zj) in z.iter().enumerate() {
        if zj == 0.0 {
            continue;
        }
        column.fill(0.0);
        m.add_column(j, zj, &mut column);
        for (t, c) in terms.iter_mut().zip(&column) {
            *t += c.abs();
        }
    }
    // A row with no terms has w = 0 exactly.
    let relative = |x: f64, row: usize| {
        if x == 0.0 {
            0.0
        } else {
            x.abs() / terms[row].max(f64::MIN_POSITIVE)
        }
    };
    let mut unset = vec![0.0_f64; n];
    for (j, &zj) in z.iter().enumerate() {
        if zj == 0.0 {
            continue;
        }
        column.fill(0.0);
        m.add_column(j, zj, &mut column);
        unset[j] = column
            .iter()
            .enumerate()
            .fold(0.0_f64, |e, (k, &c)| e.max(relative(c, k)));
    }
    (0..n).fold(0.0_f64, |worst, i| {
        let sign = if z[i] < 0.0 { unset[i] } else { 0.0 };
        let slack = if w[i] < 0.0 {
            relative(w[i], i)
        } else if z[i] > 0.0 {
            relative(w[i], i).min(unset[i])
        } else {
            0.0
        };
        worst.max(sign).max(slack)
    })
}

/// Whether the [`backward_error`] of z is at most `limit`. A row with
/// wᵢ < 0 scores at least −wᵢ/ρᵢ, and ρᵢ ≤ |qᵢ| + max |Mₖⱼ| ‖z‖₁
/// ([`LcpMatrix::magnitude`], an upper bound; with a margin of 10⁻⁶ for the
/// rounding of the computed terms): when that alone exceeds `limit` the
/// answer is no, without the two columns of M per nonzero zⱼ that the
/// error costs (a wrong warm basis of a pile's island usually leaves such
/// a row). Otherwise the error decides, so the answer is always its.
pub fn within_backward_error<M: LcpMatrix + ?Sized>(
    m: &M,
    q: &DVector<f64>,
    z: &DVector<f64>,
    w: &DVector<f64>,
    limit: f64,
) -> bool {
    const MARGIN: f64 = 1.0 + 1e-6;
    let spread = m.magnitude() * z.iter().map(|x| x.abs()).sum::<f64>() * MARGIN;
    let violated = w
        .iter()
        .zip(q.iter())
        .any(|(&wi, &qi)| wi < 0.0 && -wi > limit * (qi.abs() * MARGIN + spread));
    !violated && backward_error(m, q, z, w) <= limit
}

/// M z + q through [`LcpMatrix::add_product`].
pub fn product_plus<M: LcpMatrix + ?Sized>(
    m: &M,
    z: &DVector<f64>,
    q: &DVector<f64>,
) -> DVector<f64> {
    let nonzeros: Vec<(usize, f64)> = z
        .iter()
        .enumerate()
        .filter(|&(_, &x)| x != 0.0)
        .map(|(i, &x)| (i, x))
        .collect();
    let mut w = q.clone();
    m.add_product(&nonzeros, w.as_mut_slice());
    w
}

/// A dense linear complementarity problem LCP(M, q).
#[derive(Debug, Clone, PartialEq)]
pub struct Lcp {
    /// The n×n matrix M.
    pub m: DMatrix<f64>,
    /// The vector q of length n.
    pub q: DVector<f64>,
}

/// Why an LCP or a solver option was rejected before any pivoting.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LcpError {
    /// M is not square or q does not match it.
    #[error("LCP dimensions do not match: M is {rows}×{cols}, q has {q_len} entries")]
    Dimension {
        /// Rows of M.
        rows: usize,
        /// Columns of M.
        cols: usize,
        /// Length of q.
        q_len: usize,
    },
    /// M or q holds a NaN or an infinity.
    #[error("LCP data is not finite: {what} has a NaN or infinite entry")]
    NotFinite {
        /// `"M"` or `"q"`.
        what: &'static str,
    },
    /// The covering vector has the wrong length or a non-positive entry.
    #[error("covering vector must have {expected} strictly positive finite entries")]
    Covering {
        /// The problem size.
        expected: usize,
    },
    /// A warm-start basis names a variable outside 0..n.
    #[error("warm-start basis names variable {index}, but the problem has only {n}")]
    WarmStart {
        /// The offending index.
        index: usize,
        /// The problem size.
        n: usize,
    },
}

impl Lcp {
    /// Murty's exponential example (Murty 1978): M upper triangular, 1 on
    /// the diagonal and 2 above it, qᵢ = −(2ⁱ⁺¹ + … + 2ⁿ) for i = 0 … n − 1.
    /// Its solution is z = (0, …, 0, 2ⁿ), and Lemke's method from e takes
    /// 2ⁿ pivots to it.
    pub fn murty(n: usize) -> Self {
        let m = DMatrix::from_fn(n, n, |i, j| match j.cmp(&i) {
            std::cmp::Ordering::Equal => 1.0,
            std::cmp::Ordering::Greater => 2.0,
            std::cmp::Ordering::Less => 0.0,
        });
        let q = DVector::from_fn(n, |i, _| {
            -((i + 1)..=n).map(|k| 2f64.powi(k as i32)).sum::<f64>()
        });
        Self { m, q }
    }

    /// Builds LCP(M, q), checking that M is square, q matches and all data are finite.
    pub fn new(m: DMatrix<f64>, q: DVector<f64>) -> Result<Self, LcpError> {
        if m.nrows() != m.ncols() || m.nrows() != q.len() {
            return Err(LcpError::Dimension {
                rows: m.nrows(),
                cols: m.ncols(),
                q_len: q.len(),
            });
        }
        if m.iter().any(|x| !x.is_finite()) {
            return Err(LcpError::NotFinite { what: "M" });
        }
        if q.iter().any(|x| !x.is_finite()) {
            return Err(LcpError::NotFinite { what: "q" });
        }
        Ok(Self { m, q })
    }

    /// The problem size n.
    pub fn size(&self) -> usize {
        self.q.len()
    }

    /// The data scale residuals are measured against: max(1, ‖q‖∞).
    pub fn scale(&self) -> f64 {
        self.q.amax().max(1.0)
    }

    /// Checks a candidate `z` against this problem: recomputes `w = M z + q`
    /// (rather than trusting the solver's `w`) and reports the violations.
    pub fn validate(&self, z: &DVector<f64>) -> Validation {
        let w = &self.m * z + &self.q;
        Validation::of(z, &w, self.scale())
    }
}

/// How Lemke's method ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LcpStatus {
    /// A complementary basis was reached: `z`, `w` solve the problem.
    Solved,
    /// The entering column had no positive entry: the algorithm ran off on a
    /// secondary ray. For copositive-plus M this proves the LCP has no solution.
    RayTermination,
    /// The pivot limit was reached before termination.
    MaxPivots,
    /// The basis became singular or the final solution failed its residual check.
    NumericalFailure,
    /// An iterative solver (NSGS) reached its sweep
    /// limit before its residual fell below the tolerance.
    SweepLimit,
    /// NSGS reached its sweep limit and the step went on with its best
    /// iterate (the smallest residual seen, below
    /// [`crate::solver::nsgs::ACCEPTED_RESIDUAL`]); the report's residual is
    /// that iterate's.
    Unconverged,
    /// The step's budget of pivots or seconds ([`budget`]) was spent before
    /// this solve ended.
    OverBudget,
}

impl LcpStatus {
    /// The name printed by `contactlab lcp` and the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Self::Solved => "Solved",
            Self::RayTermination => "RayTermination",
            Self::MaxPivots => "MaxPivots",
            Self::NumericalFailure => "NumericalFailure",
            Self::SweepLimit => "SweepLimit",
            Self::Unconverged => "Unconverged",
            Self::OverBudget => "OverBudget",
        }
    }

    /// Whether the step goes on with this solve's impulses: solved, or
    /// [`Self::Unconverged`].
    pub fn advances(self) -> bool {
        matches!(self, Self::Solved | Self::Unconverged)
    }

    /// One sentence a user can act on.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Solved => "a complementary solution was found",
            Self::RayTermination => {
                "Lemke's method ended on a ray: the LCP has no solution this method can reach"
            }
            Self::MaxPivots => {
                "the pivot limit was reached before a complementary basis (cycling, or a problem too large for the limit)"
            }
            Self::NumericalFailure => {
                "the basis became singular or the result failed its residual check (an ill-conditioned matrix), or the data were rejected before any pivot (not finite)"
            }
            Self::SweepLimit => {
                "NSGS reached its sweep limit before its residual fell below the tolerance (raise --max-iterations or --tolerance, or use --solver lemke)"
            }
            Self::Unconverged => {
                "NSGS reached its sweep limit and the step kept its best iterate (its residual is in the report)"
            }
            Self::OverBudget => {
                "the step spent its budget of Lemke pivots or seconds before its LCPs were solved (raise it with --max-step-pivots or --max-step-seconds)"
            }
        }
    }
}

impl fmt::Display for LcpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a solve produced.
#[derive(Debug, Clone, PartialEq)]
pub struct LcpSolution {
    /// The unknowns z (only meaningful when `status` is `Solved`).
    pub z: DVector<f64>,
    /// The slacks w = M z + q, recomputed from `z`.
    pub w: DVector<f64>,
    /// How the solve ended.
    pub status: LcpStatus,
    /// Pivots taken, counting the first one that brings in the artificial variable
    /// (and, after a failed warm start, the pivots of both attempts).
    pub pivots: usize,
    /// max(max(−z), max(−w), max|zᵢwᵢ|) relative to max(1, ‖q‖∞). A `Solved`
    /// result can exceed [`LemkeOptions::max_residual`] here when it passed
    /// [`LemkeOptions::max_backward_error`] instead.
    pub residual: f64,
    /// Indices i whose zᵢ is basic at the end: pass it back as a warm start.
    pub basis: Vec<usize>,
    /// Whether the warm start given in the options produced this result.
    pub warm_started: bool,
}

impl LcpSolution {
    /// Checks `z`, `w` as they stand (see [`Lcp::validate`] to recompute `w`).
    pub fn validate(&self, scale: f64) -> Validation {
        Validation::of(&self.z, &self.w, scale)
    }
}

/// The three ways a pair (z, w) can fail to be complementary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Validation {
    /// max(0, max(−zᵢ)): how negative z gets.
    pub max_neg_z: f64,
    /// max(0, max(−wᵢ)): how negative w gets.
    pub max_neg_w: f64,
    /// max |zᵢ wᵢ|.
    pub max_complementarity: f64,
    /// The scale the relative residual divides by.
    pub scale: f64,
}

impl Validation {
    pub fn of(z: &DVector<f64>, w: &DVector<f64>, scale: f64) -> Self {
        let neg = |v: &DVector<f64>| v.iter().fold(0.0_f64, |a, &x| a.max(-x));
        let comp = z
            .iter()
            .zip(w.iter())
            .fold(0.0_f64, |a, (&zi, &wi)| a.max((zi * wi).abs()));
        Self {
            max_neg_z: neg(z),
            max_neg_w: neg(w),
            max_complementarity: comp,
            scale,
        }
    }

    /// The largest of the three violations (absolute).
    pub fn worst(&self) -> f64 {
        self.max_neg_z
            .max(self.max_neg_w)
            .max(self.max_complementarity)
    }

    /// [`Self::worst`] divided by the data scale.
    pub fn relative(&self) -> f64 {
        self.worst() / self.scale
    }
}

/// The principal submatrix M_II of an [`LcpMatrix`] for the indices I (in
/// their order): the LCP of a subset of the unknowns with the others held at
/// zero, e.g. the frictionless problem inside a friction LCP.
pub struct Principal<'a, M: ?Sized> {
    m: &'a M,
    indices: Vec<usize>,
}

impl<'a, M: LcpMatrix + ?Sized> Principal<'a, M> {
    /// M restricted to `indices` (each below M's size).
    pub fn new(m: &'a M, indices: Vec<usize>) -> Self {
        Self { m, indices }
    }
}

impl<M: LcpMatrix + ?Sized> LcpMatrix for Principal<'_, M> {
    fn size(&self) -> usize {
        self.indices.len()
    }

    fn entry(&self, i: usize, j: usize) -> f64 {
        self.m.entry(self.indices[i], self.indices[j])
    }

    fn add_column(&self, j: usize, alpha: f64, out: &mut [f64]) {
        self.add_product(&[(j, alpha)], out);
    }

    fn add_product(&self, x: &[(usize, f64)], out: &mut [f64]) {
        let mapped: Vec<(usize, f64)> = x.iter().map(|&(j, v)| (self.indices[j], v)).collect();
        let mut full = vec![0.0; self.m.size()];
        self.m.add_product(&mapped, &mut full);
        for (o, &i) in out.iter_mut().zip(&self.indices) {
            *o += full[i];
        }
    }

    fn magnitude(&self) -> f64 {
        self.m.magnitude()
    }
}
