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
//! √(Σ‖Δrⱼ‖²)/√(Σ‖rⱼ‖²) of its own updates, and ε is computed when that
//! falls below the tolerance, every 8 sweeps and at the sweep limit.
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

use super::anderson::Anderson;
use super::assembly::Layout;
use super::coulomb_cone;
use super::solve::{Activation, ContactProblem, friction_starts};
use super::warm::LastImpulses;
use crate::lcp::{self, LcpStatus, LemkeOptions};
use crate::model::jacobian::rows_dot;
use crate::model::{Block, ContactJacobian};
use crate::pair_thread::{self, PairThread, both};
use crate::params::CIRCULAR_CONE_DIRECTIONS;
use nalgebra::{DMatrix, DVector, Matrix3, Vector3};
use std::time::{Duration, Instant};

/// How NSGS stops: the residual tolerance and the sweep limit, and its
/// local law.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NsgsLimits {
    /// Relative residual at which the sweeps stop.
    pub tolerance: f64,
    /// Sweeps allowed before the solve ends with [`LcpStatus::SweepLimit`].
    pub max_sweeps: usize,
    /// The circular cone in space (contacts with
    /// [`CIRCULAR_CONE_DIRECTIONS`] directions); else the pyramid.
    pub circular: bool,
    /// Anderson acceleration of the sweeps on the circular cone: the number
    /// of past sweeps combined (0: plain Gauss–Seidel). See
    /// [`DEFAULT_ACCELERATION`].
    pub acceleration: usize,
    /// Threads the sweeps may use, 1 or 2 ([`crate::stepper::StepSettings::threads`]).
    pub threads: usize,
}

/// The sweeps on the circular cone are combined by Anderson acceleration
/// over the last 5 sweeps ([`super::anderson`]): x ↦ G(x) is one sweep over
/// the impulses r, and the next sweep starts from G(x) − ΔG γ. A pile's
/// boxes rest on four corners each, a statically indeterminate load that
/// Gauss–Seidel moves one contact a sweep; the combination takes the long
/// steps along it that the sweeps take one at a time. Measured (release,
/// sweeps a step, plain → accelerated): `pile.ron` 0.3 s at 1e-8 37,152 (21
/// steps at a limit of 100,000) → 64 (over 1 s 82,065 and 161 of 200 steps
/// at the limit → 41,718 and 83: the settled pile's jams, README), and 2 s
/// at the default 1e-4 309 (103 steps at the limit of 1,000) → 31 (1 step);
/// `tower.ron` 1 s at 1e-8 2,204 → 79; `hourglass.ron` 69 → 37,
/// `avalanche.ron` 97 → 67, `silo.ron` 152 → 103 (0.3–0.5 s at their shipped
/// 1e-3; the silo's time a step 19.1 → 17.5 ms: a combination costs about
/// 40 % of a sweep). Memory 3 and 10 did as well as 5 on the silo. The
/// pyramid's sweeps are not combined: its local Lemke splits a friction
/// force among the edges differently from sweep to sweep (opposite edges
/// both carry impulse while a contact sticks), and combining those iterates,
/// even rewritten on the one or two edges around the force, went anywhere
/// from 37× fewer sweeps on `pile.ron` to 30 steps at the sweep limit as the
/// memory, regularization and safeguards varied.
pub const DEFAULT_ACCELERATION: usize = 5;

/// Each contact's local problem on the circular cone is solved with a
/// proximal term (Rockafellar 1976): with σ = 0.1 (W_jj)_NN and r_old its
/// impulse before the visit, the block W_jj + σI and the free velocity
/// q − σ r_old. A fixed point (r = r_old) is a solution of the contact law
/// itself, and the residual that decides convergence is the law's own; the
/// term damps each visit. Jammed contacts (a pile's boxes wedged against
/// each other) let impulses drift along a direction the velocities do not
/// see, the residual flat (`pile.ron` at t = 1.535 s: 1.40e-4 for 1,000
/// sweeps); the damped sweeps converge there. Measured with the
/// acceleration (sweeps a step, σ = 0 → 0.1): `pile.ron` 1 s at 1e-8 41,918
/// and 83 of 200 steps at a limit of 100,000 → 1,415 and 2, and 2 s at the
/// default 1e-4 31 and one step at the limit → 23 and none; `tower.ron` 1 s
/// at 1e-8 79 → 69; `silo.ron` 103 → 99; but `pile.ron`'s first 0.3 s at
/// 1e-8 64 → 130. σ = 0.01 left the 1 s run at 83 steps at the limit; 0.3
/// did as 0.1.
pub const PROXIMAL: f64 = 0.1;

/// The full residual is computed at least every this many sweeps.
const FULL_RESIDUAL_EVERY: usize = 8;

/// Under [`Activation`], contacts join before the first sweep too, at the
/// velocity of the warm start (each with its own last impulse), for as many
/// rounds as contacts keep joining, at most this many: a grain resting on
/// one whose gap at q^M came out a hair positive approaches it at h·g under
/// the others' warm impulses, and joined only at a residual check after 8
/// sweeps, then the next ones at the checks after (the 1,000-grain silo's
/// steps had 1,300 contacts at the first check and 1,880 at the last, 20
/// checks later). Joining them first, over the scenes' first 0.5 s: the
/// silo 97.8 → 73 sweeps a step, the hourglass 88 → 53, the avalanche 80 →
/// 54 (deepest overlaps 8.0 → 5.0, 2.4 → 3.2 and 3.3 → 3.5 mm). Rounds used
/// on the silo: mostly 1–5, at most 10; with 4 and 16 rounds the silo took
/// 74 and 77 sweeps a step. Joining
/// only once the residual is met, instead of at every check, took 115, 83
/// and 91; checks every 4 or 16 sweeps instead of 8 changed little (70–74,
/// 53–58, 53–65).
const WARM_GROWTH_ROUNDS: usize = 8;

/// The contacts taking part ([`Activation`]).
struct Participation<'a, 'w> {
    active: Vec<bool>,
    rule: Option<Activation<'a>>,
    /// The contacts not taking part yet, each with its normal row copied
    /// into `normals` ([`Span`] of one row): what a check reads, in one
    /// place and in the order checked, instead of in each candidate's own
    /// Jacobian allocation (the 5,000-grain silo, with ten candidates for
    /// every contact taking part, spent a sixth of its step reading them).
    waiting: &'w mut Vec<(usize, Span)>,
    normals: &'w mut Vec<f64>,
    /// Whether each waiting contact closes, at a check.
    closes: &'w mut Vec<bool>,
}

impl<'a, 'w> Participation<'a, 'w> {
    /// The contacts taking part at the start, with `waiting` and `normals`
    /// (kept between steps) as its storage.
    fn of(
        problem: &ContactProblem<'a>,
        waiting: &'w mut Vec<(usize, Span)>,
        normals: &'w mut Vec<f64>,
        closes: &'w mut Vec<bool>,
    ) -> Self {
        let n = problem.contacts.len();
        waiting.clear();
        normals.clear();
        match problem.activation {
            Some(rule) => {
                for (j, c) in problem.contacts.iter().enumerate() {
                    if rule.initially[j] {
                        continue;
                    }
                    waiting.push((j, Span::copy(&c.jacobian, 1, normals)));
                }
                Self {
                    active: rule.initially.to_vec(),
                    rule: Some(rule),
                    waiting,
                    normals,
                    closes,
                }
            }
            None => Self {
                active: vec![true; n],
                rule: None,
                waiting,
                normals,
                closes,
            },
        }
    }

