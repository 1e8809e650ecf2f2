//! Mass ratios (issue 15): boxes from 1e-3 kg to 1e8 kg, side by side and
//! stacked, under every stepper. The LCPs are equilibrated (diagonal scaling)
//! so that Lemke's relative tolerances see a 1e8 kg body's rows next to a
//! 1e-3 kg body's; then no step ends with a gap below −1e-6 m (Stewart–Trinkle
//! §3.3's position-level scheme, and the velocity-level ones from a resting
//! start), and the total energy never rises in a step: resting boxes under
//! gravity alone have no source of energy (Stewart–Trinkle §3.3; Anitescu–
//! Potra Theorem 2.4; (17) of Glocker–Studer with ε = 0).

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
            // late stays; issue 15 gives it −1e-3 m. Measured: −4.9e-15 m
            // in the spatial stacks since the velocity-space refinement
            // (`ContactLcp::polish`), −1.8e-7 m with the compliance
            // continuation alone (`StepSettings::compliance_continuation`);
            // −2.2e-4 m before
            // (two steps sink, then it holds) since
            // Lemke's basis block A_KC is formed from the same products as
            // its columns; it stayed within 1e-6 m with the entry-wise
            // block, with which the tower crept and fell (tests/piles.rs).
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

/// A box 1e11 times heavier than the box it rests on (issue 15, item 2;
/// ignored as open until the eleventh session, its history below). The
/// light box's contacts have the Delassus block [[a, −a], [−a, a +
/// 1/m_heavy]] (a = 1/m_light), whose condition number is
/// the mass ratio; no diagonal scaling changes it (rows and columns stay
/// nearly parallel whatever their scales). Lemke now solves the first LCPs
/// of 1 kg under 1e6 kg where its own checks were the obstacle (the two
/// tests above). Measured at h = 0.01 over 0.5 s, each stack on its own,
/// rises relative to this scene's energy (3.9e8 J):
/// - 1 kg under 1e6 kg now rests under every stepper and is in the test
///   above. Alone (its energy the scale, 1.5e6 J): every step solved,
///   deepest gap −2.4e-10 m, largest rises 1.7e-12 (Stewart–Trinkle, in
///   space), 3.7e-12 (Moreau–Jean) and 2.0e-12 (Anitescu–Potra and the Euler
///   LCP, in the plane), 1.2–2.6 times the resolution of f64 impulses below.
/// - 1e-3 kg under 1e8 kg (ratio 1e11): impulses of 5e6 N·s through a 1 g
///   box round its velocity to a·ulp(z) ≈ 1e-6 m/s, so it jitters by 1e-8 m
///   a step and rocks the heavy box, each 1e-12 m of whose rise is 1e-12 of
///   the energy: f64 impulses resolve the energy to ε(m_heavy g h)²/m_light
///   ≈ 5e-8 of it, above this test's bound. Measured on the pair alone over
///   0.5 s since the compliance's proximal iterations: in the plane
///   Stewart–Trinkle −3.4e-8 m and rises of 4.2e-11 (it launched the light
///   box before; `the_compliance_does_not_launch_a_gram_under_1e8_kg`),
///   Moreau–Jean 5.3e-7, Anitescu–Potra and the Euler LCP 2.5e-7; in space
///   Stewart–Trinkle leaves one step unsolved and sinks 0.49 mm (rise
///   6.5e-3), Moreau–Jean sinks 14 mm, and Anitescu–Potra and the Euler LCP
///   drop the heavy box through the light one at step 2 (rise 3.3e-3): in
///   their equilibrated (24) the heavy box's weight reaches its contacts
///   only through its coupling of relative size 1e-11, Lemke's
///   unregularized attempt fails, and the ladder's compliance (≥ 1e-6)
///   swamps that coupling, so the regularized solution carries 54 N·s in
///   scaled units where 1.5e8 are needed; the proximal iterations shrink
///   that by ε/(λ + ε) ≈ 1 a pass along it.
///
/// Tenth session, the pair alone (this scene, 50 steps): in the plane every
/// stepper now holds it (Stewart–Trinkle −3.9e-8 m, Moreau–Jean −3.2e-7 m
/// with rises of 5.3e-7, Anitescu–Potra and the Euler LCP −4.5e-14 m with
/// rises of 2.8e-9: above this test's 1e-12, at f64's resolution of the
/// energy); in space Stewart–Trinkle is reported at step 3, Moreau–Jean
/// moves the heavy box ±0.4 mm a step through Lemke's backward-error
/// acceptance (one step rises 3.1e-3), Anitescu–Potra ends 1.5e-6 m deep
/// and the Euler LCP 2.3e-5 m. Holding it needs velocities solved in
/// velocity space, not as sums of 10⁷ N·s impulses on 1 g (README, Mass
/// ratios).
///
/// Eleventh session, with the velocity-space refinement (README, Mass
/// ratios) and its basis repair measured in each row's own units: both
/// stacks side by side hold under every stepper in both dimensions
/// (deepest −2.4e-14 m, largest rise 1.2e-15 of the energy). They are
/// chaotic in their rounding: started at heights rounded to 1e-9 m,
/// Moreau–Jean, Anitescu–Potra and the Euler LCP each report one step
/// failed in space, and the tests above check each stack alone.
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

