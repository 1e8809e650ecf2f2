//! What a time-stepping scheme is to the driver: [`Scheme::advance`] takes
//! one step and hands back an [`Advance`]; the active set it keeps between
//! steps is an [`ActiveSet`].

use super::report::EndGap;
use super::step::{ActiveSet, Step};
use crate::solver::{ContactSolution, Failed};
use nalgebra::DVector;

/// A time-stepping scheme: how one step poses and solves its contact
/// problems. It keeps no memory of its own; what it needs from the last
/// step comes through [`Step`] and what the next step needs goes back in
/// [`Advance`], so a failed step leaves nothing half updated.
pub trait Scheme {
    /// Advances `step.state` by `step.params.dt`: the end of the step and
    /// the solve it ended with, or the solve that failed.
    fn advance(&self, step: &mut Step<'_>) -> Result<Advance, Failed>;
}

/// The end of an accepted step, as a scheme hands it to the driver (with
/// the final solve's contacts and the end gaps in [`super::step::Buffers`]).
pub struct Advance {
    /// Generalized coordinates at the end of the step.
    pub q: DVector<f64>,
    /// Generalized velocities at the end of the step.
    pub v: DVector<f64>,
    /// The final solve, posed over [`super::step::Buffers::solved`].
    pub solution: ContactSolution,
    /// The scale slip speeds are compared with, m/s.
    pub velocity_scale: f64,
    /// The gap reported for a contact of the solve not among
    /// [`super::step::Buffers::end_gaps`].
    pub missing: EndGap,
    /// The active set the next step starts from (empty for a scheme that
    /// chooses its index set afresh each step).
    pub active: ActiveSet,
    /// The deepest end-of-step gap the scheme promises, m (negative), or
    /// `None` where it promises none ([`super::StepReport::gap_bound`]).
    pub gap_bound: Option<f64>,
    /// The smallest end gap, m, among the contacts the step considered
    /// (its own prediction; infinite where it keeps none): the report's
    /// `min_gap` when no contact is near the end of the step.
    pub nearest: f64,
}
