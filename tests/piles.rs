//! The scheme's guarantees on piles (issue: exact contact at scale, item 5):
//! no step ends with a gap below −1e-6 m, the total energy never rises by more
//! than 1e-9 (relative) in a step (Stewart–Trinkle §3.3), and every LCP is
//! solved; plus the generated piles of the scale benchmark.

use contactlab::lcp::LcpStatus;
use contactlab::scene::{self, generate};
use contactlab::sim::Simulation;
use std::path::Path;

/// Runs `sim` for `seconds` and returns (deepest end-of-step gap, largest
/// relative energy rise in one step, unsolved steps).
fn guarantees(sim: &mut Simulation, seconds: f64) -> (f64, f64, usize) {
    let (deepest, rise, unsolved, _) = guarantees_and_costs(sim, seconds);
    (deepest, rise, unsolved)
}

/// What one step cost Lemke.
struct StepCost {
    /// The step's end time, s.
    t: f64,
    pivots: usize,
    /// LCP solves (fixed-point iterations and active-set rounds).
    solves: usize,
}

/// [`guarantees`] and the cost of every step.
fn guarantees_and_costs(sim: &mut Simulation, seconds: f64) -> (f64, f64, usize, Vec<StepCost>) {
    let mut costs = Vec::new();
    let (k, p) = sim.energy();
    let mut previous = k + p;
    let scale = previous.abs().max(1.0);
    let steps = (seconds / sim.params.dt).round() as usize;
    let (mut deepest, mut rise, mut unsolved) = (f64::INFINITY, f64::NEG_INFINITY, 0);
    for _ in 0..steps {
        let report = sim.step().unwrap_or_else(|e| panic!("{e}"));
        if report.status != LcpStatus::Solved {
            unsolved += 1;
        }
        deepest = deepest.min(report.min_gap);
        costs.push(StepCost {
            t: report.t,
            pivots: report.pivots,
            solves: report.solves,
        });
        let now = report.kinetic_energy + report.potential_energy;
        rise = rise.max((now - previous) / scale);
        previous = now;
    }
    (deepest, rise, unsolved, costs)
}

#[test]
fn pile_keeps_its_gaps_and_energy_for_five_seconds() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/pile.ron");
    let mut sim = Simulation::new(scene::load(&path).unwrap_or_else(|e| panic!("{e}")));
    let (deepest, rise, unsolved, costs) = guarantees_and_costs(&mut sim, 5.0);
    assert_eq!(unsolved, 0, "every LCP of the pile is solved");
    assert!(deepest >= -1e-6, "deepest gap {deepest} m");
    assert!(rise <= 1e-9, "energy rose by {rise} (relative) in one step");

    // Warm starts on the settled pile (t ≥ 2 s; it lands and settles in the
    // first 2 s). The previous basis, mapped by contact identity, is the
    // solution whenever the active set has not changed, which takes no
    // pivot; pivots come only where the basis changes: a contact opening or
    // closing, or the friction of a rolling sphere moving to another edge of
    // its pyramid (one pivot in, one out, plus z₀'s entry and exit).
    // Measured: 1.6 pivots a step on average, 80 % of the steps none.
    let settled: Vec<usize> = costs
        .iter()
        .filter(|c| c.t >= 2.0)
        .map(|c| c.pivots)
        .collect();
    let mean = settled.iter().sum::<usize>() as f64 / settled.len() as f64;
    let none = settled.iter().filter(|&&p| p == 0).count() as f64 / settled.len() as f64;
    assert!(mean <= 3.0, "{mean} pivots a step on the settled pile");
    assert!(
        none >= 0.7,
        "only {:.0} % of the settled steps took no pivot",
        100.0 * none
    );
}

/// Twelve boxes stacked with aligned edges (μ = 0.5): each interface is four
/// contacts at the corners of both boxes, more normals than a box has
/// freedoms. It stands for 10 s (issue 12: the top box drifts less than
/// 1e-4 m) with the guarantees (measured: the top box does not move at all,
/// speeds stay at 1e-14, and after the first steps every step keeps the
/// previous basis, 0 pivots). It used to creep at 2.4e-6 m/s and fall at
/// t ≈ 7.1 s: the block A_KC of Lemke's basis was summed entry by entry
/// while the columns and the residual check went through the products, and
/// on the tower's nearly singular bases the two roundings disagreed enough
/// to reject the warm basis every step (41 pivots a step, then the
/// compliance ladder, whose deflection was the creep).
#[test]
fn tower_stands_for_ten_seconds_with_its_gaps_and_energy() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/tower.ron");
    let mut sim = Simulation::new(scene::load(&path).unwrap_or_else(|e| panic!("{e}")));
    let top = sim.state.q.len() - 7;
    let start = (sim.state.q[top], sim.state.q[top + 1]);
    let (deepest, rise, unsolved, costs) = guarantees_and_costs(&mut sim, 10.0);
    assert_eq!(unsolved, 0, "every LCP of the tower is solved");
    let late = costs.iter().filter(|c| c.t >= 1.0).map(|c| c.pivots);
    assert_eq!(late.max(), Some(0), "the standing tower keeps its basis");
    assert!(deepest >= -1e-6, "deepest gap {deepest} m");
    assert!(rise <= 1e-9, "energy rose by {rise} (relative) in one step");
    let drift = (sim.state.q[top] - start.0).hypot(sim.state.q[top + 1] - start.1);
    assert!(drift < 1e-4, "the top box drifted {drift} m sideways");
}

