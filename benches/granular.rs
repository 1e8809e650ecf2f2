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
//! single steps of each silo where its run ended, and one search for its
//! contacts there (`contacts_N`: the broad phase, the narrow phase and the
//! contacts' Jacobians at the static margin, one thread; `contacts_N_two_threads`
//! the same on two), the broad phase alone (`broad_N`: the candidate
//! pairs, one thread), and the contacts' identities and gaps without their
//! Jacobians (`gaps_N`: the broad and narrow phases, one thread, as a step
//! checks its end).
//!
//! The runs are deterministic, but this 2-core virtual machine is not: the
//! time of one run of the 1,000-grain silo moves by a third between runs
//! minutes apart. So every size is run `CONTACTLAB_GRANULAR_RUNS` times
//! (default 3), the sizes taking turns, and a row reports the median run,
//! with every run's time beside it; the exponent is fitted to the medians.
//!
//! `CONTACTLAB_GRANULAR_SIZES=500,1000` picks the sizes (default 500, 1000,
//! 2000, 5000); `CONTACTLAB_GRANULAR_THREADS=1` runs the steps on one
//! thread (default 2, `StepSettings::threads`; the results are the same).
//!
//! Then a heap in a box at the lab's solver defaults (NSGS's tolerance and
//! sweep limit as a scene that sets neither gets them):
//! `CONTACTLAB_GRANULAR_HEAP` grains (default 1,500) from
//! `contactlab::scene::granular::heap`, `CONTACTLAB_GRANULAR_HEAP_SECONDS`
//! from the release (default 1 s: the drop and the heap forming), the same
//! number of runs. Its row adds the steps that stopped at the sweep limit,
//! their largest residual and the deepest overlap of the run as a share of
//! the mean grain radius.

mod common;

use common::{Split, bench_step, env_or, env_sizes, growth_exponent, runs_by_size};
use contactlab::collision::broad_phase::{
    BroadPhase, SweepSpace, candidate_pairs_into, world_boxes_into,
};
use contactlab::collision::pose::poses_into;
use contactlab::collision::{ContactSet, Search, find_contacts, find_gaps};
use contactlab::lcp::LcpStatus;
use contactlab::model::Model;
use contactlab::scene::{Scene, granular};
use contactlab::sim::Simulation;
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};

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

fn runs() -> usize {
    env_or("CONTACTLAB_GRANULAR_RUNS", |&r: &usize| r > 0, 3)
}

/// What one run from the release cost, and its sweeps; the largest
/// residual of a step that stopped at the sweep limit (0 if none did) and
/// the deepest end gap.
struct Run {
    split: Split,
    sweeps: usize,
    max_sweeps: usize,
    residual: f64,
    min_gap: f64,
}

/// One run of `scene` (named `name` in a failure) from the release: the
/// simulation where it ended and what its steps cost.
fn run_scene(scene: Scene, seconds: f64, name: &str) -> (Simulation, Run) {
    let mut sim = Simulation::new(scene);
    sim.step_settings_mut().threads = threads();
    let steps = (seconds / sim.params.dt).round().max(1.0) as usize;
    let mut run = Run {
        split: Split::default(),
        sweeps: 0,
        max_sweeps: 0,
        residual: 0.0,
        min_gap: f64::INFINITY,
    };
    for _ in 0..steps {
        match sim.step() {
            Ok(r) => {
                run.split.add(r);
                run.sweeps += r.sweeps;
                run.max_sweeps = run.max_sweeps.max(r.sweeps);
                if r.status != LcpStatus::Solved {
                    run.residual = run.residual.max(r.residual);
                }
                run.min_gap = run.min_gap.min(r.min_gap);
            }
            Err(e) => panic!("{name}: {e}"),
        }
    }
    (sim, run)
}

/// A silo of `n` grains from the release.
fn run(n: usize, seconds: f64) -> (Simulation, Run) {
    let scene = granular::silo(n).expect("generated silos load");
    run_scene(scene, seconds, &format!("silo {n}"))
}

/// The row of silo `n`: the median of its `runs` (sorted by time a step),
/// then every run's milliseconds a step.
fn print_row(n: usize, dt: f64, runs: &[Run]) {
    let Run {
        split,
        sweeps,
        max_sweeps,
        ..
    } = &runs[runs.len() / 2];
    let per_step = split.per_step();
    let each: Vec<String> = runs
        .iter()
        .map(|r| format!("{:.2}", r.split.per_step() * 1e3))
        .collect();
    eprintln!(
        "| {n} | {:.2} | {:.3} | {:.1} (max {max_sweeps}) | {:.0} | {:.0} / {:.0} % | {} | {} |",
        per_step * 1e3,
        dt / per_step,
        split.mean(*sweeps),
        split.mean(split.lcp_size),
        split.percent(split.geometry),
        split.percent(split.lemke),
        split.unsolved,
        each.join(", "),
    );
}

fn heap_size() -> usize {
    env_or("CONTACTLAB_GRANULAR_HEAP", |&n: &usize| n > 0, 1500)
}

fn heap_seconds() -> f64 {
    env_or("CONTACTLAB_GRANULAR_HEAP_SECONDS", |&s: &f64| s > 0.0, 1.0)
}

