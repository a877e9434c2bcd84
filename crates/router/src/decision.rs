//! What the router decided and why, serialisable as JSON.

use serde::Serialize;
use std::sync::Arc;

/// Which step of mode inference decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModeSource {
    /// The caller named the mode.
    Explicit,
    /// A context hint (interactive session, pending git changes).
    Hint,
    /// A keyword rule of the index.
    Keyword,
    /// The semantic fallback over mode descriptions and examples.
    Semantic,
    /// Nothing decided: the index's default mode.
    Default,
    /// Chit-chat: no task, nothing selected.
    Chitchat,
}

/// Why a tool or skill was selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SelectedBy {
    /// A base item of the mode.
    Base,
    /// Cosine score against the task.
    Semantic,
    /// Word overlap with the task (fail-open path only).
    Keyword,
}

/// Why a candidate was not selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum DropReason {
    /// Scored below the minimum.
    BelowThreshold,
    /// Not offered in the decided mode.
    WrongMode,
    /// Passed the threshold but `max_results` semantic picks were already taken.
    OverMaxResults,
    /// Cut by `max_tools` / `max_skills` after merging with the base set.
    OverCap,
    /// The task is not about this catalog: no item opened the gate (see [`GateCheck`]).
    GateClosed,
    /// The task is nearer to a general topic than to any tool or skill (see [`OffTopicCheck`]).
    OffTopic,
}

/// How the decided mode constrains selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModeFilter {
    /// A strong signal (explicit, hint, keyword) decided: items outside the mode are dropped.
    Hard,
    /// A weak signal (semantic guess, default) decided: items outside the mode rank after the
    /// mode's items by a penalty, and are kept when they win by more than it.
    Soft,
    /// The task's best tools chose the mode by their votes (`SemanticCheck::by_tools`): it
    /// orders the skills as `Soft` does, and the tools keep their own order, which chose it.
    SkillsOnly,
}

/// What the semantic mode fallback saw, whether or not it decided.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SemanticCheck {
    /// The mode the step chose: the best by the examples' scores, or the one the best tools
    /// or the question rule chose.
    pub best: String,
    /// Its score.
    pub score: f32,
    /// Its lead over the runner-up mode.
    pub lead: f32,
    /// The lead required (`None`: the index's examples support no semantic guess).
    pub margin: Option<f32>,
    /// The mode the task's best tools belong to (see [`ToolEvidence`]), when they single one
    /// out.
    pub tools_favour: Option<ToolEvidence>,
    /// Whether the guess was taken: its lead reached the margin, the best tools favour the
    /// same mode (two independent signals agreeing), the best tools chose it (`by_tools`), or
    /// the question rule chose it (see [`QuestionRule`]).
    pub decided: bool,
    /// Whether the best tools chose the mode against an unsure look at the examples: they
    /// favour it with nearly all their votes (before the question rule), or with any lead
    /// where otherwise the default mode would have decided. `best` is then their mode.
    pub by_tools: bool,
    /// When the task asks a question and the semantic guess alone was unsure: what the modes'
    /// examples say about questions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<QuestionRule>,
}

/// The question rule of the mode step: the task asks a question, the default mode's examples
/// ask none, and some modes' examples do; the best of those modes by score decides (`best` and
/// `score` of the check are then that mode's). A catalog that writes its lookup or reporting
/// modes in questions and its default (action) mode in commands says this itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionRule {
    /// The modes whose examples ask questions, with how many of their examples do.
    pub modes: Vec<(String, u32)>,
    /// The default mode's examples (none of them a question).
    pub default_examples: u32,
}

/// The mode the task's best-scoring tools vote for: each of the best few tools votes with a
/// weight falling off with its fused score's distance to the best tool's, split evenly among
/// the modes it is offered in (a tool offered in every mode votes for none in particular).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolEvidence {
    /// The favoured mode.
    pub mode: String,
    /// Its share of the votes (the rest went to other modes).
    pub share: f32,
    /// The tools that voted, best first.
    pub voters: Vec<String>,
}

