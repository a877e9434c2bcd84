//! The store of untrusted context: memories and activity notes an agent accumulated, kept in
//! SQLite (bundled, WAL mode) with the embedding of each entry computed once, when it is
//! written, by the index's model. Reading never re-embeds. The store records which model made
//! its vectors and refuses to mix models: `switchyard memory reembed` migrates explicitly.
//!
//! ```
//! use switchyard_embed::{Embedder, HashEmbedder};
//! use switchyard_memory::MemoryStore;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let model = HashEmbedder::new(64);
//! let mut store = MemoryStore::open(&dir.path().join("memory.db")).unwrap();
//! store.add(&model, "memory", "we use tabs for indentation", "user").unwrap();
//! let query = model.embed("indentation style").unwrap();
//! let hits = store.search(&query, model.fingerprint(), 0.0, 3).unwrap();
//! assert_eq!(hits[0].entry.text, "we use tabs for indentation");
//! ```
#![deny(missing_docs)]

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use std::path::{Path, PathBuf};
use switchyard_embed::{Embedder, Fingerprint};

/// Kinds that carry instructions rather than facts; they are never offered to a task.
pub const INSTRUCTION_KINDS: &[&str] = &["system", "meta", "override", "instruction", "prompt"];
/// Kinds of reference material.
pub const REFERENCE_KINDS: &[&str] = &["memory", "activity"];

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

/// One stored entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// Row id.
    pub id: i64,
    /// `memory`, `activity`, or an instruction-like kind.
    pub kind: String,
    /// The text (untrusted).
    pub text: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Where it came from (free text).
    pub source: String,
    /// Unit embedding made at write time.
    #[serde(skip)]
    pub embedding: Vec<f32>,
}

impl Entry {
    /// Whether the kind carries instructions (excluded before scoring).
    pub fn is_instruction_like(&self) -> bool {
        INSTRUCTION_KINDS.contains(&self.kind.as_str())
    }
}

/// A search hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// The entry.
    pub entry: Entry,
    /// Its score against the query.
    pub score: f32,
}

/// The SQLite-backed store. Entries are cached in memory and reloaded only when another
/// connection changed the database (`PRAGMA data_version`), so searches do not re-read it.
pub struct MemoryStore {
    path: PathBuf,
    conn: Connection,
    cache: Vec<Entry>,
    cache_version: Option<i64>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").field("path", &self.path).finish_non_exhaustive()
    }
}

