//! The Siconos numerics `.dat` format for dense LCPs, read and written.
//!
//! Whitespace-separated tokens, `#` starts a comment:
//!
//! ```text
//! n            problem size
//! 0            storage type (0 = dense; the only one supported)
//! n n          rows, columns
//! n n          rows, columns again
//! a_1 … a_n²   M in column-major order (each printed line is one column)
//! q_1 … q_n
//! ```
//!
//! Anything after q is free text (the collection puts remarks there). Steppers
//! dump a step's LCP in this format so it can be replayed with `contactlab lcp`
//! or in Siconos itself.

use super::Lcp;
use nalgebra::{DMatrix, DVector};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a `.dat` file could not be read or written.
#[derive(Debug, Error)]
pub enum DatError {
    /// The file could not be opened, read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A token is missing, malformed or inconsistent.
    #[error("{}:{line}:{column}: {field}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line of the offending token (or of the end of the file).
        line: usize,
        /// 1-based column.
        column: usize,
        /// Which field of the format was being read, e.g. `M[3,1]`.
        field: String,
        /// What was wrong.
        message: String,
    },
}

struct Token<'a> {
    text: &'a str,
    line: usize,
    column: usize,
}

fn tokens(source: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    for (line_index, line) in source.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let mut rest = line;
        let mut offset = 0;
        while let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
            let after = &rest[start..];
            let len = after.find(char::is_whitespace).unwrap_or(after.len());
            out.push(Token {
                text: &after[..len],
                line: line_index + 1,
                column: offset + start + 1,
            });
            offset += start + len;
            rest = &after[len..];
        }
    }
    out
}

/// Parses the text of a `.dat` file; `path` is only used in error messages.
pub fn parse(source: &str, path: &Path) -> Result<Lcp, DatError> {
    parse_limited(source, path, usize::MAX)
}

/// [`parse`], refusing a problem of more than `max_size` unknowns at its
/// header, before reading any entry.
pub fn parse_limited(source: &str, path: &Path, max_size: usize) -> Result<Lcp, DatError> {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    let tokens = tokens(source);
    let end = (source.lines().count().max(1), 1);
    let mut next = 0;
    let mut take = |field: &str| -> Result<(&Token<'_>, f64), DatError> {
        let token = tokens.get(next).ok_or_else(|| DatError::Parse {
            path: path.to_owned(),
            line: end.0,
            column: end.1,
            field: field.to_owned(),
            message: "unexpected end of file".to_owned(),
        })?;
        next += 1;
        let value: f64 = token.text.parse().map_err(|_| DatError::Parse {
            path: path.to_owned(),
            line: token.line,
            column: token.column,
            field: field.to_owned(),
            message: format!("expected a number, found `{}`", token.text),
        })?;
        Ok((token, value))
    };
    let as_size = |token: &Token<'_>, value: f64, field: &str| -> Result<usize, DatError> {
        if value >= 0.0 && value.fract() == 0.0 && value <= 1e6 {
            Ok(value as usize)
        } else {
            Err(DatError::Parse {
                path: path.to_owned(),
                line: token.line,
                column: token.column,
                field: field.to_owned(),
                message: format!(
                    "expected a size (a non-negative integer), found `{}`",
                    token.text
                ),
            })
        }
    };
    let (token, value) = take("n")?;
    let n = as_size(token, value, "n")?;
    if n > max_size {
        return Err(DatError::Parse {
            path: path.to_owned(),
            line: token.line,
            column: token.column,
            field: "n".to_owned(),
            message: format!(
                "an LCP of {n} unknowns is more than the {max_size} allowed (Lemke's dense tableau takes n² memory and up to n³ work); raise the limit with --max-size N"
            ),
        });
    }
    let (token, value) = take("storage")?;
    if value != 0.0 {
        return Err(DatError::Parse {
            path: path.to_owned(),
            line: token.line,
            column: token.column,
            field: "storage".to_owned(),
            message: format!(
                "only dense storage (0) is supported, found `{}`",
                token.text
            ),
        });
    }
    for field in ["rows", "columns", "rows", "columns"] {
        let (token, value) = take(field)?;
        let size = as_size(token, value, field)?;
        if size != n {
            return Err(DatError::Parse {
                path: path.to_owned(),
                line: token.line,
                column: token.column,
                field: field.to_owned(),
                message: format!("expected {n} (the problem size), found {size}"),
            });
        }
    }
    // Entries are collected as they are read, so memory follows the file:
    // a header that claims n = 100000 in a 39-byte file ends at its first
    // missing entry, not in an 80 GB allocation.
    let field_at = |k: usize| {
        if k < n * n {
            format!("M[{},{}]", k % n + 1, k / n + 1)
        } else {
            format!("q[{}]", k - n * n + 1)
        }
    };
    let mut values = Vec::with_capacity((n * n + n).min(tokens.len()));
    for k in 0..n * n + n {
        let field = field_at(k);
        values.push(finite(take(&field)?, &field, path)?);
    }
    let m = DMatrix::from_column_slice(n, n, &values[..n * n]);
    let q = DVector::from_column_slice(&values[n * n..]);
    Lcp::new(m, q).map_err(|e| DatError::Parse {
        path: path.to_owned(),
        line: end.0,
        column: end.1,
        field: "LCP".to_owned(),
        message: e.to_string(),
    })
}

