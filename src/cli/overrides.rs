//! The flags that override a scene's parameters, shared by `run`, `record`
//! and the viewer: each one checked against the model and the chosen
//! stepper, so that a flag that cannot apply is an error, not ignored.

use crate::params::{FrictionCone, ModelFeatures, ParamError, Params, ParamsPatch, SolverKind};
use crate::stepper::StepSettings;

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
    /// NSGS: a solve that reaches the sweep limit stops the run, instead of
    /// the step going on with its best iterate.
    #[arg(long)]
    pub strict: bool,
    /// NSGS's friction law in space (circular, pyramid); default circular.
    #[arg(long = "cone")]
    pub friction_cone: Option<String>,
    /// Threads a step may use, 1 or 2 [default: 2]: NSGS's sweeps and the
    /// narrow phase of large scenes split in two halves. The result is the
    /// same bit for bit; 1 leaves the second core to the rest (the viewer's
    /// drawing, another run).
    #[arg(long, allow_hyphen_values = true)]
    pub threads: Option<usize>,
    /// NSGS on the circular cone: the past sweeps Anderson acceleration
    /// combines, 0–20; 0 is plain Gauss–Seidel [default: 5].
    #[arg(long, allow_hyphen_values = true)]
    pub acceleration: Option<usize>,
    /// Lemke pivots one step may take, over all its solves, before the run
    /// stops with status OverBudget [default: 2000000].
    #[arg(long, allow_hyphen_values = true)]
    pub max_step_pivots: Option<u64>,
    /// Seconds one step may take before the run stops with status
    /// OverBudget [default: no limit].
    #[arg(long, allow_hyphen_values = true)]
    pub max_step_seconds: Option<f64>,
    /// Refuse a scene estimated to need more memory than this at its
    /// densest: bytes, or with a unit K, M, G, T (binary) [default: what
    /// this process may use, the machine's memory or less under a ulimit
    /// or a container's limit].
    #[arg(long, value_parser = super::limits::parse_bytes)]
    pub max_memory: Option<u64>,
}

impl Overrides {
    /// Writes the flags that are not parameters (`--threads`,
    /// `--acceleration` and the step's budget) into the stepper's settings.
    pub fn apply_settings(&self, settings: &mut StepSettings) {
        if let Some(n) = self.threads {
            settings.threads = n;
        }
        if let Some(n) = self.acceleration {
            settings.acceleration = n;
        }
        if let Some(n) = self.max_step_pivots {
            settings.budget.max_pivots = Some(n);
        }
        if let Some(s) = self.max_step_seconds {
            settings.budget.max_seconds = Some(s);
        }
    }

    /// `params` with these flags applied, validated against the model's
    /// `features`. A flag the model or the chosen stepper cannot use is an
    /// error, not silently ignored.
    pub fn apply(&self, params: &Params, model: &ModelFeatures) -> Result<Params, ParamError> {
        let o = self;
        let patch = ParamsPatch {
            dt: o.dt,
            mu: o.mu,
            restitution: o.restitution,
            damping: o.damping,
            stiffness: o.stiffness,
            edges: o.edges,
            stepper: named(&o.stepper, "stepper")?,
            ncp_iterations: o.ncp_iterations,
            solver: named(&o.solver, "solver")?,
            tolerance: o.tolerance,
            max_iterations: o.max_iterations,
            friction_cone: named(&o.friction_cone, "friction_cone")?,
            strict: o.strict.then_some(true),
        };
        let mut p = patch.apply(params);
        if let Some(t) = o.duration {
            p.duration = t;
        }
        if o.edges.is_some() && model.planar {
            return Err(ParamError::new(
                "edges",
                "the scene is planar; planar contacts always use the pair ±t",
            ));
        }
        if o.restitution.is_some() && !p.stepper.uses_restitution() {
            return Err(ParamError::new(
                "restitution",
                format!(
                    "the {} stepper is inelastic by construction and has no restitution",
                    p.stepper
                ),
            ));
        }
        if o.damping.is_some() && !model.dampers_take_damping {
            return Err(ParamError::new(
                "damping",
                "the scene has no dampers that take the scene-wide coefficient",
            ));
        }
        if o.stiffness.is_some() && !model.springs_take_stiffness {
            return Err(ParamError::new(
                "stiffness",
                "the scene has no springs that take the scene-wide stiffness",
            ));
        }
        if let Some(n) = o.threads
            && !(1..=2).contains(&n)
        {
            return Err(ParamError::new(
                "threads",
                format!("{n}: must be 1 or 2 (a step's work splits in two halves)"),
            ));
        }
        if let Some(n) = o.acceleration
            && n > MAX_ACCELERATION
        {
            return Err(ParamError::new(
                "acceleration",
                format!("{n}: must be 0 (plain Gauss–Seidel) to {MAX_ACCELERATION} past sweeps"),
            ));
        }
        if o.acceleration.is_some()
            && p.solver == SolverKind::Nsgs
            && p.cone() != FrictionCone::Circular
        {
            return Err(ParamError::new(
                "acceleration",
                "applies to NSGS on the circular cone only (the pyramid's sweeps are not combined)",
            ));
        }
        if o.max_step_pivots == Some(0) {
            return Err(ParamError::new("max_step_pivots", "0: must be at least 1"));
        }
        if let Some(s) = o.max_step_seconds
            && !(s.is_finite() && s > 0.0)
        {
            return Err(ParamError::new(
                "max_step_seconds",
                format!("{s}: must be a positive number of seconds"),
            ));
        }
        for (field, given) in [
            ("tolerance", o.tolerance.is_some()),
            ("max_iterations", o.max_iterations.is_some()),
            ("strict", o.strict),
            ("acceleration", o.acceleration.is_some()),
        ] {
            if given && p.solver != SolverKind::Nsgs {
                return Err(ParamError::new(
                    field,
                    "applies to the nsgs solver only (add --solver nsgs)",
                ));
            }
        }
        p.validate(model)?;
        Ok(p)
    }
}

/// The most past sweeps `--acceleration` combines: its least squares grows
/// with their square, and beyond a few the oldest describe another active
/// set.
pub const MAX_ACCELERATION: usize = 20;

/// A named choice given as a flag (`--stepper moreau-jean`), parsed; an
/// unknown name is an error at `field`.
fn named<T: std::str::FromStr<Err = String>>(
    name: &Option<String>,
    field: &'static str,
) -> Result<Option<T>, ParamError> {
    name.as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e| ParamError::new(field, e))
}
