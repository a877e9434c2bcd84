use crate::{model_for_index, print_json};
use anyhow::{Context, Result, bail};
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use switchyard_embed::Embedder;
use switchyard_format::{Index, OpenOptions};
use switchyard_router::{RouteOptions, RouterBuilder, ScreenEntry};

/// Arguments of `switchyard embed`.
#[derive(Args, Debug)]
pub struct EmbedArgs {
    /// The text to embed.
    pub text: String,
    /// Model: a short name (minilm, e5-small), a folder, or a cached Hugging Face repo id.
    #[arg(long, default_value = "minilm")]
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
pub fn embed_options() -> Result<switchyard_embed::EmbedOptions> {
    Ok(switchyard_embed::EmbedOptions::from_vars(|k| std::env::var(k).ok())?)
}

pub fn load_model(name: &str) -> Result<Arc<dyn Embedder>> {
    let e = switchyard_embed::load_with(name, &embed_options()?)
        .with_context(|| format!("loading model {name}"))?;
    Ok(Arc::new(e))
}

pub fn embed(a: EmbedArgs) -> Result<()> {
    let model = switchyard_embed::load_with(&a.model, &embed_options()?)
        .with_context(|| format!("loading model {}", a.model))?;
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
            "p50_ms": p50, "p95_ms": p95, "threads": threads,
        }))
    } else {
        let head: Vec<String> = v.iter().take(8).map(|x| format!("{x:.4}")).collect();
        println!(
            "model        {}\nfingerprint  {}\ndim          {}\ntokens       {tokens}\nthreads      {threads}\nfirst_ms     {first_ms:.2}\np50_ms       {p50:.2} ({} runs)\np95_ms       {p95:.2}\nembedding    [{}, ...]",
            info.name,
            info.fingerprint,
            info.dim,
            times.len().max(1),
            head.join(", ")
        );
        Ok(())
    }
}

/// Arguments of `switchyard build-index`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Manifest folder (tools.toml, skills.toml, modes.toml, injection.toml).
    #[arg(long, default_value = "manifests")]
    pub manifests: PathBuf,
    /// Index file to write.
    #[arg(long, default_value = "switchyard.idx")]
    pub out: PathBuf,
    /// Model: a short name (minilm, e5-small), a folder, or a cached Hugging Face repo id.
    #[arg(long, default_value = "minilm")]
    pub model: String,
    /// Rebuild even when the file already matches the manifests and model.
    #[arg(long)]
    pub force: bool,
    /// Labelled texts the learned injection screen also trains on: one {"text", "label": 0|1}
    /// per line, the schema of `eval injection` samples (repeatable).
    #[arg(long = "injection-train", value_name = "FILE.jsonl")]
    pub injection_train: Vec<PathBuf>,
    /// False-positive rate on benign text the screen's threshold is chosen for.
    #[arg(long, default_value_t = switchyard_build_index::DEFAULT_TARGET_FPR)]
    pub target_fpr: f32,
    /// Train the screen without the manifest folder's own injection-train.jsonl.
    #[arg(long)]
    pub no_catalog_train: bool,
    /// Give the learned screen the nearest attack and benign look-alike cosines as features
    /// beside the embedding (off by default: no gain measured, and each piece then costs a
    /// pass over every pattern).
    #[arg(long)]
    pub contrast_features: bool,
    /// L2 penalty of the learned screen (larger: smoother, less fitted to the training rows).
    #[arg(long, default_value_t = switchyard_build_index::DEFAULT_L2)]
    pub screen_l2: f64,
    /// A query adapter (`switchyard train adapter`) to map tools and skills rows with; the
    /// index keeps it and the router maps each task with it.
    #[arg(long, value_name = "FILE.swya", conflicts_with = "no_adapter")]
    pub adapter: Option<PathBuf>,
    /// Build without a query adapter (the encoder's own vectors throughout).
    #[arg(long)]
    pub no_adapter: bool,
    /// Print a JSON report (no progress bar).
    #[arg(long)]
    pub json: bool,
}

