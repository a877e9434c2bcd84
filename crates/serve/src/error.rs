//! Errors: what went wrong at start-up ([`ServeError`]) and what a request is answered with
//! ([`ApiError`], always a JSON body `{"error": {"status", "message"}}`).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::path::PathBuf;

/// Why the server could not start or could not (re)load its index.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The index could not be opened or did not fit the model.
    #[error(transparent)]
    Router(Box<switchyard_router::RouteError>),
    /// The assembler refused its settings or the memory store.
    #[error(transparent)]
    Assemble(Box<switchyard::AssembleError>),
    /// The memory store could not be opened.
    #[error(transparent)]
    Memory(Box<switchyard_memory::MemoryError>),
    /// The model the index records could not be loaded.
    #[error("loading model {model} for {}: {message}", index.display())]
    Model {
        /// The model's name.
        model: String,
        /// The index that records it.
        index: PathBuf,
        /// The loader's error.
        message: String,
    },
    /// Binding or serving failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

impl From<switchyard_router::RouteError> for ServeError {
    fn from(e: switchyard_router::RouteError) -> Self {
        Self::Router(Box::new(e))
    }
}

impl From<switchyard::AssembleError> for ServeError {
    fn from(e: switchyard::AssembleError) -> Self {
        Self::Assemble(Box::new(e))
    }
}

impl From<switchyard_memory::MemoryError> for ServeError {
    fn from(e: switchyard_memory::MemoryError) -> Self {
        Self::Memory(Box::new(e))
    }
}

/// A request that could not be answered, with the status it gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong and how to fix it.
    pub message: String,
}

impl ApiError {
    /// 400: the request itself is wrong.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    /// 404: no such thing.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self { status: StatusCode::NOT_FOUND, message: message.into() }
    }

    /// 503: the server cannot take it now; the client may retry.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self { status: StatusCode::SERVICE_UNAVAILABLE, message: message.into() }
    }

    /// 500: a failure of the library.
    pub fn internal(message: impl Into<String>) -> Self {
        Self { status: StatusCode::INTERNAL_SERVER_ERROR, message: message.into() }
    }
}

impl From<switchyard_router::RouteError> for ApiError {
    fn from(e: switchyard_router::RouteError) -> Self {
        use switchyard_router::RouteError as E;
        match &e {
            // The caller asked for something the index does not have, or sent a bad value.
            E::UnknownMode { .. } | E::UnknownThinkingMode { .. } | E::Config { .. } => {
                Self::bad_request(error_chain(&e))
            }
            E::NoThinkingModes { .. } => Self::not_found(error_chain(&e)),
            _ => Self::internal(error_chain(&e)),
        }
    }
}

impl From<switchyard::AssembleError> for ApiError {
    fn from(e: switchyard::AssembleError) -> Self {
        match e {
            switchyard::AssembleError::Route(route) => Self::from(route),
            e => Self::internal(error_chain(&e)),
        }
    }
}

impl From<switchyard_memory::MemoryError> for ApiError {
    fn from(e: switchyard_memory::MemoryError) -> Self {
        use switchyard_memory::MemoryError as M;
        let message = error_chain(&e);
        match e {
            M::BadKind { .. } | M::EmptyText | M::RuleThroughAdd => Self::bad_request(message),
            // Locked or busy past the store's busy timeout: nothing was written; retry.
            M::Sqlite { .. } => Self::unavailable(message),
            M::ModelMismatch { .. } => Self { status: StatusCode::CONFLICT, message },
            _ => Self::internal(message),
        }
    }
}

pub use switchyard::error_chain;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "error": {"status": self.status.as_u16(), "message": self.message}
        });
        let mut response = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}
