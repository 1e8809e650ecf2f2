//! The warm start of Lemke's method across steps, by contact identity: the
//! one cache every form and every scheme shares.
//!
//! After a solved LCP the cache keeps, for each contact, which of its own
//! unknowns were basic — β₁ … β_k, c_n, λ in (29) and (24); Λ_N, and Λ_R, ξ_L
//! when it has friction, in (33) ([`Slots`]). The next LCP gets, for the
//! contacts that persist (same [`ContactId`], as many unknowns as before),
//! the same unknowns basic; new contacts start with their slacks basic
//! (their z nonbasic). Lemke then starts from that complementary basis
//! ([`crate::lcp::LemkeOptions::warm_start`]) and falls back to the cold start
//! from the covering vector when the basis is singular or the warm run fails.
//!
//! A basis is mapped contact by contact onto the new LCP's own layout, so its
//! indices are always in range, whatever changed in between (the pyramid's
//! edge count k, the contacts, NCP iterations). It only means something for
//! the same formulation of the same scheme: the cache is keyed by the
//! [`Form`] as well, and [`WarmStart::clear`] drops it on a reset, a scene
//! change or a failed step.

use super::problem::Layout;
use crate::model::ContactId;
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// Which problem a basis belongs to, and with it how the contact solver
/// treats the problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Form {
    /// Stewart–Trinkle's LCP (29) on position level (γ/h in the normal
    /// rows). Without a previous basis, Lemke starts from the basis of the
    /// frictionless problem (Lloyd §4: the contacts that push without
    /// friction are the likely active set; friction variables enter from
    /// there).
    Position,
    /// Moreau–Jean's impact law on the k-edge pyramid: (29) on velocity level
    /// with ε_N γ_N^A and ε_T D̃ᵀu^A in its right-hand side.
    Impact,
    /// Moreau–Jean's planar LCP (33) (Glocker–Studer §6).
    PlanarImpact,
    /// Anitescu–Potra's LCP (24), joints eliminated (W their Schur
    /// complement): equilibrated and solved by parts.
    Mixed,
}

impl Form {
    /// Whether a cold solve starts from the frictionless problem's basis.
    pub fn frictionless_start(self) -> bool {
        self == Self::Position
    }

    /// Whether a dense problem is equilibrated and split into the
    /// independent parts of its matrix.
    pub fn by_parts(self) -> bool {
        self == Self::Mixed
    }
}

/// Where one contact's unknowns sit in an LCP, in the order the cache keeps
/// them: a run of consecutive indices, then up to two more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slots {
    run: Range<usize>,
    more: [usize; 2],
    count: usize,
}

impl Slots {
    /// A contact of (29) or (24): its friction directions `friction`, its
    /// normal impulse and its λ.
    pub fn pyramid(friction: Range<usize>, normal: usize, lambda: usize) -> Self {
        Self {
            run: friction,
            more: [normal, lambda],
            count: 2,
        }
    }

    /// A contact of (33): its Λ_N, and with friction its Λ_R and ξ_L.
    pub fn planar(normal: usize, friction: Option<(usize, usize)>) -> Self {
        let (more, count) = friction.map_or(([0, 0], 0), |(r, l)| ([r, l], 2));
        Self {
            run: normal..normal + 1,
            more,
            count,
        }
    }

    fn len(&self) -> usize {
        self.run.len() + self.count
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.run
            .clone()
            .chain(self.more[..self.count].iter().copied())
    }
}

/// The per-contact bases of the last solved LCPs of one form.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WarmStart {
    form: Option<Form>,
    /// Each contact's unknowns in `basic`: (first, count).
    contacts: HashMap<ContactId, (usize, usize)>,
    /// Whether each recorded unknown was basic, contact after contact.
    basic: Vec<bool>,
    /// Work space: which unknowns of the LCP being recorded are basic.
    #[serde(skip)]
    marks: Vec<bool>,
}

/// Whether every (first, count) of `contacts` lies in `0..len`.
fn within(contacts: &HashMap<ContactId, (usize, usize)>, len: usize) -> bool {
    contacts
        .values()
        .all(|&(first, count)| first.checked_add(count).is_some_and(|end| end <= len))
}

impl WarmStart {
    /// Whether every contact's flags lie in the recorded basis (a
    /// snapshot's memory is checked before use).
    pub fn is_consistent(&self) -> bool {
        within(&self.contacts, self.basic.len())
    }

    /// A warm start as a snapshot kept it: the form of its bases and each
    /// contact's basic flags, in the order of [`Slots`].
    pub fn restored(form: Option<Form>, contacts: Vec<(ContactId, Vec<bool>)>) -> Self {
        let mut warm = Self {
            form,
            ..Self::default()
        };
        for (id, flags) in contacts {
            warm.contacts.insert(id, (warm.basic.len(), flags.len()));
            warm.basic.extend(flags);
        }
        warm
    }

    /// Forgets everything (reset, scene change, a failed step).
    pub fn clear(&mut self) {
        self.contacts.clear();
        self.basic.clear();
    }

    /// Forgets the last bases and starts recording those of formulation
    /// `form` (one [`WarmStart::add_slots`] per independent LCP of a step).
    pub fn begin(&mut self, form: Form) {
        self.form = Some(form);
        self.clear();
    }

