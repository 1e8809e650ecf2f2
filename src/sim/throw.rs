//! The throw tool's projectile: a sphere or a box sized and weighted like
//! the scene's own bodies, launched from a point toward another.

use super::Simulation;
use crate::geometry::Shape;
use crate::model::{Dimension, Model};
use crate::scene::{BodySpec, Orientation};
use nalgebra::Vector3;

/// What the throw tool throws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Projectile {
    /// A sphere (a disk in the plane).
    #[default]
    Sphere,
    /// A cube (a square in the plane).
    Box,
}

/// A body to add to `sim` at `from` moving at `speed` (m/s) toward `toward`
/// (world frame, m; z dropped in the plane): half the median size of the
/// scene's bodies (0.05 m without any), at their median density, named
/// `thrown1`, `thrown2`, … `None` in a linear system or when the two points
/// coincide.
pub fn projectile(
    sim: &Simulation,
    kind: Projectile,
    from: Vector3<f64>,
    toward: Vector3<f64>,
    speed: f64,
) -> Option<BodySpec> {
    let Model::Rigid(system) = sim.model() else {
        return None;
    };
    let planar = system.dimension == Dimension::Planar;
    let flat = |p: Vector3<f64>| {
        if planar {
            Vector3::new(p.x, p.y, 0.0)
        } else {
            p
        }
    };
    let (from, toward) = (flat(from), flat(toward));
    let direction = (toward - from).try_normalize(1e-12)?;
    if !(speed.is_finite() && from.iter().all(|x| x.is_finite())) {
        return None;
    }
    let median = |mut values: Vec<f64>| {
        values.retain(|x| x.is_finite() && *x > 0.0);
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied()
    };
    let size = median(
        system
            .bodies
            .iter()
            .map(|b| b.shape.bounding_radius())
            .collect(),
    )
    .map_or(0.05, |r| 0.5 * r);
    let density = median(
        system
            .bodies
            .iter()
            .map(|b| b.mass / content(&b.shape, system.dimension))
            .collect(),
    );
    let shape = match kind {
        Projectile::Sphere => Shape::Sphere { radius: size },
        Projectile::Box => {
            let half = size / 3f64.sqrt();
            Shape::Box {
                half_extents: [half; 3],
            }
        }
    };
    let mass = density.map_or(1.0, |rho| rho * content(&shape, system.dimension));
    let taken = |name: &str| {
        system.bodies.iter().any(|b| b.name == name)
            || system.surfaces.iter().any(|s| s.name == name)
    };
    let name = (1..).map(|k| format!("thrown{k}")).find(|n| !taken(n))?;
    let velocity = direction * speed;
    Some(BodySpec {
        name,
        shape,
        mass,
        inertia: None,
        position: [from.x, from.y, from.z],
        orientation: Orientation::Angle(0.0),
        velocity: [velocity.x, velocity.y, velocity.z],
        angular_velocity: [0.0; 3],
        color: None,
        restitution: None,
        tangential_restitution: None,
        fixed: false,
    })
}

/// Volume (in space) or area (in the plane) of a shape, m³ or m².
fn content(shape: &Shape, dimension: Dimension) -> f64 {
    use std::f64::consts::PI;
    match (*shape, dimension) {
        (Shape::Sphere { radius }, Dimension::Spatial) => 4.0 / 3.0 * PI * radius.powi(3),
        (Shape::Sphere { radius }, Dimension::Planar) => PI * radius * radius,
        (
            Shape::Capsule {
                half_length,
                radius,
            },
            Dimension::Spatial,
        ) => PI * radius * radius * (2.0 * half_length + 4.0 / 3.0 * radius),
        (
            Shape::Capsule {
                half_length,
                radius,
            },
            Dimension::Planar,
        ) => 4.0 * half_length * radius + PI * radius * radius,
        (Shape::Box { half_extents: h }, Dimension::Spatial) => 8.0 * h[0] * h[1] * h[2],
        (Shape::Box { half_extents: h }, Dimension::Planar) => 4.0 * h[0] * h[1],
    }
}

/// Where the ray from `origin` along `direction` (physics frame) first meets
/// a body or a static surface at q: what a throw aims at. `None` when it
/// meets neither.
pub fn aim_point(
    system: &crate::model::RigidSystem,
    q: &nalgebra::DVector<f64>,
    origin: &Vector3<f64>,
    direction: &Vector3<f64>,
) -> Option<Vector3<f64>> {
    let body = system
        .ray_cast(q, origin, direction)
        .map(|hit| (hit.distance, hit.point));
    let surface = system
        .surfaces
        .iter()
        .filter_map(|s| {
            let approach = s.normal.dot(direction);
            if approach >= 0.0 {
                return None;
            }
            let t = (s.offset - s.normal.dot(origin)) / approach;
            (t >= 0.0 && t.is_finite()).then(|| (t, origin + direction * t))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0));
    [body, surface]
        .into_iter()
        .flatten()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, p)| p)
}