/// Whether a task is about the catalog at all, per item kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateCheck {
    /// Whether the gate opened (items may be selected by score); false as well when the
    /// off-topic check closed selection (see [`Decision::off_topic`]).
    pub open: bool,
    /// The best item's standard score among the task's items (how many standard deviations
    /// its cosine stands above the mean item's).
    pub best_z: f32,
    /// Standard score that opens the gate.
    pub gate_z: f32,
    /// Largest share of the task's term weight one item matched.
    pub best_lexical_share: f32,
    /// Lexical share that opens the gate.
    pub lexical_gate: f32,
    /// Weight of the lexical side in the fused score.
    pub lexical_weight: f32,
}

/// Whether the task is nearer to a general topic no catalog serves (jokes, trivia, recipes,
/// ...) than to any of the catalog's tools and skills; when it is, by the index's margin, no
/// tool or skill is selected. Raw cosines of the task's embedding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffTopicCheck {
    /// Whether the check closed selection.
    pub closed: bool,
    /// The nearest general topic.
    pub topic: String,
    /// The task's cosine to it.
    pub topic_score: f32,
    /// The task's best cosine to any tools or skills row.
    pub best_item_score: f32,
    /// How far the topic must lead for the check to close selection: the index's margin, or
    /// [`crate::FOREIGN_MARGIN_SHARE`] of it for a task in another language than the catalog
    /// (see [`Decision::language`]).
    pub margin: f32,
}

/// The task's language against the catalog's, read from the centroids of ordinary requests
/// per language (the index's `language_shift` section), and how far the task was moved
/// towards the catalog's language before the tools were scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LanguageCheck {
    /// The language whose centroid is nearest the task ("es").
    pub task_language: String,
    /// The catalog's language, read from its tools' words at build time ("en").
    pub catalog_language: String,
    /// How much nearer (cosine) the task is to its language's centroid than to the catalog's.
    pub margin: f32,
    /// How far the task was moved, in units of the offset between the two centroids: 0 when
    /// it is in the catalog's language, the index's strength once the margin reaches its full
    /// margin, a share of it in between.
    pub strength: f32,
}

/// The two signals of a selected item and how they were combined.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Signals {
    /// Dense side, 0..=1 (1 = the task's best dense item).
    pub dense: f32,
    /// Late-interaction side, 0..=1 (1 = the task's best item token by token), which takes
    /// the index's share of the dense side; absent on indexes without token states.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late: Option<f32>,
    /// Lexical side, 0..=1 (1 = the task's best BM25 item).
    pub lexical: f32,
    /// The fused score the item was ranked by (before any mode penalty), with `server`.
    pub fused: f32,
    /// What the tool's MCP server added to its fused score: its server's mean fused score less
    /// every tool's, times the index's server weight; absent when the catalog's tools come from
    /// fewer than two servers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<f32>,
    /// Whether the item is outside a weakly decided mode (ranked with a penalty).
    pub outside_mode: bool,
    /// The part of the task ([`Decision::parts`], from 0) whose own scores ranked the item,
    /// when they beat the whole task's; the sides above are then that part's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<usize>,
}

/// Which signal the selection came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AnsweredBy {
    /// The transformer's embedding of the task (computed or cached).
    Model,
    /// The cascade's static embedding: the task's pieces looked up in the index's distilled
    /// table, no transformer run.
    Static,
    /// Fail-open keyword overlap (the embedder failed or ran out of time).
    Words,
    /// Nothing semantic: chit-chat gets no tools.
    Rules,
}

/// What the cascade saw, and why it did or did not answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CascadeCheck {
    /// Share of the task's word pieces found in the static table.
    pub coverage: f32,
    /// Coverage needed.
    pub min_coverage: f32,
    /// Best tool in the static space and its score.
    pub top_tool: Option<String>,
    /// Its static score.
    pub top_score: f32,
    /// Its lead over the next tool.
    pub lead: f32,
    /// Lead needed.
    pub min_lead: f32,
    /// Whether the skills are as clear: no skill clears the static skill threshold, or the
    /// best leads the next by the lead needed.
    pub skills_clear: bool,
    /// Whether the static answer was taken.
    pub accepted: bool,
}

/// A selected tool or skill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Selected {
    /// Public id.
    pub name: String,
    /// Best row score: the cosine with the task, less the row's query shift on indexes that
    /// have one (format 7 on); 0 for base items the task did not score on.
    pub score: f32,
    /// How it got in.
    pub by: SelectedBy,
    /// The row that matched best: 0 is the description, 1.. the examples.
    pub matched_row: u32,
    /// That row's text.
    pub matched_text: String,
    /// Dense, lexical and fused scores (hybrid indexes; `None` on older indexes and the
    /// fail-open path).
    pub signals: Option<Signals>,
}

