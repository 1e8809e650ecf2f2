//! Nonlinear Gauss–Seidel over contacts (NSGS): Moreau's "nonlinear
//! relaxation technique à la Gauss–Seidel" (Moreau 1998, the paragraph after
//! (20)), which keeps the local variables — each contact's impulse and
//! velocity — instead of eliminating them into one LCP.
//!
//! Two local laws. In space, by default, Coulomb's circular cone
//! (`FrictionCone::Circular`, as Siconos's fc3d NSGS): each contact's
//! three unknowns r = (r_N, r_T₁, r_T₂) against its 3 × 3 Delassus block
//! W_jj = J_j M⁻¹ J_jᵀ, precomputed with its inverse once per step and
//! solved exactly by [`super::coulomb_cone`]. The contacts carry the 4-edge
//! pyramid's directions (t₁, t₂, −t₁, −t₂), so the solution is reported in
//! the layout of (29): β = (r_T₁⁺, r_T₂⁺, r_T₁⁻, r_T₂⁻), λ the slip speed
//! ‖u_T‖ and ζ = μ r_N − ‖r_T‖. Convergence is Siconos's relative
//! natural-map error (Acary & Brogliato 2008, ch. 13; De Saxcé & Feng
//! 1991, Moreau 1998 ref. 5),
//!
//! ```text
//!   ε = √(Σⱼ ‖rⱼ − Π_K(rⱼ − ρⱼ ûⱼ)‖²) / √(Σⱼ ‖rⱼ‖²),   ρⱼ = 1/(W_jj)_NN,
//! ```
//!
//! with ûⱼ = uⱼ + μ‖u_Tⱼ‖e_N De Saxcé's modified velocity (ε = 0 exactly at a
//! solution; with no impulse anywhere the numerator alone). It costs a
//! sweep's products, so each sweep first measures the light error
//! √(Σ‖Δrⱼ‖²)/√(Σ‖rⱼ‖²) of its own updates, and ε is computed when the
//! light error times the ratio ε / light error of the last check falls
//! below the tolerance, every 32 sweeps and at the sweep limit.
//!
//! The sweeps on the cone are combined by Anderson acceleration
//! ([`DEFAULT_ACCELERATION`]): the impulses after a sweep are replaced by the
//! combination of the last sweeps' whose residuals combine to the smallest,
//! and the velocity follows (v = v* + W Jᵀ r is linear in r). Convergence
//! is still decided on a sweep's own output, before any combination. Each
//! local problem carries a proximal term ([`PROXIMAL`]), which leaves the
//! fixed points alone and stops impulses drifting along jammed contacts.
//!
//! A problem of at least [`SPLIT_MIN`] contacts is swept in two halves of
//! space at once, on two threads ([`Halves`]; `StepSettings::threads`),
//! then the contacts across the cut; one thread sweeps the same order, so
//! the result is the same bit for bit.
//!
//! In the plane the circular choice is the two-direction law itself, solved
//! by the same local solver with a second tangent that carries nothing (the
//! contacts' rows are n, t, −t; β = (r_T⁺, r_T⁻)).
//!
//! With `FrictionCone::Pyramid`, the local law is the pyramid's and NSGS
//! solves the same contact problem as Lemke, the LCP (29) of a
//! [`ContactProblem`] on the k-edge friction pyramid (the two-direction law in
//! the plane), so that the two solvers can be compared on identical
//! problems. One sweep visits the contacts in their fixed order; at contact
//! j, with every other contact's impulse held, the local problem is the
//! (k + 2)-unknown block of (29),
//!
//! ```text
//!   0 ≤ ⎡β⎤ ⊥ ⎡ D̃ⱼᵀWD̃ⱼ   D̃ⱼᵀWñⱼ   e ⎤⎡β⎤   ⎡D̃ⱼᵀ v⁻ʲ + t_β⎤ ≥ 0,
//!       ⎢c⎥   ⎢ ñⱼᵀWD̃ⱼ   ñⱼᵀWñⱼ   0 ⎥⎢c⎥ + ⎢ñⱼᵀ v⁻ʲ + t_n ⎥
//!       ⎣λ⎦   ⎣ −eᵀ       μ        0 ⎦⎣λ⎦   ⎣      0        ⎦
//! ```
//!
//! with v⁻ʲ the velocity without contact j's own impulse and t the scheme's
//! right-hand-side terms (γ/h for Stewart–Trinkle, Newton's ε_N γ_N^A for
//! Moreau–Jean), and it is solved exactly by Lemke's method on the small
//! block (Stewart & Trinkle 1996 §3: the block is copositive-plus, so Lemke
//! terminates with a solution). The velocity is then updated by W Jⱼᵀ Δzⱼ,
//! touching only contact j's bodies: a sweep costs O(Σ k) whatever the
//! number of bodies. When the sweeps walk, the impulses changing by the
//! same amount every p ≤ 4 sweeps, the walk is taken to its end in one move
//! ([`Drift`]).
//!
//! Convergence is measured by the natural-map residual in impulse units,
//!
//! ```text
//!   ρ = maxᵢ |min(zᵢ, wᵢ / Δᵢ)| / max(maxᵢ |zᵢ|, ·)
//! ```
//!
//! with Δᵢ the diagonal of JᵀWJ on the β and c rows (a velocity turned into
//! the impulse that would cancel it) and, on the λ rows, min(λ/Δₙ, ζ).
//! ρ = 0 exactly at a solution of (29). It is computed after every sweep: it
//! costs a product with each contact's rows, a fraction of a sweep's local
//! solves, and warm-started steps mostly converge within a few sweeps.

