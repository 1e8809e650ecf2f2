//! The live parameters of a simulation: one struct that the scene file, the CLI
//! flags and the viewer's panel all write (nothing keeps a second copy), and
//! the one place that says which values are allowed ([`Params::validate`]) and
//! how flags change them ([`Params::with_overrides`]). Scene loading, `run`,
//! `record`, the viewer's panel and its reload all go through these two.

use crate::magnitude::{MAX_MAGNITUDE, allowed};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// Which time-stepping scheme advances the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum StepperKind {
    /// Stewart & Trinkle 1996: position-level LCP (29), inelastic.
    #[default]
    #[serde(rename = "stewart-trinkle")]
    StewartTrinkle,
    /// Moreau's midpoint rule with Newton's impact law per contact
    /// (Glocker & Studer 2005 §5–6): velocity-level LCP (33), elastic impacts.
    #[serde(rename = "moreau-jean")]
    MoreauJean,
    /// Anitescu & Potra 2002: velocity-level mixed LCP (12)–(16) with springs,
    /// dampers and the gyroscopic term linearly implicit (32)–(33), joints
    /// eliminated exactly, inelastic collisions by an h = 0 solve.
    #[serde(rename = "anitescu-potra")]
    AnitescuPotra,
    /// The semi-implicit Euler LCP (7): the same step with every force explicit.
    #[serde(rename = "euler-lcp")]
    EulerLcp,
}

impl StepperKind {
    /// Every stepper implemented so far.
    pub const ALL: [StepperKind; 4] = [
        StepperKind::StewartTrinkle,
        StepperKind::MoreauJean,
        StepperKind::AnitescuPotra,
        StepperKind::EulerLcp,
    ];

    /// The name used on the command line and in scene files.
    pub fn name(self) -> &'static str {
        match self {
            Self::StewartTrinkle => "stewart-trinkle",
            Self::MoreauJean => "moreau-jean",
            Self::AnitescuPotra => "anitescu-potra",
            Self::EulerLcp => "euler-lcp",
        }
    }

    /// Whether the scheme handles bilateral joints (equality rows (13)).
    pub fn supports_joints(self) -> bool {
        matches!(self, Self::AnitescuPotra | Self::EulerLcp)
    }

    /// Whether the scheme uses a restitution coefficient (Stewart–Trinkle,
    /// Anitescu–Potra and the Euler LCP are inelastic by construction).
    pub fn uses_restitution(self) -> bool {
        matches!(self, Self::MoreauJean)
    }
}

impl fmt::Display for StepperKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for StepperKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|k| k.name()).collect();
                format!("unknown stepper `{s}` (known: {})", names.join(", "))
            })
    }
}

/// How each step's contact problem is solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum SolverKind {
    /// Lemke's method on the LCP (29): exact, a pivot per change of the
    /// active set (Stewart & Trinkle 1996 §3).
    #[default]
    #[serde(rename = "lemke")]
    Lemke,
    /// Nonlinear Gauss–Seidel over contacts on the same LCP (Moreau 1998,
    /// after (20)): each contact's local problem solved exactly in turn,
    /// sweeping until the residual is below `tolerance`
    /// (the NSGS solver of the solver layer).
    #[serde(rename = "nsgs")]
    Nsgs,
}

impl SolverKind {
    /// Both solvers.
    pub const ALL: [SolverKind; 2] = [SolverKind::Lemke, SolverKind::Nsgs];

    /// The name used on the command line and in scene files.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lemke => "lemke",
            Self::Nsgs => "nsgs",
        }
    }
}

impl fmt::Display for SolverKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SolverKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown solver `{s}` (known: lemke, nsgs)"))
    }
}

/// The set of admissible contact impulses of NSGS's local problem in space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FrictionCone {
    /// Coulomb's circular cone ‖r_T‖ ≤ μ r_N (Moreau 1998 §6; Siconos fc3d):
    /// three unknowns per contact, exact isotropic friction.
    #[serde(rename = "circular")]
    Circular,
    /// The k-edge pyramid of the LCP (29) (Stewart & Trinkle 1996 §3), the
    /// problem Lemke solves: NSGS and Lemke compared on identical data.
    #[serde(rename = "pyramid")]
    Pyramid,
}

impl FrictionCone {
    /// Both cones.
    pub const ALL: [FrictionCone; 2] = [FrictionCone::Circular, FrictionCone::Pyramid];

    /// The name used on the command line and in scene files.
    pub fn name(self) -> &'static str {
        match self {
            Self::Circular => "circular",
            Self::Pyramid => "pyramid",
        }
    }
}

