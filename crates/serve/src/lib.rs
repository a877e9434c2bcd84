//! switchyard over local HTTP, and as an MCP server.
//!
//! [`serve`] answers HTTP; [`serve_mcp`] answers MCP (over stdio for `switchyard mcp`) with two
//! tools, `search_tools` and `screen`. Both run on one [`AppState`].
//!
//! One process loads the index and its model once; every request shares them. The embedding
//! and the memory store run on blocking threads, never on the async ones, within a cap of
//! concurrent requests and a per-request timeout. When the index file is replaced (a new
//! `build-index` output), the server opens the new one beside the old, swaps it in whole and
//! goes on; requests in flight finish on the index they started with.
//!
//! | endpoint | body | answer |
//! |---|---|---|
//! | `POST /v1/route` | `{"task", "mode"?, "interactive"?, "git_changes"?}` | the decision, as `switchyard route --json` |
//! | `POST /v1/assemble` | `{"task", "mode"?, "root"?, "interactive"?, "git_changes"?, "clarify"?, "thinking"?, ...}` | the prompt and its account, as `switchyard assemble --json` |
//! | `POST /v1/think` | `{"problem", "mode"?}` | `{"decision", "scaffold"}`, as `switchyard think --json` |
//! | `POST /v1/screen` | `{"texts": [...]}` | the screening report, as `switchyard screen --json` |
//! | `POST /v1/memory` | `{"text", "kind"?, "source"?}` | `{"id", "flagged"}` (screened now, verdict recorded) |
//! | `GET /v1/memory` | | the entries, as `switchyard memory list --json` |
//! | `DELETE /v1/memory/{id}` | | `{"removed"}` |
//! | `GET /healthz` | | index, model, generation |
//! | `GET /metrics` | | Prometheus text |
//!
//! Errors are `{"error": {"status", "message"}}`: 400 for a body that is not the JSON asked
//! for (the message names the field), 401 without the bearer token, 413 over the body limit,
//! 503 when every slot stays busy, 504 past the request timeout.
#![deny(missing_docs)]

mod api;
mod body;
mod engine;
mod error;
mod mcp;
mod metrics;
mod state;

pub use crate::engine::{Engine, FileStamp, ModelLoader};
pub use crate::error::{ApiError, ServeError};
pub use crate::mcp::{McpServer, serve_mcp};
pub use crate::metrics::Metrics;
pub use crate::state::{AppState, ReloadOutcome};

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use switchyard::AssemblerBuilder;

/// Limits of one server.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Time to receive, do and answer one request.
    pub request_timeout: Duration,
    /// Requests doing work at once (the rest wait for a slot within their timeout).
    pub max_concurrent: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 1 << 20,
            request_timeout: Duration::from_secs(10),
            // Embedding is CPU-bound: a queue beyond a few per core only adds latency.
            max_concurrent: 64,
        }
    }
}

/// Everything a server is started with; the CLI fills it from its flags.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The index, memory store, prompts folder, budget and router settings.
    pub assembler: AssemblerBuilder,
    /// Model to load instead of the one the index records.
    pub model: Option<String>,
    /// Repository root for `/v1/assemble` requests that name none (else the working directory).
    pub root: Option<PathBuf>,
    /// Limits.
    pub limits: Limits,
    /// Requests must carry `Authorization: Bearer <token>` (all but `/healthz`).
    pub token: Option<String>,
    /// How often the index file is checked for a replacement (`None`: never).
    pub reload_every: Option<Duration>,
}

impl ServeConfig {
    /// A server of the index at `index` with the default limits, reloading every second.
    pub fn new(index: impl Into<PathBuf>) -> Self {
        Self {
            assembler: AssemblerBuilder::new(index),
            model: None,
            root: None,
            limits: Limits::default(),
            token: None,
            reload_every: Some(Duration::from_secs(1)),
        }
    }
}

/// The HTTP application over `state` (for tests and for embedding in another axum server).
pub fn app(state: AppState) -> Router {
    let limits = state.config().limits.clone();
    Router::new()
        .route("/v1/route", post(api::route))
        .route("/v1/assemble", post(api::assemble))
        .route("/v1/think", post(api::think))
        .route("/v1/screen", post(api::screen))
        .route("/v1/memory", post(api::memory_add).get(api::memory_list))
        .route("/v1/memory/{id}", delete(api::memory_remove))
        .route("/metrics", get(api::metrics))
        .route_layer(middleware::from_fn_with_state(state.clone(), authorize))
        .route("/healthz", get(api::healthz))
        .route_layer(middleware::from_fn_with_state(state.clone(), track))
        .fallback(unknown_endpoint)
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .with_state(state)
}

/// Serves `state` on `listener` until `shutdown` completes, then stops taking connections
/// and lets the requests in flight finish. The index is checked for a replacement meanwhile.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let watcher = spawn_reload_watcher(&state);
    let served = axum::serve(listener, app(state)).with_graceful_shutdown(shutdown).await;
    if let Some(w) = watcher {
        w.abort();
    }
    served.map_err(|source| ServeError::Io { what: "serving HTTP".into(), source })
}

/// Checks the index file for a replacement every `reload_every`, on the current runtime.
pub(crate) fn spawn_reload_watcher(state: &AppState) -> Option<tokio::task::JoinHandle<()>> {
    state.config().reload_every.map(|every| {
        let state = state.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                state.reload_if_changed().await;
            }
        })
    })
}

/// Refuses a request without the configured bearer token (compared in constant time).
async fn authorize(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(token) = &state.config().token {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !constant_time_eq(given.as_bytes(), token.as_bytes()) {
            return ApiError {
                status: StatusCode::UNAUTHORIZED,
                message: "send the server's token as `Authorization: Bearer <token>`".into(),
            }
            .into_response();
        }
    }
    next.run(req).await
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Counts and times every request by endpoint and status, and bounds the whole request
/// (receiving a slow body included) by the timeout.
async fn track(
    State(state): State<AppState>,
    matched: Option<MatchedPath>,
    req: Request,
    next: Next,
) -> Response {
    let endpoint = matched.map_or_else(|| "unmatched".to_string(), |m| m.as_str().to_string());
    let started = Instant::now();
    // A little longer than the work's own deadline, so a slow computation gets its 504 first.
    let limit = state.config().limits.request_timeout + Duration::from_millis(500);
    let response = match tokio::time::timeout(limit, next.run(req)).await {
        Ok(r) => r,
        Err(_) => ApiError {
            status: StatusCode::REQUEST_TIMEOUT,
            message: format!(
                "the request was not received and answered within {} ms",
                limit.as_millis()
            ),
        }
        .into_response(),
    };
    let m = state.metrics();
    m.requests
        .get_or_create(&metrics::RequestLabels {
            endpoint: endpoint.clone(),
            status: response.status().as_u16(),
        })
        .inc();
    m.latency
        .get_or_create(&metrics::EndpointLabels { endpoint })
        .observe(started.elapsed().as_secs_f64());
    response
}

async fn unknown_endpoint(req: Request) -> ApiError {
    ApiError::not_found(format!(
        "no endpoint {} {}; the endpoints are POST /v1/route, /v1/assemble, /v1/screen, /v1/memory, GET /v1/memory, DELETE /v1/memory/{{id}}, GET /healthz, /metrics",
        req.method(),
        req.uri().path()
    ))
}
