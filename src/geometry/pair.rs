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
//! is computed as parry's ball–ball manifold computes it (`balls_3d`,
//! `balls_2d`; the grains of the granular scenes). Each call starts from an
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

use super::{PairContact, Shape};
use nalgebra::{Isometry2, Isometry3, Point2, Point3, Vector2, Vector3};

use p2::query::PersistentQueryDispatcher as _;
use p3::query::PersistentQueryDispatcher as _;
use parry2d_f64 as p2;
use parry3d_f64 as p3;

/// Relative length below which two candidate points are considered the same
/// point (and a point no deeper than another one is considered redundant),
/// scaled by the size of the pair.
const REL_TOL: f64 = 1e-9;

/// Contacts between two shapes in space whose gap is at most `margin` (m).
///
/// `pose_a` and `pose_b` place the body frames of `shape_a` and `shape_b` in the
/// world. Each returned [`PairContact`] gives the witness points on A and on B
/// (world frame, m), the unit normal pointing from B towards A, the signed gap
/// along that normal (m, negative when the shapes overlap) and a feature id that
/// stays the same while the same features of the two shapes touch. A face–face
/// box contact gives up to 4 points; contacts whose gap exceeds `margin` are
/// omitted. Returns an empty vector when nothing lies within `margin` and for
/// invalid input (non-finite numbers, negative sizes, NaN margin).
pub fn contacts_3d(
    shape_a: &Shape,
    pose_a: &Isometry3<f64>,
    shape_b: &Shape,
    pose_b: &Isometry3<f64>,
    margin: f64,
) -> Vec<PairContact> {
    let mut out = Vec::new();
    contacts_3d_into(shape_a, pose_a, shape_b, pose_b, margin, &mut out);
    out
}

/// [`contacts_3d`] into `out` (replaced).
pub fn contacts_3d_into(
    shape_a: &Shape,
    pose_a: &Isometry3<f64>,
    shape_b: &Shape,
    pose_b: &Isometry3<f64>,
    margin: f64,
    out: &mut Vec<PairContact>,
) {
    out.clear();
    let (Some(pa), Some(pb)) = (Parry3::new(shape_a), Parry3::new(shape_b)) else {
        return;
    };
    if margin.is_nan() || !isometry3_is_finite(pose_a) || !isometry3_is_finite(pose_b) {
        return;
    }
    let pos12 = to_pose3(&pose_a.inv_mul(pose_b));
    if let (Parry3::Ball(a), Parry3::Ball(b)) = (&pa, &pb) {
        balls_3d(&pos12, a.radius, pose_a, b.radius, pose_b, margin, out);
        return;
    }
    SCRATCH_3D.with_borrow_mut(|(manifolds, raw)| {
        // Empty: each call starts without a contact cache.
        manifolds.clear();
        raw.clear();
        if let (Parry3::Capsule(ca), Parry3::Capsule(cb)) = (&pa, &pb) {
            let segment = |c: &p3::shape::Capsule, pose: &Isometry3<f64>| {
                let end = |p: p3::math::Vector| (pose * Point3::new(p.x, p.y, p.z)).coords;
                (end(c.segment.a), end(c.segment.b), c.radius)
            };
            capsule_pair_3d(segment(ca, pose_a), segment(cb, pose_b), margin, raw);
            let scale = bounding_radius(shape_a, 3) + bounding_radius(shape_b, 3);
            finish(raw, margin, scale, out);
            return;
        }
        let dispatcher = p3::query::DefaultQueryDispatcher;
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
        raw_3d(manifolds, shape_a, pose_a, shape_b, pose_b, raw);
        let scale = bounding_radius(shape_a, 3) + bounding_radius(shape_b, 3);
        finish(raw, margin, scale, out);
    });
}

/// Parry's `contact_manifold_ball_ball` on the relative pose `pos12` (B in
/// A's frame), in either dimension's types: A's normal, the two points in
/// their bodies' frames and the gap, when the gap is below the prediction
/// distance max(margin, 0) (false for NaN); `$y` is parry's normal for
/// coincident centres.
macro_rules! ball_manifold {
    ($pos12:expr, $ra:expr, $rb:expr, $margin:expr, $y:expr) => {{
        let dcenter = $pos12.translation;
        let center_dist = dcenter.length();
        let dist = center_dist - $ra - $rb;
        if dist.partial_cmp(&$margin.max(0.0)) == Some(std::cmp::Ordering::Less) {
            let local_n1 = if center_dist != 0.0 {
                dcenter / center_dist
            } else {
                $y
            };
            let local_n2 = $pos12.rotation.inverse() * -local_n1;
            Some((local_n1, local_n1 * $ra, local_n2 * $rb, dist))
        } else {
            None
        }
    }};
}

