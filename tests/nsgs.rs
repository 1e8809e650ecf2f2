//! NSGS (Moreau 1998, after (20)): Gauss–Seidel over contacts on the same
//! LCP (29) that Lemke solves — agreement with Lemke, the contact law at
//! every contact, closed forms, determinism and the sweep limit's status.

mod common;

use contactlab::lcp::LcpStatus;
use contactlab::model::Model;
use contactlab::params::{FrictionCone, Overrides, SolverKind, StepperKind};
use contactlab::scene::{self, Scene};
use contactlab::sim::Simulation;
use contactlab::stepper::{ContactState, StepReport};
use std::path::Path;

fn load(name: &str) -> Scene {
    scene::load(&Path::new("scenes").join(name)).unwrap_or_else(|e| panic!("{e}"))
}

fn nsgs(mut scene: Scene, tolerance: f64) -> Simulation {
    scene.params.solver = SolverKind::Nsgs;
    scene.params.tolerance = tolerance;
    scene.params.max_iterations = 100_000;
    Simulation::new(scene)
}

/// Runs `sim` for `seconds`, asserting every step solved, and hands each
/// report to `visit`.
fn run(sim: &mut Simulation, seconds: f64, mut visit: impl FnMut(&Simulation, &StepReport)) {
    let steps = (seconds / sim.params.dt).round() as usize;
    for _ in 0..steps {
        let report = sim.step().unwrap_or_else(|e| panic!("{e}")).clone();
        assert_eq!(report.status, LcpStatus::Solved, "t = {}", report.t);
        visit(sim, &report);
    }
}

#[test]
fn nsgs_and_lemke_end_in_the_same_place() {
    // Balls meet balls and the table: the impulses are unique, so a converged
    // NSGS and Lemke take the same steps.
    for (name, stepper) in [
        ("four_balls.ron", StepperKind::StewartTrinkle),
        ("two_balls.ron", StepperKind::MoreauJean),
        ("ball_roll.ron", StepperKind::MoreauJean),
        ("two_balls.ron", StepperKind::StewartTrinkle),
        ("box_stack.ron", StepperKind::StewartTrinkle),
    ] {
        let mut scene = load(name);
        scene.params.stepper = stepper;
        let mut lemke = Simulation::new(scene.clone());
        // The identical LCP (29): NSGS on Lemke's pyramid.
        scene.params.friction_cone = Some(FrictionCone::Pyramid);
        let mut iterative = nsgs(scene, 1e-10);
        let seconds = lemke.params.duration;
        run(&mut lemke, seconds, |_, _| {});
        let mut sweeps = 0;
        run(&mut iterative, seconds, |_, r| {
            sweeps += r.sweeps;
            assert!(r.residual <= 1e-10, "{name}: residual {}", r.residual);
            assert_eq!(r.pivots, 0);
        });
        assert!(sweeps > 0, "{name}: NSGS swept");
        let gap = (&lemke.state.q - &iterative.state.q).amax();
        assert!(gap < 1e-4, "{name} ({stepper}): positions differ by {gap}");
    }
}

#[test]
fn nsgs_on_the_pyramid_solves_the_pile_and_follows_lemke_while_the_pile_lets_it() {
    // `pile.ron` on Lemke's pyramid at 1e-10: boxes resting on dependent
    // corners, where the sweeps meet affine pieces of their map and walk
    // along them by a fixed step; `nsgs::Drift` takes such a walk to its end
    // in one move. Without it the run reaches the sweep limit at t = 0.125 s
    // (at 0.195 s even at 1e-8). The pile is chaotic and its impulses are not
    // unique once boxes rest on four corners, so the two solvers' positions
    // part after t = 0.2 s (1e-2 m at 0.3 s, centimetres at 1 s, both
    // solving every step): they are compared up to there.
    let scene = load("pile.ron");
    let mut lemke = Simulation::new(scene.clone());
    let mut pyramid = scene;
    pyramid.params.friction_cone = Some(FrictionCone::Pyramid);
    let mut iterative = nsgs(pyramid, 1e-10);
    run(&mut lemke, 0.2, |_, _| {});
    let check = |_: &Simulation, r: &StepReport| {
        assert!(r.residual <= 1e-10, "t = {}: residual {}", r.t, r.residual);
        assert!(r.min_gap >= -1e-6, "t = {}: gap {}", r.t, r.min_gap);
    };
    run(&mut iterative, 0.2, check);
    let gap = (&lemke.state.q - &iterative.state.q).amax();
    assert!(gap < 1e-4, "positions differ by {gap} at t = 0.2 s");
    run(&mut iterative, 0.8, check);
}

