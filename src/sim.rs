//! A running simulation: a scene, the live parameters, the state and the
//! stepper (the scheme chosen in the parameters, with its memory). The
//! headless runner and the viewer both drive this one type.
//!
//! Beyond stepping, a person's hands on it: a perturbation force on a body
//! ([`Simulation::set_perturbation`]), bodies added while it runs
//! ([`Simulation::add_body`]), checkpoints of everything a step depends on
//! ([`Simulation::checkpoint`], kept by [`history::Timeline`]), snapshot
//! files ([`snapshot`]) and what a panel shows of one body ([`inspect`]).

pub mod footprint;
pub mod history;
pub mod inspect;
pub mod memory;
pub mod snapshot;
pub mod throw;

use crate::lcp::LcpStatus;
use crate::lcp::budget::Overrun;
use crate::model::{Model, Perturbation, State};
use crate::params::{Params, StepperKind};
use crate::scene::magnitude;
use crate::scene::overlap::rounded;
use crate::scene::{BodySpec, Scene};
use crate::stepper::{StepReport, StepSettings, Stepper, StepperMemory};
use std::path::Path;
use std::sync::Arc;
use thiserror::Error;

/// Why a step was not taken.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StepError {
    /// A parameter is out of range (e.g. h ≤ 0); the state is unchanged.
    #[error("parameter {field}: {message}")]
    InvalidParams {
        /// The parameter.
        field: &'static str,
        /// What is allowed.
        message: String,
    },
}

/// Why the last step was not taken, as far as the simulation can tell (the
/// step's [`StepReport`] has the LCP's status, size, pivots and residual).
#[derive(Debug, Clone, PartialEq)]
pub enum StepFailure {
    /// The stepper's LCP ended without a solution.
    Lcp,
    /// Every LCP was solved, but the new state or its energy is not finite;
    /// `what` names the first such value (e.g. "the velocity of body `rod`").
    Overflow {
        /// The first value that is not finite.
        what: String,
    },
    /// Every LCP was solved, but the step ended deeper than the scheme's
    /// own bound ([`StepReport::gap_bound`]).
    Penetration {
        /// The deepest end gap, m.
        gap: f64,
        /// The bound, m.
        bound: f64,
        /// Where: "bodies `a` and `b`", "body `a` and surface `table`"
        /// (empty when the deepest gap is not among the reported contacts).
        pair: String,
    },
}

/// Everything a step depends on besides the model and the parameters: the
/// state, the stepper's memory, the step count and report, and the bodies
/// added so far. Restoring one ([`Simulation::restore`]) and stepping with the
/// same parameters repeats the original steps bit for bit.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The state.
    pub state: State,
    /// Steps taken to reach it.
    pub steps: u64,
    /// The report of the step that reached it (its LCP dropped).
    pub last: Option<StepReport>,
    /// The stepper's memory: the scheme, its active set, the warm starts.
    pub stepper: StepperMemory,
    /// The bodies added to the scene by then (shared between checkpoints).
    pub added: Arc<Vec<BodySpec>>,
}

impl Checkpoint {
    /// Simulation time, s.
    pub fn t(&self) -> f64 {
        self.state.t
    }

    /// About how many bytes the checkpoint holds (its heap data and itself).
    pub fn footprint(&self) -> usize {
        let report = self.last.as_ref().map_or(0, |r| {
            std::mem::size_of::<StepReport>()
                + r.contacts
                    .iter()
                    .map(footprint::contact_report)
                    .sum::<usize>()
        });
        std::mem::size_of::<Self>()
            + 8 * (self.state.q.len() + self.state.v.len())
            + report
            + footprint::serialized(&self.stepper)
    }
}

/// Why a hand on the simulation was refused.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum HandError {
    /// The model is a generalized linear system: it has no bodies.
    #[error("a generalized linear system has no bodies to {0}")]
    Linear(&'static str),
    /// The perturbation names no body or holds a number out of range.
    #[error("perturbation: {0}")]
    Perturbation(String),
    /// The body is not valid.
    #[error("{0}")]
    Body(String),
}

