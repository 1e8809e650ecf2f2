//! Moreau–Jean's position guard: the nearest displacement, in the metric of
//! M, that keeps a set of linearized gaps above their floors.
//!
//! The midpoint rule moves q by (h/2)u^A before it looks at any contact
//! (Glocker & Studer 2005 §5, step 2), and by (h/2)u^E after the impact
//! law; held on velocity level only, a contact that either half-step
//! carries past touching stays overlapped by up to (h/2)|γ_N|, and a body
//! faster than its obstacle is thick passes it. The guard moves positions,
//! never velocities, as the projections of Anitescu & Potra 2002 §2.3.4 do:
//! for contacts i with linearized gaps gᵢ(δ) = bᵢ + nᵢᵀδ it finds
//!
//!   δ = M⁻¹Nλ,  0 ≤ λ ⟂ b + NᵀM⁻¹Nλ − f ≥ 0,
//!
//! the nearest δ (in ‖·‖_M) with every gᵢ(δ) ≥ fᵢ, by projected
//! successive over-relaxation on λ ([`RELAXATION`]). Kinetic energy is
//! untouched.

use crate::model::{Contact, ContactId};
use crate::pair_thread::{self, PairThread, both};
use nalgebra::DVector;
use rustc_hash::FxHashMap as HashMap;

mod split;

/// Projected sweeps over the working set in a round, at most, before the
/// round ends with a check for contacts the lift took deeper.
pub const SWEEPS: usize = 100;

/// Times the working set may grow after its sweeps have converged (each
/// after a check).
pub const ROUNDS: usize = 20;

/// The contacts the lift takes deeper join every this many sweeps too,
/// before the sweeps converge: a lift travels down a column of grains,
/// and joining the next grain only once the column above has converged
/// took a round of some 20 sweeps per grain (the 5,000-grain silo's
/// lifts: 400–460 sweeps over 2,000 contacts, a third of its step).
pub const JOIN_EVERY: usize = 4;

/// The sweeps' over-relaxation ω: each visit moves λᵢ by ω times the step
/// that meets its own target. Projected SOR converges to the same λ for
/// 0 < ω < 2 on the symmetric positive semidefinite NᵀM⁻¹N (Cryer 1971,
/// SIAM J. Control 9; Mangasarian 1977, J. Optim. Theory Appl. 22). A lift
/// carries down a column of grains one contact a sweep, and over-relaxing
/// carries it further.
pub const RELAXATION: f64 = 1.5;

/// The work space of a guard, kept between steps.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// How far each linearized gap is above its target at δ = 0 (≥ 0 for a
    /// gap the guard only keeps from going deeper).
    slack: Vec<f64>,
    /// nᵢᵀM⁻¹nᵢ.
    weight: Vec<f64>,
    /// nᵢ and M⁻¹'s diagonal on its blocks, packed, by contact; filled
    /// where `weight` is.
    rows: Vec<Packed>,
    /// λᵢ.
    lambda: Vec<f64>,
    /// The contacts the sweeps visit.
    working: Vec<usize>,
    /// Whether each contact is among them.
    visited: Vec<bool>,
    /// The contacts on each velocity block, by the block's first index:
    /// those of block start s are `on_block[first[s]..first[s + 1]]`.
    first: Vec<usize>,
    on_block: Vec<usize>,
    /// Whether δ may be nonzero on the block starting at each index, and
    /// those blocks' starts.
    moved: Vec<bool>,
    moved_blocks: Vec<usize>,
    /// The contacts a check reads (those on moved blocks that have not
    /// joined), whether each was queued, and how many of the moved blocks'
    /// contacts have been.
    near: Vec<usize>,
    queued: Vec<bool>,
    queued_blocks: usize,
    /// The last lift's λᵢ > 0 by contact, and whether the next lift starts
    /// from them ([`Self::start_next_from_last`]).
    last: HashMap<ContactId, f64>,
    from_last: bool,
    /// The sweeps' two halves of space ([`split`]).
    split: split::Split,
    /// Whether each contact of `near` is deeper, at a check.
    deeper: Vec<bool>,
    /// Threads the sweeps may use, 1 or 2 (`StepSettings::threads`): the
    /// lift is the same on either.
    pub threads: usize,
}

