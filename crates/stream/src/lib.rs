//! The conversation stream of a multi-stage pipeline: one append-only log of every stage's
//! messages in SQLite (WAL, synchronous writes: a committed message survives a crash), and per
//! stage a filtered view.
//!
//! - **Appends are idempotent**: the client names each message (`id`); appending the same
//!   message again returns the one stored, and reusing an id for another message is refused.
//! - **Views**: `own` (the stage's messages), `public` (every stage's messages but other stages'
//!   private thoughts), `turn` (like public, for the latest turn only). A stage may ask for the
//!   policy its definition gives it, or narrower (a `public` stage may ask any).
//! - **Private thoughts** (`thought`) are visible to their owner only, whatever the policy.
//! - **Levels**: the stream has a state level (0 at first, raised by the pipeline); a stage with
//!   `min_level` above it may neither append nor view yet.
//! - **Fail loudly**: every refusal names the stage and the reason.
//!
//! ```
//! use switchyard_stream::{MessageType, NewMessage, Policy, Stages, Stream};
//! let dir = tempfile::tempdir().unwrap();
//! let stages = Stages::parse("stages.toml".as_ref(), r#"
//! [[stage]]
//! name = "planner"
//! [[stage]]
//! name = "writer"
//! "#).unwrap();
//! let mut stream = Stream::open(&dir.path().join("stream.db"), stages).unwrap();
//! let msg = |id: &str, kind, content: &str| NewMessage {
//!     id: id.into(), stage: "planner".into(), kind, turn: "1".into(), content: content.into() };
//! stream.append(&msg("m1", MessageType::Say, "Outline: three acts.")).unwrap();
//! stream.append(&msg("m2", MessageType::Thought, "The writer is slow; keep it short.")).unwrap();
//! assert!(stream.append(&msg("m1", MessageType::Say, "Outline: three acts.")).unwrap().duplicate);
//! let seen = stream.view("writer", None, None).unwrap();
//! assert_eq!(seen.len(), 1, "the planner's private thought is not the writer's to see");
//! ```
#![deny(missing_docs)]

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;
use std::path::{Path, PathBuf};

mod stages;

pub use stages::{Stage, Stages};

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageType {
    /// Something the stage says to the others.
    Say,
    /// A private thought: visible to its owner only.
    Thought,
    /// A tool call the stage made.
    ToolCall,
    /// A tool's result.
    Result,
    /// A message of the pipeline itself.
    System,
}

impl MessageType {
    /// Every type.
    pub const ALL: [MessageType; 5] = [
        MessageType::Say,
        MessageType::Thought,
        MessageType::ToolCall,
        MessageType::Result,
        MessageType::System,
    ];

    /// Its name in files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageType::Say => "say",
            MessageType::Thought => "thought",
            MessageType::ToolCall => "tool_call",
            MessageType::Result => "result",
            MessageType::System => "system",
        }
    }
}

impl std::str::FromStr for MessageType {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Self::ALL.into_iter().find(|t| t.as_str() == s).ok_or_else(|| {
            format!(
                "message type {s:?} is not known; use one of {}",
                Self::ALL.map(MessageType::as_str).join(", ")
            )
        })
    }
}

/// Which messages a view holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// The stage's own messages.
    Own,
    /// Every message but other stages' private thoughts.
    Public,
    /// Like public, for the latest turn only.
    Turn,
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "own" => Ok(Policy::Own),
            "public" => Ok(Policy::Public),
            "turn" => Ok(Policy::Turn),
            _ => Err(format!("policy {s:?} is not known; use own, public or turn")),
        }
    }
}

impl Policy {
    fn as_str(self) -> &'static str {
        match self {
            Policy::Own => "own",
            Policy::Public => "public",
            Policy::Turn => "turn",
        }
    }
}

/// A message to append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMessage {
    /// The client's id for it: a retry sends the same id.
    pub id: String,
    /// The stage that says it.
    pub stage: String,
    /// Its type.
    pub kind: MessageType,
    /// The turn it belongs to.
    pub turn: String,
    /// Its text.
    pub content: String,
}