/// A scene being simulated.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// The loaded scene (model, initial state, drawing hints).
    pub scene: Scene,
    /// The live parameters; edit them between steps.
    pub params: Params,
    /// The current state.
    pub state: State,
    /// Steps taken since the start or the last reset.
    pub steps: u64,
    /// The report of the last step.
    pub last: Option<StepReport>,
    /// Why the last step was not taken (`None` after a solved step).
    pub failure: Option<StepFailure>,
    /// The stepper: the chosen scheme (`params.stepper`) as data, with what it
    /// remembers between steps.
    stepper: Stepper,
    /// Bodies added while running, in order (after the scene file's own).
    added: Arc<Vec<BodySpec>>,
    /// How many bodies the scene file declares.
    base_bodies: usize,
}

impl Simulation {
    /// Starts a scene with its own parameters.
    pub fn new(scene: Scene) -> Self {
        let params = scene.params.clone();
        Self::with_params(scene, params)
    }

    /// Starts a scene with the given parameters (checked at each step).
    pub fn with_params(scene: Scene, params: Params) -> Self {
        Self {
            state: scene.initial.clone(),
            params,
            steps: 0,
            last: None,
            failure: None,
            stepper: Stepper::default(),
            added: Arc::new(Vec::new()),
            base_bodies: scene.body_count(),
            scene,
        }
    }

    /// The mechanical model.
    pub fn model(&self) -> &Model {
        &self.scene.model
    }

    /// Keep each step's final LCP in its report (for dumping).
    pub fn set_record_lcp(&mut self, on: bool) {
        self.stepper.set_keep_lcp(on.then_some(usize::MAX));
    }

    /// Keep each step's final LCP in its report when it has at most `most`
    /// unknowns: the dense matrix of a larger one is not even built (the
    /// 5,000-grain silo's would take 2.8 GB a step).
    pub fn set_record_lcp_up_to(&mut self, most: usize) {
        self.stepper.set_keep_lcp(Some(most));
    }

    /// Checks the live parameters against the model.
    pub fn check_params(&self) -> Result<(), StepError> {
        self.params
            .validate(&self.model().features())
            .map_err(|e| StepError::InvalidParams {
                field: e.field,
                message: e.message,
            })?;
        Ok(())
    }

    /// Takes one step of size `params.dt`. A step whose LCP is not solved leaves
    /// the state unchanged; its report says why.
    pub fn step(&mut self) -> Result<&StepReport, StepError> {
        self.check_params()?;
        if let Model::Rigid(system) = &mut self.scene.model {
            system.hold_perturbation(&self.state.q, &self.state.v);
        }
        let before = self.state.clone();
        // The last report's contact list lends its storage to the new one.
        let reports = self.last.take().map(|r| r.contacts).unwrap_or_default();
        let mut report =
            self.stepper
                .step_reusing(&self.scene.model, &self.params, &mut self.state, reports);
        self.failure = None;
        if !report.status.advances() {
            self.failure = Some(StepFailure::Lcp);
        } else if let Some(what) = first_not_finite(self.model(), &self.state, &report) {
            // Every LCP was solvable but the state overflowed (a force taken
            // explicitly past its stability limit, or inputs too large for
            // f64): report it like a failed solve and keep the last state.
            self.state = before;
            report.status = LcpStatus::NumericalFailure;
            self.failure = Some(StepFailure::Overflow { what });
        } else if let Some(bound) = report.broken_gap_bound() {
            // The scheme's promise broken. The step is taken again as
            // halves, each held to the promise (`StepSettings::split_depth`),
            // starting from the memory (active set, warm starts) the attempt
            // left: its contacts are the step's, and a cold start of a large
            // island costs tens of times a warm one (the generated pile of
            // 220 took 1.6 s a step over 2 s with cold halves, 0.5 s warm).
            // If that fails too, the step is reported, not taken, and the
            // memory, which belongs to a state not kept, is dropped.
            self.state = before.clone();
            let params = self.params.clone();
            let depth = self.stepper.settings.split_depth;
            match self.halves(&params, depth) {
                Some(mut split) => {
                    add_work(&mut split, &report);
                    self.state.t = before.t + params.dt;
                    split.t = self.state.t;
                    report = split;
                    self.steps += 1;
                }
                None => {
                    self.state = before;
                    self.stepper.clear();
                    report.status = LcpStatus::NumericalFailure;
                    self.failure = Some(StepFailure::Penetration {
                        gap: report.min_gap,
                        bound,
                        pair: deepest_pair(self.model(), &report),
                    });
                }
            }
        } else {
            self.steps += 1;
        }
        Ok(self.last.insert(report))
    }

