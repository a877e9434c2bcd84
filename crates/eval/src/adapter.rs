//! `switchyard train adapter`: loads labelled tool-retrieval sets, embeds them (cached), splits
//! each into training and validation queries by tool, and hands them to the trainer.
//!
//! The default split is by tool, not by query: a fifth of each catalog's tools (by a hash of
//! the name) are validation tools, queries whose gold tools are all validation tools are
//! validation queries, and queries that mix both are left out. The validation figure then
//! measures the adapter on tools it never trained on, which is what another catalog is. A user
//! training for their own catalog (whose tools are the ones routed later) splits by query
//! instead ([`ValidationSplit::Queries`]).

use crate::cases::CaseRow;
use crate::tools::QueryRow;
use crate::{EvalError, Progress, Result, embedding, jsonl, load_tools};
use sha2::Digest;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
pub use switchyard_adapter::train::{EpochReport, TrainConfig};
use switchyard_adapter::train::{Example, TrainSet};
pub use switchyard_adapter::{Adapter, AdapterInfo};
use switchyard_build_index::TextKind;
use switchyard_embed::Embedder;
use switchyard_manifest::Catalog;

/// One training set on the command line: a folder with `tools.jsonl` and `queries.jsonl`, and
/// optionally the value of the queries' `split` field to keep (`seal_tools:dev`); or a
/// manifest folder with its routing cases (`eval cases` format), a user's own catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct SetSpec {
    /// The folder (a manifest folder when `cases` is set).
    pub folder: PathBuf,
    /// Only queries whose `split` is this.
    pub split: Option<String>,
    /// The routing cases of the manifest folder `folder`.
    pub cases: Option<PathBuf>,
}

impl SetSpec {
    /// Parses `FOLDER[:SPLIT]`.
    pub fn parse(s: &str) -> Self {
        match s.rsplit_once(':') {
            Some((folder, split)) if !split.is_empty() && !split.contains('/') => {
                Self { folder: folder.into(), split: Some(split.to_string()), cases: None }
            }
            _ => Self { folder: s.into(), split: None, cases: None },
        }
    }

    /// A manifest folder and its routing cases (`task` and `tools` of each line are used).
    pub fn catalog(manifests: &Path, cases: &Path) -> Self {
        Self { folder: manifests.to_path_buf(), split: None, cases: Some(cases.to_path_buf()) }
    }

    /// `metatool`, `seal_tools:dev`.
    pub fn name(&self) -> String {
        let base = self.folder.file_name().map(|n| n.to_string_lossy().into_owned());
        let base = base.unwrap_or_else(|| self.folder.display().to_string());
        match (&self.split, &self.cases) {
            (_, Some(c)) => format!(
                "{base}+{}",
                c.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            ),
            (Some(s), None) => format!("{base}:{s}"),
            (None, None) => base,
        }
    }
}

/// What to train on and how.
#[derive(Debug, Clone)]
pub struct AdapterTraining {
    /// The sets.
    pub sets: Vec<SetSpec>,
    /// Sets used only to choose the epoch, never trained on: another catalog, the best
    /// predictor of how the adapter does on catalogs it never saw.
    pub validate_on: Vec<SetSpec>,
    /// Where query and tool embeddings are cached between runs.
    pub cache_dir: PathBuf,
    /// The trainer's settings.
    pub config: TrainConfig,
    /// One tool (or query) in this many is held out for validation (0: no validation, the
    /// last epoch is kept).
    pub validation_every: u64,
    /// What is held out.
    pub validation_split: ValidationSplit,
}

/// What the validation holds out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValidationSplit {
    /// Tools, with all their queries: measures tools the adapter never saw (other catalogs).
    #[default]
    Tools,
    /// Queries: measures new requests for the same tools (the user's own catalog).
    Queries,
}

/// Whether a tool (or query) is held out for validation: a stable hash of its text.
fn is_validation_tool(name: &str, every: u64) -> bool {
    if every == 0 {
        return false;
    }
    let d = sha2::Sha256::digest(name.as_bytes());
    u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]) % every == 0
}

/// Embeds `texts`, reading and writing a cache file keyed by the model and the texts.
fn embed_cached(
    embedder: &dyn Embedder,
    texts: &[&str],
    kind: TextKind,
    cache_dir: &Path,
    stage: &str,
    progress: Progress<'_>,
) -> Result<Vec<Vec<f32>>> {
    let mut h = sha2::Sha256::new();
    // Cards are embedded behind the model's document prefix: another vector, another key.
    if kind == TextKind::Document {
        h.update(embedder.info().document_prefix.as_bytes());
        h.update([1u8]);
    }
    for t in texts {
        h.update(t.as_bytes());
        h.update([0u8]);
    }
    let key: String = h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    let fp = embedder.fingerprint().to_hex();
    let dir = cache_dir.join("vectors");
    let path = dir.join(format!("{}-{key}.f32", &fp[..16]));
    let dim = embedder.dim();
    if let Ok(bytes) = std::fs::read(&path)
        && bytes.len() == texts.len() * dim * 4
    {
        let floats: Vec<f32> =
            bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        return Ok(floats.chunks_exact(dim).map(<[f32]>::to_vec).collect());
    }
    let vectors = embedding::embed_many_as(embedder, texts, kind, stage, progress)?;
    let bytes: Vec<u8> = vectors.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::create_dir_all(&dir).map_err(|source| EvalError::Io { path: dir.clone(), source })?;
    switchyard_format::write_atomic(&path, &bytes).map_err(|e| EvalError::Format(Box::new(e)))?;
    Ok(vectors)
}

