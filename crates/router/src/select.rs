//! Hybrid selection of tools and skills: dense and lexical scores fused per item, a gate that
//! decides whether the task is about the catalog at all, and a mode constraint that is hard
//! only when the mode came from a strong signal.
//!
//! Why a gate rather than a per-item threshold: a cosine threshold derived from one catalog
//! drops right items on another (the right tool's score varies with phrasing, language and how
//! much its description says), while the ranking itself stays good. So the absolute test is
//! asked once per task ("is the best item close enough, in dense or in lexical terms?") and,
//! once it passes, selection follows the fused ranking up to `max_results`, keeping only items
//! above the unrelated level or sharing a term with the task.

use crate::decision::{DropReason, Dropped, GateCheck, Selected, SelectedBy, Signals};
use crate::kernels;
use crate::router::{ItemTable, Pick, Router, Space};
use crate::scratch::Scratch;
use switchyard_format::{FusionMeta, ItemMeta, SectionKind};
use switchyard_lexical::{Fused, add_late_side, fuse_into, standard_scores_into};

/// Each item's best row score and its row, from per-row `scores`.
fn best_rows_into(row_owner: &[u32], n: usize, scores: &[f32], best: &mut Vec<(f32, u32)>) {
    best.clear();
    best.resize(n, (f32::NEG_INFINITY, 0));
    for (row, &s) in scores.iter().enumerate() {
        let owner = row_owner[row] as usize;
        if s > best[owner].0 {
            best[owner] = (s, row as u32);
        }
    }
}

/// How much of a part's fused score counts against the whole task's. A part's scores are
/// scaled over the catalog on their own, so its best item scores about as high as the whole
/// task's best; a context sentence ("I'm planning a trip to Lisbon.") would then push its
/// item in front of the one the task asks for. Measured on the development sets (Seal-Tools
/// `dev`, metatool's every tenth row), hybrid recall@5 with e5-small: 1.0 gave +0.039 and
/// -0.007, 0.9 +0.034 and -0.005, 0.8 +0.028 and -0.002.
const PART_SHARE: f32 = 0.8;

/// Each item's fusion becomes its best of the whole task's and each part's share of its own
/// (`parts` holds runs of `n` items); `ranked_by` records which (0: the whole task, else 1 +
/// the part).
fn best_of_parts(fused: &mut [Fused], parts: &[Fused], n: usize, ranked_by: &mut Vec<u8>) {
    ranked_by.clear();
    ranked_by.resize(fused.len(), 0);
    if n == 0 {
        return;
    }
    for (j, part) in parts.chunks_exact(n).enumerate() {
        for ((f, p), by) in fused.iter_mut().zip(part).zip(ranked_by.iter_mut()) {
            let score = PART_SHARE * p.score;
            if score > f.score {
                *f = Fused { score, ..*p };
                *by = j as u8 + 1;
            }
        }
    }
}

/// What one hybrid selection needs besides the table.
pub(crate) struct HybridInput<'a> {
    pub embedding: &'a [f32],
    pub space: Space,
    /// The task's analysed terms.
    pub terms: &'a [String],
    /// Whether the mode came from a weak signal (soft constraint).
    pub soft_mode: bool,
    /// Whether a soft mode orders the items (puts those outside it after its own).
    pub mode_orders: bool,
    /// A caller's explicit cosine minimum, applied on top of the gate.
    pub override_min: Option<f32>,
    /// Whether `scratch` already holds this table's scores for this task
    /// ([`Router::score_hybrid`], run early when the tools inform the mode).
    pub prescored: bool,
    /// The off-topic check closed selection: every item is dropped as `off_topic`.
    pub off_topic: bool,
}

impl Router {
    /// A task's lexical terms: its words, and those of what it names by form.
    pub(crate) fn lexical_terms(&self, text: &str) -> Vec<String> {
        let mut terms = switchyard_lexical::analyze(text);
        if self.config.entity_terms {
            terms.extend(switchyard_lexical::entity_terms(text));
        }
        terms
    }

