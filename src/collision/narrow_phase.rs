//! The narrow phase: the contact points of body–half-space features and of
//! the body pairs the broad phase found, and each contact's generalized
//! normal and friction directions (Stewart & Trinkle 1996 §3), or only its
//! gap.

use super::broad_phase::{BroadPhase, body_pairs};
use super::found::{Found, FoundPoint};
use super::margin::Margin;
use super::pair_memo::{MemoLog, PairKey, PairMemo};
use super::pose::{Pose, poses_into};
use super::reuse::{Cursor, Identified, Reuse};
use super::{ContactSet, PARALLEL_PAIRS, Search, parallel};
use crate::geometry::{PairContact, Shape, pair};
use crate::model::rigid::position_size;
use crate::model::{
    Contact, ContactFrame, ContactId, ContactJacobian, Dimension, Other, RigidSystem,
    pyramid_angles, tangent_frame,
};
use crate::pair_thread::both;
use nalgebra::{DVector, Isometry2, Isometry3, Translation3, UnitQuaternion, Vector2, Vector3};

/// Every potential contact of the rigid bodies at q with gap ≤ margin into
/// `out` (its storage reused): body–surface features whose bounding sphere
/// is within reach, then the body pairs the broad phase finds, in the order
/// (i, j) with i < j. With two threads and at least [`PARALLEL_PAIRS`]
/// candidate pairs, the narrow phase and the Jacobians of the pairs' two
/// halves are computed on two threads ([`crate::pair_thread`]); the contacts
/// and their order are the same. With `search.reuse`, the surface contacts
/// of kept bodies and the contacts of pairs of two kept bodies are copied
/// ([`super::reuse`]), and `sources` gets, for each contact of `out`, its
/// index in `reuse.previous`, or [`NOT_COPIED`] for one computed (left
/// empty without reuse).
pub fn contacts(
    system: &RigidSystem,
    q: &DVector<f64>,
    edges: usize,
    margin: Margin<'_>,
    out: &mut ContactSet,
    search: Search<'_, Contact>,
    sources: &mut Vec<usize>,
) {
    let Search { threads, reuse } = search;
    out.clear();
    sources.clear();
    let previous: &[Contact] = reuse.map_or(&[], |r| r.previous);
    let mut broad = std::mem::take(&mut out.broad);
    let mut kept_poses = std::mem::take(&mut broad.poses);
    poses_into(system, q, &mut kept_poses);
    let poses = &kept_poses[..];
    let angles = pyramid_angles(match system.dimension {
        Dimension::Planar => 2,
        Dimension::Spatial => edges,
    });
    let up = system.up();
    // A visited contact into its slot: computed, or copied.
    let place = |f: &Found, slot: &mut Contact| match *f {
        Found::Point(p) => {
            let point = (p.id, p.gap, p.point_a, p.b, p.normal);
            fill_contact(system, poses, point, (&angles, &up), slot);
        }
        Found::Copy(k) => slot.clone_from(&previous[k]),
    };
    let mut take = |f: Found| {
        place(&f, out.push_slot());
        if reuse.is_some() {
            sources.push(f.source());
        }
    };
    visit_surfaces(system, poses, margin, reuse, &mut take);
    body_pairs(system, poses, margin, &mut broad, threads);
    let BroadPhase {
        pairs,
        points,
        points_b,
        found,
        found_b,
        kept,
        ..
    } = &mut broad;
    let (memo, [log, log_b]) = kept.begin();
    match parallel(threads, pairs.len(), PARALLEL_PAIRS) {
        None => {
            let memo = memo.map(|memo| (memo, &mut *log));
            visit_pairs(system, q, poses, margin, pairs, points, memo, reuse, take);
        }
        Some(pair) => {
            let (first, second) = pairs.split_at(pairs.len() / 2);
            found.clear();
            found_b.clear();
            let collect = |pairs: &[(usize, usize)],
                           points: &mut Vec<PairContact>,
                           log: &mut MemoLog,
                           into: &mut Vec<Found>| {
                let memo = memo.map(|memo| (memo, log));
                visit_pairs(system, q, poses, margin, pairs, points, memo, reuse, |f| {
                    into.push(f)
                });
            };
            both(
                Some(pair),
                true,
                || collect(first, points, log, found),
                || collect(second, points_b, log_b, found_b),
            );
            let start = out.len();
            for _ in 0..found.len() + found_b.len() {
                out.push_slot();
            }
            let (into_first, into_second) = out.as_mut_slice()[start..].split_at_mut(found.len());
            let fill = |slots: &mut [Contact], found: &[Found]| {
                for (slot, f) in slots.iter_mut().zip(found) {
                    place(f, slot);
                }
            };
            both(
                Some(pair),
                true,
                || fill(into_first, found),
                || fill(into_second, found_b),
            );
            if reuse.is_some() {
                sources.extend(found.iter().chain(found_b.iter()).map(Found::source));
            }
        }
    }
    kept.end();
    broad.poses = kept_poses;
    out.broad = broad;
}

