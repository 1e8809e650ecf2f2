//! Mass ratios: boxes from 1e-3 kg to 1e8 kg, side by side and
//! stacked, under every stepper. The LCPs are equilibrated (diagonal scaling)
//! so that Lemke's relative tolerances see a 1e8 kg body's rows next to a
//! 1e-3 kg body's; then no step ends with a gap below −1e-6 m (Stewart–Trinkle
//! §3.3's position-level scheme, and the velocity-level ones from a resting
//! start), and the total energy never rises in a step: resting boxes under
//! gravity alone have no source of energy (Stewart–Trinkle §3.3; Anitescu–
//! Potra Theorem 2.4; (17) of Glocker–Studer with ε = 0).

mod common;

use contactlab::lcp::{self, Lcp, LcpStatus, LemkeOptions};
use contactlab::params::StepperKind;
use contactlab::scene;
use contactlab::sim::Simulation;
use nalgebra::{DMatrix, DVector};
use std::path::Path;

/// Masses of the boxes, kg: every decade from 1e-3 to 1e8.
fn masses() -> Vec<f64> {
    (-3..=8).map(|e| 10f64.powi(e)).collect()
}

/// A planar or spatial scene with the given boxes, each `(mass, x, y)` with y
/// the height of its centre; half extents 0.2 × 0.05 (× 0.2).
fn scene_of(dimension: &str, boxes: &[(f64, f64, f64)]) -> scene::Scene {
    let spatial = dimension == "Spatial";
    let bodies: Vec<String> = boxes
        .iter()
        .enumerate()
        .map(|(i, &(mass, x, y))| {
            let position = if spatial {
                format!("({x}, 0.0, {y})")
            } else {
                format!("({x}, {y}, 0.0)")
            };
            let half = if spatial {
                "(0.2, 0.2, 0.05)"
            } else {
                "(0.2, 0.05, 0.1)"
            };
            format!(
                "(name: \"b{i}\", shape: Box(half_extents: {half}), mass: {mass:e}, position: {position})"
            )
        })
        .collect();
    let (gravity, normal) = if spatial {
        ("(0.0, 0.0, -9.81)", "(0.0, 0.0, 1.0)")
    } else {
        ("(0.0, -9.81, 0.0)", "(0.0, 1.0, 0.0)")
    };
    let text = format!(
        r#"Scene(name: "masses", params: (dt: 0.01, duration: 0.5, mu: 0.5, edges: 4),
        system: Rigid((dimension: {dimension}, gravity: {gravity},
            bodies: [{}],
            surfaces: [(name: "table", normal: {normal})])))"#,
        bodies.join(",\n")
    );
    scene::parse(&text, Path::new("masses.ron")).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs every stepper on `scene` for its duration and checks the gap bound
/// and that no step adds energy (beyond round-off of the total).
fn check(what: &str, scene: &scene::Scene) {
    check_steppers(what, scene, &StepperKind::ALL);
}

/// [`check`] under `steppers` only.
fn check_steppers(what: &str, scene: &scene::Scene, steppers: &[StepperKind]) {
    for &stepper in steppers {
        let mut sim = Simulation::new(scene.clone());
        sim.params.stepper = stepper;
        let (k, p) = sim.energy();
        let mut previous = k + p;
        let scale = previous.abs().max(1.0);
        let steps = (sim.params.duration / sim.params.dt).round() as usize;
        for step in 1..=steps {
            let report = sim
                .step()
                .unwrap_or_else(|e| panic!("{what} {stepper}: {e}"))
                .clone();
            assert_eq!(
                report.status,
                LcpStatus::Solved,
                "{what} {stepper}: step {step}: {}",
                sim.failure_message().unwrap_or_default()
            );
            // Moreau–Jean works on velocity level: resting contacts hold
            // u_N ≥ 0, and what sinks in a step whose active set is decided
            // late stays, so its bound is −1e-3 m. Measured: −4.9e-15 m in
            // the spatial stacks (the velocity-space refinement,
            // `ContactLcp::polish`).
            let bound = if stepper == StepperKind::MoreauJean {
                -1e-3
            } else {
                -1e-6
            };
            assert!(
                report.min_gap >= bound,
                "{what} {stepper}: step {step}: gap {:.3e} m (masses far apart: the LCP's \
                 scaling)",
                report.min_gap
            );
            let now = report.kinetic_energy + report.potential_energy;
            assert!(
                now <= previous + 1e-12 * scale,
                "{what} {stepper}: step {step}: energy rose {:.3e} J of {scale:.3e}",
                now - previous
            );
            previous = now;
        }
    }
}

