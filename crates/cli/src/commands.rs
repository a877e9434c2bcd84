use crate::print_json;
use anyhow::{Context, Result, bail};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use switchyard::embed::Embedder;
use switchyard::router::{RouteOptions, RouterBuilder};

/// Arguments of `switchyard embed`.
#[derive(Args, Debug)]
pub struct EmbedArgs {
    /// The text to embed.
    pub text: String,
    /// Model: a short name (e5-small, minilm), a folder, or a cached Hugging Face repo id.
    #[arg(long, default_value = switchyard::embed::DEFAULT_MODEL)]
    pub model: String,
    /// Print JSON: {"model", "fingerprint", "dim", "tokens", "embedding"}.
    #[arg(long)]
    pub json: bool,
    /// Embed the text this many times after one warm-up call and report p50/p95 latency.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
}

/// The encoder settings of this process: the `SWITCHYARD_WEIGHTS`, `SWITCHYARD_KERNEL`,
/// `SWITCHYARD_ENGINE` and `SWITCHYARD_Q4_MATMUL` variables, read here and only here (the
/// libraries take them as `EmbedOptions`), and refused when a value is unknown.
pub fn embed_options() -> Result<switchyard::embed::EmbedOptions> {
    Ok(switchyard::embed::EmbedOptions::from_vars(|k| std::env::var(k).ok())?)
}

/// Folders searched first for provisioned models: `$SWITCHYARD_MODELS` (read here, at the
/// command's edge, never inside the libraries).
pub fn model_dirs() -> Vec<PathBuf> {
    std::env::var_os("SWITCHYARD_MODELS").map(PathBuf::from).into_iter().collect()
}

pub fn load_model(name: &str) -> Result<Arc<dyn Embedder>> {
    let e = switchyard::embed::load_in(name, &model_dirs(), &embed_options()?)
        .with_context(|| format!("loading model {name}"))?;
    Ok(for_the_process(Arc::new(e)))
}

/// Opens an index once and loads the model it records (or `model`): the index is read one
/// time, not once for its model's name and again for the router.
pub fn open_with_model(
    builder: &RouterBuilder,
    model: Option<&str>,
) -> Result<(switchyard::format::Index, Arc<dyn Embedder>)> {
    let index = builder.open_index()?;
    let name = model.map_or_else(|| index.meta().model.name.clone(), str::to_string);
    Ok((index, load_model(&name)?))
}

/// A model a command loads lives until the process exits: one reference is leaked so it is
/// never dropped. Freeing e5-small's tokenizer (a 250k-word vocabulary) and packed layers piece
/// by piece took about 240 ms at exit, a quarter of a cold `embed`; the OS reclaims it at once.
fn for_the_process<T: ?Sized>(model: Arc<T>) -> Arc<T> {
    std::mem::forget(Arc::clone(&model));
    model
}

