//! `switchyard serve`: flags to a [`switchyard_serve::ServeConfig`], a runtime, signals.

use crate::commands::embed_options;
use anyhow::{Context, Result, bail};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use switchyard_serve::{AppState, Limits, ServeConfig};

/// Arguments of `switchyard serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The index file (reloaded when it is replaced, e.g. by a new build-index).
    #[arg(long, default_value = "switchyard.idx")]
    pub index: PathBuf,
    /// Memory database of untrusted context (enables /v1/memory and memory in /v1/assemble).
    #[arg(long)]
    pub memory: Option<PathBuf>,
    /// Address to listen on. Anything but loopback should go with --token-file.
    #[arg(long, default_value = "127.0.0.1:7700")]
    pub addr: SocketAddr,
    /// Model (default: the one recorded in the index).
    #[arg(long)]
    pub model: Option<String>,
    /// Folder whose constitution.md and rules/<mode>.md override the index's own (those of the
    /// catalog it was built from; the built-in ones where it had none). Read on each assembly.
    #[arg(long)]
    pub prompts: Option<PathBuf>,
    /// Repository root for assemble requests that name none (default: the working directory).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Total token budget of an assembled prompt.
    #[arg(long, default_value_t = 4000)]
    pub budget: usize,
    /// Token counter: cl100k or o200k.
    #[arg(long, default_value = "cl100k")]
    pub tokenizer: String,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body: usize,
    /// Time to receive, do and answer one request, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub timeout_ms: u64,
    /// Requests doing work at once; the others wait for a slot within their timeout.
    #[arg(long, default_value_t = 64)]
    pub max_concurrent: usize,
    /// Answer from deterministic signals (keywords, hints, the default mode; fail-open, said in
    /// `fallback_reason`) when embedding a task takes longer than this, in milliseconds (0: wait).
    #[arg(long, default_value_t = 0)]
    pub embed_budget_ms: u64,
    /// File holding the bearer token every request but /healthz must carry (or set
    /// SWITCHYARD_TOKEN).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// How often to check the index file for a replacement, in milliseconds (0: never).
    #[arg(long, default_value_t = 1000)]
    pub reload_every_ms: u64,
    /// Append one JSON line per assembly to this trace log (`switchyard trace stats` reads it).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Async worker threads (default: one per core). The embedding runs on blocking threads.
    #[arg(long)]
    pub workers: Option<usize>,
}

/// Arguments of `switchyard mcp`.
#[derive(Args, Debug)]
pub struct McpArgs {
    /// The index file (reloaded when it is replaced).
    #[arg(long, default_value = "switchyard.idx")]
    pub index: PathBuf,
    /// Model (default: the one recorded in the index).
    #[arg(long)]
    pub model: Option<String>,
    /// At most this many tools per search (a call's `limit` can only lower it).
    #[arg(long, default_value_t = 5)]
    pub max_tools: usize,
    /// Time to answer one tool call, in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub timeout_ms: u64,
}

fn loader() -> Result<switchyard_serve::ModelLoader> {
    let options = embed_options()?;
    let dirs = crate::commands::model_dirs();
    // Not `load_model`: a long-running server frees a model a reload replaces.
    Ok(Arc::new(move |name: &str| {
        switchyard::embed::load_in(name, &dirs, &options)
            .map(|m| Arc::new(m) as Arc<dyn switchyard::embed::Embedder>)
            .map_err(|e| e.to_string())
    }))
}

/// `switchyard mcp`: stdout carries the protocol, so everything else goes to stderr.
pub fn mcp(a: McpArgs) -> Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(false)
        .try_init()
        .ok();
    let mut config = ServeConfig::new(&a.index);
    // The router picks up to `max_tools` by score beside the mode's base tools; searches rank
    // them all by score and keep the best `max_tools`.
    config.assembler.router().max_results(a.max_tools).cache_size(1024);
    config.model = a.model.clone();
    config.limits.request_timeout = Duration::from_millis(a.timeout_ms.max(1));
    let state = AppState::open(config, loader()?)
        .with_context(|| format!("starting the MCP server on {}", a.index.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        switchyard_serve::serve_mcp(state, a.max_tools, (tokio::io::stdin(), tokio::io::stdout()))
            .await
    })?;
    Ok(())
}

fn token(a: &ServeArgs) -> Result<Option<String>> {
    let token = match &a.token_file {
        Some(f) => Some(
            std::fs::read_to_string(f)
                .with_context(|| format!("--token-file {}: reading the token", f.display()))?
                .trim()
                .to_string(),
        ),
        None => std::env::var("SWITCHYARD_TOKEN").ok().map(|t| t.trim().to_string()),
    };
    match token {
        Some(t) if t.is_empty() => {
            bail!("the bearer token is empty; put a secret in --token-file or SWITCHYARD_TOKEN")
        }
        t => Ok(t),
    }
}

pub fn serve(a: ServeArgs) -> Result<()> {
    // `--log` may have installed a subscriber already; it wins.
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_target(false).try_init();
    let counter = match a.tokenizer.as_str() {
        "cl100k" | "cl100k_base" => switchyard::TokenCounter::Cl100k,
        "o200k" | "o200k_base" => switchyard::TokenCounter::O200k,
        other => bail!("--tokenizer {other}: use cl100k or o200k"),
    };
    if a.max_concurrent == 0 {
        bail!("--max-concurrent 0 would refuse every request; use at least 1");
    }
    let token = token(&a)?;
    if !a.addr.ip().is_loopback() && token.is_none() {
        eprintln!(
            "warning: listening on {} without a token: anyone who reaches this address can read the memory store; add --token-file",
            a.addr
        );
    }
    // Without --prompts the index's own constitution and rules apply (its catalog's), never
    // whatever folder the command runs in.
    let prompts = a.prompts.clone();
    let mut config = ServeConfig::new(&a.index);
    config
        .assembler
        .budget(a.budget)
        .token_counter(counter)
        .prompts_dir(prompts)
        .memory_db(a.memory.clone());
    config.assembler.router().cache_size(1024);
    config.assembler.trace_log(a.trace.clone().map(switchyard::TraceLog::new));
    if a.embed_budget_ms > 0 {
        config.assembler.router().embed_budget(Some(Duration::from_millis(a.embed_budget_ms)));
    }
    config.model = a.model.clone();
    config.root = a.root.clone();
    config.token = token;
    config.limits = Limits {
        max_body_bytes: a.max_body,
        request_timeout: Duration::from_millis(a.timeout_ms.max(1)),
        max_concurrent: a.max_concurrent,
    };
    config.reload_every = (a.reload_every_ms > 0).then(|| Duration::from_millis(a.reload_every_ms));
    let loader = loader()?;
    let started = std::time::Instant::now();
    let state = AppState::open(config, loader)
        .with_context(|| format!("starting the server on {}", a.index.display()))?;
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = a.workers {
        runtime.worker_threads(n.max(1));
    }
    let runtime = runtime.enable_all().build().context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(a.addr)
            .await
            .with_context(|| format!("--addr {}: binding", a.addr))?;
        let engine = state.engine();
        eprintln!(
            "switchyard serve: {} ({}) on http://{} in {:.0} ms; Ctrl-C or SIGTERM stops it",
            a.index.display(),
            engine.model().info().name,
            listener.local_addr()?,
            started.elapsed().as_secs_f64() * 1e3
        );
        switchyard_serve::serve(listener, state, shutdown_signal()).await?;
        eprintln!("switchyard serve: stopped");
        Ok(())
    })
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}