/// Two balls in space, without the dispatcher: parry's ball–ball manifold
/// (`contact_manifold_ball_ball`: one point on the line of the centres in
/// A's frame, both named face 0, kept while the gap is below the prediction
/// distance max(margin, 0)) with parry's own types and operations, then
/// what [`raw_3d`] and [`finish`] do with it ([`ball_finish`]), so that the
/// result is the dispatcher's bit for bit without the dispatch and the
/// manifold. The dispatcher's path took a tenth of a granular
/// step (the 1,000-grain silo's geometry on one thread: 2.4–2.7 → 2.1–2.2
/// ms a step).
fn balls_3d(
    pos12: &p3::math::Pose,
    ra: f64,
    pose_a: &Isometry3<f64>,
    rb: f64,
    pose_b: &Isometry3<f64>,
    margin: f64,
    out: &mut Vec<PairContact>,
) {
    let Some((n1, p1, p2, dist)) = ball_manifold!(pos12, ra, rb, margin, p3::math::Vector::Y)
    else {
        return;
    };
    let point = ball_raw(
        (pose_a * Point3::new(p1.x, p1.y, p1.z)).coords,
        (pose_b * Point3::new(p2.x, p2.y, p2.z)).coords,
        -(pose_a.rotation * Vector3::new(n1.x, n1.y, n1.z)),
        dist,
    );
    ball_finish(point, margin, out);
}

/// [`balls_3d`] in the plane (parry2d's ball–ball manifold, then what
/// [`raw_2d`] and [`finish`] do with it).
fn balls_2d(
    pos12: &p2::math::Pose,
    ra: f64,
    pose_a: &Isometry2<f64>,
    rb: f64,
    pose_b: &Isometry2<f64>,
    margin: f64,
    out: &mut Vec<PairContact>,
) {
    let Some((n1, p1, p2, dist)) = ball_manifold!(pos12, ra, rb, margin, p2::math::Vector::Y)
    else {
        return;
    };
    let n1 = pose_a.rotation * Vector2::new(n1.x, n1.y);
    let world_a = pose_a * Point2::new(p1.x, p1.y);
    let world_b = pose_b * Point2::new(p2.x, p2.y);
    let point = ball_raw(
        Vector3::new(world_a.x, world_a.y, 0.0),
        Vector3::new(world_b.x, world_b.y, 0.0),
        Vector3::new(-n1.x, -n1.y, 0.0),
        dist,
    );
    ball_finish(point, margin, out);
}

/// [`finish`] for the one point of two balls: its test ([`keeps`]) and its
/// feature. The rest of `finish` is for several points (the unknown GJK
/// point, duplicates, two points of one name) and leaves one named point as
/// it is; going through it cost a third of what the two-ball path saves.
fn ball_finish(mut point: Raw, margin: f64, out: &mut Vec<PairContact>) {
    if keeps(&mut point, margin) {
        out.push(point.contact(point.feature()));
    }
}

/// The one point of two balls as [`raw_3d`] and [`raw_2d`] hand it to
/// [`finish`]: parry names both features face 0.
fn ball_raw(point_a: Vector3<f64>, point_b: Vector3<f64>, normal: Vector3<f64>, gap: f64) -> Raw {
    let face = p3::shape::PackedFeatureId::face(0).0;
    Raw {
        point_a,
        point_b,
        normal,
        gap,
        fid1: face,
        fid2: face,
        extra: false,
    }
}

/// A capsule in the world: its core segment's ends and its radius.
type WorldCapsule = (Vector3<f64>, Vector3<f64>, f64);

