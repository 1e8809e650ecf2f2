//! Recording videos: the viewer's Record button (F9) and `contactlab record`.
//!
//! Capture is deterministic. While recording, the app clock is frozen (no
//! fixed ticks, no interpolation): output frame i shows the simulation after
//! exactly ⌊i·Δ/h⌋ steps, Δ = speed / fps (the remainder is carried, so no
//! time is lost), with the bodies at the exact state. Each frame is rendered
//! and read back from the GPU ([`Screenshot`]); an encoder thread writes the
//! file ([`crate::record`]). How fast the machine renders only changes how
//! long the recording takes, not what it shows.

use super::panel::PanelLayout;
use super::sim::{self, History, PreviousState, Sim, SimControl, SimSystems};
use crate::params::StepperKind;
use crate::record::{
    EncoderThread, Format, FramePixels, PixelOrder, Summary, VideoSpec, VideoWriter,
};
use bevy::prelude::*;
use bevy::render::render_resource::TextureFormat;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};
use bevy::time::TimeUpdateStrategy;
use bevy::window::PrimaryWindow;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Frames requested from the GPU but not yet read back, at most.
const MAX_IN_FLIGHT: u64 = 6;
/// Frames the encoder thread may queue.
const ENCODER_QUEUE: usize = 4;
/// Frames rendered before the first capture once the window has its size (the
/// panel's layout settles in the first frames).
const WARMUP_FRAMES: u32 = 4;
/// Frames rendered without a read-back arriving before giving up.
const STALL_FRAMES: u32 = 2000;
/// Frames to wait for the window to take the recording size.
const RESIZE_TIMEOUT: u32 = 300;

/// The recording options (the panel's Record section; the command line's flags).
#[derive(Resource, Debug, Clone, PartialEq)]
pub struct RecordSettings {
    /// Output frames per second.
    pub fps: u32,
    /// Simulated seconds per second of video.
    pub speed: f64,
    /// Frame size in pixels; `None`: the window's size.
    pub size: Option<(u32, u32)>,
    /// Output format.
    pub format: Format,
    /// Keep the panel in the frames.
    pub with_panel: bool,
    /// Burn scene name, time and parameters into the frames.
    pub overlay: bool,
    /// Where the viewer's recordings go.
    pub dir: PathBuf,
    /// Samples per pixel of the 3D view (1 = off, 2, 4, 8).
    pub msaa: u32,
    /// Start or stop at the next frame (the button, F9).
    pub toggle: bool,
    /// The last recording's result, for the panel.
    pub outcome: Option<Result<String, String>>,
}

impl Default for RecordSettings {
    fn default() -> Self {
        Self {
            fps: 60,
            speed: 1.0,
            size: Some((1280, 720)),
            format: Format::Mp4,
            with_panel: false,
            overlay: true,
            dir: PathBuf::from("recordings"),
            msaa: 4,
            toggle: false,
            outcome: None,
        }
    }
}

/// Shared with the code that runs the app (the world is gone when it returns).
#[derive(Debug, Clone, Default)]
pub struct Outcome(Arc<Mutex<Option<Result<Summary, String>>>>);

impl Outcome {
    fn set(&self, value: Result<Summary, String>) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(value);
        }
    }

    /// The result, if the recording ended.
    pub fn take(&self) -> Option<Result<Summary, String>> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the window size and the first frames.
    Warmup { frames: u32, waited: u32 },
    /// Stepping and capturing.
    Capturing,
    /// All frames requested; waiting for the read-backs.
    Draining,
}

/// What was changed for the recording, to put back afterwards.
#[derive(Debug, Clone)]
struct Saved {
    panel_visible: bool,
    window_size: Option<UVec2>,
    title: Option<String>,
}

