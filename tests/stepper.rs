//! The Stewart–Trinkle stepper against the paper's numbers (§4), closed forms
//! and the dissipation inequality (24).

mod common;

use contactlab::model::{Model, Other};
use contactlab::scene::{self, Scene};
use contactlab::sim::Simulation;
use contactlab::stepper::ContactState;

fn rigid(sim: &Simulation) -> &contactlab::model::RigidSystem {
    match sim.model() {
        Model::Rigid(s) => s,
        Model::Linear(_) => panic!("expected a rigid scene"),
    }
}

#[test]
fn rod_impacts_at_the_papers_times_and_comes_to_rest() {
    let mut sim = common::load_simulation("rod.ron");
    assert_eq!(sim.params.dt, 0.0025);
    let (mut first, mut second, mut rest) = (None, None, None);
    let mut deepest = f64::INFINITY;
    common::run(&mut sim, 1.0, |sim, report| {
        for c in &report.contacts {
            if c.normal_impulse > 0.0 {
                let end = c.id.feature;
                if first.is_none() {
                    first = Some((report.t, end));
                } else if second.is_none() && first.is_some_and(|(_, e)| e != end) {
                    second = Some(report.t);
                }
            }
            deepest = deepest.min(c.gap);
        }
        deepest = deepest.min(report.min_gap);
        if rest.is_none() && second.is_some() && sim.state.v.amax() < 1e-3 {
            rest = Some(report.t);
        }
    });
    let (t1, _) = first.expect("the rod hits the table");
    let t2 = second.expect("the other end hits");
    let t3 = rest.expect("the rod comes to rest");
    assert!(
        (0.37..=0.40).contains(&t1),
        "first impact at {t1} (paper: 0.383)"
    );
    assert!(
        (0.53..=0.57).contains(&t2),
        "other end at {t2} (paper: 0.548)"
    );
    assert!(t3 < 0.65, "at rest from {t3}");
    assert!(deepest >= -1e-6, "deepest gap {deepest}");
}

#[test]
fn four_balls_hit_table_then_line_and_pass_momentum_down() {
    let mut sim = common::load_simulation("four_balls.ron");
    let (mut table, mut line) = (None, None);
    common::run(&mut sim, 1.5, |_, report| {
        for c in report.contacts.iter().filter(|c| c.normal_impulse > 0.0) {
            match (c.id.a, c.id.b) {
                (0, Other::Surface(_)) if table.is_none() => table = Some(report.t),
                (0, Other::Body(1)) if line.is_none() => line = Some(report.t),
                _ => {}
            }
        }
    });
    let table = table.expect("ball1 lands");
    let line = line.expect("ball1 hits ball2");
    assert!(
        (0.41..=0.44).contains(&table),
        "table at {table} (paper 0.42)"
    );
    assert!((0.56..=0.62).contains(&line), "line at {line} (paper 0.59)");
    let s = rigid(&sim);
    let vx = |i: usize| s.linear_velocity(&sim.state.v, i).x;
    // Every ball of the line was set moving forward, the last one most of all.
    for i in 1..4 {
        assert!(vx(i) > 0.05, "ball{} vx = {}", i + 1, vx(i));
    }
    assert!(vx(3) > vx(1), "momentum travels down the line");
}

/// Velocities of the four-ball scene sampled every 0.02 s up to 1 s.
fn four_ball_velocities(h: f64) -> Vec<nalgebra::DVector<f64>> {
    let mut scene = common::load_scene("four_balls.ron");
    scene.params.dt = h;
    let mut sim = Simulation::new(scene);
    let every = (0.02 / h).round() as usize;
    let mut out = vec![sim.state.v.clone()];
    let mut count = 0;
    common::run(&mut sim, 1.0, |sim, _| {
        count += 1;
        if count % every == 0 {
            out.push(sim.state.v.clone());
        }
    });
    out
}

