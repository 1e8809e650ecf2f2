//! Time-stepping schemes: each turns the model's contacts at the current
//! state into contact problems, has the solver layer ([`crate::solver`])
//! solve them, and applies the impulses to get the next state and a
//! [`StepReport`].
//!
//! One driver ([`driver::Stepper`]) runs every step and chooses among the
//! schemes — [`StewartTrinkle`], [`MoreauJean`], [`AnitescuPotra`] — each of
//! which implements [`Scheme`] with only what is its own. What the driver
//! lends a scheme for one step is a [`step::Step`]; the schemes' numerical
//! settings are in [`settings`], the reports' shared parts in [`report`].

pub mod anitescu_potra;
pub mod driver;
pub mod guard;
pub mod moreau_jean;
pub mod projection;
pub mod report;
pub mod scheme;
pub mod settings;
pub mod step;
pub mod stewart_trinkle;

use crate::lcp::{Lcp, LcpStatus};
use crate::model::{ContactFrame, ContactId};
use nalgebra::Vector3;
use std::time::Duration;

pub use anitescu_potra::AnitescuPotra;
pub use driver::{Stepper, StepperMemory};
pub use moreau_jean::{Impact, ImpactError, MoreauJean, impact};
pub use scheme::Scheme;
pub use settings::StepSettings;
pub use stewart_trinkle::StewartTrinkle;

/// What a contact did during a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContactState {
    /// Normal impulse and zero relative tangential velocity.
    Stick,
    /// Normal impulse and sliding: the friction impulse is on the pyramid's boundary.
    Slip,
    /// No normal impulse: the contact is open or opening.
    Separating,
}

impl ContactState {
    /// Lower-case name for tables and the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Self::Stick => "stick",
            Self::Slip => "slip",
            Self::Separating => "separating",
        }
    }
}

/// One contact of the step's LCP.
#[derive(Debug, Clone, PartialEq)]
pub struct ContactReport {
    /// Which features.
    pub id: ContactId,
    /// Gap at the end of the step (evaluated at the new q), m.
    pub gap: f64,
    /// Normal impulse c_n over the step, N·s.
    pub normal_impulse: f64,
    /// Friction impulse Σ βᵢ t(θᵢ) in the world, N·s (zero for linear systems).
    pub friction_impulse: Vector3<f64>,
    /// Friction impulse along the generalized tangent (β₀ − β₁ for two directions).
    pub tangential_impulse: f64,
    /// Stick, slip or separating.
    pub state: ContactState,
    /// Where it is, with the pyramid's edge directions.
    pub frame: Option<ContactFrame>,
}

/// Wall-clock split of one step, for the benchmarks and the viewer's plot.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepTimings {
    /// Contact detection and Jacobians.
    pub geometry: Duration,
    /// Building the LCP matrix and vector.
    pub lcp_build: Duration,
    /// Lemke pivots.
    pub lemke: Duration,
    /// Everything.
    pub total: Duration,
}

/// Everything a step recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct StepReport {
    /// Time at the end of the step, s.
    pub t: f64,
    /// The contacts of the final LCP.
    pub contacts: Vec<ContactReport>,
    /// Size of the final LCP.
    pub lcp_size: usize,
    /// Size of the largest of the independent LCPs (islands) the final LCP
    /// splits into; `lcp_size` when it is solved whole.
    pub largest_island: usize,
    /// Lemke pivots over all LCPs of the step.
    pub pivots: usize,
    /// LCPs solved (NCP iterations × active-set rounds).
    pub solves: usize,
    /// NSGS sweeps over all solves of the step (0 with Lemke).
    pub sweeps: usize,
    /// Status of the last solve; anything but `Solved` leaves the state unchanged.
    pub status: LcpStatus,
    /// Relative complementarity residual of the last solve.
    pub residual: f64,
    /// Kinetic energy after the step, J.
    pub kinetic_energy: f64,
    /// Potential energy after the step, J.
    pub potential_energy: f64,
    /// Smallest gap among the contacts near the new configuration, m (∞ when none
    /// is within the contact margin).
    pub min_gap: f64,
    /// The deepest end-of-step gap the scheme promises for this step, m
    /// (negative), or `None` where it promises none. Stewart–Trinkle with
    /// Lemke holds its contacts on position level (§3.3; its fixed-point
    /// iterations of §3.6 take the nonlinear gap to
    /// [`settings::StepSettings::gap_guarantee`]): −1e-6 m, or the deepest
    /// gap the step started from when that is deeper (a scene that opts into
    /// initial overlap, or a body pushed in by hand). The velocity-level
    /// schemes hold contacts on velocity level only (Moreau–Jean's
    /// overlap of up to (h/2)|γ_N| in an impact stays, and so does
    /// Anitescu–Potra's and the Euler LCP's of one step's approach), and NSGS
    /// stops at its tolerance: they state no position bound.
    /// [`crate::sim::Simulation::step`] reports a step that ends deeper than
    /// its bound as not taken.
    pub gap_bound: Option<f64>,
    /// Steps of h/substeps the step was taken as: 1, or more when it was
    /// split to keep its gap promise ([`StepSettings::split_depth`]).
    pub substeps: usize,
    /// Where the time went.
    pub timings: StepTimings,
    /// The final LCP, when the stepper was asked to keep it (`--dump-lcp`).
    pub lcp: Option<Lcp>,
}

impl StepReport {
    /// The gap bound the step broke, if it ended deeper than its scheme's
    /// promise ([`Self::gap_bound`]).
    pub fn broken_gap_bound(&self) -> Option<f64> {
        self.gap_bound.filter(|&bound| self.min_gap < bound)
    }

    /// Number of contacts that carry a normal impulse.
    pub fn active_contacts(&self) -> usize {
        self.contacts
            .iter()
            .filter(|c| c.state != ContactState::Separating)
            .count()
    }
}
