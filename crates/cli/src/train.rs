//! `switchyard train adapter`: learn a query adapter from labelled task/tool sets.

use crate::commands::load_model;
use crate::measure::Bars;
use crate::print_json;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use switchyard_eval::adapter::{
    AdapterTraining, SetSpec, TrainConfig, ValidationSplit, train_adapter,
};

#[derive(Args, Debug)]
pub struct TrainArgs {
    #[command(subcommand)]
    pub command: TrainCommand,
}

#[derive(Subcommand, Debug)]
pub enum TrainCommand {
    /// Learn a low-rank adapter that maps tasks and tools closer together, from folders of
    /// `tools.jsonl` + `queries.jsonl` (the `eval tools` format). Build an index with it:
    /// `switchyard build-index --adapter FILE`.
    Adapter(AdapterArgs),
}

#[derive(Args, Debug)]
pub struct AdapterArgs {
    /// The model to train for: `e5-small`, `minilm` or a folder.
    #[arg(long)]
    pub model: String,
    /// Training sets, comma-separated: FOLDER or FOLDER:SPLIT (only queries whose `split` is
    /// SPLIT), e.g. `../shared/data/metatool,../shared/data/seal_tools:dev`.
    #[arg(long, value_delimiter = ',', required_unless_present = "catalog")]
    pub train: Vec<String>,
    /// Also train on a manifest folder (your own catalog) with its routing cases: each case's
    /// `task` and `tools` are a training pair (use with --cases).
    #[arg(long, requires = "cases")]
    pub catalog: Option<PathBuf>,
    /// The routing cases of --catalog (the `eval cases` format).
    #[arg(long, requires = "catalog")]
    pub cases: Option<PathBuf>,
    /// Sets only validated on, never trained on (comma-separated, same syntax): the epoch is
    /// chosen on them too. Another catalog here predicts best how the adapter transfers.
    #[arg(long, value_delimiter = ',')]
    pub validate: Vec<String>,
    /// The adapter file to write (atomically).
    #[arg(long)]
    pub out: PathBuf,
    /// Rank of the residual map.
    #[arg(long, default_value_t = TrainConfig::default().rank)]
    pub rank: usize,
    /// Most epochs (the best on validation is kept).
    #[arg(long, default_value_t = TrainConfig::default().max_epochs)]
    pub epochs: usize,
    /// Queries drawn from each set per epoch (validation runs after each epoch).
    #[arg(long, default_value_t = TrainConfig::default().epoch_queries)]
    pub epoch_queries: usize,
    /// Stop after this many epochs without a better validation recall.
    #[arg(long, default_value_t = TrainConfig::default().patience)]
    pub patience: usize,
    /// Map the tools' descriptions too (a symmetric map) instead of only query-like texts.
    #[arg(long)]
    pub both_sides: bool,
    /// Softmax temperature of the contrastive loss.
    #[arg(long, default_value_t = TrainConfig::default().temperature)]
    pub temperature: f64,
    /// AdamW learning rate.
    #[arg(long, default_value_t = TrainConfig::default().learning_rate)]
    pub learning_rate: f64,
    /// AdamW weight decay (pulls the map towards the identity).
    #[arg(long, default_value_t = TrainConfig::default().weight_decay)]
    pub weight_decay: f64,
    /// Seed of the initialisation and the shuffles.
    #[arg(long, default_value_t = TrainConfig::default().seed)]
    pub seed: u64,
    /// One tool (or query) in this many, by a hash of its text, is held out for validation;
    /// 0 trains on every query and keeps the last epoch.
    #[arg(long, default_value_t = 5)]
    pub validation_every: u64,
    /// Hold out `tools` (measures tools never trained on: for an adapter meant for other
    /// catalogs) or `queries` (new requests for the same tools: for your own catalog).
    #[arg(long, default_value = "tools", value_parser = ["tools", "queries"])]
    pub validation_split: String,
    /// Where embeddings are cached [default: $SWITCHYARD_CACHE_DIR or ~/.cache/switchyard].
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Print the adapter's training record as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn train(a: TrainArgs) -> Result<()> {
    match a.command {
        TrainCommand::Adapter(a) => adapter(a),
    }
}

