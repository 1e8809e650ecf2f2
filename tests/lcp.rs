//! The LCP solver against closed forms, brute-force enumeration and the
//! invariants of complementarity.

mod common;

use common::{enumerate, random_p_matrix, random_spd, random_vector, rng};
use contactlab::lcp::{self, Lcp, LcpError, LcpStatus, LemkeOptions, siconos};
use nalgebra::{DMatrix, DVector};
use rand::Rng;
use std::f64::consts::PI;
use std::ops::AddAssign;

const REL_TOL: f64 = 1e-9;

fn solve(lcp: &Lcp) -> lcp::LcpSolution {
    lcp::solve(lcp, &LemkeOptions::default()).expect("valid options")
}

fn assert_complementary(lcp: &Lcp, solution: &lcp::LcpSolution) {
    assert_eq!(solution.status, LcpStatus::Solved, "status");
    let check = lcp.validate(&solution.z);
    assert!(
        check.relative() <= REL_TOL,
        "residual {:?} (relative {})",
        check,
        check.relative()
    );
    assert!(solution.residual <= REL_TOL);
}

#[test]
fn murty_exponential_example_takes_exactly_two_to_the_n_pivots() {
    for n in 1..=10 {
        let problem = Lcp::murty(n);
        let solution = solve(&problem);
        assert_complementary(&problem, &solution);
        assert_eq!(solution.pivots, 1 << n, "pivots for n = {n}");
        let mut expected = DVector::zeros(n);
        expected[n - 1] = 2f64.powi(n as i32);
        assert_eq!(solution.z, expected, "z for n = {n}");
    }
}

#[test]
fn symmetric_positive_definite_problems_match_enumeration() {
    let mut rng = rng(11);
    for trial in 0..200 {
        let n = 1 + trial % 8;
        let m = random_spd(&mut rng, n);
        let q = random_vector(&mut rng, n) * 3.0;
        let problem = Lcp::new(m.clone(), q.clone()).expect("square");
        let solution = solve(&problem);
        assert_complementary(&problem, &solution);
        let all = enumerate(&m, &q);
        assert_eq!(all.len(), 1, "an SPD LCP has exactly one solution");
        assert!((&solution.z - &all[0]).amax() <= 1e-9 * all[0].amax().max(1.0));
    }
}

#[test]
fn p_matrix_problems_have_the_unique_enumerated_solution() {
    let mut rng = rng(12);
    for trial in 0..200 {
        let n = 1 + trial % 8;
        let m = random_p_matrix(&mut rng, n);
        let q = random_vector(&mut rng, n) * 5.0;
        let problem = Lcp::new(m.clone(), q.clone()).expect("square");
        let solution = solve(&problem);
        assert_complementary(&problem, &solution);
        let all = enumerate(&m, &q);
        assert_eq!(all.len(), 1, "a P-matrix LCP has exactly one solution");
        assert!((&solution.z - &all[0]).amax() <= 1e-9 * all[0].amax().max(1.0));
    }
}

/// Two degenerate problems (zeros in q) on which the lowest-index tie rule cycles
/// until the pivot limit, found by a seeded search over small integer data.
fn cycling_problems() -> Vec<Lcp> {
    let rows = |n: usize, data: &[f64]| DMatrix::from_row_slice(n, n, data);
    vec![
        Lcp::new(
            rows(
                5,
                &[
                    2., 2., -2., 1., 3., 3., 2., -1., -2., 1., 0., 3., -2., -1., 1., 0., 0., 2.,
                    0., 1., 3., -1., 1., 0., 3.,
                ],
            ),
            DVector::from_vec(vec![-1., -1., 0., -1., 0.]),
        )
        .expect("square"),
        Lcp::new(
            rows(
                6,
                &[
                    1., 2., -1., -2., -2., 0., -2., 2., 3., 2., 0., 3., 0., 3., 1., 3., -2., 0.,
                    3., 3., -2., -2., 2., 1., 3., -2., 2., 3., 3., -2., 2., 3., 0., 3., 2., 0.,
                ],
            ),
            DVector::from_vec(vec![0., -2., -2., -1., -2., -2.]),
        )
        .expect("square"),
    ]
}

#[test]
fn degenerate_problems_terminate_only_with_lexicographic_resolution() {
    for problem in cycling_problems() {
        let plain = lcp::solve(
            &problem,
            &LemkeOptions {
                lexicographic: false,
                restarts: 0,
                max_pivots: Some(2000),
                ..Default::default()
            },
        )
        .expect("valid options");
        assert_eq!(
            plain.status,
            LcpStatus::MaxPivots,
            "lowest-index rule cycles"
        );
        let lexico = solve(&problem);
        assert_complementary(&problem, &lexico);
        assert!(lexico.pivots < 50);
    }
}

