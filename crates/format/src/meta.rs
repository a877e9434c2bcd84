//! The metadata section: everything the runtime needs besides the matrices, so it never parses
//! manifests. Encoded with bincode 2 (standard config) through serde.

use serde::{Deserialize, Serialize};

/// The model an index was built with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMeta {
    /// Model name (`minilm`, `e5-small`, a folder or repo id).
    pub name: String,
    /// Prefix prepended to every text.
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

bincode_codec!(IndexMeta, "metadata");
bincode_codec!(CascadeMeta, "cascade metadata");
