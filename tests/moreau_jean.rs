//! The Moreau–Jean stepper (Glocker & Studer 2005 §5–6) against closed forms,
//! the woodpecker's published limit cycle, Painlevé's paradox and the energy
//! inequality of Newton's impact law.

mod common;

use contactlab::lcp::LcpStatus;
use contactlab::model::{Model, State};
use contactlab::params::StepperKind;
use contactlab::scene;
use contactlab::sim::Simulation;
use contactlab::stepper;
use nalgebra::DVector;
use std::path::Path;

/// What the woodpecker does after its transient.
#[derive(Debug)]
struct Woodpecker {
    /// Times the bird passes φ_S = 0 swinging back (away from the pole), s.
    sections: Vec<f64>,
    /// y at those times, m.
    heights: Vec<f64>,
    /// Times a beak impact starts (the beak contact gets an impulse again).
    beak_impacts: Vec<f64>,
    /// Range of φ_S, rad.
    angle_range: (f64, f64),
    /// Steps whose LCP (33) Lemke did not solve (falling back to (29)).
    fallbacks: usize,
}

fn woodpecker(h: f64, duration: f64) -> Woodpecker {
    let mut scene = common::load_scene("woodpecker.ron");
    scene.params.dt = h;
    let mut sim = Simulation::new(scene);
    let mut out = Woodpecker {
        sections: Vec::new(),
        heights: Vec::new(),
        beak_impacts: Vec::new(),
        angle_range: (f64::INFINITY, f64::NEG_INFINITY),
        fallbacks: 0,
    };
    let mut beak_before = false;
    let mut previous = sim.state.clone();
    common::run(&mut sim, duration, |sim, report| {
        let beak = report
            .contacts
            .iter()
            .any(|c| c.id.a == 0 && c.normal_impulse > 0.0);
        out.fallbacks += usize::from(report.solves > 1);
        let (phi_s, before) = (sim.state.q[2], previous.q[2]);
        if report.t > 0.1 {
            if beak && !beak_before {
                out.beak_impacts.push(report.t);
            }
            if before >= 0.0 && phi_s < 0.0 {
                // Interpolate the crossing within the step.
                let s = before / (before - phi_s);
                let t = previous.t + s * (sim.state.t - previous.t);
                out.sections.push(t);
                out.heights
                    .push(previous.q[0] + s * (sim.state.q[0] - previous.q[0]));
            }
            out.angle_range.0 = out.angle_range.0.min(phi_s);
            out.angle_range.1 = out.angle_range.1.max(phi_s);
        }
        beak_before = beak;
        previous = sim.state.clone();
    });
    out
}

/// Checks the woodpecker's limit cycle at step h; `descent_tolerance` bounds
/// each period's descent relative to the mean.
fn check_woodpecker(h: f64, descent_tolerance: f64) {
    let w = woodpecker(h, 1.5);
    println!("h = {h}: {w:?}");
    let periods: Vec<f64> = w.sections.windows(2).map(|p| p[1] - p[0]).collect();
    let descents: Vec<f64> = w.heights.windows(2).map(|p| p[0] - p[1]).collect();
    println!("periods {periods:?}\ndescents {descents:?}");
    assert!(periods.len() >= 8, "{periods:?}");
    let published = 0.1452;
    for p in &periods {
        assert!(
            (p - published).abs() < 0.02 * published,
            "period {p} s, published {published} s"
        );
    }
    let mean_descent = descents.iter().sum::<f64>() / descents.len() as f64;
    assert!(mean_descent > 0.0, "the sleeve descends: {descents:?}");
    for d in &descents {
        assert!(
            (d - mean_descent).abs() < descent_tolerance * mean_descent,
            "descent {d} m per period, mean {mean_descent}"
        );
    }
    for pair in w.sections.windows(2) {
        let hits = w
            .beak_impacts
            .iter()
            .filter(|&&t| t >= pair[0] && t < pair[1])
            .count();
        assert_eq!(hits, 1, "beak impacts in [{}, {})", pair[0], pair[1]);
    }
    let (lo, hi) = w.angle_range;
    assert!(lo >= -0.6 && hi <= 0.15, "phi_S in [{lo}, {hi}]");
    assert_eq!(w.fallbacks, 0, "Lemke solves (33) at every step");
}

#[test]
fn woodpecker_limit_cycle_at_h_1e_4() {
    // At h = 1e-4 the velocity-level scheme lets the sleeve's edges overlap the
    // pole by up to 12 µm (against a clearance of 0.6 mm), which changes the
    // jammed angle from one period to the next: over the scene's 1.5 s each
    // period's descent is within 2 % of the mean (1.96 % at worst; over 3 s it
    // reaches 3.3 %), and the mean is within 1 % of h = 2e-5's.
    check_woodpecker(1e-4, 0.02);
    let coarse = woodpecker(1e-4, 1.5);
    let fine = woodpecker(2e-5, 1.5);
    let mean = |w: &Woodpecker| {
        (w.heights[0] - w.heights[w.heights.len() - 1]) / (w.heights.len() - 1) as f64
    };
    let (a, b) = (mean(&coarse), mean(&fine));
    assert!(
        (a - b).abs() < 0.01 * b,
        "mean descent {a} (h = 1e-4) vs {b}"
    );
}

#[test]
fn woodpecker_limit_cycle_at_h_2e_5() {
    check_woodpecker(2e-5, 0.02);
}

