use std::path::PathBuf;

/// Why a router could not be built or a call could not be answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// The index file was refused.
    #[error(transparent)]
    Format(#[from] switchyard_format::FormatError),
    /// The index was built with another model.
    #[error(
        "index {path} was built with model {index_model} (fingerprint {index_fingerprint}) but the router was given {model} (fingerprint {fingerprint}); {}",
        if index_model == model {
            format!("the model's files or settings (weights, tokenizer, prefixes) changed since: rebuild it with switchyard build-index --model {model} --force")
        } else {
            format!("use --model {index_model}, or rebuild it with switchyard build-index --model {model}")
        }
    )]
    ModelMismatch {
        /// The index file.
        path: PathBuf,
        /// Model recorded in the index.
        index_model: String,
        /// Its fingerprint.
        index_fingerprint: String,
        /// Model given.
        model: String,
        /// Its fingerprint.
        fingerprint: String,
    },
    /// The index's lexical statistics were made by another analyser version.
    #[error(
        "index {path}: its lexical statistics come from analyser version {found}, this build \
         analyses tasks with version {expected}; rebuild it with switchyard build-index"
    )]
    AnalyzerMismatch {
        /// The index.
        path: PathBuf,
        /// The version in the index.
        found: u32,
        /// This build's version.
        expected: u32,
    },
    /// The screen's lexical head was trained on another version or size of the hashed
    /// features.
    #[error(
        "index {path}: its screen's lexical head reads hashed features version {found} in \
         {buckets} buckets, this build makes version {expected} in {expected_buckets}; rebuild \
         it with switchyard build-index"
    )]
    ScreenFeaturesMismatch {
        /// The index.
        path: PathBuf,
        /// The version in the index.
        found: u32,
        /// Its buckets per group.
        buckets: u32,
        /// This build's version.
        expected: u32,
        /// This build's buckets per group.
        expected_buckets: usize,
    },
    /// A configuration value is out of range.
    #[error("router config: {field}: {message}")]
    Config {
        /// The setting.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// An explicit mode names no mode of the index.
    #[error("mode {mode:?} is not defined in index {path}; known modes: {known}")]
    UnknownMode {
        /// The index.
        path: PathBuf,
        /// The mode asked for.
        mode: String,
        /// The modes available.
        known: String,
    },
    /// The index has no thinking modes.
    #[error(
        "index {path} has no thinking modes; rebuild it with switchyard build-index, which gives a manifest folder without thinking.toml the built-in modes (or add your own thinking.toml and scaffolds)"
    )]
    NoThinkingModes {
        /// The index.
        path: PathBuf,
    },
    /// An explicit thinking mode names no mode of the index.
    #[error("thinking mode {mode:?} is not defined in index {path}; known: {known} (or auto)")]
    UnknownThinkingMode {
        /// The index.
        path: PathBuf,
        /// The mode asked for.
        mode: String,
        /// The modes available.
        known: String,
    },
    /// An entry's embedding has the wrong width.
    #[error(
        "entry {index}: embedding has {found} values but the index dim is {expected}; re-embed it with the index's model"
    )]
    BadEmbedding {
        /// Position of the entry.
        index: usize,
        /// Its width.
        found: usize,
        /// The index width.
        expected: usize,
    },
    /// The model could not embed the task.
    #[error("task embedding failed: {message}")]
    Embedding {
        /// What went wrong (the embedder's message, or the budget it ran over).
        message: String,
    },
}

/// The result type of this crate.
pub type Result<T, E = RouteError> = std::result::Result<T, E>;