/// The identities and gaps of [`contacts`], without their Jacobians and
/// frames, appended to `out`, with the broad phase's work space `broad` (the
/// narrow phase on two threads as there); with `search.reuse`, the gaps of
/// kept bodies' surface features and of pairs of two kept bodies are copied.
pub fn gaps(
    system: &RigidSystem,
    q: &DVector<f64>,
    margin: Margin<'_>,
    out: &mut Vec<(ContactId, f64)>,
    broad: &mut BroadPhase,
    search: Search<'_, (ContactId, f64)>,
) {
    let Search { threads, reuse } = search;
    let previous: &[(ContactId, f64)] = reuse.map_or(&[], |r| r.previous);
    let gap = |f: Found| match f {
        Found::Point(p) => (p.id, p.gap),
        Found::Copy(k) => previous[k],
    };
    let mut kept_poses = std::mem::take(&mut broad.poses);
    poses_into(system, q, &mut kept_poses);
    let poses = &kept_poses[..];
    visit_surfaces(system, poses, margin, reuse, |f| out.push(gap(f)));
    body_pairs(system, poses, margin, broad, threads);
    let BroadPhase {
        pairs,
        points,
        points_b,
        gaps_b,
        kept,
        ..
    } = broad;
    let (memo, [log, log_b]) = kept.begin();
    let collect = |pairs: &[(usize, usize)],
                   points: &mut Vec<PairContact>,
                   log: &mut MemoLog,
                   into: &mut Vec<(ContactId, f64)>| {
        let memo = memo.map(|memo| (memo, log));
        visit_pairs(system, q, poses, margin, pairs, points, memo, reuse, |f| {
            into.push(gap(f))
        });
    };
    match parallel(threads, pairs.len(), PARALLEL_PAIRS) {
        None => collect(pairs, points, log, out),
        Some(pair) => {
            let (first, second) = pairs.split_at(pairs.len() / 2);
            gaps_b.clear();
            both(
                Some(pair),
                true,
                || collect(first, points, log, out),
                || collect(second, points_b, log_b, gaps_b),
            );
            out.extend_from_slice(gaps_b);
        }
    }
    kept.end();
    broad.poses = kept_poses;
}

/// Calls `found` for every potential contact of a moving body with a
/// surface at q whose gap is at most `margin`, body by body; with
/// `reuse`, a kept body's items of `reuse.previous` instead
/// ([`Found::Copy`]).
fn visit_surfaces<T: Identified>(
    system: &RigidSystem,
    poses: &[Pose],
    margin: Margin<'_>,
    reuse: Option<Reuse<'_, T>>,
    mut found: impl FnMut(Found),
) {
    let mut cursor = reuse.map(|r| (r.keep, Cursor::new(r.previous)));
    for (i, body) in system.bodies.iter().enumerate() {
        if system.is_fixed(i) {
            continue;
        }
        if let Some((keep, cursor)) = &mut cursor
            && keep[i]
        {
            cursor.surfaces(i).for_each(|k| found(Found::Copy(k)));
            continue;
        }
        let Pose { x, rotation: r, .. } = poses[i];
        let reach = body.shape.bounding_radius();
        let margin = margin.body(i);
        for (s, surface) in system.surfaces.iter().enumerate() {
            if surface.normal.dot(&x) - surface.offset - reach > margin {
                continue;
            }
            for (feature, witness, radius) in
                surface_features(&body.shape, &x, &r, system.dimension)
            {
                let gap = surface.normal.dot(&witness) - surface.offset - radius;
                if gap <= margin {
                    let point = witness - surface.normal * radius;
                    let id = ContactId {
                        a: i,
                        b: Other::Surface(s),
                        feature,
                        cut: 0,
                    };
                    found(Found::Point(FoundPoint {
                        id,
                        gap,
                        point_a: point,
                        b: None,
                        normal: surface.normal,
                    }));
                }
            }
        }
    }
}

