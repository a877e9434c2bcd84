//! The metadata section: everything the runtime needs besides the matrices, so it never parses
//! manifests. Encoded with bincode 2 (standard config) through serde.

use serde::{Deserialize, Serialize};

pub use crate::late_states::LateStates;
pub use crate::screen_meta::{
    FamilyHiddenLayer, LexicalScreenMeta, ScreenFamiliesMeta, ScreenFamilyHead,
    ScreenFamilyHiddenMeta, ScreenHead, ScreenLayerMeta, ScreenMeta, ScreenRequestMeta,
    ScreenTriageMeta, WindowingMeta,
};

/// A section's bincode `encode` / `decode` (the screen's sections in `screen_meta.rs` use it too).
macro_rules! bincode_codec {
    ($ty:ty, $what:literal) => {
        impl $ty {
            /// bincode encoding.
            pub fn encode(&self) -> crate::Result<Vec<u8>> {
                bincode::serde::encode_to_vec(self, bincode::config::standard()).map_err(|e| {
                    crate::FormatError::InvalidInput(format!("{} does not encode: {e}", $what))
                })
            }

            /// bincode decoding; the caller maps the error onto its path.
            pub fn decode(bytes: &[u8]) -> std::result::Result<Self, String> {
                let (meta, used) = bincode::serde::decode_from_slice::<Self, _>(
                    bytes,
                    bincode::config::standard().with_limit::<{ 64 << 20 }>(),
                )
                .map_err(|e| e.to_string())?;
                if used != bytes.len() {
                    return Err(format!("{} trailing bytes", bytes.len() - used));
                }
                Ok(meta)
            }
        }
    };
}
pub(crate) use bincode_codec;

/// An older layout of a section, decoded only when it uses every byte (as `decode` does for
/// the current one), so trying the current layout and then an older one is unambiguous.
pub(crate) fn decode_whole<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    let config = bincode::config::standard().with_limit::<{ 64 << 20 }>();
    match bincode::serde::decode_from_slice::<T, _>(bytes, config) {
        Ok((v, used)) if used == bytes.len() => Some(v),
        _ => None,
    }
}

/// The model an index was built with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMeta {
    /// Model name (`minilm`, `e5-small`, a folder or repo id).
    pub name: String,
    /// Prefix prepended to every query text.
    pub prefix: String,
    /// Embedding width.
    pub dim: u32,
    /// Token limit.
    pub max_tokens: u32,
    /// Pooling (`mean`, `cls`).
    pub pooling: String,
    /// Hex fingerprint (also in the header, in binary).
    pub fingerprint: String,
}

/// Where an item's rows sit in its matrix, and what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemMeta {
    /// Public id (manifest name).
    pub name: String,
    /// Description (row `first_row` embeds it).
    pub description: String,
    /// Modes the item belongs to (`any` for all).
    pub modes: Vec<String>,
    /// First row of this item in its matrix.
    pub first_row: u32,
    /// Number of rows: description plus examples.
    pub row_count: u32,
    /// Tool parameters as JSON text (a JSON-schema object), emitted as-is.
    pub parameters: Option<String>,
    /// Skill body text, loaded at build time.
    pub body: Option<String>,
}

/// A mode and its deterministic rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeMeta {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Whole-word, case-insensitive keywords (any language).
    pub keywords: Vec<String>,
    /// Tools always included in this mode.
    pub base_tools: Vec<String>,
    /// Skills always included in this mode.
    pub base_skills: Vec<String>,
    /// The mode's rules text.
    pub rules: Option<String>,
    /// First row of this mode in the modes matrix.
    pub first_row: u32,
    /// Rows: description plus examples.
    pub row_count: u32,
}

/// An injection pattern or benign look-alike (one row each).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatternMeta {
    /// Language tag.
    pub lang: String,
    /// Category (attacks only).
    pub category: Option<String>,
}

