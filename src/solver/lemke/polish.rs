//! Refinement of Lemke's solution in velocity space: where the impulses of
//! a light body under a heavy one cancel to a velocity far smaller than
//! their terms, the solution is recomputed from its basis as a KKT system in
//! velocities (a few Newton steps), and a basis left wrong by rounding is
//! repaired.

use super::contact_options;
use super::operator::{ContactLcp, KktBlock, LAMBDA};
use crate::lcp::{self, LcpSolution, LcpStatus};
use crate::solver::linalg::POLISH_STEPS;
use crate::solver::options::LemkeSettings;
use nalgebra::DVector;

/// Lemke's solution on an island, refined in velocity space
/// ([`ContactLcp::polish`]) when the velocities it gives are sums of terms
/// more than `settings.polish_cancellation` times the velocity scale (a
/// light body under a heavy one); see [`refine`] for when the refinement
/// replaces Lemke's (z, w) and for the `starts` of its repair. Otherwise a
/// solve that kept its warm basis is refined at that basis when
/// [`needs_tightening`] says so. Returns the refined velocity change (flat)
/// to use instead of W J z. `cancellation` is
/// `lcp.cancellation(&candidate.z)`.
pub(super) fn polish(
    lcp: &ContactLcp<'_>,
    rhs: &DVector<f64>,
    candidate: &mut LcpSolution,
    starts: &[&[usize]],
    cancellation: f64,
    velocity_scale: f64,
    settings: &LemkeSettings,
) -> Option<Vec<f64>> {
    let full = needs_refinement(
        cancellation,
        candidate,
        lcp.mass_spread(),
        velocity_scale,
        settings,
    );
    if !full && !needs_tightening(candidate, settings) {
        return None;
    }
    let start = candidate.z.clone();
    let lambdas = lcp.layout.lambdas();
    let impulse_rows: Vec<bool> = (0..lcp.layout.size())
        .map(|i| lambdas.contains(&i))
        .collect();
    let polish = |basis: &[usize]| {
        lcp.polish(rhs, basis, &start)
            .map(|p| (p.z, p.w, p.velocity_change))
    };
    if full {
        refine(candidate, starts, rhs, &impulse_rows, polish)
    } else {
        // Lemke's own basis alone, once: no repair.
        refine_within(candidate, &[], rhs, &impulse_rows, 1, TIGHTENED, polish)
    }
}

/// Whether Lemke's `candidate`, whose velocities cancel little, is refined
/// at its own basis all the same: the solve took no pivot (its warm basis
/// held, as it does for bodies at rest) and its relative residual exceeds
/// `settings.polish_resting`. On the nearly singular bases of boxes resting
/// face to face (four corner normals on a face, of rank 3) that residual is
/// 1e-13–1e-12 on the first such step and grows from there: the velocity it
/// leaves moves the boxes by nanometres, the next LCP differs, its warm
/// basis stops being feasible, and Lemke's pivots (ending at residuals of
/// 1e-8) raise a pyramid's energy by 1e-9 of itself a step. Refined, the
/// same basis leaves the boxes at rest to rounding, and the next step's LCP
/// is the same one.
pub(super) fn needs_tightening(candidate: &LcpSolution, settings: &LemkeSettings) -> bool {
    complementary(candidate)
        && candidate.pivots == 0
        && candidate.residual > settings.polish_resting
}

/// The relative residual within which a refinement by
/// [`needs_tightening`] replaces Lemke's solution: measured as Lemke's
/// (on z·w), a refinement that leaves the velocities exact to rounding
/// lands at 1e-13–1e-11 on these bases, sometimes above Lemke's own;
/// anything much larger means the basis is not the solution's.
pub(super) const TIGHTENED: f64 = 1e-10;