    /// At a residual check: activates every contact the velocity `u` would
    /// close (module documentation of [`Activation`]) and appends it to
    /// `joined`.
    /// The rows are read in two halves, on two threads when there is a
    /// `pair` and enough of them.
    fn grow(&mut self, v: Velocity, joined: &mut Vec<usize>, pair: Option<&PairThread>) {
        let Some(rule) = self.rule else {
            return;
        };
        let (normals, closes) = (&*self.normals, &mut *self.closes);
        let n = self.waiting.len();
        closes.clear();
        closes.resize(n, false);
        let check = |waiting: &[(usize, Span)], out: &mut [bool]| {
            for (&(j, normal), closes) in waiting.iter().zip(out) {
                // SAFETY: the velocity is only read during the call.
                let speed = unsafe { normal.dots_at(normals, v) }.x;
                *closes = rule.gaps[j] + rule.lead * speed < -rule.tolerance;
            }
        };
        let (first, second) = self.waiting.split_at(n / 2);
        let (into_first, into_second) = closes.split_at_mut(n / 2);
        both(
            pair,
            n >= SPLIT_MIN,
            || check(first, into_first),
            || check(second, into_second),
        );
        let active = &mut self.active;
        let mut flags = closes.iter();
        self.waiting.retain(|&(j, _)| {
            let closes = flags.next().copied().unwrap_or(false);
            if closes {
                active[j] = true;
                joined.push(j);
            }
            !closes
        });
    }

    fn result(self) -> Option<Vec<bool>> {
        self.rule.map(|_| self.active)
    }
}

/// One contact's data for the sweeps on the circular cone.
#[derive(Debug, Clone, Copy)]
struct Cone {
    /// The contact's index in the problem: the sweeps' order.
    contact: usize,
    /// Its rows in the arena.
    span: Span,
    /// (W_jj)_NN of the Delassus block W_jj in (n, t₁, t₂): the residual's
    /// scale.
    w_nn: f64,
    /// The local problem's block W_jj + σI, with σ = [`PROXIMAL`] ·
    /// (W_jj)_NN the proximal shift, and its inverse (the sticking impulse).
    w_local: Matrix3<f64>,
    w_inverse: Matrix3<f64>,
    /// Whether `w_local` is diag(a, b, b) (a sphere's contact: sliding in
    /// closed form, [`coulomb_cone::decoupled_and_isotropic`]), decided once
    /// rather than at every visit.
    isotropic: bool,
    /// The scheme's terms on the n, t₁, t₂ rows.
    terms: Vector3<f64>,
    /// The impulse (r_N, r_T₁, r_T₂).
    r: Vector3<f64>,
    mu: f64,
}

/// Buffers NSGS keeps across steps so that neither a sweep nor, once the
/// contact count has been reached, a step allocates for the local data.
#[derive(Debug, Clone, Default)]
pub struct Workspace {
    cones: Vec<Cone>,
    /// [`Participation`]'s storage.
    waiting: Vec<(usize, Span)>,
    normals: Vec<f64>,
    closes: Vec<bool>,
    /// The rows of the contacts taking part ([`Span`]).
    arena: Vec<f64>,
    /// The sweeps' acceleration, and its iterate and the sweep's image of
    /// it, the impulses (r_N, r_T₁, r_T₂) of the contacts in sweep order.
    anderson: Anderson,
    iterate: Vec<f64>,
    image: Vec<f64>,
    /// The sweeps' order over the cones ([`Halves`]).
    halves: Halves,
    /// The velocity a large problem is solved on ([`pad`]).
    padded: Vec<f64>,
}

/// What an NSGS solve gave, laid out as (29) over all the contacts.
pub struct NsgsSolution {
    /// `Solved`, or `SweepLimit` when ρ stayed above the tolerance.
    pub status: LcpStatus,
    /// The last residual ρ.
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
    limits: NsgsLimits,
    workspace: &mut Workspace,
) -> NsgsSolution {
    match cone_law(problem, &limits) {
        Some(planar) => solve_cone(problem, w, warm, limits, workspace, planar),
        None => solve_pyramid(problem, w, warm, limits, workspace),
    }
}

