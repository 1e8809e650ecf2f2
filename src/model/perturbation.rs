//! A hand on a body: a spring–damper that pulls a point fixed in a body
//! toward a target point in the world (the viewer's mouse perturbation, as in
//! MuJoCo's `simulate`).
//!
//! The force F = k (x_target − p) − c ṗ acts at the grab point p, so the body
//! also feels the torque (p − x_com) × F. It is evaluated once per step, at
//! the state the step starts from ([`super::RigidSystem::hold_perturbation`],
//! which the simulation calls before each step), and held constant through
//! the step as an external load: every scheme then receives the same force in
//! its force term (k of Stewart–Trinkle (25), Moreau–Jean's h·f, k₁ of
//! Anitescu–Potra (26)), explicit in all of them. With the stiffness scaled
//! by the body's mass (k = κ m) the translational mode has ω = √κ whatever
//! the body weighs, so light and heavy bodies follow alike; the explicit
//! spring is stable while h·ω stays well below 2.

use nalgebra::Vector3;
use serde::{Deserialize, Serialize};

/// A spring–damper from a point of a body to a target point in the world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Perturbation {
    /// The body pulled (index into the rigid system's bodies).
    pub body: usize,
    /// The grab point in the body's axes, relative to its centre of mass, m.
    pub grab: Vector3<f64>,
    /// Where the grab point is pulled to, world frame, m (z ignored in the
    /// plane).
    pub target: Vector3<f64>,
    /// Spring stiffness k, N/m.
    pub stiffness: f64,
    /// Damping c on the grab point's velocity, N·s/m.
    pub damping: f64,
}

impl Perturbation {
    /// The default spring rate κ = k/m, 1/s² (ω = 10 rad/s: the body follows
    /// the cursor within a few tenths of a second; gravity sags it by g/κ).
    pub const DEFAULT_RATE: f64 = 100.0;

    /// The slider's range of κ, 1/s².
    pub const RATE_RANGE: (f64, f64) = (1.0, 2500.0);

    /// A perturbation of a body of mass `mass` (kg) with the spring rate
    /// `rate` = κ = k/m (1/s²): k = κ m and c = 2 √κ m, critical damping of
    /// the body's translation along the spring.
    pub fn with_rate(
        body: usize,
        mass: f64,
        grab: Vector3<f64>,
        target: Vector3<f64>,
        rate: f64,
    ) -> Self {
        Self {
            body,
            grab,
            target,
            stiffness: rate * mass,
            damping: 2.0 * rate.sqrt() * mass,
        }
    }
}

/// A perturbation evaluated at a state: where it pulls and how hard.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerturbationForce {
    /// The body pulled.
    pub body: usize,
    /// The grab point in the world, m.
    pub point: Vector3<f64>,
    /// The target point in the world, m.
    pub target: Vector3<f64>,
    /// The force on the body at `point`, world frame, N.
    pub force: Vector3<f64>,
}
