//! The Moreau–Jean stepper (Glocker & Studer 2005 §5–6) against closed forms,
//! the woodpecker's published limit cycle, Painlevé's paradox and the energy
//! inequality of Newton's impact law.

use contactlab::lcp::LcpStatus;
use contactlab::scene::{self, Scene};
use contactlab::sim::Simulation;
use contactlab::stepper::StepReport;
use std::path::Path;

fn load(name: &str) -> Scene {
    scene::load(&Path::new("scenes").join(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a simulation for `duration` seconds, handing each report to `visit`;
/// every step's LCP must be solved.
fn run(sim: &mut Simulation, duration: f64, mut visit: impl FnMut(&Simulation, &StepReport)) {
    let steps = (duration / sim.params.dt - 1e-9).ceil() as usize;
    for _ in 0..steps {
        let report = sim.step().expect("valid parameters").clone();
        assert_eq!(report.status, LcpStatus::Solved, "t = {}", report.t);
        visit(sim, &report);
    }
}

/// What the woodpecker does after its transient.
#[derive(Debug)]
struct Woodpecker {
    /// Times the bird passes φ_S = 0 swinging back (away from the pole), s.
    sections: Vec<f64>,
    /// y at those times, m.
    heights: Vec<f64>,
    /// Times a beak impact starts (the beak contact gets an impulse again).
    beak_impacts: Vec<f64>,
    /// Range of φ_S, rad.
    angle_range: (f64, f64),
}

fn woodpecker(h: f64, duration: f64) -> Woodpecker {
    let mut scene = load("woodpecker.ron");
    scene.params.dt = h;
    let mut sim = Simulation::new(scene);
    let mut out = Woodpecker {
        sections: Vec::new(),
        heights: Vec::new(),
        beak_impacts: Vec::new(),
        angle_range: (f64::INFINITY, f64::NEG_INFINITY),
    };
    let mut beak_before = false;
    let mut previous = sim.state.clone();
    run(&mut sim, duration, |sim, report| {
        let beak = report
            .contacts
            .iter()
            .any(|c| c.id.a == 0 && c.normal_impulse > 0.0);
        let (phi_s, before) = (sim.state.q[2], previous.q[2]);
        if report.t > 0.1 {
            if beak && !beak_before {
                out.beak_impacts.push(report.t);
            }
            if before >= 0.0 && phi_s < 0.0 {
                // Interpolate the crossing within the step.
                let s = before / (before - phi_s);
                let t = previous.t + s * (sim.state.t - previous.t);
                out.sections.push(t);
                out.heights
                    .push(previous.q[0] + s * (sim.state.q[0] - previous.q[0]));
            }
            out.angle_range.0 = out.angle_range.0.min(phi_s);
            out.angle_range.1 = out.angle_range.1.max(phi_s);
        }
        beak_before = beak;
        previous = sim.state.clone();
    });
    out
}

fn check_woodpecker(h: f64) {
    let w = woodpecker(h, 1.5);
    println!("h = {h}: {w:?}");
    let periods: Vec<f64> = w.sections.windows(2).map(|p| p[1] - p[0]).collect();
    let descents: Vec<f64> = w.heights.windows(2).map(|p| p[0] - p[1]).collect();
    println!("periods {periods:?}\ndescents {descents:?}");
    assert!(periods.len() >= 8, "{periods:?}");
    let published = 0.1452;
    for p in &periods {
        assert!(
            (p - published).abs() < 0.02 * published,
            "period {p} s, published {published} s"
        );
    }
    let mean_descent = descents.iter().sum::<f64>() / descents.len() as f64;
    assert!(mean_descent > 0.0, "the sleeve descends: {descents:?}");
    for d in &descents {
        assert!(
            (d - mean_descent).abs() < 0.02 * mean_descent,
            "descent {d} m per period, mean {mean_descent}"
        );
    }
    for pair in w.sections.windows(2) {
        let hits = w
            .beak_impacts
            .iter()
            .filter(|&&t| t >= pair[0] && t < pair[1])
            .count();
        assert_eq!(hits, 1, "beak impacts in [{}, {})", pair[0], pair[1]);
    }
    let (lo, hi) = w.angle_range;
    assert!(lo >= -0.6 && hi <= 0.15, "phi_S in [{lo}, {hi}]");
}

#[test]
fn woodpecker_limit_cycle_at_h_1e_4() {
    check_woodpecker(1e-4);
}
