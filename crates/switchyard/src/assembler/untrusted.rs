//! The untrusted parts of a prompt: memory found for the task and the conversation history,
//! both screened for injected instructions before anything reaches the prompt.

use super::{AssembleError, Assembler, Result};
use crate::render::sha256;
use crate::screening::VerdictOf;
use std::sync::Arc;
use switchyard_router::{AnsweredBy, Decision, ScreenEntry};

/// What the untrusted layer gets from the memory store.
#[derive(Debug, Default)]
pub(super) struct UntrustedPart {
    /// The operator's rules promoted to the trusted mandatory rules (never searched again).
    pub(super) promoted_rules: Vec<String>,
    pub(super) memories: Vec<String>,
    pub(super) activity: Vec<String>,
    pub(super) filtered: usize,
    pub(super) screened_out: usize,
    pub(super) embedding_calls: u32,
}

impl Assembler {
    /// Memory search and screening for one task: the reference entries nearest the task's
    /// embedding, instruction-like kinds excluded, then injection screening of the survivors.
    pub(super) fn untrusted_part(
        &self,
        task: &str,
        decision: &Decision,
        diagnostics: &mut Vec<String>,
    ) -> Result<UntrustedPart> {
        let mut part = UntrustedPart::default();
        if let Some(store) = &self.memory {
            let store = store
                .as_ref()
                .map_err(|message| AssembleError::MemoryUnavailable { message: message.clone() })?;
            let mut store = store.lock().map_err(|_| AssembleError::Config {
                field: "memory",
                message: "memory store lock poisoned".into(),
            })?;
            part.promoted_rules = store.promoted_rules()?.into_iter().map(|e| e.text).collect();
            // Memory rows live in the model's space: when the cascade answered the routing
            // statically, a non-empty store still needs the model's embedding of the task.
            let embedding = match &decision.embedding {
                Some(e) => Some(Arc::clone(e)),
                None if decision.answered_by == AnsweredBy::Static && !store.is_empty()? => {
                    part.embedding_calls = 1;
                    Some(self.router.task_embedding(task)?)
                }
                None => None,
            };
            if let Some(embedding) = embedding {
                let min = self.router.index().meta().thresholds.memory_min;
                let found = store.search_with_excluded(
                    &embedding,
                    self.router.embedder().fingerprint(),
                    min,
                    self.config.max_memories,
                )?;
                // Counted only when it would otherwise have taken a slot.
                part.filtered += found.excluded;
                // The same text stored twice (two kinds, or before adds were idempotent) is
                // injected once: the best-scoring copy. Each text is hashed once, for this and
                // for the verdict memo.
                let mut seen = std::collections::HashSet::new();
                let (hits, hashes): (Vec<_>, Vec<String>) = found
                    .hits
                    .into_iter()
                    .filter(|h| !h.entry.is_promoted_rule())
                    .map(|h| {
                        let hash = sha256(h.entry.text.trim());
                        (h, hash)
                    })
                    .filter(|(_, hash)| seen.insert(hash.clone()))
                    .unzip();
                // A stored entry is screened once per index: its verdict is remembered by
                // the process and recorded in the store under the router's screen key, where
                // `memory add` or an earlier assembly may already have put it.
                let memo = &self.verdicts;
                let of = |i: usize| VerdictOf::StoredEntry(hits[i].entry.prepare_version);
                let mut flagged: Vec<Option<bool>> =
                    (0..hits.len()).map(|i| memo.get(of(i), &hashes[i])).collect();
                let unknown: Vec<i64> = (0..hits.len())
                    .filter(|&i| flagged[i].is_none())
                    .map(|i| hits[i].entry.id)
                    .collect();
                if !unknown.is_empty() {
                    // A store whose verdicts cannot be read is screened as if it had none.
                    let recorded = store.verdicts(&self.screen_key, &unknown).unwrap_or_else(|e| {
                        diagnostics.push(format!(
                            "recorded screening verdicts unreadable, entries screened again: {e}"
                        ));
                        Default::default()
                    });
                    for (i, f) in flagged.iter_mut().enumerate() {
                        if f.is_none()
                            && let Some(&v) = recorded.get(&hits[i].entry.id)
                        {
                            *f = Some(v);
                            memo.put(of(i), hashes[i].clone(), v);
                        }
                    }
                }
                let pending: Vec<usize> =
                    (0..hits.len()).filter(|&i| flagged[i].is_none()).collect();
                if !pending.is_empty() {
                    let entries: Vec<ScreenEntry<'_>> = pending
                        .iter()
                        .map(|&i| {
                            let e = &hits[i].entry;
                            crate::screen_entry(&e.text, e, true)
                        })
                        .collect();
                    let report = self.router.screen(&entries)?;
                    if report.other_layer > 0 {
                        diagnostics.push(format!(
                            "{} memory entries were stored without the layer-{} vectors this index's screen reads and were embedded again to be screened; run `switchyard memory reembed --db {} --index <index>` to store them",
                            report.other_layer,
                            self.router.screen_layer().unwrap_or_default(),
                            store.path().display()
                        ));
                    }
                    let mut reached = Vec::with_capacity(pending.len());
                    for v in report.kept.iter().chain(&report.dropped) {
                        let i = pending[v.entry];
                        flagged[i] = Some(v.flagged);
                        memo.put(of(i), hashes[i].clone(), v.flagged);
                        reached.push((hits[i].entry.id, v.flagged));
                    }
                    // Losing a record costs a later screening, never a wrong verdict.
                    if let Err(e) = store.record_verdicts(&self.screen_key, &reached) {
                        diagnostics.push(format!("screening verdicts not recorded: {e}"));
                    }
                }
                diagnostics.extend(stale_pieces_note(
                    hits.iter().map(|h| h.entry.preparation),
                    store.path(),
                ));
                // An entry without a verdict (none is expected) is left out, never injected
                // unchecked.
                let flagged: Vec<bool> = flagged.into_iter().map(|f| f.unwrap_or(true)).collect();
                let dropped = flagged.iter().filter(|&&f| f).count();
                part.screened_out = dropped;
                part.filtered += dropped;
                let mut offered = Vec::new();
                let mut cut = 0;
                let prepare = self.router.prepare_config();
                for (h, _) in hits.iter().zip(&flagged).filter(|(_, f)| !**f) {
                    let e = &h.entry;
                    offered.push(e.id);
                    // Only what screening read reaches the prompt.
                    let (text, was_cut) = switchyard_untrusted::shown_part(&e.text, &prepare);
                    cut += usize::from(was_cut);
                    if e.kind == "activity" {
                        part.activity.push(text.into_owned())
                    } else {
                        part.memories.push(text.into_owned())
                    }
                }
                if cut > 0 {
                    diagnostics.push(format!(
                        "{cut} memory entries hold text screening does not read (past their first {} KiB, or encoded payloads past the first {}): it is left out of the prompt",
                        switchyard_untrusted::MAX_SCREENED_BYTES / 1024,
                        prepare.max_payloads
                    ));
                }
                // Hit counts are what promotes an operator's rule; losing one is not worth
                // failing the assembly.
                if let Err(e) = store.record_hits(&offered) {
                    diagnostics.push(format!("memory hit counts not recorded: {e}"));
                }
            }
        }
        Ok(part)
    }

