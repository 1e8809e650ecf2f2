//! One island's solve by Lemke, and a solve's islands on two threads.
//!
//! A solve's islands are independent LCPs (see the parent module): each is
//! solved from the solver's memory of the last solve (the warm start by
//! contact identity, the last impulses, the ladder levels), which no island
//! changes before the merge. So the islands a solve must compute can be
//! solved in any order and on either thread, and the merge that follows, in
//! the islands' order, makes every result and every record what the one
//! loop over the islands made, bit for bit: it stops at the first island
//! that failed as the loop did, and each island adds its velocity change
//! on velocities no other island touches.
//!
//! A solve goes to two threads ([`crate::pair_thread`]) when it has at
//! least two islands to compute and [`PARALLEL_UNKNOWNS`] unknowns among
//! them. The two threads take the islands from one queue ([`Queue`]),
//! largest first, an island's size squared standing for its work (Lemke's
//! pivots grow with the island, and each costs about its size); the
//! largest island of the generated pile of 200 takes 46 % of a solve's
//! island time (5.1 of 11.2 ms a step over its first second, one thread),
//! and the other thread solves the rest meanwhile.

use super::islands::{Islands, frictionless_basis};
use super::ladder::{Passes, ladder, proximal_passes};
use super::memo;
use super::operator::{ContactLcp, ContactLcpStorage};
use super::polish::{complementary, polish};
use super::{contact_options, solve_structured_or_fail, write_island};
use crate::lcp::{Lcp, LcpSolution, LcpStatus, LemkeOptions};
use crate::model::{ContactId, Other};
use crate::solver::ContactSolver;
use crate::solver::options::LemkeSettings;
use crate::solver::problem::{ContactProblem, Layout};
use crate::solver::warm::{Form, normals_only};
use nalgebra::DVector;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The unknowns a solve must compute from which its islands go to two
/// threads. A join with a parked helper costs 20–40 µs, a handshake with a
/// spinning one about 0.5 µs ([`crate::pair_thread`]). Measured over 2 s of
/// the generated piles (release, alternated runs): from 300 the pile of 22
/// took 452–469 µs a step against 489–524 from 1,000, the pile of 50 about
/// the same; from 100 the pile of 10 had runs of 149 and 194 µs against
/// 119.
pub(super) const PARALLEL_UNKNOWNS: usize = 300;

/// One island of a solve: what its solve reads and what the merge writes,
/// kept between solves for its storage.
#[derive(Debug, Clone, Default)]
pub(in crate::solver) struct IslandJob {
    /// The contacts' identities and friction directions.
    pub ids: Vec<ContactId>,
    pub friction: Vec<usize>,
    /// The bodies' velocity blocks (first indices) and the velocities.
    pub blocks: Vec<usize>,
    pub velocities: Vec<usize>,
    /// The island's indices in the whole problem's layout.
    pub global_of: Vec<usize>,
    pub local: Layout,
    /// The ladder's first level ([`super::first_level`]'s input).
    pub first: usize,
    /// The memo's entry for this island's LCP, or the key to keep it by.
    pub found: Option<usize>,
    pub key: memo::Key,
    /// The solve, when the island was computed.
    pub solved: Option<IslandSolve>,
}

/// What one island's solve gave.
#[derive(Debug, Clone)]
pub(in crate::solver) struct IslandSolve {
    pub status: LcpStatus,
    /// z, w and the final basis in the island's own order.
    pub z: DVector<f64>,
    pub w: DVector<f64>,
    pub basis: Vec<usize>,
    /// The ladder's level that solved it, the pivots of all its attempts,
    /// the residual.
    pub level: usize,
    pub pivots: usize,
    pub residual: f64,
    /// W J z on the island's velocities (empty unless solved).
    pub velocity: Vec<(usize, f64)>,
    pub strict: Option<memo::Strict>,
}

/// One thread's work space for island solves.
#[derive(Debug, Clone, Default)]
pub(in crate::solver) struct IslandWork {
    /// The storage of an island's operator.
    pub lcp: ContactLcpStorage,
    /// An island's μ, right-hand sides (the scheme's and the relaxed
    /// one), proximal centre and equilibration.
    pub mu: Vec<f64>,
    pub q: Vec<f64>,
    pub relaxed: Vec<f64>,
    pub centre: Vec<f64>,
    pub scale: Vec<f64>,
    /// A velocity change, zero between islands.
    pub(super) change: DVector<f64>,
    /// Storage for islands' velocity changes ([`IslandSolve::velocity`]),
    /// given back by the merge.
    pub spare: Vec<Vec<(usize, f64)>>,
    /// The islands this thread solves, and what each gave.
    pub todo: Vec<usize>,
    pub done: Vec<(usize, IslandSolve)>,
}

