//! Granular scale: NSGS on Coulomb's circular cone and bodies fixed in
//! place — the Coulomb law at every contact of a small silo, the energy
//! bound with ε = 0, bitwise reruns, a sphere on an incline against the
//! closed form with both cones, fixed bodies that hold and never move, and
//! the shipped granular scenes as their generators write them.

mod common;

use contactlab::model::{Model, Other};
use contactlab::params::{FrictionCone, SolverKind, StepperKind};
use contactlab::scene::{self, Scene, granular};
use contactlab::sim::Simulation;
use contactlab::stepper::ContactState;
use std::path::Path;

fn parse(text: &str) -> Scene {
    scene::parse(text, Path::new("granular.ron")).unwrap_or_else(|e| panic!("{e}"))
}

fn error_of(text: &str) -> String {
    match scene::parse(text, Path::new("bad.ron")) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn bits(sim: &Simulation) -> Vec<u64> {
    sim.state
        .q
        .iter()
        .chain(sim.state.v.iter())
        .map(|x| x.to_bits())
        .collect()
}

/// A silo of 150 grains, tightly solved.
fn small_silo(tolerance: f64) -> Simulation {
    let mut scene = granular::silo(150).unwrap_or_else(|e| panic!("{e}"));
    scene.params.tolerance = tolerance;
    scene.params.max_iterations = 100_000;
    Simulation::new(scene)
}

#[test]
fn every_contact_of_a_pouring_silo_keeps_coulombs_law() {
    // Impulse in the cone, no impulse on a separating contact, and a
    // slipping contact's friction against its slip, at every contact of
    // every step while the grains land in the hopper.
    let mut sim = small_silo(1e-8);
    assert_eq!(sim.params.cone(), FrictionCone::Circular);
    let mu = sim.params.mu;
    let (mut slipping, mut pressed, mut checked) = (0, 0, 0);
    common::run(&mut sim, 0.4, |sim, r| {
        let Model::Rigid(system) = sim.model() else {
            panic!("rigid")
        };
        for c in &r.contacts {
            assert!(c.normal_impulse >= 0.0);
            let friction = c.friction_impulse.norm();
            let limit = mu * c.normal_impulse;
            assert!(
                friction <= limit * (1.0 + 1e-9) + 1e-15,
                "t = {}: friction {friction} beyond μ r_N = {limit}",
                r.t
            );
            let frame = c.frame.as_ref().expect("rigid contacts have frames");
            assert!(friction_is_tangent(&c.friction_impulse, &frame.normal));
            match c.state {
                ContactState::Separating => assert!(friction <= 1e-12),
                ContactState::Stick => pressed += 1,
                ContactState::Slip => {
                    pressed += 1;
                    slipping += 1;
                    // Against a wall or the table the slip is the grain's
                    // velocity at the contact point (grain–grain contacts
                    // evaluate b at its own witness point, not reported).
                    let on_static = match c.id.b {
                        Other::Body(b) => system.is_fixed(b),
                        _ => true,
                    };
                    if !on_static {
                        continue;
                    }
                    let slip = point_velocity(system, sim, c.id.a, &frame.point, sim.params.dt);
                    let tangential = slip - frame.normal * frame.normal.dot(&slip);
                    if tangential.norm() > 1e-4 {
                        // On the boundary of the cone and against the slip.
                        assert!(
                            (friction - limit).abs() <= 1e-4 * limit.max(1e-12),
                            "t = {}: slipping at {} m/s with friction {friction}, μ r_N = {limit}",
                            r.t,
                            tangential.norm()
                        );
                        let cosine =
                            c.friction_impulse.dot(&tangential) / (friction * tangential.norm());
                        assert!(
                            cosine < -0.99,
                            "t = {}: friction along the slip ({cosine})",
                            r.t
                        );
                        checked += 1;
                    }
                }
            }
        }
    });
    assert!(
        pressed > 100 && slipping > 0 && checked > 0,
        "{pressed} pressed, {slipping} slipping, {checked} slips checked"
    );
}

fn friction_is_tangent(f: &nalgebra::Vector3<f64>, n: &nalgebra::Vector3<f64>) -> bool {
    f.dot(n).abs() <= 1e-9 * f.norm().max(1e-300)
}

/// The velocity u^E of the material point of body i at `point` (world, at
/// Moreau–Jean's midpoint q^M, where the contact was evaluated), m/s: the
/// centre at q^M is x − (h/2) v, and ω in world axes is the same at q^M
/// (the rotation over the half step is about ω).
fn point_velocity(
    system: &contactlab::model::RigidSystem,
    sim: &Simulation,
    i: usize,
    point: &nalgebra::Vector3<f64>,
    h: f64,
) -> nalgebra::Vector3<f64> {
    let (q, v) = (&sim.state.q, &sim.state.v);
    let linear = system.linear_velocity(v, i);
    let centre = system.position(q, i) - linear * (0.5 * h);
    linear + system.angular_velocity(q, v, i).cross(&(point - centre))
}

#[test]
fn with_inelastic_impacts_the_energy_never_rises() {
    let mut sim = small_silo(1e-8);
    assert_eq!(sim.params.restitution, 0.0);
    let mut energy = common::EnergyWatch::new(&sim);
    common::run(&mut sim, 0.5, |_, r| {
        energy.check(r, 1e-9, "the small silo")
    });
    let (k, p) = sim.energy();
    assert!(k + p < energy.previous() + 1e-12 && k > 0.0);
}

/// The deepest end gap the guards allow in `sim`, m: its guard depth of the
/// largest grain's bounding radius (a pair's depth is the share of its
/// smaller body, a grain's).
fn guard_bound(sim: &Simulation) -> f64 {
    let Model::Rigid(system) = sim.model() else {
        panic!("rigid")
    };
    let largest = (0..system.bodies.len())
        .filter(|&i| !system.is_fixed(i))
        .map(|i| system.bodies[i].shape.bounding_radius())
        .fold(0.0, f64::max);
    sim.step_settings().guard_depth * largest
}

#[test]
fn under_a_loose_tolerance_no_grain_sinks_past_the_guard_depth() {
    // Held on velocity level within a relative residual of 1e-2, a grain
    // pressed into its neighbours sinks by h times the normal velocity the
    // solve leaves it, step after step; the end's guard stops every
    // contact the step takes deeper once it is past the guard depth, here
    // 0.8 % of a grain's radius (0.74 mm deep without it, 3.9 times that).
    let mut sim = small_silo(1e-2);
    sim.step_settings_mut().guard_depth = 0.008;
    let bound = guard_bound(&sim);
    let mut deepest = f64::INFINITY;
    common::run(&mut sim, 1.0, |_, r| deepest = deepest.min(r.min_gap));
    assert!(
        deepest >= -bound * (1.0 + 1e-2),
        "{deepest} m deep, past {bound} m"
    );
}

#[test]
fn impulses_within_a_loose_tolerance_do_no_work() {
    // 300 grains settling in a box at a relative residual of 1e-2: the
    // impulses a solve stops at can push grains apart (4.1e-6 J in one
    // step); the sweeps go on at a tighter tolerance while the impulses'
    // work over the step is positive, and the energy never rises.
    let mut scene = granular::heap(300).unwrap_or_else(|e| panic!("{e}"));
    scene.params.tolerance = 1e-2;
    let mut sim = Simulation::new(scene);
    let mut energy = common::EnergyWatch::new(&sim);
    common::run(&mut sim, 1.0, |_, r| {
        energy.check(r, 1e-9, "300 grains at a tolerance of 1e-2")
    });
}

/// 1,000 grains at the lab's defaults for NSGS (the tolerance and sweep
/// limit a scene gets when it sets neither) for 1 s, dropped into a box of
/// four walls and poured through the silo's hopper: every step finishes at
/// the tolerance, the energy never rises, and no contact ends a step deeper
/// than the guards' bound (the guard depth of the largest grain's radius)
/// or than 1 % of the mean grain radius.
#[test]
#[ignore = "long suite: cargo test --release --no-default-features -- --ignored"]
fn heaps_at_the_defaults_finish_every_step_without_gaining_energy() {
    let defaults = contactlab::params::Params::default();
    let mut hopper = granular::silo(1000).unwrap_or_else(|e| panic!("{e}"));
    hopper.params.tolerance = defaults.tolerance;
    hopper.params.max_iterations = defaults.max_iterations;
    let boxed = granular::heap(1000).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (boxed.params.tolerance, boxed.params.max_iterations),
        (defaults.tolerance, defaults.max_iterations)
    );
    for (what, scene) in [("the box", boxed), ("the hopper", hopper)] {
        let mut sim = Simulation::new(scene);
        let bound = guard_bound(&sim);
        let mut energy = common::EnergyWatch::new(&sim);
        let mut deepest = f64::INFINITY;
        common::run(&mut sim, 1.0, |_, r| {
            energy.check(r, 1e-9, what);
            deepest = deepest.min(r.min_gap);
        });
        assert!(
            deepest >= -bound * (1.0 + 1e-3),
            "{what}: {deepest} m deep, past {bound} m"
        );
        assert!(
            deepest >= -0.01 * granular::RADIUS,
            "{what}: {deepest} m deep, past 1 % of the mean radius"
        );
    }
}

