//! The narrow phase in the plane, on parry2d.

use super::{
    PairContact, Raw, Shape, UNKNOWN_FEATURE, ball_finish, ball_raw, finish, is_size, parry_shape,
    sides_touched,
};
use nalgebra::{Isometry2, Point2, Vector2, Vector3};
use p2::query::PersistentQueryDispatcher as _;
use parry2d_f64 as p2;

/// Two balls in the plane, without the dispatcher: parry2d's ball–ball
/// manifold (`contact_manifold_ball_ball`: on the relative pose `pos12`, B
/// in A's frame, A's normal and the two points in their bodies' frames,
/// kept while the gap is below the prediction distance max(margin, 0), false
/// for NaN; coincident centres take A's y axis), then what [`raw_2d`] and
/// [`finish`] do with it.
fn balls_2d(
    pos12: &p2::math::Pose,
    ra: f64,
    pose_a: &Isometry2<f64>,
    rb: f64,
    pose_b: &Isometry2<f64>,
    margin: f64,
    out: &mut Vec<PairContact>,
) {
    let dcenter = pos12.translation;
    let center_dist = dcenter.length();
    let dist = center_dist - ra - rb;
    if dist.partial_cmp(&margin.max(0.0)) != Some(std::cmp::Ordering::Less) {
        return;
    }
    let n1 = if center_dist != 0.0 {
        dcenter / center_dist
    } else {
        p2::math::Vector::Y
    };
    let n2 = pos12.rotation.inverse() * -n1;
    let (local_a, local_b) = (n1 * ra, n2 * rb);
    let n1 = pose_a.rotation * Vector2::new(n1.x, n1.y);
    let world_a = pose_a * Point2::new(local_a.x, local_a.y);
    let world_b = pose_b * Point2::new(local_b.x, local_b.y);
    let point = ball_raw(
        Vector3::new(world_a.x, world_a.y, 0.0),
        Vector3::new(world_b.x, world_b.y, 0.0),
        Vector3::new(-n1.x, -n1.y, 0.0),
        dist,
    );
    ball_finish(point, margin, out);
}

/// The same for planar shapes moving in the x–y plane (rotation about z);
/// returned vectors have z = 0.
///
/// Only the x and y extents of the shapes are used (a sphere is a disk, a
/// capsule a stadium along the body x axis, a box a rectangle with half extents
/// `half_extents[0..2]`). Witness points and normal are in the world x–y plane
/// (m); the normal points from B towards A and `gap` is the signed distance
/// along it (m, negative when overlapping). A face–face contact gives up to 2
/// points; contacts whose gap exceeds `margin` (m) are omitted, and invalid
/// input gives none. The contacts go into `out` (replaced).
pub fn contacts_2d(
    shape_a: &Shape,
    pose_a: &Isometry2<f64>,
    shape_b: &Shape,
    pose_b: &Isometry2<f64>,
    margin: f64,
    out: &mut Vec<PairContact>,
) {
    out.clear();
    let (Some(pa), Some(pb)) = (Parry2::new(shape_a), Parry2::new(shape_b)) else {
        return;
    };
    if margin.is_nan() || !isometry2_is_finite(pose_a) || !isometry2_is_finite(pose_b) {
        return;
    }
    let pos12 = to_pose2(&pose_a.inv_mul(pose_b));
    if let (Parry2::Ball(a), Parry2::Ball(b)) = (&pa, &pb) {
        balls_2d(&pos12, a.radius, pose_a, b.radius, pose_b, margin, out);
        return;
    }
    SCRATCH_2D.with_borrow_mut(|(manifolds, raw)| {
        // Empty: each call starts without a contact cache.
        manifolds.clear();
        raw.clear();
        let dispatcher = p2::query::DefaultQueryDispatcher;
        if dispatcher
            .contact_manifolds(
                &pos12,
                pa.as_dyn(),
                pb.as_dyn(),
                margin.max(0.0),
                manifolds,
                &mut None,
            )
            .is_err()
        {
            return;
        }
        raw_2d(manifolds, shape_a, pose_a, shape_b, pose_b, raw);
        let scale = shape_a.planar_bounding_radius() + shape_b.planar_bounding_radius();
        finish(raw, margin, scale, out);
    });
}