/// A recording in progress.
#[derive(Resource)]
pub struct Recording {
    spec: VideoSpec,
    encoder: Option<EncoderThread>,
    phase: Phase,
    /// Frames to record (`contactlab record`), or until stopped (viewer).
    total: Option<u64>,
    /// The next frame to request.
    next: u64,
    /// Frames handed to the encoder.
    delivered: u64,
    /// Read-backs that arrived out of order.
    arrived: BTreeMap<u64, FramePixels>,
    /// Request a capture in this frame's `Last`.
    capture_now: bool,
    /// Stepping: frame index, step count and h at the last change of h.
    base: (u64, u64, f64),
    steps: u64,
    settings: RecordSettings,
    /// Exit the app when done (`contactlab record`).
    exit_when_done: bool,
    saved: Option<Saved>,
    started: Instant,
    progress: Option<ProgressBar>,
    error: Option<String>,
    outcome: Outcome,
    /// Frames rendered since the last delivery while read-backs are awaited.
    stalled: u32,
}

impl Recording {
    /// Frames delivered to the encoder so far.
    pub fn frames(&self) -> u64 {
        self.delivered
    }

    /// The output path.
    pub fn path(&self) -> &std::path::Path {
        &self.spec.path
    }

    fn frame_dt(&self) -> f64 {
        self.settings.speed / self.settings.fps as f64
    }
}

/// The viewer's Record button, key and overlay.
pub struct RecordPlugin;

impl Plugin for RecordPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<RecordSettings>()
            .add_systems(Update, record_key)
            .add_systems(PostUpdate, toggle_recording)
            .add_systems(EguiPrimaryContextPass, burn_in_overlay);
        add_capture_systems(app);
    }
}

fn add_capture_systems(app: &mut App) {
    app.add_systems(
        RunFixedMainLoop,
        advance_recording
            .after(SimSystems::Prepare)
            .in_set(RunFixedMainLoopSystems::BeforeFixedMainLoop),
    )
    .add_systems(Last, (request_capture, deliver_frames).chain());
}