    /// Takes a step of `params.dt` from the current state as two steps of
    /// half the size, each held to its scheme's gap promise and halved again
    /// when it breaks it, down to `depth` halvings. Gives the report of the
    /// last substep with the work of all of them (failed attempts included),
    /// or `None` when a substep fails or `depth` is 0 (the state is then
    /// wherever the substeps got to: the caller restores it).
    fn halves(&mut self, params: &Params, depth: usize) -> Option<StepReport> {
        if depth == 0 {
            return None;
        }
        let mut half = params.clone();
        half.dt = 0.5 * params.dt;
        let mut merged: Option<StepReport> = None;
        for _ in 0..2 {
            let start = self.state.clone();
            let attempt =
                self.stepper
                    .step_reusing(&self.scene.model, &half, &mut self.state, Vec::new());
            if !attempt.status.advances()
                || first_not_finite(self.model(), &self.state, &attempt).is_some()
            {
                return None;
            }
            let mut done = if attempt.broken_gap_bound().is_some() {
                self.state = start;
                let mut split = self.halves(&half, depth - 1)?;
                add_work(&mut split, &attempt);
                split
            } else {
                attempt
            };
            if let Some(first) = merged.take() {
                add_work(&mut done, &first);
                done.substeps += first.substeps;
                done.lcp_size = done.lcp_size.max(first.lcp_size);
                done.largest_island = done.largest_island.max(first.largest_island);
                done.residual = done.residual.max(first.residual);
            }
            merged = Some(done);
        }
        merged
    }

    /// Back to the initial state (parameters are kept; bodies added while
    /// running and the perturbation are removed).
    pub fn reset(&mut self) {
        self.scene.truncate_bodies(self.base_bodies);
        self.added = Arc::new(Vec::new());
        if let Model::Rigid(system) = &mut self.scene.model {
            system.perturbation = None;
        }
        self.state = self.scene.initial.clone();
        self.steps = 0;
        self.last = None;
        self.failure = None;
        self.stepper.clear();
    }

    /// Forgets what the stepper remembers between steps (the next step
    /// starts cold, as from a scene file).
    pub fn clear_caches(&mut self) {
        self.stepper.clear();
    }

    /// The stepper's tolerances and limits ([`StepSettings`]).
    pub fn step_settings(&self) -> &StepSettings {
        &self.stepper.settings
    }

    /// The stepper's tolerances and limits, the defaults unless changed
    /// here ([`StepSettings`]).
    pub fn step_settings_mut(&mut self) -> &mut StepSettings {
        &mut self.stepper.settings
    }

    /// What the stepper remembers between steps.
    pub fn stepper_memory(&self) -> &StepperMemory {
        self.stepper.memory()
    }

    /// Everything the next steps depend on besides the model and the
    /// parameters.
    pub fn checkpoint(&self) -> Checkpoint {
        let last = self.last.clone().map(|mut r| {
            r.lcp = None;
            r
        });
        Checkpoint {
            state: self.state.clone(),
            steps: self.steps,
            last,
            stepper: self.stepper.memory().clone(),
            added: Arc::clone(&self.added),
        }
    }

    /// Goes back (or forward) to a checkpoint of this simulation: its state,
    /// the stepper's memory, and the bodies added by then (later ones leave
    /// the model, earlier ones come back). The parameters and the
    /// perturbation stay as they are.
    pub fn restore(&mut self, checkpoint: &Checkpoint) {
        if !Arc::ptr_eq(&self.added, &checkpoint.added) {
            // Bodies only ever append, so the checkpoint's added bodies are
            // rebuilt on the scene file's own ones; each was valid when added.
            self.scene.truncate_bodies(self.base_bodies);
            let origin = self.scene.path.clone();
            for (k, spec) in checkpoint.added.iter().enumerate() {
                if let Err(e) = self.scene.add_body(spec, self.base_bodies + k, "", &origin) {
                    debug_assert!(false, "a body added before no longer builds: {e}");
                }
            }
            self.added = Arc::clone(&checkpoint.added);
        }
        self.state = checkpoint.state.clone();
        self.steps = checkpoint.steps;
        self.last = checkpoint.last.clone();
        self.failure = None;
        self.stepper.restore(checkpoint.stepper.clone());
    }

