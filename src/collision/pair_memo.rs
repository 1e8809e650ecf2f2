//! The narrow phase's points of body pairs, kept by the pair's shapes and
//! poses for a search that comes back to the same poses.
//!
//! Stewart–Trinkle's iterations (§3.6) search for contacts at every iterate
//! q̂ and for end gaps at every qˡ⁺¹. An island whose gaps are met keeps its
//! point of linearization from one iteration to the next (its bodies'
//! coordinates come back bit for bit), while the others go on, so on a pile
//! most pairs are searched again at the very poses of the iteration before.
//! A pair's points are a function of the two shapes, the two poses and the
//! margin alone ([`super::rigid::RigidSystem`]'s `pair_contacts`: parry's
//! manifolds start from an empty work space every time), so points found
//! again by key are the points a search would compute: the same bits.

use crate::geometry::{PairContact, Shape};
use rustc_hash::FxHashMap;

/// Poses kept per pair: the iterate q̂, the end qˡ⁺¹, and one more (the
/// step's start, which is the last step's end).
const SLOTS: usize = 3;

/// Calls after which a pair no search asked for is dropped.
const STALE: u64 = 64;

/// The longest key: two spatial poses (3 coordinates and a unit quaternion
/// each) and the margin.
const KEY: usize = 15;

/// What a pair's points are a function of: the shapes, the poses'
/// coordinates and the margin, compared bit for bit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairKey {
    shapes: (Shape, Shape),
    bits: [u64; KEY],
}

impl PairKey {
    /// The key of shapes `a` and `b` at poses `pose_a`, `pose_b` (a body's
    /// coordinates in q) searched within `margin`. `None` when the poses are
    /// longer than a spatial body's.
    pub fn new(a: Shape, b: Shape, pose_a: &[f64], pose_b: &[f64], margin: f64) -> Option<Self> {
        let n = pose_a.len();
        if pose_b.len() != n || 2 * n + 1 > KEY {
            return None;
        }
        let mut bits = [0; KEY];
        for (slot, x) in bits
            .iter_mut()
            .zip(pose_a.iter().chain(pose_b).chain([&margin]))
        {
            *slot = x.to_bits();
        }
        Some(Self {
            shapes: (a, b),
            bits,
        })
    }
}

#[derive(Debug, Clone)]
struct Entry {
    key: PairKey,
    /// The call that last found or stored it.
    used: u64,
    points: Vec<PairContact>,
}

/// Pairs' points by key, from the searches that had them on
/// ([`Self::enabled`]).
#[derive(Debug, Clone, Default)]
pub struct PairMemo {
    /// Whether searches look pairs up and keep them. Off by default: a
    /// scheme whose searches never repeat a pose (Moreau–Jean's q^M and q^E)
    /// would only pay for the keeping.
    pub enabled: bool,
    entries: FxHashMap<(usize, usize), Vec<Entry>>,
    call: u64,
}

/// A [`PairMemo`] with the logs of a search's two threads.
#[derive(Debug, Clone, Default)]
pub struct KeptPairs {
    pub memo: PairMemo,
    logs: [MemoLog; 2],
}

impl KeptPairs {
    /// Starts a search: the memo to look pairs up in (when enabled), and
    /// each thread's log, emptied.
    pub fn begin(&mut self) -> (Option<&PairMemo>, [&mut MemoLog; 2]) {
        self.memo.begin();
        let [a, b] = &mut self.logs;
        a.clear();
        b.clear();
        (self.memo.enabled.then_some(&self.memo), [a, b])
    }

    /// Ends a search: what its threads found and computed goes into the
    /// memo.
    pub fn end(&mut self) {
        if self.memo.enabled {
            let [a, b] = &self.logs;
            self.memo.absorb([a, b]);
        }
    }

    /// Pairs the last search found kept.
    pub fn hits(&self) -> usize {
        self.logs.iter().map(MemoLog::hits).sum()
    }
}

/// What one thread's part of a search found and computed, for
/// [`PairMemo::absorb`] once the threads are done.
#[derive(Debug, Clone, Default)]
pub struct MemoLog {
    hits: Vec<(usize, usize, usize)>,
    fresh: Vec<Fresh>,
    points: Vec<PairContact>,
}

#[derive(Debug, Clone)]
struct Fresh {
    pair: (usize, usize),
    key: PairKey,
    start: usize,
    len: usize,
}

impl MemoLog {
    /// Forgets the last search.
    fn clear(&mut self) {
        self.hits.clear();
        self.fresh.clear();
        self.points.clear();
    }

    /// Pairs the last search found kept.
    fn hits(&self) -> usize {
        self.hits.len()
    }

    /// Records a computed pair's points.
    pub fn computed(&mut self, pair: (usize, usize), key: PairKey, points: &[PairContact]) {
        self.fresh.push(Fresh {
            pair,
            key,
            start: self.points.len(),
            len: points.len(),
        });
        self.points.extend_from_slice(points);
    }
}

impl PairMemo {
    /// The points of `pair` at `key`, if kept; the hit is written to `log`.
    pub fn find(
        &self,
        pair: (usize, usize),
        key: &PairKey,
        log: &mut MemoLog,
    ) -> Option<&[PairContact]> {
        let entries = self.entries.get(&pair)?;
        let (slot, entry) = entries.iter().enumerate().find(|(_, e)| e.key == *key)?;
        log.hits.push((pair.0, pair.1, slot));
        Some(&entry.points)
    }

    /// Starts a search: a new call number, and every [`STALE`] calls the
    /// pairs no search has asked for since are dropped.
    pub fn begin(&mut self) {
        self.call += 1;
        if self.call.is_multiple_of(STALE) {
            let oldest = self.call - STALE;
            self.entries
                .retain(|_, entries| entries.iter().any(|e| e.used > oldest));
        }
    }

    /// Takes in what a search's threads found (`logs`, in order): the hits
    /// are marked used, the computed pairs kept, each in a free slot or the
    /// least recently used one of its pair.
    pub fn absorb(&mut self, logs: [&MemoLog; 2]) {
        let call = self.call;
        for log in logs {
            for &(a, b, slot) in &log.hits {
                if let Some(entry) = self.entries.get_mut(&(a, b)).and_then(|e| e.get_mut(slot)) {
                    entry.used = call;
                }
            }
            for fresh in &log.fresh {
                let points = &log.points[fresh.start..fresh.start + fresh.len];
                let entries = self.entries.entry(fresh.pair).or_default();
                if entries.len() < SLOTS {
                    entries.push(Entry {
                        key: fresh.key,
                        used: call,
                        points: points.to_vec(),
                    });
                } else if let Some(entry) = entries.iter_mut().min_by_key(|e| e.used) {
                    entry.key = fresh.key;
                    entry.used = call;
                    entry.points.clear();
                    entry.points.extend_from_slice(points);
                }
            }
        }
    }
}
