//! JSON Lines input with errors that name the file, the line and the field.

use crate::{EvalError, Result};
use serde::de::DeserializeOwned;
use std::path::Path;

/// Reads one JSON object per non-blank line. A bad line fails the whole file, naming it.
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    Ok(read_jsonl_numbered(path)?.into_iter().map(|(_, row)| row).collect())
}

/// [`read_jsonl`] with each row's line number in the file (1-based; blank lines are skipped,
/// so a row's position in the result is not its line).
pub fn read_jsonl_numbered<T: DeserializeOwned>(path: &Path) -> Result<Vec<(usize, T)>> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| EvalError::Io { path: path.to_path_buf(), source })?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row = serde_json::from_str(line).map_err(|e| EvalError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            // serde_json's message already names the field ("missing field `gold`").
            message: e.to_string(),
        })?;
        rows.push((i + 1, row));
    }
    if rows.is_empty() {
        return Err(EvalError::Empty { path: path.to_path_buf() });
    }
    Ok(rows)
}
