//! The broad phase: which body pairs can touch within a margin, by sweep and
//! prune on world-aligned bounding boxes, and the work space a search keeps
//! between calls ([`BroadPhase`]).

use super::found::Found;
use super::margin::Margin;
use super::pair_memo::KeptPairs;
use super::parallel;
use super::pose::Pose;
use crate::geometry::{PairContact, Shape};
use crate::model::{ContactId, Dimension, RigidSystem};
use crate::pair_thread::both;
use nalgebra::{UnitQuaternion, Vector3};

/// The broad phase: the body pairs (i, j), i < j, whose bounding spheres
/// (centre, radius) come within `margin` of each other on every axis, by
/// sweep and prune along the axis of largest spread. Sorting costs
/// O(N log N); the sweep visits only pairs whose intervals overlap on that
/// axis. Returned sorted, so the contacts come out in the same order as from
/// an all-pairs loop.
pub fn candidate_pairs(
    spheres: &[(Vector3<f64>, f64)],
    margin: f64,
    dimension: Dimension,
) -> Vec<(usize, usize)> {
    let boxes: Vec<_> = spheres
        .iter()
        .map(|&(c, r)| (c, Vector3::repeat(r)))
        .collect();
    let mut pairs = Vec::new();
    candidate_pairs_into(
        &boxes,
        margin,
        dimension,
        &mut SweepSpace::default(),
        &mut pairs,
        1,
    );
    pairs
}

/// The broad phase's work space, kept between searches.
#[derive(Debug, Clone, Default)]
pub struct SweepSpace {
    /// Bodies sorted along the sweep axis, with their boxes' lower ends
    /// (the plain sweep).
    order: Vec<(f64, usize)>,
    /// Each small body's row (its cells across the sweep axis), its box's
    /// lower end along the axis (as [`ordered`] bits, which sort as
    /// `f64::total_cmp` orders the floats) and its index, sorted.
    cells: Vec<(i64, i64, i64, usize)>,
    /// The rows: cell indices and their range in `cells`.
    rows: Vec<(i64, i64, usize, usize)>,
    /// Bodies too large for a row, tested against the rows they reach.
    large: Vec<usize>,
    /// Whether each body is in `large`.
    is_large: Vec<bool>,
    /// The small boxes in the rows' order ([`Slot`]).
    slots: Vec<Slot>,
    /// The large bodies sorted by their boxes' lower ends along the axis.
    large_order: Vec<(f64, usize)>,
    /// Half extents across the sweep axis, for the median.
    extents: Vec<f64>,
    /// The second thread's pairs, and the two halves merged.
    pairs_b: Vec<(usize, usize)>,
    merged: Vec<(usize, usize)>,
    /// Each thread's work space for sorting its pairs ([`PairSort`]).
    sort: PairSort,
    sort_b: PairSort,
}

/// A small box in a row of the sweep: its centre and half extents, m, its
/// lower end along the sweep axis with the pad, and its body; one cache
/// line each.
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(64))]
struct Slot {
    c: [f64; 3],
    h: [f64; 3],
    lo: f64,
    body: usize,
}

/// The work space of [`sort_pairs`]: the counts' starts and fill, and the
/// pairs after the first pass.
#[derive(Debug, Clone, Default)]
struct PairSort {
    starts: Vec<usize>,
    next: Vec<usize>,
    sorted: Vec<(usize, usize)>,
}