#[test]
fn every_nsgs_solution_keeps_the_contact_law() {
    // Stewart–Trinkle with NSGS: no step ends inside, the energy never rises
    // (§3.3), and every contact's state is one of the law's: separating with
    // no impulse, sticking inside the pyramid, or slipping on its boundary
    // with the friction against the slip.
    for name in [
        "four_balls.ron",
        "box_stack.ron",
        "ball_roll.ron",
        "rod.ron",
    ] {
        let mut sim = nsgs(load(name), 1e-10);
        let mut energy = common::EnergyWatch::new(&sim);
        let scale = energy.scale();
        let mu = sim.params.mu;
        let seconds = sim.params.duration;
        run(&mut sim, seconds, |_, r| {
            assert!(
                r.min_gap >= -1e-6,
                "{name}: gap {} at t = {}",
                r.min_gap,
                r.t
            );
            energy.check(r, 1e-9, name);
            for c in &r.contacts {
                let limit = mu * c.normal_impulse;
                match c.state {
                    ContactState::Separating => {
                        assert!(c.tangential_impulse.abs() <= 1e-8 * scale, "{name}");
                    }
                    ContactState::Stick | ContactState::Slip => {
                        // Inside the pyramid, whose widest extent is the
                        // cone of radius μ c_n.
                        assert!(
                            c.tangential_impulse.abs() <= limit * (1.0 + 1e-6) + 1e-12,
                            "{name}: friction {} beyond μ c_n = {limit}",
                            c.tangential_impulse
                        );
                    }
                }
            }
        });
    }
}

#[test]
fn a_sliding_ball_rolls_from_t_star_with_nsgs() {
    let mut sim = nsgs(load("ball_roll.ron"), 1e-10);
    let (v0, mu, g, r) = (2.0, sim.params.mu, 9.81, 0.1);
    let t_star = 2.0 * v0 / (7.0 * mu * g);
    let mut rolling_from = None;
    run(&mut sim, 0.6, |sim, report| {
        let Model::Rigid(s) = sim.model() else {
            panic!("rigid")
        };
        let v = s.linear_velocity(&sim.state.v, 0);
        let w = s.angular_velocity(&sim.state.q, &sim.state.v, 0);
        if rolling_from.is_none() && (v.x - w.y * r).abs() < 1e-6 {
            rolling_from = Some(report.t);
        }
        for c in &report.contacts {
            if c.state == ContactState::Slip {
                assert!(c.friction_impulse.x < 0.0, "friction opposes the slip");
            }
        }
    });
    let t = rolling_from.expect("the ball starts rolling");
    assert!(
        (t - t_star).abs() < 0.02 * t_star,
        "rolls from {t}, t* = {t_star}"
    );
    let Model::Rigid(s) = sim.model() else {
        panic!("rigid")
    };
    let speed = s.linear_velocity(&sim.state.v, 0).x;
    assert!(
        (speed - 5.0 * v0 / 7.0).abs() < 0.02 * 5.0 * v0 / 7.0,
        "speed {speed}"
    );
}

/// The incline scene with angle α and friction μ (a box flat on it, in the
/// plane: the two-direction law), solved by NSGS.
fn incline(alpha: f64, mu: f64) -> Scene {
    common::incline(
        alpha,
        mu,
        "solver: nsgs, tolerance: 1e-10, max_iterations: 100000",
    )
}

#[test]
fn a_box_on_an_incline_sticks_or_slides_as_the_closed_form_says() {
    let g = 9.81;
    for (alpha_deg, mu) in [(20.0_f64, 0.5), (30.0, 0.3), (40.0, 0.5)] {
        let alpha = alpha_deg.to_radians();
        let mut sim = Simulation::new(incline(alpha, mu));
        let (x0, y0) = (sim.state.q[0], sim.state.q[1]);
        run(&mut sim, 1.0, |_, _| {});
        let down = -(sim.state.q[0] - x0) * alpha.cos() - (sim.state.q[1] - y0) * alpha.sin();
        if alpha.tan() < mu {
            assert!(
                down.abs() < 1e-6,
                "α = {alpha_deg}°, μ = {mu}: moved {down}"
            );
        } else {
            let expected = g * (alpha.sin() - mu * alpha.cos());
            let t = sim.state.t;
            let measured = 2.0 * down / (t * t);
            assert!(
                (measured - expected).abs() < 0.01 * expected,
                "α = {alpha_deg}°, μ = {mu}: a = {measured}, expected {expected}"
            );
        }
    }
}

#[test]
fn nsgs_reruns_are_identical_bit_for_bit() {
    let mut a = nsgs(load("four_balls.ron"), 1e-8);
    let mut b = nsgs(load("four_balls.ron"), 1e-8);
    run(&mut a, 0.5, |_, _| {});
    run(&mut b, 0.5, |_, _| {});
    let bits = |s: &Simulation| -> Vec<u64> {
        s.state
            .q
            .iter()
            .chain(s.state.v.iter())
            .map(|x| x.to_bits())
            .collect()
    };
    assert_eq!(bits(&a), bits(&b));
}

