//! `contactlab run`: a scene stepped headless, written as CSV.

use super::csv::{csv_header, csv_row};
use super::{Overrides, RunArgs};
use crate::lcp::{LcpStatus, siconos};
use crate::params::Params;
use crate::scene::{self, Scene};
use crate::sim::Simulation;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::time::{Duration, Instant};

/// The scene's parameters with the flags applied ([`Params::with_overrides`]),
/// as a one-line error naming the flag and the scene.
pub fn apply_overrides(scene: &Scene, o: &Overrides) -> Result<Params, String> {
    scene.params.with_overrides(&scene.model, o).map_err(|e| {
        format!(
            "{}: {} (scene {})",
            e.flag(),
            e.message,
            scene.path.display()
        )
    })
}

/// Number of steps of size dt that cover `duration` (rounding away float noise).
pub fn step_count(params: &Params) -> u64 {
    (params.duration / params.dt - 1e-9).ceil().max(0.0) as u64
}

/// Runs the scene and writes the CSV.
pub fn run(args: &RunArgs) -> Result<(), String> {
    if args.every == 0 {
        return Err("--every must be at least 1".to_owned());
    }
    let scene = scene::load(&args.scene).map_err(|e| e.to_string())?;
    let params = apply_overrides(&scene, &args.overrides)?;
    let mut sim = Simulation::with_params(scene, params);
    if let Some(path) = &args.state {
        crate::sim::snapshot::load_into(&mut sim, path).map_err(|e| e.to_string())?;
    }
    if let Some(dir) = &args.dump_lcp {
        std::fs::create_dir_all(dir).map_err(|e| format!("--dump-lcp {}: {e}", dir.display()))?;
        sim.set_record_lcp(true);
    }
    let file = std::fs::File::create(&args.csv)
        .map_err(|e| format!("--csv {}: {e}", args.csv.display()))?;
    let mut out = std::io::BufWriter::new(file);
    let write_err = |e: std::io::Error| format!("--csv {}: {e}", args.csv.display());
    writeln!(out, "{}", csv_header(sim.model())).map_err(write_err)?;
    writeln!(
        out,
        "{}",
        csv_row(sim.model(), &sim.params, &sim.state, None)
    )
    .map_err(write_err)?;

    let total = step_count(&sim.params);
    let started = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    for step in 1..=total {
        sim.step().map_err(|e| e.to_string())?;
        let Some(report) = sim.last.as_ref() else {
            continue;
        };
        if let (Some(dir), Some(lcp)) = (&args.dump_lcp, &report.lcp) {
            let path = dir.join(format!("step_{step:06}.dat"));
            let comment = format!(
                "contactlab step {step}, t = {} s, scene {}",
                report.t,
                sim.scene.path.display()
            );
            siconos::write(lcp, &path, &comment).map_err(|e| e.to_string())?;
        }
        if report.status != LcpStatus::Solved {
            let message = format!(
                "step {step} (t = {:.6} s): LCP {} — {} (partial CSV kept in {})",
                sim.state.t,
                report.status,
                report.status.reason(),
                args.csv.display()
            );
            let _ = out.flush();
            return Err(message);
        }
        if step % args.every == 0 || step == total {
            let report = sim.last.as_ref();
            writeln!(
                out,
                "{}",
                csv_row(sim.model(), &sim.params, &sim.state, report)
            )
            .map_err(write_err)?;
        }
        if bar.is_none() && started.elapsed() > Duration::from_secs(1) {
            let b = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:40} {pos}/{len} steps  {elapsed} elapsed, ETA {eta}",
            ) {
                b.set_style(style);
            }
            bar = Some(b);
        }
        if let Some(b) = &bar {
            b.set_position(step);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    out.flush().map_err(write_err)
}
