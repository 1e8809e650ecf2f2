//! The body–body narrow phase (`geometry::pair`) against closed forms: gaps,
//! normals and witness points of sphere, capsule and box pairs in space and in
//! the plane, the margin filter and the stability of the feature ids.

use contactlab::geometry::{PairContact, Shape, pair};
use nalgebra::{Isometry2, Isometry3, Vector2, Vector3};

#[path = "geometry/robustness.rs"]
mod robustness;

const TOL: f64 = 1e-9;

/// The contacts of two shapes in space, as a list.
fn contacts_3d(
    a: &Shape,
    pa: &Isometry3<f64>,
    b: &Shape,
    pb: &Isometry3<f64>,
    margin: f64,
) -> Vec<PairContact> {
    let mut out = Vec::new();
    pair::contacts_3d(a, pa, b, pb, margin, &mut out);
    out
}

/// The contacts of two shapes in the plane, as a list.
fn contacts_2d(
    a: &Shape,
    pa: &Isometry2<f64>,
    b: &Shape,
    pb: &Isometry2<f64>,
    margin: f64,
) -> Vec<PairContact> {
    let mut out = Vec::new();
    pair::contacts_2d(a, pa, b, pb, margin, &mut out);
    out
}

fn sphere(radius: f64) -> Shape {
    Shape::Sphere { radius }
}

fn capsule(half_length: f64, radius: f64) -> Shape {
    Shape::Capsule {
        half_length,
        radius,
    }
}

fn cuboid(x: f64, y: f64, z: f64) -> Shape {
    Shape::Box {
        half_extents: [x, y, z],
    }
}

/// A pose in space: translation, then rotation given as an axis-angle vector.
fn iso3(t: [f64; 3], axis_angle: [f64; 3]) -> Isometry3<f64> {
    Isometry3::new(Vector3::from(t), Vector3::from(axis_angle))
}

fn iso2(x: f64, y: f64, angle: f64) -> Isometry2<f64> {
    Isometry2::new(Vector2::new(x, y), angle)
}

fn assert_close(actual: f64, expected: f64, tol: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= tol,
        "{what}: got {actual}, expected {expected} (tol {tol})"
    );
}

fn assert_vec_close(actual: &Vector3<f64>, expected: &Vector3<f64>, tol: f64, what: &str) {
    assert!(
        (actual - expected).norm() <= tol,
        "{what}: got {actual:?}, expected {expected:?}"
    );
}

/// Unit normal, `point_a − point_b = gap · normal`, distinct features.
fn assert_well_formed(contacts: &[PairContact]) {
    for c in contacts {
        assert_close(c.normal.norm(), 1.0, 1e-12, "|normal|");
        let residual = (c.point_a - c.point_b - c.gap * c.normal).norm();
        let scale = 1.0 + c.point_a.norm() + c.point_b.norm();
        assert!(
            residual <= 1e-9 * scale,
            "point_a − point_b − gap·normal = {residual} for {c:?}"
        );
    }
    for (i, a) in contacts.iter().enumerate() {
        for b in &contacts[i + 1..] {
            assert_ne!(
                a.feature, b.feature,
                "feature ids within one pair: {contacts:?}"
            );
        }
    }
}

/// Finds the contact whose `point_a` is `expected`, failing if there is none.
fn at_point_a<'a>(contacts: &'a [PairContact], expected: &Vector3<f64>) -> &'a PairContact {
    contacts
        .iter()
        .find(|c| (c.point_a - expected).norm() <= 1e-9)
        .unwrap_or_else(|| panic!("no contact at {expected:?} in {contacts:?}"))
}

fn sorted_features(contacts: &[PairContact]) -> Vec<u32> {
    let mut f: Vec<u32> = contacts.iter().map(|c| c.feature).collect();
    f.sort_unstable();
    f
}

// ---------------------------------------------------------------- space

