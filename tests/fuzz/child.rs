//! One fuzz case: the `contactlab` binary run in a child process with its
//! input files, a memory limit and a time budget, and its outcome checked
//! against the invariants.

use contactlab::params::{SolverKind, StepperKind};
use contactlab::stepper::StepSettings;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Wall-clock time a case may take before it counts as a hang. Cases are
/// sized to take well under a second; this only catches a loop without end.
const BUDGET: Duration = Duration::from_secs(60);

/// Address space a case may use, KiB: an allocation the input cannot
/// justify fails (and aborts) here instead of swapping the machine.
const MEMORY_KIB: u64 = 4 << 20;

/// A case: the arguments after `contactlab` (with `{dir}` standing for the
/// case's directory) and the files to write there first.
#[derive(Debug, Clone)]
pub struct Case {
    /// Which generator made it.
    pub kind: &'static str,
    /// The seed that reproduces it.
    pub seed: u64,
    /// Command-line arguments; `{dir}` is replaced by the case directory.
    pub args: Vec<String>,
    /// Files to create in the case directory, by name.
    pub files: Vec<(String, Vec<u8>)>,
    /// The CSV `run` writes, if any, by name: pre-filled with a sentinel
    /// that a failed run must leave alone.
    pub csv: Option<String>,
    /// What that CSV must show besides finite values, after exit 0.
    pub law: Option<Law>,
}

/// A law a case's CSV keeps (checked after exit 0).
#[derive(Debug, Clone)]
pub enum Law {
    /// `kinetic_energy` never rises from a row to the next by more than this
    /// share of itself.
    EnergyNeverRises(f64),
    /// Column `column` is never above column `limit` (a body's centre never
    /// passes a wall's).
    NeverAbove {
        /// The column that stays below.
        column: String,
        /// The column it stays below.
        limit: String,
    },
}

/// What a case did, when it kept the invariants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0 with finite output.
    Ran,
    /// A non-zero exit (a refusal or a reported failure).
    Refused,
}

const SENTINEL: &str = "an earlier good file\n";

/// Runs `case` in `dir` (created afresh) and checks it: no panic, no abort
/// or crash, no hang, no exit 0 with a value that is not finite, no lost
/// earlier output.
pub fn run(case: &Case, dir: &Path) -> Result<Outcome, String> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("case dir: {e}"))?;
    for (name, bytes) in &case.files {
        std::fs::write(dir.join(name), bytes).map_err(|e| format!("write {name}: {e}"))?;
    }
    if let Some(csv) = &case.csv {
        std::fs::write(dir.join(csv), SENTINEL).map_err(|e| format!("sentinel: {e}"))?;
    }
    let shown = dir.to_str().ok_or("the case dir is not UTF-8")?;
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| a.replace("{dir}", shown))
        .collect();
    let stdout = dir.join("stdout.txt");
    let stderr = dir.join("stderr.txt");
    let file = |p: &PathBuf| std::fs::File::create(p).map_err(|e| format!("{e}"));
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {MEMORY_KIB} 2>/dev/null; exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_contactlab"))
        .args(&args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(file(&stdout)?)
        .stderr(file(&stderr)?)
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| format!("wait: {e}"))? {
            break status;
        }
        if started.elapsed() > BUDGET {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("hang: still running after {} s", BUDGET.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let err = std::fs::read_to_string(&stderr).unwrap_or_default();
    let out = std::fs::read_to_string(&stdout).unwrap_or_default();
    if err.contains("panicked") {
        return Err(format!("panic: {}", first_lines(&err)));
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return Err(format!(
                "killed by signal {signal} (abort or crash): {}",
                first_lines(&err)
            ));
        }
    }
    let Some(code) = status.code() else {
        return Err("no exit code".to_owned());
    };
    if code != 0 {
        if code >= 100 {
            return Err(format!("exit code {code}: {}", first_lines(&err)));
        }
        if let Some(csv) = &case.csv {
            let kept = std::fs::read_to_string(dir.join(csv)).unwrap_or_default();
            if kept != SENTINEL {
                return Err(format!(
                    "a failed run replaced {csv}: {}",
                    first_lines(&err)
                ));
            }
        }
        return Ok(Outcome::Refused);
    }
    if let Some(csv) = &case.csv
        && case.args.first().is_some_and(|a| a == "run")
    {
        let text = std::fs::read_to_string(dir.join(csv)).map_err(|e| format!("{csv}: {e}"))?;
        check_csv(&text, stated_gap_bound(&args))?;
        if let Some(law) = &case.law {
            check_law(&text, law)?;
        }
        if dir.join(format!("{csv}.partial")).exists() {
            return Err("exit 0 left a .partial file".to_owned());
        }
    }
    check_lcp_lines(&out)?;
    Ok(Outcome::Ran)
}