#[test]
fn woodpecker_csv_has_the_papers_coordinates() {
    let dir = std::env::temp_dir().join(format!("contactlab-mj-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let csv = dir.join("woodpecker.csv");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_contactlab"))
        .args([
            "run",
            "scenes/woodpecker.ron",
            "--duration",
            "0.3",
            "--every",
            "100",
        ])
        .arg("--csv")
        .arg(&csv)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).expect("csv written");
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("t,y,y.dot,phi_M,phi_M.dot,phi_S,phi_S.dot,"),
        "{header}"
    );
    // Table I's initial conditions in the first row.
    let first: Vec<f64> = text
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split(',')
        .map(|v| v.parse().expect("number"))
        .collect();
    assert_eq!(
        &first[..7],
        &[0.0, 0.0, -0.3411, -0.1036, 0.0, -0.2788, -7.4583]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn woodpecker_scene_is_table_one() {
    let scene = common::load_scene("woodpecker.ron");
    let Model::Linear(s) = &scene.model else {
        panic!("the woodpecker is a generalized linear system")
    };
    assert_eq!(s.coordinates, ["y", "phi_M", "phi_S"]);
    // (14) from Table I.
    let (m_s, m_m, l_m, l_g, j_m, j_s, c, g) =
        (0.0045, 0.0003, 0.010, 0.015, 5.0e-9, 7.0e-7, 0.0056, 9.81);
    let mass = s.mass_matrix();
    let expected = [
        [m_s + m_m, m_s * l_m, m_s * l_g],
        [m_s * l_m, j_m + m_s * l_m * l_m, m_s * l_m * l_g],
        [m_s * l_g, m_s * l_m * l_g, j_s + m_s * l_g * l_g],
    ];
    for i in 0..3 {
        for j in 0..3 {
            assert!((mass[(i, j)] - expected[i][j]).abs() <= 1e-12 * expected[i][j].abs());
        }
    }
    // h at q: −c_φ(φ_M − φ_S) − m_S l_M g etc.
    let q = DVector::from_vec(vec![0.01, 0.05, -0.2]);
    let h = scene
        .model
        .forces(&q, &DVector::zeros(3), 0.0, &scene.params);
    let expected_h = [
        -(m_s + m_m) * g,
        -c * (q[1] - q[2]) - m_s * l_m * g,
        -c * (q[2] - q[1]) - m_s * l_g * g,
    ];
    for i in 0..3 {
        assert!((h[i] - expected_h[i]).abs() < 1e-12, "h[{i}] = {}", h[i]);
    }
    // Gaps (15) and ε_N1 = 0.5, ε_N2,3 = 0, ε_T = 0.
    let contacts = contactlab::collision::contacts(&scene.model, &q, 0, f64::INFINITY);
    let gaps: Vec<f64> = contacts.iter().map(|c| c.gap).collect();
    let expected_gaps = [
        (0.010 + 0.015 - 0.0201 - 0.0025) - 0.02 * q[2],
        (0.0031 - 0.0025) + 0.0058 * q[1],
        (0.0031 - 0.0025) - 0.0058 * q[1],
    ];
    for i in 0..3 {
        assert!((gaps[i] - expected_gaps[i]).abs() < 1e-15, "g_N{}", i + 1);
    }
    let restitution: Vec<(f64, f64)> = contacts
        .iter()
        .map(|c| scene.model.restitution(&c.id, &scene.params))
        .collect();
    assert_eq!(restitution, [(0.5, 0.0), (0.0, 0.0), (0.0, 0.0)]);
    assert_eq!(scene.params.mu, 0.3);
    assert_eq!(scene.params.stepper, StepperKind::MoreauJean);
    // The drawing: the beak tip I touches the pole's surface (x = r_O) when g_N1 = 0.
    let bird = scene
        .drawing
        .iter()
        .find(|p| p.name == "bird")
        .expect("a bird part");
    let touching = DVector::from_vec(vec![0.0, 0.0, 0.0024 / 0.02]);
    let tip = bird.to_world(&touching, [-0.0051, 0.02]);
    assert!((tip[0] - 0.0025).abs() < 1e-4, "beak tip at x = {}", tip[0]);
}

fn bouncing_ball(h: f64, restitution: f64) -> Simulation {
    let mut scene = common::load_scene("bouncing_ball.ron");
    scene.params.dt = h;
    scene.params.restitution = restitution;
    Simulation::new(scene)
}

#[test]
fn bouncing_ball_impact_times_and_rest_follow_the_closed_form() {
    let mut sim = bouncing_ball(1e-4, 0.9);
    let (g, e, radius) = (9.81_f64, 0.9_f64, 0.1);
    let h0 = sim.state.q[2] - radius;
    assert_eq!(h0, 1.0);
    let mut impacts = Vec::new();
    let mut in_contact = false;
    let mut rest: Option<f64> = None;
    let mut deepest_after_rest = f64::INFINITY;
    common::run(&mut sim, 10.0, |sim, report| {
        let pressed = report.contacts.iter().any(|c| c.normal_impulse > 0.0);
        if pressed && !in_contact {
            impacts.push(report.t);
        }
        in_contact = pressed;
        let moving = sim.state.v.amax() > 1e-9;
        match rest {
            None if !moving => rest = Some(report.t),
            Some(_) if moving => rest = None,
            _ => {}
        }
        if rest.is_some() {
            deepest_after_rest = deepest_after_rest.min(sim.state.q[2] - radius);
        }
    });
    let t1 = (2.0 * h0 / g).sqrt();
    let v1 = g * t1;
    println!("impacts {:?}", &impacts[..5]);
    for (n, t) in impacts.iter().take(5).enumerate() {
        let closed = t1 + 2.0 * v1 / g * (1..=n).map(|k| e.powi(k as i32)).sum::<f64>();
        assert!(
            (t - closed).abs() < 0.01 * closed,
            "impact {}: {t} s, closed form {closed} s",
            n + 1
        );
    }
    let t_rest = rest.expect("the ball comes to rest");
    let t_inf = t1 * (1.0 + e) / (1.0 - e);
    println!("at rest from {t_rest} s, T∞ = {t_inf} s, deepest gap {deepest_after_rest}");
    assert!((t_rest - t_inf).abs() < 0.03 * t_inf, "rest at {t_rest}");
    assert!(
        deepest_after_rest >= -1e-6 * h0,
        "gap {deepest_after_rest} after rest"
    );
}

/// A ball touching the table (gap 0) with velocity `v`, under `stepper`.
fn ball_on_table(dimension: &str, v: [f64; 3], stepper: StepperKind) -> Simulation {
    let up = if dimension == "Planar" {
        "(0.0, 0.1, 0.0)"
    } else {
        "(0.0, 0.0, 0.1)"
    };
    let (gravity, normal) = if dimension == "Planar" {
        ("(0.0, -9.81, 0.0)", "(0.0, 1.0, 0.0)")
    } else {
        ("(0.0, 0.0, -9.81)", "(0.0, 0.0, 1.0)")
    };
    let text = format!(
        r#"Scene(name: "ball", params: (dt: 0.001, mu: 0.3, edges: 8, stepper: r#{stepper}),
        system: Rigid((dimension: {dimension}, gravity: {gravity},
            bodies: [(name: "ball", shape: Sphere(radius: 0.1), mass: 1.0,
                      position: {up}, velocity: ({}, {}, {}))],
            surfaces: [(name: "table", normal: {normal})])))"#,
        v[0],
        v[1],
        v[2],
        stepper = stepper.name(),
    );
    let scene = scene::parse(&text, Path::new("ball.ron")).unwrap_or_else(|e| panic!("{e}"));
    Simulation::new(scene)
}