/// `contactlab record SCENE --out FILE|DIR/ …`: records the scene from its
/// start, headless of any interaction, then exits.
pub fn record_command(args: &crate::cli::RecordArgs) -> Result<(), String> {
    let format = Format::of_path(&args.out)?;
    let (width, height) = crate::record::parse_size(&args.size)?;
    if !(args.speed.is_finite() && args.speed > 0.0 && args.speed <= 1000.0) {
        return Err(format!(
            "--speed {}: must be a positive number up to 1000",
            args.speed
        ));
    }
    if ![1, 2, 4, 8].contains(&args.msaa) {
        return Err(format!("--msaa {}: must be 1, 2, 4 or 8", args.msaa));
    }
    let spec = VideoSpec::new(args.out.clone(), width, height, args.fps)?;
    debug_assert_eq!(spec.format, format);
    let simulation = super::load_simulation(&args.scene, &args.overrides)?;
    let duration = simulation.params.duration;
    let frames = (duration / args.speed * args.fps as f64).round();
    if !(1.0..=1e7).contains(&frames) {
        return Err(format!(
            "--duration {duration}: gives {frames} frames at --fps {} --speed {}",
            args.fps, args.speed
        ));
    }
    let frames = frames as u64;
    // Fails here, before any window opens, if the output cannot be written.
    let writer = VideoWriter::create(&spec)?;
    let settings = RecordSettings {
        fps: args.fps,
        speed: args.speed,
        size: Some((width, height)),
        format,
        with_panel: args.with_panel,
        overlay: args.overlay,
        msaa: args.msaa,
        ..RecordSettings::default()
    };
    let progress = ProgressBar::new(frames);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:40} {pos}/{len} frames  {elapsed} elapsed, ETA {eta}")
    {
        progress.set_style(style);
    }
    let outcome = Outcome::default();
    let started = Instant::now();
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title: format!("contactlab record — {}", simulation.scene.name),
                    resolution: bevy::window::WindowResolution::new(width, height)
                        .with_scale_factor_override(1.0),
                    resizable: false,
                    present_mode: bevy::window::PresentMode::AutoNoVsync,
                    ..default()
                }),
                ..default()
            })
            .set(bevy::render::RenderPlugin {
                // Every pipeline exists before the frame that needs it is
                // drawn: no frame misses an object whose shader compiles late.
                synchronous_pipeline_compilation: true,
                ..default()
            })
            .set(bevy::log::LogPlugin {
                filter: "wgpu=error,naga=warn,bevy_render=warn,bevy_winit=warn".to_owned(),
                ..default()
            }),
    )
    .insert_resource(bevy::winit::WinitSettings {
        focused_mode: bevy::winit::UpdateMode::Continuous,
        unfocused_mode: bevy::winit::UpdateMode::Continuous,
    })
    .insert_resource(super::SceneSource {
        // A recording is reproducible: no reload while it runs.
        watch: false,
        ..super::SceneSource::new(args.scene.clone(), args.overrides.clone())
    })
    .add_plugins(super::SimPlugin::new(simulation))
    .add_plugins(super::ViewerPlugin)
    .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::ZERO))
    .insert_resource(settings.clone())
    .insert_resource(Recording {
        spec: spec.clone(),
        encoder: Some(EncoderThread::spawn(writer, ENCODER_QUEUE)),
        phase: Phase::Warmup {
            frames: 0,
            waited: 0,
        },
        total: Some(frames),
        next: 0,
        delivered: 0,
        arrived: BTreeMap::new(),
        capture_now: false,
        base: (0, 0, 0.0),
        steps: 0,
        settings,
        exit_when_done: true,
        saved: None,
        started,
        progress: Some(progress),
        error: None,
        stalled: 0,
        outcome: outcome.clone(),
    })
    .add_systems(Startup, hide_panel_unless_wanted)
    .add_systems(PostUpdate, set_msaa)
    .add_systems(EguiPrimaryContextPass, burn_in_overlay);
    add_capture_systems(&mut app);
    let exit = app.run();
    let result = outcome.take().unwrap_or_else(|| {
        Err(match exit {
            AppExit::Success => "the window closed before the recording ended".to_owned(),
            AppExit::Error(code) => format!("the recorder exited with code {code}"),
        })
    });
    let summary = result?;
    println!(
        "wrote {}: {} frames, {width}x{height}, {} fps, {:.2} s of video ({duration} s simulated at {}x) in {:.1} s",
        summary.path.display(),
        summary.frames,
        args.fps,
        summary.frames as f64 / args.fps as f64,
        args.speed,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn hide_panel_unless_wanted(settings: Res<RecordSettings>, mut layout: ResMut<PanelLayout>) {
    layout.visible = settings.with_panel;
}

/// Multisampling of the recording camera (`--msaa`).
fn set_msaa(
    settings: Res<RecordSettings>,
    mut cameras: Query<&mut Msaa, With<super::camera::MainCamera>>,
) {
    for mut msaa in &mut cameras {
        let wanted = match settings.msaa {
            1 => Msaa::Off,
            2 => Msaa::Sample2,
            8 => Msaa::Sample8,
            _ => Msaa::Sample4,
        };
        if *msaa != wanted {
            *msaa = wanted;
        }
    }
}

/// F9 starts and stops a recording.
fn record_key(
    keys: Res<ButtonInput<KeyCode>>,
    layout: Res<PanelLayout>,
    mut settings: ResMut<RecordSettings>,
) {
    if !layout.text_editing && keys.just_pressed(KeyCode::F9) {
        settings.toggle = true;
    }
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `YYYYMMDD-HHMMSS` (UTC).
fn timestamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    if s.is_empty() { "scene".to_owned() } else { s }
}

/// Starts or stops the viewer's recording when asked.
fn toggle_recording(world: &mut World) {
    if !std::mem::take(&mut world.resource_mut::<RecordSettings>().toggle) {
        return;
    }
    if world.contains_resource::<Recording>() {
        let mut rec = world.resource_mut::<Recording>();
        if rec.phase == Phase::Capturing {
            rec.phase = Phase::Draining;
        } else if matches!(rec.phase, Phase::Warmup { .. }) {
            rec.error = Some("stopped before the first frame".to_owned());
            rec.phase = Phase::Draining;
        }
        return;
    }
    let settings = world.resource::<RecordSettings>().clone();
    match start_viewer_recording(world, &settings) {
        Ok(()) => world.resource_mut::<RecordSettings>().outcome = None,
        Err(e) => world.resource_mut::<RecordSettings>().outcome = Some(Err(e)),
    }
}

fn start_viewer_recording(world: &mut World, settings: &RecordSettings) -> Result<(), String> {
    let mut windows = world.query_filtered::<&mut Window, With<PrimaryWindow>>();
    let window = windows
        .single(world)
        .map_err(|_| "no window to record".to_owned())?;
    let window_size = window.physical_size();
    let title = window.title.clone();
    let (mut w, mut h) = settings.size.unwrap_or((window_size.x, window_size.y));
    if settings.format == Format::Mp4 {
        (w, h) = (w & !1, h & !1);
    }
    let name = slug(&world.resource::<Sim>().scene.name);
    std::fs::create_dir_all(&settings.dir)
        .map_err(|e| format!("{}: {e}", settings.dir.display()))?;
    let file = match settings.format {
        Format::Mp4 => format!("{name}-{}.mp4", timestamp()),
        Format::Gif => format!("{name}-{}.gif", timestamp()),
        Format::PngSequence => format!("{name}-{}/", timestamp()),
    };
    let spec = VideoSpec::new(settings.dir.join(file), w, h, settings.fps)?;
    let writer = VideoWriter::create(&spec)?;
    let panel_visible = world.resource::<PanelLayout>().visible;
    world.resource_mut::<PanelLayout>().visible = settings.with_panel;
    if UVec2::new(w, h) != window_size
        && let Ok(mut window) = windows.single_mut(world)
    {
        window.resolution.set_physical_resolution(w, h);
    }
    world.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::ZERO));
    let outcome = Outcome::default();
    world.insert_resource(Recording {
        spec,
        encoder: Some(EncoderThread::spawn(writer, ENCODER_QUEUE)),
        phase: Phase::Warmup {
            frames: 0,
            waited: 0,
        },
        total: None,
        next: 0,
        delivered: 0,
        arrived: BTreeMap::new(),
        capture_now: false,
        base: (0, 0, 0.0),
        steps: 0,
        settings: settings.clone(),
        exit_when_done: false,
        saved: Some(Saved {
            panel_visible,
            window_size: (UVec2::new(w, h) != window_size).then_some(window_size),
            title: Some(title),
        }),
        started: Instant::now(),
        progress: None,
        error: None,
        stalled: 0,
        outcome,
    });
    Ok(())
}