/// The heap's row: its median run, as [`print_row`], with the steps at the
/// sweep limit, their largest residual and the deepest overlap in % of the
/// mean grain radius.
fn heap_rows(runs: usize) {
    let (n, seconds) = (heap_size(), heap_seconds());
    eprintln!(
        "a heap of {n} grains dropped into a box, {seconds} s simulated, moreau-jean, nsgs at the solver defaults, {} thread(s); median of {runs} runs",
        threads()
    );
    eprintln!(
        "| N | ms/step | real-time factor | sweeps/step | steps at the sweep limit | largest residual there | deepest overlap, % of r | runs, ms/step |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|");
    let mut all: Vec<(f64, Run)> = (0..runs)
        .map(|_| {
            let scene = granular::heap(n).expect("generated heaps load");
            let (sim, run) = run_scene(scene, seconds, &format!("heap {n}"));
            (sim.params.dt, run)
        })
        .collect();
    all.sort_by(|a, b| a.1.split.per_step().total_cmp(&b.1.split.per_step()));
    let each: Vec<String> = all
        .iter()
        .map(|(_, r)| format!("{:.2}", r.split.per_step() * 1e3))
        .collect();
    let (dt, median) = &all[all.len() / 2];
    let split = &median.split;
    let per_step = split.per_step();
    eprintln!(
        "| {n} | {:.2} | {:.3} | {:.1} (max {}) | {} | {:.2e} | {:.2} | {} |",
        per_step * 1e3,
        dt / per_step,
        split.mean(median.sweeps),
        median.max_sweeps,
        split.unsolved,
        median.residual,
        100.0 * (-median.min_gap).max(0.0) / granular::RADIUS,
        each.join(", "),
    );
}

/// One search for the contacts of `sim` where it stands, as a step's
/// search at q^M makes it (the static margin, the circular cone's
/// directions), on `threads` threads, into a kept set. Two threads are
/// used as a step uses them: when the last measurement
/// (`pair_thread::pays`, NSGS's first sweeps of the runs before) found them
/// faster than one.
fn bench_contacts(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    sim: &Simulation,
    threads: usize,
) {
    let margin = sim.step_settings().static_margin(sim.model());
    let edges = sim.params.friction_edges();
    let mut set = ContactSet::default();
    let mut search = || {
        find_contacts(
            sim.model(),
            &sim.state.q,
            edges,
            margin,
            &mut set,
            Search::on(threads),
            &mut Vec::new(),
        );
        set.len()
    };
    eprintln!("{name}: {} contacts at t = {:.2} s", search(), sim.state.t);
    group.bench_function(name, |b| b.iter(&mut search));
}

/// One search for the identities and gaps of `sim`'s contacts where it
/// stands, without their Jacobians (the search that checks a step's end),
/// at the static margin, one thread.
fn bench_gaps(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, sim: &Simulation) {
    let margin = sim.step_settings().static_margin(sim.model());
    let mut broad = BroadPhase::default();
    let mut out = Vec::new();
    let mut search = || {
        find_gaps(
            sim.model(),
            &sim.state.q,
            margin,
            &mut out,
            &mut broad,
            Search::on(1),
        );
        out.len()
    };
    eprintln!("{name}: {} gaps", search());
    group.bench_function(name, |b| b.iter(&mut search));
}

/// The broad phase alone where the run ended: the candidate body pairs of
/// the bodies' world boxes at the static margin, by the sweep in rows of
/// cells, one thread.
fn bench_broad(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, sim: &Simulation) {
    let Model::Rigid(system) = sim.model() else {
        return;
    };
    let q = &sim.state.q;
    let margin = sim.step_settings().static_margin(sim.model());
    let (mut poses, mut boxes) = (Vec::new(), Vec::new());
    poses_into(system, q, &mut poses);
    world_boxes_into(system, &poses, &mut boxes);
    let mut space = SweepSpace::default();
    let mut pairs = Vec::new();
    let mut sweep = || {
        candidate_pairs_into(&boxes, margin, system.dimension, &mut space, &mut pairs, 1);
        pairs.len()
    };
    eprintln!(
        "{name}: {} candidate pairs of {} bodies",
        sweep(),
        boxes.len()
    );
    group.bench_function(name, |b| b.iter(&mut sweep));
}

fn bench(c: &mut Criterion) {
    let (seconds, runs) = (seconds(), runs());
    eprintln!(
        "silos from the release, {seconds} s simulated, moreau-jean, nsgs on the circular cone, h = 0.005 s, μ = 0.5, tolerance 1e-3, {} thread(s); median of {runs} runs",
        threads()
    );
    eprintln!(
        "| N | ms/step | real-time factor | sweeps/step | (29) unknowns | geometry / solve | unsolved steps | runs, ms/step |"
    );
    eprintln!("|---|---|---|---|---|---|---|---|");
    let sizes = sizes();
    let (measured, ended) = runs_by_size(
        &sizes,
        runs,
        |n| run(n, seconds),
        |r: &Run| r.split.per_step(),
    );
    let dt = ended.first().map_or(0.005, |(_, sim)| sim.params.dt);
    let mut points = Vec::new();
    for (runs, &n) in measured.iter().zip(&sizes) {
        print_row(n, dt, runs);
        points.push((n, runs[runs.len() / 2].split.per_step()));
    }
    match growth_exponent(&points, 0) {
        Some(p) => eprintln!("growth exponent of time per step over N: {p:.2}"),
        None => eprintln!("growth exponent: needs two sizes"),
    }

    heap_rows(runs);

    let mut group = c.benchmark_group("granular");
    group.sample_size(10);
    for (n, sim) in ended {
        bench_step(&mut group, &format!("silo_{n}"), &sim);
        bench_contacts(&mut group, &format!("contacts_{n}"), &sim, 1);
        if threads() >= 2 {
            bench_contacts(&mut group, &format!("contacts_{n}_two_threads"), &sim, 2);
        }
        bench_broad(&mut group, &format!("broad_{n}"), &sim);
        bench_gaps(&mut group, &format!("gaps_{n}"), &sim);
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
