//! The viewer's simulation plugin, headless: fixed ticks step the simulation,
//! body transforms follow it, and live parameter changes take effect; compare
//! mode in [`compare`], the hands (synthetic pointer events through Bevy's
//! picking) in [`pointer`].
#![cfg(feature = "viewer")]

mod common;
#[path = "viewer/compare.rs"]
mod compare;
#[path = "viewer/pointer.rs"]
mod pointer;

use bevy::ecs::system::RunSystemOnce;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use contactlab::model::Model;
use contactlab::sim::Simulation;
use contactlab::viewer::sim::{interpolated_pose, reset_simulation, sync_body_transforms};
use contactlab::viewer::worker::StepJob;
use contactlab::viewer::{BodyVisual, PreviousState, Sim, SimControl, SimPlugin};
use std::path::Path;

/// Frames that wait for their steps however long they take (the steps run on
/// the worker), so that each fixed tick is one step whatever the machine's
/// load.
fn waiting_for_every_step() -> SimControl {
    SimControl {
        frame_budget: 60.0,
        ..Default::default()
    }
}

/// An app with `MinimalPlugins` whose every `update()` runs exactly one fixed
/// tick (after the first, which starts the clocks and spawns the entities).
fn app(simulation: Simulation) -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .add_plugins(SimPlugin::new(simulation))
        .insert_resource(TimeUpdateStrategy::FixedTimesteps(1))
        .insert_resource(waiting_for_every_step());
    app.update();
    app
}

fn ticks(app: &mut App, n: usize) {
    for _ in 0..n {
        app.update();
    }
}

fn sim(app: &App) -> &Simulation {
    &app.world().resource::<Sim>().0
}

/// Body i's pose in physics coordinates at configuration q.
fn pose(simulation: &Simulation, q: &nalgebra::DVector<f64>, i: usize) -> (Vec3, Quat) {
    let Model::Rigid(system) = simulation.model() else {
        panic!("rigid scene expected")
    };
    interpolated_pose(system, q, q, i, 1.0)
}

fn body_transforms(app: &mut App) -> Vec<(usize, Transform)> {
    let mut query = app.world_mut().query::<(&BodyVisual, &Transform)>();
    let mut out: Vec<(usize, Transform)> =
        query.iter(app.world()).map(|(b, t)| (b.0, *t)).collect();
    out.sort_by_key(|(i, _)| *i);
    out
}

fn assert_close(a: Vec3, b: Vec3, what: &str) {
    assert!(
        (a - b).abs().max_element() < 1e-6,
        "{what}: transform {a} vs simulation {b}"
    );
}

#[test]
fn one_step_per_fixed_tick() {
    let simulation = common::load_simulation("rod.ron");
    let h = simulation.params.dt;
    let mut app = app(simulation);
    assert_eq!(sim(&app).steps, 0, "no step before the first tick");
    let n = 120;
    ticks(&mut app, n);
    let s = sim(&app);
    assert_eq!(s.steps, n as u64);
    assert!(
        (s.state.t - n as f64 * h).abs() < 1e-12,
        "t = {} after {n} steps of {h}",
        s.state.t
    );
    let fixed = app.world().resource::<Time<Fixed>>();
    assert!((fixed.timestep().as_secs_f64() - h).abs() < 1e-12);
}

fn bits(simulation: &Simulation) -> Vec<u64> {
    let state = &simulation.state;
    std::iter::once(state.t)
        .chain(state.q.iter().copied())
        .chain(state.v.iter().copied())
        .map(f64::to_bits)
        .collect()
}

