//! The fuzz harness: seeded random inputs run through the `contactlab`
//! binary, one child process per case, on stable Rust.
//!
//! - `scene_mutations`: every shipped scene, mutated (numbers made extreme,
//!   spans deleted, duplicated or spliced, identifiers swapped, bytes
//!   flipped, files cut short), then `run` for a few steps;
//! - `random_scenes`: rigid (planar and spatial, with joints, springs and
//!   loads) and linear scenes built field by field, then `run`;
//! - `command_lines`: random flags and values on cheap scenes, and other
//!   subcommands;
//! - `dat_files`: random `.dat` LCPs, mutated or not, through `lcp`;
//! - `physics_cases`: free bodies spinning about random axes (their kinetic
//!   energy never rises), fast bodies flying at thin walls (never through
//!   them), and mutated snapshots of shipped scenes through `run --state`.
//!
//! Invariants of every case ([`child::run`]): no panic, no abort or crash
//! (a 4 GiB address-space limit turns runaway allocations into aborts), no
//! hang (a time budget per case), no exit 0 with a non-finite value in the
//! CSV or the `lcp` lines, and a failed run leaves an earlier CSV alone.
//!
//! The five tests share 1,000 cases (about ten seconds on two cores); the
//! long suite's `long::*` (ignored, `cargo test --release
//! --no-default-features -- --ignored`) run the same generators over
//! 5,000. `CONTACTLAB_FUZZ_CASES` sets the number of cases over the five
//! tests instead, `CONTACTLAB_FUZZ_SEED` the first seed (default 1). A
//! failing case prints its seed and keeps its files under the target
//! directory.
//!
//! Built without the viewer only (`cargo test --no-default-features --test
//! fuzz`): with it, a case without a subcommand would open a window.
#![cfg(not(feature = "viewer"))]

mod child;
mod generate;
mod mutate;
mod physics;

use child::{Case, Outcome};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::PathBuf;

/// The share of the cases each test takes, in percent.
const SHARES: [(&str, u64); 5] = [
    ("scene_mutations", 35),
    ("random_scenes", 20),
    ("command_lines", 15),
    ("dat_files", 10),
    ("physics_cases", 20),
];

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Cases over the five tests of the fast suite.
const CASES: u64 = 1000;

/// Cases over the five tests of the long suite.
const LONG_CASES: u64 = 5_000;

/// This test's cases, of `total` over the five unless
/// `CONTACTLAB_FUZZ_CASES` says otherwise, and their first seed (each test
/// draws from its own range of seeds, so the five never repeat each other).
fn budget(test: &str, total: u64) -> (u64, u64) {
    let total = env_number("CONTACTLAB_FUZZ_CASES", total);
    let seed = env_number("CONTACTLAB_FUZZ_SEED", 1);
    let (index, share) = SHARES
        .iter()
        .enumerate()
        .find_map(|(i, (name, share))| (*name == test).then_some((i as u64, *share)))
        .expect("a known test");
    ((total * share).div_ceil(100), seed + (index << 40))
}

