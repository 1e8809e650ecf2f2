//! `contactlab compare`: one scene run twice, A and B, each with its own
//! parameters (`--a stepper=moreau-jean,mu=0.3`), written side by side as one
//! CSV with the divergence between them. Given a comparison file
//! (`scene::comparison`), its sides' parameters come first and `--a` /
//! `--b` apply over them.
//!
//! The two runs are sampled at the same times: every `--every` steps of the
//! coarser step size, each run at its own step nearest that time. A run whose
//! step fails stops there, and is named with its cause at the end; the other
//! run still completes, and its columns go on alone.

use super::csv::{initial_gap, summary_row};
use super::limits;
use super::output::CsvOutput;
use super::progress::Progress;
use super::run::apply_overrides_over;
use super::{CompareArgs, Overrides};
use crate::interrupt;
use crate::model::{Model, State};
use crate::params::Params;
use crate::scene::comparison::{is_comparison_file, load_comparison};
use crate::scene::{self, SUMMARY_COLUMNS, Scene};
use crate::sim::Simulation;
use clap::Parser;
use std::time::{Duration, Instant};

/// The flags one side may set: `run`'s overrides.
#[derive(Debug, Parser)]
#[command(no_binary_name = true)]
struct Side {
    #[command(flatten)]
    overrides: Overrides,
}

/// Keys that apply to both runs, set by `compare`'s own flags.
const SHARED: [&str; 2] = ["duration", "max-memory"];

/// Parses a side's `KEY=VALUE,...` list (`--a` or `--b`, named `flag`) into
/// `run`'s overrides. A key is a flag of `run` without its dashes
/// (`max_iterations` or `max-iterations`); `strict` takes no value.
pub fn parse_side(flag: &str, spec: &str) -> Result<Overrides, String> {
    let mut argv = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (key, value) = match item.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (item, None),
        };
        let key = key.trim_start_matches('-').replace('_', "-");
        if SHARED.contains(&key.as_str()) {
            return Err(format!(
                "{flag}: `{key}` applies to both runs: give it as --{key} of `compare`"
            ));
        }
        argv.push(format!("--{key}"));
        argv.extend(value.map(str::to_owned));
    }
    Side::try_parse_from(&argv)
        .map(|side| side.overrides)
        .map_err(|e| {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("invalid").trim();
            let first = first.strip_prefix("error: ").unwrap_or(first);
            format!("{flag} {spec:?}: {first}")
        })
}

/// One of the two runs.
struct Run {
    /// "A" or "B".
    label: &'static str,
    sim: Simulation,
    steps: u64,
    total: u64,
    /// Wall time spent in its steps.
    wall: Duration,
    /// Energy (kinetic + potential) at the start, J.
    energy0: f64,
    /// The deepest gap seen after any step (or at the start), m.
    deepest: f64,
    /// Why it stopped early, when it did.
    failure: Option<String>,
}

impl Run {
    fn new(label: &'static str, scene: Scene, params: Params, o: &Overrides, total: u64) -> Self {
        let mut sim = Simulation::with_params(scene, params);
        o.apply_settings(sim.step_settings_mut());
        let energy0 = energy(sim.model(), &sim.params, &sim.state);
        let deepest = initial_gap(sim.model(), &sim.params, &sim.state);
        Self {
            label,
            sim,
            steps: 0,
            total,
            wall: Duration::ZERO,
            energy0,
            deepest,
            failure: None,
        }
    }

    /// Steps until the run's time is the step nearest `t` (or its last).
    fn advance_to(&mut self, t: f64) {
        let h = self.sim.params.dt;
        while self.failure.is_none() && self.steps < self.total && self.sim.state.t + 0.5 * h < t {
            let at = format!(
                "step {} at t = {} s (stepper {})",
                self.steps + 1,
                limits::short(self.sim.state.t),
                self.sim.params.stepper
            );
            let start = Instant::now();
            let result = self
                .sim
                .step()
                .map(|report| (report.status, report.min_gap));
            self.wall += start.elapsed();
            match result {
                Ok((status, min_gap)) if status.advances() => {
                    self.steps += 1;
                    self.deepest = self.deepest.min(min_gap);
                }
                Ok((status, _)) => {
                    self.failure = Some(
                        self.sim
                            .failure_message()
                            .unwrap_or_else(|| format!("{at}: LCP {status}: {}", status.reason())),
                    );
                }
                Err(e) => self.failure = Some(format!("{at}: {e}")),
            }
        }
    }

