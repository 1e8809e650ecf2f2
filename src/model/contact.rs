//! A contact as the steppers see it: its identity, stable across steps while
//! the same features touch, its gap f(q) and its generalized normal and
//! friction directions (Stewart & Trinkle 1996 §3).

use super::ContactJacobian;
use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

/// What the second side of a contact is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Other {
    /// Another body, by index.
    Body(usize),
    /// A static surface (half-space), by index.
    Surface(usize),
    /// The fixed frame of a linear system's affine contact.
    World,
}

/// The identity of a potential contact, stable across steps while the same
/// features touch. The active set of Stewart–Trinkle §4 is a set of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ContactId {
    /// The first body (or, in a linear system, the contact's index).
    pub a: usize,
    /// The other side.
    pub b: Other,
    /// Which feature pair (corner, end cap, manifold point, …).
    pub feature: u32,
    /// 0 for a contact the geometry found. k ≥ 1 names the k-th cutting
    /// plane a Stewart–Trinkle step took at one of its iterates' end points
    /// (a row of that step's LCP only, never reported nor kept in the active
    /// set): it can never equal a found contact's identity.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut: u32,
}

/// Serde: a found contact's identity is written without its `cut`.
fn is_zero(cut: &u32) -> bool {
    *cut == 0
}

/// Where a contact is in the world, for drawing and reports.
#[derive(Debug, PartialEq)]
pub struct ContactFrame {
    /// Contact point on the first body, world frame, m.
    pub point: Vector3<f64>,
    /// Unit normal pointing from the other side into the first body.
    pub normal: Vector3<f64>,
    /// The unit friction directions t(θᵢ) in the world (the pyramid's edges).
    pub tangents: Vec<Vector3<f64>>,
}

/// A potential contact evaluated at some configuration q.
#[derive(Debug, PartialEq)]
pub struct Contact {
    /// Stable identity.
    pub id: ContactId,
    /// Signed gap f(q), m (negative when penetrating).
    pub gap: f64,
    /// Generalized normal n = ∇f(q) and friction directions D = [d₁ … d_k]
    /// (Stewart–Trinkle §3) in velocity coordinates, on the touching bodies'
    /// blocks only.
    pub jacobian: ContactJacobian,
    /// The contact in world coordinates (absent for linear systems).
    pub frame: Option<ContactFrame>,
}

impl Contact {
    /// A contact to be overwritten (storage a contact set lends).
    pub(crate) fn placeholder() -> Self {
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