#[test]
fn boxes_from_a_gram_to_1e8_kg_side_by_side_rest() {
    for dimension in ["Planar", "Spatial"] {
        let boxes: Vec<(f64, f64, f64)> = masses()
            .into_iter()
            .enumerate()
            .map(|(i, m)| (m, 0.5 * i as f64, 0.05))
            .collect();
        check(
            &format!("{dimension} side by side"),
            &scene_of(dimension, &boxes),
        );
    }
}

/// Stacks over the whole range with the heavier box below, and boxes 1e3
/// and 1e6 times heavier than the one they rest on.
#[test]
fn boxes_from_a_gram_to_1e8_kg_stacked_rest() {
    let stacks: [&[f64]; 5] = [
        &[1e8, 1e-3],
        &[1e8, 1e4, 1e-3],
        &[1e8, 1e-3, 1.0],
        &[1e-3, 1.0],
        &[1.0, 1e6],
    ];
    check_stacks(&stacks);
}

/// Boxes 1e11 times heavier than the box they rest on, two stacks side by
/// side. The light box's contacts have the Delassus block [[a, −a], [−a,
/// a + 1/m_heavy]] (a = 1/m_light), whose condition number is the mass
/// ratio whatever the scaling; the velocity-space refinement (README, Mass
/// ratios) holds them (measured: deepest −2.4e-14 m, largest rise 1.2e-15
/// of the energy). The stacks are chaotic in their rounding, so the tests
/// below also check each stack alone, from two starts.
#[test]
fn a_box_much_heavier_than_the_one_below_rests() {
    let stacks: [&[f64]; 2] = [&[1e-3, 1e8], &[1e-3, 1e2, 1e8, 1.0]];
    check_stacks(&stacks);
}

/// The two 10¹¹ stacks of `a_box_much_heavier_than_the_one_below_rests`,
/// each alone: a gram under 10⁸ kg, and 1 g / 100 kg / 10⁸ kg / 1 kg; each
/// at the heights 0.05 + 0.1·level as computed (0.15000000000000002, …)
/// and at the decimal heights (0.15, …): the stacks are chaotic in their
/// rounding, and the two starts took different paths through Lemke's rays.
fn heavy_on_light(dimension: &str) -> Vec<(String, scene::Scene)> {
    let mut scenes = Vec::new();
    for stack in [&[1e-3, 1e8][..], &[1e-3, 1e2, 1e8, 1.0][..]] {
        for decimal in [false, true] {
            let boxes: Vec<(f64, f64, f64)> = stack
                .iter()
                .enumerate()
                .map(|(level, &m)| {
                    let y = 0.05 + 0.1 * level as f64;
                    let y = if decimal { (y * 1e9).round() / 1e9 } else { y };
                    (m, 0.0, y)
                })
                .collect();
            scenes.push((
                format!("{dimension} stacked {stack:?} (decimal heights: {decimal})"),
                scene_of(dimension, &boxes),
            ));
        }
    }
    scenes
}

/// A gram under 10⁸ kg in space under every stepper. As a sum v* + W Jᵀz
/// of terms of 10⁹–10¹⁰ m/s the light box's velocity is 10⁻³ m/s off after
/// Lemke's acceptance; the velocity-space refinement (`ContactLcp::polish`,
/// `Impulses::polish`, `solve::refine`) solves for the velocity change
/// itself. Checked with `check`'s bounds (measured: deepest −7.3e-14 m,
/// largest rise 1.2e-13 of the energy).
#[test]
fn a_gram_under_1e8_kg_rests_in_space_under_every_stepper() {
    for (what, scene) in heavy_on_light("Spatial") {
        check(&what, &scene);
    }
}

/// The same stacks in the plane under every stepper: Anitescu–Potra's and
/// the Euler LCP's parts are refined through their dense basis block
/// (`Impulses::polish`), Moreau–Jean's LCP (33) through its own
/// (`PlanarImpactLcp::polish`), and a basis the refined w shows wrong is
/// repaired in velocity space (`solve::refine`): no gap, no rise.
#[test]
fn a_gram_under_1e8_kg_rests_in_the_plane_under_every_stepper() {
    for (what, scene) in heavy_on_light("Planar") {
        check(&what, &scene);
    }
}

