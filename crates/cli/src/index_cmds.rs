//! The commands about index files: `build-index`, `inspect`, `verify`.

use crate::commands::load_model;
use crate::print_json;
use anyhow::{Context, Result};
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use switchyard::format::{Index, OpenOptions};
use switchyard::router::RouterBuilder;

/// Arguments of `switchyard build-index`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    /// Manifest folder (tools.toml, skills.toml, modes.toml, injection.toml).
    #[arg(long, default_value = "manifests")]
    pub manifests: PathBuf,
    /// Index file to write.
    #[arg(long, default_value = "switchyard.idx")]
    pub out: PathBuf,
    /// Model: a short name (e5-small, minilm), a folder, or a cached Hugging Face repo id.
    #[arg(long, default_value = switchyard::embed::DEFAULT_MODEL)]
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
    /// Train the screen without switchyard's built-in documents in 12 languages.
    #[arg(long)]
    pub no_built_in_documents: bool,
    /// Give the learned screen the nearest attack and benign look-alike cosines as features
    /// beside the embedding (off by default: no gain measured, and each piece then costs a
    /// pass over every pattern).
    #[arg(long)]
    pub contrast_features: bool,
    /// Train the learned screen on the embedding alone, without its lexical head (hashed
    /// character and word n-grams of each piece, whose logit adds to the embedding head's).
    #[arg(long)]
    pub no_lexical_screen: bool,
    /// Share of the training attacks the screen flags that the triage may clear without
    /// embedding them (windows whose lexical logit is under the floor chosen for it are never
    /// embedded, which makes `memory add` of long entries several times faster); 0 turns the
    /// triage off.
    #[arg(long, default_value_t = switchyard_build_index::DEFAULT_TRIAGE_MAX_MISS)]
    pub triage_max_miss: f32,
    /// Train a head per family of attacks (jailbreaks: personas, role-play framings, harmful
    /// requests) beside the main screen, which may flag this much more of the benign training
    /// rows (out of fold) between them: more jailbreaks caught for more ordinary texts dropped.
    /// 0 trains none.
    #[arg(long, default_value_t = 0.0)]
    pub family_fpr: f32,
    /// Train no request contrast (which flags an entry whose one window reads as a request
    /// among windows that read as a document: an instruction planted in an e-mail or a table).
    #[arg(long)]
    pub no_request_contrast: bool,
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
    /// Fail (exit 1) when the built screen gets a check of the folder's `screen_checks.toml`
    /// wrong; without it, each failed check is a warning.
    #[arg(long)]
    pub strict_checks: bool,
    /// Screen with the folder's own injection.toml only: a catalog without one is then screened
    /// by the contrast rule alone, which flags nothing. By default such a catalog's screen learns
    /// switchyard's built-in attacks and look-alikes.
    #[arg(long)]
    pub own_attacks_only: bool,
    /// Folder where the screen's training texts' vectors are kept between builds, so a rebuild
    /// embeds only the texts it has not seen (about 40 s of a 48 s build with e5-small);
    /// default: $SWITCHYARD_CACHE_DIR, else $XDG_CACHE_HOME/switchyard, else
    /// ~/.cache/switchyard. The index is byte-identical either way.
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    pub cache_dir: Option<PathBuf>,
    /// Embed every training text of the screen, reading and writing no cache.
    #[arg(long)]
    pub no_cache: bool,
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
    screen.ignore_built_in_documents = a.no_built_in_documents;
    screen.options.contrast_features = a.contrast_features;
    screen.options.lexical = !a.no_lexical_screen;
    if !(a.screen_l2 > 0.0 && a.screen_l2.is_finite()) {
        anyhow::bail!("--screen-l2 {} must be a positive number such as 0.01", a.screen_l2);
    }
    screen.options.l2 = a.screen_l2;
    if !(0.0..0.5).contains(&a.triage_max_miss) {
        anyhow::bail!(
            "--triage-max-miss {} is outside [0, 0.5); give a share such as 0.005, or 0 to embed every window",
            a.triage_max_miss
        );
    }
    screen.options.triage_max_miss = a.triage_max_miss;
    if !(0.0..0.5).contains(&a.family_fpr) {
        anyhow::bail!(
            "--family-fpr {} is outside [0, 0.5); give a false-positive rate such as 0.005, or 0 for no family heads",
            a.family_fpr
        );
    }
    screen.options.family_fpr = a.family_fpr;
    screen.options.request_contrast = !a.no_request_contrast;
    if !a.no_cache {
        let dir = a.cache_dir.clone().unwrap_or_else(crate::measure::default_cache_dir);
        screen.vector_cache = Some(switchyard_build_index::VectorCache::new(dir));
    }
    for f in &a.injection_train {
        screen.add_file(f)?;
    }
    let adapter = match &a.adapter {
        Some(path) if !a.no_adapter => {
            Some((path.clone(), switchyard::adapter::Adapter::read(path)?))
        }
        _ => None,
    };
    // Read before the build, so a bad checks file fails in a second, not after minutes.
    let checks = switchyard::manifest::ScreenChecks::load(&a.manifests)?;
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
    let built_in_train = provisioned_training_rows();
    let options = switchyard_build_index::BuildOptions {
        force: a.force,
        progress,
        screen,
        adapter,
        own_attacks_only: a.own_attacks_only,
        built_in_train: built_in_train.clone(),
    };
    let outcome =
        switchyard_build_index::build_to_file(&a.manifests, &a.out, model.as_ref(), &options)
            .with_context(|| {
                format!("building {} from {}", a.out.display(), a.manifests.display())
            })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let switchyard_build_index::BuildOutcome::Built(r) = &outcome
        && r.built_in_attacks
        && built_in_train.is_none()
        && a.injection_train.is_empty()
    {
        eprintln!(
            "warning: the screen learned the built-in attacks without the default catalog's training rows (manifests/{} beside the models/ folder was not found), so it drops more ordinary text (10-19% of ordinary requests, against 4-5% with them): run `python3 models/provision.py` in a switchyard checkout, or pass --injection-train FILE.jsonl",
            switchyard_build_index::CATALOG_TRAIN_FILE
        );
    }
    let checked = match &checks {
        Some(c) => {
            let router = RouterBuilder::new(&a.out).build(Arc::clone(&model))?;
            Some(switchyard::run_screen_checks(&router, c)?)
        }
        None => None,
    };
    if a.json {
        let mut value = serde_json::to_value(&outcome)?;
        if let (Some(obj), Some(r)) = (value.as_object_mut(), &checked) {
            obj.insert("screen_checks".into(), serde_json::to_value(r)?);
        }
        print_json(&value)?;
    } else {
        print_outcome(&outcome, &a.model);
        if let Some(r) = &checked {
            print_checks(r);
        }
    }
    match &checked {
        Some(r) if a.strict_checks && !r.passed() => anyhow::bail!(
            "the screen of {} gets {} of the checks in {} wrong (--strict-checks): {}",
            a.out.display(),
            r.failures.len(),
            r.file.display(),
            r.failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
        ),
        _ => Ok(()),
    }
}

