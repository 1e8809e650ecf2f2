//! Compare mode, headless: a comparison file opens as run A (the shown
//! simulation) and run B ([`Compare`]), B steps with every step of A, is
//! drawn as ghost entities at its own poses, and resets, pauses and single
//! steps with A.

use super::{bits, ticks, waiting_for_every_step};
use crate::common;
use bevy::ecs::system::RunSystemOnce;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use contactlab::sim::Simulation;
use contactlab::viewer::compare::{Compare, GhostBody, load_scene_or_comparison};
use contactlab::viewer::sim::{interpolated_pose, reset_simulation, rigid};
use contactlab::viewer::{History, Sim, SimControl, SimPlugin};
use std::path::{Path, PathBuf};

/// An app on the comparison at `path`, every `update()` one fixed tick.
fn open(path: &Path) -> App {
    let (a, compare) =
        load_scene_or_comparison(path, &Default::default()).expect("the comparison opens");
    assert!(
        compare.is_some(),
        "{} opens as a comparison",
        path.display()
    );
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .add_plugins(SimPlugin::comparing(a, compare))
        .insert_resource(TimeUpdateStrategy::FixedTimesteps(1))
        .insert_resource(waiting_for_every_step());
    app.update();
    app
}

fn shipped(name: &str) -> PathBuf {
    common::project_dir()
        .join("scenes")
        .join("compare")
        .join(name)
}

/// A comparison of the shipped scene `scene`, written to the temporary
/// directory.
fn written(name: &str, scene: &str, a: &str, b: &str) -> PathBuf {
    let scene = common::project_dir().join("scenes").join(scene);
    let path = std::env::temp_dir().join(format!(
        "contactlab-viewer-compare-{}-{name}.ron",
        std::process::id()
    ));
    let text = format!(
        "Comparison(name: \"{name}\", scene: {:?}, a: {a}, b: {b})",
        scene.display().to_string()
    );
    std::fs::write(&path, text).expect("comparison written");
    path
}

fn a(app: &App) -> &Simulation {
    &app.world().resource::<Sim>().0
}

fn b(app: &App) -> &Compare {
    app.world().resource::<Compare>()
}

/// The same parameters on both sides: after 60 steps of the pile, A and B
/// agree bit for bit and the divergence is exactly 0 at every step. B's μ
/// edited live then sets them apart.
#[test]
fn identical_sides_agree_bit_for_bit_until_b_is_edited() {
    let path = written("same", "pile.ron", "(mu: 0.3)", "(mu: 0.3)");
    let mut app = open(&path);
    let start = bits(a(&app));
    let n = 60;
    ticks(&mut app, n);
    assert_eq!(a(&app).steps, n as u64);
    assert_eq!(b(&app).b.steps, n as u64);
    assert_ne!(bits(a(&app)), start, "the pile moved");
    assert_eq!(bits(a(&app)), bits(&b(&app).b), "A and B bit for bit");
    assert_eq!(b(&app).divergence_from(a(&app)), Some(0.0));
    // Each side's plot samples, but for the step's wall-clock time.
    let physics = |samples: &std::collections::VecDeque<contactlab::viewer::Sample>| {
        samples
            .iter()
            .map(|s| {
                let t = [s.t, s.kinetic, s.potential, s.min_gap].map(f64::to_bits);
                (t, s.active_contacts, s.lcp_size, s.pivots)
            })
            .collect::<Vec<_>>()
    };
    let plotted = physics(&app.world().resource::<History>().samples);
    assert!(plotted.len() > n / 2, "{} samples of A", plotted.len());
    assert_eq!(
        physics(&b(&app).history.samples),
        plotted,
        "B's samples are A's"
    );
    assert_eq!(
        b(&app).divergence.len(),
        plotted.len(),
        "a divergence per sample"
    );
    assert!(b(&app).divergence.iter().all(|p| p[1] == 0.0));

    app.world_mut().resource_mut::<Compare>().b.params.mu = 0.0;
    ticks(&mut app, 60);
    assert_eq!(a(&app).params.mu, 0.3, "A keeps its μ");
    let d = b(&app).divergence_from(a(&app)).expect("same bodies");
    assert!(d > 1e-4, "frictionless B apart from A by {d} m");
    let _ = std::fs::remove_file(&path);
}