/// The worker handoff: a step of the wall at k = 8 (thousands of pivots,
/// about a second in this build) does not hold back the frames drawn
/// meanwhile; an edit made while it runs applies from the next step; Cancel
/// drops it and leaves the shown state bit for bit.
#[test]
fn a_long_step_leaves_the_frames_free_and_cancel_keeps_the_state() {
    let mut simulation = common::load_simulation("wall.ron");
    simulation.params.edges = 8;
    let mut app = app(simulation);
    app.world_mut().resource_mut::<SimControl>().frame_budget = 0.03;
    let shown = bits(sim(&app));
    let running = |app: &App| app.world().resource::<StepJob>().progress();
    // Frames go on while the step computes, each within its budget and the
    // time to draw, and the panel's progress counts the step's pivots.
    let mut frames = 0;
    while running(&app).is_none_or(|p| p.pivots == 0) {
        let start = std::time::Instant::now();
        app.update();
        let frame = start.elapsed().as_secs_f64();
        assert!(frame < 0.5, "a frame took {frame} s while the step ran");
        frames += 1;
        assert!(frames < 500, "no pivots reported after {frames} frames");
    }
    let progress = running(&app).expect("running");
    assert_eq!(progress.step, 1);
    assert_eq!(bits(sim(&app)), shown, "the shown state waits for the step");
    // Cancel, as the panel's button does.
    app.world_mut().resource_mut::<StepJob>().cancel();
    app.world_mut().resource_mut::<SimControl>().paused = true;
    ticks(&mut app, 3);
    assert!(running(&app).is_none());
    assert_eq!(sim(&app).steps, 0);
    assert_eq!(bits(sim(&app)), shown, "Cancel keeps the state bit for bit");
    // Resume: the step runs again and is installed, with the friction
    // edited while it ran.
    app.world_mut().resource_mut::<SimControl>().paused = false;
    ticks(&mut app, 1);
    app.world_mut().resource_mut::<Sim>().params.mu = 0.25;
    app.world_mut().resource_mut::<SimControl>().frame_budget = 60.0;
    while sim(&app).steps == 0 {
        app.update();
    }
    assert_eq!(sim(&app).steps, 1);
    assert_eq!(sim(&app).params.mu, 0.25);
    assert_ne!(bits(sim(&app)), shown);
}

#[test]
fn body_transforms_follow_the_simulation() {
    for scene in ["rod.ron", "four_balls.ron", "incline.ron"] {
        let simulation = common::load_simulation(scene);
        let bodies = match simulation.model() {
            Model::Rigid(s) => s.bodies.len(),
            Model::Linear(_) => 0,
        };
        let mut app = app(simulation);
        ticks(&mut app, 150);

        // Within a frame the drawn pose lies between the last two states; with
        // no overstep it is the previous state …
        let previous = app.world().resource::<PreviousState>().q.clone();
        let current = sim(&app).state.q.clone();
        assert_ne!(previous, current, "{scene}: the bodies moved");
        let transforms = body_transforms(&mut app);
        assert_eq!(transforms.len(), bodies, "{scene}: one entity per body");
        for (i, t) in &transforms {
            let (p, r) = pose(sim(&app), &previous, *i);
            assert_close(t.translation, p, &format!("{scene} body {i} (previous)"));
            assert!(t.rotation.angle_between(r) < 1e-5);
        }

        // … and a full timestep of overstep brings it to the current state.
        let step = app.world().resource::<Time<Fixed>>().timestep();
        app.world_mut()
            .resource_mut::<Time<Fixed>>()
            .accumulate_overstep(step);
        app.world_mut()
            .run_system_once(sync_body_transforms)
            .expect("sync runs");
        for (i, t) in &body_transforms(&mut app) {
            let (p, r) = pose(sim(&app), &current, *i);
            assert_close(t.translation, p, &format!("{scene} body {i} (current)"));
            assert!(t.rotation.angle_between(r) < 1e-5);
        }
    }
}

/// Distance slid along the incline after `n` ticks with friction μ set in the
/// live resource.
fn slide(mu: f64, n: usize) -> f64 {
    let simulation = common::load_simulation("incline.ron");
    let start = simulation.state.q.clone();
    let mut app = app(simulation);
    app.world_mut().resource_mut::<Sim>().params.mu = mu;
    ticks(&mut app, n);
    let q = &sim(&app).state.q;
    ((q[0] - start[0]).powi(2) + (q[1] - start[1]).powi(2)).sqrt()
}

#[test]
fn friction_changes_in_the_resource_take_effect() {
    let n = 200;
    let h = common::load_simulation("incline.ron").params.dt;
    let t = n as f64 * h;
    let (low, high) = (slide(0.2, n), slide(0.3, n));
    // a = g (sin 30° − μ cos 30°): 3.21 m/s² for μ = 0.2, 2.36 m/s² for μ = 0.3.
    let expected = |mu: f64| 0.5 * 9.81 * (0.5 - mu * 3f64.sqrt() / 2.0) * t * t;
    assert!(
        low > high + 0.04,
        "μ = 0.2 slid {low:.4} m, μ = 0.3 slid {high:.4} m"
    );
    for (mu, d) in [(0.2, low), (0.3, high)] {
        let e = expected(mu);
        assert!(
            (d - e).abs() < 0.05 * e,
            "μ = {mu}: slid {d:.4} m, expected {e:.4} m"
        );
    }
}

