//! Islands solved earlier in the same step, or in the step just before,
//! reused when the same LCP comes back bit for bit.
//!
//! Stewart–Trinkle's fixed-point iterations (§3.6) solve every island again
//! at each iteration of the step, and the step iterates until its deepest
//! island converges: on the generated pile of 200, 5.7 solves a step
//! against 2.9 on the pile of 22, most of them of islands (a body or two
//! resting on the table) that converged at the first. The stepper holds a
//! converged island's linearization velocity still from then on
//! ([`super::super::stewart_trinkle`]), so its contacts, Jacobians and
//! right-hand side come back identical, and its solution (an exact solution
//! of that identical LCP) is taken from here instead of solving it again.
//! The key is every number the island's LCP is built from: the contacts'
//! identities, blocks, rows, μ and right-hand-side terms, and v* and W on
//! the island's velocities. The warm start is not in it: any solution of
//! the same LCP is one.
//!
//! A body at rest on a table or on other resting bodies comes back bit for
//! bit from step to step too (v = 0 exactly and q unchanged: the three
//! waiting balls of `four_balls`), so the islands of a step's last solve
//! are carried into the next step. There a solution must also be the one a
//! solve would give, so that a simulation restored from a checkpoint
//! (whose memo is empty) steps to the same bits: an entry is carried only
//! when its solve was a function of the key and of what is checked at
//! reuse alone ([`Strict`]: the scheme's own LCP solved at the first rung
//! without a pivot and without the velocity-space refinement, from a warm
//! start that the reuse compares), and only into the step that starts
//! where its step ended.

use crate::model::{Contact, ContactId};
use rustc_hash::{FxHashMap as HashMap, FxHasher};
use std::hash::{Hash, Hasher};

/// One island's solve: its key, and what the solve wrote.
#[derive(Debug, Clone, Default)]
pub(in crate::solver) struct Solved {
    pub(super) key: Vec<u64>,
    /// The key's hash.
    pub(super) hash: u64,
    pub(super) ids: Vec<ContactId>,
    /// z and w in the island's own order.
    pub z: Vec<f64>,
    pub w: Vec<f64>,
    /// The final basis, for the warm start.
    pub basis: Vec<usize>,
    /// The island's velocity change W J z, by velocity index.
    pub velocity: Vec<(usize, f64)>,
    pub residual: f64,
    /// Set when the solve was a function of the key and of these alone,
    /// so that the entry can be carried into the next step.
    pub strict: Option<Strict>,
    /// Carried from the step before: reused only after [`Strict`]'s checks
    /// (then it belongs to this step).
    pub carried: bool,
}

/// What else a carried entry's solve depended on. Lemke's solution of an
/// island is a function of its LCP (the key), its warm start, the ladder's
/// first rung and, through the refinement's test (`needs_refinement`), the
/// velocity scale of the whole problem: an entry solved at the first rung,
/// level 0, is reused when the warm start is the same and the test again
/// declines the refinement.
#[derive(Debug, Clone, Default)]
pub(in crate::solver) struct Strict {
    /// The warm start mapped for the island (`None`: none was mapped).
    pub warm: Option<Vec<usize>>,
    /// The refinement test's cancellation of the solution (m/s).
    pub cancellation: f64,
}

/// An island's key and its hash ([`Memo::find`]).
#[derive(Debug, Clone, Default)]
pub(in crate::solver) struct Key {
    pub(super) words: Vec<u64>,
    pub(super) hash: u64,
}

/// The islands of the last solve and of the current one.
#[derive(Debug, Clone, Default)]
pub(in crate::solver) struct Memo {
    pub(super) last: Vec<Solved>,
    pub(super) by_key: HashMap<u64, usize>,
    pub(super) now: Vec<Solved>,
    /// Storage for the next entries.
    pub(super) spare: Vec<Solved>,
    /// The time (bits) at which the step that kept `now` ended.
    pub(super) ended: Option<u64>,
}

