//! Contacts kept between searches: a [`ContactSet`] holds the contacts found
//! at some q and lends their storage (Jacobian rows, friction directions) to
//! the next search, so a stepper that finds contacts every step allocates
//! only when the number of contacts or their size grows.

use super::BroadPhase;
use crate::model::Contact;

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
