//! NSGS on Coulomb's circular cone: each contact's three unknowns against
//! its 3 × 3 Delassus block, solved exactly by [`super::coulomb_cone`], the
//! sweeps combined by Anderson acceleration, and the contacts that join
//! during the sweeps (Moreau–Jean's activation).

use super::anderson::{Anderson, Companion, CompanionPiece};
use super::coulomb_cone;
use super::halves::{Halves, PROBE_SWEEPS, SPLIT_MIN, padded_block};
use super::kernels::{Cone, PAD, Shape, Span, Velocity, move_to, pad, residual_sums, sweep, unpad};
use super::{NsgsSolution, PROXIMAL, Workspace};
use crate::lcp::LcpStatus;
use crate::model::ContactJacobian;
use crate::pair_thread::{self, PairThread, both};
use crate::solver::options::NsgsOptions;
use crate::solver::problem::{Activation, ContactProblem, Layout, friction_starts};
use crate::solver::warm::LastImpulses;
use nalgebra::{DVector, Matrix3, Vector3};
use std::time::{Duration, Instant};

/// The full residual is computed at least every this many sweeps, besides
/// when the light error predicts convergence and at the sweep limit: it
/// costs more than a sweep, and while the residual falls steadily the
/// prediction finds its end (the 1,000-grain silo's solves: 2–3 checks
/// each instead of 10 at every 8 sweeps, for as many sweeps). The checks
/// also keep the best iterate for a solve that reaches the limit.
pub(super) const FULL_RESIDUAL_EVERY: usize = 32;

/// Waiting contacts are checked for joining every this many sweeps (it
/// reads their rows alone, not the residual's).
pub(super) const JOIN_EVERY: usize = 8;

/// Under [`Activation`], contacts join before the first sweep too, at the
/// velocity of the warm start (each with its own last impulse), for as many
/// rounds as contacts keep joining, at most this many: a grain resting on
/// one whose gap at q^M came out a hair positive approaches it at h·g under
/// the others' warm impulses, and joined only at a residual check after 8
/// sweeps, then the next ones at the checks after (the 1,000-grain silo's
/// steps had 1,300 contacts at the first check and 1,880 at the last, 20
/// checks later). Joining them first saves about a third of the sweeps of
/// the granular scenes and leaves their overlaps within a millimetre; the
/// silo's steps take 1–5 rounds, at most 10.
pub(super) const WARM_GROWTH_ROUNDS: usize = 8;

/// A contact not taking part yet ([`Participation`]): its normal row, a
/// [`Span`] of one row in `normals`, and what bounds that row's speed by
/// its bodies' speeds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Waiting {
    pub(super) contact: usize,
    normal: Span,
    /// The norms of the row's linear and angular parts on each block (the
    /// second block's zero on a contact with one body); NaN on a row not of
    /// rigid bodies' blocks, which is always read.
    levers: [f64; 4],
    /// Each block's place in [`Participation`]'s `movers`.
    bodies: [u32; 2],
    /// g + depth: how far the predicted gap may fall before the contact
    /// joins.
    room: f64,
}

impl Waiting {
    /// Contact `contact`, whose Jacobian is `jac`, waiting with `room`:
    /// its normal row copied to the end of `normals`, its bodies' blocks
    /// added to `movers` (`place`: each block's place there, by first
    /// index, `u32::MAX` where none).
    fn of(
        contact: usize,
        jac: &ContactJacobian,
        room: f64,
        normals: &mut Vec<f64>,
        movers: &mut Vec<(usize, usize)>,
        place: &mut [u32],
    ) -> Self {
        let normal = Span::copy(jac, 1, normals);
        let mut levers = [f64::NAN; 4];
        let mut bodies = [u32::MAX; 2];
        let linear = match normal.shape {
            Shape::SpaceRow => Some((6, 3)),
            Shape::PlaneRow => Some((3, 2)),
            _ => None,
        };
        if let Some((len, lin)) = linear {
            let row = &normals[normal.offset..normal.offset + normal.width];
            levers = [0.0; 4];
            for (i, block) in normal.blocks[..normal.count].iter().enumerate() {
                let part = &row[i * len..(i + 1) * len];
                levers[2 * i] = norm(&part[..lin]);
                levers[2 * i + 1] = norm(&part[lin..]);
                let Some(slot) = place.get_mut(block.start) else {
                    levers = [f64::NAN; 4];
                    break;
                };
                if *slot == u32::MAX {
                    *slot = movers.len() as u32;
                    movers.push((block.start, len));
                }
                bodies[i] = *slot;
            }
            if normal.count == 1 {
                bodies[1] = bodies[0];
            }
        }
        Self {
            contact,
            normal,
            levers,
            bodies,
            room,
        }
    }

