//! Contacts at scale: the broad phase finds exactly the pairs an all-pairs
//! loop finds, its world boxes are the shapes' tightest, a contact's
//! storage does not grow with the number of bodies, the sparse Delassus
//! assembly equals the dense product JᵀM⁻¹J, and warm starts by contact
//! identity keep the pivots of a resting pile small.

mod common;

use contactlab::collision::broad_phase::{
    PARALLEL_BODIES, SweepSpace, candidate_pairs, candidate_pairs_into, world_box,
};
use contactlab::collision::{self, BroadPhase, Margin, Search};
use contactlab::geometry::Shape;
use contactlab::model::{ContactId, Dimension, Model, Other};
use contactlab::scene;
use contactlab::sim::Simulation;
use contactlab::solver::lemke::assembly::Impulses;
use nalgebra::{DMatrix, UnitQuaternion, Vector3};
use rand::{Rng, SeedableRng, rngs::StdRng};
use std::path::Path;

/// A row of `n` spheres and boxes resting on a table, each touching its
/// neighbours: spatial when `spatial`, else planar.
fn row_scene(n: usize, spatial: bool) -> scene::Scene {
    let bodies: Vec<String> = (0..n)
        .map(|i| {
            let x = 0.2 * i as f64;
            let shape = if i % 2 == 0 {
                "Sphere(radius: 0.1)".to_owned()
            } else {
                "Box(half_extents: (0.1, 0.1, 0.1))".to_owned()
            };
            if spatial {
                format!("(name: \"b{i}\", shape: {shape}, mass: 1.0, position: ({x}, 0.0, 0.1))")
            } else {
                format!("(name: \"b{i}\", shape: {shape}, mass: 1.0, position: ({x}, 0.1, 0.0))")
            }
        })
        .collect();
    let (dimension, gravity, normal) = if spatial {
        ("Spatial", "(0.0, 0.0, -9.81)", "(0.0, 0.0, 1.0)")
    } else {
        ("Planar", "(0.0, -9.81, 0.0)", "(0.0, 1.0, 0.0)")
    };
    let text = format!(
        "Scene(name: \"row\", params: (dt: 0.005, mu: 0.5, edges: 8), system: Rigid((dimension: {dimension}, gravity: {gravity}, bodies: [{}], surfaces: [(name: \"table\", normal: {normal})])))",
        bodies.join(", ")
    );
    scene::parse(&text, Path::new("row.ron")).expect("valid scene")
}

#[test]
fn the_broad_phase_finds_exactly_the_overlapping_pairs() {
    let mut rng = StdRng::seed_from_u64(12);
    for case in 0..200 {
        let n = rng.random_range(0..60);
        let spread = rng.random_range(0.2..5.0);
        let margin = rng.random_range(0.0..0.3);
        let dimension = if case % 2 == 0 {
            Dimension::Spatial
        } else {
            Dimension::Planar
        };
        let spheres: Vec<(Vector3<f64>, f64)> = (0..n)
            .map(|_| {
                let mut c = Vector3::new(
                    rng.random_range(-spread..spread),
                    rng.random_range(-spread..spread),
                    rng.random_range(-spread..spread),
                );
                if dimension == Dimension::Planar {
                    c.z = 0.0;
                }
                (c, rng.random_range(0.01..0.5))
            })
            .collect();
        let found = candidate_pairs(&spheres, margin, dimension);
        // Every pair whose spheres come within the margin must be found; the
        // broad phase may add pairs that are close on every axis.
        for i in 0..n {
            for j in i + 1..n {
                let reach = spheres[i].1 + spheres[j].1 + margin;
                if (spheres[i].0 - spheres[j].0).norm() <= reach {
                    assert!(
                        found.binary_search(&(i, j)).is_ok(),
                        "case {case}: pair ({i}, {j}) missed"
                    );
                }
            }
        }
        for &(i, j) in &found {
            assert!(i < j);
            let reach = spheres[i].1 + spheres[j].1 + margin;
            let d = spheres[i].0 - spheres[j].0;
            assert!(
                d.iter().all(|x| x.abs() <= reach),
                "case {case}: ({i}, {j}) are apart"
            );
        }
        assert!(found.windows(2).all(|w| w[0] < w[1]), "sorted, unique");
    }
}

