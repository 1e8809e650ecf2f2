use contactlab::scene::generate;
use contactlab::sim::Simulation;
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let secs: f64 = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let scene = match std::env::var("SCENE") {
        Ok(p) => contactlab::scene::load(std::path::Path::new(&p)).unwrap(),
        Err(_) => generate::pile(n).unwrap(),
    };
    let mut sim = Simulation::new(scene);
    if std::env::var_os("AP").is_some() {
        sim.params.stepper = contactlab::params::StepperKind::AnitescuPotra;
    }
    let steps = (secs / sim.params.dt).round() as usize;
    let t0 = std::time::Instant::now();
    let mut piv = 0;
    for s in 0..steps {
        let rep = sim.step().unwrap().clone();
        if rep.status != contactlab::lcp::LcpStatus::Solved {
            eprintln!("UNSOLVED step {s}: {:?}", sim.failure_message());
        }
        let r = rep.pivots;
        piv += r;
        if s % 50 == 0 || std::env::var_os("EVERY").is_some() {
            eprintln!(
                "STEP {s} t={:.2} pivots={} elapsed={:.1}",
                s as f64 * sim.params.dt,
                r,
                t0.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!(
        "DONE {:.2} ms/step, {:.1} pivots/step",
        t0.elapsed().as_secs_f64() * 1e3 / steps as f64,
        piv as f64 / steps as f64
    );
}
