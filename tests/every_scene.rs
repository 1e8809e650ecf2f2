//! Every shipped scene under every stepper: a stepper the scene cannot take
//! (joints under a scheme without them) is refused before the first step
//! with the parameter and the reason; every other pairing runs the scene's
//! whole duration with every LCP solved, except the pairings listed in
//! [`expected_failure`], which must stop with a message that names the step,
//! the stepper and the cause. Minutes of piles under Lemke: in the long
//! suite.

mod common;

use contactlab::lcp::LcpStatus;
use contactlab::params::StepperKind;
use contactlab::scene;
use contactlab::sim::Simulation;

/// Pairings that do not run through, and what their failure message must
/// name.
fn expected_failure(scene: &str, stepper: StepperKind) -> Option<&'static str> {
    match (scene, stepper) {
        // The scene's point: its joint springs (10⁶ N/m on 0.2 kg) are past
        // the explicit scheme's stability limit at h = 5 ms.
        ("chain.ron", StepperKind::EulerLcp) => Some("stability limit"),
        _ => None,
    }
}

/// Pairings left out: too slow even for the long suite, or run at length
/// elsewhere.
fn skipped(path: &std::path::Path, stepper: StepperKind) -> bool {
    // The granular scenes, 1,000–2,000 grains for seconds: minutes of NSGS
    // sweeps, and hours under Lemke. tests/stepper.rs runs their first steps
    // as shipped (Moreau–Jean with NSGS) and tests/granular.rs their physics
    // on a 150-grain silo.
    if common::large_scene(path).is_some_and(|bodies| bodies >= common::GRANULAR) {
        return true;
    }
    match path.file_name().and_then(|n| n.to_str()).unwrap_or("") {
        // Twelve stacked boxes for 10 s: tests/piles.rs runs Stewart–Trinkle
        // on it with its guarantees.
        "tower.ron" => stepper == StepperKind::StewartTrinkle,
        // Forty bricks hit by a ball: the impact's steps take seconds each
        // under Lemke (about ten minutes for the wall's 5 s in release).
        // tests/piles.rs runs it under Stewart–Trinkle with its guarantees.
        "wall.ron" => true,
        _ => false,
    }
}

#[test]
#[ignore = "long suite: cargo test --release --no-default-features -- --ignored"]
fn every_shipped_scene_runs_under_every_stepper_it_accepts() {
    let paths = common::shipped_scenes();
    let (mut runs, mut refused) = (0, 0);
    for path in &paths {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let scene = scene::load(path).unwrap_or_else(|e| panic!("{e}"));
        for stepper in StepperKind::ALL {
            if skipped(path, stepper) {
                continue;
            }
            let mut sim = Simulation::new(scene.clone());
            sim.params.stepper = stepper;
            if let Err(e) = sim.check_params() {
                assert!(
                    scene.model.has_joints() && !stepper.supports_joints(),
                    "{name} {stepper}: refused: {e}"
                );
                assert!(e.to_string().contains("joint"), "{name} {stepper}: {e}");
                refused += 1;
                continue;
            }
            let duration = sim.params.duration;
            let steps = (duration / sim.params.dt - 1e-9).ceil() as usize;
            let mut stopped = None;
            for step in 1..=steps {
                let report = sim
                    .step()
                    .unwrap_or_else(|e| panic!("{name} {stepper}: {e}"));
                if report.status != LcpStatus::Solved {
                    stopped = Some((step, sim.failure_message().unwrap_or_default()));
                    break;
                }
            }
            match (stopped, expected_failure(name, stepper)) {
                (None, None) => runs += 1,
                (Some((step, message)), Some(cause)) => {
                    assert!(
                        message.contains(&format!("step {step}"))
                            && message.contains(stepper.name())
                            && message.contains(cause),
                        "{name} {stepper}: {message}"
                    );
                }
                (Some((step, message)), None) => {
                    panic!("{name} {stepper}: stopped at step {step} of {steps}: {message}")
                }
                (None, Some(cause)) => {
                    panic!("{name} {stepper}: ran through, expected to stop ({cause})")
                }
            }
        }
    }
    println!("{runs} runs through, {refused} refused");
    assert!(runs >= 50, "{runs} runs");
}