/// A stored message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    /// Position in the stream (1, 2, ...).
    pub seq: i64,
    /// The client's id.
    pub id: String,
    /// The stage that said it.
    pub stage: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: MessageType,
    /// Its turn.
    pub turn: String,
    /// Its text.
    pub content: String,
    /// Unix seconds when it was stored.
    pub created_at: i64,
}

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Appended {
    /// The message's position.
    pub seq: i64,
    /// Whether it was already stored (a retry): nothing was written.
    pub duplicate: bool,
}

/// Why a stream operation failed; each names the stage (when there is one) and the reason.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// SQLite failed.
    #[error("stream {path}: {source}")]
    Sqlite {
        /// The database.
        path: PathBuf,
        /// The error.
        source: rusqlite::Error,
    },
    /// The stages file is wrong.
    #[error("{path}:{line}: {field}: {message}")]
    Manifest {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The field.
        field: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A message or a view was refused.
    #[error("stage {stage}: {reason}")]
    Refused {
        /// The stage.
        stage: String,
        /// Why, and how to fix it.
        reason: String,
    },
}

/// The result type of this crate.
pub type Result<T, E = StreamError> = std::result::Result<T, E>;

/// The longest message id accepted.
pub const MAX_ID_LEN: usize = 200;

/// An open stream and the stages it serves.
pub struct Stream {
    path: PathBuf,
    conn: Connection,
    stages: Stages,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").field("path", &self.path).finish_non_exhaustive()
    }
}