/// A candidate left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dropped {
    /// Public id.
    pub name: String,
    /// `tool` or `skill`.
    pub kind: &'static str,
    /// Its best score.
    pub score: f32,
    /// Why.
    pub reason: DropReason,
}

/// Milliseconds spent per stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timings {
    /// Embedding the task (0 on a cache hit), the cascade's check included.
    pub embed_ms: f64,
    /// The cascade's static lookup (tokenize, sum, score); part of `embed_ms`.
    pub static_ms: f64,
    /// Mode inference.
    pub mode_ms: f64,
    /// Tool and skill scoring and selection, the off-topic check included (without it, the
    /// tools may be scored during the mode step, and that time counts in `mode_ms`).
    pub select_ms: f64,
    /// The whole call.
    pub total_ms: f64,
}

/// Counters of one call.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Calls made to the embedding model: 1, or 0 on a cache hit, chit-chat or fail-open.
    pub embedding_calls: u32,
    /// Whether the task embedding came from the cache.
    pub cache_hit: bool,
    /// Stage timings.
    pub timings: Timings,
}

/// The thresholds in force for the call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppliedThresholds {
    /// Tool minimum.
    pub tool_min: f32,
    /// Skill minimum.
    pub skill_min: f32,
    /// Mode minimum (semantic fallback).
    pub mode_min: f32,
}

/// The full account of one routing call.
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    /// The task as given.
    pub task: String,
    /// The decided mode.
    pub mode: String,
    /// Which step decided it.
    pub mode_source: ModeSource,
    /// How the mode constrains selection: hard for explicit, hint and keyword modes, soft for
    /// a semantic guess or the default (on indexes with a selection section).
    pub mode_filter: ModeFilter,
    /// What the deciding step matched (keyword, hint, best mode score).
    pub mode_detail: Option<String>,
    /// The semantic mode fallback's check, when it ran.
    pub semantic_mode: Option<SemanticCheck>,
    /// Whether the task was recognised as chit-chat.
    pub chitchat: bool,
    /// How much work the task asks for and what it leaves unsaid (word lists, no model).
    pub analysis: crate::analysis::TaskAnalysis,
    /// Selected tools, base first then by score.
    pub tools: Vec<Selected>,
    /// Selected skills.
    pub skills: Vec<Selected>,
    /// Candidates left out (nearest misses only for `below_threshold`).
    pub dropped: Vec<Dropped>,
    /// Thresholds used.
    pub thresholds: AppliedThresholds,
    /// The tools' gate (hybrid indexes).
    pub tool_gate: Option<GateCheck>,
    /// The skills' gate (hybrid indexes).
    pub skill_gate: Option<GateCheck>,
    /// The off-topic check, when the index has one and the model embedded the task.
    pub off_topic: Option<OffTopicCheck>,
    /// The language shift's check, when the index has one, the catalog's language is clear
    /// and the model embedded the task.
    pub language: Option<LanguageCheck>,
    /// The parts of a task that asks for several things (its sentences), each scored alone
    /// as well as within the whole task; empty when the task was scored whole.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<String>,
    /// Set when the model failed or ran over budget and deterministic signals answered.
    pub fallback_reason: Option<String>,
    /// Which signal answered: the model, the cascade's static table, keywords or rules.
    pub answered_by: AnsweredBy,
    /// The cascade's check, when it ran (not on a cache hit, for chit-chat, or without a
    /// static table).
    pub cascade: Option<CascadeCheck>,
    /// Counters and timings.
    pub metrics: Metrics,
    /// The task's unit model embedding, for the caller's other lookups (memory search):
    /// shared, so the task is embedded once per call whatever consumes it. `None` when the
    /// cascade answered (see [`crate::Router::task_embedding`]) or the model failed.
    #[serde(skip)]
    pub embedding: Option<Arc<[f32]>>,
}

impl Selected {
    /// The score the item ranks by: the fused score on hybrid indexes, else the cosine.
    pub fn rank_score(&self) -> f32 {
        self.signals.map_or(self.score, |s| s.fused)
    }
}

impl Decision {
    /// Names of the selected tools.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    /// Names of the selected skills.
    pub fn skill_names(&self) -> Vec<&str> {
        self.skills.iter().map(|t| t.name.as_str()).collect()
    }
}
