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

/// Asserts that `out` is a failure with a one-line reason containing
/// `needle`, and returns the reason.
fn one_line_refusal(out: &std::process::Output, needle: &str) -> String {
    assert!(!out.status.success(), "must fail ({needle})");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "one-line reason: {err}");
    assert!(err.contains(needle), "{err}");
    err
}

/// A step whose NSGS solve reaches the sweep limit goes on with its best
/// iterate; the run ends with a line that counts such steps, and `--strict`
/// stops at the first.
#[test]
fn the_sweep_limit_is_counted_or_under_strict_fails() {
    let dir = temp_dir("sweeps");
    let csv = dir.join("stack.csv");
    let args = |strict: bool| {
        let mut a = vec![
            "run",
            "scenes/box_stack.ron",
            "--duration",
            "0.05",
            "--solver",
            "nsgs",
            "--tolerance",
            "1e-12",
            "--max-iterations",
            "5",
            "--csv",
            csv.to_str().expect("utf-8"),
        ];
        if strict {
            a.push("--strict");
        }
        contactlab(&a)
    };
    let out = args(false);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("nsgs: 10 of 10 steps reached the sweep limit"),
        "{err}"
    );
    let text = std::fs::read_to_string(&csv).expect("csv written");
    let header: Vec<&str> = text.lines().next().expect("header").split(',').collect();
    let at = header
        .iter()
        .position(|&c| c == "residual")
        .expect("residual column");
    for row in text.lines().skip(2) {
        let residual: f64 = row
            .split(',')
            .nth(at)
            .expect("column")
            .parse()
            .expect("number");
        assert!(residual > 1e-12 && residual <= 0.1, "{row}");
    }
    let strict = args(true);
    assert!(!strict.status.success());
    let err = String::from_utf8_lossy(&strict.stderr);
    assert!(err.contains("SweepLimit"), "{err}");
}

/// An NSGS tolerance that leaves contacts soft is allowed, with one warning.
#[test]
fn a_soft_nsgs_tolerance_warns_once() {
    let dir = temp_dir("soft");
    let csv = dir.join("stack.csv");
    let run = |tolerance: &str| {
        contactlab(&[
            "run",
            "scenes/box_stack.ron",
            "--duration",
            "0.01",
            "--solver",
            "nsgs",
            "--tolerance",
            tolerance,
            "--csv",
            csv.to_str().expect("utf-8"),
        ])
    };
    let out = run("0.9");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.matches("warning: NSGS tolerance 0.9 is above 1e-2")
            .count(),
        1,
        "{err}"
    );
    let out = run("1e-2");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
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
        "t,rod.x,rod.y,rod.theta,rod.vx,rod.vy,rod.omega,kinetic_energy,potential_energy,active_contacts,lcp_size,lcp_pivots,min_gap,residual,nsgs_sweeps"
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
        one_line_refusal(&contactlab(&all), needle);
    }
    let out = contactlab(&["run", "scenes/missing.ron", "--csv", csv]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("scenes/missing.ron"));
}

#[test]
fn dumped_step_lcps_replay_with_the_lcp_command() {
    // Lemke's LCPs, and the same LCP (29) NSGS solves on the pyramid and,
    // in the plane, on the two-direction law.
    let pyramid = [
        "--solver",
        "nsgs",
        "--cone",
        "pyramid",
        "--tolerance",
        "1e-10",
    ];
    for (name, scene, solver) in [
        ("lemke", "scenes/four_balls.ron", &[][..]),
        ("nsgs", "scenes/four_balls.ron", &pyramid[..]),
        ("plane", "scenes/rod.ron", &pyramid[..2]),
    ] {
        dumped_lcps_replay(name, scene, solver);
    }
    // On the circular cone in space NSGS solves no LCP: a one-line refusal.
    let dir = temp_dir("dump-circular");
    let out = contactlab(&[
        "run",
        "scenes/four_balls.ron",
        "--csv",
        dir.join("x.csv").to_str().expect("utf-8"),
        "--solver",
        "nsgs",
        "--dump-lcp",
        dir.join("lcps").to_str().expect("utf-8"),
    ]);
    one_line_refusal(&out, "circular cone in space solves no LCP");
    assert!(!dir.join("lcps").exists(), "nothing written");
}

