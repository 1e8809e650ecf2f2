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
use super::report::{self, EndGap, Ending};
use super::settings::StepSettings;
use super::solve::{ContactProblem, ContactSolution, ContactSolver, Failed};
use super::stewart_trinkle::StewartTrinkle;
use super::warm::Form;
use super::{StepReport, StepTimings};
use crate::lcp::LcpStatus;
use crate::model::{Contact, ContactId, MassInverse, Model, State};
use crate::params::{Params, StepperKind};
use nalgebra::DVector;
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::time::Instant;

/// The contacts a scheme keeps active from one step to the next
/// (Stewart–Trinkle §4, Anitescu–Potra §3), by identity.
pub type ActiveSet = BTreeSet<ContactId>;

/// A time-stepping scheme: how one step poses and solves its contact
/// problems. It keeps no memory of its own; what it needs from the last
/// step comes through [`Step`] and what the next step needs goes back in
/// [`Advance`], so a failed step leaves nothing half updated.
pub trait Scheme {
    /// Advances `step.state` by `step.params.dt`: the end of the step and
    /// the solve it ended with, or the solve that failed.
    fn advance(&self, step: &mut Step<'_>) -> Result<Advance, Failed>;
}

/// The end of an accepted step, as a scheme hands it to the driver.
pub struct Advance {
    /// Generalized coordinates at the end of the step.
    pub q: DVector<f64>,
    /// Generalized velocities at the end of the step.
    pub v: DVector<f64>,
    /// The contacts of the final solve, in its order.
    pub contacts: Vec<Contact>,
    /// The final solve.
    pub solution: ContactSolution,
    /// The scale slip speeds are compared with, m/s.
    pub velocity_scale: f64,
    /// The gaps near the new configuration, m.
    pub end_gaps: Vec<(ContactId, f64)>,
    /// The gap reported for a contact of the solve not among `end_gaps`.
    pub missing: EndGap,
    /// The active set the next step starts from (empty for a scheme that
    /// chooses its index set afresh each step).
    pub active: ActiveSet,
}

/// One step in progress: the model, the parameters and the state it starts
/// from, the memory of the last step, and the shared services — contact
/// detection and the contact solver — with the step's counts and timings.
pub struct Step<'a> {
    /// The model.
    pub model: &'a Model,
    /// The live parameters.
    pub params: &'a Params,
    /// The state the step starts from.
    pub state: &'a State,
    /// Tolerances and limits.
    pub settings: &'a StepSettings,
    /// The active set of the last accepted step.
    pub active: &'a ActiveSet,
    solver: &'a mut ContactSolver,
    /// Where the time went.
    pub timings: StepTimings,
    pivots: usize,
    solves: usize,
}

impl<'a> Step<'a> {
    /// A step of `state` with the solver `solver` (already set up for the
    /// step's parameters, [`ContactSolver::begin_step`]).
    pub fn new(
        model: &'a Model,
        params: &'a Params,
        state: &'a State,
        settings: &'a StepSettings,
        active: &'a ActiveSet,
        solver: &'a mut ContactSolver,
    ) -> Self {
        Self {
            model,
            params,
            state,
            settings,
            active,
            solver,
            timings: StepTimings::default(),
            pivots: 0,
            solves: 0,
        }
    }

    /// The potential contacts at q within `margin` (m), with the step's
    /// friction directions.
    pub fn contacts(&mut self, q: &DVector<f64>, margin: f64) -> Vec<Contact> {
        let clock = Instant::now();
        let found = self.model.contacts(q, self.params.friction_edges(), margin);
        self.timings.geometry += clock.elapsed();
        found
    }

    /// The identities and gaps of [`Self::contacts`], without Jacobians.
    pub fn gaps(&mut self, q: &DVector<f64>, margin: f64) -> Vec<(ContactId, f64)> {
        let clock = Instant::now();
        let found = self.model.gaps(q, margin);
        self.timings.geometry += clock.elapsed();
        found
    }

    /// Solves a contact problem of form `form` with the step's solver (its
    /// warm start and fallbacks), counting it.
    pub fn solve(&mut self, problem: &ContactProblem<'_>, form: Form) -> ContactSolution {
        let clock = Instant::now();
        let solution = self.solver.solve(problem, form, self.settings);
        self.count(&solution, clock);
        solution
    }