    /// The bodies added while running, in order (they follow the scene
    /// file's own).
    pub fn added_bodies(&self) -> &[BodySpec] {
        &self.added
    }

    /// How many bodies the scene file itself declares.
    pub fn base_bodies(&self) -> usize {
        self.base_bodies
    }

    /// Adds a body to a running rigid scene at the spec's pose and velocity:
    /// it joins the model (contacts, energies, the CSV columns of a run that
    /// starts later) and the state; existing contacts keep their identities.
    /// Returns its index.
    pub fn add_body(&mut self, spec: BodySpec) -> Result<usize, HandError> {
        if matches!(self.model(), Model::Linear(_)) {
            return Err(HandError::Linear("add a body to"));
        }
        let index = self.scene.body_count();
        let origin = self.scene.path.clone();
        let built = self
            .scene
            .add_body(&spec, index, "", &origin)
            .map_err(|e| HandError::Body(e.to_string()))?;
        let append = |x: &nalgebra::DVector<f64>, extra: &[f64]| {
            let mut out = x.clone().resize_vertically(x.len() + extra.len(), 0.0);
            out.rows_mut(x.len(), extra.len()).copy_from_slice(extra);
            out
        };
        self.state.q = append(&self.state.q, &built.q);
        self.state.v = append(&self.state.v, &built.v);
        let mut added = (*self.added).clone();
        added.push(spec);
        self.added = Arc::new(added);
        Ok(index)
    }

    /// Sets (or with `None` removes) the hand on a body: a spring–damper
    /// from a point of the body to a target in the world, applied from the
    /// next step on ([`crate::model::perturbation`]).
    pub fn set_perturbation(
        &mut self,
        perturbation: Option<Perturbation>,
    ) -> Result<(), HandError> {
        let Model::Rigid(system) = &mut self.scene.model else {
            return match perturbation {
                None => Ok(()),
                Some(_) => Err(HandError::Linear("perturb")),
            };
        };
        if let Some(p) = &perturbation {
            if p.body >= system.bodies.len() {
                return Err(HandError::Perturbation(format!(
                    "no body {} (the scene has {})",
                    p.body,
                    system.bodies.len()
                )));
            }
            let mut numbers = p
                .grab
                .iter()
                .chain(p.target.iter())
                .chain([&p.stiffness, &p.damping]);
            if numbers.any(|&x| !magnitude::allowed(x)) || p.stiffness < 0.0 || p.damping < 0.0 {
                return Err(HandError::Perturbation(format!(
                    "grab, target, stiffness and damping must be finite, at most {:e}, and k, c ≥ 0",
                    magnitude::MAX_MAGNITUDE
                )));
            }
        }
        system.perturbation = perturbation;
        Ok(())
    }

    /// The hand on a body, if any.
    pub fn perturbation(&self) -> Option<&Perturbation> {
        match self.model() {
            Model::Rigid(s) => s.perturbation.as_ref(),
            Model::Linear(_) => None,
        }
    }

    /// Writes the current state as a snapshot file (see [`snapshot`]).
    pub fn save_snapshot(&self, path: &Path) -> Result<(), String> {
        snapshot::Snapshot::of(self).save(path)
    }

