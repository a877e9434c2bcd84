//! `switchyard eval tools`: tool retrieval on a `tools.jsonl` catalog and `queries.jsonl`, the
//! router against a BM25 baseline in the same run.

use crate::interval::{Estimate, paired_difference};
use crate::metrics::{RankingSummary, score_query};
use crate::tool_errors::{ToolErrors, tool_errors};
use crate::{Bm25, EvalError, Progress, Result, cache, embedding, jsonl};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use switchyard_embed::Embedder;
use switchyard_manifest::{Catalog, Tool};
use switchyard_router::{AnsweredBy, RouteOptions, RouterBuilder, Scratch};

/// One line of `tools.jsonl` (other fields are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct ToolRow {
    /// Tool name, as the queries' `gold` lists spell it.
    pub name: String,
    /// What it does (may be empty or missing: a warning, and the tool is routed by its name).
    #[serde(default)]
    pub description: String,
}

/// One line of `queries.jsonl` (other fields are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct QueryRow {
    /// Its line in the file (set after reading).
    #[serde(skip)]
    pub line: usize,
    /// The user's request.
    pub query: String,
    /// The tools that answer it; empty for a query that needs no tool (such rows measure
    /// how often the router selects tools it should not).
    #[serde(default)]
    pub gold: Vec<String>,
    /// Language, when the set has one.
    #[serde(default)]
    pub lang: Option<String>,
    /// The set's split (`dev`, `test_in_domain`, ...), when it has one.
    #[serde(default)]
    pub split: Option<String>,
}

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct ToolsEval {
    /// The catalog.
    pub tools: PathBuf,
    /// The queries.
    pub queries: PathBuf,
    /// Cut-offs for recall@k (sorted, deduplicated).
    pub ks: Vec<usize>,
    /// Where built indexes are kept.
    pub cache_dir: PathBuf,
    /// Evaluate only the first N queries (for quick looks; the report says so).
    pub limit: Option<usize>,
    /// Lexical weight of the hybrid and deployed routers instead of the index's.
    pub lexical_weight: Option<f32>,
    /// A query adapter to build the index with (`switchyard train adapter`).
    pub adapter: Option<switchyard_adapter::Adapter>,
    /// Only the queries whose `split` field is this (e.g. Seal-Tools' `test_out_domain`).
    pub split: Option<String>,
    /// How many of the queries the deployed selection got wrong, and of the tools behind
    /// them, the report lists ([`ToolErrors`]).
    pub max_errors: usize,
}

/// (lead, coverage) requirements tried by the cascade sweep: the lead as a fraction of the
/// static score spread, the coverage as the share of the task's pieces the table knows. The
/// index's default is one of them.
pub const CASCADE_SWEEP: &[(f32, f32)] =
    &[(0.25, 0.8), (0.25, 1.0), (0.5, 0.8), (0.5, 1.0), (0.75, 0.8), (1.0, 0.8)];

/// The cascade at one lead requirement.
#[derive(Debug, Clone, Serialize)]
pub struct SweepPoint {
    /// Lead required, as a fraction of the static space's related-unrelated spread.
    pub margin: f32,
    /// Coverage required.
    pub min_coverage: f32,
    /// Share of queries answered from the static table.
    pub static_answered: f64,
    /// Among those, the share whose best tool is the model's best tool.
    pub top1_agrees_with_model: Option<f64>,
    /// Ranking metrics of the whole set with the cascade at this margin.
    pub ranking: BTreeMap<String, serde_json::Value>,
}

/// Metrics of the router and the baseline over one group of queries.
#[derive(Debug, Clone, Serialize)]
pub struct Compared {
    /// The embedding alone: every tool ranked by cosine (lexical weight 0), no gate.
    pub dense: BTreeMap<String, serde_json::Value>,
    /// The hybrid ranking (dense and lexical fused with the index's weight), no gate.
    pub hybrid: BTreeMap<String, serde_json::Value>,
    /// The hybrid ranking with the cascade: easy queries ranked in the static space.
    pub hybrid_cascade: BTreeMap<String, serde_json::Value>,
    /// The router as deployed: gate, floor, `max_results`, cascade on.
    pub deployed: BTreeMap<String, serde_json::Value>,
    /// The hybrid ranking cut at `max_results`: the most the deployed selection can reach.
    pub hybrid_cut_at_max_results: BTreeMap<String, serde_json::Value>,
    /// BM25 over name + description (k1 1.2, b 0.75): the baseline.
    pub bm25: BTreeMap<String, serde_json::Value>,
}