fn finite((token, value): (&Token<'_>, f64), field: &str, path: &Path) -> Result<f64, DatError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(DatError::Parse {
            path: path.to_owned(),
            line: token.line,
            column: token.column,
            field: field.to_owned(),
            message: format!("expected a finite number, found `{}`", token.text),
        })
    }
}

/// Reads a `.dat` file.
pub fn read(path: &Path) -> Result<Lcp, DatError> {
    let source = std::fs::read_to_string(path).map_err(|source| DatError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse(&source, path)
}

/// The most of a `.dat` file read for an LCP of at most `max_size`
/// unknowns: 40 bytes for each of the n² + n numbers (what [`format`]
/// writes, with room to spare) and 1 MiB for the header and comments.
pub fn max_file_bytes(max_size: usize) -> u64 {
    let n = max_size as u64;
    n.saturating_mul(n)
        .saturating_add(n)
        .saturating_mul(40)
        .saturating_add(1 << 20)
}

/// Reads a `.dat` file whose LCP has at most `max_size` unknowns, reading
/// no more of it than such a problem needs ([`max_file_bytes`]; a file that
/// does not end, like `/dev/zero`, is refused there).
pub fn read_limited(path: &Path, max_size: usize) -> Result<Lcp, DatError> {
    use std::io::Read;
    let limit = max_file_bytes(max_size);
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(limit.saturating_add(1)).read_to_end(&mut bytes))
        .map_err(|source| DatError::Io {
            path: path.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(DatError::Io {
            path: path.to_owned(),
            source: std::io::Error::other(format!(
                "longer than the {limit} bytes an LCP of at most {max_size} unknowns needs (--max-size N raises both)"
            )),
        });
    }
    let source = String::from_utf8(bytes).map_err(|_| DatError::Io {
        path: path.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ),
    })?;
    parse_limited(&source, path, max_size)
}

/// Formats an LCP as a `.dat` file (values in shortest round-trip form).
pub fn format(lcp: &Lcp, comment: &str) -> String {
    let n = lcp.size();
    let mut out = format!("{n}\n0\n{n}\n{n}\n{n}\t{n}\n");
    for col in 0..n {
        let line: Vec<String> = (0..n)
            .map(|row| format!("{:e}", lcp.m[(row, col)]))
            .collect();
        out.push_str(&line.join(" "));
        out.push('\n');
    }
    let q: Vec<String> = lcp.q.iter().map(|x| format!("{x:e}")).collect();
    out.push_str(&q.join(" "));
    out.push('\n');
    for line in comment.lines() {
        let _ = writeln!(out, "# {line}");
    }
    out
}

/// Writes an LCP to a `.dat` file.
pub fn write(lcp: &Lcp, path: &Path, comment: &str) -> Result<(), DatError> {
    std::fs::write(path, format(lcp, comment)).map_err(|source| DatError::Io {
        path: path.to_owned(),
        source,
    })
}