/// Whether Lemke's `candidate` is refined in velocity space ([`refine`]):
/// its velocities are sums of impulse terms up to `cancellation` (m/s),
/// more than `settings.polish_cancellation` times the velocity scale; or,
/// when Lemke did not end on a complementary basis (a ray, whose z says
/// nothing), the inverse masses of the LCP's bodies span more than that
/// ratio (`mass_spread`: a gram and 10⁸ kg in one LCP).
pub(super) fn needs_refinement(
    cancellation: f64,
    candidate: &LcpSolution,
    mass_spread: f64,
    velocity_scale: f64,
    settings: &LemkeSettings,
) -> bool {
    cancellation > settings.polish_cancellation * velocity_scale
        || (!complementary(candidate) && mass_spread > settings.polish_cancellation)
}

/// Whether Lemke ended on a complementary basis: solved, or a numerical
/// failure of its final check.
pub(super) fn complementary(candidate: &LcpSolution) -> bool {
    match candidate.status {
        LcpStatus::Solved => true,
        LcpStatus::NumericalFailure => !candidate.basis.is_empty(),
        _ => false,
    }
}

/// A solution of [`refine`]: its relative residual, (z, w), the velocity
/// change and the basis.
pub(super) struct Refined<V> {
    /// See [`repair`].
    pub(super) violation: f64,
    pub(super) residual: f64,
    pub(super) z: DVector<f64>,
    pub(super) w: DVector<f64>,
    pub(super) change: V,
    pub(super) basis: Vec<usize>,
}

/// The violation (see [`repair`]) at which [`refine`]'s repair stops: a
/// basis whose refined pair is complementary to rounding. (A pair within
/// `max_residual` is accepted when no start reaches it, but a basis wrong by
/// 10⁻⁷ m/s on a contact under 10⁸ kg moves it by 10⁻⁹ m a step, 1 J.)
pub(super) const REPAIR_TARGET: f64 = 1e-12;

/// Rounds of [`refine`]'s basis repair.
pub(super) const REPAIR_ROUNDS: usize = 32;

/// Replaces Lemke's `candidate` for LCP(·, `q`) by a solution refined in
/// velocity space: `polish` gives (z, w, Δv) at a basis (the indices whose
/// z is basic), with w computed from Δv itself. It starts at Lemke's final
/// basis when Lemke ended on a complementary one, then at each of `starts`
/// (the warm start, …); while the refined pair is not complementary to
/// rounding ([`REPAIR_TARGET`], measured by [`repair`] in the units of each
/// row: velocities against q, `impulse_rows` against z), the basis is
/// repaired (negative basic zᵢ leave; else the most negative wᵢ enters), up
/// to [`REPAIR_ROUNDS`] times from each start. Lemke's own w is a sum of
/// the large terms, and where it passed on its componentwise backward error
/// it can hide a wrong basis by 10⁻³ m/s (a friction row), or end Lemke on
/// a ray from rounding; the refined w shows and settles it. The least
/// violating refinement replaces the candidate when it is complementary
/// within Lemke's `max_residual`; else the candidate stays as it was (and
/// goes down the regularization ladder if it is not solved). Returns Δv
/// when the candidate was replaced (it is then `Solved`).
pub(super) fn refine<V>(
    candidate: &mut LcpSolution,
    starts: &[&[usize]],
    q: &DVector<f64>,
    impulse_rows: &[bool],
    polish: impl FnMut(&[usize]) -> Option<(DVector<f64>, DVector<f64>, V)>,
) -> Option<V> {
    let within = contact_options().max_residual;
    refine_within(
        candidate,
        starts,
        q,
        impulse_rows,
        REPAIR_ROUNDS,
        within,
        polish,
    )
}

