//! Contacts kept between searches: a [`ContactSet`] holds the contacts found
//! at some q and lends their storage (Jacobian rows, friction directions) to
//! the next search, so a stepper that finds contacts every step allocates
//! only when the number of contacts or their size grows.

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