#[test]
fn granular_reruns_are_identical_bit_for_bit() {
    let mut a = small_silo(1e-4);
    let mut b = small_silo(1e-4);
    common::run(&mut a, 0.3, |_, _| {});
    common::run(&mut b, 0.3, |_, _| {});
    assert_eq!(bits(&a), bits(&b));
}

/// NSGS sweeps a problem of at least 512 contacts in two halves of space,
/// on two threads (`StepSettings::threads`); one thread sweeps the same
/// order, so the two give the same bits. The shipped silo's grains fall
/// into their bin for 0.2 s; from t = 0.23 s more than 512 contacts carry
/// impulse (asserted, so that the split sweeps are the ones compared).
#[test]
fn two_threads_and_one_give_the_same_bits() {
    let mut poured = common::load_simulation("silo.ron");
    poured.step_settings_mut().threads = 1;
    common::run(&mut poured, 0.225, |_, _| {});
    let mut runs = Vec::new();
    for threads in [1, 2] {
        let mut sim = poured.clone();
        sim.step_settings_mut().threads = threads;
        let mut loaded = usize::MAX;
        common::run(&mut sim, 0.03, |_, report| {
            let carrying = report
                .contacts
                .iter()
                .filter(|c| c.normal_impulse > 0.0)
                .count();
            loaded = loaded.min(carrying);
        });
        assert!(loaded >= 512, "only {loaded} contacts carry impulse");
        runs.push(bits(&sim));
    }
    assert!(runs[0] == runs[1], "one thread and two differ");
}

