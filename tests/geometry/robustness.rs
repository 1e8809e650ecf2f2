//! Robustness of the pair contacts: random pairs well formed and within the
//! margin, degenerate input, nearly parallel capsules.

use super::*;

/// A small deterministic generator (xorshift64*), so the sweep is reproducible.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }

    fn shape(&mut self) -> Shape {
        match (self.next() * 3.0) as u32 {
            0 => sphere(self.range(0.05, 1.0)),
            1 => capsule(self.range(0.0, 1.0), self.range(0.05, 0.5)),
            _ => cuboid(
                self.range(0.05, 1.0),
                self.range(0.05, 1.0),
                self.range(0.05, 1.0),
            ),
        }
    }
}

#[test]
fn random_pairs_are_well_formed_and_within_margin() {
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    let mut counts = [0usize; 5];
    let mut worst_residual: f64 = 0.0;
    for _ in 0..20_000 {
        let (sa, sb) = (g.shape(), g.shape());
        let margin = g.range(0.0, 0.3);
        let mut v = || Vector3::new(g.range(-1.5, 1.5), g.range(-1.5, 1.5), g.range(-1.5, 1.5));
        let (ta, ra, tb, rb) = (v(), v(), v(), v());
        let (a, b) = (Isometry3::new(ta, ra), Isometry3::new(tb, rb));
        let contacts = contacts_3d(&sa, &a, &sb, &b, margin);
        counts[contacts.len().min(4)] += 1;
        for c in &contacts {
            assert!(c.gap <= margin, "{c:?} beyond margin {margin}");
            let r = (c.point_a - c.point_b - c.gap * c.normal).norm();
            worst_residual = worst_residual.max(r);
        }
        assert_well_formed(&contacts);
        assert_eq!(contacts, contacts_3d(&sa, &a, &sb, &b, margin));

        let (a2, b2) = (
            Isometry2::new(ta.xy(), ra.z * 3.0),
            Isometry2::new(tb.xy(), rb.z * 3.0),
        );
        let contacts = contacts_2d(&sa, &a2, &sb, &b2, margin);
        assert!(contacts.len() <= 2, "{contacts:?}");
        for c in &contacts {
            assert!(c.gap <= margin);
            assert_eq!([c.point_a.z, c.point_b.z, c.normal.z], [0.0; 3]);
        }
        assert_well_formed(&contacts);
    }
    println!("3D contact-count histogram (0..=4+): {counts:?}; worst residual {worst_residual:e}");
    assert!(
        counts[1] > 0 && counts[2] > 0 && counts[4] > 0,
        "{counts:?}"
    );
}

#[test]
fn degenerate_input_gives_no_contacts_and_no_panic() {
    let id3 = Isometry3::identity();
    let id2 = Isometry2::identity();
    let bad_shapes = [
        sphere(f64::NAN),
        sphere(-1.0),
        capsule(f64::INFINITY, 0.1),
        capsule(0.5, -0.1),
        cuboid(0.5, f64::NAN, 0.5),
        cuboid(-0.5, 0.5, 0.5),
    ];
    for bad in &bad_shapes {
        assert!(contacts_3d(bad, &id3, &sphere(1.0), &id3, 0.1).is_empty());
        assert!(contacts_3d(&cuboid(1.0, 1.0, 1.0), &id3, bad, &id3, 0.1).is_empty());
        assert!(contacts_2d(bad, &id2, &sphere(1.0), &id2, 0.1).is_empty());
    }
    let nan_pose = iso3([f64::NAN, 0.0, 0.0], [0.0; 3]);
    assert!(contacts_3d(&sphere(1.0), &nan_pose, &sphere(1.0), &id3, 0.1).is_empty());
    assert!(contacts_3d(&sphere(1.0), &id3, &sphere(1.0), &id3, f64::NAN).is_empty());
    let nan_pose2 = iso2(0.0, f64::INFINITY, 0.0);
    assert!(contacts_2d(&sphere(1.0), &nan_pose2, &sphere(1.0), &id2, 0.1).is_empty());

    // Zero sizes, coincident centres, infinite and negative margins: no panic.
    let shapes = [
        sphere(0.0),
        capsule(0.0, 0.3),
        capsule(0.5, 0.0),
        cuboid(0.0, 0.0, 0.0),
        cuboid(0.5, 0.0, 0.5),
        sphere(1.0),
        capsule(1.0, 0.2),
        cuboid(0.5, 0.5, 0.5),
    ];
    for sa in &shapes {
        for sb in &shapes {
            for margin in [0.0, -0.5, 1.0, f64::INFINITY] {
                for (a, b) in [
                    (id3, id3),
                    (iso3([0.0, 0.0, 0.3], [0.0, 0.2, 0.0]), id3),
                    (iso3([0.0, 0.0, 5.0], [0.0; 3]), id3),
                ] {
                    let contacts = contacts_3d(sa, &a, sb, &b, margin);
                    for c in &contacts {
                        assert!(c.gap <= margin && c.normal.iter().all(|x| x.is_finite()));
                    }
                    let (a2, b2) = (
                        Isometry2::new(a.translation.vector.xy(), 0.2),
                        Isometry2::identity(),
                    );
                    let contacts = contacts_2d(sa, &a2, sb, &b2, margin);
                    for c in &contacts {
                        assert!(c.gap <= margin && c.normal.iter().all(|x| x.is_finite()));
                    }
                }
            }
        }
    }
}

