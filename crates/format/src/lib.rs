//! The switchyard index file: one little-endian file, read through `memmap2` without copying.
//!
//! # Layout
//!
//! **Header** (64 bytes at offset 0):
//!
//! | offset | field | type | value |
//! |---|---|---|---|
//! | 0 | magic | `[u8; 8]` | `b"SWYDIDX\0"` |
//! | 8 | format_version | u32 | [`FORMAT_VERSION`] |
//! | 12 | header_len | u32 | 64 |
//! | 16 | flags | u64 | bit 0: rows unit-normalised; other bits are an error |
//! | 24 | section_count | u32 | at most [`MAX_SECTIONS`] |
//! | 28 | dim | u32 | embedding width |
//! | 32 | model_fingerprint | `[u8; 16]` | see `switchyard_embed::Fingerprint` |
//! | 48 | file_len | u64 | the file's exact length |
//! | 56 | reserved | u32 | 0 |
//! | 60 | header_crc32 | u32 | crc32 of bytes 0..60 |
//!
//! **Section table** at byte 64: `section_count` entries of 64 bytes,
//! `{kind u32, dtype u32, offset u64, len u64, rows u64, cols u32, stride u32, crc32 u32, reserved [u8; 20]}`.
//! Kinds ([`SectionKind`]): `tools`, `skills`, `modes`, `injections`, `benign` (f32 matrices),
//! `strings` (UTF-8 row texts), `string_offsets` (u32, n + 1 entries), `meta` (bincode
//! [`IndexMeta`]), then, optional from version 2 on, `static_rows` (f32 matrix) and `cascade`
//! (bincode [`CascadeMeta`]): the static embedding space of the router's cascade, then, optional
//! from version 3 on, `selection` (bincode [`SelectionMeta`]: lexical statistics, fusion
//! weights, gates, the mode step's calibration and, from version 22 on, the MCP server of each
//! tool), then, optional from version 4 on, `screen`
//! (bincode [`ScreenMeta`]: the learned injection head, its threshold and the windowing of
//! untrusted entries) and `adapter` (bincode [`AdapterMeta`]: the query adapter the tools and
//! skills rows were mapped with), then, optional from version 5 on, `thinking_rows` (f32 matrix)
//! and `thinking` (bincode [`ThinkingMeta`]: thinking modes, keyword rules, scaffolds and the
//! semantic fallback's calibration), then, optional from version 6 on, `screen_lexical` (bincode
//! [`LexicalScreenMeta`]: the screen's lexical head, only beside `screen`), then, optional from
//! version 7 on, `query_shift` (bincode [`QueryShiftMeta`]: what any request scores against each
//! tools and skills row, only beside `selection`), then, optional from version 8 on,
//! `screen_triage` (bincode [`ScreenTriageMeta`]: the lexical logit under which a window is
//! cleared without an embedding, only beside `screen_lexical`; version 17 added the sentence
//! pieces' threshold at the end, and an older section still reads, with none), then, optional from version 9
//! on, `screen_families` (bincode [`ScreenFamiliesMeta`]: heads trained on one family of
//! attacks each, only beside `screen`), then, optional from version 10 on, `mode_questions`
//! (bincode [`ModeQuestionsMeta`]: how many of each mode's examples ask a question, only beside
//! `selection`), then, optional from version 11 on, `late` (bincode [`LateMeta`]: each tools and
//! skills item's content-token states for late interaction, only beside `selection`), then,
//! optional from version 12 on, `late_ids` (bincode [`LateIdsMeta`]: the token id of each of
//! those states, only beside `late`), then, optional from version 13 on, `prompts` (bincode
//! [`PromptsMeta`]: the catalog's constitution), then, optional from version 14 on,
//! `screen_request` (bincode [`ScreenRequestMeta`]: the request contrast, only beside `screen`;
//! version 15 added its overlap weight and reach at the end, and a version 14 section still
//! reads, with no overlap weight), then, optional from version 16 on, `off_topic` (bincode
//! [`OffTopicMeta`]: general topics a task may be nearer to than to any item, only beside
//! `selection`), then, optional from version 18 on, `language_shift` (bincode
//! [`LanguageShiftMeta`]: ordinary requests' centroid per language and the catalog's language,
//! only beside `selection`; version 21 added the languages never moved at the end, and a
//! version 18 to 20 section still reads, with English unmoved), then, optional from version 19 on, `screen_family_hidden` (bincode
//! [`ScreenFamilyHiddenMeta`]: the family heads' hidden layers, only beside `screen_families`),
//! then, optional from version 20 on, `screen_layer` (bincode [`ScreenLayerMeta`]: the middle
//! layer the screen's heads read beside the final vector, only beside `screen`; the heads'
//! embedding weights then span twice the width).
//! Sections are written in that order. Version 1 files
//! (no cascade), version 2 files (no selection section), version 3 files (no screen section),
//! version 4 files (no thinking modes), version 5 files (no lexical screen), version 6 files
//! (no query shift), version 7 files (no screen triage), version 8 files (no family heads) and
//! version 9 files (no mode questions), version 10 files (no late interaction), version 11
//! files (late interaction without token ids), version 12 files (no prompts) and version 13
//! files (no request contrast), version 15 files (no off-topic check) and version 16 files
//! (no sentence pieces), version 17 files (no language shift), version 18 files (no family
//! hidden layers), version 19 files (no middle layer), version 18 to 20 files (a language
//! shift without its unmoved languages: English is) and version 3 to 21 files (a selection
//! section without the tools' servers) still open.
//!
//! **Payloads**: every offset is a multiple of 64; matrices are row-major f32 with `stride` =
//! `dim` rounded up to 16 floats, so each row starts on a 64-byte boundary; all padding is zero.
//!
//! # Validation on open, in order (each failure is its own [`FormatError`] variant)
//! 1. length >= 64, magic, version within [`OLDEST_SUPPORTED_VERSION`]`..=`[`FORMAT_VERSION`];
//! 2. header_len, header crc, flags, file_len == actual length, section_count <= 64;
//! 3. each section: known kind and dtype, offset % 64 == 0, offset + len inside the file
//!    (checked arithmetic), matrices `len == rows * stride * 4` and `cols == dim`, no duplicate
//!    kinds, no overlaps;
//! 4. payload crc32 and finite matrices (skip with [`OpenOptions::verify_payload`]`(false)`);
//! 5. string offsets and metadata consistent with the matrices.
//!
//! Writes are atomic (temp file, fsync, rename, folder fsync) and deterministic: the same
//! content gives the same bytes.
//!
//! ```
//! use switchyard_format::*;
//!
//! let meta = IndexMeta {
//!     model: ModelMeta { name: "m".into(), prefix: String::new(), dim: 2, max_tokens: 8,
//!                        pooling: "mean".into(), fingerprint: "00".repeat(16) },
//!     manifest_hash: String::new(), tools: vec![ItemMeta { name: "t".into(), description: "d".into(),
//!         modes: vec!["any".into()], first_row: 0, row_count: 1, parameters: None, body: None }],
//!     skills: vec![], modes: vec![], default_mode: "act".into(), injections: vec![], benign: vec![],
//!     thresholds: Thresholds { tool_min: 0.3, skill_min: 0.3, mode_min: 0.3, injection: 0.7,
//!                              memory_min: 0.3, unrelated_mean: 0.1, related_mean: 0.6 },
//!     string_base: vec![0, 1, 1, 1, 1],
//! };
//! let mut w = IndexWriter::new(2, [0; 16]);
//! w.matrix(SectionKind::Tools, vec![0.6, 0.8])?.strings(vec!["d".into()]).meta(&meta)?;
//! let index = Index::from_bytes(&w.to_bytes()?, &OpenOptions::new())?;
//! assert_eq!(index.matrix(SectionKind::Tools).row(0), &[0.6, 0.8]);
//! assert_eq!(index.row_text(SectionKind::Tools, 0), "d");
//! # Ok::<(), FormatError>(())
//! ```
#![deny(missing_docs)]
#![warn(clippy::cast_possible_truncation)]