#[test]
fn degenerate_problems_with_zero_q_and_repeated_columns_are_solved() {
    let mut rng = rng(13);
    for trial in 0..300 {
        let n = 2 + trial % 7;
        // Integer data with repeated columns and many zero entries of q.
        let mut m = DMatrix::from_fn(n, n, |_, _| rng.random_range(-2i32..=3) as f64);
        for i in 0..n {
            m[(i, i)] = m[(i, i)].abs() + 1.0;
        }
        let m = m.transpose() * &m; // positive definite keeps a solution guaranteed
        let mut m = m;
        let copy_from = rng.random_range(0..n);
        let copy_to = (copy_from + 1) % n;
        let column = m.column(copy_from).into_owned();
        m.set_column(copy_to, &column);
        let q = DVector::from_fn(n, |_, _| {
            if rng.random_bool(0.5) {
                0.0
            } else {
                -(rng.random_range(1..=3) as f64)
            }
        });
        let problem = Lcp::new(m.clone(), q.clone()).expect("square");
        let solution = solve(&problem);
        if enumerate(&m, &q).is_empty() {
            assert_ne!(solution.status, LcpStatus::Solved, "trial {trial}");
        } else {
            assert_complementary(&problem, &solution);
        }
    }
}

/// Stewart–Trinkle (29) for p contacts on a system with `dof` generalized
/// coordinates: unknowns (β, c_n, λ) and the matrix of §3.4.
fn stewart_trinkle_lcp(rng: &mut rand::rngs::StdRng, contacts: usize, edges: usize) -> Lcp {
    let dof = 6 * (1 + contacts / 2);
    let mass = random_spd(rng, dof);
    let minv = mass.clone().try_inverse().expect("SPD");
    let k = edges;
    let mut normals = DMatrix::zeros(dof, contacts);
    let mut friction = DMatrix::zeros(dof, contacts * k);
    let mut mu = Vec::new();
    for j in 0..contacts {
        normals.set_column(j, &random_vector(rng, dof));
        let t1 = random_vector(rng, dof);
        let t2 = random_vector(rng, dof);
        for i in 0..k {
            let theta = 2.0 * PI * i as f64 / k as f64;
            friction.set_column(j * k + i, &(&t1 * theta.cos() + &t2 * theta.sin()));
        }
        mu.push(rng.random_range(0.0..2.0));
    }
    let (nb, nc) = (contacts * k, contacts);
    let size = nb + 2 * nc;
    let mut m = DMatrix::zeros(size, size);
    let dtmd = friction.transpose() * &minv * &friction;
    let dtmn = friction.transpose() * &minv * &normals;
    let ntmn = normals.transpose() * &minv * &normals;
    m.view_mut((0, 0), (nb, nb)).copy_from(&dtmd);
    m.view_mut((0, nb), (nb, nc)).copy_from(&dtmn);
    m.view_mut((nb, 0), (nc, nb)).copy_from(&dtmn.transpose());
    m.view_mut((nb, nb), (nc, nc)).copy_from(&ntmn);
    for j in 0..contacts {
        for i in 0..k {
            m[(j * k + i, nb + nc + j)] = 1.0; // Ẽ
            m[(nb + nc + j, j * k + i)] = -1.0; // −Ẽᵀ
        }
        m[(nb + nc + j, nb + j)] = mu[j]; // μ̃
    }
    let h = 0.01;
    let v = random_vector(rng, dof) * 2.0;
    let force = random_vector(rng, dof) * 10.0;
    let free = &v + &minv * &force * h;
    let gaps = DVector::from_fn(nc, |_, _| rng.random_range(-1e-3..1e-3));
    let mut q = DVector::zeros(size);
    q.rows_mut(0, nb).copy_from(&(friction.transpose() * &free));
    q.rows_mut(nb, nc)
        .copy_from(&(gaps / h + normals.transpose() * &free));
    Lcp::new(m, q).expect("square")
}

#[test]
fn stewart_trinkle_friction_lcps_are_always_solved() {
    let mut rng = rng(14);
    for trial in 0..300 {
        let contacts = 1 + trial % 6;
        let edges = 2 + trial % 15;
        let problem = stewart_trinkle_lcp(&mut rng, contacts, edges);
        let solution = solve(&problem);
        assert_eq!(
            solution.status,
            LcpStatus::Solved,
            "trial {trial}: {contacts} contacts, {edges} edges"
        );
        assert_complementary(&problem, &solution);
    }
}

