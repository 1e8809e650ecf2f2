//! The command line as a user runs it: `contactlab run` and `contactlab lcp`.

use std::path::PathBuf;
use std::process::Command;

fn contactlab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_contactlab"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("contactlab-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn run_writes_the_documented_csv() {
    let dir = temp_dir("run");
    let csv = dir.join("rod.csv");
    let out = contactlab(&[
        "run",
        "scenes/rod.ron",
        "--duration",
        "0.1",
        "--every",
        "10",
        "--csv",
        csv.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).expect("csv written");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "t,rod.x,rod.y,rod.theta,rod.vx,rod.vy,rod.omega,kinetic_energy,potential_energy,active_contacts,lcp_size,lcp_pivots,min_gap"
    );
    // t = 0 and every 10th of the 40 steps.
    assert_eq!(lines.len(), 1 + 1 + 4);
    let first: Vec<f64> = lines[1]
        .split(',')
        .map(|v| v.parse().expect("number"))
        .collect();
    assert_eq!(first[0], 0.0);
    assert_eq!(first[2], 1.0, "rod starts 1 m up");
    let last: Vec<f64> = lines[5]
        .split(',')
        .map(|v| v.parse().expect("number"))
        .collect();
    assert!((last[0] - 0.1).abs() < 1e-12);
    // Free fall: y = 1 − g t²/2 along the implicit Euler path (within h g t).
    assert!((last[2] - (1.0 - 0.5 * 9.81 * 0.01)).abs() < 0.0025 * 9.81 * 0.1 + 1e-12);
}

#[test]
fn flags_the_stepper_or_scene_cannot_use_are_errors() {
    let dir = temp_dir("flags");
    let csv = dir.join("x.csv");
    let csv = csv.to_str().expect("utf-8");
    for (args, needle) in [
        (vec!["--restitution", "0.5"], "inelastic"),
        (vec!["--edges", "8"], "planar"),
        (vec!["--damping", "10"], "no dampers"),
        (vec!["--stiffness", "10"], "no springs"),
        (vec!["--dt=-1"], "--dt"),
        (vec!["--stepper", "nope"], "unknown stepper"),
    ] {
        let mut all = vec!["run", "scenes/rod.ron", "--csv", csv];
        all.extend(args.iter());
        let out = contactlab(&all);
        assert!(!out.status.success(), "{args:?} must fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "one-line reason: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let out = contactlab(&["run", "scenes/missing.ron", "--csv", csv]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("scenes/missing.ron"));
}

#[test]
fn dumped_step_lcps_replay_with_the_lcp_command() {
    let dir = temp_dir("dump");
    let csv = dir.join("balls.csv");
    let dump = dir.join("lcps");
    let out = contactlab(&[
        "run",
        "scenes/four_balls.ron",
        "--duration",
        "0.5",
        "--csv",
        csv.to_str().expect("utf-8"),
        "--dump-lcp",
        dump.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dump)
        .expect("dump dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    assert_eq!(files.len(), 200, "one file per step");
    let last = files
        .last()
        .expect("files")
        .to_str()
        .expect("utf-8")
        .to_owned();
    let out = contactlab(&["lcp", &last]);
    assert!(out.status.success());
    let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(line.starts_with("step_000200.dat n="), "{line}");
    assert!(line.contains(" status=Solved pivots="), "{line}");
    let residual: f64 = line
        .rsplit("residual=")
        .next()
        .and_then(|r| r.parse().ok())
        .expect("residual");
    assert!(residual <= 1e-9, "{line}");
}

#[test]
fn lcp_prints_one_line_per_file_and_fails_on_unreadable_ones() {
    let dir = temp_dir("lcp");
    let good = dir.join("deudeu.dat");
    std::fs::write(&good, "2\n0\n2\n2\n2\t2\n2 1\n1 2\n-5 -6\n").expect("write");
    let out = contactlab(&["lcp", good.to_str().expect("utf-8")]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "deudeu.dat n=2 status=Solved pivots=3 residual=0.000e0"
    );
    let bad = dir.join("bad.dat");
    std::fs::write(&bad, "2\n0\n2\n2\n2 2\n1 x\n").expect("write");
    let out = contactlab(&[
        "lcp",
        good.to_str().expect("utf-8"),
        bad.to_str().expect("utf-8"),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.dat:6:3: M[2,1]: expected a number, found `x`"),
        "{err}"
    );
}