/// Calls `found` as [`visit_surfaces`] does for the potential
/// contacts of the body pairs `pairs` (sorted), with `points` the narrow
/// phase's scratch; with `reuse`, a pair of two kept bodies' items of
/// `reuse.previous` instead.
#[allow(clippy::too_many_arguments)]
fn visit_pairs<T: Identified>(
    system: &RigidSystem,
    q: &DVector<f64>,
    poses: &[Pose],
    margin: Margin<'_>,
    pairs: &[(usize, usize)],
    points: &mut Vec<PairContact>,
    mut memo: Option<(&PairMemo, &mut MemoLog)>,
    reuse: Option<Reuse<'_, T>>,
    mut found: impl FnMut(Found),
) {
    let mut cursor = reuse.and_then(|r| {
        let first = *pairs.first()?;
        Some((r.keep, Cursor::at_pair(r.previous, first)))
    });
    for &(i, j) in pairs {
        if system.joined(i, j) || (system.is_fixed(i) && system.is_fixed(j)) {
            continue;
        }
        if let Some((keep, cursor)) = &mut cursor
            && keep[i]
            && keep[j]
        {
            cursor.pair(i, j).for_each(|k| found(Found::Copy(k)));
            continue;
        }
        // The moving body comes first: its block is the contact's only
        // one when the other is fixed.
        let (i, j) = if system.is_fixed(i) { (j, i) } else { (i, j) };
        let memo = memo.as_mut().map(|(memo, log)| (&**memo, &mut **log));
        pair_contacts(system, q, poses, (i, j), margin.pair(i, j), points, memo);
        for pc in points.iter() {
            let id = ContactId {
                a: i,
                b: Other::Body(j),
                feature: pc.feature,
                cut: 0,
            };
            found(Found::Point(FoundPoint {
                id,
                gap: pc.gap,
                point_a: pc.point_a,
                b: Some((j, pc.point_b)),
                normal: pc.normal,
            }));
        }
    }
}