impl Guard {
    /// The displacement δ (velocity coordinates), for a diagonal M⁻¹
    /// `inverse_mass`, that lifts every gap `base(i)` + nᵢᵀδ of `contacts`
    /// that is below `floor(i)` by more than `depth(i)` (m) back onto its
    /// floor, and takes no other gap deeper than the lesser of its base and
    /// floor; `None` when no gap is that far below its floor. The targets
    /// are met within `tolerance` (m), or as nearly as [`SWEEPS`] sweeps in
    /// each of [`ROUNDS`] rounds reach: the sweeps run over the lifted
    /// contacts, and the contacts the lift took deeper join them every
    /// [`JOIN_EVERY`] sweeps and once the sweeps converge; the lift ends
    /// when a converged round adds none.
    pub fn lift(
        &mut self,
        contacts: &[Contact],
        base: impl Fn(&Contact) -> f64,
        floor: impl Fn(&Contact) -> f64,
        depth: impl Fn(&Contact) -> f64,
        inverse_mass: &DVector<f64>,
        tolerance: f64,
    ) -> Option<DVector<f64>> {
        self.slack.clear();
        self.working.clear();
        self.visited.clear();
        for (i, c) in contacts.iter().enumerate() {
            let (slack, lifted) = target(c, &base, &floor, &depth);
            self.slack.push(slack);
            self.visited.push(lifted);
            if lifted {
                self.working.push(i);
            }
        }
        let from_last = std::mem::take(&mut self.from_last);
        if self.working.is_empty() {
            self.last.clear();
            return None;
        }
        let diagonal = inverse_mass.as_slice();
        // Computed when a contact is first visited.
        self.weight.clear();
        self.weight.resize(contacts.len(), f64::NAN);
        self.rows.resize(contacts.len(), Packed::default());
        self.lambda.clear();
        self.lambda.resize(contacts.len(), 0.0);
        let mut delta = DVector::zeros(inverse_mass.len());
        self.index_blocks(contacts, delta.len());
        if from_last {
            // The last lift's impulses, each on its contact again: the
            // sweeps start at (nearly) the solution, δ = M⁻¹Nλ, and every
            // contact that carries one is among the swept.
            for (i, c) in contacts.iter().enumerate() {
                let Some(&lambda) = self.last.get(&c.id) else {
                    continue;
                };
                self.lambda[i] = lambda;
                let row = pack(&mut self.rows, &mut self.weight, i, c, diagonal);
                row.add_weighted(lambda, delta.as_mut_slice());
                mark_moved(&mut self.moved, &mut self.moved_blocks, row.starts());
                self.visited[i] = true;
            }
            self.working.clear();
            self.working
                .extend((0..contacts.len()).filter(|&i| self.visited[i]));
        }
        let pair = if self.threads >= 2 {
            pair_thread::shared()
        } else {
            None
        };
        for _ in 0..ROUNDS {
            let mut split = self.make_split(contacts, diagonal, &delta);
            for sweep in 0..SWEEPS {
                let worst = if split {
                    self.split.sweep(pair)
                } else {
                    self.sweep_whole(contacts, diagonal, &mut delta)
                };
                if worst <= tolerance {
                    break;
                }
                if sweep % JOIN_EVERY != JOIN_EVERY - 1 {
                    continue;
                }
                let before = self.working.len();
                if split {
                    // The check reads δ from the halves' arrays.
                    let halves = std::mem::take(&mut self.split);
                    let dot = |row: &Packed| halves.dot(row, &delta);
                    let joined = self.join(contacts, diagonal, dot, tolerance, pair);
                    self.split = halves;
                    if joined {
                        split = self.extend_split(before, contacts, diagonal, &delta);
                        if !split {
                            self.split.write_back(&mut self.lambda, &mut delta);
                        }
                    }
                } else {
                    let dot = |row: &Packed| row.dot(delta.as_slice());
                    if self.join(contacts, diagonal, dot, tolerance, pair) {
                        split = self.make_split(contacts, diagonal, &delta);
                    }
                }
            }
            if split {
                self.split.write_back(&mut self.lambda, &mut delta);
            }
            let dot = |row: &Packed| row.dot(delta.as_slice());
            if !self.join(contacts, diagonal, dot, tolerance, pair) {
                break;
            }
        }
        self.last.clear();
        self.last.extend(
            self.working
                .iter()
                .filter(|&&i| self.lambda[i] > 0.0)
                .map(|&i| (contacts[i].id, self.lambda[i])),
        );
        delta.iter().all(|x| x.is_finite()).then_some(delta)
    }

