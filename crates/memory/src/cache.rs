//! What a store keeps in memory between calls, and when it reads the database again.
//!
//! Two caches of the `entries` table: whole entries (text and pieces, for `list`) and the
//! vectors search scans (id, kind and embedding only), so an assembly's search in a store of
//! long entries does not read every text and piece. Each is read again only as far as the
//! table changed: not at all when it did not, only the new rows when this connection has only
//! added some, everything otherwise.

use crate::{MemoryError, Result};
use rusqlite::Connection;
use std::path::Path;

/// The `entries` table as a cache last saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CacheStamp {
    /// `PRAGMA data_version`: moves when another connection commits.
    data_version: i64,
    /// Entries.
    count: i64,
    /// The last entry id (ids only grow: `AUTOINCREMENT`).
    max_id: i64,
}

impl CacheStamp {
    /// The table now. `data_version` only moves for other connections' commits; this
    /// connection's own inserts and deletes show in the count and the last id (its updates
    /// keep the caches in step themselves, or forget them).
    pub(crate) fn now(conn: &Connection, path: &Path) -> Result<Self> {
        let sql = |source| MemoryError::Sqlite { path: path.to_path_buf(), source };
        let data_version = conn.query_row("PRAGMA data_version", [], |r| r.get(0)).map_err(sql)?;
        let (count, max_id) = conn
            .query_row("SELECT count(*), coalesce(max(id), 0) FROM entries", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(sql)?;
        Ok(Self { data_version, count, max_id })
    }
}

/// Rows read from the `entries` table, oldest first, and the table as it was then.
#[derive(Debug)]
pub(crate) struct Cached<T> {
    pub(crate) rows: Vec<T>,
    stamp: Option<CacheStamp>,
}

impl<T> Default for Cached<T> {
    fn default() -> Self {
        Self { rows: Vec::new(), stamp: None }
    }
}

impl<T> Cached<T> {
    /// Brings the rows up to the table as `now` describes it; `read_after(id)` reads the rows
    /// whose id is over `id`, oldest first.
    pub(crate) fn refresh(
        &mut self,
        now: CacheStamp,
        read_after: impl Fn(i64) -> Result<Vec<T>>,
    ) -> Result<()> {
        match self.stamp {
            Some(seen) if seen == now => return Ok(()),
            Some(seen) if seen.data_version == now.data_version && now.max_id > seen.max_id => {
                let added = read_after(seen.max_id)?;
                // Every row counted since is one of these: nothing older went away.
                if seen.count + added.len() as i64 == now.count {
                    self.rows.extend(added);
                    self.stamp = Some(now);
                    return Ok(());
                }
            }
            _ => {}
        }
        self.rows = read_after(0)?;
        self.stamp = Some(now);
        Ok(())
    }

    /// Reads every row again next time (after this connection rewrote some).
    pub(crate) fn forget(&mut self) {
        self.stamp = None;
    }
}

/// An entry as search scans it.
#[derive(Debug, Clone)]
pub(crate) struct SearchRow {
    pub(crate) id: i64,
    /// Of an instruction-like kind (never offered to a task).
    pub(crate) instruction_like: bool,
    pub(crate) embedding: Vec<f32>,
}
