//! Pointer input, headless: picking, selection, the perturbation drag and
//! the throw tool driven by synthetic pointer events.

use super::*;
use bevy::camera::{ComputedCameraValues, RenderTarget, RenderTargetInfo};
use bevy::picking::pointer::{Location, PointerAction, PointerButton, PointerId, PointerInput};
use bevy::picking::{InteractionPlugin, PickingPlugin};
use bevy::window::{PrimaryWindow, WindowRef, WindowResolution};
use contactlab::viewer::camera::{MainCamera, ViewRig};
use contactlab::viewer::hands::{Grab, Hands, HandsPlugin, Selected, Selection, Tool};
use contactlab::viewer::sim::physics_to_world;

const SIZE: (u32, u32) = (1280, 800);

/// Two boxes (2 kg and 0.5 kg) resting apart on a frictionless table, in
/// the plane.
fn two_boxes() -> Simulation {
    let text = "Scene(name: \"boxes\", params: (dt: 0.002, mu: 0.0),
        camera: (target: (0.0, 0.3, 0.0), distance: 1.0),
        system: Rigid((dimension: Planar, gravity: (0.0, -9.81, 0.0),
          bodies: [
            (name: \"heavy\", shape: Box(half_extents: (0.15, 0.1, 0.1)), mass: 2.0, position: (-0.4, 0.1, 0.0)),
            (name: \"light\", shape: Box(half_extents: (0.1, 0.1, 0.1)), mass: 0.5, position: (0.4, 0.1, 0.0)),
          ],
          surfaces: [(name: \"table\", normal: (0.0, 1.0, 0.0))])))";
    let scene = contactlab::scene::parse(text, Path::new("boxes.ron")).expect("loads");
    Simulation::new(scene)
}

/// A headless app with picking, the hands and a camera over a
/// 1280×800 window, as the viewer frames the scene.
fn pointer_app(simulation: Simulation) -> App {
    let rig = ViewRig::for_scene(&Sim(simulation.clone()));
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .add_plugins((PickingPlugin, InteractionPlugin))
        .add_plugins(SimPlugin::new(simulation))
        .add_plugins(HandsPlugin)
        .init_resource::<ButtonInput<KeyCode>>()
        .insert_resource(TimeUpdateStrategy::FixedTimesteps(1))
        .insert_resource(waiting_for_every_step());
    app.world_mut().spawn((
        Window {
            resolution: WindowResolution::new(SIZE.0, SIZE.1),
            ..default()
        },
        PrimaryWindow,
    ));
    app.world_mut().spawn(PointerId::Mouse);
    let mut projection = rig.projection();
    projection.update(SIZE.0 as f32, SIZE.1 as f32);
    let transform = rig.transform();
    app.world_mut().spawn((
        MainCamera,
        Camera {
            computed: ComputedCameraValues {
                clip_from_view: projection.get_clip_from_view(),
                target_info: Some(RenderTargetInfo {
                    physical_size: UVec2::new(SIZE.0, SIZE.1),
                    scale_factor: 1.0,
                }),
                ..default()
            },
            ..default()
        },
        RenderTarget::Window(WindowRef::Primary),
        projection,
        transform,
        GlobalTransform::from(transform),
        rig,
    ));
    app.update();
    app
}

/// The panel owns the pointer over it: a scripted wheel over the panel
/// leaves the camera as it was and zooms over the scene, and a drag
/// that begins on the panel does not pan the view even once the pointer
/// has left it.
#[test]
fn wheel_and_drags_over_the_panel_leave_the_camera() {
    use bevy::input::mouse::{AccumulatedMouseMotion, AccumulatedMouseScroll, MouseScrollUnit};
    use bevy_egui::input::EguiWantsInput;
    use contactlab::viewer::camera::camera_controls;
    use contactlab::viewer::panel::PanelLayout;
    let mut app = pointer_app(two_boxes());
    app.insert_resource(ButtonInput::<MouseButton>::default())
        .insert_resource(AccumulatedMouseMotion::default())
        .insert_resource(AccumulatedMouseScroll::default())
        .insert_resource(EguiWantsInput::default())
        .insert_resource(PanelLayout {
            width: 350.0,
            ..Default::default()
        })
        .add_systems(Update, camera_controls);
    let rig = |app: &mut App| {
        let mut query = app.world_mut().query::<&ViewRig>();
        query.single(app.world()).expect("one camera").clone()
    };
    let point_at = |app: &mut App, x: f32| {
        let mut query = app.world_mut().query::<&mut Window>();
        let mut window = query.single_mut(app.world_mut()).expect("window");
        window.set_cursor_position(Some(Vec2::new(x, 400.0)));
    };
    let wheel = |app: &mut App, notches: f32| {
        *app.world_mut().resource_mut::<AccumulatedMouseScroll>() = AccumulatedMouseScroll {
            unit: MouseScrollUnit::Line,
            delta: Vec2::new(0.0, notches),
        };
    };
    let before = rig(&mut app);
    point_at(&mut app, 100.0);
    wheel(&mut app, 5.0);
    ticks(&mut app, 3);
    assert_eq!(rig(&mut app), before, "five notches over the panel zoomed");
    point_at(&mut app, 800.0);
    ticks(&mut app, 1);
    assert_ne!(rig(&mut app), before, "the wheel over the scene zooms");
    wheel(&mut app, 0.0);
    let zoomed = rig(&mut app);
    // A right drag from the panel into the scene.
    point_at(&mut app, 100.0);
    app.world_mut()
        .resource_mut::<ButtonInput<MouseButton>>()
        .press(MouseButton::Right);
    app.world_mut()
        .resource_mut::<AccumulatedMouseMotion>()
        .delta = Vec2::new(30.0, 0.0);
    ticks(&mut app, 1);
    app.world_mut()
        .resource_mut::<ButtonInput<MouseButton>>()
        .clear();
    point_at(&mut app, 800.0);
    ticks(&mut app, 2);
    assert_eq!(rig(&mut app), zoomed, "a drag begun on the panel panned");
    // The same drag begun over the scene pans.
    app.world_mut()
        .resource_mut::<ButtonInput<MouseButton>>()
        .release(MouseButton::Right);
    ticks(&mut app, 1);
    app.world_mut()
        .resource_mut::<ButtonInput<MouseButton>>()
        .clear();
    app.world_mut()
        .resource_mut::<ButtonInput<MouseButton>>()
        .press(MouseButton::Right);
    ticks(&mut app, 1);
    assert_ne!(rig(&mut app), zoomed, "a drag over the scene pans");
}

/// Where `point` (physics coordinates) falls in a rig's view, in
/// normalized device coordinates (inside the view: both within ±1).
fn in_view(rig: &ViewRig, dimension: contactlab::model::Dimension, point: Vec3) -> Vec2 {
    let mut projection = rig.projection();
    // The window beside the panel.
    projection.update(930.0, 800.0);
    let world = physics_to_world(dimension) * point;
    let view = rig.transform().to_matrix().inverse();
    let clip = projection.get_clip_from_view() * view * world.extend(1.0);
    Vec2::new(clip.x, clip.y) / clip.w
}

fn inside(ndc: Vec2) -> bool {
    ndc.x.abs() <= 1.0 && ndc.y.abs() <= 1.0
}

/// Inside the view and above the timeline's band at its bottom.
fn above_the_timeline(ndc: Vec2) -> bool {
    inside(ndc) && ndc.y >= -1.0 + 2.0 * contactlab::viewer::camera::TIMELINE_BAND
}

/// Every shipped scene opens with all its bodies' centres in view, above
/// the timeline.
#[test]
fn every_scene_opens_with_its_bodies_in_view() {
    let mut checked = 0;
    for entry in std::fs::read_dir(common::project_dir().join("scenes")).expect("scenes") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "ron") {
            continue;
        }
        let simulation = Simulation::new(contactlab::scene::load(&path).expect("loads"));
        let Model::Rigid(system) = simulation.model() else {
            continue;
        };
        let rig = ViewRig::for_scene(&Sim(simulation.clone()));
        let planar = system.dimension == contactlab::model::Dimension::Planar;
        for i in 0..system.bodies.len() {
            let p = system.position(&simulation.state.q, i);
            let p = Vec3::new(p.x as f32, p.y as f32, p.z as f32);
            // In the plane, the body's bounding circle (its whole extent
            // across and up the view); in space, its centre.
            let r = system.bodies[i].shape.bounding_radius() as f32;
            let reach: &[Vec3] = if planar {
                &[Vec3::ZERO, Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y]
            } else {
                &[Vec3::ZERO]
            };
            for &d in reach {
                let ndc = in_view(&rig, system.dimension, p + d * r);
                assert!(
                    above_the_timeline(ndc),
                    "{}: body {} reaches {ndc}, out of view",
                    path.display(),
                    system.bodies[i].name
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 15, "{checked} rigid scenes");
}

/// The scenes whose action travels follow their moving body: at their
/// duration it is still in view.
#[test]
fn travelling_scenes_keep_their_body_in_view_at_their_duration() {
    use contactlab::viewer::follow::{Follow, follow_camera};
    for (scene, body) in [
        ("ball_roll.ron", "ball"),
        ("incline.ron", "box"),
        ("painleve_rod.ron", "rod"),
    ] {
        let simulation = common::load_simulation(scene);
        let duration = simulation.params.duration;
        let mut app = pointer_app(simulation);
        app.init_resource::<Follow>()
            .add_systems(Update, follow_camera);
        while sim(&app).state.t + 0.5 * sim(&app).params.dt < duration {
            app.update();
        }
        ticks(&mut app, 2);
        let s = sim(&app).clone();
        let Model::Rigid(system) = s.model() else {
            panic!("rigid")
        };
        let i = system.body_index(body).expect("the body");
        let start = system.position(&simulation_start(scene), i);
        let p = system.position(&s.state.q, i);
        assert!(
            (p - start).norm() > 0.1,
            "{scene}: {body} moved only {} m",
            (p - start).norm()
        );
        let mut query = app.world_mut().query::<&ViewRig>();
        let rig = query.single(app.world()).expect("camera").clone();
        let ndc = in_view(
            &rig,
            system.dimension,
            Vec3::new(p.x as f32, p.y as f32, p.z as f32),
        );
        assert!(inside(ndc), "{scene}: {body} at {ndc} left the view");
    }
}

fn simulation_start(scene: &str) -> nalgebra::DVector<f64> {
    common::load_simulation(scene).state.q
}

/// Where body i's centre is on screen, logical pixels.
fn on_screen(app: &mut App, i: usize) -> Vec2 {
    let s = sim(app).clone();
    let Model::Rigid(system) = s.model() else {
        panic!("rigid")
    };
    let p = system.position(&s.state.q, i);
    let world = physics_to_world(system.dimension) * Vec3::new(p.x as f32, p.y as f32, p.z as f32);
    camera_point(app, world)
}

fn send(app: &mut App, position: Vec2, action: PointerAction) {
    let window = app
        .world_mut()
        .query_filtered::<Entity, With<PrimaryWindow>>()
        .single(app.world())
        .expect("window");
    let target = RenderTarget::Window(WindowRef::Primary)
        .normalize(Some(window))
        .expect("a window target");
    app.world_mut().write_message(PointerInput::new(
        PointerId::Mouse,
        Location { target, position },
        action,
    ));
}

/// The pointer moved to `position` and the primary button pressed there,
/// then one frame.
fn press_at(app: &mut App, position: Vec2) {
    send(app, position, PointerAction::Move { delta: Vec2::ZERO });
    send(app, position, PointerAction::Press(PointerButton::Primary));
    app.update();
}

fn click(app: &mut App, position: Vec2) {
    press_at(app, position);
    send(
        app,
        position,
        PointerAction::Release(PointerButton::Primary),
    );
    app.update();
}

fn selection(app: &App) -> Option<Selected> {
    app.world().resource::<Selection>().0
}

#[test]
fn a_click_selects_the_body_under_the_cursor_and_esc_clears_it() {
    let mut app = pointer_app(two_boxes());
    ticks(&mut app, 5);
    let heavy = on_screen(&mut app, 0);
    let light = on_screen(&mut app, 1);
    click(&mut app, heavy);
    assert_eq!(selection(&app), Some(Selected::Body(0)));
    click(&mut app, light + Vec2::new(5.0, -5.0));
    assert_eq!(selection(&app), Some(Selected::Body(1)));
    // Empty space between them keeps the selection.
    click(&mut app, (heavy + light) / 2.0);
    assert_eq!(selection(&app), Some(Selected::Body(1)));
    app.world_mut()
        .resource_mut::<ButtonInput<KeyCode>>()
        .press(KeyCode::Escape);
    app.update();
    assert_eq!(selection(&app), None);
    assert!(
        sim(&app).perturbation().is_none(),
        "a click does not perturb"
    );
}

/// The box's horizontal position and velocity.
fn x_vx(app: &App, i: usize) -> (f64, f64) {
    let s = sim(app);
    let Model::Rigid(system) = s.model() else {
        panic!("rigid")
    };
    (
        system.position(&s.state.q, i).x,
        system.linear_velocity(&s.state.v, i).x,
    )
}

#[test]
fn a_drag_pulls_a_box_on_ice_with_k_d_over_m_and_releasing_lets_go() {
    for (body, mass) in [(0, 2.0), (1, 0.5)] {
        let mut app = pointer_app(two_boxes());
        ticks(&mut app, 5);
        let rate = 4.0;
        app.world_mut().resource_mut::<Hands>().rate = rate;
        // Ctrl + press on the box's centre, then move 100 px to the right.
        app.world_mut()
            .resource_mut::<ButtonInput<KeyCode>>()
            .press(KeyCode::ControlLeft);
        let start = on_screen(&mut app, body);
        press_at(&mut app, start);
        assert!(
            app.world().resource::<Grab>().0.is_some(),
            "Ctrl + press on a body grabs it"
        );
        assert_eq!(selection(&app), Some(Selected::Body(body)));
        let pixels = 100.0;
        send(
            &mut app,
            start + Vec2::new(pixels, 0.0),
            PointerAction::Move {
                delta: Vec2::new(pixels, 0.0),
            },
        );
        app.update();
        let p = sim(&app).perturbation().expect("perturbing").clone();
        // The orthographic view shows 2 m of height on 800 px.
        let d_expected = pixels as f64 * 2.0 / SIZE.1 as f64;
        let grab = {
            let s = sim(&app);
            let Model::Rigid(system) = s.model() else {
                panic!()
            };
            system.world_point(&s.state.q, body, &p.grab)
        };
        let d = p.target.x - grab.x;
        assert!(
            (p.target.x - (grab.x + d_expected)).abs() < 2e-3,
            "target {} m right of the grab point, pointer moved {d_expected} m",
            d
        );
        assert_eq!(p.stiffness, rate * mass, "k = κ m from the slider");
        // The first steps: a = k d / m within 2 %.
        let h = sim(&app).params.dt;
        let (x0, v0) = x_vx(&app, body);
        let d0 = p.target.x - grab.x;
        let n = 3;
        ticks(&mut app, n);
        let (_, v1) = x_vx(&app, body);
        let a = (v1 - v0) / (n as f64 * h);
        let expected = p.stiffness * d0 / mass;
        assert!(
            (a - expected).abs() < 0.02 * expected,
            "body {body}: a = {a} over {n} steps, k d / m = {expected}"
        );
        assert!(x_vx(&app, body).0 > x0);
        // Release: the force is gone, the box coasts on the ice.
        send(
            &mut app,
            start + Vec2::new(pixels, 0.0),
            PointerAction::Release(PointerButton::Primary),
        );
        app.update();
        assert!(app.world().resource::<Grab>().0.is_none());
        assert!(sim(&app).perturbation().is_none(), "released");
        let (_, v2) = x_vx(&app, body);
        ticks(&mut app, 10);
        let (_, v3) = x_vx(&app, body);
        assert!((v3 - v2).abs() < 1e-9, "coasting: {v2} → {v3}");
    }
}

#[test]
fn the_perturb_tool_drags_without_ctrl_and_a_linear_system_refuses() {
    let mut app = pointer_app(two_boxes());
    ticks(&mut app, 2);
    app.world_mut().resource_mut::<Hands>().tool = Tool::Perturb;
    let start = on_screen(&mut app, 1);
    press_at(&mut app, start);
    assert!(sim(&app).perturbation().is_some());

    // The woodpecker: its parts can be selected, not perturbed.
    let mut app = pointer_app(common::load_simulation("woodpecker.ron"));
    app.world_mut().resource_mut::<Hands>().tool = Tool::Perturb;
    app.update();
    // The drawing's entities (their meshes are the renderer's business).
    let parts = sim(&app).scene.drawing.len();
    for i in 0..parts {
        app.world_mut()
            .spawn(contactlab::viewer::drawing::PartVisual(i));
    }
    // The part is hit only where it is drawn now: pause to hold it still.
    app.world_mut().resource_mut::<SimControl>().paused = true;
    app.update();
    let s = sim(&app).clone();
    let bird = s
        .scene
        .drawing
        .iter()
        .position(|p| p.name == "bird")
        .expect("bird");
    let point = s.scene.drawing[bird].to_world(&s.state.q, [0.015, 0.02]);
    let head = camera_point(&mut app, Vec3::new(point[0] as f32, point[1] as f32, 0.0));
    press_at(&mut app, head);
    assert!(sim(&app).perturbation().is_none());
    assert!(
        app.world()
            .resource::<Hands>()
            .message
            .as_deref()
            .is_some_and(|m| m.contains("linear system")),
        "the press says why"
    );
    send(
        &mut app,
        head,
        PointerAction::Release(PointerButton::Primary),
    );
    app.update();
    assert_eq!(
        selection(&app),
        Some(Selected::Part(bird)),
        "a click selects the part"
    );
}

/// Where the world point is on screen through the main camera, logical
/// pixels.
fn camera_point(app: &mut App, world: Vec3) -> Vec2 {
    let mut query = app
        .world_mut()
        .query_filtered::<(&Camera, &GlobalTransform), With<MainCamera>>();
    let (camera, transform) = query.single(app.world()).expect("camera");
    camera
        .world_to_viewport(transform, world)
        .expect("on screen")
}

#[test]
fn a_throw_adds_a_body_with_an_entity_and_contacts() {
    let mut app = pointer_app(two_boxes());
    ticks(&mut app, 2);
    app.world_mut().resource_mut::<Hands>().tool = Tool::Throw;
    let on_table = camera_point(&mut app, Vec3::new(0.0, 0.0, 0.0));
    click(&mut app, on_table);
    let bodies = match sim(&app).model() {
        Model::Rigid(s) => s.bodies.len(),
        Model::Linear(_) => 0,
    };
    assert_eq!(bodies, 3, "{:?}", app.world().resource::<Hands>().message);
    ticks(&mut app, 2);
    assert_eq!(body_transforms(&mut app).len(), 3, "an entity for it");
    let mut landed = false;
    for _ in 0..600 {
        app.update();
        landed |= sim(&app).last.as_ref().is_some_and(|r| {
            r.contacts
                .iter()
                .any(|c| c.id.a == 2 && c.normal_impulse > 0.0)
        });
    }
    assert!(landed, "the thrown body touches down");
    // Scrubbing back before the throw removes its entity.
    {
        let world = app.world_mut();
        world.resource_scope(|world, mut history: Mut<contactlab::viewer::History>| {
            world.resource_scope(|world, mut s: Mut<Sim>| {
                let mut previous = world.resource_mut::<PreviousState>();
                assert!(history.scrub(0, &mut s, &mut previous));
            });
        });
    }
    app.world_mut().resource_mut::<SimControl>().paused = true;
    ticks(&mut app, 2);
    assert_eq!(body_transforms(&mut app).len(), 2, "gone before the throw");
}
