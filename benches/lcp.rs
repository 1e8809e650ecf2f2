//! Lemke on friction-contact LCPs from the real assembly: rows of touching balls
//! on a table (n balls → n ball–table + n−1 ball–ball contacts, k = 8 edges),
//! cold and warm-started from the previous step's basis.

use contactlab::lcp::{self, Lcp, LemkeOptions};
use contactlab::scene;
use contactlab::solver::lemke::assembly::Impulses;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::path::Path;

/// The LCP (29) of a row of `n` balls pressed onto the table and into each
/// other, moving with a small sideways drift; `nudge` perturbs the velocities
/// (the "next step").
fn row_of_balls(n: usize, nudge: f64) -> Lcp {
    let bodies: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "(name: \"b{i}\", shape: Sphere(radius: 0.1), mass: 1.0, position: ({x}, 0.0, 0.0999), velocity: ({vx}, {vy}, -0.2))",
                x = 0.1999 * i as f64,
                vx = 0.3 * ((i * 7 % 5) as f64 - 2.0) / 2.0 + nudge,
                vy = 0.2 * ((i * 3 % 4) as f64 - 1.5) - nudge,
            )
        })
        .collect();
    let text = format!(
        "Scene(name: \"row\", params: (dt: 0.005, mu: 0.5, edges: 8), system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, -9.81), bodies: [{}], surfaces: [(name: \"table\", normal: (0.0, 0.0, 1.0))])))",
        bodies.join(", ")
    );
    let scene = scene::parse(&text, Path::new("row.ron")).expect("valid scene");
    let (model, state, params) = (&scene.model, &scene.initial, &scene.params);
    let h = params.dt;
    let contacts = contactlab::collision::contacts(model, &state.q, params.edges, 0.0);
    let selected: Vec<_> = contacts.iter().collect();
    let impulses = Impulses::new(&selected, model.mass_inverse_form(), model.dof());
    let force = model.forces(&state.q, &state.v, 0.0, params);
    let free = &state.v + model.apply_mass_inverse(&force) * h;
    let gaps: Vec<f64> = selected.iter().map(|c| c.gap / h).collect();
    let mu = vec![params.mu; selected.len()];
    impulses.lcp(&free, &gaps, &mu)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("lemke");
    group.sample_size(20);
    for balls in [1, 3, 5, 10, 20, 30] {
        let problem = row_of_balls(balls, 0.0);
        let next = row_of_balls(balls, 1e-3);
        let cold = lcp::solve(&problem, &LemkeOptions::default()).expect("valid");
        let warm_options = LemkeOptions {
            warm_start: Some(cold.basis.clone()),
            ..LemkeOptions::default()
        };
        let next_cold = lcp::solve(&next, &LemkeOptions::default()).expect("valid");
        let next_warm = lcp::solve(&next, &warm_options).expect("valid");
        eprintln!(
            "size {} ({} contacts): cold {} pivots {:?}, warm {} pivots {:?} (warm used: {})",
            next.size(),
            (next.size()) / 10,
            next_cold.pivots,
            next_cold.status,
            next_warm.pivots,
            next_warm.status,
            next_warm.warm_started
        );
        group.bench_with_input(BenchmarkId::new("cold", next.size()), &next, |b, p| {
            b.iter(|| lcp::solve(p, &LemkeOptions::default()))
        });
        group.bench_with_input(BenchmarkId::new("warm", next.size()), &next, |b, p| {
            b.iter(|| lcp::solve(p, &warm_options))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
