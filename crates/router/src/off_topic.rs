//! The off-topic check: is the task nearer to a general topic no catalog serves (jokes,
//! trivia, recipes, ...) than to any of the catalog's tools and skills? The topics and the
//! margin come from the index's `off_topic` section (see the builder's `off_topic` module).
//!
//! The check reads raw cosines (before the query shift) of the task against the topics' cards
//! and the items' cards, all embedded as documents, so both are on one scale. A task in another
//! language than the catalog clears a smaller margin ([`FOREIGN_MARGIN_SHARE`]). An item's
//! examples are left out: they are embedded as requests, and two requests stand nearer each
//! other than a request and a card whatever they ask (with them, 2 of 20 off-topic tasks were
//! closed on the default catalog instead of 11).

use crate::decision::OffTopicCheck;
use crate::kernels;
use crate::router::Router;
use crate::scratch::Scratch;
use switchyard_format::{SectionKind, dot};

/// The share of the off-topic margin a task in another language than the catalog must clear.
/// A multilingual model scores a task against cards in another language on a compressed scale:
/// "raconte-moi une blague" is nearer to the jokes card than to any card of a clinic's catalog by
/// 0.008, "tell me a joke about cats" by 0.038, against e5-small's margin of 0.02. Measured in
/// session 48 (`benches/RESULTS.md`): on the development catalogs half the margin gave 11 more of
/// 70 unrelated tasks no tool and closed one real task of 430, already a miss; a quarter or none
/// gained little more and closed more real tasks.
pub const FOREIGN_MARGIN_SHARE: f32 = 0.5;

impl Router {
    /// Whether routes in the model's space run the check: the index has an `off_topic`
    /// section (not older indexes, models without a margin, indexes with a query adapter) and
    /// the router was not told to skip it or to rank everything.
    pub(crate) fn off_topic_applies(&self) -> bool {
        self.index.off_topic().is_some() && self.config.off_topic && !self.config.rank_all
    }

    /// The check for a task's model embedding. The tools must have just been scored by
    /// [`Router::score_hybrid`], which leaves their best card in `scratch.best_card` (a large
    /// catalog's rows are read once per route); the skills, a few rows, are scored here.
    /// `foreign`: the task is in another language than the catalog (the language check moved
    /// it), so the margin is [`FOREIGN_MARGIN_SHARE`] of the index's. `None` when the check
    /// does not apply or the catalog has no tools or skills.
    pub(crate) fn off_topic_check(
        &self,
        embedding: &[f32],
        foreign: bool,
        scratch: &mut Scratch,
    ) -> Option<OffTopicCheck> {
        let off = self.index.off_topic().filter(|_| self.off_topic_applies())?;
        let dim = self.index.dim();
        let (topic, topic_score) =
            off.rows.chunks_exact(dim).enumerate().map(|(i, row)| (i, dot(embedding, row))).fold(
                (None, f32::NEG_INFINITY),
                |best, (i, s)| if s > best.1 { (Some(i), s) } else { best },
            );
        let topic = topic?;
        let tools_best = scratch.best_card;
        kernels::scores_into(
            &self.index.matrix(SectionKind::Skills),
            embedding,
            &mut scratch.row_scores,
        );
        let item_score = tools_best.max(best_card(&self.skills.row_owner, &scratch.row_scores));
        // No tools or skills at all: nothing to close.
        if !item_score.is_finite() {
            return None;
        }
        let mut margin = self.config.off_topic_margin.unwrap_or(off.margin);
        if foreign {
            margin *= FOREIGN_MARGIN_SHARE;
        }
        Some(OffTopicCheck {
            closed: topic_score - item_score >= margin,
            topic: off.names[topic].clone(),
            topic_score,
            best_item_score: item_score,
            margin,
        })
    }
}

/// The best score among the items' cards, given one score per row and each row's item
/// (`NEG_INFINITY` without rows). An item's rows are contiguous, its card first.
pub(crate) fn best_card(row_owner: &[u32], row_scores: &[f32]) -> f32 {
    row_scores
        .iter()
        .enumerate()
        .filter(|&(row, _)| row == 0 || row_owner[row] != row_owner[row - 1])
        .map(|(_, &s)| s)
        .fold(f32::NEG_INFINITY, f32::max)
}

#[cfg(test)]
mod tests {
    use super::best_card;

    #[test]
    fn only_each_items_first_row_counts_as_its_card() {
        // Item 0: card 0.2, example 0.9; item 1: card 0.5; item 2: card 0.1, examples 0.8, 0.7.
        let owner = [0, 0, 1, 2, 2, 2];
        let scores = [0.2, 0.9, 0.5, 0.1, 0.8, 0.7];
        assert_eq!(best_card(&owner, &scores), 0.5);
        assert_eq!(best_card(&[], &[]), f32::NEG_INFINITY);
    }
}