/// Steps the simulation for the frame about to be captured.
fn advance_recording(
    mut rec: Option<ResMut<Recording>>,
    mut sim: ResMut<Sim>,
    mut previous: ResMut<PreviousState>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<History>,
    window: Option<Single<&Window, With<PrimaryWindow>>>,
) {
    let Some(rec) = rec.as_mut() else {
        return;
    };
    if rec.error.is_some() {
        return;
    }
    // The bodies are drawn at the exact state, not between two steps.
    previous.q.clone_from(&sim.state.q);
    match rec.phase {
        Phase::Warmup { frames, waited } => {
            let size = window.map(|w| w.physical_size());
            let wanted = UVec2::new(rec.spec.width, rec.spec.height);
            let sized = size == Some(wanted);
            // The viewer records what it gets, cropped or padded; the command
            // line promises the exact size.
            if !sized && waited >= RESIZE_TIMEOUT && rec.exit_when_done {
                rec.error = Some(format!(
                    "the window is {}, not {}x{}: is the screen large enough? (e.g. xvfb-run -s \"-screen 0 {}x{}x24\")",
                    size.map_or("missing".to_owned(), |s| format!("{}x{}", s.x, s.y)),
                    wanted.x,
                    wanted.y,
                    wanted.x.max(1280),
                    wanted.y.max(800),
                ));
                return;
            }
            let frames = if sized || waited >= RESIZE_TIMEOUT {
                frames + 1
            } else {
                0
            };
            rec.phase = if frames > WARMUP_FRAMES {
                rec.base = (0, 0, sim.params.dt);
                rec.steps = 0;
                Phase::Capturing
            } else {
                Phase::Warmup {
                    frames,
                    waited: waited + 1,
                }
            };
            if rec.phase != Phase::Capturing {
                return;
            }
        }
        Phase::Draining => return,
        Phase::Capturing => {}
    }
    if rec.total.is_some_and(|t| rec.next >= t) {
        rec.phase = Phase::Draining;
        return;
    }
    if rec.next - rec.delivered >= MAX_IN_FLIGHT || (control.paused && rec.next > 0) {
        return;
    }
    let i = rec.next;
    if i > 0 {
        // Whole steps of h up to i·Δ of simulated time; the rest carries over.
        let h = sim.params.dt;
        if h != rec.base.2 {
            rec.base = (i - 1, rec.steps, h);
        }
        let (i0, n0, h0) = rec.base;
        let target = n0 + (((i - i0) as f64 * rec.frame_dt()) / h0 + 1e-9).floor() as u64;
        while rec.steps < target {
            if !sim::advance(&mut sim, &mut previous, &mut control, &mut history) {
                let reason = control
                    .halt
                    .clone()
                    .or_else(|| control.step_error.clone())
                    .unwrap_or_else(|| "a step failed".to_owned());
                if rec.exit_when_done {
                    rec.error = Some(format!("frame {i}: {reason}"));
                } else {
                    rec.phase = Phase::Draining;
                }
                return;
            }
            rec.steps += 1;
        }
        previous.q.clone_from(&sim.state.q);
    }
    rec.capture_now = true;
}

