//! A running simulation: a scene, the live parameters, the state and the
//! stepper. The headless runner and the viewer both drive this one type.

use crate::lcp::LcpStatus;
use crate::model::{Model, State};
use crate::params::{Params, StepperKind};
use crate::scene::Scene;
use crate::stepper::{AnitescuPotra, MoreauJean, StepReport, StewartTrinkle};
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
    stewart_trinkle: StewartTrinkle,
    moreau_jean: MoreauJean,
    anitescu_potra: AnitescuPotra,
    euler_lcp: AnitescuPotra,
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
            stewart_trinkle: StewartTrinkle::default(),
            moreau_jean: MoreauJean::default(),
            anitescu_potra: AnitescuPotra::linearly_implicit(),
            euler_lcp: AnitescuPotra::euler(),
            scene,
        }
    }

    /// The mechanical model.
    pub fn model(&self) -> &Model {
        &self.scene.model
    }

    /// Keep each step's final LCP in its report (for dumping).
    pub fn set_record_lcp(&mut self, on: bool) {
        self.stewart_trinkle.solver.keep_lcp = on;
        self.moreau_jean.record_lcp = on;
        self.anitescu_potra.record_lcp = on;
        self.euler_lcp.record_lcp = on;
    }

    /// Checks the live parameters against the model.
    pub fn check_params(&self) -> Result<(), StepError> {
        self.params
            .validate(self.model())
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
        let before = self.state.clone();
        let mut report = match self.params.stepper {
            StepperKind::StewartTrinkle => {
                self.stewart_trinkle
                    .step(&self.scene.model, &self.params, &mut self.state)
            }
            StepperKind::MoreauJean => {
                self.moreau_jean
                    .step(&self.scene.model, &self.params, &mut self.state)
            }
            StepperKind::AnitescuPotra => {
                self.anitescu_potra
                    .step(&self.scene.model, &self.params, &mut self.state)
            }
            StepperKind::EulerLcp => {
                self.euler_lcp
                    .step(&self.scene.model, &self.params, &mut self.state)
            }
        };
        self.failure = None;
        if report.status != LcpStatus::Solved {
            self.failure = Some(StepFailure::Lcp);
        } else if let Some(what) = first_not_finite(self.model(), &self.state, &report) {
            // Every LCP was solvable but the state overflowed (a force taken
            // explicitly past its stability limit, or inputs too large for
            // f64): report it like a failed solve and keep the last state.
            self.state = before;
            report.status = LcpStatus::NumericalFailure;
            self.failure = Some(StepFailure::Overflow { what });
        } else {
            self.steps += 1;
        }
        Ok(self.last.insert(report))
    }

    /// Back to the initial state (parameters are kept).
    pub fn reset(&mut self) {
        self.state = self.scene.initial.clone();
        self.steps = 0;
        self.last = None;
        self.failure = None;
        self.stewart_trinkle.clear();
        self.moreau_jean.clear();
        self.anitescu_potra.clear();
        self.euler_lcp.clear();
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
            StepFailure::Lcp if explicit => format!(
                "{}; the {stepper} stepper takes {} explicitly, so an h past their stability limit is a likely cause (lower --dt, or use anitescu-potra)",
                lcp_cause(self.model(), report),
                force_elements(self.model())
            ),
            StepFailure::Lcp => lcp_cause(self.model(), report),
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

/// What the failed solve's report says, with the one cause the model makes
/// likely: masses many orders of magnitude apart, which leave the LCP
/// ill-conditioned.
fn lcp_cause(model: &Model, report: &StepReport) -> String {
    let mut cause = format!(
        "LCP {} after {} pivots on {} unknowns ({} solves, residual {:.1e}): {}",
        report.status,
        report.pivots,
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

/// `x` to nine significant digits, printed plainly (0.225 rather than
/// 0.22500000000000012).
fn significant(x: f64) -> f64 {
    format!("{x:.8e}").parse().unwrap_or(x)
}