/// Two capsules side by side, their axes 1 mrad apart: parry's manifold in
/// space is the single closest pair (at B's near end), and a step that turned
/// them about it took the other end in (the generated pile of 200 ended
/// steps 7.2e-5 m deep there). Both ends of the axes' overlap are points,
/// each with its closed-form gap, named by the core ends they lie on.
#[test]
fn capsules_side_by_side_touch_at_both_ends_of_their_overlap() {
    let cap = capsule(0.5, 0.1);
    let theta: f64 = 1e-3;
    let (cx, cy) = (0.3, 0.201);
    let b = iso3([cx, cy, 0.0], [0.0, 0.0, theta]);
    let contacts = contacts_3d(&cap, &Isometry3::identity(), &cap, &b, 0.01);
    assert_eq!(contacts.len(), 2, "{contacts:?}");
    assert_well_formed(&contacts);
    // B's end 0 over A's core: its height above A's axis, less the radii.
    let (bx, by) = (cx - 0.5 * theta.cos(), cy - 0.5 * theta.sin());
    let near = at_point_a(&contacts, &Vector3::new(bx, 0.1, 0.0));
    assert_close(near.gap, by - 0.2, 1e-12, "gap at B's end");
    assert_vec_close(&near.normal, &-Vector3::y(), 1e-12, "normal at B's end");
    // A's end 1 under B's core: its distance to B's axis, less the radii.
    let far_gap = (0.5 - cx) * theta.sin() + cy * theta.cos();
    let far = contacts
        .iter()
        .find(|c| (c.point_a + c.normal * 0.1 - Vector3::new(0.5, 0.0, 0.0)).norm() < 1e-9)
        .unwrap_or_else(|| panic!("no point at A's end: {contacts:?}"));
    assert_close(far.gap, far_gap - 0.2, 1e-12, "gap at A's end");
    assert_ne!(near.feature, far.feature);
    // The names hold under rounding-level turns.
    let expected = sorted_features(&contacts);
    for i in 0..24 {
        let tiny = |k: usize| 1e-15 * ((i * 7 + k * 3) % 5) as f64 - 2e-15;
        let turned = iso3([cx, cy, tiny(1)], [tiny(2), tiny(3), theta + tiny(4)]);
        let again = contacts_3d(&cap, &Isometry3::identity(), &cap, &turned, 0.01);
        assert_eq!(sorted_features(&again), expected, "rotation {i}");
    }
}

/// Crossed capsules touch at one point, where their cores pass closest.
#[test]
fn crossed_capsules_touch_at_one_point() {
    let cap = capsule(0.5, 0.1);
    let b = iso3([0.1, 0.0, 0.25], [0.0, 0.0, std::f64::consts::FRAC_PI_2]);
    let contacts = contacts_3d(&cap, &Isometry3::identity(), &cap, &b, 0.1);
    assert_eq!(contacts.len(), 1, "{contacts:?}");
    assert_close(contacts[0].gap, 0.05, 1e-12, "gap");
    assert_vec_close(&contacts[0].normal, &-Vector3::z(), 1e-12, "normal");
    assert_vec_close(
        &contacts[0].point_a,
        &Vector3::new(0.1, 0.0, 0.1),
        1e-12,
        "point on A",
    );
}