/// Requests the read-back of this frame.
fn request_capture(mut commands: Commands, rec: Option<ResMut<Recording>>) {
    let Some(mut rec) = rec else {
        return;
    };
    if !std::mem::take(&mut rec.capture_now) {
        return;
    }
    let index = rec.next;
    rec.next += 1;
    commands.spawn(Screenshot::primary_window()).observe(
        move |captured: On<ScreenshotCaptured>, rec: Option<ResMut<Recording>>| {
            let Some(mut rec) = rec else {
                return;
            };
            let image: &Image = &captured.image;
            let order = match image.texture_descriptor.format {
                TextureFormat::Bgra8Unorm | TextureFormat::Bgra8UnormSrgb => PixelOrder::Bgra,
                TextureFormat::Rgba8Unorm | TextureFormat::Rgba8UnormSrgb => PixelOrder::Rgba,
                other => {
                    rec.error = Some(format!("cannot record a window of format {other:?}"));
                    return;
                }
            };
            let Some(pixels) = image.data.clone() else {
                rec.error = Some(format!("frame {index}: the read-back has no pixels"));
                return;
            };
            rec.arrived.insert(
                index,
                FramePixels {
                    width: image.width(),
                    height: image.height(),
                    order,
                    pixels,
                },
            );
        },
    );
}

/// Hands arrived frames to the encoder, in order; ends the recording when all
/// frames are in (or on error).
fn deliver_frames(world: &mut World) {
    let Some(mut rec) = world.get_resource_mut::<Recording>() else {
        return;
    };
    let rec = &mut *rec;
    while let Some(frame) = rec.arrived.remove(&rec.delivered) {
        if rec.exit_when_done && (frame.width, frame.height) != (rec.spec.width, rec.spec.height) {
            // The command line promises the exact size.
            rec.error = Some(format!(
                "frame {} is {}x{}, not {}x{} (the window was resized)",
                rec.delivered, frame.width, frame.height, rec.spec.width, rec.spec.height
            ));
            break;
        }
        if !rec.encoder.as_ref().is_some_and(|e| e.push(frame)) {
            rec.error = Some(match rec.encoder.take().map(EncoderThread::finish) {
                Some(Err(e)) => e,
                _ => "the encoder stopped".to_owned(),
            });
            break;
        }
        rec.delivered += 1;
        rec.stalled = 0;
        if let Some(bar) = &rec.progress {
            bar.set_position(rec.delivered);
        }
    }
    if rec.delivered < rec.next {
        rec.stalled += 1;
        if rec.stalled > STALL_FRAMES && rec.error.is_none() {
            rec.error = Some(format!(
                "the GPU read-back of frame {} never arrived",
                rec.delivered
            ));
        }
    }
    let done = rec.phase == Phase::Draining && rec.delivered == rec.next;
    if !(done || rec.error.is_some()) {
        return;
    }
    let Some(rec) = world.remove_resource::<Recording>() else {
        return;
    };
    end_recording(world, rec);
}

