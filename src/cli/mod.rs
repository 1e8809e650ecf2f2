//! The command line: `contactlab [SCENE]` opens the viewer, `contactlab run`
//! steps a scene headless to CSV, `contactlab compare` runs it twice with
//! different parameters, `contactlab lcp` solves Siconos `.dat` files.

mod compare;
mod csv;
mod lcp_cmd;
pub mod limits;
mod output;
mod overrides;
mod progress;
mod run;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

pub use compare::{compare_header, divergence, parse_side};
pub use csv::{csv_header, csv_row, summary_row};

/// contactlab: rigid-body dynamics with contact and friction by complementarity
/// time-stepping.
#[derive(Debug, Parser)]
#[command(version, about, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// What to do (without one: open the viewer).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Viewer options (when no subcommand is given).
    #[command(flatten)]
    pub view: ViewArgs,
}

/// Options of the viewer.
#[derive(Debug, Clone, Args)]
pub struct ViewArgs {
    /// Scene to open (default: scenes/rod.ron).
    pub scene: Option<PathBuf>,
    /// Save a screenshot to this PNG after `--frames` frames, then exit.
    #[arg(long)]
    pub screenshot: Option<PathBuf>,
    /// Frames to render before the screenshot.
    #[arg(long, default_value_t = 60)]
    pub frames: u32,
    /// Start from this snapshot (saved with the panel's "Save state").
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// Open the scene paused (Space runs it). With `--screenshot`, the frame
    /// time it prints is then the drawing's alone.
    #[arg(long)]
    pub paused: bool,
    /// For screenshots: after a third of `--frames`, press the pointer on
    /// this body in "perturb" mode (it is selected and grabbed at its centre)…
    #[arg(long, hide = true)]
    pub drag: Option<String>,
    /// … and move the pointer by DX,DY logical pixels, holding it there.
    #[arg(long, hide = true, allow_hyphen_values = true)]
    pub drag_by: Option<String>,
    /// Multisample anti-aliasing of the bodies' edges: 1 (off) or 4 samples
    /// per pixel. Default: 4 on a GPU, 1 on a software renderer (Mesa's
    /// llvmpipe), where 4 samples more than double the frame time.
    #[arg(long)]
    pub msaa: Option<u32>,
    /// Parameter overrides.
    #[command(flatten)]
    pub overrides: Overrides,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Step a scene headless and write its trajectory as CSV.
    Run(Box<RunArgs>),
    /// Record a video (MP4, GIF or PNG frames) of a scene, frame-exact.
    Record(Box<RecordArgs>),
    /// Run a scene twice, A and B, with different parameters, and write both
    /// runs' summaries and their divergence as one CSV.
    Compare(Box<CompareArgs>),
    /// Solve LCPs in the Siconos `.dat` format and print one line per file.
    Lcp {
        /// The `.dat` files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Refuse files whose LCP has more unknowns than this (Lemke's dense
        /// tableau takes n² memory and up to n³ work).
        #[arg(long, default_value_t = limits::DEFAULT_MAX_LCP_SIZE)]
        max_size: usize,
    },
}

pub use overrides::Overrides;

/// Arguments of `contactlab run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The scene file.
    pub scene: PathBuf,
    /// Parameter overrides.
    #[command(flatten)]
    pub overrides: Overrides,
    /// Write one CSV row every N steps.
    #[arg(long, default_value_t = 1)]
    pub every: u64,
    /// Where the CSV goes.
    #[arg(long)]
    pub csv: PathBuf,
    /// Write every step's LCP to this directory in the Siconos `.dat` format
    /// (with NSGS: on the pyramid or in the plane; the circular cone in space
    /// solves no LCP).
    #[arg(long)]
    pub dump_lcp: Option<PathBuf>,
    /// Stop a `--dump-lcp` run at a step whose LCP has more unknowns than
    /// this (the default is what `contactlab lcp` reads without --max-size).
    #[arg(long, default_value_t = limits::DEFAULT_MAX_LCP_SIZE)]
    pub max_dump_size: usize,
    /// Refuse a run of more steps than this (duration / h).
    #[arg(long, default_value_t = limits::DEFAULT_MAX_STEPS)]
    pub max_steps: u64,
    /// Refuse to write more CSV than this: bytes, or with a unit K, M, G, T
    /// (binary).
    #[arg(long, value_parser = limits::parse_bytes, default_value = "1G")]
    pub max_csv_size: u64,
    /// Start from this snapshot (written by the viewer's "Save state") instead
    /// of the scene's initial state; the run lasts `duration` from there.
    #[arg(long)]
    pub state: Option<PathBuf>,
}

