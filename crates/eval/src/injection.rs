//! `switchyard eval injection`: how well an index's screening separates injections from benign
//! text, threshold-free (ROC AUC, recall at 1% and 5% false positives) and at the index's own
//! threshold (precision, recall, F1, false-positive rate), overall and per language.
//!
//! Samples go through the path an assembly uses: each text is cut into pieces (windows,
//! de-obfuscation, decoded payloads) and embedded as `memory add` stores it, then screened by
//! the router. The score ranked for the curves is the verdict's score less its threshold (the
//! deciding head's logit over its threshold, or the contrast rule made continuous), which is
//! at least 0 exactly when the router flags the text; with family heads beside the main head, each
//! has its own threshold, so only the distance to it ranks texts across heads. Beside the deployed rule the report gives the contrast rule
//! alone, the deployed rule on whole texts only (no windows) and without the index's triage
//! (every window embedded), to show what each part adds or costs; the attack similarity alone
//! is `auc_attack_only`.

use crate::interval::{Estimate, bootstrap, rate_interval};
use crate::metrics::{Confusion, recall_at_fpr, roc_auc, round4};
use crate::tools::{EvalTimings, ModelInfo};
use crate::{Progress, Result, embedding, jsonl};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use switchyard_embed::Embedder;
use switchyard_memory::Origin;
use switchyard_memory::{EmbeddedEntry, screening_texts};
use switchyard_router::{PieceVerdict, Router, RouterBuilder, ScreenEntry, Verdict};

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
    /// Kind of sample, when the set gives one.
    #[serde(default)]
    pub kind: Option<String>,
}

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct InjectionEval {
    /// The index whose patterns and threshold are measured.
    pub index: PathBuf,
    /// The samples.
    pub samples: PathBuf,
    /// How many samples on the wrong side of the threshold the report lists, per side
    /// (missed injections, flagged benign texts), the furthest from it first.
    pub max_errors: usize,
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
    /// The ROC AUC with its 95% interval (bootstrap over the samples; None without both labels).
    pub auc_interval: Option<Estimate>,
    /// The recall at the threshold with its 95% (Wilson) interval (None without injections).
    pub recall_interval: Option<Estimate>,
    /// The false-positive rate at the threshold with its 95% (Wilson) interval (None without
    /// benign samples): 144 benign texts cannot tell 3.5% from 5%.
    pub fpr_interval: Option<Estimate>,
}

/// What the index's triage did to the samples' windows.
#[derive(Debug, Clone, Serialize)]
pub struct TriageFigures {
    /// The lexical floor.
    pub lexical_floor: f32,
    /// Pieces that are not the whole text (the whole is always embedded).
    pub pieces: usize,
    /// Of those, cleared from their text alone (never embedded).
    pub cleared: usize,
    /// Samples flagged with every window embedded but not with the triage.
    pub flags_lost: usize,
    /// Of those, injections (label 1).
    pub injections_lost: usize,
}

/// A sample the deployed screen got wrong, for reading what it misses and what it drops.
#[derive(Debug, Clone, Serialize)]
pub struct ScreenError {
    /// Its line in the samples file.
    pub line: usize,
    /// Its language, when the file gives one.
    pub lang: Option<String>,
    /// Its kind, when the file gives one.
    pub kind: Option<String>,
    /// Score less threshold: under 0 for a missed injection, at least 0 for a flagged benign
    /// text.
    pub margin: f32,
    /// The start of the text (at most 160 characters).
    pub text: String,
    /// The piece that decided the verdict: the one that crossed the threshold, or the one that
    /// came nearest to it.
    pub decided_by: PieceVerdict,
    /// The nearest attack pattern of the index.
    pub nearest_attack: String,
}