/// A search whose margin has a reach per body ([`Margin`]) finds, for each
/// pair, exactly what a search with that pair's margin for every pair finds:
/// the pile of 50 in its loose layers and landing, bodies given random
/// reaches (some none), against the search at the widest margin filtered by
/// each pair's own; both bodies' boxes are padded by their reach and the
/// sweep pads nothing more.
#[test]
fn a_margin_per_body_finds_what_each_pairs_own_margin_finds() {
    let mut rng = StdRng::seed_from_u64(31);
    let mut sim = Simulation::new(scene::generate::pile(50).expect("generated pile"));
    let mut compared = 0;
    for round in 0..6 {
        for _ in 0..20 {
            sim.step().expect("the pile steps");
        }
        let model = sim.model();
        let Model::Rigid(system) = model else {
            unreachable!("a pile is rigid")
        };
        let q = &sim.state.q;
        let fixed = rng.random_range(0.0..0.05);
        let reach: Vec<f64> = (0..system.bodies.len())
            .map(|_| {
                if rng.random_bool(0.3) {
                    0.0
                } else {
                    rng.random_range(0.0..0.4)
                }
            })
            .collect();
        let margin = Margin::with_reach(fixed, &reach);
        let own = |id: &ContactId| match id.b {
            Other::Body(j) => margin.pair(id.a, j),
            _ => margin.body(id.a),
        };
        let mut found = Vec::new();
        collision::find_gaps(
            model,
            q,
            margin,
            &mut found,
            &mut BroadPhase::default(),
            Search::on(1 + round % 2),
        );
        let mut expected: Vec<(ContactId, f64)> = collision::gaps(model, q, margin.widest())
            .into_iter()
            .filter(|(id, gap)| *gap <= own(id))
            .collect();
        found.sort_by_key(|a| a.0);
        expected.sort_by_key(|a| a.0);
        assert_eq!(found.len(), expected.len(), "round {round}");
        for ((a, ga), (b, gb)) in found.iter().zip(&expected) {
            assert_eq!(a, b, "round {round}");
            assert!(
                (ga - gb).abs() <= 1e-12,
                "round {round}: {a:?} gap {ga} against {gb}"
            );
            assert!(*ga <= own(a), "round {round}: {a:?} beyond its margin");
        }
        compared += found.len();
    }
    assert!(compared > 200, "{compared} contacts compared");
}

/// Grains in a tall column with a few walls and floors among them, as in a
/// silo: the sweep in rows across its axis finds exactly the pairs whose
/// boxes come within the margin on every axis, each once, sorted.
#[test]
fn the_broad_phase_in_rows_finds_exactly_the_overlapping_boxes() {
    let mut rng = StdRng::seed_from_u64(31);
    let mut space = SweepSpace::default();
    let mut found = Vec::new();
    let mut touching = 0;
    for case in 0..120 {
        // Every fourth case large enough for the rows on two threads
        // (`PARALLEL_BODIES`).
        let n = if case % 4 == 0 {
            rng.random_range(PARALLEL_BODIES..PARALLEL_BODIES + 600)
        } else {
            rng.random_range(2..600)
        };
        let dimension = if case % 3 == 0 {
            Dimension::Planar
        } else {
            Dimension::Spatial
        };
        let margin = rng.random_range(0.0..0.02);
        let grain = rng.random_range(0.002..0.03);
        let axes = if dimension == Dimension::Planar { 2 } else { 3 };
        // A column: narrow across, tall along a random axis.
        let tall = rng.random_range(0..axes);
        let walls = rng.random_range(0..=n / 6);
        let mut boxes: Vec<(Vector3<f64>, Vector3<f64>)> = (0..n)
            .map(|i| {
                let mut c = Vector3::from_fn(|_, _| rng.random_range(-0.15..0.15));
                c[tall] *= 10.0;
                let mut h = Vector3::from_fn(|_, _| grain * rng.random_range(0.6..1.2));
                if i < walls {
                    // A wall or floor: long on one or two axes.
                    h[rng.random_range(0..3)] = rng.random_range(0.1..2.0);
                    h[rng.random_range(0..3)] = rng.random_range(0.1..2.0);
                }
                if dimension == Dimension::Planar {
                    c.z = 0.0;
                }
                (c, h)
            })
            .collect();
        // Every fifth case, a few boxes that are not finite (a body whose
        // pose blew up): paired with every box the test cannot rule out,
        // for the narrow phase to reject.
        if case % 5 == 0 {
            for _ in 0..rng.random_range(1..=3) {
                let i = rng.random_range(0..n);
                let x = rng.random_range(0..axes);
                match rng.random_range(0..3) {
                    0 => boxes[i].0[x] = f64::NAN,
                    1 => boxes[i].0[x] = f64::INFINITY,
                    _ => boxes[i].1[x] = f64::INFINITY,
                }
            }
        }
        candidate_pairs_into(&boxes, margin, dimension, &mut space, &mut found, 1);
        let mut on_two = Vec::new();
        candidate_pairs_into(&boxes, margin, dimension, &mut space, &mut on_two, 2);
        assert_eq!(on_two, found, "case {case}: two threads and one differ");
        let mut expected = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                let ((ci, hi), (cj, hj)) = (boxes[i], boxes[j]);
                if !(0..axes).any(|x| (ci[x] - cj[x]).abs() > hi[x] + hj[x] + margin) {
                    expected.push((i, j));
                }
            }
        }
        touching += expected.len();
        assert_eq!(found, expected, "case {case}: n = {n}, {walls} walls");
    }
    assert!(touching > 10_000, "the columns are dense: {touching} pairs");
}