fn check_kind(kind: &str) -> Result<()> {
    if REFERENCE_KINDS.contains(&kind) || INSTRUCTION_KINDS.contains(&kind) {
        Ok(())
    } else {
        Err(MemoryError::BadKind {
            kind: kind.into(),
            allowed: REFERENCE_KINDS
                .iter()
                .chain(INSTRUCTION_KINDS)
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}

fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl MemoryStore {
    /// Opens (creating if needed) a store. WAL mode: readers never block the writer, and a
    /// crash loses nothing that was committed.
    pub fn open(path: &Path) -> Result<Self> {
        let sql = |source| MemoryError::Sqlite { path: path.to_path_buf(), source };
        let conn = Connection::open(path).map_err(sql)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(sql)?;
        conn.pragma_update(None, "synchronous", "FULL").map_err(sql)?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(sql)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS entries (
                 id INTEGER PRIMARY KEY AUTOINCREMENT,
                 kind TEXT NOT NULL,
                 text TEXT NOT NULL,
                 created_at INTEGER NOT NULL,
                 source TEXT NOT NULL,
                 embedding BLOB NOT NULL,
                 fingerprint TEXT NOT NULL
             );
             CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
        )
        .map_err(sql)?;
        Ok(Self { path: path.to_path_buf(), conn, cache: Vec::new(), cache_version: None })
    }

    fn sql(&self, source: rusqlite::Error) -> MemoryError {
        MemoryError::Sqlite { path: self.path.clone(), source }
    }

    /// The fingerprint of the model whose vectors the store holds, if any entry was written.
    pub fn fingerprint(&self) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM store_meta WHERE key = 'fingerprint'", [], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))
    }

    fn check_model(&self, fingerprint: Fingerprint, name: &str) -> Result<()> {
        match self.fingerprint()? {
            Some(stored) if stored != fingerprint.to_hex() => Err(MemoryError::ModelMismatch {
                path: self.path.clone(),
                stored,
                given: name.to_string(),
                given_fingerprint: fingerprint.to_hex(),
            }),
            _ => Ok(()),
        }
    }

    /// Embeds `text` once with `model` and stores it in one transaction. Returns the new id.
    pub fn add(
        &mut self,
        model: &dyn Embedder,
        kind: &str,
        text: &str,
        source: &str,
    ) -> Result<i64> {
        check_kind(kind)?;
        if text.trim().is_empty() {
            return Err(MemoryError::EmptyText);
        }
        let info = model.info();
        self.check_model(info.fingerprint, &info.name)?;
        let v = model
            .embed(text)
            .map_err(|source| MemoryError::Embed { path: self.path.clone(), source })?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let fp = info.fingerprint.to_hex();
        let tx = self
            .conn
            .transaction()
            .map_err(|e| MemoryError::Sqlite { path: self.path.clone(), source: e })?;
        tx.execute(
            "INSERT OR IGNORE INTO store_meta (key, value) VALUES ('fingerprint', ?1)",
            params![fp],
        )
        .map_err(|e| MemoryError::Sqlite { path: self.path.clone(), source: e })?;
        tx.execute(
            "INSERT INTO entries (kind, text, created_at, source, embedding, fingerprint) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![kind, text, now, source, to_blob(&v), fp],
        )
        .map_err(|e| MemoryError::Sqlite { path: self.path.clone(), source: e })?;
        let id = tx.last_insert_rowid();
        tx.commit().map_err(|e| MemoryError::Sqlite { path: self.path.clone(), source: e })?;
        Ok(id)
    }

    /// Every entry, oldest first.
    pub fn list(&mut self) -> Result<&[Entry]> {
        self.refresh()?;
        Ok(&self.cache)
    }

    /// Removes an entry; returns whether it existed.
    pub fn remove(&mut self, id: i64) -> Result<bool> {
        let n = self
            .conn
            .execute("DELETE FROM entries WHERE id = ?1", params![id])
            .map_err(|e| self.sql(e))?;
        Ok(n > 0)
    }

    /// Re-embeds every entry with `model` in one transaction and records its fingerprint:
    /// the explicit migration after a model change. Returns the number of entries.
    pub fn reembed(&mut self, model: &dyn Embedder) -> Result<usize> {
        let entries: Vec<(i64, String)> = {
            let mut st = self
                .conn
                .prepare("SELECT id, text FROM entries ORDER BY id")
                .map_err(|e| self.sql(e))?;
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(|e| self.sql(e))?
                .collect::<rusqlite::Result<_>>()
                .map_err(|e| self.sql(e))?
        };
        let texts: Vec<&str> = entries.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = model
            .embed_batch(&texts)
            .map_err(|source| MemoryError::Embed { path: self.path.clone(), source })?;
        let fp = model.info().fingerprint.to_hex();
        let path = self.path.clone();
        let sql = |source| MemoryError::Sqlite { path: path.clone(), source };
        let tx = self.conn.transaction().map_err(sql)?;
        for ((id, _), v) in entries.iter().zip(&vectors) {
            tx.execute(
                "UPDATE entries SET embedding = ?1, fingerprint = ?2 WHERE id = ?3",
                params![to_blob(v), fp, id],
            )
            .map_err(sql)?;
        }
        tx.execute("INSERT INTO store_meta (key, value) VALUES ('fingerprint', ?1) ON CONFLICT(key) DO UPDATE SET value = excluded.value", params![fp]).map_err(sql)?;
        tx.commit().map_err(sql)?;
        self.cache_version = None;
        Ok(entries.len())
    }

    /// Reloads the cached entries if the database changed since the last load.
    fn refresh(&mut self) -> Result<()> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        let count: i64 = self
            .conn
            .query_row("SELECT count(*) FROM entries", [], |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        // data_version only moves for other connections' commits; our own writes are caught
        // by the count and max id.
        let max_id: i64 = self
            .conn
            .query_row("SELECT coalesce(max(id), 0) FROM entries", [], |r| r.get(0))
            .map_err(|e| self.sql(e))?;
        let stamp = version
            .wrapping_mul(1_000_003)
            .wrapping_add(count)
            .wrapping_mul(1_000_003)
            .wrapping_add(max_id);
        if self.cache_version == Some(stamp) {
            return Ok(());
        }
        let mut st = self
            .conn
            .prepare(
                "SELECT id, kind, text, created_at, source, embedding FROM entries ORDER BY id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Vec<u8>>(5)?,
                ))
            })
            .map_err(|e| MemoryError::Sqlite { path: self.path.clone(), source: e })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, kind, text, created_at, source, blob) =
                row.map_err(|e| MemoryError::Sqlite { path: self.path.clone(), source: e })?;
            if !blob.len().is_multiple_of(4) {
                return Err(MemoryError::Corrupt {
                    path: self.path.clone(),
                    id,
                    problem: format!("embedding blob of {} bytes", blob.len()),
                });
            }
            let embedding = blob
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            out.push(Entry { id, kind, text, created_at, source, embedding });
        }
        drop(st);
        self.cache = out;
        self.cache_version = Some(stamp);
        Ok(())
    }

    /// The `k` reference entries scoring at least `min` against `query` (a unit vector from the
    /// store's model), best first, ties by id. Instruction-like kinds are excluded before
    /// scoring. Refuses a query made by another model.
    pub fn search(
        &mut self,
        query: &[f32],
        fingerprint: Fingerprint,
        min: f32,
        k: usize,
    ) -> Result<Vec<Hit>> {
        if let Some(stored) = self.fingerprint()?
            && stored != fingerprint.to_hex()
        {
            return Err(MemoryError::ModelMismatch {
                path: self.path.clone(),
                stored,
                given: "the index's model".into(),
                given_fingerprint: fingerprint.to_hex(),
            });
        }
        self.refresh()?;
        let mut hits: Vec<Hit> = Vec::new();
        for e in self.cache.iter().filter(|e| !e.is_instruction_like()) {
            if e.embedding.len() != query.len() {
                return Err(MemoryError::Corrupt {
                    path: self.path.clone(),
                    id: e.id,
                    problem: format!(
                        "embedding width {} differs from the query's {}",
                        e.embedding.len(),
                        query.len()
                    ),
                });
            }
            let score: f32 = e.embedding.iter().zip(query).map(|(a, b)| a * b).sum();
            if score >= min {
                hits.push(Hit { entry: e.clone(), score });
            }
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.entry.id.cmp(&b.entry.id)));
        hits.truncate(k);
        Ok(hits)
    }

    /// The number of instruction-like entries (never offered to tasks).
    pub fn instruction_like_count(&mut self) -> Result<usize> {
        self.refresh()?;
        Ok(self.cache.iter().filter(|e| e.is_instruction_like()).count())
    }

    /// The database path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