    /// An upper bound on |nᵀv| from the bodies' `speeds` (‖linear‖,
    /// ‖angular‖ by mover), by Cauchy–Schwarz on each part; NaN when there
    /// is none.
    fn bound(&self, speeds: &[[f64; 2]]) -> f64 {
        let [a, b] = self.bodies.map(|i| speeds.get(i as usize).copied());
        match (a, b) {
            (Some(a), Some(b)) => {
                self.levers[0] * a[0]
                    + self.levers[1] * a[1]
                    + self.levers[2] * b[0]
                    + self.levers[3] * b[1]
            }
            _ => f64::NAN,
        }
    }
}

/// The contacts taking part ([`Activation`]).
pub(super) struct Participation<'a, 'w> {
    pub(super) active: Vec<bool>,
    pub(super) rule: Option<Activation<'a>>,
    /// The contacts not taking part yet, each with its normal row copied
    /// into `normals` ([`Span`] of one row): what a check reads, in one
    /// place and in the order checked, instead of in each candidate's own
    /// Jacobian allocation (the 5,000-grain silo, with ten candidates for
    /// every contact taking part, spent a sixth of its step reading them).
    pub(super) waiting: &'w mut Vec<Waiting>,
    pub(super) normals: &'w mut Vec<f64>,
    /// Whether each waiting contact closes, at a check.
    pub(super) closes: &'w mut Vec<bool>,
    /// The rigid bodies' blocks that waiting rows read (first index and
    /// velocities in the block: 6 in space, 3 in the plane), and their speeds
    /// (‖linear‖, ‖angular‖) at a check: a row whose bound on its speed
    /// cannot close its gap within the lead is not read.
    pub(super) movers: &'w mut Vec<(usize, usize)>,
    pub(super) speeds: &'w mut Vec<[f64; 2]>,
}

/// Buffers of [`Participation`], kept between solves.
#[derive(Debug, Clone, Default)]
pub(crate) struct WaitingBuffers {
    pub(super) waiting: Vec<Waiting>,
    pub(super) normals: Vec<f64>,
    pub(super) closes: Vec<bool>,
    pub(super) movers: Vec<(usize, usize)>,
    pub(super) speeds: Vec<[f64; 2]>,
    /// Each block's place in `movers`, by first index, while they are made.
    place: Vec<u32>,
}

impl<'a, 'w> Participation<'a, 'w> {
    /// The contacts taking part at the start, with `buffers` (kept between
    /// steps) as storage.
    pub(super) fn of(problem: &ContactProblem<'a>, buffers: &'w mut WaitingBuffers) -> Self {
        let n = problem.contacts.len();
        let WaitingBuffers {
            waiting,
            normals,
            closes,
            movers,
            speeds,
            place,
        } = buffers;
        waiting.clear();
        normals.clear();
        movers.clear();
        place.clear();
        let Some(rule) = problem.activation else {
            return Self {
                active: vec![true; n],
                rule: None,
                waiting,
                normals,
                closes,
                movers,
                speeds,
            };
        };
        place.resize(problem.dof, u32::MAX);
        for (j, c) in problem.contacts.iter().enumerate() {
            if rule.initially[j] {
                continue;
            }
            let room = rule.gaps[j] + rule.depth;
            waiting.push(Waiting::of(j, &c.jacobian, room, normals, movers, place));
        }
        Self {
            active: rule.initially.to_vec(),
            rule: Some(rule),
            waiting,
            normals,
            closes,
            movers,
            speeds,
        }
    }

