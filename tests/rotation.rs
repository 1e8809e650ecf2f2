//! A free rigid body in space, under every stepper: its kinetic energy and
//! the magnitude of its angular momentum hold, and a spin about the
//! intermediate axis flips with the period of the closed form of Euler's
//! equations (Landau & Lifshitz, *Mechanics*, §37: Jacobi's elliptic
//! functions).

use contactlab::model::Model;
use contactlab::params::StepperKind;
use contactlab::scene;
use contactlab::sim::Simulation;
use nalgebra::{UnitQuaternion, Vector3};
use std::path::Path;

/// A box of half extents 0.1 × 0.05 × 0.02 m and 1 kg (I₁ < I₂ < I₃ about
/// x, y, z), no gravity and nothing to touch, spinning at `spin` (body
/// axes, rad/s), stepped with h = `dt` under `stepper`.
fn spinning_box(stepper: StepperKind, spin: Vector3<f64>, dt: f64) -> Simulation {
    let text = format!(
        "Scene(name: \"free box\", params: (dt: {dt}, duration: 10.0, stepper: r#{stepper}), \
         system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, 0.0), bodies: [(name: \"box\", \
         shape: Box(half_extents: (0.1, 0.05, 0.02)), mass: 1.0, position: (0.0, 0.0, 0.0), \
         angular_velocity: ({}, {}, {}))])))",
        spin.x, spin.y, spin.z
    );
    Simulation::new(scene::parse(&text, Path::new("free_box.ron")).expect("a valid scene"))
}

/// The body's principal inertia, kg·m².
fn inertia(sim: &Simulation) -> Vector3<f64> {
    match sim.model() {
        Model::Rigid(system) => system.bodies[0].inertia,
        Model::Linear(_) => unreachable!("a rigid scene"),
    }
}

/// The body-axis angular velocity ω, rad/s.
fn spin(sim: &Simulation) -> Vector3<f64> {
    let v = &sim.state.v;
    Vector3::new(v[3], v[4], v[5])
}

/// The world-frame angular momentum R I ω, N·m·s.
fn world_momentum(sim: &Simulation) -> Vector3<f64> {
    let q = &sim.state.q;
    let rotation =
        UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(q[3], q[4], q[5], q[6]));
    rotation * inertia(sim).component_mul(&spin(sim))
}

fn kinetic_energy(sim: &Simulation) -> f64 {
    0.5 * spin(sim).dot(&inertia(sim).component_mul(&spin(sim)))
}

/// Over 10 s at h = 2.5 ms, a box spinning at about 41 rad/s about a
/// generic axis: the kinetic energy never rises by more than 1e-9
/// (relative) in a step and falls by at most 0.1 % in all, and |L| in the
/// world holds within 1e-6, under each of the four steppers.
#[test]
fn a_free_box_keeps_its_energy_and_angular_momentum() {
    for stepper in StepperKind::ALL {
        let mut sim = spinning_box(stepper, Vector3::new(10.0, -40.0, 7.0), 0.0025);
        let (energy, momentum) = (kinetic_energy(&sim), world_momentum(&sim).norm());
        let mut last = energy;
        for step in 0..4000 {
            sim.step().expect("a free body's step");
            let now = kinetic_energy(&sim);
            let rise = (now - last) / last;
            assert!(
                rise <= 1e-9,
                "{stepper}: energy rose by {rise:e} in step {step}"
            );
            last = now;
        }
        let drift = (world_momentum(&sim).norm() - momentum).abs() / momentum;
        let fall = (energy - last) / energy;
        assert!(fall <= 1e-3, "{stepper}: energy fell by {fall:e} over 10 s");
        assert!(
            drift <= 1e-6,
            "{stepper}: |L| changed by {drift:e} over 10 s"
        );
    }
}

/// K(k), the complete elliptic integral of the first kind of modulus k, by
/// the arithmetic–geometric mean: K = π / (2 AGM(1, √(1 − k²))).
fn complete_elliptic_k(modulus_squared: f64) -> f64 {
    let (mut a, mut b) = (1.0_f64, (1.0 - modulus_squared).sqrt());
    while (a - b).abs() > 1e-15 * a {
        (a, b) = (0.5 * (a + b), (a * b).sqrt());
    }
    std::f64::consts::PI / (2.0 * a)
}

/// The period of ω(t) of a free body with principal inertia I₁ < I₂ < I₃,
/// energy E and momentum L (Landau & Lifshitz §37): with L² > 2EI₂,
/// T = 4K(k) √(I₁I₂I₃ / ((I₃ − I₂)(L² − 2EI₁))) and
/// k² = (I₂ − I₁)(2EI₃ − L²) / ((I₃ − I₂)(L² − 2EI₁)); with L² < 2EI₂ the
/// same with I₁ and I₃ exchanged.
fn euler_period(inertia: Vector3<f64>, energy: f64, momentum_squared: f64) -> f64 {
    let (mut i1, i2, mut i3) = (inertia.x, inertia.y, inertia.z);
    if momentum_squared < 2.0 * energy * i2 {
        std::mem::swap(&mut i1, &mut i3);
    }
    let (e, l2) = (energy, momentum_squared);
    let k2 = (i2 - i1) * (2.0 * e * i3 - l2) / ((i3 - i2) * (l2 - 2.0 * e * i1));
    4.0 * complete_elliptic_k(k2) * (i1 * i2 * i3 / ((i3 - i2) * (l2 - 2.0 * e * i1))).sqrt()
}

/// A spin about the intermediate axis (y) with a small disturbance flips:
/// ω_y changes sign twice a period of Euler's equations. The mean time
/// between its sign changes over 10 s is half the closed form's period
/// within 1 %, under each of the four steppers.
#[test]
fn a_spin_about_the_intermediate_axis_flips_with_the_closed_form_period() {
    for stepper in StepperKind::ALL {
        let mut sim = spinning_box(stepper, Vector3::new(0.05, 8.0, 0.05), 0.0025);
        let i = inertia(&sim);
        let w = spin(&sim);
        let energy = 0.5 * w.dot(&i.component_mul(&w));
        let momentum_squared = i.component_mul(&w).norm_squared();
        let period = euler_period(i, energy, momentum_squared);
        let mut flips = Vec::new();
        let mut last = spin(&sim).y;
        for _ in 0..4000 {
            let t0 = sim.state.t;
            sim.step().expect("a free body's step");
            let now = spin(&sim).y;
            if now.signum() != last.signum() {
                // The crossing, linear between the two steps.
                flips.push(t0 + (sim.state.t - t0) * last / (last - now));
            }
            last = now;
        }
        assert!(flips.len() >= 4, "{stepper}: {} flips in 10 s", flips.len());
        let mean = (flips[flips.len() - 1] - flips[0]) / (flips.len() - 1) as f64;
        let error = (mean - 0.5 * period).abs() / (0.5 * period);
        assert!(
            error <= 0.01,
            "{stepper}: flips every {mean} s, closed form {} s ({error:e})",
            0.5 * period
        );
    }
}