#[test]
fn inelastic_moreau_jean_and_stewart_trinkle_agree_on_a_ball_hitting_the_table() {
    for (dimension, v) in [
        ("Planar", [1.0, -2.0, 0.0]),
        ("Planar", [0.2, -2.0, 0.0]),
        ("Spatial", [1.0, 0.5, -2.0]),
        ("Spatial", [0.1, 0.0, -2.0]),
    ] {
        let mut mj = ball_on_table(dimension, v, StepperKind::MoreauJean);
        mj.params.restitution = 0.0;
        let mut st = ball_on_table(dimension, v, StepperKind::StewartTrinkle);
        let a = mj.step().expect("valid").clone();
        let b = st.step().expect("valid").clone();
        assert_eq!(a.status, LcpStatus::Solved);
        assert_eq!(b.status, LcpStatus::Solved);
        assert_eq!(a.active_contacts(), 1, "{dimension} {v:?}");
        let difference = (&mj.state.v - &st.state.v).amax();
        println!("{dimension} {v:?}: MJ {} ST {}", mj.state.v, st.state.v);
        assert!(
            difference < 1e-9,
            "{dimension} {v:?}: differ by {difference}"
        );
        // Inelastic: the normal velocity is gone.
        let vn = if dimension == "Planar" {
            mj.state.v[1]
        } else {
            mj.state.v[2]
        };
        assert!(vn.abs() < 1e-12, "{dimension}: v_n = {vn}");
    }
}

/// A ball touching the table leaves it at γ_N^A = 2 mm/s, slower than
/// gravity brings it back within the step (g h = 9.81 mm/s). It is not
/// struck: Newton's law with ε_N = 0 would stop it at γ_N^E = 0, and its
/// impulse would work Λ_N γ_N^A/2 > 0 (the ball ending 1 µm higher, at
/// rest: 7.8e-6 J gained). Held at γ_N^E ≥ −γ_N^A instead, the ball ends
/// the step approaching at the speed it left (closed form), back at its
/// height, and the energy does not rise.
#[test]
fn a_contact_that_separates_at_the_start_gains_no_energy_from_its_impulse() {
    use contactlab::params::SolverKind;
    let leave = 2e-3;
    for solver in [SolverKind::Lemke, SolverKind::Nsgs] {
        for (dimension, v, n) in [
            ("Planar", [0.0, leave, 0.0], 1),
            ("Spatial", [0.0, 0.0, leave], 2),
        ] {
            let mut sim = ball_on_table(dimension, v, StepperKind::MoreauJean);
            sim.params.restitution = 0.0;
            sim.params.solver = solver;
            let height = sim.state.q[n];
            let (k, p) = sim.energy();
            let report = sim.step().expect("valid").clone();
            assert_eq!(report.status, LcpStatus::Solved);
            assert_eq!(report.active_contacts(), 1, "{solver:?} {dimension}");
            let vn = sim.state.v[n];
            assert!(
                (vn + leave).abs() < 1e-12,
                "{solver:?} {dimension}: v_n = {vn}, not −{leave}"
            );
            let rise = (sim.state.q[n] - height).abs();
            assert!(rise < 1e-15, "{solver:?} {dimension}: moved {rise} m");
            let (k2, p2) = sim.energy();
            assert!(
                k2 + p2 <= k + p + 1e-14,
                "{solver:?} {dimension}: energy {} → {}",
                k + p,
                k2 + p2
            );
        }
    }
}

