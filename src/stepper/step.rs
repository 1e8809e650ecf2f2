//! One step in progress ([`Step`]): what a scheme reads — the model, the
//! parameters, the state, the settings and the last active set — and what
//! the driver lends it: contact detection ([`Geometry`]) and the contact
//! solver ([`Solver`]), both timed and counted, and buffers kept from step to
//! step ([`Buffers`] for what the driver reads back, a [`ScratchSlot`] for the
//! scheme's own). They are separate fields, so a scheme can hold contacts
//! from its buffers while it finds more or solves.

use super::settings::StepSettings;
use crate::collision::{self, BroadPhase, ContactSet, Margin, Reuse, Search};
use crate::lcp::LcpStatus;
use crate::model::{Contact, ContactId, MassInverse, Model, State};
use crate::params::Params;
use crate::solver::{
    ContactProblem, ContactSolution, ContactSolver, Form, PlanarSolve, SolveBuffers, SolverOptions,
};
use nalgebra::{DVector, Vector3};
use std::any::Any;
use std::collections::BTreeSet;
use std::fmt::Debug;
use std::time::{Duration, Instant};

/// One step in progress.
pub struct Step<'a> {
    /// The model.
    pub model: &'a Model,
    /// The live parameters.
    pub params: &'a Params,
    /// The state the step starts from.
    pub state: &'a State,
    /// Tolerances and limits.
    pub settings: &'a StepSettings,
    /// The active set of the last accepted step.
    pub active: &'a ActiveSet,
    /// Contact detection.
    pub geometry: Geometry<'a>,
    /// The contact solver.
    pub solver: Solver<'a>,
    /// What the scheme hands the driver besides [`super::scheme::Advance`].
    pub buffers: &'a mut Buffers,
    /// The scheme's own buffers.
    pub scratch: &'a mut ScratchSlot,
    /// Time spent assembling LCPs outside the solver.
    pub lcp_build: Duration,
}

/// The pieces a [`Step`] borrows from the stepper.
pub struct Lent<'a> {
    /// The contact solver's memory.
    pub solver: &'a mut ContactSolver,
    /// Its buffers.
    pub solve: &'a mut SolveBuffers,
    /// The broad phase's work space.
    pub broad: &'a mut BroadPhase,
    /// The buffers the driver reads back.
    pub buffers: &'a mut Buffers,
    /// The scheme's buffers.
    pub scratch: &'a mut ScratchSlot,
}

impl<'a> Step<'a> {
    /// A step of `state` under `params`, the last active set `active`, its
    /// contact problems solved as `options` say.
    pub fn new(
        model: &'a Model,
        params: &'a Params,
        state: &'a State,
        settings: &'a StepSettings,
        active: &'a ActiveSet,
        lent: Lent<'a>,
        options: SolverOptions,
    ) -> Self {
        // Off unless the scheme asks ([`Geometry::keep_pairs`]); what it
        // kept goes stale within a few dozen searches.
        lent.broad.kept.memo.enabled = false;
        Self {
            model,
            params,
            state,
            settings,
            active,
            geometry: Geometry {
                model,
                edges: params.friction_edges(),
                threads: settings.threads,
                broad: lent.broad,
                time: Duration::ZERO,
            },
            solver: Solver {
                solver: lent.solver,
                buffers: lent.solve,
                options,
                map: model.mass_inverse_form(),
                up: model.up(),
                pivots: 0,
                solves: 0,
                sweeps: 0,
                unconverged: None,
                asked: None,
                time: Duration::ZERO,
            },
            buffers: lent.buffers,
            scratch: lent.scratch,
            lcp_build: Duration::ZERO,
        }
    }
}

/// Contact detection for a step, timed.
pub struct Geometry<'a> {
    model: &'a Model,
    edges: usize,
    /// Threads the narrow phase may use ([`StepSettings::threads`]).
    threads: usize,
    broad: &'a mut BroadPhase,
    time: Duration,
}