pub fn build_index(a: BuildArgs) -> Result<()> {
    if !(0.0..0.5).contains(&a.target_fpr) {
        anyhow::bail!(
            "--target-fpr {} is outside [0, 0.5); give a false-positive rate such as 0.01",
            a.target_fpr
        );
    }
    let mut screen = switchyard_build_index::ScreenTraining::default();
    screen.options.target_fpr = a.target_fpr;
    screen.ignore_catalog_file = a.no_catalog_train;
    screen.options.contrast_features = a.contrast_features;
    if !(a.screen_l2 > 0.0 && a.screen_l2.is_finite()) {
        anyhow::bail!("--screen-l2 {} must be a positive number such as 0.01", a.screen_l2);
    }
    screen.options.l2 = a.screen_l2;
    for f in &a.injection_train {
        screen.add_file(f)?;
    }
    let adapter = match &a.adapter {
        Some(path) if !a.no_adapter => {
            Some((path.clone(), switchyard::adapter::Adapter::read(path)?))
        }
        _ => None,
    };
    let model = load_model(&a.model)?;
    let bar = (!a.json && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "embedding {bar:40} {pos}/{len} texts {elapsed}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let progress: Option<Box<dyn Fn(usize, usize) + Send + Sync>> = bar.clone().map(|b| {
        Box::new(move |done: usize, total: usize| {
            b.set_length(total as u64);
            b.set_position(done as u64);
        }) as Box<dyn Fn(usize, usize) + Send + Sync>
    });
    let options =
        switchyard_build_index::BuildOptions { force: a.force, progress, screen, adapter };
    let outcome =
        switchyard_build_index::build_to_file(&a.manifests, &a.out, model.as_ref(), &options)
            .with_context(|| {
                format!("building {} from {}", a.out.display(), a.manifests.display())
            })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if a.json {
        return print_json(&outcome);
    }
    match outcome {
        switchyard_build_index::BuildOutcome::UpToDate { path, manifest_hash } => {
            println!(
                "{} is up to date (manifests {}, model {}); use --force to rebuild",
                path.display(),
                &manifest_hash[..12],
                a.model
            );
        }
        switchyard_build_index::BuildOutcome::Built(r) => {
            for w in &r.warnings {
                eprintln!("{w}");
            }
            let rows: Vec<String> = r.rows.iter().map(|(k, v)| format!("{k} {v}")).collect();
            println!(
                "wrote {} ({} bytes) with {} in {:.0} ms (embedding {:.0} ms)\nrows: {}",
                r.path.display(),
                r.bytes,
                r.model,
                r.total_ms,
                r.embed_ms,
                rows.join(", ")
            );
            let t = &r.thresholds;
            println!(
                "thresholds: tool {:.3}, skill {:.3}, mode {:.3}, injection {:.3} (unrelated {:.3}, related {:.3})",
                t.tool_min, t.skill_min, t.mode_min, t.injection, t.unrelated_mean, t.related_mean
            );
            match &r.screen.head {
                Some(h) => println!(
                    "screen: learned head on {} attacks and {} benign texts ({}); threshold {:.3} for {:.1}% false positives; out of fold: AUC {:.3}, recall {:.3}, FPR {:.3}",
                    h.attacks,
                    h.benign,
                    h.sources.join(", "),
                    h.threshold,
                    h.target_fpr * 100.0,
                    h.oof_auc,
                    h.oof_recall,
                    h.oof_fpr
                ),
                None => println!(
                    "screen: contrast rule only: {}",
                    r.screen.fallback_reason.as_deref().unwrap_or("no head")
                ),
            }
        }
    }
    Ok(())
}

