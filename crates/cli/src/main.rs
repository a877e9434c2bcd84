//! The `switchyard` command: argument parsing and output only; the work is in the libraries.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use std::io::Write;

use std::process::ExitCode;

mod cases_report;
mod commands;
mod index_cmds;
mod injection_report;
mod inspect_cmd;
mod measure;
mod memory_cmds;
mod serve;
mod stream_cmds;
mod think_cmd;
mod tools_report;
#[cfg(feature = "candle")]
mod train;

/// Decide what an LLM agent's prompt should contain: the right tools, skills, mode and context,
/// offline, in milliseconds.
#[derive(Parser, Debug)]
#[command(name = "switchyard", version, about, long_about = None)]
struct Cli {
    /// Print the libraries' log events at this level and above to stderr: error, warn, info,
    /// debug or trace (`serve` and `mcp` log at info unless told otherwise).
    #[arg(long, global = true, value_name = "LEVEL")]
    log: Option<tracing_subscriber::filter::LevelFilter>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Embed one text and print the vector.
    Embed(commands::EmbedArgs),
    /// Build an index from a manifest folder (does nothing if it is already up to date).
    BuildIndex(index_cmds::BuildArgs),
    /// Print an index's header, sections, counts and model.
    Inspect(inspect_cmd::InspectArgs),
    /// Check every checksum of an index; exits 2 naming the damaged section.
    Verify(index_cmds::VerifyArgs),
    /// Route a task: mode, tools and skills, with scores and reasons.
    Route(commands::RouteArgs),
    /// Screen untrusted texts against the index's injection patterns.
    Screen(commands::ScreenArgs),
    /// Check provisioned models against the digests in their model.toml.
    Models(commands::ModelsArgs),
    /// Choose a thinking mode for a problem (council, red_team, first_principles, be_creative,
    /// or the catalog's own) and print its scaffold with the problem filled in.
    Think(think_cmd::ThinkArgs),
    /// Assemble the prompt for a task: layers, trust wrapper, budgets, fingerprints.
    Assemble(Box<commands::AssembleArgs>),
    /// Manage the memory store of untrusted context.
    Memory(memory_cmds::MemoryArgs),
    /// The conversation stream of a multi-stage pipeline: append messages (idempotent), view
    /// what a stage may see, set the state level.
    Stream(stream_cmds::StreamArgs),
    /// Read assembly trace logs: `trace stats LOG`.
    Trace(commands::TraceArgs),
    /// Serve route, assemble, screen and memory over local HTTP (the model loads once).
    Serve(serve::ServeArgs),
    /// An MCP server over stdio: `search_tools` (the catalog's best tools for a request, with
    /// their schemas) and `screen`.
    Mcp(serve::McpArgs),
    /// Measure quality on labelled data: tool retrieval, routing cases, injection screening.
    Eval(measure::EvalArgs),
    /// Measure latency per stage, cold start and peak memory over a fixed task set.
    Bench(measure::BenchArgs),
    /// Learn an index's lexical weight, late-interaction share, server weight, gate and mode margin
    /// from labelled cases (cross-validated) and write them into the index or a copy.
    Fit(measure::FitArgs),
    /// Learn from labelled data: `train adapter` learns a query adapter for tool retrieval.
    #[cfg(feature = "candle")]
    Train(train::TrainArgs),
}

/// A command that prints ends quietly when the reader of its output goes away
/// (`switchyard inspect FILE | head`), as `cat` and `rg` do, instead of panicking in
/// `println!`. Rust ignores SIGPIPE by default, so a write to a closed pipe is an error; the
/// servers keep that, since one client hanging up must not end them.
#[cfg(unix)]
fn end_quietly_when_the_reader_goes_away() {
    // SAFETY: called first in `main`, before any thread is spawned; restoring a signal's
    // default disposition has no other precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    #[cfg(unix)]
    if !matches!(cli.command, Command::Serve(_) | Command::Mcp(_)) {
        end_quietly_when_the_reader_goes_away();
    }
    if let Some(level) = cli.log {
        // stderr: stdout carries the command's output (and the MCP protocol).
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_max_level(level)
            .with_ansi(false)
            .init();
    }
    let result = match cli.command {
        Command::Embed(a) => commands::embed(a),
        Command::BuildIndex(a) => index_cmds::build_index(a),
        Command::Inspect(a) => inspect_cmd::inspect(a),
        Command::Verify(a) => index_cmds::verify(a),
        Command::Route(a) => commands::route(a),
        Command::Screen(a) => commands::screen(a),
        Command::Models(a) => commands::models(a),
        Command::Think(a) => think_cmd::think(a),
        Command::Assemble(a) => commands::assemble(*a),
        Command::Memory(a) => memory_cmds::memory(a),
        Command::Stream(a) => stream_cmds::stream(a),
        Command::Trace(a) => commands::trace(a),
        Command::Serve(a) => serve::serve(a),
        Command::Mcp(a) => serve::mcp(a),
        Command::Eval(a) => measure::eval(a),
        Command::Bench(a) => measure::bench(a),
        Command::Fit(a) => measure::fit(a),
        #[cfg(feature = "candle")]
        Command::Train(a) => train::train(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // A closed pipe (`switchyard route ... | head`) is not a failure.
            if err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            let _ = writeln!(std::io::stderr(), "switchyard: {}", error_chain(&err));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes, joined by ": ", leaving out a cause whose text the message already
/// holds (library errors often quote their source).
fn error_chain(err: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

/// Prints a value as pretty JSON to stdout.
pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value).context("writing JSON")?;
    writeln!(out)?;
    Ok(())
}

/// Resolves the model for an index: `--model` if given, else the model recorded in the index.
/// For commands whose work opens the index itself (fit, eval, bench); the others open it once
/// with [`commands::open_with_model`].
pub(crate) fn model_for_index(model: Option<&str>, index: &std::path::Path) -> Result<String> {
    if let Some(m) = model {
        return Ok(m.to_string());
    }
    let idx = switchyard::format::Index::open(
        index,
        switchyard::format::OpenOptions::new().verify_payload(false),
    )
    .with_context(|| format!("opening {}", index.display()))?;
    Ok(idx.meta().model.name.clone())
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    #[test]
    fn a_cause_the_message_already_quotes_is_printed_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let quoting = anyhow::Error::new(io).context("index x.idx: no such file");
        assert_eq!(error_chain(&quoting), "index x.idx: no such file");
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let plain = anyhow::Error::new(io).context("opening x.idx");
        assert_eq!(error_chain(&plain), "opening x.idx: no such file");
    }
}