/// Score thresholds derived at build time from the catalog itself (see build-index).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// Minimum score for a tool to be selected semantically.
    pub tool_min: f32,
    /// Minimum score for a skill.
    pub skill_min: f32,
    /// Minimum score for the semantic mode fallback to decide.
    pub mode_min: f32,
    /// Minimum score against an attack pattern for an entry to be flagged.
    pub injection: f32,
    /// Minimum score for a memory entry to be relevant to a task.
    pub memory_min: f32,
    /// Mean score of unrelated pairs (the model's floor), for display and scaling.
    pub unrelated_mean: f32,
    /// Mean score of related pairs (an example against its own item).
    pub related_mean: f32,
}

/// Everything in the `meta` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexMeta {
    /// The model.
    pub model: ModelMeta,
    /// sha256 of the manifest folder's canonical content.
    pub manifest_hash: String,
    /// Tools, sorted by name.
    pub tools: Vec<ItemMeta>,
    /// Skills, sorted by name.
    pub skills: Vec<ItemMeta>,
    /// Modes, sorted by name.
    pub modes: Vec<ModeMeta>,
    /// Mode used when nothing else decides.
    pub default_mode: String,
    /// One entry per injection row.
    pub injections: Vec<PatternMeta>,
    /// One entry per benign row.
    pub benign: Vec<PatternMeta>,
    /// Per-model thresholds.
    pub thresholds: Thresholds,
    /// Index of the first row text of each matrix in the strings section, in
    /// [`crate::SectionKind::MATRICES`] order.
    pub string_base: Vec<u32>,
}

/// The static embedding space of the cascade (the `cascade` section): a table of word pieces
/// distilled from the model at build time, so an easy task can be routed without running it.
///
/// A text's static embedding is the L2-normalised sum of `weight * row` over its pieces found in
/// `piece_ids`; pieces not in the table are skipped and lower the text's coverage. Rows live in
/// the `static_rows` matrix: `piece_ids.len()` piece rows, then the static embedding of every
/// tools, skills and modes row text, in that order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CascadeMeta {
    /// Model token ids of the distilled pieces, strictly ascending (binary-searched).
    pub piece_ids: Vec<u32>,
    /// Weight of each piece (its inverse document frequency over the catalog's row texts).
    pub piece_weights: Vec<f32>,
    /// Thresholds of the static space, derived exactly as the model's are.
    pub thresholds: Thresholds,
    /// Smallest share of a task's pieces that must be in the table for a static answer.
    pub min_coverage: f32,
    /// Smallest lead of the best tool over the next, as a fraction of the static space's
    /// related-unrelated spread, for a static answer.
    pub margin: f32,
}

/// Lexical statistics of one item kind (a BM25 index over each item's whole text: name as
/// words, description, parameter names and descriptions, examples, tags), computed at build time
/// so the router scores a task's terms without touching any text.
///
/// Terms are analysed by `switchyard-lexical` (its `ANALYZER_VERSION` is recorded, since a term
/// list is only meaningful to the analyser that made it). Postings of term `t` are
/// `post_doc[term_start[t]..term_start[t + 1]]` with their counts in `post_tf`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LexicalMeta {
    /// Analyser version the terms were made with.
    pub analyzer_version: u32,
    /// Distinct terms, strictly ascending (binary-searched).
    pub terms: Vec<String>,
    /// Inverse document frequency of each term (Lucene's non-negative BM25 idf).
    pub idf: Vec<f32>,
    /// `terms.len() + 1` offsets into the postings.
    pub term_start: Vec<u32>,
    /// Item (document) index of each posting, ascending within a term.
    pub post_doc: Vec<u32>,
    /// Term count of each posting.
    pub post_tf: Vec<u32>,
    /// Length of each document in terms.
    pub doc_len: Vec<u32>,
    /// BM25 term-frequency saturation.
    pub k1: f32,
    /// BM25 length normalisation.
    pub b: f32,
}