    /// Its summary columns now, or empty ones once it has stopped.
    fn columns(&self) -> Vec<String> {
        if self.failure.is_some() {
            return vec![String::new(); SUMMARY_COLUMNS.len()];
        }
        summary_row(
            self.sim.model(),
            &self.sim.params,
            &self.sim.state,
            self.sim.last.as_ref(),
        )
    }

    /// The closing line: steps, wall time, deepest gap, energy change.
    fn line(&self) -> String {
        let p = &self.sim.params;
        let energy1 = energy(self.sim.model(), p, &self.sim.state);
        let change = energy1 - self.energy0;
        let relative = if self.energy0.abs() > 0.0 {
            format!(" ({:+.3} %)", 100.0 * change / self.energy0.abs())
        } else {
            String::new()
        };
        let edges = if self.sim.model().is_planar() {
            String::new()
        } else {
            format!(", k {}", p.edges)
        };
        let head = format!(
            "{} ({}, {}, μ {}{edges}, h {} s): {} of {} steps in {:.3} s, deepest gap {} m, \
             energy change {:+.4e} J{relative}",
            self.label,
            p.stepper,
            p.solver,
            limits::short(p.mu),
            limits::short(p.dt),
            self.steps,
            self.total,
            self.wall.as_secs_f64(),
            limits::short(self.deepest),
            change,
        );
        match &self.failure {
            Some(cause) => format!("{head}; FAILED at {cause}"),
            None => head,
        }
    }
}

fn energy(model: &Model, params: &Params, state: &State) -> f64 {
    let (kinetic, potential) = model.energy(&state.q, &state.v, params);
    kinetic + potential
}

/// The largest distance between the same body in the two states, m, and
/// the body's name; for a generalized linear system, the largest difference
/// of a coordinate (in that coordinate's unit).
pub fn divergence(model: &Model, a: &State, b: &State) -> (f64, String) {
    let mut largest = (0.0, String::new());
    match model {
        Model::Rigid(system) => {
            for (i, body) in system.bodies.iter().enumerate() {
                let d = (system.position(&a.q, i) - system.position(&b.q, i)).norm();
                if d > largest.0 || (d.is_nan() && !largest.0.is_nan()) {
                    largest = (d, body.name.clone());
                }
            }
        }
        Model::Linear(system) => {
            for (i, name) in system.coordinates.iter().enumerate() {
                let d = (a.q[i] - b.q[i]).abs();
                if d > largest.0 || (d.is_nan() && !largest.0.is_nan()) {
                    largest = (d, name.clone());
                }
            }
        }
    }
    largest
}

/// The CSV header: `t`, A's summary columns, B's, `divergence`.
pub fn compare_header() -> String {
    let mut cols = vec!["t".to_owned()];
    for label in ["A", "B"] {
        cols.extend(SUMMARY_COLUMNS.iter().map(|c| format!("{label}.{c}")));
    }
    cols.push("divergence".to_owned());
    cols.join(",")
}