    /// Hybrid selection for an index with a selection section; `None` without one.
    pub(crate) fn select_hybrid(
        &self,
        table: &ItemTable,
        items: &[ItemMeta],
        pick: Pick<'_>,
        input: &HybridInput<'_>,
        scratch: &mut Scratch,
        dropped: &mut Vec<Dropped>,
    ) -> Option<(Vec<Selected>, GateCheck)> {
        let selection = self.index.selection()?;
        let fusion = match table.kind {
            SectionKind::Tools => &selection.tools,
            _ => &selection.skills,
        };
        if !input.prescored {
            self.score_hybrid(table, input.embedding, input.space, input.terms, scratch)?;
        }
        let n = items.len();
        let mut gate = self.gate(table, fusion, scratch);
        gate.open &= !input.off_topic;
        let open = gate.open;
        // Items with no rows at all score the lowest finite value (never NaN in comparisons).
        for z in scratch.z.iter_mut().filter(|z| !z.is_finite()) {
            *z = f32::MIN;
        }
        let finite_z = &scratch.z;
        let mass = scratch.lexical.query_mass;
        let share = |i: usize| if mass > 0.0 { scratch.lexical.matched[i] / mass } else { 0.0 };

        let Pick { base, mode, cap, .. } = pick;
        let in_mode = |i: usize| match (&table.modes[i], mode) {
            (None, _) | (_, None) => true,
            (Some(ms), Some(m)) => ms.contains(&m),
        };
        let penalty =
            if input.soft_mode && input.mode_orders { selection.out_of_mode_penalty } else { 0.0 };
        let key = |i: usize| scratch.fused[i].score - if in_mode(i) { 0.0 } else { penalty };
        let base_idx: Vec<usize> =
            base.iter().filter_map(|b| items.iter().position(|it| &it.name == b)).collect();
        let signals = |i: usize| {
            let f = scratch.fused[i];
            Some(Signals {
                dense: f.dense,
                late: f.late,
                lexical: f.lexical,
                fused: f.score,
                server: match table.kind {
                    SectionKind::Tools => scratch.server_added.get(i).copied(),
                    _ => None,
                },
                outside_mode: !in_mode(i),
                part: match scratch.ranked_by.get(i) {
                    Some(&p) if p > 0 => Some(usize::from(p) - 1),
                    _ => None,
                },
            })
        };
        let mut out: Vec<Selected> = base_idx
            .iter()
            .map(|&i| {
                let mut s = self.selected(table, items, i, scratch.best[i], SelectedBy::Base);
                s.signals = signals(i);
                s
            })
            .collect();
        let mut ranked: Vec<usize> = (0..n).filter(|i| !base_idx.contains(i)).collect();
        ranked.sort_by(|&a, &b| {
            key(b).total_cmp(&key(a)).then_with(|| items[a].name.cmp(&items[b].name))
        });

        // Each reason reports only the nearest few candidates: a 4,000-tool catalog would
        // otherwise list thousands of drops.
        let mut reported = [0usize; 6];
        let mut report = |reason: DropReason, i: usize, dropped: &mut Vec<Dropped>| {
            let slot = match reason {
                DropReason::GateClosed => 0,
                DropReason::BelowThreshold => 1,
                DropReason::WrongMode => 2,
                DropReason::OverMaxResults => 3,
                DropReason::OffTopic => 4,
                _ => 5,
            };
            if reported[slot] < self.config.near_misses {
                reported[slot] += 1;
                let s = scratch.best[i].0;
                dropped.push(Dropped {
                    name: items[i].name.clone(),
                    kind: table.label,
                    score: if s.is_finite() { s } else { 0.0 },
                    reason,
                });
            }
        };
        let mut picked = 0;
        for i in ranked {
            if input.off_topic {
                report(DropReason::OffTopic, i, dropped);
                continue;
            }
            if !open {
                report(DropReason::GateClosed, i, dropped);
                continue;
            }
            let z = finite_z[i];
            let above_floor = z >= fusion.floor_z || share(i) > 0.0;
            let above_override = input.override_min.is_none_or(|m| scratch.best[i].0 >= m);
            if !self.config.rank_all && (!above_floor || !above_override) {
                report(DropReason::BelowThreshold, i, dropped);
                continue;
            }
            if !input.soft_mode && !in_mode(i) {
                report(DropReason::WrongMode, i, dropped);
                continue;
            }
            if picked >= self.config.max_results {
                report(DropReason::OverMaxResults, i, dropped);
                continue;
            }
            picked += 1;
            if out.len() >= cap {
                report(DropReason::OverCap, i, dropped);
                continue;
            }
            let mut s = self.selected(table, items, i, scratch.best[i], SelectedBy::Semantic);
            s.signals = signals(i);
            out.push(s);
        }
        out.truncate(cap);
        Some((out, gate))
    }

