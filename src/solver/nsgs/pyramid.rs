//! NSGS on the k-edge friction pyramid: the same LCP (29) Lemke solves,
//! each contact's (k + 2)-unknown block solved exactly by Lemke in turn, and
//! a walk of the sweeps taken to its end in one move ([`Drift`]).

use super::cone::{Participation, WARM_GROWTH_ROUNDS};
use super::kernels::Velocity;
use super::{Local, NsgsSolution, Workspace, add_impulse, local_w, warm_impulse};
use crate::lcp::{self, LcpStatus, LemkeOptions};
use crate::solver::options::NsgsOptions;
use crate::solver::problem::{ContactProblem, Layout, friction_starts};
use crate::solver::warm::LastImpulses;
use nalgebra::{DMatrix, DVector};

/// Sweeps of the same drift in a row before [`Drift`] moves along it.
pub(super) const DRIFT_REPEATS: usize = 5;

/// The longest period of a drift that [`Drift`] recognizes, in sweeps.
pub(super) const DRIFT_PERIOD: usize = 4;

/// Two steps of the impulses are the same drift when every component
/// differs by at most this much of the step's largest.
pub(super) const DRIFT_SAME: f64 = 1e-3;

/// A drift of the pyramid's sweeps: the impulses (c_n, β and λ of every
/// contact) changing by the same amount (within [`DRIFT_SAME`]) every p
/// sweeps (p ≤ [`DRIFT_PERIOD`]), [`DRIFT_REPEATS`] times in a row. On a
/// pile's boxes the sweeps meet such affine pieces of the Gauss–Seidel
/// map, where a visit undoes what the visits after it did one sweep
/// before, and the iterate walks by a fixed step (`pile.ron` at t = 0.125
/// s: 1.7e-12 of normal impulse a sweep, the residual unchanged to four
/// digits for 95,000 sweeps) towards the edge of the piece, where some
/// impulse, λ or μc_n − Σβ reaches zero and the active set changes.
/// [`Self::jump`] takes the walk to that edge in one move, as the sweeps
/// would after that many of them; the sweeps then go on from there, so the
/// end is the sweeps' own fixed point and the residual the same test
/// decides it. On `pile.ron`'s first second at tolerance 1e-6 this takes
/// the sweeps from about 240,000 to 28,000, and at 1e-8 and 1e-10 it is
/// what lets every step finish.
/// The iterate with the smallest residual a solve has seen: what a solve
/// that reaches its sweep limit returns (every contact's impulses and λ,
/// which contacts take part, and the velocity they give).
struct Best {
    residual: f64,
    impulses: Vec<f64>,
    active: Vec<bool>,
    velocity: DVector<f64>,
}

impl Default for Best {
    fn default() -> Self {
        Self {
            residual: f64::INFINITY,
            impulses: Vec::new(),
            active: Vec::new(),
            velocity: DVector::zeros(0),
        }
    }
}

impl Best {
    fn keep(&mut self, residual: f64, locals: &[Local], active: &[bool], velocity: &DVector<f64>) {
        self.residual = residual;
        self.impulses.clear();
        for local in locals {
            self.impulses.extend_from_slice(&local.z);
            self.impulses.push(local.lambda);
        }
        self.active.clear();
        self.active.extend_from_slice(active);
        self.velocity.clone_from(velocity);
    }

    fn restore(&self, locals: &mut [Local], active: &mut Vec<bool>, velocity: &mut DVector<f64>) {
        let mut at = 0;
        for local in locals {
            let n = local.z.len();
            local.z.copy_from_slice(&self.impulses[at..at + n]);
            local.lambda = self.impulses[at + n];
            at += n + 1;
        }
        active.clone_from(&self.active);
        velocity.clone_from(&self.velocity);
    }
}

#[derive(Default)]
pub(super) struct Drift {
    /// The latest iterates, most recent first (at most 2 [`DRIFT_PERIOD`] +
    /// 1), each every contact's k + 2 numbers, inactive ones zero.
    pub(super) history: Vec<Vec<f64>>,
    /// Sweeps in a row that showed a drift.
    pub(super) repeats: usize,
}

impl Drift {
    /// Forgets the iterates (contacts joined, or a jump was taken).
    pub(super) fn clear(&mut self) {
        self.history.clear();
        self.repeats = 0;
    }

