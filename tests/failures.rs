//! What a failed step says: which step (index and t), which stepper, and the
//! likely cause as far as the code knows it.

mod common;

use contactlab::lcp::LcpStatus;
use contactlab::scene;
use contactlab::sim::{Simulation, StepFailure};
use std::path::Path;

/// x'' = 1e12 x: unstable, finite inputs, every LCP trivially solved, and the
/// state overflows f64 within a few dozen steps.
const UNSTABLE: &str = r#"Scene(
    name: "unstable",
    params: (dt: 0.01, duration: 1.0),
    system: Linear((
        coordinates: ["x"],
        mass: [[1.0]],
        stiffness: [[-1e12]],
        initial_position: [1.0],
        initial_velocity: [0.0],
    )),
)"#;

#[test]
fn an_overflowing_state_names_the_value_and_keeps_the_last_state() {
    let scene = scene::parse(UNSTABLE, Path::new("unstable.ron")).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(scene);
    for _ in 0..100 {
        let before = sim.state.clone();
        let status = sim.step().expect("valid parameters").status;
        if status == LcpStatus::Solved {
            assert!(sim.failure.is_none());
            assert!(sim.failure_message().is_none());
            continue;
        }
        assert_eq!(status, LcpStatus::NumericalFailure);
        assert_eq!(sim.state, before, "the last finite state is kept");
        assert!(matches!(sim.failure, Some(StepFailure::Overflow { .. })));
        let message = sim.failure_message().expect("a message");
        let step = sim.steps + 1;
        assert!(
            message.starts_with(&format!("step {step} at t = ")),
            "{message}"
        );
        assert!(message.contains("stepper stewart-trinkle"), "{message}");
        assert!(
            message.contains("of coordinate `x` overflowed")
                || message.contains("the kinetic energy overflowed"),
            "{message}"
        );
        // Stewart–Trinkle takes the stiffness explicitly: that is the cause.
        assert!(message.contains("explicitly"), "{message}");
        return;
    }
    panic!("x'' = 1e12 x did not overflow in 100 steps of 0.01 s");
}

/// The solver's own reason does not blame an explicit scheme for a
/// numerical failure (the simulation says so only when it is the cause).
#[test]
fn the_lcp_reasons_say_only_what_the_solver_knows() {
    for status in [
        LcpStatus::RayTermination,
        LcpStatus::MaxPivots,
        LcpStatus::NumericalFailure,
    ] {
        assert!(!status.reason().contains("explicit"), "{status}");
        assert!(!status.reason().contains("stability"), "{status}");
    }
}

/// A failed solve in a scene with explicit spring–dampers says so, with the
/// solver's status, pivots and size.
#[test]
fn a_failed_solve_names_its_step_stepper_and_cause() {
    let mut sim = common::load_simulation("chain.ron");
    sim.params.stepper = contactlab::params::StepperKind::EulerLcp;
    for _ in 0..100 {
        if sim.step().expect("valid").status == LcpStatus::Solved {
            continue;
        }
        let message = sim.failure_message().expect("a message");
        assert!(
            message.starts_with(&format!("step {} at t = ", sim.steps + 1)),
            "{message}"
        );
        assert!(message.contains("stepper euler-lcp"), "{message}");
        assert!(message.contains(" pivots on "), "{message}");
        assert!(message.contains("explicitly"), "{message}");
        return;
    }
    panic!("euler-lcp on the chain is documented to blow up within 0.02 s");
}