/// How the selection of one item kind combines and gates its two signals.
///
/// Per task, each item's best cosine and its BM25 score are min-max normalised over the task's
/// items and combined as `(1 - lexical_weight) * dense + lexical_weight * lexical`. The gate
/// decides whether the task is about this catalog at all: it opens when the best item's
/// standard score among the task's items (how many standard deviations it stands above the
/// mean item; scale-free, so the same for every model) reaches `gate_z`, or when one item
/// matches `lexical_gate` of the task's term weight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FusionMeta {
    /// Weight of the lexical side in the fused score (0 = dense only, 1 = lexical only).
    pub lexical_weight: f32,
    /// Smallest standard score of the best item that opens the gate.
    pub gate_z: f32,
    /// Smallest share of the task's idf mass matched by one item that opens the gate.
    pub lexical_gate: f32,
    /// Once the gate is open, an item is kept only if its standard score reaches this or it
    /// shares some term with the task (a floor against items about something else).
    pub floor_z: f32,
    /// Where the figures came from: `default`, `calibrated` (the catalog's own examples) or
    /// `fitted` (`switchyard fit` on labelled cases).
    pub source: String,
}

/// How the mode step was calibrated on the catalog's own examples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeCalibration {
    /// Lead (best mode score minus the runner-up's) the semantic fallback needs to decide;
    /// `None` when the catalog's examples cannot support a confident guess (too few, or no
    /// lead reached the target precision in leave-one-out), so the default mode is used.
    pub semantic_margin: Option<f32>,
    /// Mode examples scored in leave-one-out.
    pub examples: u32,
    /// Leave-one-out accuracy of the examples whose lead reached the margin.
    pub precision: Option<f32>,
    /// Share of the examples whose lead reached the margin.
    pub coverage: Option<f32>,
    /// Why the semantic fallback is off, when it is.
    pub note: Option<String>,
}

/// The fewest examples a mode other than the default needs before the semantic fallback may
/// guess it (by a calibrated margin, or by agreeing with the task's best tools).
pub const MIN_MODE_EXAMPLES: usize = 3;

impl IndexMeta {
    /// Whether the semantic mode guess may decide when the task's best tools favour the same
    /// mode: every mode other than the default has [`MIN_MODE_EXAMPLES`] examples, and some tool
    /// is offered in fewer than all modes (otherwise the tools favour none).
    pub fn supports_tool_agreement(&self) -> bool {
        let enough_examples = self.modes.len() >= 2
            && self
                .modes
                .iter()
                .all(|m| m.name == self.default_mode || m.row_count as usize > MIN_MODE_EXAMPLES);
        let tools_carry_modes = self.tools.iter().any(|t| {
            !t.modes.is_empty()
                && !t.modes.iter().any(|m| m == "any")
                && self.modes.iter().any(|m| !t.modes.contains(&m.name))
        });
        enough_examples && tools_carry_modes
    }

    /// The share of the catalog's tools offered in the default mode (a tool that declares no
    /// modes, or `any`, is offered in every mode); `None` without tools or without a default
    /// mode among the modes.
    pub fn default_mode_tool_share(&self) -> Option<f32> {
        if self.tools.is_empty() || !self.modes.iter().any(|m| m.name == self.default_mode) {
            return None;
        }
        let offered = self
            .tools
            .iter()
            .filter(|t| {
                t.modes.is_empty() || t.modes.iter().any(|m| m == "any" || *m == self.default_mode)
            })
            .count();
        Some(offered as f32 / self.tools.len() as f32)
    }
}