#[test]
fn a_problem_without_solution_ends_on_a_ray() {
    for n in 1..=6 {
        let problem =
            Lcp::new(-DMatrix::identity(n, n), DVector::from_element(n, -1.0)).expect("square");
        let solution = solve(&problem);
        assert_eq!(solution.status, LcpStatus::RayTermination, "n = {n}");
    }
}

/// `solve_either`: a solved LCP is the dense reference's own solution; a
/// ray is confirmed on the structured representation, with both runs'
/// pivots; the pivot limit ends it at once.
#[test]
fn solve_either_repeats_only_failed_or_ray_runs_on_the_structured_representation() {
    let options = LemkeOptions::default();
    let mut rng = rng(41);
    let m = random_spd(&mut rng, 6);
    let solvable = Lcp::new(m, random_vector(&mut rng, 6)).expect("square");
    let (dense, either) = (
        solve(&solvable),
        lcp::solve_either(&solvable, &options).expect("valid"),
    );
    assert_eq!(either.status, LcpStatus::Solved);
    assert_eq!((either.z, either.pivots), (dense.z, dense.pivots));

    let ray = Lcp::new(-DMatrix::identity(4, 4), DVector::from_element(4, -1.0)).expect("square");
    let either = lcp::solve_either(&ray, &options).expect("valid");
    let structured = lcp::solve_structured(&ray.m, &ray.q, &options).expect("valid");
    assert_eq!(either.status, LcpStatus::RayTermination);
    assert_eq!(either.pivots, solve(&ray).pivots + structured.pivots);

    let limited = LemkeOptions {
        max_pivots: Some(100),
        ..Default::default()
    };
    let murty = lcp::solve_either(&Lcp::murty(8), &limited).expect("valid");
    assert_eq!((murty.status, murty.pivots), (LcpStatus::MaxPivots, 100));
}

#[test]
fn warm_start_from_the_solution_basis_needs_no_pivot() {
    let mut rng = rng(15);
    for _ in 0..50 {
        let problem = stewart_trinkle_lcp(&mut rng, 4, 8);
        let cold = solve(&problem);
        assert_complementary(&problem, &cold);
        let warm = lcp::solve(
            &problem,
            &LemkeOptions {
                warm_start: Some(cold.basis.clone()),
                ..Default::default()
            },
        )
        .expect("valid options");
        assert_complementary(&problem, &warm);
        assert!(warm.warm_started);
        assert_eq!(warm.pivots, 0);
    }
}

#[test]
fn warm_start_from_a_neighbouring_problem_is_correct_and_cheaper() {
    let mut rng = rng(16);
    let (mut cold_pivots, mut warm_pivots) = (0, 0);
    for _ in 0..50 {
        let problem = stewart_trinkle_lcp(&mut rng, 6, 8);
        let previous = solve(&problem);
        // The next step changes velocities and gaps (the β and c_n rows); the λ
        // rows of (29) stay zero.
        let mut next = problem.clone();
        let moving = 6 * 8 + 6;
        let nudge = random_vector(&mut rng, moving) * 1e-3;
        next.q.rows_mut(0, moving).add_assign(&nudge);
        let cold = solve(&next);
        let warm = lcp::solve(
            &next,
            &LemkeOptions {
                warm_start: Some(previous.basis.clone()),
                ..Default::default()
            },
        )
        .expect("valid options");
        assert_complementary(&next, &cold);
        assert_complementary(&next, &warm);
        cold_pivots += cold.pivots;
        warm_pivots += warm.pivots;
    }
    assert!(
        warm_pivots * 2 < cold_pivots,
        "warm {warm_pivots} cold {cold_pivots}"
    );
}

#[test]
fn a_singular_warm_start_basis_falls_back_to_a_cold_start() {
    // Column 0 of M is zero, so a basis with z₀ basic is singular.
    let m = DMatrix::from_row_slice(2, 2, &[0.0, 1.0, 0.0, 2.0]);
    let problem = Lcp::new(m, DVector::from_vec(vec![1.0, -1.0])).expect("square");
    let solution = lcp::solve(
        &problem,
        &LemkeOptions {
            warm_start: Some(vec![0]),
            ..Default::default()
        },
    )
    .expect("valid options");
    assert!(!solution.warm_started);
    assert_complementary(&problem, &solution);
    assert_eq!(solution.z, DVector::from_vec(vec![0.0, 0.5]));
}