/// The report of `eval tools`.
#[derive(Debug, Clone, Serialize)]
pub struct ToolsReport {
    /// Input files and counts.
    pub dataset: DatasetInfo,
    /// Model name and fingerprint.
    pub model: ModelInfo,
    /// The index used.
    pub index: cache::CachedIndex,
    /// The index's cosine tool threshold (used by indexes without a selection section).
    pub tool_min: f32,
    /// The index's fusion weight and gates for tools.
    pub selection: Option<switchyard_format::FusionMeta>,
    /// The deployed router's `max_results`.
    pub max_results: usize,
    /// Mean number of tools the deployed router selected per query.
    pub mean_selected_deployed: f64,
    /// Share of the no-tool queries (rows with an empty `gold`) that got any tool.
    pub no_tool_selected_rate: Option<f64>,
    /// Share of queries the cascade answered from its static table.
    pub static_answered: f64,
    /// The cascade at several lead requirements (compare with `overall.router`).
    pub cascade_sweep: Vec<SweepPoint>,
    /// All queries with gold tools.
    pub overall: Option<Compared>,
    /// Per `lang:<tag>` when rows have one, and `multi-tool` (queries with several gold tools).
    pub per_group: BTreeMap<String, Compared>,
    /// What the hybrid ranking gains over each side alone, paired by query, with 95% intervals.
    pub hybrid_gain: Option<HybridGain>,
    /// The queries the deployed selection got wrong, and the tools behind them.
    pub errors: ToolErrors,
    /// Where the time went.
    pub timings: EvalTimings,
}

/// The hybrid ranking's recall@k less each side's alone, paired by query (bootstrap over the
/// queries, 95%): whether fusing the two beats the better of them by more than noise.
#[derive(Debug, Clone, Serialize)]
pub struct HybridGain {
    /// The cut-off: 5 when it was asked for, else the largest k asked for.
    pub k: usize,
    /// Hybrid less dense.
    pub over_dense: Estimate,
    /// Hybrid less BM25.
    pub over_bm25: Estimate,
    /// The side with the higher recall@k on all queries: `dense` or `bm25`.
    pub better_side: &'static str,
    /// Hybrid less that side.
    pub over_better_side: Estimate,
}

/// Input files and counts.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetInfo {
    /// Catalog file.
    pub tools_file: PathBuf,
    /// Query file.
    pub queries_file: PathBuf,
    /// Tools in the catalog.
    pub tools: usize,
    /// Queries with gold tools evaluated.
    pub queries: usize,
    /// Queries that need no tool (empty `gold`).
    pub no_tool_queries: usize,
    /// Catalog warnings (tools without a description).
    pub warnings: usize,
    /// Queries skipped because none of their gold tools is in the catalog.
    pub skipped_unknown_gold: usize,
    /// Set when `limit` cut the query list.
    pub limited_to: Option<usize>,
}

/// [`HybridGain`] from per-query recall of dense, hybrid and BM25 (in that order); `None`
/// without queries.
fn hybrid_gain([dense, hybrid, bm25]: &[Vec<f64>; 3], k: Option<usize>) -> Option<HybridGain> {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (better_side, better) =
        if mean(dense) >= mean(bm25) { ("dense", dense) } else { ("bm25", bm25) };
    Some(HybridGain {
        k: k?,
        over_dense: paired_difference(dense, hybrid)?,
        over_bm25: paired_difference(bm25, hybrid)?,
        better_side,
        over_better_side: paired_difference(better, hybrid)?,
    })
}

/// The model an evaluation ran with.
#[derive(Debug, Clone, Serialize)]
pub struct ModelInfo {
    /// Its name.
    pub name: String,
    /// Its fingerprint (hex).
    pub fingerprint: String,
}

impl ModelInfo {
    pub(crate) fn of(e: &dyn Embedder) -> Self {
        Self { name: e.info().name.clone(), fingerprint: e.fingerprint().to_hex() }
    }
}

/// Where an evaluation's time went, in milliseconds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EvalTimings {
    /// Getting the index (near 0 when cached).
    pub build_ms: f64,
    /// Embedding the queries or samples.
    pub embed_ms: f64,
    /// Routing or screening them.
    pub route_ms: f64,
    /// The baseline.
    pub bm25_ms: f64,
    /// Everything.
    pub total_ms: f64,
    /// Queries (or samples) per second, end to end.
    pub per_second: f64,
}

