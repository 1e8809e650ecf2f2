use contactlab::scene::generate;
use contactlab::sim::Simulation;
fn main() {
    let n: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let at: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let mut sim = Simulation::new(generate::pile(n).unwrap());
    for s in 0..at {
        let r = sim.step().unwrap();
        if r.status != contactlab::lcp::LcpStatus::Solved {
            println!("unsolved at {s}");
        }
    }
    unsafe {
        std::env::set_var("STDBG", "1");
    }
    let r = sim.step().unwrap().clone();
    println!(
        "status {:?} min_gap {:e} solves {} pivots {}",
        r.status, r.min_gap, r.solves, r.pivots
    );
    if let Model::Rigid(s) = sim.model() {
        for (i, b) in s.bodies.iter().enumerate() {
            if b.name == "capsule21" || b.name == "capsule40" {
                println!("{i} {} {:?}", b.name, b.shape);
            }
        }
    }
}
use contactlab::model::Model;
