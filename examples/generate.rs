//! Writes a generated scene of N bodies to standard output: the layouts of
//! the shipped `pile_100.ron`, `silo.ron`, `heap.ron`, `avalanche.ron` and
//! `hourglass.ron` at any size (`contactlab::scene::generate` and
//! `contactlab::scene::granular`), for runs and for other engines
//! (`benches/peers/`).
//!
//! ```sh
//! cargo run --release --no-default-features --example generate -- heap 5000 > heap_5000.ron
//! ```

use contactlab::scene::{generate, granular};
use std::process::ExitCode;

/// A layout's RON text for N bodies.
type Source = fn(usize) -> String;

/// The layouts, by name.
const LAYOUTS: [(&str, Source); 5] = [
    ("pile", generate::pile_source),
    ("silo", granular::silo_source),
    ("heap", granular::heap_source),
    ("avalanche", granular::avalanche_source),
    ("hourglass", granular::hourglass_source),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names = || {
        LAYOUTS
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let [layout, count] = args.as_slice() else {
        eprintln!("usage: generate LAYOUT N   (LAYOUT: {})", names());
        return ExitCode::from(2);
    };
    let Some((_, source)) = LAYOUTS.iter().find(|(name, _)| name == layout) else {
        eprintln!("generate: unknown layout {layout:?} (one of {})", names());
        return ExitCode::from(2);
    };
    let n = match count.parse::<usize>() {
        Ok(n) if n >= 1 => n,
        _ => {
            eprintln!("generate: N must be a whole number of bodies, at least 1; found {count:?}");
            return ExitCode::from(2);
        }
    };
    print!("{}", source(n));
    ExitCode::SUCCESS
}