/// The deepest gap a `run` with these arguments (`{dir}` replaced) may
/// report and exit 0: the scheme's own bound where it states one
/// (`StepReport::gap_bound`: Stewart–Trinkle with Lemke, −1e-6 m, unless the
/// scene opts into initial overlap, whose depth is then the bound).
fn stated_gap_bound(args: &[String]) -> Option<f64> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(args.get(1)?);
    let scene = contactlab::scene::load(&path).ok()?;
    if scene.file.allow_initial_overlap {
        return None;
    }
    // `--stepper X` or `--stepper=X`, the last one given (as clap takes it).
    let mut stepper = scene.params.stepper;
    for (i, a) in args.iter().enumerate() {
        let value = match a.strip_prefix("--stepper") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        };
        if let Some(Ok(kind)) = value.map(str::parse::<StepperKind>) {
            stepper = kind;
        }
    }
    // NSGS states no bound (its steps may go on from the sweep limit).
    let lemke = scene.params.solver == SolverKind::Lemke
        && !args.iter().any(|a| a == "nsgs" || a == "--solver=nsgs");
    (stepper == StepperKind::StewartTrinkle && lemke)
        .then(|| -StepSettings::default().gap_guarantee)
}

/// A complete run's CSV: a header, then rows of as many fields, every value
/// finite (`min_gap` may be `inf`: no contact near), and no `min_gap` below
/// the scheme's stated bound `gap_bound`.
fn check_csv(text: &str, gap_bound: Option<f64>) -> Result<(), String> {
    if text == SENTINEL {
        return Err("exit 0 without writing the CSV".to_owned());
    }
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("an empty CSV")?.split(',').collect();
    let mut rows = 0;
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != header.len() {
            return Err(format!(
                "row {rows} has {} fields, the header {}",
                fields.len(),
                header.len()
            ));
        }
        for (name, value) in header.iter().zip(&fields) {
            let x: f64 = value
                .parse()
                .map_err(|_| format!("row {rows}: {name} = `{value}` is not a number"))?;
            let allowed = x.is_finite() || (*name == "min_gap" && x == f64::INFINITY);
            if !allowed {
                return Err(format!("exit 0 with {name} = {value} in row {rows}"));
            }
            if let Some(bound) = gap_bound
                && *name == "min_gap"
                && x < bound
            {
                return Err(format!(
                    "exit 0 with min_gap = {value} in row {rows}, below the scheme's bound {bound:e} m"
                ));
            }
        }
        rows += 1;
    }
    if rows == 0 {
        return Err("a CSV without rows".to_owned());
    }
    Ok(())
}

/// `law` on a complete run's CSV (already checked by [`check_csv`]).
fn check_law(text: &str, law: &Law) -> Result<(), String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("no column {name}"))
    };
    let rows: Vec<Vec<f64>> = lines
        .map(|l| {
            l.split(',')
                .map(|x| x.parse().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    match law {
        Law::EnergyNeverRises(share) => {
            let k = column("kinetic_energy")?;
            for (i, pair) in rows.windows(2).enumerate() {
                let (before, after) = (pair[0][k], pair[1][k]);
                if after > before * (1.0 + share) {
                    return Err(format!(
                        "kinetic energy rose from {before:e} J to {after:e} J after row {i}"
                    ));
                }
            }
        }
        Law::NeverAbove { column: c, limit } => {
            let (c_at, limit_at) = (column(c)?, column(limit)?);
            for (i, row) in rows.iter().enumerate() {
                if row[c_at] > row[limit_at] {
                    return Err(format!(
                        "row {i}: {c} = {} passed {limit} = {}",
                        row[c_at], row[limit_at]
                    ));
                }
            }
        }
    }
    Ok(())
}

/// `contactlab lcp`'s lines: every number it prints is finite.
fn check_lcp_lines(out: &str) -> Result<(), String> {
    for line in out.lines().filter(|l| l.contains(" status=")) {
        for field in line.split_whitespace().skip(1) {
            if let Some((key, value)) = field.split_once('=')
                && key != "status"
            {
                let x: f64 = value
                    .parse()
                    .map_err(|_| format!("`{line}`: {key} is not a number"))?;
                if !x.is_finite() {
                    return Err(format!("exit 0 with `{line}`"));
                }
            }
        }
    }
    Ok(())
}

fn first_lines(text: &str) -> String {
    text.lines().take(3).collect::<Vec<_>>().join(" | ")
}
