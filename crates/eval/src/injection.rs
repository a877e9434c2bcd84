//! `switchyard eval injection`: how well an index's screening separates injections from benign
//! text, threshold-free (ROC AUC, recall at 1% and 5% false positives) and at the index's own
//! threshold (precision, recall, F1, false-positive rate), overall and per language.
//!
//! The score ranked for the curves is the screening rule made continuous:
//! `min(attack - threshold, attack - benign - margin)`, which is >= 0 exactly when the router
//! flags the text. The attack similarity alone is reported too (`auc_attack_only`), to show what
//! the benign look-alikes add.

use crate::metrics::{Confusion, recall_at_fpr, roc_auc, round4};
use crate::tools::{EvalTimings, ModelInfo};
use crate::{Progress, Result, embedding, jsonl};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use switchyard_embed::Embedder;
use switchyard_router::{RouterBuilder, ScreenEntry};

/// One line of `samples.jsonl` (other fields are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct SampleRow {
    /// The untrusted text.
    pub text: String,
    /// 1: injection or jailbreak, 0: benign.
    pub label: u8,
    /// Language, when known.
    #[serde(default)]
    pub lang: Option<String>,
}

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct InjectionEval {
    /// The index whose patterns and threshold are measured.
    pub index: PathBuf,
    /// The samples.
    pub samples: PathBuf,
}

/// Figures for one group of samples.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// Samples.
    pub samples: usize,
    /// Label 1.
    pub injections: usize,
    /// Label 0.
    pub benign: usize,
    /// ROC AUC of the screening score (None without both labels).
    pub auc: Option<f64>,
    /// ROC AUC of the best attack similarity alone.
    pub auc_attack_only: Option<f64>,
    /// Recall with at most 1% of benign samples flagged.
    #[serde(rename = "recall@1%fpr")]
    pub recall_at_1pct_fpr: Option<f64>,
    /// Recall with at most 5% of benign samples flagged.
    #[serde(rename = "recall@5%fpr")]
    pub recall_at_5pct_fpr: Option<f64>,
    /// At the index's threshold: precision, recall, f1, fpr and counts.
    pub at_threshold: BTreeMap<String, serde_json::Value>,
}

/// The report of `eval injection`.
#[derive(Debug, Clone, Serialize)]
pub struct InjectionReport {
    /// The index.
    pub index: PathBuf,
    /// The samples file.
    pub samples_file: PathBuf,
    /// Model name and fingerprint.
    pub model: ModelInfo,
    /// The index's injection threshold.
    pub threshold: f32,
    /// The benign margin.
    pub margin: f32,
    /// All samples.
    pub overall: Figures,
    /// Per `lang`.
    pub per_lang: BTreeMap<String, Figures>,
    /// Where the time went.
    pub timings: EvalTimings,
}

fn figures(score: &[f32], attack: &[f32], flagged: &[bool], labels: &[bool]) -> Figures {
    let injections = labels.iter().filter(|l| **l).count();
    Figures {
        samples: labels.len(),
        injections,
        benign: labels.len() - injections,
        auc: roc_auc(score, labels).map(round4),
        auc_attack_only: roc_auc(attack, labels).map(round4),
        recall_at_1pct_fpr: recall_at_fpr(score, labels, 0.01).map(|r| round4(r.0)),
        recall_at_5pct_fpr: recall_at_fpr(score, labels, 0.05).map(|r| round4(r.0)),
        at_threshold: Confusion::from(flagged, labels).rates(),
    }
}

/// Runs the evaluation with the index's own thresholds.
pub fn eval_injection(
    cfg: &InjectionEval,
    embedder: Arc<dyn Embedder>,
    progress: Progress<'_>,
) -> Result<InjectionReport> {
    let t0 = Instant::now();
    let rows: Vec<SampleRow> = jsonl::read_jsonl(&cfg.samples)?;
    for (i, r) in rows.iter().enumerate() {
        if r.label > 1 {
            return Err(crate::EvalError::Invalid {
                path: cfg.samples.clone(),
                line: i + 1,
                field: "label",
                message: format!("is {}; use 1 for an injection, 0 for benign", r.label),
            });
        }
    }
    let router = RouterBuilder::new(&cfg.index).build(Arc::clone(&embedder))?;
    let threshold = router.injection_threshold();
    let margin = router.injection_margin();

    let te = Instant::now();
    let texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
    let vectors = embedding::embed_many(embedder.as_ref(), &texts, "embed samples", progress)?;
    let embed_ms = te.elapsed().as_secs_f64() * 1e3;

    let ts = Instant::now();
    let entries: Vec<ScreenEntry<'_>> = rows
        .iter()
        .zip(&vectors)
        .map(|(r, v)| ScreenEntry { text: &r.text, embedding: v })
        .collect();
    let mut verdicts = Vec::with_capacity(rows.len());
    for chunk in entries.chunks(512) {
        let report = router.screen(chunk)?;
        let base = verdicts.len();
        let mut v: Vec<_> = report.kept.into_iter().chain(report.dropped).collect();
        v.sort_by_key(|x| x.entry);
        verdicts.extend(v.into_iter().map(|mut x| {
            x.entry += base;
            x
        }));
    }
    let route_ms = ts.elapsed().as_secs_f64() * 1e3;

    let score: Vec<f32> = verdicts
        .iter()
        .map(|v| (v.attack_score - threshold).min(v.attack_score - v.benign_score - margin))
        .collect();
    let attack: Vec<f32> = verdicts.iter().map(|v| v.attack_score).collect();
    let flagged: Vec<bool> = verdicts.iter().map(|v| v.flagged).collect();
    let labels: Vec<bool> = rows.iter().map(|r| r.label == 1).collect();
    let overall = figures(&score, &attack, &flagged, &labels);

    let mut by_lang: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        if let Some(l) = &r.lang {
            by_lang.entry(l.clone()).or_default().push(i);
        }
    }
    let pick = |ids: &[usize], v: &[f32]| ids.iter().map(|&i| v[i]).collect::<Vec<_>>();
    let per_lang = by_lang
        .into_iter()
        .map(|(lang, ids)| {
            let f = figures(
                &pick(&ids, &score),
                &pick(&ids, &attack),
                &ids.iter().map(|&i| flagged[i]).collect::<Vec<_>>(),
                &ids.iter().map(|&i| labels[i]).collect::<Vec<_>>(),
            );
            (lang, f)
        })
        .collect();
    let total_ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok(InjectionReport {
        index: cfg.index.clone(),
        samples_file: cfg.samples.clone(),
        model: ModelInfo::of(embedder.as_ref()),
        threshold,
        margin,
        overall,
        per_lang,
        timings: EvalTimings {
            build_ms: 0.0,
            embed_ms,
            route_ms,
            bm25_ms: 0.0,
            total_ms,
            per_second: rows.len() as f64 / (total_ms / 1e3),
        },
    })
}
