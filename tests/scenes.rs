//! Scene files: malformed ones give an error naming file, line, column and
//! field; every shipped scene loads.

mod common;

use contactlab::scene;
use contactlab::sim::Simulation;
use std::path::Path;

const GOOD: &str = r#"Scene(
    name: "two boxes",
    params: (dt: 0.01, duration: 0.5, mu: 0.5, edges: 8),
    system: Rigid((
        dimension: Spatial,
        gravity: (0.0, 0.0, -9.81),
        bodies: [
            (name: "a", shape: Box(half_extents: (0.1, 0.1, 0.1)), mass: 1.0, position: (0.0, 0.0, 0.1)),
            (name: "b", shape: Sphere(radius: 0.1), mass: 2.0, position: (1.0, 0.0, 0.1)),
        ],
        surfaces: [(name: "table", normal: (0.0, 0.0, 1.0))],
    )),
)"#;

fn error_of(text: &str) -> String {
    match scene::parse(text, Path::new("bad.ron")) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_reference_scene_parses() {
    let scene = scene::parse(GOOD, Path::new("good.ron")).expect("valid");
    assert_eq!(scene.model.dof(), 12);
    assert_eq!(scene.params.edges, 8);
}

/// A file saved with a UTF-8 byte-order mark loads like one without, and its
/// errors keep their lines and columns.
#[test]
fn a_byte_order_mark_is_ignored() {
    let text = format!("\u{feff}{GOOD}");
    let scene = scene::parse(&text, Path::new("bom.ron")).expect("valid");
    assert_eq!(scene.model.dof(), 12);
    let e = error_of(&text.replace("mass: 2.0,", "mass: 2.0, colour: 3,"));
    assert!(e.starts_with("bad.ron:9:"), "{e}");
    assert!(e.contains(": colour: "), "{e}");
}

#[test]
fn a_syntax_error_names_its_line_and_column() {
    let text = GOOD.replace("mass: 2.0,", "mass: 2.0,,");
    let e = error_of(&text);
    assert!(e.starts_with("bad.ron:9:"), "{e}");
    assert!(e.contains("syntax"), "{e}");
}

#[test]
fn an_unknown_field_is_named() {
    let text = GOOD.replace("mass: 2.0,", "mass: 2.0, colour: 3,");
    let e = error_of(&text);
    assert!(e.starts_with("bad.ron:9:"), "{e}");
    assert!(e.contains(": colour: "), "{e}");
}

#[test]
fn a_negative_mass_is_rejected_at_its_field() {
    let text = GOOD.replace("mass: 2.0", "mass: -2.0");
    assert_eq!(
        error_of(&text),
        "bad.ron:9:53: bodies[1].mass: must be a positive number, found -2"
    );
}

#[test]
fn a_negative_friction_coefficient_is_rejected() {
    let text = GOOD.replace("mu: 0.5", "mu: -0.1");
    assert_eq!(
        error_of(&text),
        "bad.ron:3:39: params.mu: friction μ must be ≥ 0, found -0.1"
    );
}

#[test]
fn two_pyramid_edges_in_space_are_rejected() {
    let text = GOOD.replace("edges: 8", "edges: 2");
    assert_eq!(
        error_of(&text),
        "bad.ron:3:48: params.edges: a friction pyramid in space needs k ≥ 3 edges, found 2"
    );
}

#[test]
fn duplicate_names_are_rejected_at_the_second_one() {
    let text = GOOD.replace("name: \"b\"", "name: \"a\"");
    assert_eq!(
        error_of(&text),
        "bad.ron:9:20: bodies[1].name: duplicate name `a`: body and surface names must be unique"
    );
}

#[test]
fn other_ranges_are_checked() {
    for (from, to, field) in [
        ("dt: 0.01", "dt: 0.0", "params.dt"),
        ("radius: 0.1", "radius: -0.1", "bodies[1].shape"),
        ("duration: 0.5", "duration: -1.0", "params.duration"),
        (
            "normal: (0.0, 0.0, 1.0)",
            "normal: (0.0, 0.0, 0.0)",
            "surfaces[0].normal",
        ),
    ] {
        let e = error_of(&GOOD.replace(from, to));
        assert!(e.contains(&format!(": {field}: ")), "{e}");
    }
    let text = GOOD.replace("mu: 0.5", "mu: 0.5, restitution: 1.5");
    assert!(error_of(&text).contains("params.restitution"));
}

#[test]
fn a_missing_file_is_an_error_not_a_panic() {
    let e = scene::load(Path::new("scenes/does_not_exist.ron")).expect_err("missing");
    assert!(
        e.to_string().starts_with("scenes/does_not_exist.ron: "),
        "{e}"
    );
}

#[test]
fn every_shipped_scene_loads_with_its_documented_body_names() {
    let expect: &[(&str, &[&str])] = &[
        ("rod.ron", &["rod"]),
        ("two_balls.ron", &["ball1", "ball2"]),
        ("four_balls.ron", &["ball1", "ball2", "ball3", "ball4"]),
        ("ball_roll.ron", &["ball"]),
        ("incline.ron", &["box"]),
        ("box_stack.ron", &[]),
        ("pile.ron", &[]),
    ];
    for (file, bodies) in expect {
        let scene = common::load_scene(file);
        let contactlab::model::Model::Rigid(system) = &scene.model else {
            panic!("{file} is a rigid scene");
        };
        for name in *bodies {
            assert!(
                system.body_index(name).is_some(),
                "{file} lacks body {name}"
            );
        }
        if *file == "pile.ron" {
            assert!(system.bodies.len() >= 20);
        }
    }
}

/// Every file in `scenes/` loads: the load-time checks below refuse none of
/// the shipped scenes.
#[test]
fn every_file_in_scenes_loads() {
    let mut count = 0;
    for entry in std::fs::read_dir("scenes").expect("scenes/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "ron") {
            scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
            count += 1;
        }
    }
    assert!(count >= 16, "{count} scenes");
}