#[test]
fn the_fixed_timestep_follows_the_step_size() {
    let mut app = app(common::load_simulation("incline.ron"));
    ticks(&mut app, 10);
    let new_h = 0.0007;
    app.world_mut().resource_mut::<Sim>().params.dt = new_h;
    app.update();
    let timestep = app.world().resource::<Time<Fixed>>().timestep();
    assert!(
        (timestep.as_secs_f64() - new_h).abs() < 1e-12,
        "fixed timestep {timestep:?} after h = {new_h}"
    );
    let (t0, s0) = (sim(&app).state.t, sim(&app).steps);
    ticks(&mut app, 25);
    let (t1, s1) = (sim(&app).state.t, sim(&app).steps);
    assert_eq!(s1 - s0, 25, "one step per tick at the new timestep");
    assert!(((t1 - t0) - 25.0 * new_h).abs() < 1e-12);
}

#[test]
fn pause_single_step_and_reset() {
    let mut app = app(common::load_simulation("rod.ron"));
    ticks(&mut app, 5);
    app.world_mut().resource_mut::<SimControl>().paused = true;
    ticks(&mut app, 5);
    assert_eq!(sim(&app).steps, 5, "no steps while paused");
    app.world_mut().resource_mut::<SimControl>().step_once = true;
    ticks(&mut app, 3);
    assert_eq!(sim(&app).steps, 6, "a single step while paused");
    // While paused after a single step the bodies show the current state.
    let current = sim(&app).state.q.clone();
    for (i, t) in &body_transforms(&mut app) {
        assert_close(
            t.translation,
            pose(sim(&app), &current, *i).0,
            "single step",
        );
    }
    app.world_mut()
        .run_system_once(reset_simulation)
        .expect("reset runs");
    assert_eq!(sim(&app).steps, 0);
    assert_eq!(sim(&app).state.t, 0.0);
}

/// At the scene's duration the viewer pauses (and runs on when resumed);
/// with "loop" it starts the scene again instead.
#[test]
fn the_scene_pauses_at_its_duration_or_loops() {
    let mut simulation = common::load_simulation("rod.ron");
    simulation.params.duration = 20.0 * simulation.params.dt;
    let mut app = app(simulation);
    ticks(&mut app, 30);
    let control = app.world().resource::<SimControl>();
    assert!(control.paused && control.end_passed);
    assert_eq!(sim(&app).steps, 20, "paused at the duration");
    app.world_mut().resource_mut::<SimControl>().paused = false;
    ticks(&mut app, 5);
    assert!(sim(&app).steps > 20, "resumed past the duration");
    app.world_mut()
        .run_system_once(reset_simulation)
        .expect("reset runs");
    app.world_mut().resource_mut::<SimControl>().looping = true;
    app.world_mut().resource_mut::<SimControl>().paused = false;
    let mut most = 0;
    for _ in 0..50 {
        app.update();
        most = most.max(sim(&app).steps);
        assert!(!app.world().resource::<SimControl>().paused);
    }
    assert_eq!(most, 20, "the loop restarts at the duration");
    assert!(sim(&app).steps < 20);
}

#[test]
fn invalid_parameters_are_reported_not_panicked_on() {
    let mut app = app(common::load_simulation("four_balls.ron"));
    ticks(&mut app, 3);
    for dt in [f64::NAN, -1.0, 0.0, f64::INFINITY] {
        app.world_mut().resource_mut::<Sim>().params.dt = dt;
        ticks(&mut app, 2);
        let control = app.world().resource::<SimControl>();
        assert!(
            control.step_error.is_some(),
            "h = {dt} should be refused with a message"
        );
    }
    app.world_mut().resource_mut::<Sim>().params.dt = 0.0025;
    app.world_mut().resource_mut::<Sim>().params.edges = 2;
    ticks(&mut app, 2);
    assert!(app.world().resource::<SimControl>().step_error.is_some());
    app.world_mut().resource_mut::<Sim>().params.edges = 8;
    let before = sim(&app).steps;
    ticks(&mut app, 2);
    assert!(
        app.world().resource::<SimControl>().step_error.is_none(),
        "{:?}",
        app.world().resource::<SimControl>().step_error
    );
    assert!(
        sim(&app).steps > before,
        "stepping resumes with valid parameters"
    );
    // Extreme playback speeds are clamped, not rejected.
    app.world_mut().resource_mut::<SimControl>().speed = f64::NAN;
    app.update();
    app.world_mut().resource_mut::<SimControl>().speed = 1e9;
    app.update();
    assert_eq!(app.world().resource::<SimControl>().speed, 10.0);
}