    /// One sweep over the whole working set, in its order: each contact's
    /// λ moved by [`RELAXATION`] times the step that meets its target,
    /// projected on λ ≥ 0. Returns the largest gap below its target or
    /// change a visit made (in m).
    fn sweep_whole(
        &mut self,
        contacts: &[Contact],
        diagonal: &[f64],
        delta: &mut DVector<f64>,
    ) -> f64 {
        let mut worst = 0.0_f64;
        for &i in &self.working {
            if self.weight[i].is_nan() {
                pack(&mut self.rows, &mut self.weight, i, &contacts[i], diagonal);
            }
            let weight = self.weight[i];
            if weight.is_nan() || weight <= 0.0 {
                continue;
            }
            let row = &self.rows[i];
            let above = self.slack[i] + row.dot(delta.as_slice());
            let lambda = (self.lambda[i] - RELAXATION * above / weight).max(0.0);
            let change = lambda - self.lambda[i];
            // A gap below its target, or one the visit moves (an
            // over-relaxed λ overshoots and is taken back).
            worst = worst.max(-above).max(change.abs() * weight);
            if change != 0.0 {
                self.lambda[i] = lambda;
                row.add_weighted(change, delta.as_mut_slice());
                mark_moved(&mut self.moved, &mut self.moved_blocks, row.starts());
            }
        }
        worst
    }

    /// Adds the contacts that joined the working set from index `from` on
    /// to its split ([`split::Split::extend`]); false when they cannot be
    /// (the split is then left for the whole set).
    fn extend_split(
        &mut self,
        from: usize,
        contacts: &[Contact],
        diagonal: &[f64],
        delta: &DVector<f64>,
    ) -> bool {
        let lift = split::Lift {
            contacts,
            diagonal,
            slack: &self.slack,
            rows: &mut self.rows,
            weight: &mut self.weight,
            lambda: &self.lambda,
        };
        let (moved, blocks) = (&mut self.moved, &mut self.moved_blocks);
        self.split
            .extend(&self.working[from..], lift, delta, |starts| {
                mark_moved(moved, blocks, starts)
            })
    }

    /// Splits the working set for the sweeps ([`split::Split::make`]),
    /// or false to sweep it whole. Every block a working contact touches
    /// counts as moved: the lift's checks then read the contacts on them
    /// that have not joined, a few more than the blocks δ has moved, which
    /// a check finds no deeper (nᵢᵀδ = 0 on the others' blocks).
    fn make_split(&mut self, contacts: &[Contact], diagonal: &[f64], delta: &DVector<f64>) -> bool {
        let lift = split::Lift {
            contacts,
            diagonal,
            slack: &self.slack,
            rows: &mut self.rows,
            weight: &mut self.weight,
            lambda: &self.lambda,
        };
        let (moved, blocks) = (&mut self.moved, &mut self.moved_blocks);
        self.split.make(&self.working, lift, delta, |starts| {
            mark_moved(moved, blocks, starts)
        })
    }

    /// Every contact the lift took deeper (below −`tolerance` at δ, with
    /// nᵢᵀδ by `dot`) joins the working set, in the contacts' order; whether
    /// any did. Only a contact on a block that δ moved can: on the others
    /// nᵢᵀδ is exactly zero and the slack is not negative. Those contacts
    /// are queued once, when their block first moves, and read at every
    /// check until they join; many are read half on each thread.
    fn join(
        &mut self,
        contacts: &[Contact],
        diagonal: &[f64],
        dot: impl Fn(&Packed) -> f64 + Sync,
        tolerance: f64,
        pair: Option<&PairThread>,
    ) -> bool {
        for &s in &self.moved_blocks[self.queued_blocks..] {
            for &i in &self.on_block[self.first[s]..self.first[s + 1]] {
                if !self.visited[i] && !self.queued[i] {
                    self.queued[i] = true;
                    self.near.push(i);
                    pack(&mut self.rows, &mut self.weight, i, &contacts[i], diagonal);
                }
            }
        }
        self.queued_blocks = self.moved_blocks.len();
        // Which queued contacts are deeper, half of them on each thread
        // when there are many.
        let (slack, rows, near) = (&self.slack, &self.rows, &self.near);
        self.deeper.clear();
        self.deeper.resize(near.len(), false);
        let check = |part: &[usize], out: &mut [bool]| {
            for (&i, deeper) in part.iter().zip(out) {
                *deeper = slack[i] + dot(&rows[i]) < -tolerance;
            }
        };
        let half = near.len() / 2;
        let (first, second) = near.split_at(half);
        let (out_first, out_second) = self.deeper.split_at_mut(half);
        let work = near.len() >= split::SPLIT_MIN && pair_thread::pays();
        both(
            pair,
            work,
            || check(first, out_first),
            || check(second, out_second),
        );
        let start = self.working.len();
        let (visited, working, deeper) = (&mut self.visited, &mut self.working, &self.deeper);
        let mut k = 0;
        self.near.retain(|&i| {
            let join = deeper[k];
            k += 1;
            if join {
                visited[i] = true;
                working.push(i);
            }
            !join
        });
        self.working[start..].sort_unstable();
        self.working.len() > start
    }