pub mod anderson;
mod cone;
pub mod coulomb_cone;
mod halves;
mod kernels;
mod pyramid;

use self::anderson::{Anderson, Companion};
use self::cone::{WaitingBuffers, solve_cone};
use self::halves::Halves;
use self::kernels::Cone;
use self::pyramid::solve_pyramid;
use crate::lcp::LcpStatus;
use crate::model::ContactJacobian;
use crate::params::CIRCULAR_CONE_DIRECTIONS;
use crate::solver::options::NsgsOptions;
use crate::solver::problem::ContactProblem;
use crate::solver::warm::LastImpulses;
use nalgebra::DMatrix;
use nalgebra::DVector;

/// The sweeps on the circular cone are combined by Anderson acceleration
/// over the last 5 sweeps ([`super::anderson`]): x ↦ G(x) is one sweep over
/// the impulses r, and the next sweep starts from G(x) − ΔG γ. A pile's
/// boxes rest on four corners each, a statically indeterminate load that
/// Gauss–Seidel moves one contact a sweep; the combination takes the long
/// steps along it that the sweeps take one at a time (`pile.ron` at a
/// tolerance of 1e-4: 31 sweeps a step instead of 309; a combination costs
/// about 40 % of a sweep). The pyramid's sweeps are not combined: its local
/// Lemke splits a friction force among the edges differently from sweep to
/// sweep (opposite edges both carry impulse while a contact sticks), so
/// combining its iterates is not a fixed-point acceleration.
pub const DEFAULT_ACCELERATION: usize = 5;

/// Each contact's local problem on the circular cone is solved with a
/// proximal term (Rockafellar 1976): with σ = 0.1 (W_jj)_NN and r_old its
/// impulse before the visit, the block W_jj + σI and the free velocity
/// q − σ r_old. A fixed point (r = r_old) is a solution of the contact law
/// itself, and the residual that decides convergence is the law's own; the
/// term damps each visit. Jammed contacts (a pile's boxes wedged against
/// each other) let impulses drift along a direction the velocities do not
/// see, the residual flat (`pile.ron` at t = 1.535 s: 1.40e-4 for 1,000
/// sweeps); the damped sweeps converge there (`pile.ron` at 1e-8: 2 of 200
/// steps reach a limit of 100,000 sweeps instead of 83).
pub const PROXIMAL: f64 = 0.1;

/// The largest residual ρ (relative, as the tolerance) with which a solve
/// that reached its sweep limit still lets the step go on, with its best
/// iterate: past it the impulses miss the contact law by a tenth of their
/// size and the motion means nothing, so the step fails as under
/// [`NsgsOptions::strict`].
pub const ACCEPTED_RESIDUAL: f64 = 1e-1;

/// Buffers NSGS keeps across steps so that neither a sweep nor, once the
/// contact count has been reached, a step allocates for the local data.
#[derive(Debug, Clone, Default)]
pub struct Workspace {
    cones: Vec<Cone>,
    /// `cone::Participation`'s storage.
    waiting: WaitingBuffers,
    /// The rows of the contacts taking part (`kernels::Span`).
    arena: Vec<f64>,
    /// The sweeps' acceleration, and its iterate and the sweep's image of
    /// it, the impulses (r_N, r_T₁, r_T₂) of the contacts in sweep order.
    anderson: Anderson,
    /// The velocity's share of the acceleration ([`anderson::Companion`]).
    companion: Companion,
    iterate: Vec<f64>,
    image: Vec<f64>,
    /// The sweeps' order over the cones ([`Halves`]).
    halves: Halves,
    /// The velocity a large problem is solved on ([`pad`]).
    padded: Vec<f64>,
}

