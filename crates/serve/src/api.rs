//! The endpoints. Bodies are the shapes of the CLI's `--json` output; request fields are
//! checked strictly (an unknown field is a 400 naming it).

use crate::body::JsonBody;
use crate::error::ApiError;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::IntoResponse;
use serde::Deserialize;
use std::path::PathBuf;
use switchyard::{AssembleOptions, Assembly};
use switchyard_router::{Decision, RouteOptions, ScreenReport};

/// At most this many texts per `/v1/screen` request (each is embedded window by window).
pub const MAX_SCREEN_TEXTS: usize = 256;

/// `POST /v1/route`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteRequest {
    /// The task.
    pub task: String,
    /// Mode (`plan`, `act`, ... or `auto`, the default).
    #[serde(default)]
    pub mode: Option<String>,
    /// Hint: the session is interactive.
    #[serde(default)]
    pub interactive: bool,
    /// Hint: the repository has uncommitted changes.
    #[serde(default)]
    pub git_changes: bool,
}

/// `POST /v1/think`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThinkRequest {
    /// The problem.
    pub problem: String,
    /// A thinking mode's name, or `auto` (the default).
    #[serde(default)]
    pub mode: Option<String>,
}

/// `POST /v1/assemble`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssembleRequest {
    /// The task.
    pub task: String,
    /// Mode (`auto` by default).
    #[serde(default)]
    pub mode: Option<String>,
    /// Repository root for the runtime context (default: the server's `--root`).
    #[serde(default)]
    pub root: Option<PathBuf>,
    /// Hint: the session is interactive.
    #[serde(default)]
    pub interactive: bool,
    /// Hint: uncommitted changes (default: detected from the root when it is a repository).
    #[serde(default)]
    pub git_changes: Option<bool>,
    /// This turn's sections: `retry`, `continuation`, `tool_recovery`, `orchestration`,
    /// `context`, `now`.
    #[serde(default)]
    pub turn: switchyard::TurnContext,
    /// `full` (default), `minimal` or `none`.
    #[serde(default)]
    pub profile: switchyard::Profile,
    /// The conversation so far, oldest first: `{"role", "content", "tool"?}`.
    #[serde(default)]
    pub history: Vec<switchyard::HistoryEntry>,
    /// A session id, recorded in the trace log.
    #[serde(default)]
    pub session: Option<String>,
    /// Ask the model to clarify first when the task leaves its intent or target unsaid.
    #[serde(default)]
    pub clarify: bool,
    /// A thinking mode's scaffold in the task layer: `"auto"` or a mode's name.
    #[serde(default)]
    pub thinking: Option<String>,
}

/// `POST /v1/screen`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenRequest {
    /// Untrusted texts to screen.
    pub texts: Vec<String>,
}

/// `POST /v1/memory`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryAddRequest {
    /// The text to store (embedded once, now).
    pub text: String,
    /// `memory`, `activity`, or an instruction-like kind.
    #[serde(default = "default_kind")]
    pub kind: String,
    /// Where it came from.
    #[serde(default = "default_source")]
    pub source: String,
}

fn default_kind() -> String {
    "memory".into()
}

fn default_source() -> String {
    "http".into()
}

fn non_empty(field: &str, value: &str) -> Result<(), ApiError> {
    if value.trim().is_empty() {
        Err(ApiError::bad_request(format!("field `{field}` is empty; send the text to work on")))
    } else {
        Ok(())
    }
}

/// `GET /healthz`: the index and model in use.
pub async fn healthz(State(state): State<AppState>) -> impl IntoResponse {
    let engine = state.engine();
    let router = engine.assembler.router();
    Json(serde_json::json!({
        "status": "ok",
        "index": router.path(),
        "model": engine.model().info().name,
        "fingerprint": engine.model().info().fingerprint.to_hex(),
        "generation": engine.generation,
        "memory": state.memory_path(),
    }))
}

/// `GET /metrics`: Prometheus text.
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
        state.metrics().encode(),
    )
}

/// `POST /v1/route`: the router's decision.
pub async fn route(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<RouteRequest>,
) -> Result<Json<Decision>, ApiError> {
    non_empty("task", &req.task)?;
    let options =
        RouteOptions { mode: req.mode, interactive: req.interactive, git_changes: req.git_changes };
    let metrics = state.metrics_arc();
    let decision = state
        .run(move |engine| {
            let d = engine.assembler.router().route(&req.task, &options)?;
            metrics.record_decision(&d);
            Ok(d)
        })
        .await?;
    Ok(Json(decision))
}

