//! `switchyard memory`: the store of untrusted entries and the operator's rules.

use crate::commands::{open_with_model, truncate};
use crate::print_json;
use anyhow::{Context, Result, bail};
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use switchyard::embed::Embedder;
use switchyard::memory::{MemoryStore, Preparation};
use switchyard::router::{Router, RouterBuilder};

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
    /// Append a timestamped entry to a named store (notes, decisions, preferences, ...),
    /// embedded once now with the index's model and screened; retrying the same append
    /// stores nothing new.
    Append {
        /// The store's name.
        store: String,
        /// The text (`-` reads standard input).
        text: String,
        /// Database file.
        #[arg(long)]
        db: PathBuf,
        /// Index whose model embeds the entry.
        #[arg(long)]
        index: PathBuf,
        /// Where it came from.
        #[arg(long, default_value = "cli")]
        source: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a named store, oldest first, one timestamped line per entry; only its tail when
    /// it is long. An unreadable store prints a warning and nothing else, and exits 0.
    Read {
        /// The store's name (`memory` holds the entries added without one).
        store: String,
        /// Database file.
        #[arg(long)]
        db: PathBuf,
        /// Show at most this many bytes of the store's end.
        #[arg(long, default_value_t = switchyard::memory::DEFAULT_TAIL_BYTES)]
        tail_bytes: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Replace an entry's text: embedded again and screened, in one transaction.
    Replace {
        /// The entry's id.
        id: i64,
        /// The new text (`-` reads standard input).
        text: String,
        /// Database file.
        #[arg(long)]
        db: PathBuf,
        /// Index whose model embeds the entry.
        #[arg(long)]
        index: PathBuf,
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
    /// Re-embed the entries with the index's model: every entry after a model change, else
    /// only those whose pieces are missing or an older version's (after an upgrade).
    Reembed {
        /// Database file.
        #[arg(long)]
        db: PathBuf,
        /// Index whose model embeds the entries.
        #[arg(long)]
        index: PathBuf,
        /// Re-embed every entry even when the model is the store's and its pieces are current
        /// (after switching to an index prepared otherwise).
        #[arg(long)]
        all: bool,
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

pub fn read_text(text: String) -> Result<String> {
    if text != "-" {
        return Ok(text);
    }
    let mut s = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
        .context("reading standard input")?;
    Ok(s)
}

/// The store at `db`, cutting entries as the index at `index` does, its model and the router
/// that screens them.
fn store_with_router(db: &Path, index: &Path) -> Result<(MemoryStore, Arc<dyn Embedder>, Router)> {
    let builder = RouterBuilder::new(index);
    let (opened, model) = open_with_model(&builder, None)?;
    let router = builder.build_from(opened, Arc::clone(&model))?;
    let mut store = MemoryStore::open(db)?;
    store
        .set_prepare(router.prepare_config())
        .set_triage(router.screen_triage())
        .set_screen_layer(router.screen_layer());
    Ok((store, model, router))
}

/// The store at `db`, cutting entries as the index at `index` does, and its model.
fn store_with_model(db: &Path, index: &Path) -> Result<(MemoryStore, Arc<dyn Embedder>)> {
    let (store, model, _) = store_with_router(db, index)?;
    Ok((store, model))
}

/// Screens a stored entry from the pieces stored with it, as an assembly would, and records
/// the verdict in the store for later assemblies with this index: whether it would be
/// dropped, and why.
fn screen_stored(store: &mut MemoryStore, router: &Router, id: i64) -> Result<serde_json::Value> {
    let report = switchyard::screen_and_record(store, router, &[id])?;
    let Some(v) = report.kept.iter().chain(&report.dropped).next() else {
        bail!("entry {id} vanished")
    };
    Ok(serde_json::json!({
        "flagged": v.flagged,
        "rule": report.rule,
        "score": v.score,
        "threshold": v.threshold,
        "pieces": v.pieces_screened,
        "pieces_cleared_unembedded": v.pieces_cleared,
    }))
}

/// `head` (what was done), and what screening concluded when it flags the entry.
fn say_screened(head: &str, screen: &serde_json::Value) {
    if screen["flagged"].as_bool() == Some(true) {
        println!(
            "{head}; screening flags it as an injection ({} score {:.3} >= {:.3}): assemblies will leave it out",
            screen["rule"].as_str().unwrap_or(""),
            screen["score"].as_f64().unwrap_or(0.0),
            screen["threshold"].as_f64().unwrap_or(0.0)
        );
    } else {
        println!("{head}");
    }
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
            let (mut store, model, router) = store_with_router(&db, &index)?;
            let id = store.add(model.as_ref(), &kind, read_text(text)?.trim(), &source)?;
            let screen = screen_stored(&mut store, &router, id)?;
            if json {
                return print_json(&serde_json::json!({"id": id, "kind": kind, "screen": screen}));
            }
            say_screened(&format!("added entry {id} ({kind})"), &screen);
            Ok(())
        }
        MemoryCommand::Append { store: name, text, db, index, source, json } => {
            let (mut store, model, router) = store_with_router(&db, &index)?;
            let id = store.append(model.as_ref(), &name, read_text(text)?.trim(), &source)?;
            let screen = screen_stored(&mut store, &router, id)?;
            if json {
                return print_json(&serde_json::json!({"id": id, "store": name, "screen": screen}));
            }
            say_screened(&format!("appended to {name}: entry {id}"), &screen);
            Ok(())
        }
        MemoryCommand::Read { store: name, db, tail_bytes, json } => {
            // An unreadable store is a diagnostic, never a failure: a harness reading its notes
            // before a task goes on without them.
            // Reading never creates a database file.
            let tail = if db.is_file() {
                MemoryStore::open(&db)
                    .and_then(|mut s| s.read(&name, tail_bytes))
                    .map_err(|e| e.to_string())
            } else {
                Err(format!("{} does not exist", db.display()))
            };
            match (tail, json) {
                (Ok(t), true) => print_json(&t),
                (Ok(t), false) => {
                    if t.omitted_bytes > 0 {
                        eprintln!(
                            "({} of {} entries shown; {} earlier bytes left out)",
                            t.shown, t.entries, t.omitted_bytes
                        );
                    }
                    print!("{}", t.text);
                    Ok(())
                }
                (Err(e), json) => {
                    let diagnostic =
                        format!("memory store {name} is unreadable, showing nothing: {e}");
                    eprintln!("warning: {diagnostic}");
                    if json {
                        return print_json(
                            &serde_json::json!({"store": name, "entries": 0, "text": "", "diagnostic": diagnostic}),
                        );
                    }
                    Ok(())
                }
            }
        }
        MemoryCommand::Replace { id, text, db, index, json } => {
            let (mut store, model, router) = store_with_router(&db, &index)?;
            store.replace(model.as_ref(), id, read_text(text)?.trim())?;
            let screen = screen_stored(&mut store, &router, id)?;
            if json {
                return print_json(
                    &serde_json::json!({"id": id, "replaced": true, "screen": screen}),
                );
            }
            say_screened(&format!("replaced entry {id}"), &screen);
            Ok(())
        }
        MemoryCommand::List { db, json } => {
            let mut store = MemoryStore::open(&db)?;
            let entries = store.list()?.to_vec();
            if json {
                return print_json(&entries);
            }
            let stale = entries.iter().filter(|e| e.needs_reembed()).count();
            for e in entries {
                let promoted = if e.is_promoted_rule() { " promoted" } else { "" };
                let pieces = match e.preparation {
                    Preparation::Current => "",
                    Preparation::Older => " older-pieces",
                    Preparation::Missing => " no-pieces",
                };
                println!(
                    "{:>5}  {:<9} {:<11} {}  hits {:<4}{promoted}{pieces}  {}",
                    e.id,
                    e.kind,
                    e.store,
                    e.created_at,
                    e.hits,
                    truncate(&e.text, 80)
                );
            }
            if stale > 0 {
                eprintln!(
                    "marked above: {stale} of the entries have no pieces or an older version's; run `switchyard memory reembed --db {} --index <index>` to screen them with this version's",
                    db.display()
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
        MemoryCommand::Reembed { db, index, all, json } => {
            let (mut store, model, router) = store_with_router(&db, &index)?;
            let total = store.list()?.len();
            let ids = store.reembed_as_needed(model.as_ref(), all)?;
            let n = ids.len();
            // Screened now, so the first assembly after the upgrade reads verdicts.
            let flagged = switchyard::screen_and_record(&mut store, &router, &ids)?.dropped.len();
            if json {
                print_json(&serde_json::json!({
                    "reembedded": n, "entries": total, "model": model.info().name, "flagged": flagged
                }))
            } else {
                let rest = match total - n {
                    0 => String::new(),
                    current => {
                        format!("; the other {current} were current (--all re-embeds them too)")
                    }
                };
                println!(
                    "re-embedded {n} of {total} entries with {} ({flagged} flagged by screening){rest}",
                    model.info().name
                );
                Ok(())
            }
        }
    }
}
