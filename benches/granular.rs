//! How NSGS on Coulomb's circular cone scales with the number of grains:
//! silos of N spheres from `contactlab::scene::granular::silo` (the layout of
//! `scenes/silo.ron`: a bin on a hopper of fixed boxes above a table; the
//! grid of grains grows in height with N), Moreau–Jean at h = 0.005 s, each
//! run from the release for `CONTACTLAB_GRANULAR_SECONDS` of simulated time
//! (default 0.5 s: the fall into the hopper and the first grains through its
//! opening). For each N it prints the mean time per step, the real-time
//! factor, NSGS sweeps per step, the contact unknowns per step and the split
//! between geometry and the contact solve; then the growth exponent of the
//! time per step against N (least squares on log–log). Criterion then times
//! single steps of each silo where its run ended.
//!
//! `CONTACTLAB_GRANULAR_SIZES=500,1000` picks the sizes (default 500, 1000,
//! 2000, 5000); `CONTACTLAB_GRANULAR_THREADS=1` runs the steps on one
//! thread (default 2, `StepSettings::threads`; the results are the same).

mod common;

use common::{Split, bench_step, env_or, env_sizes, growth_exponent};
use contactlab::scene::granular;
use contactlab::sim::Simulation;
use criterion::{Criterion, criterion_group, criterion_main};

fn sizes() -> Vec<usize> {
    env_sizes("CONTACTLAB_GRANULAR_SIZES", &[500, 1000, 2000, 5000])
}

fn threads() -> usize {
    env_or(
        "CONTACTLAB_GRANULAR_THREADS",
        |t: &usize| (1..=2).contains(t),
        2,
    )
}

fn seconds() -> f64 {
    env_or("CONTACTLAB_GRANULAR_SECONDS", |&s: &f64| s > 0.0, 0.5)
}

/// One run from the release, after printing its row: the simulation where
/// it ended and the mean seconds per step.
fn run(n: usize, seconds: f64) -> (Simulation, f64) {
    let scene = granular::silo(n).expect("generated silos load");
    let mut sim = Simulation::new(scene);
    sim.step_settings_mut().threads = threads();
    let steps = (seconds / sim.params.dt).round().max(1.0) as usize;
    let mut split = Split::default();
    let (mut sweeps, mut max_sweeps) = (0usize, 0usize);
    for _ in 0..steps {
        match sim.step() {
            Ok(r) => {
                split.add(r);
                sweeps += r.sweeps;
                max_sweeps = max_sweeps.max(r.sweeps);
            }
            Err(e) => panic!("silo {n}: {e}"),
        }
    }
    let per_step = split.per_step();
    eprintln!(
        "| {n} | {:.2} | {:.3} | {:.1} (max {max_sweeps}) | {:.0} | {:.0} / {:.0} % | {} |",
        per_step * 1e3,
        sim.params.dt / per_step,
        split.mean(sweeps),
        split.mean(split.lcp_size),
        split.percent(split.geometry),
        split.percent(split.lemke),
        split.unsolved,
    );
    (sim, per_step)
}

fn bench(c: &mut Criterion) {
    let seconds = seconds();
    eprintln!(
        "silos from the release, {seconds} s simulated, moreau-jean, nsgs on the circular cone, h = 0.005 s, μ = 0.5, tolerance 1e-3, {} thread(s)",
        threads()
    );
    eprintln!(
        "| N | ms/step | real-time factor | sweeps/step | (29) unknowns | geometry / solve | unsolved steps |"
    );
    eprintln!("|---|---|---|---|---|---|---|");
    let mut points = Vec::new();
    let mut ended = Vec::new();
    for n in sizes() {
        let (sim, per_step) = run(n, seconds);
        points.push((n, per_step));
        ended.push((n, sim));
    }
    match growth_exponent(&points, 0) {
        Some(p) => eprintln!("growth exponent of time per step over N: {p:.2}"),
        None => eprintln!("growth exponent: needs two sizes"),
    }

    let mut group = c.benchmark_group("granular");
    group.sample_size(10);
    for (n, sim) in ended {
        bench_step(&mut group, &format!("silo_{n}"), &sim);
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