pub fn embed(a: EmbedArgs) -> Result<()> {
    let options = embed_options()?;
    let t_load = std::time::Instant::now();
    let model = for_the_process(Arc::new(
        switchyard::embed::load_in(&a.model, &model_dirs(), &options)
            .with_context(|| format!("loading model {}", a.model))?,
    ));
    let load_ms = t_load.elapsed().as_secs_f64() * 1e3;
    let lt = *model.load_timings();
    // Resolving the name (search folders, model.toml) is what load_with did besides loading.
    let load = serde_json::json!({
        "resolve_ms": (load_ms - lt.total_ms).max(0.0), "weights_ms": lt.weights_ms,
        "pack_ms": lt.pack_ms, "tokenizer_ms": lt.tokenizer_ms, "total_ms": lt.total_ms,
        "tokenizer": lt.tokenizer_source, "weights_source": lt.weights_source,
    });
    let t = std::time::Instant::now();
    let v = model.embed(&a.text)?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut times = Vec::with_capacity(a.repeat);
    if a.repeat > 1 {
        for _ in 0..a.repeat {
            let t = std::time::Instant::now();
            model.embed(&a.text)?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
    }
    let pct = |q: f64| {
        times.get(((times.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(first_ms)
    };
    let (p50, p95) = (pct(0.5), pct(0.95));
    let tokens = model.count_tokens(&a.text)?;
    let info = model.info();
    let threads = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or_else(rayon::current_num_threads);
    if a.json {
        print_json(&serde_json::json!({
            "model": info.name, "fingerprint": info.fingerprint.to_hex(), "dim": info.dim,
            "tokens": tokens, "embedding": v, "first_ms": first_ms, "runs": times.len().max(1),
            "p50_ms": p50, "p95_ms": p95, "threads": threads, "load": load,
            "weights": model.weight_storage(),
        }))
    } else {
        let head: Vec<String> = v.iter().take(8).map(|x| format!("{x:.4}")).collect();
        println!(
            "model        {}\nfingerprint  {}\ndim          {}\nweights      {}\nload_ms      {load_ms:.1} (weights {:.1} {}, packing {:.1}; tokenizer {:.1} {} alongside)\ntokens       {tokens}\nthreads      {threads}\nfirst_ms     {first_ms:.2}\np50_ms       {p50:.2} ({} runs)\np95_ms       {p95:.2}\nembedding    [{}, ...]",
            info.name,
            info.fingerprint,
            info.dim,
            model.weight_storage(),
            lt.weights_ms,
            serde_json::to_value(lt.weights_source)?.as_str().unwrap_or_default(),
            lt.pack_ms,
            lt.tokenizer_ms,
            serde_json::to_value(lt.tokenizer_source)?.as_str().unwrap_or_default(),
            times.len().max(1),
            head.join(", ")
        );
        Ok(())
    }
}

/// Arguments of `switchyard route`.
#[derive(Args, Debug)]
pub struct RouteArgs {
    /// The task.
    pub task: String,
    /// The index file.
    #[arg(long, default_value = "switchyard.idx")]
    pub index: PathBuf,
    /// Mode (plan, act, review, ... or auto).
    #[arg(long, default_value = "auto")]
    pub mode: String,
    /// Model (default: the one recorded in the index).
    #[arg(long)]
    pub model: Option<String>,
    /// Hint: the session is interactive.
    #[arg(long)]
    pub interactive: bool,
    /// Hint: the repository has uncommitted changes.
    #[arg(long)]
    pub git_changes: bool,
    /// Route this many more times and report p50/p95 (repeats hit the task cache, so they
    /// exclude the embedding unless --no-cache).
    #[arg(long, default_value_t = 0)]
    pub repeat: usize,
    /// Disable the task-embedding cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Print the full decision as JSON.
    #[arg(long)]
    pub json: bool,
}

/// p50 and p95 of a set of millisecond timings.
fn percentiles(mut v: Vec<f64>) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95))
}

pub fn route(a: RouteArgs) -> Result<()> {
    let mut builder = RouterBuilder::new(&a.index);
    builder.cache_size(if a.no_cache { 0 } else { 256 });
    let (index, model) = open_with_model(&builder, a.model.as_deref())?;
    let router = builder.build_from(index, model)?;
    let options = RouteOptions {
        mode: Some(a.mode.clone()),
        interactive: a.interactive,
        git_changes: a.git_changes,
    };
    let d = router.route(&a.task, &options)?;
    if a.repeat > 0 {
        let mut scratch = switchyard::router::Scratch::default();
        let mut times = Vec::with_capacity(a.repeat);
        for _ in 0..a.repeat {
            times
                .push(router.route_with(&a.task, &options, &mut scratch)?.metrics.timings.total_ms);
        }
        let (p50, p95) = percentiles(times);
        let what = if a.no_cache {
            "including the embedding"
        } else {
            "excluding the embedding (cache hits)"
        };
        if a.json {
            return print_json(
                &serde_json::json!({"runs": a.repeat, "p50_ms": p50, "p95_ms": p95, "includes_embedding": a.no_cache, "decision": d}),
            );
        }
        println!("route x{}: p50 {p50:.3} ms, p95 {p95:.3} ms, {what}", a.repeat);
        return Ok(());
    }
    if a.json {
        return print_json(&d);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "mode    {} ({:?}{})",
        d.mode,
        d.mode_source,
        d.mode_detail.as_ref().map(|x| format!(": {x}")).unwrap_or_default()
    )?;
    if let Some(r) = &d.fallback_reason {
        writeln!(out, "fallback {r}")?;
    }
    for (label, items) in [("tool", &d.tools), ("skill", &d.skills)] {
        for s in items {
            writeln!(
                out,
                "{label:<6} {:<24} {:>6.3}  {:<9} {}",
                s.name,
                s.score,
                format!("{:?}", s.by).to_lowercase(),
                truncate(&s.matched_text, 60)
            )?;
        }
    }
    let t = &d.metrics.timings;
    let answered = format!("{:?}", d.answered_by).to_lowercase();
    match &d.cascade {
        Some(c) => writeln!(
            out,
            "answered_by {answered}  (cascade: coverage {:.2}/{:.2}, lead {:.3}/{:.3}, skills \
             clear {}, {:.3} ms)",
            c.coverage, c.min_coverage, c.lead, c.min_lead, c.skills_clear, t.static_ms
        )?,
        None => writeln!(out, "answered_by {answered}")?,
    }
    writeln!(
        out,
        "embedding_calls {}  cache_hit {}  embed {:.2} ms  total {:.2} ms",
        d.metrics.embedding_calls, d.metrics.cache_hit, t.embed_ms, t.total_ms
    )?;
    Ok(())
}

pub fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}...", s.chars().take(n).collect::<String>())
    }
}

