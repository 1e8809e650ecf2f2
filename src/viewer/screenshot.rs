//! `--screenshot PATH --frames N`: after N rendered frames, capture the primary
//! window to PATH, wait until the file is written, then exit. The clock runs at
//! 1/60 s per frame, so the picture does not depend on how fast frames render.
//!
//! With `--drag BODY --drag-by DX,DY` (hidden flags, for the README's
//! screenshot and the window test) a scripted pointer presses on BODY a third
//! of the way in, in the "perturb" tool, and moves by (DX, DY) logical pixels
//! until the capture: the real pointer pipeline (picking, selection, the
//! perturbation) with a drag in progress in the picture.

use super::camera::MainCamera;
use super::frame_rate::FrameRate;
use super::hands::{Hands, Tool};
use super::sim::{BodyVisual, Sim};
use bevy::camera::RenderTarget;
use bevy::picking::pointer::{Location, PointerAction, PointerButton, PointerId, PointerInput};
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};
use bevy::time::TimeUpdateStrategy;
use bevy::window::{PrimaryWindow, WindowRef};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The clock's advance per frame while taking a screenshot.
pub const FRAME: Duration = Duration::from_nanos(1_000_000_000 / 60);

/// Frames to wait for the file after the capture before giving up.
const TIMEOUT_FRAMES: u32 = 600;

/// Why the screenshot failed, shared with [`super::run`] (the app's world is
/// gone when `App::run` returns).
#[derive(Debug, Clone, Default)]
pub struct Failure(Arc<Mutex<Option<String>>>);

impl Failure {
    fn set(&self, message: String) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(message);
        }
    }

    /// The failure, if any.
    pub fn take(&self) -> Option<String> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// Takes the screenshot and exits.
pub struct ScreenshotPlugin {
    /// Where the PNG goes.
    pub path: PathBuf,
    /// Frames rendered before the capture.
    pub frames: u32,
    /// Filled when the capture fails.
    pub failure: Failure,
    /// A scripted perturbation drag, if any.
    pub drag: Option<ScriptedDrag>,
}

/// A scripted pointer drag on a body (`--drag BODY --drag-by DX,DY`).
#[derive(Resource, Debug, Clone, PartialEq)]
pub struct ScriptedDrag {
    /// The body pressed on (at its centre as drawn).
    pub body: String,
    /// How far the pointer moves, logical pixels (y down).
    pub by: Vec2,
    /// Where the press was, once made.
    start: Option<Vec2>,
}

impl ScriptedDrag {
    /// The drag the two flags describe (both or neither).
    pub fn parse(body: Option<&str>, by: Option<&str>) -> Result<Option<Self>, String> {
        match (body, by) {
            (None, None) => Ok(None),
            (Some(body), Some(by)) => {
                let parts: Vec<&str> = by.split(',').collect();
                let numbers: Vec<f32> =
                    parts.iter().filter_map(|p| p.trim().parse().ok()).collect();
                match numbers[..] {
                    [x, y] if parts.len() == 2 && x.is_finite() && y.is_finite() => {
                        Ok(Some(Self {
                            body: body.to_owned(),
                            by: Vec2::new(x, y),
                            start: None,
                        }))
                    }
                    _ => Err(format!("--drag-by {by}: expected DX,DY in pixels")),
                }
            }
            _ => Err("--drag and --drag-by go together".to_owned()),
        }
    }
}

/// Progress of the screenshot.
#[derive(Resource, Debug, Clone)]
pub struct ScreenshotState {
    path: PathBuf,
    frames: u32,
    frame: u32,
    requested_at: Option<u32>,
    captured: bool,
    failure: Failure,
}

impl Plugin for ScreenshotPlugin {
    fn build(&self, app: &mut App) {
        // A stale file from an earlier run must not count as written.
        let _ = std::fs::remove_file(&self.path);
        // Each frame advances the clock by 1/60 s, however long it takes to
        // render, so N frames always show the scene at t ≈ N/60 s.
        app.insert_resource(TimeUpdateStrategy::ManualDuration(FRAME))
            .insert_resource(ScreenshotState {
                path: self.path.clone(),
                frames: self.frames,
                frame: 0,
                requested_at: None,
                captured: false,
                failure: self.failure.clone(),
            })
            .add_systems(Last, drive_screenshot);
        if let Some(drag) = &self.drag {
            app.insert_resource(drag.clone())
                .add_systems(Last, drive_drag.before(drive_screenshot));
        }
    }
}