#[test]
fn a_custom_covering_vector_gives_the_same_unique_solution() {
    let mut rng = rng(17);
    for _ in 0..50 {
        let n = 6;
        let m = random_p_matrix(&mut rng, n);
        let q = random_vector(&mut rng, n);
        let problem = Lcp::new(m, q).expect("square");
        let d = DVector::from_fn(n, |i, _| 1.0 + i as f64);
        let by_e = solve(&problem);
        let by_d = lcp::solve(
            &problem,
            &LemkeOptions {
                covering: Some(d),
                ..Default::default()
            },
        )
        .expect("valid options");
        assert_complementary(&problem, &by_d);
        assert!((&by_e.z - &by_d.z).amax() < 1e-9);
    }
}

#[test]
fn invalid_input_is_an_error_not_a_panic() {
    assert!(matches!(
        Lcp::new(DMatrix::zeros(2, 3), DVector::zeros(2)),
        Err(LcpError::Dimension { .. })
    ));
    assert!(matches!(
        Lcp::new(DMatrix::from_element(1, 1, f64::NAN), DVector::zeros(1)),
        Err(LcpError::NotFinite { what: "M" })
    ));
    let problem =
        Lcp::new(DMatrix::identity(2, 2), DVector::from_element(2, -1.0)).expect("square");
    let bad_covering = LemkeOptions {
        covering: Some(DVector::from_vec(vec![1.0, 0.0])),
        ..Default::default()
    };
    assert!(matches!(
        lcp::solve(&problem, &bad_covering),
        Err(LcpError::Covering { expected: 2 })
    ));
    let bad_basis = LemkeOptions {
        warm_start: Some(vec![5]),
        ..Default::default()
    };
    assert!(matches!(
        lcp::solve(&problem, &bad_basis),
        Err(LcpError::WarmStart { index: 5, n: 2 })
    ));
    let bad_fallback = LemkeOptions {
        warm_fallback: Some(vec![2]),
        ..Default::default()
    };
    assert!(matches!(
        lcp::solve(&problem, &bad_fallback),
        Err(LcpError::WarmStart { index: 2, n: 2 })
    ));
    let empty = Lcp::new(DMatrix::zeros(0, 0), DVector::zeros(0)).expect("empty");
    assert_eq!(solve(&empty).status, LcpStatus::Solved);
}

/// When the warm start's basis is singular, the second warm start comes
/// before the cold start: M = [[0, 1], [1, 2]], q = (−1, −3) has the solution
/// z = (1, 1), w = 0, whose basis {z₁, z₂} solves it without a pivot; the basis
/// {z₁} alone has the singular block M₁₁ = 0.
#[test]
fn a_singular_warm_start_falls_back_to_the_second_one() {
    let problem = Lcp::new(
        DMatrix::from_row_slice(2, 2, &[0.0, 1.0, 1.0, 2.0]),
        DVector::from_vec(vec![-1.0, -3.0]),
    )
    .expect("square");
    let options = LemkeOptions {
        warm_start: Some(vec![0]),
        warm_fallback: Some(vec![0, 1]),
        ..Default::default()
    };
    let solution = lcp::solve(&problem, &options).expect("valid options");
    assert_eq!(solution.status, LcpStatus::Solved);
    assert!(solution.warm_started);
    assert_eq!(solution.pivots, 0);
    assert!((solution.z[0] - 1.0).abs() < 1e-12 && (solution.z[1] - 1.0).abs() < 1e-12);
    assert!(solution.residual < 1e-12);
}

#[test]
fn the_pivot_limit_is_reported() {
    let problem = Lcp::murty(8);
    let solution = lcp::solve(
        &problem,
        &LemkeOptions {
            max_pivots: Some(100),
            ..Default::default()
        },
    )
    .expect("valid options");
    assert_eq!(solution.status, LcpStatus::MaxPivots);
    assert_eq!(solution.pivots, 100);
}

#[test]
fn siconos_format_round_trips_exactly() {
    let mut rng = rng(18);
    let problem = stewart_trinkle_lcp(&mut rng, 3, 5);
    let text = siconos::format(&problem, "round trip\nsecond line");
    let back = siconos::parse(&text, std::path::Path::new("mem.dat")).expect("parses");
    assert_eq!(back, problem);
}

#[test]
fn siconos_format_is_column_major() {
    let text = "2\n0\n2\n2\n2\t2\n1 2\n3 4\n-5 -6\nfree text after q\n";
    let problem = siconos::parse(text, std::path::Path::new("t.dat")).expect("parses");
    assert_eq!(
        problem.m,
        DMatrix::from_row_slice(2, 2, &[1.0, 3.0, 2.0, 4.0])
    );
    assert_eq!(problem.q, DVector::from_vec(vec![-5.0, -6.0]));
}