    /// The history layer (heading, wrapper, body within its share) and how it was fitted.
    /// Entries to screen that were not seen before are embedded in one batch; if that fails
    /// they are left out (fail-safe), with a diagnostic.
    pub(super) fn history_layer(
        &self,
        history: &[crate::history::HistoryEntry],
        diagnostics: &mut Vec<String>,
        embedding_calls: &mut u32,
    ) -> (String, crate::history::HistoryReport) {
        use crate::history::*;
        let skip = history.len().saturating_sub(MAX_HISTORY_ENTRIES);
        let entries = &history[skip..];
        let mut report = HistoryReport {
            entries: entries.len(),
            dropped_by_cap: skip,
            ..HistoryReport::default()
        };
        let memo = &self.verdicts;
        let hashes: Vec<Option<String>> =
            entries.iter().map(|e| e.needs_screening().then(|| sha256(&e.content))).collect();
        let mut flagged: Vec<Option<bool>> = hashes
            .iter()
            .map(|h| match h {
                Some(h) => memo.get(VerdictOf::HistoryText, h),
                None => Some(false),
            })
            .collect();
        let unseen: Vec<usize> = (0..entries.len()).filter(|&i| flagged[i].is_none()).collect();
        if !unseen.is_empty() {
            let texts: Vec<&str> = unseen.iter().map(|&i| entries[i].content.as_str()).collect();
            match crate::screen_texts(&self.router, &texts) {
                Ok((screen, embedded)) => {
                    *embedding_calls += embedded as u32;
                    for v in screen.kept.iter().chain(&screen.dropped) {
                        let i = unseen[v.entry];
                        flagged[i] = Some(v.flagged);
                        if let Some(h) = &hashes[i] {
                            memo.put(VerdictOf::HistoryText, h.clone(), v.flagged);
                        }
                    }
                }
                Err(e) => diagnostics.push(format!(
                    "history screening unavailable, {} tool results and other agents' messages left out: {e}",
                    unseen.len()
                )),
            }
        }
        // Unscreened (screening failed) counts as flagged: left out, never injected unchecked.
        let flagged: Vec<bool> = flagged.into_iter().map(|f| f.unwrap_or(true)).collect();
        report.flagged = (0..entries.len()).filter(|&i| flagged[i]).map(|i| i + skip).collect();
        let share = (self.config.budget as f32 * self.config.history_share) as usize;
        let body = fit(
            entries,
            &flagged,
            &self.router.prepare_config(),
            share.saturating_sub(24),
            self.config.counter,
            &self.history_memo,
            &mut report,
        );
        if report.truncated {
            diagnostics.push(format!(
                "history: {} earlier turns condensed and cut to fit {share} tokens",
                report.condensed
            ));
        }
        (format!("{H_HISTORY}\n{HISTORY_OPEN}\n{body}\n{HISTORY_CLOSE}\n"), report)
    }
}

/// What an assembly says about the hits whose stored pieces are not this version's, if any:
/// how they were screened, and the command that prepares them again.
fn stale_pieces_note(
    preparations: impl Iterator<Item = switchyard_memory::Preparation>,
    db: &std::path::Path,
) -> Option<String> {
    use switchyard_memory::Preparation;
    let (mut missing, mut older) = (0, 0);
    for p in preparations {
        match p {
            Preparation::Missing => missing += 1,
            Preparation::Older => older += 1,
            Preparation::Current => {}
        }
    }
    let mut how = Vec::new();
    if missing > 0 {
        how.push(format!(
            "{missing} were stored without window embeddings and were screened as a whole only"
        ));
    }
    if older > 0 {
        how.push(format!(
            "{older} were screened with the pieces an older version stored, which can miss an instruction hidden by the text's shape (wrapped lines, run-on prose, a JSON string, an HTML comment)"
        ));
    }
    (!how.is_empty()).then(|| {
        format!(
            "of the memory entries found, {}; run `switchyard memory reembed --db {} --index <index>` to screen them with this version's pieces",
            how.join(", and "),
            db.display()
        )
    })
}