    /// Records the iterate after a sweep; returns the drift per period
    /// once it has repeated [`DRIFT_REPEATS`] times.
    pub(super) fn record(&mut self, locals: &[Local], active: &[bool]) -> Option<Vec<f64>> {
        let mut now = if self.history.len() > 2 * DRIFT_PERIOD {
            self.history.pop().unwrap_or_default()
        } else {
            Vec::new()
        };
        now.clear();
        for (l, &on) in locals.iter().zip(active) {
            if on {
                now.extend_from_slice(&l.z);
                now.push(l.lambda);
            } else {
                now.extend(std::iter::repeat_n(0.0, l.k + 2));
            }
        }
        self.history.insert(0, now);
        let h = &self.history;
        let found = (1..=DRIFT_PERIOD)
            .take_while(|&p| h.len() > 2 * p)
            .find_map(|p| {
                let step: Vec<f64> = h[0].iter().zip(&h[p]).map(|(a, b)| a - b).collect();
                let size = step.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
                let same = size > 0.0
                    && step
                        .iter()
                        .zip(h[p].iter().zip(&h[2 * p]))
                        .all(|(a, (b, c))| (a - (b - c)).abs() <= DRIFT_SAME * size);
                same.then_some(step)
            });
        self.repeats = if found.is_some() { self.repeats + 1 } else { 0 };
        found.filter(|_| self.repeats >= DRIFT_REPEATS)
    }

    /// Moves the impulses along `step` (a drift per period) as far as every
    /// impulse, λ and μc_n − Σβ stays non-negative, and the velocity with
    /// them, when that is more than one period. Components that change by
    /// less than 10⁻⁶ of the step's largest are rounding, not drift, and do
    /// not bound the move.
    pub(super) fn jump(
        &mut self,
        step: &[f64],
        contacts: &[&crate::model::Contact],
        locals: &mut [Local],
        mu: &[f64],
        w: &[f64],
        velocity: &mut DVector<f64>,
    ) {
        let size = step.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        let floor = 1e-6 * size;
        let mut t = f64::INFINITY;
        let mut offset = 0;
        for (l, &mu) in locals.iter().zip(mu) {
            let width = l.k + 2;
            let d = &step[offset..offset + width];
            let z = l.z.iter().copied().chain(std::iter::once(l.lambda));
            for (z, &d) in z.zip(d) {
                if d < -floor {
                    t = t.min(z / -d);
                }
            }
            let zeta = mu * l.z[0] - l.z[1..].iter().sum::<f64>();
            let dzeta = mu * d[0] - d[1..=l.k].iter().sum::<f64>();
            if dzeta < -floor {
                t = t.min(zeta.max(0.0) / -dzeta);
            }
            offset += width;
        }
        self.clear();
        if !(t.is_finite() && t > 1.0) {
            return;
        }
        let mut offset = 0;
        let mut moved = Vec::new();
        for (c, l) in contacts.iter().zip(locals.iter_mut()) {
            let width = l.k + 2;
            let d = &step[offset..offset + width];
            moved.clear();
            for (z, &d) in l.z.iter_mut().zip(d) {
                let next = (*z + t * d).max(0.0);
                moved.push(next - *z);
                *z = next;
            }
            l.lambda = (l.lambda + t * d[l.k + 1]).max(0.0);
            add_impulse(&c.jacobian, &moved, 1.0, w, velocity);
            offset += width;
        }
    }
}

