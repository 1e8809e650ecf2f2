//! Body–body narrow phase: the contact points between two shapes, from parry's
//! contact manifolds (`parry3d-f64` in space, `parry2d-f64` in the plane).
//!
//! The shapes are handed to parry's [`DefaultQueryDispatcher`] through
//! [`PersistentQueryDispatcher::contact_manifolds`] with the caller's margin as
//! the prediction distance, so a box face resting on another box gives up to
//! four points (two in the plane) and a capsule lying on a box one point per end
//! cap, each measured again, and named, as the capsule's sphere there
//! against the box (`sphere_on_box`: parry measures them along one
//! separating axis, which can switch between poses). Two capsules in space
//! are the exception: parry's manifold is their closest pair alone, and
//! this module adds the ends of the cores' overlap when they lie side by
//! side (`capsule_pair_3d`). Two balls skip the dispatcher: their one point
//! is the one parry's ball–ball manifold gives, in closed form (`balls_3d`
//! in the world frame, `balls_2d` as parry computes it; the grains of the
//! granular scenes). Each call starts from an
//! empty manifold, so the result depends only on the two shapes and their
//! poses (no contact cache is carried between calls).
//!
//! Conventions of the returned [`PairContact`]s, all in the world frame:
//! parry reports, in the first shape's frame, a normal `n₁` pointing out of the
//! first shape towards the second and a distance `dist = (p₂ − p₁)·n₁`; the
//! normal returned here is `−n₁` expressed in the world (from the second shape
//! B towards the first shape A) and `gap = dist`, so that
//! `point_a − point_b = gap · normal` and `gap < 0` means penetration.
//!
//! Parry's points are then filtered: points beyond the margin, non-finite
//! points, exact duplicates, and (in space) the extra GJK closest pair parry
//! appends to the clipped capsule–box points unless it is deeper than all of
//! them. The `feature` of a point packs parry's feature ids (kind and code) of
//! the touching feature of A in the high 16 bits and of B in the low 16 bits;
//! between two boxes in space the ids name the corner, edge or face each box
//! touches by where the point lies on it (see `box_feature`), in the plane
//! the ids of box vertices and faces are recomputed (see `planar_feature`),
//! between a capsule and a box in space an end cap or the core and the
//! box's corner, edge or face name the point (see `sphere_on_box`),
//! and should two points of one pair still share an id, the later one gets a
//! deterministic derived id.
//!
//! [`DefaultQueryDispatcher`]: parry3d_f64::query::DefaultQueryDispatcher
//! [`PersistentQueryDispatcher::contact_manifolds`]: parry3d_f64::query::PersistentQueryDispatcher::contact_manifolds

mod plane;
mod space;

pub use plane::contacts_2d;
pub use space::{balls_3d, contacts_3d};

use super::{PairContact, Shape};
use nalgebra::Vector3;

/// Relative length below which two candidate points are considered the same
/// point (and a point no deeper than another one is considered redundant),
/// scaled by the size of the pair.
const REL_TOL: f64 = 1e-9;

/// [`finish`] for the one point of two balls: its test ([`keeps`]) and its
/// feature. The rest of `finish` is for several points (the unknown GJK
/// point, duplicates, two points of one name) and leaves one named point as
/// it is; going through it cost a third of what the two-ball path saves.
fn ball_finish(mut point: Raw, margin: f64, out: &mut Vec<PairContact>) {
    if keeps(&mut point, margin) {
        out.push(point.contact(point.feature()));
    }
}

/// The one point of two balls as [`raw_2d`] hands it to [`finish`]: parry
/// names both features face 0.
fn ball_raw(point_a: Vector3<f64>, point_b: Vector3<f64>, normal: Vector3<f64>, gap: f64) -> Raw {
    Raw {
        point_a,
        point_b,
        normal,
        gap,
        fid1: FACE_0,
        fid2: FACE_0,
        extra: false,
    }
}

/// Parry's packed id of face 0 (`PackedFeatureId::face(0)`: the face
/// header in the top two bits), as a constant.
const FACE_0: u32 = 0b11 << 30;

