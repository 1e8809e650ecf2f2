//! The two-thread split of NSGS's sweeps: a problem of at least
//! [`SPLIT_MIN`] contacts is cut into two halves of space swept at once,
//! then the contacts across the cut; one thread sweeps the same order, so
//! the result is the same bit for bit.

use super::kernels::Cone;
use nalgebra::Vector3;

/// Problems with fewer cones are swept in their own order, whole.
pub(super) const SPLIT_MIN: usize = 512;

/// A split problem's first sweeps alternate one thread and two, timed; the
/// rest of the solve (and the narrow phase, [`pair_thread::pays`]) uses
/// whichever was faster. On this 2-core virtual machine two threads sweep
/// the 1,000-grain silo's halves in 21 µs against 41 on one in most runs,
/// but in some every thread runs at two thirds of its speed (both virtual
/// cores on one physical core, it seems) and two threads lose: 33 µs
/// against 31, and the spinning helper slows the caller's serial work
/// too. The result is the same either way.
pub(super) const PROBE_SWEEPS: usize = 4;

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
/// third part is 5–10 % of the contacts.
///
/// Within each part, and in a problem swept whole, the contacts go from the
/// lowest point up, against gravity: a grain's weight then reaches the
/// floor through the column under it in fewer sweeps than in the broad
/// phase's order (by body index, which the flow scatters in height). Over
/// the first 0.5 s of the 1,000-grain silo 69.8 sweeps a step instead of
/// 76.4 (the most in a step 200 instead of 250), the 1,500-grain heap's
/// first second 37.3 instead of 41.6, `heap.ron`'s first second 34.1
/// instead of 39.1, and the planar hourglass's and the avalanche's 63.0 and
/// 39.2 instead of 63.8 and 39.8 (one thread). Top down took as many
/// sweeps as bottom up.
///
/// The cones are stored in the parts' order, and the velocity of a large
/// problem is padded ([`PAD`]): with the two halves' cones and bodies
/// interleaved in memory, the two threads wrote each other's lines and two
/// threads swept the 1,000-grain silo slower than one (14.6 against 8.9 ms
/// a step).
#[derive(Debug, Clone, Default)]
pub(super) struct Halves {
    /// Where the second and the third part start among the cones.
    pub(super) ends: [usize; 2],
    /// Per velocity index (a block's first): 1 a lower contact touches it,
    /// 2 an upper one.
    pub(super) side: Vec<u8>,
    pub(super) keys: Vec<(f64, usize)>,
    pub(super) points: Vec<Vector3<f64>>,
    /// The cones' new order (part, height, contact, place), and the cones
    /// moved into it.
    pub(super) permutation: Vec<(u8, f64, usize, u32)>,
    pub(super) moved: Vec<Cone>,
}

impl Halves {
    /// The three parts of `cones`.
    pub(super) fn parts<'c>(&self, cones: &'c mut [Cone]) -> [&'c mut [Cone]; 3] {
        let [a, b] = self.ends;
        let (ab, c) = cones.split_at_mut(b.min(cones.len()));
        let (a, b) = ab.split_at_mut(a.min(ab.len()));
        [a, b, c]
    }

    /// Splits `cones` and stores them in the parts' order, each part from
    /// its lowest contact point up (along `up`, opposite to gravity; ties
    /// in the problem's order); small problems, and those whose rows are
    /// not rigid bodies' blocks, stay whole, in the same order. Contacts
    /// without a place in space keep the problem's order.
    /// `block` is [`padded_block`]'s: every block of the problem is one
    /// rigid body's, on the bodies' grid (0 when not).
    pub(super) fn split(
        &mut self,
        cones: &mut Vec<Cone>,
        contacts: &[&crate::model::Contact],
        dof: usize,
        block: usize,
        up: &Vector3<f64>,
    ) {
        let n = cones.len();
        self.ends = [n, n];
        if !self.split_parts(cones, contacts, dof, block, up) {
            self.permutation.clear();
            let placed = cones.iter().all(|c| contacts[c.contact].frame.is_some());
            self.permutation
                .extend(cones.iter().enumerate().map(|(i, c)| {
                    let height = contacts[c.contact]
                        .frame
                        .as_ref()
                        .filter(|_| placed)
                        .map_or(0.0, |f| f.point.dot(up));
                    (0, height, c.contact, i as u32)
                }));
            self.reorder(cones);
        }
    }

    /// Puts `cones` in the order of the sorted [`Halves::permutation`]:
    /// sorting the keys and moving each cone once, where sorting the cones
    /// themselves (300 bytes each) moved them a dozen times. Each key names
    /// its own contact, so any sort gives one order; a stable merge sort
    /// finds the runs that a split after a join hands it (the last split's
    /// parts, each in order, then the contacts that joined) and merges
    /// them: over the 1,000-grain silo's first 0.5 s the sorts take a third
    /// of the instructions of a quicksort of the same keys.
    pub(super) fn reorder(&mut self, cones: &mut Vec<Cone>) {
        self.permutation.sort_by(|a, b| {
            (a.0.cmp(&b.0))
                .then(a.1.total_cmp(&b.1))
                .then((a.2, a.3).cmp(&(b.2, b.3)))
        });
        self.moved.clear();
        self.moved
            .extend(self.permutation.iter().map(|&(.., i)| cones[i as usize]));
        // The moved cones become the cones (no copy back); the old storage
        // is the next reorder's.
        std::mem::swap(cones, &mut self.moved);
    }

    /// [`Halves::split`], false when the problem stays whole.
    pub(super) fn split_parts(
        &mut self,
        cones: &mut Vec<Cone>,
        contacts: &[&crate::model::Contact],
        dof: usize,
        block: usize,
        up: &Vector3<f64>,
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
            self.permutation
                .push((part, p.dot(up), cone.contact, i as u32));
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
pub(super) fn weighted_median(keys: &mut [(f64, usize)]) -> f64 {
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
pub(super) fn padded_block(contacts: &[&crate::model::Contact], planar: bool) -> usize {
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
