//! A snapshot is checked as a scene is: the size cap and the magnitude rule
//! on its text, the overlap tolerance on its state, unit quaternions, fixed
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