/// Lemke (with its defaults) on the first contact LCP of a 1 kg box under a
/// 10⁶ kg box, Anitescu–Potra's (24) equilibrated as the stepper does:
/// solved, and at rest the impulses cancel gravity over the step, so the
/// normal impulses of the table's contacts sum to (1 + 10⁶) kg · g h and
/// those between the boxes to 10⁶ kg · g h, to 1e-8.
fn check_first_lcp_of_1_kg_under_1e6_kg(dimension: &str) {
    let (light, heavy, h, g) = (1.0, 1e6, 0.01, 9.81);
    let mut sim = Simulation::new(scene_of(
        dimension,
        &[(light, 0.0, 0.05), (heavy, 0.0, 0.15)],
    ));
    sim.params.stepper = StepperKind::AnitescuPotra;
    sim.set_record_lcp(true);
    let report = sim.step().unwrap_or_else(|e| panic!("{e}")).clone();
    let problem = report.lcp.unwrap_or_else(|| panic!("the LCP was kept"));
    // Corner contacts, the table's first: k friction directions each, then
    // the normals, then the λ's (Stewart–Trinkle (29)).
    let (contacts, k) = if dimension == "Spatial" {
        (8, 4)
    } else {
        (4, 2)
    };
    let friction = k * contacts;
    let n = friction + 2 * contacts;
    assert_eq!(problem.size(), n);
    // The steppers' equilibration: 1/√Gᵢᵢ on β̃ and c̃_n, √G_nn on λ̃.
    let mut scale = DVector::from_element(n, 1.0);
    for i in 0..friction + contacts {
        scale[i] = 1.0 / problem.m[(i, i)].sqrt();
    }
    for j in 0..contacts {
        let normal = friction + j;
        scale[friction + contacts + j] = problem.m[(normal, normal)].sqrt();
    }
    let scaled = Lcp::new(
        DMatrix::from_fn(n, n, |i, j| scale[i] * problem.m[(i, j)] * scale[j]),
        problem.q.component_mul(&scale),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let solution = lcp::solve(&scaled, &LemkeOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(solution.status, LcpStatus::Solved, "{dimension}");
    let z = solution.z.component_mul(&scale);
    let half = contacts / 2;
    let table: f64 = (0..half).map(|j| z[friction + j]).sum();
    let between: f64 = (half..contacts).map(|j| z[friction + j]).sum();
    for (what, sum, carried) in [
        ("table", table, (light + heavy) * g * h),
        ("between the boxes", between, heavy * g * h),
    ] {
        assert!(
            (sum - carried).abs() <= 1e-8 * carried,
            "{dimension}, {what}: normal impulses sum to {sum} N·s, the weight carried is \
             {carried} N·s"
        );
    }
}

/// In the plane Lemke reaches the right basis with max |zᵢwᵢ| = 2.1e-6 of
/// ‖q‖ (zᵢ ≈ 5e4 N·s, wᵢ ≈ 1e-11, the rounding of the light box's velocity):
/// it is accepted through its componentwise backward error (below 1e-13
/// relative to each row's terms; `LemkeOptions::max_backward_error`).
#[test]
fn lemke_solves_the_planar_contact_lcp_of_a_box_1e6_times_heavier_than_the_one_below() {
    check_first_lcp_of_1_kg_under_1e6_kg("Planar");
}

/// In space the same stack makes max |B⁻¹| ≈ 10⁶ once the heavy box's own
/// coupling (pivot entries of relative size 10⁻⁶) has been pivoted on; a
/// noise bound of that size on every row would refuse the next such pivot
/// and end on a false ray, so Lemke's bound follows each row of B⁻¹.
#[test]
fn lemke_solves_the_spatial_contact_lcp_of_a_box_1e6_times_heavier_than_the_one_below() {
    check_first_lcp_of_1_kg_under_1e6_kg("Spatial");
}

/// Each stack bottom to top, stacks 1 m apart, planar and spatial.
fn check_stacks(stacks: &[&[f64]]) {
    for dimension in ["Planar", "Spatial"] {
        let mut boxes = Vec::new();
        for (s, stack) in stacks.iter().enumerate() {
            for (level, &m) in stack.iter().enumerate() {
                boxes.push((m, 1.0 * s as f64, 0.05 + 0.1 * level as f64));
            }
        }
        check(
            &format!("{dimension} stacked {stacks:?}"),
            &scene_of(dimension, &boxes),
        );
    }
}

/// Anitescu–Potra §3.2, Fig. 6: with the damper at 20 the 1e8 kg block does
/// not move while the 1 kg one swings. Under every stepper its (x, y, θ)
/// stay within 1e-6 of the start over the scene's 10 s.
#[test]
fn the_heavy_block_of_anitescu_potra_fig_6_stays_put_under_every_stepper() {
    let scene = common::load_scene("two_blocks_damper_heavy.ron");
    for stepper in StepperKind::ALL {
        let mut sim = Simulation::new(scene.clone());
        sim.params.stepper = stepper;
        let start = sim.state.q.clone();
        let steps = (sim.params.duration / sim.params.dt).round() as usize;
        for step in 1..=steps {
            let report = sim
                .step()
                .unwrap_or_else(|e| panic!("{stepper}: {e}"))
                .clone();
            assert_eq!(report.status, LcpStatus::Solved, "{stepper}: step {step}");
            // Planar q = (x, y, θ) per body; the heavy block is the second.
            for i in 3..6 {
                assert!(
                    (sim.state.q[i] - start[i]).abs() <= 1e-6,
                    "{stepper}: step {step}: heavy block coordinate {i} moved {:.3e}",
                    sim.state.q[i] - start[i]
                );
            }
        }
    }
}

/// The compliance's proximal shift LCP(M + εΔ, q − εΔz⁰) solves the scheme's
/// own LCP only up to the defect εΔ(z − z⁰), a velocity. Stewart–Trinkle on
/// a 1 g box under 10⁸ kg in the plane: at step 2 the corner contacts
/// between the boxes come back under new feature ids (z⁰ = 0), and with
/// Δ = 10³ and z = 2.45·10⁶ N·s one shifted solve would launch the light
/// box at 9.4·10⁵ m/s. Proximal point iterations re-centre the shift on the
/// solution until the defect is below 10⁻⁶ of ‖q‖
/// (`StepSettings::proximal_defect`). Measured over 0.5 s: deepest gap
/// −3.4e-8 m, largest rise 4.2e-11 of the scene's energy. Asserted: the
/// light box stays at rest to 1 mm/s, no gap below −1e-6 m, and no step
/// raises the energy by more than what f64 impulses can resolve on the
/// light box, ε(m_heavy g h)²/m_light (its velocity is a difference of
/// impulses of m_heavy g h, known to ε of that, on m_light, and the heavy
/// box rides on it for h), 2.1e1 J here, 5e-8 of the scene's energy.
#[test]
fn the_compliance_does_not_launch_a_gram_under_1e8_kg() {
    let (light, heavy, h, g) = (1e-3, 1e8, 0.01, 9.81);
    let mut sim = Simulation::new(scene_of(
        "Planar",
        &[(light, 0.0, 0.05), (heavy, 0.0, 0.15)],
    ));
    sim.params.stepper = StepperKind::StewartTrinkle;
    let resolution = f64::EPSILON * (heavy * g * h).powi(2) / light;
    let (k, p) = sim.energy();
    let mut previous = k + p;
    let steps = (sim.params.duration / sim.params.dt).round() as usize;
    for step in 1..=steps {
        let report = sim.step().unwrap_or_else(|e| panic!("{e}")).clone();
        assert_eq!(report.status, LcpStatus::Solved, "step {step}");
        assert!(
            report.min_gap >= -1e-6,
            "step {step}: gap {:.3e} m",
            report.min_gap
        );
        let speed = sim.state.v.rows(0, 3).amax();
        assert!(
            speed <= 1e-3,
            "step {step}: the light box moves at {speed:.3e}"
        );
        let now = report.kinetic_energy + report.potential_energy;
        assert!(
            now - previous <= resolution,
            "step {step}: energy rose {:.3e} J (resolution {resolution:.3e} J)",
            now - previous
        );
        previous = now;
    }
}
