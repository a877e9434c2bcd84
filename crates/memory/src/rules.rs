//! Operator rules: written only through [`MemoryStore::add_rule`], counted each time an
//! assembly offers them, and promoted to the trusted mandatory rules when proven or offered
//! to [`PROMOTION_HITS`](crate::PROMOTION_HITS) prompts.

use crate::{Entry, MemoryError, MemoryStore, RULE_KIND, Result};
use rusqlite::{OptionalExtension, params};
use switchyard_embed::Embedder;

impl MemoryStore {
    /// Adds an operator's rule (kind [`RULE_KIND`]), `proven` or not; the operator's path only
    /// (`switchyard memory rule add`). Until promoted (see [`Entry::is_promoted_rule`]) it is
    /// offered to related tasks like a memory entry, and screened like one. Adding the same
    /// rule again returns its id, and marks it proven when asked.
    pub fn add_rule(
        &mut self,
        model: &dyn Embedder,
        text: &str,
        proven: bool,
        source: &str,
    ) -> Result<i64> {
        let id = self.insert(model, crate::DEFAULT_STORE, RULE_KIND, text, source)?;
        if proven {
            self.prove(id, true)?;
        }
        Ok(id)
    }

    /// Marks an operator rule proven (promoted at once) or not. `Ok(false)` when there is no
    /// entry `id`; an error for an entry that is not a rule.
    pub fn prove(&mut self, id: i64, proven: bool) -> Result<bool> {
        let kind: Option<String> = self
            .conn
            .query_row("SELECT kind FROM entries WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?;
        match kind {
            None => Ok(false),
            Some(kind) if kind != RULE_KIND => {
                Err(MemoryError::NotARule { path: self.path.clone(), id, kind })
            }
            Some(_) => {
                self.conn
                    .execute("UPDATE entries SET proven = ?1 WHERE id = ?2", params![proven, id])
                    .map_err(|e| self.sql(e))?;
                if let Some(e) = self.entries.rows.iter_mut().find(|e| e.id == id) {
                    e.proven = proven;
                }
                Ok(true)
            }
        }
    }

    /// Counts one more prompt for each of `ids` (the entries an assembly injected), in one
    /// transaction. Counts are bookkeeping, not data: they are written without waiting for the
    /// disk (WAL, synchronous NORMAL), so an assembly does not pay for an fsync.
    pub fn record_hits(&mut self, ids: &[i64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let sql = |source| MemoryError::Sqlite { path: path.clone(), source };
        self.conn.pragma_update(None, "synchronous", "NORMAL").map_err(sql)?;
        let written = (|| {
            let tx = self.conn.transaction()?;
            for id in ids {
                tx.execute("UPDATE entries SET hits = hits + 1 WHERE id = ?1", [id])?;
            }
            tx.commit()
        })();
        self.conn.pragma_update(None, "synchronous", "FULL").map_err(sql)?;
        written.map_err(sql)?;
        // Our own writes do not move `data_version`: keep the cache in step by hand.
        for e in self.entries.rows.iter_mut().filter(|e| ids.contains(&e.id)) {
            e.hits = e.hits.saturating_add(1);
        }
        Ok(())
    }

    /// The operator rules promoted to the mandatory rules, oldest first.
    pub fn promoted_rules(&mut self) -> Result<Vec<Entry>> {
        // Read alone, not through the whole store: every assembly asks.
        let rules = crate::load::read_entries(&self.conn, &self.path, "kind = ?1", [RULE_KIND])?;
        Ok(rules.into_iter().filter(|e| e.is_promoted_rule()).collect())
    }
}