#[test]
fn impact_map_reverses_the_normal_velocity_by_e_and_slides_with_mu() {
    // A disk (J = m r²/2) hits at (1, −2) m/s with e = 0.5, μ = 0.3: Λ_N =
    // m (1 + e) 2 = 3 N·s. Stopping the contact point's slip takes Λ_T =
    // 1 / (1/m + r²/J) = 1/3 N·s < μΛ_N = 0.9 N·s, so it sticks: v_x' = v_x −
    // Λ_T/m, ω' = −Λ_T r/J.
    let sim = ball_on_table("Planar", [1.0, -2.0, 0.0], StepperKind::MoreauJean);
    let mut params = sim.params.clone();
    params.restitution = 0.5;
    let impact = stepper::impact(sim.model(), &params, &sim.state).expect("solved");
    let u = &impact.velocity;
    println!("u+ = {u}");
    assert!((u[1] - 1.0).abs() < 1e-12, "v_y' = {}", u[1]);
    let (m, r, j) = (1.0, 0.1, 0.5 * 0.01);
    let lambda_t = 1.0 / (1.0 / m + r * r / j);
    assert!(
        (u[0] - (1.0 - lambda_t / m)).abs() < 1e-12,
        "v_x' = {}",
        u[0]
    );
    assert!((u[2] - (-lambda_t * r / j)).abs() < 1e-9, "ω' = {}", u[2]);
    assert_eq!(impact.contacts.len(), 1);
    assert!((impact.contacts[0].normal_impulse - 3.0).abs() < 1e-12);
    // The contact point stops: v_x' + ω' r = 0.
    assert!((u[0] + u[2] * r).abs() < 1e-12);
}

#[test]
fn impact_map_on_five_touching_balls_gives_newtons_simultaneous_law() {
    // Exactly touching, e = 1: every contact is closed at once and Newton's
    // law at each gives ball 1 back at −3v/5 and the other four at 2v/5
    // (momentum and energy conserved), not the cradle's one-ball-out.
    let mut scene = common::load_scene("newtons_cradle.ron");
    let Model::Linear(s) = &mut scene.model else {
        panic!("the cradle is a linear system")
    };
    for c in &mut s.contacts {
        c.g0 = 0.0;
    }
    let v = 0.5;
    let state = State {
        q: DVector::zeros(5),
        v: DVector::from_vec(vec![v, 0.0, 0.0, 0.0, 0.0]),
        t: 0.0,
    };
    let impact = stepper::impact(&scene.model, &scene.params, &state).expect("solved");
    let expected = [-0.6 * v, 0.4 * v, 0.4 * v, 0.4 * v, 0.4 * v];
    for (u, e) in impact.velocity.iter().zip(expected) {
        assert!((u - e).abs() < 1e-12, "u+ = {}", impact.velocity);
    }
}

#[test]
fn newtons_cradle_sends_the_last_ball_off() {
    let mut sim = common::load_simulation("newtons_cradle.ron");
    let (k0, p0) = sim.energy();
    let mut approach = 0.0_f64;
    let mut after = None;
    let mut worst_energy: f64 = 0.0;
    common::run(&mut sim, 0.4, |sim, report| {
        let v = &sim.state.v;
        if after.is_none() && v[4] > 0.0 {
            // Ball 5 has left; wait a few steps for the impacts to pass through.
            after = Some(report.t + 0.01);
        }
        if after.is_none() {
            approach = approach.max(v[0]);
        }
        let e = report.kinetic_energy + report.potential_energy;
        worst_energy = worst_energy.max(((e - k0 - p0) / (k0 + p0)).abs());
    });
    let v = &sim.state.v;
    println!("approach {approach}, at 0.4 s {v}, energy drift {worst_energy}");
    assert!(after.is_some_and(|t| t < 0.4));
    // A quarter period after the hit (ω = √(g/L)) ball 5 swings at about the
    // approach speed; the others hang almost still.
    let omega = (9.81_f64 / 0.3).sqrt();
    let t_hit = std::f64::consts::FRAC_PI_2 / omega;
    let expected = approach * (omega * (0.4 - t_hit)).cos();
    assert!(
        (v[4] - expected).abs() < 0.02 * approach,
        "ball 5 at {}",
        v[4]
    );
    for i in 0..4 {
        assert!(v[i].abs() < 0.01 * approach, "ball {} at {}", i + 1, v[i]);
    }
    assert!(worst_energy < 1e-3, "energy drift {worst_energy}");
}

