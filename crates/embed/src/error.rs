use std::path::PathBuf;

/// Everything that can go wrong while resolving, loading or running an embedding model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// Reading a model file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file that could not be read.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A short model name is known but its files are not on this machine.
    #[error(
        "model {name} is not provisioned (looked in {searched}); run `python3 models/provision.py {name}` \
         from the switchyard checkout, or set SWITCHYARD_MODELS to the folder that holds it"
    )]
    NotProvisioned {
        /// The short name asked for.
        name: String,
        /// The folders searched, joined for display.
        searched: String,
    },
    /// The name is neither a short name, a model folder, nor a cached Hugging Face repo.
    #[error(
        "unknown model {name}: use a short name (minilm, e5-small), a model folder holding model.toml or \
         config.json + tokenizer.json + model.safetensors, or a Hugging Face repo id already in the local cache"
    )]
    UnknownModel {
        /// What the user passed.
        name: String,
    },
    /// A Hugging Face repo id was given but the files are not in the local hub cache.
    #[error(
        "{repo}: {file} is not in the Hugging Face cache at {cache}; switchyard never downloads models \
         (HF_HUB_OFFLINE={offline}); fetch it with a hub client first, or provision a short-name model"
    )]
    NotInHfCache {
        /// The repo id.
        repo: String,
        /// The missing file.
        file: String,
        /// The cache root searched.
        cache: PathBuf,
        /// The value of HF_HUB_OFFLINE seen.
        offline: String,
    },
    /// A model file exists but its content is not what was recorded at provisioning time.
    #[error(
        "{path}: sha256 {found} does not match {expected} recorded in model.toml; re-run `python3 models/provision.py`"
    )]
    Checksum {
        /// The file that failed.
        path: PathBuf,
        /// The recorded digest.
        expected: String,
        /// The digest of the file on disk.
        found: String,
    },
    /// A model description or file is malformed.
    #[error("{path}: {field}: {message}")]
    BadModel {
        /// The file at fault.
        path: PathBuf,
        /// The field or section at fault.
        field: String,
        /// What is wrong and what would fix it.
        message: String,
    },
    /// Tokenization failed.
    #[error("tokenizer {path}: {message}")]
    Tokenizer {
        /// The tokenizer file.
        path: PathBuf,
        /// The tokenizer's message.
        message: String,
    },
    /// The tensor library failed while running the model.
    #[error("model {model}: forward pass failed: {message}")]
    Forward {
        /// The model's display name.
        model: String,
        /// The underlying message.
        message: String,
    },
    /// The embedder has no word-piece vocabulary (the hash stand-in), so no static table can
    /// be distilled from it.
    #[error(
        "embedder {model} has no word-piece vocabulary, so no static (cascade) table can be \
         distilled from it; use a real model or build without the cascade"
    )]
    NoVocabulary {
        /// The embedder's display name.
        model: String,
    },
    /// A setting of the forward (an `EmbedOptions` field, or the `SWITCHYARD_*` variable it
    /// is read from) holds a value it does not take.
    #[error("{variable}={value} is not a known setting: use {expected}, or unset it")]
    BadSetting {
        /// The variable.
        variable: &'static str,
        /// What it holds.
        value: String,
        /// The values it takes.
        expected: String,
    },
    /// A middle layer was asked of an embedder that cannot give one (a hash embedder, candle's
    /// reference engine).
    #[error(
        "embedder {model} cannot give layer {layer}'s states, which this index's injection screen \
         reads beside the final vector: use the fast engine (the default), or rebuild the index \
         with `build-index --screen-layer 0`"
    )]
    NoLayers {
        /// The embedder's display name.
        model: String,
        /// The layer asked for.
        layer: usize,
    },
    /// A feature needed for this model was not compiled in.
    #[error(
        "model {name} needs the `{feature}` feature of switchyard-embed; rebuild with it enabled"
    )]
    FeatureMissing {
        /// The model asked for.
        name: String,
        /// The cargo feature.
        feature: &'static str,
    },
}

/// The result type of this crate.
pub type Result<T, E = EmbedError> = std::result::Result<T, E>;

impl EmbedError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io { path: path.into(), source }
    }

    pub(crate) fn bad(
        path: impl Into<PathBuf>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::BadModel { path: path.into(), field: field.into(), message: message.into() }
    }
}