/// Presses on the body a third of the way to the capture and moves the
/// pointer steadily by `by` until the capture.
#[allow(clippy::too_many_arguments)]
fn drive_drag(
    mut drag: ResMut<ScriptedDrag>,
    state: Res<ScreenshotState>,
    sim: Res<Sim>,
    mut hands: ResMut<Hands>,
    bodies: Query<(&BodyVisual, &GlobalTransform)>,
    camera: Query<(&Camera, &GlobalTransform), With<MainCamera>>,
    window: Query<Entity, With<PrimaryWindow>>,
    mut input: MessageWriter<PointerInput>,
) {
    let start_frame = state.frames / 3;
    let frame = state.frame + 1;
    if frame < start_frame {
        return;
    }
    let Some(target) = RenderTarget::Window(WindowRef::Primary).normalize(window.single().ok())
    else {
        return;
    };
    let location = |position: Vec2| Location {
        target: target.clone(),
        position,
    };
    let start = match drag.start {
        Some(start) => start,
        None => {
            let Some(index) = super::sim::rigid(&sim).and_then(|s| s.body_index(&drag.body)) else {
                return;
            };
            let (Some((_, body)), Ok((camera, eye))) =
                (bodies.iter().find(|(b, _)| b.0 == index), camera.single())
            else {
                return;
            };
            let Ok(start) = camera.world_to_viewport(eye, body.translation()) else {
                return;
            };
            hands.tool = Tool::Perturb;
            drag.start = Some(start);
            input.write(PointerInput::new(
                PointerId::Mouse,
                location(start),
                PointerAction::Move { delta: Vec2::ZERO },
            ));
            input.write(PointerInput::new(
                PointerId::Mouse,
                location(start),
                PointerAction::Press(PointerButton::Primary),
            ));
            return;
        }
    };
    let span = (state.frames.max(1) - start_frame).max(1) as f32;
    let progress = ((frame - start_frame) as f32 / span).clamp(0.0, 1.0);
    input.write(PointerInput::new(
        PointerId::Mouse,
        location(start + drag.by * progress),
        PointerAction::Move {
            delta: drag.by / span,
        },
    ));
}

fn mark_captured(_captured: On<ScreenshotCaptured>, mut state: ResMut<ScreenshotState>) {
    state.captured = true;
}

fn drive_screenshot(
    mut commands: Commands,
    mut state: ResMut<ScreenshotState>,
    rate: Option<Res<FrameRate>>,
    mut exit: MessageWriter<AppExit>,
) {
    state.frame += 1;
    match state.requested_at {
        None if state.frame >= state.frames.max(1) => {
            let frame = state.frame;
            state.requested_at = Some(frame);
            commands
                .spawn(Screenshot::primary_window())
                .observe(save_to_disk(state.path.clone()))
                .observe(mark_captured);
        }
        None => {}
        Some(at) => {
            let written = std::fs::metadata(&state.path).is_ok_and(|m| m.len() > 0);
            if state.captured && written {
                info!("screenshot written to {}", state.path.display());
                // The frames before the capture, without the first half
                // (pipelines and meshes are prepared in the first frames).
                let counted = (at / 2).min(FrameRate::KEPT as u32 / 2) as usize;
                let skip = (state.frame - at) as usize;
                if let Some(rate) = rate
                    && let (Some(mean), Some(longest)) = (
                        rate.mean_frame_time(counted, skip),
                        rate.longest_frame_time(counted, skip),
                    )
                {
                    info!(
                        "frame time over the {counted} frames before the capture: {:.1} ms ({:.1} fps), longest frame {:.1} ms",
                        mean * 1e3,
                        1.0 / mean,
                        longest * 1e3
                    );
                }
                exit.write(AppExit::Success);
            } else if state.frame - at > TIMEOUT_FRAMES
                || (state.captured && state.frame - at > TIMEOUT_FRAMES / 10)
            {
                state.failure.set(format!(
                    "--screenshot: {} was not written (capture {})",
                    state.path.display(),
                    if state.captured {
                        "done, save failed"
                    } else {
                        "never arrived"
                    }
                ));
                exit.write(AppExit::error());
            }
        }
    }
}
