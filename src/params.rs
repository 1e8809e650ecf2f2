//! The live parameters of a simulation: one struct that the scene file, the CLI
//! flags and the viewer's panel all write (nothing keeps a second copy), and
//! the one place that says which values are allowed ([`Params::validate`]) and
//! how flags change them ([`Params::with_overrides`]). Scene loading, `run`,
//! `record`, the viewer's panel and its reload all go through these two.

use crate::model::Model;
use crate::scene::magnitude::{MAX_MAGNITUDE, allowed};
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
    /// ([`crate::stepper::nsgs`]).
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
    /// (see [`crate::model::element`]; [`crate::model::Model::uses_damping`]
    /// says whether any damper uses it).
    pub damping: f64,
    /// Stiffness γ of every spring that does not set its own, N/m
    /// ([`crate::model::Model::uses_stiffness`] says whether any spring uses it).
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
    /// ([`crate::stepper::nsgs`] defines it).
    pub tolerance: f64,
    /// NSGS: the sweep limit of one solve.
    pub max_iterations: usize,
    /// NSGS's local friction law in space; omitted: the solver's own (the
    /// circular cone for nsgs, the pyramid for lemke, which solves (29)
    /// only). Planar contacts always use the two-direction law ±t.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub friction_cone: Option<FrictionCone>,
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
            // Siconos's default for its fc3d NSGS: tight enough for the
            // pile's guarantees (deepest gap −5.8e-7 m, largest energy rise
            // 1.6e-10 over 2 s), loose enough that a box resting on four
            // corners, whose friction distribution is indeterminate and
            // converges slowly, does not reach the sweep limit.
            tolerance: 1e-4,
            max_iterations: 1000,
            friction_cone: None,
        }
    }
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
    fn new(field: &'static str, message: impl Into<String>) -> Self {
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

/// Flags that override a scene's parameters (shared by `run`, `record` and
/// the viewer). The numeric ones take a leading hyphen as part of their value
/// (`--dt -1e-3`), so a negative value meets the range check of
/// [`Params::validate`] instead of clap's hint about `-- -1`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Overrides {
    /// Step size h, s.
    #[arg(long = "dt", allow_hyphen_values = true)]
    pub dt: Option<f64>,
    /// Simulated time, s.
    #[arg(long, allow_hyphen_values = true)]
    pub duration: Option<f64>,
    /// Friction coefficient μ of every contact.
    #[arg(long, allow_hyphen_values = true)]
    pub mu: Option<f64>,
    /// Friction-pyramid edges k (space only, ≥ 3).
    #[arg(long, allow_hyphen_values = true)]
    pub edges: Option<usize>,
    /// Restitution e (steppers with an impact law only).
    #[arg(long, allow_hyphen_values = true)]
    pub restitution: Option<f64>,
    /// Damping coefficient of the scene's dampers.
    #[arg(long, allow_hyphen_values = true)]
    pub damping: Option<f64>,
    /// Stiffness of the scene's springs.
    #[arg(long, allow_hyphen_values = true)]
    pub stiffness: Option<f64>,
    /// Time-stepping scheme (stewart-trinkle, moreau-jean, anitescu-potra, euler-lcp).
    #[arg(long)]
    pub stepper: Option<String>,
    /// Fixed-point iterations of the nonlinear scheme (Stewart–Trinkle §3.6).
    #[arg(long, allow_hyphen_values = true)]
    pub ncp_iterations: Option<usize>,
    /// Contact solver (lemke, nsgs).
    #[arg(long)]
    pub solver: Option<String>,
    /// NSGS: relative residual at which the sweeps stop.
    #[arg(long, allow_hyphen_values = true)]
    pub tolerance: Option<f64>,
    /// NSGS: sweep limit of one solve.
    #[arg(long, allow_hyphen_values = true)]
    pub max_iterations: Option<usize>,
    /// NSGS's friction law in space (circular, pyramid); default circular.
    #[arg(long = "cone")]
    pub friction_cone: Option<String>,
    /// Threads a step may use, 1 or 2 [default: 2]: NSGS's sweeps and the
    /// narrow phase of large scenes split in two halves. The result is the
    /// same bit for bit; 1 leaves the second core to the rest (the viewer's
    /// drawing, another run).
    #[arg(long, allow_hyphen_values = true)]
    pub threads: Option<usize>,
}

