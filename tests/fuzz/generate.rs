//! Structured random inputs: rigid and linear scenes built field by field
//! (valid RON, values from the sensible to the absurd), command lines, and
//! `.dat` LCPs.

use super::mutate::NUMBERS;
use rand::Rng;
use rand::rngs::StdRng;
use std::fmt::Write as _;

/// Steps a case may take: every case stays a fraction of a second.
pub const MAX_STEPS: u64 = 60;

fn log_uniform(rng: &mut StdRng, lo: f64, hi: f64) -> f64 {
    rng.random_range(lo.ln()..hi.ln()).exp()
}

fn signed(rng: &mut StdRng, scale: f64) -> f64 {
    rng.random_range(-scale..scale)
}

/// A number as RON and the `.dat` reader take it.
fn num(x: f64) -> String {
    format!("{x:?}")
}

fn vec3(v: [f64; 3]) -> String {
    format!("({}, {}, {})", num(v[0]), num(v[1]), num(v[2]))
}

/// An occasional absurd value in place of a sensible one.
fn sometimes_absurd(rng: &mut StdRng, sensible: f64) -> String {
    if rng.random_bool(0.05) {
        NUMBERS[rng.random_range(0..NUMBERS.len())].to_owned()
    } else {
        num(sensible)
    }
}

/// A random scene and its time step.
pub fn scene(rng: &mut StdRng) -> (String, f64) {
    let dt = log_uniform(rng, 1e-4, 0.05);
    let stepper = [
        "stewart-trinkle",
        "moreau-jean",
        "anitescu-potra",
        "euler-lcp",
    ][rng.random_range(0..4)];
    let mut params = format!(
        "dt: {}, duration: 1.0, mu: {}, stepper: r#{stepper}, ncp_iterations: {}",
        sometimes_absurd(rng, dt),
        {
            let value = rng.random_range(0.0..2.0);
            sometimes_absurd(rng, value)
        },
        rng.random_range(1..=3)
    );
    if stepper == "moreau-jean" {
        let _ = write!(
            params,
            ", restitution: {}",
            num(rng.random_range(0.0..=1.0))
        );
    }
    let linear = rng.random_bool(0.25);
    let planar = linear || rng.random_bool(0.5);
    if !planar {
        let _ = write!(params, ", edges: {}", rng.random_range(3..=12));
    }
    let system = if linear {
        linear_system(rng)
    } else {
        let _ = write!(
            params,
            ", damping: {}, stiffness: {}",
            num(log_uniform(rng, 1e-2, 1e6)),
            num(log_uniform(rng, 1e-2, 1e6))
        );
        rigid_system(rng, planar)
    };
    let text = format!(
        "Scene(\n    name: \"random\",\n    allow_initial_overlap: {},\n    params: ({params}),\n    system: {system},\n)\n",
        rng.random_bool(0.3)
    );
    (text, dt)
}

