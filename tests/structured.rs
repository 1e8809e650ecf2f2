//! The structured Lemke solver (Lloyd's method over the contacts' Jacobian
//! blocks, `lcp::solve_structured`) against the dense reference tableau
//! (`lcp::solve` on the explicitly formed matrix) on random contact LCPs (29)
//! drawn from random scenes: planar and spatial piles of spheres, boxes and
//! capsules pushed into each other, 1–60 contacts, k = 3–16 friction
//! directions in space (the two-direction law in the plane); and on boxes
//! stacked face to face, where every vertex of (29) is degenerate.
//!
//! Both — and the structured solver forced into its product form
//! (`LemkeOptions::product_form_from` 0, the representation of large
//! islands) — must give the same status; every solution they call solved has a
//! relative complementarity residual of at most 1e-10 on the dense matrix.
//! Where the solution is unique they must agree: the frictionless problem
//! (the c_n block of (29)) of contacts whose normal Delassus matrix ñᵀWñ is
//! positive definite is an LCP with a P-matrix, whose solution is unique
//! (Cottle–Pang–Stone Thm. 3.3.7). With friction (29) has many solutions
//! whenever a pyramid edge is redundant, so there only status and residual
//! are compared.

use contactlab::lcp::{self, Lcp, LcpStatus, LemkeOptions, Principal};
use contactlab::model::{Contact, MassInverse, Model};
use contactlab::scene;
use contactlab::solver::lemke::operator::ContactLcp;
use nalgebra::{DMatrix, DVector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fmt::Write as _;
use std::path::Path;

/// The RON text of `n` random bodies in loose layers above a table, in the
/// plane or in space.
fn random_scene(rng: &mut StdRng, n: usize, planar: bool) -> String {
    let mut bodies = String::new();
    let per_layer = 5;
    for i in 0..n {
        let layer = (i / per_layer) as f64;
        let x = 0.2 * (i % per_layer) as f64 - 0.4 + rng.random_range(-0.02..0.02);
        let y = if planar {
            0.12 + 0.2 * layer
        } else {
            rng.random_range(-0.1..0.1)
        };
        let z = if planar { 0.0 } else { 0.12 + 0.2 * layer };
        let angle: f64 = rng.random_range(-0.6..0.6);
        let shape = match rng.random_range(0..3) {
            0 => format!("Sphere(radius: {:.3})", rng.random_range(0.06..0.1)),
            1 => format!(
                "Box(half_extents: ({:.3}, {:.3}, {:.3}))",
                rng.random_range(0.05..0.1),
                rng.random_range(0.04..0.08),
                rng.random_range(0.04..0.08)
            ),
            _ => format!(
                "Capsule(half_length: {:.3}, radius: {:.3})",
                rng.random_range(0.03..0.07),
                rng.random_range(0.03..0.05)
            ),
        };
        let orientation = if planar {
            format!("Angle({angle:.3})")
        } else {
            format!("AxisAngle((0.3, 1.0, 0.2), {angle:.3})")
        };
        let position = if planar {
            format!("({x:.3}, {y:.3}, 0.0)")
        } else {
            format!("({x:.3}, {y:.3}, {z:.3})")
        };
        let _ = writeln!(
            bodies,
            "(name: \"b{i}\", shape: {shape}, mass: {:.2}, position: {position}, orientation: {orientation}),",
            rng.random_range(0.2..2.0)
        );
    }
    let (dimension, gravity, normal) = if planar {
        ("Planar", "(0.0, -9.81, 0.0)", "(0.0, 1.0, 0.0)")
    } else {
        ("Spatial", "(0.0, 0.0, -9.81)", "(0.0, 0.0, 1.0)")
    };
    format!(
        "Scene(name: \"random\", params: (dt: 0.005, duration: 1.0, mu: 0.5), allow_initial_overlap: true,
         system: Rigid((dimension: {dimension}, gravity: {gravity}, bodies: [{bodies}],
         surfaces: [(name: \"table\", normal: {normal}, extent: 3.0)])))"
    )
}

/// A contact LCP of the random scene: bodies pushed down and together
/// (integrated along a random velocity for a random time) so that some
/// overlap and some are near, contacts within a margin, a random free
/// velocity v*, and q = Jᵀv* + gap/h on the normal rows as in (29).
struct Case {
    model: Model,
    q_config: DVector<f64>,
    v_free: DVector<f64>,
    edges: usize,
    mu: f64,
}

fn case(rng: &mut StdRng) -> Case {
    let planar = rng.random_bool(0.4);
    let n = rng.random_range(2..=40);
    let source = random_scene(rng, n, planar);
    let scene =
        scene::parse(&source, Path::new("random.ron")).expect("the generator writes valid scenes");
    let model = scene.model;
    let dof = model.dof();
    let q0 = scene.initial.q;
    // Every body falls and drifts towards x = 0, each in proportion to its
    // height and distance, so that the layers close up for up to 0.3 s.
    let mut v = DVector::from_fn(dof, |_, _| rng.random_range(-0.3..0.3));
    let (per_body, q_size, up) = if planar { (3, 3, 1) } else { (6, 7, 2) };
    for body in 0..dof / per_body {
        v[body * per_body] = -q0[body * q_size] * rng.random_range(1.0..3.0);
        v[body * per_body + up] = -q0[body * q_size + up] * rng.random_range(1.5..3.0);
    }
    let q = model.integrate(&q0, &v, rng.random_range(0.05..0.3));
    let v_free = DVector::from_fn(dof, |_, _| rng.random_range(-1.0..1.0));
    Case {
        model,
        q_config: q,
        v_free,
        edges: if planar { 2 } else { rng.random_range(3..=16) },
        mu: rng.random_range(0.0..1.0),
    }
}

/// A random contact LCP (29): 1–`most` of a random case's contacts (any
/// subset of contacts poses a contact LCP of its own), with μ = the case's
/// at every contact.
struct Drawn {
    case: Case,
    contacts: Vec<Contact>,
    mu: Vec<f64>,
}

impl Drawn {
    /// `None` when the case has no contacts.
    fn draw(rng: &mut StdRng, most: usize) -> Option<Self> {
        let case = case(rng);
        let mut contacts =
            contactlab::collision::contacts(&case.model, &case.q_config, case.edges, 0.03);
        contacts.truncate(rng.random_range(1..=most));
        if contacts.is_empty() {
            return None;
        }
        let mu = vec![case.mu; contacts.len()];
        Some(Self { case, contacts, mu })
    }

    /// The contacts' operator on the case's diagonal W.
    fn operator(&self) -> ContactLcp<'_> {
        let MassInverse::Diagonal(w) = self.case.model.mass_inverse_form() else {
            panic!("rigid bodies have a diagonal mass inverse");
        };
        let jacobians = self.contacts.iter().map(|c| &c.jacobian).collect();
        ContactLcp::new(jacobians, w.as_slice(), &self.mu)
    }

    /// (29)'s right-hand side: Jᵀ v* and, on the normal rows, γ/h.
    fn q(&self, operator: &ContactLcp<'_>, h: f64) -> DVector<f64> {
        let mut q = operator.transpose_times(&self.case.v_free);
        for (j, c) in self.contacts.iter().enumerate() {
            q[operator.layout.normal(j)] += c.gap / h;
        }
        q
    }
}

fn residual(m: &DMatrix<f64>, q: &DVector<f64>, z: &DVector<f64>) -> f64 {
    Lcp {
        m: m.clone(),
        q: q.clone(),
    }
    .validate(z)
    .relative()
}

/// The dense reference tableau, the structured solver and its product form
/// (`product_form_from` 0, the representation of large islands) on one
/// contact LCP: they end with the same status, and every solution they call
/// solved has a relative residual of at most 1e-10 on the dense matrix.
/// Returns the reference's status.
fn agree(operator: &ContactLcp<'_>, q: &DVector<f64>, what: &str) -> LcpStatus {
    let options = LemkeOptions::default();
    let product_form = LemkeOptions {
        product_form_from: 0,
        ..LemkeOptions::default()
    };
    let dense = operator.to_dense();
    let reference = lcp::solve(
        &Lcp {
            m: dense.clone(),
            q: q.clone(),
        },
        &options,
    )
    .expect("valid options");
    let structured = lcp::solve_structured(operator, q, &options).expect("valid options");
    let product = lcp::solve_structured(operator, q, &product_form).expect("valid options");
    for (name, other) in [("structured", &structured), ("product form", &product)] {
        assert_eq!(reference.status, other.status, "{what} ({name})");
    }
    if reference.status == LcpStatus::Solved {
        for (name, z) in [
            ("dense", &reference.z),
            ("structured", &structured.z),
            ("product form", &product.z),
        ] {
            let r = residual(&dense, q, z);
            assert!(r <= 1e-10, "{what}: {name} residual {r:e}");
        }
    }
    reference.status
}

#[test]
fn structured_and_dense_lemke_agree_on_random_contact_lcps() {
    let mut rng = StdRng::seed_from_u64(20261125);
    let h = 0.005;
    let options = LemkeOptions::default();
    // The product form over the KKT factorization, which large islands
    // use, on every size.
    let product_form = LemkeOptions {
        product_form_from: 0,
        ..LemkeOptions::default()
    };
    let (mut cases, mut solved, mut unique) = (0, 0, 0);
    let mut sizes = Vec::new();
    while cases < 60 {
        let Some(drawn) = Drawn::draw(&mut rng, 60) else {
            continue;
        };
        cases += 1;
        let contacts = &drawn.contacts;
        let operator = drawn.operator();
        let layout = operator.layout;
        let q = drawn.q(&operator, h);
        let dense = operator.to_dense();
        sizes.push((contacts.len(), dense.nrows()));
        let what = format!(
            "case {cases}: {} contacts, LCP size {}",
            contacts.len(),
            dense.nrows()
        );
        if agree(&operator, &q, &what) == LcpStatus::Solved {
            solved += 1;
        }

        // The frictionless problem: unique where ñᵀWñ is positive definite.
        let normals: Vec<usize> = (0..layout.contacts).map(|j| layout.normal(j)).collect();
        let principal = Principal::new(&operator, normals.clone());
        let p = normals.len();
        let block = DMatrix::from_fn(p, p, |i, j| dense[(normals[i], normals[j])]);
        let q_n = DVector::from_fn(p, |i, _| q[normals[i]]);
        let smallest = block.clone().symmetric_eigenvalues().min();
        if smallest <= 1e-8 * block.diagonal().max() {
            continue;
        }
        unique += 1;
        let reference = lcp::solve(
            &Lcp {
                m: block.clone(),
                q: q_n.clone(),
            },
            &options,
        )
        .expect("valid options");
        assert_eq!(
            reference.status,
            LcpStatus::Solved,
            "a P-matrix LCP is solvable"
        );
        for (name, options) in [("structured", &options), ("product form", &product_form)] {
            let structured =
                lcp::solve_structured(&principal, &q_n, options).expect("valid options");
            assert_eq!(structured.status, LcpStatus::Solved, "{name}");
            let scale = reference.z.amax().max(1e-12);
            let difference = (&reference.z - &structured.z).amax();
            assert!(
                difference <= 1e-9 * scale,
                "case {cases} ({name}): unique frictionless solutions differ by {difference:e} (scale {scale:e})"
            );
            assert!(residual(&block, &q_n, &structured.z) <= 1e-10);
        }
    }
    // The draw covers what the property is about.
    let most = sizes.iter().map(|s| s.0).max().unwrap_or(0);
    let few = sizes.iter().filter(|s| s.0 <= 4).count();
    eprintln!(
        "{cases} cases, {solved} solved, {unique} unique; contacts up to {most}; sizes {sizes:?}"
    );
    assert!(
        solved >= 45,
        "most random contact LCPs are solved ({solved} of {cases})"
    );
    assert!(
        unique >= 10,
        "enough unique frictionless problems ({unique})"
    );
    assert!(
        most >= 55 && few >= 3,
        "the draw spans small and large problems"
    );
}

/// The velocity-space refinement (`ContactLcp::polish`) at the basis Lemke
/// ended on gives back Lemke's solution on well-conditioned contact LCPs:
/// the same z to 1e-9 of its scale, a w that is M z + q of the dense matrix
/// (its friction, λ and μ rows included) and a velocity change that is
/// W Jᵀ z, with and without the equilibration the steppers apply.
#[test]
fn velocity_space_refinement_keeps_lemkes_solutions() {
    let mut rng = StdRng::seed_from_u64(20261126);
    let h = 0.005;
    let options = LemkeOptions::default();
    let (mut cases, mut checked) = (0, 0);
    while cases < 40 {
        let Some(drawn) = Drawn::draw(&mut rng, 40) else {
            continue;
        };
        cases += 1;
        let case = &drawn.case;
        let operator = drawn.operator();
        let q = drawn.q(&operator, h);
        let dense = operator.to_dense();
        let solution = lcp::solve_structured(&operator, &q, &options).expect("valid options");
        if solution.status != LcpStatus::Solved {
            continue;
        }
        let mut expected_change = DVector::zeros(case.model.dof());
        operator.add_velocity_change(&solution.z, &mut expected_change);
        let mut equilibrated = drawn.operator();
        equilibrated.equilibrate();
        for (name, op) in [("plain", &operator), ("equilibrated", &equilibrated)] {
            let Some(polished) = op.polish(&q, &solution.basis, &solution.z) else {
                panic!("case {cases} ({name}): Lemke's basis block factors");
            };
            let scale = solution.z.amax().max(1e-12);
            let difference = (&polished.z - &solution.z).amax();
            assert!(
                difference <= 1e-9 * scale,
                "case {cases} ({name}): z moved by {difference:e} (scale {scale:e})"
            );
            let w_dense = &dense * &polished.z + &q;
            let w_error = (&polished.w - &w_dense).amax();
            assert!(
                w_error <= 1e-9 * q.amax().max(1.0),
                "case {cases} ({name}): w differs from M z + q by {w_error:e}"
            );
            let mut change = DVector::zeros(case.model.dof());
            op.add_flat(&polished.velocity_change, &mut change);
            let change_error = (&change - &expected_change).amax();
            assert!(
                change_error <= 1e-9 * expected_change.amax().max(1.0),
                "case {cases} ({name}): velocity change off by {change_error:e}"
            );
            assert!(residual(&dense, &q, &polished.z) <= 1e-10);
        }
        checked += 1;
    }
    assert!(
        checked >= 30,
        "most cases are solved and checked ({checked})"
    );
}

/// `lcp::within_backward_error` rejects from a bound before it computes the
/// error (ρᵢ ≤ |qᵢ| + max |Mₖⱼ| ‖z‖₁, with a margin of 10⁻⁶), so the bound
/// must hold: every entry of the contact operator, plain, equilibrated and
/// with compliance, is at most its `magnitude` up to rounding (an
/// equilibrated diagonal entry comes out 1 + 2⁻⁵² where the magnitude is
/// 1); and on random z ≥ 0 (some zero) with w = M z + q,
/// nudged so that some rows come out negative, the shortcut answers as the
/// error does at every limit.
#[test]
fn the_backward_error_shortcut_decides_as_the_error_does() {
    use contactlab::lcp::LcpMatrix;
    let mut rng = StdRng::seed_from_u64(20261127);
    let h = 0.005;
    let (mut cases, mut early) = (0, 0);
    while cases < 30 {
        let Some(drawn) = Drawn::draw(&mut rng, 30) else {
            continue;
        };
        cases += 1;
        let plain = drawn.operator();
        let mut equilibrated = drawn.operator();
        equilibrated.equilibrate();
        let mut compliant = drawn.operator();
        compliant.equilibrate();
        compliant.set_regularization(1e-4);
        for (name, op) in [
            ("plain", &plain),
            ("equilibrated", &equilibrated),
            ("compliant", &compliant),
        ] {
            let dense = op.to_dense();
            assert!(
                dense.amax() <= op.magnitude() * (1.0 + 1e-12),
                "case {cases} ({name}): max |M| {:e} above the magnitude {:e}",
                dense.amax(),
                op.magnitude()
            );
            let q = drawn.q(op, h);
            let n = q.len();
            for round in 0..4 {
                let z = DVector::from_fn(n, |_, _| {
                    if rng.random_bool(0.5) {
                        0.0
                    } else {
                        rng.random_range(0.0..1.0)
                    }
                });
                let mut w = lcp::product_plus(op, &z, &q);
                for wi in w.iter_mut() {
                    *wi -= 10f64.powi(-rng.random_range(2..15)) * rng.random_range(0.0..1.0);
                }
                let error = lcp::backward_error(op, &q, &z, &w);
                for limit in [1e-13, 1e-9, 1e-5, 1e-2, 1.0] {
                    let within = lcp::within_backward_error(op, &q, &z, &w, limit);
                    assert_eq!(
                        within,
                        error <= limit,
                        "case {cases} ({name}) round {round}: error {error:e}, limit {limit:e}"
                    );
                    early += usize::from(!within);
                }
            }
        }
    }
    assert!(early > 0, "the rejections were exercised");
}

/// The RON text of boxes stacked face to face on a table: `columns` side by
/// side, each of `courses` boxes, every box offset from the one below by
/// none, half or a random share of its width (running bond), so that
/// corners rest on faces and on edges.
fn stacked_scene(rng: &mut StdRng, columns: usize, courses: usize) -> String {
    let (hx, hy, hz) = (0.1, 0.05, 0.05);
    let mut bodies = String::new();
    // One offset per course for every column, so that the courses stay
    // rows of boxes side by side.
    let mut offset = 0.0;
    for course in 0..courses {
        if course > 0 {
            offset += match rng.random_range(0..3) {
                0 => 0.0,
                1 => hx,
                _ => rng.random_range(-0.5..0.5) * hx,
            };
        }
        let z = hz + 2.0 * hz * course as f64;
        for c in 0..columns {
            let x = 2.0 * hx * c as f64 * 1.001 + offset;
            let _ = write!(
                bodies,
                "(name: \"b{c}_{course}\", shape: Box(half_extents: ({hx}, {hy}, {hz})), mass: {m}, position: ({x}, 0.0, {z})),",
                m = rng.random_range(0.5..3.0)
            );
        }
    }
    format!(
        "Scene(name: \"stack\", params: (dt: 0.005), system: Rigid((dimension: Spatial, gravity: (0.0, 0.0, -9.81), bodies: [{bodies}], surfaces: [(name: \"table\", normal: (0.0, 0.0, 1.0))])))"
    )
}

/// Boxes resting face to face, the LCPs whose every vertex is degenerate
/// (four corner normals per face, rank 3, and k tied friction rows at every
/// sticking contact): the dense reference, the structured solver and its
/// product form agree on the status and solve to a residual of 1e-10, at
/// k = 4, 8 and 16, resting (v* the step's gravity) and struck (a random
/// v* on top).
#[test]
fn structured_and_dense_lemke_agree_on_face_stacked_boxes() {
    let mut rng = StdRng::seed_from_u64(20261129);
    let h = 0.005;
    let (mut solved, mut largest) = (0, 0);
    for trial in 0..48 {
        let edges = [4, 8, 16][trial % 3];
        let (columns, courses) = (rng.random_range(1..=4), rng.random_range(2..=5));
        let source = stacked_scene(&mut rng, columns, courses);
        let scene = scene::parse(&source, Path::new("stack.ron"))
            .expect("the generator writes valid scenes");
        let model = scene.model;
        let q_config = scene.initial.q;
        let dof = model.dof();
        let struck = trial % 2 == 1;
        let v_free = DVector::from_fn(dof, |i, _| {
            let gravity = if i % 6 == 2 { -9.81 * h } else { 0.0 };
            gravity
                + if struck {
                    rng.random_range(-0.5..0.5)
                } else {
                    0.0
                }
        });
        let contacts = contactlab::collision::contacts(&model, &q_config, edges, 0.0);
        assert!(!contacts.is_empty(), "trial {trial}: the stack touches");
        let drawn = Drawn {
            case: Case {
                model,
                q_config,
                v_free,
                edges,
                mu: rng.random_range(0.2..1.0),
            },
            mu: Vec::new(),
            contacts,
        };
        let drawn = Drawn {
            mu: vec![drawn.case.mu; drawn.contacts.len()],
            ..drawn
        };
        let operator = drawn.operator();
        let q = drawn.q(&operator, h);
        let size = operator.layout.size();
        largest = largest.max(size);
        let what = format!(
            "trial {trial}: k = {edges}, {} contacts, LCP size {size}",
            drawn.contacts.len()
        );
        if agree(&operator, &q, &what) == LcpStatus::Solved {
            solved += 1;
        }
    }
    eprintln!("48 stacks, {solved} solved, LCP sizes up to {largest}");
    assert_eq!(solved, 48, "every stack's LCP is solved");
}