/// Everything the selection step needs beyond the matrices (the `selection` section).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectionMeta {
    /// Version of the builder's calibration that wrote this section: an index from an older
    /// builder is rebuilt even when its manifests and model are unchanged.
    pub builder_version: u32,
    /// Lexical statistics of the tools, document `i` = tool `i` of [`IndexMeta::tools`].
    pub tools_lexical: LexicalMeta,
    /// Lexical statistics of the skills.
    pub skills_lexical: LexicalMeta,
    /// Fusion and gate of the tools.
    pub tools: FusionMeta,
    /// Fusion and gate of the skills.
    pub skills: FusionMeta,
    /// The mode step's calibration.
    pub mode: ModeCalibration,
    /// Penalty, on the fused 0..=1 scale, of an item outside a mode that came from a weak
    /// signal (semantic guess or default): it ranks after the mode's items unless it wins by
    /// more than this.
    pub out_of_mode_penalty: f32,
    /// Context hints and the mode each selects (`interactive` -> `plan`), from the manifest.
    pub hints: Vec<(String, String)>,
    /// The MCP servers the tools come from (version 22 on; empty in older sections).
    pub servers: ToolServers,
}

/// Which MCP server lists each tool, and how much a server's other tools count for it: a task
/// that suits several tools of one server is likelier to want that server, so each tool's
/// fused score moves by `weight` times the gap between its server's mean fused score and
/// the mean over every tool. Empty (nothing moves) unless the catalog has two servers or more.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolServers {
    /// The servers' names (the stems of `tools/<server>.json`), in the catalog's order.
    pub names: Vec<String>,
    /// Per tool of [`IndexMeta::tools`], its server as an index into `names`; `None` for a tool
    /// no server lists (`tools.toml`). Empty when there are no servers.
    pub of_tool: Vec<Option<u32>>,
    /// Share of the server's gap added to each of its tools' fused scores (0 = off).
    pub weight: f32,
}

/// [`SelectionMeta`] as versions 3 to 21 wrote it, before the tools' servers.
#[derive(Deserialize)]
struct SelectionMetaV21 {
    builder_version: u32,
    tools_lexical: LexicalMeta,
    skills_lexical: LexicalMeta,
    tools: FusionMeta,
    skills: FusionMeta,
    mode: ModeCalibration,
    out_of_mode_penalty: f32,
    hints: Vec<(String, String)>,
}

/// What every request scores against each tools and skills row regardless of what it asks
/// (the `query_shift` section). Some models (multilingual-e5) put every query close to one
/// common direction, so a row near that direction scores well for any task and crowds out the
/// right item. At build time the builder embeds a fixed set of ordinary requests and stores, per
/// row, `strength * (centroid . row)`; the router subtracts it from the task's score of that
/// row, which is the score of the task vector minus `strength` times the centroid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryShiftMeta {
    /// How much of the centroid is taken away (0 = none, 1 = all).
    pub strength: f32,
    /// How many requests the centroid averages.
    pub requests: u32,
    /// One value per tools row (in row order).
    pub tools: Vec<f32>,
    /// One value per skills row (in row order).
    pub skills: Vec<f32>,
}

/// The first selection builder version ([`SelectionMeta::builder_version`]) whose mode margin is
/// a lead between the modes' centroids (the normalised mean of a mode's description and
/// examples); older sections measured it between each mode's best row, and are read that way.
pub const MODE_CENTROIDS_SINCE: u32 = 12;

/// The first selection builder version whose thinking modes' margin (the `thinking` section,
/// written by the same build) is a lead between the thinking modes' centroids.
pub const THINKING_CENTROIDS_SINCE: u32 = 13;

impl SelectionMeta {
    /// Whether the semantic mode step ranks modes by their centroids
    /// ([`MODE_CENTROIDS_SINCE`]), the scale its margin was measured on.
    pub fn modes_by_centroid(&self) -> bool {
        self.builder_version >= MODE_CENTROIDS_SINCE
    }

    /// Whether the thinking modes' semantic fallback ranks them by their centroids
    /// ([`THINKING_CENTROIDS_SINCE`]).
    pub fn thinking_by_centroid(&self) -> bool {
        self.builder_version >= THINKING_CENTROIDS_SINCE
    }

