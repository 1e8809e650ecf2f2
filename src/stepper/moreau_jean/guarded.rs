//! Moreau–Jean's guarded midpoint and end ([`crate::stepper::guard`]): the
//! contacts the step's half-steps take past their depth, found and lifted
//! back, and the nearest end gap the step considered.

use super::Scratch;
use crate::model::{Contact, MassInverse, Model, Other, RigidSystem};
use crate::stepper::guard::Guard;
use crate::stepper::settings::StepSettings;
use crate::stepper::step::Step;
use nalgebra::DVector;

/// How deep below its floor a contact may be taken before the guard lifts
/// it, and how far open it may be and still count as touching:
/// [`StepSettings::guard_depth`] of the smaller bounding radius of its two
/// bodies, and at least [`StepSettings::touching`]·max(L, 1 m).
#[derive(Clone, Copy)]
pub(super) struct Depths<'a> {
    system: &'a RigidSystem,
    share: f64,
    least: f64,
}

impl<'a> Depths<'a> {
    /// The depths of a rigid model with a diagonal M⁻¹ (returned with
    /// them), or `None` for a model that is not guarded (a linear system:
    /// its affine gaps have no thickness to pass).
    pub(super) fn of(
        model: &'a Model,
        settings: &StepSettings,
    ) -> Option<(Self, &'a DVector<f64>)> {
        match (model, model.mass_inverse_form()) {
            (Model::Rigid(system), MassInverse::Diagonal(inverse)) => Some((
                Self {
                    system,
                    share: settings.guard_depth,
                    least: settings.touching * model.length_scale().max(1.0),
                },
                inverse,
            )),
            _ => None,
        }
    }

    /// Body i's share of a pair's depth, m.
    fn body(&self, i: usize) -> f64 {
        self.share * self.system.bodies[i].shape.bounding_radius()
    }

    /// The depth of `contact`'s pair, m.
    pub(super) fn pair(&self, contact: &Contact) -> f64 {
        let other = match contact.id.b {
            Other::Body(j) => self.body(j),
            _ => f64::INFINITY,
        };
        self.body(contact.id.a).min(other).max(self.least)
    }
}

/// The deepest overlap a contact of `model` may have in a state that
/// Moreau–Jean's steps produced, m, for a snapshot's check
/// ([`crate::sim::snapshot`]): twice the guard's depth of its pair. A step
/// leaves a contact at most that depth deep (within the lift's tolerance, a
/// thousandth of it) unless it was deeper before the step, so the same
/// depth again covers the lifts that stop short of their tolerance. `None`
/// for a model the guards do not hold ([`Depths::of`]).
pub(crate) fn kept_overlap<'a>(
    model: &'a Model,
    settings: &StepSettings,
) -> Option<impl Fn(&Contact) -> f64 + 'a> {
    let (depths, _) = Depths::of(model, settings)?;
    Some(move |c: &Contact| 2.0 * depths.pair(c))
}