impl Memo {
    /// Starts a step at time `t`: the islands of the last solve are carried
    /// when their step ended at `t` (the step just before, not a sibling
    /// clone's step from the same state), else forgotten.
    pub fn begin_step(&mut self, t: f64) {
        release(&mut self.spare, &mut self.last);
        self.by_key.clear();
        if self.ended.take() == Some(t.to_bits()) {
            for solved in &mut self.now {
                solved.carried = true;
            }
        } else {
            release(&mut self.spare, &mut self.now);
        }
    }

    /// Ends a step, accepted, at time `t`.
    pub fn end_step(&mut self, t: f64) {
        self.ended = Some(t.to_bits());
    }

    /// Starts a solve: the islands of the one before become the ones to
    /// reuse.
    pub fn begin(&mut self) {
        release(&mut self.spare, &mut self.last);
        std::mem::swap(&mut self.last, &mut self.now);
        self.by_key.clear();
        for (i, solved) in self.last.iter().enumerate() {
            self.by_key.entry(solved.hash).or_insert(i);
        }
    }

    /// Builds into `key` the key of the island `members` of `contacts`
    /// (`terms` appends a contact's right-hand-side numbers and μ,
    /// `velocities` the island's v* and W) and returns the last solve's
    /// entry with the same key, if any, by its index ([`Self::entry`]).
    pub fn find(
        &self,
        members: &[usize],
        contacts: &[&Contact],
        terms: impl Fn(usize, &mut Vec<u64>),
        velocities: impl Fn(&mut Vec<u64>),
        key: &mut Key,
    ) -> Option<usize> {
        let words = &mut key.words;
        words.clear();
        for &j in members {
            let jac = &contacts[j].jacobian;
            for block in jac.blocks() {
                words.push(block.start as u64);
                words.push(block.len as u64);
            }
            words.push(jac.stored() as u64);
            for r in 0..=jac.friction_count() {
                words.extend(jac.row(r).iter().map(|x| x.to_bits()));
            }
            terms(j, words);
        }
        velocities(words);
        key.hash = hash(words);
        let last = &self.last;
        self.by_key.get(&key.hash).copied().filter(|&i| {
            let solved = &last[i];
            solved.key == key.words
                && solved.ids.len() == members.len()
                && solved
                    .ids
                    .iter()
                    .zip(members)
                    .all(|(id, &j)| *id == contacts[j].id)
        })
    }

    /// The last solve's entry `i` ([`Self::find`]).
    pub fn entry(&self, i: usize) -> &Solved {
        &self.last[i]
    }

    /// Keeps an island not found, by its `key` (whose storage it takes),
    /// as solved with `fill` writing the rest of its entry.
    pub fn keep(
        &mut self,
        key: &mut Key,
        members: &[usize],
        contacts: &[&Contact],
        fill: impl FnOnce(&mut Solved),
    ) {
        let mut solved = self.spare.pop().unwrap_or_default();
        std::mem::swap(&mut solved.key, &mut key.words);
        solved.hash = key.hash;
        solved.ids.clear();
        solved.ids.extend(members.iter().map(|&j| contacts[j].id));
        solved.carried = false;
        solved.strict = None;
        fill(&mut solved);
        self.now.push(solved);
    }

    /// Keeps the last solve's entry `i`, found, for the next solve too (an
    /// island comes once in a solve, so it moves).
    pub fn keep_found(&mut self, i: usize) {
        let mut solved = std::mem::take(&mut self.last[i]);
        solved.carried = false;
        self.now.push(solved);
    }
}

/// Moves `entries` into `spare` for their storage, except the empty
/// places that [`Memo::keep_found`] left (the entry itself moved on): kept,
/// they grew the pool by one entry a reuse (the pile of 200 reuses about
/// 450 islands a step), and its copies with it.
pub(super) fn release(spare: &mut Vec<Solved>, entries: &mut Vec<Solved>) {
    spare.extend(entries.drain(..).filter(|solved| solved.key.capacity() > 0));
}

/// A key's hash.
pub(super) fn hash(key: &[u64]) -> u64 {
    let mut hasher = FxHasher::default();
    key.hash(&mut hasher);
    hasher.finish()
}