/// What every island's solve shares.
pub(super) struct Shared<'p, 'a> {
    pub problem: &'p ContactProblem<'a>,
    pub w: &'p [f64],
    pub form: Form,
    pub frictionless_start: bool,
    pub settings: &'p LemkeSettings,
    pub velocity_scale: f64,
    /// The first friction row of each contact.
    pub starts: &'p [usize],
}

/// The islands of a solve for two threads to take in turn, largest first
/// (an island's size squared standing for its work; ties by the island's
/// order), and the first island, in the islands' order, that failed.
///
/// Dealt in advance by the estimate, the two threads' lists ended far
/// apart: an island's pivots are not its size, and on the generated piles
/// over their first second one thread waited for the other for a third of
/// the time the pair spent on islands (at N = 200, 4.0 of 8.2 ms a step;
/// at N = 22, 79 of 163 µs). Taken from one queue, a thread that finishes
/// an island takes the next one, and the wait is at most the last island.
pub(super) struct Queue {
    pub(super) order: Vec<usize>,
    pub(super) next: AtomicUsize,
    pub(super) failed: AtomicUsize,
}

impl Queue {
    /// The islands `todo` of `jobs`, largest first.
    pub(super) fn largest_first(jobs: &[IslandJob], todo: &[usize]) -> Self {
        let work = |g: usize| {
            let n = jobs[g].local.size() as f64;
            n * n
        };
        let mut order = todo.to_vec();
        order.sort_by(|&a, &b| work(b).total_cmp(&work(a)).then(a.cmp(&b)));
        Self {
            order,
            next: AtomicUsize::new(0),
            failed: AtomicUsize::new(usize::MAX),
        }
    }

    /// The next island to solve: none once the queue is empty. An island
    /// after one that failed (in the islands' order) is skipped: the merge
    /// stops at the first failure, as one loop over the islands would, and
    /// every island before it is still solved by whichever thread takes it.
    pub(super) fn take(&self) -> Option<usize> {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let g = *self.order.get(i)?;
            if g < self.failed.load(Ordering::Relaxed) {
                return Some(g);
            }
        }
    }

    pub(super) fn fail(&self, g: usize) {
        self.failed.fetch_min(g, Ordering::Relaxed);
    }
}

impl ContactSolver {
    /// Solves the islands `work.todo` of `jobs` (island g's contacts
    /// `islands.get(g)`) into `work.done`, in order, stopping after one
    /// that fails; with `dump`, writes each solved island's LCP there.
    pub(super) fn solve_jobs(
        &self,
        shared: &Shared<'_, '_>,
        jobs: &[IslandJob],
        islands: &Islands,
        work: &mut IslandWork,
        mut dump: Option<&mut Lcp>,
    ) {
        work.done.clear();
        let todo = std::mem::take(&mut work.todo);
        for &g in &todo {
            let solved =
                self.solve_island(shared, islands.get(g), &jobs[g], work, dump.as_deref_mut());
            let failed = solved.status != LcpStatus::Solved;
            work.done.push((g, solved));
            if failed {
                break;
            }
        }
        work.todo = todo;
    }

    /// Solves islands of `jobs` taken from `queue` until it is empty, into
    /// `work.done` (one of the two threads of a solve).
    pub(super) fn solve_taken(
        &self,
        shared: &Shared<'_, '_>,
        jobs: &[IslandJob],
        islands: &Islands,
        work: &mut IslandWork,
        queue: &Queue,
    ) {
        work.done.clear();
        while let Some(g) = queue.take() {
            let solved = self.solve_island(shared, islands.get(g), &jobs[g], work, None);
            if solved.status != LcpStatus::Solved {
                queue.fail(g);
            }
            work.done.push((g, solved));
        }
    }