#[test]
fn two_spheres_gap_and_normal_along_centre_line() {
    // Centres 2.5 apart along (0.6, 0.8, 0), radii 1: gap 2.5 − 2 = 0.5.
    let a = iso3([1.5, 2.0, 0.0], [0.3, -0.2, 0.1]);
    let b = iso3([0.0, 0.0, 0.0], [0.0, 0.0, 1.0]);
    let contacts = contacts_3d(&sphere(1.0), &a, &sphere(1.0), &b, 1.0);
    assert_eq!(contacts.len(), 1, "{contacts:?}");
    let c = &contacts[0];
    let n = Vector3::new(0.6, 0.8, 0.0);
    assert_close(c.gap, 0.5, TOL, "gap");
    assert_vec_close(&c.normal, &n, TOL, "normal (from B to A)");
    assert_vec_close(
        &c.point_a,
        &(Vector3::new(1.5, 2.0, 0.0) - n),
        TOL,
        "point_a",
    );
    assert_vec_close(&c.point_b, &n, TOL, "point_b");
    assert_well_formed(&contacts);

    // Penetrating: centres 1.5 apart along z, gap −0.5, normal from B to A = −z.
    let contacts = contacts_3d(
        &sphere(1.0),
        &iso3([0.0, 0.0, -1.5], [0.0; 3]),
        &sphere(1.0),
        &iso3([0.0; 3], [0.0; 3]),
        0.0,
    );
    assert_eq!(contacts.len(), 1);
    assert_close(contacts[0].gap, -0.5, TOL, "penetrating gap");
    assert_vec_close(&contacts[0].normal, &-Vector3::z(), TOL, "normal");
    assert_well_formed(&contacts);
}

/// Two balls skip parry's dispatcher (their point computed as its ball–ball
/// manifold computes it): on random pairs (radii 0.05–1, centres up to 2
/// apart, rotated, overlapping or apart, margins of either sign) the one
/// point is parry's own ball–ball contact (`parry3d_f64::query::contact`,
/// `parry2d_f64` in the plane) up to rounding, it is kept exactly when
/// parry's is within the margin, and it carries the feature of parry's
/// ball–ball manifold (face 0 on both).
#[test]
fn two_balls_without_the_dispatcher_are_parrys_contact() {
    use parry2d_f64 as p2;
    use parry3d_f64 as p3;
    let mut seed = 7u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let face = {
        let packed = p3::shape::PackedFeatureId::face(0).0;
        let code = packed & 0x3fff_ffff;
        ((packed >> 30) << 14) | ((code ^ (code >> 14) ^ (code >> 28)) & 0x3fff)
    };
    let (mut kept, mut dropped) = (0, 0);
    for _ in 0..2_000 {
        let (ra, rb) = (0.05 + 0.95 * next(), 0.05 + 0.95 * next());
        let mut point = || [4.0 * next() - 2.0, 4.0 * next() - 2.0, 4.0 * next() - 2.0];
        let (ta, tb) = (point(), point());
        let (wa, wb) = (point(), point());
        let margin = 0.6 * next() - 0.1;

        // In space.
        let (a, b) = (iso3(ta, wa), iso3(tb, wb));
        let ours = contacts_3d(&sphere(ra), &a, &sphere(rb), &b, margin);
        let pose = |iso: &Isometry3<f64>| {
            let (t, q) = (iso.translation.vector, iso.rotation.coords);
            p3::math::Pose::from_parts(
                p3::math::Vector::new(t.x, t.y, t.z),
                p3::math::Rotation::from_xyzw(q.x, q.y, q.z, q.w),
            )
        };
        let theirs = p3::query::contact(
            &pose(&a),
            &p3::shape::Ball::new(ra),
            &pose(&b),
            &p3::shape::Ball::new(rb),
            margin.max(0.0),
        )
        .expect("balls are supported")
        .filter(|c| c.dist <= margin);
        match (ours.as_slice(), theirs) {
            ([c], Some(t)) => {
                let v = |p: p3::math::Vector| Vector3::new(p.x, p.y, p.z);
                assert_close(c.gap, t.dist, 1e-12, "gap");
                assert_vec_close(&c.normal, &-v(t.normal1), 1e-12, "normal");
                assert_vec_close(&c.point_a, &v(t.point1), 1e-12, "point_a");
                assert_vec_close(&c.point_b, &v(t.point2), 1e-12, "point_b");
                assert_eq!(c.feature, (face << 16) | face, "feature");
                assert_well_formed(&ours);
                kept += 1;
            }
            ([], None) => dropped += 1,
            (ours, theirs) => panic!("ours {ours:?}, parry's {theirs:?}"),
        }

        // In the plane.
        let (a, b) = (iso2(ta[0], ta[1], wa[2]), iso2(tb[0], tb[1], wb[2]));
        let ours = contacts_2d(&sphere(ra), &a, &sphere(rb), &b, margin);
        let pose = |iso: &Isometry2<f64>| {
            let t = iso.translation.vector;
            p2::math::Pose::from_parts(
                p2::math::Vector::new(t.x, t.y),
                p2::math::Rotation::from_cos_sin_unchecked(iso.rotation.re, iso.rotation.im),
            )
        };
        let theirs = p2::query::contact(
            &pose(&a),
            &p2::shape::Ball::new(ra),
            &pose(&b),
            &p2::shape::Ball::new(rb),
            margin.max(0.0),
        )
        .expect("disks are supported")
        .filter(|c| c.dist <= margin);
        match (ours.as_slice(), theirs) {
            ([c], Some(t)) => {
                let v = |p: p2::math::Vector| Vector3::new(p.x, p.y, 0.0);
                assert_close(c.gap, t.dist, 1e-12, "planar gap");
                assert_vec_close(&c.normal, &-v(t.normal1), 1e-12, "planar normal");
                assert_vec_close(&c.point_a, &v(t.point1), 1e-12, "planar point_a");
                assert_vec_close(&c.point_b, &v(t.point2), 1e-12, "planar point_b");
                assert_eq!(c.feature, (face << 16) | face, "planar feature");
            }
            ([], None) => {}
            (ours, theirs) => panic!("in the plane: ours {ours:?}, parry's {theirs:?}"),
        }
    }
    // Both branches were taken often.
    assert!(
        kept > 200 && dropped > 200,
        "kept {kept}, dropped {dropped}"
    );
}