#[test]
fn four_balls_velocity_error_shrinks_like_h() {
    // Paper Table 1: ∫‖vʰ − v‖∞ dt against h = 0.00125, roughly order h.
    let reference = four_ball_velocities(0.00125);
    let error = |h: f64| {
        let v = four_ball_velocities(h);
        v.iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).amax() * 0.02)
            .sum::<f64>()
    };
    let errors: Vec<f64> = [0.02, 0.01, 0.005, 0.0025]
        .iter()
        .map(|&h| error(h))
        .collect();
    println!("velocity errors {errors:?}");
    for pair in errors.windows(2) {
        assert!(pair[1] < pair[0], "error must shrink with h: {errors:?}");
    }
    // Order h: halving h three times divides the error by about 8 (≥ 4 here,
    // as the paper's own table gives 7.2).
    assert!(errors[0] / errors[3] > 4.0, "{errors:?}");
}

#[test]
fn sliding_ball_rolls_from_t_star_at_five_sevenths_speed() {
    let mut sim = common::load_simulation("ball_roll.ron");
    let (v0, mu, g, r) = (2.0, sim.params.mu, 9.81, 0.1);
    let t_star = 2.0 * v0 / (7.0 * mu * g);
    let mut rolling_from = None;
    let mut edge_aligned = true;
    common::run(&mut sim, 0.6, |sim, report| {
        let s = rigid(sim);
        let v = s.linear_velocity(&sim.state.v, 0);
        let w = s.angular_velocity(&sim.state.q, &sim.state.v, 0);
        let slip = v.x - w.y * r;
        if rolling_from.is_none() && slip.abs() < 1e-6 {
            rolling_from = Some(report.t);
        }
        for c in &report.contacts {
            if c.state == ContactState::Slip {
                // Sliding along +x, the friction impulse is along −x, a pyramid edge.
                let f = c.friction_impulse;
                edge_aligned &= f.y.abs() < 1e-9 * f.norm().max(1e-300) && f.x < 0.0;
            }
        }
    });
    let t = rolling_from.expect("the ball starts rolling");
    assert!(
        (t - t_star).abs() < 0.02 * t_star,
        "rolls from {t}, t* = {t_star}"
    );
    let speed = rigid(&sim).linear_velocity(&sim.state.v, 0).x;
    assert!(
        (speed - 5.0 * v0 / 7.0).abs() < 0.02 * 5.0 * v0 / 7.0,
        "speed {speed}"
    );
    assert!(
        edge_aligned,
        "friction opposes the slide along a pyramid edge"
    );
}

/// The incline scene with angle α and friction μ (the box sits flat on it).
fn incline(alpha: f64, mu: f64) -> Scene {
    common::incline(alpha, mu, "")
}

#[test]
fn box_on_incline_sticks_below_and_slides_above_the_friction_angle() {
    let g = 9.81;
    for (alpha_deg, mu) in [(20.0_f64, 0.5), (30.0, 0.7), (10.0, 0.3)] {
        let alpha = alpha_deg.to_radians();
        assert!(alpha.tan() < mu);
        let mut sim = Simulation::new(incline(alpha, mu));
        let start = sim.state.q.clone();
        common::run(&mut sim, 1.0, |_, _| {});
        let moved = (&sim.state.q - &start).rows(0, 2).norm();
        assert!(moved < 1e-6, "α = {alpha_deg}°, μ = {mu}: moved {moved}");
    }
    for (alpha_deg, mu) in [(30.0_f64, 0.3), (40.0, 0.5), (25.0, 0.1)] {
        let alpha = alpha_deg.to_radians();
        assert!(alpha.tan() > mu);
        let expected = g * (alpha.sin() - mu * alpha.cos());
        let mut sim = Simulation::new(incline(alpha, mu));
        let (x0, y0) = (sim.state.q[0], sim.state.q[1]);
        common::run(&mut sim, 1.0, |_, _| {});
        let down = -(sim.state.q[0] - x0) * alpha.cos() - (sim.state.q[1] - y0) * alpha.sin();
        let t = sim.state.t;
        let measured = 2.0 * down / (t * t);
        assert!(
            (measured - expected).abs() < 0.01 * expected,
            "α = {alpha_deg}°, μ = {mu}: a = {measured}, expected {expected}"
        );
    }
}