/// A capsule lying across a box's top edge (the pose of the generated pile
/// of 150 at t = 0.975 s: a box 0.16 × 0.12 × 0.10 m lying on the table,
/// turned about z, a capsule of half length 0.06 and radius 0.045 across
/// it): each point's gap is the distance from the box of the point of the
/// capsule's core behind it, less the radius, along the line from the
/// nearest point of the box. Parry's manifold measured both points along
/// one axis, here one across the core and an edge of the box: a point stood
/// +4.9e-5 m open where it is +1.7e-6, and a twentieth of a step later,
/// with the face normal chosen, −8.4e-7; a step that took the first for
/// the point's room ended 46 µm deep.
#[test]
fn capsule_across_a_box_edge_is_measured_by_its_core() {
    let (hl, r, half) = (0.06, 0.045, [0.08, 0.06, 0.05]);
    let cuboid_pose = Isometry3::from_parts(
        nalgebra::Translation3::new(-0.09622976139583048, 0.4948510200220704, 0.05),
        nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(
            -0.9882752450346145,
            -1.414083089760874e-17,
            4.602400605997111e-18,
            0.15268280863205516,
        )),
    );
    let capsule_pose = Isometry3::from_parts(
        nalgebra::Translation3::new(-0.048538633687116334, 0.555405636748661, 0.1433368401589105),
        nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(
            -0.7758824206294475,
            0.612300844991335,
            -0.09431010422756878,
            0.11916269895261486,
        )),
    );
    let shape = cuboid(half[0], half[1], half[2]);
    for (a, pose_a, b, pose_b, sign) in [
        (shape, cuboid_pose, capsule(hl, r), capsule_pose, -1.0),
        (capsule(hl, r), capsule_pose, shape, cuboid_pose, 1.0),
    ] {
        let contacts = contacts_3d(&a, &pose_a, &b, &pose_b, 0.01);
        assert_eq!(contacts.len(), 2, "{contacts:?}");
        for c in &contacts {
            // From the box towards the capsule.
            let (on_capsule, outward) = if sign > 0.0 {
                (c.point_a, c.normal)
            } else {
                (c.point_b, -c.normal)
            };
            let core = nalgebra::Point3::from(on_capsule + outward * r);
            let along = capsule_pose.inverse_transform_point(&core);
            assert!(
                along.y.abs() < 1e-12 && along.z.abs() < 1e-12 && along.x.abs() <= hl + 1e-12,
                "{along:?} is not on the core"
            );
            let local = cuboid_pose.inverse_transform_point(&core);
            let nearest =
                nalgebra::Point3::from(Vector3::from_fn(|k, _| local[k].clamp(-half[k], half[k])));
            let offset = cuboid_pose.rotation * (local - nearest);
            assert_close(c.gap, offset.norm() - r, 1e-12, "gap");
            assert_vec_close(&outward, &offset.normalize(), 1e-12, "normal");
            assert!((0.0..3e-6).contains(&c.gap), "{}", c.gap);
        }
        assert_well_formed(&contacts);
    }
}

/// Capsule–box points are named by where they lie (an end cap or the core,
/// and the box's corner, edge or face), so a resting capsule keeps its ids
/// under rounding-level turns and the warm start can map them (parry's
/// names change every step on the settled `pile_100.ron`).
#[test]
fn capsule_box_ids_do_not_flip_under_rounding_level_rotations() {
    let (hl, r) = (0.06, 0.045);
    let below = cuboid(0.08, 0.06, 0.05);
    let below_pose = iso3([0.0, 0.0, 0.05], [0.0, 0.0, 0.3]);
    // Across the top face and past its edge, one end cap lower than the other.
    let place = |tiny: [f64; 3]| {
        iso3(
            [0.03, 0.01, 0.1 + r + 0.004],
            [0.02 + tiny[0], -0.07 + tiny[1], 0.9 + tiny[2]],
        )
    };
    let reference = contacts_3d(&capsule(hl, r), &place([0.0; 3]), &below, &below_pose, 0.01);
    assert_eq!(reference.len(), 2, "{reference:?}");
    assert_well_formed(&reference);
    let expected = sorted_features(&reference);
    for i in 0..24 {
        let tiny = |k: usize| 1e-15 * ((i * 7 + k * 3) % 5) as f64 - 2e-15;
        for (a, pose_a, b, pose_b) in [
            (
                capsule(hl, r),
                place([tiny(1), tiny(2), tiny(3)]),
                below,
                below_pose,
            ),
            (
                below,
                below_pose,
                capsule(hl, r),
                place([tiny(1), tiny(2), tiny(3)]),
            ),
        ] {
            let contacts = contacts_3d(&a, &pose_a, &b, &pose_b, 0.01);
            let mut features: Vec<u32> = contacts
                .iter()
                .map(|c| c.feature)
                .map(|f| {
                    if matches!(a, Shape::Box { .. }) {
                        f.rotate_left(16)
                    } else {
                        f
                    }
                })
                .collect();
            features.sort_unstable();
            assert_eq!(features, expected, "rotation {i}");
        }
    }
}