/// Bottom corners of a unit cube (half extents 0.5) in the world.
fn bottom_corners(pose: &Isometry3<f64>) -> Vec<Vector3<f64>> {
    [(0.5, 0.5), (0.5, -0.5), (-0.5, 0.5), (-0.5, -0.5)]
        .iter()
        .map(|&(x, y)| (pose * nalgebra::Point3::new(x, y, -0.5)).coords)
        .collect()
}

#[test]
fn box_resting_on_box_gives_four_touching_corners() {
    // A unit cube (half extents 0.5) turned 0.4 rad about z, resting on a slab
    // whose top face is z = 0.5.
    let slab = cuboid(2.0, 2.0, 0.5);
    let a = iso3([0.3, -0.2, 1.0], [0.0, 0.0, 0.4]);
    let b = Isometry3::identity();
    let contacts = contacts_3d(&cuboid(0.5, 0.5, 0.5), &a, &slab, &b, 0.01);
    assert_eq!(contacts.len(), 4, "{contacts:?}");
    for corner in bottom_corners(&a) {
        let c = at_point_a(&contacts, &corner);
        assert!(c.gap.abs() < 1e-9, "gap {}", c.gap);
        assert_vec_close(&c.normal, &Vector3::z(), 1e-12, "normal");
        assert_vec_close(&c.point_b, &corner, 1e-9, "point_b");
    }
    assert_well_formed(&contacts);

    // Swapping the roles flips the normal; gaps and points are the same.
    let swapped = contacts_3d(&slab, &b, &cuboid(0.5, 0.5, 0.5), &a, 0.01);
    assert_eq!(swapped.len(), 4, "{swapped:?}");
    for corner in bottom_corners(&a) {
        let c = swapped
            .iter()
            .find(|c| (c.point_b - corner).norm() <= 1e-9)
            .expect("corner on the second shape");
        assert!(c.gap.abs() < 1e-9);
        assert_vec_close(&c.normal, &-Vector3::z(), 1e-12, "swapped normal");
    }
    assert_well_formed(&swapped);
}