/// A gram under 10⁸ kg, a ratio of 10¹¹, held by the velocity-space
/// refinement of Lemke's solution (eleventh session; `ContactLcp::polish`
/// on the islands of Stewart–Trinkle and Moreau–Jean, `Impulses::polish` on
/// Anitescu–Potra's and the Euler LCP's parts, with the basis repair of
/// `solve::refine` where Lemke ended on a ray or a wrong basis): the light
/// box's velocity was a sum
/// v* + W Jᵀz of terms of 10⁹–10¹⁰ m/s, and Lemke's acceptance (a
/// componentwise backward error of 10⁻¹³) left 10⁻³ m/s in it; the
/// refinement solves the basis's KKT system with the velocity change as an
/// unknown of its own, so the contact rows hold to the rounding of the
/// velocities. Measured over the scene's 0.5 s (50 steps), each stack
/// alone: every step solved, deepest gap −7.3e-14 m, largest rise 1.2e-13
/// of the energy (the Euler LCP on the pair; Stewart–Trinkle and
/// Moreau–Jean none). Before, in space: Stewart–Trinkle reported failed at
/// step 3, Moreau–Jean moving the heavy box 0.4 mm a step with one step
/// rising 3.1e-3, Anitescu–Potra 1.5e-6 m deep, the Euler LCP 2.3e-5 m,
/// and the 1 g / 100 kg / 1e8 kg / 1 kg stack failed at step 1 under both.
/// Checked with `check`'s bounds: every step solved, no gap below −1e-6 m
/// (−1e-3 m for Moreau–Jean), no rise above 1e-12 of the energy.
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
/// repaired in velocity space (`solve::refine`): no gap, no rise (before:
/// rises of 2.8e-9 of the energy on the pair and 1.9e-3 on the stack under
/// Anitescu–Potra and the Euler LCP, 4.3e-7 and 1.4e-7 under Moreau–Jean).
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

/// In the plane Lemke reaches the right basis, but its check of the result
/// failed: max |zᵢwᵢ| = 2.1e-6 of ‖q‖ with zᵢ ≈ 5e4 N·s and wᵢ ≈ 1e-11 (the
/// rounding of the light box's velocity, a sum of impulses of 5e4 on 1 kg),
/// and the compliance fallback then let the heavy box sink 0.78 mm in the
/// step. It is accepted through its componentwise backward error (below
/// 1e-13 relative to each row's terms; `LemkeOptions::max_backward_error`).
#[test]
fn lemke_solves_the_planar_contact_lcp_of_a_box_1e6_times_heavier_than_the_one_below() {
    check_first_lcp_of_1_kg_under_1e6_kg("Planar");
}

/// In space the same stack makes max |B⁻¹| ≈ 10⁶ once the heavy box's own
/// coupling (pivot entries of relative size 10⁻⁶) has been pivoted on, and
/// Lemke's noise bound of that size, applied to every row, then refused the
/// next such pivot: the run ended on a false ray (`RayTermination`, its 32
/// restarts too). The bound now follows each row of B⁻¹.
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
/// stay within 1e-6 of the start over the scene's 10 s (Stewart–Trinkle used
/// to drop it 2.4 cm in step 1, gaining 1.19e7 J; Moreau–Jean to sink it
/// 4.3 cm).
#[test]
fn the_heavy_block_of_anitescu_potra_fig_6_stays_put_under_every_stepper() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/two_blocks_damper_heavy.ron");
    let scene = scene::load(&path).unwrap_or_else(|e| panic!("{e}"));
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
/// between the boxes came back under new feature ids (no z⁰ of their own,
/// so z⁰ = 0), Δ = 10³ and z = 2.45·10⁶ N·s made the defect 2.4·10⁵ m/s, and
/// the "solved" iterate launched the light box at 9.4·10⁵ m/s (an energy
/// rise of 3 times the scene's). Proximal point iterations now re-centre
/// the shift on the solution until the defect is below 10⁻⁶ of ‖q‖
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