    /// Scores every item of `table` for a task, independent of the mode: each item's best
    /// dense row (`scratch.best`), its standard score among the task's items (`scratch.z`),
    /// BM25 (`scratch.lexical`) and the fusion of both (`scratch.fused`). `None` on an index
    /// without a selection section.
    pub(crate) fn score_hybrid(
        &self,
        table: &ItemTable,
        embedding: &[f32],
        space: Space,
        terms: &[String],
        scratch: &mut Scratch,
    ) -> Option<()> {
        let selection = self.index.selection()?;
        let scorer = table.bm25.as_ref()?;
        let (lexical, fusion) = match table.kind {
            SectionKind::Tools => (&selection.tools_lexical, &selection.tools),
            _ => (&selection.skills_lexical, &selection.skills),
        };
        let n = table.modes.len();
        // Dense: each item's best row.
        let matrix = self.matrix_of(table.kind, space);
        kernels::scores_into(&matrix, embedding, &mut scratch.row_scores);
        // The off-topic check compares raw card cosines: read here, so it needs no pass of its
        // own over a large catalog's rows.
        if space == Space::Model && self.index.off_topic().is_some() {
            scratch.best_card = crate::off_topic::best_card(&table.row_owner, &scratch.row_scores);
        }
        // A task in another language than the catalog: the tools are scored as if it were
        // moved by the language offset (scores are linear in the task vector: one more pass,
        // whose scores every part reuses).
        scratch.offset_scores.clear();
        if space == Space::Model
            && table.kind == SectionKind::Tools
            && !scratch.language_offset.is_empty()
        {
            kernels::scores_into(&matrix, &scratch.language_offset, &mut scratch.offset_scores);
        }
        self.correct_rows(table.kind, space, &mut scratch.row_scores, &scratch.offset_scores);
        best_rows_into(&table.row_owner, n, &scratch.row_scores, &mut scratch.best);
        // How far each item stands above the task's mean item (scale-free, any model).
        scratch.cosines.clear();
        scratch.cosines.extend(scratch.best.iter().map(|b| b.0));
        standard_scores_into(&scratch.cosines, &mut scratch.z);
        // Lexical, then the fusion.
        scorer.score(lexical, terms, &mut scratch.lexical);
        let weight = self.config.lexical_weight.unwrap_or(fusion.lexical_weight);
        fuse_into(&scratch.cosines, &scratch.lexical.bm25, weight, &mut scratch.fused);
        // A task that asks for several things: each part is fused as if it were the task
        // (its pooled vector, its words), so each request can bring its own item up.
        let parts = if space == Space::Model { scratch.parts } else { 0 };
        scratch.part_fused.clear();
        let dim = embedding.len();
        for j in 0..parts {
            let vector = &scratch.part_vectors[j * dim..(j + 1) * dim];
            kernels::scores_into(&matrix, vector, &mut scratch.part_scores);
            self.correct_rows(table.kind, space, &mut scratch.part_scores, &scratch.offset_scores);
            best_rows_into(&table.row_owner, n, &scratch.part_scores, &mut scratch.part_best);
            scratch.part_cosines.clear();
            scratch.part_cosines.extend(scratch.part_best.iter().map(|b| b.0));
            scorer.score(lexical, &scratch.part_terms[j], &mut scratch.part_lexical);
            fuse_into(
                &scratch.part_cosines,
                &scratch.part_lexical.bm25,
                weight,
                &mut scratch.part_one,
            );
            scratch.part_fused.extend_from_slice(&scratch.part_one);
        }
        // Late interaction, in the model's space only (the static space has no token states).
        let late =
            self.index.late().filter(|_| space == Space::Model && self.config.late_interaction);
        let task_tokens = late.and_then(|l| {
            let items = if table.kind == SectionKind::Tools { &l.tools } else { &l.skills };
            let tokens = crate::late::TaskTokens::new(scratch.task_tokens.as_deref()?, items)?;
            Some((l, items, tokens))
        });
        if let Some((l, items, tokens)) = task_tokens {
            // A large catalog: only the best items of the fusion without the late side (the
            // whole task's or any part's).
            let only = (items.items() > crate::late::LATE_CANDIDATES).then(|| {
                scratch.part_one.clone_from(&scratch.fused);
                best_of_parts(
                    &mut scratch.part_one,
                    &scratch.part_fused,
                    n,
                    &mut scratch.ranked_by,
                );
                best_items_into(
                    &scratch.part_one,
                    crate::late::LATE_CANDIDATES,
                    &mut scratch.late_order,
                    &mut scratch.late_only,
                );
                &scratch.late_only[..]
            });
            crate::late::scores_with_parts(
                &tokens,
                items,
                &table.late_weights,
                l.dim as usize,
                only,
                &mut scratch.late_best,
                &mut scratch.late,
                crate::late::PartScores {
                    parts: &scratch.part_spans[..parts],
                    out: &mut scratch.part_late,
                },
            );
            let blend = self.config.late_share.unwrap_or(l.blend);
            add_late_side(&mut scratch.fused, &scratch.late, blend, weight);
            if n > 0 && scratch.part_late.len() == scratch.part_fused.len() {
                for (fused, late) in
                    scratch.part_fused.chunks_exact_mut(n).zip(scratch.part_late.chunks_exact(n))
                {
                    add_late_side(fused, late, blend, weight);
                }
            }
        }
        best_of_parts(&mut scratch.fused, &scratch.part_fused, n, &mut scratch.ranked_by);
        if table.kind == SectionKind::Tools {
            let servers = &selection.servers;
            crate::servers::add_server_evidence(
                &mut scratch.fused,
                servers,
                self.config.server_weight.unwrap_or(servers.weight),
                &mut scratch.server_sums,
                &mut scratch.server_added,
            );
        }
        Some(())
    }