fn end_recording(world: &mut World, mut rec: Recording) {
    if let Some(bar) = rec.progress.take() {
        bar.finish_and_clear();
    }
    let result = match (rec.error.take(), rec.encoder.take()) {
        // Dropping the encoder abandons the output (its temporary file goes).
        (Some(error), _) => Err(error),
        (None, Some(encoder)) => encoder.finish(),
        (None, None) => Err("the encoder stopped".to_owned()),
    };
    if rec.exit_when_done {
        rec.outcome.set(result.clone());
        world.write_message(if result.is_ok() {
            AppExit::Success
        } else {
            AppExit::error()
        });
        return;
    }
    // The viewer: put the clock, panel and window back.
    world.insert_resource(TimeUpdateStrategy::Automatic);
    if let Some(saved) = rec.saved.take() {
        world.resource_mut::<PanelLayout>().visible = saved.panel_visible;
        let mut windows = world.query_filtered::<&mut Window, With<PrimaryWindow>>();
        if let Ok(mut window) = windows.single_mut(world) {
            if let Some(size) = saved.window_size {
                window.resolution.set_physical_resolution(size.x, size.y);
            }
            if let Some(title) = saved.title {
                window.title = title;
            }
        }
    }
    let elapsed = rec.started.elapsed().as_secs_f64();
    world.resource_mut::<RecordSettings>().outcome = Some(match result {
        Ok(s) => Ok(format!(
            "saved {} ({} frames, {:.1} MB, {elapsed:.0} s)",
            s.path.display(),
            s.frames,
            s.bytes as f64 / 1e6
        )),
        Err(e) => Err(format!("recording failed: {e}")),
    });
}

/// The viewer's indicator: `● REC` and the frame count in the window title
/// (not in the frames).
pub fn indicator(rec: &Recording) -> String {
    format!(
        "● REC {} frames → {}",
        rec.delivered,
        rec.spec.path.display()
    )
}

/// The text burned into the frames with `--overlay`.
pub fn overlay_text(sim: &Sim) -> String {
    let p = &sim.params;
    let e = if p.stepper.uses_restitution() {
        format!("{:.2}", p.restitution)
    } else {
        "0 (inelastic)".to_owned()
    };
    let k = if sim.model().is_planar() { 2 } else { p.edges };
    let stepper = match p.stepper {
        StepperKind::StewartTrinkle => "Stewart–Trinkle",
        StepperKind::MoreauJean => "Moreau–Jean",
        StepperKind::AnitescuPotra => "Anitescu–Potra",
        StepperKind::EulerLcp => "Euler LCP",
    };
    format!(
        "{}   t = {:.3} s\nμ = {:.2}   e = {e}   h = {} s   k = {k}   {stepper}",
        sim.scene.name, sim.state.t, p.mu, p.dt
    )
}

