//! Helpers shared by the integration tests: the shipped scenes by name, a
//! run that asserts every step solved, the one list of large scenes,
//! brute-force LCP enumeration and random problem generators with fixed
//! seeds.
#![allow(dead_code)]

use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Every solution of LCP(M, q) found by enumerating the 2ⁿ complementary bases
/// (z basic on a subset S, solved from M_SS z_S = −q_S). Only for small n.
pub fn enumerate(m: &DMatrix<f64>, q: &DVector<f64>) -> Vec<DVector<f64>> {
    let n = q.len();
    let mut out = Vec::new();
    for mask in 0u32..(1 << n) {
        let set: Vec<usize> = (0..n).filter(|&i| mask & (1 << i) != 0).collect();
        let k = set.len();
        let mut z = DVector::zeros(n);
        if k > 0 {
            let mss = DMatrix::from_fn(k, k, |a, b| m[(set[a], set[b])]);
            let qs = DVector::from_fn(k, |a, _| -q[set[a]]);
            let Some(zs) = mss.lu().solve(&qs) else {
                continue;
            };
            for (a, &i) in set.iter().enumerate() {
                z[i] = zs[a];
            }
        }
        let w = m * &z + q;
        let tol = 1e-9 * q.amax().max(1.0);
        if z.iter().all(|&x| x >= -tol) && w.iter().all(|&x| x >= -tol) {
            out.push(z);
        }
    }
    out
}

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

pub fn random_matrix(rng: &mut StdRng, rows: usize, cols: usize) -> DMatrix<f64> {
    DMatrix::from_fn(rows, cols, |_, _| rng.random_range(-1.0..1.0))
}

pub fn random_vector(rng: &mut StdRng, n: usize) -> DVector<f64> {
    DVector::from_fn(n, |_, _| rng.random_range(-1.0..1.0))
}

/// A random symmetric positive definite n×n matrix AᵀA + 0.1 I.
pub fn random_spd(rng: &mut StdRng, n: usize) -> DMatrix<f64> {
    let a = random_matrix(rng, n, n);
    a.transpose() * &a + DMatrix::identity(n, n) * 0.1
}

/// A random nonsymmetric P-matrix: strictly row diagonally dominant with a
/// positive diagonal (every principal minor is then positive).
pub fn random_p_matrix(rng: &mut StdRng, n: usize) -> DMatrix<f64> {
    let mut m = random_matrix(rng, n, n);
    for i in 0..n {
        let off: f64 = (0..n).filter(|&j| j != i).map(|j| m[(i, j)].abs()).sum();
        m[(i, i)] = off + rng.random_range(0.1..1.0);
    }
    m
}

/// The project directory, read when the test runs (cargo sets it for `cargo
/// test`) rather than when it was compiled: a test binary reused from a shared
/// target directory may have been built in another clone.
pub fn project_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// A box (0.2 × 0.1 half extents, 1 kg) flat on a planar incline of angle α
/// with friction μ, h = 2 ms for 1 s; `extra` adds parameters (e.g.
/// `"solver: nsgs, "`).
pub fn incline(alpha: f64, mu: f64, extra: &str) -> contactlab::scene::Scene {
    let (s, c) = alpha.sin_cos();
    let text = format!(
        r#"Scene(name: "incline", params: (dt: 0.002, duration: 1.0, mu: {mu}, {extra}),
        system: Rigid((dimension: Planar, gravity: (0.0, -9.81, 0.0),
            bodies: [(name: "box", shape: Box(half_extents: (0.2, 0.1, 0.1)), mass: 1.0,
                      position: ({px}, {py}, 0.0), orientation: Angle({alpha}))],
            surfaces: [(name: "incline", normal: ({nx}, {c}, 0.0))])))"#,
        px = -0.1 * s,
        py = 0.1 * c,
        nx = -s,
    );
    contactlab::scene::parse(&text, std::path::Path::new("incline.ron"))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The shipped scene `scenes/{name}`, e.g. `load_scene("pile.ron")`.