/// The broad phase's world box of a turned box or capsule holds every point
/// of the shape and touches it on each side: the extreme points along ±x,
/// ±y, ±z (a box's corners, a capsule's end caps) lie on its faces.
#[test]
fn a_world_box_is_the_tightest_box_around_the_shape() {
    let mut rng = StdRng::seed_from_u64(7);
    for case in 0..500 {
        let x = Vector3::new(
            rng.random_range(-2.0..2.0),
            rng.random_range(-2.0..2.0),
            rng.random_range(-2.0..2.0),
        );
        let axis = Vector3::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        );
        let r = UnitQuaternion::from_scaled_axis(axis * rng.random_range(0.0..3.0));
        let size = |rng: &mut StdRng| rng.random_range(0.01..0.8);
        let (shape, extremes): (Shape, Vec<Vector3<f64>>) = if case % 2 == 0 {
            let h = [size(&mut rng), size(&mut rng), size(&mut rng)];
            let corners = (0..8)
                .map(|k| {
                    let s = |b: usize| if k >> b & 1 == 1 { 1.0 } else { -1.0 };
                    x + r * Vector3::new(s(0) * h[0], s(1) * h[1], s(2) * h[2])
                })
                .collect();
            (Shape::Box { half_extents: h }, corners)
        } else {
            let (l, rad) = (size(&mut rng), size(&mut rng));
            let mut points = Vec::new();
            for end in [-l, l] {
                let c = x + r * Vector3::new(end, 0.0, 0.0);
                for k in 0..3 {
                    for sign in [-1.0, 1.0] {
                        let mut e = Vector3::zeros();
                        e[k] = sign * rad;
                        points.push(c + e);
                    }
                }
            }
            (
                Shape::Capsule {
                    half_length: l,
                    radius: rad,
                },
                points,
            )
        };
        let (centre, half) = world_box(&shape, x, &r);
        assert_eq!(centre, x);
        for k in 0..3 {
            let (lo, hi) = (centre[k] - half[k], centre[k] + half[k]);
            let min = extremes.iter().map(|p| p[k]).fold(f64::INFINITY, f64::min);
            let max = extremes
                .iter()
                .map(|p| p[k])
                .fold(f64::NEG_INFINITY, f64::max);
            assert!(
                (min - lo).abs() < 1e-12 && (max - hi).abs() < 1e-12,
                "case {case}, axis {k}: box [{lo}, {hi}], shape [{min}, {max}]"
            );
        }
    }
}

#[test]
fn a_contact_stores_only_its_bodies_blocks() {
    for spatial in [true, false] {
        let (per, k) = if spatial { (6, 8) } else { (3, 2) };
        let mut sizes = Vec::new();
        for n in [2, 10, 40] {
            let scene = row_scene(n, spatial);
            let contacts = contactlab::collision::contacts(&scene.model, &scene.initial.q, 8, 1e-6);
            assert!(!contacts.is_empty());
            for c in &contacts {
                let bodies = c.jacobian.blocks().len();
                assert!(bodies == 1 || bodies == 2);
                assert_eq!(c.jacobian.width(), per * bodies);
                assert_eq!(c.jacobian.stored(), (k + 1) * per * bodies);
                sizes.push(c.jacobian.stored());
            }
        }
        // The same sizes at 2 and at 40 bodies.
        assert!(sizes.iter().all(|&s| s <= (k + 1) * 2 * per));
    }
}

#[test]
fn the_sparse_delassus_matrix_equals_the_dense_product() {
    for spatial in [true, false] {
        let scene = row_scene(12, spatial);
        let model: &Model = &scene.model;
        let contacts = contactlab::collision::contacts(model, &scene.initial.q, 5, 1e-6);
        let refs: Vec<_> = contacts.iter().collect();
        let dof = model.dof();
        let sparse = Impulses::new(&refs, model.mass_inverse_form(), dof).delassus();
        let dense_minv = model.mass_inverse();
        let dense = Impulses::new(
            &refs,
            contactlab::model::MassInverse::Dense(&dense_minv),
            dof,
        )
        .delassus();
        let columns: Vec<_> = contacts
            .iter()
            .flat_map(|c| {
                let d = c.jacobian.dense_friction(dof);
                d.column_iter().map(|x| x.into_owned()).collect::<Vec<_>>()
            })
            .chain(contacts.iter().map(|c| c.jacobian.dense_normal(dof)))
            .collect();
        let j = DMatrix::from_columns(&columns);
        let reference = j.transpose() * &dense_minv * &j;
        assert_eq!(sparse.shape(), reference.shape());
        let scale = reference.amax();
        assert!((&sparse - &reference).amax() <= 1e-14 * scale);
        assert!((&dense - &reference).amax() <= 1e-14 * scale);
    }
}

