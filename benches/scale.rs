//! How the Stewart–Trinkle step scales with the number of bodies: piles of N
//! bodies from `contactlab::scene::generate::pile`, one layout for every N,
//! each run from the drop for `CONTACTLAB_SCALE_SECONDS` of simulated time
//! (default 1 s: the drop, the impacts and the settling). For each N it prints
//! the mean time per step, pivots per step, LCP size, real-time factor and the
//! split between geometry, LCP assembly and Lemke; then the growth exponent of
//! the time per step against N, fitted (least squares on log–log) over N ≥ 22.
//! Criterion then times single steps of each settled pile.
//!
//! `CONTACTLAB_SCALE_SIZES=10,22,50` picks the sizes (default 10, 22, 50, 100,
//! 200).

mod common;

use common::{Split, bench_step, growth_exponent};
use contactlab::scene::generate;
use contactlab::sim::Simulation;
use criterion::{Criterion, criterion_group, criterion_main};

fn sizes() -> Vec<usize> {
    std::env::var("CONTACTLAB_SCALE_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![10, 22, 50, 100, 200])
}

fn seconds() -> f64 {
    std::env::var("CONTACTLAB_SCALE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&s: &f64| s > 0.0)
        .unwrap_or(1.0)
}

/// One run from the drop, after printing its row: the simulation where it
/// ended and the mean seconds per step.
fn run(n: usize, seconds: f64) -> (Simulation, f64) {
    let scene = generate::pile(n).expect("generated piles load");
    let mut sim = Simulation::new(scene);
    let steps = (seconds / sim.params.dt).round().max(1.0) as usize;
    let mut split = Split::default();
    for _ in 0..steps {
        match sim.step() {
            Ok(r) => split.add(r),
            Err(e) => panic!("pile {n}: {e}"),
        }
    }
    let per_step = split.per_step();
    eprintln!(
        "| {n} | {:.2} | {:.2} | {:.1} (max {}) | {:.0} | {:.0} / {:.0} / {:.0} % | {} |",
        per_step * 1e3,
        sim.params.dt / per_step,
        split.mean(split.pivots),
        split.max_pivots,
        split.mean(split.lcp_size),
        split.percent(split.geometry),
        split.percent(split.build),
        split.percent(split.lemke),
        split.unsolved,
    );
    (sim, per_step)
}

fn bench(c: &mut Criterion) {
    let seconds = seconds();
    eprintln!("piles from the drop, {seconds} s simulated, h = 0.005 s, k = 8, μ = 0.5");
    eprintln!(
        "| N | ms/step | real-time factor | pivots/step | LCP size | geometry / assembly / Lemke | unsolved steps |"
    );
    eprintln!("|---|---|---|---|---|---|---|");
    let mut points = Vec::new();
    let mut settled = Vec::new();
    for n in sizes() {
        let (sim, per_step) = run(n, seconds);
        points.push((n, per_step));
        settled.push((n, sim));
    }
    match growth_exponent(&points, 22) {
        Some(p) => eprintln!("growth exponent of time per step over N ≥ 22: {p:.2}"),
        None => eprintln!("growth exponent: needs two sizes ≥ 22"),
    }

    let mut group = c.benchmark_group("scale");
    group.sample_size(10);
    for (n, sim) in settled {
        bench_step(&mut group, &format!("pile_{n}"), &sim);
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
