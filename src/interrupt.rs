//! Ctrl-C, `kill` and `timeout` as a request to stop cleanly. `contactlab
//! run` and `record` install these handlers for SIGINT, SIGTERM and SIGHUP:
//! the first signal sets a flag that the run checks between steps (and
//! `record` between frames), so `run` keeps its rows up to the last whole
//! step in its `.partial` file and `record` deletes its temporary output. A
//! signal within [`GRACE`] of the first is the same request (a key held
//! down, `kill` sent twice); a later one ends the process at once with 128 +
//! the signal's number.
//!
//! The viewer keeps Bevy's own Ctrl-C handling and does not install these.

use signal_hook::consts::{SIGINT, SIGTERM};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[cfg(unix)]
const SIGNALS: &[i32] = &[SIGINT, SIGTERM, signal_hook::consts::SIGHUP];
#[cfg(not(unix))]
const SIGNALS: &[i32] = &[SIGINT, SIGTERM];

/// How long after the first signal another one still asks for the same
/// clean stop.
pub const GRACE: Duration = Duration::from_secs(1);

/// Whether a signal arrived.
static SEEN: AtomicBool = AtomicBool::new(false);
/// The number of the first signal that arrived.
static SIGNAL: AtomicUsize = AtomicUsize::new(0);
/// When it arrived, µs after [`START`].
static FIRST: AtomicU64 = AtomicU64::new(0);
/// The clock the handler reads (set before any handler is installed).
static START: OnceLock<Instant> = OnceLock::new();
/// The outcome of the one installation.
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// Microseconds since [`START`] (0 before it is set).
fn now() -> u64 {
    START
        .get()
        .map_or(0, |start| start.elapsed().as_micros() as u64)
}

/// The handler: the first signal is recorded; one past the grace period
/// exits. It only reads the monotonic clock and atomics, and `_exit`s:
/// all async-signal-safe.
fn handle(signal: i32) {
    if SEEN.load(Ordering::SeqCst) {
        let since = now().saturating_sub(FIRST.load(Ordering::SeqCst));
        if since >= GRACE.as_micros() as u64 {
            signal_hook::low_level::exit(128 + signal);
        }
        return;
    }
    FIRST.store(now(), Ordering::SeqCst);
    SIGNAL.store(signal as usize, Ordering::SeqCst);
    SEEN.store(true, Ordering::SeqCst);
}

/// Installs the handlers (once per process; later calls return the first
/// call's result).
pub fn install() -> Result<(), String> {
    INSTALLED
        .get_or_init(|| {
            START.get_or_init(Instant::now);
            for &signal in SIGNALS {
                // SAFETY: `handle` is async-signal-safe (see there).
                unsafe { signal_hook::low_level::register(signal, move || handle(signal)) }
                    .map(|_| ())
                    .map_err(|e| format!("cannot handle signal {signal}: {e}"))?;
            }
            Ok(())
        })
        .clone()
}

/// The signal that asked this process to stop, if one did.
pub fn received() -> Option<i32> {
    SEEN.load(Ordering::SeqCst)
        .then(|| SIGNAL.load(Ordering::SeqCst) as i32)
}

/// The signal's name (`SIGTERM`), for messages.
pub fn name(signal: i32) -> String {
    signal_hook::low_level::signal_name(signal)
        .map_or_else(|| format!("signal {signal}"), str::to_owned)
}