/// On `pile.ron` after it has settled (1 s), the warm start by contact
/// identity leaves only a few pivots per step: the persisting contacts keep
/// their basic unknowns, so Lemke pivots only for the contacts whose state
/// changes (a stick–slip flicker costs a pivot or two each). Measured: 6.2
/// pivots per step over 50 steps at LCP size ≈ 476, where a cold start takes
/// about one pivot per basic unknown (over a hundred).
#[test]
fn warm_starts_keep_the_pivots_of_a_resting_pile_small() {
    let mut sim = common::load_simulation("pile.ron");
    let steps = (1.0 / sim.params.dt) as usize;
    for _ in 0..steps {
        let r = sim.step().expect("params");
        assert_eq!(r.status, contactlab::lcp::LcpStatus::Solved);
    }
    let (mut pivots, mut size, n) = (0, 0, 50);
    for _ in 0..n {
        let r = sim.step().expect("params");
        assert_eq!(r.status, contactlab::lcp::LcpStatus::Solved);
        pivots += r.pivots;
        size += r.lcp_size;
    }
    let mean = pivots as f64 / n as f64;
    println!(
        "settled pile: {mean} pivots per step, LCP size {}",
        size / n
    );
    assert!(size / n > 100, "the pile is in contact");
    assert!(mean <= 10.0, "{mean} pivots per step");
}

