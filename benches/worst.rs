//! The exact solver's worst cases: stacks of boxes resting face to face,
//! where every vertex of the contact LCP is degenerate (docs/solvers.md,
//! "Why the wall ships with k = 4"), at k = 4, 8 and 16 friction edges.
//!
//! Each scene runs from its start under Stewart–Trinkle with Lemke for its
//! duration (or `CONTACTLAB_WORST_SECONDS`, whichever is shorter), under a
//! step budget of `CONTACTLAB_WORST_STEP_SECONDS` (default 10 s; the
//! `--max-step-seconds` of `contactlab run`) and a run budget of
//! `CONTACTLAB_WORST_RUN_SECONDS` of wall time (default 120 s). A run ends
//! at a step not taken (over its budget, or failed), and the row says how
//! far it got. A row reports the simulated time
//! reached, the real-time factor, the mean, 99th-percentile and largest
//! step time, and the mean and largest pivots a step.
//!
//! `CONTACTLAB_WORST_SCENES=wall,tower` picks the scenes (default all) and
//! `CONTACTLAB_WORST_EDGES=4,8` the edge counts (default 4, 8, 16).
//!
//! Then the settling grid piles: `contactlab::scene::generate::grid_pile`
//! of N bodies (spheres and boxes in turn, three staggered layers at 0.22 m
//! pitch, the layout of `grid_pile_200.ron`), each run to t = 0.4 s under
//! the same budgets, and the mean step time over t = 0.2–0.4 s, while the
//! layers land and the boxes settle on each other; then the growth exponent
//! of that time against N. `CONTACTLAB_WORST_GRID=22,50` picks the sizes
//! (default 22, 50, 100, 200); they are the scene `grid_piles` of
//! `CONTACTLAB_WORST_SCENES`.
//!
//! Criterion then times Lemke's dense tableau on Murty's problem with
//! n = 200 to 20,000 pivots, the `contactlab lcp` path whose cost a pivot
//! is O(n²).

mod common;

use common::{env_or, env_sizes, growth_exponent};
use contactlab::lcp::{self, Lcp, LemkeOptions};
use contactlab::scene::{self, Scene, generate};
use contactlab::sim::Simulation;
use criterion::{Criterion, criterion_group, criterion_main};
use std::path::Path;
use std::time::{Duration, Instant};

/// The scenes: a name, the file, and whether its edge count is varied
/// (the piles keep their own k).
const SCENES: &[(&str, &str, bool)] = &[
    ("wall", "scenes/wall.ron", true),
    ("corner_pyramid", "benches/scenes/corner_pyramid.ron", true),
    ("stacked_wall", "benches/scenes/stacked_wall.ron", true),
    ("tower", "scenes/tower.ron", true),
    ("pile", "scenes/pile.ron", true),
    ("grid_pile_200", "benches/scenes/grid_pile_200.ron", false),
];

/// What one run cost, step by step.
struct Run {
    reached: f64,
    wall: Duration,
    steps: Vec<Duration>,
    pivots: Vec<usize>,
    ended: String,
}

/// The settling grid piles' window: from, to (s).
const SETTLING: (f64, f64) = (0.2, 0.4);

fn load(path: &str) -> Scene {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    scene::load(&root.join(path)).expect("the benchmark's scenes load")
}