/// Stewart–Trinkle with Lemke promises no end gap below −1e-6 m
/// (`StepReport::gap_bound`); its fixed-point iterations (§3.6) reach it on
/// every shipped scene at its own h, but not on `pile.ron` at h = 0.03 s,
/// where a box lands on a sphere from a step of 3 cm (the end-point cuts
/// hold that step) and the step after, two spheres, ends 2.4 mm deep. With
/// the step's halving turned off
/// (`split_depth` 0) it is reported, as not taken: the state is kept, the
/// message names the bodies, the depth, the bound and the remedy, and every
/// step taken before ended within the bound.
#[test]
fn a_step_past_stewart_trinkles_gap_bound_is_reported_not_taken() {
    let mut sim = common::load_simulation("pile.ron");
    sim.params.dt = 0.03;
    sim.step_settings_mut().split_depth = 0;
    for _ in 0..100 {
        let before = sim.state.clone();
        let report = sim.step().expect("valid parameters").clone();
        assert_eq!(report.gap_bound, Some(-1e-6));
        if report.status == LcpStatus::Solved {
            assert!(report.min_gap >= -1e-6, "taken at {:e} m", report.min_gap);
            continue;
        }
        assert_eq!(sim.state, before, "the step is not taken");
        let Some(StepFailure::Penetration { gap, bound, pair }) = &sim.failure else {
            panic!("{:?}: {:?}", sim.failure, sim.failure_message());
        };
        assert!(*gap < -1e-6 && *bound == -1e-6, "{gap} {bound}");
        assert!(pair.starts_with("bod"), "{pair}");
        let message = sim.failure_message().expect("a message");
        assert!(message.contains("stepper stewart-trinkle"), "{message}");
        assert!(message.contains(pair.as_str()), "{message}");
        assert!(message.contains("bound of 1.0e-6 m"), "{message}");
        assert!(message.contains("lower --dt"), "{message}");
        return;
    }
    panic!("pile.ron at h = 0.03 s kept within 1e-6 m for 3 s");
}

/// With the default settings the same steps are taken again as halves
/// (`StepSettings::split_depth`), each held to the bound: `pile.ron` at h =
/// 0.03 s runs its 3 s, every step within −1e-6 m, the energy never rising
/// (the bound of §3.3 holds for each substep), on the time grid of h, and
/// the steps that were split say so.
#[test]
fn a_step_past_the_gap_bound_is_taken_again_in_halves() {
    let mut sim = common::load_simulation("pile.ron");
    sim.params.dt = 0.03;
    let mut energy = sim.energy().0 + sim.energy().1;
    let mut split = 0;
    for k in 1..=100 {
        let report = sim.step().expect("valid parameters").clone();
        assert_eq!(
            report.status,
            LcpStatus::Solved,
            "step {k}: {:?}",
            sim.failure_message()
        );
        assert!(
            report.min_gap >= -1e-6,
            "step {k} ended {:e} m deep",
            report.min_gap
        );
        let now = report.kinetic_energy + report.potential_energy;
        assert!(
            now - energy <= 1e-9 * energy.abs(),
            "step {k}: {energy} -> {now}"
        );
        energy = now;
        assert!(
            (report.t - k as f64 * 0.03).abs() < 1e-12,
            "step {k} ends at {}",
            report.t
        );
        assert_eq!(report.t, sim.state.t);
        if report.substeps > 1 {
            split += 1;
            // The attempt at h counts too.
            assert!(report.solves > report.substeps, "{} solves", report.solves);
        }
    }
    assert!(
        split > 0,
        "no step was split: the test no longer tests halving"
    );
    assert_eq!(sim.steps, 100);
}

/// The velocity-level schemes and NSGS state no position bound: a step of
/// theirs is never refused for its depth.
#[test]
fn only_stewart_trinkle_with_lemke_states_a_gap_bound() {
    use contactlab::params::{SolverKind, StepperKind};
    let scene = common::load_scene("four_balls.ron");
    for stepper in StepperKind::ALL {
        for solver in SolverKind::ALL {
            if solver == SolverKind::Nsgs && !stepper.supports_nsgs() {
                continue;
            }
            let mut sim = Simulation::new(scene.clone());
            sim.params.stepper = stepper;
            sim.params.solver = solver;
            let report = sim.step().expect("valid parameters");
            let stated = stepper == StepperKind::StewartTrinkle && solver == SolverKind::Lemke;
            assert_eq!(report.gap_bound.is_some(), stated, "{stepper} {solver:?}");
        }
    }
}
