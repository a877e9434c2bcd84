use std::path::PathBuf;

/// What can stop an evaluation or a benchmark.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A JSON Lines row is malformed.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong, naming the field.
        message: String,
    },
    /// A row is well-formed JSON but unusable.
    #[error("{path}:{line}: {field}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// The field.
        field: &'static str,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The file holds no rows.
    #[error("{path}: no rows; expected one JSON object per line")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// An argument is unusable.
    #[error("{0}")]
    Usage(String),
    /// Building the index failed.
    #[error(transparent)]
    Build(Box<switchyard_build_index::BuildError>),
    /// Routing or screening failed.
    #[error(transparent)]
    Route(Box<switchyard_router::RouteError>),
    /// The model failed.
    #[error(transparent)]
    Embed(Box<switchyard_embed::EmbedError>),
    /// Assembling failed.
    #[error(transparent)]
    Assemble(Box<switchyard::AssembleError>),
    /// An index could not be read or written.
    #[error(transparent)]
    Format(Box<switchyard_format::FormatError>),
    /// An adapter could not be read, written or trained.
    #[error(transparent)]
    Adapter(Box<switchyard_adapter::AdapterError>),
}

/// The result type of this crate.
pub type Result<T, E = EvalError> = std::result::Result<T, E>;

macro_rules! boxed_from {
    ($($variant:ident: $ty:ty),*) => {$(
        impl From<$ty> for EvalError {
            fn from(e: $ty) -> Self {
                EvalError::$variant(Box::new(e))
            }
        }
    )*};
}

// Boxed: the wrapped errors are large, and every Result of this crate would carry their size.
boxed_from!(
    Build: switchyard_build_index::BuildError,
    Route: switchyard_router::RouteError,
    Embed: switchyard_embed::EmbedError,
    Assemble: switchyard::AssembleError,
    Format: switchyard_format::FormatError
);