#[test]
fn equal_boxes_stacked_exactly_give_four_points_not_eight() {
    let cube = cuboid(0.5, 0.5, 0.5);
    let a = iso3([0.0, 0.0, 1.0], [0.0; 3]);
    let contacts = contacts_3d(&cube, &a, &cube, &Isometry3::identity(), 0.01);
    assert_eq!(contacts.len(), 4, "{contacts:?}");
    for corner in bottom_corners(&a) {
        let c = at_point_a(&contacts, &corner);
        assert!(c.gap.abs() < 1e-9);
        assert_vec_close(&c.normal, &Vector3::z(), 1e-12, "normal");
    }
    assert_well_formed(&contacts);
}

#[test]
fn tilted_penetrating_box_gaps_of_lowest_corners() {
    // Cube tilted by θ about y: its corners (0.5, ±0.5, −0.5) sit at
    // h − ½(sin θ + cos θ), the corners (−0.5, ±0.5, −0.5) at h + ½(sin θ − cos θ).
    // The slab's top is z = 0.5, so the gaps are d and d + sin θ with
    // d = h − ½(sin θ + cos θ) − ½ = −0.01.
    let theta: f64 = 0.1;
    let d = -0.01;
    let h = 0.5 + 0.5 * (theta.sin() + theta.cos()) + d;
    let a = iso3([0.2, 0.1, h], [0.0, theta, 0.0]);
    let cube = cuboid(0.5, 0.5, 0.5);
    let slab = cuboid(2.0, 2.0, 0.5);
    let b = Isometry3::identity();

    let low = contacts_3d(&cube, &a, &slab, &b, 0.05);
    assert_eq!(
        low.len(),
        2,
        "only the two lowest corners within 0.05: {low:?}"
    );
    let all = contacts_3d(&cube, &a, &slab, &b, 0.2);
    assert_eq!(all.len(), 4, "{all:?}");
    for corner in bottom_corners(&a) {
        let local_x = a.inverse_transform_point(&corner.into()).x;
        let expected = if local_x > 0.0 { d } else { d + theta.sin() };
        let c = at_point_a(&all, &corner);
        assert_close(c.gap, expected, 1e-9, "corner gap");
        assert_vec_close(&c.normal, &Vector3::z(), 1e-12, "normal");
        assert_vec_close(
            &c.point_b,
            &Vector3::new(corner.x, corner.y, 0.5),
            1e-9,
            "point_b on the slab's top",
        );
        if local_x > 0.0 {
            assert!(low.iter().any(|l| (l.point_a - corner).norm() < 1e-9));
        }
    }
    assert_well_formed(&low);
    assert_well_formed(&all);
    println!(
        "tilted box: gaps {:?}",
        all.iter().map(|c| c.gap).collect::<Vec<_>>()
    );
}

#[test]
fn capsule_lying_on_box_touches_at_both_end_caps() {
    // Capsule (half length 0.5, radius 0.1) along x, sunk 0.002 into the slab.
    let depth = 0.002;
    let (hl, r) = (0.5, 0.1);
    let centre = Vector3::new(0.2, -0.3, 0.5 + r - depth);
    for yaw in [0.0, 0.7] {
        let a = Isometry3::new(centre, Vector3::new(0.0, 0.0, yaw));
        let contacts = contacts_3d(
            &capsule(hl, r),
            &a,
            &cuboid(2.0, 2.0, 0.5),
            &Isometry3::identity(),
            0.01,
        );
        assert_eq!(contacts.len(), 2, "yaw {yaw}: {contacts:?}");
        for s in [-1.0, 1.0] {
            let end = (a * nalgebra::Point3::new(s * hl, 0.0, -r)).coords;
            let c = at_point_a(&contacts, &end);
            assert_close(c.gap, -depth, 1e-9, "end-cap gap");
            assert_vec_close(&c.normal, &Vector3::z(), 1e-9, "normal");
            assert_vec_close(
                &c.point_b,
                &Vector3::new(end.x, end.y, 0.5),
                1e-9,
                "point_b",
            );
        }
        assert_well_formed(&contacts);
    }
}