/// Runs both sides and writes the CSV; `Err` names the run(s) that failed.
pub fn compare(args: &CompareArgs) -> Result<(), String> {
    if args.every == 0 {
        return Err("--every must be at least 1".to_owned());
    }
    let mut sides = Vec::new();
    for (flag, spec) in [("--a", &args.a), ("--b", &args.b)] {
        let mut o = parse_side(flag, spec)?;
        o.duration = args.duration;
        o.max_memory = args.max_memory;
        sides.push(o);
    }
    let (scene, bases) = if is_comparison_file(&args.scene) {
        let c = load_comparison(&args.scene).map_err(|e| e.to_string())?;
        (c.scene, [c.a, c.b])
    } else {
        let scene = scene::load(&args.scene).map_err(|e| e.to_string())?;
        let own = scene.params.clone();
        (scene, [own.clone(), own])
    };
    let mut runs = Vec::new();
    for ((label, o), base) in ["A", "B"].into_iter().zip(&sides).zip(&bases) {
        let params =
            apply_overrides_over(&scene, base, o).map_err(|e| format!("run {label}: {e}"))?;
        let total = limits::check_steps(params.duration, params.dt, args.max_steps)
            .map_err(|e| format!("run {label}: {e}"))?;
        for warning in params.warnings() {
            eprintln!("contactlab: run {label}: {warning}");
        }
        runs.push(Run::new(label, scene.clone(), params, o, total));
    }
    let (mut a, mut b) = {
        let mut it = runs.into_iter();
        match (it.next(), it.next()) {
            (Some(a), Some(b)) => (a, b),
            _ => unreachable!("two sides were parsed"),
        }
    };
    let interval = a.sim.params.dt.max(b.sim.params.dt) * args.every as f64;
    let duration = a.sim.params.duration;
    let rows = limits::steps_needed(duration, interval).max(0.0) as u64;
    let header = compare_header();
    let first = row(0.0, &a, &b).0;
    limits::check_csv_size(header.len(), first.len(), rows + 1, args.max_csv_size)?;
    interrupt::install()?;
    let progress = Progress::start(rows);
    let mut out = CsvOutput::create(&args.csv, args.max_csv_size)?;
    let written = out.line(&header).and_then(|()| out.line(&first));
    if let Err(e) = written {
        return Err(format!("--csv: {e}; {}", out.keep_partial()));
    }
    let mut largest = (0.0f64, String::new(), 0.0f64);
    for k in 1..=rows {
        if let Some(signal) = interrupt::received() {
            drop(progress);
            return Err(format!(
                "interrupted by {} before t = {} s; {}",
                interrupt::name(signal),
                limits::short(k as f64 * interval),
                out.keep_partial()
            ));
        }
        let t = if k == rows {
            duration
        } else {
            k as f64 * interval
        };
        a.advance_to(t);
        b.advance_to(t);
        let (line, divergence) = row(t, &a, &b);
        if let Some((d, body)) = divergence
            && (d > largest.0 || d.is_nan())
        {
            largest = (d, body, t);
        }
        if let Err(e) = out.line(&line) {
            drop(progress);
            return Err(format!(
                "--csv {}: {e}; {}",
                args.csv.display(),
                out.keep_partial()
            ));
        }
        progress.set(k);
        if a.failure.is_some() && b.failure.is_some() {
            break;
        }
    }
    drop(progress);
    out.commit()?;
    eprintln!("{}", a.line());
    eprintln!("{}", b.line());
    if largest.1.is_empty() {
        eprintln!("largest divergence: 0 m (the runs agree bit for bit)");
    } else {
        eprintln!(
            "largest divergence: {} at t = {} s ({})",
            limits::short(largest.0),
            limits::short(largest.2),
            largest.1
        );
    }
    let failed: Vec<&str> = [&a, &b]
        .iter()
        .filter(|r| r.failure.is_some())
        .map(|r| r.label)
        .collect();
    match failed.as_slice() {
        [] => Ok(()),
        [one] => Err(format!("run {one} failed (see its line above)")),
        _ => Err("both runs failed (see their lines above)".to_owned()),
    }
}

/// The CSV row at time `t`, and the divergence with its body when both runs
/// are still going.
fn row(t: f64, a: &Run, b: &Run) -> (String, Option<(f64, String)>) {
    let mut cols = vec![format!("{t}")];
    cols.extend(a.columns());
    cols.extend(b.columns());
    let divergence = (a.failure.is_none() && b.failure.is_none())
        .then(|| divergence(a.sim.model(), &a.sim.state, &b.sim.state));
    cols.push(
        divergence
            .as_ref()
            .map_or(String::new(), |(d, _)| format!("{d}")),
    );
    (cols.join(","), divergence.filter(|(d, _)| *d != 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_side_reads_run_flags_as_keys() {
        let o = parse_side(
            "--a",
            "stepper=moreau-jean, mu=0.3,edges=8,max_iterations=50,strict",
        )
        .expect("valid");
        assert_eq!(o.stepper.as_deref(), Some("moreau-jean"));
        assert_eq!(o.mu, Some(0.3));
        assert_eq!(o.edges, Some(8));
        assert_eq!(o.max_iterations, Some(50));
        assert!(o.strict);
        assert!(parse_side("--b", "").expect("empty").mu.is_none());
    }

    #[test]
    fn a_bad_side_is_one_line_naming_the_flag_and_key() {
        let e = parse_side("--b", "mu=abc").expect_err("not a number");
        assert!(e.starts_with("--b \"mu=abc\": "), "{e}");
        assert!(e.contains("--mu"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = parse_side("--a", "colour=red").expect_err("no such key");
        assert!(e.contains("--colour"), "{e}");
        let e = parse_side("--a", "duration=2").expect_err("shared");
        assert!(e.contains("--duration of `compare`"), "{e}");
    }
}