    /// Whether a displacement δ meets what [`Self::lift`] would ask of
    /// each of `contacts`, within `tolerance`: a lift's result stands for
    /// contacts added to the ones it was taken over when this holds for
    /// them.
    pub fn holds<'c>(
        contacts: impl IntoIterator<Item = &'c Contact>,
        base: impl Fn(&Contact) -> f64,
        floor: impl Fn(&Contact) -> f64,
        depth: impl Fn(&Contact) -> f64,
        delta: &DVector<f64>,
        tolerance: f64,
    ) -> bool {
        contacts.into_iter().all(|c| {
            let (slack, _) = target(c, &base, &floor, &depth);
            slack + c.jacobian.normal_dot(delta) >= -tolerance
        })
    }

    /// Makes the next [`Self::lift`] start from this one's impulses, each
    /// on the contact of its identity, and sweep those contacts from the
    /// start: for a lift over nearly the same contacts (the midpoint's
    /// guard searching again further out). It ends at the same δ within
    /// the tolerance, in a few sweeps instead of hundreds.
    pub fn start_next_from_last(&mut self) {
        self.from_last = true;
    }

    /// The contacts on each velocity block of `dof` velocities (a counting
    /// sort by block start), and no block moved.
    fn index_blocks(&mut self, contacts: &[Contact], dof: usize) {
        self.first.clear();
        self.first.resize(dof + 2, 0);
        for c in contacts {
            for b in c.jacobian.blocks() {
                self.first[b.start + 2] += 1;
            }
        }
        for s in 2..self.first.len() {
            self.first[s] += self.first[s - 1];
        }
        self.on_block.clear();
        self.on_block.resize(self.first[dof + 1], 0);
        for (i, c) in contacts.iter().enumerate() {
            for b in c.jacobian.blocks() {
                let at = &mut self.first[b.start + 1];
                self.on_block[*at] = i;
                *at += 1;
            }
        }
        self.first.truncate(dof + 1);
        self.moved.clear();
        self.moved.resize(dof, false);
        self.moved_blocks.clear();
        self.queued.clear();
        self.queued.resize(contacts.len(), false);
        self.queued_blocks = 0;
        self.near.clear();
    }
}

/// The most velocities of a body block (a body in space).
const BLOCK: usize = 6;

/// A contact's normal row nᵢ and M⁻¹'s diagonal on its one or two body
/// blocks, side by side: a visit reads them from one place instead of
/// from the contact's Jacobian and the whole diagonal (the lifts' sweeps
/// and checks are a third of a large granular step). The arithmetic is
/// the Jacobian's, to the bit.
#[derive(Debug, Clone, Copy, Default)]
struct Packed {
    /// Where each block starts in the velocity, and how many blocks.
    starts: [usize; 2],
    blocks: usize,
    /// Velocities per block (the same for every rigid body of a model).
    len: usize,
    /// nᵢ on the blocks.
    n: [[f64; BLOCK]; 2],
    /// M⁻¹'s diagonal on the blocks.
    inverse: [[f64; BLOCK]; 2],
}

impl Packed {
    fn new(c: &Contact, diagonal: &[f64]) -> Self {
        let mut out = Self::default();
        let row = c.jacobian.row(0);
        let mut offset = 0;
        for (k, b) in c.jacobian.blocks().iter().enumerate().take(2) {
            debug_assert!(b.len <= BLOCK, "a rigid body's block");
            let len = b.len.min(BLOCK);
            out.starts[k] = b.start;
            out.len = len;
            for j in 0..len {
                out.n[k][j] = row[offset + j];
                out.inverse[k][j] = diagonal[b.start + j];
            }
            out.blocks = k + 1;
            offset += b.len;
        }
        out
    }