#[test]
fn sphere_beside_capsule_midpoint_and_end_cap() {
    // Capsule (half length 1, radius 0.2) with its axis along world y.
    let cap = capsule(1.0, 0.2);
    let cap_pose = iso3([1.0, 2.0, 3.0], [0.0, 0.0, std::f64::consts::FRAC_PI_2]);
    let ball = sphere(0.3);

    // Sphere 1.0 from the axis midpoint along x: gap 1.0 − 0.2 − 0.3 = 0.5.
    let ball_pose = iso3([2.0, 2.0, 3.0], [0.0; 3]);
    let contacts = contacts_3d(&cap, &cap_pose, &ball, &ball_pose, 1.0);
    assert_eq!(contacts.len(), 1, "{contacts:?}");
    let c = &contacts[0];
    assert_close(c.gap, 0.5, TOL, "gap");
    assert_vec_close(
        &c.normal,
        &-Vector3::x(),
        TOL,
        "normal from sphere to capsule",
    );
    assert_vec_close(
        &c.point_a,
        &Vector3::new(1.2, 2.0, 3.0),
        TOL,
        "point on capsule",
    );
    assert_vec_close(
        &c.point_b,
        &Vector3::new(1.7, 2.0, 3.0),
        TOL,
        "point on sphere",
    );
    assert_well_formed(&contacts);

    // Same pair, sphere first: the normal flips, the gap does not.
    let contacts = contacts_3d(&ball, &ball_pose, &cap, &cap_pose, 1.0);
    assert_eq!(contacts.len(), 1);
    assert_close(contacts[0].gap, 0.5, TOL, "gap (swapped)");
    assert_vec_close(&contacts[0].normal, &Vector3::x(), TOL, "normal (swapped)");
    assert_vec_close(
        &contacts[0].point_a,
        &Vector3::new(1.7, 2.0, 3.0),
        TOL,
        "point_a",
    );
    assert_well_formed(&contacts);

    // Beyond the end (1, 3, 3) along the axis by 0.6: gap 0.6 − 0.5 = 0.1.
    let ball_pose = iso3([1.0, 3.6, 3.0], [0.0; 3]);
    let contacts = contacts_3d(&cap, &cap_pose, &ball, &ball_pose, 1.0);
    assert_eq!(contacts.len(), 1);
    assert_close(contacts[0].gap, 0.1, TOL, "end-cap gap");
    assert_vec_close(&contacts[0].normal, &-Vector3::y(), TOL, "end-cap normal");
    assert_well_formed(&contacts);
}

#[test]
fn margin_filter_in_space() {
    let a = iso3([0.0, 0.0, 2.5], [0.0; 3]);
    let b = Isometry3::identity();
    assert!(contacts_3d(&sphere(1.0), &a, &sphere(1.0), &b, 0.4).is_empty());
    let within = contacts_3d(&sphere(1.0), &a, &sphere(1.0), &b, 0.6);
    assert_eq!(within.len(), 1);
    assert_close(within[0].gap, 0.5, TOL, "predicted gap");
    assert!(within[0].gap > 0.0);

    // A cube hovering 0.03 above the slab.
    let cube = cuboid(0.5, 0.5, 0.5);
    let slab = cuboid(2.0, 2.0, 0.5);
    let a = iso3([0.0, 0.0, 1.03], [0.0; 3]);
    assert!(contacts_3d(&cube, &a, &slab, &b, 0.02).is_empty());
    let within = contacts_3d(&cube, &a, &slab, &b, 0.05);
    assert_eq!(within.len(), 4, "{within:?}");
    for c in &within {
        assert_close(c.gap, 0.03, 1e-9, "hovering gap");
        assert!(c.gap > 0.0);
    }
    assert_well_formed(&within);

    // Capsule hovering 0.03 above the slab.
    let a = iso3([0.0, 0.0, 0.5 + 0.1 + 0.03], [0.0; 3]);
    assert!(contacts_3d(&capsule(0.5, 0.1), &a, &slab, &b, 0.02).is_empty());
    let within = contacts_3d(&capsule(0.5, 0.1), &a, &slab, &b, 0.05);
    assert_eq!(within.len(), 2, "{within:?}");
    for c in &within {
        assert_close(c.gap, 0.03, 1e-9, "hovering capsule gap");
    }
}