/// Whether [`solve`] takes the circular cone's local law, and if so whether
/// in the plane (`Some(planar)`), or the pyramid's (`None`). In the plane
/// (the pair ±t) the circular cone's law is the two-direction law itself:
/// the same exact local solver, with a decoupled second tangent that
/// carries no impulse.
fn cone_law(problem: &ContactProblem<'_>, limits: &NsgsLimits) -> Option<bool> {
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
pub fn solves_lcp(problem: &ContactProblem<'_>, limits: &NsgsLimits) -> bool {
    cone_law(problem, limits) != Some(false)
}

/// The Delassus block of rows 0..3 (n, t₁, t₂) of one contact; in the plane
/// of rows 0..2 (n, t), with 1 for the absent second tangent.
fn delassus(jac: &ContactJacobian, w: &[f64], planar: bool) -> Matrix3<f64> {
    let rows = if planar { 2 } else { 3 };
    let mut block = Matrix3::zeros();
    if planar {
        block[(2, 2)] = 1.0;
    }
    for a in 0..rows {
        for b in a..rows {
            let value = jac.coupling(a, jac, b, w);
            block[(a, b)] = value;
            block[(b, a)] = value;
        }
    }
    block
}

/// NSGS on the circular cone (module documentation).
fn solve_cone(
    problem: &ContactProblem<'_>,
    w: &[f64],
    warm: &LastImpulses,
    limits: NsgsLimits,
    workspace: &mut Workspace,
    planar: bool,
) -> NsgsSolution {
    let contacts = problem.contacts;
    let layout = Layout::of(contacts);
    let starts = friction_starts(contacts);
    // Impulse rows: n, t₁, t₂ (n, t in the plane).
    let rows = if planar { 2 } else { 3 };
    let Workspace {
        cones,
        waiting,
        normals,
        closes,
        arena,
        anderson,
        iterate: x,
        image: g,
        halves,
        padded,
    } = workspace;
    // The helper, and whether to use it: the last measurement's verdict
    // until this solve's own ([`PROBE_SWEEPS`]).
    let helper = if limits.threads >= 2 && contacts.len() >= SPLIT_MIN {
        pair_thread::shared()
    } else {
        None
    };
    let mut pair = helper.filter(|_| pair_thread::pays());
    let mut probe = [Duration::ZERO; 2];
    cones.clear();
    arena.clear();
    let mut part = Participation::of(problem, waiting, normals, closes);
    let mut velocity = problem.free.clone();
    // Large problems of rigid bodies' blocks work on a padded copy of the
    // velocity, each body on its own cache line ([`PAD`]), from the start to
    // the end of the solve: the two threads of a split sweep then never
    // write one line, and nothing moves a body's velocity between the
    // threads but the contacts across the cut.
    let block = padded_block(contacts, planar);
    let v = if block > 0 {
        pad(&velocity, block, padded);
        Velocity::padded(padded)
    } else {
        Velocity::of(&mut velocity)
    };
    let mut joined: Vec<usize> = (0..contacts.len()).filter(|&j| part.active[j]).collect();
    let add_cones = |joined: &mut Vec<usize>, cones: &mut Vec<Cone>, arena: &mut Vec<f64>| {
        for j in joined.drain(..) {
            let c = contacts[j];
            let jac = &c.jacobian;
            let block = delassus(jac, w, planar);
            let shift = PROXIMAL * block[(0, 0)].max(0.0);
            let w_local = block + Matrix3::identity() * shift;
            // A 3 × 3 block of independent rows on a body with mass is
            // positive definite; the tiny shift only guards a degenerate
            // Jacobian.
            let w_inverse = w_local.try_inverse().unwrap_or_else(|| {
                let tiny = 1e-12 * w_local.trace().abs().max(f64::MIN_POSITIVE);
                (w_local + Matrix3::identity() * tiny)
                    .try_inverse()
                    .unwrap_or_else(Matrix3::zeros)
            });
            let term = |i: usize| {
                problem
                    .friction_terms
                    .get(starts[j] + i)
                    .copied()
                    .unwrap_or(0.0)
            };
            let mu = problem.mu[j];
            // The warm start: (c_n, β₁…β₄) → r_T = (β₁ − β₃, β₂ − β₄), in the
            // cone; in the plane (c_n, β₊, β₋) → r_T = β₊ − β₋. A contact
            // that joins during the sweeps starts from its last impulse too:
            // a resting contact whose gap at q^M came out a hair positive
            // then carries its load again at once (the silo: 10 % fewer
            // sweeps; its deepest overlap over 6 s 5.8 mm instead of 7.1).
            let r = warm
                .get(&c.id)
                .filter(|p| p.len() == jac.friction_count() + 1 && p.iter().all(|x| x.is_finite()))
                .map_or_else(Vector3::zeros, |p| {
                    let r = if planar {
                        Vector3::new(p[0], p[1] - p[2], 0.0)
                    } else {
                        Vector3::new(p[0], p[1] - p[3], p[2] - p[4])
                    };
                    coulomb_cone::project(&r, mu)
                });
            let span = Span::copy(jac, rows, arena);
            // SAFETY: one thread; `v` is the solve's velocity.
            unsafe { span.add_at(arena, w, &r, v) };
            cones.push(Cone {
                contact: j,
                span,
                w_nn: block[(0, 0)],
                w_local,
                w_inverse,
                isotropic: coulomb_cone::decoupled_and_isotropic(&w_local),
                terms: Vector3::new(
                    problem.normal_terms[j],
                    term(0),
                    if planar { 0.0 } else { term(1) },
                ),
                r,
                mu,
            });
        }
    };
    add_cones(&mut joined, cones, arena);
    // The warm start's own velocity already closes most of the contacts
    // that will join ([`WARM_GROWTH_ROUNDS`]).
    for _ in 0..WARM_GROWTH_ROUNDS {
        part.grow(v, &mut joined, pair);
        if joined.is_empty() {
            break;
        }
        add_cones(&mut joined, cones, arena);
    }
    halves.split(cones, contacts, problem.dof, block);

    let mut status = LcpStatus::SweepLimit;
    let mut residual = f64::INFINITY;
    let mut sweeps = 0;
    let memory = limits.acceleration;
    if anderson.memory() != memory {
        *anderson = Anderson::new(memory);
    }
    anderson.reset(3 * cones.len());
    while sweeps < limits.max_sweeps {
        sweeps += 1;
        // One fixed order, the problem's (the broad phase's), in the parts
        // of [`Halves`]. Alternating the direction (symmetric Gauss–Seidel,
        // meant to carry a load down a chain of contacts whichever way they
        // are numbered) took more sweeps on every granular scene: 25 % more
        // on the silo, 23–29 % on the hourglass, 16–20 % on the avalanche.
        // The reversed order (top down in the scenes, numbered from the
        // bottom) took 6–10 % fewer sweeps over their first 0.5 s but left
        // deeper overlaps on the silo (5.0 → 5.7 mm) and the avalanche
        // (3.45 → 3.58).
        // Each part also writes its impulses before and after the sweep
        // into x and G(x), the acceleration's iterate and image.
        x.resize(3 * cones.len(), 0.0);
        g.resize(3 * cones.len(), 0.0);
        let two = sweeps % 2 == 0;
        let clock = Instant::now();
        // Each part's sweep is followed at once by the acceleration's first
        // pass over its entries, on the same thread: those entries are final
        // once the part is swept (the third part moves only its own), and
        // the sums add up in the same order as in passes of their own.
        let plan = anderson.plan();
        let cuts = halves.ends.map(|e| 3 * e.min(cones.len()));
        let [mut pa, mut pb, mut pc] = anderson.pieces(x, g, cuts);
        let [a, b, c] = halves.parts(cones);
        let work = !b.is_empty();
        let probing = work && helper.is_some() && sweeps <= PROBE_SWEEPS;
        let accelerated = memory > 0;
        let swept = |cones: &mut [Cone], piece: &mut super::anderson::Piece<'_>| {
            let (before, after) = piece.iterate();
            // SAFETY: the two halves' bodies are disjoint ([`Halves`]), and
            // the third part runs alone after them.
            let (change, size) = unsafe { sweep(cones, before, after, arena, w, v) };
            let sums = accelerated.then(|| piece.first_pass(&plan));
            (change, size, sums)
        };
        let ((ca, sa, fa), (cb, sb, fb)) = both(
            if probing {
                helper.filter(|_| two)
            } else {
                pair
            },
            work,
            || swept(a, &mut pa),
            || swept(b, &mut pb),
        );
        // The third part, alone.
        let (cc, sc, fc) = swept(c, &mut pc);
        let sums = fa.zip(fb).zip(fc).map(|((fa, fb), fc)| fa + fb + fc);
        if probing {
            probe[usize::from(two)] += clock.elapsed();
            if sweeps == PROBE_SWEEPS {
                let pays = probe[1] < probe[0];
                pair_thread::set_pays(pays);
                pair = helper.filter(|_| pays);
            }
        }
        let change = ca + cb + cc;
        let size = sa + sb + sc;
        let light = if size > 0.0 {
            (change / size).sqrt()
        } else {
            change.sqrt()
        };
        if light <= limits.tolerance
            || sweeps % FULL_RESIDUAL_EVERY == 0
            || sweeps == limits.max_sweeps
            || !light.is_finite()
        {
            residual = cone_residual(cones, halves, pair, arena, v);
            // Contacts join at every full check (and at the last), not only
            // once the residual is met: a grain's load then travels through
            // its new contacts in the same sweeps (the 1,000-grain silo: 240
            // sweeps a step over its first 0.5 s instead of 601 in restarted
            // rounds).
            if sweeps % FULL_RESIDUAL_EVERY == 0 || residual <= limits.tolerance {
                part.grow(v, &mut joined, pair);
            }
            let grew = !joined.is_empty();
            add_cones(&mut joined, cones, arena);
            if grew {
                // Joined contacts are swept in the problem's order (the
                // broad phase's, neighbours near each other), not last.
                halves.split(cones, contacts, problem.dof, block);
            }
            if residual <= limits.tolerance && !grew {
                status = LcpStatus::Solved;
                break;
            }
            if !residual.is_finite() {
                break;
            }
            if grew {
                anderson.reset(3 * cones.len());
                continue;
            }
        }
        if let Some(sums) = sums {
            // The combination runs in the sweep's parts too (the cuts and
            // parts are the sweep's: a join restarts the loop above), each
            // on the thread that swept it, and moves each part's cones and
            // bodies there.
            let step = anderson.decide(&plan, sums);
            if step.mixes() {
                let [mut pa, mut pb, mut pc] = anderson.pieces(x, g, cuts);
                let [a, b, c] = halves.parts(cones);
                // SAFETY: as the sweep's.
                both(
                    pair,
                    work,
                    || unsafe {
                        pa.second_pass(&step);
                        move_to(a, pa.next(), arena, w, v);
                    },
                    || unsafe {
                        pb.second_pass(&step);
                        move_to(b, pb.next(), arena, w, v);
                    },
                );
                pc.second_pass(&step);
                // SAFETY: alone.
                unsafe { move_to(c, pc.next(), arena, w, v) };
            }
        }
    }
    if block > 0 {
        unpad(padded, block, &mut velocity);
    }
    if !residual.is_finite() {
        status = LcpStatus::NumericalFailure;
    }

    let mut cone_of = vec![usize::MAX; contacts.len()];
    for (i, cone) in cones.iter().enumerate() {
        cone_of[cone.contact] = i;
    }
    let mut z = DVector::zeros(layout.size());
    let mut wv = DVector::zeros(layout.size());
    for (j, c) in contacts.iter().enumerate() {
        let jac = &c.jacobian;
        let (r, terms, mu) = match cones.get(cone_of[j]) {
            Some(cone) => (cone.r, cone.terms, cone.mu),
            None => (Vector3::zeros(), Vector3::zeros(), problem.mu[j]),
        };
        // The normal and every direction's row in one pass (the same sums
        // as a row at a time): n, t₁, t₂, −t₁, −t₂ (n, t, −t in the plane).
        let rows = if planar {
            let [n, t, back] = jac.dots::<3>(&velocity);
            [n, t, back, 0.0, 0.0]
        } else {
            jac.dots::<5>(&velocity)
        };
        let u = Vector3::new(rows[0], rows[1], if planar { 0.0 } else { rows[2] }) + terms;
        let slip = u.y.hypot(u.z);
        let spatial = [r.y.max(0.0), r.z.max(0.0), (-r.y).max(0.0), (-r.z).max(0.0)];
        let in_plane = [r.y.max(0.0), (-r.y).max(0.0)];
        let beta: &[f64] = if planar { &in_plane } else { &spatial };
        z[layout.normal(j)] = r.x;
        wv[layout.normal(j)] = u.x;
        for (i, b) in beta.iter().enumerate() {
            z[starts[j] + i] = *b;
            let term = problem
                .friction_terms
                .get(starts[j] + i)
                .copied()
                .unwrap_or(0.0);
            wv[starts[j] + i] = rows[i + 1] + term + slip;
        }
        z[layout.lambda(j)] = slip;
        wv[layout.lambda(j)] = mu * r.x - r.y.hypot(r.z);
    }
    NsgsSolution {
        status,
        residual,
        sweeps,
        z,
        w: wv,
        velocity_change: velocity - problem.free,
        active: part.result(),
    }
}

