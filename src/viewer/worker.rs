//! Steps off the render thread: each step runs on a thread of its own over
//! a copy of the shown simulation, and the app installs the copy when the
//! step is done ([`super::sim::step_simulation`]). The window draws at its
//! own rate whatever a step costs; while a step runs longer than a frame the
//! panel shows its index, its seconds and its Lemke pivots so far, with
//! Pause and Cancel.
//!
//! The shown simulation is what the panel, the hands and the timeline edit.
//! A comparison's run B steps on a second thread beside A's step
//! ([`steps_of_b`]); the two are collected together.
//!
//! A finished step takes over its parameters, its hand and its settings
//! (edits apply from the next step); a step whose starting state is no
//! longer shown (a reset, a scrub, a reload, a throw) is cancelled and
//! dropped. Cancel drops the step in progress and leaves the shown state as
//! it was, bit for bit. A cancelled step stops at its next Lemke pivot or
//! NSGS sweep ([`crate::lcp::budget::Watch`]).

use super::sim::{StepOutcome, take_step};
use crate::lcp::budget::{self, Watch};
use crate::sim::Simulation;
use bevy::prelude::*;
use nalgebra::DVector;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// When the current frame's fixed loop began: the steps of a frame wait for
/// the worker only while the frame's budget lasts.
#[derive(Resource, Debug, Clone, Copy)]
pub struct FrameClock(pub Instant);

impl Default for FrameClock {
    fn default() -> Self {
        Self(Instant::now())
    }
}

impl FrameClock {
    /// What is left of `budget` seconds since the frame began.
    pub fn left(&self, budget: f64) -> Duration {
        Duration::from_secs_f64(budget.max(0.0)).saturating_sub(self.0.elapsed())
    }
}

/// A step the worker finished: the stepped copy and what the step gave.
pub struct Finished {
    /// The copy of the simulation, one step on.
    pub simulation: Simulation,
    /// The step's status, sample and cost.
    pub outcome: StepOutcome,
    /// Run B of a comparison, stepped right after A when A advanced (so
    /// that the two stay in lockstep).
    pub b: Option<StepsOfB>,
}

/// Run B's steps to A's time after one step of A: one with the same h, none
/// or several with another ([`steps_of_b`]).
pub struct StepsOfB {
    /// The copy of B, at its step nearest A's new time (none when its
    /// thread panicked).
    pub simulation: Option<Simulation>,
    /// What each step gave, in order; the last one that did not advance
    /// (refused, unsolved, cancelled) ends them.
    pub outcomes: Vec<StepOutcome>,
    /// The [`super::compare::Compare::generation`] the copy was taken in:
    /// steps of a B restarted since are dropped.
    pub generation: u64,
}

/// Steps `b` (a comparison's run B of `generation`) up to time `t` under
/// `watch` ([`step_to`]), on whichever thread.
pub fn steps_of_b(mut b: Simulation, t: f64, generation: u64, watch: Arc<Watch>) -> StepsOfB {
    let outcomes = step_to(&mut b, t, &watch);
    StepsOfB {
        simulation: Some(b),
        outcomes,
        generation,
    }
}

/// Steps `b` up to time `t`, each run at its step nearest it (a tie steps
/// on), so that a B of another step size keeps A's time; the first step
/// that does not advance ends them. Under `watch`: a Cancel stops them as
/// it stops A's. Returns what each step gave.
pub fn step_to(b: &mut Simulation, t: f64, watch: &Arc<Watch>) -> Vec<StepOutcome> {
    // An h that is not a number is taken, for the step to refuse it with
    // its message.
    let behind = |b: &Simulation| {
        let halfway = b.state.t + 0.5 * b.params.dt;
        halfway <= t || halfway.is_nan()
    };
    let mut outcomes = Vec::new();
    while behind(b) {
        let before = b.state.t;
        let outcome = budget::watching(watch.clone(), || take_step(b));
        let on = outcome.advanced() && b.state.t > before;
        outcomes.push(outcome);
        if !on {
            break;
        }
    }
    outcomes
}

/// The state a step started from, to tell whether it is still shown.
#[derive(Debug, Clone)]
struct Origin {
    steps: u64,
    t: u64,
    q: DVector<f64>,
    v: DVector<f64>,
}

impl Origin {
    fn matches(&self, sim: &Simulation) -> bool {
        self.steps == sim.steps
            && self.t == sim.state.t.to_bits()
            && self.q == sim.state.q
            && self.v == sim.state.v
    }

    fn of(sim: &Simulation) -> Self {
        Self {
            steps: sim.steps,
            t: sim.state.t.to_bits(),
            q: sim.state.q.clone(),
            v: sim.state.v.clone(),
        }
    }
}

