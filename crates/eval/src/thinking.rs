//! Thinking-mode routing against hand-labelled problems (`switchyard eval thinking`).

use crate::jsonl::read_jsonl;
use crate::{Progress, Result, cache, embedding};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use switchyard_embed::Embedder;
use switchyard_manifest::Catalog;
use switchyard_router::{RouterBuilder, ThinkingDecision, ThinkingSource};

/// One labelled problem.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThinkingCase {
    /// The problem.
    pub problem: String,
    /// Its language.
    #[serde(default)]
    pub lang: Option<String>,
    /// The thinking mode it calls for.
    pub mode: String,
}

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct ThinkingEval {
    /// The manifest folder (with thinking.toml).
    pub manifests: PathBuf,
    /// The labelled problems.
    pub cases: PathBuf,
    /// Where built indexes are kept.
    pub cache_dir: PathBuf,
}

/// Accuracy over a group of problems.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ThinkingScore {
    /// Problems.
    pub cases: usize,
    /// Share routed to the labelled mode.
    pub accuracy: f64,
}

/// A problem routed elsewhere than its label.
#[derive(Debug, Clone, Serialize)]
pub struct ThinkingMiss {
    /// The problem.
    pub problem: String,
    /// Its label.
    pub expected: String,
    /// The decision.
    pub decision: ThinkingDecision,
}

/// The report of `switchyard eval thinking`.
#[derive(Debug, Clone, Serialize)]
pub struct ThinkingReport {
    /// The cases file.
    pub cases_file: String,
    /// The index's model.
    pub model: String,
    /// Whether the index's semantic fallback may decide (its leave-one-out margin, if any).
    pub semantic_margin: Option<f32>,
    /// All problems.
    pub overall: ThinkingScore,
    /// Per language.
    pub per_lang: BTreeMap<String, ThinkingScore>,
    /// Per labelled mode (its recall).
    pub per_mode: BTreeMap<String, ThinkingScore>,
    /// Per deciding step (explicit never occurs here): how many it decided and how many right.
    pub per_source: BTreeMap<String, ThinkingScore>,
    /// Labelled mode -> chosen mode -> count.
    pub confusion: BTreeMap<String, BTreeMap<String, usize>>,
    /// The problems routed elsewhere.
    pub misses: Vec<ThinkingMiss>,
    /// Warm `think` time per problem (embedding cached, as inside an assembly), microseconds:
    /// p50 and p95 over 20 rounds.
    pub think_us: (f64, f64),
    /// `think` with the problem's embedding made first (a problem no assembly embedded yet),
    /// milliseconds: p50 and p95 over 3 rounds.
    pub with_embedding_ms: (f64, f64),
}

fn score(rows: &[(&ThinkingCase, &ThinkingDecision)]) -> ThinkingScore {
    let right = rows.iter().filter(|(c, d)| c.mode == d.mode).count();
    ThinkingScore { cases: rows.len(), accuracy: right as f64 / rows.len().max(1) as f64 }
}

fn grouped<'a>(
    rows: &[(&'a ThinkingCase, &'a ThinkingDecision)],
    key: impl Fn(&ThinkingCase, &ThinkingDecision) -> String,
) -> BTreeMap<String, ThinkingScore> {
    let mut groups: BTreeMap<String, Vec<(&ThinkingCase, &ThinkingDecision)>> = BTreeMap::new();
    for &(c, d) in rows {
        groups.entry(key(c, d)).or_default().push((c, d));
    }
    groups.iter().map(|(k, g)| (k.clone(), score(g))).collect()
}

