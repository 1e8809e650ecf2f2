//! A snapshot is checked as a scene is: the size cap and the magnitude rule
//! on its text, the overlap tolerance on its state (under Moreau–Jean, the
//! overlaps its own steps leave), unit quaternions, fixed
//! bodies where the scene holds them, t ≥ 0; a stepper memory that does not
//! fit its own layout is dropped for a cold start, with a note.

mod common;

use contactlab::scene::{self, SceneError};
use contactlab::sim::Simulation;
use contactlab::sim::snapshot::Snapshot;
use std::path::Path;

/// `text` applied to `sim`: the error's message, or the note.
fn apply(sim: &mut Simulation, text: &str) -> Result<Option<String>, String> {
    let path = Path::new("state.ron");
    let snapshot = Snapshot::parse(text, path).map_err(|e| e.to_string())?;
    snapshot
        .apply(sim, text, path)
        .map_err(|e: SceneError| e.to_string())
}

/// Four balls' snapshot at t = 0 with `edit` made to the state first.
fn four_balls(edit: impl FnOnce(&mut Snapshot)) -> (Simulation, String) {
    let sim = common::load_simulation("four_balls.ron");
    let mut snapshot = Snapshot::of(&sim);
    edit(&mut snapshot);
    (sim, snapshot.to_ron().expect("writes"))
}

#[test]
fn an_untouched_snapshot_applies_without_a_note() {
    let (mut sim, text) = four_balls(|_| {});
    assert_eq!(apply(&mut sim, &text), Ok(None));
}

#[test]
fn an_overlap_in_the_state_is_refused_like_a_scenes() {
    // The top box of the stack 0.35 m inside the one below it.
    let mut sim = common::load_simulation("box_stack.ron");
    let mut snapshot = Snapshot::of(&sim);
    let z = snapshot.q.len() - 5;
    snapshot.q[z] -= 0.35;
    let text = snapshot.to_ron().expect("writes");
    let t0 = sim.state.q.clone();
    let err = apply(&mut sim, &text).expect_err("refused");
    assert!(err.contains("state.ron:") && err.contains("q:"), "{err}");
    assert!(err.contains("inside"), "{err}");
    assert_eq!(sim.state.q, t0, "the simulation is unchanged");
}

#[test]
fn numbers_past_the_scenes_magnitude_cap_are_refused_at_their_line() {
    for (edit, field) in [
        (
            Box::new(|s: &mut Snapshot| s.v[0] = 1e150) as Box<dyn Fn(&mut Snapshot)>,
            "v",
        ),
        (Box::new(|s: &mut Snapshot| s.t = 1e300), "t"),
    ] {
        let (mut sim, text) = four_balls(edit);
        let err = apply(&mut sim, &text).expect_err("refused");
        assert!(err.contains("at most 1e12"), "{err}");
        assert!(err.contains(&format!(": {field}")), "{err}");
    }
}

#[test]
fn a_negative_time_and_a_quaternion_off_unit_are_refused() {
    let (mut sim, text) = four_balls(|s| s.t = -1.0);
    let err = apply(&mut sim, &text).expect_err("refused");
    assert!(err.contains("t: must be a time of at least 0 s"), "{err}");
    // Ball 0's quaternion (q entries 3–6) of norm 2.
    let (mut sim, text) = four_balls(|s| s.q[3] = 2.0);
    let err = apply(&mut sim, &text).expect_err("refused");
    assert!(err.contains("has norm 2"), "{err}");
}

const FIXED_SCENE: &str = r#"Scene(
    name: "fb",
    params: (dt: 0.005, duration: 2.0, stepper: r#moreau-jean, solver: nsgs),
    system: Rigid((
        dimension: Spatial,
        gravity: (0.0, 0.0, -9.81),
        bodies: [
            (name: "w", shape: Box(half_extents: (0.5, 0.5, 0.1)), mass: 1.0, position: (0.0, 0.0, 0.1), fixed: true),
            (name: "b", shape: Sphere(radius: 0.1), mass: 1.0, position: (0.0, 0.0, 0.3))
        ],
        surfaces: [(name: "table", normal: (0.0, 0.0, 1.0))],
    )),
)"#;

#[test]
fn a_fixed_body_stays_where_the_scene_holds_it() {
    let scene = scene::parse(FIXED_SCENE, Path::new("fb.ron")).expect("a valid scene");
    for (q2, v2, field) in [(0.25, 0.0, "q"), (0.1, 5.0, "v")] {
        let mut sim = Simulation::new(scene.clone());
        let text = format!(
            "Snapshot(scene: \"fb\", t: 0.0, steps: 0, \
             q: [0.0, 0.0, {q2}, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.3, 1.0, 0.0, 0.0, 0.0], \
             v: [0.0, 0.0, {v2}, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])"
        );
        let err = apply(&mut sim, &text).expect_err("refused");
        assert!(
            err.contains(&format!("{field}: body `w` is fixed")),
            "{err}"
        );
    }
}