impl Stream {
    /// Opens (creating if needed) the stream at `path` for the given stages.
    pub fn open(path: &Path, stages: Stages) -> Result<Self> {
        let sql = |source| StreamError::Sqlite { path: path.to_path_buf(), source };
        let conn = Connection::open(path).map_err(sql)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(sql)?;
        conn.pragma_update(None, "synchronous", "FULL").map_err(sql)?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(sql)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS messages (
                 seq INTEGER PRIMARY KEY AUTOINCREMENT,
                 id TEXT NOT NULL UNIQUE,
                 stage TEXT NOT NULL,
                 type TEXT NOT NULL,
                 turn TEXT NOT NULL,
                 content TEXT NOT NULL,
                 created_at INTEGER NOT NULL
             );
             CREATE TABLE IF NOT EXISTS stream_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
        )
        .map_err(sql)?;
        Ok(Self { path: path.to_path_buf(), conn, stages })
    }

    /// The stages this stream serves.
    pub fn stages(&self) -> &Stages {
        &self.stages
    }

    fn sql(&self, source: rusqlite::Error) -> StreamError {
        StreamError::Sqlite { path: self.path.clone(), source }
    }

    /// The stream's state level (0 until raised).
    pub fn level(&self) -> Result<u32> {
        let v: Option<String> = self
            .conn
            .query_row("SELECT value FROM stream_meta WHERE key = 'level'", [], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?;
        Ok(v.and_then(|v| v.parse().ok()).unwrap_or(0))
    }

    /// Sets the state level; stages whose `min_level` it reaches join.
    pub fn set_level(&mut self, level: u32) -> Result<()> {
        self.conn
            .execute(
                "INSERT INTO stream_meta (key, value) VALUES ('level', ?1)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![level.to_string()],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    fn joined<'s>(&'s self, stage: &str) -> Result<&'s Stage> {
        let s = self.stages.get(stage)?;
        let level = self.level()?;
        if level < s.min_level {
            return Err(StreamError::Refused {
                stage: stage.to_string(),
                reason: format!(
                    "joins at state level {}, and the stream is at level {level}; raise it with `switchyard stream level --set {}` when the pipeline gets there",
                    s.min_level, s.min_level
                ),
            });
        }
        Ok(s)
    }

    /// Appends a message, or returns the one already stored under its id (a retry).
    pub fn append(&mut self, m: &NewMessage) -> Result<Appended> {
        let refuse = |reason: String| StreamError::Refused { stage: m.stage.clone(), reason };
        self.joined(&m.stage)?;
        if m.id.trim().is_empty() || m.id.len() > MAX_ID_LEN {
            return Err(refuse(format!(
                "message id {:?} must be 1-{MAX_ID_LEN} bytes: the client's name for the message, sent again on a retry",
                m.id
            )));
        }
        if m.turn.trim().is_empty() {
            return Err(refuse(format!(
                "message {}: the turn is empty; say which turn it belongs to",
                m.id
            )));
        }
        if m.content.trim().is_empty() {
            return Err(refuse(format!("message {}: the content is empty", m.id)));
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let path = self.path.clone();
        let sql = |source| StreamError::Sqlite { path: path.clone(), source };
        // One immediate transaction: two retries racing cannot both insert.
        let tx =
            self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
        let existing: Option<(i64, String, String, String, String)> = tx
            .query_row(
                "SELECT seq, stage, type, turn, content FROM messages WHERE id = ?1",
                params![m.id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()
            .map_err(sql)?;
        if let Some((seq, stage, kind, turn, content)) = existing {
            let same = stage == m.stage
                && kind == m.kind.as_str()
                && turn == m.turn
                && content == m.content;
            if !same {
                return Err(refuse(format!(
                    "message id {:?} already holds another message (seq {seq}, stage {stage}); a retry must resend the same message, a new message needs a new id",
                    m.id
                )));
            }
            return Ok(Appended { seq, duplicate: true });
        }
        tx.execute(
            "INSERT INTO messages (id, stage, type, turn, content, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![m.id, m.stage, m.kind.as_str(), m.turn, m.content, now],
        )
        .map_err(sql)?;
        let seq = tx.last_insert_rowid();
        tx.commit().map_err(sql)?;
        Ok(Appended { seq, duplicate: false })
    }

    /// What `stage` may see, oldest first: under `policy` (its own by default; only as wide as
    /// its definition allows), limited to the message types it may see (its own messages
    /// always), without other stages' private thoughts, the last `last` messages if given.
    pub fn view(
        &self,
        stage: &str,
        policy: Option<Policy>,
        last: Option<usize>,
    ) -> Result<Vec<Message>> {
        let s = self.joined(stage)?;
        let policy = policy.unwrap_or(s.policy);
        if s.policy != Policy::Public && policy != s.policy {
            return Err(StreamError::Refused {
                stage: stage.to_string(),
                reason: format!(
                    "may see only its {:?} view ({}); asked for {:?}",
                    s.policy.as_str(),
                    self.stages.path.display(),
                    policy.as_str()
                ),
            });
        }
        let all = self.all()?;
        let current_turn = all.last().map(|m| m.turn.clone());
        let mut seen: Vec<Message> = all
            .into_iter()
            .filter(|m| {
                let own = m.stage == stage;
                if m.kind == MessageType::Thought && !own {
                    return false;
                }
                if !own && !s.types.contains(&m.kind) {
                    return false;
                }
                match policy {
                    Policy::Own => own,
                    Policy::Public => true,
                    Policy::Turn => current_turn.as_deref() == Some(m.turn.as_str()),
                }
            })
            .collect();
        if let Some(n) = last {
            seen.drain(..seen.len().saturating_sub(n));
        }
        Ok(seen)
    }

    fn all(&self) -> Result<Vec<Message>> {
        let mut st = self
            .conn
            .prepare(
                "SELECT seq, id, stage, type, turn, content, created_at FROM messages ORDER BY seq",
            )
            .map_err(|e| self.sql(e))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, i64>(6)?,
                ))
            })
            .map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, id, stage, kind, turn, content, created_at) = row.map_err(|e| self.sql(e))?;
            let kind = kind.parse().map_err(|reason| StreamError::Refused {
                stage: stage.clone(),
                reason: format!("stored message {seq} is damaged: {reason}"),
            })?;
            out.push(Message { seq, id, stage, kind, turn, content, created_at });
        }
        Ok(out)
    }
}
