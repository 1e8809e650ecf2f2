//! Recording videos: the viewer's Record button (F9, [`button`]) and
//! `contactlab record` ([`command`]).
//!
//! Capture is deterministic. While recording, the app clock is frozen (no
//! fixed ticks, no interpolation): output frame i shows the simulation after
//! exactly ⌊i·Δ/h⌋ steps, Δ = speed / fps (the remainder is carried, so no
//! time is lost), with the bodies at the exact state. Each frame is rendered
//! and read back from the GPU ([`capture`]): the viewer's window, or the image
//! `contactlab record` renders into without any window. An encoder thread
//! writes the file ([`crate::record`]). How fast the machine renders only
//! changes how long the recording takes, not what it shows.

pub mod button;
pub mod capture;
pub mod command;

pub use button::record_section;
pub use capture::CaptureSource;
pub use command::record_command;

use super::panel::PanelLayout;
use super::sim::{self, History, PreviousState, Sim, SimControl, SimSystems};
use crate::params::StepperKind;
use crate::record::{EncoderThread, Format, FramePixels, Summary, VideoSpec, VideoWriter};
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use bevy::window::PrimaryWindow;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use indicatif::ProgressBar;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

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
    /// What is read back.
    source: CaptureSource,
}

impl Recording {
    /// A recording that starts at the next frame: the viewer's, until stopped,
    /// with no progress bar (`contactlab record` sets those fields).
    fn new(
        spec: VideoSpec,
        writer: VideoWriter,
        settings: RecordSettings,
        source: CaptureSource,
    ) -> Self {
        Self {
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
            settings,
            exit_when_done: false,
            saved: None,
            started: Instant::now(),
            progress: None,
            error: None,
            outcome: Outcome::default(),
            stalled: 0,
            source,
        }
    }

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
            .add_systems(Update, button::record_key)
            // Before the viewport is fitted to the window it may resize.
            .add_systems(
                PostUpdate,
                button::toggle_recording.before(super::camera::fit_viewport),
            )
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
    .add_systems(First, capture::end_readback_requests)
    .add_systems(Last, (capture::request_capture, deliver_frames).chain());
}

/// The primary window, when the app has one (a recording from the viewer).
type PrimaryWindowIfAny<'w, 's> = Option<Single<'w, 's, &'static Window, With<PrimaryWindow>>>;

/// Steps the simulation for the frame about to be captured.
fn advance_recording(
    mut rec: Option<ResMut<Recording>>,
    mut sim: ResMut<Sim>,
    mut previous: ResMut<PreviousState>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<History>,
    mut job: ResMut<super::worker::StepJob>,
    (window, mut compare): (PrimaryWindowIfAny, Option<ResMut<super::compare::Compare>>),
) {
    let Some(rec) = rec.as_mut() else {
        return;
    };
    // A recording takes its own steps, frame-exact, on this thread: a step
    // in flight when it began is dropped.
    job.cancel();
    if rec.error.is_some() {
        return;
    }
    // The bodies are drawn at the exact state, not between two steps.
    previous.q.clone_from(&sim.state.q);
    match rec.phase {
        Phase::Warmup { frames, waited } => {
            let wanted = UVec2::new(rec.spec.width, rec.spec.height);
            let size = match rec.source {
                CaptureSource::Window => window.map(|w| w.physical_size()),
                // The image is made at the video's size.
                CaptureSource::Image(_) => Some(wanted),
            };
            let sized = size == Some(wanted);
            // A window that does not take the size in time is recorded as it
            // is, cropped or padded.
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
            // A comparison's run B, to A's new time.
            if let Some(compare) = compare.as_deref_mut() {
                compare.advance_to(&sim);
            }
            rec.steps += 1;
        }
        previous.q.clone_from(&sim.state.q);
    }
    rec.capture_now = true;
}

/// Hands arrived frames to the encoder, in order; ends the recording when all
/// frames are in (or on error).
fn deliver_frames(world: &mut World) {
    let Some(mut rec) = world.get_resource_mut::<Recording>() else {
        return;
    };
    let rec = &mut *rec;
    while let Some(frame) = rec.arrived.remove(&rec.delivered) {
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
    let model = sim.model();
    let e = if p.stepper.uses_restitution() {
        format!("{:.2}", p.restitution)
    } else {
        "0 (inelastic)".to_owned()
    };
    let k = if model.is_planar() { 2 } else { p.edges };
    let stepper = match p.stepper {
        StepperKind::StewartTrinkle => "Stewart–Trinkle",
        StepperKind::MoreauJean => "Moreau–Jean",
        StepperKind::AnitescuPotra => "Anitescu–Potra",
        StepperKind::EulerLcp => "Euler LCP",
    };
    // The scene-wide spring and damper coefficients, where some element
    // takes them (the panel's sliders).
    let mut forces = String::new();
    if model.uses_stiffness() {
        forces += &format!("   γ = {:.3e} N/m", p.stiffness);
    }
    if model.uses_damping() {
        forces += &format!("   δ = {:.3e} N·s/m", p.damping);
    }
    format!(
        "{}   t = {:.3} s\nμ = {:.2}   e = {e}   h = {} s\nk = {k}   {stepper}{forces}",
        sim.scene.name, sim.state.t, p.mu, p.dt
    )
}

/// Draws the overlay in the 3D view's bottom-left corner while recording
/// (where falling bodies and the woodpecker are least often), its text sized
/// with the frame: 14 px at 720 lines.
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
    let scale = (rec.spec.height as f32 / 720.0).clamp(0.65, 1.5);
    let margin = (10.0 * scale).round();
    let left = if layout.visible { layout.width } else { 0.0 };
    egui::Area::new(egui::Id::new("record overlay"))
        .anchor(
            egui::Align2::LEFT_BOTTOM,
            egui::vec2(left + margin, -margin),
        )
        .interactable(false)
        // The app clock stands still while recording, so a fade-in would
        // never finish: the text stayed all but transparent.
        .fade_in(false)
        .show(ctx, |ui| {
            egui::Frame::new()
                .fill(egui::Color32::from_black_alpha(150))
                .corner_radius(4.0 * scale)
                .inner_margin(egui::Margin::symmetric(
                    (8.0 * scale).round() as i8,
                    (5.0 * scale).round() as i8,
                ))
                .show(ui, |ui| {
                    ui.add(
                        egui::Label::new(
                            egui::RichText::new(overlay_text(&sim))
                                .monospace()
                                .size(14.0 * scale)
                                .color(egui::Color32::WHITE),
                        )
                        .wrap_mode(egui::TextWrapMode::Extend),
                    );
                });
        });
}