    /// One line on why the last step was not taken: which step (its index
    /// and t), which stepper, what ended it and its likely cause as far as
    /// the code knows it. `None` when the last step was solved.
    pub fn failure_message(&self) -> Option<String> {
        let failure = self.failure.as_ref()?;
        let report = self.last.as_ref()?;
        let stepper = self.params.stepper;
        let at = format!(
            "step {} at t = {} s (h = {} s), stepper {stepper}",
            self.steps + 1,
            significant(self.state.t),
            significant(self.params.dt)
        );
        let explicit = stepper != StepperKind::AnitescuPotra && has_force_elements(self.model());
        let cause = match failure {
            StepFailure::Lcp if report.status == LcpStatus::OverBudget => {
                budget_cause(report, self.stepper.overrun())
            }
            StepFailure::Lcp if explicit => format!(
                "{}; the {stepper} stepper takes {} explicitly, so an h past their stability limit is a likely cause (lower --dt, or use anitescu-potra)",
                lcp_cause(self.model(), report),
                force_elements(self.model())
            ),
            StepFailure::Lcp => lcp_cause(self.model(), report),
            StepFailure::Penetration { gap, bound, pair } => {
                let at = if pair.is_empty() {
                    String::new()
                } else {
                    format!(" between {pair}")
                };
                let settings = &self.stepper.settings;
                let halved = match settings.split_depth {
                    0 => String::new(),
                    depth => format!(" and in steps down to h/{}", 1u64 << depth.min(63)),
                };
                format!(
                    "every LCP was solved, but the step ended {:.3e} m deep{at}, past the {stepper} stepper's bound of {:.1e} m after up to {} fixed-point iterations{halved}: the motion in one step is too large for the contacts linearized along it (lower --dt)",
                    -gap,
                    -bound,
                    self.params.ncp_iterations.max(settings.gap_iterations)
                        + settings.extra_gap_iterations
                )
            }
            StepFailure::Overflow { what } => {
                if explicit {
                    format!(
                        "every LCP was solved, but {what} overflowed: the {stepper} stepper takes {} explicitly, and h is past their stability limit (lower --dt, or use anitescu-potra, which takes them implicitly)",
                        force_elements(self.model())
                    )
                } else {
                    format!(
                        "every LCP was solved, but {what} overflowed: velocities, forces or impulses outgrew f64 (the scene's magnitudes or h are too large for the step)"
                    )
                }
            }
        };
        Some(format!("{at}: {cause}"))
    }

    /// Kinetic and potential energy of the current state, J.
    pub fn energy(&self) -> (f64, f64) {
        self.model()
            .energy(&self.state.q, &self.state.v, &self.params)
    }
}

/// Adds the work `other` recorded (pivots, solves, sweeps, times) to
/// `report`.
fn add_work(report: &mut StepReport, other: &StepReport) {
    report.pivots += other.pivots;
    report.solves += other.solves;
    report.sweeps += other.sweeps;
    let (t, o) = (&mut report.timings, &other.timings);
    t.geometry += o.geometry;
    t.lcp_build += o.lcp_build;
    t.lemke += o.lemke;
    t.total += o.total;
}

/// The first value of a solved step that is not finite: a coordinate, a
/// velocity or an energy, named for a message.
fn first_not_finite(model: &Model, state: &State, report: &StepReport) -> Option<String> {
    let index = |values: &nalgebra::DVector<f64>| values.iter().position(|x| !x.is_finite());
    let owner = |i: usize, per_body: usize| match model {
        Model::Rigid(s) => s
            .bodies
            .get(i / per_body)
            .map_or_else(String::new, |b| format!(" of body `{}`", b.name)),
        Model::Linear(s) => s
            .coordinates
            .get(i)
            .map_or_else(String::new, |c| format!(" of coordinate `{c}`")),
    };
    let (per_q, per_v) = match model {
        Model::Rigid(s) => (
            crate::model::rigid::position_size(s.dimension),
            crate::model::rigid::velocity_size(s.dimension),
        ),
        Model::Linear(_) => (1, 1),
    };
    if let Some(i) = index(&state.q) {
        return Some(format!("the position{}", owner(i, per_q)));
    }
    if let Some(i) = index(&state.v) {
        return Some(format!("the velocity{}", owner(i, per_v)));
    }
    if !report.kinetic_energy.is_finite() {
        return Some("the kinetic energy".to_owned());
    }
    if !report.potential_energy.is_finite() {
        return Some("the potential energy".to_owned());
    }
    None
}