#[test]
fn feature_ids_stable_and_distinct_in_space() {
    let cube = cuboid(0.5, 0.5, 0.5);
    let slab = cuboid(2.0, 2.0, 0.5);
    let b = Isometry3::identity();
    let a = iso3([0.3, -0.2, 0.999], [0.0, 0.0, 0.4]);
    let first = contacts_3d(&cube, &a, &slab, &b, 0.01);
    let second = contacts_3d(&cube, &a, &slab, &b, 0.01);
    assert_eq!(first, second, "same input, same output");
    assert_eq!(first.len(), 4);
    assert_well_formed(&first);

    // The cube slides and sinks a little: same corners on the same face.
    let moved = iso3([0.31, -0.19, 0.998], [0.0, 0.0, 0.41]);
    let after = contacts_3d(&cube, &moved, &slab, &b, 0.01);
    assert_eq!(sorted_features(&first), sorted_features(&after));
    for c in &first {
        let local = a.inverse_transform_point(&c.point_a.into());
        let d = after
            .iter()
            .find(|d| d.feature == c.feature)
            .expect("same feature");
        let local_after = moved.inverse_transform_point(&d.point_a.into());
        assert!(
            (local - local_after).norm() < 1e-9,
            "same corner of the cube"
        );
    }

    // Capsule on the slab: two distinct, stable ids.
    let a = iso3([0.0, 0.0, 0.599], [0.0; 3]);
    let c1 = contacts_3d(&capsule(0.5, 0.1), &a, &slab, &b, 0.01);
    let c2 = contacts_3d(&capsule(0.5, 0.1), &a, &slab, &b, 0.01);
    assert_eq!(c1, c2);
    assert_eq!(c1.len(), 2);
    assert_well_formed(&c1);
}

/// A brick in running bond (`scenes/wall.ron`): its bottom
/// corners lie on the long top edges of the brick below, where parry's names
/// for the clipped points (vertex–face or edge–edge) flip with rounding-level
/// rotations. The ids follow where each point lies on each box instead, so
/// they are the same under every such rotation (the wall's warm start maps
/// its bases by them).
#[test]
fn running_bond_ids_do_not_flip_under_rounding_level_rotations() {
    let brick = cuboid(0.1, 0.05, 0.05);
    let below = iso3([-0.4523, 0.0, 0.05], [0.0; 3]);
    let reference = contacts_3d(
        &brick,
        &iso3([-0.3518, 0.0, 0.15], [0.0; 3]),
        &brick,
        &below,
        0.005,
    );
    assert_eq!(reference.len(), 4, "{reference:?}");
    assert_well_formed(&reference);
    let expected = sorted_features(&reference);
    for i in 0..24 {
        let tiny = |k: usize| 1e-15 * ((i * 7 + k * 3) % 5) as f64 - 2e-15;
        let upper = iso3([-0.3518, tiny(1) * 0.1, 0.15], [tiny(2), tiny(3), tiny(4)]);
        let contacts = contacts_3d(&brick, &upper, &brick, &below, 0.005);
        assert_eq!(sorted_features(&contacts), expected, "rotation {i}");
    }
}

// ---------------------------------------------------------------- plane

#[test]
fn two_disks() {
    let a = iso2(1.5, 2.0, 0.3);
    let b = iso2(0.0, 0.0, -1.0);
    let contacts = contacts_2d(&sphere(1.0), &a, &sphere(1.0), &b, 1.0);
    assert_eq!(contacts.len(), 1);
    let c = &contacts[0];
    let n = Vector3::new(0.6, 0.8, 0.0);
    assert_close(c.gap, 0.5, TOL, "gap");
    assert_vec_close(&c.normal, &n, TOL, "normal");
    assert_vec_close(&c.point_a, &Vector3::new(0.9, 1.2, 0.0), TOL, "point_a");
    assert_vec_close(&c.point_b, &n, TOL, "point_b");
    assert_eq!(c.point_a.z, 0.0);
    assert_eq!(c.point_b.z, 0.0);
    assert_eq!(c.normal.z, 0.0);
    assert_well_formed(&contacts);
}