pub fn load_scene(name: &str) -> contactlab::scene::Scene {
    let path = project_dir().join("scenes").join(name);
    contactlab::scene::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// A simulation of the shipped scene `scenes/{name}` at its own settings.
pub fn load_simulation(name: &str) -> contactlab::sim::Simulation {
    contactlab::sim::Simulation::new(load_scene(name))
}

/// Steps `sim` for `duration` seconds (the steps that cover it at its h),
/// asserting that every step is taken and its LCP solved, and hands the
/// simulation and each step's report to `visit`.
pub fn run(
    sim: &mut contactlab::sim::Simulation,
    duration: f64,
    mut visit: impl FnMut(&contactlab::sim::Simulation, &contactlab::stepper::StepReport),
) {
    let steps = (duration / sim.params.dt - 1e-9).ceil() as usize;
    for _ in 0..steps {
        let report = sim.step().unwrap_or_else(|e| panic!("{e}")).clone();
        assert_eq!(
            report.status,
            contactlab::lcp::LcpStatus::Solved,
            "{} at t = {}: residual {} after {} sweeps",
            sim.params.stepper,
            report.t,
            report.residual,
            report.sweeps
        );
        visit(sim, &report);
    }
}

/// The shipped scenes of 12 bodies or more, with their bodies (fixed ones
/// included): the tower, the piles and the wall, whose islands of hundreds
/// to thousands of unknowns take Lemke seconds a step in a debug build, and
/// the granular scenes (1,000 grains or more, NSGS). Every other shipped
/// scene has at most 10 bodies (`tests/scenes.rs` checks both).
pub const LARGE_SCENES: [(&str, usize); 8] = [
    ("tower.ron", 12),
    ("pile.ron", 22),
    ("wall.ron", 41),
    ("pile_100.ron", 100),
    ("silo.ron", 1012),
    ("heap.ron", 1004),
    ("hourglass.ron", 1016),
    ("avalanche.ron", 2011),
];

/// The large scenes with this many bodies or more are the granular ones.
pub const GRANULAR: usize = 1000;

/// The bodies of `path`'s scene if it is one of [`LARGE_SCENES`].
pub fn large_scene(path: &std::path::Path) -> Option<usize> {
    let name = path.file_name().and_then(|n| n.to_str())?;
    LARGE_SCENES
        .iter()
        .find(|(large, _)| *large == name)
        .map(|&(_, bodies)| bodies)
}

/// The shipped scene files (`scenes/*.ron`), sorted.
pub fn shipped_scenes() -> Vec<std::path::PathBuf> {
    let dir = project_dir().join("scenes");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("scenes/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    paths.sort();
    paths
}

/// Every CSV row (`contactlab run`'s format) from the state after `steps`
/// more steps of `sim`.
pub fn csv_rows(sim: &mut contactlab::sim::Simulation, steps: usize) -> Vec<String> {
    (0..steps)
        .map(|_| {
            sim.step().expect("step");
            contactlab::cli::csv_row(sim.model(), &sim.params, &sim.state, sim.last.as_ref())
        })
        .collect()
}

/// The total energy from step to step, for the invariant that no step
/// raises it (Stewart–Trinkle §3.3, Moreau–Jean with ε = 0) by more than a
/// tolerance relative to its magnitude at the start (at least 1 J).
pub struct EnergyWatch {
    previous: f64,
    scale: f64,
}

impl EnergyWatch {
    /// Starts from `sim`'s energy now.
    pub fn new(sim: &contactlab::sim::Simulation) -> Self {
        let (k, p) = sim.energy();
        let previous = k + p;
        Self {
            previous,
            scale: previous.abs().max(1.0),
        }
    }

    /// The magnitude tolerances are relative to.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The energy after the last step checked.
    pub fn previous(&self) -> f64 {
        self.previous
    }

    /// Asserts that `report`'s step raised the energy by at most
    /// `tolerance` × the scale, and keeps its energy.
    pub fn check(&mut self, report: &contactlab::stepper::StepReport, tolerance: f64, what: &str) {
        let now = report.kinetic_energy + report.potential_energy;
        assert!(
            now - self.previous <= tolerance * self.scale,
            "{what}: energy rose by {} at t = {}",
            now - self.previous,
            report.t
        );
        self.previous = now;
    }
}

/// An 8-bit colour PNG (a screenshot, a recorded frame): width, height and
/// its pixels' RGB, row by row.
pub fn decode_png(path: &std::path::Path) -> (u32, u32, Vec<[u8; 3]>) {
    let file = std::fs::File::open(path).expect("PNG written");
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("buffer size")];
    let info = reader.next_frame(&mut buf).expect("PNG frame");
    let channels = info.color_type.samples();
    assert!(channels >= 3, "colour PNG, found {:?}", info.color_type);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let pixels = buf[..info.buffer_size()]
        .chunks_exact(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (info.width, info.height, pixels)
}