/// A search whose boxes the last sweep covers takes its pairs from it
/// (`LastSweep`): the generated pile of 50 (spheres, tilted boxes and
/// capsules) and the silo of 300, searched at q with a wide margin and
/// then, with one broad phase's work space, at a q moved by random
/// velocities with a narrower margin: the same gaps, bit for bit, as a
/// fresh search, and the pairs were reused. A body moved far makes the next
/// search sweep again, with the same result as a fresh one.
#[test]
fn a_search_the_last_sweep_covers_finds_what_a_fresh_sweep_finds() {
    let mut rng = StdRng::seed_from_u64(57);
    let scenes = [
        (scene::generate::pile(50).expect("generated pile"), 0.5),
        (scene::granular::silo(300).expect("generated silo"), 0.3),
    ];
    let (mut reused, mut along_reused, mut swept) = (0, 0, 0);
    for (scene, settle) in scenes {
        // Where the bodies lie on each other.
        let mut sim = Simulation::new(scene);
        let steps = (settle / sim.params.dt).round() as usize;
        for _ in 0..steps {
            sim.step().expect("the scene steps");
        }
        let model = sim.model();
        let q = &sim.state.q;
        let dof = sim.state.v.len();
        // Wide enough for neighbours in the loose layers to be near.
        let static_margin = 0.5 * model.length_scale();
        for case in 0..20 {
            let speed = rng.random_range(0.0..2.0);
            let v = nalgebra::DVector::from_fn(dof, |_, _| rng.random_range(-speed..speed));
            let h = 0.005;
            // The wide search covers what moving by h/2 at these speeds
            // can bring within the narrow margin.
            let wide = static_margin + h * model.max_point_speed(&v);
            let moved = model.integrate(q, &v, 0.5 * h);
            let mut shared = BroadPhase::default();
            let mut first = Vec::new();
            collision::find_gaps(model, q, wide, &mut first, &mut shared, Search::on(2));
            let mut narrow = Vec::new();
            collision::find_gaps(
                model,
                &moved,
                static_margin,
                &mut narrow,
                &mut shared,
                Search::on(2),
            );
            let mut fresh = Vec::new();
            collision::find_gaps(
                model,
                &moved,
                static_margin,
                &mut fresh,
                &mut BroadPhase::default(),
                Search::on(2),
            );
            let bits = |g: &[(contactlab::model::ContactId, f64)]| {
                g.iter()
                    .map(|(id, gap)| (*id, gap.to_bits()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(&narrow), bits(&fresh), "case {case}");
            assert!(
                shared.pairs.len() > 40,
                "case {case}: {} pairs",
                shared.pairs.len()
            );
            reused += usize::from(shared.reused);
            // Searches further and further along: each is the fresh one,
            // whether the last sweep covers it or not.
            for k in 2..14 {
                let along = model.integrate(q, &v, 0.5 * h * k as f64);
                let margin = if k % 3 == 0 { wide } else { static_margin };
                collision::find_gaps(
                    model,
                    &along,
                    margin,
                    &mut narrow,
                    &mut shared,
                    Search::on(2),
                );
                collision::find_gaps(
                    model,
                    &along,
                    margin,
                    &mut fresh,
                    &mut BroadPhase::default(),
                    Search::on(2),
                );
                assert_eq!(bits(&narrow), bits(&fresh), "case {case}, {k}");
                along_reused += usize::from(shared.reused);
                swept += usize::from(!shared.reused);
            }
            // One body far away: not covered, swept again.
            let mut far = moved.clone();
            let body = rng.random_range(0..dof / 6);
            far[7 * body] += 10.0;
            collision::find_gaps(
                model,
                &far,
                static_margin,
                &mut narrow,
                &mut shared,
                Search::on(2),
            );
            assert!(!shared.reused, "case {case}");
            collision::find_gaps(
                model,
                &far,
                static_margin,
                &mut fresh,
                &mut BroadPhase::default(),
                Search::on(2),
            );
            assert_eq!(bits(&narrow), bits(&fresh), "case {case}");
        }
    }
    assert!(
        along_reused > 40 && swept > 40,
        "{along_reused} reused, {swept} swept"
    );
    assert_eq!(reused, 40, "every narrow search covered");
}

/// Islands the step solved already are reused when their LCP comes back
/// bit for bit (`solve::memo`): on the settled pile of 22, a second solve
/// in which one island's right-hand side moved solves that island again
/// and takes every other from the first, with the same impulses bit for
/// bit and every island's complementarity kept. A step that does not start
/// where the last one ended reuses nothing; the step that does reuses the
/// islands a solve would give again (same LCP and warm start, no pivot),
/// bit for bit what a solver without the memo gives, and none once the
/// warm start is forgotten.
#[test]
fn a_solve_reuses_the_islands_whose_lcp_came_back_unchanged() {
    use contactlab::solver::{ContactProblem, ContactSolver, Form, SolveBuffers};
    use contactlab::stepper::StepSettings;
    let mut sim = Simulation::new(scene::generate::pile(22).expect("generated pile"));
    for _ in 0..100 {
        sim.step().expect("the pile steps");
    }
    let model = sim.model();
    let (q, v) = (sim.state.q.clone(), sim.state.v.clone());
    let h = sim.params.dt;
    let contacts = contactlab::collision::contacts(model, &q, 8, 0.05 * model.length_scale());
    let refs: Vec<&contactlab::model::Contact> = contacts.iter().collect();
    let islands = contactlab::solver::lemke::islands::islands(&refs);
    assert!(islands.len() >= 3, "{} islands", islands.len());
    let mu = vec![0.5; refs.len()];
    let terms: Vec<f64> = refs.iter().map(|c| c.gap.max(0.0) / h).collect();
    let settings = StepSettings::default().solver_options(&sim.params, None);
    let mut solver = ContactSolver::default();
    let mut buffers = SolveBuffers::default();
    buffers.begin_step(0.0);
    macro_rules! problem {
        ($normal_terms:expr) => {
            ContactProblem {
                contacts: &refs,
                map: model.mass_inverse_form(),
                dof: v.len(),
                free: &v,
                normal_terms: $normal_terms,
                friction_terms: &[],
                relaxed_normal_terms: None,
                mu: &mu,
                activation: None,
                up: model.up(),
            }
        };
    }
    // Complementarity of every pair (z, w) within 1e-9 of the scale.
    let complementary = |s: &contactlab::solver::ContactSolution| {
        let scale = s.z.amax().max(s.w.amax()).max(1e-12);
        s.z.iter().zip(s.w.iter()).all(|(z, w)| {
            *z >= -1e-9 * scale && *w >= -1e-9 * scale && (z * w).abs() <= 1e-9 * scale * scale
        })
    };
    let first = solver.solve(&problem!(&terms), Form::Position, &settings, &mut buffers);
    assert_eq!(first.status, contactlab::lcp::LcpStatus::Solved);
    assert_eq!(first.reused, 0);
    assert_eq!(first.islands, islands.len());
    assert!(complementary(&first));
    // The contacts of the island that pushes hardest asked to close 5 µm
    // more in the step.
    let hardest = (0..refs.len())
        .max_by(|&a, &b| first.z[first.normal_index(a)].total_cmp(&first.z[first.normal_index(b)]))
        .expect("contacts");
    let moved = islands
        .iter()
        .find(|island| island.contains(&hardest))
        .expect("every contact is in an island");
    let mut pushed = terms.clone();
    for &j in moved {
        pushed[j] -= 1e-3;
    }
    let second = solver.solve(&problem!(&pushed), Form::Position, &settings, &mut buffers);
    assert_eq!(second.status, contactlab::lcp::LcpStatus::Solved);
    assert_eq!(second.reused, islands.len() - 1);
    assert!(complementary(&second));
    for (j, _) in refs.iter().enumerate().filter(|(j, _)| !moved.contains(j)) {
        let i = first.normal_index(j);
        assert_eq!(first.z[i].to_bits(), second.z[i].to_bits(), "contact {j}");
    }
    assert_ne!(first.z, second.z, "the pushed island was solved again");
    // A step that does not start where the last one ended.
    buffers.begin_step(1.0);
    let third = solver.solve(&problem!(&pushed), Form::Position, &settings, &mut buffers);
    assert_eq!(third.reused, 0);
    assert!(complementary(&third));
    // The step that starts where it ended, against a solver without memo.
    buffers.end_step(2.0);
    buffers.begin_step(2.0);
    let mut without = solver.clone();
    let fourth = solver.solve(&problem!(&pushed), Form::Position, &settings, &mut buffers);
    let mut empty = SolveBuffers::default();
    empty.begin_step(2.0);
    let solved = without.solve(&problem!(&pushed), Form::Position, &settings, &mut empty);
    assert_eq!(solved.reused, 0);
    assert!(
        fourth.reused > 0 && fourth.reused <= islands.len(),
        "{} of {} islands reused",
        fourth.reused,
        islands.len()
    );
    let bits = |x: &nalgebra::DVector<f64>| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&fourth.z), bits(&solved.z));
    assert_eq!(bits(&fourth.w), bits(&solved.w));
    assert_eq!(bits(&fourth.velocity), bits(&solved.velocity));
    assert_eq!(fourth.pivots, solved.pivots);
    // Forgotten warm starts: a solve would start elsewhere.
    buffers.end_step(3.0);
    buffers.begin_step(3.0);
    solver.clear();
    let fifth = solver.solve(&problem!(&pushed), Form::Position, &settings, &mut buffers);
    assert_eq!(fifth.reused, 0);
    assert!(complementary(&fifth));
}

