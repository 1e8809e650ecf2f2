//! `contactlab run`: a scene stepped headless, written as CSV.
//!
//! Before the first step: the scene, the flags, the step count
//! (`--max-steps`) and the CSV's estimated size (`--max-csv-size`) are
//! checked, each refused in one line. The CSV goes to `OUT.partial` and
//! becomes `OUT` when the run completes ([`super::output`]). A step that
//! fails, a full CSV, or SIGINT / SIGTERM / SIGHUP ends the run with one
//! line naming the step, its t, the stepper and the cause, and where the
//! partial rows are.

use super::csv::{csv_header, csv_row};
use super::limits;
use super::output::CsvOutput;
use super::progress::Progress;
use super::{Overrides, RunArgs};
use crate::interrupt;
use crate::lcp::{LcpStatus, siconos};
use crate::params::{FrictionCone, Params, SolverKind};
use crate::scene::{self, Scene};
use crate::sim::Simulation;

/// The scene's parameters with the flags applied ([`Overrides::apply`]),
/// as a one-line error naming the flag and the scene.
/// A scene estimated to need more memory than `--max-memory` allows, or
/// than the process may use, is refused here ([`limits::check_memory`]).
pub fn apply_overrides(scene: &Scene, o: &Overrides) -> Result<Params, String> {
    apply_overrides_over(scene, &scene.params, o)
}

/// [`apply_overrides`] over `base` instead of the scene's own parameters
/// (one side of a comparison).
pub fn apply_overrides_over(scene: &Scene, base: &Params, o: &Overrides) -> Result<Params, String> {
    let params = o.apply(base, &scene.model.features()).map_err(|e| {
        format!(
            "{}: {} (scene {})",
            e.flag(),
            e.message,
            scene.path.display()
        )
    })?;
    let estimate = crate::sim::memory::estimate(&scene.model, &params);
    limits::check_memory(&estimate, o.max_memory, limits::memory_limit())
        .map_err(|e| format!("{}: {e}", scene.path.display()))?;
    Ok(params)
}

/// Runs the scene and writes the CSV.
pub fn run(args: &RunArgs) -> Result<(), String> {
    if args.every == 0 {
        return Err("--every must be at least 1".to_owned());
    }
    let scene = scene::load(&args.scene).map_err(|e| e.to_string())?;
    let params = apply_overrides(&scene, &args.overrides)?;
    let total = limits::check_steps(params.duration, params.dt, args.max_steps)?;
    for warning in params.warnings() {
        eprintln!("contactlab: {warning}");
    }
    // From here on the run may take long (a first row and a first step of
    // thousands of bodies): the bar shows after a second whatever happens.
    let progress = Progress::start(total);
    let mut sim = Simulation::with_params(scene, params);
    args.overrides.apply_settings(sim.step_settings_mut());
    if let Some(path) = &args.state
        && let Some(note) =
            crate::sim::snapshot::load_into(&mut sim, path).map_err(|e| e.to_string())?
    {
        eprintln!("{note}");
    }
    let header = csv_header(sim.model());
    let first = csv_row(sim.model(), &sim.params, &sim.state, None);
    let rows = limits::csv_rows(total, args.every);
    limits::check_csv_size(header.len(), first.len(), rows, args.max_csv_size)?;
    if let Some(dir) = &args.dump_lcp {
        if sim.params.solver == SolverKind::Nsgs
            && sim.params.cone() == FrictionCone::Circular
            && !sim.model().is_planar()
        {
            return Err(
                "--dump-lcp: NSGS on the circular cone in space solves no LCP; \
                        add --cone pyramid to keep the LCP (29) it solves"
                    .to_owned(),
            );
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("--dump-lcp {}: {e}", dir.display()))?;
        sim.set_record_lcp_up_to(args.max_dump_size);
    }
    interrupt::install()?;
    let mut out = CsvOutput::create(&args.csv, args.max_csv_size)?;
    let written = out.line(&header).and_then(|()| out.line(&first));
    if let Err(e) = written {
        return Err(format!("--csv: {e}; {}", out.keep_partial()));
    }
    let mut unconverged = Unconverged::default();
    for step in 1..=total {
        if let Err(cause) = take_step(&mut sim, args, step, total, &mut out) {
            drop(progress);
            return Err(format!("{cause}; {}", out.keep_partial()));
        }
        unconverged.count(sim.last.as_ref());
        progress.set(step);
    }
    drop(progress);
    out.commit()?;
    if sim.params.solver == SolverKind::Nsgs {
        eprintln!("{}", unconverged.line(total, sim.params.tolerance));
    }
    Ok(())
}

/// The steps whose NSGS solve reached its sweep limit and went on with its
/// best iterate ([`LcpStatus::Unconverged`]), and their largest residual.
#[derive(Default)]
struct Unconverged {
    steps: usize,
    largest: f64,
}

impl Unconverged {
    fn count(&mut self, report: Option<&crate::stepper::StepReport>) {
        if let Some(r) = report
            && r.status == LcpStatus::Unconverged
        {
            self.steps += 1;
            self.largest = self.largest.max(r.residual);
        }
    }

    fn line(&self, total: u64, tolerance: f64) -> String {
        if self.steps == 0 {
            format!("nsgs: every one of {total} steps reached its tolerance {tolerance:e}")
        } else {
            format!(
                "nsgs: {} of {total} steps reached the sweep limit and went on with their best \
                 iterate, residual up to {:.2e} (tolerance {tolerance:e}; --strict stops at the first)",
                self.steps, self.largest
            )
        }
    }
}

/// One step of the run: stepped, dumped, checked and written. `Err` is the
/// failure's one-line cause (without where the partial CSV is).
fn take_step(
    sim: &mut Simulation,
    args: &RunArgs,
    step: u64,
    total: u64,
    out: &mut CsvOutput,
) -> Result<(), String> {
    let at = |sim: &Simulation| {
        format!(
            "step {step} of {total} at t = {} s (stepper {})",
            limits::short(sim.state.t),
            sim.params.stepper
        )
    };
    if let Some(signal) = interrupt::received() {
        return Err(format!(
            "interrupted by {} before {}",
            interrupt::name(signal),
            at(sim)
        ));
    }
    let status = match sim.step() {
        Ok(report) => report.status,
        Err(e) => return Err(format!("{}: {e}", at(sim))),
    };
    if let (Some(dir), Some(report)) = (&args.dump_lcp, &sim.last) {
        match &report.lcp {
            Some(lcp) => {
                let path = dir.join(format!("step_{step:06}.dat"));
                let comment = format!(
                    "contactlab step {step}, t = {} s, scene {}",
                    report.t,
                    sim.scene.path.display()
                );
                siconos::write(lcp, &path, &comment).map_err(|e| format!("{}: {e}", at(sim)))?;
            }
            None if report.lcp_size > args.max_dump_size => {
                return Err(format!(
                    "{}: --dump-lcp: its LCP has {} unknowns, more than --max-dump-size {} \
                     (raise it, and `contactlab lcp --max-size` with it); the files of the \
                     steps before it are written",
                    at(sim),
                    report.lcp_size,
                    args.max_dump_size
                ));
            }
            None => {}
        }
    }
    if !status.advances() {
        return Err(sim
            .failure_message()
            .unwrap_or_else(|| format!("{}: LCP {status}: {}", at(sim), status.reason())));
    }
    if step.is_multiple_of(args.every) || step == total {
        let row = csv_row(sim.model(), &sim.params, &sim.state, sim.last.as_ref());
        out.line(&row)
            .map_err(|e| format!("{}: --csv {}: {e}", at(sim), args.csv.display()))?;
    }
    Ok(())
}