#[test]
fn painleve_rod_stops_sliding_by_an_impulse_where_accelerations_have_no_solution() {
    let mut sim = common::load_simulation("painleve_rod.ron");
    let model = sim.model().clone();
    let mu = sim.params.mu;
    // The sliding end at t = 0 and the classical (acceleration-level) problem
    // there: a_n = A + B N with A = nᵀM⁻¹k < 0 (ω = 0) and, for friction
    // opposing the slide, B = nᵀM⁻¹(n − μ sgn(tᵀv) t) < 0: no N ≥ 0 gives
    // a_n ≥ 0.
    let contacts = contactlab::collision::contacts(&model, &sim.state.q, 2, 1e-9);
    let end = contacts
        .iter()
        .find(|c| c.id.feature == 0)
        .expect("the lower end touches");
    let minv = model.mass_inverse();
    let dof = model.dof();
    let t = end.jacobian.dense_direction(0, dof);
    let normal = end.jacobian.dense_normal(dof);
    let slide = t.dot(&sim.state.v);
    assert!(slide.abs() > 29.0, "sliding at {slide}");
    let b = normal.dot(&(&minv * (&normal - &t * (mu * slide.signum()))));
    let k = model.forces(&sim.state.q, &sim.state.v, 0.0, &sim.params);
    let a = normal.dot(&(minv * k));
    println!("A = {a}, B = {b}");
    assert!(
        a < 0.0 && b < 0.0,
        "inside Painlevé's paradox: A = {a}, B = {b}"
    );

    let sliding = |sim: &Simulation| {
        let c = contactlab::collision::contacts(sim.model(), &sim.state.q, 2, f64::INFINITY);
        let end = c.iter().find(|c| c.id.feature == 0).expect("end");
        end.jacobian.dot(1, &sim.state.v).abs()
    };
    let mut before = sliding(&sim);
    let mut biggest_drop: f64 = 0.0;
    let mut drop_at = 0.0;
    common::run(&mut sim, 0.5, |sim, report| {
        // Lemke solved (33) itself: no fallback to the pyramid form (29).
        assert!(
            report.solves <= 1,
            "t = {}: {} solves",
            report.t,
            report.solves
        );
        let now = sliding(sim);
        if before - now > biggest_drop {
            biggest_drop = before - now;
            drop_at = report.t;
        }
        before = now;
    });
    println!("sliding speed dropped by {biggest_drop} m/s in the step to {drop_at} s");
    assert!(
        biggest_drop > 15.0,
        "largest drop in one step {biggest_drop}"
    );
    assert!(drop_at <= 0.01, "at {drop_at} s");
}

/// Steps `sim` for `duration` and checks that no impact — a step in which
/// exactly one contact carries an impulse, had none the step before, and was
/// approaching, γ_N^A = w_Nᵀu^A < 0 — ends with more energy than it started
/// with, beyond what gravity's impulse within the step allows. Returns the
/// number of impacts.
///
/// Why that allowance: with gravity g the only force, (17) and step 5 give
/// exactly ΔE = ½Λ·(γ^A + γ^E) (Λ, γ normal and tangential), and with
/// γ^E = γ^A + GΛ + hWᵀM⁻¹F (G = WᵀM⁻¹W) and ε_N = ε_T = ε,
/// ΔE = ½Λ·ξ + ½(1−ε)/(1+ε)(Λ·ξ − ΛᵀGΛ + hgΛ_N) ≤ (h/2)gΛ_N on a table with
/// upward normal (Λ·ξ = Λ_T ξ_T ≤ 0 by (12)): the impact law dissipates, the
/// weight carried by the impulse over the step may not.
fn assert_impacts_dissipate(sim: &mut Simulation, duration: f64) -> usize {
    let (k, p) = sim.energy();
    let mut previous = k + p;
    let scale = previous.abs().max(1.0);
    let mut impacts = 0;
    let mut start = sim.state.clone();
    let mut pressed_before = Vec::new();
    let edges = sim.params.edges;
    common::run(sim, duration, |sim, report| {
        let now = report.kinetic_energy + report.potential_energy;
        let pressed: Vec<_> = report
            .contacts
            .iter()
            .filter(|c| c.normal_impulse > 0.0)
            .collect();
        if let [contact] = pressed[..]
            && !pressed_before.contains(&contact.id)
        {
            let before =
                contactlab::collision::contacts(sim.model(), &start.q, edges, f64::INFINITY);
            let approach = before
                .iter()
                .find(|c| c.id == contact.id)
                .map_or(0.0, |c| c.jacobian.normal_dot(&start.v));
            if approach < 0.0 {
                impacts += 1;
                let weight = 0.5 * sim.params.dt * 9.81 * contact.normal_impulse;
                assert!(
                    now <= previous + weight + 1e-12 * scale,
                    "t = {}: energy {previous} → {now} (γ_N^A = {approach})",
                    report.t
                );
            }
        }
        previous = now;
        start = sim.state.clone();
        pressed_before = pressed.iter().map(|c| c.id).collect();
    });
    impacts
}

