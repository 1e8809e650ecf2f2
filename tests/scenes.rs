//! Scene files: malformed ones give an error naming file, line, column and
//! field; every shipped scene loads.

use contactlab::scene;
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
        let scene = scene::load(&Path::new("scenes").join(file)).unwrap_or_else(|e| panic!("{e}"));
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