/// Arguments of `contactlab compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The scene file.
    pub scene: PathBuf,
    /// Run A's parameters as KEY=VALUE,... where the keys are `run`'s flags
    /// without their dashes: stepper, solver, mu, edges, dt, restitution,
    /// damping, stiffness, ncp_iterations, tolerance, max_iterations, strict,
    /// cone, threads, max_step_pivots, max_step_seconds. Empty: the scene's.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub a: String,
    /// Run B's parameters, as for --a.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    pub b: String,
    /// Simulated time of both runs, s.
    #[arg(long, allow_hyphen_values = true)]
    pub duration: Option<f64>,
    /// Write one row every N steps of the coarser step size.
    #[arg(long, default_value_t = 1)]
    pub every: u64,
    /// Where the CSV goes: t, each run's summary columns (A.kinetic_energy,
    /// …, B.nsgs_sweeps) and the divergence, the largest distance between a
    /// body in A and the same body in B, m.
    #[arg(long)]
    pub csv: PathBuf,
    /// Refuse a run of more steps than this (duration / h).
    #[arg(long, default_value_t = limits::DEFAULT_MAX_STEPS)]
    pub max_steps: u64,
    /// Refuse to write more CSV than this: bytes, or with a unit K, M, G, T
    /// (binary).
    #[arg(long, value_parser = limits::parse_bytes, default_value = "1G")]
    pub max_csv_size: u64,
    /// Refuse a scene estimated to need more memory than this (per run), as
    /// `run --max-memory`.
    #[arg(long, value_parser = limits::parse_bytes)]
    pub max_memory: Option<u64>,
}

/// Arguments of `contactlab record`.
#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// The scene file.
    pub scene: PathBuf,
    /// FILE.mp4 (H.264), FILE.gif, or DIR/ for a PNG sequence.
    #[arg(long)]
    pub out: PathBuf,
    /// Frames per second of the video [default: 60; 50 for a GIF, the most
    /// it can play].
    #[arg(long, allow_hyphen_values = true)]
    pub fps: Option<i64>,
    /// Playback speed: simulated seconds per second of video (0.1 = 10× slow
    /// motion), 0.001–1000.
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    pub speed: f64,
    /// Frame size in pixels, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720")]
    pub size: String,
    /// Burn scene name, time and parameters into the frames.
    #[arg(long)]
    pub overlay: bool,
    /// Include the viewer's side panel.
    #[arg(long)]
    pub with_panel: bool,
    /// Multisample anti-aliasing of the bodies' edges: 1 (off) or 4 samples
    /// per pixel. The tables' grid lines are smooth either way. A software
    /// renderer takes nearly twice as long with 4.
    #[arg(long, default_value_t = 1)]
    pub msaa: u32,
    /// Film two runs of the scene, A and B, each labelled: B as a
    /// translucent ghost over A, or side by side (`--view split`). A
    /// comparison file is filmed so without it.
    #[arg(long)]
    pub compare: bool,
    /// With --compare: run A's parameters as KEY=VALUE,... (the keys of
    /// `compare --a`), over the other flags.
    #[arg(long, allow_hyphen_values = true, requires = "compare")]
    pub a: Option<String>,
    /// With --compare: run B's parameters, as for --a.
    #[arg(long, allow_hyphen_values = true, requires = "compare")]
    pub b: Option<String>,
    /// How a comparison is filmed: `ghost` (B over A) or `split` (side by
    /// side) [default: the comparison file's, else ghost].
    #[arg(long, value_parser = parse_view)]
    pub view: Option<crate::scene::comparison::CompareView>,
    /// Parameter overrides (`--duration` is the simulated time recorded).
    #[command(flatten)]
    pub overrides: Overrides,
}

/// Parses `--view`: `ghost` or `split`.
fn parse_view(text: &str) -> Result<crate::scene::comparison::CompareView, String> {
    use crate::scene::comparison::CompareView;
    match text.trim().to_ascii_lowercase().as_str() {
        "ghost" => Ok(CompareView::Ghost),
        "split" | "side-by-side" => Ok(CompareView::Split),
        _ => Err(format!("`{text}`: expected ghost or split")),
    }
}

/// Runs a subcommand; `Err` carries the one-line reason for stderr.
pub fn dispatch(command: Command) -> Result<(), String> {
    match command {
        Command::Run(args) => run::run(&args),
        Command::Compare(args) => compare::compare(&args),
        Command::Lcp { files, max_size } => lcp_cmd::run(&files, max_size),
        Command::Record(_) => Err(
            "this build has no viewer (built without the `viewer` feature), which `record` renders with"
                .to_owned(),
        ),
    }
}

pub use run::apply_overrides;
