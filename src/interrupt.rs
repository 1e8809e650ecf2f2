//! Ctrl-C, `kill` and `timeout` as a request to stop cleanly. `contactlab
//! run` and `record` install these handlers for SIGINT, SIGTERM and SIGHUP:
//! the first signal sets a flag that the run checks between steps (and
//! `record` between frames), so `run` keeps its rows up to the last whole
//! step in its `.partial` file and `record` deletes its temporary output. A
//! second signal ends the process at once with 128 + the signal's number.
//!
//! The viewer keeps Bevy's own Ctrl-C handling and does not install these.

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

#[cfg(unix)]
const SIGNALS: &[i32] = &[SIGINT, SIGTERM, signal_hook::consts::SIGHUP];
#[cfg(not(unix))]
const SIGNALS: &[i32] = &[SIGINT, SIGTERM];

/// Whether a signal arrived (arms the immediate exit on the next one).
static SEEN: AtomicBool = AtomicBool::new(false);
/// The number of the last signal that arrived.
static SIGNAL: AtomicUsize = AtomicUsize::new(0);
/// The outcome of the one installation.
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// Installs the handlers (once per process; later calls return the first
/// call's result).
pub fn install() -> Result<(), String> {
    INSTALLED
        .get_or_init(|| {
            for &signal in SIGNALS {
                // The exit must be registered first: it runs before the flag
                // is set, so it fires only from the second signal on.
                flag::register_conditional_shutdown(signal, 128 + signal, &SEEN)
                    .and_then(|_| flag::register_usize(signal, &SIGNAL, signal as usize))
                    .and_then(|_| flag::register(signal, &SEEN))
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