#[test]
fn impacts_with_eps_n_at_most_one_never_add_energy() {
    for e in [0.0, 0.5, 0.9, 1.0] {
        let mut sim = bouncing_ball(1e-3, e);
        let impacts = assert_impacts_dissipate(&mut sim, 3.0);
        assert!(impacts > 0, "e = {e}");
    }
    // A tilted rod dropped spinning onto the table with friction: the ends hit
    // one at a time, sliding and sticking. With ε_T = 0 this holds for ε_N ≤ ½
    // here; for ε_N = 1 the normal impulse can reverse the slip through the
    // rod's rotation and the friction impulse then does positive work (ΔE =
    // ½[Λ_T ξ_T + (1 − ε_N)Λ_N γ_N^A + (1 − ε_T)Λ_T γ_T^A], the last term
    // unsigned), so ε_T = ε_N is used there, which makes the impact an
    // inelastic one scaled by 1 + ε and always dissipative.
    for (eps_n, eps_t) in [(0.0, 0.0), (0.5, 0.0), (0.5, 0.5), (1.0, 1.0)] {
        let text = format!(
            r#"Scene(name: "rod", params: (dt: 0.001, mu: 0.6, stepper: r#moreau-jean),
            system: Rigid((dimension: Planar, gravity: (0.0, -9.81, 0.0),
                bodies: [(name: "rod", shape: Capsule(half_length: 0.25, radius: 0.05), mass: 1.0,
                          inertia: (0.0, 0.0, 0.002), position: (0.0, 1.0, 0.0),
                          orientation: Angle(0.5235987755982988), velocity: (0.5, 0.0, 0.0),
                          angular_velocity: (0.0, 0.0, 4.0),
                          restitution: {eps_n}, tangential_restitution: {eps_t})],
                surfaces: [(name: "table", normal: (0.0, 1.0, 0.0))])))"#
        );
        let scene = scene::parse(&text, Path::new("rod.ron")).unwrap_or_else(|e| panic!("{e}"));
        let mut sim = Simulation::new(scene);
        let impacts = assert_impacts_dissipate(&mut sim, 2.0);
        println!("rod ε_N = {eps_n}, ε_T = {eps_t}: {impacts} impacts");
        assert!(impacts > 0, "ε_N = {eps_n}, ε_T = {eps_t}");
    }
}

#[test]
fn restitution_outside_zero_one_is_rejected_at_its_field() {
    let text = std::fs::read_to_string("scenes/woodpecker.ron").expect("scene");
    let bad = text.replacen("restitution: 0.0,", "restitution: 1.5,", 1);
    let e = scene::parse(&bad, Path::new("w.ron"))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("contacts[1].restitution: restitution must be in [0, 1], found 1.5"),
        "{e}"
    );
    let line = bad
        .lines()
        .position(|l| l.contains("restitution: 1.5"))
        .expect("line")
        + 1;
    assert!(e.starts_with(&format!("w.ron:{line}:")), "{e}");
}

#[test]
fn a_drawing_with_an_unknown_coordinate_is_rejected() {
    let text = std::fs::read_to_string("scenes/woodpecker.ron").expect("scene");
    let bad = text.replacen("{\"phi_S\": 1.0}", "{\"phi_X\": 1.0}", 1);
    assert_ne!(bad, text);
    let e = scene::parse(&bad, Path::new("w.ron"))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("drawing[2].angle.gains: unknown coordinate `phi_X`"),
        "{e}"
    );
}

#[test]
fn restitution_comes_from_the_contact_its_materials_or_the_scene() {
    // A ball hitting the table at 2 m/s bounces back at ε_N · 2 m/s, where ε_N
    // is the smaller of the two materials' values, else the one that is set,
    // else params.restitution (0.9).
    for (ball, table, expected) in [
        ("", "", 0.9),
        ("restitution: 0.8,", "", 0.8),
        ("", "restitution: 0.3,", 0.3),
        ("restitution: 0.8,", "restitution: 0.5,", 0.5),
        ("restitution: 0.2,", "restitution: 0.5,", 0.2),
    ] {
        let text = format!(
            r#"Scene(name: "ball", params: (restitution: 0.9, stepper: r#moreau-jean),
            system: Rigid((dimension: Planar, gravity: (0.0, -9.81, 0.0),
                bodies: [(name: "ball", shape: Sphere(radius: 0.1), mass: 1.0, {ball}
                          position: (0.0, 0.1, 0.0), velocity: (0.0, -2.0, 0.0))],
                surfaces: [(name: "table", normal: (0.0, 1.0, 0.0), {table})])))"#
        );
        let scene = scene::parse(&text, Path::new("ball.ron")).unwrap_or_else(|e| panic!("{e}"));
        let impact = stepper::impact(&scene.model, &scene.params, &scene.initial).expect("solved");
        let bounce = impact.velocity[1];
        assert!(
            (bounce - 2.0 * expected).abs() < 1e-12,
            "{ball} {table}: bounces at {bounce}"
        );
    }
}

/// Steps `sim` for its scene's duration and returns the largest distance of
/// coordinate `heights[i]` of q from its start, and the deepest gap.
fn drift_of(sim: &mut Simulation, heights: &[usize]) -> (f64, f64) {
    let start = sim.state.q.clone();
    let (mut drift, mut deepest) = (0.0_f64, f64::INFINITY);
    let duration = sim.params.duration;
    common::run(sim, duration, |sim, report| {
        for &i in heights {
            drift = drift.max((sim.state.q[i] - start[i]).abs());
        }
        deepest = deepest.min(report.min_gap);
    });
    (drift, deepest)
}

