//! The numerical settings of the step pipeline: every tolerance and limit
//! that was a literal in one of the schemes, documented once. These are not
//! live parameters ([`crate::params::Params`] holds what a user turns); they
//! are the schemes' own choices, with defaults that the tests and the papers'
//! numbers rely on.

use crate::collision::{Margin, Reaches};
use crate::lcp::budget::Limits;
use crate::model::Model;
use crate::params::{FrictionCone, Params, SolverKind};
use crate::solver::nsgs::DEFAULT_ACCELERATION;
use crate::solver::{LemkeSettings, NsgsOptions, SolverOptions};
use nalgebra::DVector;

/// The steppers' numerical settings. Lengths are relative to the model's
/// length scale L ([`Model::length_scale`]) unless said otherwise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepSettings {
    /// Contacts are looked for within `margin_fraction` of the largest body
    /// size, plus what the bodies can close in two steps at their current
    /// speed ([`Self::contact_margin`], [`Self::contact_reaches`]).
    pub margin_fraction: f64,
    /// Active-set rounds (Stewart–Trinkle §4) per fixed-point iteration: a
    /// contact found violated after a solve joins and the step is solved again.
    pub active_set_rounds: usize,
    /// Deepest end-of-step gap, relative to the largest body size, that ends
    /// Stewart–Trinkle's fixed-point iterations (§3.6).
    pub relative_gap: f64,
    /// Fixed-point iterations allowed to reach `relative_gap` when
    /// `ncp_iterations` asks for fewer.
    pub gap_iterations: usize,
    /// Deepest end-of-step gap, m, that the scheme promises (no step of a
    /// pile ends below −1e-6 m): a step whose best iterate after
    /// `gap_iterations` is still deeper takes up to `extra_gap_iterations`
    /// more. Only the steps that need them pay for them: a box landing on
    /// the table of `pile_100.ron` needs 16, a settled pile's steps stop at
    /// 8 within nanometres.
    pub gap_guarantee: f64,
    /// See `gap_guarantee`.
    pub extra_gap_iterations: usize,
    /// Whether Stewart–Trinkle's extra iterations (past `gap_iterations`)
    /// keep cutting planes at the end points of the iterates that ended
    /// deeper than `gap_guarantee`: each contact found that deep at such an
    /// iterate's qˡ⁺¹, linearized there, stays a row of the step's LCP for
    /// its later iterations (`stewart_trinkle::Cuts`). They hold a contact
    /// that moves between features from one iteration to the next (a box
    /// landing on a sphere in `pile.ron` at h = 0.03 s).
    pub end_point_cuts: bool,
    /// Halvings of h a step may take when it ends below the gap its scheme
    /// promises ([`crate::sim::Simulation::step`]): the step is taken again
    /// as two steps of h/2, each held to the promise, and so on down to
    /// h/2^`split_depth`. Stewart–Trinkle's linearized gap errs by the
    /// curvature of f times (h‖v‖)², so a halving quarters it (a box corner
    /// struck during a fall in the generated piles of 120–220 bodies).
    pub split_depth: usize,
    /// Relative size below which an impulse or a slip velocity is zero (the
    /// contact states stick, slip and separating).
    pub zero: f64,
    /// Below this end-of-step speed times h, relative to L, Stewart–Trinkle's
    /// secant through f(qˡ) and f(q̂) is the tangent (round-off of the gaps).
    pub secant_round_off: f64,
    /// Moreau–Jean's predictive activation: a contact joins the index set
    /// when g(q^M) + γh·γ_N(u^E) < −`relative_gap`·L, with γ this lead
    /// (Siconos's MoreauJeanOSI activates on the same prediction y + γhẏ ≤
    /// 0). With γ = ½ the prediction is the end of the step, q^E = q^M +
    /// (h/2)u^E (step 5), so every contact left out ends the step open; the
    /// next step's midpoint would reach (h/2)|γ_N| into a contact that is
    /// approaching, which the guarded midpoint prevents for rigid bodies
    /// ([`Self::guard_depth`]). γ = 1 (up to the next midpoint) holds
    /// contacts up to h|γ_N| early, and at h = 1e-4 the woodpecker's descent
    /// per period then varies by 2.2 % instead of 2 %.
    pub activation_lead: f64,
    /// Moreau–Jean's guarded midpoint ([`super::guard`]): a gap that the
    /// first half-step takes deeper than this share of the smaller bounding
    /// radius of its two bodies below the lesser of its gap at q^A and 0 is
    /// lifted back; a contact that the step takes deeper and that ends
    /// deeper than it is lifted back to it at q^E (or to its gap at q^A when
    /// that was deeper); a contact open by more than it at q^M, with
    /// ε_N = 0, takes the law on its end gap. Smaller trades time for
    /// overlap (the silo's trade is in docs/benchmarks.md).
    pub guard_depth: f64,
    /// The least depth of [`Self::guard_depth`], times max(L, 1 m): a
    /// contact open by no more than this always counts as touching.
    pub touching: f64,
    /// Anitescu–Potra: contacts whose gap is below this, times max(L, 1 m),
    /// join the active set at the start of a step (§3).
    pub touch_distance: f64,
    /// Anitescu–Potra: collisions resolved within one step before the rest
    /// of the step is taken with the remaining contacts left to the
    /// projection.
    pub max_collisions: usize,
    /// Anitescu–Potra's position projection (§2.3.4): Gauss–Newton
    /// iterations at most.
    pub projection_iterations: usize,
    /// The projection stops when every constraint value is below this,
    /// times max(L, 1 m).
    pub projection_residual: f64,
    /// Threads a step may use: with 2, NSGS sweeps a large problem's two
    /// halves of space at once on the circular cone (`stepper::nsgs`, its
    /// `Halves`) and the narrow phase runs the candidate pairs' two halves
    /// at once (`model::rigid::PARALLEL_PAIRS`), and Lemke solves a
    /// problem's islands on both (`stepper::solve::island`); with 1, one
    /// after the other. Either gives the same result, bit for bit; on a
    /// one-core machine 2 acts as 1.
    pub threads: usize,
    /// NSGS on the circular cone: the past sweeps Anderson acceleration
    /// combines (0: plain Gauss–Seidel; `--acceleration`).
    pub acceleration: usize,
    /// Lemke's fallbacks and refinement, handed to the solver with each
    /// solve.
    pub lemke: LemkeSettings,
    /// Lemke pivots and seconds one step may spend before it stops with
    /// [`crate::lcp::LcpStatus::OverBudget`] ([`crate::lcp::budget`]).
    pub budget: Limits,
}