    /// Where its blocks start.
    fn starts(&self) -> &[usize] {
        &self.starts[..self.blocks]
    }

    /// nᵢᵀM⁻¹nᵢ (summed as [`crate::model::ContactJacobian::self_coupling`]).
    fn weight(&self) -> f64 {
        let mut sum = 0.0;
        for k in 0..self.blocks {
            for j in 0..self.len {
                sum += self.n[k][j] * self.inverse[k][j] * self.n[k][j];
            }
        }
        sum
    }

    /// nᵢᵀv.
    fn dot(&self, v: &[f64]) -> f64 {
        let mut sum = 0.0;
        for k in 0..self.blocks {
            let part = &v[self.starts[k]..];
            // The same sum; a length the compiler knows is unrolled.
            if self.len == BLOCK {
                sum += (0..BLOCK).map(|j| self.n[k][j] * part[j]).sum::<f64>();
            } else {
                sum += (0..self.len).map(|j| self.n[k][j] * part[j]).sum::<f64>();
            }
        }
        sum
    }

    /// v += α M⁻¹nᵢ (rounded as
    /// [`crate::model::ContactJacobian::add_weighted_row`]).
    fn add_weighted(&self, alpha: f64, v: &mut [f64]) {
        for k in 0..self.blocks {
            let add = |part: &mut [f64]| {
                for ((x, d), n) in part.iter_mut().zip(&self.inverse[k]).zip(&self.n[k]) {
                    *x += d * alpha * n;
                }
            };
            let part = &mut v[self.starts[k]..self.starts[k] + self.len];
            // Each entry on its own, so the same bits either way; over a
            // length the compiler knows, vector operations.
            match <&mut [f64; BLOCK]>::try_from(&mut *part) {
                Ok(block) => add(block),
                Err(_) => add(part),
            }
        }
    }
}

/// Packs contact c (index i) into `rows` with its `weight`, and returns
/// the packed row.
fn pack<'r>(
    rows: &'r mut [Packed],
    weight: &mut [f64],
    i: usize,
    c: &Contact,
    diagonal: &[f64],
) -> &'r Packed {
    rows[i] = Packed::new(c, diagonal);
    weight[i] = rows[i].weight();
    &rows[i]
}

/// How far contact c's gap is above what a lift asks of it at δ = 0, and
/// whether it is lifted: a gap more than its depth below its floor is
/// lifted onto the floor (a negative slack), any other is kept from going
/// deeper than the lesser of its base and floor (a slack of at least 0).
fn target(
    c: &Contact,
    base: impl Fn(&Contact) -> f64,
    floor: impl Fn(&Contact) -> f64,
    depth: impl Fn(&Contact) -> f64,
) -> (f64, bool) {
    let slack = base(c) - floor(c);
    let lifted = slack < -depth(c);
    (if lifted { slack } else { slack.max(0.0) }, lifted)
}

