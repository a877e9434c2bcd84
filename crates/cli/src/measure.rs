//! `switchyard eval` and `switchyard bench`: argument parsing and output over switchyard-eval.

use crate::commands::load_model;
use crate::{model_for_index, print_json};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Mutex;
use switchyard_eval::bench::{BenchConfig, BenchReport, StageStats};
use switchyard_eval::{CasesEval, InjectionEval, ToolsEval};

/// Arguments of `switchyard eval`.
#[derive(Args, Debug)]
pub struct EvalArgs {
    #[command(subcommand)]
    pub command: EvalCommand,
}

/// The evaluations.
#[derive(Subcommand, Debug)]
pub enum EvalCommand {
    /// Tool retrieval on a tools.jsonl catalog and queries.jsonl: recall@k, hit@1, MRR, nDCG@10,
    /// for the router and a BM25 baseline, overall and per language.
    Tools(ToolsArgs),
    /// Routing cases against a manifest folder: tool recall@3/@5, skill recall@3, mode accuracy.
    Cases(CasesArgs),
    /// Injection screening of an index on labelled samples: ROC AUC, recall at 1%/5% FPR,
    /// precision/recall/F1 at the index's threshold.
    Injection(InjectionArgs),
    /// Task analysis (complexity; missing intent, target, scope) against labelled tasks:
    /// agreement overall and per language. No model, no index.
    Analysis(AnalysisArgs),
    /// Thinking-mode routing against labelled problems: accuracy overall, per language, per
    /// mode and per deciding step (keyword, semantic, default).
    Thinking(ThinkingArgs),
}