/// `POST /v1/think`: the thinking mode for a problem and its scaffold, as `switchyard think
/// --json`.
pub async fn think(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<ThinkRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    non_empty("problem", &req.problem)?;
    let answer = state
        .run(move |engine| {
            let router = engine.assembler.router();
            let decision = router.think(&req.problem, req.mode.as_deref())?;
            let scaffold = router.thinking_scaffold(&decision, &req.problem)?;
            Ok(serde_json::json!({ "decision": decision, "scaffold": scaffold }))
        })
        .await?;
    Ok(Json(answer))
}

/// `POST /v1/assemble`: the prompt and its full account.
pub async fn assemble(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<AssembleRequest>,
) -> Result<Json<Assembly>, ApiError> {
    non_empty("task", &req.task)?;
    let options = AssembleOptions {
        mode: req.mode,
        root: req.root.or_else(|| state.default_root()),
        interactive: req.interactive,
        git_changes: req.git_changes,
        turn: req.turn,
        profile: req.profile,
        history: req.history,
        session: req.session,
        clarify: req.clarify,
        thinking: req.thinking,
    };
    let metrics = state.metrics_arc();
    let assembly = state
        .run(move |engine| {
            let a = engine.assembler.assemble(&req.task, &options)?;
            metrics.record_decision(&a.decision);
            metrics.flagged_entries.inc_by(a.context.screened_out as u64);
            Ok(a)
        })
        .await?;
    Ok(Json(assembly))
}

/// `POST /v1/screen`: each text cut and embedded as `memory add` stores it, then screened.
pub async fn screen(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<ScreenRequest>,
) -> Result<Json<ScreenReport>, ApiError> {
    screen_texts(&state, req.texts).await.map(Json)
}

/// Screens untrusted texts as `memory add` would store them (cut into windows, embedded), on
/// a blocking thread; shared by HTTP and MCP.
pub(crate) async fn screen_texts(
    state: &AppState,
    texts: Vec<String>,
) -> Result<ScreenReport, ApiError> {
    if texts.is_empty() {
        return Err(ApiError::bad_request("field `texts` is empty; send the texts to screen"));
    }
    if texts.len() > MAX_SCREEN_TEXTS {
        return Err(ApiError::bad_request(format!(
            "field `texts` has {} texts; send at most {MAX_SCREEN_TEXTS} per request",
            texts.len()
        )));
    }
    let metrics = state.metrics_arc();
    state
        .run(move |engine| {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let (report, embedded) = switchyard::screen_texts(engine.assembler.router(), &refs)?;
            metrics.embedding_calls.inc_by(embedded as u64);
            metrics.flagged_entries.inc_by(report.dropped_count as u64);
            Ok(report)
        })
        .await
}

/// `POST /v1/memory`: stores an entry, embedded once with the index's model, and screens it
/// (`flagged`: assemblies will leave it out).
pub async fn memory_add(
    State(state): State<AppState>,
    JsonBody(req): JsonBody<MemoryAddRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    non_empty("text", &req.text)?;
    let store = state.memory_store()?;
    let id = state
        .run(move |engine| {
            let router = engine.assembler.router();
            let mut store =
                store.lock().map_err(|_| ApiError::internal("memory store lock poisoned"))?;
            store
                .set_prepare(router.prepare_config())
                .set_triage(router.screen_triage())
                .set_screen_layer(router.screen_layer());
            let id = store.add(engine.model().as_ref(), &req.kind, req.text.trim(), &req.source)?;
            // Screened once now and recorded: assemblies read the verdict.
            let report = switchyard::screen_and_record(&mut store, router, &[id])?;
            Ok((id, !report.dropped.is_empty()))
        })
        .await?;
    let (id, flagged) = id;
    Ok(Json(serde_json::json!({"id": id, "flagged": flagged})))
}

/// `GET /v1/memory`: every entry, oldest first.
pub async fn memory_list(
    State(state): State<AppState>,
) -> Result<Json<Vec<switchyard_memory::Entry>>, ApiError> {
    let store = state.memory_store()?;
    let entries = state
        .run(move |_| {
            let mut store =
                store.lock().map_err(|_| ApiError::internal("memory store lock poisoned"))?;
            Ok(store.list()?.to_vec())
        })
        .await?;
    Ok(Json(entries))
}

/// `DELETE /v1/memory/{id}`.
pub async fn memory_remove(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let store = state.memory_store()?;
    let removed = state
        .run(move |_| {
            let mut store =
                store.lock().map_err(|_| ApiError::internal("memory store lock poisoned"))?;
            Ok(store.remove(id)?)
        })
        .await?;
    if removed {
        Ok(Json(serde_json::json!({"removed": id})))
    } else {
        Err(ApiError::not_found(format!("no memory entry {id}")))
    }
}