#[cfg(target_endian = "big")]
compile_error!(
    "switchyard-format reads little-endian files through zero-copy views; big-endian hosts are not supported"
);

pub use crate::error::{FormatError, Result};
pub use crate::index::{Header, Index, OpenOptions, Section, StaticSpace};
pub use crate::layout::{
    ALIGN, Dtype, FLAG_ROWS_NORMALISED, FORMAT_VERSION, HEADER_LEN, MAGIC, MAX_SECTIONS,
    OLDEST_SUPPORTED_VERSION, SECTION_ENTRY_LEN, SectionKind, align_up, stride_for,
};
pub use crate::matrix::{MatrixView, dot, dot_naive};
pub use crate::meta::{
    AdapterMeta, CascadeMeta, FamilyHiddenLayer, FusionMeta, IndexMeta, ItemMeta,
    LanguageShiftMeta, LateIdsMeta, LateItems, LateMeta, LateStates, LexicalMeta,
    LexicalScreenMeta, MIN_MODE_EXAMPLES, MODE_CENTROIDS_SINCE, ModeCalibration, ModeMeta,
    ModeQuestionCount, ModeQuestionsMeta, ModelMeta, OffTopicMeta, PatternMeta, PromptsMeta,
    QueryShiftMeta, ScreenFamiliesMeta, ScreenFamilyHead, ScreenFamilyHiddenMeta, ScreenHead,
    ScreenLayerMeta, ScreenMeta, ScreenRequestMeta, ScreenTriageMeta, SelectionMeta,
    THINKING_CENTROIDS_SINCE, THINKING_PLACEHOLDER, ThinkingMeta, ThinkingModeMeta, Thresholds,
    ToolServers, WindowingMeta,
};
pub use crate::writer::{IndexWriter, write_atomic};

mod error;
mod index;
mod late_states;
mod layout;
mod matrix;
mod meta;
mod parse;
mod screen_meta;
mod section_checks;
mod writer;
