//! The store of untrusted context: memories and activity notes an agent accumulated, kept in
//! SQLite (bundled, WAL mode) with the embedding of each entry computed once, when it is
//! written, by the index's model, together with the embeddings of its **pieces** (windows,
//! de-obfuscated text, decoded payloads; see `switchyard-untrusted`), which injection
//! screening reads at every assembly. Reading never re-embeds. Entries written before pieces
//! existed keep working (screened as a whole) until `switchyard memory reembed` prepares them. The store records which model made
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
pub use switchyard_untrusted::Origin;
use switchyard_untrusted::{PREPARE_VERSION, PrepareConfig};

/// Kinds that carry instructions rather than facts; they are never offered to a task.
pub const INSTRUCTION_KINDS: &[&str] = &["system", "meta", "override", "instruction", "prompt"];
/// Kinds of reference material.
pub const REFERENCE_KINDS: &[&str] = &["memory", "activity"];
/// The kind of an operator's rule: written only through [`MemoryStore::add_rule`] (the
/// operator's CLI and API), never by [`MemoryStore::add`], so untrusted text cannot become one.
pub const RULE_KIND: &str = "rule";
/// A rule offered to this many prompts is promoted to the trusted mandatory rules, as is one
/// the operator marks proven.
pub const PROMOTION_HITS: u32 = 3;

mod cache;
mod error;
mod load;
mod pieces;
mod rules;
mod schema;
mod stores;
mod verdicts;

use cache::{CacheStamp, Cached, SearchRow};
pub use error::{MemoryError, Result};
pub use pieces::{EmbeddedEntry, ScreeningTexts, embed_for_screening, screening_texts};
use pieces::{insert_pieces, middle_blob, to_blob};
pub use stores::{DEFAULT_STORE, DEFAULT_TAIL_BYTES, StoreTail, check_store_name, utc_timestamp};
pub use switchyard_lexical::LexicalTriage;

/// One stored entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// Row id.
    pub id: i64,
    /// `memory`, `activity`, or an instruction-like kind.
    pub kind: String,
    /// The named store it belongs to ([`DEFAULT_STORE`] unless appended to another).
    pub store: String,
    /// The text (untrusted).
    pub text: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Where it came from (free text).
    pub source: String,
    /// Unit embedding made at write time.
    #[serde(skip)]
    pub embedding: Vec<f32>,
    /// The pooled vector of the model's middle layer `screen_layer`, made in the same pass for
    /// the injection screen; empty when none was stored.
    #[serde(skip)]
    pub middle: Vec<f32>,
    /// The middle layer its `middle` vectors (and its pieces') come from; `None` when the
    /// index it was stored with screened the final vector alone.
    pub screen_layer: Option<u32>,
    /// Version of the preparation its pieces were made with; `None` for entries stored before
    /// pieces existed.
    pub prepare_version: Option<u32>,
    /// How its stored pieces compare with those this version makes; worked out once, when the
    /// entry is read.
    pub preparation: Preparation,
    /// Its pieces beyond the whole entry (none when the entry is one plain window).
    #[serde(skip)]
    pub pieces: Vec<StoredPiece>,
    /// How many assembled prompts it was offered to.
    pub hits: u32,
    /// For an operator rule: marked proven by the operator.
    pub proven: bool,
}

/// How an entry's stored pieces compare with those this version of screening makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Preparation {
    /// The pieces this version makes.
    Current,
    /// Pieces an older version made: screening reads them, but this version would cut the text
    /// into other ones (wrapped lines, run-on prose, JSON strings, HTML comments...).
    Older,
    /// Stored before pieces existed: screened as a whole.
    Missing,
}

impl Preparation {
    /// What pieces stored by preparation `version` for `text` are.
    pub fn of(version: Option<u32>, text: &str) -> Self {
        match version {
            None => Self::Missing,
            Some(_) if switchyard_untrusted::prepared_alike(version, text) => Self::Current,
            Some(_) => Self::Older,
        }
    }
}