/// The samples the deployed screen got wrong, the furthest from the threshold first.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ScreenErrors {
    /// Injections (label 1) let through, of `missed_total`.
    pub missed_injections: Vec<ScreenError>,
    /// How many injections were let through in all.
    pub missed_total: usize,
    /// Benign texts (label 0) flagged, of `flagged_benign_total`.
    pub flagged_benign: Vec<ScreenError>,
    /// How many benign texts were flagged in all.
    pub flagged_benign_total: usize,
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
    /// The rule in force: `head` (learned) or `contrast`.
    pub rule: &'static str,
    /// Whether the learned screen has a lexical head beside its embedding head.
    pub lexical_head: bool,
    /// Why the contrast rule screens alone, when it does.
    pub fallback_reason: Option<String>,
    /// The deployed rule's threshold (the main head's logit threshold, or 0 for the contrast
    /// rule).
    pub threshold: f32,
    /// Each family head's threshold, by family.
    pub family_thresholds: BTreeMap<String, f32>,
    /// Flagged samples by the head that decided (`main` or a family), deployed rule.
    pub flagged_by: BTreeMap<String, usize>,
    /// The index's contrast-rule threshold on the attack cosine.
    pub contrast_threshold: f32,
    /// The benign margin of the contrast rule.
    pub margin: f32,
    /// Pieces screened per sample (mean), the whole text included.
    pub mean_pieces: f64,
    /// All samples, deployed rule.
    pub overall: Figures,
    /// The contrast rule alone, same pieces.
    pub contrast_rule: Figures,
    /// The deployed rule on whole texts only (no windows): what windows add.
    pub whole_text_only: Figures,
    /// The deployed rule with every window embedded (no triage): what the triage costs.
    pub without_triage: Figures,
    /// What the triage did, when the index has one.
    pub triage: Option<TriageFigures>,
    /// Per `lang`, deployed rule.
    pub per_lang: BTreeMap<String, Figures>,
    /// Per `kind`, deployed rule (when the set has kinds).
    pub per_kind: BTreeMap<String, Figures>,
    /// The samples on the wrong side of the threshold (at most `max_errors` per side).
    pub errors: ScreenErrors,
    /// Where the time went.
    pub timings: EvalTimings,
}

fn figures(score: &[f32], attack: &[f32], flagged: &[bool], labels: &[bool]) -> Figures {
    let injections = labels.iter().filter(|l| **l).count();
    let confusion = Confusion::from(flagged, labels);
    Figures {
        samples: labels.len(),
        injections,
        benign: labels.len() - injections,
        auc: roc_auc(score, labels).map(round4),
        auc_attack_only: roc_auc(attack, labels).map(round4),
        recall_at_1pct_fpr: recall_at_fpr(score, labels, 0.01).map(|r| round4(r.0)),
        recall_at_5pct_fpr: recall_at_fpr(score, labels, 0.05).map(|r| round4(r.0)),
        at_threshold: confusion.rates(),
        auc_interval: bootstrap(labels.len(), |idx| {
            let s: Vec<f32> = idx.iter().map(|&i| score[i]).collect();
            let l: Vec<bool> = idx.iter().map(|&i| labels[i]).collect();
            roc_auc(&s, &l)
        }),
        recall_interval: rate_interval(confusion.tp, confusion.tp + confusion.fn_),
        fpr_interval: rate_interval(confusion.fp, confusion.fp + confusion.tn),
    }
}