/// Arguments of `switchyard screen`.
#[derive(Args, Debug)]
pub struct ScreenArgs {
    /// Untrusted texts to screen.
    #[arg(required = true)]
    pub texts: Vec<String>,
    /// The index file.
    #[arg(long, default_value = "switchyard.idx")]
    pub index: PathBuf,
    /// Model (default: the one recorded in the index).
    #[arg(long)]
    pub model: Option<String>,
    /// Screen with the nearest-pattern contrast rule even when the index has a learned head.
    #[arg(long)]
    pub contrast: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn screen(a: ScreenArgs) -> Result<()> {
    let mut builder = RouterBuilder::new(&a.index);
    builder.contrast_only(a.contrast);
    let (index, model) = open_with_model(&builder, a.model.as_deref())?;
    let router = builder.build_from(index, model)?;
    let refs: Vec<&str> = a.texts.iter().map(String::as_str).collect();
    // Cut and embedded exactly as `memory add` stores an entry.
    let (report, _) = switchyard::screen_texts(&router, &refs)?;
    if a.json {
        return print_json(&report);
    }
    let mut all: Vec<_> = report.kept.iter().chain(&report.dropped).collect();
    all.sort_by_key(|v| v.entry);
    for v in all {
        writeln!(
            std::io::stdout(),
            "{:<5} score {:>7.3}{}  {} of {} pieces, {} cleared unembedded ({}): {}",
            if v.flagged { "DROP" } else { "keep" },
            v.score,
            // Only a family head's verdict needs saying whose threshold the score is against.
            match v.head.as_deref() {
                Some(h) if h != "main" => format!(" ({h} head, threshold {:.3})", v.threshold),
                _ => String::new(),
            },
            v.decided_by.piece,
            v.pieces_screened,
            v.pieces_cleared,
            v.decided_by.origin,
            truncate(&v.decided_by.excerpt, 70)
        )?;
        if v.unread_bytes > 0 {
            writeln!(
                std::io::stdout(),
                "      only its first {} bytes were screened; the {} after them were not read (assemblies never show them)",
                a.texts[v.entry].len() - v.unread_bytes,
                v.unread_bytes
            )?;
        }
    }
    println!(
        "rule {}{}, dropped {}",
        report.rule,
        report.fallback_reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default(),
        report.dropped_count
    );
    Ok(())
}

/// Arguments of `switchyard models`.
#[derive(Args, Debug)]
pub struct ModelsArgs {
    /// Models to verify (default: minilm and e5-small).
    pub names: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write each model's ready-to-map files beside it (the tokenizer's table and the
    /// packed image for this machine's weight storage and kernel), so the first real call
    /// starts as fast as the later ones. Any load writes them when they are missing or stale.
    #[arg(long)]
    pub prepare: bool,
}

/// Loads `m` once so its ready-to-map files exist, and says what they are.
fn prepare(m: &switchyard::embed::ResolvedModel) -> Result<serde_json::Value> {
    let e = switchyard::embed::BertEmbedder::load_with(m, &embed_options()?)?;
    let lt = e.load_timings();
    Ok(serde_json::json!({
        "files": e.prepared_files(), "weights": lt.weights_source, "tokenizer": lt.tokenizer_source,
        "load_ms": lt.total_ms,
    }))
}

pub fn models(a: ModelsArgs) -> Result<()> {
    let names = if a.names.is_empty() {
        vec!["minilm".to_string(), "e5-small".to_string()]
    } else {
        a.names
    };
    let mut rows = Vec::new();
    let mut failed = false;
    for n in &names {
        let r =
            switchyard::embed::resolve_in(n, &model_dirs()).and_then(|m| m.verify().map(|()| m));
        match r {
            Ok(m) => {
                let prepared = if a.prepare { Some(prepare(&m)?) } else { None };
                rows.push(serde_json::json!({"name": n, "ok": true, "dir": m.dir, "fingerprint": m.fingerprint().to_hex(), "dim": m.spec.dim, "license": m.spec.license, "prepared": prepared}));
            }
            Err(e) => {
                failed = true;
                rows.push(serde_json::json!({"name": n, "ok": false, "error": e.to_string()}));
            }
        }
    }
    if a.json {
        print_json(&rows)?;
    } else {
        for r in &rows {
            println!(
                "{:<10} {}",
                r["name"].as_str().unwrap_or(""),
                if r["ok"] == true {
                    format!(
                        "ok  {}  {}",
                        r["fingerprint"].as_str().unwrap_or(""),
                        r["dir"].as_str().unwrap_or("")
                    )
                } else {
                    r["error"].as_str().unwrap_or("").to_string()
                }
            );
            let p = &r["prepared"];
            for file in p["files"].as_array().into_iter().flatten() {
                println!("{:<10} prepared {}", "", file.as_str().unwrap_or(""));
            }
            if !p.is_null() {
                println!(
                    "{:<10} (weights {}, tokenizer {}, load {:.0} ms)",
                    "",
                    p["weights"].as_str().unwrap_or(""),
                    p["tokenizer"].as_str().unwrap_or(""),
                    p["load_ms"].as_f64().unwrap_or(0.0)
                );
            }
        }
    }
    if failed {
        bail!("some models are missing or damaged");
    }
    Ok(())
}

/// Arguments of `switchyard assemble`.
#[derive(Args, Debug)]
pub struct AssembleArgs {
    /// The task.
    pub task: String,
    /// The index file.
    #[arg(long, default_value = "switchyard.idx")]
    pub index: PathBuf,
    /// Mode (plan, act, review, ... or auto).
    #[arg(long, default_value = "auto")]
    pub mode: String,
    /// Repository root for the runtime context (default: current directory).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Memory database of untrusted context.
    #[arg(long)]
    pub memory: Option<PathBuf>,
    /// Folder whose constitution.md and rules/<mode>.md override the index's own (those of the
    /// catalog it was built from; the built-in ones where it had none). Read on each assembly.
    #[arg(long)]
    pub prompts: Option<PathBuf>,
    /// Total token budget.
    #[arg(long, default_value_t = 4000)]
    pub budget: usize,
    /// Token counter: cl100k or o200k.
    #[arg(long, default_value = "cl100k")]
    pub tokenizer: String,
    /// Model (default: the one recorded in the index).
    #[arg(long)]
    pub model: Option<String>,
    /// Assemble this many more times and report p50/p95 of the whole assembly.
    #[arg(long, default_value_t = 0)]
    pub repeat: usize,
    /// Disable the task-embedding cache (every repeat embeds).
    #[arg(long)]
    pub no_cache: bool,
    /// Hint: the session is interactive (selects the mode the modes manifest maps it to).
    #[arg(long)]
    pub interactive: bool,
    /// Hint: the repository has uncommitted changes [default: detected from --root when it is
    /// a git repository].
    #[arg(long)]
    pub git_changes: bool,
    /// This turn: why the last attempt failed and what to do differently.
    #[arg(long)]
    pub retry: Option<String>,
    /// This turn: where to pick up after an interrupted answer.
    #[arg(long)]
    pub continuation: Option<String>,
    /// This turn: a tool that failed and what to use instead.
    #[arg(long)]
    pub tool_recovery: Option<String>,
    /// This turn: the state of a multi-agent or multi-stage plan.
    #[arg(long)]
    pub orchestration: Option<String>,
    /// This turn: anything else, for this turn only.
    #[arg(long)]
    pub turn_context: Option<String>,
    /// Print the current UTC date and time in the prompt (off: the same input, the same bytes).
    #[arg(long)]
    pub now: bool,
    /// Layers: full (all), minimal (constitution, rules, tools, task), none (the task alone).
    #[arg(long, default_value = "full")]
    pub profile: switchyard::Profile,
    /// The conversation so far: a JSONL file of {"role", "content", "tool"?}, oldest first.
    #[arg(long)]
    pub history: Option<PathBuf>,
    /// Append one JSON line for this assembly to this trace log (kept 14 days).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// A session id, recorded in the trace log.
    #[arg(long)]
    pub session: Option<String>,
    /// When the task leaves its intent or target unsaid ("fix it", "cuida do problema"), add
    /// one line to the task layer asking the model to clarify before acting.
    #[arg(long)]
    pub clarify: bool,
    /// Think the task through with a thinking mode's scaffold in the task layer: auto (keyword
    /// rules, then the semantic fallback when confident, then the default) or a mode's name.
    #[arg(long, value_name = "auto|MODE")]
    pub thinking: Option<String>,
    /// A conversation stream (`switchyard stream`): the history layer holds what `--stage`
    /// may see of it (instead of --history).
    #[arg(long, requires = "stage", conflicts_with = "history")]
    pub stream: Option<PathBuf>,
    /// The stage this prompt is for (with --stream).
    #[arg(long, requires = "stream")]
    pub stage: Option<String>,
    /// The stage definitions (with --stream).
    #[arg(long, default_value = "manifests/stages.toml")]
    pub stages: PathBuf,
    /// Print the full account as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn assemble(a: AssembleArgs) -> Result<()> {
    let counter = match a.tokenizer.as_str() {
        "cl100k" | "cl100k_base" => switchyard::TokenCounter::Cl100k,
        "o200k" | "o200k_base" => switchyard::TokenCounter::O200k,
        other => bail!("--tokenizer {other}: use cl100k or o200k"),
    };
    // The token counter's vocabulary takes ~140 ms to build on first use: build it on the
    // other core while the model loads (detached: its result lands in the counter's own cache).
    std::thread::spawn(move || counter.count(""));
    // Without --prompts the index's own constitution and rules apply (its catalog's), never
    // whatever folder the command runs in.
    let prompts = a.prompts.clone();
    // A bad history file is refused before the index and the model are loaded.
    let history = match (&a.history, &a.stream, &a.stage) {
        (Some(path), _, _) => read_history(path)?,
        (None, Some(db), Some(stage)) => {
            let view = crate::stream_cmds::open_stream(db, &a.stages)?.view(stage, None, None)?;
            switchyard::history_from_stream(&view, stage)
        }
        _ => Vec::new(),
    };
    let mut b = switchyard::AssemblerBuilder::new(&a.index);
    b.budget(a.budget).token_counter(counter).prompts_dir(prompts).memory_db(a.memory.clone());
    b.trace_log(a.trace.clone().map(switchyard::TraceLog::new));
    b.router().cache_size(if a.no_cache { 0 } else { 256 });
    let (index, model) = open_with_model(b.router(), a.model.as_deref())?;
    let assembler = b.build_from(index, model)?;
    let options = switchyard::AssembleOptions {
        mode: Some(a.mode.clone()),
        root: a.root.clone(),
        interactive: a.interactive,
        git_changes: a.git_changes.then_some(true),
        turn: switchyard::TurnContext {
            retry: a.retry.clone(),
            continuation: a.continuation.clone(),
            tool_recovery: a.tool_recovery.clone(),
            orchestration: a.orchestration.clone(),
            context: a.turn_context.clone(),
            now: a.now,
        },
        profile: a.profile,
        history,
        session: a.session.clone(),
        clarify: a.clarify,
        thinking: a.thinking.clone(),
    };
    let out = assembler.assemble(&a.task, &options)?;
    if a.repeat > 0 {
        let mut times = Vec::with_capacity(a.repeat);
        for _ in 0..a.repeat {
            times.push(assembler.assemble(&a.task, &options)?.timings.total_ms);
        }
        let (p50, p95) = percentiles(times);
        let m = &out.metrics;
        let fewer = 100.0 * (1.0 - m.estimated_tokens as f64 / m.monolithic_tokens.max(1) as f64);
        if a.json {
            return print_json(
                &serde_json::json!({"runs": a.repeat, "p50_ms": p50, "p95_ms": p95, "includes_embedding": a.no_cache, "estimatedTokens": m.estimated_tokens, "monolithicTokens": m.monolithic_tokens}),
            );
        }
        println!(
            "assemble x{}: p50 {p50:.3} ms, p95 {p95:.3} ms ({}); prompt {} tokens vs monolithic {} ({fewer:.0}% fewer)",
            a.repeat,
            if a.no_cache { "embedding each time" } else { "cache hits" },
            m.estimated_tokens,
            m.monolithic_tokens
        );
        return Ok(());
    }
    if a.json {
        return print_json(&out);
    }
    for d in &out.diagnostics {
        eprintln!("note: {d}");
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.prompt.as_bytes())?;
    if !out.prompt.ends_with('\n') {
        writeln!(stdout)?;
    }
    Ok(())
}

/// Reads a history file: one JSON object per line, blank lines skipped; an error names the
/// file, the line and what is wrong with it.
fn read_history(path: &std::path::Path) -> Result<Vec<switchyard::HistoryEntry>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--history {}: reading the file", path.display()))?;
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        entries.push(serde_json::from_str(line).with_context(|| {
            format!(
                "--history {}:{}: expected {{\"role\", \"content\", \"tool\"?}}",
                path.display(),
                n + 1
            )
        })?);
    }
    Ok(entries)
}

