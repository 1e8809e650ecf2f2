//! Lemke's method on the contact problem (Stewart & Trinkle 1996 §3):
//! over islands of block-diagonal W on the matrix-free operator
//! ([`operator`]), or on the dense tableau ([`dense`]), warm-started by
//! contact identity, with the regularization ladder ([`ladder`]) and the
//! velocity-space refinement ([`polish`]) as fallbacks.

pub mod assembly;
pub mod dense;
mod factors;
pub mod island;
pub mod islands;
mod ladder;
pub mod memo;
pub mod operator;
mod polish;

use self::island::IslandJob;
use self::islands::global_indices;
use self::ladder::first_level;
use self::operator::ContactLcp;
use crate::lcp::budget;
use crate::lcp::{self, Lcp, LcpMatrix, LcpSolution, LcpStatus, LemkeOptions};
use crate::model::ContactId;
use crate::solver::options::SolverOptions;
use crate::solver::problem::{ContactProblem, Layout};
use crate::solver::solution::{ContactSolution, Unknowns};
use crate::solver::warm::{Form, LastImpulses};
use crate::solver::{ContactSolver, SolveBuffers};
use nalgebra::{DMatrix, DVector};

/// Lemke's options for the steppers' contact LCPs: the defaults without
/// restarts from other complementary bases
/// ([`LemkeOptions::restarts`]). Lemke's method from the covering vector
/// processes these LCPs (Stewart–Trinkle §3.2, Anitescu–Potra Theorem 2.2),
/// so a ray is rounding, which the perturbed retries and the compliance
/// ladder address; a restart from zᵢ basic follows the same rounding to a
/// ray again. Measured on `chain.ron` under the Euler LCP with springs of
/// 10⁹ past the explicit limit (its state at 10⁴⁴): 46 restarts of 700–850
/// pivots each on a dense LCP of 792 unknowns, 4 minutes, before the step
/// was reported failed.
pub fn contact_options() -> LemkeOptions {
    LemkeOptions {
        restarts: 0,
        ..LemkeOptions::default()
    }
}

/// [`solve_or_fail`] for an operator.
fn solve_structured_or_fail<M: LcpMatrix + ?Sized>(
    m: &M,
    q: &DVector<f64>,
    options: &LemkeOptions,
) -> LcpSolution {
    let cold = || LemkeOptions {
        warm_start: None,
        warm_fallback: None,
        ..options.clone()
    };
    lcp::solve_structured(m, q, options)
        .or_else(|_| lcp::solve_structured(m, q, &cold()))
        .unwrap_or_else(|_| failed_solution(m.size()))
}

fn failed_solution(n: usize) -> LcpSolution {
    LcpSolution {
        z: DVector::zeros(n),
        w: DVector::zeros(n),
        status: LcpStatus::NumericalFailure,
        pivots: 0,
        residual: f64::INFINITY,
        basis: Vec::new(),
        warm_started: false,
    }
}

/// An island's impulses z (laid out as (29) by `local`, the contacts'
/// `friction` directions each) into `impulses` by contact: c_n, then β.
fn record_impulses(
    impulses: &mut LastImpulses,
    ids: &[ContactId],
    friction: &[usize],
    local: Layout,
    z: &[f64],
) {
    let mut first = 0;
    for (j, (&id, &k)) in ids.iter().zip(friction).enumerate() {
        impulses.insert(
            id,
            std::iter::once(z[local.normal(j)]).chain(z[first..first + k].iter().copied()),
        );
        first += k;
    }
}

/// An island's LCP (its operator `dense`, equilibrated by `scale`, and its
/// right-hand side `q`) into the whole problem's `dump` at the indices
/// `global_of`, without the equilibration.
fn write_island(
    dump: &mut Lcp,
    global_of: &[usize],
    dense: &DMatrix<f64>,
    q: &[f64],
    scale: impl Fn(usize) -> f64,
) {
    for (i, &gi) in global_of.iter().enumerate() {
        dump.q[gi] = q[i];
        for (k, &gk) in global_of.iter().enumerate() {
            dump.m[(gi, gk)] = dense[(i, k)] / (scale(i) * scale(k));
        }
    }
}