/// A ball of radius 0.1 m on a plane inclined by α about y, in space.
fn ball_on_incline(alpha: f64, mu: f64, cone: FrictionCone, stepper: StepperKind) -> Scene {
    let (s, c) = alpha.sin_cos();
    let mut scene = parse(&format!(
        r#"Scene(name: "ball on incline", params: (dt: 0.002, duration: 1.0, mu: {mu}, solver: nsgs, tolerance: 1e-10, max_iterations: 100000),
        system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, -9.81),
            bodies: [(name: "ball", shape: Sphere(radius: 0.1), mass: 1.0, position: ({px}, 0.0, {pz}))],
            surfaces: [(name: "incline", normal: ({s}, 0.0, {c}))])))"#,
        px = 0.1 * s,
        pz = 0.1 * c,
    ));
    scene.params.friction_cone = Some(cone);
    scene.params.stepper = stepper;
    scene
}

#[test]
fn a_ball_on_an_incline_rolls_or_slides_as_the_closed_form_says() {
    // A solid ball rolls without slipping, a = (5/7) g sin α, while
    // tan α ≤ (7/2) μ; beyond, it slides with a = g (sin α − μ cos α).
    // Both cones give the same: the friction of a ball on a plane lies
    // along the slope, one of the pyramid's edges.
    let g = 9.81;
    for cone in FrictionCone::ALL {
        for stepper in [StepperKind::MoreauJean, StepperKind::StewartTrinkle] {
            for (alpha_deg, mu) in [(30.0_f64, 0.3), (45.0, 0.1)] {
                let alpha = alpha_deg.to_radians();
                let mut sim = Simulation::new(ball_on_incline(alpha, mu, cone, stepper));
                let x0 = sim.state.q.clone();
                common::run(&mut sim, 0.5, |_, _| {});
                let moved = &sim.state.q - &x0;
                // Down the slope: (cos α, 0, −sin α).
                let down = moved[0] * alpha.cos() - moved[2] * alpha.sin();
                let t = sim.state.t;
                let measured = 2.0 * down / (t * t);
                let expected = if alpha.tan() <= 3.5 * mu {
                    5.0 / 7.0 * g * alpha.sin()
                } else {
                    g * (alpha.sin() - mu * alpha.cos())
                };
                assert!(
                    (measured - expected).abs() < 0.01 * expected,
                    "{cone} {stepper} α = {alpha_deg}°, μ = {mu}: a = {measured}, expected {expected}"
                );
            }
        }
    }
}

