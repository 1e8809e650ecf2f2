//! Each body's pose at q, computed once a search: a configuration's
//! quaternion is normalized and turned into a matrix once per body instead
//! of once per pair and per contact (a grain of the 1,000-grain silo is in
//! about nine candidate pairs of a search).

use crate::model::RigidSystem;
use nalgebra::{DVector, Matrix3, UnitQuaternion, Vector3};

/// Body i's pose at q: [`RigidSystem::position`], [`RigidSystem::rotation`]
/// and the rotation's matrix transposed (world axes into body axes), each
/// computed as those functions and nalgebra compute them, so that a search
/// from these gives the same bits as one from q.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    /// Centre of mass, m.
    pub x: Vector3<f64>,
    /// Orientation.
    pub rotation: UnitQuaternion<f64>,
    /// Rᵀ: a world vector in the body's axes.
    pub to_body: Matrix3<f64>,
}

/// Every body's [`Pose`] at q, in body order, into `out` (replaced).
pub fn poses_into(system: &RigidSystem, q: &DVector<f64>, out: &mut Vec<Pose>) {
    out.clear();
    out.extend((0..system.bodies.len()).map(|i| {
        let rotation = system.rotation(q, i);
        Pose {
            x: system.position(q, i),
            rotation,
            to_body: rotation.to_rotation_matrix().matrix().transpose(),
        }
    }));
}
