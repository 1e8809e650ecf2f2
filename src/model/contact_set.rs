//! Contacts kept between searches: a [`ContactSet`] holds the contacts found
//! at some q and lends their storage (Jacobian rows, friction directions) to
//! the next search, so a stepper that finds contacts every step allocates
//! only when the number of contacts or their size grows.

use super::pair_memo::KeptPairs;
use super::{Contact, ContactFrame, ContactId, Other};
use crate::geometry::PairContact;
use nalgebra::Vector3;

/// The broad phase's work space: world-aligned bounding boxes (centre, half
/// extents in m), the candidate body pairs and the sweep's work space.
#[derive(Debug, Clone, Default)]
pub struct BroadPhase {
    /// Bounding box of each body ([`super::rigid::world_box`]).
    pub boxes: Vec<(Vector3<f64>, Vector3<f64>)>,
    /// Body pairs (i < j) whose boxes overlap within the margin.
    pub pairs: Vec<(usize, usize)>,
    /// The sweep's work space ([`super::rigid::candidate_pairs_into`]).
    pub sweep: super::rigid::SweepSpace,
    /// The narrow phase's points of one pair.
    pub points: Vec<PairContact>,
    /// The second thread's narrow phase ([`crate::pair_thread`]): its
    /// points of one pair, and what each half found.
    pub points_b: Vec<PairContact>,
    pub found: Vec<super::rigid::Found>,
    pub found_b: Vec<super::rigid::Found>,
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

/// A list of contacts whose storage outlives it: clearing it keeps every
/// contact's allocations for the next fill.
#[derive(Debug, Clone, Default)]
pub struct ContactSet {
    pool: Vec<Contact>,
    len: usize,
    /// The broad phase's work space, for the searches that fill the set.
    pub broad: BroadPhase,
}

impl ContactSet {
    /// Empties the set (the storage stays).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Keeps the first `len` contacts.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Number of contacts.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The contacts.
    pub fn as_slice(&self) -> &[Contact] {
        &self.pool[..self.len]
    }

    /// The contacts, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [Contact] {
        &mut self.pool[..self.len]
    }

    /// One more contact, in storage left by an earlier one (any values): the
    /// caller sets every field.
    pub fn push_slot(&mut self) -> &mut Contact {
        if self.len == self.pool.len() {
            self.pool.push(Contact::placeholder());
        }
        self.len += 1;
        &mut self.pool[self.len - 1]
    }

    /// Appends a copy of `contact` in reused storage.
    pub fn push_copy(&mut self, contact: &Contact) {
        self.push_slot().clone_from(contact);
    }

    /// Appends `contact`.
    pub fn push(&mut self, contact: Contact) {
        *self.push_slot() = contact;
    }

    /// Makes the set a copy of `contacts`, reusing storage.
    pub fn copy_from<'c>(&mut self, contacts: impl IntoIterator<Item = &'c Contact>) {
        self.clear();
        for c in contacts {
            self.push_copy(c);
        }
    }

    /// The contacts, as a vector.
    pub fn into_vec(mut self) -> Vec<Contact> {
        self.pool.truncate(self.len);
        self.pool
    }
}

impl Contact {
    /// A contact to be overwritten (storage for [`ContactSet`]).
    fn placeholder() -> Self {
        Self {
            id: ContactId {
                a: 0,
                b: Other::World,
                feature: 0,
                cut: 0,
            },
            gap: 0.0,
            jacobian: super::ContactJacobian::empty(),
            frame: None,
        }
    }
}

impl Clone for Contact {
    fn clone(&self) -> Self {
        Self {
            id: self.id,
            gap: self.gap,
            jacobian: self.jacobian.clone(),
            frame: self.frame.clone(),
        }
    }

    /// Copies `source` into the storage already held.
    fn clone_from(&mut self, source: &Self) {
        self.id = source.id;
        self.gap = source.gap;
        self.jacobian.clone_from(&source.jacobian);
        match (&mut self.frame, &source.frame) {
            (Some(mine), Some(theirs)) => mine.clone_from(theirs),
            (mine, theirs) => *mine = theirs.clone(),
        }
    }
}

impl Clone for ContactFrame {
    fn clone(&self) -> Self {
        Self {
            point: self.point,
            normal: self.normal,
            tangents: self.tangents.clone(),
        }
    }

    /// Copies `source` into the storage already held.
    fn clone_from(&mut self, source: &Self) {
        self.point = source.point;
        self.normal = source.normal;
        self.tangents.clone_from(&source.tangents);
    }
}