/// The narrow phase of bodies i and j into `out` (replaced); with a
/// `memo`, the points it keeps for the two shapes at these poses, or
/// those computed, logged for it.
fn pair_contacts(
    system: &RigidSystem,
    q: &DVector<f64>,
    poses: &[Pose],
    (i, j): (usize, usize),
    margin: f64,
    out: &mut Vec<PairContact>,
    memo: Option<(&PairMemo, &mut MemoLog)>,
) {
    out.clear();
    let (a, b) = (&system.bodies[i], &system.bodies[j]);
    let (xa, xb) = (poses[i].x, poses[j].x);
    // Two balls in space take their closed form in the world frame: a few
    // dozen operations, less than the reach test and keeping them cost.
    if let (Shape::Sphere { radius: ra }, Shape::Sphere { radius: rb }) = (a.shape, b.shape)
        && system.dimension == Dimension::Spatial
    {
        pair::balls_3d((&xa, ra), &poses[i].rotation, (&xb, rb), margin, out);
        return;
    }
    let reach = a.shape.bounding_radius() + b.shape.bounding_radius() + margin;
    if (xa - xb).norm() > reach {
        return;
    }
    // A box's bounding sphere reaches far past its faces (a silo's wall
    // holds every grain inside it): the exact sphere–box distance rules
    // out most such pairs before the narrow phase.
    let apart = |boxed: usize, half: &[f64; 3], sphere: usize, radius: f64| {
        let local = poses[boxed].rotation.inverse() * (poses[sphere].x - poses[boxed].x);
        let planar = system.dimension == Dimension::Planar;
        let outside = Vector3::from_fn(|k, _| {
            if planar && k == 2 {
                0.0
            } else {
                (local[k].abs() - half[k]).max(0.0)
            }
        });
        // Conservative by a round-off slack: a pair this test rejects
        // is one the narrow phase would find apart too.
        outside.norm() - radius > margin + 1e-9 * (radius + half[0] + half[1] + half[2])
    };
    match (a.shape, b.shape) {
        (Shape::Box { half_extents }, Shape::Sphere { radius })
            if apart(i, &half_extents, j, radius) =>
        {
            return;
        }
        (Shape::Sphere { radius }, Shape::Box { half_extents })
            if apart(j, &half_extents, i, radius) =>
        {
            return;
        }
        _ => {}
    }
    // Two balls in the plane are not kept either: `pair::balls_2d` is a
    // few dozen operations.
    let balls = matches!(
        (a.shape, b.shape),
        (Shape::Sphere { .. }, Shape::Sphere { .. })
    );
    let mut memo = memo.filter(|_| !balls).and_then(|(memo, log)| {
        let n = position_size(system.dimension);
        let pose = |k: usize| &q.as_slice()[k * n..(k + 1) * n];
        let key = PairKey::new(a.shape, b.shape, pose(i), pose(j), margin)?;
        Some((memo, log, key))
    });
    if let Some((memo, log, key)) = &mut memo
        && let Some(points) = memo.find((i, j), key, log)
    {
        out.extend_from_slice(points);
        return;
    }
    match system.dimension {
        Dimension::Planar => {
            let pose = |x: Vector3<f64>, k: usize| {
                let o = k * position_size(system.dimension);
                Isometry2::new(Vector2::new(x.x, x.y), q[o + 2])
            };
            pair::contacts_2d(&a.shape, &pose(xa, i), &b.shape, &pose(xb, j), margin, out);
        }
        Dimension::Spatial => {
            let pose = |x: Vector3<f64>, k: usize| {
                Isometry3::from_parts(Translation3::from(x), poses[k].rotation)
            };
            pair::contacts_3d(&a.shape, &pose(xa, i), &b.shape, &pose(xb, j), margin, out);
        }
    }
    if let Some((_, log, key)) = memo {
        log.computed((i, j), key, out);
    }
}

/// A world contact: its identity and gap, its point on body a, body b with
/// its point (none for a surface), and its normal from b into a.
type WorldPoint = (
    ContactId,
    f64,
    Vector3<f64>,
    Option<(usize, Vector3<f64>)>,
    Vector3<f64>,
);

/// Maps a world contact at the bodies' `poses` to generalized n and D, with
/// the friction directions at the `angles` of [`pyramid_angles`] about the
/// [`tangent_frame`] of the normal and `up` (two opposite ones in the
/// plane).
fn fill_contact(
    system: &RigidSystem,
    poses: &[Pose],
    (id, gap, point_a, b, normal): WorldPoint,
    (angles, up): (&[(f64, f64)], &Vector3<f64>),
    out: &mut Contact,
) {
    let k = angles.len();
    let Contact {
        id: out_id,
        gap: out_gap,
        jacobian,
        frame,
    } = out;
    *out_id = id;
    *out_gap = gap;
    let frame = frame.get_or_insert_with(|| ContactFrame {
        point: point_a,
        normal,
        tangents: Vec::with_capacity(k),
    });
    frame.point = point_a;
    frame.normal = normal;
    let tangents = &mut frame.tangents;
    tangents.clear();
    match system.dimension {
        Dimension::Planar => {
            let t = Vector3::new(-normal.y, normal.x, 0.0);
            tangents.extend([t, -t]);
        }
        Dimension::Spatial => {
            let (t1, t2) = tangent_frame(&normal, up);
            tangents.extend(angles.iter().map(|&(c, s)| t1 * c + t2 * s));
        }
    }
    // A fixed body has no velocities: the contact is on a's block alone.
    let b_moving = b.filter(|(j, _)| !system.is_fixed(*j));
    let blocks = [
        system.block(id.a),
        b_moving.map_or(system.block(id.a), |(j, _)| system.block(j)),
    ];
    let count = if b_moving.is_some() { 2 } else { 1 };
    // [`add_jacobian`] writes every entry of the rows.
    jacobian.reshape(&blocks[..count], tangents.len());
    let rows = (&normal, &tangents[..]);
    let dimension = system.dimension;
    add_jacobian(dimension, &poses[id.a], &point_a, 1.0, rows, jacobian, 0);
    if let Some((j, point_b)) = b_moving {
        add_jacobian(dimension, &poses[j], &point_b, -1.0, rows, jacobian, 1);
    }
}

