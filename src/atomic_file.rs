//! Writing a file atomically: the text goes to `.NAME.partial` beside it and
//! is renamed over it, so a reader never sees half a file and an earlier one
//! stays whole when the write fails.

use std::path::Path;

/// Writes `text` to `path` through a temporary file in the same directory
/// (creating the directory if need be); the error names the path.
pub fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| format!("{}: not a file name", path.display()))?;
    let temporary = path.with_file_name(format!(".{name}.partial"));
    std::fs::write(&temporary, text).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::rename(&temporary, path).map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        format!("{}: {e}", path.display())
    })
}
