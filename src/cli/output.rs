//! Nothing lost: `run` writes its CSV to `OUT.partial` beside `OUT` and
//! renames it to `OUT` only when the run completes. A failed, refused or
//! interrupted run leaves any earlier `OUT` as it was and its own rows, up to
//! the last whole one, in `OUT.partial`, whose name says what it is. The rows
//! reach the file in blocks that end at a row's end, so a run killed
//! outright (SIGKILL, a second signal) leaves only whole rows there too.
//!
//! An `OUT` that exists and is not a regular file — a device such as
//! `/dev/null`, a named pipe — is written in place: a file renamed over it
//! would replace the device (as root, `/dev/null` itself).

use super::limits::human_bytes;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A CSV being written.
pub struct CsvOutput {
    /// Where the complete file goes.
    destination: PathBuf,
    /// Where it is written until then; `None`: in place (a device or a
    /// pipe).
    partial: Option<PathBuf>,
    out: File,
    /// Whole rows not yet written to `out`.
    buffer: Vec<u8>,
    /// Bytes written so far.
    bytes: u64,
    /// The most it may take (`--max-csv-size`).
    limit: u64,
    /// Lines written so far.
    lines: u64,
}

/// Bytes of whole rows gathered before they are written in one call.
const BLOCK: usize = 64 << 10;

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
        if std::fs::metadata(destination).is_ok_and(|m| !m.is_file()) {
            let file = OpenOptions::new()
                .write(true)
                .open(destination)
                .map_err(|e| format!("--csv {shown}: cannot open it for writing: {e}"))?;
            return Ok(Self {
                destination: destination.to_owned(),
                partial: None,
                out: file,
                buffer: Vec::with_capacity(BLOCK),
                bytes: 0,
                limit,
                lines: 0,
            });
        }
        let partial = partial_path(destination);
        let file = File::create(&partial)
            .map_err(|e| format!("--csv {shown}: cannot create {}: {e}", partial.display()))?;
        Ok(Self {
            destination: destination.to_owned(),
            partial: Some(partial),
            out: file,
            buffer: Vec::with_capacity(BLOCK),
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
        self.buffer.extend_from_slice(text.as_bytes());
        self.buffer.push(b'\n');
        self.bytes += len;
        self.lines += 1;
        if self.buffer.len() >= BLOCK {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the gathered rows to the file, in one call.
    fn flush(&mut self) -> Result<(), String> {
        let written = self.out.write_all(&self.buffer);
        self.buffer.clear();
        written.map_err(|e| format!("writing {}: {e}", self.written().display()))
    }

    /// The file the rows go to.
    fn written(&self) -> &Path {
        self.partial.as_deref().unwrap_or(&self.destination)
    }

    /// Writes out what is buffered and leaves the file as `OUT.partial`;
    /// returns where it is, for the error message.
    pub fn keep_partial(mut self) -> String {
        let _ = self.flush();
        let rows = self.lines.saturating_sub(1);
        match &self.partial {
            Some(partial) => format!("{rows} rows kept in {}", partial.display()),
            None => format!("{rows} rows written to {}", self.destination.display()),
        }
    }

    /// Completes the file: flushed, synced and renamed to `OUT` (replacing
    /// an earlier one only now); written in place, only flushed.
    pub fn commit(mut self) -> Result<(), String> {
        self.flush()?;
        let Some(partial) = &self.partial else {
            return Ok(());
        };
        let partial_shown = partial.display();
        self.out
            .sync_all()
            .map_err(|e| format!("writing {partial_shown}: {e}"))?;
        std::fs::rename(partial, &self.destination).map_err(|e| {
            format!(
                "--csv {}: cannot rename the complete {partial_shown} to it: {e}",
                self.destination.display()
            )
        })
    }
}