/// The predictive activation at h = 0.05: boxes lying flat on a table,
/// resting or pushed along it by 20 cos t N, keep their height within 1e-6 m
/// for the whole run, at 1 kg and at 1e8 kg. The index set of step 3b alone
/// would leave out a corner whose gap at q^M is +1e-17 (round-off), and the
/// sliding box would tilt through the table.
#[test]
fn boxes_flat_on_a_table_at_h_0_05_stay_within_1e_6_m() {
    for name in ["two_blocks_damper.ron", "two_blocks_damper_heavy.ron"] {
        let mut sim = common::load_simulation(name);
        sim.params.stepper = StepperKind::MoreauJean;
        assert_eq!(sim.params.dt, 0.05);
        // Planar q = (x, y, θ) per body: both heights and both angles.
        let (drift, deepest) = drift_of(&mut sim, &[1, 2, 4, 5]);
        assert!(drift <= 1e-6, "{name}: height or angle moved {drift:.3e}");
        assert!(deepest >= -1e-6, "{name}: deepest gap {deepest:.3e} m");
    }
    for (dimension, gravity, normal, half, position, height) in [
        (
            "Planar",
            "(0.0, -9.81, 0.0)",
            "(0.0, 1.0, 0.0)",
            "(0.5, 0.1, 0.1)",
            "(0.0, 0.1, 0.0)",
            1,
        ),
        (
            "Spatial",
            "(0.0, 0.0, -9.81)",
            "(0.0, 0.0, 1.0)",
            "(0.5, 0.3, 0.1)",
            "(0.0, 0.0, 0.1)",
            2,
        ),
    ] {
        let text = format!(
            r#"Scene(name: "rest", params: (dt: 0.05, duration: 2.0, mu: 0.4, stepper: r#moreau-jean),
            system: Rigid((dimension: {dimension}, gravity: {gravity},
                bodies: [(name: "light", shape: Box(half_extents: {half}), mass: 1.0,
                          position: {position}),
                         (name: "heavy", shape: Box(half_extents: {half}), mass: 1.0e8,
                          position: {position})],
                surfaces: [(name: "table", normal: {normal})])))"#
        )
        .replacen("position: (0.0", "position: (3.0", 1);
        let scene = scene::parse(&text, Path::new("rest.ron")).unwrap_or_else(|e| panic!("{e}"));
        let mut sim = Simulation::new(scene);
        let per_body = sim.state.q.len() / 2;
        let (drift, deepest) = drift_of(&mut sim, &[height, per_body + height]);
        assert!(drift <= 1e-6, "{dimension}: a box moved {drift:.3e} m");
        assert!(deepest >= -1e-6, "{dimension}: deepest gap {deepest:.3e} m");
    }
}

/// A 2 cm grain of 10 g, 0.27 m from a 2 cm wall (half-thickness 1 cm at
/// x = 0), flying at it along x at `speed` with restitution `restitution`,
/// without gravity, under `solver`; the wall fixed or of 1 kg.
fn grain_at_a_wall(speed: f64, restitution: f64, solver: &str, fixed: bool) -> Simulation {
    let text = format!(
        r#"Scene(name: "grain", params: (dt: 0.005, duration: 0.3, stepper: r#moreau-jean,
            solver: {solver}, restitution: {restitution}),
        system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, 0.0),
            bodies: [(name: "g", shape: Sphere(radius: 0.02), mass: 0.01,
                      position: (-0.3, 0.0, 0.5), velocity: ({speed}, 0.0, 0.0)),
                     (name: "wall", shape: Box(half_extents: (0.01, 0.5, 0.5)), mass: 1.0,
                      position: (0.0, 0.0, 0.5), fixed: {fixed})],
            surfaces: [(name: "table", normal: (0.0, 0.0, 1.0))])))"#
    );
    let scene = scene::parse(&text, Path::new("grain.ron")).unwrap_or_else(|e| panic!("{e}"));
    Simulation::new(scene)
}

/// The gap between the grain and the wall's near face, m.
fn grain_gap(sim: &Simulation) -> f64 {
    let (grain, wall) = (sim.state.q[0], sim.state.q[7]);
    (wall - 0.01) - (grain + 0.02)
}

/// Swept contacts (Glocker & Studer's midpoint, guarded): a grain at 30,
/// 300 and 3,000 m/s toward a 2 cm wall neither passes it nor stops short:
/// inelastic, it ends touching (within 1e-9 m) at rest, under Lemke and
/// NSGS; `min_gap` reports the wall's gap from the first step that can
/// reach it on.
#[test]
fn a_fast_grain_ends_touching_a_thin_wall_neither_through_nor_short() {
    for solver in ["lemke", "nsgs"] {
        for speed in [30.0, 300.0, 3000.0] {
            let mut sim = grain_at_a_wall(speed, 0.0, solver, true);
            let first = sim.step().expect("a step").clone();
            // 0.27 m away: within the first step's reach from 300 m/s on.
            assert_eq!(
                first.min_gap.is_finite(),
                speed > 100.0,
                "{solver} {speed}: min_gap {}",
                first.min_gap
            );
            let mut deepest = grain_gap(&sim);
            let mut reported = f64::NAN;
            common::run(&mut sim, 0.1, |sim, report| {
                deepest = deepest.min(grain_gap(sim));
                reported = report.min_gap;
            });
            assert!(
                reported.abs() <= 1e-9,
                "{solver} {speed}: min_gap {reported}"
            );
            let gap = grain_gap(&sim);
            assert!(
                gap.abs() <= 1e-9,
                "{solver} {speed} m/s: ends {gap:e} m from the wall"
            );
            assert!(deepest >= -1e-9, "{solver} {speed} m/s: {deepest:e} m deep");
            assert!(
                sim.state.v.amax() <= 1e-9,
                "{solver} {speed} m/s: {}",
                sim.state.v
            );
        }
    }
}