/// Writes sign · (the Jacobian of a body at `pose`)ᵀ applied to the normal
/// and tangents into block `slot` of `jacobian` (each entry of the block's
/// rows once): [n̄; (r × n̄)_z] in the plane, [n̄; Rᵀ(r × n̄)] in space.
fn add_jacobian(
    dimension: Dimension,
    pose: &Pose,
    point: &Vector3<f64>,
    sign: f64,
    (normal, tangents): (&Vector3<f64>, &[Vector3<f64>]),
    jacobian: &mut ContactJacobian,
    slot: usize,
) {
    let r = point - pose.x;
    let mut write = |row: usize, values: &[f64]| {
        for (o, v) in jacobian.block_row_mut(row, slot).iter_mut().zip(values) {
            *o = sign * v;
        }
    };
    match dimension {
        Dimension::Planar => {
            let map = |u: &Vector3<f64>| [u.x, u.y, r.x * u.y - r.y * u.x];
            write(0, &map(normal));
            for (c, t) in tangents.iter().enumerate() {
                write(c + 1, &map(t));
            }
        }
        Dimension::Spatial => {
            let map = |u: &Vector3<f64>| {
                let ang = pose.to_body * r.cross(u);
                [u.x, u.y, u.z, ang.x, ang.y, ang.z]
            };
            write(0, &map(normal));
            for (c, t) in tangents.iter().enumerate() {
                write(c + 1, &map(t));
            }
        }
    }
}

/// The features a shape can touch a half-space with: (feature id, world point,
/// radius). A sphere touches with its centre (radius r), a capsule with its two
/// end-cap centres (the paper's rod constraints f± = y ± (l/2) sin θ − ρ), a box
/// with its corners (radius 0).
fn surface_features(
    shape: &Shape,
    x: &Vector3<f64>,
    r: &UnitQuaternion<f64>,
    dimension: Dimension,
) -> impl Iterator<Item = (u32, Vector3<f64>, f64)> {
    let mut features = [(0, Vector3::zeros(), 0.0); 8];
    let count = match *shape {
        Shape::Sphere { radius } => {
            features[0] = (0, *x, radius);
            1
        }
        Shape::Capsule {
            half_length,
            radius,
        } => {
            for (f, s) in [-1.0, 1.0].iter().enumerate() {
                features[f] = (
                    f as u32,
                    x + r * Vector3::new(s * half_length, 0.0, 0.0),
                    radius,
                );
            }
            2
        }
        Shape::Box { half_extents } => {
            let [hx, hy, hz] = half_extents;
            let corners = match dimension {
                Dimension::Planar => 4,
                Dimension::Spatial => 8,
            };
            for (f, feature) in features.iter_mut().enumerate().take(corners) {
                let corner = match dimension {
                    Dimension::Planar => {
                        let (a, b) = [(-1., -1.), (1., -1.), (1., 1.), (-1., 1.)][f];
                        Vector3::new(a * hx, b * hy, 0.0)
                    }
                    Dimension::Spatial => {
                        let s = |bit: usize| if f & bit == 0 { -1.0 } else { 1.0 };
                        Vector3::new(s(1) * hx, s(2) * hy, s(4) * hz)
                    }
                };
                *feature = (f as u32, x + r * corner, 0.0);
            }
            corners
        }
    };
    features.into_iter().take(count)
}
