//! Screening verdicts kept with the entries they judge, so an entry is screened once per
//! index, not once per process: `memory add` (or the first assembly that meets an entry)
//! screens it and records the verdict under the router's screen key; later assemblies, in any
//! process, read it back.
//!
//! A verdict is valid only for the pieces it was reached on and the key it was recorded
//! under (the router's rules, index and settings): replacing an entry's text, re-embedding the
//! store or removing an entry deletes its verdicts, and a verdict under another key is never
//! read. Each entry keeps the verdict of the last key recorded for it, so rebuilding an index
//! again and again does not grow the table.

use crate::{MemoryStore, Result};
use rusqlite::params;
use std::collections::HashMap;

/// The table, created with the store (and added to stores from before it existed).
pub(crate) const VERDICTS_TABLE: &str = "CREATE TABLE IF NOT EXISTS verdicts (
     entry_id INTEGER NOT NULL,
     screen_key TEXT NOT NULL,
     flagged INTEGER NOT NULL,
     PRIMARY KEY (entry_id, screen_key)
 );";

impl MemoryStore {
    /// The verdicts recorded under `screen_key` for the entries `ids` (true: flagged). An
    /// entry without one under this key is absent from the map: screen it.
    pub fn verdicts(&self, screen_key: &str, ids: &[i64]) -> Result<HashMap<i64, bool>> {
        let mut st = self
            .conn
            .prepare_cached("SELECT flagged FROM verdicts WHERE entry_id = ?1 AND screen_key = ?2")
            .map_err(|e| self.sql(e))?;
        let mut out = HashMap::with_capacity(ids.len());
        for &id in ids {
            let mut rows = st.query(params![id, screen_key]).map_err(|e| self.sql(e))?;
            if let Some(row) = rows.next().map_err(|e| self.sql(e))? {
                out.insert(id, row.get::<_, bool>(0).map_err(|e| self.sql(e))?);
            }
        }
        Ok(out)
    }

    /// Records verdicts reached under `screen_key`, in one transaction; each entry's verdicts
    /// under other keys are dropped. Verdicts of entries that no longer exist are not kept.
    pub fn record_verdicts(&mut self, screen_key: &str, verdicts: &[(i64, bool)]) -> Result<()> {
        if verdicts.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let sql = |source| crate::MemoryError::Sqlite { path: path.clone(), source };
        let tx = self.conn.transaction().map_err(sql)?;
        for &(id, flagged) in verdicts {
            tx.execute(
                "DELETE FROM verdicts WHERE entry_id = ?1 AND screen_key != ?2",
                params![id, screen_key],
            )
            .map_err(sql)?;
            tx.execute(
                "INSERT OR REPLACE INTO verdicts (entry_id, screen_key, flagged)
                 SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM entries WHERE id = ?1)",
                params![id, screen_key, flagged],
            )
            .map_err(sql)?;
        }
        tx.commit().map_err(sql)
    }
}

/// Forgets the verdicts of one entry (its text or pieces changed, or it is gone).
pub(crate) fn forget_verdicts(tx: &rusqlite::Transaction<'_>, id: i64) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM verdicts WHERE entry_id = ?1", params![id]).map(|_| ())
}

/// Forgets every verdict (the whole store was re-embedded).
pub(crate) fn forget_all_verdicts(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM verdicts", []).map(|_| ())
}
