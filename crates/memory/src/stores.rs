//! Named stores: `notes`, `decisions`, `preferences`, ... Each entry belongs to one store
//! (`memory` unless appended elsewhere). A store reads as a log, oldest first, one timestamped
//! line per entry, and only its tail is shown when it is long. Every entry stays untrusted
//! reference text: it is embedded and cut into pieces for screening like any other, and an
//! assembly offers it only when it is relevant to the task.

use crate::pieces::{insert_pieces, to_blob};
use crate::{MemoryError, MemoryStore, Result, embed_for_screening};
use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use switchyard_embed::Embedder;
use switchyard_untrusted::PREPARE_VERSION;

/// The store of entries added without one.
pub const DEFAULT_STORE: &str = "memory";
/// How much of a store `read` shows by default: its last 4 KB.
pub const DEFAULT_TAIL_BYTES: usize = 4096;

/// Refuses a store name outside `[a-z0-9_.-]{1,64}`.
pub fn check_store_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b));
    if ok { Ok(()) } else { Err(MemoryError::BadStoreName { name: name.to_string() }) }
}

/// The tail of a store as `read` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoreTail {
    /// The store.
    pub store: String,
    /// Entries in the store.
    pub entries: usize,
    /// Entries shown whole in `text`.
    pub shown: usize,
    /// Bytes of the whole log left out before `text`.
    pub omitted_bytes: usize,
    /// The log's tail: `[YYYY-MM-DDTHH:MM:SSZ] #id text` lines, oldest first.
    pub text: String,
}

/// `seconds` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub fn utc_timestamp(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let rest = seconds.rem_euclid(86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

impl MemoryStore {
    /// Appends `text` to the named store (created on first use), embedded once now and cut
    /// into pieces for screening like any entry; its time is when it was written. Appending
    /// the same text to the same store again returns the entry it already is, so a retried
    /// append never duplicates it.
    pub fn append(
        &mut self,
        model: &dyn Embedder,
        store: &str,
        text: &str,
        source: &str,
    ) -> Result<i64> {
        check_store_name(store)?;
        self.insert(model, store, "memory", text, source)
    }

    /// The tail of a store: its entries oldest first as timestamped lines, keeping only the
    /// last `tail_bytes` bytes, cut at a line start (a single line longer than that is cut at
    /// a character boundary). An unknown store reads as empty.
    pub fn read(&mut self, store: &str, tail_bytes: usize) -> Result<StoreTail> {
        check_store_name(store)?;
        // This store's rows alone, without their vectors and pieces.
        let sql = |e| self.sql(e);
        let mut st = self
            .conn
            .prepare("SELECT id, created_at, text FROM entries WHERE store = ?1 ORDER BY id")
            .map_err(sql)?;
        let lines: Vec<String> = st
            .query_map([store], |r| {
                let (id, created_at, text): (i64, i64, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
                Ok(format!("[{}] #{id} {text}\n", utc_timestamp(created_at)))
            })
            .map_err(sql)?
            .collect::<rusqlite::Result<_>>()
            .map_err(sql)?;
        drop(st);
        let total: usize = lines.iter().map(String::len).sum();
        let mut kept = 0usize;
        let mut shown = 0usize;
        for line in lines.iter().rev() {
            if kept + line.len() > tail_bytes {
                break;
            }
            kept += line.len();
            shown += 1;
        }
        let mut text: String = lines[lines.len() - shown..].concat();
        if shown == 0
            && let Some(last) = lines.last()
        {
            // One line longer than the tail: its end, from a character boundary.
            let mut from = last.len().saturating_sub(tail_bytes);
            while !last.is_char_boundary(from) {
                from += 1;
            }
            text = last[from..].to_string();
        }
        Ok(StoreTail {
            store: store.to_string(),
            entries: lines.len(),
            shown,
            omitted_bytes: total - text.len(),
            text,
        })
    }

    /// Replaces an entry's text in one transaction: embedded again, its screening pieces
    /// recomputed, its screening verdicts forgotten, its hit count reset; kind, store and time
    /// of writing stay. Either the old entry or the new one is stored, never a mix. Operator
    /// rules keep their proven mark.
    pub fn replace(&mut self, model: &dyn Embedder, id: i64, text: &str) -> Result<()> {
        if text.trim().is_empty() {
            return Err(MemoryError::EmptyText);
        }
        let path = self.path.clone();
        let sql = |source| MemoryError::Sqlite { path: path.clone(), source };
        let exists: Option<i64> = self
            .conn
            .query_row("SELECT id FROM entries WHERE id = ?1", params![id], |r| r.get(0))
            .optional()
            .map_err(sql)?;
        if exists.is_none() {
            return Err(MemoryError::NoEntry { path, id });
        }
        let info = model.info();
        self.check_model(info.fingerprint, &info.name)?;
        let prepared = embed_for_screening(
            model,
            &[text],
            &self.prepare,
            self.triage.as_ref(),
            self.screen_layer,
        )
        .map_err(|source| MemoryError::Embed { path: path.clone(), source })?
        .pop();
        let Some(entry) = prepared else { return Err(MemoryError::EmptyText) };
        let fp = info.fingerprint.to_hex();
        let tx = self.conn.transaction().map_err(sql)?;
        tx.execute(
            "UPDATE entries SET text = ?1, embedding = ?2, fingerprint = ?3, prepare_version = ?4, hits = 0, text_sha256 = ?5, screen_layer = ?6, middle = ?7 WHERE id = ?8",
            params![
                text,
                to_blob(&entry.embedding),
                fp,
                PREPARE_VERSION,
                crate::schema::text_sha256(text),
                entry.layer.map(|l| l as i64),
                crate::pieces::middle_blob(&entry.middle),
                id
            ],
        )
        .map_err(sql)?;
        tx.execute("DELETE FROM pieces WHERE entry_id = ?1", params![id]).map_err(sql)?;
        insert_pieces(&tx, id, &entry.pieces).map_err(sql)?;
        crate::verdicts::forget_verdicts(&tx, id).map_err(sql)?;
        tx.commit().map_err(sql)?;
        // Our own UPDATE moves neither the count nor the last id the cache is keyed on.
        self.forget_cached();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_timestamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_timestamp(1_795_647_600), "2026-11-25T23:00:00Z");
    }

    #[test]
    fn store_names_are_checked() {
        for ok in ["notes", "decisions", "team-2.prefs"] {
            check_store_name(ok).unwrap();
        }
        for bad in ["", "Notes", "a/b", "../x", &"x".repeat(65)] {
            assert!(check_store_name(bad).is_err(), "{bad}");
        }
    }
}