/// Draws the overlay in the 3D view's top-left corner while recording.
fn burn_in_overlay(
    mut contexts: EguiContexts,
    rec: Option<Res<Recording>>,
    sim: Res<Sim>,
    layout: Res<PanelLayout>,
    mut window: Option<Single<&mut Window, With<PrimaryWindow>>>,
) {
    let Some(rec) = rec else {
        return;
    };
    if !rec.exit_when_done
        && let Some(window) = window.as_mut()
    {
        let title = indicator(&rec);
        if window.title != title {
            window.title = title;
        }
    }
    if !rec.settings.overlay {
        return;
    }
    let Ok(ctx) = contexts.ctx_mut() else {
        return;
    };
    let left = if layout.visible { layout.width } else { 0.0 };
    egui::Area::new(egui::Id::new("record overlay"))
        .anchor(egui::Align2::LEFT_TOP, egui::vec2(left + 10.0, 10.0))
        .interactable(false)
        .show(ctx, |ui| {
            egui::Frame::new()
                .fill(egui::Color32::from_black_alpha(150))
                .corner_radius(4.0)
                .inner_margin(egui::Margin::symmetric(8, 5))
                .show(ui, |ui| {
                    ui.label(
                        egui::RichText::new(overlay_text(&sim))
                            .monospace()
                            .size(14.0)
                            .color(egui::Color32::WHITE),
                    );
                });
        });
}

/// The panel's Record section.
pub fn record_section(ui: &mut egui::Ui, settings: &mut RecordSettings, rec: Option<&Recording>) {
    egui::CollapsingHeader::new("Record")
        .default_open(false)
        .show(ui, |ui| {
            let recording = rec.is_some();
            ui.add_enabled_ui(!recording, |ui| {
                ui.horizontal(|ui| {
                    ui.label("format");
                    for f in Format::ALL {
                        ui.selectable_value(&mut settings.format, f, f.name());
                    }
                });
                ui.horizontal(|ui| {
                    ui.label("fps");
                    for fps in [24, 30, 50, 60] {
                        ui.selectable_value(&mut settings.fps, fps, fps.to_string());
                    }
                });
                ui.add(
                    egui::Slider::new(&mut settings.speed, 0.01..=10.0)
                        .logarithmic(true)
                        .text("playback speed")
                        .custom_formatter(|v, _| format!("{v:.2}×")),
                )
                .on_hover_text("Simulated seconds per second of video (0.1 = 10× slow motion)");
                ui.horizontal(|ui| {
                    ui.label("size");
                    egui::ComboBox::from_id_salt("record size")
                        .selected_text(match settings.size {
                            Some((w, h)) => format!("{w}×{h}"),
                            None => "window".to_owned(),
                        })
                        .show_ui(ui, |ui| {
                            ui.selectable_value(&mut settings.size, None, "window");
                            for s in [(640, 360), (854, 480), (1280, 720), (1920, 1080)] {
                                ui.selectable_value(
                                    &mut settings.size,
                                    Some(s),
                                    format!("{}×{}", s.0, s.1),
                                );
                            }
                        });
                });
                ui.horizontal(|ui| {
                    ui.checkbox(&mut settings.with_panel, "include panel");
                    ui.checkbox(&mut settings.overlay, "overlay")
                        .on_hover_text("Scene, t, μ, e, h, k and stepper in the corner of the video");
                });
            });
            let label = if recording { "⏹ Stop" } else { "⏺ Record" };
            ui.horizontal(|ui| {
                if ui.button(label).on_hover_text("F9").clicked() {
                    settings.toggle = true;
                }
                if let Some(rec) = rec {
                    ui.colored_label(
                        egui::Color32::from_rgb(255, 80, 80),
                        format!("● REC {} frames", rec.frames()),
                    );
                }
            });
            if let Some(outcome) = &settings.outcome {
                match outcome {
                    Ok(message) => ui.label(message),
                    Err(message) => ui.colored_label(egui::Color32::from_rgb(255, 90, 80), message),
                };
            }
            ui.label(
                egui::RichText::new(format!(
                    "Frames step the simulation by speed/fps exactly, however slowly they render; files go to {}/. Without the panel it is hidden while recording: F9 stops.",
                    settings.dir.display()
                ))
                .small()
                .weak(),
            );
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(slug("Four balls!"), "four-balls");
    }
}
