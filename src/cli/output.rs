//! Nothing lost: `run` writes its CSV to `OUT.partial` beside `OUT` and
//! renames it to `OUT` only when the run completes. A failed, refused or
//! interrupted run leaves any earlier `OUT` as it was and its own rows, up to
//! the last whole one, in `OUT.partial`, whose name says what it is (a run
//! killed outright, by SIGKILL or power loss, leaves the same).

use super::limits::human_bytes;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A CSV being written.
pub struct CsvOutput {
    /// Where the complete file goes.
    destination: PathBuf,
    /// Where it is written until then.
    partial: PathBuf,
    out: BufWriter<File>,
    /// Bytes written so far.
    bytes: u64,
    /// The most it may take (`--max-csv-size`).
    limit: u64,
    /// Lines written so far.
    lines: u64,
}

/// `OUT.partial` for `OUT`.
pub fn partial_path(destination: &Path) -> PathBuf {
    let mut name = destination.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}

impl CsvOutput {
    /// Creates `OUT.partial` (so an unwritable destination fails before the
    /// run starts).
    pub fn create(destination: &Path, limit: u64) -> Result<Self, String> {
        let shown = destination.display();
        if destination.is_dir() {
            return Err(format!("--csv {shown}: is a directory"));
        }
        let partial = partial_path(destination);
        let file = File::create(&partial)
            .map_err(|e| format!("--csv {shown}: cannot create {}: {e}", partial.display()))?;
        Ok(Self {
            destination: destination.to_owned(),
            partial,
            out: BufWriter::new(file),
            bytes: 0,
            limit,
            lines: 0,
        })
    }

    /// Appends one line (a newline is added), refusing one that would take
    /// the file past its size limit.
    pub fn line(&mut self, text: &str) -> Result<(), String> {
        let len = text.len() as u64 + 1;
        if self.bytes + len > self.limit {
            return Err(format!(
                "the CSV reached its {} cap (--max-csv-size raises it, --every N writes fewer rows)",
                human_bytes(self.limit as f64)
            ));
        }
        writeln!(self.out, "{text}")
            .map_err(|e| format!("writing {}: {e}", self.partial.display()))?;
        self.bytes += len;
        self.lines += 1;
        Ok(())
    }

    /// Writes out what is buffered and leaves the file as `OUT.partial`;
    /// returns where it is, for the error message.
    pub fn keep_partial(mut self) -> String {
        let _ = self.out.flush();
        format!(
            "{} rows kept in {}",
            self.lines.saturating_sub(1),
            self.partial.display()
        )
    }

    /// Completes the file: flushed, synced and renamed to `OUT` (replacing
    /// an earlier one only now).
    pub fn commit(self) -> Result<(), String> {
        let partial = self.partial.display().to_string();
        let file = self
            .out
            .into_inner()
            .map_err(|e| format!("writing {partial}: {}", e.error()))?;
        file.sync_all()
            .map_err(|e| format!("writing {partial}: {e}"))?;
        std::fs::rename(&self.partial, &self.destination).map_err(|e| {
            format!(
                "--csv {}: cannot rename the complete {partial} to it: {e}",
                self.destination.display()
            )
        })
    }
}