/// Arguments of `switchyard trace`.
#[derive(Args, Debug)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

/// Trace log operations.
#[derive(clap::Subcommand, Debug)]
pub enum TraceCommand {
    /// Summarise a trace log: counts, p50/p95 per stage, fallback and injection rates.
    Stats {
        /// The trace log (JSONL, from `assemble --trace` or `serve --trace`).
        log: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn trace(a: TraceArgs) -> Result<()> {
    match a.command {
        TraceCommand::Stats { log, json } => {
            let s = switchyard::trace_stats(&log)
                .with_context(|| format!("reading the trace log {}", log.display()))?;
            if json {
                return print_json(&s);
            }
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "assemblies {}  sessions {}  unreadable lines {}",
                s.assemblies, s.sessions, s.unreadable_lines
            )?;
            for (stage, (p50, p95)) in &s.stage_ms {
                writeln!(out, "{stage:<8} p50 {p50:>8.3} ms  p95 {p95:>8.3} ms")?;
            }
            writeln!(
                out,
                "fallback rate {:.3}  injection rate {:.3} ({} entries flagged)  truncation rate {:.3}",
                s.fallback_rate, s.injection_rate, s.flagged_entries, s.truncation_rate
            )?;
            let modes: Vec<String> = s.modes.iter().map(|(m, n)| format!("{m} {n}")).collect();
            let sources: Vec<String> =
                s.mode_sources.iter().map(|(m, n)| format!("{m} {n}")).collect();
            writeln!(out, "modes: {}  (decided by: {})", modes.join(", "), sources.join(", "))?;
            Ok(())
        }
    }
}