    /// A task vector's row scores corrected in place: plus the language offset's scores
    /// (`offset`, empty when the task is not moved), less what any request scores against the
    /// same rows (the query shift; the static space has its own rows and no shift).
    fn correct_rows(&self, kind: SectionKind, space: Space, scores: &mut [f32], offset: &[f32]) {
        for (s, o) in scores.iter_mut().zip(offset) {
            *s += o;
        }
        if let (Space::Model, true, Some(shift)) =
            (space, self.config.query_shift, self.index.query_shift())
        {
            let per_row = match kind {
                SectionKind::Tools => &shift.tools,
                _ => &shift.skills,
            };
            for (s, v) in scores.iter_mut().zip(per_row) {
                *s -= v;
            }
        }
    }

    /// Whether the task is about `table`'s items at all, from the scores [`Router::score_hybrid`]
    /// left in `scratch`: the best item stands out by the gate's standard score, or one item
    /// matches most of the task's words.
    pub(crate) fn gate(
        &self,
        table: &ItemTable,
        fusion: &FusionMeta,
        scratch: &Scratch,
    ) -> GateCheck {
        let gate_z = match table.kind {
            SectionKind::Tools => self.config.gate_z.unwrap_or(fusion.gate_z),
            _ => fusion.gate_z,
        };
        let n = scratch.z.len();
        let mass = scratch.lexical.query_mass;
        let share = |i: usize| if mass > 0.0 { scratch.lexical.matched[i] / mass } else { 0.0 };
        let best_z =
            scratch.z.iter().copied().filter(|z| z.is_finite()).fold(f32::NEG_INFINITY, f32::max);
        let best_share = (0..n).map(share).fold(0.0f32, f32::max);
        let open = n > 0
            && (self.config.rank_all || best_z >= gate_z || best_share >= fusion.lexical_gate);
        GateCheck {
            open,
            best_z: if best_z.is_finite() { best_z } else { 0.0 },
            gate_z,
            best_lexical_share: best_share,
            lexical_gate: fusion.lexical_gate,
            lexical_weight: self.config.lexical_weight.unwrap_or(fusion.lexical_weight),
        }
    }
}