/// The feature of two balls' one point: face 0 on each, as [`finish`]
/// names it.
const BALLS_FEATURE: u32 = (compact_feature(FACE_0) << 16) | compact_feature(FACE_0);

/// One contact point from parry, already in the world frame, before filtering.
#[derive(Debug, Clone, Copy)]
struct Raw {
    point_a: Vector3<f64>,
    point_b: Vector3<f64>,
    normal: Vector3<f64>,
    gap: f64,
    /// Parry's packed feature ids (2-bit kind header, 30-bit code) on A and B.
    fid1: u32,
    fid2: u32,
    /// Parry's extra GJK closest pair of the capsule–box path (see
    /// [`finish`]).
    extra: bool,
}

/// Parry's packed id of an unknown feature.
const UNKNOWN_FEATURE: u32 = 0;

/// Filters parry's points (non-finite, beyond `margin`, duplicated, redundant)
/// and names each survivor with a distinct feature id.
///
/// In space, parry's polyhedral path (capsule–box) appends the GJK closest pair
/// with unknown features to the clipped points; that point is kept only when it
/// is deeper than every clipped point, otherwise it would duplicate one of them
/// or sit on the segment between two of them.
fn finish(raw: &mut Vec<Raw>, margin: f64, scale: f64, out: &mut Vec<PairContact>) {
    let tol = REL_TOL * scale.max(1.0);
    raw.retain_mut(|c| keeps(c, margin));

    let shallowest_known = raw
        .iter()
        .filter(|c| !c.extra)
        .map(|c| c.gap)
        .fold(f64::INFINITY, f64::min);

    // The points kept move to the front, in order.
    let mut kept = 0;
    for i in 0..raw.len() {
        let c = raw[i];
        if c.extra && c.gap >= shallowest_known - tol {
            continue;
        }
        let duplicate = raw[..kept].iter().any(|k| {
            (k.point_a - c.point_a).norm() <= tol && (k.point_b - c.point_b).norm() <= tol
        });
        if !duplicate {
            raw[kept] = c;
            kept += 1;
        }
    }
    raw.truncate(kept);

    for c in raw.iter() {
        let mut feature = c.feature();
        while out.iter().any(|p| p.feature == feature) {
            // Two points naming the same feature pair (parry does not always
            // tell them apart): derive a new id deterministically.
            feature = feature.rotate_left(7) ^ 0x9e37_79b9;
        }
        out.push(c.contact(feature));
    }
}

/// [`finish`]'s test of one point: its normal made unit, and kept when the
/// normal has a length, everything is finite and the gap is within `margin`.
fn keeps(c: &mut Raw, margin: f64) -> bool {
    let norm = c.normal.norm();
    if norm.is_nan() || norm <= 0.0 {
        return false;
    }
    c.normal /= norm;
    let finite = c
        .point_a
        .iter()
        .chain(c.point_b.iter())
        .all(|x| x.is_finite())
        && c.normal.iter().all(|x| x.is_finite())
        && c.gap.is_finite();
    finite && c.gap <= margin
}

impl Raw {
    /// The same point with the two shapes' roles exchanged.
    fn swapped(self) -> Self {
        Self {
            point_a: self.point_b,
            point_b: self.point_a,
            normal: -self.normal,
            gap: self.gap,
            fid1: self.fid2,
            fid2: self.fid1,
            extra: self.extra,
        }
    }

    /// The point's feature id: A's compacted id in the high 16 bits, B's in
    /// the low.
    fn feature(&self) -> u32 {
        (compact_feature(self.fid1) << 16) | compact_feature(self.fid2)
    }

    /// The kept point as it is returned, with `feature`.
    fn contact(&self, feature: u32) -> PairContact {
        PairContact {
            point_a: self.point_a,
            point_b: self.point_b,
            normal: self.normal,
            gap: self.gap,
            feature,
        }
    }
}