fn rigid_system(rng: &mut StdRng, planar: bool) -> String {
    let n = rng.random_range(1..=6);
    // Spread: bodies on a line, clear of each other and of the floor; else
    // anywhere in a small box (overlaps are refused unless allowed).
    let spread = rng.random_bool(0.6);
    let up = if planar { 1 } else { 2 };
    let mut bodies = String::new();
    for i in 0..n {
        let size = log_uniform(rng, 0.01, 1.0);
        let shape = match rng.random_range(0..3) {
            0 => format!("Sphere(radius: {})", sometimes_absurd(rng, size)),
            1 => format!(
                "Box(half_extents: {})",
                vec3([
                    size,
                    size * rng.random_range(0.2..2.0),
                    size * rng.random_range(0.2..2.0)
                ])
            ),
            _ => format!(
                "Capsule(half_length: {}, radius: {})",
                num(size * rng.random_range(0.0..3.0)),
                num(size * rng.random_range(0.1..1.0))
            ),
        };
        let mut position = [signed(rng, 2.0), signed(rng, 2.0), signed(rng, 2.0)];
        if spread {
            position = [0.0; 3];
            position[0] = 8.0 * i as f64;
            position[up] = 4.0 + signed(rng, 1.0);
        }
        if planar && rng.random_bool(0.9) {
            position[2] = 0.0;
        }
        let orientation = if planar {
            format!("Angle({})", num(signed(rng, 4.0)))
        } else {
            match rng.random_range(0..3) {
                0 => format!("Angle({})", num(signed(rng, 4.0))),
                1 => format!(
                    "AxisAngle({}, {})",
                    vec3([signed(rng, 1.0), signed(rng, 1.0), signed(rng, 1.0)]),
                    num(signed(rng, 4.0))
                ),
                _ => format!(
                    "Quaternion(({}, {}, {}, {}))",
                    num(signed(rng, 1.0)),
                    num(signed(rng, 1.0)),
                    num(signed(rng, 1.0)),
                    num(signed(rng, 1.0))
                ),
            }
        };
        let mut velocity = [signed(rng, 10.0), signed(rng, 10.0), signed(rng, 10.0)];
        let mut spin = [signed(rng, 20.0), signed(rng, 20.0), signed(rng, 20.0)];
        if planar && rng.random_bool(0.9) {
            velocity[2] = 0.0;
            spin[0] = 0.0;
            spin[1] = 0.0;
        }
        let _ = writeln!(
            bodies,
            "            (name: \"b{i}\", shape: {shape}, mass: {}, position: {}, orientation: {orientation}, velocity: {}, angular_velocity: {}),",
            {
                let value = log_uniform(rng, 1e-3, 1e8);
                sometimes_absurd(rng, value)
            },
            vec3(position),
            vec3(velocity),
            vec3(spin)
        );
    }
    let mut surfaces = String::new();
    for j in 0..rng.random_range(0..=2) {
        let mut normal = [0.0; 3];
        normal[up] = 1.0;
        if rng.random_bool(0.3) {
            normal = [signed(rng, 1.0), signed(rng, 1.0), signed(rng, 1.0)];
            if planar {
                normal[2] = 0.0;
            }
        }
        let _ = writeln!(
            surfaces,
            "            (name: \"s{j}\", normal: {}),",
            vec3(normal)
        );
    }
    let mut gravity = [0.0; 3];
    gravity[up] = -9.81 * rng.random_range(0.0..3.0);
    let mut extra = String::new();
    if n >= 2 && rng.random_bool(0.2) {
        let kind = match (planar, rng.random_range(0..3)) {
            (true, 0) | (true, 1) => "Pin".to_owned(),
            (false, 0) => "Ball".to_owned(),
            (false, 1) => format!("Hinge({})", vec3([0.0, 0.0, 1.0])),
            _ => "Fixed".to_owned(),
        };
        let _ = writeln!(
            extra,
            "        joints: [(name: \"j\", kind: {kind}, a: \"b0\", b: \"b1\", at: {})],",
            vec3([
                4.0,
                if planar { 4.0 } else { 0.0 },
                if planar { 0.0 } else { 4.0 }
            ])
        );
    }
    if rng.random_bool(0.3) {
        let kind = ["Spring", "Damper", "SpringDamper"][rng.random_range(0..3)];
        let other = if n >= 2 && rng.random_bool(0.5) {
            "b: \"b1\"".to_owned()
        } else {
            format!(
                "at_b: {}",
                vec3([
                    0.0,
                    if planar { 6.0 } else { 0.0 },
                    if planar { 0.0 } else { 6.0 }
                ])
            )
        };
        let _ = writeln!(
            extra,
            "        elements: [(name: \"e\", kind: {kind}, a: \"b0\", {other}, stiffness: {}, damping: {})],",
            {
                let value = log_uniform(rng, 1.0, 1e8);
                sometimes_absurd(rng, value)
            },
            {
                let value = log_uniform(rng, 1e-2, 1e6);
                sometimes_absurd(rng, value)
            }
        );
    }
    if rng.random_bool(0.2) {
        let mut force = [signed(rng, 100.0), signed(rng, 100.0), signed(rng, 100.0)];
        if planar {
            force[2] = 0.0;
        }
        let _ = writeln!(
            extra,
            "        loads: [(body: \"b0\", force: {}, omega: {})],",
            vec3(force),
            num(rng.random_range(0.0..10.0))
        );
    }
    format!(
        "Rigid((\n        dimension: {},\n        gravity: {},\n        bodies: [\n{bodies}        ],\n        surfaces: [\n{surfaces}        ],\n{extra}    ))",
        if planar { "Planar" } else { "Spatial" },
        vec3(gravity)
    )
}

fn matrix(rows: &[Vec<f64>]) -> String {
    let rows: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "[{}]",
                r.iter().map(|x| num(*x)).collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    format!("[{}]", rows.join(", "))
}