    /// One island's solve: its contacts `members` of the problem, its
    /// `job`'s identities and layout, down the regularization ladder
    /// ([`ladder`]) until a rung solves it.
    pub(super) fn solve_island(
        &self,
        shared: &Shared<'_, '_>,
        members: &[usize],
        job: &IslandJob,
        work: &mut IslandWork,
        dump: Option<&mut Lcp>,
    ) -> IslandSolve {
        let Shared {
            problem,
            w,
            form,
            frictionless_start,
            settings,
            velocity_scale,
            starts,
        } = *shared;
        let contacts = problem.contacts;
        let local = job.local;
        let first = job.first;
        let rungs = settings.compliance.len();
        let jacobians = members.iter().map(|&j| &contacts[j].jacobian).collect();
        work.mu.clear();
        work.mu.extend(members.iter().map(|&j| problem.mu[j]));
        let storage = std::mem::take(&mut work.lcp);
        let mut lcp = ContactLcp::new_in(jacobians, w, &work.mu, storage);
        debug_assert_eq!(lcp.layout, local);
        let mut q = std::mem::take(&mut work.q);
        Self::rhs(problem, &lcp, members, starts, problem.normal_terms, &mut q);
        let q = DVector::from_vec(q);
        let relaxed = problem.relaxed_normal_terms.map(|terms| {
            let mut relaxed = std::mem::take(&mut work.relaxed);
            Self::rhs(problem, &lcp, members, starts, terms, &mut relaxed);
            DVector::from_vec(relaxed)
        });
        let (ids, friction) = (&job.ids, &job.friction);
        let warm_start = self.warm.basis(form, ids, friction, local);
        // Whether the warm start was mapped (else it may be the
        // frictionless problem's basis, a function of the LCP).
        let mapped = warm_start.is_some();
        let warm_fallback = normals_only(warm_start.as_ref(), local.normals());
        lcp.equilibrate();
        let mut scale = std::mem::take(&mut work.scale);
        scale.clear();
        match lcp.scale() {
            Some(s) => scale.extend_from_slice(s),
            None => scale.resize(local.size(), 1.0),
        }
        let scaled = |v: &DVector<f64>| DVector::from_fn(v.len(), |i, _| v[i] * scale[i]);
        let warm_start = warm_start.or_else(|| {
            frictionless_start
                .then(|| frictionless_basis(&lcp, &scaled(&q), local, true))
                .flatten()
        });
        let perturbation_keys = Some(identity_keys(
            local.size(),
            identity_rows(&lcp, ids, friction),
        ));
        let options = LemkeOptions {
            warm_start,
            warm_fallback,
            perturbation_keys: perturbation_keys.clone(),
            ..contact_options()
        };
        // The proximal centre: the impulses these contacts had in the
        // last solve, laid out as this island's LCP.
        let mut centre = std::mem::take(&mut work.centre);
        centre.clear();
        centre.resize(local.size(), 0.0);
        let mut centre = DVector::from_vec(centre);
        for (local_j, &j) in members.iter().enumerate() {
            let c = contacts[j];
            if let Some(previous) = self.impulses.get(&c.id)
                && previous.len() == c.jacobian.friction_count() + 1
            {
                for (r, &value) in previous.iter().enumerate() {
                    centre[lcp.index(local_j, r)] = value;
                }
            }
        }
        let cold = LemkeOptions {
            perturbation_keys,
            ..contact_options()
        };
        let mut pivots = 0;
        let mut outcome = None;
        for (attempt, (level, relax, warm)) in ladder(local.size(), rungs, settings, first)
            .into_iter()
            .enumerate()
        {
            let options = if warm { &options } else { &cold };
            let epsilon = if level == 0 {
                0.0
            } else {
                settings.compliance[level - 1]
            };
            lcp.set_regularization(epsilon);
            let base = if relax {
                relaxed.as_ref().unwrap_or(&q)
            } else {
                &q
            };
            // The proximal shift: LCP(M + εΔ, q − εΔ z⁰) with z⁰ the last
            // impulses. Its solution solves the scheme's own LCP(M, q)
            // up to εΔ(z − z⁰): the compliance's static deflection
            // vanishes as the solves of a step (its fixed-point
            // iterations) and of a resting pile repeat the same impulses,
            // instead of letting every loaded contact sink by h ε Δ c_n.
            let rhs = if epsilon > 0.0 {
                let mut shifted = base.clone();
                for (i, (s, d)) in shifted.iter_mut().zip(lcp.diagonal()).enumerate() {
                    *s -= epsilon * d * centre[i];
                }
                std::borrow::Cow::Owned(shifted)
            } else {
                std::borrow::Cow::Borrowed(base)
            };
            let unscale = |candidate: &mut LcpSolution| {
                // Back from the equilibrated LCP: z = S z', w = S⁻¹ w'.
                for (i, &si) in scale.iter().enumerate() {
                    candidate.z[i] *= si;
                    candidate.w[i] /= si;
                }
            };
            let mut candidate = solve_structured_or_fail(&lcp, &scaled(&rhs), options);
            unscale(&mut candidate);
            pivots += candidate.pivots;
            let solved = candidate.status == LcpStatus::Solved;
            let mut rhs = rhs.into_owned();
            if solved && epsilon > 0.0 {
                // Converged, the operator keeps the compliance that
                // solved (the dump shows it); else the rung failed.
                let weights = lcp.diagonal().to_vec();
                let (refined, shifted, passes) = proximal_passes(
                    base,
                    &weights,
                    &weights,
                    epsilon,
                    &mut centre,
                    candidate,
                    settings,
                    &mut pivots,
                    |epsilon, shifted, again| {
                        lcp.set_regularization(epsilon);
                        let mut next = solve_structured_or_fail(&lcp, &scaled(shifted), again);
                        unscale(&mut next);
                        next
                    },
                );
                candidate = refined;
                if let Some(shifted) = shifted {
                    rhs = shifted;
                }
                if passes != Passes::Within {
                    candidate.status = LcpStatus::NumericalFailure;
                }
            }
            // Where Lemke's basis is not settled, the repair starts from
            // the warm start, then its normal impulses alone, and
            // without a warm start (a first step) after a ray from the
            // frictionless problem's basis.
            let frictionless =
                (epsilon == 0.0 && options.warm_start.is_none() && !complementary(&candidate))
                    .then(|| frictionless_basis(&lcp, &scaled(&rhs), local, true))
                    .flatten();
            let starts: Vec<&[usize]> =
                [&options.warm_start, &options.warm_fallback, &frictionless]
                    .into_iter()
                    .filter_map(|b| b.as_deref())
                    .collect();
            // The scheme's own LCP only: a compliance's solution is
            // checked against it by the proximal passes' defect, which
            // a refined (or repaired) z would bypass.
            let mut cancellation = None;
            let polished = (epsilon == 0.0)
                .then(|| {
                    let c = lcp.cancellation(&candidate.z);
                    cancellation = Some(c);
                    polish(
                        &lcp,
                        &rhs,
                        &mut candidate,
                        &starts,
                        c,
                        velocity_scale,
                        settings,
                    )
                })
                .flatten();
            let solved = candidate.status == LcpStatus::Solved;
            // The solve was a function of the key, the warm start and
            // the refinement's test alone (see `memo::Strict`).
            let strict = (attempt == 0 && level == 0 && pivots == 0 && polished.is_none())
                .then_some(cancellation)
                .flatten()
                .map(|cancellation| memo::Strict {
                    warm: options.warm_start.clone().filter(|_| mapped),
                    cancellation,
                });
            outcome = Some((candidate, level, rhs, polished, strict));
            if solved {
                break;
            }
        }
        let Some((island, level, rhs, polished, strict)) = outcome else {
            unreachable!("the ladder has at least level 0")
        };
        if let Some(dump) = dump {
            // The LCP solved, without the equilibration.
            write_island(dump, &job.global_of, &lcp.to_dense(), rhs.as_slice(), |i| {
                scale[i]
            });
        }
        // The island's velocity change, W J z, on its own velocities.
        let mut velocity = work.spare.pop().unwrap_or_default();
        velocity.clear();
        if island.status == LcpStatus::Solved {
            if work.change.len() != problem.dof {
                work.change = DVector::zeros(problem.dof);
            }
            match &polished {
                Some(change) => lcp.add_flat(change, &mut work.change),
                None => lcp.add_velocity_change(&island.z, &mut work.change),
            }
            velocity.extend(job.velocities.iter().map(|&i| (i, work.change[i])));
            for &i in &job.velocities {
                work.change[i] = 0.0;
            }
        }
        // The island's buffers go back for the next one.
        work.q = q.data.into();
        if let Some(relaxed) = relaxed {
            work.relaxed = relaxed.data.into();
        }
        work.centre = centre.data.into();
        work.scale = scale;
        work.lcp = lcp.into_storage();
        IslandSolve {
            status: island.status,
            z: island.z,
            w: island.w,
            basis: island.basis,
            level,
            pivots,
            residual: island.residual,
            velocity,
            strict,
        }
    }
}

