//! `switchyard think`: the thinking mode for a problem, and its scaffold with the problem in it.

use crate::commands::open_with_model;
use crate::print_json;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use switchyard::router::RouterBuilder;

/// Arguments of `switchyard think`.
#[derive(Args, Debug)]
pub struct ThinkArgs {
    /// The problem to think through.
    pub problem: String,
    /// The index file (built from a manifest folder with thinking.toml).
    #[arg(long, default_value = "switchyard.idx")]
    pub index: PathBuf,
    /// Thinking mode: auto (keyword rules, then the semantic fallback when confident, then the
    /// default), or a mode's name (council, red_team, first_principles, be_creative, ...).
    #[arg(long, default_value = "auto")]
    pub mode: String,
    /// Model (default: the one recorded in the index).
    #[arg(long)]
    pub model: Option<String>,
    /// Print the decision and the scaffold as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn think(a: ThinkArgs) -> Result<()> {
    let builder = RouterBuilder::new(&a.index);
    let (index, model) = open_with_model(&builder, a.model.as_deref())?;
    let router = builder.build_from(index, model)?;
    let decision = router.think(&a.problem, Some(&a.mode))?;
    let scaffold = router.thinking_scaffold(&decision, &a.problem)?;
    if a.json {
        return print_json(&serde_json::json!({ "decision": decision, "scaffold": scaffold }));
    }
    // The scaffold is the output; why this mode goes to stderr so it can be piped alone.
    let source = serde_json::to_value(decision.source)?;
    eprintln!(
        "thinking mode {} ({}: {})",
        decision.mode,
        source.as_str().unwrap_or(""),
        decision.detail
    );
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", scaffold.trim_end())?;
    Ok(())
}