/// The shipped diagonal slide (k = 4 against k = 64): A and B take the same
/// steps at the same times, tick by tick; the pyramid's 45° bend sets them
/// apart; the ghost (one per moving body of B) stands at B's pose.
#[test]
fn a_shipped_comparison_steps_in_lockstep_and_draws_b_as_a_ghost() {
    let mut app = open(&shipped("diagonal_slide.ron"));
    assert_eq!(a(&app).params.edges, 4);
    assert_eq!(b(&app).b.params.edges, 64);
    for k in 1..=80u64 {
        ticks(&mut app, 1);
        assert_eq!((a(&app).steps, b(&app).b.steps), (k, k), "tick {k}");
        assert_eq!(a(&app).state.t.to_bits(), b(&app).b.state.t.to_bits());
    }
    let d = b(&app).divergence_from(a(&app)).expect("same bodies");
    assert!(d > 1e-6, "k = 4 and k = 64 apart by {d} m");

    // Paused after a single step, the ghosts show B's current state.
    app.world_mut().resource_mut::<SimControl>().step_once = true;
    ticks(&mut app, 2);
    let compare = b(&app).clone();
    assert_eq!((a(&app).steps, compare.b.steps), (81, 81));
    let system = rigid(&compare.b).expect("rigid");
    let moving = (0..system.bodies.len())
        .filter(|&i| !system.is_fixed(i))
        .count();
    let mut query = app.world_mut().query::<(&GhostBody, &Transform)>();
    let ghosts: Vec<(usize, Transform)> = query.iter(app.world()).map(|(g, t)| (g.0, *t)).collect();
    assert_eq!(ghosts.len(), moving, "a ghost per moving body");
    for (i, transform) in ghosts {
        let q = &compare.b.state.q;
        let (p, _) = interpolated_pose(system, q, q, i, 1.0);
        assert!(
            (transform.translation - p).abs().max_element() < 1e-6,
            "ghost {i} at {} for B's {p}",
            transform.translation
        );
    }
}

/// Pause, single step and reset act on both runs.
#[test]
fn pause_single_step_and_reset_act_on_both() {
    let mut app = open(&shipped("pile.ron"));
    let b_start = bits(&b(&app).b);
    ticks(&mut app, 5);
    app.world_mut().resource_mut::<SimControl>().paused = true;
    ticks(&mut app, 4);
    assert_eq!((a(&app).steps, b(&app).b.steps), (5, 5), "paused");
    app.world_mut().resource_mut::<SimControl>().step_once = true;
    ticks(&mut app, 3);
    assert_eq!((a(&app).steps, b(&app).b.steps), (6, 6), "one step");
    app.world_mut()
        .run_system_once(reset_simulation)
        .expect("reset runs");
    assert_eq!((a(&app).steps, b(&app).b.steps), (0, 0), "reset");
    assert_eq!(bits(&b(&app).b), b_start);
    assert!(b(&app).history.samples.is_empty() && b(&app).divergence.is_empty());
}

/// A step B refuses is B's error, named as B's; A runs on, and B picks up
/// again once its parameters are good, catching up with A's time.
#[test]
fn a_failing_b_is_reported_as_b_and_a_runs_on() {
    let mut app = open(&shipped("pile.ron"));
    ticks(&mut app, 3);
    app.world_mut().resource_mut::<Compare>().b.params.mu = -1.0;
    ticks(&mut app, 4);
    assert_eq!((a(&app).steps, b(&app).b.steps), (7, 3));
    let control = app.world().resource::<SimControl>();
    assert!(
        control.step_error.is_none() && control.halt.is_none(),
        "A is fine"
    );
    let error = b(&app).step_error.clone().expect("B's step refused");
    assert!(error.contains("mu") || error.contains("μ"), "{error}");
    app.world_mut().resource_mut::<Compare>().b.params.mu = 0.5;
    ticks(&mut app, 2);
    assert_eq!((a(&app).steps, b(&app).b.steps), (9, 9), "B caught up");
    assert_eq!(a(&app).state.t.to_bits(), b(&app).b.state.t.to_bits());
    assert!(b(&app).step_error.is_none());
}