#[test]
fn a_stepper_memory_out_of_its_own_layout_is_dropped_with_a_note() {
    let state = "t: 0.0, steps: 0, \
        q: [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0, 1.20001, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0, 1.40002, 0.0, 0.1, 1.0, 0.0, 0.0, 0.0], \
        v: [1.5, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]";
    let id = "ContactId(a: 1, b: Surface(0), feature: 0)";
    for solver in [
        // Impulses at (100, 9) of no values; a basis at (5, 10) of no flags.
        format!(
            "ContactSolver(warm: WarmStart(form: None, contacts: {{}}, basic: []), \
             impulses: LastImpulses(contacts: {{{id}: (100, 9)}}, values: []), levels: {{}}, dense_level: 0)"
        ),
        format!(
            "ContactSolver(warm: WarmStart(form: Position, contacts: {{{id}: (5, 10)}}, basic: []), \
             impulses: LastImpulses(contacts: {{}}, values: []), levels: {{}}, dense_level: 0)"
        ),
    ] {
        let text = format!(
            "Snapshot(scene: \"Four balls\", {state}, \
             steppers: StepperMemory(scheme: r#stewart-trinkle, active: [], solver: {solver}))"
        );
        let mut sim = common::load_simulation("four_balls.ron");
        let note = apply(&mut sim, &text).expect("the state is taken");
        assert!(
            note.is_some_and(|n| n.contains("starting cold")),
            "a note says the memory was dropped"
        );
        common::run(&mut sim, 0.1, |_, _| {});
    }
}

/// Three balls stacked on a table under Moreau–Jean with NSGS, the scheme
/// whose steps leave contacts up to its guards' depth deep.
fn ball_column(stepper: &str) -> String {
    format!(
        r#"Scene(
    name: "column",
    params: (dt: 0.005, duration: 1.0, mu: 0.5, stepper: r#{stepper}, solver: nsgs),
    system: Rigid((
        dimension: Spatial,
        gravity: (0.0, 0.0, -9.81),
        bodies: [
            (name: "low", shape: Sphere(radius: 0.1), mass: 1.0, position: (0.0, 0.0, 0.1)),
            (name: "mid", shape: Sphere(radius: 0.1), mass: 1.0, position: (0.0, 0.0, 0.3)),
            (name: "top", shape: Sphere(radius: 0.1), mass: 1.0, position: (0.0, 0.0, 0.5))
        ],
        surfaces: [(name: "table", normal: (0.0, 0.0, 1.0))],
    )),
)"#
    )
}

#[test]
fn a_state_moreau_jean_left_reloads_with_its_overlaps_and_a_deeper_one_is_refused() {
    let path = Path::new("column.ron");
    let scene = scene::parse(&ball_column("moreau-jean"), path).expect("a valid scene");
    let mut sim = Simulation::new(scene);
    for _ in 0..60 {
        sim.step().expect("steps");
    }
    let tolerance = contactlab::scene::overlap::tolerance(sim.model());
    let deepest = contactlab::collision::contacts(sim.model(), &sim.state.q, 4, 0.0)
        .iter()
        .fold(0.0_f64, |d, c| d.max(-c.gap));
    // The guard's depth for two balls of 0.1 m: 0.005 · 0.1 m.
    assert!(
        deepest > 2.0 * tolerance && deepest <= 0.5e-3 * (1.0 + 1e-3),
        "the steps left the balls {deepest} m deep (tolerance {tolerance} m)"
    );
    let snapshot = Snapshot::of(&sim);
    let text = snapshot.to_ron().expect("writes");
    let mut again = Simulation::new(sim.scene.clone());
    assert_eq!(apply(&mut again, &text), Ok(None));
    assert_eq!(again.state.q, sim.state.q);

    // Under a scheme that keeps gaps to the tolerance, the same state is
    // refused.
    let strict = scene::parse(&ball_column("stewart-trinkle"), path).expect("a valid scene");
    let err = apply(&mut Simulation::new(strict), &text).expect_err("refused");
    assert!(
        err.contains("inside") && err.contains("1e-7 m tolerance"),
        "{err}"
    );

    // The top ball 2 mm further into the middle one: past twice the
    // guard's depth (1 mm).
    let mut deeper = snapshot.clone();
    deeper.q[16] -= 2e-3;
    let text = deeper.to_ron().expect("writes");
    let err = apply(&mut Simulation::new(sim.scene.clone()), &text).expect_err("refused");
    assert!(
        err.contains("bodies `mid` and `top`") && err.contains("more than the 0.001 m"),
        "{err}"
    );
}