fn run(scene: Scene, edges: Option<usize>, seconds: f64, step: f64, budget: f64) -> Run {
    let duration = scene.params.duration.min(seconds);
    let mut sim = Simulation::new(scene);
    if let Some(k) = edges {
        sim.params.edges = k;
    }
    sim.step_settings_mut().budget.max_seconds = Some(step);
    let (mut steps, mut pivots) = (Vec::new(), Vec::new());
    let start = Instant::now();
    let mut ended = "complete".to_string();
    while sim.state.t < duration - 0.5 * sim.params.dt {
        if start.elapsed().as_secs_f64() > budget {
            ended = format!("run budget of {budget} s spent");
            break;
        }
        let before = Instant::now();
        match sim.step() {
            Ok(r) => {
                steps.push(before.elapsed());
                pivots.push(r.pivots);
                if !r.status.advances() {
                    // A step not taken: the next would try the same state again.
                    ended = format!("stopped: {:?} in the step to t = {} s", r.status, r.t);
                    break;
                }
            }
            Err(e) => {
                ended = format!("stopped: {e}");
                break;
            }
        }
    }
    Run {
        reached: sim.state.t,
        wall: start.elapsed(),
        steps,
        pivots,
        ended,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn print_row(name: &str, k: &str, r: &Run) {
    let mut sorted = r.steps.clone();
    sorted.sort();
    let n = r.steps.len().max(1) as f64;
    let mean = r.steps.iter().sum::<Duration>().as_secs_f64() / n;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    eprintln!(
        "| {name} | {k} | {:.3} | {:.2} | {:.3} | {:.1} | {:.1} | {:.1} | {:.0} | {} | {} |",
        r.reached,
        r.wall.as_secs_f64(),
        r.reached / r.wall.as_secs_f64().max(1e-12),
        mean * 1e3,
        ms(percentile(&sorted, 0.99)),
        ms(sorted.last().copied().unwrap_or_default()),
        r.pivots.iter().sum::<usize>() as f64 / n,
        r.pivots.iter().max().copied().unwrap_or(0),
        r.ended,
    );
}

fn bench(c: &mut Criterion) {
    let seconds = env_or(
        "CONTACTLAB_WORST_SECONDS",
        |&s: &f64| s > 0.0,
        f64::INFINITY,
    );
    let step = env_or("CONTACTLAB_WORST_STEP_SECONDS", |&s: &f64| s > 0.0, 10.0);
    let budget = env_or("CONTACTLAB_WORST_RUN_SECONDS", |&s: &f64| s > 0.0, 120.0);
    let edges = env_sizes("CONTACTLAB_WORST_EDGES", &[4, 8, 16]);
    let chosen: Option<Vec<String>> = std::env::var("CONTACTLAB_WORST_SCENES")
        .ok()
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect());
    eprintln!(
        "Stewart–Trinkle with Lemke from each scene's start; step budget {step} s, run budget {budget} s"
    );
    eprintln!(
        "| scene | k | reached, s | wall, s | real-time factor | mean ms/step | p99 ms | max ms | pivots/step | max pivots | ended |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|---|---|---|");
    let picked = |name: &str| chosen.as_ref().is_none_or(|c| c.iter().any(|x| x == name));
    for &(name, path, varied) in SCENES {
        if !picked(name) {
            continue;
        }
        if varied {
            for &k in &edges {
                print_row(
                    name,
                    &k.to_string(),
                    &run(load(path), Some(k), seconds, step, budget),
                );
            }
        } else {
            print_row(
                name,
                "scene's",
                &run(load(path), None, seconds, step, budget),
            );
        }
    }
    if picked("grid_piles") {
        settling_grid_piles(step, budget);
    }

    let problem = Lcp::murty(200);
    let options = LemkeOptions {
        max_pivots: Some(20_000),
        ..LemkeOptions::default()
    };
    let mut group = c.benchmark_group("worst");
    group.sample_size(10);
    group.bench_function("murty_200_20000_pivots", |b| {
        b.iter(|| lcp::lemke::solve(&problem, &options).map(|s| s.pivots))
    });
    group.finish();
}

/// The settling grid piles' rows and growth exponent (see the module
/// documentation).
fn settling_grid_piles(step: f64, budget: f64) {
    let sizes = env_sizes("CONTACTLAB_WORST_GRID", &[22, 50, 100, 200]);
    let (from, to) = SETTLING;
    eprintln!(
        "settling grid piles: mean step over t = {from}–{to} s, the scene's k (8), step budget {step} s, run budget {budget} s"
    );
    eprintln!("| N | ms/step, t = {from}–{to} s | pivots/step there | reached, s | ended |");
    eprintln!("|---:|---:|---:|---:|---|");
    let mut points = Vec::new();
    for n in sizes {
        let scene = generate::grid_pile(n).expect("the generated grid piles load");
        let dt = scene.params.dt;
        let r = run(scene, None, to, step, budget);
        // Step i ends at t = (i + 1) dt.
        let window: Vec<usize> = (0..r.steps.len())
            .filter(|&i| (i + 1) as f64 * dt > from + 0.5 * dt)
            .collect();
        let count = window.len().max(1) as f64;
        let ms = window
            .iter()
            .map(|&i| r.steps[i].as_secs_f64() * 1e3)
            .sum::<f64>()
            / count;
        let pivots = window.iter().map(|&i| r.pivots[i]).sum::<usize>() as f64 / count;
        eprintln!(
            "| {n} | {ms:.2} | {pivots:.0} | {:.3} | {} |",
            r.reached, r.ended
        );
        if r.reached >= to - 0.5 * dt {
            points.push((n, ms));
        }
    }
    match growth_exponent(&points, 0) {
        Some(e) => eprintln!("growth exponent over the complete runs: {e:.2}"),
        None => eprintln!("growth exponent: fewer than two complete runs"),
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
