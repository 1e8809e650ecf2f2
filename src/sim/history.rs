//! The past of a running simulation: a checkpoint per step over the last
//! [`Timeline::span`] seconds of simulated time, within a memory cap.
//!
//! A checkpoint ([`Checkpoint`]) holds everything a step depends on besides
//! the model and the parameters, including the steppers' caches, so
//! restoring one and stepping again with unchanged parameters repeats the
//! original steps bit for bit. Scrubbing ([`Timeline::scrub`]) restores a
//! checkpoint and leaves the later ones in place, so one can scrub forward
//! again; the first step taken from a scrubbed state discards them (a fork,
//! [`Timeline::record`]) and continues with whatever parameters are set then.

use super::{Checkpoint, Simulation};
use std::collections::VecDeque;

/// Past checkpoints, oldest first, and where the scrubber stands.
#[derive(Debug, Clone)]
pub struct Timeline {
    entries: VecDeque<(Checkpoint, usize)>,
    bytes: usize,
    cursor: Option<usize>,
    /// Seconds of simulated time kept (older checkpoints are dropped).
    pub span: f64,
    /// Most bytes kept (older checkpoints are dropped first; the newest is
    /// always kept).
    pub cap: usize,
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new(Self::DEFAULT_SPAN, Self::DEFAULT_CAP)
    }
}

impl Timeline {
    /// 60 s of simulated time.
    pub const DEFAULT_SPAN: f64 = 60.0;
    /// 500 MB.
    pub const DEFAULT_CAP: usize = 500_000_000;

    /// An empty timeline keeping `span` seconds within `cap` bytes.
    pub fn new(span: f64, cap: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            bytes: 0,
            cursor: None,
            span,
            cap,
        }
    }

    /// Forgets everything (a reset, another scene).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
        self.cursor = None;
    }

    /// Forgets everything and starts from the simulation as it is now.
    pub fn restart(&mut self, sim: &Simulation) {
        self.clear();
        self.record(sim);
    }

    /// Keeps the simulation's current checkpoint as the newest. When the
    /// scrubber stands in the past, the checkpoints after it are discarded
    /// first (the simulation forked from there).
    pub fn record(&mut self, sim: &Simulation) {
        self.fork();
        let checkpoint = sim.checkpoint();
        // A step that went nowhere (a failed one) leaves t: do not keep it twice.
        if let Some((last, _)) = self.entries.back()
            && last.steps == checkpoint.steps
            && last.state == checkpoint.state
        {
            return;
        }
        let bytes = checkpoint.footprint();
        self.bytes += bytes;
        self.entries.push_back((checkpoint, bytes));
        self.trim();
    }

    /// Discards the checkpoints after the scrubber (nothing when it stands at
    /// the newest).
    pub fn fork(&mut self) {
        if let Some(i) = self.cursor.take() {
            while self.entries.len() > i + 1 {
                if let Some((_, b)) = self.entries.pop_back() {
                    self.bytes -= b;
                }
            }
        }
    }

    fn trim(&mut self) {
        let Some(newest) = self.entries.back().map(|(c, _)| c.t()) else {
            return;
        };
        while self.entries.len() > 1
            && self.entries.front().is_some_and(|(c, _)| {
                newest - c.t() > self.span || c.t() > newest || self.bytes > self.cap
            })
        {
            if let Some((_, b)) = self.entries.pop_front() {
                self.bytes -= b;
            }
        }
    }

    /// Restores checkpoint `index` (0 = oldest) into `sim` and leaves the
    /// scrubber there. Returns false when there is no such checkpoint.
    pub fn scrub(&mut self, index: usize, sim: &mut Simulation) -> bool {
        let Some((checkpoint, _)) = self.entries.get(index) else {
            return false;
        };
        sim.restore(checkpoint);
        self.cursor = (index + 1 < self.entries.len()).then_some(index);
        true
    }

    /// The checkpoint the scrubber stands on (the newest when not scrubbing).
    pub fn position(&self) -> Option<usize> {
        self.cursor.or_else(|| self.entries.len().checked_sub(1))
    }

    /// Whether the scrubber stands in the past.
    pub fn scrubbing(&self) -> bool {
        self.cursor.is_some()
    }

    /// Number of checkpoints kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checkpoint `index` (0 = oldest).
    pub fn get(&self, index: usize) -> Option<&Checkpoint> {
        self.entries.get(index).map(|(c, _)| c)
    }

    /// The index of the last checkpoint at or before time t (the first when t
    /// is earlier than all).
    pub fn index_at(&self, t: f64) -> Option<usize> {
        if self.entries.is_empty() {
            return None;
        }
        let after = self.entries.partition_point(|(c, _)| c.t() <= t);
        Some(after.saturating_sub(1))
    }

    /// The simulated times of the oldest and newest checkpoints, s.
    pub fn time_range(&self) -> Option<(f64, f64)> {
        Some((self.entries.front()?.0.t(), self.entries.back()?.0.t()))
    }

    /// Bytes held (the sum of [`Checkpoint::footprint`]).
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}
