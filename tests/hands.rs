//! Hands on the scene, headless: the perturbation force in every stepper,
//! history checkpoints that replay bit for bit, snapshots that continue
//! bit-identically through `contactlab run --state`, bodies thrown into a
//! running scene, and "save scene as".

mod common;

use contactlab::model::{Model, Other, Perturbation};
use contactlab::params::StepperKind;
use contactlab::scene::{self, write};
use contactlab::sim::history::Timeline;
use contactlab::sim::snapshot::{self, Snapshot};
use contactlab::sim::throw::{Projectile, projectile};
use contactlab::sim::{Simulation, inspect};
use nalgebra::{DVector, Vector3};
use std::path::{Path, PathBuf};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("contactlab-hands-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A box (2 kg, 0.4 × 0.2 m) resting on a frictionless table, planar or
/// spatial, with a given stepper.
fn box_on_ice(dimension: &str, stepper: &str) -> Simulation {
    let (gravity, position, half, normal) = match dimension {
        "Planar" => (
            "(0.0, -9.81, 0.0)",
            "(0.0, 0.1, 0.0)",
            "(0.2, 0.1, 0.1)",
            "(0.0, 1.0, 0.0)",
        ),
        _ => (
            "(0.0, 0.0, -9.81)",
            "(0.0, 0.0, 0.1)",
            "(0.2, 0.15, 0.1)",
            "(0.0, 0.0, 1.0)",
        ),
    };
    let text = format!(
        "Scene(name: \"ice\", params: (dt: 0.002, mu: 0.0, stepper: r#{stepper}),
         system: Rigid((dimension: {dimension}, gravity: {gravity},
           bodies: [(name: \"box\", shape: Box(half_extents: {half}), mass: 2.0, position: {position})],
           surfaces: [(name: \"table\", normal: {normal})])))"
    );
    let scene = scene::parse(&text, Path::new("ice.ron")).expect("the test scene loads");
    Simulation::new(scene)
}

/// The box's horizontal velocity and position.
fn x_and_vx(sim: &Simulation) -> (f64, f64) {
    let Model::Rigid(s) = sim.model() else {
        unreachable!()
    };
    (
        s.position(&sim.state.q, 0).x,
        s.linear_velocity(&sim.state.v, 0).x,
    )
}

#[test]
fn a_drag_accelerates_a_box_on_ice_as_k_d_over_m_in_every_stepper() {
    for dimension in ["Planar", "Spatial"] {
        for stepper in StepperKind::ALL {
            let mut sim = box_on_ice(dimension, stepper.name());
            // Settle on the table first.
            for _ in 0..20 {
                sim.step().expect("step");
            }
            let Model::Rigid(system) = sim.model() else {
                unreachable!()
            };
            let m = system.bodies[0].mass;
            // Grab the centre of the top face and pull 0.3 m along x; no
            // damping, so F = k d exactly.
            let grab = if dimension == "Planar" {
                Vector3::new(0.0, 0.1, 0.0)
            } else {
                Vector3::new(0.0, 0.0, 0.1)
            };
            let start = system.world_point(&sim.state.q, 0, &grab);
            let target = start + Vector3::new(0.3, 0.0, 0.0);
            let k = 50.0 * m;
            sim.set_perturbation(Some(Perturbation {
                body: 0,
                grab,
                target,
                stiffness: k,
                damping: 0.0,
            }))
            .expect("perturbation accepted");
            let h = sim.params.dt;
            for step in 0..10 {
                let Model::Rigid(system) = sim.model() else {
                    unreachable!()
                };
                let d = target.x - system.world_point(&sim.state.q, 0, &grab).x;
                let (_, v0) = x_and_vx(&sim);
                sim.step().expect("step");
                let (_, v1) = x_and_vx(&sim);
                let a = (v1 - v0) / h;
                let expected = k * d / m;
                assert!(
                    (a - expected).abs() <= 0.02 * expected,
                    "{dimension} {stepper} step {step}: a = {a}, k d / m = {expected}"
                );
            }
            // Released: on ice the box coasts at constant horizontal velocity.
            sim.set_perturbation(None).expect("cleared");
            let (_, v0) = x_and_vx(&sim);
            for _ in 0..10 {
                sim.step().expect("step");
            }
            let (_, v1) = x_and_vx(&sim);
            assert!(
                (v1 - v0).abs() <= 1e-9 * v0.abs().max(1.0),
                "{dimension} {stepper}: released, vx {v0} → {v1}"
            );
        }
    }
}

#[test]
fn the_perturbation_turns_a_free_body_by_r_cross_f() {
    // No gravity, no table: a box pulled at a corner gets F/m and (r × F)/J.
    let text = "Scene(name: \"space\", params: (dt: 0.001),
        system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, 0.0),
          bodies: [(name: \"box\", shape: Box(half_extents: (0.3, 0.2, 0.1)), mass: 3.0, position: (0.0, 0.0, 0.0))])))";
    let mut sim = Simulation::new(scene::parse(text, Path::new("space.ron")).expect("loads"));
    let grab = Vector3::new(0.3, 0.2, 0.1);
    let pull = Vector3::new(0.0, 0.0, 0.5);
    let k = 40.0;
    sim.set_perturbation(Some(Perturbation {
        body: 0,
        grab,
        target: grab + pull,
        stiffness: k,
        damping: 0.0,
    }))
    .expect("accepted");
    sim.step().expect("step");
    let Model::Rigid(system) = sim.model() else {
        unreachable!()
    };
    let h = sim.params.dt;
    let force = pull * k;
    let a = system.linear_velocity(&sim.state.v, 0) / h;
    assert!((a - force / 3.0).norm() < 1e-12, "a = {a}");
    let inertia = system.bodies[0].inertia;
    let alpha = system.angular_velocity(&sim.state.q, &sim.state.v, 0) / h;
    let expected = grab.cross(&force).component_div(&inertia);
    assert!(
        (alpha - expected).norm() < 1e-9 * expected.norm(),
        "α = {alpha}, (r × F)/J = {expected}"
    );
    // A linear system refuses it.
    let mut linear = common::load_simulation("spring_block.ron");
    assert!(
        linear
            .set_perturbation(Some(Perturbation::with_rate(0, 1.0, grab, grab, 1.0)))
            .is_err()
    );
}

/// The steppers and scenes the history is checked on.
const REPLAYS: [(&str, Option<StepperKind>); 6] = [
    ("pile.ron", None),
    // Three balls at rest: islands carried from step to step (`solve::memo`).
    ("four_balls.ron", None),
    ("four_balls.ron", Some(StepperKind::MoreauJean)),
    ("chain.ron", None),
    ("two_bar_linkage.ron", Some(StepperKind::EulerLcp)),
    ("woodpecker.ron", None),
];

#[test]
fn scrubbing_back_and_resuming_reproduces_the_stored_states_bit_for_bit() {
    for (scene, stepper) in REPLAYS {
        let mut sim = common::load_simulation(scene);
        if let Some(kind) = stepper {
            sim.params.stepper = kind;
        }
        let mut timeline = Timeline::default();
        timeline.restart(&sim);
        let n = 120;
        for _ in 0..n {
            sim.step().expect("step");
            timeline.record(&sim);
        }
        assert_eq!(timeline.len(), n + 1, "{scene}: one checkpoint per step");
        let stored: Vec<_> = (0..=n)
            .map(|i| timeline.get(i).expect("kept").state.clone())
            .collect();
        let back = 40;
        assert!(timeline.scrub(back, &mut sim));
        assert_eq!(sim.state, stored[back], "{scene}: scrubbed to step {back}");
        assert!(timeline.scrubbing());
        // Scrubbing forward and back again changes nothing.
        assert!(timeline.scrub(n, &mut sim));
        assert!(timeline.scrub(back, &mut sim));
        for (i, expected) in stored.iter().enumerate().skip(back + 1) {
            sim.step().expect("step");
            timeline.record(&sim);
            assert!(
                sim.state == *expected,
                "{scene}: step {i} after resuming differs (t = {})",
                sim.state.t
            );
        }
        assert!(!timeline.scrubbing());
        assert_eq!(timeline.len(), n + 1);
    }
}

#[test]
fn a_fork_with_another_mu_diverges() {
    let mut sim = common::load_simulation("four_balls.ron");
    let mut timeline = Timeline::default();
    timeline.restart(&sim);
    for _ in 0..300 {
        sim.step().expect("step");
        timeline.record(&sim);
    }
    let original = sim.state.clone();
    let fork_at = 150;
    timeline.scrub(fork_at, &mut sim);
    sim.params.mu = 0.05;
    for _ in fork_at..300 {
        sim.step().expect("step");
        timeline.record(&sim);
    }
    let difference = (&sim.state.q - &original.q).amax();
    assert!(
        difference > 1e-3,
        "μ = 0.05 from step {fork_at} ends {difference} m from μ = 0.4"
    );
    // The future after the fork point is the new one.
    assert_eq!(timeline.len(), 301);
    assert_eq!(timeline.get(300).expect("newest").state, sim.state);
}

#[test]
fn the_timeline_keeps_its_span_and_its_memory_cap() {
    let mut sim = common::load_simulation("pile.ron");
    let mut timeline = Timeline::new(0.25, usize::MAX);
    timeline.restart(&sim);
    for _ in 0..100 {
        sim.step().expect("step");
        timeline.record(&sim);
    }
    let (oldest, newest) = timeline.time_range().expect("kept");
    assert!(newest - oldest <= 0.25 + 1e-12, "span {}", newest - oldest);
    assert!(newest - oldest > 0.24);
    let per_step = timeline.bytes() / timeline.len();
    eprintln!("pile: {per_step} bytes per checkpoint over the last 0.25 s");
    let cap = 20 * per_step;
    let mut capped = Timeline::new(60.0, cap);
    for _ in 0..60 {
        sim.step().expect("step");
        capped.record(&sim);
        assert!(capped.bytes() <= cap || capped.len() == 1);
    }
    assert!(
        capped.len() < 30,
        "{} checkpoints within the cap",
        capped.len()
    );
    assert_eq!(
        capped.get(capped.len() - 1).expect("newest").state,
        sim.state
    );
}

#[test]
fn a_snapshot_continues_bit_identically() {
    let dir = temp_dir("snapshot");
    for (scene, stepper) in REPLAYS {
        let mut original = common::load_simulation(scene);
        if let Some(kind) = stepper {
            original.params.stepper = kind;
        }
        common::csv_rows(&mut original, 90);
        let t_saved = original.state.t;
        let path = dir.join(format!("{scene}.state.ron"));
        original.save_snapshot(&path).expect("snapshot written");
        let expected = common::csv_rows(&mut original, 60);

        let mut restarted = common::load_simulation(scene);
        restarted.params = original.params.clone();
        snapshot::load_into(&mut restarted, &path).expect("snapshot loads");
        assert_eq!(restarted.steps, 90);
        assert_eq!(common::csv_rows(&mut restarted, 60), expected, "{scene}");

        // Without the steppers' memory the run starts cold: the same physics,
        // not necessarily the same bits.
        let (mut cold, source) = Snapshot::load(&path).expect("reads");
        cold.steppers = None;
        let mut restarted = common::load_simulation(scene);
        restarted.params = original.params.clone();
        cold.apply(&mut restarted, &source, &path).expect("applies");
        assert_eq!(restarted.state.t, t_saved);
        assert_eq!(restarted.steps, 90);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn snapshot_errors_name_the_file_line_and_field() {
    let dir = temp_dir("snapshot-errors");
    let mut pile = common::load_simulation("pile.ron");
    common::csv_rows(&mut pile, 3);
    let path = dir.join("pile.state.ron");
    pile.save_snapshot(&path).expect("written");
    let text = std::fs::read_to_string(&path).expect("read");

    // Another scene.
    let err = snapshot::load_into(&mut common::load_simulation("four_balls.ron"), &path)
        .expect_err("wrong scene")
        .to_string();
    let line = 1 + text
        .lines()
        .position(|l| l.trim_start().starts_with("scene:"))
        .expect("scene line");
    assert!(
        err.contains(&format!("pile.state.ron:{line}:")) && err.contains("scene:"),
        "{err}"
    );

    // A short q.
    let broken = dir.join("short.ron");
    let start = text.find("q: [").expect("q") + 4;
    let comma = start + text[start..].find(',').expect("entries");
    std::fs::write(&broken, format!("{}{}", &text[..start], &text[comma + 1..])).expect("write");
    let err = snapshot::load_into(&mut common::load_simulation("pile.ron"), &broken)
        .expect_err("short q")
        .to_string();
    assert!(
        err.contains("short.ron:") && err.contains(": q: has 153 entries"),
        "{err}"
    );

    // A typo in a field.
    let typo = dir.join("typo.ron");
    std::fs::write(&typo, text.replacen("steps:", "stepz:", 1)).expect("write");
    let err = snapshot::load_into(&mut common::load_simulation("pile.ron"), &typo)
        .expect_err("typo")
        .to_string();
    assert!(err.contains("typo.ron:") && err.contains("stepz"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_thrown_sphere_joins_the_model_the_contacts_and_a_saved_scene() {
    let mut sim = common::load_simulation("box_stack.ron");
    for _ in 0..10 {
        sim.step().expect("step");
    }
    let before = sim.scene.body_count();
    let spec = projectile(
        &sim,
        Projectile::Sphere,
        Vector3::new(1.5, 0.0, 0.5),
        Vector3::new(0.0, 0.0, 0.3),
        4.0,
    )
    .expect("a projectile");
    assert_eq!(spec.name, "thrown1");
    let index = sim.add_body(spec).expect("added");
    assert_eq!(index, before);
    let Model::Rigid(system) = sim.model() else {
        unreachable!()
    };
    assert_eq!(system.bodies.len(), before + 1);
    assert_eq!(sim.state.q.len(), system.config_size());
    assert_eq!(sim.state.v.len(), system.dof());
    assert_eq!(system.mass_diagonal().len(), system.dof());
    assert!(
        contactlab::cli::csv_header(sim.model()).contains("thrown1.x"),
        "the CSV columns include it"
    );
    // It flies into the stack and lands on the table.
    let mut touched_stack = false;
    let mut touched_table = false;
    for _ in 0..400 {
        sim.step().expect("step");
        let report = sim.last.as_ref().expect("report");
        for c in report.contacts.iter().filter(|c| c.normal_impulse > 0.0) {
            let involves = c.id.a == index || c.id.b == Other::Body(index);
            touched_stack |= involves && matches!(c.id.b, Other::Body(_));
            touched_table |= involves && c.id.b == Other::Surface(0);
        }
    }
    assert!(touched_stack, "the sphere hits the stack");
    assert!(touched_table, "and rests on the table");
    let inspected = inspect::body(&sim, index).expect("inspectable");
    assert_eq!(inspected.name, "thrown1");
    let weight = inspected.mass * 9.81;
    assert!(
        (inspected.resultant.z - weight).abs() < 1e-6 * weight,
        "at rest the contacts carry its weight: {} vs {weight}",
        inspected.resultant.z
    );

    // Saved as a scene, it loads and runs to the same trajectory.
    let dir = temp_dir("save-scene");
    let path = dir.join("stack-saved.ron");
    write::save(&sim.scene, &sim.state, &sim.params, &path).expect("saved");
    assert!(
        write::save(&sim.scene, &sim.state, &sim.params, &path).is_err(),
        "an existing file is not overwritten"
    );
    let saved = scene::load(&path).expect("the saved scene loads");
    assert!(saved.model.dof() == sim.model().dof());
    let mut replay = Simulation::new(saved);
    assert!((&replay.state.q - &sim.state.q).amax() < 1e-15);
    assert!((&replay.state.v - &sim.state.v).amax() < 1e-15);
    sim.clear_caches();
    for _ in 0..100 {
        sim.step().expect("step");
        replay.step().expect("step");
    }
    let drift = (&replay.state.q - &sim.state.q).amax();
    assert!(drift < 1e-9, "saved scene drifts {drift} m in 100 steps");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn scrubbing_across_a_throw_removes_and_restores_the_body() {
    let mut sim = common::load_simulation("pile.ron");
    let mut timeline = Timeline::default();
    timeline.restart(&sim);
    for _ in 0..20 {
        sim.step().expect("step");
        timeline.record(&sim);
    }
    let spec = projectile(
        &sim,
        Projectile::Box,
        Vector3::new(0.0, -2.0, 1.0),
        Vector3::zeros(),
        3.0,
    )
    .expect("projectile");
    sim.add_body(spec).expect("added");
    for _ in 0..20 {
        sim.step().expect("step");
        timeline.record(&sim);
    }
    let bodies = sim.scene.body_count();
    timeline.scrub(10, &mut sim);
    assert_eq!(sim.scene.body_count(), bodies - 1, "before the throw");
    assert_eq!(sim.state.q.len(), 7 * (bodies - 1));
    timeline.scrub(timeline.len() - 1, &mut sim);
    assert_eq!(sim.scene.body_count(), bodies, "after it again");
    let newest = timeline
        .get(timeline.len() - 1)
        .expect("kept")
        .state
        .clone();
    assert_eq!(sim.state, newest);
    sim.reset();
    assert_eq!(sim.scene.body_count(), bodies - 1, "a reset removes it");
}

/// Every scene with springs, loads or a linear system, saved mid-run,
/// continues like the original (the steppers start cold in both). Joint
/// anchors restated in the world differ from the original body-frame ones by
/// rounding (1e-16 m); an impact can grow that to micrometres (the linkage:
/// 3e-5 m after its bars hit the table).
#[test]
fn saved_scenes_continue_the_original_trajectory() {
    let dir = temp_dir("save-all");
    for name in [
        "two_blocks_damper.ron",
        "two_bar_linkage.ron",
        "chain.ron",
        "woodpecker.ron",
        "rod.ron",
        "four_balls.ron",
    ] {
        let mut sim = common::load_simulation(name);
        for _ in 0..50 {
            sim.step().expect("step");
        }
        let path = dir.join(name);
        write::save(&sim.scene, &sim.state, &sim.params, &path).expect("saved");
        let mut replay = Simulation::new(scene::load(&path).expect("loads"));
        assert_eq!(replay.params, sim.params);
        sim.clear_caches();
        let scale = sim.model().length_scale();
        for _ in 0..50 {
            sim.step().expect("step");
            replay.step().expect("step");
        }
        let drift = (&replay.state.q - &sim.state.q).amax();
        let velocity: DVector<f64> = &replay.state.v - &sim.state.v;
        assert!(
            drift < 1e-4 * scale.max(1.0),
            "{name}: {drift} apart after 50 steps"
        );
        assert!(
            velocity.amax() < 1e-2 * sim.state.v.amax().max(1.0),
            "{name}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `contactlab run SCENE --state SNAPSHOT` writes, from the snapshot on, the
/// very rows the uninterrupted run writes.
#[test]
fn run_from_a_snapshot_matches_the_uninterrupted_run_row_for_row() {
    let dir = temp_dir("run-state");
    let scene = common::project_dir().join("scenes").join("pile.ron");
    let run = |extra: &[&str], csv: &Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_contactlab"))
            .arg("run")
            .arg(&scene)
            .args(extra)
            .arg("--csv")
            .arg(csv)
            .output()
            .expect("the binary runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read_to_string(csv).expect("csv written")
    };
    let full = run(&["--duration", "0.6"], &dir.join("full.csv"));
    let mut sim = common::load_simulation("pile.ron");
    common::csv_rows(&mut sim, 60);
    let snapshot = dir.join("pile-60.ron");
    sim.save_snapshot(&snapshot).expect("snapshot");
    let part = run(
        &[
            "--duration",
            "0.3",
            "--state",
            snapshot.to_str().expect("utf-8"),
        ],
        &dir.join("part.csv"),
    );
    let full: Vec<&str> = full.lines().collect();
    let part: Vec<&str> = part.lines().collect();
    assert_eq!(full[0], part[0], "same columns");
    assert_eq!(part.len(), 1 + 1 + 60);
    // The first row is the snapshot's state (its LCP columns are those of a
    // row without a step); every later row is the full run's, to the digit.
    let state_columns = |row: &str| {
        row.split(',')
            .take(1 + 22 * 13)
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(state_columns(part[1]), state_columns(full[1 + 60]));
    for k in 1..=60 {
        assert_eq!(part[1 + k], full[1 + 60 + k], "row of step {}", 60 + k);
    }
    // A snapshot of another scene is refused with its file and field.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_contactlab"))
        .args(["run", "scenes/rod.ron", "--state"])
        .arg(&snapshot)
        .arg("--csv")
        .arg(dir.join("x.csv"))
        .current_dir(common::project_dir())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("pile-60.ron:") && stderr.contains("scene:"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
