//! The steps of each shipped scene from a state a third into its run (so
//! contacts are active), taken as a run takes them (`common::bench_run`:
//! runs of 20 consecutive steps from clones of that state), plus the split
//! of the step's time between contact geometry, LCP assembly and Lemke
//! pivots over the rest of the run.

mod common;

use common::{Split, bench_run};
use contactlab::scene;
use contactlab::sim::Simulation;
use criterion::{Criterion, criterion_group, criterion_main};
use std::path::Path;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("step");
    group.sample_size(10);
    let mut paths: Vec<_> = std::fs::read_dir("scenes")
        .expect("run from the crate root")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    paths.sort();
    // `CONTACTLAB_STEP_SCENES=four_balls,pile` picks scenes by file stem
    // (default every one: the setup runs each scene's whole duration).
    let chosen = std::env::var("CONTACTLAB_STEP_SCENES").ok();
    for path in paths {
        let name = path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        if chosen
            .as_deref()
            .is_some_and(|list| !list.split(',').any(|n| n.trim() == name))
        {
            continue;
        }
        let scene = scene::load(Path::new(&path)).expect("shipped scenes load");
        let mut sim = Simulation::new(scene);
        let third = (sim.params.duration / sim.params.dt / 3.0) as usize;
        for _ in 0..third {
            let _ = sim.step();
        }
        // The time split over the rest of the run.
        let mut probe = sim.clone();
        let mut split = Split::default();
        for _ in 0..2 * third.max(1) {
            if let Ok(r) = probe.step() {
                split.add(r);
            }
        }
        eprintln!(
            "{name}: h = {} s, mean step {:.1} µs ({:.1}× real time), mean LCP size {:.0}; geometry {:.0}%, LCP build {:.0}%, Lemke {:.0}%",
            sim.params.dt,
            split.per_step() * 1e6,
            sim.params.dt / split.per_step(),
            split.mean(split.lcp_size),
            split.percent(split.geometry),
            split.percent(split.build),
            split.percent(split.lemke)
        );
        bench_run(&mut group, &name, &sim);
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