/// Arguments of `switchyard inspect`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The index file.
    pub file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn inspect(a: InspectArgs) -> Result<()> {
    let t = std::time::Instant::now();
    let index = Index::open(&a.file, &OpenOptions::new())?;
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let h = index.header();
    let m = index.meta();
    let sections: Vec<serde_json::Value> = index
        .sections()
        .iter()
        .map(|s| serde_json::json!({"kind": s.kind.name(), "offset": s.offset, "len": s.len, "rows": s.rows, "cols": s.cols, "stride": s.stride, "crc32": format!("{:08x}", s.crc32)}))
        .collect();
    let report = serde_json::json!({
        "path": a.file, "format_version": h.version, "dim": h.dim, "file_len": h.file_len, "flags": h.flags,
        "model": m.model, "manifest_hash": m.manifest_hash, "sections": sections,
        "counts": {"tools": m.tools.len(), "skills": m.skills.len(), "modes": m.modes.len(), "injections": m.injections.len(), "benign": m.benign.len()},
        "default_mode": m.default_mode, "thresholds": m.thresholds, "open_ms": open_ms,
        "selection": index.selection().map(|sel| serde_json::json!({
            "builder_version": sel.builder_version,
            "tools": sel.tools, "skills": sel.skills, "mode": sel.mode,
            "out_of_mode_penalty": sel.out_of_mode_penalty, "hints": sel.hints,
            "lexical_terms": {"tools": sel.tools_lexical.terms.len(), "skills": sel.skills_lexical.terms.len()},
        })),
        "screen": index.screen().map(|s| serde_json::json!({
            "builder_version": s.builder_version,
            "windowing": s.windowing,
            "fallback_reason": s.fallback_reason,
            "head": s.head.as_ref().map(|h| serde_json::json!({
                "threshold": h.threshold, "near_copy_threshold": h.near_copy_threshold, "target_fpr": h.target_fpr, "l2": h.l2,
                "attack_weight": h.attack_weight, "benign_weight": h.benign_weight,
                "oof_auc": h.oof_auc, "oof_recall": h.oof_recall, "oof_fpr": h.oof_fpr,
                "attacks": h.attacks, "benign": h.benign, "sources": h.sources,
            })),
        })),
        "adapter": index.adapter().map(|a| serde_json::json!({
            "id": a.id, "rank": a.rank, "trained_on": a.trained_on,
            "info": serde_json::from_str::<serde_json::Value>(&a.info_json).ok(),
        })),
    });
    if a.json {
        return print_json(&report);
    }
    println!("{}  format v{}  {} bytes  dim {}", a.file.display(), h.version, h.file_len, h.dim);
    println!(
        "model      {} ({}), prefix {:?}, pooling {}",
        m.model.name, m.model.fingerprint, m.model.prefix, m.model.pooling
    );
    println!("manifests  {}", m.manifest_hash);
    println!(
        "counts     {} tools, {} skills, {} modes, {} injection patterns, {} benign",
        m.tools.len(),
        m.skills.len(),
        m.modes.len(),
        m.injections.len(),
        m.benign.len()
    );
    let t = &m.thresholds;
    println!(
        "thresholds tool {:.3}  skill {:.3}  mode {:.3}  injection {:.3}  memory {:.3}",
        t.tool_min, t.skill_min, t.mode_min, t.injection, t.memory_min
    );
    match index.static_space() {
        Some(st) => {
            let c = st.meta;
            println!(
                "cascade    {} pieces; answers when coverage >= {:.2} and lead >= {:.2} of the \
                 static spread; static tool {:.3}  skill {:.3}  mode {:.3}",
                c.piece_ids.len(),
                c.min_coverage,
                c.margin,
                c.thresholds.tool_min,
                c.thresholds.skill_min,
                c.thresholds.mode_min
            );
        }
        None => println!("cascade    none (every task runs the model)"),
    }
    match index.screen() {
        Some(sc) => match &sc.head {
            Some(h) => println!(
                "screen     learned head: threshold {:.3} for {:.1}% false positives, near copies of an attack from cosine {:.3}; {} attacks and {} benign rows ({}); out of fold AUC {:.3}, recall {:.3}, FPR {:.3}; windows of {} bytes, at most {}",
                h.threshold,
                h.target_fpr * 100.0,
                h.near_copy_threshold,
                h.attacks,
                h.benign,
                h.sources.join(", "),
                h.oof_auc,
                h.oof_recall,
                h.oof_fpr,
                sc.windowing.target_bytes,
                sc.windowing.max_windows
            ),
            None => println!(
                "screen     contrast rule only: {}",
                sc.fallback_reason.as_deref().unwrap_or("no head")
            ),
        },
        None => println!(
            "screen     contrast rule only (format version {} has no learned screen)",
            h.version
        ),
    }
    match index.adapter() {
        Some(ad) => println!(
            "adapter    {} (rank {}, trained on {}): tools and skills are scored in its space",
            ad.id,
            ad.rank,
            ad.trained_on.join(", ")
        ),
        None => println!("adapter    none (the model's own vectors)"),
    }
    match index.selection() {
        Some(sel) => {
            for (what, f, lex) in [
                ("tools", &sel.tools, &sel.tools_lexical),
                ("skills", &sel.skills, &sel.skills_lexical),
            ] {
                // Catalogs too small to gate store the lowest finite gate: always open.
                let gate = if f.gate_z <= f32::MIN / 2.0 {
                    "gate always open (too few items to gate)".to_string()
                } else {
                    format!("gate z {:.2} or lexical {:.2}", f.gate_z, f.lexical_gate)
                };
                println!(
                    "hybrid     {what}: lexical weight {:.2} ({}), {gate}, {} terms",
                    f.lexical_weight,
                    f.source,
                    lex.terms.len()
                );
            }
            let c = &sel.mode;
            match c.semantic_margin {
                Some(margin) => println!(
                    "modes      semantic guess needs a lead of {margin:.4} ({} examples, leave-one-out precision {:.2} on {:.0}% of them); default {}",
                    c.examples,
                    c.precision.unwrap_or(0.0),
                    100.0 * c.coverage.unwrap_or(0.0),
                    m.default_mode
                ),
                None => {
                    println!("modes      no semantic guess: {}", c.note.as_deref().unwrap_or("off"))
                }
            }
        }
        None => {
            println!("hybrid     none (built before format 3: cosine thresholds, hard mode filter)")
        }
    }
    println!(
        "{:<16} {:>10} {:>10} {:>7} {:>5} {:>6} {:>9}",
        "section", "offset", "len", "rows", "cols", "stride", "crc32"
    );
    for s in index.sections() {
        println!(
            "{:<16} {:>10} {:>10} {:>7} {:>5} {:>6} {:>9}",
            s.kind.name(),
            s.offset,
            s.len,
            s.rows,
            s.cols,
            s.stride,
            format!("{:08x}", s.crc32)
        );
    }
    Ok(())
}

