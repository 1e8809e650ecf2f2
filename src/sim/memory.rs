//! What a scene's run is estimated to need in memory at its densest, so
//! that a scene too large for the machine is refused at load in one line
//! (`--max-memory`) instead of aborting on an allocation minutes in.
//!
//! Two terms:
//! - **Linear in the bodies**: each body's own data, and the contact points
//!   it carries once the scene has packed it among its neighbours (a sphere
//!   in a random heap touches about six, so three pairs of its own and the
//!   wall or floor; a box face to face with two neighbours, four points on
//!   each face). Each point is held as a contact (its Jacobian rows over the
//!   two bodies' velocities, its frame and friction directions) and as a
//!   block of the contact problem (29) with its terms and impulses, in the
//!   copies a step keeps (candidates, active set, warm start, the solver's
//!   work space) and with the allocator's slack: [`SLACK`].
//! - **Lemke's dense blocks**: with the exact solver an island of n
//!   unknowns holds up to n² numbers, and a pile is one island: n is the
//!   scene's points times (k + 2) unknowns each.
//!
//! [`SLACK`] and [`BODY_BYTES`] are set from the peak resident memory of the
//! silo of 1,000 grains, and the Lemke term is checked against the piles of
//! 100 and 200 (`docs/benchmarks.md`, "Memory"). Bodies that fall fast
//! together hold more: contacts are looked for within each body's own
//! reach, h times its speed, so a falling column carries candidates that
//! never touch (the silo of 100,000 holds 4·10⁶ after 0.35 s).

use crate::geometry::Shape;
use crate::model::{Body, Contact, Dimension, Model};
use crate::params::{FrictionCone, Params, SolverKind};

/// Bytes any run takes: the program, the allocator's arenas, the threads.
pub const BASE_BYTES: usize = 16 << 20;

/// Bytes a body takes besides its contacts: its name, shape and inertia, its
/// coordinates in the state and in the steppers' intermediate states, its
/// broad-phase entry and its CSV columns.
pub const BODY_BYTES: usize = 3 * 1024;

/// Resident bytes per contact point over the bytes of its layout
/// ([`point_bytes`]): the copies a step holds at its peak and the
/// allocator's slack, as measured on the silo of 1,000 grains at the
/// highest peak of three runs (the same steps peak 74.7–80.7 MiB from run
/// to run: each thread's allocator arenas fill differently).
pub const SLACK: usize = 19;

/// A scene's estimated peak memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Bodies.
    pub bodies: usize,
    /// Contact points the bodies can carry when packed.
    pub points: usize,
    /// Bytes, in all.
    pub bytes: f64,
}

/// Contact points a body of this shape carries when packed among others
/// (each shared point counted once, walls and floors included).
pub fn points_when_packed(shape: &Shape) -> usize {
    match shape {
        // Three of its six neighbours' pairs, and a wall or the floor.
        Shape::Sphere { .. } => 4,
        // Two points along its core with each of three neighbours.
        Shape::Capsule { .. } => 6,
        // Four points on each of two faces.
        Shape::Box { .. } => 8,
    }
}

/// Bytes of one contact point with `k` friction directions, in one copy.
pub fn point_bytes(dimension: Dimension, k: usize) -> usize {
    let velocities = match dimension {
        Dimension::Planar => 6,
        Dimension::Spatial => 12,
    };
    let contact = std::mem::size_of::<Contact>() + 8 * velocities * (k + 1) + 24 * k;
    // The block of (29) with its terms, impulses, residual and warm start.
    let block = 8 * (k + 2) * (k + 2) + 8 * 6 * (k + 2);
    contact + block
}

/// Friction directions per contact of a run with `params`.
fn friction_directions(dimension: Dimension, params: &Params) -> usize {
    match (dimension, params.cone()) {
        (Dimension::Planar, _) | (Dimension::Spatial, FrictionCone::Circular) => 2,
        (Dimension::Spatial, FrictionCone::Pyramid) => params.edges.max(1),
    }
}

/// The estimate for `model` stepped with `params`.
pub fn estimate(model: &Model, params: &Params) -> Estimate {
    let Model::Rigid(system) = model else {
        // A linear system: a few vectors of its coordinates.
        return Estimate {
            bodies: 0,
            points: 0,
            bytes: BASE_BYTES as f64,
        };
    };
    let k = friction_directions(system.dimension, params);
    let per_point = (SLACK * point_bytes(system.dimension, k)) as f64;
    let points: usize = system
        .bodies
        .iter()
        .map(|b: &Body| points_when_packed(&b.shape))
        .sum();
    let names: usize = system.bodies.iter().map(|b| b.name.len()).sum();
    let linear =
        (BASE_BYTES + system.bodies.len() * BODY_BYTES + names) as f64 + points as f64 * per_point;
    let dense = match params.solver {
        SolverKind::Lemke => {
            let unknowns = (points * (k + 2)) as f64;
            8.0 * unknowns * unknowns
        }
        SolverKind::Nsgs => 0.0,
    };
    Estimate {
        bodies: system.bodies.len(),
        points,
        bytes: linear + dense,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::{self, granular};
    use std::path::Path;

    fn silo(n: usize) -> Estimate {
        let text = granular::silo_source(n);
        let scene = scene::parse(&text, Path::new("silo.ron")).unwrap_or_else(|e| panic!("{e}"));
        estimate(&scene.model, &scene.params)
    }

    #[test]
    fn the_estimate_grows_with_the_bodies_alone() {
        let small = silo(100);
        let large = silo(1000);
        assert_eq!(large.bodies - small.bodies, 900);
        assert_eq!(large.points - small.points, 900 * 4);
        let per_grain = (large.bytes - small.bytes) / 900.0;
        let expected =
            BODY_BYTES as f64 + 4.0 * (SLACK * point_bytes(Dimension::Spatial, 2)) as f64;
        // The names' lengths differ by a few bytes a grain.
        assert!(
            (per_grain - expected).abs() < 16.0,
            "{per_grain} vs {expected}"
        );
    }

    #[test]
    fn lemke_pays_for_its_dense_blocks() {
        let text = granular::silo_source(1000);
        let mut scene =
            scene::parse(&text, Path::new("silo.ron")).unwrap_or_else(|e| panic!("{e}"));
        let nsgs = estimate(&scene.model, &scene.params);
        scene.params.solver = SolverKind::Lemke;
        scene.params.friction_cone = Some(FrictionCone::Pyramid);
        scene.params.edges = 4;
        let lemke = estimate(&scene.model, &scene.params);
        let unknowns = (nsgs.points * 6) as f64;
        assert!(lemke.bytes - nsgs.bytes >= 8.0 * unknowns * unknowns);
    }

    #[test]
    fn more_friction_directions_cost_more() {
        assert!(point_bytes(Dimension::Spatial, 8) > point_bytes(Dimension::Spatial, 4));
        assert!(point_bytes(Dimension::Spatial, 4) > point_bytes(Dimension::Planar, 4));
    }
}