/// The keys of Lemke's perturbed retries
/// ([`LemkeOptions::perturbation_keys`]) for an island's rows, following the
/// contacts' identities: each row (a contact's c_n, its β's, its λ) gets a
/// key mixed from its contact's identity and its place in the contact, and
/// the fractions of the perturbation are the keys' ranks, (rank + ½)/n. A
/// contact that persists keeps its rows' order among the others whatever
/// joins or leaves the island, where {iφ} of the row's index would change
/// with every contact added before it (all of (29)'s c_n and λ rows follow
/// the friction rows), and the perturbed problems of consecutive solves
/// split each degenerate vertex alike.
fn identity_keys(
    size: usize,
    rows: impl IntoIterator<Item = (usize, ContactId, u64)>,
) -> Arc<[u64]> {
    let mix = crate::mix::splitmix64;
    let key = |id: &ContactId, place: u64| {
        let other = match id.b {
            Other::Body(i) => 2 * i as u64,
            Other::Surface(i) => 2 * i as u64 + 1,
            Other::World => u64::MAX,
        };
        [
            id.a as u64,
            other,
            u64::from(id.feature),
            u64::from(id.cut),
            place,
        ]
        .into_iter()
        .fold(0, |h, v| mix(h ^ v))
    };
    let mut keys = vec![u64::MAX; size];
    for (i, id, place) in rows {
        keys[i] = key(&id, place);
    }
    keys.into()
}