#[test]
fn the_sweep_limit_is_reported_with_its_own_status() {
    let mut scene = load("box_stack.ron");
    scene.params.solver = SolverKind::Nsgs;
    scene.params.tolerance = 1e-14;
    scene.params.max_iterations = 1;
    let mut sim = Simulation::new(scene);
    let t0 = sim.state.t;
    let report = sim.step().unwrap_or_else(|e| panic!("{e}")).clone();
    assert_eq!(report.status, LcpStatus::SweepLimit);
    assert_eq!(report.sweeps, 1);
    assert_eq!(sim.state.t, t0, "the state is kept");
}

#[test]
fn the_solver_flags_are_checked() {
    let scene = load("four_balls.ron");
    let with = |o: Overrides| scene.params.with_overrides(&scene.model, &o);
    let p = with(Overrides {
        solver: Some("nsgs".into()),
        tolerance: Some(1e-6),
        max_iterations: Some(50),
        ..Overrides::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (p.solver, p.tolerance, p.max_iterations),
        (SolverKind::Nsgs, 1e-6, 50)
    );
    let refused = |o: Overrides, field: &str| {
        let e = with(o).expect_err("refused");
        assert_eq!(e.field, field, "{e}");
    };
    refused(
        Overrides {
            tolerance: Some(1e-6),
            ..Overrides::default()
        },
        "tolerance",
    );
    refused(
        Overrides {
            solver: Some("gauss".into()),
            ..Overrides::default()
        },
        "solver",
    );
    refused(
        Overrides {
            solver: Some("nsgs".into()),
            stepper: Some("anitescu-potra".into()),
            ..Overrides::default()
        },
        "solver",
    );
    refused(
        Overrides {
            solver: Some("nsgs".into()),
            max_iterations: Some(0),
            ..Overrides::default()
        },
        "max_iterations",
    );
    refused(
        Overrides {
            solver: Some("nsgs".into()),
            tolerance: Some(0.0),
            ..Overrides::default()
        },
        "tolerance",
    );
    // A step splits in two halves at most, whatever the solver.
    let p = with(Overrides {
        threads: Some(1),
        ..Overrides::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.solver, SolverKind::Lemke);
    for threads in [0, 3] {
        refused(
            Overrides {
                solver: Some("nsgs".into()),
                threads: Some(threads),
                ..Overrides::default()
            },
            "threads",
        );
    }
    // The circular cone is NSGS's: Lemke solves (29) on the pyramid.
    refused(
        Overrides {
            friction_cone: Some("circular".into()),
            ..Overrides::default()
        },
        "friction_cone",
    );
    refused(
        Overrides {
            solver: Some("nsgs".into()),
            friction_cone: Some("round".into()),
            ..Overrides::default()
        },
        "friction_cone",
    );
    for (solver, cone, expected) in [
        ("nsgs", None, FrictionCone::Circular),
        ("nsgs", Some("pyramid"), FrictionCone::Pyramid),
        ("lemke", Some("pyramid"), FrictionCone::Pyramid),
        ("lemke", None, FrictionCone::Pyramid),
    ] {
        let p = with(Overrides {
            solver: Some(solver.into()),
            friction_cone: cone.map(Into::into),
            ..Overrides::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.cone(), expected, "{solver} {cone:?}");
    }
}

/// `tower.ron`'s twelve boxes each rest on four corners of the box below, a
/// statically indeterminate load that plain Gauss–Seidel moves one contact
/// a sweep: measured over its first second at 1e-8, 2,204 sweeps a step and
/// up to 27,352 in one. The sweeps' Anderson acceleration
/// (`nsgs::DEFAULT_ACCELERATION`) takes the long steps along it (measured:
/// 69 a step, at most 509), so with a sweep limit of 2,000 every step
/// converges to 1e-8, and the tower keeps its gaps and energy and stands.
#[test]
fn nsgs_converges_on_the_tower_s_indeterminate_loads() {
    let mut scene = load("tower.ron");
    scene.params.solver = SolverKind::Nsgs;
    scene.params.tolerance = 1e-8;
    scene.params.max_iterations = 2_000;
    let mut sim = Simulation::new(scene);
    let top = sim.state.q.len() - 7;
    let start = (sim.state.q[top], sim.state.q[top + 1]);
    let mut energy = common::EnergyWatch::new(&sim);
    run(&mut sim, 1.0, |_, r| {
        assert!(r.residual <= 1e-8, "residual {} at t = {}", r.residual, r.t);
        assert!(r.min_gap >= -1e-6, "gap {} at t = {}", r.min_gap, r.t);
        energy.check(r, 1e-9, "tower.ron");
    });
    let drift = (sim.state.q[top] - start.0).hypot(sim.state.q[top + 1] - start.1);
    assert!(drift < 1e-4, "the top box drifted {drift} m sideways");
}