    /// Decodes the section as this version writes it, or as versions 3 to 21 did (then with no
    /// servers). Each layout decodes only its own bytes, so trying both is unambiguous.
    pub fn decode_any(bytes: &[u8]) -> std::result::Result<Self, String> {
        Self::decode(bytes).or_else(|err| {
            let v: SelectionMetaV21 = decode_whole(bytes).ok_or(err)?;
            Ok(Self {
                builder_version: v.builder_version,
                tools_lexical: v.tools_lexical,
                skills_lexical: v.skills_lexical,
                tools: v.tools,
                skills: v.skills,
                mode: v.mode,
                out_of_mode_penalty: v.out_of_mode_penalty,
                hints: v.hints,
                servers: ToolServers::default(),
            })
        })
    }
}

bincode_codec!(IndexMeta, "metadata");
bincode_codec!(CascadeMeta, "cascade metadata");
bincode_codec!(SelectionMeta, "selection metadata");
bincode_codec!(QueryShiftMeta, "query shift metadata");

/// The off-topic check (the `off_topic` section, version 16 on, only beside a selection
/// section): general topics no ordinary catalog serves (jokes, trivia, recipes, ...), embedded
/// as catalog documents. A task whose best general topic beats its best tools or skills row by
/// `margin` (raw cosines) is not about the catalog, and gets neither. Topics the catalog itself
/// serves were left out at build time (`covered`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffTopicMeta {
    /// How far the best general topic must beat the catalog's best row to close selection.
    pub margin: f32,
    /// Name of each kept topic, in row order.
    pub names: Vec<String>,
    /// The kept topics' unit rows, `names.len() * dim` floats, row-major.
    pub rows: Vec<f32>,
    /// Topics left out because the catalog serves them.
    pub covered: Vec<String>,
}

bincode_codec!(OffTopicMeta, "off-topic metadata");

/// The language shift (the `language_shift` section, version 18 on, only beside a selection
/// section). A multilingual model puts a task in one language a common offset away from the
/// same task in another, so a Spanish task scores an English catalog's rows through that
/// offset. The builder embeds ordinary requests per language as tasks and keeps each
/// language's centroid; the router takes a task's language as its nearest centroid and, when it
/// is not the catalog's, scores the tools with `task + strength * ramp * (catalog centroid -
/// task language centroid)`, where `ramp` grows from 0 to 1 as the task's language beats the
/// catalog's by up to `full_margin` (cosines with the unit centroids): an English task read
/// as Spanish by a hair is left as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LanguageShiftMeta {
    /// How far the task is moved (1 = the whole offset between the two centroids).
    pub strength: f32,
    /// The margin of the task's language over the catalog's at which the whole strength applies.
    pub full_margin: f32,
    /// Language codes ("en", "es", ...), in centroid order.
    pub languages: Vec<String>,
    /// How many requests each centroid averages, in centroid order.
    pub requests: Vec<u32>,
    /// The centroids, not normalised, `languages.len() * dim` floats, row-major.
    pub centroids: Vec<f32>,
    /// The catalog's language (an index into `languages`); `None`: not clear from its texts, and
    /// no task is shifted.
    pub catalog_language: Option<u32>,
    /// Languages whose tasks are never moved, whatever the catalog's language (codes among
    /// `languages`; version 21 on). The model's setting: multilingual-e5 matches English
    /// requests with a catalog in any language best as they are.
    pub unmoved: Vec<String>,
}

bincode_codec!(LanguageShiftMeta, "language shift metadata");

/// [`LanguageShiftMeta`] as versions 18 to 20 wrote it, before the unmoved languages.
#[derive(Deserialize)]
struct LanguageShiftMetaV20 {
    strength: f32,
    full_margin: f32,
    languages: Vec<String>,
    requests: Vec<u32>,
    centroids: Vec<f32>,
    catalog_language: Option<u32>,
}