/// `common::LARGE_SCENES`, the scenes the slow sweeps over every scene
/// leave out, lists every shipped scene of 12 bodies or more with its
/// bodies, and no other scene has more than 10.
#[test]
fn the_large_scenes_are_listed_with_their_bodies() {
    for path in common::shipped_scenes() {
        let scene = scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let bodies = match &scene.model {
            contactlab::model::Model::Rigid(system) => system.bodies.len(),
            contactlab::model::Model::Linear(_) => 0,
        };
        match common::large_scene(&path) {
            Some(listed) => assert_eq!(listed, bodies, "{}", path.display()),
            None => assert!(bodies <= 10, "{}: {bodies} bodies", path.display()),
        }
    }
    for (name, _) in common::LARGE_SCENES {
        assert!(
            common::project_dir().join("scenes").join(name).exists(),
            "{name} is shipped"
        );
    }
}

const PLANAR: &str = r#"Scene(
    name: "rod",
    system: Rigid((
        dimension: Planar,
        gravity: (0.0, -9.81, 0.0),
        bodies: [
            (name: "rod", shape: Capsule(half_length: 0.5, radius: 0.05), mass: 1.0, position: (0.0, 1.0, 0.0)),
        ],
        surfaces: [(name: "table", normal: (0.0, 1.0, 0.0))],
    )),
)"#;