#[test]
fn box_on_box_in_the_plane_gives_two_points() {
    // A 1×1 square resting on a 4×1 slab whose top is y = 0.5.
    let square = cuboid(0.5, 0.5, 123.0);
    let slab = cuboid(2.0, 0.5, 0.0);
    let a = iso2(0.3, 1.0, 0.0);
    let contacts = contacts_2d(&square, &a, &slab, &Isometry2::identity(), 0.01);
    assert_eq!(contacts.len(), 2, "{contacts:?}");
    for x in [-0.2, 0.8] {
        let c = at_point_a(&contacts, &Vector3::new(x, 0.5, 0.0));
        assert!(c.gap.abs() < 1e-9, "gap {}", c.gap);
        assert_vec_close(&c.normal, &Vector3::y(), 1e-12, "normal");
        assert_vec_close(&c.point_b, &Vector3::new(x, 0.5, 0.0), 1e-9, "point_b");
    }
    assert_well_formed(&contacts);

    // Equal squares stacked exactly.
    let a = iso2(0.0, 1.0, 0.0);
    let contacts = contacts_2d(&square, &a, &square, &Isometry2::identity(), 0.01);
    assert_eq!(contacts.len(), 2, "{contacts:?}");
    assert_well_formed(&contacts);

    // Tilted by θ and sunk: the lowest corner (−0.5, −0.5) has gap d, the
    // other bottom corner d + sin θ (d = h − ½(sin θ + cos θ) − ½).
    let theta: f64 = 0.1;
    let d = -0.01;
    let h = 0.5 + 0.5 * (theta.sin() + theta.cos()) + d;
    let a = iso2(0.1, h, theta);
    let contacts = contacts_2d(&square, &a, &slab, &Isometry2::identity(), 0.2);
    assert_eq!(contacts.len(), 2, "{contacts:?}");
    for (lx, expected) in [(-0.5, d), (0.5, d + theta.sin())] {
        let corner = a * nalgebra::Point2::new(lx, -0.5);
        let c = at_point_a(&contacts, &Vector3::new(corner.x, corner.y, 0.0));
        assert_close(c.gap, expected, 1e-9, "tilted corner gap");
        assert_vec_close(&c.normal, &Vector3::y(), 1e-12, "normal");
    }
    assert_well_formed(&contacts);
    let low = contacts_2d(&square, &a, &slab, &Isometry2::identity(), 0.05);
    assert_eq!(low.len(), 1, "{low:?}");
    assert_close(low[0].gap, d, 1e-9, "lowest corner only");
}

/// Two equal rectangles stacked corner on corner (the mass-ratio stacks of
/// `tests/mass_ratios.rs`): the upper one tilted by up to 1e-5 rad either
/// way. Parry names each clipped point vertex–face or face–vertex by which
/// rectangle it clipped, which flips with the tilt; the points are named by
/// where they lie on each rectangle instead, so their names hold.
#[test]
fn stacked_rectangles_keep_their_ids_under_small_tilts() {
    let plank = cuboid(0.2, 0.05, 0.1);
    let below = iso2(0.0, 0.05, 0.0);
    let reference = contacts_2d(&plank, &iso2(0.0, 0.15, 0.0), &plank, &below, 0.01);
    assert_eq!(reference.len(), 2, "{reference:?}");
    let expected = sorted_features(&reference);
    for i in -10..=10 {
        let tilt = 1e-6 * i as f64;
        let upper = iso2(1e-9 * i as f64, 0.15 + 0.2 * tilt.abs(), tilt);
        let contacts = contacts_2d(&plank, &upper, &plank, &below, 0.01);
        assert_eq!(sorted_features(&contacts), expected, "tilt {tilt:e}");
    }
}

#[test]
fn capsule_on_box_in_the_plane_gives_two_points() {
    let depth = 0.002;
    let (hl, r) = (0.5, 0.1);
    let a = iso2(0.2, 0.5 + r - depth, 0.0);
    let contacts = contacts_2d(
        &capsule(hl, r),
        &a,
        &cuboid(2.0, 0.5, 0.5),
        &Isometry2::identity(),
        0.01,
    );
    assert_eq!(contacts.len(), 2, "{contacts:?}");
    for x in [0.2 - hl, 0.2 + hl] {
        let c = at_point_a(&contacts, &Vector3::new(x, 0.5 - depth, 0.0));
        assert_close(c.gap, -depth, 1e-9, "end-cap gap");
        assert_vec_close(&c.normal, &Vector3::y(), 1e-9, "normal");
        assert_vec_close(&c.point_b, &Vector3::new(x, 0.5, 0.0), 1e-9, "point_b");
    }
    assert_well_formed(&contacts);
}

