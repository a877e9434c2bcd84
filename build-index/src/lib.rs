//! The offline builder: a manifest folder and an embedding model in, one index file out.
//!
//! ```no_run
//! use switchyard_build_index::{BuildOptions, build_to_file};
//! let embedder = switchyard_embed::load(switchyard_embed::DEFAULT_MODEL)?;
//! let outcome = build_to_file(
//!     std::path::Path::new("manifests"),
//!     std::path::Path::new("switchyard.idx"),
//!     &embedder,
//!     &BuildOptions::default(),
//! )?;
//! println!("{outcome:?}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Builds are byte-reproducible: items are sorted by name, texts are embedded in a fixed order
//! and batching, and nothing time- or host-dependent is written.
#![deny(missing_docs)]

mod adapter_warning;
mod cascade;
mod family;
mod late;
pub use crate::late::LATE_STATE_BUDGET;
mod general_topics;
mod language_shift;
mod logistic;
mod mlp;
mod off_topic;
mod query_shift;
mod request;
pub mod rng;
mod rows;
mod screen;
mod screen_rows;
mod selection;
mod sentences;
mod servers;
#[cfg(test)]
mod test_models;
mod thinking;
mod thresholds;
mod train_file;
mod triage;
mod up_to_date;
pub use up_to_date::{
    families_match, language_shift_matches, late_matches, mode_questions_match, off_topic_matches,
    screen_code_matches,
};
mod vector_cache;

pub use crate::cascade::{DEFAULT_MARGIN, DEFAULT_MIN_COVERAGE};
pub use crate::general_topics::GENERAL_TOPICS_TRANSLATED;
pub use crate::language_shift::{REQUESTS_BY_LANGUAGE, catalog_language};
pub use crate::off_topic::{COVERAGE_SLACK, GENERAL_TOPICS};
pub use crate::query_shift::{ORDINARY_REQUESTS, QUERY_SHIFT_STRENGTH};
pub use crate::rows::{
    TextKind, embed_all, embed_all_as, embed_mixed, embed_screen, row_kinds, row_texts,
};
pub use crate::screen::{
    DEFAULT_FAMILY_FPR, DEFAULT_FAMILY_HIDDEN, DEFAULT_L2, DEFAULT_TARGET_FPR, MIN_HEAD_ROWS,
    SCREEN_BUILDER_VERSION, ScreenOptions, windowing_meta,
};
pub use crate::selection::{
    BUILDER_VERSION, DEFAULT_LEXICAL_WEIGHT, LEXICAL_GATE, MIN_GATE_Z, MODE_PRECISION, OFF_TOPIC,
    OUT_OF_MODE_PENALTY,
};
pub use crate::servers::SERVER_WEIGHT;
pub use crate::thresholds::derive_thresholds;
pub use crate::train_file::{
    BUILT_IN_DOCUMENTS_FILE, CATALOG_DOCUMENTS_FILE, CATALOG_TRAIN_FILE, LabelledText,
    ScreenTraining, TrainTexts, load_injection_train,
};
pub use crate::triage::DEFAULT_TRIAGE_MAX_MISS;
pub use crate::vector_cache::{CacheUse, VectorCache};

use std::path::{Path, PathBuf};
use switchyard_adapter::Adapter;
use switchyard_embed::Embedder;
use switchyard_format::{
    Index, IndexMeta, IndexWriter, ItemMeta, ModeMeta, ModelMeta, OpenOptions, PatternMeta,
    SectionKind,
};
use switchyard_manifest::Catalog;