/// An app that also watches its scene file, opened from a copy of `scene` in
/// a fresh directory.
fn watched_app(scene: &str) -> (App, std::path::PathBuf) {
    use contactlab::viewer::SceneSource;
    use contactlab::viewer::reload::ReloadPlugin;
    let dir = std::env::temp_dir().join(format!(
        "contactlab-reload-{}-{}",
        std::process::id(),
        scene
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(scene);
    std::fs::copy(common::project_dir().join("scenes").join(scene), &path).expect("copy scene");
    let simulation = Simulation::new(contactlab::scene::load(&path).expect("scene loads"));
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .add_plugins(SimPlugin::new(simulation))
        .add_plugins(ReloadPlugin)
        .insert_resource(SceneSource::new(path.clone(), Default::default()))
        .insert_resource(TimeUpdateStrategy::FixedTimesteps(1))
        .insert_resource(waiting_for_every_step());
    app.update();
    (app, path)
}

/// Rewrites the file with a different length so the watcher notices even
/// within the file system's timestamp resolution.
fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).expect("read scene");
    assert!(text.contains(from), "`{from}` in the scene file");
    std::fs::write(path, text.replacen(from, to, 1)).expect("write scene");
}

#[test]
fn editing_the_scene_file_reloads_it() {
    let (mut app, path) = watched_app("rod.ron");
    ticks(&mut app, 20);
    assert_eq!(sim(&app).steps, 20);
    assert_eq!(sim(&app).params.mu, 0.6);
    edit(&path, "mu: 0.6,", "mu: 0.25,");
    ticks(&mut app, 1);
    assert_eq!(sim(&app).params.mu, 0.25, "the new file's μ");
    assert!(sim(&app).steps <= 1, "the reloaded scene starts over");
    assert!(
        app.world()
            .resource::<contactlab::viewer::SceneSource>()
            .error
            .is_none()
    );

    // With "keep panel parameters", the panel's μ survives the reload.
    app.world_mut()
        .resource_mut::<contactlab::viewer::SceneSource>()
        .keep_parameters = true;
    app.world_mut().resource_mut::<Sim>().params.mu = 1.5;
    edit(&path, "duration: 1.0,", "duration: 2.0,");
    ticks(&mut app, 1);
    assert_eq!(sim(&app).params.mu, 1.5, "panel μ kept");
    assert_eq!(sim(&app).params.duration, 1.0, "panel parameters win");
    let _ = std::fs::remove_dir_all(path.parent().expect("temp dir"));
}

#[test]
fn a_broken_edit_keeps_the_last_good_scene_running() {
    let (mut app, path) = watched_app("incline.ron");
    ticks(&mut app, 10);
    let name = sim(&app).scene.name.clone();
    edit(&path, "Scene(", "Scene(\n    bogus_field: 3,");
    ticks(&mut app, 1);
    let error = app
        .world()
        .resource::<contactlab::viewer::SceneSource>()
        .error
        .clone()
        .expect("the parse error is kept for the panel");
    assert!(
        error.contains("incline.ron:") && error.contains("bogus_field"),
        "error names file, line and field: {error}"
    );
    let before = sim(&app).steps;
    ticks(&mut app, 5);
    assert_eq!(sim(&app).scene.name, name, "the old scene is still loaded");
    assert_eq!(sim(&app).steps, before + 5, "and still running");
    // Fixing the file loads it and clears the error.
    edit(&path, "Scene(\n    bogus_field: 3,", "Scene(");
    ticks(&mut app, 1);
    assert!(
        app.world()
            .resource::<contactlab::viewer::SceneSource>()
            .error
            .is_none()
    );
    assert!(sim(&app).steps <= 1);
    let _ = std::fs::remove_dir_all(path.parent().expect("temp dir"));
}