/// Runs the evaluation with the index's own thresholds.
pub fn eval_injection(
    cfg: &InjectionEval,
    embedder: Arc<dyn Embedder>,
    progress: Progress<'_>,
) -> Result<InjectionReport> {
    let t0 = Instant::now();
    let (lines, rows): (Vec<usize>, Vec<SampleRow>) =
        jsonl::read_jsonl_numbered(&cfg.samples)?.into_iter().unzip();
    for (&line, r) in lines.iter().zip(&rows) {
        if r.label > 1 {
            return Err(crate::EvalError::Invalid {
                path: cfg.samples.clone(),
                line,
                field: "label",
                message: format!("is {}; use 1 for an injection, 0 for benign", r.label),
            });
        }
    }
    let router = RouterBuilder::new(&cfg.index).build(Arc::clone(&embedder))?;
    let contrast =
        RouterBuilder::new(&cfg.index).contrast_only(true).build(Arc::clone(&embedder))?;
    let prepare = router.prepare_config();

    let te = Instant::now();
    let prepared: Vec<_> = rows
        .iter()
        .map(|r| screening_texts(embedder.as_ref(), &r.text, &prepare))
        .collect::<std::result::Result<_, _>>()?;
    let all: Vec<&str> = prepared.iter().flat_map(|(t, _)| t.iter().map(String::as_str)).collect();
    let vectors = embedding::embed_many_layered(
        embedder.as_ref(),
        &all,
        router.screen_layer(),
        "embed samples",
        progress,
    )?;
    // Every piece is embedded (for the comparison without the triage); the deployed entries
    // drop the embeddings of the pieces the triage clears, as `memory add` never makes them.
    let triage = router.screen_triage();
    let cleared: Vec<Vec<bool>> = prepared
        .iter()
        .map(|(t, spans)| {
            t.iter()
                .skip(1)
                .zip(spans)
                .map(|(p, &(_, _, origin))| {
                    triage.as_ref().is_some_and(|tr| match origin {
                        Origin::Sentence => !tr.sentence_needs_embedding(p),
                        _ => !tr.needs_embedding(p),
                    })
                })
                .collect()
        })
        .collect();
    let mut it = vectors.into_iter();
    let embedded: Vec<EmbeddedEntry> = prepared
        .into_iter()
        .map(|(_, spans)| EmbeddedEntry::take(spans, &mut it, router.screen_layer()))
        .collect();
    let triaged: Vec<EmbeddedEntry> = embedded
        .iter()
        .zip(&cleared)
        .map(|(e, c)| {
            // As `memory add` stores it: a cleared window without its embedding, a cleared
            // sentence not at all.
            let mut e = e.clone();
            let mut cleared = c.iter().copied();
            e.pieces.retain_mut(|p| {
                let c = cleared.next().unwrap_or(false);
                if c {
                    p.embedding = Vec::new();
                    p.middle = Vec::new();
                }
                !(c && p.origin == switchyard_memory::Origin::Sentence)
            });
            e
        })
        .collect();
    let embed_ms = te.elapsed().as_secs_f64() * 1e3;

    let ts = Instant::now();
    fn entries<'a>(
        rows: &'a [SampleRow],
        of: &'a [EmbeddedEntry],
        windows: bool,
    ) -> Vec<ScreenEntry<'a>> {
        rows.iter().zip(of).map(|(r, e)| switchyard::screen_entry(&r.text, e, windows)).collect()
    }
    let labels: Vec<bool> = rows.iter().map(|r| r.label == 1).collect();
    let deployed = verdicts(&router, &entries(&rows, &triaged, true))?;
    let untriaged = verdicts(&router, &entries(&rows, &embedded, true))?;
    let contrast_verdicts = verdicts(&contrast, &entries(&rows, &embedded, true))?;
    let whole_verdicts = verdicts(&router, &entries(&rows, &embedded, false))?;
    let route_ms = ts.elapsed().as_secs_f64() * 1e3;

    let columns = |v: &[Verdict]| {
        (
            v.iter().map(|x| x.score - x.threshold).collect::<Vec<f32>>(),
            v.iter().map(|x| x.attack_score).collect::<Vec<f32>>(),
            v.iter().map(|x| x.flagged).collect::<Vec<bool>>(),
        )
    };
    let (score, attack, flagged) = columns(&deployed);
    let overall = figures(&score, &attack, &flagged, &labels);
    let (cs, ca, cf) = columns(&contrast_verdicts);
    let contrast_rule = figures(&cs, &ca, &cf, &labels);
    let (ws, wa, wf) = columns(&whole_verdicts);
    let whole_text_only = figures(&ws, &wa, &wf, &labels);
    let (us, ua, uf) = columns(&untriaged);
    let without_triage = figures(&us, &ua, &uf, &labels);
    let lost: Vec<usize> = (0..rows.len()).filter(|&i| uf[i] && !flagged[i]).collect();
    let triage = triage.map(|t| TriageFigures {
        lexical_floor: t.floor(),
        pieces: cleared.iter().map(Vec::len).sum(),
        cleared: cleared.iter().flatten().filter(|c| **c).count(),
        flags_lost: lost.len(),
        injections_lost: lost.iter().filter(|&&i| labels[i]).count(),
    });

    let group = |key: &dyn Fn(&SampleRow) -> Option<String>| -> BTreeMap<String, Figures> {
        let mut by: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, r) in rows.iter().enumerate() {
            if let Some(k) = key(r) {
                by.entry(k).or_default().push(i);
            }
        }
        let pick = |ids: &[usize], v: &[f32]| ids.iter().map(|&i| v[i]).collect::<Vec<_>>();
        by.into_iter()
            .map(|(k, ids)| {
                let f = figures(
                    &pick(&ids, &score),
                    &pick(&ids, &attack),
                    &ids.iter().map(|&i| flagged[i]).collect::<Vec<_>>(),
                    &ids.iter().map(|&i| labels[i]).collect::<Vec<_>>(),
                );
                (k, f)
            })
            .collect()
    };
    let per_lang = group(&|r| r.lang.clone());
    let per_kind = group(&|r| r.kind.clone());
    let mean_pieces = deployed.iter().map(|v| v.pieces_screened as f64).sum::<f64>()
        / deployed.len().max(1) as f64;
    let threshold = router.screen_head().map_or(0.0, |h| h.threshold);
    let family_thresholds = router
        .screen_head()
        .and(router.index().screen_families())
        .map(|f| f.heads.iter().map(|h| (h.family.clone(), h.threshold)).collect())
        .unwrap_or_default();
    let mut flagged_by: BTreeMap<String, usize> = BTreeMap::new();
    for v in deployed.iter().filter(|v| v.flagged) {
        *flagged_by.entry(v.head.clone().unwrap_or_else(|| v.rule.to_string())).or_default() += 1;
    }
    let errors = screen_errors(&rows, &lines, &deployed, cfg.max_errors);
    let total_ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok(InjectionReport {
        index: cfg.index.clone(),
        samples_file: cfg.samples.clone(),
        model: ModelInfo::of(embedder.as_ref()),
        rule: if router.screen_head().is_some() { "head" } else { "contrast" },
        lexical_head: router.screen_head().is_some() && router.index().screen_lexical().is_some(),
        fallback_reason: router.screen_fallback_reason(),
        threshold,
        family_thresholds,
        flagged_by,
        contrast_threshold: router.injection_threshold(),
        margin: router.injection_margin(),
        mean_pieces,
        overall,
        contrast_rule,
        whole_text_only,
        without_triage,
        triage,
        per_lang,
        per_kind,
        errors,
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

/// The samples whose deployed verdict disagrees with their label, the furthest from the
/// threshold first (ties in file order), at most `max` per side.
fn screen_errors(
    rows: &[SampleRow],
    lines: &[usize],
    verdicts: &[Verdict],
    max: usize,
) -> ScreenErrors {
    let side = |injection: bool| {
        let mut ids: Vec<usize> = (0..rows.len())
            .filter(|&i| (rows[i].label == 1) == injection && verdicts[i].flagged != injection)
            .collect();
        let margin = |i: usize| verdicts[i].score - verdicts[i].threshold;
        // Missed injections: the lowest margin first; flagged benign texts: the highest.
        ids.sort_by(|&a, &b| {
            let order = margin(a).total_cmp(&margin(b));
            if injection { order } else { order.reverse() }.then(a.cmp(&b))
        });
        let total = ids.len();
        let listed = ids
            .into_iter()
            .take(max)
            .map(|i| {
                let (r, v) = (&rows[i], &verdicts[i]);
                ScreenError {
                    line: lines[i],
                    lang: r.lang.clone(),
                    kind: r.kind.clone(),
                    margin: round4(f64::from(margin(i))) as f32,
                    text: r.text.chars().take(160).collect(),
                    decided_by: v.decided_by.clone(),
                    nearest_attack: v.nearest_attack.clone(),
                }
            })
            .collect();
        (listed, total)
    };
    let (missed_injections, missed_total) = side(true);
    let (flagged_benign, flagged_benign_total) = side(false);
    ScreenErrors { missed_injections, missed_total, flagged_benign, flagged_benign_total }
}

/// Verdicts in input order, screened in batches of 512.
fn verdicts(router: &Router, entries: &[ScreenEntry<'_>]) -> Result<Vec<Verdict>> {
    let mut out = Vec::with_capacity(entries.len());
    for chunk in entries.chunks(512) {
        let report = router.screen(chunk)?;
        let base = out.len();
        let mut v: Vec<_> = report.kept.into_iter().chain(report.dropped).collect();
        v.sort_by_key(|x| x.entry);
        out.extend(v.into_iter().map(|mut x| {
            x.entry += base;
            x
        }));
    }
    Ok(out)
}