/// Loads `tools.jsonl` as a catalog: each tool offered in every mode, no examples.
pub fn load_tools(path: &Path) -> Result<Catalog> {
    let rows: Vec<ToolRow> = jsonl::read_jsonl(path)?;
    let mut seen = HashSet::new();
    let mut warnings = Vec::new();
    let mut tools = Vec::with_capacity(rows.len());
    for (i, r) in rows.into_iter().enumerate() {
        let invalid = |field, message: String| EvalError::Invalid {
            path: path.to_path_buf(),
            line: i + 1,
            field,
            message,
        };
        if r.name.trim().is_empty() {
            return Err(invalid("name", "is empty; every tool needs the name queries use".into()));
        }
        if r.description.trim().is_empty() {
            warnings.push(switchyard_manifest::Warning {
                path: path.to_path_buf(),
                line: i + 1,
                message: format!(
                    "description: {} has none; it is routed by its name alone",
                    r.name
                ),
            });
        }
        if !seen.insert(r.name.clone()) {
            return Err(invalid(
                "name",
                format!("{} is listed twice; names must be unique", r.name),
            ));
        }
        tools.push(Tool {
            name: r.name,
            description: r.description,
            modes: Vec::new(),
            examples: Vec::new(),
            parameters: None,
            tags: Vec::new(),
            server: None,
        });
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Catalog {
        tools,
        skills: Vec::new(),
        modes: Vec::new(),
        patterns: Vec::new(),
        benign: Vec::new(),
        thinking: Vec::new(),
        constitution: None,
        off_topic: Default::default(),
        warnings,
    })
}