/// NSGS on the pyramid: the (k + 2)-unknown blocks of (29) by Lemke.
pub(super) fn solve_pyramid(
    problem: &ContactProblem<'_>,
    w: &[f64],
    warm: &LastImpulses,
    limits: NsgsOptions,
    workspace: &mut Workspace,
) -> NsgsSolution {
    let contacts = problem.contacts;
    let layout = Layout::of(contacts);
    let starts = friction_starts(contacts);
    let mut part = Participation::of(problem, &mut workspace.waiting);
    let mut locals: Vec<Local> = contacts
        .iter()
        .enumerate()
        .map(|(j, c)| {
            let jac = &c.jacobian;
            let k = jac.friction_count();
            // The block's order is (29)'s: β (rows 1..=k), c (row 0), λ.
            let row_of = |i: usize| if i < k { i + 1 } else { 0 };
            let mut block = DMatrix::zeros(k + 2, k + 2);
            for a in 0..=k {
                for b in 0..=k {
                    block[(a, b)] = jac.coupling(row_of(a), jac, row_of(b), w);
                }
            }
            for i in 0..k {
                block[(i, k + 1)] = 1.0;
                block[(k + 1, i)] = -1.0;
            }
            block[(k + 1, k)] = problem.mu[j];
            let diagonal = (0..=k).map(|r| jac.coupling(r, jac, r, w)).collect();
            let mut terms = vec![problem.normal_terms[j]; 1];
            terms.extend((0..k).map(|i| {
                problem
                    .friction_terms
                    .get(starts[j] + i)
                    .copied()
                    .unwrap_or(0.0)
            }));
            let z = if part.active[j] {
                warm_impulse(warm, c)
            } else {
                vec![0.0; k + 1]
            };
            Local {
                k,
                block,
                q: DVector::zeros(k + 2),
                diagonal,
                terms,
                z,
                lambda: 0.0,
            }
        })
        .collect();

    // v = v* + W J z for the starting impulses.
    let mut velocity = problem.free.clone();
    for (c, local) in contacts.iter().zip(&locals) {
        add_impulse(&c.jacobian, &local.z, 1.0, w, &mut velocity);
    }
    // As on the cone, contacts the warm start's velocity closes join before
    // the first sweep, from their last impulses ([`WARM_GROWTH_ROUNDS`]).
    let mut joined = Vec::new();
    for _ in 0..WARM_GROWTH_ROUNDS {
        part.grow(Velocity::reading(&velocity), &mut joined, None);
        if joined.is_empty() {
            break;
        }
        for j in joined.drain(..) {
            let c = contacts[j];
            locals[j].z = warm_impulse(warm, c);
            add_impulse(&c.jacobian, &locals[j].z, 1.0, w, &mut velocity);
        }
    }

    let mut status = LcpStatus::SweepLimit;
    let mut residual = f64::INFINITY;
    let mut sweeps = 0;
    let local_options = LemkeOptions::default();
    let mut drift = Drift::default();
    let mut best = Best::default();
    while sweeps < limits.max_sweeps && !crate::lcp::budget::cancelled() {
        sweeps += 1;
        for ((c, local), _) in contacts
            .iter()
            .zip(locals.iter_mut())
            .zip(&part.active)
            .filter(|(_, on)| **on)
        {
            let jac = &c.jacobian;
            let k = local.k;
            // v⁻ʲ: the velocity without this contact's own impulse.
            add_impulse(jac, &local.z, -1.0, w, &mut velocity);
            let q = &mut local.q;
            for i in 0..k {
                q[i] = jac.dot(i + 1, &velocity) + local.terms[i + 1];
            }
            q[k] = jac.dot(0, &velocity) + local.terms[0];
            let solution = lcp::solve_dense(&local.block, q, &local_options);
            if let Ok(s) = solution
                && s.status == LcpStatus::Solved
            {
                local.z[0] = s.z[k].max(0.0);
                for i in 0..k {
                    local.z[i + 1] = s.z[i].max(0.0);
                }
                local.lambda = s.z[k + 1].max(0.0);
            }
            // A local failure (only from non-finite data) keeps the last
            // impulse; the residual reports it.
            add_impulse(jac, &local.z, 1.0, w, &mut velocity);
        }
        residual = natural_residual(problem, &locals, &part.active, &velocity);
        if residual < best.residual {
            best.keep(residual, &locals, &part.active, &velocity);
        }
        joined.clear();
        part.grow(Velocity::reading(&velocity), &mut joined, None);
        let grew = !joined.is_empty();
        if residual <= limits.residual_tolerance && !grew {
            status = LcpStatus::Solved;
            break;
        }
        if grew {
            drift.clear();
        } else if let Some(step) = drift.record(&locals, &part.active) {
            drift.jump(&step, contacts, &mut locals, problem.mu, w, &mut velocity);
        }
    }
    if status == LcpStatus::SweepLimit && best.residual < residual {
        best.restore(&mut locals, &mut part.active, &mut velocity);
        residual = best.residual;
    }
    if !residual.is_finite() {
        status = LcpStatus::NumericalFailure;
    }

    let mut z = DVector::zeros(layout.size());
    let mut wv = DVector::zeros(layout.size());
    for (j, (c, local)) in contacts.iter().zip(&locals).enumerate() {
        let (rows, zeta) = local_w(&c.jacobian, local, &velocity, problem.mu[j]);
        z[layout.normal(j)] = local.z[0];
        wv[layout.normal(j)] = rows[0];
        for i in 0..local.k {
            z[starts[j] + i] = local.z[i + 1];
            wv[starts[j] + i] = rows[i + 1];
        }
        z[layout.lambda(j)] = local.lambda;
        wv[layout.lambda(j)] = zeta;
    }
    NsgsSolution {
        status,
        residual,
        sweeps,
        z,
        w: wv,
        velocity_change: velocity - problem.free,
        active: part.result(),
    }
}

/// ρ of the module documentation.
pub(super) fn natural_residual(
    problem: &ContactProblem<'_>,
    locals: &[Local],
    active: &[bool],
    velocity: &DVector<f64>,
) -> f64 {
    let mut worst: f64 = 0.0;
    let mut size: f64 = 0.0;
    for (j, (c, local)) in problem.contacts.iter().zip(locals).enumerate() {
        if !active[j] {
            continue;
        }
        let (rows, zeta) = local_w(&c.jacobian, local, velocity, problem.mu[j]);
        for (r, (&z, &wr)) in local.z.iter().zip(&rows).enumerate() {
            let d = local.diagonal[r].max(f64::MIN_POSITIVE);
            worst = worst.max(z.min(wr / d).abs());
            size = size.max(z.abs());
        }
        let dn = local.diagonal[0].max(f64::MIN_POSITIVE);
        worst = worst.max((local.lambda / dn).min(zeta).abs());
        if !(worst.is_finite() && size.is_finite()) {
            return f64::INFINITY;
        }
    }
    if size == 0.0 {
        // No impulse anywhere: ρ is the largest approach velocity, as impulse.
        return worst;
    }
    worst / size
}