/// The midpoint's guard: the lift of q^A + (h/2)u^A that brings every
/// contact the first half-step takes deeper than
/// [`StepSettings::guard_depth`] below min(g(q^A), 0) back to it, or `None`
/// when there is none.
pub(super) fn guard_midpoint(step: &mut Step<'_>, h: f64) -> Option<DVector<f64>> {
    let (model, state, settings) = (step.model, step.state, step.settings);
    step.scratch.get::<Scratch>().searched = false;
    let (depths, inverse) = Depths::of(model, settings)?;
    let system = depths.system;
    let bodies = 0..system.bodies.len();
    // Two bodies close by at most the sum of their point speeds times h/2:
    // nothing to look for while no body moves by the least depth of a pair.
    let least = bodies
        .clone()
        .map(|i| depths.body(i))
        .fold(f64::INFINITY, f64::min);
    let moving = |i: usize| !system.is_fixed(i);
    if h.is_nan()
        || h <= 0.0
        || !bodies
            .clone()
            .any(|i| moving(i) && h * system.point_speed(&state.v, i) > least)
    {
        return None;
    }
    // Each body's reach over the half-step, (h/2)·2·(point speed), and the
    // pairs already touching; then grown by what a lift moves it.
    let sc = step.scratch.get::<Scratch>();
    let v = &state.v;
    sc.lifted.clear();
    sc.lifted.resize(system.bodies.len(), 0.0);
    let mut lift = None;
    for search in 0..GUARD_SEARCHES {
        let lifted = &sc.lifted;
        sc.reaches.set(depths.least, system.bodies.len(), |i| {
            if moving(i) {
                h * system.point_speed(v, i) + lifted[i]
            } else {
                0.0
            }
        });
        if search > 0 {
            sc.searched_before.clear();
            sc.searched_before
                .extend(sc.start.as_slice().iter().map(|c| (c.id, c.gap.to_bits())));
        }
        // The lift reads the normal rows alone.
        step.geometry
            .normal_contacts(&state.q, sc.reaches.margin(), &mut sc.start);
        sc.searched = true;
        let base = |c: &Contact| c.gap + 0.5 * h * c.jacobian.normal_dot(v);
        let floor = |c: &Contact| c.gap.min(0.0);
        let depth = |c: &Contact| depths.pair(c);
        let tolerance = 1e-3 * depths.least;
        if search > 0 {
            // The last lift stands unless it takes a contact this search
            // adds (or finds at another gap) below its target: then no
            // lift is taken again.
            let before = &sc.searched_before;
            let added = sc
                .start
                .as_slice()
                .iter()
                .filter(|c| before.get(&c.id) != Some(&c.gap.to_bits()));
            let holds = lift
                .as_ref()
                .is_some_and(|delta| Guard::holds(added, base, floor, depth, delta, tolerance));
            if holds {
                break;
            }
            // A search further out finds nearly the same contacts: the
            // lift starts from the last one's impulses.
            sc.guard.start_next_from_last();
        }
        sc.guard.threads = settings.threads;
        lift = sc
            .guard
            .lift(sc.start.as_slice(), base, floor, depth, inverse, tolerance);
        // A lift pushes bodies on through the contacts it lifts: a grain
        // at rest under a falling one moves with it, by more than its own
        // reach, towards contacts the search did not look for (a wall
        // beside it, which it would then end the half-step inside). The
        // reach covers the half-step's own travel (h/2)·(point speed)
        // twice; a body whose lift outruns the other half (and what was
        // added for its lift) is searched again with twice its lift added,
        // and the lift is taken again with those contacts held too unless
        // it already holds them.
        let Some(delta) = &lift else { break };
        let mut outran = false;
        for i in bodies.clone().filter(|&i| moving(i)) {
            let moved = system.point_speed(delta, i);
            if moved > 0.5 * h * system.point_speed(v, i) + sc.lifted[i] {
                outran = true;
                sc.lifted[i] = sc.lifted[i].max(2.0 * moved);
            }
        }
        if !outran || search + 1 == GUARD_SEARCHES {
            break;
        }
    }
    lift
}

/// Searches of the guard, at most: the first at each body's own reach, the
/// others grown by the lift ([`guard_midpoint`]).
const GUARD_SEARCHES: usize = 4;