/// [`refine`] with up to `rounds` rounds of repair from each start (one:
/// the start's refinement alone), replacing the candidate when the refined
/// relative residual is at most `within`.
pub(super) fn refine_within<V>(
    candidate: &mut LcpSolution,
    starts: &[&[usize]],
    q: &DVector<f64>,
    impulse_rows: &[bool],
    rounds: usize,
    within: f64,
    mut polish: impl FnMut(&[usize]) -> Option<(DVector<f64>, DVector<f64>, V)>,
) -> Option<V> {
    let own = complementary(candidate).then_some(candidate.basis.as_slice());
    let scale = q.amax().max(1.0);
    let mut best: Option<Refined<V>> = None;
    for start in own.into_iter().chain(starts.iter().copied()) {
        repair(start, scale, impulse_rows, rounds, &mut polish, &mut best);
        if best.as_ref().is_some_and(|b| b.violation <= REPAIR_TARGET) {
            break;
        }
    }
    let Refined {
        residual,
        violation: _,
        z,
        w,
        change,
        basis,
    } = best?;
    if residual > within {
        return None;
    }
    candidate.z = z;
    candidate.w = w;
    candidate.residual = residual;
    candidate.basis = basis;
    candidate.status = LcpStatus::Solved;
    Some(change)
}

/// [`refine`]'s repair from one `start` basis, keeping in `best` the
/// refined solution of least violation.
pub(super) fn repair<V>(
    start: &[usize],
    scale: f64,
    impulse_rows: &[bool],
    rounds: usize,
    polish: &mut impl FnMut(&[usize]) -> Option<(DVector<f64>, DVector<f64>, V)>,
    best: &mut Option<Refined<V>>,
) {
    let options = contact_options();
    let n = impulse_rows.len();
    let mut basis = start.to_vec();
    basis.sort_unstable();
    // An index whose entry made the basis block singular (a fourth corner
    // normal on a face resting flat) is not tried again; where leaving
    // together did (a friction direction and the slip speed λ it carried),
    // only the most negative leaves.
    let mut entered = None;
    let mut left: Vec<(usize, f64)> = Vec::new();
    let mut excluded = Vec::new();
    for _ in 0..rounds {
        let Some((mut z, w, change)) = polish(&basis) else {
            if let Some(i) = entered.take() {
                basis.retain(|&b| b != i);
                excluded.push(i);
                continue;
            }
            if left.len() > 1 {
                let most = left
                    .iter()
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|&(i, _)| i);
                basis.extend(left.iter().map(|&(i, _)| i).filter(|&i| Some(i) != most));
                basis.sort_unstable();
                left.retain(|&(i, _)| Some(i) == most);
                continue;
            }
            break;
        };
        // A basic zᵢ at zero comes back as rounding of either sign.
        let floor = options.pivot_tolerance * z.amax();
        for zi in z.iter_mut() {
            if *zi < 0.0 && *zi >= -floor {
                *zi = 0.0;
            }
        }
        let residual = lcp::Validation::of(&z, &w, scale).relative();
        // How far the pair is from complementary in its own units: w on
        // the basic rows and below zero on the others, relative to q (a
        // velocity) or on `impulse_rows` (μc_n − Σβ) to z; z below zero,
        // relative to z. Lemke's z·w weighs a rounding of w by an impulse of
        // 10⁷ N·s and cannot reach the target.
        let z_scale = z.amax().max(f64::MIN_POSITIVE);
        let violation = (0..n)
            .map(|i| {
                let unit = if impulse_rows[i] { z_scale } else { scale };
                if basis.binary_search(&i).is_ok() {
                    (w[i].abs() / unit).max(-z[i] / z_scale)
                } else {
                    -w[i] / unit
                }
            })
            .fold(0.0, f64::max);
        let negative: Vec<(usize, f64)> = basis
            .iter()
            .filter(|&&i| z[i] < 0.0)
            .map(|&i| (i, z[i]))
            .collect();
        let entering = (0..n)
            .filter(|i| basis.binary_search(i).is_err() && !excluded.contains(i) && w[*i] < 0.0)
            .min_by(|&a, &b| w[a].total_cmp(&w[b]));
        if best.as_ref().is_none_or(|b| violation < b.violation) {
            *best = Some(Refined {
                violation,
                residual,
                z,
                w,
                change,
                basis: basis.clone(),
            });
        }
        if violation <= REPAIR_TARGET {
            break;
        }
        entered = None;
        left.clear();
        if !negative.is_empty() {
            basis.retain(|i| !negative.iter().any(|&(j, _)| j == *i));
            left = negative;
        } else if let Some(i) = entering {
            basis.push(i);
            basis.sort_unstable();
            entered = Some(i);
        } else {
            break;
        }
    }
}

