//! The warm start of Lemke's method across steps, by contact identity.
//!
//! After a solved step the cache keeps, for each contact, which of its LCP
//! unknowns (β₁ … β_k, c_n, λ of (29)) were basic. The next LCP gets, for the
//! contacts that persist (same [`ContactId`], same number of friction
//! directions), the same unknowns basic; new contacts start with their slacks
//! basic (their z nonbasic). Lemke then starts from that complementary basis
//! ([`crate::lcp::LemkeOptions::warm_start`]) and falls back to the cold start
//! from the covering vector when the basis is singular or the warm run fails.
//!
//! A basis only means something for the same formulation of the same scheme:
//! the cache is keyed by the [`Form`] as well, and [`WarmStart::clear`]
//! drops it whenever parameters change the LCP's layout.

use super::assembly::Layout;
use crate::model::ContactId;
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

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

/// Which unknowns of one contact were basic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct ContactBasis {
    /// Basic β's, by direction index.
    friction: Vec<bool>,
    normal: bool,
    lambda: bool,
}

/// The per-contact basis of the last solved LCP.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WarmStart {
    form: Option<Form>,
    contacts: HashMap<ContactId, ContactBasis>,
    /// For formulations without the per-contact layout of (29) (the planar
    /// LCP (33)): the whole basis, reused only for the same contact list.
    exact: Option<(Form, Vec<ContactId>, Vec<usize>)>,
}

impl WarmStart {
    /// A warm start as a snapshot kept it: the form of its per-contact bases,
    /// each contact's basic friction unknowns, normal and λ, and the whole
    /// basis of a formulation not laid out as (29).
    pub fn restored(
        form: Option<Form>,
        contacts: Vec<(ContactId, Vec<bool>, bool, bool)>,
        exact: Option<(Form, Vec<ContactId>, Vec<usize>)>,
    ) -> Self {
        Self {
            form,
            contacts: contacts
                .into_iter()
                .map(|(id, friction, normal, lambda)| {
                    (
                        id,
                        ContactBasis {
                            friction,
                            normal,
                            lambda,
                        },
                    )
                })
                .collect(),
            exact,
        }
    }

    /// Forgets everything (reset, scene change, a failed step).
    pub fn clear(&mut self) {
        self.contacts.clear();
        self.exact = None;
    }

    /// Remembers the basis of a formulation that is not laid out as (29).
    pub fn record_exact(&mut self, form: Form, ids: &[ContactId], basis: &[usize]) {
        self.contacts.clear();
        self.exact = Some((form, ids.to_vec(), basis.to_vec()));
    }

    /// That basis, when the same formulation meets the same contacts again.
    pub fn exact(&self, form: Form, ids: &[ContactId], size: usize) -> Option<Vec<usize>> {
        self.exact
            .as_ref()
            .filter(|(f, previous, basis)| {
                *f == form && previous == ids && basis.iter().all(|&i| i < size)
            })
            .map(|(_, _, basis)| basis.clone())
    }

    /// Remembers the basis of a solved LCP (`basis` = indices of basic z) of
    /// formulation `form` over `ids` with `friction[j]` directions each.
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

    /// Forgets the last bases and starts recording those of formulation
    /// `form` (one [`WarmStart::add`] per independent LCP of a step).
    pub fn begin(&mut self, form: Form) {
        self.form = Some(form);
        self.exact = None;
        self.contacts.clear();
    }

    /// Adds the basis of one solved LCP of the formulation given to
    /// [`WarmStart::begin`].
    pub fn add(&mut self, ids: &[ContactId], friction: &[usize], layout: Layout, basis: &[usize]) {
        let mut basic = vec![false; layout.size()];
        for &i in basis {
            if let Some(b) = basic.get_mut(i) {
                *b = true;
            }
        }
        let mut column = 0;
        for (j, (&id, &k)) in ids.iter().zip(friction).enumerate() {
            self.contacts.insert(
                id,
                ContactBasis {
                    friction: basic[column..column + k].to_vec(),
                    normal: basic[layout.normal(j)],
                    lambda: basic[layout.lambda(j)],
                },
            );
            column += k;
        }
    }

    /// The previous basis mapped onto a new LCP of formulation `form`; `None`
    /// when no contact persists.
    pub fn basis(
        &self,
        form: Form,
        ids: &[ContactId],
        friction: &[usize],
        layout: Layout,
    ) -> Option<Vec<usize>> {
        if Some(form) != self.form || self.contacts.is_empty() {
            return None;
        }
        let mut basis = Vec::new();
        let mut column = 0;
        let mut persisted = false;
        for (j, (id, &k)) in ids.iter().zip(friction).enumerate() {
            if let Some(previous) = self.contacts.get(id)
                && previous.friction.len() == k
            {
                persisted = true;
                basis.extend((0..k).filter(|&i| previous.friction[i]).map(|i| column + i));
                if previous.normal {
                    basis.push(layout.normal(j));
                }
                if previous.lambda {
                    basis.push(layout.lambda(j));
                }
            }
            column += k;
        }
        persisted.then_some(basis)
    }
}