/// Arguments of `switchyard eval thinking`.
#[derive(Args, Debug)]
pub struct ThinkingArgs {
    /// Manifest folder (with thinking.toml).
    #[arg(long, default_value = "manifests")]
    pub manifests: PathBuf,
    /// Labelled problems: one {"problem", "lang"?, "mode"} per line (e.g.
    /// tests/thinking/heldout.jsonl).
    #[arg(long)]
    pub cases: PathBuf,
    /// Model: a short name (e5-small, minilm), a folder, or a cached Hugging Face repo id.
    #[arg(long, default_value = switchyard::embed::DEFAULT_MODEL)]
    pub model: String,
    /// Where built indexes are cached [default: $SWITCHYARD_CACHE_DIR or ~/.cache/switchyard].
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Print the report as JSON (the misses included).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `switchyard eval analysis`.
#[derive(Args, Debug)]
pub struct AnalysisArgs {
    /// Labelled tasks: one {"task", "lang"?, "complexity": low|medium|high, "missing":
    /// [intent|target|scope]} per line (e.g. tests/analysis/heldout.jsonl).
    #[arg(long)]
    pub cases: PathBuf,
    /// Print the report as JSON (the disagreements included).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `switchyard eval tools`.
#[derive(Args, Debug)]
pub struct ToolsArgs {
    /// Catalog: one {"name", "description"} per line.
    #[arg(long)]
    pub tools: PathBuf,
    /// Queries: one {"query", "gold": [names], "lang"?} per line.
    #[arg(long)]
    pub queries: PathBuf,
    /// Model: a short name (e5-small, minilm), a folder, or a cached Hugging Face repo id.
    #[arg(long, default_value = switchyard::embed::DEFAULT_MODEL)]
    pub model: String,
    /// Cut-offs for recall@k, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,3,5,10")]
    pub k: Vec<usize>,
    /// Evaluate only the first N queries.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Lexical weight of the hybrid ranking, 0..=1, instead of the index's (for sweeps).
    #[arg(long)]
    pub lexical_weight: Option<f32>,
    /// Build the evaluated index with this query adapter (`switchyard train adapter`).
    #[arg(long, value_name = "FILE.swya")]
    pub adapter: Option<PathBuf>,
    /// Only the queries whose `split` field is SPLIT (e.g. `test_out_domain`).
    #[arg(long)]
    pub split: Option<String>,
    /// How many of the queries the deployed selection got wrong to list, the right tool ranked
    /// furthest down first, and how many of the tools left out or picked wrongly most often.
    #[arg(long, default_value_t = 10)]
    pub errors: usize,
    /// Where built indexes are cached [default: $SWITCHYARD_CACHE_DIR or ~/.cache/switchyard].
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `switchyard eval cases`.
#[derive(Args, Debug)]
pub struct CasesArgs {
    /// Manifest folder.
    #[arg(long, default_value = "manifests")]
    pub manifests: PathBuf,
    /// Cases: one {"task", "lang", "tools", "skills", "mode"} per line.
    #[arg(long)]
    pub cases: PathBuf,
    /// Model: a short name (e5-small, minilm), a folder, or a cached Hugging Face repo id.
    #[arg(long, default_value = switchyard::embed::DEFAULT_MODEL)]
    pub model: String,
    /// Where built indexes are cached [default: $SWITCHYARD_CACHE_DIR or ~/.cache/switchyard].
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// An index of the same catalog fitted by `switchyard fit`: its figures are reported beside
    /// the default ones.
    #[arg(long)]
    pub fitted: Option<PathBuf>,
    /// Tasks no tool of the catalog serves (JSONL: `task`, `lang`): the share that got no tool
    /// is reported, per language.
    #[arg(long, value_name = "FILE.jsonl")]
    pub off_topic: Option<PathBuf>,
    /// Build the evaluated index with this query adapter (`switchyard train adapter`).
    #[arg(long, value_name = "FILE.swya")]
    pub adapter: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `switchyard eval injection`.
#[derive(Args, Debug)]
pub struct InjectionArgs {
    /// The index whose patterns and threshold are measured.
    #[arg(long, default_value = "switchyard.idx")]
    pub index: PathBuf,
    /// Samples: one {"text", "label": 0|1, "lang"?} per line.
    #[arg(long)]
    pub samples: PathBuf,
    /// Model [default: the one recorded in the index].
    #[arg(long)]
    pub model: Option<String>,
    /// How many samples on the wrong side of the threshold to list, per side (missed
    /// injections, flagged benign texts), the furthest from it first.
    #[arg(long, default_value_t = 10)]
    pub errors: usize,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `switchyard bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The index.
    #[arg(long, default_value = "switchyard.idx")]
    pub index: PathBuf,
    /// Model [default: the one recorded in the index].
    #[arg(long)]
    pub model: Option<String>,
    /// Rounds over the fixed task set, after one warm-up round.
    #[arg(long, default_value_t = 10)]
    pub iterations: usize,
    /// Fresh processes timed for the cold start (0 skips it).
    #[arg(long, default_value_t = 5)]
    pub cold_runs: usize,
    /// A JSONL file of {"task": ...} rows to time instead of the built-in 18 tasks (e.g.
    /// manifests/cases.jsonl).
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// Print the report as JSON (times in keys ending in `_ms`).
    #[arg(long)]
    pub json: bool,
}

/// A progress bar on stderr when it is a terminal, one bar per stage.
pub(crate) struct Bars {
    on: bool,
    current: Mutex<Option<(String, indicatif::ProgressBar)>>,
}

impl Bars {
    pub(crate) fn new() -> Self {
        Self { on: std::io::stderr().is_terminal(), current: Mutex::new(None) }
    }

    pub(crate) fn report(&self, stage: &str, done: usize, total: usize) {
        if !self.on {
            return;
        }
        let Ok(mut cur) = self.current.lock() else { return };
        if cur.as_ref().is_none_or(|(s, _)| s != stage) {
            if let Some((_, b)) = cur.take() {
                b.finish();
            }
            let b = indicatif::ProgressBar::new(total as u64);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg:>14} {bar:40} {pos}/{len} {elapsed} (eta {eta})",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b.set_message(stage.to_string());
            *cur = Some((stage.to_string(), b));
        }
        if let Some((_, b)) = cur.as_ref() {
            b.set_length(total as u64);
            b.set_position(done as u64);
        }
    }

    pub(crate) fn finish(&self) {
        if let Ok(mut cur) = self.current.lock()
            && let Some((_, b)) = cur.take()
        {
            b.finish_and_clear();
        }
    }
}

/// Arguments of `switchyard fit`.
#[derive(clap::Args, Debug)]
pub struct FitArgs {
    /// The index to fit (built by `switchyard build-index`).
    #[arg(long)]
    pub index: PathBuf,
    /// Labelled cases: one {"task", "lang", "tools", "skills", "mode"} per line; `"tools": []`
    /// marks a task that needs no tool.
    #[arg(long)]
    pub cases: PathBuf,
    /// Tasks no tool of the catalog serves (JSONL: `task`, `lang`): they teach the off-topic
    /// margin (indexes with an off-topic check) and are reported as given a tool or not
    #[arg(long, value_name = "FILE.jsonl")]
    pub off_topic: Option<PathBuf>,
    /// Where to write the fitted index [default: update --index in place, atomically].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Cross-validation folds.
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
    /// Model [default: the one the index was built with].
    #[arg(long)]
    pub model: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn fit(a: FitArgs) -> Result<()> {
    let model = load_model(&model_for_index(a.model.as_deref(), &a.index)?)?;
    let bars = Bars::new();
    let progress = |s: &str, d: usize, t: usize| bars.report(s, d, t);
    let cfg = switchyard_eval::FitConfig {
        out: a.out.clone().unwrap_or_else(|| a.index.clone()),
        index: a.index,
        cases: a.cases,
        off_topic: a.off_topic,
        folds: a.folds,
    };
    let report = switchyard_eval::fit(&cfg, model, &progress)?;
    bars.finish();
    if a.json {
        return print_json(&report);
    }
    let margin = |m: Option<f32>| m.map_or("off".to_string(), |m| format!("{m:.4}"));
    let (b, p, w) = (&report.before, &report.proposed, &report.after);
    println!("{:<24}{:>12}{:>12}{:>12}", "setting", "before", "fitted", "written");
    let row = |name: &str, b: String, p: String, w: String| {
        println!("{name:<24}{b:>12}{p:>12}{w:>12}");
    };
    let f2 = |v: f32| format!("{v:.2}");
    row("lexical weight", f2(b.lexical_weight), f2(p.lexical_weight), f2(w.lexical_weight));
    if let (Some(x), Some(y), Some(z)) = (b.late_share, p.late_share, w.late_share) {
        row("late share", f2(x), f2(y), f2(z));
    }
    if let (Some(x), Some(y), Some(z)) = (b.server_weight, p.server_weight, w.server_weight) {
        row("server weight", f2(x), f2(y), f2(z));
    }
    let f3 = |v: f32| format!("{v:.3}");
    row("tool gate (peak z)", f3(b.gate_z), f3(p.gate_z), f3(w.gate_z));
    row("mode margin", margin(b.mode_margin), margin(p.mode_margin), margin(w.mode_margin));
    if b.off_topic_margin.is_some() {
        let (x, y, z) = (b.off_topic_margin, p.off_topic_margin, w.off_topic_margin);
        row("off-topic margin", margin(x), margin(y), margin(z));
    }
    println!();
    println!(
        "held-out ({} folds, {} cases): each group fitted on the other folds, the rest as the index has it",
        report.folds, report.cross_validated_before.cases
    );
    println!(
        "{:<22}{:>10}{:>10}{:>10}{:>12}{:>12}  kept",
        "", "tool r@3", "skill r@3", "mode", "unrelated+", "real shut"
    );
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.4}"));
    // A figure over no cases (a catalog without skills or modes) is shown as "-", not 0.
    let over = |v: f64, n: usize| opt((n > 0).then_some(v));
    let line = |name: &str, m: &switchyard_eval::FitMetrics, kept: &str| {
        println!(
            "{name:<22}{:>10.4}{:>10}{:>10}{:>12}{:>12}  {kept}",
            m.tool_recall_at_3,
            over(m.skill_recall_at_3, m.skill_cases),
            over(m.mode_accuracy, m.mode_cases),
            opt(m.no_tool_selected_rate),
            opt(m.real_closed_off_topic_rate)
        );
    };
    line("the index's settings", &report.cross_validated_before, "");
    for g in &report.groups {
        let name = match g.group {
            switchyard_eval::FitGroup::Fusion => "fusion weights",
            switchyard_eval::FitGroup::Gate => "tool gate",
            switchyard_eval::FitGroup::ModeMargin => "mode margin",
            switchyard_eval::FitGroup::OffTopicMargin => "off-topic margin",
        };
        line(name, &g.cross_validated, if g.kept { "yes" } else { "no" });
    }
    line("written (kept groups)", &report.cross_validated_after, "");
    println!(
        "unrelated+: unrelated tasks given a tool; real shut: real tasks the off-topic check closed"
    );
    println!("wrote {}", report.out.display());
    Ok(())
}

fn read_adapter(path: Option<&std::path::Path>) -> Result<Option<switchyard::adapter::Adapter>> {
    Ok(match path {
        Some(p) => Some(switchyard::adapter::Adapter::read(p)?),
        None => None,
    })
}

/// The default cache folder of built evaluation indexes (read at the command's edge): `$SWITCHYARD_CACHE_DIR`, else `$XDG_CACHE_HOME/switchyard`, else
/// `~/.cache/switchyard`, else the system temp folder.
pub(crate) fn default_cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("SWITCHYARD_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("switchyard");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache").join("switchyard");
    }
    std::env::temp_dir().join("switchyard")
}

fn cache_dir(given: Option<PathBuf>) -> PathBuf {
    given.unwrap_or_else(default_cache_dir)
}

pub(crate) fn table(rows: &[(&str, &BTreeMap<String, serde_json::Value>)]) {
    print!("{}", render_table(rows));
}

/// The rows as a text table: one column per metric any row has, `-` where a row lacks it.
fn render_table(rows: &[(&str, &BTreeMap<String, serde_json::Value>)]) -> String {
    use std::fmt::Write as _;
    let mut keys: Vec<&String> = rows.iter().flat_map(|(_, m)| m.keys()).collect();
    keys.sort();
    keys.dedup();
    // Each column as wide as its name (the names run to 20 characters) and at least 14, with
    // two spaces between columns, so no header runs into the next.
    let widths: Vec<usize> = keys.iter().map(|k| k.len().max(12) + 2).collect();
    let mut out = format!("{:<22}", "");
    for (k, w) in keys.iter().zip(&widths) {
        let _ = write!(out, "{k:>w$}");
    }
    out.push('\n');
    for (name, m) in rows {
        let _ = write!(out, "{name:<22}");
        for (k, w) in keys.iter().zip(&widths) {
            let v = m.get(*k).map_or("-".to_string(), |v| match v {
                serde_json::Value::Null => "-".into(),
                v => v.to_string(),
            });
            let _ = write!(out, "{v:>w$}");
        }
        out.push('\n');
    }
    out
}

pub fn eval(a: EvalArgs) -> Result<()> {
    let bars = Bars::new();
    let progress = |s: &str, d: usize, t: usize| bars.report(s, d, t);
    match a.command {
        EvalCommand::Tools(a) => {
            let model = load_model(&a.model)?;
            let cfg = ToolsEval {
                tools: a.tools,
                queries: a.queries,
                ks: a.k,
                cache_dir: cache_dir(a.cache_dir),
                limit: a.limit,
                lexical_weight: a.lexical_weight,
                adapter: read_adapter(a.adapter.as_deref())?,
                split: a.split,
                max_errors: a.errors,
            };
            let report = switchyard_eval::eval_tools(&cfg, model, &progress)?;
            bars.finish();
            if a.json {
                return print_json(&report);
            }
            crate::tools_report::print_tools_report(&report);
            Ok(())
        }
        EvalCommand::Cases(a) => {
            let model = load_model(&a.model)?;
            let cfg = CasesEval {
                manifests: a.manifests,
                cases: a.cases,
                cache_dir: cache_dir(a.cache_dir),
                fitted: a.fitted,
                off_topic: a.off_topic,
                adapter: read_adapter(a.adapter.as_deref())?,
            };
            let report = switchyard_eval::eval_cases(&cfg, model, &progress)?;
            bars.finish();
            if a.json {
                return print_json(&report);
            }
            crate::cases_report::print_cases_report(&report);
            Ok(())
        }
        EvalCommand::Injection(a) => {
            let model = load_model(&model_for_index(a.model.as_deref(), &a.index)?)?;
            let cfg = InjectionEval { index: a.index, samples: a.samples, max_errors: a.errors };
            let report = switchyard_eval::eval_injection(&cfg, model, &progress)?;
            bars.finish();
            if a.json {
                return print_json(&report);
            }
            crate::injection_report::print_injection_report(&report);
            Ok(())
        }
        EvalCommand::Thinking(a) => {
            let model = load_model(&a.model)?;
            let cfg = switchyard_eval::ThinkingEval {
                manifests: a.manifests,
                cases: a.cases,
                cache_dir: cache_dir(a.cache_dir),
            };
            let report = switchyard_eval::eval_thinking(&cfg, model, &progress)?;
            bars.finish();
            if a.json {
                return print_json(&report);
            }
            println!(
                "{} problems from {}, model {}, semantic margin {}; think p50 {:.1} us, p95 {:.1} us (embedding cached); with the embedding p50 {:.2} ms, p95 {:.2} ms",
                report.overall.cases,
                report.cases_file,
                report.model,
                report.semantic_margin.map_or("none (off)".into(), |m| format!("{m:.3}")),
                report.think_us.0,
                report.think_us.1,
                report.with_embedding_ms.0,
                report.with_embedding_ms.1
            );
            let cells = |s: &switchyard_eval::ThinkingScore| {
                BTreeMap::from([
                    ("cases".to_string(), serde_json::json!(s.cases)),
                    (
                        "accuracy".to_string(),
                        serde_json::json!((s.accuracy * 1000.0).round() / 1000.0),
                    ),
                ])
            };
            let groups: Vec<(String, BTreeMap<String, serde_json::Value>)> =
                std::iter::once(("all".to_string(), cells(&report.overall)))
                    .chain(report.per_lang.iter().map(|(l, s)| (format!("lang:{l}"), cells(s))))
                    .chain(report.per_mode.iter().map(|(m, s)| (format!("mode:{m}"), cells(s))))
                    .chain(report.per_source.iter().map(|(m, s)| (format!("by:{m}"), cells(s))))
                    .collect();
            let rows: Vec<(&str, &BTreeMap<String, serde_json::Value>)> =
                groups.iter().map(|(l, m)| (l.as_str(), m)).collect();
            table(&rows);
            for m in &report.misses {
                println!(
                    "miss {:?}: {} by {:?} (expected {})",
                    m.problem, m.decision.mode, m.decision.source, m.expected
                );
            }
            Ok(())
        }
        EvalCommand::Analysis(a) => {
            let report = switchyard_eval::eval_analysis(&a.cases)?;
            if a.json {
                return print_json(&report);
            }
            println!(
                "{} tasks from {}, {:.1} us per task",
                report.overall.cases, report.cases_file, report.mean_us
            );
            let cells = |g: &switchyard_eval::Agreement| {
                let r = |x: f64| serde_json::json!((x * 1000.0).round() / 1000.0);
                let mut m = BTreeMap::from([
                    ("cases".to_string(), serde_json::json!(g.cases)),
                    ("complexity".to_string(), r(g.complexity_accuracy)),
                    ("sufficiency".to_string(), r(g.sufficiency_accuracy)),
                    ("exact_missing".to_string(), r(g.exact_missing)),
                ]);
                for (part, x) in &g.missing_accuracy {
                    m.insert(format!("{part}?"), r(*x));
                }
                m
            };
            let per: Vec<(String, BTreeMap<String, serde_json::Value>)> =
                report.per_lang.iter().map(|(l, g)| (format!("lang:{l}"), cells(g))).collect();
            let overall = cells(&report.overall);
            let mut rows = vec![("all", &overall)];
            rows.extend(per.iter().map(|(l, m)| (l.as_str(), m)));
            table(&rows);
            println!("complexity, labelled (rows) x analysed (columns), low/medium/high:");
            for (name, row) in ["low", "medium", "high"].iter().zip(report.confusion) {
                println!("  {name:<8}{:>5}{:>5}{:>5}", row[0], row[1], row[2]);
            }
            Ok(())
        }
    }
}

/// One level of nesting folded into `outer.inner` keys, for the human table.
pub(crate) fn flatten(value: &impl serde::Serialize) -> BTreeMap<String, serde_json::Value> {
    let mut out = BTreeMap::new();
    if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(value) {
        for (k, v) in m {
            match v {
                // The intervals are printed on a line of their own.
                serde_json::Value::Object(_) if k.ends_with("_interval") => {}
                serde_json::Value::Object(inner) => {
                    for (ik, iv) in inner {
                        if !["tp", "fp", "fn", "tn"].contains(&ik.as_str()) {
                            out.insert(format!("{ik}@thr"), iv);
                        }
                    }
                }
                v => {
                    out.insert(k, v);
                }
            }
        }
    }
    out
}

fn stage_row(name: &str, s: &StageStats) {
    println!(
        "{name:<22}{:>10.3}{:>10.3}{:>10.3}{:>10.3}{:>8}",
        s.p50_ms, s.p95_ms, s.p99_ms, s.mean_ms, s.samples
    );
}

pub fn bench(a: BenchArgs) -> Result<()> {
    let model_name = model_for_index(a.model.as_deref(), &a.index)?;
    let model = load_model(&model_name)?;
    let exe = (a.cold_runs > 0)
        .then(std::env::current_exe)
        .transpose()
        .context("finding the switchyard executable for the cold-start runs")?;
    let cfg = BenchConfig {
        index: a.index,
        iterations: a.iterations,
        exe,
        model: model_name,
        cold_runs: a.cold_runs,
        tasks: a.tasks,
    };
    let r: BenchReport = switchyard_eval::bench::run(&cfg, model)?;
    if a.json {
        return print_json(&r);
    }
    println!(
        "{} on {} cores ({}, {} kernel, {} weights), commit {}, {} tasks x {} rounds, mean {:.1} tokens",
        r.model.name,
        r.machine.cores,
        r.machine.cpu.as_deref().unwrap_or("unknown CPU"),
        r.machine.kernel,
        r.machine.weights,
        r.machine.commit.as_deref().unwrap_or("-"),
        r.tasks,
        r.iterations,
        r.mean_task_tokens
    );
    println!(
        "{:<22}{:>10}{:>10}{:>10}{:>10}{:>8}",
        "stage", "p50_ms", "p95_ms", "p99_ms", "mean_ms", "n"
    );
    stage_row("embed", &r.embed);
    stage_row("route", &r.route);
    stage_row("route_transformer", &r.route_transformer);
    stage_row("route_cached", &r.route_cached);
    stage_row("screen", &r.screen);
    stage_row("assemble", &r.assemble);
    stage_row("assemble_transformer", &r.assemble_transformer);
    if let Some(think) = &r.think {
        stage_row("think", think);
    }
    println!("the cascade answered {:.0}% of the tasks statically", r.static_answered * 100.0);
    if let Some(c) = &r.cold_start {
        println!(
            "cold start     p50 {:.1} ms, min {:.1} ms ({} runs)",
            c.p50_ms,
            c.min_ms,
            c.runs_ms.len()
        );
        if let Some(b) = &c.breakdown {
            println!(
                "  by step      {:.0} ms: resolve {:.1}, load {:.1} (weights {:.1} {}, packing {:.1}; tokenizer {:.1} {} alongside), first forward {:.1}, exec and exit {:.1} (medians of `embed`)",
                b.wall_ms,
                b.resolve_ms,
                b.load_ms,
                b.weights_ms,
                b.weights_source,
                b.pack_ms,
                b.tokenizer_ms,
                b.tokenizer_source,
                b.first_forward_ms,
                b.process_ms
            );
        }
    }
    if let Some(m) = r.peak_rss_mib {
        println!("peak RSS       {m:.1} MiB");
    }
    Ok(())
}

#[cfg(test)]
mod table_tests {
    use super::render_table;
    use std::collections::BTreeMap;

    #[test]
    fn every_header_stands_apart_and_each_value_sits_under_its_header() {
        let mut m = BTreeMap::new();
        m.insert("skill_recall@3".to_string(), serde_json::json!(1.0));
        m.insert("static_answered".to_string(), serde_json::json!(0.25));
        m.insert("tool_recall_selected".to_string(), serde_json::json!(0.9149));
        let text = render_table(&[("all", &m), ("several tools", &BTreeMap::new())]);
        let lines: Vec<&str> = text.lines().collect();
        let headers: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(headers, ["skill_recall@3", "static_answered", "tool_recall_selected"]);
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            ["all", "1.0", "0.25", "0.9149"]
        );
        assert!(lines[2].starts_with("several tools") && lines[2].matches('-').count() == 3);
        // Right-aligned: a value ends where its header ends.
        let end = lines[0].find("static_answered").unwrap() + "static_answered".len();
        assert_eq!(&lines[1][end - "0.25".len()..end], "0.25");
    }
}
