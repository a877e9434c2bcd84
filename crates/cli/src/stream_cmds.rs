//! `switchyard stream`: the conversation stream of a multi-stage pipeline.

use crate::print_json;
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};
use switchyard::stream::{MessageType, NewMessage, Policy, Stages, Stream};

/// Arguments of `switchyard stream`.
#[derive(Args, Debug)]
pub struct StreamArgs {
    #[command(subcommand)]
    pub command: StreamCommand,
}

/// Where the stream and its stage definitions are.
#[derive(Args, Debug, Clone)]
pub struct StreamAt {
    /// The stream's database file.
    #[arg(long)]
    pub db: PathBuf,
    /// The stage definitions.
    #[arg(long, default_value = "manifests/stages.toml")]
    pub stages: PathBuf,
}

/// Stream operations.
#[derive(clap::Subcommand, Debug)]
pub enum StreamCommand {
    /// Append a message; appending the same id again stores nothing (a retry), another message
    /// under a used id is refused.
    Append {
        /// The text (`-` reads standard input).
        content: String,
        #[command(flatten)]
        at: StreamAt,
        /// The client's id for the message (send the same one on a retry).
        #[arg(long)]
        id: String,
        /// The stage that says it.
        #[arg(long)]
        stage: String,
        /// say, thought (private to the stage), tool_call, result or system.
        #[arg(long = "type", default_value = "say")]
        kind: String,
        /// The turn it belongs to.
        #[arg(long)]
        turn: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// What a stage may see, oldest first.
    View {
        #[command(flatten)]
        at: StreamAt,
        /// The stage.
        #[arg(long)]
        stage: String,
        /// own, public or turn (default: the stage's own policy; never wider).
        #[arg(long)]
        policy: Option<String>,
        /// Only the last N messages.
        #[arg(long)]
        last: Option<usize>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the stream's state level, or set it (stages join at their min_level).
    Level {
        #[command(flatten)]
        at: StreamAt,
        /// The new level.
        #[arg(long)]
        set: Option<u32>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Opens the stream at `db` for the stages in `stages`.
pub fn open_stream(db: &Path, stages: &Path) -> Result<Stream> {
    Ok(Stream::open(db, Stages::load(stages)?)?)
}

pub fn stream(a: StreamArgs) -> Result<()> {
    match a.command {
        StreamCommand::Append { content, at, id, stage, kind, turn, json } => {
            let kind: MessageType = kind
                .parse()
                .map_err(|reason| anyhow::anyhow!("stage {stage}: --type: {reason}"))?;
            let content = crate::memory_cmds::read_text(content)?;
            let mut stream = open_stream(&at.db, &at.stages)?;
            let done = stream.append(&NewMessage { id: id.clone(), stage, kind, turn, content })?;
            if json {
                return print_json(
                    &serde_json::json!({"id": id, "seq": done.seq, "duplicate": done.duplicate}),
                );
            }
            let note = if done.duplicate { " (already stored; nothing written)" } else { "" };
            println!("message {id} at seq {}{note}", done.seq);
            Ok(())
        }
        StreamCommand::View { at, stage, policy, last, json } => {
            let policy: Option<Policy> = policy
                .map(|p| {
                    p.parse().map_err(|reason| anyhow::anyhow!("stage {stage}: --policy: {reason}"))
                })
                .transpose()?;
            let stream = open_stream(&at.db, &at.stages)?;
            let view = stream.view(&stage, policy, last)?;
            if json {
                return print_json(&view);
            }
            for m in view {
                println!(
                    "{:>5} [{}] {} {} (turn {}): {}",
                    m.seq,
                    m.id,
                    m.stage,
                    m.kind.as_str(),
                    m.turn,
                    m.content
                );
            }
            Ok(())
        }
        StreamCommand::Level { at, set, json } => {
            let mut stream = open_stream(&at.db, &at.stages)?;
            if let Some(level) = set {
                stream.set_level(level)?;
            }
            let level = stream.level()?;
            if json {
                return print_json(&serde_json::json!({"level": level}));
            }
            println!("level {level}");
            Ok(())
        }
    }
}
