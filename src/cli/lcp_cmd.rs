//! `contactlab lcp FILE.dat…`: solve each file, one line per file.

use crate::lcp::{self, LcpStatus, LemkeOptions, siconos};
use std::path::PathBuf;

/// Solves each file and prints `<name> n=<n> status=<S> pivots=<k> residual=<r>`.
/// The exit code is zero only when every file was read and solved: a file
/// that cannot be read, or whose LCP has more than `max_size` unknowns,
/// prints its error, and one whose solve ends otherwise than `Solved`
/// (whose residual may then be infinite: data near f64's limits overflow
/// while pivoting) still prints its line; the other files are still solved.
pub fn run(files: &[PathBuf], max_size: usize) -> Result<(), String> {
    let (mut unread, mut unsolved) = (0, 0);
    for path in files {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        match siconos::read_limited(path, max_size) {
            Ok(problem) => match lcp::solve_either(&problem, &LemkeOptions::default()) {
                Ok(s) => {
                    println!(
                        "{name} n={} status={} pivots={} residual={:.3e}",
                        problem.size(),
                        s.status,
                        s.pivots,
                        s.residual
                    );
                    if s.status != LcpStatus::Solved {
                        unsolved += 1;
                    }
                }
                Err(e) => {
                    unread += 1;
                    eprintln!("{name}: {e}");
                }
            },
            Err(e) => {
                unread += 1;
                eprintln!("{e}");
            }
        }
    }
    let total = files.len();
    match (unread, unsolved) {
        (0, 0) => Ok(()),
        (0, _) => Err(format!("{unsolved} of {total} LCPs were not solved")),
        (_, 0) => Err(format!("{unread} of {total} files could not be read")),
        _ => Err(format!(
            "{unread} of {total} files could not be read and {unsolved} LCPs were not solved"
        )),
    }
}