struct Running {
    /// Behind a mutex only to be `Sync`, as a resource must be: one
    /// system at a time reads it.
    receiver: Mutex<Receiver<Finished>>,
    watch: Arc<Watch>,
    started: Instant,
    origin: Origin,
}

/// How far the step in flight is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// The step's index (the steps taken once it is done).
    pub step: u64,
    /// Seconds since it started.
    pub seconds: f64,
    /// Lemke pivots so far.
    pub pivots: u64,
}

/// The step in flight on the worker, if any.
#[derive(Resource, Default)]
pub struct StepJob {
    running: Option<Running>,
}

impl StepJob {
    /// Whether a step is in flight.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Starts a step of a copy of `sim` on a thread of its own and, beside
    /// it on a second thread, the steps of a copy of run `b` (a comparison's
    /// B, with its generation) up to A's new time ([`steps_of_b`]). B's steps
    /// are kept only when A's step advanced; B's copy takes A's hand (the
    /// perturbation spring acts on both alike).
    pub fn start(&mut self, sim: &Simulation, b: Option<(&Simulation, u64)>) -> Result<(), String> {
        let (sender, receiver) = mpsc::channel();
        let watch = Arc::new(Watch::default());
        let mut copy = sim.clone();
        // Every step advances t by h (`Simulation::step`): A's time after
        // this one, for B to step to while A's step runs.
        let t = sim.state.t + sim.params.dt;
        let b = match b {
            Some((b, generation)) => {
                let mut b = b.clone();
                if b.perturbation() != sim.perturbation() {
                    // A hand on a body B lacks is A's alone.
                    let _ = b.set_perturbation(sim.perturbation().cloned());
                }
                let watching = watch.clone();
                let spawned = std::thread::Builder::new()
                    .name("contactlab step B".to_owned())
                    .spawn(move || steps_of_b(b, t, generation, watching))
                    .map_err(|e| format!("cannot start a thread for run B's step: {e}"))?;
                Some((spawned, generation))
            }
            None => None,
        };
        let watching = watch.clone();
        std::thread::Builder::new()
            .name("contactlab step".to_owned())
            .spawn(move || {
                let outcome = budget::watching(watching, || take_step(&mut copy));
                let b = b.and_then(|(thread, generation)| {
                    let steps = thread.join().unwrap_or_else(|_| StepsOfB {
                        simulation: None,
                        outcomes: vec![StepOutcome::failed(
                            "run B's step thread ended without a result (a panic; see the terminal)",
                        )],
                        generation,
                    });
                    outcome.advanced().then_some(steps)
                });
                // The app may have dropped the step (Cancel): nobody listens.
                let _ = sender.send(Finished {
                    simulation: copy,
                    outcome,
                    b,
                });
            })
            .map_err(|e| format!("cannot start a thread for the step: {e}"))?;
        self.running = Some(Running {
            receiver: Mutex::new(receiver),
            watch,
            started: Instant::now(),
            origin: Origin::of(sim),
        });
        Ok(())
    }

    /// The finished step, waiting up to `timeout` for it; `Err` when the
    /// step's thread ended without one (it panicked).
    pub fn wait(&mut self, timeout: Duration) -> Option<Result<Finished, String>> {
        let running = self.running.as_mut()?;
        let receiver = running
            .receiver
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let received = if timeout.is_zero() {
            receiver.try_recv().map_err(|e| match e {
                mpsc::TryRecvError::Empty => RecvTimeoutError::Timeout,
                mpsc::TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
            })
        } else {
            receiver.recv_timeout(timeout)
        };
        match received {
            Ok(finished) => {
                self.running = None;
                Some(Ok(finished))
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                self.running = None;
                Some(Err(
                    "the step's thread ended without a result (a panic; see the terminal)"
                        .to_owned(),
                ))
            }
        }
    }

    /// Drops the step in flight and asks it to stop.
    pub fn cancel(&mut self) {
        if let Some(running) = self.running.take() {
            running.watch.cancel();
        }
    }

    /// Whether the step in flight started from the state `sim` shows.
    pub fn started_from(&self, sim: &Simulation) -> bool {
        self.running.as_ref().is_some_and(|r| r.origin.matches(sim))
    }

    /// How far the step in flight is.
    pub fn progress(&self) -> Option<Progress> {
        self.running.as_ref().map(|r| Progress {
            step: r.origin.steps + 1,
            seconds: r.started.elapsed().as_secs_f64(),
            pivots: r.watch.pivots(),
        })
    }
}