/// Total energy never rises by more than 1e-9 (relative) from a step to the next
/// when no external work is done (Stewart–Trinkle (24)).
fn assert_dissipative(name: &str) {
    let mut sim = common::load_simulation(name);
    let (k, p) = sim.energy();
    let mut previous = k + p;
    let scale = previous.abs().max(1.0);
    let duration = sim.params.duration;
    let mut worst: f64 = 0.0;
    common::run(&mut sim, duration, |_, report| {
        let now = report.kinetic_energy + report.potential_energy;
        worst = worst.max((now - previous) / scale);
        previous = now;
    });
    assert!(
        worst <= 1e-9,
        "{name}: energy rose by {worst} (relative) in one step"
    );
}

#[test]
fn rod_is_dissipative() {
    assert_dissipative("rod.ron");
}

#[test]
fn four_balls_are_dissipative() {
    assert_dissipative("four_balls.ron");
}

#[test]
fn pile_is_dissipative_and_every_lcp_is_solved() {
    assert_dissipative("pile.ron");
}

#[test]
fn every_shipped_scene_runs_its_full_duration() {
    let names = common::shipped_scenes();
    assert!(names.len() >= 7);
    for path in names {
        let large = common::large_scene(&path);
        // The piles, the tower and the wall run in full, with their
        // guarantees, in tests/piles.rs.
        if large.is_some_and(|bodies| bodies < common::GRANULAR) {
            continue;
        }
        let scene = scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let mut sim = Simulation::new(scene);
        // The granular scenes take minutes in full: here their first steps,
        // in full at a small size in tests/granular.rs.
        if large.is_some() {
            let budget = 10.0 * sim.params.dt;
            common::run(&mut sim, budget, |_, _| {});
            continue;
        }
        let duration = sim.params.duration;
        common::run(&mut sim, duration, |_, _| {});
        assert!(
            (sim.state.t - duration).abs() < sim.params.dt,
            "{}",
            path.display()
        );
    }
}

#[test]
fn generalized_linear_system_spring_block_loses_two_mu_g_over_omega_squared_per_swing() {
    // M = 1, k = 100 (ω = 10), μ = 0.1: |x| at successive turning points drops by
    // 2μg/ω² = 0.01962 m; the block sticks once |x| ≤ μg/ω² = 0.00981 m.
    let mut scene = common::load_scene("spring_block.ron");
    scene.params.dt = 1e-4;
    let mut sim = Simulation::new(scene);
    let (mu, g, omega2) = (0.1, 9.81, 100.0);
    let drop = 2.0 * mu * g / omega2;
    let mut turning = vec![sim.state.q[0]];
    let mut previous_v = sim.state.v[0];
    let mut max_gap_violation: f64 = 0.0;
    common::run(&mut sim, 3.0, |sim, _| {
        // A turning point: the velocity changes sign or vanishes (sticking);
        // once stuck, rounding-level velocities are not new swings.
        let v = sim.state.v[0];
        let x = sim.state.q[0];
        let moved = turning.last().is_none_or(|&last| (x - last).abs() > 1e-6);
        if previous_v != 0.0 && v * previous_v <= 0.0 && moved {
            turning.push(x);
        }
        previous_v = v;
        max_gap_violation = max_gap_violation.max(-sim.state.q[1]);
    });
    assert_eq!(turning.len(), 6, "five swings, then it sticks: {turning:?}");
    for (i, x) in turning.iter().take(5).enumerate() {
        let expected = (0.1 - drop * i as f64) * if i % 2 == 0 { 1.0 } else { -1.0 };
        assert!(
            (x - expected).abs() < 0.01 * 0.1,
            "turn {i}: {x} vs {expected}"
        );
    }
    let last = turning.last().copied().unwrap_or(0.0);
    assert!(
        last.abs() <= mu * g / omega2 + 1e-3,
        "sticks within the dead band: {last}"
    );
    assert!(sim.state.v.amax() < 1e-9, "at rest at the end");
    assert!(
        max_gap_violation < 1e-12,
        "the block never sinks into the table"
    );
}