/// The recording overlay states the live parameters: the ones the scene file
/// sets, the inelastic e of Stewart–Trinkle, the friction pyramid's k (2 in the
/// plane), and γ, δ only where a spring or damper takes them.
#[test]
fn the_recording_overlay_names_the_live_parameters() {
    use contactlab::viewer::record::overlay_text;
    let balls = overlay_text(&Sim(common::load_simulation("four_balls.ron")));
    let lines: Vec<&str> = balls.lines().collect();
    assert_eq!(lines.len(), 3, "{balls}");
    assert!(lines[0].starts_with("Four balls   t = 0.000 s"), "{balls}");
    assert!(
        lines[1].contains("μ = 0.40") && lines[1].contains("e = 0 (inelastic)"),
        "{balls}"
    );
    assert!(lines[1].contains("h = 0.0025 s"), "{balls}");
    assert_eq!(lines[2], "k = 8   Stewart–Trinkle");

    let linkage = overlay_text(&Sim(common::load_simulation("two_bar_linkage.ron")));
    assert!(linkage.contains("k = 2"), "{linkage}");
    assert!(linkage.contains("γ = 1.000e2 N/m"), "{linkage}");
    assert!(linkage.contains("δ = 2.000e1 N·s/m"), "{linkage}");

    let mut woodpecker = Sim(common::load_simulation("woodpecker.ron"));
    woodpecker.params.restitution = 0.25;
    let text = overlay_text(&woodpecker);
    assert!(
        text.contains("e = 0.25") && text.contains("Moreau–Jean"),
        "{text}"
    );
    assert!(!text.contains('γ') && !text.contains('δ'), "{text}");
}

/// The viewer keeps a checkpoint per step; scrubbing back and resuming (a
/// fork without changes) steps through the very same states, and the plots
/// lose the discarded future until it is stepped again.
#[test]
fn the_timeline_scrubs_back_and_replays_bit_for_bit() {
    use contactlab::viewer::History;
    let mut app = app(common::load_simulation("four_balls.ron"));
    ticks(&mut app, 100);
    let stored: Vec<_> = {
        let history = app.world().resource::<History>();
        assert_eq!(history.timeline.len(), 101, "t = 0 and one per step");
        (0..=100)
            .map(|i| history.timeline.get(i).expect("kept").state.clone())
            .collect()
    };
    app.world_mut().resource_mut::<SimControl>().paused = true;
    app.world_mut()
        .resource_scope(|world, mut history: Mut<History>| {
            world.resource_scope(|world, mut s: Mut<Sim>| {
                let mut previous = world.resource_mut::<PreviousState>();
                assert!(history.scrub(40, &mut s, &mut previous));
            });
        });
    assert_eq!(sim(&app).state, stored[40]);
    app.update();
    assert_eq!(sim(&app).state, stored[40], "paused on the scrubbed step");
    app.world_mut().resource_mut::<SimControl>().paused = false;
    while sim(&app).steps < 41 {
        app.update();
    }
    let newest_sample = app
        .world()
        .resource::<History>()
        .samples
        .back()
        .map(|s| s.t);
    assert_eq!(newest_sample, Some(stored[41].t), "the plots forked too");
    while sim(&app).steps < 100 {
        app.update();
        let s = sim(&app);
        assert!(
            s.state == stored[s.steps as usize],
            "step {} after the fork differs",
            s.steps
        );
    }
    assert_eq!(app.world().resource::<History>().timeline.len(), 101);
}

/// `contactlab SCENE --state SNAPSHOT`: the viewer starts where the snapshot
/// was taken, thrown bodies included.
#[test]
fn the_viewer_starts_from_a_snapshot() {
    use contactlab::sim::throw::{Projectile, projectile};
    let mut original = common::load_simulation("box_stack.ron");
    for _ in 0..20 {
        original.step().expect("step");
    }
    let spec = projectile(
        &original,
        Projectile::Box,
        nalgebra::Vector3::new(2.0, 0.0, 1.0),
        nalgebra::Vector3::zeros(),
        2.0,
    )
    .expect("projectile");
    original.add_body(spec).expect("thrown");
    original.step().expect("step");
    let path = std::env::temp_dir().join(format!(
        "contactlab-viewer-state-{}.ron",
        std::process::id()
    ));
    original.save_snapshot(&path).expect("saved");
    let scene = common::project_dir().join("scenes").join("box_stack.ron");
    let started =
        contactlab::viewer::load_simulation_from(&scene, &Default::default(), Some(&path))
            .expect("starts from the snapshot");
    assert_eq!(started.state, original.state);
    assert_eq!(started.steps, original.steps);
    let mut app = app(started);
    ticks(&mut app, 3);
    assert_eq!(
        body_transforms(&mut app).len(),
        3,
        "the thrown box is drawn"
    );
    let _ = std::fs::remove_file(&path);
}
