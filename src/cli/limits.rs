//! Guard rails of the command line: how many steps a run may take, how large
//! its CSV may grow and how large an LCP `contactlab lcp` reads. Each is a
//! one-line refusal before the work starts, naming the flag that raises it:
//! a user may mean a run of 10⁸ steps, but not by accident (`--dt 1e-300`
//! once wrote 2.2 GB in 20 s).

/// Steps a run may take unless `--max-steps` says otherwise: about a minute
/// of the smallest scenes at full speed, hours of the pile.
pub const DEFAULT_MAX_STEPS: u64 = 10_000_000;

/// Bytes a CSV may take unless `--max-csv-size` says otherwise (1 GiB).
pub const DEFAULT_MAX_CSV_BYTES: u64 = 1 << 30;

/// Unknowns of an LCP read from a `.dat` file unless `--max-size` says
/// otherwise: Lemke's dense tableau holds n² numbers and a solve takes up to
/// O(n³) work, seconds at n = 1000 and minutes at a few thousand.
pub const DEFAULT_MAX_LCP_SIZE: usize = 1000;

/// Parses a size in bytes with an optional binary suffix: `1000`, `64K`,
/// `500M`, `2G` (K = 1024 bytes).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&text[..i], c.to_ascii_uppercase()),
        _ => (text, 'B'),
    };
    let shift = match unit {
        'B' => 0,
        'K' => 10,
        'M' => 20,
        'G' => 30,
        'T' => 40,
        _ => return Err(format!("`{text}`: unknown unit; use bytes or K, M, G, T")),
    };
    let value: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("`{text}`: expected a whole number of bytes, e.g. 500M or 2G"))?;
    value
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{text}`: too large"))
}

/// `bytes` in the largest binary unit that keeps it readable (`1 GiB`,
/// `2.2 GiB`, `512 KiB`).
pub fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value >= 100.0 || value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The number of steps of size h that cover `duration` (rounding away float
/// noise), as a real: it may be far beyond any integer type (1/1e-300).
pub fn steps_needed(duration: f64, dt: f64) -> f64 {
    (duration / dt - 1e-9).ceil().max(0.0)
}

/// `x` as a person writes it: plainly to nine significant digits between
/// 1e-4 and 1e7 (4.695, not 4.694999999999922), else with an exponent to
/// four (1e-300, not 300 zeros).
pub fn short(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e7).contains(&x.abs()) {
        let rounded: f64 = format!("{x:.8e}").parse().unwrap_or(x);
        format!("{rounded}")
    } else {
        let rounded: f64 = format!("{x:.3e}").parse().unwrap_or(x);
        format!("{rounded:e}")
    }
}

/// Refuses a run of more than `max` steps.
pub fn check_steps(duration: f64, dt: f64, max: u64) -> Result<u64, String> {
    let steps = steps_needed(duration, dt);
    if steps > max as f64 {
        return Err(format!(
            "h = {} s over {} s is {} steps, more than the {max} a run may take; use a larger --dt or a shorter --duration, or raise the cap with --max-steps N",
            short(dt),
            short(duration),
            short(steps)
        ));
    }
    Ok(steps as u64)
}

/// Rows of a run's CSV: t = 0, every `every`-th step and the last one.
pub fn csv_rows(steps: u64, every: u64) -> u64 {
    1 + steps / every + u64::from(!steps.is_multiple_of(every))
}

/// Refuses a CSV that would outgrow `max` bytes, estimated from its header
/// and first row (rows differ only by their numbers' digits).
pub fn check_csv_size(header: usize, first_row: usize, rows: u64, max: u64) -> Result<(), String> {
    let estimate = (header + 1) as f64 + rows as f64 * (first_row + 1) as f64;
    if estimate > max as f64 {
        return Err(format!(
            "--csv: {rows} rows of about {} bytes make about {} of CSV, more than the {} cap; write fewer rows with --every N, or raise the cap with --max-csv-size SIZE (e.g. 10G)",
            first_row + 1,
            human_bytes(estimate),
            human_bytes(max as f64)
        ));
    }
    Ok(())
}

/// What bounds the memory this process may use, and how much it is.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryLimit {
    /// Bytes.
    pub bytes: u64,
    /// Where the bound comes from, as a person names it (`ulimit -v`).
    pub source: &'static str,
}

/// The soft limit of the resource `name` (`Max address space`) in the text
/// of `/proc/self/limits`, when it is a number.
fn proc_limit(limits: &str, name: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with(name))?;
    line[name.len()..].split_whitespace().next()?.parse().ok()
}

/// `MemTotal` of `/proc/meminfo`'s text, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line["MemTotal:".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// The tightest of the bounds read from the given texts of
/// `/proc/meminfo`, `/proc/self/limits` and the cgroup's `memory.max` (v2)
/// or `memory.limit_in_bytes` (v1); a missing text bounds nothing.
fn tightest(
    meminfo: Option<&str>,
    limits: Option<&str>,
    cgroup: Option<&str>,
) -> Option<MemoryLimit> {
    let mut bounds = Vec::new();
    if let Some(bytes) = meminfo.and_then(mem_total) {
        bounds.push(MemoryLimit {
            bytes,
            source: "the machine's memory",
        });
    }
    if let Some(limits) = limits {
        if let Some(bytes) = proc_limit(limits, "Max address space") {
            bounds.push(MemoryLimit {
                bytes,
                source: "ulimit -v",
            });
        }
        if let Some(bytes) = proc_limit(limits, "Max data size") {
            bounds.push(MemoryLimit {
                bytes,
                source: "ulimit -d",
            });
        }
    }
    // v1 writes a huge number for "no limit"; v2 writes "max".
    if let Some(bytes) = cgroup.and_then(|t| t.trim().parse::<u64>().ok())
        && bytes < 1 << 60
    {
        bounds.push(MemoryLimit {
            bytes,
            source: "the cgroup's memory limit",
        });
    }
    bounds.into_iter().min_by_key(|b| b.bytes)
}

/// The memory this process may use: the machine's, or less under a
/// `ulimit` or a container's cgroup limit. `None` where none can be read.
pub fn memory_limit() -> Option<MemoryLimit> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let cgroup = read("/sys/fs/cgroup/memory.max")
        .or_else(|| read("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
    tightest(
        read("/proc/meminfo").as_deref(),
        read("/proc/self/limits").as_deref(),
        cgroup.as_deref(),
    )
}

/// Refuses a scene whose estimated peak memory ([`crate::sim::memory`])
/// exceeds `max` (`--max-memory`) or, without it, what this process may
/// use ([`memory_limit`]).
pub fn check_memory(
    estimate: &crate::sim::memory::Estimate,
    max: Option<u64>,
    limit: Option<MemoryLimit>,
) -> Result<(), String> {
    let bound = match max {
        Some(bytes) => MemoryLimit {
            bytes,
            source: "--max-memory",
        },
        None => match limit {
            Some(limit) => limit,
            None => return Ok(()),
        },
    };
    if estimate.bytes <= bound.bytes as f64 {
        return Ok(());
    }
    Err(format!(
        "{} bodies with up to {} contact points need about {} of memory at their densest (estimated), more than the {} allowed by {}; run fewer bodies, or raise the cap with --max-memory SIZE (e.g. {}G)",
        estimate.bodies,
        estimate.points,
        human_bytes(estimate.bytes),
        human_bytes(bound.bytes as f64),
        bound.source,
        (estimate.bytes / (1u64 << 30) as f64).ceil().max(1.0)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert_eq!(parse_bytes("64k"), Ok(64 << 10));
        assert_eq!(parse_bytes("500M"), Ok(500 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert!(parse_bytes("2X").is_err());
        assert!(parse_bytes("-1").is_err());
        assert!(parse_bytes("").is_err());
        assert!(parse_bytes("99999999999T").is_err());
        assert_eq!(human_bytes((1u64 << 30) as f64), "1 GiB");
        assert_eq!(human_bytes(2.2 * (1u64 << 30) as f64), "2.2 GiB");
        assert_eq!(human_bytes(12.0), "12 bytes");
    }

    #[test]
    fn steps_and_rows() {
        assert_eq!(check_steps(1.0, 0.0025, 1000), Ok(400));
        assert_eq!(short(1e-300), "1e-300");
        assert_eq!(short(0.0025), "0.0025");
        assert_eq!(short(4.694999999999922), "4.695");
        assert_eq!(short(9.999999999999999e299), "1e300");
        let refused = check_steps(1.0, 1e-300, DEFAULT_MAX_STEPS).expect_err("1e300 steps");
        assert!(refused.contains("1e300 steps"), "{refused}");
        assert!(refused.contains("--max-steps"), "{refused}");
        assert_eq!(csv_rows(40, 10), 5);
        assert_eq!(csv_rows(41, 10), 6);
        assert_eq!(csv_rows(0, 1), 1);
        assert!(check_csv_size(100, 100, 1000, 1 << 20).is_ok());
        let refused = check_csv_size(100, 200, 10_000_000, 1 << 30).expect_err("2 GB");
        assert!(refused.contains("--max-csv-size"), "{refused}");
        assert!(refused.contains("1.9 GiB"), "{refused}");
    }
    #[test]
    fn the_tightest_memory_bound_wins() {
        let meminfo = "MemTotal:       24000000 kB\nMemFree:        1000 kB\n";
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max data size             unlimited            unlimited            bytes     \n\
                      Max address space         3000000000           unlimited            bytes     \n";
        let limit = tightest(Some(meminfo), Some(limits), Some("max\n")).expect("a bound");
        assert_eq!(limit.bytes, 3_000_000_000);
        assert_eq!(limit.source, "ulimit -v");
        let limit = tightest(Some(meminfo), None, Some("9223372036854771712\n")).expect("a bound");
        assert_eq!(limit.bytes, 24_000_000 * 1024);
        assert_eq!(limit.source, "the machine's memory");
        let limit = tightest(Some(meminfo), None, Some("1073741824\n")).expect("a bound");
        assert_eq!(limit.source, "the cgroup's memory limit");
        assert_eq!(tightest(None, None, None), None);
    }

    #[test]
    fn a_scene_past_the_memory_bound_is_refused_naming_the_flag() {
        use crate::sim::memory::Estimate;
        let estimate = Estimate {
            bodies: 100_000,
            points: 400_000,
            bytes: 5.0 * (1u64 << 30) as f64,
        };
        let ulimit = MemoryLimit {
            bytes: 3 << 30,
            source: "ulimit -v",
        };
        let refused =
            check_memory(&estimate, None, Some(ulimit.clone())).expect_err("5 GiB > 3 GiB");
        assert!(refused.contains("5 GiB"), "{refused}");
        assert!(refused.contains("3 GiB allowed by ulimit -v"), "{refused}");
        assert!(refused.contains("--max-memory SIZE (e.g. 5G)"), "{refused}");
        assert!(check_memory(&estimate, Some(6 << 30), Some(ulimit)).is_ok());
        assert!(check_memory(&estimate, Some(1 << 30), None).is_err());
        assert!(check_memory(&estimate, None, None).is_ok());
    }
}
