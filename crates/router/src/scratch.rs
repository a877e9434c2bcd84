//! The buffers one thread reuses across routes.

use std::sync::Arc;
use switchyard_embed::TokenStates;
use switchyard_lexical::{Fused, LexicalScores};

/// Per-call buffers, reused across calls on one thread.
#[derive(Debug, Default)]
pub struct Scratch {
    pub(crate) row_scores: Vec<f32>,
    /// Per item: best row score and its row.
    pub(crate) best: Vec<(f32, u32)>,
    /// Per item: best cosine, and its standard score among the task's items.
    pub(crate) cosines: Vec<f32>,
    pub(crate) z: Vec<f32>,
    pub(crate) lexical: LexicalScores,
    pub(crate) fused: Vec<Fused>,
    /// The task's content-token states, when the index has a late section and the model gave
    /// them (set per route).
    pub(crate) task_tokens: Option<Arc<TokenStates>>,
    /// Per item: the late score; and per task token, its best cosine in the current item.
    pub(crate) late: Vec<f32>,
    pub(crate) late_best: Vec<f32>,
    /// In a catalog of more than [`crate::late::LATE_CANDIDATES`] items: per item, whether its
    /// late score is computed; and the items in order, to find them.
    pub(crate) late_only: Vec<bool>,
    pub(crate) late_order: Vec<u32>,
    /// The best raw cosine (before the query shift) of an item's card among the rows
    /// [`Router::score_hybrid`] scored last, for the off-topic check; written only when the
    /// index has an `off_topic` section.
    pub(crate) best_card: f32,
    /// What the language shift adds to the task's vector before the tools are scored (set per
    /// route; empty when the task is not moved).
    pub(crate) language_offset: Vec<f32>,
    /// The offset's score of each tools row.
    pub(crate) offset_scores: Vec<f32>,
    /// The vectors of the task's parts when it asks for several things (see [`crate::clauses`]),
    /// `parts` rows one after another; empty when the task is scored whole.
    pub(crate) part_vectors: Vec<f32>,
    pub(crate) parts: usize,
    /// The parts' runs of the task's content tokens and their analysed terms (`parts` of
    /// each are in use).
    pub(crate) part_spans: Vec<std::ops::Range<usize>>,
    pub(crate) part_terms: Vec<Vec<String>>,
    /// The parts' texts, for the decision.
    pub(crate) part_texts: Vec<String>,
    /// Per item of the table scored last: 0 when the whole task's fusion ranks it, else
    /// 1 + the part whose own fusion does.
    pub(crate) ranked_by: Vec<u8>,
    /// Each part's late score per item, and its fusion per item (`parts` runs of items each).
    pub(crate) part_late: Vec<f32>,
    pub(crate) part_fused: Vec<Fused>,
    /// One part's best row per item, cosines, lexical scores and fusion, while it is scored.
    pub(crate) part_best: Vec<(f32, u32)>,
    pub(crate) part_cosines: Vec<f32>,
    pub(crate) part_lexical: LexicalScores,
    pub(crate) part_one: Vec<Fused>,
    /// Each row's score against the current part.
    pub(crate) part_scores: Vec<f32>,
    /// Per server: its tools' fused sum and count; and per tool, what its server added to its
    /// fused score (empty when nothing was added).
    pub(crate) server_sums: Vec<(f32, u32)>,
    pub(crate) server_added: Vec<f32>,
}