with_avx2! {
/// One sweep's visits to `cones`, in their order: each contact's local
/// problem solved exactly with the others held, its impulse and the
/// velocity updated. Returns Σ‖Δr‖² and Σ‖r‖² over them.
///
/// # Safety
/// No other thread touches these cones' bodies' velocities during the call.
unsafe fn sweep(
    cones: &mut [Cone],
    before: &mut [f64],
    after: &mut [f64],
    arena: &[f64],
    w: &[f64],
    velocity: Velocity,
) -> (f64, f64) {
    let (mut change, mut size) = (0.0, 0.0);
    for ((cone, before), after) in cones
        .iter_mut()
        .zip(before.chunks_exact_mut(3))
        .zip(after.chunks_exact_mut(3))
    {
        before.copy_from_slice(cone.r.as_slice());
        // q: the local velocity without this contact's own impulse,
        // and the proximal term −σ r_old (see [`PROXIMAL`]): both at
        // once as (W_jj + σI) r_old.
        // SAFETY: the caller's.
        let q = unsafe { cone.span.dots_at(arena, velocity) } + cone.terms - cone.w_local * cone.r;
        let r = coulomb_cone::solve(
            &cone.w_local,
            &cone.w_inverse,
            &q,
            cone.mu,
            &cone.r,
            cone.isotropic,
        );
        // A non-finite local solution (only from non-finite data) keeps
        // the last impulse; the residual reports it.
        let kept = if r.iter().all(|x| x.is_finite()) {
            let delta = r - cone.r;
            // SAFETY: the caller's.
            unsafe { cone.span.add_at(arena, w, &delta, velocity) };
            change += delta.norm_squared();
            r
        } else {
            cone.r
        };
        // From the value in hand, not read back from the cone just
        // written (a load across two stores stalls the store buffer).
        size += kept.norm_squared();
        after.copy_from_slice(kept.as_slice());
        cone.r = kept;
    }
    (change, size)
}
}

with_avx2! {
/// Moves `cones` to the impulses `next` (three per cone, in their order)
/// and the velocity with them.
///
/// # Safety
/// As [`sweep`]'s.
unsafe fn move_to(cones: &mut [Cone], next: &[f64], arena: &[f64], w: &[f64], velocity: Velocity) {
    for (cone, next) in cones.iter_mut().zip(next.chunks_exact(3)) {
        let next = Vector3::new(next[0], next[1], next[2]);
        // SAFETY: the caller's.
        unsafe { cone.span.add_at(arena, w, &(next - cone.r), velocity) };
        cone.r = next;
    }
}
}

with_avx2! {
/// The residual's sums Σ‖rⱼ − Π_K(rⱼ − ρⱼûⱼ)‖² and Σ‖rⱼ‖² over `cones`
/// ([`cone_residual`]).
///
/// # Safety
/// Nothing writes these cones' bodies' velocities during the call.
unsafe fn residual_sums(cones: &[Cone], arena: &[f64], velocity: Velocity) -> (f64, f64) {
    let (mut error, mut size) = (0.0, 0.0);
    for cone in cones {
        // SAFETY: the caller's.
        let u = unsafe { cone.span.dots_at(arena, velocity) } + cone.terms;
        let rho = 1.0 / cone.w_nn.max(f64::MIN_POSITIVE);
        error += coulomb_cone::natural_map(&cone.r, &u, cone.mu, rho).norm_squared();
        size += cone.r.norm_squared();
    }
    (error, size)
}
}

/// Problems with fewer cones are swept in their own order, whole.
const SPLIT_MIN: usize = 512;

/// A split problem's first sweeps alternate one thread and two, timed; the
/// rest of the solve (and the narrow phase, [`pair_thread::pays`]) uses
/// whichever was faster. On this 2-core virtual machine two threads sweep
/// the 1,000-grain silo's halves in 21 µs against 41 on one in most runs,
/// but in some every thread runs at two thirds of its speed (both virtual
/// cores on one physical core, it seems) and two threads lose: 33 µs
/// against 31, and the spinning helper slows the caller's serial work
/// too. The result is the same either way.
const PROBE_SWEEPS: usize = 4;

/// Entries per body in a large problem's velocity ([`pad`]): a cache line
/// of f64, so that the two threads never write one line.
const PAD: usize = 8;

/// The sweeps' order over the cones when a problem is large enough
/// ([`SPLIT_MIN`]): the contacts in the lower half of space (along the
/// contact points' widest axis, cut where their work halves,
/// [`weighted_median`]), then those in the upper half, then those with a
/// body that contacts on both sides touch. The first two touch disjoint
/// bodies, so two threads sweep them at once ([`PairThread`]) and the third
/// part after them; one thread sweeps the same order, so the result does
/// not depend on the threads. The
/// acceleration's passes and its combination run in the same parts on the
/// same threads ([`Anderson::pieces`]), so that each thread keeps its
/// cones, its impulses and its bodies in its own cache. On the silos the
/// third part is 5–10 % of the contacts, and the order took about as many
/// sweeps as the problem's own (1,000 grains: 75.3 against 73.3 a step;
/// the hourglass 55.0 against 53.3, the avalanche 54.1 against 54.4).
///
/// The cones are stored in the parts' order, and the velocity of a large
/// problem is padded ([`PAD`]): with the two halves' cones and bodies
/// interleaved in memory, the two threads wrote each other's lines and two
/// threads swept the 1,000-grain silo slower than one (14.6 against 8.9 ms
/// a step).
#[derive(Debug, Clone, Default)]
struct Halves {
    /// Where the second and the third part start among the cones.
    ends: [usize; 2],
    /// Per velocity index (a block's first): 1 a lower contact touches it,
    /// 2 an upper one.
    side: Vec<u8>,
    keys: Vec<(f64, usize)>,
    points: Vec<Vector3<f64>>,
    /// The cones' new order, and the cones moved into it.
    permutation: Vec<(u8, usize, u32)>,
    moved: Vec<Cone>,
}

