//! [`ContactSolver`]: the one solver of every scheme's [`ContactProblem`]s
//! and what it remembers between steps (warm-start bases and impulses by
//! contact identity, the regularization each island needed). It sends a
//! problem on block-diagonal W to NSGS or to Lemke over islands, and a
//! problem on dense W to Lemke's dense tableau.

use super::lemke::island::{IslandJob, IslandWork};
use super::lemke::{dense, islands::Islands, memo};
use super::nsgs;
use super::options::{NsgsOptions, SolverOptions};
use super::problem::{ContactProblem, Layout, friction_starts};
use super::solution::{ContactSolution, Unknowns};
use super::warm::{Form, LastImpulses, WarmStart};
use crate::lcp::budget;
use crate::model::MassInverse;
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

/// The solver of [`ContactProblem`]s and what it remembers between steps:
/// the bases by contact identity and the regularization that the islands
/// needed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ContactSolver {
    /// The bases of the last solve by contact identity, for every form.
    pub(super) warm: WarmStart,
    /// The impulses of the last solve in which each contact took part, the
    /// centre of the proximal shift and NSGS's warm start.
    pub(super) impulses: LastImpulses,
    /// The ladder level that solved each body's island last time, by the
    /// body's first velocity index.
    pub(super) levels: HashMap<usize, usize>,
    /// The level that solved the last dense LCP.
    pub(super) dense_level: usize,
}

/// What the solver reuses from solve to solve; not memory (a solve's result
/// does not depend on it), kept by the stepper apart from the checkpoints.
#[derive(Debug, Clone, Default)]
pub struct SolveBuffers {
    /// NSGS's buffers.
    pub(super) nsgs: nsgs::Workspace,
    /// The islands of a problem.
    pub(super) islands: Islands,
    /// What the solve records, swapped into the solver's memory when every
    /// island is solved: the bases, the impulses and the ladder levels.
    pub(super) warm: WarmStart,
    pub(super) impulses: LastImpulses,
    pub(super) levels: HashMap<usize, usize>,
    /// The first friction row of each contact.
    pub(super) starts: Vec<usize>,
    /// The islands solved earlier in the step, or carried from the step
    /// before ([`memo`]).
    pub(super) memo: memo::Memo,
    /// Each island's data and solve ([`island`]), and the two threads'
    /// work spaces.
    pub(super) jobs: Vec<IslandJob>,
    pub(super) work: [IslandWork; 2],
}

impl SolveBuffers {
    /// Starts a step at time `t`: only the islands of the step that ended
    /// at `t` may be reused, under [`memo::Strict`]'s checks.
    pub fn begin_step(&mut self, t: f64) {
        self.memo.begin_step(t);
    }

    /// Ends a step, accepted, at time `t`.
    pub fn end_step(&mut self, t: f64) {
        self.memo.end_step(t);
    }
}

impl ContactSolver {
    /// A solver's memory as a snapshot kept it: the warm start, the last
    /// impulses by contact, the ladder levels by body and of the dense LCP.
    pub fn restored(
        warm: WarmStart,
        impulses: LastImpulses,
        levels: HashMap<usize, usize>,
        dense_level: usize,
    ) -> Self {
        Self {
            warm,
            impulses,
            levels,
            dense_level,
        }
    }

    /// Whether its caches are consistent with themselves: every contact's
    /// entries within their storage (a snapshot's memory is checked before
    /// a solve reads it).
    pub fn is_consistent(&self) -> bool {
        self.warm.is_consistent() && self.impulses.is_consistent()
    }

    /// Forgets the warm start and the regularization levels.
    pub fn clear(&mut self) {
        self.warm.clear();
        self.impulses.clear();
        self.levels.clear();
        self.dense_level = 0;
    }

    /// Solves `problem`, posed in formulation `form` (a tag for the warm
    /// start: a basis is reused only in the same formulation; the form also
    /// chooses the method, see [`Form`]), as `options` say. The velocity of
    /// the solution is v* + W J z.
    pub fn solve(
        &mut self,
        problem: &ContactProblem<'_>,
        form: Form,
        options: &SolverOptions,
        buffers: &mut SolveBuffers,
    ) -> ContactSolution {
        match problem.map {
            MassInverse::Diagonal(w) => match options.nsgs {
                Some(nsgs) => self.solve_nsgs(problem, w.as_slice(), nsgs, options, buffers),
                None => self.solve_islands(
                    problem,
                    w.as_slice(),
                    form,
                    form.frictionless_start(),
                    options,
                    buffers,
                ),
            },
            MassInverse::Dense(_) | MassInverse::Blocks(_) => {
                self.solve_dense(problem, form, options)
            }
        }
    }

    /// Whether [`Self::solve`] honours [`ContactProblem::activation`] under
    /// `options` for a model whose W is `map`: NSGS on block-diagonal W.
    pub fn activates(options: &SolverOptions, map: &MassInverse<'_>) -> bool {
        options.nsgs.is_some() && matches!(map, MassInverse::Diagonal(_))
    }

    /// [`Self::solve`] by NSGS, warm-started from the impulses each contact
    /// had in the last solve it took part in.
    fn solve_nsgs(
        &mut self,
        problem: &ContactProblem<'_>,
        w: &[f64],
        limits: NsgsOptions,
        options: &SolverOptions,
        buffers: &mut SolveBuffers,
    ) -> ContactSolution {
        // NSGS's local Lemke solves (a contact's pyramid, once a sweep) are
        // its own kernels, not the step's LCP: they count against no budget.
        let solved = budget::within(None, || {
            nsgs::solve(problem, w, &self.impulses, limits, &mut buffers.nsgs)
        });
        let layout = Layout::of(problem.contacts);
        let starts = friction_starts(problem.contacts);
        if solved.status.advances() {
            self.impulses.clear();
            for (j, c) in problem.contacts.iter().enumerate() {
                let k = c.jacobian.friction_count();
                let normal = solved.z[layout.normal(j)];
                let beta = &solved.z.as_slice()[starts[j]..starts[j] + k];
                // A contact without impulse is kept as none: every reader
                // takes a missing contact for zeros (the 5,000-grain silo
                // has ten candidates for each contact that carries a load).
                if normal == 0.0 && beta.iter().all(|&b| b == 0.0) {
                    continue;
                }
                self.impulses
                    .insert(c.id, std::iter::once(normal).chain(beta.iter().copied()));
            }
            // A later Lemke solve starts afresh.
            self.warm.clear();
        }
        // The size of (29) over the contacts that took part (k + 2 unknowns
        // a contact).
        let lcp_size = solved.active.as_ref().map_or(layout.size(), |active| {
            problem
                .contacts
                .iter()
                .zip(active)
                .filter(|(_, on)| **on)
                .map(|(c, _)| c.jacobian.friction_count() + 2)
                .sum()
        });
        // The LCP (29) over the contacts that took part, when NSGS solved one.
        let lcp = (options.keeps(lcp_size) && nsgs::solves_lcp(problem, &limits))
            .then(|| dense::taking_part_lcp(problem, solved.active.as_deref()));
        ContactSolution {
            status: solved.status,
            residual: solved.residual,
            pivots: 0,
            unknowns: Unknowns::Pyramid(layout),
            z: solved.z,
            w: solved.w,
            velocity: problem.free + solved.velocity_change,
            lcp_size,
            islands: usize::from(layout.size() > 0),
            largest_island: layout.size(),
            reused: 0,
            sweeps: solved.sweeps,
            lcp,
            active: solved.active,
        }
    }
}
