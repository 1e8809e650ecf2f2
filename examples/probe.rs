use contactlab::scene;
use contactlab::sim::Simulation;
use std::path::Path;
use std::time::Duration;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scene = scene::load(Path::new(&args[1])).expect("scene");
    let mut sim = Simulation::new(scene);
    if let Some(d) = args.get(2) {
        sim.params.duration = d.parse().unwrap();
    }
    if let Some(s) = args.get(3) {
        sim.params.stepper = s.parse().unwrap();
    }
    let steps = (sim.params.duration / sim.params.dt).round() as usize;
    let (mut g, mut b, mut l, mut t) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    let (mut piv, mut size, mut maxpiv, mut min_gap, mut rises) =
        (0usize, 0usize, 0usize, f64::INFINITY, 0usize);
    let mut max_rise = 0.0f64;
    let (k0, p0) = sim.energy();
    let mut e_prev = k0 + p0;
    for i in 0..steps {
        let r = sim.step().expect("params").clone();
        if r.status != contactlab::lcp::LcpStatus::Solved {
            println!("step {i} t={} {:?}", r.t, r.status);
            break;
        }
        g += r.timings.geometry;
        b += r.timings.lcp_build;
        l += r.timings.lemke;
        t += r.timings.total;
        piv += r.pivots;
        size += r.lcp_size;
        maxpiv = maxpiv.max(r.pivots);
        if r.min_gap < min_gap {
            min_gap = r.min_gap;
        }
        let e = r.kinetic_energy + r.potential_energy;
        let rise = (e - e_prev) / e_prev.abs().max(1e-12);
        if rise > 1e-9 {
            rises += 1;
        }
        max_rise = max_rise.max(rise);
        e_prev = e;
    }
    let n = steps as f64;
    println!(
        "{}: {} steps, mean {:.3} ms/step (geometry {:.3}, build {:.3}, lemke {:.3}), pivots {:.1} (max {}), size {:.0}, min gap {:.2e}, energy rises>1e-9: {} (max rel {:.2e})",
        args[1],
        steps,
        t.as_secs_f64() * 1e3 / n,
        g.as_secs_f64() * 1e3 / n,
        b.as_secs_f64() * 1e3 / n,
        l.as_secs_f64() * 1e3 / n,
        piv as f64 / n,
        maxpiv,
        size as f64 / n,
        min_gap,
        rises,
        max_rise
    );
}