#[test]
fn siconos_errors_name_file_line_column_and_field() {
    let path = std::path::Path::new("bad.dat");
    let cases = [
        (
            "2\n0\n2\n2\n2 2\n1 x\n3 4\n-5 -6\n",
            "bad.dat:6:3: M[2,1]: expected a number, found `x`",
        ),
        (
            "2\n1\n",
            "bad.dat:2:1: storage: only dense storage (0) is supported, found `1`",
        ),
        (
            "2\n0\n2\n3\n",
            "bad.dat:4:1: columns: expected 2 (the problem size), found 3",
        ),
        (
            "2\n0\n2\n2\n2 2\n1 2\n3 4\n-5\n",
            "bad.dat:8:1: q[2]: unexpected end of file",
        ),
        (
            "-1\n",
            "bad.dat:1:1: n: expected a size (a non-negative integer), found `-1`",
        ),
        // The header claims n = 100000 and one entry follows: an error at
        // the missing entry, not an 80 GB allocation and an abort.
        (
            "100000\n0\n100000\n100000\n100000 100000\n1\n",
            "bad.dat:6:1: M[2,1]: unexpected end of file",
        ),
    ];
    for (text, expected) in cases {
        let error = siconos::parse(text, path).expect_err("must fail");
        assert_eq!(error.to_string(), expected);
    }
}

/// `lcp::backward_error` measures each row against the magnitude of its own
/// terms ρᵢ = |qᵢ| + Σⱼ |Mᵢⱼ zⱼ| (closed forms on M = I, q = (−1, 2), whose
/// solution is z = (1, 0), w = (0, 2)), and sees a row of large terms as
/// exact where `Validation` sees zᵢwᵢ.
#[test]
fn backward_error_measures_each_row_against_its_terms() {
    let m = DMatrix::<f64>::identity(2, 2);
    let q = DVector::from_vec(vec![-1.0, 2.0]);
    let error = |z: [f64; 2], w: [f64; 2]| {
        lcp::backward_error(
            &m,
            &q,
            &DVector::from_vec(z.to_vec()),
            &DVector::from_vec(w.to_vec()),
        )
    };
    assert_eq!(error([1.0, 0.0], [0.0, 2.0]), 0.0);
    // w₀ off by 1e-10 where z₀ = 1 pushes: ρ₀ = |q₀| + |z₀| = 2.
    assert_eq!(error([1.0, 0.0], [1e-10, 2.0]), 5e-11);
    // A negative slack: ρ₁ = |q₁| = 2.
    assert_eq!(error([1.0, 0.0], [0.0, -1e-8]), 5e-9);
    // A negative impulse must be set to zero: row 1 changes by 1e-9 of ρ₁ =
    // 2 + 1e-9.
    let negative = error([1.0, -1e-9], [0.0, 2.0 - 1e-9]);
    assert!(
        (negative - 1e-9 / (2.0 + 1e-9)).abs() <= 1e-24,
        "{negative}"
    );
    // Both z₁ and w₁ positive: setting z₁ = 1 to zero changes row 1 by
    // |z₁|/ρ₁ = 1/3, moving q₁ by w₁ = 3 is 3/3: the smaller counts.
    assert!((error([1.0, 1.0], [0.0, 3.0]) - 1.0 / 3.0).abs() <= 1e-15);

    // The Delassus block of a 1 kg box under a 10⁷ kg one, with the exact
    // impulses ≈ 1e6 N·s (weights times g h): w = M z + q rounds at ≈ 1e-10,
    // so zᵢwᵢ is ≈ 1e-4 of ‖q‖ while every row is exact to a few units of
    // roundoff of its terms.
    let heavy = Lcp::new(
        DMatrix::from_row_slice(2, 2, &[1.0, -1.0, -1.0, 1.0 + 1e-7]),
        DVector::from_vec(vec![-0.0981, 0.0]),
    )
    .expect("square");
    let z = DVector::from_vec(vec![0.0981 * (1.0 + 1e7), 0.0981e7]);
    let w = &heavy.m * &z + &heavy.q;
    let backward = lcp::backward_error(&heavy.m, &heavy.q, &z, &w);
    let relative = heavy.validate(&z).relative();
    assert!(backward <= 1e-15, "{backward}");
    assert!(relative > 1e-5, "{relative}");
}
