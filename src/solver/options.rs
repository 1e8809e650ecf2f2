//! How a contact problem is solved: one [`SolverOptions`] travels with every
//! solve into [`super::ContactSolver::solve`], so the solver keeps no
//! setting of its own between steps.

use nalgebra::DVector;

/// How one solve runs: NSGS within its limits or Lemke, with Lemke's
/// fallbacks and refinement (Lemke also solves what NSGS does not take: a
/// dense W, the planar impact LCP (33)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolverOptions {
    /// NSGS within these limits where W is block-diagonal; `None`: Lemke.
    pub nsgs: Option<NsgsOptions>,
    /// Lemke's fallbacks and refinement.
    pub lemke: LemkeSettings,
    /// Threads a solve may use, 1 or 2: Lemke's islands and NSGS's halves of
    /// space on both. Either gives the same result, bit for bit.
    pub threads: usize,
    /// Keep each solve's LCP when it has at most this many unknowns (for
    /// `--dump-lcp`); `None`: keep none.
    pub keep_lcp: Option<usize>,
}

impl SolverOptions {
    /// Lemke with `lemke`'s settings on one thread, keeping no LCP.
    pub fn lemke(lemke: LemkeSettings) -> Self {
        Self {
            nsgs: None,
            lemke,
            threads: 1,
            keep_lcp: None,
        }
    }

    /// Whether a solve keeps its LCP of `size` unknowns ([`Self::keep_lcp`]).
    pub fn keeps(&self, size: usize) -> bool {
        self.keep_lcp.is_some_and(|most| size <= most)
    }
}

/// How NSGS stops (the residual tolerance and the sweep limit) and its local
/// law.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NsgsOptions {
    /// The relative natural-map residual, dimensionless, at which the sweeps
    /// stop ([`super::nsgs`] defines it for each law).
    pub residual_tolerance: f64,
    /// Sweeps allowed before the solve ends with
    /// [`crate::lcp::LcpStatus::SweepLimit`].
    pub max_sweeps: usize,
    /// The circular cone in space (contacts with
    /// [`CIRCULAR_CONE_DIRECTIONS`] directions); else the pyramid.
    pub circular: bool,
    /// Anderson acceleration of the sweeps on the circular cone: the number
    /// of past sweeps combined (0: plain Gauss–Seidel). See
    /// [`super::nsgs::DEFAULT_ACCELERATION`].
    pub acceleration: usize,
    /// Threads the sweeps may use, 1 or 2.
    pub threads: usize,
    /// A solve that reaches the sweep limit ends with
    /// [`crate::lcp::LcpStatus::SweepLimit`] (the step fails) instead of
    /// [`crate::lcp::LcpStatus::Unconverged`] with its best iterate.
    pub strict: bool,
}

/// The numerical settings of Lemke's solves of contact problems: the
/// regularization ladder that follows a failed solve, its proximal passes,
/// and the refinement of a solution in velocity space. Their defaults are
/// what the tests and the papers' numbers rely on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LemkeSettings {
    /// Relative compliances added, in turn, to the diagonal of JᵀM⁻¹J when
    /// Lemke fails on a dense LCP with dependent normals (a body held by more
    /// contacts than it has freedoms): far below anything visible, enough to
    /// separate the dependent rows.
    pub regularization: [f64; 2],
    /// Relative compliances ε tried, in turn, on an island of rigid-body
    /// contacts when Lemke fails on its own LCP: ε·Δᵢᵢ added to each diagonal
    /// entry of JᵀWJ (Δ its diagonal), a contact stiffness of about
    /// m/(ε h²), whose static deflection the proximal shift of the
    /// right-hand side removes.
    pub compliance: [f64; 3],
    /// After a compliance solved an LCP, proximal point iterations re-centre
    /// its shift on the solution while the defect εΔ|z − z⁰| (the velocity
    /// by which the solution misses the scheme's own LCP) exceeds this times
    /// ‖q‖∞, dimensionless.
    pub proximal_defect: f64,
    /// The most proximal passes at one compliance.
    pub proximal_iterations: usize,
    /// When the passes leave the defect above [`Self::proximal_defect`], the
    /// compliance is divided by 100 and the passes run again from the last
    /// solution and its basis, up to this many times.
    pub compliance_continuation: usize,
    /// LCPs of at least this many unknowns start from the compliance that
    /// solved the previous step: on a settled pile of boxes the unregularized
    /// attempt fails every step and its cold restart costs hundreds of
    /// pivots; a smaller LCP tries its own problem first.
    pub remember_regularization_from: usize,
    /// A solution is refined in velocity space when some velocity is the sum
    /// of impulse terms larger than this times the velocity scale: the
    /// digits lost in that sum are what Lemke's acceptance leaves in the
    /// velocities (a stack of n equal bodies stays below 10²; a gram under
    /// 10⁸ kg reaches 10¹¹).
    pub polish_cancellation: f64,
    /// A solve that took no pivot (its warm basis held: bodies at rest) is
    /// refined in velocity space at that basis when its relative residual
    /// exceeds this, far below Lemke's acceptance: boxes resting face to
    /// face then stay at rest to rounding instead of drifting by
    /// nanometres a step.
    pub polish_resting: f64,
    /// The smallest velocity scale, m/s (a body at rest still has a scale).
    pub velocity_floor: f64,
}

impl Default for LemkeSettings {
    fn default() -> Self {
        Self {
            regularization: [1e-6, 1e-4],
            compliance: [1e-4, 1e-3, 1e-2],
            proximal_defect: 1e-6,
            proximal_iterations: 8,
            compliance_continuation: 4,
            remember_regularization_from: 100,
            polish_cancellation: 1e4,
            polish_resting: 1e-13,
            velocity_floor: 1e-3,
        }
    }
}

impl LemkeSettings {
    /// The velocity scale of velocities up to `v`, m/s: max |vᵢ|, at least
    /// [`Self::velocity_floor`].
    pub fn velocity_scale(&self, v: &DVector<f64>) -> f64 {
        v.amax().max(self.velocity_floor)
    }
}