impl fmt::Display for FrictionCone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FrictionCone {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown friction cone `{s}` (known: circular, pyramid)"))
    }
}

/// Friction directions of the contacts NSGS solves on the circular cone: the
/// 4-edge pyramid's d₁ = t₁, d₂ = t₂, d₃ = −t₁, d₄ = −t₂ hold the orthonormal
/// tangent pair in rows 1 and 2 and keep the (29) layout of the impulses.
pub const CIRCULAR_CONE_DIRECTIONS: usize = 4;

impl StepperKind {
    /// Whether the scheme can solve its contact problem by NSGS: the two
    /// whose problem is the contact LCP (29) alone (Anitescu–Potra and the
    /// Euler LCP carry joints and springs in a mixed LCP that only Lemke
    /// solves here).
    pub fn supports_nsgs(self) -> bool {
        matches!(self, Self::StewartTrinkle | Self::MoreauJean)
    }
}

/// The knobs a user turns while a scene runs. Units are SI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Time step h, s.
    pub dt: f64,
    /// How long a headless run lasts, s.
    pub duration: f64,
    /// Coulomb friction coefficient μ of every contact (scene-wide: one value for
    /// all contacts, so the panel's slider means one thing).
    pub mu: f64,
    /// Newton restitution coefficient e (only for steppers with an impact law):
    /// the normal restitution ε_N of every contact whose scene file (contact,
    /// body or surface) does not set its own. Tangential restitution ε_T is 0
    /// unless the scene sets it.
    pub restitution: f64,
    /// Damping coefficient δ of every damper that does not set its own, N·s/m
    /// (the model's force elements; [`ModelFeatures::dampers_take_damping`]
    /// says whether any damper uses it).
    pub damping: f64,
    /// Stiffness γ of every spring that does not set its own, N/m
    /// ([`ModelFeatures::springs_take_stiffness`] says whether any spring uses it).
    pub stiffness: f64,
    /// Edges k of the polyhedral friction pyramid in space (≥ 3); planar contacts
    /// always use the pair ±t.
    pub edges: usize,
    /// The time-stepping scheme.
    pub stepper: StepperKind,
    /// Fixed-point iterations of Stewart–Trinkle's nonlinear version (§3.6);
    /// 1 is the linearized scheme.
    pub ncp_iterations: usize,
    /// How the contact problem of each step is solved.
    pub solver: SolverKind,
    /// NSGS: the relative residual at which the sweeps stop
    /// (a relative natural-map residual; the NSGS solver defines it).
    pub tolerance: f64,
    /// NSGS: the sweep limit of one solve.
    pub max_iterations: usize,
    /// NSGS's local friction law in space; omitted: the solver's own (the
    /// circular cone for nsgs, the pyramid for lemke, which solves (29)
    /// only). Planar contacts always use the two-direction law ±t.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub friction_cone: Option<FrictionCone>,
    /// NSGS: a solve that reaches the sweep limit fails the step instead of
    /// going on with its best iterate.
    #[serde(skip_serializing_if = "is_false")]
    pub strict: bool,
}

/// The parameters one side of a comparison sets over its scene's own
/// (`scene::comparison`): each field as in [`Params`], omitted to keep the
/// scene's. The duration is the comparison's, the same for both sides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ParamsPatch {
    /// Time step h, s.
    pub dt: Option<f64>,
    /// Coulomb friction coefficient μ.
    pub mu: Option<f64>,
    /// Newton restitution ε_N.
    pub restitution: Option<f64>,
    /// Damping δ of the dampers that set none, N·s/m.
    pub damping: Option<f64>,
    /// Stiffness γ of the springs that set none, N/m.
    pub stiffness: Option<f64>,
    /// Edges k of the friction pyramid in space.
    pub edges: Option<usize>,
    /// The time-stepping scheme.
    pub stepper: Option<StepperKind>,
    /// Fixed-point iterations of Stewart–Trinkle's nonlinear version.
    pub ncp_iterations: Option<usize>,
    /// The contact solver.
    pub solver: Option<SolverKind>,
    /// NSGS: relative residual at which the sweeps stop.
    pub tolerance: Option<f64>,
    /// NSGS: the sweep limit of one solve.
    pub max_iterations: Option<usize>,
    /// NSGS's friction law in space.
    pub friction_cone: Option<FrictionCone>,
    /// NSGS: a solve at the sweep limit fails the step.
    pub strict: Option<bool>,
}

