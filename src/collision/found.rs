//! What a search visits before it builds a contact: a point the narrow
//! phase found, or an earlier search's item to copy.

use crate::model::ContactId;
use nalgebra::Vector3;

/// A potential contact as the narrow phase found it, before its Jacobian.
#[derive(Debug, Clone, Copy)]
pub struct FoundPoint {
    pub(super) id: ContactId,
    pub(super) gap: f64,
    pub(super) point_a: Vector3<f64>,
    pub(super) b: Option<(usize, Vector3<f64>)>,
    pub(super) normal: Vector3<f64>,
}

/// What a search visits: a point the narrow phase found, or the index of an
/// earlier search's item to copy ([`super::reuse`]).
#[derive(Debug, Clone, Copy)]
pub enum Found {
    Point(FoundPoint),
    Copy(usize),
}

/// The source a search that copies records for a contact it computed.
pub const NOT_COPIED: usize = usize::MAX;

impl Found {
    /// The earlier item's index, or [`NOT_COPIED`].
    pub(super) fn source(&self) -> usize {
        match self {
            Self::Point(_) => NOT_COPIED,
            Self::Copy(k) => *k,
        }
    }
}