/// The history scrubs both runs: back to step 20 of 40, A and B stand at
/// their own states of step 20, bit for bit, and resuming from there
/// replays both runs' steps 21–40 bit for bit (μ differs between them, so
/// B is not A). Scrubbing before B's last restart puts B back on A's state.
#[test]
fn the_history_scrubs_b_with_a_and_replays_both_bit_for_bit() {
    use contactlab::viewer::PreviousState;
    use contactlab::viewer::timeline::scrub;
    let path = written("scrub", "pile.ron", "(mu: 0.5)", "(mu: 0.1)");
    let mut app = open(&path);
    ticks(&mut app, 20);
    let at_20 = (bits(a(&app)), bits(&b(&app).b));
    assert_ne!(at_20.0[1..], at_20.1[1..], "B's μ sets it apart");
    ticks(&mut app, 20);
    let at_40 = (bits(a(&app)), bits(&b(&app).b));
    let scrub_to = |app: &mut App, index: usize| {
        let world = app.world_mut();
        world.resource_scope(|world, mut history: Mut<History>| {
            world.resource_scope(|world, mut sim: Mut<Sim>| {
                world.resource_scope(|world, mut previous: Mut<PreviousState>| {
                    let mut compare = world.resource_mut::<Compare>();
                    scrub(
                        index,
                        &mut sim,
                        &mut history,
                        &mut previous,
                        Some(&mut compare),
                    )
                })
            })
        })
    };
    assert!(scrub_to(&mut app, 20), "checkpoint 20 is step 20");
    assert_eq!((bits(a(&app)), bits(&b(&app).b)), at_20, "both at step 20");
    ticks(&mut app, 20);
    assert_eq!(
        (bits(a(&app)), bits(&b(&app).b)),
        at_40,
        "both replay steps 21–40"
    );
    // B restarted from A at step 40: before it, B's timeline has no
    // checkpoint, and B takes A's state.
    edit_b(&mut app, |p| p.dt *= 0.5);
    ticks(&mut app, 4);
    assert!(scrub_to(&mut app, 30), "checkpoint 30");
    assert_eq!(a(&app).state.t.to_bits(), b(&app).b.state.t.to_bits());
    assert_eq!(
        b(&app).divergence_from(a(&app)),
        Some(0.0),
        "B from A's state"
    );
    let _ = std::fs::remove_file(&path);
}

/// The hands act on both runs alike: the perturbation spring set on A pulls
/// the same body of B (identical sides stay identical bit for bit, the body
/// pulled away from where it rested), and a throw adds the same body to
/// both, which lands alike.
#[test]
fn the_hands_act_on_both_runs() {
    use contactlab::model::Perturbation;
    use contactlab::scene::BodySpec;
    let path = written("hands", "pile.ron", "()", "()");
    let mut app = open(&path);
    ticks(&mut app, 5);
    let body = 3;
    let (rest, mass) = {
        let system = rigid(a(&app)).expect("rigid");
        (
            system.position(&a(&app).state.q, body),
            system.bodies[body].mass,
        )
    };
    let target = rest + nalgebra::Vector3::new(0.0, 0.0, 0.3);
    let spring = Perturbation::with_rate(body, mass, nalgebra::Vector3::zeros(), target, 100.0);
    app.world_mut()
        .resource_mut::<Sim>()
        .set_perturbation(Some(spring))
        .expect("a body of the pile");
    ticks(&mut app, 30);
    assert_eq!(
        bits(a(&app)),
        bits(&b(&app).b),
        "the spring pulls both alike"
    );
    let lifted = rigid(&b(&app).b)
        .expect("rigid")
        .position(&b(&app).b.state.q, body);
    assert!(
        lifted.z > rest.z + 0.05,
        "B's body pulled up: {rest} → {lifted}"
    );
    app.world_mut()
        .resource_mut::<Sim>()
        .set_perturbation(None)
        .expect("let go");
    // A throw, as the throw tool makes it: the same body into both.
    let spec: BodySpec = ron::from_str(
        "(name: \"thrown\", shape: Sphere(radius: 0.05), mass: 0.2, position: (0.0, 0.0, 1.0), velocity: (0.0, 0.0, -1.0))",
    )
    .expect("a body");
    app.world_mut()
        .resource_mut::<Sim>()
        .add_body(spec.clone())
        .expect("thrown into A");
    app.world_mut()
        .resource_mut::<Compare>()
        .throw(spec)
        .expect("thrown into B");
    ticks(&mut app, 60);
    assert_eq!(a(&app).state.q.len(), b(&app).b.state.q.len());
    assert_eq!(bits(a(&app)), bits(&b(&app).b), "the throw lands alike");
    let _ = std::fs::remove_file(&path);
}

