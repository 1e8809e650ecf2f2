//! The two-thread split of a lift's sweeps ([`super::Guard::lift`]): a
//! working set of at least [`SPLIT_MIN`] contacts is cut into two halves of
//! space swept at once, then the contacts across the cut, as NSGS's sweeps
//! are (`solver::nsgs`'s halves). One thread sweeps the same order, so the
//! lift is the same bit for bit on one thread and two.
//!
//! Each half moves its own bodies, whose part of δ it keeps in an array of
//! its own, gathered from δ when the parts are made and scattered back when
//! the lift reads δ whole (its checks for contacts that join): the two
//! threads never write one cache line, and the contacts across the cut read
//! and write both arrays after them.

use super::{BLOCK, Packed, RELAXATION, pack};
use crate::model::Contact;
use crate::pair_thread::{self, PairThread, both};
use nalgebra::{DVector, Vector3};

/// Working sets with fewer contacts are swept whole, in their order.
pub(super) const SPLIT_MIN: usize = 512;

/// No side yet: a block no working contact touches.
const NONE: u8 = u8::MAX;

/// A working contact in a part: its index, its slack and weight, its λ
/// while the parts are swept, and its row with each block's offset in its
/// side's array (`sides`).
#[derive(Debug, Clone, Copy, Default)]
struct Item {
    i: usize,
    slack: f64,
    weight: f64,
    lambda: f64,
    row: Packed,
    sides: [u8; 2],
}

/// The parts of a split working set and the halves' arrays of δ.
#[derive(Debug, Clone, Default)]
pub(super) struct Split {
    /// By velocity index (a block's first): the block's side, 0 or 1
    /// ([`NONE`] for none), and its offset in that side's array.
    place: Vec<(u8, usize)>,
    /// The blocks of each side, by start, in their arrays' order.
    blocks: [Vec<usize>; 2],
    /// The working contacts' positions along the cut's axis.
    keys: Vec<f64>,
    /// The lower half's contacts, the upper half's, and those across.
    items: [Vec<Item>; 3],
    /// Each half's part of δ.
    deltas: [Vec<f64>; 2],
    /// Velocities per block.
    len: usize,
    /// The cut: the axis and where along it.
    axis: usize,
    median: f64,
}

/// What [`Split::make`] reads of the lift: the contacts, M⁻¹'s diagonal,
/// and the lift's per-contact slack, packed rows, weights and λ.
pub(super) struct Lift<'a> {
    pub(super) contacts: &'a [Contact],
    pub(super) diagonal: &'a [f64],
    pub(super) slack: &'a [f64],
    pub(super) rows: &'a mut [Packed],
    pub(super) weight: &'a mut [f64],
    pub(super) lambda: &'a [f64],
}

impl Split {
    /// Cuts `working` into the lower half of space (along the widest axis
    /// of its contact points, at their median), the upper half and the
    /// contacts with bodies on both sides, each in `working`'s order, and
    /// gathers the halves' parts of `delta`. Every working contact is
    /// packed, and `moved` is called with the blocks they touch. False,
    /// the working set to be swept whole, when it is smaller than
    /// [`SPLIT_MIN`], a contact has no place in space, or the blocks are
    /// not one rigid body's each.
    pub(super) fn make(
        &mut self,
        working: &[usize],
        lift: Lift<'_>,
        delta: &DVector<f64>,
        moved: impl FnMut(&[usize]),
    ) -> bool {
        if working.len() < SPLIT_MIN {
            return false;
        }
        // The velocities per block, from the first contact on a body.
        let first = |i: usize| lift.contacts[i].jacobian.blocks().first().map(|b| b.len);
        let Some(len) = working
            .iter()
            .find_map(|&i| first(i).map(|len| len.min(BLOCK)))
        else {
            return false;
        };
        // The axis along which the contact points spread most; its median.
        let mut mean = Vector3::zeros();
        for &i in working {
            let Some(frame) = &lift.contacts[i].frame else {
                return false;
            };
            mean += frame.point;
        }
        let points = || {
            working
                .iter()
                .filter_map(|&i| lift.contacts[i].frame.as_ref())
        };
        mean /= working.len() as f64;
        let spread = points().fold(Vector3::zeros(), |s: Vector3<f64>, f| {
            s + (f.point - mean).component_mul(&(f.point - mean))
        });
        let axis = spread.imax();
        self.keys.clear();
        self.keys.extend(points().map(|f| f.point[axis]));
        let middle = self.keys.len() / 2;
        let median = *self.keys.select_nth_unstable_by(middle, f64::total_cmp).1;
        (self.axis, self.median, self.len) = (axis, median, len);
        // No block has a side, and no part a contact.
        for s in self.blocks.iter().flatten() {
            self.place[*s] = (NONE, 0);
        }
        self.place.resize(delta.len(), (NONE, 0));
        for b in &mut self.blocks {
            b.clear();
        }
        for d in &mut self.deltas {
            d.clear();
        }
        for part in &mut self.items {
            part.clear();
        }
        self.extend(working, lift, delta, moved)
    }