/// Two capsules in space: the closest points of their core segments and,
/// when the axes are within 22.5° of parallel and the normal within 22.5° of
/// perpendicular to them (parry's own test in the plane), the two ends of
/// the segments' overlap along A's axis, each paired with its closest point
/// on B's core. The points are named by where they lie on each core: an end
/// (vertex 0 or 1) or inside it (the edge).
///
/// Parry's capsule–capsule manifold in space is the single closest pair. Two
/// capsules lying side by side then touch at one end only, and a step that
/// turns them about that point takes the other end in: on the generated pile
/// of 200 bodies (`benches/scale.rs`) Stewart–Trinkle's fixed-point
/// iterations (§3.6) alternated between −7.2e-5 and −8.1e-5 m at the other
/// end of two parallel capsules for all 16 of their iterations, since the
/// only constraint of the pair held the end that touched.
fn capsule_pair_3d(a: WorldCapsule, b: WorldCapsule, margin: f64, raw: &mut Vec<Raw>) {
    const VERTEX: u32 = 0b01 << 30;
    const EDGE: u32 = 0b10 << 30;
    let (a0, a1, ra) = a;
    let (b0, b1, rb) = b;
    let (da, db) = (a1 - a0, b1 - b0);
    // Closest points of the two cores at parameters (s, t) in [0, 1]².
    let (s, t) = closest_segment_parameters(a0, da, b0, db);
    // Where a parameter lies on its core: exactly 0 or 1 (clamped) is an end.
    let name = |u: f64| match u {
        u if u <= 0.0 => VERTEX,
        u if u >= 1.0 => VERTEX | 1,
        _ => EDGE,
    };
    let mut pair = |s: f64, t: f64, fallback: Vector3<f64>| {
        let (pa, pb) = (a0 + da * s, b0 + db * t);
        let d = pa - pb;
        let distance = d.norm();
        let normal = if distance > 0.0 {
            d / distance
        } else {
            fallback
        };
        raw.push(Raw {
            point_a: pa - normal * ra,
            point_b: pb + normal * rb,
            normal,
            gap: distance - ra - rb,
            fid1: name(s),
            fid2: name(t),
            extra: name(s) == UNKNOWN_FEATURE && name(t) == UNKNOWN_FEATURE,
        });
    };
    // Where the cores meet, the normal is across both (or across A alone
    // when they are parallel).
    let across = {
        let c = da.cross(&db);
        if c.norm() > 0.0 {
            c
        } else {
            da.cross(&Vector3::x())
                .try_normalize(0.0)
                .unwrap_or_else(|| da.cross(&Vector3::y()))
        }
    }
    .normalize();
    let closest = (a0 + da * s) - (b0 + db * t);
    let main_distance = closest.norm();
    if main_distance - ra - rb > margin {
        return;
    }
    let parallel = {
        let (la, lb) = (da.norm(), db.norm());
        la > 0.0
            && lb > 0.0
            && da.dot(&db).abs() >= (std::f64::consts::PI / 8.0).cos() * la * lb
            && (main_distance == 0.0
                || da.dot(&closest).abs() < (std::f64::consts::PI / 8.0).sin() * la * main_distance)
    };
    let mut ends = Vec::with_capacity(2);
    if parallel {
        // B's ends projected on A's axis, clamped to A's core: the overlap.
        let along = |p: Vector3<f64>| (p - a0).dot(&da) / da.norm_squared();
        let (u0, u1) = (along(b0), along(b1));
        let (lo, hi) = (u0.min(u1).max(0.0), u0.max(u1).min(1.0));
        if lo <= hi {
            for u in [lo, hi] {
                let p = a0 + da * u;
                let t = ((p - b0).dot(&db) / db.norm_squared()).clamp(0.0, 1.0);
                // An end of the overlap that is B's end lies on B's vertex
                // (the clamp gives exactly 0 or 1 only past it).
                let t = if u == u0 && (0.0..=1.0).contains(&u0) {
                    0.0
                } else if u == u1 && (0.0..=1.0).contains(&u1) {
                    1.0
                } else {
                    t
                };
                ends.push((u, t));
            }
        }
        if ends.len() == 2 && (ends[0].0 - ends[1].0).abs() <= 1e-9 {
            ends.pop();
        }
    }
    for &(u, t) in &ends {
        pair(u, t, across);
    }
    // The closest pair, unless it is (to 1e-3 of A's core) an end of the
    // overlap already named.
    if ends.iter().all(|&(u, _)| (u - s).abs() > 1e-3) {
        pair(s, t, across);
    }
}

