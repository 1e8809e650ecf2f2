//! Runs a scene under its own stepper and solver, one thread, and prints
//! for each 50 ms of simulated time the mean wall time a step, the pivots
//! (mean, sum and largest a step), the solves a step and the largest
//! island; then the run's totals: wall time, pivots, the deepest
//! end-of-step gap, the largest relative energy rise in one step, the
//! steps not solved and the longest step; and the pivots by the kind of
//! Lemke run they were taken in (`lcp::budget::Run`: from the warm starts,
//! cold, on the perturbed problem from the warm starts or cold, the
//! retries). A step not taken ends the run
//! with its reason and a failing exit code. The phases of the wall in
//! `docs/benchmarks.md` are ranges of its windows.
//!
//! ```sh
//! cargo run --release --no-default-features --example phases -- scenes/wall.ron 4 5
//! ```
//!
//! The arguments: the scene, the friction edges k (default the scene's), the
//! simulated seconds (default the scene's duration).

use contactlab::lcp::LcpStatus;
use contactlab::lcp::budget::{self, Run, Watch};
use contactlab::scene;
use contactlab::sim::Simulation;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The binary's allocator (see `src/main.rs`), so that the windows time
/// the steps as `contactlab run` takes them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The simulated time each printed row covers, s.
const WINDOW: f64 = 0.05;

/// One window's sums.
#[derive(Default)]
struct Window {
    steps: usize,
    wall: Duration,
    pivots: usize,
    most_pivots: usize,
    solves: usize,
    largest_island: usize,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || {
        eprintln!("usage: phases SCENE [EDGES] [SECONDS]");
        ExitCode::from(2)
    };
    let Some(path) = args.first() else {
        return usage();
    };
    if args.len() > 3 {
        return usage();
    }
    let scene = match scene::load(Path::new(path)) {
        Ok(scene) => scene,
        Err(e) => {
            eprintln!("phases: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut sim = Simulation::new(scene);
    if let Some(edges) = args.get(1) {
        match edges.parse::<usize>() {
            Ok(k) if k >= 3 => sim.params.edges = k,
            _ => {
                eprintln!("phases: EDGES must be a whole number, at least 3; found {edges:?}");
                return ExitCode::from(2);
            }
        }
    }
    let seconds = match args.get(2).map(|s| s.parse::<f64>()) {
        None => sim.params.duration,
        Some(Ok(s)) if s.is_finite() && s > 0.0 => s,
        Some(_) => {
            eprintln!(
                "phases: SECONDS must be a positive number; found {:?}",
                args[2]
            );
            return ExitCode::from(2);
        }
    };
    let dt = sim.params.dt;
    let steps = (seconds / dt).round() as usize;
    let per_window = ((WINDOW / dt).round() as usize).max(1);
    let (kinetic, potential) = sim.energy();
    let mut previous = kinetic + potential;
    let scale = previous.abs().max(1.0);
    let (mut deepest, mut deepest_t) = (f64::INFINITY, 0.0);
    let (mut rise, mut total, mut unsolved) = (f64::NEG_INFINITY, 0, 0);
    let (mut longest, mut longest_t) = (Duration::ZERO, 0.0);
    let mut window = Window::default();
    let mut stopped = false;
    println!(
        "| t, s | ms/step | pivots/step | pivots | max pivots | solves/step | largest island |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let start = Instant::now();
    let watch = Arc::new(Watch::default());
    for _ in 0..steps {
        let before = Instant::now();
        let report = match budget::watching(watch.clone(), || sim.step()) {
            Ok(report) => report,
            Err(e) => {
                eprintln!("phases: stopped at t = {} s: {e}", sim.state.t);
                stopped = true;
                break;
            }
        };
        let took = before.elapsed();
        if !report.status.advances() {
            let why = sim.failure_message().unwrap_or_default();
            eprintln!("phases: stopped after {:.1} s: {why}", took.as_secs_f64());
            stopped = true;
            break;
        }
        if took > longest {
            (longest, longest_t) = (took, report.t);
        }
        if report.status != LcpStatus::Solved {
            unsolved += 1;
        }
        if report.min_gap < deepest {
            (deepest, deepest_t) = (report.min_gap, report.t);
        }
        let energy = report.kinetic_energy + report.potential_energy;
        rise = rise.max((energy - previous) / scale);
        previous = energy;
        total += report.pivots;
        window.steps += 1;
        window.wall += took;
        window.pivots += report.pivots;
        window.most_pivots = window.most_pivots.max(report.pivots);
        window.solves += report.solves;
        window.largest_island = window.largest_island.max(report.largest_island);
        if window.steps == per_window {
            let n = window.steps as f64;
            println!(
                "| {:.3} | {:.1} | {:.0} | {} | {} | {:.2} | {} |",
                report.t,
                window.wall.as_secs_f64() * 1e3 / n,
                window.pivots as f64 / n,
                window.pivots,
                window.most_pivots,
                window.solves as f64 / n,
                window.largest_island,
            );
            window = Window::default();
        }
    }
    println!(
        "{:.1} s of wall time for t = {:.3} s; {total} pivots; deepest gap {deepest:.2e} m at t = {deepest_t:.3} s; \
         largest energy rise {rise:.2e} (relative); {unsolved} steps not solved; longest step {:.3} s at t = {longest_t:.3} s",
        start.elapsed().as_secs_f64(),
        sim.state.t,
        longest.as_secs_f64(),
    );
    let by_run = watch.pivots_by_run();
    let counted = by_run.iter().sum::<u64>().max(1) as f64;
    let shares: Vec<String> = Run::ALL
        .iter()
        .zip(by_run)
        .map(|(run, p)| format!("{} {p} ({:.1} %)", run.name(), 100.0 * p as f64 / counted))
        .collect();
    println!("pivots by run: {}", shares.join(", "));
    if stopped {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