/// A box (0.2 × 0.2 × 0.05 m half extents, 1 kg) flat on the plane z = 0
/// with μ = 0.4 and k friction edges, launched at 2 m/s along the angle
/// `theta` (degrees from x) in the plane, stepped with Stewart–Trinkle and
/// Lemke at h = 1 ms. Returns the planar velocity after each step.
fn diagonal_slide(k: usize, theta: f64, steps: usize) -> Vec<(f64, f64)> {
    let (s, c) = theta.to_radians().sin_cos();
    let text = format!(
        r#"Scene(name: "diagonal slide", params: (dt: 0.001, duration: 1.0, mu: 0.4, edges: {k}),
        system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, -9.81),
            bodies: [(name: "box", shape: Box(half_extents: (0.2, 0.2, 0.05)), mass: 1.0,
                      position: (0.0, 0.0, 0.05), velocity: ({vx}, {vy}, 0.0))],
            surfaces: [(name: "floor", normal: (0.0, 0.0, 1.0))])))"#,
        vx = 2.0 * c,
        vy = 2.0 * s,
    );
    let scene = scene::parse(&text, std::path::Path::new("slide.ron")).expect("valid scene");
    let mut sim = Simulation::new(scene);
    let mut out = Vec::new();
    for _ in 0..steps {
        let report = sim.step().expect("a step");
        assert!(
            report.status.advances(),
            "{:?} at t = {}",
            report.status,
            report.t
        );
        out.push((sim.state.v[0], sim.state.v[1]));
    }
    out
}

/// Stewart–Trinkle's friction on the k-edge polygon (§3, maximal
/// dissipation over the convex hull of the edge directions d_i at angles
/// 2πi/k): a box sliding at an angle θ strictly between the edges 0 and
/// 2π/k is braked along the edge nearest its velocity, so its velocity
/// across that edge stays and along it falls by μgh a step, until the
/// velocity reaches the face normal between the two edges at π/k. From then
/// on it slides straight along that normal, its speed falling by
/// μgh·cos(π/k) a step. Every step but the one of the turn to 1e-9.
#[test]
fn a_diagonal_slide_turns_to_the_pyramids_face_normal() {
    let (mu, g, h) = (0.4, 9.81, 0.001);
    for (k, theta) in [(4usize, 22.5f64), (8, 10.0)] {
        let face = std::f64::consts::PI / k as f64;
        let (s, c) = theta.to_radians().sin_cos();
        let (vx0, vy0) = (2.0 * c, 2.0 * s);
        // Phase 1 ends when vx = vy / tan(π/k); the turn falls in step l*.
        let turn = (vx0 - vy0 / face.tan()) / (mu * g * h);
        let turn_step = turn.ceil() as usize;
        let speed_at_turn = vy0 / face.sin();
        // Phase 2 ends when the speed is gone; stop well before.
        let stop = turn + speed_at_turn / (mu * g * h * face.cos());
        let steps = (stop - 5.0) as usize;
        let v = diagonal_slide(k, theta, steps);
        let (mut first, mut second) = (0, 0);
        for (i, &(vx, vy)) in v.iter().enumerate() {
            let l = (i + 1) as f64;
            let expected = if i + 1 < turn_step {
                first += 1;
                (vx0 - l * mu * g * h, vy0)
            } else if i + 1 > turn_step {
                second += 1;
                // After the turn, along (cos π/k, sin π/k); the speed at the
                // turn's instant falls by μg cos(π/k) per second.
                let speed = speed_at_turn - (l - turn) * mu * g * h * face.cos();
                (speed * face.cos(), speed * face.sin())
            } else {
                continue;
            };
            assert!(
                (vx - expected.0).abs() < 1e-9 && (vy - expected.1).abs() < 1e-9,
                "k = {k}, θ = {theta}°: step {} of v = ({vx}, {vy}), closed form {expected:?} \
                 (turn at step {turn_step})",
                i + 1
            );
        }
        assert!(
            first > 50 && second > 50,
            "k = {k}: {first} and {second} steps checked"
        );
    }
}