/// Parameters (s, t) in [0, 1]² of the closest points of the segments
/// p + s·d and q + t·e (Ericson, Real-Time Collision Detection, §5.1.9).
fn closest_segment_parameters(
    p: Vector3<f64>,
    d: Vector3<f64>,
    q: Vector3<f64>,
    e: Vector3<f64>,
) -> (f64, f64) {
    let r = p - q;
    let (a, f) = (d.norm_squared(), e.norm_squared());
    let (c, b) = (d.dot(&r), d.dot(&e));
    let g = e.dot(&r);
    if a <= 0.0 && f <= 0.0 {
        return (0.0, 0.0);
    }
    if a <= 0.0 {
        return (0.0, (g / f).clamp(0.0, 1.0));
    }
    if f <= 0.0 {
        return ((-c / a).clamp(0.0, 1.0), 0.0);
    }
    let denom = a * f - b * b;
    let mut s = if denom > 0.0 {
        ((b * g - c * f) / denom).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mut t = (b * s + g) / f;
    if t < 0.0 {
        t = 0.0;
        s = (-c / a).clamp(0.0, 1.0);
    } else if t > 1.0 {
        t = 1.0;
        s = ((b - c) / a).clamp(0.0, 1.0);
    }
    (s, t)
}

/// Parry's points of `manifolds` in the world frame, with their feature ids.
fn raw_3d(
    manifolds: &[p3::query::ContactManifold<(), ()>],
    shape_a: &Shape,
    pose_a: &Isometry3<f64>,
    shape_b: &Shape,
    pose_b: &Isometry3<f64>,
    raw: &mut Vec<Raw>,
) {
    for manifold in manifolds {
        let n1 = Vector3::new(
            manifold.local_n1.x,
            manifold.local_n1.y,
            manifold.local_n1.z,
        );
        let normal = -(pose_a.rotation * n1);
        for point in &manifold.points {
            let p1 = Point3::new(point.local_p1.x, point.local_p1.y, point.local_p1.z);
            let p2 = Point3::new(point.local_p2.x, point.local_p2.y, point.local_p2.z);
            // Between two boxes, named by where the point lies on each.
            let named = match (shape_a, shape_b) {
                (
                    Shape::Box {
                        half_extents: half_a,
                    },
                    Shape::Box {
                        half_extents: half_b,
                    },
                ) => box_feature(&p1, half_a).zip(box_feature(&p2, half_b)),
                _ => None,
            };
            let (fid1, fid2) = named.unwrap_or((point.fid1.0, point.fid2.0));
            // Between a capsule and a box, measured (and named) as the
            // capsule's sphere at the point's place on its core.
            let measured = match (shape_a, shape_b) {
                (
                    Shape::Capsule {
                        half_length,
                        radius,
                    },
                    Shape::Box { half_extents },
                ) => sphere_on_box(&p1, *half_length, *radius, pose_a, half_extents, pose_b),
                (
                    Shape::Box { half_extents },
                    Shape::Capsule {
                        half_length,
                        radius,
                    },
                ) => sphere_on_box(&p2, *half_length, *radius, pose_b, half_extents, pose_a)
                    .map(Raw::swapped),
                _ => None,
            };
            // Parry's extra GJK pair: `finish` keeps it only when it is the
            // deepest, named as the clipped point at its place would be.
            let extra = point.fid1.0 == UNKNOWN_FEATURE && point.fid2.0 == UNKNOWN_FEATURE;
            let measured = measured.map(|m| Raw { extra, ..m });
            raw.push(measured.unwrap_or(Raw {
                point_a: (pose_a * p1).coords,
                point_b: (pose_b * p2).coords,
                normal,
                gap: point.dist,
                fid1,
                fid2,
                extra: fid1 == UNKNOWN_FEATURE && fid2 == UNKNOWN_FEATURE,
            }));
        }
    }
}

/// A capsule's point `local` (in its frame) against a box, measured again as
/// the sphere of the capsule's radius at the nearest place on its core
/// segment, with the capsule as the first shape; `None` when that place
/// lies inside the box (parry's point stands then).
///
/// Parry's capsule–box manifold measures all its points along one normal,
/// its separating axis, and where the box's face normal and an axis across
/// an edge of the box and the core are nearly tied the axis switches from
/// one pose to the next: the gap at the far end of a capsule lying across a
/// box then jumps (measured on the generated pile of 150 at t = 0.975 s:
/// +4.9e-5 m, then −8.4e-7 m a twentieth of a step later, at the same
/// place). The sphere's distance to the box is continuous in the poses.
///
/// The point is named by where it lies, as [`box_feature`] names box–box
/// points: on the capsule an end cap (parry's segment vertices 0 and 1) or
/// the core between them (its edge 0), on the box the corner, edge or face
/// of the nearest point. Parry's clipped names flipped from step to step on
/// resting capsules (the settled `pile_100.ron`: three to five capsule–box
/// pairs renamed every step, 30–60 pivots a step where 2–12 sufficed).
fn sphere_on_box(
    local: &Point3<f64>,
    half_length: f64,
    radius: f64,
    capsule: &Isometry3<f64>,
    half: &[f64; 3],
    cuboid: &Isometry3<f64>,
) -> Option<Raw> {
    const VERTEX: u32 = 0b01 << 30;
    const EDGE: u32 = 0b10 << 30;
    let along = local.x.clamp(-half_length, half_length);
    let core = capsule * Point3::new(along, 0.0, 0.0);
    let inside = cuboid.inverse_transform_point(&core);
    let nearest = Point3::new(
        inside.x.clamp(-half[0], half[0]),
        inside.y.clamp(-half[1], half[1]),
        inside.z.clamp(-half[2], half[2]),
    );
    let offset = inside - nearest;
    let distance = offset.norm();
    if distance.is_nan() || distance <= 0.0 {
        return None;
    }
    let normal = cuboid.rotation * (offset / distance);
    let end = 1e-3 * (half_length + radius);
    let on_capsule = if along <= -half_length + end {
        VERTEX
    } else if along >= half_length - end {
        VERTEX | 1
    } else {
        EDGE
    };
    Some(Raw {
        point_a: core.coords - normal * radius,
        point_b: (cuboid * nearest).coords,
        normal,
        gap: distance - radius,
        fid1: on_capsule,
        fid2: box_feature(&nearest, half)?,
        extra: false,
    })
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
/// input gives an empty vector.
pub fn contacts_2d(
    shape_a: &Shape,
    pose_a: &Isometry2<f64>,
    shape_b: &Shape,
    pose_b: &Isometry2<f64>,
    margin: f64,
) -> Vec<PairContact> {
    let mut out = Vec::new();
    contacts_2d_into(shape_a, pose_a, shape_b, pose_b, margin, &mut out);
    out
}

/// [`contacts_2d`] into `out` (replaced).
pub fn contacts_2d_into(
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
        let scale = bounding_radius(shape_a, 2) + bounding_radius(shape_b, 2);
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
type Scratch3 = (Vec<p3::query::ContactManifold<(), ()>>, Vec<Raw>);
/// The planar one.
type Scratch2 = (Vec<p2::query::ContactManifold<(), ()>>, Vec<Raw>);

thread_local! {
    static SCRATCH_3D: std::cell::RefCell<Scratch3> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
    static SCRATCH_2D: std::cell::RefCell<Scratch2> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

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
fn compact_feature(packed: u32) -> u32 {
    let header = packed >> 30;
    let code = packed & 0x3fff_ffff;
    let folded = (code ^ (code >> 14) ^ (code >> 28)) & 0x3fff;
    (header << 14) | folded
}

/// The id of a box–box contact point on the box (`local` in its axes), from
/// where the point lies, in parry's packed form: a vertex when all three
/// coordinates are within 1e-3 of the box's size of a face, an edge when two
/// are, a face when one is; `None` inside. The code names the faces touched
/// (axis bits 0–2, and bits 3–5 for the negative side), so the same corner,
/// edge or face always has the same id.
///
/// Parry names the points of a face–face manifold by the features it
/// clipped (vertex–face, face–vertex or edge–edge), and where a corner of
/// one box lies on a face or an edge of the other those names flip with
/// rounding-level rotations: two exactly aligned faces touching corner to
/// corner (a 12-box tower took 2,000 pivots a step), and, in running bond, a
/// brick's corners on the edges of the bricks below it (`wall.ron`: 20–70 of
/// its 270 contacts renamed every step, and 2,000–16,000 pivots a step from
/// bases the warm start could map only in part). A point keeps its name
/// while it stays on the same corner, edge or face of each box, and gets a
/// new one when it moves onto another: then its gap function changes too,
/// and Stewart–Trinkle's secant of a step must not join the two.
fn box_feature(local: &Point3<f64>, half: &[f64; 3]) -> Option<u32> {
    const VERTEX: u32 = 0b01 << 30;
    const EDGE: u32 = 0b10 << 30;
    const FACE: u32 = 0b11 << 30;
    let (code, count) = sides_touched(local.coords.as_slice(), half);
    match count {
        3 => Some(VERTEX | code),
        2 => Some(EDGE | code),
        1 => Some(FACE | code),
        _ => None,
    }
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

/// The radius of a ball around the body origin containing the shape, m, in
/// `dim` dimensions (used only to scale tolerances).
fn bounding_radius(shape: &Shape, dim: usize) -> f64 {
    match *shape {
        Shape::Sphere { radius } => radius,
        Shape::Capsule {
            half_length,
            radius,
        } => half_length + radius,
        Shape::Box { half_extents } => half_extents[..dim]
            .iter()
            .map(|h| h * h)
            .sum::<f64>()
            .sqrt(),
    }
}

/// Whether a length is usable as a size (finite and not negative).
fn is_size(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

/// A shape as the concrete parry3d type, so that it can be passed as
/// `&dyn parry3d_f64::shape::Shape` without allocating.
enum Parry3 {
    Ball(p3::shape::Ball),
    Capsule(p3::shape::Capsule),
    Cuboid(p3::shape::Cuboid),
}

impl Parry3 {
    /// The parry shape for `shape`, or `None` for non-finite or negative sizes.
    /// A capsule with a zero-length core is a ball.
    fn new(shape: &Shape) -> Option<Self> {
        use p3::math::Vector;
        match *shape {
            Shape::Sphere { radius } => {
                is_size(radius).then(|| Self::Ball(p3::shape::Ball::new(radius)))
            }
            Shape::Capsule {
                half_length,
                radius,
            } => {
                if !(is_size(half_length) && is_size(radius)) {
                    None
                } else if half_length == 0.0 {
                    Some(Self::Ball(p3::shape::Ball::new(radius)))
                } else {
                    Some(Self::Capsule(p3::shape::Capsule::new(
                        Vector::new(-half_length, 0.0, 0.0),
                        Vector::new(half_length, 0.0, 0.0),
                        radius,
                    )))
                }
            }
            Shape::Box {
                half_extents: [x, y, z],
            } => (is_size(x) && is_size(y) && is_size(z))
                .then(|| Self::Cuboid(p3::shape::Cuboid::new(Vector::new(x, y, z)))),
        }
    }

    fn as_dyn(&self) -> &dyn p3::shape::Shape {
        match self {
            Self::Ball(s) => s,
            Self::Capsule(s) => s,
            Self::Cuboid(s) => s,
        }
    }
}

/// A shape as the concrete parry2d type (only the x and y extents are used).
enum Parry2 {
    Ball(p2::shape::Ball),
    Capsule(p2::shape::Capsule),
    Cuboid(p2::shape::Cuboid),
}

impl Parry2 {
    /// The parry shape for `shape`, or `None` for non-finite or negative sizes.
    /// A capsule with a zero-length core is a disk.
    fn new(shape: &Shape) -> Option<Self> {
        use p2::math::Vector;
        match *shape {
            Shape::Sphere { radius } => {
                is_size(radius).then(|| Self::Ball(p2::shape::Ball::new(radius)))
            }
            Shape::Capsule {
                half_length,
                radius,
            } => {
                if !(is_size(half_length) && is_size(radius)) {
                    None
                } else if half_length == 0.0 {
                    Some(Self::Ball(p2::shape::Ball::new(radius)))
                } else {
                    Some(Self::Capsule(p2::shape::Capsule::new(
                        Vector::new(-half_length, 0.0),
                        Vector::new(half_length, 0.0),
                        radius,
                    )))
                }
            }
            Shape::Box {
                half_extents: [x, y, _],
            } => (is_size(x) && is_size(y))
                .then(|| Self::Cuboid(p2::shape::Cuboid::new(Vector::new(x, y)))),
        }
    }

    fn as_dyn(&self) -> &dyn p2::shape::Shape {
        match self {
            Self::Ball(s) => s,
            Self::Capsule(s) => s,
            Self::Cuboid(s) => s,
        }
    }
}

fn isometry3_is_finite(iso: &Isometry3<f64>) -> bool {
    iso.translation.vector.iter().all(|x| x.is_finite())
        && iso.rotation.coords.iter().all(|x| x.is_finite())
        && iso.rotation.coords.norm() > 0.0
}

fn isometry2_is_finite(iso: &Isometry2<f64>) -> bool {
    let (re, im) = (iso.rotation.re, iso.rotation.im);
    iso.translation.vector.iter().all(|x| x.is_finite())
        && re.is_finite()
        && im.is_finite()
        && re.hypot(im) > 0.0
}

/// nalgebra → parry3d pose (the quaternion is renormalised against drift).
fn to_pose3(iso: &Isometry3<f64>) -> p3::math::Pose {
    let q = iso.rotation.coords / iso.rotation.coords.norm();
    let t = &iso.translation.vector;
    p3::math::Pose::from_parts(
        p3::math::Vector::new(t.x, t.y, t.z),
        p3::math::Rotation::from_xyzw(q.x, q.y, q.z, q.w),
    )
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