/// A body that starts inside a surface is refused with both names and the
/// depth, at the body's position, unless the scene says it means it.
#[test]
fn a_body_starting_inside_a_surface_is_refused() {
    let text = PLANAR.replace("position: (0.0, 1.0, 0.0)", "position: (0.0, -100.0, 0.0)");
    assert_eq!(
        error_of(&text),
        "bad.ron:7:86: bodies[0].position: body `rod` starts 100.05 m inside surface `table` (more than the 5.5e-7 m tolerance); move them apart, or set `allow_initial_overlap: true` if the scene means it"
    );
    let allowed = text.replace(
        "name: \"rod\",\n",
        "name: \"rod\",\n    allow_initial_overlap: true,\n",
    );
    scene::parse(&allowed, Path::new("ok.ron")).unwrap_or_else(|e| panic!("{e}"));
    // Resting exactly on the table (up to rounding) is not an overlap.
    let resting = PLANAR.replace("position: (0.0, 1.0, 0.0)", "position: (0.0, 0.05, 0.0)");
    scene::parse(&resting, Path::new("ok.ron")).unwrap_or_else(|e| panic!("{e}"));
}

/// The tolerance is relative to the scene's size but never above 1e-6 m: a
/// plate 2,000 km wide, tilted by 1e-7 rad, starts 0.091 m inside the table
/// (`../shared/repro/r2/03_*`).
#[test]
fn the_overlap_tolerance_has_an_absolute_bound() {
    let text = r#"Scene(
    name: "plate",
    params: (dt: 0.005, duration: 1.0),
    system: Rigid((
        dimension: Spatial,
        gravity: (0.0, 0.0, -9.81),
        bodies: [
            (name: "plate", shape: Box(half_extents: (1000000.0, 1000000.0, 0.001)), mass: 1.0, position: (0.0, 0.0, 0.01), orientation: AxisAngle((1, 0, 0), 1e-7)),
        ],
        surfaces: [(name: "table", normal: (0.0, 0.0, 1.0))],
    )),
)"#;
    let e = error_of(text);
    assert!(
        e.contains(
            "body `plate` starts 0.091 m inside surface `table` (more than the 1e-6 m tolerance)"
        ),
        "{e}"
    );
}