impl ParamsPatch {
    /// `base` with the fields this patch sets.
    pub fn apply(&self, base: &Params) -> Params {
        let mut p = base.clone();
        let f = |slot: &mut f64, v: Option<f64>| {
            if let Some(v) = v {
                *slot = v;
            }
        };
        f(&mut p.dt, self.dt);
        f(&mut p.mu, self.mu);
        f(&mut p.restitution, self.restitution);
        f(&mut p.damping, self.damping);
        f(&mut p.stiffness, self.stiffness);
        f(&mut p.tolerance, self.tolerance);
        let n = |slot: &mut usize, v: Option<usize>| {
            if let Some(v) = v {
                *slot = v;
            }
        };
        n(&mut p.edges, self.edges);
        n(&mut p.ncp_iterations, self.ncp_iterations);
        n(&mut p.max_iterations, self.max_iterations);
        if let Some(s) = self.stepper {
            p.stepper = s;
        }
        if let Some(s) = self.solver {
            p.solver = s;
        }
        if self.friction_cone.is_some() {
            p.friction_cone = self.friction_cone;
        }
        if let Some(s) = self.strict {
            p.strict = s;
        }
        p
    }
}

/// The NSGS tolerance above which [`Params::warnings`] warns.
pub const SOFT_TOLERANCE: f64 = 1e-2;

fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for Params {
    fn default() -> Self {
        Self {
            dt: 0.0025,
            duration: 1.0,
            mu: 0.5,
            restitution: 0.0,
            damping: 0.0,
            stiffness: 0.0,
            edges: 8,
            stepper: StepperKind::StewartTrinkle,
            ncp_iterations: 1,
            solver: SolverKind::Lemke,
            // NSGS's relative residual: loose enough that a heap of 1,000
            // grains forming in a box finishes every step (at 1e-4, 31 of
            // its first 200 reach the sweep limit), tight enough for the
            // pile under Stewart–Trinkle (deepest gap −9.0e-7 m over 2 s,
            // the energy falling every step). Moreau–Jean tightens it
            // within a step while the impulses do work (docs/solvers.md).
            tolerance: 1e-3,
            max_iterations: 1000,
            friction_cone: None,
            strict: false,
        }
    }
}

/// What the parameters are checked against: the features of a model that
/// decide which values apply to it (the model reports its own,
/// `Model::features`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModelFeatures {
    /// Contacts carry the two planar friction directions ±t (no pyramid).
    pub planar: bool,
    /// Rigid bodies (block-diagonal M⁻¹), not a generalized linear system.
    pub rigid: bool,
    /// Bilateral joints, which only some steppers hold.
    pub joints: bool,
    /// Some spring takes the scene-wide [`Params::stiffness`].
    pub springs_take_stiffness: bool,
    /// Some damper takes the scene-wide [`Params::damping`].
    pub dampers_take_damping: bool,
}

/// A parameter that breaks a rule: its field (as named in scene files) and
/// what is allowed.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{field}: {message}")]
pub struct ParamError {
    /// The parameter, as in scene files (`dt`, `ncp_iterations`, …).
    pub field: &'static str,
    /// What is allowed and what was found.
    pub message: String,
}

impl ParamError {
    /// The rule `field` breaks, in words.
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        Self {
            field,
            message: message.into(),
        }
    }

    /// The field as a command-line flag (`ncp_iterations` →
    /// `--ncp-iterations`; `friction_cone` → `--cone`).
    pub fn flag(&self) -> String {
        if self.field == "friction_cone" {
            return "--cone".to_owned();
        }
        format!("--{}", self.field.replace('_', "-"))
    }
}

impl Params {
    /// The friction law the contact solver applies in space: the scene's
    /// choice, else circular for NSGS and the pyramid for Lemke.
    pub fn cone(&self) -> FrictionCone {
        self.friction_cone.unwrap_or(match self.solver {
            SolverKind::Nsgs => FrictionCone::Circular,
            SolverKind::Lemke => FrictionCone::Pyramid,
        })
    }

    /// Friction directions per contact in space: k = `edges` on the pyramid,
    /// [`CIRCULAR_CONE_DIRECTIONS`] on the circular cone.
    pub fn friction_edges(&self) -> usize {
        match self.cone() {
            FrictionCone::Circular => CIRCULAR_CONE_DIRECTIONS,
            FrictionCone::Pyramid => self.edges,
        }
    }