    /// Adds the contacts `joined` (sorted) to the parts, on the same cut:
    /// each block without a side takes the side of its contact's point, and
    /// the contact the part of its blocks' sides; `moved` is called with the
    /// blocks given a side. False, the split to be
    /// dropped, when a contact has no place in space or its blocks do not
    /// fit.
    pub(super) fn extend(
        &mut self,
        joined: &[usize],
        lift: Lift<'_>,
        delta: &DVector<f64>,
        mut moved: impl FnMut(&[usize]),
    ) -> bool {
        let Lift {
            contacts,
            diagonal,
            slack,
            rows,
            weight,
            lambda,
        } = lift;
        let len = self.len;
        let counts = self.blocks.each_ref().map(Vec::len);
        for &i in joined {
            if weight[i].is_nan() {
                pack(rows, weight, i, &contacts[i], diagonal);
            }
            let row = &rows[i];
            let Some(frame) = &contacts[i].frame else {
                return false;
            };
            if row.blocks > 0 && !fits(row, len) {
                return false;
            }
            self.place_blocks(row, frame.point[self.axis] >= self.median, delta);
            self.add(i, row, (slack[i], weight[i], lambda[i]));
        }
        for (blocks, count) in self.blocks.iter().zip(counts) {
            moved(&blocks[count..]);
        }
        true
    }

    /// Gives the blocks of `row` that have no side yet the side of its
    /// point (`upper`), with their δ in that side's array.
    fn place_blocks(&mut self, row: &Packed, upper: bool, delta: &DVector<f64>) {
        let side = u8::from(upper);
        let len = self.len;
        for &s in row.starts() {
            if self.place[s].0 == NONE {
                let blocks = &mut self.blocks[usize::from(side)];
                self.place[s] = (side, blocks.len() * len);
                blocks.push(s);
                self.deltas[usize::from(side)].extend_from_slice(&delta.as_slice()[s..s + len]);
            }
        }
    }

    /// Adds contact `i` (its packed `row`, its slack, weight and λ) to the
    /// part its blocks' sides give it.
    fn add(&mut self, i: usize, row: &Packed, (slack, weight, lambda): (f64, f64, f64)) {
        let mut row = *row;
        let mut sides = [0; 2];
        let blocks = row.blocks;
        for (start, side) in row.starts.iter_mut().zip(&mut sides).take(blocks) {
            let (s, offset) = self.place[*start];
            *side = s;
            *start = offset;
        }
        let part = match row.blocks {
            0 => 0,
            1 => usize::from(sides[0]),
            _ if sides[0] == sides[1] => usize::from(sides[0]),
            _ => 2,
        };
        self.items[part].push(Item {
            i,
            slack,
            weight,
            lambda,
            row,
            sides,
        });
    }

    /// nᵢᵀδ for a contact's `row` as packed by the lift (summed as
    /// [`Packed::dot`]): from the halves' arrays on the blocks they hold,
    /// from `delta` on the others, which no working contact moves.
    pub(super) fn dot(&self, row: &Packed, delta: &DVector<f64>) -> f64 {
        let mut sum = 0.0;
        for k in 0..row.blocks {
            let s = row.starts[k];
            let part = match self.place[s] {
                (NONE, _) => &delta.as_slice()[s..s + row.len],
                (side, at) => &self.deltas[usize::from(side)][at..at + row.len],
            };
            sum += (0..row.len).map(|j| row.n[k][j] * part[j]).sum::<f64>();
        }
        sum
    }

