//! The commands that write and check index files: `build-index`, `verify` (`inspect` is in
//! `inspect_cmd`).

use crate::commands::load_model;
use crate::inspect_cmd::{families_line, request_line, triage_line};
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
    #[arg(long, default_value_t = switchyard_build_index::DEFAULT_FAMILY_FPR)]
    pub family_fpr: f32,
    /// Rectified units in each family head's hidden layer: 64 reads a jailbreak's request apart
    /// from its role-play framing better than one direction through the embedding (0).
    #[arg(long, default_value_t = switchyard_build_index::DEFAULT_FAMILY_HIDDEN)]
    pub family_hidden: usize,
    /// The middle layer of the model the screen's heads read beside its final vector (that
    /// layer's pooled states keep more of how a text is written): 0 reads the final vector
    /// alone; absent, the model's own (`screen_layer` in its `model.toml`: 8 for e5-small, which
    /// catches more jailbreaks and drops a few more code and log lines; none for MiniLM).
    #[arg(long)]
    pub screen_layer: Option<usize>,
    /// Train no request contrast (which flags an entry whose one window reads as a request
    /// among windows that read as a document: an instruction planted in an e-mail or a table).
    #[arg(long)]
    pub no_request_contrast: bool,
    /// Screen long entries by their windows only: no sentence threshold, so `memory add` stores
    /// and embeds no sentence pieces (an instruction packed with longer benign sentences in a
    /// window may then pass).
    #[arg(long)]
    pub no_sentence_pieces: bool,
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
    if a.family_hidden > 1024 {
        anyhow::bail!(
            "--family-hidden {} is more units than a family head needs; give 64, or 0 (the default) for one direction",
            a.family_hidden
        );
    }
    screen.options.family_hidden = a.family_hidden;
    screen.options.layer = a.screen_layer;
    screen.options.request_contrast = !a.no_request_contrast;
    screen.options.sentence_pieces = !a.no_sentence_pieces;
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
