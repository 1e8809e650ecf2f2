//! The `contactlab` binary: the viewer and `record` (feature `viewer`), `run` and `lcp`.

use clap::Parser;
use contactlab::cli::{Cli, dispatch};
use std::process::ExitCode;

/// mimalloc instead of the system allocator: a step builds and drops many
/// small vectors, and glibc's malloc and free were a fifth of a small
/// scene's step (the benchmarks use the same allocator).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        #[cfg(feature = "viewer")]
        Some(contactlab::cli::Command::Record(args)) => {
            contactlab::viewer::record::record_command(&args)
        }
        Some(command) => dispatch(command),
        None => open_viewer(cli.view),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("contactlab: {message}");
            // Stopped by a signal: say which, as a shell does (130 for Ctrl-C).
            match contactlab::interrupt::received() {
                Some(signal) => ExitCode::from((128 + signal).clamp(0, 255) as u8),
                None => ExitCode::FAILURE,
            }
        }
    }
}

#[cfg(feature = "viewer")]
fn open_viewer(args: contactlab::cli::ViewArgs) -> Result<(), String> {
    contactlab::viewer::run(args)
}

#[cfg(not(feature = "viewer"))]
fn open_viewer(_args: contactlab::cli::ViewArgs) -> Result<(), String> {
    Err("this build has no viewer (built without the `viewer` feature); use `contactlab run` or `contactlab lcp`".to_owned())
}