/// The guard's lift moves the bodies its contacts push as well: a grain at
/// rest 0.1 mm from a fixed wall, struck along the line of centres by
/// another at `speed` (10 mm behind it, no gravity), is pushed by the lift
/// of their contact towards the wall, which it was too slow to be searched
/// near. The lift must hold that contact too: the grain never goes deeper
/// into the wall than the guard's depth (5 % of its radius) and, inelastic,
/// the two end at rest against the wall, touching: within 1e-9 m, and
/// within 1e-9 m/s under Lemke or 1e-9 of the speed under NSGS, run at a
/// relative tolerance of 1e-8 (at the default 1e-3 the grains may leave
/// the impact at up to a thousandth of the striker's speed).
#[test]
fn a_grain_pushed_by_the_guards_lift_stays_out_of_the_wall_beside_it() {
    for solver in ["lemke", "nsgs"] {
        for speed in [3.0, 30.0, 300.0] {
            // The wall's near face at x = −0.01; the resting grain 0.1 mm
            // short of it, the striking one 10 mm behind that.
            let rest = -0.01 - 0.02 - 1e-4;
            let text = format!(
                r#"Scene(name: "push", params: (dt: 0.005, duration: 0.1, stepper: r#moreau-jean, solver: {solver}, tolerance: 1e-8),
                system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, 0.0),
                    bodies: [(name: "rest", shape: Sphere(radius: 0.02), mass: 0.01,
                              position: ({rest}, 0.0, 0.5)),
                             (name: "wall", shape: Box(half_extents: (0.01, 0.5, 0.5)), mass: 1.0,
                              position: (0.0, 0.0, 0.5), fixed: true),
                             (name: "striker", shape: Sphere(radius: 0.02), mass: 0.01,
                              position: ({}, 0.0, 0.5), velocity: ({speed}, 0.0, 0.0))],
                    surfaces: [(name: "table", normal: (0.0, 0.0, 1.0))])))"#,
                rest - 0.05
            );
            let scene =
                scene::parse(&text, Path::new("push.ron")).unwrap_or_else(|e| panic!("{e}"));
            let mut sim = Simulation::new(scene);
            let gap = |sim: &Simulation| -0.01 - (sim.state.q[0] + 0.02);
            let mut deepest = gap(&sim);
            common::run(&mut sim, 0.1, |sim, _| deepest = deepest.min(gap(sim)));
            assert!(
                deepest >= -0.05 * 0.02,
                "{solver} {speed} m/s: the grain went {deepest:e} m into the wall"
            );
            let end = gap(&sim);
            let (touching, at_rest) = if solver == "lemke" {
                (1e-9, 1e-9)
            } else {
                (1e-9, 1e-9 * speed)
            };
            assert!(
                end.abs() <= touching,
                "{solver} {speed} m/s: ends {end:e} m from the wall"
            );
            assert!(
                sim.state.v.amax() <= at_rest,
                "{solver} {speed} m/s: {}",
                sim.state.v
            );
        }
    }
}

/// With ε = 1 the grain rebounds at its whole speed (kinetic energy to
/// 1e-12), and never enters the wall; against a 1 kg wall that is free,
/// inelastic, the two move on together with the grain's momentum.
#[test]
fn a_fast_grain_rebounds_whole_or_carries_a_free_wall_along() {
    for solver in ["lemke", "nsgs"] {
        for speed in [30.0, 300.0] {
            let mut sim = grain_at_a_wall(speed, 1.0, solver, true);
            let mut deepest = f64::INFINITY;
            common::run(&mut sim, 0.1, |sim, _| {
                deepest = deepest.min(grain_gap(sim));
            });
            assert!(
                (sim.state.v[0] + speed).abs() <= 1e-12 * speed,
                "{solver} {speed}: {}",
                sim.state.v[0]
            );
            assert!(deepest >= -1e-9, "{solver} {speed} m/s: {deepest:e} m deep");

            let mut sim = grain_at_a_wall(speed, 0.0, solver, false);
            let mut deepest = f64::INFINITY;
            common::run(&mut sim, 0.1, |sim, _| {
                deepest = deepest.min(grain_gap(sim));
            });
            let (grain, wall) = (sim.state.v[0], sim.state.v[6]);
            let common_speed = 0.01 * speed / 1.01;
            assert!(
                (grain - common_speed).abs() <= 1e-9 * speed
                    && (wall - common_speed).abs() <= 1e-9 * speed,
                "{solver} {speed}: grain {grain}, wall {wall}"
            );
            assert!(
                deepest >= -1e-9,
                "{solver} {speed} m/s, free wall: {deepest:e} m deep"
            );
        }
    }
}

/// A ball at 3,000 m/s toward the table ends on it (gap within 1e-9 m),
/// not 7 m under it.
#[test]
fn a_ball_at_3000_m_s_ends_on_the_table() {
    let text = r#"Scene(name: "fast", params: (dt: 0.005, duration: 0.05, stepper: r#moreau-jean),
        system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, 0.0),
            bodies: [(name: "g", shape: Sphere(radius: 0.02), mass: 0.01,
                      position: (0.0, 0.0, 0.5), velocity: (0.0, 0.0, -3000.0))],
            surfaces: [(name: "table", normal: (0.0, 0.0, 1.0))])))"#;
    let scene = scene::parse(text, Path::new("fast.ron")).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(scene);
    common::run(&mut sim, 0.05, |sim, _| {
        assert!(sim.state.q[2] >= 0.02 - 1e-9, "z = {}", sim.state.q[2]);
    });
    assert!(
        (sim.state.q[2] - 0.02).abs() <= 1e-9,
        "z = {}",
        sim.state.q[2]
    );
}
