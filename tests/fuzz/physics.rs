//! Cases with a law to check beyond the harness's invariants: free bodies
//! spinning about random axes (their kinetic energy never rises), fast
//! bodies flying at thin walls (they never cross the wall's mid-plane), and
//! snapshots of shipped scenes, mutated, given to `run --state`.

use super::child::{Case, Law};
use super::generate::MAX_STEPS;
use super::mutate;
use rand::Rng;
use rand::rngs::StdRng;

const STEPPERS: [&str; 4] = [
    "stewart-trinkle",
    "moreau-jean",
    "anitescu-potra",
    "euler-lcp",
];

fn log_uniform(rng: &mut StdRng, lo: f64, hi: f64) -> f64 {
    rng.random_range(lo.ln()..hi.ln()).exp()
}

/// A body's shape of size about `size` m, as RON.
fn shape(rng: &mut StdRng, size: f64) -> String {
    let kind = rng.random_range(0..3);
    let mut side = || size * rng.random_range(0.2..1.0);
    match kind {
        0 => format!("Sphere(radius: {:?})", side()),
        1 => format!("Capsule(half_length: {:?}, radius: {:?})", side(), side()),
        _ => format!(
            "Box(half_extents: ({:?}, {:?}, {:?}))",
            side(),
            side(),
            side()
        ),
    }
}

/// `run` of `scene` for a few steps of `dt` under a random stepper (and,
/// sometimes, NSGS where it applies), checked against `law`.
fn run(rng: &mut StdRng, kind: &'static str, seed: u64, scene: String, dt: f64, law: Law) -> Case {
    let steps = rng.random_range(5..=MAX_STEPS);
    let stepper = STEPPERS[rng.random_range(0..4)];
    let mut args = vec![
        "run".to_owned(),
        "{dir}/scene.ron".to_owned(),
        format!("--duration={:?}", steps as f64 * dt),
        format!("--stepper={stepper}"),
        "--csv".to_owned(),
        "{dir}/out.csv".to_owned(),
    ];
    // NSGS solves the contact LCPs of the first two.
    if STEPPERS[..2].contains(&stepper) && rng.random_bool(0.4) {
        args.push("--solver=nsgs".to_owned());
    }
    Case {
        kind,
        seed,
        args,
        files: vec![("scene.ron".to_owned(), scene.into_bytes())],
        csv: Some("out.csv".to_owned()),
        law: Some(law),
    }
}

/// A free body without gravity or contact, spinning at up to 60 rad/s about
/// a random axis: its kinetic energy never rises by more than 1e-9 of itself
/// from one step to the next.
pub fn spinning_body(rng: &mut StdRng, seed: u64) -> Case {
    let dt = [0.001, 0.0025, 0.005, 0.01][rng.random_range(0..4)];
    let omega = log_uniform(rng, 0.1, 60.0);
    let axis: [f64; 3] = std::array::from_fn(|_| rng.random_range(-1.0..1.0));
    let norm = axis.iter().map(|a| a * a).sum::<f64>().sqrt().max(1e-3);
    let w = axis.map(|a| a / norm * omega);
    let size = log_uniform(rng, 0.01, 2.0);
    let scene = format!(
        r#"Scene(name: "spin", params: (dt: {dt:?}, duration: 1.0),
    system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, 0.0),
        bodies: [(name: "b", shape: {}, mass: {:?}, position: (0.0, 0.0, 0.0),
                  angular_velocity: ({:?}, {:?}, {:?}))])))"#,
        shape(rng, size),
        log_uniform(rng, 0.01, 100.0),
        w[0],
        w[1],
        w[2],
    );
    run(
        rng,
        "spinning body",
        seed,
        scene,
        dt,
        Law::EnergyNeverRises(1e-9),
    )
}

/// A body of 1–5 cm flying at 1–3,000 m/s at a wall 1–4 cm thick, with any
/// restitution: the body's centre never passes the wall's. A fixed wall
/// stands on the table, 1 m high, and gravity may act; a free one floats
/// without gravity, struck at its centre (so that neither body can go
/// around, over or under the other).
pub fn fast_body(rng: &mut StdRng, seed: u64) -> Case {
    let dt = [0.001, 0.005, 0.01][rng.random_range(0..3)];
    let size = rng.random_range(0.01..0.05);
    let half = rng.random_range(0.005..0.02);
    let start = -rng.random_range(0.1..1.0);
    let speed = log_uniform(rng, 1.0, 3000.0);
    let fixed = rng.random_bool(0.5);
    let gravity = if fixed && rng.random_bool(0.5) {
        -9.81
    } else {
        0.0
    };
    let scene = format!(
        r#"Scene(name: "fast", params: (dt: {dt:?}, duration: 1.0, restitution: {:?}),
    system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, {gravity:?}),
        bodies: [(name: "b", shape: {}, mass: {:?}, position: ({start:?}, 0.0, 0.5),
                  velocity: ({speed:?}, 0.0, 0.0)),
                 (name: "wall", shape: Box(half_extents: ({half:?}, 0.5, 0.5)), mass: {:?},
                  position: (0.0, 0.0, 0.5), fixed: {fixed})],
        surfaces: [(name: "table", normal: (0.0, 0.0, 1.0))])))"#,
        rng.random_range(0.0..=1.0),
        shape(rng, size),
        log_uniform(rng, 0.001, 1.0),
        log_uniform(rng, 0.1, 10.0),
    );
    run(
        rng,
        "fast body",
        seed,
        scene,
        dt,
        Law::NeverAbove {
            column: "b.x".to_owned(),
            limit: "wall.x".to_owned(),
        },
    )
}

/// Snapshots of shipped scenes after a few steps, as the viewer saves them.
pub fn snapshots() -> Vec<(&'static str, Vec<u8>)> {
    ["four_balls.ron", "box_stack.ron", "rod.ron", "pile.ron"]
        .into_iter()
        .map(|name| {
            let path = std::path::Path::new("scenes").join(name);
            let scene = contactlab::scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
            let mut sim = contactlab::sim::Simulation::new(scene);
            for _ in 0..5 {
                sim.step().unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            let snapshot = contactlab::sim::snapshot::Snapshot::of(&sim);
            let text = snapshot.to_ron().unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, text.into_bytes())
        })
        .collect()
}

/// One of `snapshots`, mutated (spliced with another sometimes), given to
/// `run --state` on its scene.
pub fn mutated_snapshot(
    rng: &mut StdRng,
    seed: u64,
    snapshots: &[(&'static str, Vec<u8>)],
) -> Case {
    let (name, text) = &snapshots[rng.random_range(0..snapshots.len())];
    let (_, other) = &snapshots[rng.random_range(0..snapshots.len())];
    let state = mutate::mutate(rng, text, other);
    Case {
        kind: "mutated snapshot",
        seed,
        args: vec![
            "run".to_owned(),
            format!("scenes/{name}"),
            "--state".to_owned(),
            "{dir}/state.ron".to_owned(),
            format!("--max-steps={MAX_STEPS}"),
            "--duration=0.02".to_owned(),
            "--csv".to_owned(),
            "{dir}/out.csv".to_owned(),
        ],
        files: vec![("state.ron".to_owned(), state)],
        csv: Some("out.csv".to_owned()),
        law: None,
    }
}