/// Whether the model has springs or dampers (which every stepper but
/// Anitescu–Potra's linearly implicit one evaluates at the start of a step).
fn has_force_elements(model: &Model) -> bool {
    match model {
        Model::Rigid(s) => !s.elements.is_empty(),
        Model::Linear(s) => s.stiffness.amax() > 0.0 || s.damping.amax() > 0.0,
    }
}

/// The model's springs and dampers, as a message names them.
fn force_elements(model: &Model) -> &'static str {
    match model {
        Model::Rigid(_) => "the scene's springs and dampers",
        Model::Linear(_) => "the system's stiffness and damping",
    }
}

/// Which of the step's budgets a step that went over it spent, and the flag
/// that raises it.
fn budget_cause(report: &StepReport, overrun: Option<(Overrun, u64)>) -> String {
    let Some((limit, pivots)) = overrun else {
        return format!("LCP {}: {}", report.status, report.status.reason());
    };
    let spent = format!(
        "{pivots} Lemke pivots over {} solves (the last on {} unknowns, residual {:.1e})",
        report.solves, report.lcp_size, report.residual
    );
    match limit {
        Overrun::Pivots(most) => format!(
            "the step went over its budget of {most} pivots after {spent}; --max-step-pivots raises it"
        ),
        Overrun::Seconds(seconds) => format!(
            "the step went over its budget of {} s after {spent}; --max-step-seconds raises it",
            rounded(seconds)
        ),
    }
}

/// What the failed solve's report says, with the one cause the model makes
/// likely: masses many orders of magnitude apart, which leave the LCP
/// ill-conditioned.
fn lcp_cause(model: &Model, report: &StepReport) -> String {
    let work = if report.sweeps > 0 {
        format!("{} NSGS sweeps", report.sweeps)
    } else {
        format!("{} pivots", report.pivots)
    };
    let mut cause = format!(
        "LCP {} after {} on {} unknowns ({} solves, residual {:.1e}): {}",
        report.status,
        work,
        report.lcp_size,
        report.solves,
        report.residual,
        report.status.reason()
    );
    if report.status == LcpStatus::NumericalFailure
        && report.pivots == 0
        && !report.residual.is_finite()
    {
        cause = format!(
            "LCP {} on {} unknowns before any pivot: the step's problem could not be formed or was rejected (non-finite data from a diverging state, or joint rows that depend on each other)",
            report.status, report.lcp_size
        );
    }
    if let Model::Rigid(s) = model {
        let masses = s.bodies.iter().map(|b| b.mass);
        let (lightest, heaviest) = masses.fold((f64::INFINITY, 0.0_f64), |(lo, hi), m| {
            (lo.min(m), hi.max(m))
        });
        if heaviest / lightest > 1e6 {
            cause.push_str(&format!(
                "; the body masses span {lightest:e} to {heaviest:e} kg, which makes an ill-conditioned LCP likely"
            ));
        }
    }
    cause
}

/// The contact of `report` with the deepest gap, named: "bodies `a` and
/// `b`", "body `a` and surface `table`" (empty when none is reported).
fn deepest_pair(model: &Model, report: &StepReport) -> String {
    let Some(c) = report
        .contacts
        .iter()
        .min_by(|x, y| x.gap.total_cmp(&y.gap))
    else {
        return String::new();
    };
    match model {
        Model::Rigid(s) => {
            use crate::model::Other;
            let a = s.other_name(Other::Body(c.id.a)).unwrap_or("?");
            let b = s.other_name(c.id.b).unwrap_or("?");
            match c.id.b {
                Other::Body(_) => format!("bodies `{a}` and `{b}`"),
                Other::Surface(_) => format!("body `{a}` and surface `{b}`"),
                Other::World => format!("body `{a}` and the world"),
            }
        }
        Model::Linear(s) => s
            .contacts
            .get(c.id.a)
            .map_or_else(String::new, |x| format!("contact `{}`", x.name)),
    }
}

/// `x` to nine significant digits, printed plainly (0.225 rather than
/// 0.22500000000000012).
fn significant(x: f64) -> f64 {
    format!("{x:.8e}").parse().unwrap_or(x)
}
