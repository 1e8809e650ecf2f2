//! Islands solved earlier in the same step, reused when the same LCP comes
//! back bit for bit.
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

use crate::model::{Contact, ContactId};
use rustc_hash::FxHashMap as HashMap;

/// One island's solve: its key, and what the solve wrote.
#[derive(Debug, Clone, Default)]
pub(super) struct Solved {
    key: Vec<u64>,
    ids: Vec<ContactId>,
    /// z and w in the island's own order.
    pub z: Vec<f64>,
    pub w: Vec<f64>,
    /// The final basis, for the warm start.
    pub basis: Vec<usize>,
    /// The island's velocity change W J z, by velocity index.
    pub velocity: Vec<(usize, f64)>,
    pub residual: f64,
}

/// The islands of the last solve and of the current one.
#[derive(Debug, Clone, Default)]
pub(super) struct Memo {
    last: Vec<Solved>,
    by_key: HashMap<u64, usize>,
    now: Vec<Solved>,
    /// Storage for the next entries.
    spare: Vec<Solved>,
    /// The key being looked up.
    key: Vec<u64>,
}

impl Memo {
    /// Forgets every island (a new step).
    pub fn clear(&mut self) {
        self.spare.append(&mut self.last);
        self.spare.append(&mut self.now);
        self.by_key.clear();
    }

    /// Starts a solve: the islands of the one before become the ones to
    /// reuse.
    pub fn begin(&mut self) {
        self.spare.append(&mut self.last);
        std::mem::swap(&mut self.last, &mut self.now);
        self.by_key.clear();
        for (i, solved) in self.last.iter().enumerate() {
            self.by_key.entry(hash(&solved.key)).or_insert(i);
        }
    }

    /// Builds the key of the island `members` of `contacts` (with `terms`
    /// its numbers per contact, see [`key_terms`]) and returns the last
    /// solve's entry with the same key, if any.
    pub fn find(
        &mut self,
        members: &[usize],
        contacts: &[&Contact],
        terms: impl Fn(usize, &mut Vec<u64>),
        velocities: impl Fn(&mut Vec<u64>),
    ) -> Option<&Solved> {
        let key = &mut self.key;
        key.clear();
        for &j in members {
            let jac = &contacts[j].jacobian;
            for block in jac.blocks() {
                key.push(block.start as u64);
                key.push(block.len as u64);
            }
            key.push(jac.stored() as u64);
            for r in 0..=jac.friction_count() {
                key.extend(jac.row(r).iter().map(|x| x.to_bits()));
            }
            terms(j, key);
        }
        velocities(key);
        let &i = self.by_key.get(&hash(key))?;
        let solved = &self.last[i];
        let same = solved.key == *key
            && solved.ids.len() == members.len()
            && solved
                .ids
                .iter()
                .zip(members)
                .all(|(id, &j)| *id == contacts[j].id);
        same.then_some(solved)
    }

    /// Keeps the last [`Self::find`]'s island, not found, as solved with
    /// `fill` writing the rest of its entry.
    pub fn keep(
        &mut self,
        members: &[usize],
        contacts: &[&Contact],
        fill: impl FnOnce(&mut Solved),
    ) {
        let mut solved = self.spare.pop().unwrap_or_default();
        std::mem::swap(&mut solved.key, &mut self.key);
        solved.ids.clear();
        solved.ids.extend(members.iter().map(|&j| contacts[j].id));
        fill(&mut solved);
        self.now.push(solved);
    }

    /// Keeps the entry `found` (from [`Self::find`]) for the next solve too.
    pub fn keep_found(&mut self) {
        let mut solved = self.spare.pop().unwrap_or_default();
        let key = std::mem::take(&mut self.key);
        if let Some(&i) = self.by_key.get(&hash(&key)) {
            solved.clone_from(&self.last[i]);
        }
        self.key = key;
        self.now.push(solved);
    }
}

/// A 64-bit hash of a key (FxHash's mixing over its words).
fn hash(key: &[u64]) -> u64 {
    key.iter().fold(key.len() as u64, |h, &x| {
        (h.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
    })
}