/// A coordinate heads the columns `C` and `C.dot`; a name that repeats a
/// column the CSV already has is refused (`../shared/repro/r2/06_*`).
#[test]
fn coordinate_names_that_repeat_a_csv_column_are_refused() {
    let scene = |names: &str| {
        format!(
            r#"Scene(
    name: "lin",
    params: (dt: 0.001, duration: 0.1, stepper: r#moreau-jean),
    system: Linear((
        coordinates: {names},
        mass: [[1.0, 0.0], [0.0, 1.0]],
        force: [0.0, -9.81],
        contacts: [(name: "floor", g0: 1.0, w_n: [0.0, 1.0], w_t: [1.0, 0.0])],
        initial_position: [0.0, 0.0],
        initial_velocity: [0.0, 0.0],
    )),
)"#
        )
    };
    for (names, message) in [
        (
            r#"["t", "y"]"#,
            "bad.ron:5:23: coordinates[0]: `t` would head the CSV column `t`, which the CSV already has; use another name",
        ),
        (
            r#"["x", "kinetic_energy"]"#,
            "bad.ron:5:28: coordinates[1]: `kinetic_energy` would head the CSV column `kinetic_energy`, which the CSV already has; use another name",
        ),
        (
            r#"["x", "x.dot"]"#,
            "bad.ron:5:28: coordinates[1]: `x.dot` would head the CSV column `x.dot`, which the CSV already has; use another name",
        ),
    ] {
        assert_eq!(error_of(&scene(names)), message);
    }
    scene::parse(&scene(r#"["x", "y"]"#), Path::new("ok.ron")).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn bodies_starting_inside_each_other_are_refused() {
    let text = GOOD.replace("position: (1.0, 0.0, 0.1)", "position: (0.15, 0.0, 0.1)");
    let e = error_of(&text);
    assert!(e.starts_with("bad.ron:9:"), "{e}");
    assert!(
        e.contains(": bodies[1].position: bodies `a` and `b` start 0.05 m inside each other"),
        "{e}"
    );
}

#[test]
fn a_linear_contact_closed_at_the_start_is_refused() {
    let text = std::fs::read_to_string("scenes/spring_block.ron")
        .expect("scene")
        .replace(
            "initial_position: [0.1, 0.0]",
            "initial_position: [0.1, -0.02]",
        );
    let e = error_of(&text);
    assert!(
        e.contains(": initial_position: contact `table` starts closed by 0.02"),
        "{e}"
    );
}

/// Names that head CSV columns cannot hold what CSV would split on.
#[test]
fn names_csv_cannot_carry_are_refused_at_their_field() {
    for (name, shown) in [
        ("a,b", "\"a,b\""),
        ("say \\\"hi\\\"", "say"),
        ("two\\nlines", "two"),
    ] {
        let text = GOOD.replace("name: \"b\"", &format!("name: \"{name}\""));
        let e = error_of(&text);
        assert!(e.starts_with("bad.ron:9:"), "{e}");
        assert!(e.contains(": bodies[1].name: "), "{e}");
        assert!(e.contains("cannot name a CSV column"), "{e}");
        assert!(e.contains(shown), "{e}");
    }
    let text = std::fs::read_to_string("scenes/spring_block.ron")
        .expect("scene")
        .replace("[\"x\", \"y\"]", "[\"x\", \"y,z\"]");
    assert!(error_of(&text).contains(": coordinates[1]: "));
}

#[test]
fn an_asymmetric_mass_matrix_is_refused_at_its_entry() {
    let text = std::fs::read_to_string("scenes/spring_block.ron")
        .expect("scene")
        .replace(
            "mass: [[1.0, 0.0], [0.0, 1.0]]",
            "mass: [[1.0, 0.5], [0.0, 1.0]]",
        );
    let e = error_of(&text);
    assert!(
        e.contains(": mass[0][1]: must be symmetric positive definite, but mass[0][1] = 0.5 and mass[1][0] = 0"),
        "{e}"
    );
    let indefinite = text.replace("[[1.0, 0.5], [0.0, 1.0]]", "[[1.0, 2.0], [2.0, 1.0]]");
    assert!(error_of(&indefinite).contains(": mass: must be symmetric positive definite"));
}

/// A planar scene refuses what it would drop: z of positions, velocities,
/// gravity, loads and anchors; x and y of an angular velocity.
#[test]
fn planar_scenes_refuse_components_out_of_the_plane() {
    for (from, to, field) in [
        (
            "position: (0.0, 1.0, 0.0)",
            "position: (0.0, 1.0, 0.5)",
            "bodies[0].position",
        ),
        (
            "position: (0.0, 1.0, 0.0)",
            "position: (0.0, 1.0, 0.0), velocity: (1.0, 0.0, 2.0)",
            "bodies[0].velocity",
        ),
        (
            "position: (0.0, 1.0, 0.0)",
            "position: (0.0, 1.0, 0.0), angular_velocity: (1.0, 0.0, 2.0)",
            "bodies[0].angular_velocity",
        ),
        (
            "gravity: (0.0, -9.81, 0.0)",
            "gravity: (0.0, -9.81, -1.0)",
            "gravity",
        ),
        (
            "normal: (0.0, 1.0, 0.0))",
            "normal: (0.0, 1.0, 0.0), point: (0.0, 0.0, 3.0))",
            "surfaces[0].point",
        ),
    ] {
        let text = PLANAR.replace(from, to);
        let e = error_of(&text);
        assert!(e.contains(&format!(": {field}: ")), "{field}: {e}");
        assert!(e.contains("planar"), "{e}");
    }
    let loaded = PLANAR.replace(
        "surfaces:",
        "loads: [(body: \"rod\", force: (1.0, 0.0, 4.0))],\n        surfaces:",
    );
    assert!(error_of(&loaded).contains(": loads[0].force: "));
}

#[test]
fn a_file_that_is_not_utf8_is_refused_at_its_first_bad_byte() {
    let dir = std::env::temp_dir().join(format!("contactlab-scenes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("latin1.ron");
    let mut bytes = GOOD.as_bytes().to_vec();
    let at = GOOD.find("two boxes").expect("name");
    bytes[at] = 0xe9;
    std::fs::write(&path, bytes).expect("write");
    let e = scene::load(&path).expect_err("not UTF-8").to_string();
    assert!(
        e.ends_with("latin1.ron:2:12: syntax: the file is not UTF-8 text"),
        "{e}"
    );
}

/// Found by the fuzz harness: a mass of 5e-324 kg (positive, within the
/// magnitude rule) made M⁻¹ infinite and the first step's LCP panic in
/// Lemke. Quantities the dynamics divide by are bounded below.
#[test]
fn masses_sizes_and_inertias_the_dynamics_divide_by_are_bounded_below() {
    for (from, to, field) in [
        (
            "mass: 2.0",
            "mass: 5e-324",
            "bodies[1].mass: must be at least 1e-12 kg",
        ),
        (
            "radius: 0.1",
            "radius: 1e-13",
            "bodies[1].shape: shape dimensions must be positive",
        ),
        (
            "mass: 1.0,",
            "mass: 1.0, inertia: (5e-324, 0.004, 0.004),",
            "bodies[0].inertia: must be at least 1e-36 kg·m²",
        ),
        // No rigid body has these moments: Iz > Ix + Iy.
        (
            "mass: 1.0,",
            "mass: 1.0, inertia: (1e-6, 1e-6, 10.0),",
            "bodies[0].inertia: (0.000001, 0.000001, 10) kg·m² is no rigid body's: Iz = 10 exceeds Ix + Iy = 0.000002",
        ),
    ] {
        let e = error_of(&GOOD.replace(from, to));
        assert!(e.contains(field), "{e}");
    }
    let text = std::fs::read_to_string("scenes/spring_block.ron")
        .expect("scene")
        .replace(
            "mass: [[1.0, 0.0], [0.0, 1.0]]",
            "mass: [[1.0, 0.0], [0.0, 1e-13]]",
        );
    let e = error_of(&text);
    assert!(
        e.contains(": mass: is nearly singular: M⁻¹ has entries up to 1.000e13"),
        "{e}"
    );
}

/// Every shipped comparison loads, with its scene, and its two sides differ.
#[test]
fn every_shipped_comparison_loads() {
    let mut count = 0;
    for entry in std::fs::read_dir("scenes/compare").expect("scenes/compare/") {
        let path = entry.expect("entry").path();
        let c = scene::comparison::load_comparison(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(c.a, c.b, "{}: the sides are the same", path.display());
        // A comparison is not a scene, and says so.
        let e = scene::load(&path).expect_err("not a scene");
        assert!(e.to_string().contains("contactlab compare"), "{e}");
        count += 1;
    }
    assert!(count >= 4, "{count} comparisons");
}

/// The shipped diagonal slide: on the 4-edge pyramid the box's path bends
/// to the face normal at 45°; on 64 edges it stays at 22.5° (within the
/// 64-gon's own bend of at most π/64).
#[test]
fn the_diagonal_slide_bends_on_four_edges_and_not_on_sixty_four() {
    let c = scene::comparison::load_comparison(std::path::Path::new(
        "scenes/compare/diagonal_slide.ron",
    ))
    .expect("loads");
    let heading = |params: &contactlab::params::Params| {
        let mut sim = Simulation::with_params(c.scene.clone(), params.clone());
        // Past the turn at 0.276 s, before the stop at 0.666 s.
        while sim.state.t < 0.5 {
            assert!(sim.step().expect("a step").status.advances());
        }
        sim.state.v[1].atan2(sim.state.v[0]).to_degrees()
    };
    let (a, b) = (heading(&c.a), heading(&c.b));
    assert!((a - 45.0).abs() < 1e-6, "k = 4 heads at {a}°");
    assert!((b - 22.5).abs() < 180.0 / 64.0, "k = 64 heads at {b}°");
}
