//! `switchyard eval tools`: tool retrieval on a `tools.jsonl` catalog and `queries.jsonl`, the
//! router against a BM25 baseline in the same run.

use crate::metrics::{RankingSummary, score_query};
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
    /// What it does.
    pub description: String,
}

/// One line of `queries.jsonl` (other fields are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct QueryRow {
    /// The user's request.
    pub query: String,
    /// The tools that answer it.
    pub gold: Vec<String>,
    /// Language, when the set has one.
    #[serde(default)]
    pub lang: Option<String>,
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
    /// The router's ranking (every tool ranked, no threshold).
    pub router: BTreeMap<String, serde_json::Value>,
    /// The router as deployed: only tools scoring at or above the index's `tool_min`.
    pub router_at_threshold: BTreeMap<String, serde_json::Value>,
    /// The router with its cascade: easy queries ranked in the static space, the rest by the
    /// model (every tool ranked, no threshold).
    pub cascade: BTreeMap<String, serde_json::Value>,
    /// The cascade as deployed: only tools at or above the threshold of the space that answered.
    pub cascade_at_threshold: BTreeMap<String, serde_json::Value>,
    /// BM25 over name + description.
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
    /// The index's tool threshold.
    pub tool_min: f32,
    /// Mean number of tools at or above the threshold per query.
    pub mean_selected_at_threshold: f64,
    /// Share of queries the cascade answered from its static table.
    pub static_answered: f64,
    /// The cascade at several lead requirements (compare with `overall.router`).
    pub cascade_sweep: Vec<SweepPoint>,
    /// All queries.
    pub overall: Compared,
    /// Per `lang`, when rows have one.
    pub per_lang: BTreeMap<String, Compared>,
    /// Where the time went.
    pub timings: EvalTimings,
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
    /// Queries evaluated.
    pub queries: usize,
    /// Queries skipped because none of their gold tools is in the catalog.
    pub skipped_unknown_gold: usize,
    /// Set when `limit` cut the query list.
    pub limited_to: Option<usize>,
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
            return Err(invalid(
                "description",
                format!("{} has an empty description; the router embeds it", r.name),
            ));
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
        });
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Catalog {
        tools,
        skills: Vec::new(),
        modes: Vec::new(),
        patterns: Vec::new(),
        benign: Vec::new(),
        warnings: Vec::new(),
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
    let mut rows: Vec<QueryRow> = jsonl::read_jsonl(&cfg.queries)?;
    if let Some(n) = cfg.limit {
        rows.truncate(n);
    }
    for (i, r) in rows.iter().enumerate() {
        if r.gold.is_empty() {
            return Err(EvalError::Invalid {
                path: cfg.queries.clone(),
                line: i + 1,
                field: "gold",
                message: "is empty; list the tool names that answer the query".into(),
            });
        }
    }
    let total_rows = rows.len();
    rows.retain(|r| r.gold.iter().any(|g| known.contains(g.as_str())));
    let skipped = total_rows - rows.len();
    if rows.is_empty() {
        return Err(EvalError::Usage(format!(
            "{}: no query names a tool of {}; are the two files from the same data set?",
            cfg.queries.display(),
            cfg.tools.display()
        )));
    }

    let index = cache::cached_index(&catalog, embedder.as_ref(), &cfg.cache_dir, progress)?;
    let builder = |cascade: bool| {
        RouterBuilder::new(&index.path)
            .max_tools(depth)
            .max_results(depth)
            .rank_all(true)
            .cascade(cascade)
            .build(Arc::clone(&embedder))
    };
    let router = builder(false)?;
    let with_cascade = builder(true)?;
    let tool_min = router.index().meta().thresholds.tool_min;
    let build_ms = index.build_ms;

    let te = Instant::now();
    let texts: Vec<&str> = rows.iter().map(|r| r.query.as_str()).collect();
    let vectors = embedding::embed_many(embedder.as_ref(), &texts, "embed queries", progress)?;
    let embed_ms = te.elapsed().as_secs_f64() * 1e3;

    let tr = Instant::now();
    let mut scratch = Scratch::default();
    let options = RouteOptions::default();
    // Per query: (ranking, threshold of the space that answered), model only and with cascade.
    type Ranked = (Vec<(String, f32)>, f32);
    let mut ranked: [Vec<Ranked>; 2] = [Vec::new(), Vec::new()];
    let mut static_answered = 0usize;
    for (i, (row, v)) in rows.iter().zip(&vectors).enumerate() {
        for (r, out) in [&router, &with_cascade].into_iter().zip(ranked.iter_mut()) {
            r.prime_cache(&row.query, v.clone());
            let d = r.route_with(&row.query, &options, &mut scratch)?;
            let min = if d.answered_by == AnsweredBy::Static {
                static_answered += 1;
                d.thresholds.tool_min
            } else {
                tool_min
            };
            out.push((d.tools.into_iter().map(|s| (s.name, s.score)).collect(), min));
        }
        if i % 256 == 0 || i + 1 == rows.len() {
            progress("route", i + 1, rows.len());
        }
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
        for (i, (row, v)) in rows.iter().zip(&vectors).enumerate() {
            r.prime_cache(&row.query, v.clone());
            let d = r.route_with(&row.query, &options, &mut scratch)?;
            let names: Vec<&str> = d.tools.iter().map(|s| s.name.as_str()).collect();
            if d.answered_by == AnsweredBy::Static {
                answered += 1;
                agree += (names.first().copied() == ranked[0][i].0.first().map(|(n, _)| n.as_str()))
                    as usize;
            }
            sum.add(&score_query(&names, &row.gold, &ks));
        }
        cascade_sweep.push(SweepPoint {
            margin,
            min_coverage,
            static_answered: crate::metrics::round4(answered as f64 / rows.len() as f64),
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

    fn lists((r, min): &(Vec<(String, f32)>, f32)) -> (Vec<&str>, Vec<&str>) {
        let all = r.iter().map(|(n, _)| n.as_str()).collect();
        let kept = r.iter().filter(|(_, s)| s >= min).map(|(n, _)| n.as_str()).collect();
        (all, kept)
    }
    let mut groups: BTreeMap<Option<String>, [RankingSummary; 5]> = BTreeMap::new();
    let fresh = || std::array::from_fn(|_| RankingSummary::new(&ks));
    let mut selected_total = 0usize;
    for (i, row) in rows.iter().enumerate() {
        let (all, kept) = lists(&ranked[0][i]);
        let (c_all, c_kept) = lists(&ranked[1][i]);
        selected_total += kept.len();
        let scores = [
            score_query(&all, &row.gold, &ks),
            score_query(&kept, &row.gold, &ks),
            score_query(&ranked_bm25[i], &row.gold, &ks),
            score_query(&c_all, &row.gold, &ks),
            score_query(&c_kept, &row.gold, &ks),
        ];
        for key in [None, row.lang.clone()].into_iter().collect::<std::collections::BTreeSet<_>>() {
            let g = groups.entry(key).or_insert_with(fresh);
            for (sum, s) in g.iter_mut().zip(&scores) {
                sum.add(s);
            }
        }
    }
    let compared = |g: &[RankingSummary; 5]| Compared {
        router: g[0].to_map(),
        router_at_threshold: g[1].to_map(),
        bm25: g[2].to_map(),
        cascade: g[3].to_map(),
        cascade_at_threshold: g[4].to_map(),
    };
    let overall = compared(&groups[&None]);
    let per_lang =
        groups.iter().filter_map(|(k, g)| k.as_ref().map(|k| (k.clone(), compared(g)))).collect();
    let total_ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok(ToolsReport {
        dataset: DatasetInfo {
            tools_file: cfg.tools.clone(),
            queries_file: cfg.queries.clone(),
            tools: catalog.tools.len(),
            queries: rows.len(),
            skipped_unknown_gold: skipped,
            limited_to: cfg.limit,
        },
        model: ModelInfo::of(embedder.as_ref()),
        tool_min,
        mean_selected_at_threshold: crate::metrics::round4(
            selected_total as f64 / rows.len() as f64,
        ),
        static_answered: crate::metrics::round4(static_answered as f64 / rows.len() as f64),
        cascade_sweep,
        index,
        overall,
        per_lang,
        timings: EvalTimings {
            build_ms,
            embed_ms,
            route_ms,
            bm25_ms,
            total_ms,
            per_second: rows.len() as f64 / (total_ms / 1e3),
        },
    })
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