/// Loads, embeds and splits one set.
fn load_set(
    spec: &SetSpec,
    validation_only: bool,
    embedder: &dyn Embedder,
    training: &AdapterTraining,
    progress: Progress<'_>,
) -> Result<TrainSet> {
    let (catalog, rows, tools_path, queries_path) = match &spec.cases {
        Some(cases) => {
            let catalog =
                Catalog::load(&spec.folder).map_err(|e| EvalError::Build(Box::new(e.into())))?;
            let rows: Vec<QueryRow> = jsonl::read_jsonl_numbered::<CaseRow>(cases)?
                .into_iter()
                .map(|(line, c)| QueryRow {
                    line,
                    query: c.task,
                    gold: c.tools,
                    lang: Some(c.lang),
                    split: None,
                })
                .collect();
            (catalog, rows, spec.folder.join("tools.toml"), cases.clone())
        }
        None => {
            let tools_path = spec.folder.join("tools.jsonl");
            let queries_path = spec.folder.join("queries.jsonl");
            let catalog = load_tools(&tools_path)?;
            let rows = crate::tools::read_queries(&queries_path)?;
            (catalog, rows, tools_path, queries_path)
        }
    };
    let position: HashMap<&str, usize> =
        catalog.tools.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();
    let validation_tool: Vec<bool> = catalog
        .tools
        .iter()
        .map(|t| is_validation_tool(&t.name, training.validation_every))
        .collect();
    let mut kept: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, r) in rows.into_iter().enumerate() {
        if spec.split.is_some() && r.split != spec.split {
            continue;
        }
        if r.gold.is_empty() {
            continue;
        }
        let gold = r
            .gold
            .iter()
            .map(|g| {
                position.get(g.as_str()).copied().ok_or_else(|| EvalError::Invalid {
                    path: queries_path.clone(),
                    line: i + 1,
                    field: "gold",
                    message: format!("{g} is not a tool of {}", tools_path.display()),
                })
            })
            .collect::<Result<Vec<usize>>>()?;
        kept.push((r.query, gold));
    }
    if kept.is_empty() {
        return Err(EvalError::Usage(format!(
            "{}: no query with gold tools{}",
            queries_path.display(),
            spec.split.as_ref().map(|s| format!(" in split {s:?}")).unwrap_or_default()
        )));
    }
    let cards: Vec<String> = catalog.tools.iter().map(|t| t.card()).collect();
    let card_refs: Vec<&str> = cards.iter().map(String::as_str).collect();
    let name = spec.name();
    let tool_vectors = embed_cached(
        embedder,
        &card_refs,
        TextKind::Document,
        &training.cache_dir,
        &format!("{name} tools"),
        progress,
    )?;
    let query_refs: Vec<&str> = kept.iter().map(|(q, _)| q.as_str()).collect();
    let query_vectors = embed_cached(
        embedder,
        &query_refs,
        TextKind::Query,
        &training.cache_dir,
        &format!("{name} queries"),
        progress,
    )?;
    let (mut train, mut validation) = (Vec::new(), Vec::new());
    for ((text, gold), query) in kept.into_iter().zip(query_vectors) {
        if validation_only {
            validation.push(Example { query, gold });
            continue;
        }
        if training.validation_split == ValidationSplit::Queries {
            match is_validation_tool(&text, training.validation_every) {
                true => validation.push(Example { query, gold }),
                false => train.push(Example { query, gold }),
            }
            continue;
        }
        let held = gold.iter().filter(|&&g| validation_tool[g]).count();
        if held == 0 {
            train.push(Example { query, gold });
        } else if held == gold.len() {
            validation.push(Example { query, gold });
        }
    }
    Ok(TrainSet { name, tools: tool_vectors.concat(), train, validation })
}

/// Trains an adapter for `embedder` on the sets of `training`.
pub fn train_adapter(
    embedder: &dyn Embedder,
    training: &AdapterTraining,
    progress: Progress<'_>,
    epochs: &dyn Fn(&EpochReport),
) -> Result<Adapter> {
    if training.sets.is_empty() {
        return Err(EvalError::Usage("--train names no set".into()));
    }
    let sets = training
        .sets
        .iter()
        .map(|s| (s, false))
        .chain(training.validate_on.iter().map(|s| (s, true)))
        .map(|(s, only)| load_set(s, only, embedder, training, progress))
        .collect::<Result<Vec<_>>>()?;
    let info = embedder.info();
    switchyard_adapter::train::train(
        &info.name,
        embedder.fingerprint().0,
        embedder.dim(),
        &sets,
        &training.config,
        epochs,
    )
    .map_err(|e| EvalError::Adapter(Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_spec_names_its_folder_and_split() {
        let s = SetSpec::parse("../shared/data/seal_tools:dev");
        assert_eq!(s.folder, PathBuf::from("../shared/data/seal_tools"));
        assert_eq!(s.split.as_deref(), Some("dev"));
        assert_eq!(s.name(), "seal_tools:dev");
        let s = SetSpec::parse("data/metatool");
        assert_eq!((s.name().as_str(), s.split), ("metatool", None));
    }

    #[test]
    fn about_one_tool_in_five_is_held_out_and_always_the_same_one() {
        let held = (0..1000).filter(|i| is_validation_tool(&format!("tool_{i}"), 5)).count();
        assert!((150..250).contains(&held), "{held}");
        assert_eq!(is_validation_tool("get_weather", 5), is_validation_tool("get_weather", 5));
        assert!(!is_validation_tool("get_weather", 0));
    }
}
