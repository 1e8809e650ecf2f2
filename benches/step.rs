//! One Stewart–Trinkle step of each shipped scene, from a state a third into
//! its run (so contacts are active), plus the split of the step's time between
//! contact geometry, LCP assembly and Lemke pivots.

use contactlab::scene;
use contactlab::sim::Simulation;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::path::Path;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("step");
    group.sample_size(10);
    let mut paths: Vec<_> = std::fs::read_dir("scenes")
        .expect("run from the crate root")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    paths.sort();
    for path in paths {
        let name = path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let scene = scene::load(Path::new(&path)).expect("shipped scenes load");
        let mut sim = Simulation::new(scene);
        let third = (sim.params.duration / sim.params.dt / 3.0) as usize;
        for _ in 0..third {
            let _ = sim.step();
        }
        // The time split over the rest of the run.
        let mut probe = sim.clone();
        let (mut geometry, mut build, mut lemke, mut total) = (
            Duration::ZERO,
            Duration::ZERO,
            Duration::ZERO,
            Duration::ZERO,
        );
        let mut sizes = 0;
        let steps = 2 * third.max(1);
        for _ in 0..steps {
            if let Ok(r) = probe.step() {
                geometry += r.timings.geometry;
                build += r.timings.lcp_build;
                lemke += r.timings.lemke;
                total += r.timings.total;
                sizes += r.lcp_size;
            }
        }
        let pct = |d: Duration| 100.0 * d.as_secs_f64() / total.as_secs_f64().max(1e-12);
        eprintln!(
            "{name}: h = {} s, mean step {:.1} µs ({:.1}× real time), mean LCP size {:.0}; geometry {:.0}%, LCP build {:.0}%, Lemke {:.0}%",
            sim.params.dt,
            total.as_secs_f64() * 1e6 / steps as f64,
            sim.params.dt / (total.as_secs_f64() / steps as f64),
            sizes as f64 / steps as f64,
            pct(geometry),
            pct(build),
            pct(lemke)
        );
        group.bench_function(&name, |b| {
            b.iter_batched(
                || sim.clone(),
                |mut s| s.step().map(|r| r.pivots),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
