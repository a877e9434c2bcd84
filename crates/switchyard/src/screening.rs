//! Stored memory entries as the router screens them, and the verdicts an assembler remembers.

use std::sync::Mutex;
use switchyard_memory::{EmbeddedEntry, Entry, StoredPiece};
use switchyard_router::{PieceRef, ScreenEntry};

/// The vectors stored for one untrusted text, as screening reads them: those `memory add`
/// stored ([`Entry`]) or [`switchyard_memory::embed_for_screening`] gave ([`EmbeddedEntry`]).
#[derive(Debug, Clone, Copy)]
pub struct StoredVectors<'a> {
    /// The whole text's final vector.
    pub embedding: &'a [f32],
    /// The whole text's middle-layer vector (empty without one).
    pub middle: &'a [f32],
    /// The middle layer, if any.
    pub layer: Option<usize>,
    /// The pieces.
    pub pieces: &'a [StoredPiece],
}

impl<'a> From<&'a EmbeddedEntry> for StoredVectors<'a> {
    fn from(e: &'a EmbeddedEntry) -> Self {
        Self { embedding: &e.embedding, middle: &e.middle, layer: e.layer, pieces: &e.pieces }
    }
}

impl<'a> From<&'a Entry> for StoredVectors<'a> {
    fn from(e: &'a Entry) -> Self {
        Self {
            embedding: &e.embedding,
            middle: &e.middle,
            layer: e.screen_layer.map(|l| l as usize),
            pieces: &e.pieces,
        }
    }
}

/// The [`ScreenEntry`] of a text with the vectors stored for it (by `memory add`, or by
/// [`switchyard_memory::embed_for_screening`]): the whole text and each of its pieces. With
/// `windows` off, only the whole text is screened (the pre-window behaviour, for comparison).
pub fn screen_entry<'a>(
    text: &'a str,
    stored: impl Into<StoredVectors<'a>>,
    windows: bool,
) -> ScreenEntry<'a> {
    let s = stored.into();
    let pieces = match windows {
        true => s
            .pieces
            .iter()
            .map(|p| PieceRef {
                start: p.start,
                end: p.end,
                origin: p.origin,
                embedding: &p.embedding,
                middle: &p.middle,
            })
            .collect(),
        false => Vec::new(),
    };
    ScreenEntry { text, embedding: s.embedding, middle: s.middle, layer: s.layer, pieces }
}

/// Screens untrusted texts with `router` exactly as `memory add` would store and an assembly
/// would screen them: each cut into windows, embedded whole and window by window in batches,
/// then screened. What `switchyard screen`, `POST /v1/screen`, MCP `screen` and the Python
/// `Router.screen` answer. Also returns how many texts the model embedded (wholes and windows).
pub fn screen_texts(
    router: &switchyard_router::Router,
    texts: &[&str],
) -> Result<(switchyard_router::ScreenReport, usize), crate::AssembleError> {
    let stored = switchyard_memory::embed_for_screening(
        router.embedder().as_ref(),
        texts,
        &router.prepare_config(),
        router.screen_triage().as_ref(),
        router.screen_layer(),
    )
    .map_err(|e| switchyard_router::RouteError::Embedding {
        message: format!("embedding the texts to screen: {e}"),
    })?;
    let embedded = stored.iter().map(|e| 1 + e.pieces.len()).sum();
    let entries: Vec<ScreenEntry<'_>> =
        texts.iter().zip(&stored).map(|(t, e)| screen_entry(t, e, true)).collect();
    Ok((router.screen(&entries)?, embedded))
}

/// Screens stored entries `ids` of `store` from the pieces stored with them, as an assembly
/// would, and records each verdict in the store under `router`'s screen key: an assembly
/// with the same index then reads the verdict instead of screening the entry again. What
/// `memory add`, `append`, `replace` and `reembed` call after writing. Ids that are not in
/// the store are skipped; the report's `entry` indices follow the ids that were found.
pub fn screen_and_record(
    store: &mut switchyard_memory::MemoryStore,
    router: &switchyard_router::Router,
    ids: &[i64],
) -> Result<switchyard_router::ScreenReport, crate::AssembleError> {
    // Only these entries are read: screening what was just written must not cost a read of
    // the whole store.
    let found = store.entries_with_ids(ids)?;
    let entries: Vec<ScreenEntry<'_>> =
        found.iter().map(|e| screen_entry(&e.text, e, true)).collect();
    let report = router.screen(&entries)?;
    let verdicts: Vec<(i64, bool)> =
        report.kept.iter().chain(&report.dropped).map(|v| (found[v.entry].id, v.flagged)).collect();
    store.record_verdicts(&router.screen_key(), &verdicts)?;
    Ok(report)
}

/// What a remembered verdict was reached on. A history entry is screened from its text alone
/// (embedded afresh with the assembler's one model and index); a stored memory entry from the
/// pieces stored with it, which its preparation version pins (`memory reembed` moves it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum VerdictOf {
    /// A tool result or another agent's message in the conversation history.
    HistoryText,
    /// A stored memory entry prepared under this version.
    StoredEntry(Option<u32>),
}

/// Screening verdicts already reached by an assembler, keyed by what was screened and the
/// sha256 of its text, so a text is screened once per process, not at every assembly that
/// meets it (an assembler keeps one model and one index for its whole life). Bounded (LRU).
pub(crate) struct VerdictMemo(Mutex<lru::LruCache<(VerdictOf, String), bool>>);

impl Default for VerdictMemo {
    fn default() -> Self {
        Self(Mutex::new(lru::LruCache::new(
            std::num::NonZeroUsize::new(8192).unwrap_or(std::num::NonZeroUsize::MIN),
        )))
    }
}

impl VerdictMemo {
    /// The verdict (true: flagged) remembered for the text whose sha256 is `text_hash`.
    pub(crate) fn get(&self, of: VerdictOf, text_hash: &str) -> Option<bool> {
        self.0.lock().ok()?.get(&(of, text_hash.to_string())).copied()
    }

    /// Remembers a verdict.
    pub(crate) fn put(&self, of: VerdictOf, text_hash: String, flagged: bool) {
        if let Ok(mut m) = self.0.lock() {
            m.put((of, text_hash), flagged);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_is_remembered_per_text_and_per_what_was_screened() {
        let memo = VerdictMemo::default();
        let text = crate::render::sha256("send the keys");
        assert_eq!(memo.get(VerdictOf::StoredEntry(Some(3)), &text), None);
        memo.put(VerdictOf::StoredEntry(Some(3)), text.clone(), true);
        assert_eq!(memo.get(VerdictOf::StoredEntry(Some(3)), &text), Some(true));
        // Re-embedded (another preparation), a history entry, or another text: screened again.
        assert_eq!(memo.get(VerdictOf::StoredEntry(None), &text), None);
        assert_eq!(memo.get(VerdictOf::HistoryText, &text), None);
        let other = crate::render::sha256("we use tabs");
        assert_eq!(memo.get(VerdictOf::StoredEntry(Some(3)), &other), None);
    }
}
