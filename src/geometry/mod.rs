//! Shapes and the narrow phase: where two shapes touch, how far apart they are
//! and along which normal.
//!
//! Body–half-space contacts are computed analytically per feature (a sphere's
//! centre, a capsule's two end spheres, a box's corners), which makes each gap a
//! smooth function of q as Stewart–Trinkle's constraint functions f(q) ≥ 0 are.
//! Body–body contacts come from parry's contact manifolds ([`pair`]).

pub mod pair;
pub mod ray;

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

/// The shape of a rigid body, in its body frame (origin at the centre of mass).
/// In planar scenes only the x and y extents matter and the body moves in the
/// x–y plane (y up).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Shape {
    /// A sphere (a disk in the plane) of the given radius, m.
    Sphere {
        /// Radius, m.
        radius: f64,
    },
    /// A capsule: the points within `radius` of the segment from
    /// (−half_length, 0, 0) to (half_length, 0, 0) — a rod with rounded ends along
    /// the body x axis.
    Capsule {
        /// Half the length of the core segment (excluding the end caps), m.
        half_length: f64,
        /// Radius of the rod and its end caps, m.
        radius: f64,
    },
    /// A box with the given half extents along the body axes, m (z ignored in
    /// the plane).
    Box {
        /// Half extents (x, y, z), m.
        half_extents: [f64; 3],
    },
}

impl Shape {
    /// Radius of a ball about the body origin that contains the solid, m.
    pub fn bounding_radius(&self) -> f64 {
        match *self {
            Self::Sphere { radius } => radius,
            Self::Capsule {
                half_length,
                radius,
            } => half_length + radius,
            Self::Box { half_extents } => Vector3::from(half_extents).norm(),
        }
    }

    /// Radius of a disk about the body origin that contains the shape's
    /// section in the x–y plane, m (a box's z extent left out).
    pub fn planar_bounding_radius(&self) -> f64 {
        match *self {
            Self::Box { half_extents } => {
                let [hx, hy, _] = half_extents;
                (hx * hx + hy * hy).sqrt()
            }
            _ => self.bounding_radius(),
        }
    }
}

/// One contact between two shapes, in world coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairContact {
    /// The witness point on the first shape, world frame, m.
    pub point_a: Vector3<f64>,
    /// The witness point on the second shape, world frame, m.
    pub point_b: Vector3<f64>,
    /// Unit normal pointing from the second shape towards the first: moving the
    /// first shape along it opens the gap. In planar scenes z = 0.
    pub normal: Vector3<f64>,
    /// Signed distance along `normal`, m (negative when penetrating).
    pub gap: f64,
    /// A small integer naming the feature pair, stable while the shapes keep
    /// touching the same way (used to carry the active set across steps).
    pub feature: u32,
}