/// Routes every labelled problem (auto mode) with an index built from `manifests` and reports
/// accuracy overall, per language, per mode and per deciding step.
pub fn eval_thinking(
    cfg: &ThinkingEval,
    embedder: Arc<dyn Embedder>,
    progress: Progress<'_>,
) -> Result<ThinkingReport> {
    let catalog =
        Catalog::load(&cfg.manifests).map_err(switchyard_build_index::BuildError::from)?;
    let cases: Vec<ThinkingCase> = read_jsonl(&cfg.cases)?;
    let known: Vec<&str> = catalog.thinking.iter().map(|m| m.name.as_str()).collect();
    if let Some((i, c)) = cases.iter().enumerate().find(|(_, c)| !known.contains(&c.mode.as_str()))
    {
        return Err(crate::EvalError::Invalid {
            path: cfg.cases.clone(),
            line: i + 1,
            field: "mode",
            message: format!(
                "{:?} is not a thinking mode of {} (known: {}); fix the label or the manifest",
                c.mode,
                cfg.manifests.display(),
                known.join(", ")
            ),
        });
    }
    let index = cache::cached_index(&catalog, embedder.as_ref(), None, &cfg.cache_dir, progress)?;
    let router = RouterBuilder::new(&index.path).build(Arc::clone(&embedder))?;
    let texts: Vec<&str> = cases.iter().map(|c| c.problem.as_str()).collect();
    let vectors = embedding::embed_many(embedder.as_ref(), &texts, "embed problems", progress)?;
    for (c, v) in cases.iter().zip(vectors) {
        router.prime_cache(&c.problem, v);
    }
    let decisions: Vec<ThinkingDecision> =
        cases.iter().map(|c| router.think(&c.problem, None)).collect::<Result<_, _>>()?;
    let mut times = Vec::new();
    for _ in 0..20 {
        for c in &cases {
            let t = Instant::now();
            std::hint::black_box(router.think(std::hint::black_box(&c.problem), None)?);
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    let mut cold = Vec::new();
    for _ in 0..3 {
        for c in &cases {
            let t = Instant::now();
            let v = embedder.embed(&c.problem)?;
            router.prime_cache(&c.problem, v);
            std::hint::black_box(router.think(&c.problem, None)?);
            cold.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let pcts = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v.get(((v.len().max(1) - 1) as f64 * q).round() as usize).copied();
        (at(0.5).unwrap_or(0.0), at(0.95).unwrap_or(0.0))
    };
    let rows: Vec<(&ThinkingCase, &ThinkingDecision)> = cases.iter().zip(&decisions).collect();
    let mut confusion: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for (c, d) in &rows {
        *confusion.entry(c.mode.clone()).or_default().entry(d.mode.clone()).or_default() += 1;
    }
    let source = |s: ThinkingSource| {
        serde_json::to_value(s)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    Ok(ThinkingReport {
        cases_file: cfg.cases.display().to_string(),
        model: router.index().meta().model.name.clone(),
        semantic_margin: router.thinking()?.calibration.semantic_margin,
        overall: score(&rows),
        per_lang: grouped(&rows, |c, _| c.lang.clone().unwrap_or_else(|| "?".into())),
        per_mode: grouped(&rows, |c, _| c.mode.clone()),
        per_source: grouped(&rows, |_, d| source(d.source)),
        confusion,
        misses: rows
            .iter()
            .filter(|(c, d)| c.mode != d.mode)
            .map(|(c, d)| ThinkingMiss {
                problem: c.problem.clone(),
                expected: c.mode.clone(),
                decision: (*d).clone(),
            })
            .collect(),
        think_us: pcts(times),
        with_embedding_ms: pcts(cold),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_that_is_not_a_thinking_mode_is_refused_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let cases = dir.path().join("bad.jsonl");
        std::fs::write(
            &cases,
            "{\"problem\": \"what could go wrong?\", \"mode\": \"red_team\"}\n\
             {\"problem\": \"x\", \"mode\": \"sideways\"}\n",
        )
        .unwrap();
        let manifests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests");
        let cfg = ThinkingEval { manifests, cases, cache_dir: dir.path().to_path_buf() };
        let model: Arc<dyn Embedder> = Arc::new(switchyard_embed::HashEmbedder::new(32));
        let e = eval_thinking(&cfg, model, &|_, _, _| {}).unwrap_err().to_string();
        assert!(e.contains("bad.jsonl:2: mode:") && e.contains("\"sideways\""), "{e}");
    }
}