/// Runs the evaluation.
pub fn eval_tools(
    cfg: &ToolsEval,
    embedder: Arc<dyn Embedder>,
    progress: Progress<'_>,
) -> Result<ToolsReport> {
    let t0 = Instant::now();
    let ks = normalize_ks(&cfg.ks)?;
    let kmax = *ks.last().unwrap_or(&10);
    let depth = kmax.max(10);
    let catalog = load_tools(&cfg.tools)?;
    let known: HashSet<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
    let mut rows = read_queries(&cfg.queries)?;
    if let Some(split) = &cfg.split {
        rows.retain(|r| r.split.as_ref() == Some(split));
        if rows.is_empty() {
            return Err(EvalError::Usage(format!(
                "{}: no query has split {split:?}",
                cfg.queries.display()
            )));
        }
    }
    if let Some(n) = cfg.limit {
        rows.truncate(n);
    }
    // Rows with no gold are no-tool probes: they measure selection where none is wanted.
    let (no_tool, mut rows): (Vec<QueryRow>, Vec<QueryRow>) =
        rows.into_iter().partition(|r| r.gold.is_empty());
    let total_rows = rows.len();
    rows.retain(|r| r.gold.iter().any(|g| known.contains(g.as_str())));
    let skipped = total_rows - rows.len();
    if rows.is_empty() && no_tool.is_empty() {
        return Err(EvalError::Usage(format!(
            "{}: no query names a tool of {}; are the two files from the same data set?",
            cfg.queries.display(),
            cfg.tools.display()
        )));
    }

    let index = cache::cached_index(
        &catalog,
        embedder.as_ref(),
        cfg.adapter.as_ref(),
        &cfg.cache_dir,
        progress,
    )?;
    let ranker = |weight: Option<f32>, cascade: bool| {
        RouterBuilder::new(&index.path)
            .max_tools(depth)
            .max_results(depth)
            .rank_all(true)
            .cascade(cascade)
            .lexical_weight(weight)
            .build(Arc::clone(&embedder))
    };
    // The dense column is the plain cosine ranking: no lexical side, no late interaction.
    let dense = RouterBuilder::new(&index.path)
        .max_tools(depth)
        .max_results(depth)
        .rank_all(true)
        .cascade(false)
        .lexical_weight(Some(0.0))
        .late_interaction(false)
        .build(Arc::clone(&embedder))?;
    let hybrid = ranker(cfg.lexical_weight, false)?;
    let hybrid_cascade = ranker(cfg.lexical_weight, true)?;
    // As deployed: the router's own defaults (gate, floor, max_results), cascade on.
    let deployed = RouterBuilder::new(&index.path)
        .lexical_weight(cfg.lexical_weight)
        .build(Arc::clone(&embedder))?;
    let max_results = deployed_max_results();
    let meta = dense.index().meta();
    let tool_min = meta.thresholds.tool_min;
    let selection = dense.index().selection().map(|s| s.tools.clone());
    let build_ms = index.build_ms;

    let te = Instant::now();
    let texts: Vec<&str> = rows.iter().chain(&no_tool).map(|r| r.query.as_str()).collect();
    let late = hybrid.uses_late_interaction();
    let embedded =
        embedding::TaskEmbeddings::new(embedder.as_ref(), &texts, late, "embed queries", progress)?;
    let embed_ms = te.elapsed().as_secs_f64() * 1e3;

    let tr = Instant::now();
    let mut scratch = Scratch::default();
    let options = RouteOptions::default();
    let routers = [&dense, &hybrid, &hybrid_cascade, &deployed];
    let mut ranked: [Vec<Vec<String>>; 4] = Default::default();
    let mut static_answered = 0usize;
    for (i, row) in rows.iter().enumerate() {
        for (k, r) in routers.iter().enumerate() {
            embedded.prime(r, i, &row.query);
            let d = r.route_with(&row.query, &options, &mut scratch)?;
            if k == 2 && d.answered_by == AnsweredBy::Static {
                static_answered += 1;
            }
            ranked[k].push(d.tools.into_iter().map(|s| s.name).collect());
        }
        if i % 256 == 0 || i + 1 == rows.len() {
            progress("route", i + 1, rows.len());
        }
    }
    let mut no_tool_selected = 0usize;
    for (j, row) in no_tool.iter().enumerate() {
        embedded.prime(&deployed, rows.len() + j, &row.query);
        let d = deployed.route_with(&row.query, &options, &mut scratch)?;
        no_tool_selected += (!d.tools.is_empty()) as usize;
    }
    let route_ms = tr.elapsed().as_secs_f64() * 1e3;

    // The cascade's lead requirement swept: how much it answers, and what that costs.
    let mut cascade_sweep = Vec::with_capacity(CASCADE_SWEEP.len());
    for &(margin, min_coverage) in CASCADE_SWEEP {
        let r = RouterBuilder::new(&index.path)
            .max_tools(depth)
            .max_results(depth)
            .rank_all(true)
            .cascade_margin(Some(margin))
            .cascade_min_coverage(Some(min_coverage))
            .build(Arc::clone(&embedder))?;
        let mut sum = RankingSummary::new(&ks);
        let (mut answered, mut agree) = (0usize, 0usize);
        for (i, row) in rows.iter().enumerate() {
            embedded.prime(&r, i, &row.query);
            let d = r.route_with(&row.query, &options, &mut scratch)?;
            let names: Vec<&str> = d.tools.iter().map(|s| s.name.as_str()).collect();
            if d.answered_by == AnsweredBy::Static {
                answered += 1;
                agree +=
                    (names.first().copied() == ranked[1][i].first().map(String::as_str)) as usize;
            }
            sum.add(&score_query(&names, &row.gold, &ks));
        }
        cascade_sweep.push(SweepPoint {
            margin,
            min_coverage,
            static_answered: crate::metrics::round4(answered as f64 / rows.len().max(1) as f64),
            top1_agrees_with_model: (answered > 0)
                .then(|| crate::metrics::round4(agree as f64 / answered as f64)),
            ranking: sum.to_map(),
        });
    }

    let tb = Instant::now();
    let docs: Vec<String> =
        catalog.tools.iter().map(|t| format!("{} {}", t.name, t.description)).collect();
    let bm25 = Bm25::new(&docs);
    let ranked_bm25: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| {
            bm25.top(&r.query, depth).into_iter().map(|i| catalog.tools[i].name.as_str()).collect()
        })
        .collect();
    let bm25_ms = tb.elapsed().as_secs_f64() * 1e3;

    let mut groups: BTreeMap<Option<String>, [RankingSummary; 6]> = BTreeMap::new();
    let fresh = || std::array::from_fn(|_| RankingSummary::new(&ks));
    let mut selected_total = 0usize;
    // recall@k per query of dense, hybrid and BM25, for the paired gains.
    let gain_at = ks.iter().position(|&k| k == 5).unwrap_or(ks.len().saturating_sub(1));
    let mut per_query: [Vec<f64>; 3] = Default::default();
    for (i, row) in rows.iter().enumerate() {
        selected_total += ranked[3][i].len();
        let scores = [
            score_query(&names(&ranked[0][i]), &row.gold, &ks),
            score_query(&names(&ranked[1][i]), &row.gold, &ks),
            score_query(&ranked_bm25[i], &row.gold, &ks),
            score_query(&names(&ranked[2][i]), &row.gold, &ks),
            score_query(&names(&ranked[3][i]), &row.gold, &ks),
            // The plain ranking cut at max_results: what the deployed selection is held to.
            score_query(
                &names(&ranked[1][i])[..ranked[1][i].len().min(max_results)],
                &row.gold,
                &ks,
            ),
        ];
        for (side, s) in per_query.iter_mut().zip(&scores[..3]) {
            side.extend(s.recall.get(gain_at).copied());
        }
        let multi = (row.gold.len() > 1).then(|| "multi-tool".to_string());
        let keys = [None, row.lang.clone().map(|l| format!("lang:{l}")), multi];
        for key in keys.into_iter().collect::<std::collections::BTreeSet<_>>() {
            let g = groups.entry(key).or_insert_with(fresh);
            for (sum, s) in g.iter_mut().zip(&scores) {
                sum.add(s);
            }
        }
    }
    let compared = |g: &[RankingSummary; 6]| Compared {
        dense: g[0].to_map(),
        hybrid: g[1].to_map(),
        bm25: g[2].to_map(),
        hybrid_cascade: g[3].to_map(),
        deployed: g[4].to_map(),
        hybrid_cut_at_max_results: g[5].to_map(),
    };
    let overall = groups.get(&None).map(compared);
    let hybrid_gain = hybrid_gain(&per_query, ks.get(gain_at).copied());
    let errors = tool_errors(&rows, &ranked[1], &ranked[3], cfg.max_errors);
    let per_group =
        groups.iter().filter_map(|(k, g)| k.as_ref().map(|k| (k.clone(), compared(g)))).collect();
    let total_ms = t0.elapsed().as_secs_f64() * 1e3;
    let n_all = rows.len() + no_tool.len();
    Ok(ToolsReport {
        dataset: DatasetInfo {
            tools_file: cfg.tools.clone(),
            queries_file: cfg.queries.clone(),
            tools: catalog.tools.len(),
            queries: rows.len(),
            no_tool_queries: no_tool.len(),
            skipped_unknown_gold: skipped,
            limited_to: cfg.limit,
            warnings: catalog.warnings.len(),
        },
        model: ModelInfo::of(embedder.as_ref()),
        tool_min,
        selection,
        max_results,
        mean_selected_deployed: crate::metrics::round4(
            selected_total as f64 / rows.len().max(1) as f64,
        ),
        no_tool_selected_rate: (!no_tool.is_empty())
            .then(|| crate::metrics::round4(no_tool_selected as f64 / no_tool.len() as f64)),
        static_answered: crate::metrics::round4(static_answered as f64 / rows.len().max(1) as f64),
        cascade_sweep,
        index,
        overall,
        per_group,
        hybrid_gain,
        errors,
        timings: EvalTimings {
            build_ms,
            embed_ms,
            route_ms,
            bm25_ms,
            total_ms,
            per_second: n_all as f64 / (total_ms / 1e3),
        },
    })
}

/// The rows of a `queries.jsonl`, each with its line in the file.
pub(crate) fn read_queries(path: &Path) -> Result<Vec<QueryRow>> {
    Ok(jsonl::read_jsonl_numbered(path)?
        .into_iter()
        .map(|(line, row)| QueryRow { line, ..row })
        .collect())
}

fn names(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The router's default `max_results` (what a deployed selection returns at most).
fn deployed_max_results() -> usize {
    5
}

/// Sorts and deduplicates k values; k must be at least 1.
pub fn normalize_ks(ks: &[usize]) -> Result<Vec<usize>> {
    let mut ks = ks.to_vec();
    ks.sort_unstable();
    ks.dedup();
    if ks.is_empty() || ks[0] == 0 {
        return Err(EvalError::Usage("--k: give cut-offs of at least 1, e.g. --k 1,3,5,10".into()));
    }
    Ok(ks)
}
