//! What a failed step says: which step (index and t), which stepper, and the
//! likely cause as far as the code knows it.

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

/// The solver's own reason no longer blames an explicit scheme for every
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
    let scene = scene::load(Path::new("scenes/chain.ron")).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(scene);
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