/// What can stop a build.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The manifests are invalid.
    #[error(transparent)]
    Manifest(#[from] switchyard_manifest::ManifestError),
    /// The model failed.
    #[error(transparent)]
    Embed(#[from] switchyard_embed::EmbedError),
    /// The index could not be written.
    #[error(transparent)]
    Format(#[from] switchyard_format::FormatError),
    /// A `--injection-train` file is unreadable or has a bad line (line 0: the whole file).
    #[error("injection training file {path}, line {line}: {message}")]
    TrainFile {
        /// The file.
        path: PathBuf,
        /// The line (1-based; 0 for the whole file).
        line: usize,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The query adapter cannot be used with this model.
    #[error(transparent)]
    Adapter(#[from] switchyard_adapter::AdapterError),
    /// A setting in the model's `model.toml` that this builder cannot use.
    #[error("model {model}: model.toml field `{field}`: {message}")]
    ModelSetting {
        /// The model.
        model: String,
        /// The field (`language_shift.unmoved`).
        field: &'static str,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The model returned vectors of the wrong width.
    #[error("model {model} returned a vector of width {found} for {text:?}, expected {expected}")]
    BadVector {
        /// The model.
        model: String,
        /// The text.
        text: String,
        /// Its width.
        expected: usize,
        /// What came back.
        found: usize,
    },
}

/// The result type of this crate.
pub type Result<T, E = BuildError> = std::result::Result<T, E>;

/// Options for [`build_to_file`].
#[derive(Default)]
pub struct BuildOptions {
    /// Rebuild even if the existing file matches the manifests and model.
    pub force: bool,
    /// Called with (texts embedded, total) as batches finish.
    pub progress: Option<Box<dyn Fn(usize, usize) + Send + Sync>>,
    /// The learned screen's settings and extra labelled rows (`--injection-train`).
    pub screen: ScreenTraining,
    /// The query adapter to map tools and skills rows with (`--adapter FILE`), and its file.
    pub adapter: Option<(PathBuf, Adapter)>,
    /// Screen with the catalog's own attack patterns only: a catalog that brings none is then
    /// screened by the contrast rule alone, which lets everything through. Off by default: such
    /// a catalog's screen learns switchyard's built-in attacks
    /// ([`Catalog::use_built_in_attacks`]).
    pub own_attacks_only: bool,
    /// Labelled rows the screen also trains on when it learns the built-in attacks: the default
    /// catalog's `injection-train.jsonl`, which `models/provision.py` writes from public data
    /// (the command finds it beside the provisioned models). Without them the built-in screen
    /// drops 10-19% of ordinary requests (`benches/RESULTS.md`, session 28).
    pub built_in_train: Option<PathBuf>,
}

impl std::fmt::Debug for BuildOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildOptions")
            .field("force", &self.force)
            .field("screen", &self.screen)
            .field("adapter", &self.adapter.as_ref().map(|(p, a)| (p, a.id())))
            .field("own_attacks_only", &self.own_attacks_only)
            .field("built_in_train", &self.built_in_train)
            .finish_non_exhaustive()
    }
}

/// What [`build_to_file`] did.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum BuildOutcome {
    /// The file already matched: nothing was done.
    UpToDate {
        /// The index.
        path: PathBuf,
        /// Its manifest hash.
        manifest_hash: String,
    },
    /// A new file was written.
    Built(Box<BuildReport>),
}

/// Counts and timings of a build.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BuildReport {
    /// The index written.
    pub path: PathBuf,
    /// Model name.
    pub model: String,
    /// Model fingerprint (hex).
    pub fingerprint: String,
    /// Manifest hash.
    pub manifest_hash: String,
    /// Rows per matrix.
    pub rows: std::collections::BTreeMap<String, usize>,
    /// File size.
    pub bytes: usize,
    /// Thresholds derived from the catalog.
    pub thresholds: switchyard_format::Thresholds,
    /// The learned screen (or why there is none).
    pub screen: switchyard_format::ScreenMeta,
    /// Whether the screen has a lexical head beside its embedding head.
    pub lexical_screen: bool,
    /// Which windows of an untrusted entry need an embedding (beside a lexical head).
    pub triage: Option<switchyard_format::ScreenTriageMeta>,
    /// The screen's family heads.
    pub families: Option<switchyard_format::ScreenFamiliesMeta>,
    /// The screen's request contrast, or why it has none.
    pub request: std::result::Result<switchyard_format::ScreenRequestMeta, String>,
    /// The id of the query adapter the tools and skills rows were mapped with.
    pub adapter: Option<String>,
    /// Whether the catalog brought no attack patterns and the screen learned the built-in ones.
    pub built_in_attacks: bool,
    /// Whether the catalog brought no thinking modes and the index got the built-in ones
    /// ([`Catalog::use_built_in_thinking`]).
    pub built_in_thinking: bool,
    /// Manifest warnings.
    pub warnings: Vec<String>,
    /// Time spent embedding.
    pub embed_ms: f64,
    /// Total build time.
    pub total_ms: f64,
}

/// Builds the index bytes for a catalog, with the default screen training (catalog only).
pub fn build_bytes(
    catalog: &Catalog,
    embedder: &dyn Embedder,
    progress: Option<&(dyn Fn(usize, usize) + Send + Sync)>,
) -> Result<(Vec<u8>, IndexMeta, f64)> {
    let built = build_bytes_with(catalog, embedder, &ScreenTraining::default(), None, progress)?;
    Ok((built.bytes, built.meta, built.embed_ms))
}

/// What [`build_bytes_with`] gives.
#[derive(Debug, Clone)]
pub struct BuiltBytes {
    /// The index file's bytes.
    pub bytes: Vec<u8>,
    /// Its metadata section.
    pub meta: IndexMeta,
    /// Its screen section.
    pub screen: switchyard_format::ScreenMeta,
    /// Whether it has a lexical screen section.
    pub lexical_screen: bool,
    /// Its screen triage section.
    pub triage: Option<switchyard_format::ScreenTriageMeta>,
    /// Its screen family heads section.
    pub families: Option<switchyard_format::ScreenFamiliesMeta>,
    /// Its request contrast section, or why it has none.
    pub request: std::result::Result<switchyard_format::ScreenRequestMeta, String>,
    /// Time spent embedding the catalog.
    pub embed_ms: f64,
}

/// Builds the index bytes for a catalog with the given screen training; also returns the
/// screen section written.
pub fn build_bytes_with(
    catalog: &Catalog,
    embedder: &dyn Embedder,
    screen_training: &ScreenTraining,
    adapter: Option<&Adapter>,
    progress: Option<&(dyn Fn(usize, usize) + Send + Sync)>,
) -> Result<BuiltBytes> {
    let info = embedder.info().clone();
    if let Some(a) = adapter {
        a.check_model(Path::new(&a.id()), &info.name, info.fingerprint.0, info.dim)?;
    }
    let groups = row_texts(catalog);
    let all: Vec<String> = groups.iter().flatten().cloned().collect();
    let kinds: Vec<TextKind> = row_kinds(catalog).into_iter().flatten().collect();
    let t0 = std::time::Instant::now();
    tracing::info!(rows = all.len(), model = %info.name, "embedding the catalog");
    let vectors = embed_mixed(embedder, &all, &kinds, progress)?;
    let embed_ms = t0.elapsed().as_secs_f64() * 1e3;

    let mut matrices: Vec<Vec<f32>> = Vec::new();
    let mut string_base = Vec::new();
    let mut at = 0usize;
    for g in &groups {
        string_base.push(at as u32);
        matrices.push(vectors[at..at + g.len()].iter().flatten().copied().collect());
        at += g.len();
    }

    let items = |spans: Vec<(usize, &str, &str, &[String])>| -> Vec<(u32, u32)> {
        let mut first = 0u32;
        spans
            .into_iter()
            .map(|(rows, ..)| {
                let r = (first, rows as u32);
                first += rows as u32;
                r
            })
            .collect()
    };
    let tool_spans = items(
        catalog
            .tools
            .iter()
            .map(|t| (t.texts().len(), t.name.as_str(), t.description.as_str(), t.modes.as_slice()))
            .collect(),
    );
    let skill_spans = items(
        catalog
            .skills
            .iter()
            .map(|t| (t.texts().len(), t.name.as_str(), t.description.as_str(), t.modes.as_slice()))
            .collect(),
    );
    let mode_spans = items(
        catalog
            .modes
            .iter()
            .map(|m| (m.texts().len(), m.name.as_str(), m.description.as_str(), &[][..]))
            .collect(),
    );

    let tools: Vec<ItemMeta> = catalog
        .tools
        .iter()
        .zip(&tool_spans)
        .map(|(t, &(first_row, row_count))| ItemMeta {
            name: t.name.clone(),
            description: t.description.clone(),
            modes: t.modes.clone(),
            first_row,
            row_count,
            // serde_json::Value maps are BTreeMaps here, so the text is canonical.
            parameters: t.parameters.as_ref().map(|p| p.to_string()),
            body: None,
        })
        .collect();
    let skills: Vec<ItemMeta> = catalog
        .skills
        .iter()
        .zip(&skill_spans)
        .map(|(s, &(first_row, row_count))| ItemMeta {
            name: s.name.clone(),
            description: s.description.clone(),
            modes: s.modes.clone(),
            first_row,
            row_count,
            parameters: None,
            body: s.body.clone(),
        })
        .collect();
    let modes: Vec<ModeMeta> = catalog
        .modes
        .iter()
        .zip(&mode_spans)
        .map(|(m, &(first_row, row_count))| ModeMeta {
            name: m.name.clone(),
            description: m.description.clone(),
            keywords: m.keywords.clone(),
            base_tools: m.base_tools.clone(),
            base_skills: m.base_skills.clone(),
            rules: m.rules.clone(),
            first_row,
            row_count,
        })
        .collect();

    let dim = info.dim;
    // Tools without examples are probed by their names when deriving thresholds (not stored).
    let name_texts: Option<Vec<String>> = catalog
        .tools
        .iter()
        .any(|t| t.examples.is_empty())
        .then(|| catalog.tools.iter().map(|t| t.name_words()).collect());
    let tool_names: Option<Vec<f32>> = match &name_texts {
        Some(names) => {
            let rows: Vec<f32> = embed_all(embedder, names, None)?.into_iter().flatten().collect();
            // Probes are query-like: mapped like a task.
            Some(match adapter {
                Some(a) => a.apply_rows(&rows),
                None => rows,
            })
        }
        None => None,
    };
    let spans_of =
        |v: &[(u32, u32)]| v.iter().map(|&(a, b)| (a as usize, b as usize)).collect::<Vec<_>>();
    let (tool_spans_u, skill_spans_u, mode_spans_u) =
        (spans_of(&tool_spans), spans_of(&skill_spans), spans_of(&mode_spans));
    // With an adapter, tools and skills are scored in its space: their query-like rows (the
    // examples; every row for a both-sides adapter) are stored mapped, and the router maps
    // the task vector. Modes, patterns and the screen keep the model's vectors.
    let raw_items = adapter.map(|a| {
        let raw = [matrices[0].clone(), matrices[1].clone()];
        matrices[0] = adapt_rows(a, &raw[0], &tool_spans_u, dim);
        matrices[1] = adapt_rows(a, &raw[1], &skill_spans_u, dim);
        raw
    });
    let thresholds = derive_thresholds(
        dim,
        (&matrices[0], &tool_spans_u),
        (&matrices[1], &skill_spans_u),
        (&matrices[2], &mode_spans_u),
        &matrices[3],
        tool_names.as_deref(),
    );
    let off_topic_texts: Vec<String> = selection::OFF_TOPIC.iter().map(|s| s.to_string()).collect();
    let off_topic: Vec<f32> =
        embed_all(embedder, &off_topic_texts, None)?.into_iter().flatten().collect();
    let item_off_topic = adapter.map(|a| a.apply_rows(&off_topic));
    let shift = query_shift::section(embedder, adapter, &matrices, &tool_spans_u, dim)?;
    let selection = selection::selection(&selection::Inputs {
        catalog,
        dim,
        tools: (&matrices[0], &tool_spans_u),
        skills: (&matrices[1], &skill_spans_u),
        modes: (&matrices[2], &mode_spans_u),
        off_topic: item_off_topic.as_deref().unwrap_or(&off_topic),
        shift: Some(&shift),
    });
    // The topics live in the model's space: an index whose items are in an adapter's has none.
    let general_topics = match adapter {
        // No section to leave topics out of, but a typo in `off_topic.toml` is still an error.
        Some(_) => off_topic::declared(&catalog.off_topic).map(|_| None)?,
        None => {
            // Each item's first row is its card.
            let card = |m: &[f32], spans: &[(usize, usize)]| -> Vec<Vec<f32>> {
                spans.iter().map(|&(first, _)| m[first * dim..(first + 1) * dim].to_vec()).collect()
            };
            let cards = [card(&matrices[0], &tool_spans_u), card(&matrices[1], &skill_spans_u)];
            let cards: Vec<&[f32]> = cards.iter().flatten().map(Vec::as_slice).collect();
            off_topic::section(
                embedder,
                &cards,
                language_shift::language_of(catalog),
                &catalog.off_topic,
            )?
        }
    };
    // The static space approximates the model's own vectors, not the adapter's: an index with
    // an adapter runs every task through the model, so no answer bypasses the adapter.
    let cascade = match adapter {
        Some(_) => None,
        None => cascade::distil(
            embedder,
            &cascade::Groups {
                tools: (&groups[0], &tool_spans_u),
                skills: (&groups[1], &skill_spans_u),
                modes: (&groups[2], &mode_spans_u),
                tool_names: name_texts.as_deref(),
            },
        )?,
    };

    let meta = IndexMeta {
        model: ModelMeta {
            name: info.name.clone(),
            prefix: info.prefix.clone(),
            dim: dim as u32,
            max_tokens: info.max_tokens as u32,
            pooling: info.pooling.as_str().to_string(),
            fingerprint: info.fingerprint.to_hex(),
        },
        manifest_hash: catalog.content_hash(),
        tools,
        skills,
        modes,
        default_mode: catalog.default_mode(),
        injections: catalog
            .patterns
            .iter()
            .map(|p| PatternMeta { lang: p.lang.clone(), category: p.category.clone() })
            .collect(),
        benign: catalog
            .benign
            .iter()
            .map(|b| PatternMeta { lang: b.lang.clone(), category: None })
            .collect(),
        thresholds,
        string_base,
    };
    // The screen lives in the model's space: it trains on the rows as the model gave them.
    let raw_matrices = raw_items.map(|[tools, skills]| {
        [tools, skills, matrices[2].clone(), matrices[3].clone(), matrices[4].clone()]
    });
    let screen = screen_rows::screen_section(
        embedder,
        screen_training,
        catalog,
        (raw_matrices.as_ref().map_or(&matrices[..], |m| &m[..]), &groups),
        (&off_topic, &off_topic_texts),
        dim,
        progress,
    )?;
    let mut w = IndexWriter::new(dim, info.fingerprint.0);
    for (kind, m) in SectionKind::MATRICES.into_iter().zip(matrices) {
        w.matrix(kind, m)?;
    }
    w.strings(all).meta(&meta)?;
    if let Some((rows, cascade)) = cascade {
        w.cascade(rows, &cascade)?;
    }
    w.selection(&selection)?
        .query_shift(&shift)?
        .mode_questions(&selection::mode_questions(catalog))?;
    if let Some(general_topics) = &general_topics {
        w.off_topic(general_topics)?;
    }
    if let Some(shift) = language_shift::section(embedder, catalog, adapter.is_some())? {
        w.language_shift(&shift)?;
    }
    if let Some(late) = late::section(embedder, catalog)? {
        w.late(&late)?;
    }
    let sections = screen.into_sections();
    let (screen, screen_lexical, triage) = (sections.screen, sections.lexical, sections.triage);
    w.screen(&screen)?;
    if let Some(lexical) = &screen_lexical {
        w.screen_lexical(lexical)?;
    }
    if let Some(triage) = &triage {
        w.screen_triage(triage)?;
    }
    if let Some(families) = &sections.families {
        w.screen_families(families)?;
    }
    if let Some(hidden) = &sections.family_hidden {
        w.screen_family_hidden(hidden)?;
    }
    if let Some(layer) = &sections.layer {
        w.screen_layer(layer)?;
    }
    if let Ok(request) = &sections.request {
        w.screen_request(request)?;
    }
    if let Some((rows, thinking)) = thinking::thinking_section(catalog, embedder)? {
        w.thinking(rows, &thinking)?;
    }
    if let Some(constitution) = &catalog.constitution {
        w.prompts(&switchyard_format::PromptsMeta { constitution: Some(constitution.clone()) })?;
    }
    if let Some(a) = adapter {
        w.adapter(&switchyard_format::AdapterMeta {
            id: a.id(),
            rank: a.rank as u32,
            u: a.u.clone(),
            v: a.v.clone(),
            trained_on: a.info.sets.iter().map(|s| s.name.clone()).collect(),
            info_json: serde_json::to_string(&a.info).unwrap_or_default(),
        })?;
    }
    let lexical = screen_lexical.is_some();
    let bytes = w.to_bytes()?;
    Ok(BuiltBytes {
        bytes,
        meta,
        screen,
        lexical_screen: lexical,
        triage,
        families: sections.families,
        request: sections.request,
        embed_ms,
    })
}

/// Maps the rows of items (`spans`: first row, row count) with the adapter: every row for a
/// both-sides adapter, else only the examples (each item's rows after its card).
fn adapt_rows(adapter: &Adapter, rows: &[f32], spans: &[(usize, usize)], dim: usize) -> Vec<f32> {
    if adapter.info.both_sides {
        return adapter.apply_rows(rows);
    }
    let mut out = rows.to_vec();
    let mut mapped = Vec::with_capacity(dim);
    for &(first, count) in spans {
        for r in first + 1..first + count {
            adapter.apply(&rows[r * dim..(r + 1) * dim], &mut mapped);
            out[r * dim..(r + 1) * dim].copy_from_slice(&mapped);
        }
    }
    out
}

/// Gives a catalog what `build_to_file` gives it before hashing and building: switchyard's
/// built-in attacks when it brings none (unless `own_attacks_only`) and built-in thinking modes
/// when it brings none. Returns whether it gave each; the index's manifest hash is the catalog's
/// hash after this.
pub fn give_built_ins(catalog: &mut Catalog, own_attacks_only: bool) -> Result<(bool, bool)> {
    let attacks = !own_attacks_only && catalog.use_built_in_attacks()?;
    let thinking = catalog.use_built_in_thinking()?;
    Ok((attacks, thinking))
}

/// Validates `manifests`, and unless `out` already holds an index of the same manifests and
/// model (and `force` is off), embeds and writes it atomically.
pub fn build_to_file(
    manifests: &Path,
    out: &Path,
    embedder: &dyn Embedder,
    options: &BuildOptions,
) -> Result<BuildOutcome> {
    let t0 = std::time::Instant::now();
    let mut catalog = Catalog::load(manifests)?;
    let (built_in_attacks, built_in_thinking) =
        give_built_ins(&mut catalog, options.own_attacks_only)?;
    let hash = catalog.content_hash();
    let mut screen = options.screen.with_catalog_and_built_in_files(manifests)?;
    if built_in_attacks {
        screen.name_built_in_attacks();
        if let Some(path) = &options.built_in_train {
            screen.add_file(path)?;
        }
    }
    if !options.force
        && out.exists()
        && let Ok(existing) = Index::open(out, &OpenOptions::new())
        && existing.meta().manifest_hash == hash
        && existing.header().fingerprint == embedder.fingerprint().0
        && existing.header().version == switchyard_format::FORMAT_VERSION
        && existing.selection().map(|s| s.builder_version) == Some(BUILDER_VERSION)
        && existing.screen().is_some_and(|s| screen.matches(s))
        && existing.screen_lexical().is_some()
            == (screen.options.lexical && existing.screen().is_some_and(|s| s.head.is_some()))
        && existing.screen_triage().is_none_or(|t| t.max_miss == screen.options.triage_max_miss)
        && families_match(&existing, &screen, &catalog)
        && (screen.options.request_contrast || existing.screen_request().is_none())
        // The middle layer the heads read (none without a head).
        && existing.screen_layer()
            == screen.options.layer_for(embedder).filter(|_| {
                existing.screen().is_some_and(|s| s.head.is_some())
            })
        // Sentence pieces turned on or off (a catalog with no long benign text to set their
        // threshold on gets none either way, and is rebuilt while they are asked for).
        && existing
            .screen_triage()
            .is_none_or(|t| t.sentence_threshold.is_some() == screen.options.sentence_pieces)
        && existing.adapter().map(|a| a.id.clone()) == options.adapter.as_ref().map(|(_, a)| a.id())
        && late_matches(&existing, embedder)
        && off_topic_matches(&existing, embedder, catalog.off_topic.check)
        && language_shift_matches(&existing, embedder)
        && mode_questions_match(&existing)
    {
        return Ok(BuildOutcome::UpToDate { path: out.to_path_buf(), manifest_hash: hash });
    }
    let info = embedder.info();
    if let Some((path, a)) = &options.adapter {
        a.check_model(path, &info.name, info.fingerprint.0, info.dim)?;
    }
    let adapter = options.adapter.as_ref().map(|(_, a)| a);
    let BuiltBytes { bytes, meta, screen, lexical_screen, triage, families, request, embed_ms } =
        build_bytes_with(&catalog, embedder, &screen, adapter, options.progress.as_deref())?;
    switchyard_format::write_atomic(out, &bytes)?;
    let rows = SectionKind::MATRICES
        .iter()
        .zip([
            catalog.tools.iter().map(|t| t.texts().len()).sum::<usize>(),
            catalog.skills.iter().map(|t| t.texts().len()).sum(),
            catalog.modes.iter().map(|t| t.texts().len()).sum(),
            catalog.patterns.len(),
            catalog.benign.len(),
        ])
        .map(|(k, n)| (k.name().to_string(), n))
        .collect();
    let mut warnings: Vec<String> = catalog.warnings.iter().map(ToString::to_string).collect();
    warnings.extend(
        options.adapter.as_ref().map(|(p, _)| adapter_warning::warning(p, embedder, &catalog)),
    );
    Ok(BuildOutcome::Built(Box::new(BuildReport {
        path: out.to_path_buf(),
        model: meta.model.name.clone(),
        fingerprint: meta.model.fingerprint.clone(),
        manifest_hash: hash,
        rows,
        bytes: bytes.len(),
        thresholds: meta.thresholds.clone(),
        screen,
        lexical_screen,
        triage,
        families,
        request,
        adapter: adapter.map(Adapter::id),
        built_in_attacks,
        built_in_thinking,
        warnings,
        embed_ms,
        total_ms: t0.elapsed().as_secs_f64() * 1e3,
    })))
}