    /// What a valid setting will do that a user may not expect, one line
    /// each: an NSGS tolerance above [`SOFT_TOLERANCE`] stops the sweeps at
    /// impulses far from the solution, so contacts give (the tower falls at
    /// 0.9, and the run ends well).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.solver == SolverKind::Nsgs && self.tolerance > SOFT_TOLERANCE {
            out.push(format!(
                "warning: NSGS tolerance {} is above {SOFT_TOLERANCE:e}: the sweeps stop at impulses that leave contacts soft (bodies sink, stacks may fall); 1e-3 is the default",
                self.tolerance
            ));
        }
        out
    }

    /// Checks every parameter against its range and against the model's
    /// `features`: h and
    /// the duration positive, μ, damping and stiffness ≥ 0, e ∈ [0, 1], every
    /// real at most [`MAX_MAGNITUDE`], k ≥ 3 in space and ≤ 256, 1–100 NCP
    /// iterations, and a stepper that can hold the model's joints.
    pub fn validate(&self, model: &ModelFeatures) -> Result<(), ParamError> {
        let reals = [
            ("dt", self.dt),
            ("duration", self.duration),
            ("mu", self.mu),
            ("restitution", self.restitution),
            ("damping", self.damping),
            ("stiffness", self.stiffness),
            ("tolerance", self.tolerance),
        ];
        for (field, value) in reals {
            if !allowed(value) {
                return Err(ParamError::new(
                    field,
                    format!(
                        "must be finite and at most {MAX_MAGNITUDE:e} in magnitude, found {value:e}"
                    ),
                ));
            }
        }
        if self.dt <= 0.0 {
            return Err(ParamError::new(
                "dt",
                format!("the step size h must be positive, found {}", self.dt),
            ));
        }
        if self.duration <= 0.0 {
            return Err(ParamError::new(
                "duration",
                format!("must be positive, found {}", self.duration),
            ));
        }
        if self.mu < 0.0 {
            return Err(ParamError::new(
                "mu",
                format!("friction μ must be ≥ 0, found {}", self.mu),
            ));
        }
        if !(0.0..=1.0).contains(&self.restitution) {
            return Err(ParamError::new(
                "restitution",
                format!("restitution must be in [0, 1], found {}", self.restitution),
            ));
        }
        if self.damping < 0.0 {
            return Err(ParamError::new(
                "damping",
                format!("must be ≥ 0, found {}", self.damping),
            ));
        }
        if self.stiffness < 0.0 {
            return Err(ParamError::new(
                "stiffness",
                format!("must be ≥ 0, found {}", self.stiffness),
            ));
        }
        if !model.planar && self.edges < 3 {
            return Err(ParamError::new(
                "edges",
                format!(
                    "a friction pyramid in space needs k ≥ 3 edges, found {}",
                    self.edges
                ),
            ));
        }
        if self.edges > 256 {
            return Err(ParamError::new(
                "edges",
                format!("at most 256 edges, found {}", self.edges),
            ));
        }
        if self.ncp_iterations == 0 || self.ncp_iterations > 100 {
            return Err(ParamError::new(
                "ncp_iterations",
                format!("must be between 1 and 100, found {}", self.ncp_iterations),
            ));
        }
        if !(self.tolerance > 0.0 && self.tolerance < 1.0) {
            return Err(ParamError::new(
                "tolerance",
                format!("must be in (0, 1), found {:e}", self.tolerance),
            ));
        }
        if self.max_iterations == 0 || self.max_iterations > 1_000_000 {
            return Err(ParamError::new(
                "max_iterations",
                format!(
                    "must be between 1 and 1000000, found {}",
                    self.max_iterations
                ),
            ));
        }
        if self.solver == SolverKind::Lemke && self.friction_cone == Some(FrictionCone::Circular) {
            return Err(ParamError::new(
                "friction_cone",
                "lemke solves the LCP (29) on the k-edge pyramid; the circular cone needs the nsgs solver",
            ));
        }
        if self.solver == SolverKind::Nsgs {
            if !self.stepper.supports_nsgs() {
                return Err(ParamError::new(
                    "solver",
                    format!(
                        "nsgs solves the contact LCP of stewart-trinkle and moreau-jean; the {} stepper's mixed LCP (joints, springs) is solved by lemke",
                        self.stepper
                    ),
                ));
            }
            if !model.rigid {
                return Err(ParamError::new(
                    "solver",
                    "nsgs needs rigid bodies: a generalized linear system couples every contact through its dense M⁻¹",
                ));
            }
        }
        if model.joints && !self.stepper.supports_joints() {
            return Err(ParamError::new(
                "stepper",
                format!(
                    "the scene has joints, which the {} stepper cannot hold; use anitescu-potra or euler-lcp",
                    self.stepper
                ),
            ));
        }
        Ok(())
    }
}