/// The panel's compare toggle on a plain scene: run B starts as a copy of
/// A where A stands, steps with it bit for bit until B is edited, and
/// switching it off drops B while A runs on.
#[test]
fn the_compare_toggle_starts_b_as_a_copy_of_a() {
    let scene = common::project_dir().join("scenes").join("pile.ron");
    let (simulation, none) =
        load_scene_or_comparison(&scene, &Default::default()).expect("a scene");
    assert!(none.is_none());
    let mut app = super::app(simulation);
    ticks(&mut app, 10);
    let copy = Compare::of_run(a(&app));
    app.insert_resource(copy);
    ticks(&mut app, 20);
    assert_eq!((a(&app).steps, b(&app).b.steps), (30, 30));
    assert_eq!(bits(a(&app)), bits(&b(&app).b), "B is A until edited");
    edit_b(&mut app, |p| p.mu = 0.0);
    ticks(&mut app, 30);
    assert!(b(&app).divergence_from(a(&app)).expect("same bodies") > 0.0);
    app.world_mut().remove_resource::<Compare>();
    ticks(&mut app, 5);
    assert_eq!(a(&app).steps, 65, "A runs on alone");
}

/// A restart of B while B's step runs on the worker (an edit of B's h):
/// the step, of the earlier generation, is dropped when it arrives, and B
/// stays where the restart put it, on A's state.
#[test]
fn a_step_of_b_in_flight_during_a_restart_is_dropped() {
    use contactlab::viewer::worker::StepJob;
    use std::time::Duration;
    let path = written("in-flight", "pile.ron", "(mu: 0.5)", "(mu: 0.1)");
    let mut app = open(&path);
    ticks(&mut app, 10);
    let a0 = a(&app).clone();
    let mut compare = b(&app).clone();
    let mut job = StepJob::default();
    job.start(&a0, Some((&compare.b, compare.generation)))
        .expect("the step starts");
    // The restart, while the step runs.
    compare.edit_b(&a0, |p| p.dt *= 0.5);
    let restarted = bits(&compare.b);
    assert_eq!(restarted, bits(&a0), "B restarted on A's state");
    let finished = job
        .wait(Duration::from_secs(60))
        .expect("the step ends")
        .expect("with a result");
    let steps = finished.b.expect("B stepped beside A");
    assert_eq!(steps.generation + 1, compare.generation);
    compare.install(steps, &finished.simulation, false);
    assert_eq!(bits(&compare.b), restarted, "the stale step is dropped");
    assert_eq!(compare.b.steps, a0.steps);
    let _ = std::fs::remove_file(&path);
}

/// A comparison whose side does not fit its scene is an error naming the
/// field, not a panic; a plain scene opens without B.
#[test]
fn a_bad_comparison_is_an_error_and_a_scene_has_no_b() {
    let path = written("bad", "pile.ron", "()", "(restitution: 1.5)");
    let e = load_scene_or_comparison(&path, &Default::default()).expect_err("out of range");
    assert!(e.contains("b.restitution"), "{e}");
    let _ = std::fs::remove_file(&path);
    let scene = common::project_dir().join("scenes").join("pile.ron");
    let (_, compare) = load_scene_or_comparison(&scene, &Default::default()).expect("a scene");
    assert!(compare.is_none());
}

/// Applies `edit` to B's parameters as the panel does ([`Compare::edit_b`]).
fn edit_b(app: &mut App, edit: impl FnOnce(&mut contactlab::params::Params)) {
    let a = a(app).clone();
    app.world_mut().resource_mut::<Compare>().edit_b(&a, edit);
}

