//! A search that copies what an earlier search of the same step found for
//! bodies that have not moved since.
//!
//! A rigid system's search lists the contacts (or gaps) of body–surface
//! features body by body, then those of the broad phase's pairs in the
//! order (i, j), i < j, each pair's points together. What a body's surface
//! features give is a function of its pose and the margin alone, and what a
//! pair gives of the two poses and the margin (the narrow phase starts from
//! an empty work space each time, [`super::pair_memo`]). So a search at the
//! same margin where some bodies kept their poses can copy those bodies'
//! surface contacts and the pairs of two such bodies from the earlier
//! search's list, in place, and compute only the rest: the list is the one a
//! full search gives, in the same order. The caller says which bodies are
//! kept ([`Reuse::keep`]), and owns what it copies: a Stewart–Trinkle step
//! copies its candidates after their secants (`stepper::stewart_trinkle`),
//! which it keeps only for bodies whose velocities are the same to the bit.

use crate::model::{Contact, ContactId, Other};
use std::ops::Range;

/// An item of a search's list, named by its contact.
pub trait Identified {
    /// The contact's identity.
    fn id(&self) -> ContactId;
}

impl Identified for Contact {
    fn id(&self) -> ContactId {
        self.id
    }
}

impl Identified for (ContactId, f64) {
    fn id(&self) -> ContactId {
        self.0
    }
}

/// What a search may copy: `previous`, the list an earlier search of a
/// rigid system gave at the same margin (only its own items, in its
/// order), and `keep`, per body, whether the body's pose is the same now
/// (fixed bodies always are).
#[derive(Debug)]
pub struct Reuse<'p, T> {
    pub keep: &'p [bool],
    pub previous: &'p [T],
}

// By hand: a derive would ask T: Copy.
impl<T> Clone for Reuse<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Reuse<'_, T> {}

/// Where the earlier list holds a body's surface items or a pair's points:
/// a cursor that moves forward through the list as the search does.
#[derive(Debug)]
pub struct Cursor<'p, T> {
    items: &'p [T],
    at: usize,
}

/// The pair an item belongs to, (i, j) with i < j; `None` for a surface's.
fn pair_of(id: ContactId) -> Option<(usize, usize)> {
    match id.b {
        Other::Body(b) => Some((id.a.min(b), id.a.max(b))),
        Other::Surface(_) | Other::World => None,
    }
}

impl<'p, T: Identified> Cursor<'p, T> {
    /// A cursor at the start of `items`.
    pub fn new(items: &'p [T]) -> Self {
        Self { items, at: 0 }
    }

    /// A cursor at the first pair item from (i, j) on (the start of one
    /// thread's half of the pairs).
    pub fn at_pair(items: &'p [T], first: (usize, usize)) -> Self {
        let at = items.partition_point(|x| pair_of(x.id()).is_none_or(|p| p < first));
        Self { items, at }
    }

    /// The range of body `i`'s surface items (bodies asked in increasing
    /// order).
    pub fn surfaces(&mut self, i: usize) -> Range<usize> {
        // A surface's item (no pair) of a body before i, of body i.
        self.span(
            |x| pair_of(x.id()).is_none() && x.id().a < i,
            |x| pair_of(x.id()).is_none() && x.id().a == i,
        )
    }

    /// The range of pair (i, j)'s items, i < j (pairs asked in increasing
    /// order).
    pub fn pair(&mut self, i: usize, j: usize) -> Range<usize> {
        self.span(
            |x| pair_of(x.id()).is_none_or(|p| p < (i, j)),
            |x| pair_of(x.id()) == Some((i, j)),
        )
    }

    /// Moves past the items `before` holds for, then returns the range of
    /// those `here` holds for that follow.
    fn span(&mut self, before: impl Fn(&T) -> bool, here: impl Fn(&T) -> bool) -> Range<usize> {
        self.at += self.items[self.at..]
            .iter()
            .take_while(|x| before(x))
            .count();
        let start = self.at;
        self.at += self.items[start..].iter().take_while(|x| here(x)).count();
        start..self.at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(a: usize, b: Other) -> (ContactId, f64) {
        (
            ContactId {
                a,
                b,
                feature: 0,
                cut: 0,
            },
            0.0,
        )
    }

    #[test]
    fn the_cursor_finds_each_bodys_surface_items_and_each_pairs_points() {
        // Surfaces of bodies 0 and 2, then pairs (0, 1) twice, (0, 3) with
        // the fixed body 0 second, (1, 2).
        let items = [
            id(0, Other::Surface(0)),
            id(0, Other::Surface(1)),
            id(2, Other::Surface(0)),
            id(0, Other::Body(1)),
            id(0, Other::Body(1)),
            id(3, Other::Body(0)),
            id(1, Other::Body(2)),
        ];
        let mut c = Cursor::new(&items[..]);
        assert_eq!(c.surfaces(0), 0..2);
        assert_eq!(c.surfaces(1), 2..2);
        assert_eq!(c.surfaces(2), 2..3);
        assert_eq!(c.surfaces(3), 3..3);
        assert_eq!(c.pair(0, 1), 3..5);
        assert_eq!(c.pair(0, 2), 5..5);
        assert_eq!(c.pair(0, 3), 5..6);
        assert_eq!(c.pair(1, 2), 6..7);
        assert_eq!(c.pair(2, 3), 7..7);
        let mut half = Cursor::at_pair(&items[..], (0, 3));
        assert_eq!(half.pair(0, 3), 5..6);
        assert_eq!(half.pair(1, 2), 6..7);
        assert_eq!(Cursor::at_pair(&items[..], (0, 1)).pair(0, 1), 3..5);
    }
}