/// A sphere resting against a tilted box passes from the box's face to its
/// edge: the contact changes feature between the fixed-point iterations of a
/// step. Before the pair's nearest contact stood in for the vanished feature,
/// the iterations alternated and this pile ended a step 1.5 mm inside
/// (t = 0.53 s); linearization leaves tens of µm on the steps of the impacts.
#[test]
fn generated_pile_iterations_follow_a_contact_across_features() {
    // The piles as first generated: spheres and boxes only.
    let shapes = [generate::PileShape::Sphere, generate::PileShape::Box];
    let mut sim = Simulation::new(generate::pile_of(22, &shapes).unwrap_or_else(|e| panic!("{e}")));
    let (deepest, rise, unsolved) = guarantees(&mut sim, 0.6);
    assert_eq!(unsolved, 0);
    assert!(deepest >= -1e-4, "deepest gap {deepest} m");
    assert!(rise <= 1e-9, "energy rose by {rise} (relative) in one step");
}

#[test]
fn generated_piles_have_the_bodies_asked_for() {
    for n in [1, 10, 22, 100] {
        let pile = generate::pile(n).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pile.model.dof(), 6 * n, "pile of {n}");
        assert_eq!(pile.params.dt, 0.005);
        assert_eq!(pile.params.edges, 8);
    }
}

/// `scenes/pile_100.ron` is the scale benchmark's pile of 100: spheres,
/// boxes and capsules in loose layers.
#[test]
fn pile_100_is_the_generated_pile_of_100() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/pile_100.ron");
    let shipped = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        shipped == generate::pile_source(100),
        "scenes/pile_100.ron differs from generate::pile_source(100)"
    );
    let scene = scene::load(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scene.model.dof(), 600);
    for kind in ["sphere", "box", "capsule"] {
        let count = shipped.matches(&format!("(name: \"{kind}")).count();
        assert!(count >= 33, "{count} bodies named {kind}*");
    }
}

/// `pile_100.ron` (100 spheres, boxes and capsules) for 5 s under
/// Stewart–Trinkle at its shipped settings: every LCP is solved exactly
/// (no step fails; large islands, up to 1,500 unknowns, whose degenerate
/// LCPs Lemke's floating-point lexicographic rule alone fails, are solved
/// by the perturbed runs of `lcp::lemke`) and no step ends with a gap below
/// −1e-6 m, and the total energy never rises by more than 1e-9 (relative)
/// in a step (issue 12 item 5). Measured: deepest −2.5e-7 m (a box landing
/// at t = 0.23 s, which takes the extra fixed-point iterations of
/// `StepSettings::gap_guarantee`), largest rise 9.4e-10.
#[test]
fn pile_100_runs_5_s_with_every_lcp_solved_and_no_gap_below_a_micrometre() {
    let scene = scene::load(Path::new("scenes/pile_100.ron")).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = Simulation::new(scene);
    let (deepest, rise, unsolved, _) = guarantees_and_costs(&mut sim, 5.0);
    assert_eq!(unsolved, 0, "every LCP of the pile of 100 is solved");
    assert!(deepest >= -1e-6, "deepest gap {deepest} m");
    assert!(rise <= 1e-9, "energy rose by {rise} (relative) in one step");
}

/// The wall (`scenes/experimental/wall.ron`, 40 bricks in running bond, one
/// island of 2,700 unknowns) standing before the ball arrives: the
/// guarantees, with every LCP solved. Its bricks' corners lie on the edges of
/// the bricks below, where parry renamed the contact points with
/// rounding-level rotations; renamed contacts joined each step as new ones,
/// and Stewart–Trinkle's fixed-point iterations took 4–28 solves a step
/// (one step 136,885 pivots) and ended 3.1e-6 m deep. With the points named
/// by where they lie (`geometry::pair`), a step whose active set holds is
/// one solve: measured over the first 0.485 s, 87 of 97 steps one solve, 9
/// two (an active-set round), the first step three.
#[test]
fn the_wall_stands_with_its_gaps_and_energy_in_one_solve_a_step() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/experimental/wall.ron");
    let mut sim = Simulation::new(scene::load(&path).unwrap_or_else(|e| panic!("{e}")));
    let (deepest, rise, unsolved, costs) = guarantees_and_costs(&mut sim, 0.2);
    assert_eq!(unsolved, 0, "every LCP of the wall is solved");
    assert!(deepest >= -1e-6, "deepest gap {deepest} m");
    assert!(rise <= 1e-9, "energy rose by {rise} (relative) in one step");
    let most_solves = costs.iter().map(|c| c.solves).max().unwrap_or(0);
    assert!(most_solves <= 3, "{most_solves} solves in one step");
}
