//! The viewer's own frame rate, measured on the wall clock: shown in the
//! panel's status and printed with `--screenshot`, so that the cost of
//! drawing thousands of bodies can be read off on any machine.
//!
//! Why not Bevy's `FrameTimeDiagnosticsPlugin`: it reads `Time<Real>`, which
//! `--screenshot` advances by a fixed 1/60 s a frame, so it would always say
//! 60 fps there.

use bevy::prelude::*;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Measures [`FrameRate`] once per frame, at the end of the frame.
pub struct FrameRatePlugin;

impl Plugin for FrameRatePlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<FrameRate>()
            .add_systems(Last, measure_frame);
    }
}

/// Wall-clock durations of the most recent frames.
#[derive(Resource, Debug, Clone, Default)]
pub struct FrameRate {
    last: Option<Instant>,
    /// The last [`FrameRate::KEPT`] frame durations, oldest first.
    frames: VecDeque<Duration>,
}

impl FrameRate {
    /// Frames kept for the averages.
    pub const KEPT: usize = 240;

    /// Adds a frame that ended at `now`.
    pub fn tick(&mut self, now: Instant) {
        if let Some(last) = self.last {
            if self.frames.len() == Self::KEPT {
                self.frames.pop_front();
            }
            self.frames.push_back(now.saturating_duration_since(last));
        }
        self.last = Some(now);
    }

    /// Mean wall-clock duration, s, of `n` frames: those before the most
    /// recent `skip` (as many as are kept); `None` when none are.
    pub fn mean_frame_time(&self, n: usize, skip: usize) -> Option<f64> {
        let frames: Vec<f64> = self
            .frames
            .iter()
            .rev()
            .skip(skip)
            .take(n)
            .map(Duration::as_secs_f64)
            .collect();
        if frames.is_empty() {
            return None;
        }
        Some(frames.iter().sum::<f64>() / frames.len() as f64)
    }

    /// The longest wall-clock duration, s, of the same frames as
    /// [`Self::mean_frame_time`].
    pub fn longest_frame_time(&self, n: usize, skip: usize) -> Option<f64> {
        self.frames
            .iter()
            .rev()
            .skip(skip)
            .take(n)
            .map(Duration::as_secs_f64)
            .reduce(f64::max)
    }

    /// Frames measured so far (at most [`FrameRate::KEPT`]).
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether no frame has been measured yet.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
}

fn measure_frame(mut rate: ResMut<FrameRate>) {
    rate.tick(Instant::now());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_of_the_last_frames() {
        let mut rate = FrameRate::default();
        let t0 = Instant::now();
        assert_eq!(rate.mean_frame_time(10, 0), None);
        rate.tick(t0);
        assert!(rate.is_empty());
        rate.tick(t0 + Duration::from_millis(10));
        rate.tick(t0 + Duration::from_millis(40));
        assert_eq!(rate.len(), 2);
        let last = rate.mean_frame_time(1, 0).unwrap_or(0.0);
        assert!((last - 0.030).abs() < 1e-9, "{last}");
        let both = rate.mean_frame_time(5, 0).unwrap_or(0.0);
        assert!((both - 0.020).abs() < 1e-9, "{both}");
        let first = rate.mean_frame_time(5, 1).unwrap_or(0.0);
        assert!((first - 0.010).abs() < 1e-9, "{first}");
        assert_eq!(rate.mean_frame_time(5, 2), None);
        assert_eq!(rate.longest_frame_time(5, 0), Some(0.030));
        assert_eq!(rate.longest_frame_time(5, 1), Some(0.010));
        assert_eq!(rate.longest_frame_time(5, 2), None);
        for i in 0..(2 * FrameRate::KEPT as u64) {
            rate.tick(t0 + Duration::from_millis(50 + i));
        }
        assert_eq!(rate.len(), FrameRate::KEPT);
    }
}
