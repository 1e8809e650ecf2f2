//! What the inspector shows of one body: its identity, pose, velocity and
//! kinetic energy, its contacts in the step that reached the current state
//! (the other side, the gap, the impulses and stick / slip / separating), the
//! resultant contact force and the perturbation on it. For a generalized
//! linear system, a drawing part and the coordinates it is drawn from.

use super::Simulation;
use crate::geometry::Shape;
use crate::model::{Model, Other, PerturbationForce};
use crate::stepper::ContactState;
use nalgebra::{UnitQuaternion, Vector3};

/// One contact of the inspected body.
#[derive(Debug, Clone, PartialEq)]
pub struct ContactLine {
    /// The other body's or surface's name.
    pub other: String,
    /// Gap at the end of the step, m.
    pub gap: f64,
    /// Normal impulse over the step, N·s.
    pub normal_impulse: f64,
    /// Size of the friction impulse over the step, N·s.
    pub friction_impulse: f64,
    /// Stick, slip or separating.
    pub state: ContactState,
    /// The contact force on the inspected body, averaged over the step
    /// ((c_n n̄ + Σβᵢtᵢ)/h, sign turned for the second body), world frame, N.
    pub force: Vector3<f64>,
}

/// Everything the inspector shows of a rigid body.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyReport {
    /// The body's index.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its shape.
    pub shape: Shape,
    /// Mass, kg.
    pub mass: f64,
    /// Centre of mass, world frame, m.
    pub position: Vector3<f64>,
    /// Orientation.
    pub orientation: UnitQuaternion<f64>,
    /// Velocity of the centre of mass, m/s.
    pub velocity: Vector3<f64>,
    /// Angular velocity in world axes, rad/s.
    pub angular_velocity: Vector3<f64>,
    /// ½ m v² + ½ ωᵀJω, J.
    pub kinetic_energy: f64,
    /// Its contacts in the last step.
    pub contacts: Vec<ContactLine>,
    /// The sum of its contact forces, N.
    pub resultant: Vector3<f64>,
    /// The perturbation on it, at the current state.
    pub perturbation: Option<PerturbationForce>,
}

/// Everything the inspector shows of a drawing part.
#[derive(Debug, Clone, PartialEq)]
pub struct PartReport {
    /// The part's name.
    pub name: String,
    /// Its pose (x, y, angle) in the plane, m and rad.
    pub pose: (f64, f64, f64),
    /// The coordinates its pose depends on: (name, q, v).
    pub coordinates: Vec<(String, f64, f64)>,
}

/// The inspector's view of body `index` (`None` in a linear system or past
/// the last body).
pub fn body(sim: &Simulation, index: usize) -> Option<BodyReport> {
    let Model::Rigid(system) = sim.model() else {
        return None;
    };
    let body = system.bodies.get(index)?;
    let (q, v) = (&sim.state.q, &sim.state.v);
    if q.len() != system.config_size() || v.len() != system.dof() {
        return None;
    }
    let block = system.block(index);
    let mass = system.mass_diagonal();
    let kinetic_energy = (block.start..block.start + block.len)
        .map(|k| 0.5 * mass[k] * v[k] * v[k])
        .sum();
    let h = sim.params.dt;
    let mut contacts = Vec::new();
    for c in sim.last.iter().flat_map(|r| &r.contacts) {
        let sign = if c.id.a == index {
            1.0
        } else if c.id.b == Other::Body(index) {
            -1.0
        } else {
            continue;
        };
        let other = if sign > 0.0 {
            system.other_name(c.id.b)
        } else {
            system.other_name(Other::Body(c.id.a))
        }
        .unwrap_or("?")
        .to_owned();
        let normal = c.frame.as_ref().map_or(Vector3::zeros(), |f| f.normal);
        let impulse = normal * c.normal_impulse + c.friction_impulse;
        contacts.push(ContactLine {
            other,
            gap: c.gap,
            normal_impulse: c.normal_impulse,
            friction_impulse: c.friction_impulse.norm(),
            state: c.state,
            force: impulse * (sign / h),
        });
    }
    let resultant = contacts.iter().map(|c| c.force).sum();
    let perturbation = system.perturbation_force(q, v).filter(|p| p.body == index);
    Some(BodyReport {
        index,
        name: body.name.clone(),
        shape: body.shape,
        mass: body.mass,
        position: system.position(q, index),
        orientation: system.rotation(q, index),
        velocity: system.linear_velocity(v, index),
        angular_velocity: system.angular_velocity(q, v, index),
        kinetic_energy,
        contacts,
        resultant,
        perturbation,
    })
}

/// The inspector's view of drawing part `index`.
pub fn part(sim: &Simulation, index: usize) -> Option<PartReport> {
    let part = sim.scene.drawing.get(index)?;
    let names = crate::scene::drawing::coordinate_names(sim.model());
    let mut used: Vec<usize> = [&part.x, &part.y, &part.angle]
        .iter()
        .flat_map(|a| a.gains.iter().map(|&(i, _)| i))
        .collect();
    used.sort_unstable();
    used.dedup();
    // q and v are indexed alike in a linear system and for planar bodies
    // (x, y, θ); a spatial body's quaternion has no velocity of its own.
    let velocity_of = |i: usize| {
        if sim.model().is_planar() {
            sim.state.v.get(i).copied().unwrap_or(f64::NAN)
        } else {
            f64::NAN
        }
    };
    Some(PartReport {
        name: part.name.clone(),
        pose: part.pose(&sim.state.q),
        coordinates: used
            .into_iter()
            .map(|i| {
                (
                    names.get(i).cloned().unwrap_or_default(),
                    sim.state.q.get(i).copied().unwrap_or(f64::NAN),
                    velocity_of(i),
                )
            })
            .collect(),
    })
}