fn list(values: &[f64]) -> String {
    format!(
        "[{}]",
        values
            .iter()
            .map(|x| num(*x))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn linear_system(rng: &mut StdRng) -> String {
    let n = rng.random_range(1..=4);
    let scale = log_uniform(rng, 1e-3, 1e6);
    // M = AᵀA + εI (positive definite), now and then left asymmetric.
    let a: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..n).map(|_| signed(rng, 1.0)).collect())
        .collect();
    let mut mass: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    let dot: f64 = (0..n).map(|k| a[k][i] * a[k][j]).sum();
                    scale * (dot + if i == j { 0.1 } else { 0.0 })
                })
                .collect()
        })
        .collect();
    if n > 1 && rng.random_bool(0.1) {
        mass[0][1] += scale;
    }
    let symmetric = |rng: &mut StdRng, s: f64| -> Vec<Vec<f64>> {
        // Upper triangle drawn row by row, then mirrored.
        let upper: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| match j.cmp(&i) {
                        std::cmp::Ordering::Less => 0.0,
                        std::cmp::Ordering::Equal => s * rng.random_range(0.0..1.0),
                        std::cmp::Ordering::Greater => s * signed(rng, 0.3),
                    })
                    .collect()
            })
            .collect();
        (0..n)
            .map(|i| (0..n).map(|j| upper[i.min(j)][i.max(j)]).collect())
            .collect()
    };
    let scale_k = log_uniform(rng, 1e-2, 1e6);
    let stiffness = symmetric(rng, scale_k);
    let scale_c = log_uniform(rng, 1e-3, 1e3);
    let damping = symmetric(rng, scale_c);
    let coordinates: Vec<String> = (0..n).map(|i| format!("\"q{i}\"")).collect();
    let mut contacts = String::new();
    for c in 0..rng.random_range(0..=3) {
        let w_n: Vec<f64> = (0..n).map(|_| signed(rng, 1.0)).collect();
        let w_t: Vec<f64> = (0..n).map(|_| signed(rng, 1.0)).collect();
        let _ = write!(
            contacts,
            "(name: \"c{c}\", g0: {}, w_n: {}, w_t: {}), ",
            num(rng.random_range(-0.01..1.0)),
            list(&w_n),
            list(&w_t)
        );
    }
    let force: Vec<f64> = (0..n).map(|_| signed(rng, 10.0 * scale)).collect();
    let q0: Vec<f64> = (0..n).map(|_| signed(rng, 0.1)).collect();
    let v0: Vec<f64> = (0..n).map(|_| signed(rng, 1.0)).collect();
    let harmonics = if rng.random_bool(0.3) {
        let amplitude: Vec<f64> = (0..n).map(|_| signed(rng, scale)).collect();
        format!(
            "harmonics: [(amplitude: {}, omega: {})], ",
            list(&amplitude),
            num(rng.random_range(0.0..100.0))
        )
    } else {
        String::new()
    };
    format!(
        "Linear((coordinates: [{}], mass: {}, stiffness: {}, damping: {}, force: {}, {harmonics}contacts: [{contacts}], initial_position: {}, initial_velocity: {}))",
        coordinates.join(", "),
        matrix(&mass),
        matrix(&stiffness),
        matrix(&damping),
        list(&force),
        list(&q0),
        list(&v0)
    )
}

/// Scenes cheap enough to step a few hundred times per case.
pub const CHEAP_SCENES: &[&str] = &[
    "scenes/rod.ron",
    "scenes/ball_roll.ron",
    "scenes/incline.ron",
    "scenes/two_balls.ron",
    "scenes/spring_block.ron",
    "scenes/bouncing_ball.ron",
    "scenes/two_blocks_damper.ron",
    "scenes/two_blocks_damper_heavy.ron",
    "scenes/two_bar_linkage.ron",
    "scenes/box_stack.ron",
    "scenes/painleve_rod.ron",
    "scenes/four_balls.ron",
    "scenes/chain.ron",
];

fn flag_value(rng: &mut StdRng, flag: &str) -> String {
    let junk = ["", "abc", "1,5", "0x10", " 1", "1e", "--dt"];
    if rng.random_bool(0.05) {
        return junk[rng.random_range(0..junk.len())].to_owned();
    }
    match flag {
        "--edges" | "--ncp-iterations" | "--every" | "--max-step-pivots" => [
            "0",
            "1",
            "2",
            "3",
            "7",
            "8",
            "100",
            "101",
            "257",
            "-1",
            "1000000000",
            "18446744073709551616",
        ][rng.random_range(0..12)]
        .to_owned(),
        "--stepper" => [
            "stewart-trinkle",
            "moreau-jean",
            "anitescu-potra",
            "euler-lcp",
            "nope",
            "Stewart-Trinkle",
        ][rng.random_range(0..6)]
        .to_owned(),
        "--max-csv-size" => ["0", "1", "100", "10K", "1M", "1G", "2X", "-1", "1T"]
            [rng.random_range(0..9)]
        .to_owned(),
        "--max-steps" => ["0", "1", "10", "60"][rng.random_range(0..4)].to_owned(),
        _ => {
            if rng.random_bool(0.5) {
                NUMBERS[rng.random_range(0..NUMBERS.len())].to_owned()
            } else {
                num(log_uniform(rng, 1e-4, 10.0))
            }
        }
    }
}