/// Marks the blocks that start at `starts` as moved by δ (`moved`, by
/// block start) and lists those first moved (`blocks`).
fn mark_moved(moved: &mut [bool], blocks: &mut Vec<usize>, starts: &[usize]) {
    for &start in starts {
        if !moved[start] {
            moved[start] = true;
            blocks.push(start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ContactId, ContactJacobian, Other};
    use nalgebra::DMatrix;

    fn contact(normal: &[f64], gap: f64) -> Contact {
        let n = DVector::from_column_slice(normal);
        Contact {
            id: ContactId {
                a: 0,
                b: Other::World,
                feature: 0,
                cut: 0,
            },
            gap,
            jacobian: ContactJacobian::dense(&n, &DMatrix::zeros(n.len(), 0)),
            frame: None,
        }
    }

    /// One gap below its floor is lifted onto it, within the tolerance,
    /// along M⁻¹n.
    #[test]
    fn one_gap_is_lifted_onto_its_floor() {
        let contacts = [contact(&[1.0, 0.0], -0.5)];
        let inverse_mass = DVector::from_vec(vec![0.5, 1.0]);
        let mut guard = Guard::default();
        let delta = guard
            .lift(
                &contacts,
                |c| c.gap,
                |_| 0.0,
                |_| 1e-9,
                &inverse_mass,
                1e-12,
            )
            .expect("lifted");
        assert!(
            (delta[0] - 0.5).abs() <= 1e-12 && delta[1] == 0.0,
            "{delta}"
        );
    }

    /// Two bodies pressed into each other and into a wall: the solution of
    /// the LCP (closed form: both constraints tight), not of each alone.
    #[test]
    fn coupled_gaps_reach_the_lcp_solution() {
        // Body 1 (x₁) against a wall at 0, body 2 (x₂) against body 1:
        // g₁ = x₁ + δ₁ ≥ 0, g₂ = (x₂ − x₁) + δ₂ − δ₁ ≥ 0, unit masses.
        let contacts = [contact(&[1.0, 0.0], -0.1), contact(&[-1.0, 1.0], -0.2)];
        let inverse_mass = DVector::from_vec(vec![1.0, 1.0]);
        let mut guard = Guard::default();
        let delta = guard
            .lift(
                &contacts,
                |c| c.gap,
                |_| 0.0,
                |_| 1e-11,
                &inverse_mass,
                1e-14,
            )
            .expect("lifted");
        // Tight: δ₁ = 0.1, δ₂ − δ₁ = 0.2.
        assert!((delta[0] - 0.1).abs() < 1e-12, "{delta}");
        assert!((delta[1] - 0.3).abs() < 1e-12, "{delta}");
    }

    /// A lift over one contact stands for a second contact it leaves at
    /// or above its target, and not for one it takes below it: a body
    /// lifted off a wall at 0 by 0.1 towards a second body 0.3 away stands
    /// (that gap ends at 0.2), 0.1 away too (touching), 0.05 away not
    /// (−0.05).
    #[test]
    fn a_lift_holds_for_an_added_contact_only_above_its_target() {
        let wall = [contact(&[1.0, 0.0], -0.1)];
        let inverse_mass = DVector::from_vec(vec![1.0, 1.0]);
        let delta = Guard::default()
            .lift(&wall, |c| c.gap, |_| 0.0, |_| 1e-11, &inverse_mass, 1e-14)
            .expect("lifted");
        let holds = |gap: f64| {
            let added = [contact(&[-1.0, 1.0], gap)];
            Guard::holds(&added, |c| c.gap, |_| 0.0, |_| 1e-11, &delta, 1e-12)
        };
        assert!(holds(0.3));
        assert!(holds(0.1));
        assert!(!holds(0.05));
    }

    /// Only a gap past its depth is lifted; one the lift would take deeper
    /// than it was joins and holds (closed form: both tight).
    #[test]
    fn a_gap_within_its_depth_is_kept_not_lifted() {
        // g₁ = −0.5 + δ₁ is lifted; g₂ = −0.01 + δ₂ − δ₁ is within its depth
        // (0.1) and may not go deeper than −0.01: δ₂ = δ₁ = 0.5.
        let contacts = [contact(&[1.0, 0.0], -0.5), contact(&[-1.0, 1.0], -0.01)];
        let inverse_mass = DVector::from_vec(vec![1.0, 1.0]);
        let mut guard = Guard::default();
        let delta = guard
            .lift(&contacts, |c| c.gap, |_| 0.0, |_| 0.1, &inverse_mass, 1e-14)
            .expect("lifted");
        assert!(
            (delta[0] - 0.5).abs() < 1e-12 && (delta[1] - 0.5).abs() < 1e-12,
            "{delta}"
        );
        assert!(
            guard
                .lift(
                    &contacts[1..],
                    |c| c.gap,
                    |_| 0.0,
                    |_| 0.1,
                    &inverse_mass,
                    1e-14
                )
                .is_none()
        );
    }

    /// A lift started from the last one's impulses ends at the same δ (the
    /// closed form of the test above), and one that lifts nothing forgets
    /// them.
    #[test]
    fn a_lift_from_the_last_impulses_ends_at_the_same_displacement() {
        let mut contacts = [contact(&[1.0, 0.0], -0.5), contact(&[-1.0, 1.0], -0.01)];
        contacts[1].id.feature = 1;
        let inverse_mass = DVector::from_vec(vec![1.0, 1.0]);
        let mut guard = Guard::default();
        let lift = |guard: &mut Guard, contacts: &[Contact]| {
            guard.lift(contacts, |c| c.gap, |_| 0.0, |_| 0.1, &inverse_mass, 1e-14)
        };
        let cold = lift(&mut guard, &contacts).expect("lifted");
        guard.start_next_from_last();
        let warm = lift(&mut guard, &contacts).expect("lifted");
        for delta in [&cold, &warm] {
            assert!(
                (delta[0] - 0.5).abs() < 1e-12 && (delta[1] - 0.5).abs() < 1e-12,
                "{delta}"
            );
        }
        // Nothing below its floor: no lift, and no impulses kept.
        assert!(lift(&mut guard, &contacts[1..]).is_none());
        assert!(guard.last.is_empty());
    }

    /// Gaps above their floors, or an immovable pair, leave q alone.
    #[test]
    fn nothing_below_its_floor_is_no_displacement() {
        let contacts = [contact(&[1.0], 0.01)];
        let mut guard = Guard::default();
        let inverse_mass = DVector::from_vec(vec![1.0]);
        assert!(
            guard
                .lift(&contacts, |c| c.gap, |_| 0.0, |_| 0.0, &inverse_mass, 0.0)
                .is_none()
        );
        let fixed = DVector::from_vec(vec![0.0]);
        let delta = guard
            .lift(&contacts, |c| c.gap, |_| 1.0, |_| 0.0, &fixed, 0.0)
            .expect("a displacement, zero");
        assert_eq!(delta[0], 0.0);
    }

    /// A working set of three-body chains, 902 contacts along x, each
    /// chain's two contacts 0.1 below their floor: unit masses give the
    /// closed form δ = (−0.1, 0, 0.1) along x per chain. The set is split
    /// in two halves of space and the contacts across the cut (a chain at
    /// the median straddles it), and the lift is the same on one thread
    /// and two, bit for bit.
    #[test]
    fn a_split_lift_meets_the_closed_form_on_one_thread_and_two() {
        use crate::model::{Block, ContactFrame};
        use nalgebra::Vector3;
        let chains = 451;
        let mut contacts = Vec::new();
        for k in 0..chains {
            for link in 0..2 {
                let (a, b) = (3 * k + link, 3 * k + link + 1);
                let blocks = [
                    Block {
                        start: 6 * a,
                        len: 6,
                    },
                    Block {
                        start: 6 * b,
                        len: 6,
                    },
                ];
                let mut jacobian = ContactJacobian::zeros(&blocks, 0);
                // g = x_b − x_a − 0.1: the normal row is −1 on a's x, +1 on b's.
                jacobian.block_row_mut(0, 0)[0] = -1.0;
                jacobian.block_row_mut(0, 1)[0] = 1.0;
                let x = 1.0 * k as f64 + 0.3 * (link as f64 + 0.5);
                contacts.push(Contact {
                    id: ContactId {
                        a,
                        b: Other::Body(b),
                        feature: 0,
                        cut: 0,
                    },
                    gap: -0.1,
                    jacobian,
                    frame: Some(ContactFrame {
                        point: Vector3::new(x, 0.0, 0.0),
                        normal: Vector3::x(),
                        tangents: Vec::new(),
                    }),
                });
            }
        }
        assert!(contacts.len() >= split::SPLIT_MIN);
        let inverse_mass = DVector::from_element(6 * 3 * chains, 1.0);
        let lifts: Vec<DVector<f64>> = [1, 2]
            .into_iter()
            .map(|threads| {
                let mut guard = Guard {
                    threads,
                    ..Guard::default()
                };
                let delta = guard
                    .lift(
                        &contacts,
                        |c| c.gap,
                        |_| 0.0,
                        |_| 1e-9,
                        &inverse_mass,
                        1e-12,
                    )
                    .expect("lifted");
                let parts = guard.split.part_sizes();
                assert!(
                    parts.iter().all(|&n| n > 0),
                    "{parts:?} contacts in the parts"
                );
                delta
            })
            .collect();
        assert!(
            lifts[0]
                .iter()
                .zip(lifts[1].iter())
                .all(|(x, y)| x.to_bits() == y.to_bits()),
            "one thread and two differ"
        );
        for k in 0..chains {
            for (body, expected) in [(3 * k, -0.1), (3 * k + 1, 0.0), (3 * k + 2, 0.1)] {
                let x = lifts[0][6 * body];
                assert!(
                    (x - expected).abs() < 1e-9,
                    "chain {k}: body {body} moved {x}"
                );
            }
        }
    }
}