/// The end's guard: the lift of q^E that brings every contact the step
/// took deeper, ending deeper than [`StepSettings::guard_depth`], back to
/// the lesser of its gap at q^A and minus that depth, or `None` when there
/// is none. On velocity level a contact the solve holds within its
/// tolerance still sinks by h times the normal velocity it leaves, step
/// after step (NSGS at a relative residual of 1e-3: 5–15 µm a step under a
/// resting grain); the end's guard stops that creep at the depth the
/// midpoint's guard allows, and moves positions only, as that one does.
///
/// The end gaps are those of the candidates at q^M, linear in the step's
/// displacement along their normal rows there: gᴱ = g(q^M) + (h/2)γ_N(u^E).
/// The gap at q^A is linear too, gᴬ = g(q^M) − γ_N((h/2)u^A + δᴹ) with δᴹ
/// the midpoint's lift, except where it is past the depth and so is the
/// contact's floor: there it is the gap the midpoint's search at q^A found
/// this step, when it found one. Between convex bodies a linear gap is
/// deeper than the true one by about |Δ_t|²/(2d) for a tangential
/// displacement Δ_t at a distance d (0.08 mm for a grain passing another
/// at 1 m/s over a half-step of 2.5 ms), and as a floor it let such a
/// contact sink by that much a step. A contact that the step did not take
/// deeper, or that ends within the depth, is left alone; one that was
/// already deeper at q^A (an overlap of the scene, or of a hand) is kept
/// from going deeper, not pushed apart.
pub(super) fn guard_end(
    step: &mut Step<'_>,
    h: f64,
    mid_lift: Option<&DVector<f64>>,
    u_end: &DVector<f64>,
) -> Option<DVector<f64>> {
    let (model, state, settings) = (step.model, step.state, step.settings);
    let (depths, inverse) = Depths::of(model, settings)?;
    if h.is_nan() || h <= 0.0 {
        return None;
    }
    let u_start = &state.v;
    let sc = step.scratch.get::<Scratch>();
    let end = |c: &Contact| c.gap + 0.5 * h * c.jacobian.normal_dot(u_end);
    let linear = |c: &Contact| {
        c.gap
            - 0.5 * h * c.jacobian.normal_dot(u_start)
            - mid_lift.map_or(0.0, |d| c.jacobian.normal_dot(d))
    };
    // A start gap decides a floor only where it is past the depth: those
    // contacts' gaps at q^A, from the midpoint's search there this step,
    // by identity, else the deepest of their pair's (a grain that slid from
    // a box's face onto its edge), else none: a pair the search, which
    // takes every pair within its bodies' reach, did not find was open.
    sc.true_start.clear();
    sc.pair_start.clear();
    if sc.searched {
        for c in sc.candidates.as_slice() {
            if linear(c) < -depths.pair(c) {
                sc.true_start.insert(c.id, f64::NAN);
                sc.pair_start.insert((c.id.a, c.id.b), f64::INFINITY);
            }
        }
        if !sc.true_start.is_empty() {
            for c in sc.start.as_slice() {
                if let Some(gap) = sc.true_start.get_mut(&c.id) {
                    *gap = c.gap;
                }
                if let Some(gap) = sc.pair_start.get_mut(&(c.id.a, c.id.b)) {
                    *gap = gap.min(c.gap);
                }
            }
        }
    }
    let (searched, true_start, pair_start) = (sc.searched, &sc.true_start, &sc.pair_start);
    let floor = |c: &Contact| {
        let depth = -depths.pair(c);
        let start = linear(c);
        if start >= depth || !searched {
            return start.min(depth);
        }
        let found = match true_start.get(&c.id) {
            Some(&gap) if !gap.is_nan() => gap,
            _ => pair_start
                .get(&(c.id.a, c.id.b))
                .copied()
                .unwrap_or(f64::INFINITY),
        };
        found.min(depth)
    };
    let tolerance = 1e-3 * depths.least;
    sc.guard.threads = settings.threads;
    sc.guard.lift(
        sc.candidates.as_slice(),
        end,
        floor,
        |_| tolerance,
        inverse,
        tolerance,
    )
}

/// The smallest end gap g(q^M) + (h/2)γ_N(u^E) among the candidates at
/// q^M (in the scratch) for u^E = `velocity`, m (infinite for none).
pub(super) fn nearest_end_gap(step: &mut Step<'_>, h: f64, velocity: &DVector<f64>) -> f64 {
    let sc = step.scratch.get::<Scratch>();
    sc.candidates
        .as_slice()
        .iter()
        .map(|c| c.gap + 0.5 * h * c.jacobian.normal_dot(velocity))
        .fold(f64::INFINITY, f64::min)
}