/// Arguments of `switchyard verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The index file.
    pub file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn verify(a: VerifyArgs) -> Result<()> {
    // Opening with verification checks every crc; `verify()` is explicit about it.
    let index = Index::open(&a.file, &OpenOptions::new())?;
    index.verify()?;
    if a.json {
        print_json(
            &serde_json::json!({"path": a.file, "ok": true, "sections": index.sections().len()}),
        )
    } else {
        println!(
            "{}: ok ({} sections, every checksum verified)",
            a.file.display(),
            index.sections().len()
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
    let model = load_model(&model_for_index(a.model.as_deref(), &a.index)?)?;
    let router =
        RouterBuilder::new(&a.index).cache_size(if a.no_cache { 0 } else { 256 }).build(model)?;
    let options = RouteOptions {
        mode: Some(a.mode.clone()),
        interactive: a.interactive,
        git_changes: a.git_changes,
    };
    let d = router.route(&a.task, &options)?;
    if a.repeat > 0 {
        let mut scratch = switchyard_router::Scratch::default();
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

fn truncate(s: &str, n: usize) -> String {
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
    let model = load_model(&model_for_index(a.model.as_deref(), &a.index)?)?;
    let router =
        RouterBuilder::new(&a.index).contrast_only(a.contrast).build(Arc::clone(&model))?;
    let refs: Vec<&str> = a.texts.iter().map(String::as_str).collect();
    // Cut and embedded exactly as `memory add` stores an entry.
    let stored =
        switchyard_memory::embed_for_screening(model.as_ref(), &refs, &router.prepare_config())?;
    let entries: Vec<ScreenEntry<'_>> = a
        .texts
        .iter()
        .zip(&stored)
        .map(|(t, e)| switchyard::screen_entry(t, &e.embedding, &e.pieces, true))
        .collect();
    let report = router.screen(&entries)?;
    if a.json {
        return print_json(&report);
    }
    let mut all: Vec<_> = report.kept.iter().chain(&report.dropped).collect();
    all.sort_by_key(|v| v.entry);
    for v in all {
        writeln!(
            std::io::stdout(),
            "{:<5} score {:>7.3}  {} of {} pieces ({}): {}",
            if v.flagged { "DROP" } else { "keep" },
            v.score,
            v.decided_by.piece,
            v.pieces_screened,
            v.decided_by.origin,
            truncate(&v.decided_by.excerpt, 70)
        )?;
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
        let r = switchyard_embed::resolve(n).and_then(|m| m.verify().map(|()| m));
        match r {
            Ok(m) => rows.push(serde_json::json!({"name": n, "ok": true, "dir": m.dir, "fingerprint": m.fingerprint().to_hex(), "dim": m.spec.dim, "license": m.spec.license})),
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
    /// Folder with constitution.md and rules/<mode>.md (default: ./manifests if it has a
    /// constitution, else the built-in one).
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
    let model = load_model(&model_for_index(a.model.as_deref(), &a.index)?)?;
    let prompts = a.prompts.clone().or_else(|| {
        let d = PathBuf::from("manifests");
        d.join("constitution.md").is_file().then_some(d)
    });
    let mut b = switchyard::AssemblerBuilder::new(&a.index);
    b.budget(a.budget).token_counter(counter).prompts_dir(prompts).memory_db(a.memory.clone());
    b.router().cache_size(if a.no_cache { 0 } else { 256 });
    let assembler = b.build(model)?;
    let options = switchyard::AssembleOptions {
        mode: Some(a.mode.clone()),
        root: a.root.clone(),
        interactive: a.interactive,
        git_changes: a.git_changes.then_some(true),
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

/// Arguments of `switchyard memory`.
#[derive(Args, Debug)]
pub struct MemoryArgs {
    #[command(subcommand)]
    pub command: MemoryCommand,
}

/// Memory store operations.
#[derive(clap::Subcommand, Debug)]
pub enum MemoryCommand {
    /// Add an entry, embedded once now with the index's model.
    Add {
        /// The text (`-` reads standard input).
        text: String,
        /// Database file.
        #[arg(long)]
        db: PathBuf,
        /// Index whose model embeds the entry.
        #[arg(long)]
        index: PathBuf,
        /// Kind: memory, activity, or an instruction-like kind (system, meta, override).
        #[arg(long, default_value = "memory")]
        kind: String,
        /// Where it came from.
        #[arg(long, default_value = "cli")]
        source: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List entries.
    List {
        /// Database file.
        #[arg(long)]
        db: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove an entry by id.
    Remove {
        /// The id.
        id: i64,
        /// Database file.
        #[arg(long)]
        db: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-embed every entry with the index's model (after a model change).
    Reembed {
        /// Database file.
        #[arg(long)]
        db: PathBuf,
        /// Index whose model embeds the entries.
        #[arg(long)]
        index: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn memory(a: MemoryArgs) -> Result<()> {
    use switchyard_memory::MemoryStore;
    match a.command {
        MemoryCommand::Add { text, db, index, kind, source, json } => {
            let text = if text == "-" {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                    .context("reading standard input")?;
                s
            } else {
                text
            };
            let model = load_model(&model_for_index(None, &index)?)?;
            let router = RouterBuilder::new(&index).build(Arc::clone(&model))?;
            let mut store = MemoryStore::open(&db)?;
            store.set_prepare(router.prepare_config());
            let id = store.add(model.as_ref(), &kind, text.trim(), &source)?;
            if json {
                print_json(&serde_json::json!({"id": id, "kind": kind}))
            } else {
                println!("added entry {id} ({kind})");
                Ok(())
            }
        }
        MemoryCommand::List { db, json } => {
            let mut store = MemoryStore::open(&db)?;
            let entries = store.list()?.to_vec();
            if json {
                return print_json(&entries);
            }
            for e in entries {
                println!("{:>5}  {:<9} {}  {}", e.id, e.kind, e.created_at, truncate(&e.text, 80));
            }
            Ok(())
        }
        MemoryCommand::Remove { id, db, json } => {
            let removed = MemoryStore::open(&db)?.remove(id)?;
            if !removed {
                bail!("{}: no entry {id}", db.display());
            }
            if json {
                print_json(&serde_json::json!({"removed": id}))
            } else {
                println!("removed entry {id}");
                Ok(())
            }
        }
        MemoryCommand::Reembed { db, index, json } => {
            let model = load_model(&model_for_index(None, &index)?)?;
            let router = RouterBuilder::new(&index).build(Arc::clone(&model))?;
            let n = MemoryStore::open(&db)?
                .set_prepare(router.prepare_config())
                .reembed(model.as_ref())?;
            if json {
                print_json(&serde_json::json!({"reembedded": n, "model": model.info().name}))
            } else {
                println!("re-embedded {n} entries with {}", model.info().name);
                Ok(())
            }
        }
    }
}