/// The generated pile of 50 after 100 steps (0.5 s), most of it landed.
fn pile_of_50_landed() -> Simulation {
    let mut sim = Simulation::new(scene::generate::pile(50).expect("generated pile"));
    for _ in 0..100 {
        sim.step().expect("the pile steps");
    }
    sim
}

/// `q` with every third body (from the `case % 3`-th) moved by a random
/// velocity for 5 ms, the others held bit for bit.
fn with_a_third_moved(
    model: &Model,
    q: &nalgebra::DVector<f64>,
    rng: &mut StdRng,
    case: usize,
) -> nalgebra::DVector<f64> {
    let bodies = q.len() / 7;
    let v = nalgebra::DVector::from_fn(6 * bodies, |_, _| rng.random_range(-0.5..0.5));
    let moved = model.integrate(q, &v, 0.005);
    let mut next = q.clone();
    for body in (case % 3..bodies).step_by(3) {
        for k in 7 * body..7 * body + 7 {
            next[k] = moved[k];
        }
    }
    next
}

/// Gaps with their bits, for comparing searches bit for bit.
fn gap_bits(
    gaps: &[(contactlab::model::ContactId, f64)],
) -> Vec<(contactlab::model::ContactId, u64)> {
    gaps.iter().map(|(id, gap)| (*id, gap.to_bits())).collect()
}