/// A fixed box (a shelf) and a sphere resting on it, and a fixed capsule
/// and sphere the sphere never reaches.
fn shelf(stepper: &str, solver: &str) -> Scene {
    parse(&format!(
        r#"Scene(name: "shelf", params: (dt: 0.005, duration: 1.0, mu: 0.5, stepper: r#{stepper}, solver: {solver}),
        system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, -9.81),
            bodies: [
                (name: "shelf", shape: Box(half_extents: (0.5, 0.5, 0.05)), mass: 1.0, position: (0.0, 0.0, 1.0), orientation: AxisAngle((1.0, 0.0, 0.0), 0.1), fixed: true),
                (name: "post", shape: Capsule(half_length: 0.2, radius: 0.05), mass: 1.0, position: (2.0, 0.0, 0.3), fixed: true),
                (name: "stone", shape: Sphere(radius: 0.1), mass: 1.0, position: (-2.0, 0.0, 0.1), fixed: true),
                (name: "ball", shape: Sphere(radius: 0.1), mass: 1.0, position: (0.0, {y:.6}, {z:.6})),
            ],
            surfaces: [(name: "floor", normal: (0.0, 0.0, 1.0))])))"#,
        // On the shelf's top face, tilted by 0.1 rad about x.
        y = -(0.05 + 0.1) * 0.1_f64.sin(),
        z = 1.0 + (0.05 + 0.1) * 0.1_f64.cos(),
    ))
}

#[test]
fn a_ball_resting_on_a_fixed_shelf_stays_and_the_shelf_never_moves() {
    for (stepper, solver) in [
        ("moreau-jean", "nsgs"),
        ("stewart-trinkle", "nsgs"),
        ("stewart-trinkle", "lemke"),
        ("anitescu-potra", "lemke"),
    ] {
        let mut sim = Simulation::new(shelf(stepper, solver));
        let start = sim.state.clone();
        let mut carried = false;
        common::run(&mut sim, 1.0, |_, r| {
            carried = r
                .contacts
                .iter()
                .any(|c| c.id.b == Other::Body(0) && c.normal_impulse > 0.0);
            for c in &r.contacts {
                // The moving body first: the contact carries its block only.
                assert_eq!(c.id.a, 3, "{stepper}/{solver}: the moving body comes first");
            }
        });
        // The fixed bodies: not a bit moved.
        for i in 0..3 * 7 {
            assert_eq!(
                sim.state.q[i].to_bits(),
                start.q[i].to_bits(),
                "{stepper}/{solver}"
            );
        }
        assert!(sim.state.v.rows(0, 18).iter().all(|v| *v == 0.0));
        // The ball rolls down the 0.1 rad slope (a = 5/7 g sin 0.1, 0.35 m
        // in 1 s) and is still on the shelf, carried by it.
        let Model::Rigid(system) = sim.model() else {
            panic!("rigid")
        };
        let ball = system.position(&sim.state.q, 3);
        assert!(
            ball.z > 0.9,
            "{stepper}/{solver}: the ball fell through to {ball}"
        );
        assert!(carried, "{stepper}/{solver}: the shelf carries the ball");
    }
}

