//! `contactlab lcp FILE.dat…`: solve each file, one line per file.

use crate::lcp::{self, LemkeOptions, siconos};
use std::path::PathBuf;

/// Solves each file and prints `<name> n=<n> status=<S> pivots=<k> residual=<r>`.
/// A file that cannot be read, or whose LCP has more than `max_size`
/// unknowns, prints its error and makes the exit code non-zero (the other
/// files are still solved).
pub fn run(files: &[PathBuf], max_size: usize) -> Result<(), String> {
    let mut failed = 0;
    for path in files {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        match siconos::read_limited(path, max_size) {
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
            "{failed} of {} files could not be read or solved",
            files.len()
        ))
    }
}