impl Default for StepSettings {
    fn default() -> Self {
        Self {
            margin_fraction: 0.05,
            active_set_rounds: 8,
            relative_gap: 1e-8,
            gap_iterations: 8,
            gap_guarantee: 1e-6,
            extra_gap_iterations: 8,
            end_point_cuts: true,
            split_depth: 3,
            zero: 1e-9,
            secant_round_off: 1e-9,
            activation_lead: 0.5,
            guard_depth: 0.005,
            touching: 1e-6,
            touch_distance: 1e-9,
            max_collisions: 8,
            projection_iterations: 20,
            projection_residual: 1e-13,
            threads: 2,
            acceleration: DEFAULT_ACCELERATION,
            lemke: LemkeSettings::default(),
            budget: Limits::default(),
        }
    }
}

impl StepSettings {
    /// How far ahead contacts are looked for at velocity v, m, one distance
    /// for the scene: the static part ([`Self::static_margin`]) plus what
    /// the fastest body can close in two steps, 2h·max|v|·max(L, 1).
    pub fn contact_margin(&self, model: &Model, v: &DVector<f64>, h: f64) -> f64 {
        let scale = model.length_scale();
        self.margin_fraction * scale + 2.0 * h * v.amax() * scale.max(1.0)
    }

    /// [`Self::contact_margin`] per body, as Stewart–Trinkle looks for its
    /// contacts: the static part for every pair, plus what the body can
    /// close in two steps, 2h·max|vᵢ|·max(L, 1) over its own velocities
    /// (linear and angular), into `reaches` ([`Margin`]: a pair looks as far
    /// as its faster body reaches, which is [`Self::contact_margin`] for the
    /// fastest body's pairs and less for the others). A body struck during
    /// the step can outrun its reach; Stewart–Trinkle checks the gaps at
    /// each iterate's end point, where a penetration is found whatever the
    /// margin, and its next fixed-point iteration searches again at the new
    /// prediction, so the promise on the gaps does not rest on the margin.
    /// Moreau–Jean and Anitescu–Potra keep one margin (Moreau–Jean's own,
    /// from the fastest body's point speed), because their contacts are not
    /// checked again at the end point. A linear system,
    /// which has no bodies, takes max|v| over all its velocities.
    pub fn contact_reaches<'r>(
        &self,
        model: &Model,
        v: &DVector<f64>,
        h: f64,
        reaches: &'r mut Reaches,
    ) -> Margin<'r> {
        let scale = model.length_scale();
        let fixed = self.margin_fraction * scale;
        match model {
            Model::Rigid(s) => reaches.set(fixed, s.bodies.len(), |i| {
                let b = s.block(i);
                2.0 * h * v.rows(b.start, b.len).amax() * scale.max(1.0)
            }),
            Model::Linear(_) => reaches.set(self.contact_margin(model, v, h), 0, |_| 0.0),
        }
        reaches.margin()
    }

    /// The static part of [`Self::contact_margin`], m: how far from touching
    /// a contact still counts as near.
    pub fn static_margin(&self, model: &Model) -> f64 {
        self.margin_fraction * model.length_scale()
    }

    /// The velocity scale of slip speeds for velocities up to `v`, m/s.
    pub fn velocity_scale(&self, v: &DVector<f64>) -> f64 {
        self.lemke.velocity_scale(v)
    }

    /// How the step's contact problems are solved under `params`: NSGS
    /// within its tolerance and sweep limit, or Lemke; `keep_lcp` as
    /// [`SolverOptions::keep_lcp`].
    pub fn solver_options(&self, params: &Params, keep_lcp: Option<usize>) -> SolverOptions {
        let nsgs = (params.solver == SolverKind::Nsgs).then_some(NsgsOptions {
            residual_tolerance: params.tolerance,
            max_sweeps: params.max_iterations,
            circular: params.cone() == FrictionCone::Circular,
            acceleration: self.acceleration,
            threads: self.threads,
            strict: params.strict,
        });
        SolverOptions {
            nsgs,
            lemke: self.lemke,
            threads: self.threads,
            keep_lcp,
        }
    }
}