/// Packs a parry feature id (2-bit kind header, 30-bit code) into 16 bits:
/// the kind header and the code folded to 14 bits (box, capsule and ball codes
/// are far smaller, so this is one-to-one for them).
const fn compact_feature(packed: u32) -> u32 {
    let header = packed >> 30;
    let code = packed & 0x3fff_ffff;
    let folded = (code ^ (code >> 14) ^ (code >> 28)) & 0x3fff;
    (header << 14) | folded
}

/// A shape as the concrete parry type of one dimension (`$p`: parry2d or
/// parry3d), so that it can be passed as `&dyn Shape` without allocating:
/// `$vector` makes the dimension's vector from x, y and z, of which the
/// first `$axes` are used (z left out in the plane). `new` gives `None` for non-finite or negative sizes, and a
/// ball for a capsule with a zero-length core.
macro_rules! parry_shape {
    ($name:ident, $p:ident, $axes:expr, $vector:expr) => {
        enum $name {
            Ball($p::shape::Ball),
            Capsule($p::shape::Capsule),
            Cuboid($p::shape::Cuboid),
        }

        impl $name {
            fn new(shape: &Shape) -> Option<Self> {
                let vector: fn(f64, f64, f64) -> $p::math::Vector = $vector;
                match *shape {
                    Shape::Sphere { radius } => {
                        is_size(radius).then(|| Self::Ball($p::shape::Ball::new(radius)))
                    }
                    Shape::Capsule {
                        half_length,
                        radius,
                    } => {
                        if !(is_size(half_length) && is_size(radius)) {
                            None
                        } else if half_length == 0.0 {
                            Some(Self::Ball($p::shape::Ball::new(radius)))
                        } else {
                            Some(Self::Capsule($p::shape::Capsule::new(
                                vector(-half_length, 0.0, 0.0),
                                vector(half_length, 0.0, 0.0),
                                radius,
                            )))
                        }
                    }
                    Shape::Box {
                        half_extents: [x, y, z],
                    } => ([x, y, z][..$axes].iter().all(|&h| is_size(h)))
                        .then(|| Self::Cuboid($p::shape::Cuboid::new(vector(x, y, z)))),
                }
            }

            fn as_dyn(&self) -> &dyn $p::shape::Shape {
                match self {
                    Self::Ball(s) => s,
                    Self::Capsule(s) => s,
                    Self::Cuboid(s) => s,
                }
            }
        }
    };
}
use parry_shape;

/// Whether a length is usable as a size (finite and not negative).
fn is_size(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

/// The sides of a box (half extents `half`, the first `local.len()` of
/// them) that a point `local` in its axes lies on, within 1e-3 of the box's
/// size: the code (axis bits, then as many bits for the negative side) and
/// how many.
fn sides_touched(local: &[f64], half: &[f64; 3]) -> (u32, usize) {
    let dims = local.len();
    let tolerance = 1e-3
        * half[..dims]
            .iter()
            .fold(f64::MIN_POSITIVE, |m, h| m.max(h.abs()));
    let (mut axes, mut negative, mut count) = (0u32, 0u32, 0);
    for i in 0..dims {
        if local[i].abs() >= half[i] - tolerance {
            axes |= 1 << i;
            count += 1;
            if local[i] < 0.0 {
                negative |= 1 << i;
            }
        }
    }
    (axes | (negative << dims), count)
}

#[cfg(test)]
mod tests {
    use super::{BALLS_FEATURE, FACE_0, ball_raw};
    use nalgebra::Vector3;

    /// The constants are parry's packed id of face 0 and the feature
    /// [`finish`](super::finish) names two balls' point by.
    #[test]
    fn the_ball_constants_are_parrys_face_0() {
        assert_eq!(FACE_0, parry3d_f64::shape::PackedFeatureId::face(0).0);
        assert_eq!(FACE_0, parry2d_f64::shape::PackedFeatureId::face(0).0);
        let zero = Vector3::zeros();
        assert_eq!(BALLS_FEATURE, ball_raw(zero, zero, zero, 0.0).feature());
    }
}