/// An edit of B's step size or stepper restarts B from A's current state,
/// bit for bit (the divergence is 0 there), and B keeps A's clock: at h/2
/// two steps per step of A, at 2h one every other step, each at its step
/// nearest A's time. μ edits apply live without a restart, and A keeps its
/// own settings throughout.
#[test]
fn editing_bs_step_size_or_stepper_restarts_b_from_a_on_one_clock() {
    let path = written("stepping", "pile.ron", "(mu: 0.3)", "(mu: 0.3)");
    let mut app = open(&path);
    let h = a(&app).params.dt;
    ticks(&mut app, 20);
    // A live μ edit: no restart; B drifts from A.
    let generation = b(&app).generation;
    edit_b(&mut app, |p| p.mu = 0.0);
    assert_eq!(b(&app).generation, generation, "μ restarts nothing");
    ticks(&mut app, 20);
    let apart = b(&app).divergence_from(a(&app)).expect("same bodies");
    assert!(apart > 1e-4, "frictionless B apart from A by {apart} m");

    // Half the step size: B is A's state again, then takes two steps per tick.
    edit_b(&mut app, |p| p.dt = h / 2.0);
    assert_eq!(b(&app).generation, generation + 1);
    assert_eq!(bits(&b(&app).b), bits(a(&app)), "B restarts at A's state");
    assert_eq!(b(&app).b.steps, a(&app).steps);
    assert_eq!(b(&app).divergence_from(a(&app)), Some(0.0));
    assert!(b(&app).history.samples.is_empty() && b(&app).divergence.is_empty());
    assert_eq!(b(&app).b.params.mu, 0.0, "B keeps its own μ");
    let (a0, b0) = (a(&app).steps, b(&app).b.steps);
    for k in 1..=10u64 {
        ticks(&mut app, 1);
        assert_eq!((a(&app).steps - a0, b(&app).b.steps - b0), (k, 2 * k));
        let (ta, tb) = (a(&app).state.t, b(&app).b.state.t);
        assert!(
            (ta - tb).abs() < 1e-12,
            "tick {k}: A at {ta} s, B at {tb} s"
        );
    }
    assert!(b(&app).history.samples.back().is_some());
    let d = b(&app).divergence_from(a(&app)).expect("same bodies");
    assert!(d > 0.0, "B at h/2 without friction apart by {d} m");

    // Twice the step size: one step of B every other tick, never more than
    // h_B/2 = h from A's time.
    edit_b(&mut app, |p| p.dt = 2.0 * h);
    let (a0, b0) = (a(&app).steps, b(&app).b.steps);
    assert_eq!(a0, b0);
    for k in 1..=10u64 {
        ticks(&mut app, 1);
        assert_eq!(b(&app).b.steps - b0, k.div_ceil(2), "tick {k}");
        let (ta, tb) = (a(&app).state.t, b(&app).b.state.t);
        assert!(
            (ta - tb).abs() <= h + 1e-12,
            "tick {k}: A at {ta} s, B at {tb} s"
        );
    }
    assert_eq!(a(&app).steps - a0, 10);

    // Another stepper with A's μ and h: restarted at A's state, then apart.
    edit_b(&mut app, |p| {
        p.mu = 0.3;
        p.dt = h;
        p.stepper = contactlab::params::StepperKind::MoreauJean;
    });
    assert_eq!(bits(&b(&app).b), bits(a(&app)));
    ticks(&mut app, 30);
    assert_eq!(a(&app).steps, b(&app).b.steps);
    assert_ne!(a(&app).params.stepper, b(&app).b.params.stepper);
    assert_eq!(a(&app).params.dt, h, "A keeps its h");
    let d = b(&app).divergence_from(a(&app)).expect("same bodies");
    assert!(d > 1e-6, "Moreau–Jean apart from A's stepper by {d} m");
    assert!(b(&app).step_error.is_none() && b(&app).halt.is_none());
    let _ = std::fs::remove_file(&path);
}

