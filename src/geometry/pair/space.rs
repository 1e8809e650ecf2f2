//! The narrow phase in space, on parry3d.

use super::{
    BALLS_FEATURE, PairContact, Raw, Shape, UNKNOWN_FEATURE, finish, is_size, parry_shape,
    sides_touched,
};
use nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};
use p3::query::PersistentQueryDispatcher as _;
use parry3d_f64 as p3;

/// Contacts between two shapes in space whose gap is at most `margin` (m).
///
/// `pose_a` and `pose_b` place the body frames of `shape_a` and `shape_b` in the
/// world. Each returned [`PairContact`] gives the witness points on A and on B
/// (world frame, m), the unit normal pointing from B towards A, the signed gap
/// along that normal (m, negative when the shapes overlap) and a feature id that
/// stays the same while the same features of the two shapes touch. A face–face
/// box contact gives up to 4 points; contacts whose gap exceeds `margin` are
/// omitted. The contacts go into `out` (replaced): none when nothing lies
/// within `margin` and for invalid input (non-finite numbers, negative
/// sizes, NaN margin).
pub fn contacts_3d(
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
    if let (Parry3::Ball(a), Parry3::Ball(b)) = (&pa, &pb) {
        let (xa, xb) = (&pose_a.translation.vector, &pose_b.translation.vector);
        balls_3d(
            (xa, a.radius),
            &pose_a.rotation,
            (xb, b.radius),
            margin,
            out,
        );
        return;
    }
    let pos12 = to_pose3(&pose_a.inv_mul(pose_b));
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
            let scale = shape_a.bounding_radius() + shape_b.bounding_radius();
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
        let scale = shape_a.bounding_radius() + shape_b.bounding_radius();
        finish(raw, margin, scale, out);
    });
}