/// The rows of an island's (29) for [`identity_keys`]: each
/// contact's c_n (place 0), its β's (1…k) and its λ (`LAMBDA_PLACE`).
fn identity_rows<'a>(
    lcp: &'a ContactLcp<'_>,
    ids: &'a [ContactId],
    friction: &'a [usize],
) -> impl Iterator<Item = (usize, ContactId, u64)> + 'a {
    ids.iter()
        .zip(friction)
        .enumerate()
        .flat_map(move |(j, (&id, &k))| {
            (0..=k)
                .map(move |r| (lcp.index(j, r), id, r as u64))
                .chain(std::iter::once((lcp.layout.lambda(j), id, LAMBDA_PLACE)))
        })
}

/// The place of a contact's λ row among its rows' keys (past any β).
const LAMBDA_PLACE: u64 = u32::MAX as u64;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lcp::lemke::fractions_by_rank;

    /// The fractions are n distinct values 1/n apart in (0, 1), and the
    /// rows of contacts that persist keep their order when a contact joins
    /// the island at its start (every row index shifts).
    #[test]
    fn identity_fractions_are_spaced_and_keep_the_persisting_rows_order() {
        let id = |a: usize, feature: u32| ContactId {
            a,
            b: Other::Body(a + 1),
            feature,
            cut: 0,
        };
        // Three contacts of two rows each (c_n, λ), laid out as (29)
        // without friction: normals first, then the λ's.
        let rows = |ids: &[ContactId]| {
            let m = ids.len();
            ids.iter()
                .enumerate()
                .flat_map(|(j, &c)| [(j, c, 0), (m + j, c, LAMBDA_PLACE)])
                .collect::<Vec<_>>()
        };
        let before = [id(0, 1), id(2, 5), id(4, 9)];
        let after = [id(7, 3), id(0, 1), id(2, 5), id(4, 9)];
        let f = fractions_by_rank(&identity_keys(6, rows(&before)));
        let g = fractions_by_rank(&identity_keys(8, rows(&after)));
        let mut sorted = f.clone();
        sorted.sort_by(f64::total_cmp);
        for (rank, x) in sorted.iter().enumerate() {
            assert_eq!(*x, (rank as f64 + 0.5) / 6.0);
        }
        // Row i of `before` is row i + 1 (c_n) or i + 2 (λ) of `after`.
        let moved = |i: usize| if i < 3 { i + 1 } else { i + 2 };
        for i in 0..6 {
            for k in 0..6 {
                assert_eq!(
                    f[i] < f[k],
                    g[moved(i)] < g[moved(k)],
                    "rows {i} and {k} swapped"
                );
            }
        }
    }

    #[test]
    fn the_queue_gives_the_largest_islands_first_and_skips_those_after_a_failure() {
        let sized = |contacts: usize| IslandJob {
            local: Layout {
                contacts,
                friction: 0,
            },
            ..IslandJob::default()
        };
        // Sizes 2·(10, 40, 20, 30, 5) unknowns (a contact's normal and λ).
        let jobs: Vec<IslandJob> = [10, 40, 20, 30, 5].into_iter().map(sized).collect();
        let queue = Queue::largest_first(&jobs, &[0, 1, 2, 3, 4]);
        assert_eq!(queue.take(), Some(1));
        assert_eq!(queue.take(), Some(3));
        // Island 2 fails: 4 comes after it and is skipped, 0 before it is not.
        queue.fail(2);
        assert_eq!(queue.take(), Some(0));
        assert_eq!(queue.take(), None);
        // Only the islands asked for, each once.
        let queue = Queue::largest_first(&jobs, &[0, 2, 4]);
        let taken: Vec<usize> = std::iter::from_fn(|| queue.take()).collect();
        assert_eq!(taken, vec![2, 0, 4]);
    }
}