impl Geometry<'_> {
    /// The potential contacts at q within `margin` (m), with the step's
    /// friction directions, into `out`.
    pub fn contacts<'m>(
        &mut self,
        q: &DVector<f64>,
        margin: impl Into<Margin<'m>>,
        out: &mut ContactSet,
    ) {
        self.contacts_reusing(q, margin, out, None, &mut Vec::new());
    }

    /// [`Self::contacts`] with each contact's normal row alone (no
    /// friction directions in space), for what reads only the normals.
    pub fn normal_contacts<'m>(
        &mut self,
        q: &DVector<f64>,
        margin: impl Into<Margin<'m>>,
        out: &mut ContactSet,
    ) {
        let edges = std::mem::replace(&mut self.edges, 0);
        self.contacts(q, margin, out);
        self.edges = edges;
    }

    /// The identities and gaps of [`Self::contacts`], without Jacobians,
    /// into `out`.
    pub fn gaps<'m>(
        &mut self,
        q: &DVector<f64>,
        margin: impl Into<Margin<'m>>,
        out: &mut Vec<(ContactId, f64)>,
    ) {
        self.gaps_reusing(q, margin, out, None);
    }

    /// [`Self::contacts`], copying from `reuse.previous` (an earlier search
    /// of this step at the same margin) the contacts of bodies that `reuse`
    /// keeps ([`crate::collision::reuse`]); `sources` names each contact's
    /// index there, or [`crate::collision::NOT_COPIED`].
    pub fn contacts_reusing<'m>(
        &mut self,
        q: &DVector<f64>,
        margin: impl Into<Margin<'m>>,
        out: &mut ContactSet,
        reuse: Option<Reuse<'_, Contact>>,
        sources: &mut Vec<usize>,
    ) {
        let clock = Instant::now();
        // One broad phase's work space for every search of the step, so
        // that a search the last sweep covers reuses its pairs
        // ([`crate::collision::LastSweep`]).
        std::mem::swap(&mut out.broad, self.broad);
        let search = Search {
            threads: self.threads,
            reuse,
        };
        collision::find_contacts(self.model, q, self.edges, margin, out, search, sources);
        std::mem::swap(&mut out.broad, self.broad);
        self.time += clock.elapsed();
    }

    /// [`Self::gaps`], copying from `reuse.previous` (an earlier search of
    /// this step at the same margin) the gaps of bodies that `reuse` keeps.
    pub fn gaps_reusing<'m>(
        &mut self,
        q: &DVector<f64>,
        margin: impl Into<Margin<'m>>,
        out: &mut Vec<(ContactId, f64)>,
        reuse: Option<Reuse<'_, (ContactId, f64)>>,
    ) {
        let clock = Instant::now();
        let search = Search {
            threads: self.threads,
            reuse,
        };
        collision::find_gaps(self.model, q, margin, out, self.broad, search);
        self.time += clock.elapsed();
    }

    /// Keeps the narrow phase's points of body pairs by shapes and poses
    /// for the rest of the step, and finds them again where a search comes
    /// back to a pair's poses ([`crate::collision::pair_memo`]): for a scheme
    /// whose iterations hold some bodies' coordinates.
    pub fn keep_pairs(&mut self) {
        self.broad.kept.memo.enabled = true;
    }

    /// Adds time a scheme spent on geometry of its own.
    pub fn add_time(&mut self, time: Duration) {
        self.time += time;
    }

    /// Time spent so far.
    pub fn time(&self) -> Duration {
        self.time
    }
}

/// The contact solver for a step: its warm start and fallbacks, its solves
/// and pivots counted and timed.
pub struct Solver<'a> {
    solver: &'a mut ContactSolver,
    buffers: &'a mut SolveBuffers,
    options: SolverOptions,
    map: MassInverse<'a>,
    up: Vector3<f64>,
    pivots: usize,
    solves: usize,
    sweeps: usize,
    /// The largest residual of the step's solves that went on from the
    /// sweep limit ([`LcpStatus::Unconverged`]), if any did.
    unconverged: Option<f64>,
    /// NSGS's tolerance before [`Self::tighten`], once tightened.
    asked: Option<f64>,
    time: Duration,
}

impl<'a> Solver<'a> {
    /// The unit vector opposite to gravity ([`Model::up`]), for
    /// [`ContactProblem::up`].
    pub fn up(&self) -> Vector3<f64> {
        self.up
    }

    /// Solves a contact problem of form `form`.
    pub fn solve(&mut self, problem: &ContactProblem<'_>, form: Form) -> ContactSolution {
        let clock = Instant::now();
        let mut solution = self
            .solver
            .solve(problem, form, &self.options, self.buffers);
        // At a tightened tolerance, a solve that stops at the sweep limit
        // within the tolerance the step was given has met that one.
        if solution.status == LcpStatus::Unconverged
            && self.asked.is_some_and(|asked| solution.residual <= asked)
        {
            solution.status = LcpStatus::Solved;
        }
        self.count(&solution, clock);
        solution
    }

    /// Solves Moreau–Jean's planar LCP (33).
    pub fn solve_planar(&mut self, planar: PlanarSolve<'_>) -> ContactSolution {
        let clock = Instant::now();
        let solution = self.solver.solve_planar(planar, &self.options);
        self.count(&solution, clock);
        solution
    }

    /// Counts a solve that could not even be posed (its problem does not
    /// exist, e.g. dependent joints) and hands it back.
    pub fn unsolvable(&mut self, solution: ContactSolution) -> ContactSolution {
        self.solves += 1;
        solution
    }

    fn count(&mut self, solution: &ContactSolution, clock: Instant) {
        self.time += clock.elapsed();
        self.pivots += solution.pivots;
        self.sweeps += solution.sweeps;
        self.solves += 1;
        if solution.status == LcpStatus::Unconverged {
            let worst = self.unconverged.unwrap_or(0.0).max(solution.residual);
            self.unconverged = Some(worst);
        }
    }