impl Halves {
    /// The three parts of `cones`.
    fn parts<'c>(&self, cones: &'c mut [Cone]) -> [&'c mut [Cone]; 3] {
        let [a, b] = self.ends;
        let (ab, c) = cones.split_at_mut(b.min(cones.len()));
        let (a, b) = ab.split_at_mut(a.min(ab.len()));
        [a, b, c]
    }

    /// Splits `cones` and stores them in the parts' order, each part in the
    /// problem's (contact) order; small problems, and those whose rows are
    /// not rigid bodies' blocks, stay whole, in the problem's order.
    /// `block` is [`padded_block`]'s: every block of the problem is one
    /// rigid body's, on the bodies' grid (0 when not).
    fn split(
        &mut self,
        cones: &mut Vec<Cone>,
        contacts: &[&crate::model::Contact],
        dof: usize,
        block: usize,
    ) {
        let n = cones.len();
        self.ends = [n, n];
        if !self.split_parts(cones, contacts, dof, block) {
            self.permutation.clear();
            self.permutation.extend(
                cones
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (0, c.contact, i as u32)),
            );
            self.reorder(cones);
        }
    }

    /// Puts `cones` in the order of the sorted [`Halves::permutation`]:
    /// sorting the keys and moving each cone once, where sorting the cones
    /// themselves (300 bytes each) moved them a dozen times.
    fn reorder(&mut self, cones: &mut Vec<Cone>) {
        self.permutation.sort_unstable();
        self.moved.clear();
        self.moved
            .extend(self.permutation.iter().map(|&(_, _, i)| cones[i as usize]));
        // The moved cones become the cones (no copy back); the old storage
        // is the next reorder's.
        std::mem::swap(cones, &mut self.moved);
    }

    /// [`Halves::split`], false when the problem stays whole.
    fn split_parts(
        &mut self,
        cones: &mut Vec<Cone>,
        contacts: &[&crate::model::Contact],
        dof: usize,
        block: usize,
    ) -> bool {
        let n = cones.len();
        // Off the bodies' grid (a general span reads the whole velocity) the
        // halves' bodies could not be told apart.
        if block == 0 || n < SPLIT_MIN {
            return false;
        }
        self.points.clear();
        for c in cones.iter() {
            let Some(frame) = contacts[c.contact].frame.as_ref() else {
                return false;
            };
            self.points.push(frame.point);
        }
        let points = &self.points;
        let mut low = Vector3::repeat(f64::INFINITY);
        let mut high = Vector3::repeat(f64::NEG_INFINITY);
        for p in points {
            low = low.inf(p);
            high = high.sup(p);
        }
        let axis = (high - low).imax();
        // The cut halves the work, not the count: a contact with a fixed
        // body or a surface reads and writes one body's block, one between
        // two grains two. (Cut at the median contact, the silo's thread
        // with the lower half waited for the other in 5 % of the step's
        // samples, 4 % with this cut.)
        self.keys.clear();
        self.keys.extend(
            cones
                .iter()
                .zip(points)
                .map(|(c, p)| (p[axis], c.span.count)),
        );
        let cut = weighted_median(&mut self.keys);
        let bit = |p: &Vector3<f64>| if p[axis] < cut { 1u8 } else { 2 };
        self.side.clear();
        self.side.resize(dof, 0);
        for (cone, p) in cones.iter().zip(points) {
            for b in &cone.span.blocks[..cone.span.count] {
                self.side[b.start] |= bit(p);
            }
        }
        let mut counts = [0usize; 3];
        self.permutation.clear();
        for (i, (cone, p)) in cones.iter().zip(points).enumerate() {
            let bit = bit(p);
            let alone = cone.span.blocks[..cone.span.count]
                .iter()
                .all(|b| self.side[b.start] == bit);
            let part = if alone { bit - 1 } else { 2 };
            counts[usize::from(part)] += 1;
            self.permutation.push((part, cone.contact, i as u32));
        }
        self.reorder(cones);
        self.ends = [counts[0], counts[0] + counts[1]];
        true
    }
}

/// The key at which the weights of the keys up to it, in increasing order,
/// first reach half of all the weights (quickselect, linear on average; a
/// sort of the 5,000-grain silo's contacts at every split cost as much as
/// a few visits to each). NaN keys sort last; an empty list gives 0.
fn weighted_median(keys: &mut [(f64, usize)]) -> f64 {
    let total: usize = keys.iter().map(|k| k.1).sum();
    let mut need = total.div_ceil(2);
    let mut part = keys;
    while !part.is_empty() {
        let middle = part.len() / 2;
        let (left, pivot, right) = part.select_nth_unstable_by(middle, |a, b| a.0.total_cmp(&b.0));
        let below: usize = left.iter().map(|k| k.1).sum();
        if below >= need && !left.is_empty() {
            part = left;
        } else if below + pivot.1 >= need {
            return pivot.0;
        } else {
            need -= below + pivot.1;
            part = right;
        }
    }
    0.0
}

/// The bodies' velocity count (6 in space, 3 in the plane) when `contacts`
/// are many enough to be split ([`SPLIT_MIN`]) and every block of theirs is
/// one body's, on the bodies' grid; 0 otherwise (then the solve works on
/// the velocity as it is).
fn padded_block(contacts: &[&crate::model::Contact], planar: bool) -> usize {
    let n = if planar { 3 } else { 6 };
    let on_grid = contacts.iter().all(|c| {
        c.jacobian
            .blocks()
            .iter()
            .all(|b| b.len == n && b.start % n == 0)
    });
    if contacts.len() >= SPLIT_MIN && on_grid {
        n
    } else {
        0
    }
}

/// The padded copy of `v`: body k's `block` velocities at k·[`PAD`].
fn pad(v: &DVector<f64>, block: usize, out: &mut Vec<f64>) {
    out.clear();
    out.resize(v.len() / block * PAD + PAD, 0.0);
    for (k, body) in v.as_slice().chunks_exact(block).enumerate() {
        out[k * PAD..k * PAD + block].copy_from_slice(body);
    }
}

/// Writes the padded `u` back into `v`.
fn unpad(u: &[f64], block: usize, v: &mut DVector<f64>) {
    for (k, body) in v.as_mut_slice().chunks_exact_mut(block).enumerate() {
        body.copy_from_slice(&u[k * PAD..k * PAD + block]);
    }
}

/// Where one contact's rows live in [`Workspace::arena`]: its rows n, t₁,
/// t₂ (n, t in the plane) on its blocks, one after the other (W, M⁻¹'s
/// diagonal, is read from its own velocity-sized vector when an impulse is
/// applied; a weighted copy of the rows doubled what a visit reads and
/// measured no faster). The sweeps read each contact from
/// one place, in the order they visit them, instead of from its Jacobian's
/// own allocation among all the candidates' (the 5,000-grain silo's sweeps,
/// whose candidates outnumber the contacts taking part ten to one, cost a
/// third as much).
#[derive(Debug, Clone, Copy)]
struct Span {
    offset: usize,
    blocks: [Block; 2],
    count: usize,
    width: usize,
    rows: usize,
    /// Which of the fixed-size kernels reads it (every block 6 long and three
    /// rows: a rigid body in space; 3 long and two rows: in the plane).
    shape: Shape,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Space,
    Plane,
    /// One row (a waiting contact's normal, [`Participation`]) on blocks
    /// of 6 and of 3.
    SpaceRow,
    PlaneRow,
    General,
}

impl Span {
    /// Copies rows 0..`rows` of `jac` to the end of `arena`.
    fn copy(jac: &ContactJacobian, rows: usize, arena: &mut Vec<f64>) -> Self {
        let offset = arena.len();
        let width = jac.width();
        for r in 0..rows {
            arena.extend_from_slice(jac.row(r));
        }
        let mut blocks = [jac.blocks()[0]; 2];
        blocks[..jac.blocks().len()].copy_from_slice(jac.blocks());
        let uniform = |len: usize| jac.blocks().iter().all(|b| b.len == len);
        let shape = match rows {
            3 if uniform(6) => Shape::Space,
            2 if uniform(3) => Shape::Plane,
            1 if uniform(6) => Shape::SpaceRow,
            1 if uniform(3) => Shape::PlaneRow,
            _ => Shape::General,
        };
        Self {
            offset,
            blocks,
            count: jac.blocks().len(),
            width,
            rows,
            shape,
        }
    }