/// The narrow phase's points kept by pair and pose (`model::pair_memo`,
/// what Stewart–Trinkle's iterations turn on): on the generated pile of 50,
/// searches that move a third of the bodies and hold the others bit for bit
/// find the held pairs again, and every search (contacts with Jacobians,
/// and gaps, on one thread and two) gives bit for bit what a search without
/// the memo gives; so does a search after a body's shape changed at an
/// unchanged pose.
#[test]
fn pairs_found_again_by_pose_give_what_a_search_computes() {
    use contactlab::collision::ContactSet;
    let sim = pile_of_50_landed();
    let mut model = sim.model().clone();
    let mut rng = StdRng::seed_from_u64(23);
    let margin = 0.1 * model.length_scale();
    let edges = 8;
    let mut kept = ContactSet::default();
    kept.broad.kept.memo.enabled = true;
    let described = |set: &ContactSet| {
        set.as_slice()
            .iter()
            .map(|c| format!("{c:?}"))
            .collect::<Vec<_>>()
    };
    let compare =
        |model: &Model, q: &nalgebra::DVector<f64>, kept: &mut ContactSet, threads, case| {
            collision::find_contacts(
                model,
                q,
                edges,
                margin,
                kept,
                Search::on(threads),
                &mut Vec::new(),
            );
            let hits = kept.broad.kept.hits();
            let mut fresh = ContactSet::default();
            collision::find_contacts(
                model,
                q,
                edges,
                margin,
                &mut fresh,
                Search::on(threads),
                &mut Vec::new(),
            );
            assert!(fresh.len() > 50, "case {case}: {} contacts", fresh.len());
            assert_eq!(described(kept), described(&fresh), "case {case}");
            let (mut gaps, mut fresh_gaps) = (Vec::new(), Vec::new());
            collision::find_gaps(
                model,
                q,
                margin,
                &mut gaps,
                &mut kept.broad,
                Search::on(threads),
            );
            let hits = hits + kept.broad.kept.hits();
            collision::find_gaps(
                model,
                q,
                margin,
                &mut fresh_gaps,
                &mut BroadPhase::default(),
                Search::on(threads),
            );
            assert_eq!(gap_bits(&gaps), gap_bits(&fresh_gaps), "case {case}");
            hits
        };
    let mut q = sim.state.q.clone();
    let mut hits = 0;
    for case in 0..24 {
        let next = with_a_third_moved(&model, &q, &mut rng, case);
        let threads = 1 + case % 2;
        hits += compare(&model, &q, &mut kept, threads, case);
        hits += compare(&model, &next, &mut kept, threads, case);
        q = next;
    }
    assert!(hits > 500, "{hits} pairs found again");
    // A box twice as large where it was: its pairs are computed again.
    let Model::Rigid(system) = &mut model else {
        panic!("a rigid pile");
    };
    let boxed = system
        .bodies
        .iter()
        .position(|b| matches!(b.shape, Shape::Box { .. }))
        .expect("the pile has boxes");
    if let Shape::Box { half_extents } = &mut system.bodies[boxed].shape {
        half_extents.iter_mut().for_each(|x| *x *= 2.0);
    }
    compare(&model, &q, &mut kept, 1, 99);
}

/// A search that copies the contacts of bodies that kept their poses from
/// the search before ([`contactlab::collision::reuse`]) gives, bit for bit, what
/// a full search gives: on the pile of 50 after 100 steps, a third of the
/// bodies moved at each search and the others held, contacts with their
/// Jacobians and gaps, on one thread and two, each copied item taken from
/// the place `sources` names.
#[test]
fn a_search_that_copies_held_bodies_gives_what_a_full_search_computes() {
    use contactlab::collision::ContactSet;
    use contactlab::collision::{NOT_COPIED, Reuse};
    let sim = pile_of_50_landed();
    let model = sim.model().clone();
    let mut rng = StdRng::seed_from_u64(29);
    let margin = 0.1 * model.length_scale();
    let edges = 8;
    let described = |c: &contactlab::model::Contact| format!("{c:?}");
    let mut q = sim.state.q.clone();
    let (mut last, mut last_gaps) = (ContactSet::default(), Vec::new());
    collision::find_contacts(
        &model,
        &q,
        edges,
        margin,
        &mut last,
        Search::on(1),
        &mut Vec::new(),
    );
    collision::find_gaps(
        &model,
        &q,
        margin,
        &mut last_gaps,
        &mut BroadPhase::default(),
        Search::on(1),
    );
    let (mut copied, mut computed) = (0, 0);
    let mut keep = Vec::new();
    for case in 0..24 {
        let next = with_a_third_moved(&model, &q, &mut rng, case);
        let threads = 1 + case % 2;
        assert!(
            model.same_bodies(&q, &next, false, &mut keep),
            "case {case}"
        );
        assert!(keep.iter().any(|k| !k), "case {case}: a body moved");
        let (mut reused, mut sources) = (ContactSet::default(), Vec::new());
        let reuse = Reuse {
            keep: &keep,
            previous: last.as_slice(),
        };
        collision::find_contacts(
            &model,
            &next,
            edges,
            margin,
            &mut reused,
            Search {
                threads,
                reuse: Some(reuse),
            },
            &mut sources,
        );
        let mut fresh = ContactSet::default();
        collision::find_contacts(
            &model,
            &next,
            edges,
            margin,
            &mut fresh,
            Search::on(threads),
            &mut Vec::new(),
        );
        assert!(fresh.len() > 50, "case {case}: {} contacts", fresh.len());
        assert_eq!(sources.len(), reused.len(), "case {case}");
        assert_eq!(reused.len(), fresh.len(), "case {case}");
        for (k, (c, f)) in reused.as_slice().iter().zip(fresh.as_slice()).enumerate() {
            assert_eq!(described(c), described(f), "case {case}, contact {k}");
            if sources[k] == NOT_COPIED {
                computed += 1;
            } else {
                copied += 1;
                assert_eq!(
                    described(&last.as_slice()[sources[k]]),
                    described(f),
                    "case {case}"
                );
            }
        }
        let mut gaps = Vec::new();
        let reuse = Reuse {
            keep: &keep,
            previous: &last_gaps[..],
        };
        let mut broad = BroadPhase::default();
        collision::find_gaps(
            &model,
            &next,
            margin,
            &mut gaps,
            &mut broad,
            Search {
                threads,
                reuse: Some(reuse),
            },
        );
        let mut fresh_gaps = Vec::new();
        collision::find_gaps(
            &model,
            &next,
            margin,
            &mut fresh_gaps,
            &mut BroadPhase::default(),
            Search::on(threads),
        );
        assert_eq!(gap_bits(&gaps), gap_bits(&fresh_gaps), "case {case}");
        q = next;
        last = fresh;
        last_gaps = fresh_gaps;
    }
    assert!(
        copied > 1_000 && computed > 1_000,
        "{copied} copied, {computed} computed"
    );
}