#[test]
fn disk_beside_capsule_midpoint_in_the_plane() {
    // Capsule axis along world y (turned by π/2), disk 1.0 away along −x.
    let cap_pose = iso2(1.0, 2.0, std::f64::consts::FRAC_PI_2);
    let disk_pose = iso2(0.0, 2.0, 0.0);
    let contacts = contacts_2d(&sphere(0.3), &disk_pose, &capsule(1.0, 0.2), &cap_pose, 1.0);
    assert_eq!(contacts.len(), 1);
    assert_close(contacts[0].gap, 0.5, TOL, "gap");
    assert_vec_close(
        &contacts[0].normal,
        &-Vector3::x(),
        TOL,
        "normal from capsule to disk",
    );
    assert_well_formed(&contacts);
}

#[test]
fn margin_filter_in_the_plane() {
    let b = Isometry2::identity();
    let a = iso2(2.5, 0.0, 0.0);
    assert!(contacts_2d(&sphere(1.0), &a, &sphere(1.0), &b, 0.4).is_empty());
    let within = contacts_2d(&sphere(1.0), &a, &sphere(1.0), &b, 0.6);
    assert_eq!(within.len(), 1);
    assert_close(within[0].gap, 0.5, TOL, "gap");

    let square = cuboid(0.5, 0.5, 0.5);
    let slab = cuboid(2.0, 0.5, 0.5);
    let a = iso2(0.0, 1.03, 0.0);
    assert!(contacts_2d(&square, &a, &slab, &b, 0.02).is_empty());
    let within = contacts_2d(&square, &a, &slab, &b, 0.05);
    assert_eq!(within.len(), 2);
    for c in &within {
        assert_close(c.gap, 0.03, 1e-9, "hovering gap");
    }
}

#[test]
fn feature_ids_stable_and_distinct_in_the_plane() {
    let square = cuboid(0.5, 0.5, 0.5);
    let slab = cuboid(2.0, 0.5, 0.5);
    let b = Isometry2::identity();
    let a = iso2(0.3, 0.999, 0.0);
    let first = contacts_2d(&square, &a, &slab, &b, 0.01);
    let second = contacts_2d(&square, &a, &slab, &b, 0.01);
    assert_eq!(first, second);
    assert_eq!(first.len(), 2);
    assert_well_formed(&first);

    let moved = iso2(0.35, 0.998, 0.001);
    let after = contacts_2d(&square, &moved, &slab, &b, 0.01);
    assert_eq!(after.len(), 2);
    for c in &first {
        let local = a.inverse_transform_point(&nalgebra::Point2::new(c.point_a.x, c.point_a.y));
        let d = after
            .iter()
            .find(|d| d.feature == c.feature)
            .expect("same feature after a small move");
        let local_after =
            moved.inverse_transform_point(&nalgebra::Point2::new(d.point_a.x, d.point_a.y));
        assert!(
            (local - local_after).norm() < 1e-9,
            "same corner of the square"
        );
    }

    // Turning the square by quarter turns puts each of its four corners on the
    // slab's top face in turn: four distinct (corner, face) ids, each seen twice.
    let mut ids = Vec::new();
    for k in 0..4 {
        let angle = k as f64 * std::f64::consts::FRAC_PI_2;
        let contacts = contacts_2d(&square, &iso2(0.0, 0.999, angle), &slab, &b, 0.01);
        assert_eq!(contacts.len(), 2);
        assert_well_formed(&contacts);
        ids.extend(contacts.iter().map(|c| c.feature));
    }
    ids.sort_unstable();
    assert_eq!(ids.len(), 8);
    ids.dedup();
    assert_eq!(ids.len(), 4, "one id per corner of the square");

    let cap = capsule(0.5, 0.1);
    let a = iso2(0.0, 0.599, 0.0);
    let c1 = contacts_2d(&cap, &a, &slab, &b, 0.01);
    assert_eq!(c1, contacts_2d(&cap, &a, &slab, &b, 0.01));
    assert_eq!(c1.len(), 2);
    assert_well_formed(&c1);
}