#[test]
fn a_dump_stops_at_an_lcp_beyond_its_size_limit() {
    // The pile's LCPs pass 100 unknowns at step 13 (110, as the lowest
    // layer lands); the 12 before it are written and replay.
    let dir = temp_dir("dump-limit");
    let dump = dir.join("lcps");
    let out = contactlab(&[
        "run",
        "scenes/pile.ron",
        "--duration",
        "0.5",
        "--csv",
        dir.join("pile.csv").to_str().expect("utf-8"),
        "--dump-lcp",
        dump.to_str().expect("utf-8"),
        "--max-dump-size",
        "100",
    ]);
    let err = one_line_refusal(&out, "more than --max-dump-size 100");
    let step: usize = err
        .split("step ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .expect("the step is named");
    let written = std::fs::read_dir(&dump).expect("dump dir").count();
    assert_eq!(written, step - 1, "every step before it is written: {err}");
    for i in 1..step {
        let file = dump.join(format!("step_{i:06}.dat"));
        let out = contactlab(&["lcp", file.to_str().expect("utf-8")]);
        assert!(out.status.success(), "step {i} replays");
    }
}

fn dumped_lcps_replay(name: &str, scene: &str, solver: &[&str]) {
    let dir = temp_dir(&format!("dump-{name}"));
    let csv = dir.join("out.csv");
    let dump = dir.join("lcps");
    let mut args = vec![
        "run",
        scene,
        "--duration",
        "0.5",
        "--csv",
        csv.to_str().expect("utf-8"),
        "--dump-lcp",
        dump.to_str().expect("utf-8"),
    ];
    args.extend(solver);
    let out = contactlab(&args);
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dump)
        .expect("dump dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    assert_eq!(files.len(), 200, "{name}: one file per step");
    let last = files
        .last()
        .expect("files")
        .to_str()
        .expect("utf-8")
        .to_owned();
    let out = contactlab(&["lcp", &last]);
    assert!(out.status.success(), "{name}");
    let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(line.starts_with("step_000200.dat n="), "{name}: {line}");
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

/// Every line of a CSV is whole: as many fields as the header, each a number
/// (`inf` only in `min_gap`), and the text ends with a newline.
fn assert_whole_rows(text: &str) -> usize {
    assert!(text.ends_with('\n'), "the last row is cut");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let mut rows = 0;
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), header.len(), "row {rows}: {line}");
        for (name, value) in header.iter().zip(&fields) {
            let x: f64 = value.parse().expect("a number");
            assert!(
                x.is_finite() || (*name == "min_gap" && x == f64::INFINITY),
                "{name} = {value}"
            );
        }
        rows += 1;
    }
    rows
}