    /// Adds the basis `basis` (indices of basic z) of one solved LCP of
    /// `size` unknowns, of the formulation given to [`WarmStart::begin`],
    /// whose contacts are `ids` with their unknowns at `slots`, in order.
    pub fn add_slots(
        &mut self,
        ids: &[ContactId],
        slots: impl IntoIterator<Item = Slots>,
        size: usize,
        basis: &[usize],
    ) {
        self.marks.clear();
        self.marks.resize(size, false);
        for &i in basis {
            if let Some(b) = self.marks.get_mut(i) {
                *b = true;
            }
        }
        for (&id, slots) in ids.iter().zip(slots) {
            let first = self.basic.len();
            for i in slots.iter() {
                self.basic.push(self.marks.get(i).copied().unwrap_or(false));
            }
            self.contacts.insert(id, (first, slots.len()));
        }
    }

    /// The previous basis of formulation `form` mapped onto a new LCP whose
    /// contacts are `ids` with their unknowns at `slots`, in order; `None`
    /// when no contact persists.
    pub fn basis_slots(
        &self,
        form: Form,
        ids: &[ContactId],
        slots: impl IntoIterator<Item = Slots>,
    ) -> Option<Vec<usize>> {
        if Some(form) != self.form || self.contacts.is_empty() {
            return None;
        }
        let mut basis = Vec::new();
        let mut persisted = false;
        for (id, slots) in ids.iter().zip(slots) {
            if let Some(&(first, count)) = self.contacts.get(id)
                && count == slots.len()
            {
                persisted = true;
                let flags = &self.basic[first..first + count];
                basis.extend(slots.iter().zip(flags).filter(|(_, b)| **b).map(|(i, _)| i));
            }
        }
        persisted.then_some(basis)
    }

    /// [`Self::begin`] and [`Self::add`]: the basis of one solved (29).
    pub fn record(
        &mut self,
        form: Form,
        ids: &[ContactId],
        friction: &[usize],
        layout: Layout,
        basis: &[usize],
    ) {
        self.begin(form);
        self.add(ids, friction, layout, basis);
    }

    /// Adds the basis of one solved LCP laid out as (29) over `ids` with
    /// `friction[j]` directions each.
    pub fn add(&mut self, ids: &[ContactId], friction: &[usize], layout: Layout, basis: &[usize]) {
        self.add_slots(ids, pyramid_slots(friction, layout), layout.size(), basis);
    }

    /// The previous basis mapped onto a new LCP laid out as (29) over `ids`
    /// with `friction[j]` directions each; `None` when no contact persists.
    pub fn basis(
        &self,
        form: Form,
        ids: &[ContactId],
        friction: &[usize],
        layout: Layout,
    ) -> Option<Vec<usize>> {
        self.basis_slots(form, ids, pyramid_slots(friction, layout))
    }
}

/// The impulses each contact had in the last solve it took part in (row 0:
/// c_n, row i ≥ 1: βᵢ, N·s), by identity: the centre of the proximal shift
/// of the regularization ([`super::solve`]) and NSGS's warm start.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LastImpulses {
    /// Each contact's rows in `values`: (first, count).
    contacts: HashMap<ContactId, (usize, usize)>,
    values: Vec<f64>,
}

impl LastImpulses {
    /// Impulses as a snapshot kept them, by contact.
    pub fn restored(map: impl IntoIterator<Item = (ContactId, Vec<f64>)>) -> Self {
        let mut impulses = Self::default();
        for (id, values) in map {
            impulses.insert(id, values);
        }
        impulses
    }

    /// Contact `id`'s impulses, if it took part in the last solve.
    pub fn get(&self, id: &ContactId) -> Option<&[f64]> {
        self.contacts
            .get(id)
            .map(|&(first, count)| &self.values[first..first + count])
    }

    /// Sets contact `id`'s impulses (c_n, β₁ … β_k).
    pub fn insert(&mut self, id: ContactId, values: impl IntoIterator<Item = f64>) {
        let first = self.values.len();
        self.values.extend(values);
        self.contacts.insert(id, (first, self.values.len() - first));
    }

    /// Whether every contact's rows lie in the values (a snapshot's memory
    /// is checked before use).
    pub fn is_consistent(&self) -> bool {
        within(&self.contacts, self.values.len())
    }

    /// Forgets them all (the storage stays).
    pub fn clear(&mut self) {
        self.contacts.clear();
        self.values.clear();
    }
}

/// The fallback of a warm start `basis`: its normal impulses (the indices in
/// `normals`) alone, should the mapped basis end on a ray.
pub fn normals_only(basis: Option<&Vec<usize>>, normals: Range<usize>) -> Option<Vec<usize>> {
    basis.map(|b| b.iter().copied().filter(|i| normals.contains(i)).collect())
}

/// The unknowns of each contact of (29) with `friction[j]` directions, in
/// order.
pub fn pyramid_slots(friction: &[usize], layout: Layout) -> impl Iterator<Item = Slots> + '_ {
    friction.iter().enumerate().scan(0, move |column, (j, &k)| {
        let start = *column;
        *column += k;
        Some(Slots::pyramid(
            start..start + k,
            layout.normal(j),
            layout.lambda(j),
        ))
    })
}