/// A solution refined in velocity space ([`ContactLcp::polish`]).
pub struct Polished {
    /// The impulses z (unscaled).
    pub z: DVector<f64>,
    /// The slacks w = J Δv + P z + q, with the velocity change Δv itself.
    pub w: DVector<f64>,
    /// Δv on the island's velocities (flat, see [`ContactLcp::add_flat`]).
    pub velocity_change: Vec<f64>,
}

impl ContactLcp<'_> {
    /// Number of velocities of the island's bodies (the flat indexing).
    pub(super) fn flat_len(&self) -> usize {
        self.blocks.iter().map(|b| b.len).sum()
    }

    /// out += W^½ Jᵀ z on the flat velocities (z unscaled, by LCP index).
    pub(super) fn add_weighted_transpose(&self, z: &[f64], out: &mut [f64]) {
        for (i, &zi) in z.iter().enumerate() {
            if zi != 0.0 {
                for (f, v) in self.weighted_row(i) {
                    out[f] += v * zi;
                }
            }
        }
    }

    /// max/min of 1/m over the island's bodies (a body block's first
    /// velocity is linear; fixed bodies left out): how far apart their
    /// masses are.
    pub fn mass_spread(&self) -> f64 {
        crate::solver::linalg::spread(self.blocks.iter().map(|b| self.w[b.start]))
    }

    /// The largest sum of magnitudes |W Jᵀ z| over one velocity: how large
    /// the terms are whose sum v* + W Jᵀ z gives a body's velocity.
    pub fn cancellation(&self, z: &DVector<f64>) -> f64 {
        let mut terms = vec![0.0; self.flat_len()];
        // `weighted_row`'s entries, in its order, without its iterators.
        for (i, &zi) in z.iter().enumerate() {
            let (j, r) = self.owner[i];
            if zi == 0.0 || r == LAMBDA {
                continue;
            }
            let row = self.jacobians[j].row(r);
            for &(l, offset) in &self.contact_blocks[j] {
                let block = &self.blocks[l];
                let w = &self.w[block.start..block.start + block.len];
                let values = &row[offset..offset + block.len];
                let out = &mut terms[block.flat..block.flat + block.len];
                for ((t, &x), &wf) in out.iter_mut().zip(values).zip(w) {
                    let v = x * wf.sqrt();
                    if v != 0.0 {
                        *t += (v * zi).abs();
                    }
                }
            }
        }
        self.blocks
            .iter()
            .flat_map(|b| (0..b.len).map(move |i| (b.flat + i, self.w[b.start + i].sqrt())))
            .fold(0.0, |m, (f, root)| m.max(terms[f] * root))
    }

    /// (P z)ᵢ: row i of the LCP matrix without JᵀWJ, i.e. Ẽλ and εΔ on
    /// a friction row, εΔ on a normal row, μ̃c_n − Ẽᵀβ on a λ row.
    pub(super) fn structure_times(&self, i: usize, z: &[f64]) -> f64 {
        let (b, r) = self.owner[i];
        if r == LAMBDA {
            let start = self.first_beta[b];
            let beta: f64 = z[start..start + self.jacobians[b].friction_count()]
                .iter()
                .sum();
            self.mu[b] * z[self.layout.normal(b)] - beta
        } else {
            let lambda = if r == 0 {
                0.0
            } else {
                z[self.layout.lambda(b)]
            };
            self.regularization * self.diagonal[i] * z[i] + lambda
        }
    }

    /// wᵢ = J_i W^½ ỹ + (P z)ᵢ + qᵢ, with the velocity change carried as
    /// ỹ = W^{-½} Δv instead of summed from the impulses.
    pub(super) fn slack(&self, i: usize, y: &[f64], z: &[f64], q: &[f64]) -> f64 {
        let velocity: f64 = self.weighted_row(i).map(|(f, v)| v * y[f]).sum();
        velocity + self.structure_times(i, z) + q[i]
    }

    /// The solution at the complementary basis `basis` (the indices whose
    /// zᵢ is basic) of LCP(M, q) for this operator (its regularization
    /// included), refined in velocity space: Newton steps on the KKT system
    ///
    /// ```text
    ///     ỹ − W^½ J_Cᵀ z_C = 0,      J_K W^½ ỹ + (P z)_K + q_K = 0
    /// ```
    ///
    /// (K = C = `basis`) with the factorization of [`KktBlock`], whose
    /// residuals are computed with the velocity change ỹ = W^{-½}Δv as an
    /// unknown of its own. Lemke's solution z gives the velocities as sums
    /// v* + W Jᵀz whose terms, for a gram under 10⁸ kg, are 10⁹–10¹⁰ m/s:
    /// a componentwise backward error of 10⁻¹³ in z (what Lemke accepts)
    /// leaves 10⁻³ m/s in the light body's velocity and 10² J of work in
    /// the heavy impulse. Here the constraint rows are met to the rounding of
    /// the velocities themselves, and the impulses' rounding shows only as
    /// an imbalance of momentum of ε|z|. `None` when the block is singular
    /// or a step is not finite; the caller checks complementarity.
    pub fn polish(&self, q: &DVector<f64>, basis: &[usize], z: &DVector<f64>) -> Option<Polished> {
        let kkt = KktBlock::new(self, basis, basis, None)?;
        let dof = kkt.dof;
        let n = self.layout.size();
        let s = |i: usize| self.scale.as_deref().map_or(1.0, |s| s[i]);
        // Lemke's z on the basis, zero off it.
        let mut start = vec![0.0; n];
        for &i in basis {
            start[i] = z[i];
        }
        let mut z = start;
        let mut y = vec![0.0; dof];
        self.add_weighted_transpose(&z, &mut y);
        let mut rhs = vec![0.0; dof + basis.len()];
        for _ in 0..POLISH_STEPS {
            rhs.iter_mut().for_each(|x| *x = 0.0);
            self.add_weighted_transpose(&z, &mut rhs[..dof]);
            for (r, yf) in rhs[..dof].iter_mut().zip(&y) {
                *r -= yf;
            }
            for (k, &i) in basis.iter().enumerate() {
                rhs[dof + k] = s(i) * self.slack(i, &y, &z, q.as_slice());
            }
            kkt.solve_full(&mut rhs);
            if !rhs.iter().all(|x| x.is_finite()) {
                return None;
            }
            for (yf, d) in y.iter_mut().zip(&rhs[..dof]) {
                *yf += d;
            }
            for (k, &i) in basis.iter().enumerate() {
                z[i] += s(i) * rhs[dof + k];
            }
        }
        let w = DVector::from_fn(n, |i, _| self.slack(i, &y, &z, q.as_slice()));
        let mut velocity_change = y;
        for b in &self.blocks {
            for i in 0..b.len {
                velocity_change[b.flat + i] *= self.w[b.start + i].sqrt();
            }
        }
        Some(Polished {
            z: DVector::from_vec(z),
            w,
            velocity_change,
        })
    }

    /// out += Δv for a velocity change on the flat velocities
    /// ([`Polished::velocity_change`]), global indexing.
    pub fn add_flat(&self, velocity_change: &[f64], out: &mut DVector<f64>) {
        for b in &self.blocks {
            for i in 0..b.len {
                out[b.start + i] += velocity_change[b.flat + i];
            }
        }
    }
}
