//! Dense linear algebra the solvers share: Newton refinement of a velocity
//! through a basis block, M⁻¹ applied to columns, the pseudo-inverse, and the
//! spread of a set of scales.

use nalgebra::{DMatrix, DVector};

/// max/min of the positive entries of `values` (1 when there are none).
pub fn spread(values: impl IntoIterator<Item = f64>) -> f64 {
    let (low, high) = values
        .into_iter()
        .filter(|&d| d > 0.0)
        .fold((f64::INFINITY, 0.0_f64), |(l, h), d| (l.min(d), h.max(d)));
    if high > 0.0 { high / low } else { 1.0 }
}

/// Newton steps of a velocity-space refinement ([`Impulses::polish`],
/// [`super::glocker_studer::PlanarImpactLcp::polish`]; the sparse KKT form
/// of [`super::contact_lcp::ContactLcp::polish`] is their twin for
/// islands): `x` the unknowns, zero off the basis, whose basic ones sit at
/// `basic` in the order of `block`'s rows; Δv = `change`(x), the velocity
/// change of x, is an unknown of its own. Each step solves A_KK δ = −w_K −
/// J_K r with r = change(x) − Δv, then x += δ and Δv += r + change(δ), so
/// the contact rows are met to the rounding of the velocities while the
/// impulses' rounding shows only in r (an imbalance of momentum). For the
/// k-th basic unknown, `row_dot(k, v)` is J v on its row (0 on a row that
/// is not a velocity) and `slack(k, Δv, x)` its wₖ. Returns Δv; `None` when
/// a step cannot be solved.
pub fn velocity_newton(
    block: &BasisBlock,
    basic: &[usize],
    x: &mut DVector<f64>,
    change: impl Fn(&DVector<f64>) -> DVector<f64>,
    row_dot: impl Fn(usize, &DVector<f64>) -> f64,
    slack: impl Fn(usize, &DVector<f64>, &DVector<f64>) -> f64,
) -> Option<DVector<f64>> {
    let mut dv = change(x);
    let mut step = DVector::zeros(x.len());
    for _ in 0..POLISH_STEPS {
        let r = change(x) - &dv;
        let rhs = DVector::from_fn(basic.len(), |row, _| -slack(row, &dv, x) - row_dot(row, &r));
        let delta = block.solve(rhs)?;
        step.fill(0.0);
        for (row, &i) in basic.iter().enumerate() {
            step[i] = delta[row];
            x[i] += delta[row];
        }
        dv += r + change(&step);
    }
    Some(dv)
}

/// Newton steps of each velocity-space refinement.
pub const POLISH_STEPS: usize = 3;

/// min |uᵢᵢ| / max |uᵢᵢ| over the pivots of an LU: how near the factored
/// matrix is to singular (0 when it is, NaN when a pivot is).
pub fn pivot_ratio(lu: &nalgebra::LU<f64, nalgebra::Dyn, nalgebra::Dyn>) -> f64 {
    let (low, high) = lu
        .u()
        .diagonal()
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(l, h), d| {
            (l.min(d.abs()), h.max(d.abs()))
        });
    low / high
}

/// The basis block A_KK of a velocity-space refinement, factored once for
/// its Newton steps: an LU, or where the block is singular (the four corner
/// normals of a box face resting flat, more than the face's three freedoms)
/// the least-squares minimum-norm solution through its SVD, which splits the
/// load among dependent contacts and meets their consistent rows.
pub enum BasisBlock {
    /// No basic variable, or a block that is not finite.
    Empty,
    /// An invertible block.
    Lu(nalgebra::LU<f64, nalgebra::Dyn, nalgebra::Dyn>),
    /// A singular one.
    Svd(nalgebra::SVD<f64, nalgebra::Dyn, nalgebra::Dyn>),
}

impl BasisBlock {
    /// Factors `block`.
    pub(crate) fn new(block: DMatrix<f64>) -> Self {
        if block.is_empty() || !block.iter().all(|x| x.is_finite()) {
            return Self::Empty;
        }
        let lu = block.clone().lu();
        if pivot_ratio(&lu) > 1e-12 {
            return Self::Lu(lu);
        }
        // A bounded iteration (nalgebra's `svd` iterates until it converges,
        // which it may never do on extreme data).
        match block.try_svd(true, true, f64::EPSILON, 1000) {
            Some(svd) => Self::Svd(svd),
            None => Self::Empty,
        }
    }

    /// x with A_KK x = b (least squares with the minimum norm for a singular
    /// block); `None` when it cannot be formed or is not finite.
    pub(crate) fn solve(&self, b: DVector<f64>) -> Option<DVector<f64>> {
        let x = match self {
            Self::Empty => return b.is_empty().then_some(b),
            Self::Lu(lu) => lu.solve(&b)?,
            Self::Svd(svd) => {
                let cutoff = 1e-12 * svd.singular_values.max();
                svd.solve(&b, cutoff).ok()?
            }
        };
        x.iter().all(|v| v.is_finite()).then_some(x)
    }
}

/// M⁻¹ X for a dense M⁻¹, exploiting a diagonal one when there is one.
pub fn apply_mass_inverse(mass_inverse: &DMatrix<f64>, x: &DMatrix<f64>) -> DMatrix<f64> {
    let n = mass_inverse.nrows();
    let diagonal = (0..n).all(|i| (0..n).all(|j| i == j || mass_inverse[(i, j)] == 0.0));
    if diagonal {
        let mut out = x.clone();
        for (i, mut row) in out.row_iter_mut().enumerate() {
            row *= mass_inverse[(i, i)];
        }
        out
    } else {
        mass_inverse * x
    }
}

/// Sweeps the SVD may take before it is declared not to converge. Golub–Kahan
/// converges in a few sweeps per singular value; a non-finite or overflowing
/// matrix would otherwise keep nalgebra's unbounded loop turning forever.
const SVD_SWEEPS: usize = 1000;

/// S⁺ for a symmetric positive semidefinite S (a Schur complement JᵀM⁻¹J),
/// dropping singular values below `1e-12 · max|S|` (dependent rows). `None`
/// when S holds a non-finite entry or the SVD does not converge, so that
/// inputs near the overflow limit fail the step instead of hanging it.
pub fn pseudo_inverse(s: DMatrix<f64>) -> Option<DMatrix<f64>> {
    let largest = s.amax();
    if !(largest.is_finite() && s.iter().all(|x| x.is_finite())) {
        return None;
    }
    let tolerance = 1e-12 * largest.max(f64::MIN_POSITIVE);
    s.try_svd(true, true, f64::EPSILON, SVD_SWEEPS)?
        .pseudo_inverse(tolerance)
        .ok()
        .filter(|p| p.iter().all(|x| x.is_finite()))
}
