//! `--screenshot PATH --frames N`: after N rendered frames, capture the primary
//! window to PATH, wait until the file is written, then exit. The clock runs at
//! 1/60 s per frame, so the picture does not depend on how fast frames render.

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured, save_to_disk};
use bevy::time::TimeUpdateStrategy;
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
    }
}

fn mark_captured(_captured: On<ScreenshotCaptured>, mut state: ResMut<ScreenshotState>) {
    state.captured = true;
}

fn drive_screenshot(
    mut commands: Commands,
    mut state: ResMut<ScreenshotState>,
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