/// A command line: mostly `run` on a cheap scene with random flags, now and
/// then another subcommand or none of the flags' rules.
pub fn command_line(rng: &mut StdRng) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    match rng.random_range(0..20) {
        0 => return vec![["--help", "--version", "help"][rng.random_range(0..3)].to_owned()],
        1 => {
            args.push("lcp".into());
            if rng.random_bool(0.5) {
                args.push(format!("--max-size={}", flag_value(rng, "--edges")));
            }
            args.push(
                ["scenes/rod.ron", "{dir}", "/dev/null", "missing.dat"][rng.random_range(0..4)]
                    .into(),
            );
            return args;
        }
        2 => return vec!["frobnicate".into(), "scenes/rod.ron".into()],
        _ => {}
    }
    args.push("run".into());
    args.push(CHEAP_SCENES[rng.random_range(0..CHEAP_SCENES.len())].into());
    let flags = [
        "--dt",
        "--duration",
        "--mu",
        "--edges",
        "--restitution",
        "--damping",
        "--stiffness",
        "--stepper",
        "--ncp-iterations",
        "--every",
        "--max-csv-size",
        "--max-steps",
        "--max-step-pivots",
        "--max-step-seconds",
    ];
    let has = |f: &str, args: &Vec<String>| args.iter().any(|a| a.starts_with(f));
    for flag in flags {
        if rng.random_bool(0.12) {
            let value = flag_value(rng, flag);
            if rng.random_bool(0.5) {
                args.push(format!("{flag}={value}"));
            } else {
                args.push(flag.into());
                args.push(value);
            }
        }
    }
    if rng.random_bool(0.1) {
        args.push("--dump-lcp".into());
        args.push("{dir}/lcps".into());
    }
    if rng.random_bool(0.05) {
        args.push(["--frobnicate", "extra.ron", "-x", "--csv"][rng.random_range(0..4)].into());
    }
    // Every run stays short: a bounded number of steps of the scene's h
    // unless the case sets its own.
    if !has("--duration", &args) {
        args.push("--duration=0.05".into());
    }
    if !has("--max-steps", &args) {
        args.push(format!("--max-steps={}", 5 * MAX_STEPS));
    }
    if rng.random_bool(0.97) {
        args.push("--csv".into());
        args.push("{dir}/out.csv".into());
    }
    args
}

/// The text of a `.dat` LCP: sizes from 0 to 40, dense data from benign to
/// extreme, a comment at the end now and then.
pub fn dat(rng: &mut StdRng) -> String {
    let n: usize = if rng.random_bool(0.8) {
        rng.random_range(0..=8)
    } else {
        rng.random_range(9..=40)
    };
    let kind = rng.random_range(0..4);
    let a: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..n).map(|_| signed(rng, 1.0)).collect())
        .collect();
    let entry = |rng: &mut StdRng, i: usize, j: usize| -> String {
        match kind {
            // Positive definite: AᵀA + I.
            0 => {
                num((0..n).map(|k| a[k][i] * a[k][j]).sum::<f64>() + if i == j { 1.0 } else { 0.0 })
            }
            1 => num(rng.random_range(-3..=3) as f64),
            2 => num(signed(rng, 1.0) * log_uniform(rng, 1e-8, 1e8)),
            _ => NUMBERS[rng.random_range(0..NUMBERS.len())].to_owned(),
        }
    };
    let mut out = format!("{n}\n0\n{n}\n{n}\n{n}\t{n}\n");
    for j in 0..n {
        let column: Vec<String> = (0..n).map(|i| entry(rng, i, j)).collect();
        out.push_str(&column.join(" "));
        out.push('\n');
    }
    let q: Vec<String> = (0..n)
        .map(|_| {
            if kind == 3 && rng.random_bool(0.2) {
                NUMBERS[rng.random_range(0..NUMBERS.len())].to_owned()
            } else {
                num(signed(rng, 10.0))
            }
        })
        .collect();
    out.push_str(&q.join(" "));
    out.push('\n');
    if rng.random_bool(0.3) {
        out.push_str("# a comment, then free text\nremarks 1 2 3\n");
    }
    out
}
