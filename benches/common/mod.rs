//! What the step benchmarks share: the per-run sums of a step report's
//! timings, sizes and pivots, and the criterion timing of one step.

use contactlab::lcp::LcpStatus;
use contactlab::sim::Simulation;
use contactlab::stepper::StepReport;
use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup};
use std::time::{Duration, Instant};

/// The binary's allocator (see `src/main.rs`), so that the benchmarks time
/// the step as `contactlab run` and the viewer take it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Sums over the steps of a run.
#[allow(dead_code)] // not every benchmark sums its steps
#[derive(Debug, Default)]
pub struct Split {
    pub steps: usize,
    pub geometry: Duration,
    pub build: Duration,
    pub lemke: Duration,
    pub total: Duration,
    pub lcp_size: usize,
    pub pivots: usize,
    pub max_pivots: usize,
    pub unsolved: usize,
}

#[allow(dead_code)]
impl Split {
    /// Adds one step's report.
    pub fn add(&mut self, r: &StepReport) {
        self.steps += 1;
        self.geometry += r.timings.geometry;
        self.build += r.timings.lcp_build;
        self.lemke += r.timings.lemke;
        self.total += r.timings.total;
        self.lcp_size += r.lcp_size;
        self.pivots += r.pivots;
        self.max_pivots = self.max_pivots.max(r.pivots);
        if r.status != LcpStatus::Solved {
            self.unsolved += 1;
        }
    }

    /// Mean wall time of a step, s.
    pub fn per_step(&self) -> f64 {
        self.total.as_secs_f64() / self.steps.max(1) as f64
    }

    /// Mean of a per-step count.
    pub fn mean(&self, sum: usize) -> f64 {
        sum as f64 / self.steps.max(1) as f64
    }

    /// `part` as a percentage of the total time.
    pub fn percent(&self, part: Duration) -> f64 {
        100.0 * part.as_secs_f64() / self.total.as_secs_f64().max(1e-12)
    }
}

/// Times one step of `sim` (from a fresh clone each time).
#[allow(dead_code)]
pub fn bench_step(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, sim: &Simulation) {
    group.bench_function(name, |b| {
        b.iter_batched(
            || sim.clone(),
            |mut s| s.step().map(|r| r.pivots),
            BatchSize::SmallInput,
        )
    });
}

/// Steps a run takes in a row in [`bench_run`].
pub const RUN: u64 = 20;

/// Times the steps of `sim` as a run takes them: each of criterion's
/// iterations is one step, taken in runs of [`RUN`] consecutive steps from
/// a fresh clone of `sim` (the clone untimed). A step reuses what the step
/// before it left (`solve::memo` carries the islands that come back bit
/// for bit, such as bodies at rest), which a step from a fresh clone of the
/// same state never finds; [`bench_step`] times that first step alone.
#[allow(dead_code)]
pub fn bench_run(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, sim: &Simulation) {
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let steps = left.min(RUN);
                let mut run = sim.clone();
                let start = Instant::now();
                for _ in 0..steps {
                    std::hint::black_box(run.step().map(|r| r.pivots).ok());
                }
                total += start.elapsed();
                left -= steps;
            }
            total
        })
    });
}

/// Least-squares slope of ln t against ln N over the points (N, t) with
/// N ≥ `smallest`; `None` with fewer than two. (Not every benchmark fits one.)
#[allow(dead_code)]
pub fn growth_exponent(points: &[(usize, f64)], smallest: usize) -> Option<f64> {
    let points: Vec<(f64, f64)> = points
        .iter()
        .filter(|&&(n, t)| n >= smallest && t > 0.0)
        .map(|&(n, t)| ((n as f64).ln(), t.ln()))
        .collect();
    if points.len() < 2 {
        return None;
    }
    let count = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / count;
    let my = points.iter().map(|p| p.1).sum::<f64>() / count;
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// The value of the environment variable `name` when it parses and `valid`
/// accepts it, else `default`.
#[allow(dead_code)] // not every benchmark reads the environment
pub fn env_or<T: std::str::FromStr>(name: &str, valid: impl Fn(&T) -> bool, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(valid)
        .unwrap_or(default)
}

/// The comma-separated sizes in the environment variable `name`, else
/// `default`.
#[allow(dead_code)] // not every benchmark reads the environment
pub fn env_sizes(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| default.to_vec())
}

/// Every size's runs, `runs` of each, the sizes taking turns: the runs are
/// deterministic (every run of a size takes the same steps, bit for bit),
/// but this 2-core virtual machine's speed comes and goes for minutes, and
/// taking turns lets a slow minute fall on one run of several sizes rather
/// than on every run of one. Returns each size's runs sorted by
/// `per_step` (the median is the middle one), and the simulations where
/// the first round's runs ended.
#[allow(dead_code)] // not every benchmark runs sizes
pub fn runs_by_size<R>(
    sizes: &[usize],
    runs: usize,
    mut run: impl FnMut(usize) -> (Simulation, R),
    per_step: impl Fn(&R) -> f64,
) -> (Vec<Vec<R>>, Vec<(usize, Simulation)>) {
    let mut measured: Vec<Vec<R>> = sizes.iter().map(|_| Vec::new()).collect();
    let mut ended = Vec::new();
    for round in 0..runs {
        for (k, &n) in sizes.iter().enumerate() {
            let (sim, result) = run(n);
            measured[k].push(result);
            if round == 0 {
                ended.push((n, sim));
            }
        }
    }
    for runs in &mut measured {
        runs.sort_by(|a, b| per_step(a).total_cmp(&per_step(b)));
    }
    (measured, ended)
}