/// Parry's planar points of `manifolds` in the world x–y plane, with their
/// feature ids.
fn raw_2d(
    manifolds: &[p2::query::ContactManifold<(), ()>],
    shape_a: &Shape,
    pose_a: &Isometry2<f64>,
    shape_b: &Shape,
    pose_b: &Isometry2<f64>,
    raw: &mut Vec<Raw>,
) {
    for manifold in manifolds {
        let n1 = pose_a.rotation * Vector2::new(manifold.local_n1.x, manifold.local_n1.y);
        let normal = Vector3::new(-n1.x, -n1.y, 0.0);
        for point in &manifold.points {
            let p1 = Point2::new(point.local_p1.x, point.local_p1.y);
            let p2 = Point2::new(point.local_p2.x, point.local_p2.y);
            let world_a = pose_a * p1;
            let world_b = pose_b * p2;
            // Between two boxes, named by where the point lies on each.
            let named = match (shape_a, shape_b) {
                (
                    Shape::Box {
                        half_extents: half_a,
                    },
                    Shape::Box {
                        half_extents: half_b,
                    },
                ) => box_feature_2d(&p1, half_a).zip(box_feature_2d(&p2, half_b)),
                _ => None,
            };
            let (fid1, fid2) = named.unwrap_or_else(|| {
                (
                    planar_feature(shape_a, p1, point.fid1.0),
                    planar_feature(shape_b, p2, point.fid2.0),
                )
            });
            raw.push(Raw {
                point_a: Vector3::new(world_a.x, world_a.y, 0.0),
                point_b: Vector3::new(world_b.x, world_b.y, 0.0),
                normal,
                gap: point.dist,
                fid1,
                fid2,
                extra: fid1 == UNKNOWN_FEATURE && fid2 == UNKNOWN_FEATURE,
            });
        }
    }
}

/// The narrow phase's work space, per thread: parry's manifolds and the raw
/// points, reused from pair to pair (they hold nothing between calls).
type Scratch2 = (Vec<p2::query::ContactManifold<(), ()>>, Vec<Raw>);

thread_local! {
    static SCRATCH_2D: std::cell::RefCell<Scratch2> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// [`box_feature`] in the plane: a rectangle's corner when both coordinates
/// are within 1e-3 of its size of a side, a side when one is; `None` inside.
/// Parry names a clipped point of two rectangles vertex–face or face–vertex
/// by which one it clipped, and that flips with rounding-level rotations: a
/// 1 g box under 10⁸ kg (tilted 6e-6 rad by a step's rounding) had both
/// points between the boxes renamed after its first step, so
/// Anitescu–Potra's active set lost them, and the heavy box fell into the
/// light one, unheld, in the next step.
fn box_feature_2d(local: &Point2<f64>, half: &[f64; 3]) -> Option<u32> {
    const VERTEX: u32 = 0b01 << 30;
    const FACE: u32 = 0b11 << 30;
    let (code, count) = sides_touched(local.coords.as_slice(), half);
    match count {
        2 => Some(VERTEX | code),
        1 => Some(FACE | code),
        _ => None,
    }
}

/// Feature id of a contact point on a planar shape, in parry's packed form.
///
/// parry2d-f64 0.31 derives a rectangle's vertex ids from bit 31 of the
/// coordinates' bit patterns (the sign bit only in `f32`), so in `f64` the ids
/// of different vertices and faces of a [`Shape::Box`] coincide. For boxes the
/// kind reported by parry (vertex or face) is kept and the code recomputed from
/// the local point with parry's own AABB numbering: vertex code = sign bits
/// (x < 0 → bit 0, y < 0 → bit 1), face code = axis (+2 on the negative side).
fn planar_feature(shape: &Shape, local: Point2<f64>, packed: u32) -> u32 {
    const VERTEX: u32 = 0b01 << 30;
    const FACE: u32 = 0b11 << 30;
    let Shape::Box { half_extents } = shape else {
        return packed;
    };
    match packed & !0x3fff_ffff {
        VERTEX => VERTEX | u32::from(local.x < 0.0) | (u32::from(local.y < 0.0) << 1),
        FACE => {
            let ratio = |v: f64, h: f64| if h > 0.0 { v.abs() / h } else { v.abs() };
            let axis =
                usize::from(ratio(local.y, half_extents[1]) > ratio(local.x, half_extents[0]));
            FACE | axis as u32 | (u32::from(local[axis] < 0.0) << 1)
        }
        _ => packed,
    }
}

parry_shape!(Parry2, p2, 2, |x, y, _| p2::math::Vector::new(x, y));

fn isometry2_is_finite(iso: &Isometry2<f64>) -> bool {
    let (re, im) = (iso.rotation.re, iso.rotation.im);
    iso.translation.vector.iter().all(|x| x.is_finite())
        && re.is_finite()
        && im.is_finite()
        && re.hypot(im) > 0.0
}

/// nalgebra → parry2d pose (the unit complex is renormalised against drift).
fn to_pose2(iso: &Isometry2<f64>) -> p2::math::Pose {
    let (re, im) = (iso.rotation.re, iso.rotation.im);
    let norm = re.hypot(im);
    let t = &iso.translation.vector;
    p2::math::Pose::from_parts(
        p2::math::Vector::new(t.x, t.y),
        p2::math::Rotation::from_cos_sin_unchecked(re / norm, im / norm),
    )
}
