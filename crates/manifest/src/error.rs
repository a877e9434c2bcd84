use std::path::PathBuf;

/// A manifest problem, always naming the file, the line and the field, and saying what is allowed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The folder has no tool file: no `tools.toml`, `tools.json` or `tools/*.json`.
    #[error(
        "{dir}: no tools.toml or tools.json; a manifest folder needs tools.toml with [[tool]] entries, or tools.json (or tools/*.json, one per server) with an MCP tools/list result"
    )]
    NoTools {
        /// The folder.
        dir: PathBuf,
    },
    /// TOML syntax, a wrong type, or an unknown key.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The parser's message (it names the key and what was expected).
        message: String,
    },
    /// A value that parses but breaks a rule.
    #[error("{path}:{line}: {field}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The field, e.g. `tool.name` or `mode.base_tools`.
        field: String,
        /// What is wrong and what is allowed.
        message: String,
    },
}

/// The result type of this crate.
pub type Result<T, E = ManifestError> = std::result::Result<T, E>;
