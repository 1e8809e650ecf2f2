//! The one step pipeline: a [`Stepper`] drives any [`Scheme`] through a step.
//!
//! The driver owns what every scheme does alike: finding contacts (timed as
//! geometry), the contact solver with its one warm-start cache by contact
//! identity and form, the regularization fallbacks, the contact reports and
//! the report of a failed step, and the memory kept between steps (the
//! active set and the solver's caches). A scheme supplies only what is its
//! own ([`Scheme::advance`]): where q, M, n and D are evaluated, the
//! right-hand side and impact law of its contact problem, and the rule that
//! chooses its active set. A new scheme, or a new solver behind
//! [`ContactSolver`], plugs in at one place.

use super::anitescu_potra::AnitescuPotra;
use super::moreau_jean::MoreauJean;
use super::report::{self, Ending};
use super::scheme::Scheme;
use super::settings::StepSettings;
use super::step::ActiveSet;
use super::step::{Buffers, Lent, ScratchSlot, Step};
use super::stewart_trinkle::StewartTrinkle;
use super::{ContactReport, StepReport, StepTimings};
use crate::collision::BroadPhase;
use crate::lcp::LcpStatus;
use crate::lcp::budget::{self, Budget, Overrun};
use crate::model::{ContactId, Model, State};
use crate::params::{Params, StepperKind};
use crate::solver::{ContactSolver, SolveBuffers};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a stepper remembers between steps: the scheme it stepped with, that
/// scheme's active set and the contact solver's caches (warm-start bases by
/// contact identity, last impulses, regularization levels). A step's result
/// depends on these as well as on the state, so a checkpoint or a snapshot
/// that is to continue bit for bit keeps them.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StepperMemory {
    /// The scheme the memory belongs to.
    pub scheme: StepperKind,
    /// Its active set.
    pub active: ActiveSet,
    /// The contact solver's caches.
    pub solver: ContactSolver,
}

impl StepperMemory {
    /// A cold start of `scheme`.
    pub fn cold(scheme: StepperKind) -> Self {
        Self {
            scheme,
            ..Self::default()
        }
    }

    /// Whether the memory can be used: its caches consistent with
    /// themselves ([`ContactSolver::is_consistent`]).
    pub fn is_consistent(&self) -> bool {
        self.solver.is_consistent()
    }
}

/// The stepper of a simulation: the chosen scheme as data with its memory,
/// the settings and the buffers the steps reuse.
///
/// The buffers hold no state (a step's result does not depend on them), so
/// a clone shares them with its original instead of copying them: a deep
/// copy cost more, in the copy and in a first step on memory out of cache,
/// than the step saves (criterion's clone-then-step of four_balls: 22.4 µs
/// against 15.8 with empty buffers). A clone that steps while another holds
/// the buffers takes buffers of its own.
#[derive(Debug, Clone, Default)]
pub struct Stepper {
    memory: StepperMemory,
    /// Tolerances and limits.
    pub settings: StepSettings,
    keep_lcp: Option<usize>,
    workspace: Arc<Mutex<Workspace>>,
    /// How the last step that went over its budget did: the limit and the
    /// pivots counted.
    overrun: Option<(Overrun, u64)>,
}

/// What the steps reuse.
#[derive(Debug, Default)]
struct Workspace {
    solve: SolveBuffers,
    broad: BroadPhase,
    buffers: Buffers,
    scratch: ScratchSlot,
    /// The map the contact reports look end gaps up in.
    gap_lookup: HashMap<ContactId, f64>,
}

/// The scheme that a [`StepperKind`] names.
pub fn scheme(kind: StepperKind) -> &'static dyn Scheme {
    match kind {
        StepperKind::StewartTrinkle => &StewartTrinkle,
        StepperKind::MoreauJean => &MoreauJean,
        StepperKind::AnitescuPotra => &AnitescuPotra::LINEARLY_IMPLICIT,
        StepperKind::EulerLcp => &AnitescuPotra::EULER,
    }
}

impl Stepper {
    /// Advances `state` by one step of `params.dt` with the scheme
    /// `params.stepper` (a scheme other than the last one starts cold). When
    /// a solve fails the state is left unchanged, the solver's caches are
    /// dropped and the report carries the status.
    pub fn step(&mut self, model: &Model, params: &Params, state: &mut State) -> StepReport {
        self.step_reusing(model, params, state, Vec::new())
    }