    /// The largest residual of the step's solves that went on from the
    /// sweep limit, if any did.
    pub fn unconverged(&self) -> Option<f64> {
        self.unconverged
    }

    /// Multiplies NSGS's tolerance by `factor` for the step's later solves;
    /// `false` under Lemke. A later solve that reaches the sweep limit within
    /// the tolerance the step was given counts as solved.
    pub fn tighten(&mut self, factor: f64) -> bool {
        match &mut self.options.nsgs {
            Some(nsgs) => {
                self.asked.get_or_insert(nsgs.residual_tolerance);
                nsgs.residual_tolerance *= factor;
                true
            }
            None => false,
        }
    }

    /// W of the rigid-body contact problem: M⁻¹.
    pub fn mass_inverse(&self) -> MassInverse<'a> {
        self.map
    }

    /// Whether the solver lets contacts join during a solve
    /// ([`ContactProblem::activation`]) for this model.
    pub fn activates(&self) -> bool {
        ContactSolver::activates(&self.options, &self.map)
    }

    /// Lemke pivots so far.
    pub fn pivots(&self) -> usize {
        self.pivots
    }

    /// Solves so far.
    pub fn solves(&self) -> usize {
        self.solves
    }

    /// NSGS sweeps so far.
    pub fn sweeps(&self) -> usize {
        self.sweeps
    }

    /// Time spent solving so far.
    pub fn time(&self) -> Duration {
        self.time
    }
}

/// What a scheme leaves for the driver besides its
/// [`super::scheme::Advance`]: the contacts of its final solve (in the
/// solve's order) and the gaps near the new configuration.
#[derive(Debug, Clone, Default)]
pub struct Buffers {
    /// The contacts of the final solve.
    pub solved: ContactSet,
    /// The gaps near the new configuration, m.
    pub end_gaps: Vec<(ContactId, f64)>,
}

/// A scheme's own buffers kept between steps: one value of the scheme's
/// type, made on first use (and anew when another scheme used the slot).
#[derive(Debug, Default)]
pub struct ScratchSlot(Option<Box<dyn Scratch>>);

impl ScratchSlot {
    /// The scheme's buffers of type `T`.
    pub fn get<T: Scratch + Default>(&mut self) -> &mut T {
        if self
            .0
            .as_mut()
            .is_none_or(|s| (**s).as_any_mut().downcast_mut::<T>().is_none())
        {
            self.0 = Some(Box::new(T::default()));
        }
        match self
            .0
            .as_mut()
            .and_then(|s| (**s).as_any_mut().downcast_mut())
        {
            Some(scratch) => scratch,
            None => unreachable!("the slot was just filled with a T"),
        }
    }
}

/// Buffers a scheme keeps in a [`ScratchSlot`].
pub trait Scratch: Any + Debug + Send + Sync {
    /// As [`Any`], to be downcast.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Debug + Send + Sync> Scratch for T {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Everything a [`Step`] borrows, owned: for a solve outside a stepper (the
/// impact map, a single velocity solve, tests), from a cold start.
#[derive(Debug, Default)]
pub struct Detached {
    /// The contact solver's memory.
    pub solver: ContactSolver,
    /// Its buffers.
    pub solve: SolveBuffers,
    /// The broad phase's work space.
    pub broad: BroadPhase,
    /// What the scheme hands back.
    pub buffers: Buffers,
    /// The scheme's buffers.
    pub scratch: ScratchSlot,
    /// No active set.
    pub active: ActiveSet,
}

impl Detached {
    /// A step of `state` under `params` on these parts, its contact
    /// problems solved by Lemke.
    pub fn step<'a>(
        &'a mut self,
        model: &'a Model,
        params: &'a Params,
        state: &'a State,
        settings: &'a StepSettings,
    ) -> Step<'a> {
        let options = SolverOptions {
            threads: settings.threads,
            ..SolverOptions::lemke(settings.lemke)
        };
        self.step_with(model, params, state, settings, options)
    }

    /// [`Self::step`], its contact problems solved as `options` say.
    pub fn step_with<'a>(
        &'a mut self,
        model: &'a Model,
        params: &'a Params,
        state: &'a State,
        settings: &'a StepSettings,
        options: SolverOptions,
    ) -> Step<'a> {
        let lent = Lent {
            solver: &mut self.solver,
            solve: &mut self.solve,
            broad: &mut self.broad,
            buffers: &mut self.buffers,
            scratch: &mut self.scratch,
        };
        Step::new(model, params, state, settings, &self.active, lent, options)
    }
}

/// The contacts a scheme keeps active from one step to the next
/// (Stewart–Trinkle §4, Anitescu–Potra §3), by identity.
pub type ActiveSet = BTreeSet<ContactId>;