    /// At a residual check: activates every contact the velocity `u` would
    /// close (module documentation of [`Activation`]) and appends it to
    /// `joined`. A row is read only when its bodies' speeds could close its
    /// gap within the lead ([`Waiting::bound`]); the others are not closed
    /// by the exact test either.
    /// The rows are read in two halves, on two threads when there is a
    /// `pair` and enough of them.
    pub(super) fn grow(&mut self, v: Velocity, joined: &mut Vec<usize>, pair: Option<&PairThread>) {
        let Some(rule) = self.rule else {
            return;
        };
        self.speeds.clear();
        self.speeds.extend(
            self.movers
                .iter()
                .map(|&(start, len)| speeds_of(v, start, len)),
        );
        let (normals, closes, speeds) = (&*self.normals, &mut *self.closes, &*self.speeds);
        let n = self.waiting.len();
        closes.clear();
        closes.resize(n, false);
        // Within a relative 1e-9 of the bound the exact test decides: the
        // rounding of the row's dot product and of the norms is far below.
        let reach = rule.lead.abs() * (1.0 + 1e-9);
        let check = |waiting: &[Waiting], out: &mut [bool]| {
            for (w, closes) in waiting.iter().zip(out) {
                if reach * w.bound(speeds) < w.room {
                    continue;
                }
                // SAFETY: the velocity is only read during the call.
                let speed = unsafe { w.normal.dots_at(normals, v) }.x;
                *closes = rule.gaps[w.contact] + rule.lead * speed < -rule.depth;
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
        self.waiting.retain(|w| {
            let closes = flags.next().copied().unwrap_or(false);
            if closes {
                active[w.contact] = true;
                joined.push(w.contact);
            }
            !closes
        });
    }

    pub(super) fn result(self) -> Option<Vec<bool>> {
        self.rule.map(|_| self.active)
    }
}

/// The Euclidean norm of `xs`, as the root of the sum of squares rather
/// than through `hypot` (as in `coulomb_cone::project`): glibc's `hypot`
/// costs 1–1.5 % of a granular step in the solution's slips, and these
/// speeds and impulses are far from where the squares overflow.
fn norm(xs: &[f64]) -> f64 {
    xs.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// (‖linear‖, ‖angular‖) of the body whose `len` velocities (6 in space,
/// 3 in the plane) start at `start`; infinite when `v` has no such block.
fn speeds_of(v: Velocity, start: usize, len: usize) -> [f64; 2] {
    let square = |x: f64| x * x;
    // SAFETY: the velocity is only read while a check runs.
    let speeds = if len == 6 {
        unsafe { v.block_ref::<6>(start) }.map(|b| {
            [
                (square(b[0]) + square(b[1]) + square(b[2])).sqrt(),
                (square(b[3]) + square(b[4]) + square(b[5])).sqrt(),
            ]
        })
    } else {
        unsafe { v.block_ref::<3>(start) }
            .map(|b| [(square(b[0]) + square(b[1])).sqrt(), b[2].abs()])
    };
    speeds.unwrap_or([f64::INFINITY; 2])
}

/// The Delassus block of rows 0..3 (n, t₁, t₂) of one contact; in the plane
/// of rows 0..2 (n, t), with 1 for the absent second tangent.
pub(super) fn delassus(jac: &ContactJacobian, w: &[f64], planar: bool) -> Matrix3<f64> {
    let mut block = Matrix3::zeros();
    let mut fill = |upper: &[&[f64]]| {
        for (a, row) in upper.iter().enumerate() {
            for (b, &value) in row.iter().enumerate().skip(a) {
                block[(a, b)] = value;
                block[(b, a)] = value;
            }
        }
    };
    if planar {
        let [n, t] = jac.self_coupling::<2>(w);
        fill(&[&n, &t]);
        block[(2, 2)] = 1.0;
    } else {
        let [n, t1, t2] = jac.self_coupling::<3>(w);
        fill(&[&n, &t1, &t2]);
    }
    block
}

/// The iterate with the smallest residual a solve has seen, at the full
/// checks: what a solve that reaches its sweep limit returns (each taking
/// part contact's impulse, and the velocity they give, in the solve's own
/// layout). A contact that joined after it returns to no impulse, as the
/// velocity kept does not hold one.
struct Best {
    residual: f64,
    impulses: Vec<(usize, Vector3<f64>)>,
    velocity: Vec<f64>,
}

impl Default for Best {
    fn default() -> Self {
        Self {
            residual: f64::INFINITY,
            impulses: Vec::new(),
            velocity: Vec::new(),
        }
    }
}

impl Best {
    fn keep(&mut self, residual: f64, cones: &[Cone], v: Velocity) {
        self.residual = residual;
        self.impulses.clear();
        self.impulses.extend(cones.iter().map(|c| (c.contact, c.r)));
        self.velocity.clear();
        // SAFETY: one thread, between sweeps; `v` is the solve's velocity.
        self.velocity.extend_from_slice(unsafe { v.storage() });
    }

    fn restore(&self, cones: &mut [Cone], contacts: usize, v: Velocity) {
        let mut cone_of = vec![usize::MAX; contacts];
        for (i, cone) in cones.iter_mut().enumerate() {
            cone_of[cone.contact] = i;
            cone.r = Vector3::zeros();
        }
        for &(contact, r) in &self.impulses {
            if let Some(cone) = cones.get_mut(cone_of[contact]) {
                cone.r = r;
            }
        }
        // SAFETY: one thread, after the sweeps; `v` is the solve's velocity.
        unsafe { v.storage() }.copy_from_slice(&self.velocity);
    }
}

/// Forgets the acceleration's history for `cones` contacts, and says
/// whether the velocity follows its combinations through the
/// [`Companion`] (a pass over the velocity's `storage` entries) rather
/// than through the contacts' rows (a pass over the `arena`'s): whichever
/// reads fewer.
fn restart(
    anderson: &mut Anderson,
    companion: &mut Companion,
    cones: usize,
    arena: usize,
    v: Velocity,
) -> bool {
    anderson.reset(3 * cones);
    let direct = anderson.memory() > 0 && v.len <= arena;
    if direct {
        companion.reset(anderson, v.len);
    }
    direct
}

/// One of the [`Companion`]'s passes over the velocity `v`, its two halves
/// on the two threads when there is a `pair` and `work` for both, cut on
/// a whole cache line of [`PAD`] entries (a padded body's).
///
/// # Safety
/// Nothing else reads or writes `v` during the call.
unsafe fn on_velocity(
    companion: &mut Companion,
    v: Velocity,
    pair: Option<&PairThread>,
    work: bool,
    pass: impl Fn(&mut CompanionPiece<'_>) + Sync,
) {
    // SAFETY: the caller's.
    let y = unsafe { v.storage() };
    let cut = y.len() / 2 / PAD * PAD;
    let [mut a, mut b] = companion.pieces(y, cut);
    both(pair, work, || pass(&mut a), || pass(&mut b));
}

/// Each cone's impulse set to its three entries of `next`, in order, the
/// velocity left alone.
fn set_impulses(cones: &mut [Cone], next: &[f64]) {
    for (cone, next) in cones.iter_mut().zip(next.chunks_exact(3)) {
        cone.r = Vector3::new(next[0], next[1], next[2]);
    }
}

/// NSGS on the circular cone (module documentation).
pub(super) fn solve_cone(
    problem: &ContactProblem<'_>,
    w: &[f64],
    warm: &LastImpulses,
    limits: NsgsOptions,
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
        arena,
        anderson,
        companion,
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
    let mut part = Participation::of(problem, waiting);
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
    halves.split(cones, contacts, problem.dof, block, &problem.up);

    let mut status = LcpStatus::SweepLimit;
    let mut residual = f64::INFINITY;
    let mut sweeps = 0;
    let memory = limits.acceleration;
    if anderson.memory() != memory {
        *anderson = Anderson::new(memory);
    }
    let mut direct = restart(anderson, companion, cones.len(), arena.len(), v);
    let mut best = Best::default();
    // ε over the light error at the last full check: the light error times
    // it predicts ε, and ε is computed when that prediction meets the
    // tolerance ([`FULL_RESIDUAL_EVERY`] and the sweep limit apart).
    let mut ratio = 1.0;
    while sweeps < limits.max_sweeps && !crate::lcp::budget::cancelled() {
        sweeps += 1;
        // One fixed order, the problem's (the broad phase's), in the parts
        // of [`Halves`]: symmetric Gauss–Seidel takes 16–29 % more sweeps
        // on the granular scenes, the reversed order leaves deeper overlaps.
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
        if direct {
            // SAFETY: between sweeps; `v` is the solve's velocity.
            unsafe { on_velocity(companion, v, pair, work, |y| y.record(&plan)) };
        }
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
        let check = light * ratio <= limits.residual_tolerance
            || sweeps % FULL_RESIDUAL_EVERY == 0
            || sweeps == limits.max_sweeps
            || !light.is_finite();
        let join = sweeps % JOIN_EVERY == 0;
        if check || join {
            if check {
                residual = cone_residual(cones, halves, pair, arena, v);
                if light > 0.0 && residual.is_finite() {
                    ratio = residual / light;
                }
                if residual < best.residual {
                    best.keep(residual, cones, v);
                }
            }
            let converged = check && residual <= limits.residual_tolerance;
            // Contacts join every [`JOIN_EVERY`] sweeps (and at
            // convergence), not only once the residual is met: a grain's
            // load then travels through its new contacts in the same
            // sweeps (the 1,000-grain silo: 240 sweeps a step over its
            // first 0.5 s instead of 601 in restarted rounds).
            if join || converged {
                part.grow(v, &mut joined, pair);
            }
            let grew = !joined.is_empty();
            add_cones(&mut joined, cones, arena);
            if grew {
                // Joined contacts take their place in the sweeps' order
                // (from the lowest up, [`Halves::split`]), not last.
                halves.split(cones, contacts, problem.dof, block, &problem.up);
            }
            if converged && !grew {
                status = LcpStatus::Solved;
                break;
            }
            if check && !residual.is_finite() {
                break;
            }
            if grew {
                direct = restart(anderson, companion, cones.len(), arena.len(), v);
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
                // Each part's cones take the combined impulses; the velocity
                // follows them through their rows, or afterwards as the
                // same combination of the last sweeps' velocities.
                let follow = |cones: &mut [Cone], next: &[f64]| {
                    if direct {
                        set_impulses(cones, next);
                    } else {
                        // SAFETY: as the sweep's (the third part alone).
                        unsafe { move_to(cones, next, arena, w, v) };
                    }
                };
                both(
                    pair,
                    work,
                    || {
                        pa.second_pass(&step);
                        follow(a, pa.next());
                    },
                    || {
                        pb.second_pass(&step);
                        follow(b, pb.next());
                    },
                );
                pc.second_pass(&step);
                follow(c, pc.next());
                if direct {
                    // SAFETY: between sweeps; `v` is the solve's velocity.
                    unsafe { on_velocity(companion, v, pair, work, |y| y.mix(&step)) };
                }
            }
        }
    }
    if status == LcpStatus::SweepLimit && best.residual < residual {
        best.restore(cones, contacts.len(), v);
        residual = best.residual;
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
        let slip = norm(&[u.y, u.z]);
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
        wv[layout.lambda(j)] = mu * r.x - norm(&[r.y, r.z]);
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

/// ε of the module documentation at the current impulses and velocity,
/// over the contacts taking part.
pub(super) fn cone_residual(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Block;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    /// The bound a waiting contact is skipped by is at least |nᵀv|, on
    /// random rows of one and two rigid bodies in space and in the plane,
    /// on the padded velocity and the plain one, with spins up to a
    /// thousand times the linear speeds (where a bound on the whole block
    /// would be useless).
    #[test]
    fn a_waiting_rows_bound_is_never_below_its_speed() {
        let mut rng = StdRng::seed_from_u64(99);
        let mut next = move || rng.random_range(-1.0..1.0);
        for (len, bodies) in [(6, 5), (3, 5)] {
            let dof = len * bodies;
            for trial in 0..400 {
                let a = trial % bodies;
                let b = (a + 1 + trial / bodies % (bodies - 1)) % bodies;
                let blocks = if trial % 3 == 0 {
                    vec![Block {
                        start: a * len,
                        len,
                    }]
                } else {
                    vec![
                        Block {
                            start: a * len,
                            len,
                        },
                        Block {
                            start: b * len,
                            len,
                        },
                    ]
                };
                let mut jac = ContactJacobian::zeros(&blocks, 2);
                for x in jac.row_mut(0) {
                    *x = next();
                }
                let spin = 10f64.powi((trial % 4) as i32);
                let v = DVector::from_fn(dof, |i, _| {
                    next() * if i % len >= len / 2 { spin } else { 1.0 }
                });
                let (mut normals, mut movers) = (Vec::new(), Vec::new());
                let mut place = vec![u32::MAX; dof];
                let w = Waiting::of(0, &jac, 1.0, &mut normals, &mut movers, &mut place);
                let mut padded = Vec::new();
                pad(&v, len, &mut padded);
                let mut plain = v.clone();
                for velocity in [Velocity::padded(&mut padded), Velocity::of(&mut plain)] {
                    let speeds: Vec<[f64; 2]> = movers
                        .iter()
                        .map(|&(start, len)| speeds_of(velocity, start, len))
                        .collect();
                    let bound = w.bound(&speeds);
                    // SAFETY: one thread.
                    let exact = unsafe { w.normal.dots_at(&normals, velocity) }.x;
                    assert!(bound.is_finite(), "trial {trial}: a rigid row has a bound");
                    assert!(exact.abs() <= bound, "trial {trial}: |{exact}| > {bound}");
                    assert!(
                        (exact - jac.dot(0, &v)).abs() <= 1e-12 * bound,
                        "trial {trial}: the row read is the Jacobian's"
                    );
                }
            }
        }
    }
}
