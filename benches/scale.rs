//! How the Stewart–Trinkle step scales with the number of bodies: piles of N
//! bodies from `contactlab::scene::generate::pile`, one layout for every N,
//! each run from the drop for `CONTACTLAB_SCALE_SECONDS` of simulated time
//! (default 1 s: the drop, the impacts and the settling). For each N it prints
//! the mean time per step, pivots per step, LCP size, real-time factor and the
//! split between geometry, LCP assembly and Lemke; then the growth exponent of
//! the time per step against N, fitted (least squares on log–log) over N ≥ 22.
//! Criterion then times single steps of each settled pile.
//!
//! The runs are deterministic (every run of a size takes the same steps, bit
//! for bit), but this 2-core virtual machine is not: its second core, which
//! the step uses, comes and goes for minutes at a time, and the pile of 22's
//! run is a tenth of a second of wall time. So every size is run
//! `CONTACTLAB_SCALE_RUNS` times (default 3), the sizes taking turns, and a
//! row reports the median run, with every run's time beside it.
//!
//! `CONTACTLAB_SCALE_SIZES=10,22,50` picks the sizes (default 10, 22, 50, 100,
//! 200).

mod common;

use common::{Split, bench_step, env_or, env_sizes, growth_exponent, runs_by_size};
use contactlab::scene::generate;
use contactlab::sim::Simulation;
use criterion::{Criterion, criterion_group, criterion_main};

fn sizes() -> Vec<usize> {
    env_sizes("CONTACTLAB_SCALE_SIZES", &[10, 22, 50, 100, 200])
}

fn seconds() -> f64 {
    env_or("CONTACTLAB_SCALE_SECONDS", |&s: &f64| s > 0.0, 1.0)
}

fn runs() -> usize {
    env_or("CONTACTLAB_SCALE_RUNS", |&r: &usize| r > 0, 3)
}

/// One run from the drop: the simulation where it ended and what its steps
/// cost.
fn run(n: usize, seconds: f64) -> (Simulation, Split) {
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
    (sim, split)
}

/// The row of pile `n`: the median of its `runs` (sorted by time a step),
/// then every run's milliseconds a step.
fn print_row(n: usize, dt: f64, runs: &[Split]) {
    let split = &runs[runs.len() / 2];
    let per_step = split.per_step();
    let each: Vec<String> = runs
        .iter()
        .map(|r| format!("{:.2}", r.per_step() * 1e3))
        .collect();
    eprintln!(
        "| {n} | {:.2} | {:.2} | {:.1} (max {}) | {:.0} | {:.0} / {:.0} / {:.0} % | {} | {} |",
        per_step * 1e3,
        dt / per_step,
        split.mean(split.pivots),
        split.max_pivots,
        split.mean(split.lcp_size),
        split.percent(split.geometry),
        split.percent(split.build),
        split.percent(split.lemke),
        split.unsolved,
        each.join(", "),
    );
}

fn bench(c: &mut Criterion) {
    let (seconds, runs) = (seconds(), runs());
    eprintln!(
        "piles from the drop, {seconds} s simulated, h = 0.005 s, k = 8, μ = 0.5; median of {runs} runs"
    );
    eprintln!(
        "| N | ms/step | real-time factor | pivots/step | LCP size | geometry / assembly / Lemke | unsolved steps | runs, ms/step |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|");
    let sizes = sizes();
    let (measured, settled) = runs_by_size(&sizes, runs, |n| run(n, seconds), Split::per_step);
    let dt = settled.first().map_or(0.005, |(_, sim)| sim.params.dt);
    let mut points = Vec::new();
    for (runs, &n) in measured.iter().zip(&sizes) {
        print_row(n, dt, runs);
        points.push((n, runs[runs.len() / 2].per_step()));
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
