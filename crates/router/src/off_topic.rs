//! The off-topic check: is the task nearer to a general topic no catalog serves (jokes,
//! trivia, recipes, ...) than to any of the catalog's tools and skills? The topics and the
//! margin come from the index's `off_topic` section (see the builder's `off_topic` module).
//!
//! The check reads raw cosines (before the query shift) of the task against the topics' cards
//! and the items' cards, all embedded as documents, so both are on one scale. An item's
//! examples are left out: they are embedded as requests, and two requests stand nearer each
//! other than a request and a card whatever they ask (with them, 2 of 20 off-topic tasks were
//! closed on the default catalog instead of 11).

use crate::decision::OffTopicCheck;
use crate::kernels;
use crate::router::{ItemTable, Router, Scratch};
use switchyard_format::{SectionKind, dot};

impl Router {
    /// The check for a task's model embedding, or `None` when the index has no `off_topic`
    /// section (older indexes, models without a margin, indexes with a query adapter) or the
    /// router was told not to run it.
    pub(crate) fn off_topic_check(
        &self,
        embedding: &[f32],
        scratch: &mut Scratch,
    ) -> Option<OffTopicCheck> {
        let off =
            self.index.off_topic().filter(|_| self.config.off_topic && !self.config.rank_all)?;
        let dim = self.index.dim();
        let (topic, topic_score) =
            off.rows.chunks_exact(dim).enumerate().map(|(i, row)| (i, dot(embedding, row))).fold(
                (None, f32::NEG_INFINITY),
                |best, (i, s)| if s > best.1 { (Some(i), s) } else { best },
            );
        let topic = topic?;
        let mut item_score = f32::NEG_INFINITY;
        for (kind, table) in
            [(SectionKind::Tools, &self.tools), (SectionKind::Skills, &self.skills)]
        {
            kernels::scores_into(&self.index.matrix(kind), embedding, &mut scratch.row_scores);
            item_score = scratch
                .row_scores
                .iter()
                .enumerate()
                .filter(|&(row, _)| is_card(table, row))
                .map(|(_, &s)| s)
                .fold(item_score, f32::max);
        }
        // No tools or skills at all: nothing to close.
        if !item_score.is_finite() {
            return None;
        }
        Some(OffTopicCheck {
            closed: topic_score - item_score >= off.margin,
            topic: off.names[topic].clone(),
            topic_score,
            best_item_score: item_score,
            margin: off.margin,
        })
    }
}

/// Whether `row` is its item's card: an item's rows are contiguous, its card first.
fn is_card(table: &ItemTable, row: usize) -> bool {
    row == 0 || table.row_owner[row] != table.row_owner[row - 1]
}