/// The split view's cameras, headless: with `view: Split` a second camera
/// (B's pane) shares the main camera's rig, drawn back by
/// [`split::SPLIT_ZOOM`]; moving the main rig moves B's; the two viewports
/// halve the view beside the panel; and back in the ghost view B's camera
/// goes, the main camera draws B's layer again and the rig comes back.
#[test]
fn the_split_view_links_two_cameras_over_two_halves() {
    use bevy::camera::RenderTarget;
    use bevy::camera::visibility::RenderLayers;
    use bevy::window::{PrimaryWindow, WindowRef, WindowResolution};
    use contactlab::scene::comparison::CompareView;
    use contactlab::viewer::camera::{MainCamera, ViewRig, fit_viewport};
    use contactlab::viewer::panel::PanelLayout;
    use contactlab::viewer::split::{self, PaneB, sync_pane_b};
    let path = written(
        "split",
        "pile.ron",
        "(solver: lemke)",
        "(stepper: r#moreau-jean, solver: nsgs), view: Split",
    );
    let mut app = open(&path);
    let _ = std::fs::remove_file(&path);
    assert_eq!(b(&app).view, CompareView::Split);
    let framed = ViewRig::for_scene(app.world().resource::<Sim>());
    app.init_resource::<Assets<Image>>()
        .insert_resource(PanelLayout {
            width: 350.0,
            ..default()
        });
    app.world_mut().spawn((
        Window {
            resolution: WindowResolution::new(1280, 800),
            ..default()
        },
        PrimaryWindow,
    ));
    app.world_mut().spawn((
        MainCamera,
        Camera::default(),
        RenderTarget::Window(WindowRef::Primary),
        framed.clone(),
        Msaa::Off,
        split::main_layers(false),
    ));
    // As the viewer runs them: the pane's camera before the viewports.
    app.add_systems(Update, (sync_pane_b, fit_viewport).chain());
    let run = |app: &mut App| app.update();
    let distance = |rig: &ViewRig| match rig {
        ViewRig::Orbit { distance, .. } => *distance,
        ViewRig::Planar { .. } => panic!("the pile is spatial"),
    };
    let cameras = |app: &mut App| {
        let mut main = app
            .world_mut()
            .query_filtered::<(&Camera, &ViewRig, &RenderLayers), With<MainCamera>>();
        let (camera, rig, layers) = main.single(app.world()).expect("one main camera");
        let main = (camera.viewport.clone(), rig.clone(), layers.clone());
        let mut panes = app
            .world_mut()
            .query_filtered::<(&Camera, &ViewRig, &RenderLayers), With<PaneB>>();
        let panes: Vec<_> = panes
            .iter(app.world())
            .map(|(c, r, l)| (c.viewport.clone(), r.clone(), l.clone()))
            .collect();
        (main, panes)
    };

    run(&mut app);
    run(&mut app);
    let ((viewport, rig, layers), panes) = cameras(&mut app);
    assert_eq!(panes.len(), 1, "B's pane has a camera");
    let (pane_viewport, pane_rig, pane_layers) = &panes[0];
    let ratio = distance(&rig) / distance(&framed);
    assert!(
        (ratio - split::SPLIT_ZOOM).abs() < 1e-6,
        "drawn back {ratio}×"
    );
    assert_eq!(pane_rig, &rig, "one rig");
    assert_eq!(layers, split::main_layers(true));
    assert!(!layers.intersects(&RenderLayers::layer(split::LAYER_B)));
    assert!(pane_layers.intersects(&RenderLayers::layer(split::LAYER_B)));
    assert!(!pane_layers.intersects(&RenderLayers::layer(split::LAYER_A)));
    let (a_pane, b_pane) = (
        viewport.expect("A's viewport"),
        pane_viewport.clone().expect("B's"),
    );
    assert_eq!(
        (a_pane.physical_position, a_pane.physical_size),
        (UVec2::new(350, 0), UVec2::new(465, 800))
    );
    assert_eq!(
        (b_pane.physical_position, b_pane.physical_size),
        (UVec2::new(815, 0), UVec2::new(465, 800))
    );

    // An orbit of the main camera moves B's.
    let mut main = app
        .world_mut()
        .query_filtered::<&mut ViewRig, With<MainCamera>>();
    if let ViewRig::Orbit { yaw, .. } = &mut *main.single_mut(app.world_mut()).expect("main") {
        *yaw += 0.5;
    }
    run(&mut app);
    let ((_, rig, _), panes) = cameras(&mut app);
    assert_eq!(panes[0].1, rig, "B's camera follows the orbit");

    // Back to the ghost view.
    app.world_mut().resource_mut::<Compare>().view = CompareView::Ghost;
    run(&mut app);
    let ((viewport, rig, layers), panes) = cameras(&mut app);
    assert!(panes.is_empty(), "no camera for B");
    assert!((distance(&rig) - distance(&framed)).abs() < 1e-5 * distance(&framed));
    assert_eq!(layers, split::main_layers(false));
    let whole = viewport.expect("beside the panel");
    assert_eq!(whole.physical_size, UVec2::new(930, 800));
}