/// Item "nothing lost": a run that fails leaves an earlier good CSV as it was
/// and its own whole rows in OUT.partial, and says so in one line with the
/// step, its t and the stepper. (`euler-lcp` takes the chain's stiff
/// spring–dampers explicitly and blows up within 0.04 s.)
#[test]
fn a_failed_run_keeps_the_good_csv_and_its_rows_in_a_partial_file() {
    let dir = temp_dir("failed");
    let csv = dir.join("chain.csv");
    std::fs::write(&csv, "an earlier good run\n").expect("write");
    let out = contactlab(&[
        "run",
        "scenes/chain.ron",
        "--stepper",
        "euler-lcp",
        "--csv",
        csv.to_str().expect("utf-8"),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    for needle in ["step ", " at t = ", "stepper euler-lcp", "explicitly"] {
        assert!(err.contains(needle), "{needle}: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(&csv).expect("kept"),
        "an earlier good run\n"
    );
    let partial = dir.join("chain.csv.partial");
    assert!(err.contains(partial.to_str().expect("utf-8")), "{err}");
    let rows = assert_whole_rows(&std::fs::read_to_string(&partial).expect("partial"));
    assert!(
        err.contains(&format!("{rows} rows kept in")),
        "{rows}: {err}"
    );

    // The same path, a run that completes: the CSV replaced, no .partial.
    let out = contactlab(&[
        "run",
        "scenes/chain.ron",
        "--duration",
        "0.02",
        "--csv",
        csv.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        assert_whole_rows(&std::fs::read_to_string(&csv).expect("csv")),
        1 + 4
    );
    assert!(!dir.join("chain.csv.partial").exists());
}

/// A step that spends its budget of pivots or seconds stops the run in one
/// line naming the flag that raises it, and the CSV is kept as for any
/// failed run: the earlier file untouched, the rows so far in OUT.partial.
#[test]
fn the_step_budget_stops_the_run_in_one_line_and_keeps_the_csv() {
    let dir = temp_dir("budget");
    let csv = dir.join("pile.csv");
    for (flag, value) in [("--max-step-pivots", "3"), ("--max-step-seconds", "1e-9")] {
        std::fs::write(&csv, "an earlier good run\n").expect("write");
        let out = contactlab(&[
            "run",
            "scenes/pile.ron",
            flag,
            value,
            "--csv",
            csv.to_str().expect("utf-8"),
        ]);
        let err = one_line_refusal(&out, flag);
        for needle in ["step ", " at t = ", "went over its budget", "Lemke pivots"] {
            assert!(err.contains(needle), "{needle}: {err}");
        }
        assert_eq!(
            std::fs::read_to_string(&csv).expect("kept"),
            "an earlier good run\n"
        );
        let partial = dir.join("pile.csv.partial");
        let rows = assert_whole_rows(&std::fs::read_to_string(&partial).expect("partial"));
        assert!(err.contains(&format!("{rows} rows kept in")), "{err}");
        std::fs::remove_file(&partial).expect("partial");
    }
    // NSGS's local solves on the pyramid pivot too, but they are its
    // kernels, not the step's LCP: no budget counts them.
    let out = contactlab(&[
        "run",
        "scenes/box_stack.ron",
        "--duration",
        "0.05",
        "--solver",
        "nsgs",
        "--cone",
        "pyramid",
        "--max-step-pivots",
        "1",
        "--csv",
        csv.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Within the default budget the same steps are taken.
    let out = contactlab(&[
        "run",
        "scenes/pile.ron",
        "--duration",
        "0.5",
        "--csv",
        csv.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = csv.to_str().expect("utf-8");
    for (flag, value) in [
        ("--max-step-pivots", "0"),
        ("--max-step-seconds", "-1"),
        ("--max-step-seconds", "inf"),
    ] {
        let refused = contactlab(&["run", "scenes/pile.ron", flag, value, "--csv", csv]);
        one_line_refusal(&refused, &format!("{flag}: {value}: must be"));
    }
}

/// A CSV destination that is not a regular file (a named pipe here; a
/// device such as /dev/null alike) is written in place: a file renamed over
/// it would replace it (`../shared/repro/r2/10_csv_device.sh`).
#[cfg(unix)]
#[test]
fn a_pipe_or_device_given_as_csv_is_written_in_place() {
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    let dir = temp_dir("pipe");
    let fifo = dir.join("rows");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let reading = fifo.clone();
    std::thread::spawn(move || {
        let mut text = String::new();
        let read = std::fs::File::open(&reading).and_then(|mut f| f.read_to_string(&mut text));
        let _ = tx.send(read.map(|_| text));
    });
    let out = contactlab(&[
        "run",
        "scenes/four_balls.ron",
        "--duration",
        "0.1",
        "--csv",
        fifo.to_str().expect("utf-8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the run wrote into the pipe")
        .expect("read");
    // A row for t = 0 and one for each of the 40 steps of 2.5 ms.
    assert_eq!(assert_whole_rows(&text), 1 + 40);
    let kind = std::fs::symlink_metadata(&fifo)
        .expect("still there")
        .file_type();
    assert!(kind.is_fifo(), "replaced by {kind:?}");
    assert!(!dir.join("rows.partial").exists());
}

/// SIGTERM (what `kill` and `timeout` send) stops a run after its step: the
/// earlier CSV is untouched, the rows so far are whole in OUT.partial, and
/// the exit code is 128 + 15.
#[test]
fn sigterm_keeps_whole_rows_in_the_partial_file() {
    let dir = temp_dir("sigterm");
    let csv = dir.join("pile.csv");
    let partial = dir.join("pile.csv.partial");
    std::fs::write(&csv, "good\n").expect("write");
    let mut child = Command::new(env!("CARGO_BIN_EXE_contactlab"))
        .args(["run", "scenes/pile.ron", "--duration", "500", "--csv"])
        .arg(&csv)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // The partial file exists once the handlers are installed; let some
    // steps run past it.
    while !partial.exists() {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the run ended early"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(143));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("interrupted by SIGTERM before step "), "{err}");
    assert!(err.contains("pile.csv.partial"), "{err}");
    assert_eq!(std::fs::read_to_string(&csv).expect("kept"), "good\n");
    assert!(assert_whole_rows(&std::fs::read_to_string(&partial).expect("partial")) >= 1);
}

/// Two SIGINTs 1 ms apart (a key held down) are one request: the run stops
/// after its step with its one line, and the rows in OUT.partial are whole.
#[cfg(unix)]
#[test]
fn two_signals_at_once_are_one_request() {
    let dir = temp_dir("twice");
    let csv = dir.join("pile.csv");
    let partial = dir.join("pile.csv.partial");
    let mut child = Command::new(env!("CARGO_BIN_EXE_contactlab"))
        .args(["run", "scenes/pile_100.ron", "--duration", "500", "--csv"])
        .arg(&csv)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    while !partial.exists() {
        assert!(child.try_wait().expect("wait").is_none(), "ended early");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let pid = child.id();
    let kill = Command::new("sh")
        .args([
            "-c",
            &format!("kill -INT {pid}; sleep 0.001; kill -INT {pid}"),
        ])
        .status()
        .expect("kill");
    assert!(kill.success());
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(130));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("interrupted by SIGINT before step "), "{err}");
    let text = std::fs::read_to_string(&partial).expect("partial");
    assert!(assert_whole_rows(&text) >= 1);
    assert!(!csv.exists());
}

/// Guard rails: each a one-line refusal before any output, naming the flag
/// that lifts it; the flag lifts it.
#[test]
fn guard_rails_refuse_in_one_line_before_writing() {
    let dir = temp_dir("guards");
    let csv = dir.join("x.csv");
    let csv_arg = csv.to_str().expect("utf-8");
    let repro = dir.join("n100000.dat");
    // A 39-byte file whose header claims n = 100000.
    std::fs::write(&repro, "100000\n0\n100000\n100000\n100000 100000\n").expect("write");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "scenes/rod.ron", "--dt", "1e-300", "--csv", csv_arg],
            "--max-steps",
        ),
        (
            vec![
                "run",
                "scenes/rod.ron",
                "--max-steps",
                "399",
                "--csv",
                csv_arg,
            ],
            "--max-steps",
        ),
        (
            vec![
                "run",
                "scenes/rod.ron",
                "--max-csv-size",
                "10K",
                "--csv",
                csv_arg,
            ],
            "--max-csv-size",
        ),
        (
            vec!["run", "/dev/zero", "--csv", csv_arg],
            "larger than 16 MiB",
        ),
        (vec!["lcp", repro.to_str().expect("utf-8")], "--max-size"),
        (vec!["lcp", "/dev/zero"], "--max-size"),
        (
            vec![
                "run",
                "scenes/silo.ron",
                "--max-memory",
                "20M",
                "--csv",
                csv_arg,
            ],
            "--max-memory",
        ),
    ];
    for (args, needle) in cases {
        let out = contactlab(&args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(err.lines().count() <= 2, "{args:?}: {err}");
        assert!(
            !csv.exists() && !dir.join("x.csv.partial").exists(),
            "{args:?}"
        );
    }
    for lifted in [
        vec!["--max-steps", "400"],
        vec!["--max-memory", "1G", "--duration", "0.01"],
    ] {
        let scene = if lifted[0] == "--max-memory" {
            "scenes/silo.ron"
        } else {
            "scenes/rod.ron"
        };
        let mut args = vec!["run", scene, "--csv", csv_arg];
        args.extend(lifted);
        let out = contactlab(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = contactlab(&[
        "lcp",
        "--max-size",
        "100001",
        repro.to_str().expect("utf-8"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unexpected end of file"), "{err}");
}

/// `lcp` exits 0 only when every file was read and solved: data at f64's
/// limit (1.8e308) overflow while pivoting, and the unsolved problem's
/// residual is infinite, which must not pass for solved.
#[test]
fn lcp_fails_when_a_problem_is_not_solved() {
    let dir = temp_dir("unsolved");
    let ray = dir.join("ray.dat");
    // w = −z − 1 ≥ 0 has no solution with z ≥ 0.
    std::fs::write(&ray, "1\n0\n1\n1\n1 1\n-1\n-1\n").expect("write");
    let overflow = dir.join("overflow.dat");
    std::fs::write(&overflow, OVERFLOWING_DAT).expect("write");
    for (path, lines) in [(&ray, 1), (&overflow, 1)] {
        let out = contactlab(&["lcp", path.to_str().expect("utf-8")]);
        assert!(!out.status.success(), "{}", path.display());
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stdout.lines().count(), lines, "{stdout}");
        assert!(!stdout.contains("status=Solved"), "{stdout}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("1 of 1 LCPs were not solved"), "{err}");
    }
}

/// A `.dat` file from the fuzz harness (seed 3298539885818).
const OVERFLOWING_DAT: &str = "\
10
0
10
10
10 10
-1.0 -3.0 -1.0 -1.0 -2.0 0.0 -2.0 -1.0 1.0 -2.0
0.0 1.0 0.0 3.0 1.0 -3.0 3.0 3.0 1.0 3.0
3.0 -1.0 0.0 2.0 0.0 -3.0 1.0 2.0 -1.0 3.0
-1.0 -3.0 2.0 3.0 2.0 3.0 3.0 0.0 0.0 2.0
-1.0 1.0 1.0 -3.0 -2.0 -1.0 1.0 -2.0 -2.0 3.0
-3.0 -3.0 -3.0 2.0 -3.0 2.0 -1.0 3.0 0.0 -1.0
-3.0 2.0 1.7976931348623157e308 2.0 1.0 -3.0 -3.0 0.0 3.0 3.0
-2.0 -1.0 -1.0 -3.0 -3.0 3.0 2.0 -3.0 3.0 -3.0
-2.0 1.0 2.0 2.0 -2.0 -1.0 -3.0 2.0 3.0 3.0
2.0 -3.0 -3.0 3.0 2.0 -2.0 3.0 -3.0 -2.0 -2.0
-0.9068655280075433 1.5041372051783632 8.52287094712161 9.422369868139132 9.162091855602554 -1e300 9.016146926859555 -1.441263084859198 -6.876231496020129 -1.655719104933695
";

/// A negative number after a flag is that flag's value:
/// the parameter's own range check answers, in one line naming the flag,
/// instead of clap's hint to write `-- -1`.
#[test]
fn a_negative_value_meets_the_parameters_range_check() {
    let dir = temp_dir("negative");
    let csv = dir.join("x.csv");
    let csv = csv.to_str().expect("utf-8");
    for (flag, value, expected) in [
        (
            "--dt",
            "-1e-3",
            "--dt: the step size h must be positive, found -0.001",
        ),
        (
            "--dt",
            "-1",
            "--dt: the step size h must be positive, found -1",
        ),
        ("--mu", "-0.5", "--mu: friction μ must be ≥ 0, found -0.5"),
    ] {
        let out = contactlab(&["run", "scenes/rod.ron", flag, value, "--csv", csv]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {value}");
        assert!(stderr.contains(expected), "{flag} {value}: {stderr}");
        assert!(!stderr.contains("-- -1"), "{flag} {value}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    assert!(!dir.join("x.csv").exists(), "nothing written");
}

fn csv_rows(path: &std::path::Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .expect("csv")
        .lines()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

/// Two identical settings diverge by nothing, bit for bit, and each side's
/// columns are those a separate `run` writes.
#[test]
fn compare_of_identical_settings_matches_two_runs() {
    let dir = temp_dir("compare-same");
    let (cmp, run) = (dir.join("cmp.csv"), dir.join("run.csv"));
    let side = "stepper=moreau-jean,mu=0.3";
    let out = contactlab(&[
        "compare",
        "scenes/rod.ron",
        "--a",
        side,
        "--b",
        side,
        "--duration",
        "0.3",
        "--csv",
        cmp.to_str().expect("utf-8"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.lines().count(),
        3,
        "one line per run and the divergence: {err}"
    );
    assert!(err.contains("largest divergence: 0 m"), "{err}");
    let out = contactlab(&[
        "run",
        "scenes/rod.ron",
        "--stepper",
        "moreau-jean",
        "--mu",
        "0.3",
        "--duration",
        "0.3",
        "--csv",
        run.to_str().expect("utf-8"),
    ]);
    assert!(out.status.success());
    let (cmp, run) = (csv_rows(&cmp), csv_rows(&run));
    let columns = contactlab::scene::SUMMARY_COLUMNS.len();
    assert_eq!(cmp[0].len(), 2 + 2 * columns);
    assert_eq!(cmp[0][1], "A.kinetic_energy");
    assert_eq!(cmp[0].last().map(String::as_str), Some("divergence"));
    assert_eq!(cmp.len(), run.len(), "a row per step and t = 0");
    for (c, r) in cmp.iter().zip(&run).skip(1) {
        let summary = &r[r.len() - columns..];
        let t = |s: &str| s.parse::<f64>().expect("t");
        // The compare samples at k·h; the run's t sums its steps.
        assert!(
            (t(&c[0]) - t(&r[0])).abs() < 1e-12,
            "t {} and {}",
            c[0],
            r[0]
        );
        assert_eq!(&c[1..1 + columns], summary, "A at t = {}", r[0]);
        assert_eq!(
            &c[1 + columns..1 + 2 * columns],
            summary,
            "B at t = {}",
            r[0]
        );
        assert_eq!(c[1 + 2 * columns], "0", "divergence at t = {}", r[0]);
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A run that fails is named in one line; the other completes, and the
/// command exits non-zero.
#[test]
fn compare_completes_a_when_b_fails() {
    let dir = temp_dir("compare-fail");
    let cmp = dir.join("cmp.csv");
    // The chain's springs are explicit in the Euler LCP: at h = 0.05 s,
    // past their stability limit, Lemke's method ends on a ray.
    let out = contactlab(&[
        "compare",
        "scenes/chain.ron",
        "--b",
        "stepper=euler-lcp,dt=0.05",
        "--csv",
        cmp.to_str().expect("utf-8"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    let a: Vec<&str> = err.lines().filter(|l| l.starts_with("A (")).collect();
    let b: Vec<&str> = err.lines().filter(|l| l.starts_with("B (")).collect();
    assert_eq!((a.len(), b.len()), (1, 1), "{err}");
    assert!(
        a[0].contains("600 of 600 steps") && !a[0].contains("FAILED"),
        "{err}"
    );
    assert!(
        b[0].contains("euler-lcp") && b[0].contains("FAILED at"),
        "{err}"
    );
    assert!(err.contains("run B failed"), "{err}");
    let rows = csv_rows(&cmp);
    let last = rows.last().expect("rows");
    let t: f64 = last[0].parse().expect("t");
    assert!((t - 3.0).abs() < 1e-9, "A ran to its end: {t}");
    assert!(!last[1].is_empty() && last[9].is_empty(), "{last:?}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `--acceleration N` sets the past sweeps NSGS combines on the circular
/// cone: plain Gauss–Seidel (0) takes more sweeps over the silo's first
/// 0.2 s than the default 5. Out of range, under Lemke or on the pyramid it
/// is refused in one line naming the flag.
#[test]
fn nsgs_acceleration_is_set_by_its_flag_and_checked() {
    let dir = temp_dir("acceleration");
    let sweeps = |extra: &[&str]| -> f64 {
        let csv = dir.join("silo.csv");
        let mut args = vec![
            "run",
            "scenes/silo.ron",
            "--duration",
            "0.2",
            "--csv",
            csv.to_str().expect("utf-8"),
        ];
        args.extend(extra);
        let out = contactlab(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rows = csv_rows(&csv);
        let column = rows[0]
            .iter()
            .position(|c| c == "nsgs_sweeps")
            .expect("a sweeps column");
        rows[1..]
            .iter()
            .map(|r| r[column].parse::<f64>().expect("a count"))
            .sum()
    };
    let (accelerated, plain) = (sweeps(&[]), sweeps(&["--acceleration", "0"]));
    assert!(
        plain > accelerated,
        "plain Gauss–Seidel {plain} sweeps, accelerated {accelerated}"
    );
    let csv = dir.join("x.csv");
    let csv = csv.to_str().expect("utf-8");
    for (args, needle) in [
        (
            vec!["scenes/silo.ron", "--acceleration", "21"],
            "--acceleration",
        ),
        (
            vec!["scenes/pile.ron", "--acceleration", "3"],
            "nsgs solver only",
        ),
        (
            vec![
                "scenes/silo.ron",
                "--cone",
                "pyramid",
                "--acceleration",
                "3",
            ],
            "circular cone only",
        ),
    ] {
        let mut all = vec!["run", "--csv", csv];
        all.extend(args.iter());
        one_line_refusal(&contactlab(&all), needle);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