/// Runs this test's share of `total` cases, built by `make` from their
/// seeds; fails with every broken invariant, each with its seed and where
/// its files are kept.
fn fuzz(test: &'static str, total: u64, make: impl Fn(&mut StdRng, u64) -> Case) {
    let (cases, first) = budget(test, total);
    // Apart from the other suite's run of the same test, which may run beside it.
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-{test}-{total}"));
    let mut failures = Vec::new();
    let (mut ran, mut refused) = (0, 0);
    for seed in first..first + cases {
        let mut rng = StdRng::seed_from_u64(seed);
        let case = make(&mut rng, seed);
        let dir = root.join(format!("case-{seed}"));
        match child::run(&case, &dir) {
            Ok(outcome) => {
                match outcome {
                    Outcome::Ran => ran += 1,
                    Outcome::Refused => refused += 1,
                }
                let _ = std::fs::remove_dir_all(&dir);
            }
            Err(broken) => failures.push(format!(
                "{} seed {}: {broken}\n    contactlab {}\n    files kept in {}",
                case.kind,
                case.seed,
                case.args.join(" "),
                dir.display()
            )),
        }
    }
    println!("{test}: {cases} cases, {ran} ran to the end, {refused} refused or reported");
    assert!(
        failures.is_empty(),
        "{} of {cases} cases broke an invariant:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn shipped_scenes() -> Vec<(String, Vec<u8>)> {
    let mut scenes: Vec<(String, Vec<u8>)> = std::fs::read_dir("scenes")
        .expect("scenes/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "ron"))
        .map(|p| {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            let text = std::fs::read(&p).expect("scene reads");
            let keep = if name == "wall.ron" {
                MUTATED_BRICKS
            } else {
                MUTATED_BODIES
            };
            (name, trim_bodies(text, keep))
        })
        .collect();
    scenes.sort();
    scenes
}

/// Bodies a mutated scene keeps: the granular scenes (thousands of grains,
/// one per line) are cut to their containers and first grains, so that a
/// mutation that turns them over to Lemke or Anitescu–Potra's dense step
/// still runs within the per-case budget.
const MUTATED_BODIES: usize = 40;

/// Bricks a mutated wall keeps: its first two courses. Whole, a mutated
/// wall is a legitimately slow scene, not a hang: with one brick made 6 m
/// deep (seed 372) its first 23 steps took 61 s in the test profile, past
/// the per-case budget, where the wall as shipped takes 10–240 ms a step
/// before the ball arrives.
const MUTATED_BRICKS: usize = 10;

/// `text` with only the first `keep` one-line bodies of its `bodies: [` list.
fn trim_bodies(text: Vec<u8>, keep: usize) -> Vec<u8> {
    let Ok(source) = String::from_utf8(text.clone()) else {
        return text;
    };
    let mut out = String::with_capacity(source.len().min(1 << 16));
    let (mut inside, mut kept) = (false, 0);
    for line in source.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("bodies: [") {
            inside = true;
        } else if inside && trimmed.starts_with(']') {
            inside = false;
        } else if inside && trimmed.starts_with("(name:") {
            kept += 1;
            if kept > keep {
                continue;
            }
        }
        out.push_str(line);
    }
    out.into_bytes()
}

/// The `dt` a scene text sets, if it reads as one (else the default).
fn scene_dt(text: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(text);
    text.split("dt:")
        .nth(1)
        .and_then(|rest| {
            let number: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
                .collect();
            number.parse::<f64>().ok()
        })
        .filter(|dt| dt.is_finite() && *dt > 0.0)
        .unwrap_or(0.0025)
}

/// `run` of `scene.ron` for a few steps of its own h, into `out.csv`.
fn run_case(kind: &'static str, seed: u64, rng: &mut StdRng, text: Vec<u8>, dt: f64) -> Case {
    let steps = rng.random_range(1..=generate::MAX_STEPS / 2) as f64;
    let mut args = vec![
        "run".to_owned(),
        "{dir}/scene.ron".to_owned(),
        format!("--duration={:?}", (steps * dt).max(1e-9)),
        format!("--max-steps={}", generate::MAX_STEPS),
        "--csv".to_owned(),
        "{dir}/out.csv".to_owned(),
    ];
    if rng.random_bool(0.2) {
        let stepper = [
            "stewart-trinkle",
            "moreau-jean",
            "anitescu-potra",
            "euler-lcp",
        ][rng.random_range(0..4)];
        args.push(format!("--stepper={stepper}"));
    }
    Case {
        kind,
        seed,
        args,
        files: vec![("scene.ron".to_owned(), text)],
        csv: Some("out.csv".to_owned()),
        law: None,
    }
}

#[test]
fn scene_mutations() {
    fuzz_scene_mutations(CASES);
}

#[test]
fn random_scenes() {
    fuzz_random_scenes(CASES);
}

#[test]
fn command_lines() {
    fuzz_command_lines(CASES);
}

#[test]
fn dat_files() {
    fuzz_dat_files(CASES);
}

#[test]
fn physics_cases() {
    fuzz_physics_cases(CASES);
}

/// The same generators over twenty times the cases (a superset of the fast
/// suite's seeds).
mod long {
    #[test]
    #[ignore = "long suite: cargo test --release --no-default-features -- --ignored"]
    fn scene_mutations() {
        super::fuzz_scene_mutations(super::LONG_CASES);
    }

    #[test]
    #[ignore = "long suite: cargo test --release --no-default-features -- --ignored"]
    fn random_scenes() {
        super::fuzz_random_scenes(super::LONG_CASES);
    }

    #[test]
    #[ignore = "long suite: cargo test --release --no-default-features -- --ignored"]
    fn command_lines() {
        super::fuzz_command_lines(super::LONG_CASES);
    }

    #[test]
    #[ignore = "long suite: cargo test --release --no-default-features -- --ignored"]
    fn dat_files() {
        super::fuzz_dat_files(super::LONG_CASES);
    }

    #[test]
    #[ignore = "long suite: cargo test --release --no-default-features -- --ignored"]
    fn physics_cases() {
        super::fuzz_physics_cases(super::LONG_CASES);
    }
}

fn fuzz_physics_cases(total: u64) {
    let snapshots = physics::snapshots();
    fuzz("physics_cases", total, |rng, seed| {
        match rng.random_range(0..5) {
            0 | 1 => physics::spinning_body(rng, seed),
            2 | 3 => physics::fast_body(rng, seed),
            _ => physics::mutated_snapshot(rng, seed, &snapshots),
        }
    });
}

fn fuzz_scene_mutations(total: u64) {
    let scenes = shipped_scenes();
    fuzz("scene_mutations", total, |rng, seed| {
        let (_, source) = &scenes[(seed as usize) % scenes.len()];
        let (_, other) = &scenes[rng.random_range(0..scenes.len())];
        let text = mutate::mutate(rng, source, other);
        let dt = scene_dt(&text);
        run_case("scene mutation", seed, rng, text, dt)
    });
}

fn fuzz_random_scenes(total: u64) {
    fuzz("random_scenes", total, |rng, seed| {
        let (text, dt) = generate::scene(rng);
        run_case("random scene", seed, rng, text.into_bytes(), dt)
    });
}

fn fuzz_command_lines(total: u64) {
    fuzz("command_lines", total, |rng, seed| {
        let args = generate::command_line(rng);
        let csv = args
            .iter()
            .any(|a| a == "{dir}/out.csv")
            .then(|| "out.csv".to_owned());
        Case {
            kind: "command line",
            seed,
            args,
            files: Vec::new(),
            csv,
            law: None,
        }
    });
}

fn fuzz_dat_files(total: u64) {
    fuzz("dat_files", total, |rng, seed| {
        let mut args = vec!["lcp".to_owned()];
        if rng.random_bool(0.2) {
            args.push(format!("--max-size={}", rng.random_range(0..=50)));
        }
        let mut files = Vec::new();
        for i in 0..rng.random_range(1..=3) {
            let mut text = generate::dat(rng).into_bytes();
            if rng.random_bool(0.4) {
                let other = generate::dat(rng).into_bytes();
                text = mutate::mutate(rng, &text, &other);
            }
            let name = format!("lcp{i}.dat");
            args.push(format!("{{dir}}/{name}"));
            files.push((name, text));
        }
        Case {
            kind: "dat file",
            seed,
            args,
            files,
            csv: None,
            law: None,
        }
    });
}