/// What selection scores against: a task embedding, or (fail-open) its content words.
pub(crate) enum Signal<'a> {
    Embedding(&'a [f32], Space),
    Words(&'a [String]),
}

/// Words too common to count as a keyword match in the fail-open path.
const STOPWORDS: &[&str] = &[
    "the", "and", "for", "with", "this", "that", "from", "into", "please", "can", "you", "our",
    "all", "are", "was", "what", "how", "why", "when", "where", "which", "who", "not", "but",
    "have", "has", "make", "let", "its", "out", "about", "some", "any", "una", "uno", "los", "las",
    "del", "que", "por", "para", "com", "uma", "dos", "das", "não", "les", "des", "une", "pour",
    "avec", "dans", "der", "die", "das", "und", "mit", "den", "ein", "eine",
];

pub(crate) fn is_content_word(w: &str) -> bool {
    w.chars().count() >= 3 && !STOPWORDS.contains(&w)
}

/// Selection on indexes without a selection section (cosine thresholds, hard mode filter) and
/// on the fail-open path (word overlap when the embedder failed).
impl Router {
    pub(crate) fn select(
        &self,
        table: &ItemTable,
        items: &[ItemMeta],
        pick: Pick<'_>,
        signal: &Signal<'_>,
        scratch: &mut Scratch,
        dropped: &mut Vec<Dropped>,
    ) -> Vec<Selected> {
        let Pick { base, mode, min, cap } = pick;
        let n = items.len();
        // Per item: best score and its row.
        let mut best: Vec<(f32, u32)> = vec![(f32::NEG_INFINITY, 0); n];
        let (by, min) = match signal {
            Signal::Embedding(e, space) => {
                let min = if self.config.rank_all { f32::NEG_INFINITY } else { min };
                let matrix = self.matrix_of(table.kind, *space);
                kernels::scores_into(&matrix, e, &mut scratch.row_scores);
                for (row, &s) in scratch.row_scores.iter().enumerate() {
                    let owner = table.row_owner[row] as usize;
                    if s > best[owner].0 {
                        best[owner] = (s, row as u32);
                    }
                }
                (SelectedBy::Semantic, min)
            }
            Signal::Words(task) => {
                // Fail-open: the share of the task's content words found in the item's name
                // and description; any overlap qualifies.
                for (i, item_words) in table.words.iter().enumerate() {
                    let hits = task.iter().filter(|w| item_words.contains(w)).count();
                    if hits > 0 {
                        best[i] = (hits as f32 / task.len() as f32, items[i].first_row);
                    }
                }
                (SelectedBy::Keyword, f32::MIN_POSITIVE)
            }
        };
        let in_mode = |i: usize| match (&table.modes[i], mode) {
            (None, _) | (_, None) => true,
            (Some(ms), Some(m)) => ms.contains(&m),
        };
        let base_idx: Vec<usize> =
            base.iter().filter_map(|b| items.iter().position(|it| &it.name == b)).collect();
        let mut out: Vec<Selected> = base_idx
            .iter()
            .map(|&i| self.selected(table, items, i, best[i], SelectedBy::Base))
            .collect();
        let mut ranked: Vec<usize> = (0..n).filter(|i| !base_idx.contains(i)).collect();
        ranked.sort_by(|&a, &b| {
            best[b].0.total_cmp(&best[a].0).then_with(|| items[a].name.cmp(&items[b].name))
        });
        let mut picked = 0;
        let mut misses = 0;
        for i in ranked {
            let score = best[i].0;
            let drop = |reason| Dropped {
                name: items[i].name.clone(),
                kind: table.label,
                score: if score.is_finite() { score } else { 0.0 },
                reason,
            };
            if score < min || !score.is_finite() {
                if misses < self.config.near_misses && score.is_finite() {
                    dropped.push(drop(DropReason::BelowThreshold));
                    misses += 1;
                }
                continue;
            }
            if !in_mode(i) {
                dropped.push(drop(DropReason::WrongMode));
                continue;
            }
            if picked >= self.config.max_results {
                dropped.push(drop(DropReason::OverMaxResults));
                continue;
            }
            picked += 1;
            if out.len() >= cap {
                dropped.push(drop(DropReason::OverCap));
                continue;
            }
            out.push(self.selected(table, items, i, best[i], by));
        }
        out.truncate(cap);
        out
    }

    pub(crate) fn selected(
        &self,
        table: &ItemTable,
        items: &[ItemMeta],
        i: usize,
        (score, row): (f32, u32),
        by: SelectedBy,
    ) -> Selected {
        let (score, row) = if score.is_finite() { (score, row) } else { (0.0, items[i].first_row) };
        Selected {
            name: items[i].name.clone(),
            score,
            by,
            matched_row: row - items[i].first_row,
            matched_text: self.index.row_text(table.kind, row as usize).to_string(),
            signals: None,
        }
    }
}

/// `only[item]` = whether `item` is among the `k` best of `fused` (ties to the earlier item, so
/// the choice never depends on the sort). `order` is scratch space.
fn best_items_into(fused: &[Fused], k: usize, order: &mut Vec<u32>, only: &mut Vec<bool>) {
    order.clear();
    order.extend(0..fused.len() as u32);
    only.clear();
    only.resize(fused.len(), false);
    if k < order.len() {
        let score = |i: u32| fused[i as usize].score;
        order.select_nth_unstable_by(k, |&a, &b| score(b).total_cmp(&score(a)).then(a.cmp(&b)));
    }
    for &i in order.iter().take(k) {
        only[i as usize] = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fused(scores: &[f32]) -> Vec<Fused> {
        scores.iter().map(|&score| Fused { dense: 0.0, late: None, lexical: 0.0, score }).collect()
    }

    #[test]
    fn the_late_candidates_are_the_best_fused_items_ties_to_the_earlier() {
        let (mut order, mut only) = (Vec::new(), Vec::new());
        best_items_into(&fused(&[0.2, 0.9, 0.5, 0.9, 0.1]), 2, &mut order, &mut only);
        assert_eq!(only, [false, true, false, true, false]);
        best_items_into(&fused(&[0.5, 0.9, 0.5, 0.5]), 2, &mut order, &mut only);
        assert_eq!(only, [true, true, false, false]);
        // Fewer items than candidates: all of them.
        best_items_into(&fused(&[0.3, 0.1]), 5, &mut order, &mut only);
        assert_eq!(only, [true, true]);
    }
}