/// The broad phase on world-aligned boxes (centre, half extents, m): the
/// pairs (i, j), i < j, whose boxes come within `margin` of each other on
/// every axis, into `pairs` (replaced, sorted), with `space` as work space.
///
/// Sweep and prune along the axis of largest spread, in rows: the plane
/// across that axis is cut into square cells as wide as the widest small
/// box plus the margin, every small box goes to the row (column of cells
/// along the axis) of its centre, and each row is swept against itself and
/// its four neighbours ahead, two sorted lists at a time. Two boxes that
/// come within the margin across the axis have centres at most a cell
/// apart, so every pair is found once. A box more than twice the
/// median's extent across the axis (a silo's wall, a table) is large: it
/// is tested against the small boxes of the rows it reaches, from the
/// lowest lower end along the axis that can still meet it, and the large
/// boxes against each other by the plain sweep. A sweep along one axis
/// alone visits every body in a slab as wide as a grain (a few hundred in
/// the 5,000-grain silo's column). When more than a quarter of the boxes
/// are large (a pile of mixed bodies), or there are few boxes, the plain
/// sweep along the axis is used. With `threads` 2 and at least
/// [`PARALLEL_BODIES`] boxes, two threads sweep the rows of half the small
/// boxes each and their sorted pairs are merged: the same list.
///
/// The small boxes are read in the rows' order from copies, one cache line
/// each ([`Slot`]), and a pair's test decides whether it stays written
/// instead of branching: the test passes about half the time, and a
/// branch on it is mispredicted as often.
pub fn candidate_pairs_into(
    boxes: &[(Vector3<f64>, Vector3<f64>)],
    margin: f64,
    dimension: Dimension,
    space: &mut SweepSpace,
    pairs: &mut Vec<(usize, usize)>,
    threads: usize,
) {
    pairs.clear();
    let axes = axes(dimension);
    let n = boxes.len();
    if n < 2 {
        return;
    }
    // The axis along which the centres spread most separates the most pairs.
    let mean = boxes.iter().fold(Vector3::zeros(), |s, (c, _)| s + c) / n as f64;
    let spread = boxes
        .iter()
        .fold(Vector3::zeros(), |s: Vector3<f64>, (c, _)| {
            s + (c - mean).component_mul(&(c - mean))
        });
    let axis = (0..axes)
        .max_by(|&a, &b| spread[a].total_cmp(&spread[b]))
        .unwrap_or(0);
    let pad = 0.5 * margin.max(0.0);
    let apart = |a: usize, b: usize| boxes_apart(boxes, a, b, pad, axes);
    // Across the axis: one other axis in the plane, two in space.
    let across = [(axis + 1) % axes, (axis + 2) % axes];
    let across = &across[..axes - 1];
    let extent = |i: usize| across.iter().fold(0.0_f64, |m, &x| m.max(boxes[i].1[x]));
    space.extents.clear();
    space.extents.extend((0..n).map(extent));
    let middle = n / 2;
    let median = *space
        .extents
        .select_nth_unstable_by(middle, f64::total_cmp)
        .1;
    let limit = 2.0 * median;
    // Non-finite boxes are large too: tested against every other, they are
    // left to the narrow phase, which rejects them.
    let finite = |i: usize| {
        let (c, h) = boxes[i];
        c.iter().chain(h.iter()).all(|x| x.is_finite())
    };
    let small = |i: usize| extent(i) <= limit && finite(i);
    space.is_large.clear();
    space.is_large.extend((0..n).map(|i| !small(i)));
    space.large.clear();
    space.large.extend((0..n).filter(|&i| space.is_large[i]));
    let widest = (0..n)
        .filter(|&i| !space.is_large[i])
        .fold(0.0_f64, |m, i| m.max(extent(i)));
    let cell = 2.0 * (widest + pad);
    let large = space.large.len();
    if n < 8 || large > n / 4 || !(cell > 0.0 && cell.is_finite()) {
        sweep_along(boxes, axis, pad, &apart, &mut space.order, pairs);
        pairs.sort_unstable();
        return;
    }
    let index = |x: f64| (x / cell).floor() as i64;
    space.cells.clear();
    space
        .cells
        .extend((0..n).filter(|&i| !space.is_large[i]).map(|i| {
            let (c, h) = boxes[i];
            let second = across.get(1).map_or(0, |&x| index(c[x]));
            (
                index(c[across[0]]),
                second,
                ordered(c[axis] - h[axis] - pad),
                i,
            )
        }));
    space.cells.sort_unstable();
    space.rows.clear();
    let mut start = 0;
    for k in 1..=space.cells.len() {
        let (r, s) = (space.cells[start].0, space.cells[start].1);
        if k == space.cells.len() || (space.cells[k].0, space.cells[k].1) != (r, s) {
            space.rows.push((r, s, start, k));
            start = k;
        }
    }
    // The small boxes in the rows' order, each on a cache line of its own:
    // the sweep reads them in that order.
    space.slots.clear();
    space
        .slots
        .extend(space.cells.iter().map(|&(_, _, _, body)| {
            let (c, h) = boxes[body];
            Slot {
                c: c.into(),
                h: h.into(),
                lo: c[axis] - h[axis] - pad,
                body,
            }
        }));
    // The large boxes by their lower ends along the axis, for their sweep
    // among themselves; and how far a small box reaches along it.
    space.large_order.clear();
    space.large_order.extend(
        space
            .large
            .iter()
            .filter(|&&i| finite(i))
            .map(|&i| (boxes[i].0[axis] - boxes[i].1[axis] - pad, i)),
    );
    space
        .large_order
        .sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let longest = space.slots.iter().fold(0.0_f64, |m, s| m.max(s.h[axis]));
    let SweepSpace {
        slots,
        rows,
        large,
        large_order,
        pairs_b,
        merged,
        sort,
        sort_b,
        ..
    } = space;
    let (slots, rows, large, large_order) = (&*slots, &*rows, &*large, &*large_order);
    // Whether two boxes (centre, half extents) come within the margin on
    // every axis: the negation of [`boxes_apart`] for finite boxes. Without
    // a branch on each axis's test, which passes about half the time in a
    // row (a branch on it is mispredicted as often).
    let planar = axes < 3;
    let meets = |ca: &[f64; 3], ha: &[f64; 3], cb: &[f64; 3], hb: &[f64; 3]| {
        let within = |x: usize| (ca[x] - cb[x]).abs() <= ha[x] + hb[x] + 2.0 * pad;
        within(0) & within(1) & (planar | within(2))
    };
    // The rows `rows[part]` against themselves and their neighbours ahead,
    // and, with `large_too`, the large boxes against every body, into
    // `pairs`, sorted.
    let sweep_rows = |part: std::ops::Range<usize>,
                      large_too: bool,
                      pairs: &mut Vec<(usize, usize)>,
                      sort: &mut PairSort| {
        // Cell k's box against the boxes of cells `ahead` (sorted by their
        // lower ends) that start before it ends.
        let mut meet = |k: usize, ahead: std::ops::Range<usize>| {
            let a = &slots[k];
            let top = a.c[axis] + a.h[axis] + pad;
            for b in &slots[ahead] {
                if b.lo > top {
                    break;
                }
                // Without a branch on the test either: the pair is
                // written, and kept or not.
                let hit = meets(&a.c, &a.h, &b.c, &b.h);
                pairs.push((a.body.min(b.body), a.body.max(b.body)));
                pairs.truncate(pairs.len() - usize::from(!hit));
            }
        };
        for &(r, s, start, end) in &rows[part] {
            // Within the row.
            for a in start..end {
                meet(a, a + 1..end);
            }
            // With the neighbours ahead: each pair of neighbouring rows once.
            for (dr, ds) in [(0, 1), (1, -1), (1, 0), (1, 1)] {
                let key = (r + dr, s + ds);
                let Ok(at) = rows.binary_search_by(|row| (row.0, row.1).cmp(&key)) else {
                    continue;
                };
                let (_, _, other, other_end) = rows[at];
                // Two lists sorted by their lower ends: whichever starts
                // first meets the other's boxes that start before it ends.
                let (mut a, mut b) = (start, other);
                while a < end && b < other_end {
                    if slots[a].lo <= slots[b].lo {
                        meet(a, b..other_end);
                        a += 1;
                    } else {
                        meet(b, a..end);
                        b += 1;
                    }
                }
            }
        }
        if large_too {
            // Each large box against the small boxes of the rows it
            // reaches: a small box that meets it within the margin has its
            // centre at most the large box's half extent plus the widest
            // small one's plus the two pads away across the axis, and its
            // lower end along the axis at most twice the longest small
            // half extent plus the pads below the large box's.
            for &i in large {
                let (c, h) = boxes[i];
                if !finite(i) {
                    // Against every other body, each pair of two such
                    // boxes once: left to the narrow phase, which rejects
                    // them.
                    for j in (0..n).filter(|&j| j != i && (finite(j) || j > i)) {
                        if !apart(i, j) {
                            pairs.push((i.min(j), i.max(j)));
                        }
                    }
                    continue;
                }
                // A relative slack keeps rounding from dropping a pair
                // that touches exactly; the box test decides.
                let range = |x: usize| {
                    let reach = (h[x] + widest + 2.0 * pad) * (1.0 + 1e-9);
                    (index(c[x] - reach), index(c[x] + reach))
                };
                let (r0, r1) = range(across[0]);
                let (s0, s1) = across.get(1).map_or((0, 0), |&x| range(x));
                let first = rows.partition_point(|row| (row.0, row.1) < (r0, s0));
                let last = rows.partition_point(|row| (row.0, row.1) <= (r1, s1));
                let low = c[axis] - h[axis] - pad - 2.0 * (longest + pad) * (1.0 + 1e-9);
                let top = c[axis] + h[axis] + pad;
                for &(_, s, start, end) in &rows[first..last.max(first)] {
                    if s < s0 || s > s1 {
                        continue;
                    }
                    let row = &slots[start..end];
                    let from = row.partition_point(|slot| slot.lo < low);
                    let (c, h) = (c.into(), h.into());
                    for b in &row[from..] {
                        if b.lo > top {
                            break;
                        }
                        if meets(&c, &h, &b.c, &b.h) {
                            pairs.push((i.min(b.body), i.max(b.body)));
                        }
                    }
                }
            }
            // The large boxes among themselves, by the plain sweep.
            for (k, &(_, a)) in large_order.iter().enumerate() {
                let (ca, ha) = boxes[a];
                meet_ahead(
                    a,
                    ca[axis] + ha[axis] + pad,
                    large_order[k + 1..].iter().copied(),
                    &apart,
                    pairs,
                );
            }
        }
        sort_pairs(pairs, n, sort);
    };
    // Two threads sweep half the rows each (the second also the large
    // boxes) and sort their pairs; the two sorted lists merge into the
    // same list as one thread's.
    match parallel(threads, n, PARALLEL_BODIES) {
        None => sweep_rows(0..rows.len(), true, pairs, sort),
        Some(helper) => {
            // Half the small boxes each (the rows' sizes vary: a silo's
            // bin holds more than its hopper).
            let half = rows.partition_point(|row| row.2 < slots.len() / 2);
            pairs_b.clear();
            both(
                Some(helper),
                true,
                || sweep_rows(0..half, false, pairs, sort),
                || sweep_rows(half..rows.len(), true, pairs_b, sort_b),
            );
            merged.clear();
            merged.reserve(pairs.len() + pairs_b.len());
            let (mut a, mut b) = (pairs.iter().peekable(), pairs_b.iter().peekable());
            while let (Some(&&x), Some(&&y)) = (a.peek(), b.peek()) {
                if x <= y {
                    merged.push(x);
                    a.next();
                } else {
                    merged.push(y);
                    b.next();
                }
            }
            merged.extend(a);
            merged.extend(b);
            std::mem::swap(pairs, merged);
        }
    }
}

