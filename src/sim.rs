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
        let finite = |x: &f64| x.is_finite();
        if report.status == LcpStatus::Solved
            && !(self.state.q.iter().all(finite) && self.state.v.iter().all(finite))
        {
            // An explicit scheme past its stability limit overflows while every
            // LCP is solvable: report it like a failed solve, keep the last state.
            self.state = before;
            report.status = LcpStatus::NumericalFailure;
        }
        if report.status == LcpStatus::Solved {
            self.steps += 1;
        }
        Ok(self.last.insert(report))
    }

    /// Back to the initial state (parameters are kept).
    pub fn reset(&mut self) {
        self.state = self.scene.initial.clone();
        self.steps = 0;
        self.last = None;
        self.stewart_trinkle.clear();
        self.moreau_jean.clear();
        self.anitescu_potra.clear();
        self.euler_lcp.clear();
    }

    /// Kinetic and potential energy of the current state, J.
    pub fn energy(&self) -> (f64, f64) {
        self.model()
            .energy(&self.state.q, &self.state.v, &self.params)
    }
}