impl ContactSolver {
    /// The right-hand side of (29) for contacts `members` of `problem`, laid
    /// out by `lcp`, into `q`: Jᵀv* plus the scheme's terms `normal_terms`
    /// and `problem.friction_terms`.
    fn rhs(
        problem: &ContactProblem<'_>,
        lcp: &ContactLcp<'_>,
        members: &[usize],
        starts: &[usize],
        normal_terms: &[f64],
        q: &mut Vec<f64>,
    ) {
        q.clear();
        q.resize(lcp.layout.size(), 0.0);
        for (local, &j) in members.iter().enumerate() {
            let c = problem.contacts[j];
            for r in 0..=c.jacobian.friction_count() {
                q[lcp.index(local, r)] = c.jacobian.dot(r, problem.free);
            }
        }
        let mut row = 0;
        for (local, &j) in members.iter().enumerate() {
            q[lcp.layout.normal(local)] += normal_terms[j];
            let k = problem.contacts[j].jacobian.friction_count();
            if !problem.friction_terms.is_empty() {
                for i in 0..k {
                    q[row + i] += problem.friction_terms[starts[j] + i];
                }
            }
            row += k;
        }
    }

    /// [`ContactSolver::solve`] by Lemke over the islands of a problem on
    /// block-diagonal W.
    pub(in crate::solver) fn solve_islands(
        &mut self,
        problem: &ContactProblem<'_>,
        w: &[f64],
        form: Form,
        frictionless_start: bool,
        options: &SolverOptions,
        buffers: &mut SolveBuffers,
    ) -> ContactSolution {
        let settings = &options.lemke;
        let contacts = problem.contacts;
        let layout = Layout::of(contacts);
        let starts = &mut buffers.starts;
        starts.clear();
        starts.extend(contacts.iter().scan(0, |row, c| {
            let start = *row;
            *row += c.jacobian.friction_count();
            Some(start)
        }));
        let starts = &buffers.starts;
        let size = layout.size();
        let mut solution = ContactSolution {
            status: LcpStatus::Solved,
            residual: 0.0,
            pivots: 0,
            unknowns: Unknowns::Pyramid(layout),
            z: DVector::zeros(size),
            w: DVector::zeros(size),
            velocity: problem.free.clone(),
            lcp_size: size,
            islands: 0,
            largest_island: 0,
            reused: 0,
            sweeps: 0,
            lcp: options.keeps(size).then(|| Lcp {
                m: DMatrix::zeros(size, size),
                q: DVector::zeros(size),
            }),
            active: None,
        };
        let mut velocity_change = DVector::zeros(problem.dof);
        let velocity_scale = settings.velocity_scale(problem.free);
        // What this solve records, kept only when every island is solved.
        buffers.warm.begin(form);
        buffers.impulses.clear();
        buffers.levels.clear();
        buffers.islands.find(contacts);
        // Each island's data, and whether the step solved its LCP already,
        // bit for bit ([`memo`]).
        buffers.memo.begin();
        let count = buffers.islands.len();
        if buffers.jobs.len() < count {
            buffers.jobs.resize_with(count, IslandJob::default);
        }
        for g in 0..count {
            let members = buffers.islands.get(g);
            let job = &mut buffers.jobs[g];
            job.solved = None;
            global_indices(members, contacts, starts, layout, &mut job.global_of);
            // The island's contacts' identities, friction directions and
            // body blocks.
            job.ids.clear();
            job.ids.extend(members.iter().map(|&j| contacts[j].id));
            job.friction.clear();
            job.friction.extend(
                members
                    .iter()
                    .map(|&j| contacts[j].jacobian.friction_count()),
            );
            job.blocks.clear();
            job.blocks.extend(
                members
                    .iter()
                    .flat_map(|&j| contacts[j].jacobian.blocks().iter().map(|b| b.start)),
            );
            let velocities = &mut job.velocities;
            velocities.clear();
            for &j in members {
                for b in contacts[j].jacobian.blocks() {
                    velocities.extend(b.range());
                }
            }
            velocities.sort_unstable();
            velocities.dedup();
            let found = {
                let terms = |j: usize, key: &mut Vec<u64>| {
                    let c = contacts[j];
                    let k = c.jacobian.friction_count();
                    key.push(problem.mu[j].to_bits());
                    key.push(problem.normal_terms[j].to_bits());
                    if let Some(relaxed) = problem.relaxed_normal_terms {
                        key.push(relaxed[j].to_bits());
                    }
                    if !problem.friction_terms.is_empty() {
                        key.extend(
                            problem.friction_terms[starts[j]..starts[j] + k]
                                .iter()
                                .map(|x| x.to_bits()),
                        );
                    }
                };
                let velocities = &*velocities;
                let on_velocities = |key: &mut Vec<u64>| {
                    key.push(form as u64);
                    key.push(u64::from(frictionless_start));
                    for &i in velocities {
                        key.push(i as u64);
                        key.push(problem.free[i].to_bits());
                        key.push(w[i].to_bits());
                    }
                };
                buffers
                    .memo
                    .find(members, contacts, terms, on_velocities, &mut job.key)
            };
            job.local = Layout {
                contacts: members.len(),
                friction: job.friction.iter().sum(),
            };
            job.first = job
                .blocks
                .iter()
                .filter_map(|b| self.levels.get(b))
                .copied()
                .max()
                .unwrap_or(0);
            let rungs = settings.compliance.len();
            let plain_first = first_level(job.local.size(), rungs, settings, job.first) == 0;
            // An island carried from the step before is reused only where a
            // solve would give it again ([`memo::Strict`]).
            job.found = found.filter(|&i| {
                let found = buffers.memo.entry(i);
                !found.carried
                    || found.strict.as_ref().is_some_and(|strict| {
                        plain_first
                            && strict.cancellation <= settings.polish_cancellation * velocity_scale
                            && self.warm.basis(form, &job.ids, &job.friction, job.local)
                                == strict.warm
                    })
            });
        }
        // The islands to compute, on two threads from PARALLEL_UNKNOWNS
        // unknowns ([`island`]).
        let shared = island::Shared {
            problem,
            w,
            form,
            frictionless_start,
            settings,
            velocity_scale,
            starts,
        };
        let [first, second] = &mut buffers.work;
        first.todo.clear();
        first
            .todo
            .extend((0..count).filter(|&g| buffers.jobs[g].found.is_none()));
        let unknowns: usize = first
            .todo
            .iter()
            .map(|&g| buffers.jobs[g].local.size())
            .sum();
        let pair = (options.threads >= 2
            && solution.lcp.is_none()
            && first.todo.len() >= 2
            && unknowns >= island::PARALLEL_UNKNOWNS
            && crate::pair_thread::pays())
        .then(crate::pair_thread::shared)
        .flatten();
        let (jobs, islands) = (&buffers.jobs, &buffers.islands);
        match pair {
            Some(pair) => {
                let queue = island::Queue::largest_first(jobs, &first.todo);
                let this = &*self;
                // The helper's pivots count against this step's budget too.
                let budget = budget::current();
                crate::pair_thread::both(
                    Some(pair),
                    true,
                    || this.solve_taken(&shared, jobs, islands, first, &queue),
                    || {
                        budget::within(budget, || {
                            this.solve_taken(&shared, jobs, islands, second, &queue)
                        })
                    },
                );
            }
            None => self.solve_jobs(&shared, jobs, islands, first, solution.lcp.as_mut()),
        }
        for work in &mut buffers.work {
            for (g, solved) in work.done.drain(..) {
                buffers.jobs[g].solved = Some(solved);
            }
        }
        // The islands in their order, as one loop over them would take them.
        for g in 0..count {
            let members = buffers.islands.get(g);
            let job = &mut buffers.jobs[g];
            let (ids, friction, local) = (&job.ids, &job.friction, job.local);
            if let Some(i) = job.found {
                let found = buffers.memo.entry(i);
                for (i, &g) in job.global_of.iter().enumerate() {
                    solution.z[g] = found.z[i];
                    solution.w[g] = found.w[i];
                }
                if let Some(dump) = solution.lcp.as_mut() {
                    // The island's LCP for the dump, as solved (no
                    // compliance, no equilibration).
                    let work = &mut buffers.work[0];
                    let jacobians = members.iter().map(|&j| &contacts[j].jacobian).collect();
                    work.mu.clear();
                    work.mu.extend(members.iter().map(|&j| problem.mu[j]));
                    let storage = std::mem::take(&mut work.lcp);
                    let lcp = ContactLcp::new_in(jacobians, w, &work.mu, storage);
                    let mut q = std::mem::take(&mut work.q);
                    Self::rhs(problem, &lcp, members, starts, problem.normal_terms, &mut q);
                    write_island(dump, &job.global_of, &lcp.to_dense(), &q, |_| 1.0);
                    work.q = q;
                    work.lcp = lcp.into_storage();
                }
                for &(i, dv) in &found.velocity {
                    velocity_change[i] += dv;
                }
                record_impulses(&mut buffers.impulses, ids, friction, local, &found.z);
                buffers.warm.add(ids, friction, local, &found.basis);
                for &b in &job.blocks {
                    buffers.levels.insert(b, 0);
                }
                solution.islands += 1;
                solution.reused += 1;
                solution.largest_island = solution.largest_island.max(local.size());
                solution.residual = solution.residual.max(found.residual);
                buffers.memo.keep_found(i);
                continue;
            }
            // Not computed: an island before it failed.
            let Some(island) = job.solved.take() else {
                break;
            };
            solution.islands += 1;
            solution.largest_island = solution.largest_island.max(local.size());
            solution.pivots += island.pivots;
            solution.residual = solution.residual.max(island.residual);
            for &b in &job.blocks {
                buffers.levels.insert(b, island.level);
            }
            if island.status != LcpStatus::Solved {
                solution.status = island.status;
                break;
            }
            for (i, &g) in job.global_of.iter().enumerate() {
                solution.z[g] = island.z[i];
                solution.w[g] = island.w[i];
            }
            for &(i, dv) in &island.velocity {
                velocity_change[i] += dv;
            }
            // The scheme's own LCP (no compliance) is remembered; the
            // island's velocities are its own, so the change on them is
            // this island's alone.
            if island.level == 0 {
                buffers.memo.keep(&mut job.key, members, contacts, |entry| {
                    entry.z.clear();
                    entry.z.extend_from_slice(island.z.as_slice());
                    entry.w.clear();
                    entry.w.extend_from_slice(island.w.as_slice());
                    entry.basis.clone_from(&island.basis);
                    entry.velocity.clone_from(&island.velocity);
                    entry.residual = island.residual;
                    entry.strict = island.strict.clone();
                });
            }
            record_impulses(
                &mut buffers.impulses,
                ids,
                friction,
                local,
                island.z.as_slice(),
            );
            buffers.warm.add(ids, friction, local, &island.basis);
            // The velocity change's storage goes back to the thread with
            // fewer spares.
            let [first, second] = &mut buffers.work;
            let fewer = if first.spare.len() <= second.spare.len() {
                first
            } else {
                second
            };
            fewer.spare.push(island.velocity);
        }
        if solution.status == LcpStatus::Solved {
            std::mem::swap(&mut self.impulses, &mut buffers.impulses);
            std::mem::swap(&mut self.levels, &mut buffers.levels);
            std::mem::swap(&mut self.warm, &mut buffers.warm);
        }
        // v* + W J z, the impulses summed before v* is added.
        solution.velocity += &velocity_change;
        solution
    }
}