impl LanguageShiftMeta {
    /// What a version 18 to 20 section leaves unmoved: English, as the router has treated every
    /// such index since English tasks stopped moving (session 55), before the setting was the
    /// model's and written into the index.
    pub const UNMOVED_BEFORE_V21: &'static str = "en";

    /// Decodes the section as this version writes it, or as versions 18 to 20 did (then with
    /// English unmoved, [`Self::UNMOVED_BEFORE_V21`]). Each layout decodes only its own bytes
    /// (`decode` refuses trailing or missing bytes), so trying both is unambiguous.
    pub fn decode_any(bytes: &[u8]) -> std::result::Result<Self, String> {
        Self::decode(bytes).or_else(|err| match decode_whole::<LanguageShiftMetaV20>(bytes) {
            Some(v) => Ok(Self {
                strength: v.strength,
                full_margin: v.full_margin,
                languages: v.languages,
                requests: v.requests,
                centroids: v.centroids,
                catalog_language: v.catalog_language,
                unmoved: vec![Self::UNMOVED_BEFORE_V21.to_string()],
            }),
            None => Err(err),
        })
    }
}

/// How one mode's examples are phrased: how many there are and how many ask a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeQuestionCount {
    /// The mode's examples.
    pub examples: u32,
    /// Those of them that ask a question.
    pub questions: u32,
}

/// How each mode's examples are phrased (optional section, version 10 on, only beside a
/// selection section). When the semantic mode guess is not confident and the task asks a
/// question while the default mode's examples ask none, the router takes the best of the modes
/// whose examples do ask questions: a catalog that writes its lookup mode in questions and its
/// default mode in commands says which mode questions belong to, in any domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeQuestionsMeta {
    /// Version of the question rules that counted them (`switchyard_lexical`'s
    /// `QUESTION_RULES_VERSION`); a router reads counts made by its own rules only.
    pub rules_version: u32,
    /// One count per mode, in the order of [`IndexMeta::modes`].
    pub modes: Vec<ModeQuestionCount>,
}

bincode_codec!(ModeQuestionsMeta, "mode questions metadata");

/// The catalog's own prompt texts (optional section, version 13 on), kept with its index so an
/// assembly uses the constitution of the catalog it routes for, wherever it runs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PromptsMeta {
    /// The manifest folder's `constitution.md`, when it has one.
    pub constitution: Option<String>,
}

bincode_codec!(PromptsMeta, "prompts metadata");

/// Late interaction (optional section, version 11 on, only beside a selection section): the
/// states of each tools and skills item's content tokens, kept from the forward passes that
/// embedded its rows. The router compares the task's token states with them (for each task
/// token, its best cosine with any of the item's tokens, averaged with IDF weights) and gives
/// that late score `blend` of the dense side of the fusion. Pooling averages a short task and a
/// one-line description into vectors that can disagree where single words agree ("reembolso"
/// and "refund"); token states keep those words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LateMeta {
    /// Share of the dense side given to the late score (0..=1; the rest stays the cosine).
    pub blend: f32,
    /// Width of each state (the index's dimension).
    pub dim: u32,
    /// The tools' token states, item by item in catalog order.
    pub tools: LateItems,
    /// The skills' token states, item by item in catalog order.
    pub skills: LateItems,
}

/// The token states of one kind of item.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LateItems {
    /// Item `i`'s tokens are `offsets[i]..offsets[i + 1]` (one more offset than items).
    pub offsets: Vec<u32>,
    /// Each token's unit-length state, rounded to `i8` after dividing by its scale
    /// (`dim` values per token); read in place from a mapped index.
    pub states: LateStates,
    /// One scale per token: the state is `scale * states[token]`.
    pub scales: Vec<f32>,
    /// `(token id, number of items holding it)`, sorted by id: a token every item holds says
    /// little about any of them.
    pub doc_freq: Vec<(u32, u32)>,
    /// Each token's id, one per scale (version 12 on, stored in the `late_ids` section; empty
    /// in an older index): the router weighs an item's own tokens by how rare they are.
    #[serde(skip)]
    pub ids: Vec<u32>,
}