/// Random packings of spheres (radii 2 cm ± 20 %, centres on a jittered
/// lattice a little wider than the mean diameter, in slabs, columns and
/// blocks, so that most grains touch or nearly touch several others): the
/// search in rows of cells ([`candidate_pairs_into`]) and the narrow phase
/// find exactly the pairs an all-pairs loop finds within the margin, each
/// with its gap |xᵢ − xⱼ| − rᵢ − rⱼ, on one thread and on two.
#[test]
fn on_random_sphere_packings_the_search_finds_what_all_pairs_find() {
    let mut rng = StdRng::seed_from_u64(52);
    let mut compared = 0;
    for case in 0..8 {
        let n = [300, 700, 1_200, 2_000][case % 4];
        // Cells across two axes (the third open): a slab, a column or a
        // block, lying along x, y or z.
        let ([s0, s1], open) = [([16, 16], 2), ([5, 5], 2), ([10, 10], 0), ([9, 9], 1)][case % 4];
        let pitch = rng.random_range(0.034..0.040);
        let margin = rng.random_range(0.0..0.004);
        let grains: Vec<(Vector3<f64>, f64)> = (0..n)
            .map(|i| {
                let mut at = [0; 3];
                at[(open + 1) % 3] = i % s0;
                at[(open + 2) % 3] = (i / s0) % s1;
                at[open] = i / (s0 * s1);
                let [a, b, c] = at;
                let jitter = |rng: &mut StdRng| rng.random_range(-0.004..0.004);
                let centre = Vector3::new(
                    a as f64 * pitch + jitter(&mut rng),
                    b as f64 * pitch + jitter(&mut rng),
                    c as f64 * pitch + jitter(&mut rng),
                );
                (centre, 0.02 * rng.random_range(0.8..1.2))
            })
            .collect();
        let bodies: Vec<String> = grains
            .iter()
            .enumerate()
            .map(|(i, (c, r))| {
                format!(
                    "(name: \"g{i}\", shape: Sphere(radius: {r}), mass: 0.1, position: ({}, {}, {}))",
                    c.x, c.y, c.z
                )
            })
            .collect();
        let text = format!(
            "Scene(name: \"packing\", allow_initial_overlap: true, system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, -9.81), bodies: [{}])))",
            bodies.join(", ")
        );
        let scene = scene::parse(&text, Path::new("packing.ron")).expect("valid scene");
        let sim = Simulation::new(scene);
        let mut expected = Vec::new();
        for i in 0..n {
            for j in i + 1..n {
                let gap = (grains[i].0 - grains[j].0).norm() - grains[i].1 - grains[j].1;
                if gap <= margin {
                    expected.push((i, j, gap));
                }
            }
        }
        assert!(
            expected.len() > n,
            "case {case}: a dense packing ({} pairs)",
            expected.len()
        );
        for threads in [1, 2] {
            let mut found = Vec::new();
            collision::find_gaps(
                sim.model(),
                &sim.state.q,
                margin,
                &mut found,
                &mut BroadPhase::default(),
                Search::on(threads),
            );
            let mut pairs: Vec<(usize, usize, f64)> = found
                .iter()
                .map(|(id, gap)| match id.b {
                    Other::Body(j) => (id.a.min(j), id.a.max(j), *gap),
                    other => panic!("case {case}: a contact with {other:?}"),
                })
                .collect();
            pairs.sort_by_key(|x| (x.0, x.1));
            assert_eq!(
                pairs.len(),
                expected.len(),
                "case {case}, {threads} thread(s): n = {n}, margin {margin}"
            );
            for (got, want) in pairs.iter().zip(&expected) {
                assert_eq!((got.0, got.1), (want.0, want.1), "case {case}");
                assert!(
                    (got.2 - want.2).abs() <= 1e-12,
                    "case {case}: ({}, {}) gap {} against {}",
                    got.0,
                    got.1,
                    got.2,
                    want.2
                );
            }
            compared += pairs.len();
        }
    }
    assert!(compared > 20_000, "{compared} pairs compared");
}
