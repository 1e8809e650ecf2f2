//! The progress bar of `contactlab run`: it exists from the first step and
//! shows itself on stderr once the run has taken a second, whether or not a
//! step has finished by then (one step of 5,000 bodies takes longer than
//! that). Runs that end sooner print nothing. indicatif draws only to a
//! terminal, so redirected stderr keeps its one-line errors.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a run goes before its bar shows.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// A bar over a run's steps; cleared when dropped.
pub struct Progress {
    bar: ProgressBar,
    stop: Option<Sender<()>>,
    shower: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts a hidden bar over `total` steps and a thread that shows it
    /// after [`SHOW_AFTER`].
    pub fn start(total: u64) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        if let Ok(style) =
            ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {elapsed} elapsed, ETA {eta}")
        {
            bar.set_style(style);
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let shown = bar.clone();
        let shower = std::thread::Builder::new()
            .name("contactlab progress".into())
            .spawn(move || {
                if let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(SHOW_AFTER) {
                    shown.set_draw_target(ProgressDrawTarget::stderr());
                    // Redrawn on a timer, so the elapsed time moves while one
                    // long step runs.
                    shown.enable_steady_tick(Duration::from_millis(200));
                }
            })
            .ok();
        Self {
            bar,
            stop: Some(stop),
            shower,
        }
    }

    /// Steps done so far.
    pub fn set(&self, step: u64) {
        self.bar.set_position(step);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(shower) = self.shower.take() {
            let _ = shower.join();
        }
        self.bar.finish_and_clear();
    }
}