    /// Solves Moreau–Jean's planar LCP (33) over the contacts `ids`.
    pub fn solve_planar(
        &mut self,
        problem: super::glocker_studer::PlanarImpactLcp,
        ids: &[ContactId],
        free: &DVector<f64>,
    ) -> ContactSolution {
        let clock = Instant::now();
        let solution = self.solver.solve_planar(problem, ids, free);
        self.count(&solution, clock);
        solution
    }

    /// Counts a solve that could not even be posed (its problem does not
    /// exist, e.g. dependent joints) and hands it back.
    pub fn unsolvable(&mut self, solution: ContactSolution) -> ContactSolution {
        self.solves += 1;
        solution
    }

    fn count(&mut self, solution: &ContactSolution, clock: Instant) {
        self.timings.lemke += clock.elapsed();
        self.pivots += solution.pivots;
        self.solves += 1;
    }

    /// The contact solver itself.
    pub fn solver(&mut self) -> &mut ContactSolver {
        self.solver
    }

    /// Whether the solver lets contacts join during a solve
    /// ([`ContactProblem::activation`]) for this model.
    pub fn activates(&self) -> bool {
        self.solver.activates(&self.model.mass_inverse_form())
    }

    /// W of the contact problem for the model: M⁻¹.
    pub fn mass_inverse(&self) -> MassInverse<'a> {
        self.model.mass_inverse_form()
    }

    /// Lemke pivots so far.
    pub fn pivots(&self) -> usize {
        self.pivots
    }

    /// Solves so far.
    pub fn solves(&self) -> usize {
        self.solves
    }
}

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
}

/// The stepper of a simulation: the chosen scheme as data with its memory,
/// the settings and the buffers the steps reuse.
#[derive(Debug, Clone, Default)]
pub struct Stepper {
    memory: StepperMemory,
    /// Tolerances and limits.
    pub settings: StepSettings,
    keep_lcp: bool,
    /// Reused between steps: the map the contact reports look end gaps up in.
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
        let start = Instant::now();
        if self.memory.scheme != params.stepper {
            self.memory = StepperMemory::cold(params.stepper);
        }
        let memory = &mut self.memory;
        memory.solver.begin_step(params);
        memory.solver.keep_lcp = self.keep_lcp;
        let mut step = Step::new(
            model,
            params,
            state,
            &self.settings,
            &memory.active,
            &mut memory.solver,
        );
        let outcome = scheme(params.stepper).advance(&mut step);
        let (timings, pivots, solves) = (step.timings, step.pivots, step.solves);
        let sweeps = memory.solver.sweeps();
        let advance = match outcome {
            Ok(advance) => advance,
            Err(solution) => {
                memory.solver.clear();
                let failed = report::Failure {
                    solution: *solution,
                    pivots,
                    solves,
                    sweeps,
                };
                return report::failure(model, params, state, failed, timings, start);
            }
        };
        let ending = Ending {
            gaps: &advance.end_gaps,
            missing: advance.missing,
            velocity: &advance.v,
            velocity_scale: advance.velocity_scale,
            zero: self.settings.zero,
        };
        let contacts = report::contact_reports(
            &advance.contacts,
            &advance.solution,
            &ending,
            &mut self.gap_lookup,
        );
        let min_gap = advance
            .end_gaps
            .iter()
            .map(|(_, gap)| *gap)
            .fold(f64::INFINITY, f64::min);
        memory.active = advance.active;
        let solution = advance.solution;
        state.q = advance.q;
        state.v = advance.v;
        state.t += params.dt;
        let (kinetic, potential) = model.energy(&state.q, &state.v, params);
        let mut timings = timings;
        timings.total = start.elapsed();
        StepReport {
            t: state.t,
            contacts,
            lcp_size: solution.lcp_size,
            largest_island: solution.largest_island,
            pivots,
            solves,
            sweeps,
            status: LcpStatus::Solved,
            residual: solution.residual,
            kinetic_energy: kinetic,
            potential_energy: potential,
            min_gap,
            timings,
            lcp: solution.lcp,
        }
    }

    /// Forgets the memory (after a reset or a scene change): the next step
    /// starts cold.
    pub fn clear(&mut self) {
        self.memory = StepperMemory::cold(self.memory.scheme);
    }

    /// Keep each step's final LCP in its report (for `--dump-lcp`).
    pub fn set_keep_lcp(&mut self, on: bool) {
        self.keep_lcp = on;
    }

    /// Whether each step's final LCP is kept.
    pub fn keeps_lcp(&self) -> bool {
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