#[test]
fn a_ball_on_a_level_fixed_box_stays_put() {
    for solver in ["nsgs", "lemke"] {
        let text = format!(
            r#"Scene(name: "table", params: (dt: 0.005, duration: 1.0, mu: 0.5, stepper: r#moreau-jean, solver: {solver}),
            system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, -9.81),
                bodies: [
                    (name: "table", shape: Box(half_extents: (0.5, 0.5, 0.05)), mass: 1.0, position: (0.0, 0.0, 0.5), fixed: true),
                    (name: "ball", shape: Sphere(radius: 0.1), mass: 1.0, position: (0.1, 0.2, 0.64999995)),
                ])))"#
        );
        let mut sim = Simulation::new(parse(&text));
        let start = sim.state.q.clone();
        common::run(&mut sim, 1.0, |_, _| {});
        let moved = (&sim.state.q - &start).amax();
        assert!(moved < 1e-9, "{solver}: the ball moved by {moved}");
        assert!(sim.state.v.amax() < 1e-9, "{solver}");
    }
}

#[test]
fn fixed_bodies_are_checked_at_their_field() {
    let good = r#"Scene(name: "s", params: (dt: 0.01),
    system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, -9.81),
        bodies: [
            (name: "wall", shape: Box(half_extents: (0.1, 1.0, 1.0)), mass: 1.0, position: (0.0, 0.0, 1.0), fixed: true),
            (name: "ball", shape: Sphere(radius: 0.1), mass: 1.0, position: (1.0, 0.0, 0.1)),
        ],
        loads: [],
    )),
)"#;
    parse(good);
    let e = error_of(&good.replace("fixed: true", "velocity: (1.0, 0.0, 0.0), fixed: true"));
    assert!(
        e.starts_with("bad.ron:4:") && e.contains("bodies[0].velocity: a fixed body does not move"),
        "{e}"
    );
    let e = error_of(&good.replace(
        "loads: [],",
        r#"loads: [(body: "wall", force: (1.0, 0.0, 0.0))],"#,
    ));
    assert!(
        e.starts_with("bad.ron:7:") && e.contains("loads[0].body: `wall` is fixed in place"),
        "{e}"
    );
    // Two fixed bodies may overlap (a silo's walls meet at their corners).
    parse(&good.replace(
        "(name: \"ball\"",
        "(name: \"wall2\", shape: Box(half_extents: (1.0, 0.1, 1.0)), mass: 1.0, position: (0.0, -0.5, 1.0), fixed: true),\n            (name: \"ball\"",
    ));
}

#[test]
fn the_granular_scenes_are_their_generators_output() {
    for (file, text) in [
        ("scenes/silo.ron", granular::silo_source(1000)),
        ("scenes/heap.ron", granular::heap_source(1000)),
        ("scenes/avalanche.ron", granular::avalanche_source(2000)),
        ("scenes/hourglass.ron", granular::hourglass_source(1008)),
    ] {
        let shipped = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(shipped == text, "{file} differs from its generator");
        let scene = scene::load(Path::new(file)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(scene.params.solver, SolverKind::Nsgs, "{file}");
        let Model::Rigid(system) = &scene.model else {
            panic!("rigid")
        };
        let grains = system
            .bodies
            .iter()
            .enumerate()
            .filter(|(i, _)| !system.is_fixed(*i))
            .count();
        assert!(grains >= 1000, "{file}: {grains} grains");
    }
}
