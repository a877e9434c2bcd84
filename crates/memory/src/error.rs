//! The store's errors: each names the database file and, where there is one, the fix.

use std::path::PathBuf;

/// Store errors; each names the database file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// SQLite failed.
    #[error("memory store {path}: {source}")]
    Sqlite {
        /// The database.
        path: PathBuf,
        /// The error.
        source: rusqlite::Error,
    },
    /// The model could not embed the text.
    #[error("memory store {path}: {source}")]
    Embed {
        /// The database.
        path: PathBuf,
        /// The error.
        source: switchyard_embed::EmbedError,
    },
    /// The entries were embedded by another model.
    #[error(
        "memory store {path} holds embeddings of model {stored} but model {given} ({given_fingerprint}) was given; run `switchyard memory reembed --db {path} --index <index>` to migrate"
    )]
    ModelMismatch {
        /// The database.
        path: PathBuf,
        /// Fingerprint stored.
        stored: String,
        /// Model given.
        given: String,
        /// Its fingerprint.
        given_fingerprint: String,
    },
    /// A kind outside the known set.
    #[error("memory kind {kind:?} is not known; use one of {allowed}")]
    BadKind {
        /// The kind given.
        kind: String,
        /// The kinds allowed.
        allowed: String,
    },
    /// Empty text.
    #[error("memory text is empty; nothing to store")]
    EmptyText,
    /// An attempt to write an operator rule as an ordinary entry.
    #[error(
        "memory kind \"rule\" is for the operator's rules: add one with `switchyard memory rule add` (or MemoryStore::add_rule), never as an ordinary entry"
    )]
    RuleThroughAdd,
    /// `prove` of an entry that is not an operator rule.
    #[error(
        "memory store {path}: entry {id} is a {kind} entry, not an operator rule; only rules can be proven"
    )]
    NotARule {
        /// The database.
        path: PathBuf,
        /// The entry.
        id: i64,
        /// Its kind.
        kind: String,
    },
    /// A store name outside the allowed shape.
    #[error(
        "memory store name {name:?} is not allowed; use 1-64 lowercase letters, digits, `_`, `.` or `-` (e.g. notes, decisions, preferences)"
    )]
    BadStoreName {
        /// The name given.
        name: String,
    },
    /// `replace` of an entry that does not exist.
    #[error("memory store {path}: no entry {id}; `switchyard memory list` shows the ids")]
    NoEntry {
        /// The database.
        path: PathBuf,
        /// The id.
        id: i64,
    },
    /// A stored row is damaged.
    #[error("memory store {path}: entry {id}: {problem}")]
    Corrupt {
        /// The database.
        path: PathBuf,
        /// The entry.
        id: i64,
        /// What is wrong.
        problem: String,
    },
}

/// The result type of this crate.
pub type Result<T, E = MemoryError> = std::result::Result<T, E>;