    /// (J v) on its rows (0 for an absent second tangent), through a
    /// shared [`Velocity`].
    ///
    /// # Safety
    /// No other thread writes this contact's blocks during the call (for a
    /// [`Shape::General`] span: any part of the velocity).
    #[inline(always)]
    unsafe fn dots_at(&self, arena: &[f64], v: Velocity) -> Vector3<f64> {
        match self.shape {
            // SAFETY: the caller's.
            Shape::Space => unsafe { self.dots_fixed::<3, 6>(arena, v) },
            Shape::Plane => unsafe { self.dots_fixed::<2, 3>(arena, v) },
            Shape::SpaceRow => unsafe { self.dots_fixed::<1, 6>(arena, v) },
            Shape::PlaneRow => unsafe { self.dots_fixed::<1, 3>(arena, v) },
            Shape::General => {
                let mut out = Vector3::zeros();
                rows_dot(
                    &arena[self.offset..],
                    self.width,
                    &self.blocks[..self.count],
                    // SAFETY: the caller's.
                    unsafe { v.whole_ref() },
                    &mut out.as_mut_slice()[..self.rows],
                );
                out
            }
        }
    }

    /// [`Span::dots_at`] for R rows on blocks of N velocities: fixed-size
    /// slices the compiler unrolls (the silo's sweeps spent a third of their
    /// time in the general loops over blocks and rows).
    ///
    /// # Safety
    /// As [`Span::dots_at`].
    #[inline(always)]
    unsafe fn dots_fixed<const R: usize, const N: usize>(
        &self,
        arena: &[f64],
        v: Velocity,
    ) -> Vector3<f64> {
        let width = self.width;
        let rows = &arena[self.offset..self.offset + R * width];
        let mut out = Vector3::zeros();
        for (i, b) in self.blocks[..self.count].iter().enumerate() {
            // SAFETY: the caller's.
            let Some(part) = (unsafe { v.block_ref::<N>(b.start) }) else {
                continue;
            };
            for r in 0..R {
                let start = r * width + i * N;
                if let Ok(row) = <&[f64; N]>::try_from(&rows[start..start + N]) {
                    out[r] += row.iter().zip(part).map(|(a, x)| a * x).sum::<f64>();
                }
            }
        }
        out
    }

    /// v += W Jᵀ Δr, with `w` the diagonal of W, through a shared
    /// [`Velocity`].
    ///
    /// # Safety
    /// No other thread reads or writes this contact's blocks during the
    /// call (for a [`Shape::General`] span: any part of the velocity).
    #[inline(always)]
    unsafe fn add_at(&self, arena: &[f64], w: &[f64], delta: &Vector3<f64>, v: Velocity) {
        match self.shape {
            // SAFETY: the caller's.
            Shape::Space => unsafe { self.add_fixed::<3, 6>(arena, w, delta, v) },
            Shape::Plane => unsafe { self.add_fixed::<2, 3>(arena, w, delta, v) },
            Shape::SpaceRow => unsafe { self.add_fixed::<1, 6>(arena, w, delta, v) },
            Shape::PlaneRow => unsafe { self.add_fixed::<1, 3>(arena, w, delta, v) },
            Shape::General => {
                // SAFETY: the caller's.
                let v = unsafe { v.whole() };
                let mut at = 0;
                for b in &self.blocks[..self.count] {
                    let part = &mut v[b.range()];
                    let weights = &w[b.range()];
                    for r in 0..self.rows {
                        if delta[r] == 0.0 {
                            continue;
                        }
                        let start = self.offset + r * self.width + at;
                        let row = &arena[start..start + b.len];
                        for ((x, a), d) in part.iter_mut().zip(row).zip(weights) {
                            *x += delta[r] * (a * d);
                        }
                    }
                    at += b.len;
                }
            }
        }
    }

    /// [`Span::add_at`] for R rows on blocks of N velocities.
    ///
    /// # Safety
    /// As [`Span::add_at`].
    #[inline(always)]
    unsafe fn add_fixed<const R: usize, const N: usize>(
        &self,
        arena: &[f64],
        w: &[f64],
        delta: &Vector3<f64>,
        v: Velocity,
    ) {
        let width = self.width;
        let rows = &arena[self.offset..self.offset + R * width];
        for (i, b) in self.blocks[..self.count].iter().enumerate() {
            let Ok(weights) = <&[f64; N]>::try_from(&w[b.start..b.start + N]) else {
                continue;
            };
            let mut sum = [0.0; N];
            for r in 0..R {
                let start = r * width + i * N;
                if let Ok(row) = <&[f64; N]>::try_from(&rows[start..start + N]) {
                    for (s, a) in sum.iter_mut().zip(row) {
                        *s += delta[r] * a;
                    }
                }
            }
            // SAFETY: the caller's.
            let Some(part) = (unsafe { v.block::<N>(b.start) }) else {
                continue;
            };
            for ((x, s), d) in part.iter_mut().zip(sum).zip(weights) {
                *x += s * d;
            }
        }
    }
}

/// The velocity as the two halves of a sweep share it ([`Halves`]): each
/// visit borrows only its own contact's blocks, for the length of one
/// kernel, and the halves' contacts touch disjoint bodies.
#[derive(Debug, Clone, Copy)]
struct Velocity {
    ptr: *mut f64,
    len: usize,
    /// Laid out by [`pad`]: the body at velocity index s (a
    /// multiple of its N velocities) at s / N · [`PAD`].
    padded: bool,
}

// SAFETY: a `Velocity` is handed to the second thread only for the length
// of one join, while the vector it points to is borrowed mutably by the
// solve, and each side touches only the blocks of its own bodies.
unsafe impl Send for Velocity {}
unsafe impl Sync for Velocity {}

impl Velocity {
    fn of(v: &mut DVector<f64>) -> Self {
        let v = v.as_mut_slice();
        Self {
            ptr: v.as_mut_ptr(),
            len: v.len(),
            padded: false,
        }
    }

    /// The padded copy of [`pad`].
    fn padded(v: &mut [f64]) -> Self {
        Self {
            ptr: v.as_mut_ptr(),
            len: v.len(),
            padded: true,
        }
    }

    /// Where the block of N velocities at `start` lives.
    #[inline(always)]
    fn at<const N: usize>(self, start: usize) -> usize {
        if self.padded { start / N * PAD } else { start }
    }

    /// For reads only.
    fn reading(v: &DVector<f64>) -> Self {
        let v = v.as_slice();
        Self {
            ptr: v.as_ptr().cast_mut(),
            len: v.len(),
            padded: false,
        }
    }

