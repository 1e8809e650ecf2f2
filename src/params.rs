//! The live parameters of a simulation: one struct that the scene file, the CLI
//! flags and the viewer's panel all write (nothing keeps a second copy).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

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
        }
    }
}