/// Two balls in space (centres `xa`, `xb`, radii `ra`, `rb`, m; A's
/// rotation `rot_a`), in the world frame and without the dispatcher: the one
/// point on the line of the centres that parry's ball–ball manifold
/// (`contact_manifold_ball_ball`) gives, named face 0 on both balls, kept
/// while the gap is below max(margin, 0) and at most `margin`. Coincident
/// centres take A's y axis as the normal, as parry does in A's frame. The
/// normal n points from B into A, the points are x_a − r_a n and
/// x_b + r_b n, and the gap is |x_a − x_b| − r_a − r_b. Into `out`
/// (appended); nothing for invalid radii or non-finite numbers.
pub fn balls_3d(
    (xa, ra): (&Vector3<f64>, f64),
    rot_a: &UnitQuaternion<f64>,
    (xb, rb): (&Vector3<f64>, f64),
    margin: f64,
    out: &mut Vec<PairContact>,
) {
    if !(is_size(ra) && is_size(rb)) {
        return;
    }
    let d = xa - xb;
    let distance = d.norm();
    let gap = distance - ra - rb;
    // NaN fails both comparisons, and so does an infinite gap: a gap that
    // passes is finite, and so are the centres and d / |d|.
    if !(gap < margin.max(0.0) && gap <= margin) {
        return;
    }
    let normal = if distance != 0.0 {
        d / distance
    } else {
        let normal = -(rot_a * Vector3::y());
        if !normal.iter().all(|x| x.is_finite()) {
            return;
        }
        normal
    };
    out.push(PairContact {
        point_a: xa - normal * ra,
        point_b: xb + normal * rb,
        normal,
        gap,
        feature: BALLS_FEATURE,
    });
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

/// The narrow phase's work space, per thread: parry's manifolds and the raw
/// points, reused from pair to pair (they hold nothing between calls).
type Scratch3 = (Vec<p3::query::ContactManifold<(), ()>>, Vec<Raw>);

thread_local! {
    static SCRATCH_3D: std::cell::RefCell<Scratch3> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
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

parry_shape!(Parry3, p3, 3, |x, y, z| p3::math::Vector::new(x, y, z));

fn isometry3_is_finite(iso: &Isometry3<f64>) -> bool {
    iso.translation.vector.iter().all(|x| x.is_finite())
        && iso.rotation.coords.iter().all(|x| x.is_finite())
        && iso.rotation.coords.norm() > 0.0
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng, rngs::StdRng};

    /// Two balls through parry's dispatcher, then [`raw_3d`] and
    /// [`finish`]: what [`balls_3d`] gives in closed form.
    fn dispatched(
        ra: f64,
        pa: &Isometry3<f64>,
        rb: f64,
        pb: &Isometry3<f64>,
        margin: f64,
    ) -> Vec<PairContact> {
        let (a, b) = (Shape::Sphere { radius: ra }, Shape::Sphere { radius: rb });
        let (Some(sa), Some(sb)) = (Parry3::new(&a), Parry3::new(&b)) else {
            panic!("valid balls");
        };
        let mut manifolds = Vec::new();
        p3::query::DefaultQueryDispatcher
            .contact_manifolds(
                &to_pose3(&pa.inv_mul(pb)),
                sa.as_dyn(),
                sb.as_dyn(),
                margin.max(0.0),
                &mut manifolds,
                &mut None,
            )
            .expect("ball pairs are supported");
        let (mut raw, mut out) = (Vec::new(), Vec::new());
        raw_3d(&manifolds, &a, pa, &b, pb, &mut raw);
        finish(&mut raw, margin, ra + rb, &mut out);
        out
    }

    /// On random pairs of balls, near and apart, with coincident centres
    /// among them, the closed form keeps the same points under the same
    /// feature as parry's dispatcher, to rounding.
    #[test]
    fn two_balls_in_closed_form_are_parrys_manifold() {
        let mut rng = StdRng::seed_from_u64(11);
        let mut touching = 0;
        for case in 0..2_000 {
            let (ra, rb) = (rng.random_range(0.01..0.05), rng.random_range(0.01..0.05));
            let mut rotation = || {
                UnitQuaternion::from_euler_angles(
                    rng.random_range(-3.0..3.0),
                    rng.random_range(-1.5..1.5),
                    rng.random_range(-3.0..3.0),
                )
            };
            let (qa, qb) = (rotation(), rotation());
            let xa = Vector3::new(rng.random_range(-1.0..1.0), 0.3, -0.2);
            let offset = if case % 100 == 0 {
                Vector3::zeros()
            } else {
                let direction = Vector3::new(
                    rng.random_range(-1.0..1.0),
                    rng.random_range(-1.0..1.0),
                    rng.random_range(-1.0..1.0),
                );
                direction.normalize() * rng.random_range(0.5..1.5) * (ra + rb)
            };
            let pa = Isometry3::from_parts(xa.into(), qa);
            let pb = Isometry3::from_parts((xa + offset).into(), qb);
            let margin = rng.random_range(-0.01..0.02);
            let expected = dispatched(ra, &pa, rb, &pb, margin);
            let mut found = Vec::new();
            contacts_3d(
                &Shape::Sphere { radius: ra },
                &pa,
                &Shape::Sphere { radius: rb },
                &pb,
                margin,
                &mut found,
            );
            let near = |x: &Vector3<f64>, y: &Vector3<f64>| (x - y).norm() <= 1e-12;
            // A gap within rounding of the margin may fall either side.
            if found.len() != expected.len() {
                let gap = offset.norm() - ra - rb;
                assert!(
                    (gap - margin).abs() <= 1e-12,
                    "case {case}: {found:?} / {expected:?}"
                );
                continue;
            }
            for (f, e) in found.iter().zip(&expected) {
                assert_eq!(f.feature, e.feature, "case {case}");
                assert!((f.gap - e.gap).abs() <= 1e-12, "case {case}");
                assert!(near(&f.point_a, &e.point_a), "case {case}");
                assert!(near(&f.point_b, &e.point_b), "case {case}");
                assert!(near(&f.normal, &e.normal), "case {case}");
                touching += 1;
            }
        }
        assert!(touching > 500, "{touching} pairs within their margins");
    }
}