/// The default catalog's screen training rows, which `models/provision.py` writes into the
/// `manifests/` folder beside the `models/` folder it fills: the first found beside a folder
/// models are searched in. A catalog without attacks of its own trains on them with the
/// built-in attacks.
fn provisioned_training_rows() -> Option<PathBuf> {
    switchyard::embed::model_search_dirs(&crate::commands::model_dirs())
        .into_iter()
        .filter_map(|dir| {
            let file = switchyard_build_index::CATALOG_TRAIN_FILE;
            dir.parent().map(|p| p.join("manifests").join(file))
        })
        .find(|p| p.is_file())
}

/// Says how the screen did on the catalog's checks; each failure is a warning on stderr.
fn print_checks(r: &switchyard::ScreenCheckReport) {
    println!(
        "screen checks ({}, rule {}): {}/{} flagged, {}/{} let through",
        r.file.display(),
        r.rule,
        r.flagged,
        r.must_flag,
        r.kept,
        r.must_keep
    );
    for f in &r.failures {
        eprintln!("warning: screen check {}: {f}", r.file.display());
    }
}

/// Prints what the build did.
fn print_outcome(outcome: &switchyard_build_index::BuildOutcome, model: &str) {
    match outcome {
        switchyard_build_index::BuildOutcome::UpToDate { path, manifest_hash } => {
            println!(
                "{} is up to date (manifests {}, model {model}); use --force to rebuild",
                path.display(),
                &manifest_hash[..12],
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
            if r.built_in_attacks {
                println!(
                    "attacks: the catalog has no injection.toml patterns or look-alikes, so the screen learned {} ({} attacks, {} look-alikes; --own-attacks-only to skip them); its training rows are in the screen line below",
                    switchyard::manifest::BUILT_IN_ATTACKS,
                    r.rows.get("injections").copied().unwrap_or(0),
                    r.rows.get("benign").copied().unwrap_or(0)
                );
            }
            if r.built_in_thinking {
                println!(
                    "thinking: the catalog has no thinking.toml, so `think` and `assemble --thinking` use {}",
                    switchyard::manifest::BUILT_IN_THINKING
                );
            }
            let t = &r.thresholds;
            println!(
                "thresholds: tool {:.3}, skill {:.3}, mode {:.3}, injection {:.3} (unrelated {:.3}, related {:.3})",
                t.tool_min, t.skill_min, t.mode_min, t.injection, t.unrelated_mean, t.related_mean
            );
            match &r.screen.head {
                Some(h) => println!(
                    "screen: learned head{} on {} attacks and {} benign texts ({}); threshold {:.3} for {:.1}% false positives; out of fold: AUC {:.3}, recall {:.3}, FPR {:.3}",
                    if r.lexical_screen {
                        " (embedding + lexical n-grams)"
                    } else {
                        " (embedding)"
                    },
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
            if let Some(f) = &r.families {
                println!("{}", families_line(f));
            }
            match &r.request {
                Ok(q) => println!("{}", request_line(q)),
                Err(why) => println!("request    no request contrast: {why}"),
            }
            if let Some(t) = &r.triage {
                println!("{}", triage_line(t));
            }
        }
    }
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
        "screen_triage": index.screen_triage(),
        "screen_request": index.screen_request().map(|q| serde_json::json!({
            "threshold": q.threshold, "oof_fpr": q.oof_fpr, "oof_planted_recall": q.oof_planted_recall,
            "requests": q.requests, "document_rows": q.document_rows, "calibration_texts": q.calibration_texts,
        })),
        "screen_families": index.screen_families().map(|f| serde_json::json!({
            "family_fpr": f.family_fpr,
            "oof_fpr_combined": f.oof_fpr_combined,
            "heads": f.heads.iter().map(|h| serde_json::json!({
                "family": h.family, "categories": h.categories, "threshold": h.threshold,
                "lexical": h.lexical.is_some(), "lexical_floor": h.lexical_floor,
                "oof_auc": h.oof_auc, "oof_recall": h.oof_recall, "oof_fpr": h.oof_fpr,
                "attacks": h.attacks, "benign": h.benign,
            })).collect::<Vec<_>>(),
        })),
        "mode_questions": index.mode_questions().map(|q| serde_json::json!({
            "rules_version": q.rules_version,
            "modes": m.modes.iter().zip(&q.modes).map(|(mode, c)| serde_json::json!({
                "mode": mode.name, "examples": c.examples, "questions": c.questions,
            })).collect::<Vec<_>>(),
        })),
        "query_shift": index.query_shift().map(|q| serde_json::json!({
            "strength": q.strength, "requests": q.requests,
        })),
        "late": index.late().map(|l| serde_json::json!({
            "blend": l.blend,
            "tool_tokens": l.tools.scales.len(),
            "skill_tokens": l.skills.scales.len(),
            "both_sides": !l.tools.ids.is_empty(),
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
                "screen     learned head ({}): threshold {:.3} for {:.1}% false positives, near copies of an attack from cosine {:.3}; {} attacks and {} benign rows ({}); out of fold AUC {:.3}, recall {:.3}, FPR {:.3}; windows of {} bytes, at most {}",
                match index.screen_lexical() {
                    Some(l) => format!(
                        "embedding + lexical n-grams, {} weights, features v{}",
                        l.weights.len(),
                        l.features_version
                    ),
                    None => "embedding".to_string(),
                },
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
    if let Some(f) = index.screen_families() {
        println!("{}", families_line(f));
    }
    if let Some(q) = index.screen_request() {
        println!("{}", request_line(q));
    }
    match index.screen_triage() {
        Some(t) => println!("{}", triage_line(t)),
        None => println!("triage     none (every window of an untrusted entry is embedded)"),
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
    match index.query_shift() {
        Some(q) => println!(
            "shift      tasks score tools and skills less {:.2} x the centroid of {} ordinary requests",
            q.strength, q.requests
        ),
        None => println!("shift      none (built before format 7)"),
    }
    match index.late() {
        Some(l) => println!(
            "late       {:.2} of the dense score compares tokens one by one ({} tool and {} skill tokens; {})",
            l.blend,
            l.tools.scales.len(),
            l.skills.scales.len(),
            if l.tools.ids.is_empty() {
                "the task's tokens against the item's only, built before format 12"
            } else {
                "the task's tokens against the item's and the item's against the task's"
            }
        ),
        None => println!(
            "late       none (a model without a late-interaction share, a catalog whose token states pass {} MiB, or built before format 11)",
            switchyard_build_index::LATE_STATE_BUDGET >> 20
        ),
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
            if let Some(q) = index.mode_questions() {
                println!("{}", questions_line(m, q));
            }
        }
        None => {
            println!("hybrid     none (built before format 3: cosine thresholds, hard mode filter)")
        }
    }
    match index.thinking() {
        Some(t) => {
            let names: Vec<&str> = t.modes.iter().map(|m| m.name.as_str()).collect();
            let semantic = match t.calibration.semantic_margin {
                Some(margin) => format!("semantic fallback from a lead of {margin:.4}"),
                None => "no semantic fallback".to_string(),
            };
            println!("thinking   {}; default {}; {semantic}", names.join(", "), t.default_mode);
        }
        None => println!("thinking   none (rebuild to get the built-in modes)"),
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

/// The `inspect` line of the mode questions: which modes' examples ask questions, and whether
/// the question rule can apply (the default mode's examples ask none).
fn questions_line(
    m: &switchyard::format::IndexMeta,
    q: &switchyard::format::ModeQuestionsMeta,
) -> String {
    let counts: Vec<String> = m
        .modes
        .iter()
        .zip(&q.modes)
        .map(|(mode, c)| format!("{} {}/{}", mode.name, c.questions, c.examples))
        .collect();
    let default = m.modes.iter().zip(&q.modes).find(|(mode, _)| mode.name == m.default_mode);
    let applies = default.is_some_and(|(_, c)| c.examples > 0 && c.questions == 0)
        && q.modes.iter().any(|c| c.questions > 0);
    let effect = if applies {
        "an unsure guess of a question goes to the best mode whose examples ask questions"
    } else {
        "no question rule (it needs a default mode whose examples ask none and another mode whose examples ask some)"
    };
    format!("questions  examples that ask one: {}; {effect}", counts.join(", "))
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

/// The screen's family heads, one line each (build output and `inspect`).
fn families_line(f: &switchyard::format::ScreenFamiliesMeta) -> String {
    let heads: Vec<String> = f
        .heads
        .iter()
        .map(|h| {
            format!(
                "families   {} head ({} attacks of {}): threshold {:.3}{}; out of fold AUC {:.3}, recall {:.3}, FPR {:.3}",
                h.family,
                h.attacks,
                h.categories.join(", "),
                h.threshold,
                h.lexical_floor
                    .map(|f| format!(", triage floor {f:.3}"))
                    .unwrap_or_default(),
                h.oof_auc,
                h.oof_recall,
                h.oof_fpr
            )
        })
        .collect();
    format!(
        "{}\nfamilies   the main head and the family heads (allowed {:.2}% more) together flag {:.2}% of the benign training rows out of fold",
        heads.join("\n"),
        f.family_fpr * 100.0,
        f.oof_fpr_combined * 100.0
    )
}

/// The screen's request contrast, in one line (build output and `inspect`).
fn request_line(q: &switchyard::format::ScreenRequestMeta) -> String {
    format!(
        "request    an entry longer than a window is flagged when its most request-like sentence stands {:.3} above the others' mean (request head on {} requests and {} document sentences); out of fold it flags {:.1}% of {} long benign texts and {:.1}% of documents with a request planted",
        q.threshold,
        q.requests,
        q.document_rows,
        q.oof_fpr * 100.0,
        q.calibration_texts,
        q.oof_planted_recall * 100.0
    )
}

/// What the screen's triage does, in one line (build output and `inspect`).
fn triage_line(t: &switchyard::format::ScreenTriageMeta) -> String {
    format!(
        "triage     windows with a lexical logit under {:.3} are cleared without an embedding; out of fold it clears {:.1}% of the flagged training attacks (at most {:.1}%) and {:.1}% of the benign rows",
        t.lexical_floor,
        t.oof_missed * 100.0,
        t.max_miss * 100.0,
        t.oof_benign_cleared * 100.0
    )
}