impl Overrides {
    /// Writes the flags that are not parameters (`--threads`) into the
    /// stepper's settings.
    pub fn apply_settings(&self, settings: &mut crate::stepper::StepSettings) {
        if let Some(n) = self.threads {
            settings.threads = n;
        }
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

    /// Checks every parameter against its range and against `model`: h and
    /// the duration positive, μ, damping and stiffness ≥ 0, e ∈ [0, 1], every
    /// real at most [`MAX_MAGNITUDE`], k ≥ 3 in space and ≤ 256, 1–100 NCP
    /// iterations, and a stepper that can hold the model's joints.
    pub fn validate(&self, model: &Model) -> Result<(), ParamError> {
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
        if !model.is_planar() && self.edges < 3 {
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
            if !matches!(model, Model::Rigid(_)) {
                return Err(ParamError::new(
                    "solver",
                    "nsgs needs rigid bodies: a generalized linear system couples every contact through its dense M⁻¹",
                ));
            }
        }
        if model.has_joints() && !self.stepper.supports_joints() {
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

    /// These parameters with the flags applied, validated against `model`.
    /// A flag the model or the chosen stepper cannot use is an error, not
    /// silently ignored.
    pub fn with_overrides(&self, model: &Model, o: &Overrides) -> Result<Params, ParamError> {
        let mut p = self.clone();
        if let Some(name) = &o.stepper {
            p.stepper = name
                .parse::<StepperKind>()
                .map_err(|e| ParamError::new("stepper", e))?;
        }
        let set = |slot: &mut f64, value: Option<f64>| {
            if let Some(v) = value {
                *slot = v;
            }
        };
        set(&mut p.dt, o.dt);
        set(&mut p.duration, o.duration);
        set(&mut p.mu, o.mu);
        if let Some(k) = o.edges {
            if model.is_planar() {
                return Err(ParamError::new(
                    "edges",
                    "the scene is planar; planar contacts always use the pair ±t",
                ));
            }
            p.edges = k;
        }
        if let Some(e) = o.restitution {
            if !p.stepper.uses_restitution() {
                return Err(ParamError::new(
                    "restitution",
                    format!(
                        "the {} stepper is inelastic by construction and has no restitution",
                        p.stepper
                    ),
                ));
            }
            p.restitution = e;
        }
        if let Some(d) = o.damping {
            if !model.uses_damping() {
                return Err(ParamError::new(
                    "damping",
                    "the scene has no dampers that take the scene-wide coefficient",
                ));
            }
            p.damping = d;
        }
        if let Some(k) = o.stiffness {
            if !model.uses_stiffness() {
                return Err(ParamError::new(
                    "stiffness",
                    "the scene has no springs that take the scene-wide stiffness",
                ));
            }
            p.stiffness = k;
        }
        if let Some(n) = o.ncp_iterations {
            p.ncp_iterations = n;
        }
        if let Some(name) = &o.solver {
            p.solver = name
                .parse::<SolverKind>()
                .map_err(|e| ParamError::new("solver", e))?;
        }
        if let Some(n) = o.threads
            && !(1..=2).contains(&n)
        {
            return Err(ParamError::new(
                "threads",
                format!("{n}: must be 1 or 2 (a step's work splits in two halves)"),
            ));
        }
        for (field, given) in [
            ("tolerance", o.tolerance.is_some()),
            ("max_iterations", o.max_iterations.is_some()),
        ] {
            if given && p.solver != SolverKind::Nsgs {
                return Err(ParamError::new(
                    field,
                    "applies to the nsgs solver only (add --solver nsgs)",
                ));
            }
        }
        if let Some(name) = &o.friction_cone {
            p.friction_cone = Some(
                name.parse::<FrictionCone>()
                    .map_err(|e| ParamError::new("friction_cone", e))?,
            );
        }
        set(&mut p.tolerance, o.tolerance);
        if let Some(n) = o.max_iterations {
            p.max_iterations = n;
        }
        p.validate(model)?;
        Ok(p)
    }
}