fn adapter(a: AdapterArgs) -> Result<()> {
    for (name, v) in [("--temperature", a.temperature), ("--learning-rate", a.learning_rate)] {
        anyhow::ensure!(v > 0.0 && v.is_finite(), "{name} {v}: must be a positive number");
    }
    anyhow::ensure!(
        a.weight_decay >= 0.0 && a.weight_decay.is_finite(),
        "--weight-decay {}: must be zero or positive",
        a.weight_decay
    );
    anyhow::ensure!(a.epochs > 0, "--epochs 0: train at least one epoch");
    anyhow::ensure!(a.rank > 0, "--rank 0: the adapter needs a rank of at least 1 (e.g. 16)");
    // Bad set folders are reported before the model loads and anything is embedded.
    for (flag, list) in [("--train", &a.train), ("--validate", &a.validate)] {
        for s in list.iter() {
            let spec = SetSpec::parse(s);
            for file in ["tools.jsonl", "queries.jsonl"] {
                anyhow::ensure!(
                    spec.folder.join(file).is_file(),
                    "{flag} {s}: {} has no {file}; a set is a folder with tools.jsonl and queries.jsonl (the `eval tools` format), optionally :SPLIT",
                    spec.folder.display()
                );
            }
        }
    }
    if let (Some(dir), Some(cases)) = (&a.catalog, &a.cases) {
        anyhow::ensure!(
            dir.join("tools.toml").is_file()
                || dir.join(switchyard::manifest::TOOLS_JSON).is_file()
                || dir.join(switchyard::manifest::TOOLS_DIR).is_dir(),
            "--catalog {}: no tools.toml or tools.json in it; give the manifest folder of your catalog",
            dir.display()
        );
        anyhow::ensure!(cases.is_file(), "--cases {}: no such file", cases.display());
    }
    let model = load_model(&a.model)?;
    let mut sets: Vec<SetSpec> = a.train.iter().map(|s| SetSpec::parse(s)).collect();
    if let (Some(dir), Some(cases)) = (&a.catalog, &a.cases) {
        sets.push(SetSpec::catalog(dir, cases));
    }
    let training = AdapterTraining {
        sets,
        validate_on: a.validate.iter().map(|s| SetSpec::parse(s)).collect(),
        cache_dir: a.cache_dir.unwrap_or_else(crate::measure::default_cache_dir),
        config: TrainConfig {
            rank: a.rank,
            temperature: a.temperature,
            learning_rate: a.learning_rate,
            weight_decay: a.weight_decay,
            max_epochs: a.epochs,
            epoch_queries: a.epoch_queries,
            patience: a.patience,
            both_sides: a.both_sides,
            seed: a.seed,
            ..TrainConfig::default()
        },
        validation_every: a.validation_every,
        validation_split: match a.validation_split.as_str() {
            "queries" => ValidationSplit::Queries,
            _ => ValidationSplit::Tools,
        },
    };
    let bars = Bars::new();
    let progress = |s: &str, d: usize, t: usize| bars.report(s, d, t);
    let names: Vec<String> =
        training.sets.iter().chain(&training.validate_on).map(SetSpec::name).collect();
    let epochs = |e: &switchyard_eval::adapter::EpochReport| {
        let per_set: Vec<String> =
            names.iter().zip(&e.validation_recall5).map(|(n, r)| format!("{n} {r:.3}")).collect();
        eprintln!(
            "epoch {}: loss {:.4}, validation recall@5: {}",
            e.epoch,
            e.loss,
            per_set.join(", ")
        );
    };
    let adapter = train_adapter(model.as_ref(), &training, &progress, &epochs)?;
    bars.finish();
    adapter.write(&a.out).with_context(|| format!("writing {}", a.out.display()))?;
    if a.json {
        return print_json(&serde_json::json!({
            "out": a.out,
            "id": adapter.id(),
            "info": adapter.info,
        }));
    }
    println!(
        "wrote {} (adapter {}, rank {}, best epoch {} of {})",
        a.out.display(),
        adapter.id(),
        adapter.rank,
        adapter.info.best_epoch,
        adapter.info.epochs_run
    );
    println!(
        "{:<28}{:>8}{:>8}{:>8}{:>12}{:>12}",
        "set", "tools", "train", "valid", "r@5 before", "r@5 after"
    );
    for s in &adapter.info.sets {
        println!(
            "{:<28}{:>8}{:>8}{:>8}{:>12.3}{:>12.3}",
            s.name,
            s.tools,
            s.train_queries,
            s.validation_queries,
            s.validation_recall5_before,
            s.validation_recall5_after
        );
    }
    Ok(())
}