impl LateItems {
    /// Number of items.
    pub fn items(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// How many items hold token `id` (0 for a token no item holds).
    pub fn doc_freq(&self, id: u32) -> u32 {
        self.doc_freq.binary_search_by_key(&id, |&(t, _)| t).map_or(0, |i| self.doc_freq[i].1)
    }

    /// A state as it is stored: `state ≈ scale * values`, the largest magnitude at 127 (a zero
    /// state gives scale 0). The router rounds a task's states the same way.
    #[allow(clippy::cast_possible_truncation)] // rounded and clamped to the i8 range first
    pub fn quantize(state: &[f32]) -> (f32, Vec<i8>) {
        let peak = state.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        if peak == 0.0 {
            return (0.0, vec![0; state.len()]);
        }
        let scale = peak / 127.0;
        (scale, state.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8).collect())
    }
}

bincode_codec!(LateMeta, "late interaction metadata");

/// The `late_ids` section (version 12 on, only beside `late`): the token id of each state of
/// [`LateMeta`], tools then skills. The index moves them into [`LateItems::ids`] on open.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LateIdsMeta {
    /// One id per tools token, in the order of [`LateMeta::tools`]' states.
    pub tools: Vec<u32>,
    /// One id per skills token, in the order of [`LateMeta::skills`]' states.
    pub skills: Vec<u32>,
}

bincode_codec!(LateIdsMeta, "late interaction token ids");

/// The query adapter the index was built with (optional section, version 4 on): the tools and
/// skills rows are stored already mapped by it, and the router maps the task vector with it
/// before scoring them. See `switchyard-adapter` for the map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdapterMeta {
    /// The adapter's id (the first 16 hex digits of its file's SHA-256).
    pub id: String,
    /// Rank of the residual.
    pub rank: u32,
    /// `dim × rank`, row-major: the residual's output side.
    pub u: Vec<f32>,
    /// `dim × rank`, row-major: the residual's input side.
    pub v: Vec<f32>,
    /// The names of the sets it was trained on.
    pub trained_on: Vec<String>,
    /// Its training record as JSON (the adapter file's info).
    pub info_json: String,
}
bincode_codec!(AdapterMeta, "adapter metadata");

/// One thinking mode (see `switchyard_manifest::ThinkingMode`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingModeMeta {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Keyword rules (lowercase; a trailing `*` matches inflections).
    pub keywords: Vec<String>,
    /// The scaffold, with `{problem}` where the problem goes.
    pub scaffold: String,
    /// The scaffold's Success Criteria items.
    pub criteria: Vec<String>,
    /// First row of this mode in the `thinking_rows` matrix.
    pub first_row: u32,
    /// Rows: the card, then the examples.
    pub row_count: u32,
}

impl ThinkingModeMeta {
    /// The scaffold with the problem filled in.
    pub fn render(&self, problem: &str) -> String {
        self.scaffold.replace(THINKING_PLACEHOLDER, problem.trim())
    }
}

/// Where a scaffold takes the problem (the manifest crate checks every scaffold has it).
pub const THINKING_PLACEHOLDER: &str = "{problem}";

/// The thinking modes of an index (the `thinking` section, version 5 on), sorted by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingMeta {
    /// The modes.
    pub modes: Vec<ThinkingModeMeta>,
    /// The mode used when nothing else decides.
    pub default_mode: String,
    /// The semantic fallback's calibration, measured like the mode step's (leave-one-out over
    /// the modes' examples); no margin means the fallback never decides.
    pub calibration: ModeCalibration,
}
bincode_codec!(ThinkingMeta, "thinking metadata");