    /// The N velocities from `start`, if they are in range.
    ///
    /// # Safety
    /// The vector is alive, and no other reference to these entries is in
    /// use while the result is.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    unsafe fn block<'a, const N: usize>(self, start: usize) -> Option<&'a mut [f64; N]> {
        let start = self.at::<N>(start);
        if start.checked_add(N)? > self.len {
            return None;
        }
        // SAFETY: in range (above); exclusive by the caller's promise.
        Some(unsafe { &mut *self.ptr.add(start).cast::<[f64; N]>() })
    }

    /// [`Velocity::block`] for reading.
    ///
    /// # Safety
    /// The vector is alive, and nothing writes these entries while the
    /// result is in use.
    #[inline(always)]
    unsafe fn block_ref<'a, const N: usize>(self, start: usize) -> Option<&'a [f64; N]> {
        let start = self.at::<N>(start);
        if start.checked_add(N)? > self.len {
            return None;
        }
        // SAFETY: in range (above); unwritten by the caller's promise.
        Some(unsafe { &*self.ptr.add(start).cast::<[f64; N]>() })
    }

    /// Every velocity, for reading.
    ///
    /// # Safety
    /// As [`Velocity::block_ref`], for the whole vector.
    unsafe fn whole_ref<'a>(self) -> &'a [f64] {
        debug_assert!(!self.padded, "a general span on the padded velocity");
        // SAFETY: the caller's.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Every velocity.
    ///
    /// # Safety
    /// As [`Velocity::block`], for the whole vector.
    #[allow(clippy::mut_from_ref)]
    unsafe fn whole<'a>(self) -> &'a mut [f64] {
        debug_assert!(!self.padded, "a general span on the padded velocity");
        // SAFETY: the caller's.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// ε of the module documentation at the current impulses and velocity,
/// over the contacts taking part.
fn cone_residual(
    cones: &mut [Cone],
    halves: &Halves,
    pair: Option<&PairThread>,
    arena: &[f64],
    v: Velocity,
) -> f64 {
    let [a, b, c] = halves.parts(cones);
    let work = !b.is_empty();
    // SAFETY: the velocity is only read during the call.
    let ((ea, sa), (eb, sb)) = both(
        pair,
        work,
        || unsafe { residual_sums(a, arena, v) },
        || unsafe { residual_sums(b, arena, v) },
    );
    // SAFETY: as above.
    let (ec, sc) = unsafe { residual_sums(c, arena, v) };
    let error = ea + eb + ec;
    let size = sa + sb + sc;
    let ratio = if size > 0.0 {
        (error / size).sqrt()
    } else {
        error.sqrt()
    };
    if ratio.is_finite() {
        ratio
    } else {
        f64::INFINITY
    }
}

/// Sweeps of the same drift in a row before [`Drift`] moves along it.
const DRIFT_REPEATS: usize = 5;

/// The longest period of a drift that [`Drift`] recognizes, in sweeps.
const DRIFT_PERIOD: usize = 4;

/// Two steps of the impulses are the same drift when every component
/// differs by at most this much of the step's largest.
const DRIFT_SAME: f64 = 1e-3;

/// A drift of the pyramid's sweeps: the impulses (c_n, β and λ of every
/// contact) changing by the same amount (within [`DRIFT_SAME`]) every p
/// sweeps (p ≤ [`DRIFT_PERIOD`]), [`DRIFT_REPEATS`] times in a row. On a
/// pile's boxes the sweeps meet such affine pieces of the Gauss–Seidel
/// map, where a visit undoes what the visits after it did one sweep
/// before, and the iterate walks by a fixed step (`pile.ron` at t = 0.125
/// s: 1.7e-12 of normal impulse a sweep, the residual unchanged to four
/// digits for 95,000 sweeps) towards the edge of the piece, where some
/// impulse, λ or μc_n − Σβ reaches zero and the active set changes.
/// [`Self::jump`] takes the walk to that edge in one move, as the sweeps
/// would after that many of them; the sweeps then go on from there, so the
/// end is the sweeps' own fixed point and the residual the same test
/// decides it. Measured on `pile.ron`'s first second (release, sweep limit
/// 100,000), without → with: at tolerance 1e-6 242,501 sweeps (32.5 s) →
/// 28,152 (5.1 s); at 1e-8 the sweep limit at t = 0.195 s → every step
/// solved, 65,645 sweeps (12.0 s); at 1e-10 the limit at t = 0.125 s →
/// every step solved, 250,565 sweeps (47.7 s); at the default 1e-4 over
/// 2 s 14,124 → 12,052 sweeps. With steps the same within 1e-6 instead of
/// 1e-3 the run at 1e-10 still stopped at t = 0.125 s (residual 2.2e-10,
/// the walk bending slightly); with periods up to 8, at t = 0.765 s.
#[derive(Default)]
struct Drift {
    /// The latest iterates, most recent first (at most 2 [`DRIFT_PERIOD`] +
    /// 1), each every contact's k + 2 numbers, inactive ones zero.
    history: Vec<Vec<f64>>,
    /// Sweeps in a row that showed a drift.
    repeats: usize,
}

impl Drift {
    /// Forgets the iterates (contacts joined, or a jump was taken).
    fn clear(&mut self) {
        self.history.clear();
        self.repeats = 0;
    }

    /// Records the iterate after a sweep; returns the drift per period
    /// once it has repeated [`DRIFT_REPEATS`] times.
    fn record(&mut self, locals: &[Local], active: &[bool]) -> Option<Vec<f64>> {
        let mut now = if self.history.len() > 2 * DRIFT_PERIOD {
            self.history.pop().unwrap_or_default()
        } else {
            Vec::new()
        };
        now.clear();
        for (l, &on) in locals.iter().zip(active) {
            if on {
                now.extend_from_slice(&l.z);
                now.push(l.lambda);
            } else {
                now.extend(std::iter::repeat_n(0.0, l.k + 2));
            }
        }
        self.history.insert(0, now);
        let h = &self.history;
        let found = (1..=DRIFT_PERIOD)
            .take_while(|&p| h.len() > 2 * p)
            .find_map(|p| {
                let step: Vec<f64> = h[0].iter().zip(&h[p]).map(|(a, b)| a - b).collect();
                let size = step.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
                let same = size > 0.0
                    && step
                        .iter()
                        .zip(h[p].iter().zip(&h[2 * p]))
                        .all(|(a, (b, c))| (a - (b - c)).abs() <= DRIFT_SAME * size);
                same.then_some(step)
            });
        self.repeats = if found.is_some() { self.repeats + 1 } else { 0 };
        found.filter(|_| self.repeats >= DRIFT_REPEATS)
    }

    /// Moves the impulses along `step` (a drift per period) as far as every
    /// impulse, λ and μc_n − Σβ stays non-negative, and the velocity with
    /// them, when that is more than one period. Components that change by
    /// less than 10⁻⁶ of the step's largest are rounding, not drift, and do
    /// not bound the move.
    fn jump(
        &mut self,
        step: &[f64],
        contacts: &[&crate::model::Contact],
        locals: &mut [Local],
        mu: &[f64],
        w: &[f64],
        velocity: &mut DVector<f64>,
    ) {
        let size = step.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        let floor = 1e-6 * size;
        let mut t = f64::INFINITY;
        let mut offset = 0;
        for (l, &mu) in locals.iter().zip(mu) {
            let width = l.k + 2;
            let d = &step[offset..offset + width];
            let z = l.z.iter().copied().chain(std::iter::once(l.lambda));
            for (z, &d) in z.zip(d) {
                if d < -floor {
                    t = t.min(z / -d);
                }
            }
            let zeta = mu * l.z[0] - l.z[1..].iter().sum::<f64>();
            let dzeta = mu * d[0] - d[1..=l.k].iter().sum::<f64>();
            if dzeta < -floor {
                t = t.min(zeta.max(0.0) / -dzeta);
            }
            offset += width;
        }
        self.clear();
        if !(t.is_finite() && t > 1.0) {
            return;
        }
        let mut offset = 0;
        let mut moved = Vec::new();
        for (c, l) in contacts.iter().zip(locals.iter_mut()) {
            let width = l.k + 2;
            let d = &step[offset..offset + width];
            moved.clear();
            for (z, &d) in l.z.iter_mut().zip(d) {
                let next = (*z + t * d).max(0.0);
                moved.push(next - *z);
                *z = next;
            }
            l.lambda = (l.lambda + t * d[l.k + 1]).max(0.0);
            add_impulse(&c.jacobian, &moved, 1.0, w, velocity);
            offset += width;
        }
    }
}

/// NSGS on the pyramid: the (k + 2)-unknown blocks of (29) by Lemke.
fn solve_pyramid(
    problem: &ContactProblem<'_>,
    w: &[f64],
    warm: &LastImpulses,
    limits: NsgsLimits,
    workspace: &mut Workspace,
) -> NsgsSolution {
    let contacts = problem.contacts;
    let layout = Layout::of(contacts);
    let starts = friction_starts(contacts);
    let mut part = Participation::of(
        problem,
        &mut workspace.waiting,
        &mut workspace.normals,
        &mut workspace.closes,
    );
    let mut locals: Vec<Local> = contacts
        .iter()
        .enumerate()
        .map(|(j, c)| {
            let jac = &c.jacobian;
            let k = jac.friction_count();
            // The block's order is (29)'s: β (rows 1..=k), c (row 0), λ.
            let row_of = |i: usize| if i < k { i + 1 } else { 0 };
            let mut block = DMatrix::zeros(k + 2, k + 2);
            for a in 0..=k {
                for b in 0..=k {
                    block[(a, b)] = jac.coupling(row_of(a), jac, row_of(b), w);
                }
            }
            for i in 0..k {
                block[(i, k + 1)] = 1.0;
                block[(k + 1, i)] = -1.0;
            }
            block[(k + 1, k)] = problem.mu[j];
            let diagonal = (0..=k).map(|r| jac.coupling(r, jac, r, w)).collect();
            let mut terms = vec![problem.normal_terms[j]; 1];
            terms.extend((0..k).map(|i| {
                problem
                    .friction_terms
                    .get(starts[j] + i)
                    .copied()
                    .unwrap_or(0.0)
            }));
            let z = if part.active[j] {
                warm_impulse(warm, c)
            } else {
                vec![0.0; k + 1]
            };
            Local {
                k,
                block,
                q: DVector::zeros(k + 2),
                diagonal,
                terms,
                z,
                lambda: 0.0,
            }
        })
        .collect();

    // v = v* + W J z for the starting impulses.
    let mut velocity = problem.free.clone();
    for (c, local) in contacts.iter().zip(&locals) {
        add_impulse(&c.jacobian, &local.z, 1.0, w, &mut velocity);
    }
    // As on the cone, contacts the warm start's velocity closes join before
    // the first sweep, from their last impulses ([`WARM_GROWTH_ROUNDS`]).
    let mut joined = Vec::new();
    for _ in 0..WARM_GROWTH_ROUNDS {
        part.grow(Velocity::reading(&velocity), &mut joined, None);
        if joined.is_empty() {
            break;
        }
        for j in joined.drain(..) {
            let c = contacts[j];
            locals[j].z = warm_impulse(warm, c);
            add_impulse(&c.jacobian, &locals[j].z, 1.0, w, &mut velocity);
        }
    }

    let mut status = LcpStatus::SweepLimit;
    let mut residual = f64::INFINITY;
    let mut sweeps = 0;
    let local_options = LemkeOptions::default();
    let mut drift = Drift::default();
    while sweeps < limits.max_sweeps {
        sweeps += 1;
        for ((c, local), _) in contacts
            .iter()
            .zip(locals.iter_mut())
            .zip(&part.active)
            .filter(|(_, on)| **on)
        {
            let jac = &c.jacobian;
            let k = local.k;
            // v⁻ʲ: the velocity without this contact's own impulse.
            add_impulse(jac, &local.z, -1.0, w, &mut velocity);
            let q = &mut local.q;
            for i in 0..k {
                q[i] = jac.dot(i + 1, &velocity) + local.terms[i + 1];
            }
            q[k] = jac.dot(0, &velocity) + local.terms[0];
            let solution = lcp::solve_dense(&local.block, q, &local_options);
            if let Ok(s) = solution
                && s.status == LcpStatus::Solved
            {
                local.z[0] = s.z[k].max(0.0);
                for i in 0..k {
                    local.z[i + 1] = s.z[i].max(0.0);
                }
                local.lambda = s.z[k + 1].max(0.0);
            }
            // A local failure (only from non-finite data) keeps the last
            // impulse; the residual reports it.
            add_impulse(jac, &local.z, 1.0, w, &mut velocity);
        }
        residual = natural_residual(problem, &locals, &part.active, &velocity);
        joined.clear();
        part.grow(Velocity::reading(&velocity), &mut joined, None);
        let grew = !joined.is_empty();
        if residual <= limits.tolerance && !grew {
            status = LcpStatus::Solved;
            break;
        }
        if grew {
            drift.clear();
        } else if let Some(step) = drift.record(&locals, &part.active) {
            drift.jump(&step, contacts, &mut locals, problem.mu, w, &mut velocity);
        }
    }
    if !residual.is_finite() {
        status = LcpStatus::NumericalFailure;
    }

    let mut z = DVector::zeros(layout.size());
    let mut wv = DVector::zeros(layout.size());
    for (j, (c, local)) in contacts.iter().zip(&locals).enumerate() {
        let (rows, zeta) = local_w(&c.jacobian, local, &velocity, problem.mu[j]);
        z[layout.normal(j)] = local.z[0];
        wv[layout.normal(j)] = rows[0];
        for i in 0..local.k {
            z[starts[j] + i] = local.z[i + 1];
            wv[starts[j] + i] = rows[i + 1];
        }
        z[layout.lambda(j)] = local.lambda;
        wv[layout.lambda(j)] = zeta;
    }
    NsgsSolution {
        status,
        residual,
        sweeps,
        z,
        w: wv,
        velocity_change: velocity - problem.free,
        active: part.result(),
    }
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

/// ρ of the module documentation.
fn natural_residual(
    problem: &ContactProblem<'_>,
    locals: &[Local],
    active: &[bool],
    velocity: &DVector<f64>,
) -> f64 {
    let mut worst: f64 = 0.0;
    let mut size: f64 = 0.0;
    for (j, (c, local)) in problem.contacts.iter().zip(locals).enumerate() {
        if !active[j] {
            continue;
        }
        let (rows, zeta) = local_w(&c.jacobian, local, velocity, problem.mu[j]);
        for (r, (&z, &wr)) in local.z.iter().zip(&rows).enumerate() {
            let d = local.diagonal[r].max(f64::MIN_POSITIVE);
            worst = worst.max(z.min(wr / d).abs());
            size = size.max(z.abs());
        }
        let dn = local.diagonal[0].max(f64::MIN_POSITIVE);
        worst = worst.max((local.lambda / dn).min(zeta).abs());
        if !(worst.is_finite() && size.is_finite()) {
            return f64::INFINITY;
        }
    }
    if size == 0.0 {
        // No impulse anywhere: ρ is the largest approach velocity, as impulse.
        return worst;
    }
    worst / size
}

#[cfg(test)]
mod tests {
    use super::weighted_median;

    /// The quickselect against a sorted scan: the first key in increasing
    /// order at which the running weight reaches half the total, on lists
    /// with repeated keys and weights 1 and 2 (the halves' one- and
    /// two-block contacts).
    #[test]
    fn weighted_median_is_the_sorted_scans() {
        let mut seed = 12_345u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            seed >> 33
        };
        for len in 1..200 {
            let keys: Vec<(f64, usize)> = (0..len)
                .map(|_| ((next() % 50) as f64 * 0.1, 1 + (next() % 2) as usize))
                .collect();
            let mut sorted = keys.clone();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            let total: usize = sorted.iter().map(|k| k.1).sum();
            let mut running = 0;
            let expected = sorted
                .iter()
                .find(|k| {
                    running += k.1;
                    2 * running >= total
                })
                .map(|k| k.0);
            let mut work = keys.clone();
            assert_eq!(Some(weighted_median(&mut work)), expected, "{keys:?}");
        }
        assert_eq!(weighted_median(&mut []), 0.0);
    }
}
