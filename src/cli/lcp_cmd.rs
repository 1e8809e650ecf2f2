//! `contactlab lcp FILE.dat…`: solve each file, one line per file.

use crate::lcp::{self, LemkeOptions, siconos};
use std::path::PathBuf;

/// Solves each file and prints `<name> n=<n> status=<S> pivots=<k> residual=<r>`.
/// A file that cannot be read prints its error and makes the exit code non-zero
/// (the other files are still solved).
pub fn run(files: &[PathBuf]) -> Result<(), String> {
    let mut failed = 0;
    for path in files {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        match siconos::read(path) {
            Ok(problem) => match lcp::solve(&problem, &LemkeOptions::default()) {
                Ok(s) => println!(
                    "{name} n={} status={} pivots={} residual={:.3e}",
                    problem.size(),
                    s.status,
                    s.pivots,
                    s.residual
                ),
                Err(e) => {
                    failed += 1;
                    eprintln!("{name}: {e}");
                }
            },
            Err(e) => {
                failed += 1;
                eprintln!("{e}");
            }
        }
    }
    if failed == 0 {
        Ok(())
    } else {
        Err(format!(
            "{failed} of {} files could not be read",
            files.len()
        ))
    }
}