    /// [`Self::step`] with the contact reports written into `reports` (the
    /// last report's, whose storage is reused).
    pub fn step_reusing(
        &mut self,
        model: &Model,
        params: &Params,
        state: &mut State,
        mut reports: Vec<ContactReport>,
    ) -> StepReport {
        let start = Instant::now();
        self.overrun = None;
        if self.memory.scheme != params.stepper {
            self.memory = StepperMemory::cold(params.stepper);
        }
        let memory = &mut self.memory;
        if self.workspace.try_lock().is_err() {
            // Held by a clone stepping elsewhere (or left poisoned).
            self.workspace = Arc::default();
        }
        let mut guard = self
            .workspace
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let work = &mut *guard;
        work.solve.begin_step(state.t);
        let lent = Lent {
            solver: &mut memory.solver,
            solve: &mut work.solve,
            broad: &mut work.broad,
            buffers: &mut work.buffers,
            scratch: &mut work.scratch,
        };
        let options = self.settings.solver_options(params, self.keep_lcp);
        let mut step = Step::new(
            model,
            params,
            state,
            &self.settings,
            &memory.active,
            lent,
            options,
        );
        let budget = Budget::start(self.settings.budget);
        let outcome = budget::within(Some(budget.clone()), || {
            scheme(params.stepper).advance(&mut step)
        });
        let timings = StepTimings {
            geometry: step.geometry.time(),
            lcp_build: step.lcp_build,
            lemke: step.solver.time(),
            total: Duration::ZERO,
        };
        let (pivots, solves, sweeps, unconverged) = (
            step.solver.pivots(),
            step.solver.solves(),
            step.solver.sweeps(),
            step.solver.unconverged(),
        );
        let advance = match outcome {
            Ok(advance) => advance,
            Err(mut solution) => {
                memory.solver.clear();
                self.overrun = budget.overrun().map(|o| (o, budget.pivots()));
                if self.overrun.is_some() {
                    // Whichever fallback reported last, the budget ended
                    // the step.
                    solution.status = LcpStatus::OverBudget;
                }
                let failed = report::Failure {
                    solution: *solution,
                    pivots,
                    solves,
                    sweeps,
                };
                return report::failure(model, params, state, failed, timings, start);
            }
        };
        let buffers = &work.buffers;
        let ending = Ending {
            gaps: &buffers.end_gaps,
            missing: advance.missing,
            velocity: &advance.v,
            velocity_scale: advance.velocity_scale,
            zero: self.settings.zero,
        };
        report::contact_reports(
            buffers.solved.as_slice(),
            &advance.solution,
            &ending,
            &mut work.gap_lookup,
            &mut reports,
        );
        let min_gap = if buffers.end_gaps.is_empty() {
            advance.nearest
        } else {
            buffers
                .end_gaps
                .iter()
                .map(|(_, gap)| *gap)
                .fold(f64::INFINITY, f64::min)
        };
        memory.active = advance.active;
        let gap_bound = advance.gap_bound;
        let solution = advance.solution;
        state.q = advance.q;
        state.v = advance.v;
        state.t += params.dt;
        work.solve.end_step(state.t);
        let (kinetic, potential) = model.energy(&state.q, &state.v, params);
        let mut timings = timings;
        timings.total = start.elapsed();
        StepReport {
            t: state.t,
            contacts: reports,
            lcp_size: solution.lcp_size,
            largest_island: solution.largest_island,
            pivots,
            solves,
            sweeps,
            status: if unconverged.is_some() {
                LcpStatus::Unconverged
            } else {
                LcpStatus::Solved
            },
            residual: solution.residual.max(unconverged.unwrap_or(0.0)),
            kinetic_energy: kinetic,
            potential_energy: potential,
            min_gap,
            gap_bound,
            substeps: 1,
            timings,
            lcp: solution.lcp,
        }
    }

    /// The limit the last failed step went over and the pivots it had
    /// counted, when a budget ended it.
    pub fn overrun(&self) -> Option<(Overrun, u64)> {
        self.overrun
    }

    /// Forgets the memory (after a reset or a scene change): the next step
    /// starts cold.
    pub fn clear(&mut self) {
        self.memory = StepperMemory::cold(self.memory.scheme);
    }

    /// Keep each step's final LCP in its report when it has at most `most`
    /// unknowns (for `--dump-lcp`); `None`: keep none.
    pub fn set_keep_lcp(&mut self, most: Option<usize>) {
        self.keep_lcp = most;
    }

    /// The largest LCP a step keeps, if it keeps any.
    pub fn keeps_lcp(&self) -> Option<usize> {
        self.keep_lcp
    }

    /// What the stepper remembers between steps.
    pub fn memory(&self) -> &StepperMemory {
        &self.memory
    }

    /// Continues from remembered memory (a checkpoint or a snapshot).
    pub fn restore(&mut self, memory: StepperMemory) {
        self.memory = memory;
    }
}