    /// One sweep: the two halves at once (on two threads when `pair` is
    /// given), then the contacts across the cut. Returns the largest of
    /// the visits' measures, as the whole sweep does.
    pub(super) fn sweep(&mut self, pair: Option<&PairThread>) -> f64 {
        let [a, b, c] = &mut self.items;
        let [da, db] = &mut self.deltas;
        let work = pair.is_some() && pair_thread::pays();
        let (wa, wb) = both(pair, work, || sweep_half(a, da), || sweep_half(b, db));
        let mut worst = wa.max(wb);
        for item in c.iter_mut() {
            let Some(change) = visit(item, &mut worst, |row, sides| {
                dot_across(row, sides, da, db)
            }) else {
                continue;
            };
            add_across(&item.row, &item.sides, change, da, db);
        }
        worst
    }

    /// How many contacts each part holds.
    #[cfg(test)]
    pub(super) fn part_sizes(&self) -> [usize; 3] {
        self.items.each_ref().map(Vec::len)
    }

    /// Writes the parts' λ into `lambda` and the halves' δ into `delta`.
    pub(super) fn write_back(&self, lambda: &mut [f64], delta: &mut DVector<f64>) {
        for item in self.items.iter().flatten() {
            lambda[item.i] = item.lambda;
        }
        let len = self.len;
        for (blocks, values) in self.blocks.iter().zip(&self.deltas) {
            for (&s, part) in blocks.iter().zip(values.chunks_exact(len)) {
                delta.as_mut_slice()[s..s + len].copy_from_slice(part);
            }
        }
    }
}

/// Whether `row`'s blocks are rigid bodies' of `len` velocities each, on
/// the bodies' grid: what the halves' arrays hold.
fn fits(row: &Packed, len: usize) -> bool {
    row.len == len && row.starts().iter().all(|s| s % len == 0)
}

/// One visit of `item`, its row's product with δ by `dot`: λ moved by
/// [`RELAXATION`] times the step that meets its target, projected on λ ≥
/// 0, and `worst` raised as the whole sweep raises it; the change in λ, when
/// there is one.
#[inline(always)]
fn visit(item: &mut Item, worst: &mut f64, dot: impl Fn(&Packed, &[u8; 2]) -> f64) -> Option<f64> {
    let weight = item.weight;
    if weight.is_nan() || weight <= 0.0 {
        return None;
    }
    let above = item.slack + dot(&item.row, &item.sides);
    let lambda = (item.lambda - RELAXATION * above / weight).max(0.0);
    let change = lambda - item.lambda;
    *worst = worst.max(-above).max(change.abs() * weight);
    if change == 0.0 {
        return None;
    }
    item.lambda = lambda;
    Some(change)
}

/// One half's sweep over its own array of δ.
fn sweep_half(items: &mut [Item], delta: &mut [f64]) -> f64 {
    let mut worst = 0.0_f64;
    for item in items.iter_mut() {
        if let Some(change) = visit(item, &mut worst, |row, _| row.dot(delta)) {
            item.row.add_weighted(change, delta);
        }
    }
    worst
}

/// nᵢᵀδ for a row whose blocks lie in the two halves' arrays by `sides`
/// (summed as [`Packed::dot`]).
fn dot_across(row: &Packed, sides: &[u8; 2], da: &[f64], db: &[f64]) -> f64 {
    let mut sum = 0.0;
    for k in 0..row.blocks {
        let part = if sides[k] == 0 { da } else { db };
        let part = &part[row.starts[k]..row.starts[k] + row.len];
        sum += (0..row.len).map(|j| row.n[k][j] * part[j]).sum::<f64>();
    }
    sum
}

/// δ += α M⁻¹nᵢ for a row across the two halves' arrays (rounded as
/// [`Packed::add_weighted`]).
fn add_across(row: &Packed, sides: &[u8; 2], alpha: f64, da: &mut [f64], db: &mut [f64]) {
    for k in 0..row.blocks {
        let part = if sides[k] == 0 { &mut *da } else { &mut *db };
        let part = &mut part[row.starts[k]..row.starts[k] + row.len];
        for ((x, d), n) in part.iter_mut().zip(&row.inverse[k]).zip(&row.n[k]) {
            *x += d * alpha * n;
        }
    }
}