/// What an NSGS solve gave, laid out as (29) over all the contacts.
pub struct NsgsSolution {
    /// `Solved`; `Unconverged` when ρ stayed above the tolerance and the
    /// best iterate is kept; `SweepLimit` when that is not allowed
    /// ([`NsgsOptions::strict`], [`ACCEPTED_RESIDUAL`]).
    pub status: LcpStatus,
    /// The residual ρ of the impulses returned.
    pub residual: f64,
    /// Sweeps done.
    pub sweeps: usize,
    /// z = (β̃, c̃_n, λ̃).
    pub z: DVector<f64>,
    /// w = (ρ̃, σ̃, ζ̃) at z.
    pub w: DVector<f64>,
    /// W J z.
    pub velocity_change: DVector<f64>,
    /// Which contacts took part, under [`ContactProblem::activation`].
    pub active: Option<Vec<bool>>,
}

/// One contact's data for the sweeps.
struct Local {
    /// Friction directions k.
    k: usize,
    /// The block of (29) for this contact alone, (k + 2)².
    block: DMatrix<f64>,
    /// Its right-hand side, rewritten at each visit.
    q: DVector<f64>,
    /// Diagonal Δ of JᵀWJ on its k + 1 rows (n first), for the residual.
    diagonal: Vec<f64>,
    /// The scheme's terms on its rows (n first, then the k friction rows).
    terms: Vec<f64>,
    /// Its impulses (n first, then β), and λ.
    z: Vec<f64>,
    lambda: f64,
}

/// Solves `problem` (whose W is the block-diagonal `w`) by NSGS, starting
/// from `warm` (each contact's impulses by identity in the layout of (29),
/// n first), within `limits`.
pub fn solve(
    problem: &ContactProblem<'_>,
    w: &[f64],
    warm: &LastImpulses,
    limits: NsgsOptions,
    workspace: &mut Workspace,
) -> NsgsSolution {
    let mut solution = match cone_law(problem, &limits) {
        Some(planar) => solve_cone(problem, w, warm, limits, workspace, planar),
        None => solve_pyramid(problem, w, warm, limits, workspace),
    };
    if solution.status == LcpStatus::SweepLimit
        && !limits.strict
        && solution.residual <= ACCEPTED_RESIDUAL
    {
        solution.status = LcpStatus::Unconverged;
    }
    solution
}

/// Whether [`solve`] takes the circular cone's local law, and if so whether
/// in the plane (`Some(planar)`), or the pyramid's (`None`). In the plane
/// (the pair ±t) the circular cone's law is the two-direction law itself:
/// the same exact local solver, with a decoupled second tangent that
/// carries no impulse.
fn cone_law(problem: &ContactProblem<'_>, limits: &NsgsOptions) -> Option<bool> {
    let all = |k: usize| {
        problem
            .contacts
            .iter()
            .all(|c| c.jacobian.friction_count() == k)
    };
    let planar = all(2);
    (limits.circular && (planar || all(CIRCULAR_CONE_DIRECTIONS))).then_some(planar)
}

/// Whether [`solve`] solves the LCP (29) of `problem`: on the pyramid, and
/// in the plane (see [`cone_law`]). On the circular cone in space it solves
/// no LCP.
pub fn solves_lcp(problem: &ContactProblem<'_>, limits: &NsgsOptions) -> bool {
    cone_law(problem, limits) != Some(false)
}

/// A contact's impulses (n first, then β) from its last solve, when they
/// fit its layout; zero otherwise.
fn warm_impulse(warm: &LastImpulses, c: &crate::model::Contact) -> Vec<f64> {
    let k = c.jacobian.friction_count();
    warm.get(&c.id)
        .filter(|p| p.len() == k + 1 && p.iter().all(|x| x.is_finite() && *x >= 0.0))
        .map(<[f64]>::to_vec)
        .unwrap_or_else(|| vec![0.0; k + 1])
}

/// out += α W Jᵀ z for one contact's impulses z (n first, then β).
fn add_impulse(jac: &ContactJacobian, z: &[f64], alpha: f64, w: &[f64], out: &mut DVector<f64>) {
    for (r, &value) in z.iter().enumerate() {
        if value != 0.0 {
            jac.add_weighted_row(r, alpha * value, w, out);
        }
    }
}

/// A contact's w rows (σ first, then ρ) and ζ at `velocity`.
fn local_w(
    jac: &ContactJacobian,
    local: &Local,
    velocity: &DVector<f64>,
    mu: f64,
) -> (Vec<f64>, f64) {
    let k = local.k;
    let mut rows = Vec::with_capacity(k + 1);
    rows.push(jac.dot(0, velocity) + local.terms[0]);
    for i in 0..k {
        rows.push(jac.dot(i + 1, velocity) + local.terms[i + 1] + local.lambda);
    }
    let zeta = mu * local.z[0] - local.z[1..].iter().sum::<f64>();
    (rows, zeta)
}
