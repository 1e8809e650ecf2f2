//! The numerical settings of the step pipeline: every tolerance and limit
//! that was a literal in one of the schemes, documented once. These are not
//! live parameters ([`crate::params::Params`] holds what a user turns); they
//! are the schemes' own choices, with defaults that the tests and the papers'
//! numbers rely on.

use crate::model::{Margin, Model, Reaches};
use nalgebra::DVector;
use serde::{Deserialize, Serialize};

/// The steppers' numerical settings. Lengths are relative to the model's
/// length scale L ([`Model::length_scale`]) unless said otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
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
    pub gap_tolerance: f64,
    /// Fixed-point iterations allowed to reach `gap_tolerance` when
    /// `ncp_iterations` asks for fewer.
    pub gap_iterations: usize,
    /// Deepest end-of-step gap, m, that the scheme promises (issue 12: no
    /// step of a pile ends below −1e-6 m): a step whose best iterate after
    /// `gap_iterations` is still deeper takes up to `extra_gap_iterations`
    /// more. Measured on `pile_100.ron`: a box landing on the table at t =
    /// 0.23 s ended 1.7e-6 m deep after 8 iterations and 4e-10 m after 16;
    /// giving every step 16 instead raised the settled `pile.ron`'s pivots
    /// from 1.6 to 3.3 a step (its steps that stop at 8 unconverged are
    /// within nanometres).
    pub gap_guarantee: f64,
    /// See `gap_guarantee`.
    pub extra_gap_iterations: usize,
    /// Whether Stewart–Trinkle's extra iterations (past `gap_iterations`)
    /// keep cutting planes at the end points of the iterates that ended
    /// deeper than `gap_guarantee`: each contact found that deep at such an
    /// iterate's qˡ⁺¹, linearized there, stays a row of the step's LCP for
    /// its later iterations (`stewart_trinkle::Cuts`). Measured where a
    /// contact moves between features from one iteration to the next
    /// (`pile.ron` at h = 0.03 s: a box landing on a sphere, 1.7 mm deep
    /// without the cuts, taken whole with them): see the README's [Scale]
    /// section.
    pub end_point_cuts: bool,
    /// Halvings of h a step may take when it ends below the gap its scheme
    /// promises ([`crate::sim::Simulation::step`]): the step is taken again
    /// as two steps of h/2, each held to the promise, and so on down to
    /// h/2^`split_depth`. Stewart–Trinkle's linearized gap errs by the
    /// curvature of f times (h‖v‖)², so a halving quarters it. Measured on
    /// generated piles of 120–220 bodies (issue 12), where a box corner
    /// struck during a fall ended a step 0.02–0.8 mm deep after every
    /// fixed-point iteration: see the README's [Scale] section.
    pub split_depth: usize,
    /// Relative compliances added, in turn, to the diagonal of JᵀM⁻¹J when
    /// Lemke fails on dependent normals (a box held by more contacts than it
    /// has freedoms): far below anything visible, enough to separate the
    /// dependent rows.
    pub regularization: [f64; 2],
    /// Relative compliances ε tried, in turn, on an island of rigid-body
    /// contacts ([`super::solve::ContactSolver`]) when Lemke fails on its
    /// own LCP: ε·Δᵢᵢ added to each diagonal entry of JᵀWJ (Δ its diagonal),
    /// a contact stiffness of about m/(ε h²) — for ε = 10⁻³ and h = 5 ms a
    /// spring of 1 kHz — whose static deflection the proximal shift of the
    /// right-hand side removes (see there).
    pub compliance: [f64; 3],
    /// After a compliance solved an LCP (`compliance` on the islands,
    /// `regularization` on the dense ladder), proximal point iterations
    /// re-centre its shift on the solution while the defect εΔ|z − z⁰|, the
    /// velocity by which the solution misses the scheme's own LCP, exceeds
    /// `proximal_defect` times ‖q‖∞, up to `proximal_iterations` times
    /// (`ContactSolver::solve_islands`, `solve::dense::solve_regularized`).
    pub proximal_defect: f64,
    /// See `proximal_defect`.
    pub proximal_iterations: usize,
    /// When the proximal passes leave the defect above `proximal_defect`,
    /// the compliance is divided by 100 and the passes run again from the
    /// last solution and its basis, up to this many times; a defect still
    /// above the bound fails the rung (`solve::proximal_passes`).
    pub compliance_continuation: usize,
    /// LCPs of at least this many unknowns start from the compliance that
    /// solved the previous step ([`super::solve::solve_regularized`]): on a
    /// settled pile of boxes the unregularized attempt fails on every step and
    /// its cold restart costs hundreds of pivots. Smaller LCPs always try the
    /// scheme's own, unregularized problem first; a failed attempt costs
    /// little there.
    pub remember_regularization_from: usize,
    /// An island's Lemke solution is refined in velocity space
    /// ([`super::contact_lcp::ContactLcp::polish`]) when some velocity is
    /// the sum of impulse terms larger than this times the velocity scale
    /// ([`Self::velocity_scale`]): the digits lost in that sum are what
    /// Lemke's acceptance leaves in the velocities. A pile of equal bodies
    /// stays below 10² (a stack of n carries n weights); a gram under
    /// 10⁸ kg reaches 10¹¹.
    pub polish_cancellation: f64,
    /// Relative size below which an impulse or a slip velocity is zero (the
    /// contact states stick, slip and separating).
    pub zero: f64,
    /// The smallest velocity scale a slip speed is compared with, m/s (a
    /// body at rest still has a scale).
    pub velocity_floor: f64,
    /// Below this end-of-step speed times h, relative to L, Stewart–Trinkle's
    /// secant through f(qˡ) and f(q̂) is the tangent (round-off of the gaps).
    pub secant_round_off: f64,
    /// Moreau–Jean's predictive activation: a contact joins the index set
    /// when g(q^M) + γh·γ_N(u^E) < −`gap_tolerance`·L, with γ this lead
    /// (Siconos's MoreauJeanOSI activates on the same prediction y + γhẏ ≤
    /// 0). With γ = ½ the prediction is the end of the step, q^E = q^M +
    /// (h/2)u^E (step 5), so every contact left out ends the step open; the
    /// next step's midpoint may still reach (h/2)|γ_N| into a contact that is
    /// approaching, which is then held there on velocity level. γ = 1 (up to
    /// the next midpoint) removes that overlap (a box corner in the pile at
    /// 0.15 m/s: 0.3 mm) but holds contacts up to h|γ_N| early, and at h =
    /// 1e-4 the woodpecker's descent per period then varies by 2.2 % instead
    /// of 2 %.
    pub activation_lead: f64,
    /// Anitescu–Potra: contacts whose gap is below this, times max(L, 1 m),
    /// join the active set at the start of a step (§3).
    pub touch_tolerance: f64,
    /// Anitescu–Potra: collisions resolved within one step before the rest
    /// of the step is taken with the remaining contacts left to the
    /// projection.
    pub max_collisions: usize,
    /// Anitescu–Potra's position projection (§2.3.4): Gauss–Newton
    /// iterations at most.
    pub projection_iterations: usize,
    /// The projection stops when every constraint value is below this,
    /// times max(L, 1 m).
    pub projection_tolerance: f64,
    /// Threads a step may use: with 2, NSGS sweeps a large problem's two
    /// halves of space at once on the circular cone (`stepper::nsgs`, its
    /// `Halves`) and the narrow phase runs the candidate pairs' two halves
    /// at once (`model::rigid::PARALLEL_PAIRS`), and Lemke solves a
    /// problem's islands on both (`stepper::solve::island`); with 1, one
    /// after the other. Either gives the same result, bit for bit; on a
    /// one-core machine 2 acts as 1.
    pub threads: usize,
}

impl Default for StepSettings {
    fn default() -> Self {
        Self {
            margin_fraction: 0.05,
            active_set_rounds: 8,
            gap_tolerance: 1e-8,
            gap_iterations: 8,
            gap_guarantee: 1e-6,
            extra_gap_iterations: 8,
            end_point_cuts: true,
            split_depth: 3,
            regularization: [1e-6, 1e-4],
            compliance: [1e-4, 1e-3, 1e-2],
            proximal_defect: 1e-6,
            proximal_iterations: 8,
            compliance_continuation: 4,
            remember_regularization_from: 100,
            polish_cancellation: 1e4,
            zero: 1e-9,
            velocity_floor: 1e-3,
            secant_round_off: 1e-9,
            activation_lead: 0.5,
            touch_tolerance: 1e-9,
            max_collisions: 8,
            projection_iterations: 20,
            projection_tolerance: 1e-13,
            threads: 2,
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
    /// from the fastest body's point speed: per pair, the silo's overlaps
    /// were deeper, see the README, *A margin per pair*). A linear system,
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
        v.amax().max(self.velocity_floor)
    }
}
