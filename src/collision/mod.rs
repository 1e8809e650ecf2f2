//! Collision detection: which contacts a configuration q has within a
//! margin, with their gaps f(q), generalized normals and friction directions
//! (Stewart & Trinkle 1996 §3).
//!
//! A search runs in two phases, as in Rapier's pipeline: the broad phase
//! ([`broad_phase`]: sweep and prune on world-aligned boxes) finds the body
//! pairs that can touch, and the narrow phase ([`narrow_phase`]: analytic
//! body–half-space features, parry's manifolds between bodies) finds their
//! contact points and builds each contact's Jacobian rows. A search may copy
//! what an earlier search of the same step found for bodies that did not
//! move ([`reuse`]), keep a pair's points by pose ([`pair_memo`]) and look
//! per body as far as that body can reach ([`margin`]). The contacts land in
//! a [`ContactSet`], whose storage the next search reuses.

pub mod broad_phase;
pub mod contact_set;
pub mod found;
pub mod margin;
pub mod narrow_phase;
pub mod pair_memo;
pub mod pose;
pub mod reuse;

pub use broad_phase::{BroadPhase, LastSweep};
pub use contact_set::ContactSet;
pub use found::NOT_COPIED;
pub use margin::{Margin, Reaches};
pub use reuse::Reuse;

use crate::model::{Contact, ContactId, Model};
use crate::pair_thread::{self, PairThread};
use nalgebra::DVector;

/// How a search runs besides where and how far it looks: the threads of its
/// narrow phase and what an earlier search of the step lends it.
#[derive(Debug, Clone, Copy)]
pub struct Search<'r, T> {
    /// Threads the narrow phase may use, 1 or 2 (the same contacts, in the
    /// same order).
    pub threads: usize,
    /// An earlier search at the same margin whose items are copied for the
    /// bodies it keeps ([`reuse`]).
    pub reuse: Option<Reuse<'r, T>>,
}

impl<T> Search<'_, T> {
    /// On `threads` threads, copying nothing.
    pub fn on(threads: usize) -> Self {
        Self {
            threads,
            reuse: None,
        }
    }
}

/// Every potential contact of `model` at q whose gap is at most `margin`,
/// with k = `edges` friction directions in space, into `out` (its contents
/// replaced, its storage reused). `sources` gets, for each contact, its
/// index in the reused search's items or [`NOT_COPIED`] (left empty without
/// reuse).
pub fn find_contacts<'m>(
    model: &Model,
    q: &DVector<f64>,
    edges: usize,
    margin: impl Into<Margin<'m>>,
    out: &mut ContactSet,
    search: Search<'_, Contact>,
    sources: &mut Vec<usize>,
) {
    let margin = margin.into();
    match model {
        Model::Rigid(s) => narrow_phase::contacts(s, q, edges, margin, out, search, sources),
        Model::Linear(s) => {
            out.clear();
            for c in s.contacts(q, margin.widest()) {
                out.push(c);
            }
            sources.clear();
            if search.reuse.is_some() {
                sources.resize(out.len(), NOT_COPIED);
            }
        }
    }
}

/// The identities and gaps of [`find_contacts`], without their Jacobians
/// (what a stepper needs to check the end of a step), into `out` (replaced),
/// with the broad phase's work space `broad`.
pub fn find_gaps<'m>(
    model: &Model,
    q: &DVector<f64>,
    margin: impl Into<Margin<'m>>,
    out: &mut Vec<(ContactId, f64)>,
    broad: &mut BroadPhase,
    search: Search<'_, (ContactId, f64)>,
) {
    let margin = margin.into();
    out.clear();
    match model {
        Model::Rigid(s) => narrow_phase::gaps(s, q, margin, out, broad, search),
        Model::Linear(s) => out.extend(
            s.contacts(q, margin.widest())
                .into_iter()
                .map(|c| (c.id, c.gap)),
        ),
    }
}

/// [`find_contacts`] on one thread, as a list: for a one-off search.
pub fn contacts(model: &Model, q: &DVector<f64>, edges: usize, margin: f64) -> Vec<Contact> {
    let mut set = ContactSet::default();
    find_contacts(
        model,
        q,
        edges,
        margin,
        &mut set,
        Search::on(1),
        &mut Vec::new(),
    );
    set.into_vec()
}

/// [`find_gaps`] on one thread, as a list: for a one-off search.
pub fn gaps(model: &Model, q: &DVector<f64>, margin: f64) -> Vec<(ContactId, f64)> {
    let mut out = Vec::new();
    find_gaps(
        model,
        q,
        margin,
        &mut out,
        &mut BroadPhase::default(),
        Search::on(1),
    );
    out
}

/// Candidate pairs from which the narrow phase runs on two threads: below,
/// the handshake costs more than half the pairs' narrow phase.
pub const PARALLEL_PAIRS: usize = 512;

/// The helper thread for a geometry pass over `count` items (pairs,
/// bodies), when `threads` allows two, there are at least `least` items and
/// two threads were the faster when last measured.
fn parallel(threads: usize, count: usize, least: usize) -> Option<&'static PairThread> {
    if threads >= 2 && count >= least && pair_thread::pays() {
        pair_thread::shared()
    } else {
        None
    }
}