/// Sorts `pairs` (i, j), i < j, of `n` bodies, each pair once: a stable
/// counting sort by j, then one by i (least significant key first). The
/// same order as a comparison sort, in time linear in the pairs and
/// bodies: the sweep's pairs come out row by row.
fn sort_pairs(pairs: &mut [(usize, usize)], n: usize, space: &mut PairSort) {
    if pairs.len() < 64 {
        pairs.sort_unstable();
        return;
    }
    let PairSort {
        starts,
        next,
        sorted,
    } = space;
    sorted.clear();
    sorted.resize(pairs.len(), (0, 0));
    // By j, then by i: the second pass keeps the first's order within each
    // i (a stable counting sort each).
    let mut pass = |from: &[(usize, usize)],
                    into: &mut [(usize, usize)],
                    key: fn(&(usize, usize)) -> usize| {
        starts.clear();
        starts.resize(n + 1, 0);
        for p in from {
            starts[key(p) + 1] += 1;
        }
        for i in 0..n {
            starts[i + 1] += starts[i];
        }
        next.clear();
        next.extend_from_slice(starts);
        for p in from {
            let at = &mut next[key(p)];
            into[*at] = *p;
            *at += 1;
        }
    };
    pass(pairs, sorted, |p| p.1);
    pass(sorted, pairs, |p| p.0);
}