/// One stored piece of an entry and its embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPiece {
    /// First byte in the entry.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// Where it comes from.
    pub origin: Origin,
    /// Unit embedding made at write time; empty when the index's triage cleared the piece
    /// from its text alone (see `switchyard_lexical::LexicalTriage`).
    pub embedding: Vec<f32>,
    /// Its middle layer's vector (see [`Entry::middle`]); empty when none was stored.
    pub middle: Vec<f32>,
}

impl Entry {
    /// Whether the kind carries instructions (excluded before scoring).
    pub fn is_instruction_like(&self) -> bool {
        INSTRUCTION_KINDS.contains(&self.kind.as_str())
    }

    /// Whether it is an operator rule promoted to the mandatory rules: proven, or offered to
    /// [`PROMOTION_HITS`] prompts. Only [`RULE_KIND`] entries can be.
    pub fn is_promoted_rule(&self) -> bool {
        self.kind == RULE_KIND && (self.proven || self.hits >= PROMOTION_HITS)
    }

    /// Whether its pieces are missing or an older version's, so screening reads it as a whole
    /// or with those pieces until `memory reembed` prepares it again.
    pub fn needs_reembed(&self) -> bool {
        self.preparation != Preparation::Current
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

/// What [`MemoryStore::search_with_excluded`] found.
#[derive(Debug, Clone)]
pub struct Search {
    /// The reference entries, best first.
    pub hits: Vec<Hit>,
    /// Instruction-like entries that would have been among the best had they been allowed.
    pub excluded: usize,
}

/// The SQLite-backed store. Entries are cached in memory: searches do not re-read the
/// database, entries this connection added since are read alone, and the whole store is read
/// again only when another connection changed it (`PRAGMA data_version`) or this one removed
/// or rewrote entries.
pub struct MemoryStore {
    path: PathBuf,
    conn: Connection,
    /// Whole entries, for `list`.
    entries: Cached<Entry>,
    /// What search scans.
    vectors: Cached<SearchRow>,
    prepare: PrepareConfig,
    triage: Option<LexicalTriage>,
    screen_layer: Option<usize>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").field("path", &self.path).finish_non_exhaustive()
    }
}

fn check_kind(kind: &str) -> Result<()> {
    if kind == RULE_KIND {
        return Err(MemoryError::RuleThroughAdd);
    }
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

impl MemoryStore {
    /// Opens (creating if needed) a store. WAL mode: readers never block the writer, and a
    /// crash loses nothing that was committed.
    pub fn open(path: &Path) -> Result<Self> {
        let sql = |source| MemoryError::Sqlite { path: path.to_path_buf(), source };
        let conn = Connection::open(path).map_err(sql)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(sql)?;
        conn.pragma_update(None, "synchronous", "FULL").map_err(sql)?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(sql)?;
        schema::migrate(&conn).map_err(sql)?;
        Ok(Self {
            path: path.to_path_buf(),
            conn,
            entries: Cached::default(),
            vectors: Cached::default(),
            prepare: PrepareConfig::default(),
            triage: None,
            screen_layer: None,
        })
    }

    /// Sets how new entries are cut into pieces (the index's windowing; the default otherwise).
    pub fn set_prepare(&mut self, prepare: PrepareConfig) -> &mut Self {
        self.prepare = prepare;
        self
    }

    /// Sets the triage of new entries' pieces (the index's; none: every piece is embedded).
    pub fn set_triage(&mut self, triage: Option<LexicalTriage>) -> &mut Self {
        self.triage = triage;
        self
    }

    /// Sets the middle layer new entries' screen vectors are pooled from (the index's
    /// `switchyard_router::Router::screen_layer`; none: the final vector alone).
    pub fn set_screen_layer(&mut self, layer: Option<usize>) -> &mut Self {
        self.screen_layer = layer;
        self
    }

    /// Whether `entry` must be embedded again to be screened as this store's settings screen:
    /// its pieces are missing or an older version's, or its middle layer is not the one set.
    fn is_stale(&self, entry: &Entry) -> bool {
        entry.needs_reembed() || entry.screen_layer.map(|l| l as usize) != self.screen_layer
    }

    /// Entries whose pieces are missing or stale (screened as a whole until `reembed`), or
    /// stored for another middle layer than [`MemoryStore::set_screen_layer`]'s (embedded
    /// again at every screening until `reembed`).
    pub fn needs_reembed_count(&mut self) -> Result<usize> {
        self.refresh()?;
        Ok(self.entries.rows.iter().filter(|e| self.is_stale(e)).count())
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

    /// Embeds `text` once with `model` and stores it in one transaction. Returns the new id, or
    /// the id of the entry of the same kind and text already stored (nothing is embedded then).
    pub fn add(
        &mut self,
        model: &dyn Embedder,
        kind: &str,
        text: &str,
        source: &str,
    ) -> Result<i64> {
        check_kind(kind)?;
        self.insert(model, DEFAULT_STORE, kind, text, source)
    }

    pub(crate) fn insert(
        &mut self,
        model: &dyn Embedder,
        store: &str,
        kind: &str,
        text: &str,
        source: &str,
    ) -> Result<i64> {
        if text.trim().is_empty() {
            return Err(MemoryError::EmptyText);
        }
        let info = model.info();
        self.check_model(info.fingerprint, &info.name)?;
        // Idempotent: the same text of the same kind is stored once per store (it would
        // otherwise take two of an assembly's memory slots, and a retried append would repeat
        // itself); adding it again returns the entry it already is.
        let text_sha256 = schema::text_sha256(text);
        if let Some(id) = self
            .conn
            .query_row(
                "SELECT id FROM entries WHERE text_sha256 = ?1 AND store = ?2 AND kind = ?3 AND text = ?4 ORDER BY id LIMIT 1",
                params![text_sha256, store, kind, text],
                |r| r.get::<_, i64>(0),
            )
            .optional()
            .map_err(|e| self.sql(e))?
        {
            return Ok(id);
        }
        let EmbeddedEntry { embedding: v, middle, layer, pieces } = embed_for_screening(
            model,
            &[text],
            &self.prepare,
            self.triage.as_ref(),
            self.screen_layer,
        )
        .map_err(|source| MemoryError::Embed { path: self.path.clone(), source })?
        .pop()
        .unwrap_or_default();
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
            "INSERT INTO entries (kind, text, created_at, source, embedding, fingerprint, prepare_version, store, text_sha256, screen_layer, middle) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![kind, text, now, source, to_blob(&v), fp, PREPARE_VERSION, store, text_sha256, layer.map(|l| l as i64), middle_blob(&middle)],
        )
        .map_err(|e| MemoryError::Sqlite { path: self.path.clone(), source: e })?;
        let id = tx.last_insert_rowid();
        insert_pieces(&tx, id, &pieces)
            .map_err(|e| MemoryError::Sqlite { path: self.path.clone(), source: e })?;
        tx.commit().map_err(|e| MemoryError::Sqlite { path: self.path.clone(), source: e })?;
        Ok(id)
    }

    /// Every entry, oldest first.
    pub fn list(&mut self) -> Result<&[Entry]> {
        self.refresh()?;
        Ok(&self.entries.rows)
    }

    /// Removes an entry, its pieces and its screening verdicts; returns whether it existed.
    pub fn remove(&mut self, id: i64) -> Result<bool> {
        let path = self.path.clone();
        let sql = |source| MemoryError::Sqlite { path: path.clone(), source };
        let tx = self.conn.transaction().map_err(sql)?;
        tx.execute("DELETE FROM pieces WHERE entry_id = ?1", params![id]).map_err(sql)?;
        verdicts::forget_verdicts(&tx, id).map_err(sql)?;
        let n = tx.execute("DELETE FROM entries WHERE id = ?1", params![id]).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(n > 0)
    }

    /// Re-embeds every entry and its pieces with `model` in one transaction and records its
    /// fingerprint: the explicit migration after a model change, and the upgrade of entries
    /// stored before pieces existed. Forgets every recorded verdict. Returns the number of
    /// entries.
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
        self.rewrite(model, &entries, true)?;
        tracing::info!(store = %self.path.display(), entries = entries.len(), model = %model.info().fingerprint.to_hex(), "memory re-embedded");
        Ok(entries.len())
    }

    /// Re-embeds, with the store's own model, only the entries whose pieces are missing or an
    /// older version's ([`Entry::needs_reembed`]) or whose middle layer is not the one set
    /// ([`MemoryStore::set_screen_layer`]), and forgets only their verdicts: the upgrade
    /// after a new version of switchyard, which leaves most entries as they were. Returns their
    /// ids. A model other than the store's is refused: that takes [`MemoryStore::reembed`].
    pub fn reembed_stale(&mut self, model: &dyn Embedder) -> Result<Vec<i64>> {
        let info = model.info();
        self.check_model(info.fingerprint, &info.name)?;
        self.refresh()?;
        let stale: Vec<(i64, String)> = self
            .entries
            .rows
            .iter()
            .filter(|e| self.is_stale(e))
            .map(|e| (e.id, e.text.clone()))
            .collect();
        if !stale.is_empty() {
            self.rewrite(model, &stale, false)?;
        }
        tracing::info!(store = %self.path.display(), entries = stale.len(), "stale memory entries prepared again");
        Ok(stale.iter().map(|(id, _)| *id).collect())
    }

    /// What `switchyard memory reembed` does: every entry when `model` is not the store's or
    /// `all` is set ([`MemoryStore::reembed`]), else only the stale ones
    /// ([`MemoryStore::reembed_stale`]). Returns the ids of the entries re-embedded.
    pub fn reembed_as_needed(&mut self, model: &dyn Embedder, all: bool) -> Result<Vec<i64>> {
        let fingerprint = model.info().fingerprint.to_hex();
        let same_model = self.fingerprint()?.is_none_or(|stored| stored == fingerprint);
        if all || !same_model {
            self.reembed(model)?;
            Ok(self.list()?.iter().map(|e| e.id).collect())
        } else {
            self.reembed_stale(model)
        }
    }

    /// Embeds `entries` (id, text) and their pieces with `model` and stores them, this
    /// version's preparation recorded, in one transaction, with the model's fingerprint.
    /// `every_entry`: they are the whole store, so every verdict is forgotten at once.
    fn rewrite(
        &mut self,
        model: &dyn Embedder,
        entries: &[(i64, String)],
        every_entry: bool,
    ) -> Result<()> {
        let texts: Vec<&str> = entries.iter().map(|(_, t)| t.as_str()).collect();
        let embedded = embed_for_screening(
            model,
            &texts,
            &self.prepare,
            self.triage.as_ref(),
            self.screen_layer,
        )
        .map_err(|source| MemoryError::Embed { path: self.path.clone(), source })?;
        let fp = model.info().fingerprint.to_hex();
        let path = self.path.clone();
        let sql = |source| MemoryError::Sqlite { path: path.clone(), source };
        let tx = self.conn.transaction().map_err(sql)?;
        for ((id, _), e) in entries.iter().zip(&embedded) {
            tx.execute(
                "UPDATE entries SET embedding = ?1, fingerprint = ?2, prepare_version = ?3, screen_layer = ?4, middle = ?5 WHERE id = ?6",
                params![
                    to_blob(&e.embedding),
                    fp,
                    PREPARE_VERSION,
                    e.layer.map(|l| l as i64),
                    middle_blob(&e.middle),
                    id
                ],
            )
            .map_err(sql)?;
            tx.execute("DELETE FROM pieces WHERE entry_id = ?1", params![id]).map_err(sql)?;
            insert_pieces(&tx, *id, &e.pieces).map_err(sql)?;
            if !every_entry {
                verdicts::forget_verdicts(&tx, *id).map_err(sql)?;
            }
        }
        if every_entry {
            verdicts::forget_all_verdicts(&tx).map_err(sql)?;
        }
        tx.execute("INSERT INTO store_meta (key, value) VALUES ('fingerprint', ?1) ON CONFLICT(key) DO UPDATE SET value = excluded.value", params![fp]).map_err(sql)?;
        tx.commit().map_err(sql)?;
        self.forget_cached();
        Ok(())
    }

    /// Brings the cached entries up to date with the database.
    fn refresh(&mut self) -> Result<()> {
        let now = CacheStamp::now(&self.conn, &self.path)?;
        let (conn, path) = (&self.conn, self.path.as_path());
        self.entries.refresh(now, |after| load::read_entries(conn, path, "id > ?1", [after]))
    }

    /// Makes both caches read every row again next time: this connection rewrote some.
    pub(crate) fn forget_cached(&mut self) {
        self.entries.forget();
        self.vectors.forget();
    }

    /// Whether the store holds no entry at all.
    pub fn is_empty(&self) -> Result<bool> {
        self.conn
            .query_row("SELECT NOT EXISTS (SELECT 1 FROM entries)", [], |r| r.get(0))
            .map_err(|e| self.sql(e))
    }

    /// The entries with these ids (those that exist), oldest first, read from the database
    /// without loading the rest of the store: what screening an entry just written needs,
    /// at a cost that does not grow with the store.
    pub fn entries_with_ids(&mut self, ids: &[i64]) -> Result<Vec<Entry>> {
        load::read_entries_with_ids(&self.conn, &self.path, ids)
    }

    /// The `k` reference entries scoring at least `min` against `query` (a unit vector from the
    /// store's model), best first, ties by id. Instruction-like kinds are excluded. Refuses a
    /// query made by another model.
    pub fn search(
        &mut self,
        query: &[f32],
        fingerprint: Fingerprint,
        min: f32,
        k: usize,
    ) -> Result<Vec<Hit>> {
        Ok(self.search_with_excluded(query, fingerprint, min, k)?.hits)
    }

    /// [`MemoryStore::search`], also counting the instruction-like entries that were kept
    /// out: those that would have been among the `k` best had their kind been allowed (an
    /// unrelated one is not counted).
    pub fn search_with_excluded(
        &mut self,
        query: &[f32],
        fingerprint: Fingerprint,
        min: f32,
        k: usize,
    ) -> Result<Search> {
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
        let now = CacheStamp::now(&self.conn, &self.path)?;
        let (conn, path) = (&self.conn, self.path.as_path());
        self.vectors.refresh(now, |after| load::read_search_rows(conn, path, after))?;
        let mut scored: Vec<(f32, &SearchRow)> = Vec::new();
        for row in &self.vectors.rows {
            if row.embedding.len() != query.len() {
                return Err(MemoryError::Corrupt {
                    path: self.path.clone(),
                    id: row.id,
                    problem: format!(
                        "embedding width {} differs from the query's {}",
                        row.embedding.len(),
                        query.len()
                    ),
                });
            }
            let score = switchyard_format::dot(&row.embedding, query);
            if score >= min {
                scored.push((score, row));
            }
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.id.cmp(&b.1.id)));
        let excluded = scored.iter().take(k).filter(|(_, r)| r.instruction_like).count();
        scored.retain(|(_, r)| !r.instruction_like);
        scored.truncate(k);
        // Only the hits' texts and pieces are read.
        let ids: Vec<i64> = scored.iter().map(|(_, r)| r.id).collect();
        let mut entries: std::collections::HashMap<i64, Entry> =
            load::read_entries_with_ids(&self.conn, &self.path, &ids)?
                .into_iter()
                .map(|e| (e.id, e))
                .collect();
        let hits = scored
            .iter()
            .filter_map(|&(score, r)| entries.remove(&r.id).map(|entry| Hit { entry, score }))
            .collect();
        Ok(Search { hits, excluded })
    }

    /// The number of instruction-like entries (never offered to tasks).
    pub fn instruction_like_count(&mut self) -> Result<usize> {
        self.refresh()?;
        Ok(self.entries.rows.iter().filter(|e| e.is_instruction_like()).count())
    }

    /// The database path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
