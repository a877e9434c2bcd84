//! `switchyard memory`: the store of untrusted entries and the operator's rules.

use crate::commands::{open_with_model, truncate};
use crate::print_json;
use anyhow::{Context, Result, bail};
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use switchyard::embed::Embedder;
use switchyard::memory::MemoryStore;
use switchyard::router::RouterBuilder;

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
    /// The operator's rules: offered to related tasks until proven or offered to three
    /// prompts, then always in the trusted MANDATORY RULES layer.
    Rule {
        #[command(subcommand)]
        command: RuleCommand,
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

/// Operator rule operations.
#[derive(clap::Subcommand, Debug)]
pub enum RuleCommand {
    /// Add a rule, embedded once now with the index's model.
    Add {
        /// The rule (`-` reads standard input).
        text: String,
        /// Database file.
        #[arg(long)]
        db: PathBuf,
        /// Index whose model embeds the rule.
        #[arg(long)]
        index: PathBuf,
        /// Promote it at once instead of after three prompts.
        #[arg(long)]
        proven: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Mark a rule proven (promoted at once), or no longer proven with `--undo`.
    Prove {
        /// The rule's id.
        id: i64,
        /// Database file.
        #[arg(long)]
        db: PathBuf,
        /// Take the mark back.
        #[arg(long)]
        undo: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn read_text(text: String) -> Result<String> {
    if text != "-" {
        return Ok(text);
    }
    let mut s = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
        .context("reading standard input")?;
    Ok(s)
}

/// The store at `db`, cutting entries as the index at `index` does, and its model.
fn store_with_model(db: &Path, index: &Path) -> Result<(MemoryStore, Arc<dyn Embedder>)> {
    let builder = RouterBuilder::new(index);
    let (opened, model) = open_with_model(&builder, None)?;
    let router = builder.build_from(opened, Arc::clone(&model))?;
    let mut store = MemoryStore::open(db)?;
    store.set_prepare(router.prepare_config());
    Ok((store, model))
}

fn rule(command: RuleCommand) -> Result<()> {
    match command {
        RuleCommand::Add { text, db, index, proven, json } => {
            let (mut store, model) = store_with_model(&db, &index)?;
            let id = store.add_rule(model.as_ref(), read_text(text)?.trim(), proven, "operator")?;
            if json {
                print_json(&serde_json::json!({"id": id, "kind": "rule", "proven": proven}))
            } else {
                let when = if proven { "promoted now" } else { "promoted after 3 prompts" };
                println!("added rule {id} ({when})");
                Ok(())
            }
        }
        RuleCommand::Prove { id, db, undo, json } => {
            if !MemoryStore::open(&db)?.prove(id, !undo)? {
                bail!("{}: no entry {id}", db.display());
            }
            if json {
                print_json(&serde_json::json!({"id": id, "proven": !undo}))
            } else {
                println!("rule {id} {}", if undo { "no longer proven" } else { "proven" });
                Ok(())
            }
        }
    }
}

pub fn memory(a: MemoryArgs) -> Result<()> {
    match a.command {
        MemoryCommand::Add { text, db, index, kind, source, json } => {
            let (mut store, model) = store_with_model(&db, &index)?;
            let id = store.add(model.as_ref(), &kind, read_text(text)?.trim(), &source)?;
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
                let promoted = if e.is_promoted_rule() { " promoted" } else { "" };
                println!(
                    "{:>5}  {:<9} {}  hits {:<4}{promoted}  {}",
                    e.id,
                    e.kind,
                    e.created_at,
                    e.hits,
                    truncate(&e.text, 80)
                );
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
        MemoryCommand::Rule { command } => rule(command),
        MemoryCommand::Reembed { db, index, json } => {
            let (mut store, model) = store_with_model(&db, &index)?;
            let n = store.reembed(model.as_ref())?;
            if json {
                print_json(&serde_json::json!({"reembedded": n, "model": model.info().name}))
            } else {
                println!("re-embedded {n} entries with {}", model.info().name);
                Ok(())
            }
        }
    }
}