/// The bits of `x` as an integer that orders as [`f64::total_cmp`] orders
/// the floats (its own implementation).
fn ordered(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

/// The axes a broad phase compares: two in the plane, three in space.
fn axes(dimension: Dimension) -> usize {
    match dimension {
        Dimension::Planar => 2,
        Dimension::Spatial => 3,
    }
}

/// Whether boxes a and b (centre, half extents) are more than 2 `pad`
/// apart on one of the first `axes` axes.
fn boxes_apart(
    boxes: &[(Vector3<f64>, Vector3<f64>)],
    a: usize,
    b: usize,
    pad: f64,
    axes: usize,
) -> bool {
    let ((ca, ha), (cb, hb)) = (boxes[a], boxes[b]);
    (0..axes).any(|x| (ca[x] - cb[x]).abs() > ha[x] + hb[x] + 2.0 * pad)
}

/// Bodies from which the broad phase's rows are swept on two threads:
/// below, the handshake costs more than the second thread saves.
pub const PARALLEL_BODIES: usize = 512;

/// The plain sweep and prune along `axis`: every pair whose boxes overlap
/// there within 2 `pad` is tested on every axis.
fn sweep_along(
    boxes: &[(Vector3<f64>, Vector3<f64>)],
    axis: usize,
    pad: f64,
    apart: &impl Fn(usize, usize) -> bool,
    order: &mut Vec<(f64, usize)>,
    pairs: &mut Vec<(usize, usize)>,
) {
    order.clear();
    order.extend(
        boxes
            .iter()
            .enumerate()
            .map(|(i, (c, half))| (c[axis] - half[axis] - pad, i)),
    );
    order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (k, &(_, a)) in order.iter().enumerate() {
        let (ca, ha) = boxes[a];
        // Non-finite positions never pass the test; they are left to the
        // narrow phase, which rejects them.
        meet_ahead(
            a,
            ca[axis] + ha[axis] + pad,
            order[k + 1..].iter().copied(),
            apart,
            pairs,
        );
    }
}

/// Body `a`, whose box ends at `top` along the sweep axis, against the
/// bodies `ahead` (lower ends along the axis, ascending): those that start
/// before `top` and are not `apart` from it join `pairs`.
fn meet_ahead(
    a: usize,
    top: f64,
    ahead: impl Iterator<Item = (f64, usize)>,
    apart: &impl Fn(usize, usize) -> bool,
    pairs: &mut Vec<(usize, usize)>,
) {
    for (lo, b) in ahead {
        if lo > top {
            break;
        }
        if !apart(a, b) {
            pairs.push((a.min(b), a.max(b)));
        }
    }
}

/// A body's world-aligned bounding box (centre, half extents), m: a box's
/// is |R| h, a capsule's (core along its x axis) |R e_x| ℓ + r. Tighter
/// than the bounding sphere, whose cube around a silo's wall reaches every
/// grain in it (the 1,000-grain silo: 12,000 candidate pairs a search for
/// 2,000 contacts).
pub fn world_box(
    shape: &Shape,
    x: Vector3<f64>,
    r: &UnitQuaternion<f64>,
) -> (Vector3<f64>, Vector3<f64>) {
    let half = match *shape {
        Shape::Sphere { radius } => Vector3::repeat(radius),
        Shape::Capsule {
            half_length,
            radius,
        } => (r * Vector3::x()).abs() * half_length + Vector3::repeat(radius),
        Shape::Box { half_extents } => {
            r.to_rotation_matrix().matrix().abs() * Vector3::from(half_extents)
        }
    };
    (x, half)
}

/// Every body's world box ([`world_box`]) at its pose (`poses`, in body
/// order, [`super::pose::poses_into`]), into `out` (replaced).
pub fn world_boxes_into(
    system: &RigidSystem,
    poses: &[Pose],
    out: &mut Vec<(Vector3<f64>, Vector3<f64>)>,
) {
    out.clear();
    out.extend(
        system
            .bodies
            .iter()
            .zip(poses)
            .map(|(body, pose)| world_box(&body.shape, pose.x, &pose.rotation)),
    );
}

/// The broad phase's work space: world-aligned bounding boxes (centre, half
/// extents in m), the candidate body pairs and the sweep's work space.
#[derive(Debug, Clone, Default)]
pub struct BroadPhase {
    /// Each body's pose at the search's q ([`super::pose`]).
    pub poses: Vec<Pose>,
    /// Bounding box of each body ([`world_box`]).
    pub boxes: Vec<(Vector3<f64>, Vector3<f64>)>,
    /// Body pairs (i < j) whose boxes overlap within the margin.
    pub pairs: Vec<(usize, usize)>,
    /// The sweep's work space ([`candidate_pairs_into`]).
    pub sweep: SweepSpace,
    /// The narrow phase's points of one pair.
    pub points: Vec<PairContact>,
    /// The second thread's narrow phase ([`crate::pair_thread`]): its
    /// points of one pair, and what each half found.
    pub points_b: Vec<PairContact>,
    pub found: Vec<Found>,
    pub found_b: Vec<Found>,
    pub gaps_b: Vec<(ContactId, f64)>,
    /// The last sweep's pairs, reused by a later search it covers.
    pub last: LastSweep,
    /// Whether the last search took its pairs from [`Self::last`] instead
    /// of sweeping.
    pub reused: bool,
    /// Pairs' points kept by pose ([`super::pair_memo::PairMemo`], when
    /// enabled), with what each thread's part of the last search found in
    /// it and computed.
    pub kept: KeptPairs,
}

/// The pairs the last sweep found, with the boxes and the pad (half the
/// margin) it ran with. Two boxes that come within a smaller pad of each
/// other, each lying with that pad inside its box of the sweep with the
/// sweep's pad, came within the sweep's pad then: so a search whose boxes
/// all lie so inside ([`Self::covers`]) finds its pairs among these,
/// exactly those the sweep would (the 1,000-grain silo's search for the end
/// gaps at q^E after the one for the contacts at q^M, half a step before).
#[derive(Debug, Clone, Default)]
pub struct LastSweep {
    /// The boxes (centre, half extents, m) and the pad, m, of the last
    /// sweep (a search that reuses it does not replace it).
    boxes: Vec<(Vector3<f64>, Vector3<f64>)>,
    pad: f64,
    /// Body pairs (i < j), sorted.
    pairs: Vec<(usize, usize)>,
}

impl LastSweep {
    /// Remembers a sweep: its `boxes`, `pad` and `pairs`.
    pub fn record(
        &mut self,
        boxes: &[(Vector3<f64>, Vector3<f64>)],
        pad: f64,
        pairs: &[(usize, usize)],
    ) {
        self.boxes.clear();
        self.boxes.extend_from_slice(boxes);
        self.pad = pad;
        self.pairs.clear();
        self.pairs.extend_from_slice(pairs);
    }

    /// Whether every box of `boxes` grown by `pad` lies inside the same
    /// body's box of the last sweep grown by its pad, on the first `axes`
    /// axes, with a relative slack of 1e-9 for rounding. False for boxes
    /// that are not finite and for another number of bodies.
    pub fn covers(&self, boxes: &[(Vector3<f64>, Vector3<f64>)], pad: f64, axes: usize) -> bool {
        self.boxes.len() == boxes.len()
            && !boxes.is_empty()
            && boxes.iter().zip(&self.boxes).all(|((c, h), (c0, h0))| {
                (0..axes).all(|x| {
                    let reach = h0[x] + self.pad;
                    let need = (c[x] - c0[x]).abs() + h[x] + pad;
                    // NaN fails the comparison.
                    need <= reach - 1e-9 * (c0[x].abs() + reach)
                })
            })
    }

    /// The last sweep's pairs.
    pub fn pairs(&self) -> &[(usize, usize)] {
        &self.pairs
    }
}

/// The candidate body pairs of the rigid bodies at their `poses` into
/// `broad.pairs`: the last sweep's when its boxes cover these
/// ([`LastSweep`]), else a new sweep's.
pub(super) fn body_pairs(
    system: &RigidSystem,
    poses: &[Pose],
    margin: Margin<'_>,
    broad: &mut BroadPhase,
    threads: usize,
) {
    world_boxes_into(system, poses, &mut broad.boxes);
    // A margin of one distance pads every box in the sweep; per-body
    // reaches pad each box by its own ([`Margin::pad`]), and the sweep
    // then pads nothing more.
    let uniform = margin.is_uniform();
    if !uniform {
        for (i, (_, half)) in broad.boxes.iter_mut().enumerate() {
            *half = half.add_scalar(margin.pad(i));
        }
    }
    let margin = if uniform { margin.widest() } else { 0.0 };
    // The last sweep's pairs when its boxes cover these ([`LastSweep`]):
    // those whose boxes meet, the same list as a sweep's.
    let pad = 0.5 * margin.max(0.0);
    let axes = axes(system.dimension);
    broad.reused = broad.last.covers(&broad.boxes, pad, axes);
    if broad.reused {
        let boxes = &broad.boxes;
        broad.pairs.clear();
        broad.pairs.extend(
            broad
                .last
                .pairs()
                .iter()
                .filter(|&&(a, b)| !boxes_apart(boxes, a, b, pad, axes)),
        );
        return;
    }
    candidate_pairs_into(
        &broad.boxes,
        margin,
        system.dimension,
        &mut broad.sweep,
        &mut broad.pairs,
        threads,
    );
    broad.last.record(&broad.boxes, pad, &broad.pairs);
}

#[cfg(test)]
mod tests {
    use super::{PairSort, sort_pairs};
    use rand::{Rng, SeedableRng, rngs::StdRng};

    /// The counted sort orders the pairs as a comparison sort does, above
    /// and below its threshold, with bodies of no pair between them.
    #[test]
    fn the_counted_sort_of_pairs_is_the_comparison_sort() {
        let mut rng = StdRng::seed_from_u64(5);
        // One work space for every case, as the broad phase keeps it.
        let mut space = PairSort::default();
        for case in 0..50 {
            let n = rng.random_range(2..400);
            let count = rng.random_range(0..2_000);
            let mut pairs: Vec<(usize, usize)> = (0..count)
                .map(|_| {
                    let i = rng.random_range(0..n - 1);
                    (i, rng.random_range(i + 1..n))
                })
                .collect();
            pairs.sort_unstable();
            pairs.dedup();
            let expected = pairs.clone();
            // The sweep's order: row by row, not by body.
            let mut shuffled = pairs;
            for k in (1..shuffled.len()).rev() {
                shuffled.swap(k, rng.random_range(0..=k));
            }
            sort_pairs(&mut shuffled, n, &mut space);
            assert_eq!(shuffled, expected, "case {case}");
        }
    }
}
