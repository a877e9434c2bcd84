//! The screen's request contrast (see [`switchyard_format::ScreenRequestMeta`]), trained at
//! build time.
//!
//! **Rows.** Requests (label: request): every training-file row that is not a document, as a
//! whole: attacks, and the ordinary requests and system prompts the files hold as benign text.
//! Documents (label: document): each sentence, clause or line of a training row marked
//! `"document": true`, and of the documents and contact notes written for switchyard
//! (`build-index/data/`, compiled in). The training files' requests and documents are mostly
//! English, so `build-index/data/` also holds ordinary requests in 16 languages (read as
//! requests), and every screen trains on documents in 12 other languages
//! ([`crate::BUILT_IN_DOCUMENTS_FILE`], rows marked as documents), lest the head learn
//! "English" for "request" (it still reads English best: `benches/RESULTS.md`, session 31).
//! The head reads hashed character and word n-grams only (`switchyard_lexical::
//! hashed_features`), so it costs no embedding, at build time or when an entry is screened.
//!
//! **Threshold.** An entry longer than one window is compared unit by unit (its sentences,
//! clauses and lines: a planted request is one sentence, and a window would pack it with its
//! neighbours); its contrast is its highest unit's request logit minus the mean of the others'.
//! The threshold is chosen for the screen's target false-positive rate on the benign training
//! texts longer than one window, each scored out of fold (5 folds by text,
//! the head refitted without the fold), so it reflects texts the head did not train on.
//!
//! **Overlap.** A request that belongs to its text repeats its words; one planted there is
//! about something else. The contrast compared with the threshold is lowered by a weight times
//! the highest sentence's overlap with the text around it
//! (`switchyard_untrusted::neighbourhood_overlap`, within [`COHERENCE_REACH_BYTES`]). The weight
//! is chosen from [`COHERENCE_WEIGHTS`] out of fold: the one whose threshold (for the same
//! target) catches the most planted documents (below), the smallest of equals. On the default
//! training files it lowers the long WildGuard prompts that set the threshold (a user's own
//! request among the sentences it is about) more than the planted documents.
//!
//! **Planted recall.** Each benign training document longer than one window in a fold also
//! gets one of that fold's short attacks planted on a line of its own (start, middle or end, in
//! turn), and the share that reaches the threshold is stored: what the contrast catches in
//! documents it never saw, with instructions it never saw.

use crate::logistic::{FOLDS, LEXICAL_WIDTH, Sparse, fit, fold_of};
use crate::train_file::{LabelledText, plant};
use switchyard_format::{LexicalScreenMeta, ScreenRequestMeta};
use switchyard_untrusted::{
    PrepareConfig, contrast_units, neighbourhood_overlap, normalise, sentence_units,
};

/// L2 penalty of the request head on the class-balanced loss: the penalty of scikit-learn's
/// default (`C = 1`) on the default training file's 3,357 rows (`2 / (C n)`), taken as it is
/// rather than tuned.
pub(crate) const REQUEST_L2: f64 = 6e-4;
/// Below this many requests or benign texts longer than a window, no request contrast is
/// trained.
pub const MIN_REQUEST_ROWS: usize = 20;
/// Only attacks up to this long are planted for the planted recall (as for the main head).
const MAX_PLANTED_BYTES: usize = 300;
/// The bytes before and after a text's most request-like sentence its overlap is measured on
/// (`switchyard_untrusted::neighbourhood_overlap`): a paragraph or two, the text a request
/// that belongs there would be about. Over whole texts the overlap of an unrelated sentence
/// grows with the text's length (0.13 at 1,000 bytes, 0.48 at 12,000), so the reach is
/// bounded, at the length of a short e-mail. The prototype also tried 500 bytes on BIPIA's
/// report half, with about the same figures (`benches/RESULTS.md`, session 32).
const COHERENCE_REACH_BYTES: usize = 1000;
/// The overlap weights the build chooses from (0: the contrast alone). A sentence's overlap
/// is at most 1, so the largest lowers a contrast by at most 8 request-logit units. The
/// default training files choose the largest; larger ones were not tried.
const COHERENCE_WEIGHTS: [f32; 7] = [0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0];

/// Documents and contact notes written for switchyard (never taken from an evaluation set):
/// e-mails, tables, code, meeting notes, profiles. The main head does not train on them (they
/// pulled MiniLM's head under its threshold on a plain override; see `benches/RESULTS.md`).
const BUILT_IN_DOCUMENTS: [&str; 2] = [
    include_str!("../data/injection-documents.jsonl"),
    include_str!("../data/benign-contacts.jsonl"),
];

/// Ordinary requests a user writes to an assistant ("Wie hoch ist die Zugspitze?"), in 16
/// languages, written for switchyard.
const BUILT_IN_REQUESTS: &str = include_str!("../data/requests.jsonl");

/// The texts of a JSONL file of `build-index/data/`.
fn texts_of(file: &str) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Line {
        text: String,
    }
    file.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Line>(l).expect("build-index/data is valid JSONL").text)
        .collect()
}

/// The sentence, clause and line units of a document, each a row of document text.
fn document_rows(text: &str, prepare_config: &PrepareConfig) -> Vec<String> {
    sentence_units(text, prepare_config.windows.target_bytes)
        .into_iter()
        .map(|w| normalise(w.slice(text)))
        .collect()
}

/// The request head's rows, by text (a text's rows share its fold).
struct RequestRows {
    texts: Vec<String>,
    request: Vec<bool>,
    fold: Vec<usize>,
    /// Benign texts longer than one window: their fold and text.
    calibration: Vec<(usize, String)>,
    /// Of those, the documents: their fold and text (hosts for the planted recall).
    hosts: Vec<(usize, String)>,
    /// Short one-line attacks: their fold and text.
    plantable: Vec<(usize, String)>,
}

impl RequestRows {
    fn gather(rows: &[LabelledText], prepare_config: &PrepareConfig) -> Self {
        let mut r = RequestRows {
            texts: Vec::new(),
            request: Vec::new(),
            fold: Vec::new(),
            calibration: Vec::new(),
            hosts: Vec::new(),
            plantable: Vec::new(),
        };
        let documents: Vec<String> = BUILT_IN_DOCUMENTS.iter().flat_map(|f| texts_of(f)).collect();
        let requests = texts_of(BUILT_IN_REQUESTS);
        let file_rows = rows.iter().map(|l| (l.text.as_str(), l.document, l.attack));
        let built_in = documents
            .iter()
            .map(|t| (t.as_str(), true, false))
            .chain(requests.iter().map(|t| (t.as_str(), false, false)));
        for (text_number, (text, document, attack)) in file_rows.chain(built_in).enumerate() {
            let fold = fold_of(text_number);
            if document {
                for unit in document_rows(text, prepare_config) {
                    r.texts.push(unit);
                    r.request.push(false);
                    r.fold.push(fold);
                }
            } else {
                r.texts.push(normalise(text));
                r.request.push(true);
                r.fold.push(fold);
            }
            let short = text.trim();
            if attack && short.len() <= MAX_PLANTED_BYTES && !short.contains('\n') {
                r.plantable.push((fold, short.to_string()));
            }
            if !attack && contrast_units(text, prepare_config).is_some() {
                if document {
                    r.hosts.push((fold, text.to_string()));
                }
                r.calibration.push((fold, text.to_string()));
            }
        }
        r
    }
}

/// The contrast of `text` under the request head `w` (f64 weights, bias last), and its most
/// request-like sentence's overlap with the text around it: `None` when the rule does not
/// compare the text (one window, or its other sentences read as a request).
fn contrast_of(text: &str, w: &[f64], prepare_config: &PrepareConfig) -> Option<(f32, f32)> {
    let units = contrast_units(text, prepare_config)?;
    let logits: Vec<f32> = units
        .iter()
        .map(|(_, t)| {
            let f = switchyard_lexical::hashed_features(t);
            let z = f.iter().map(|&(k, v)| w[k as usize] * f64::from(v)).sum::<f64>()
                + w[LEXICAL_WIDTH - 1];
            z as f32
        })
        .collect();
    let (top, c) = ScreenRequestMeta::contrast(&logits)?;
    Some((c, neighbourhood_overlap(text, units[top].0, COHERENCE_REACH_BYTES)))
}

/// The threshold for `target_fpr` on benign scores (highest first, at most that share at or
/// above it): the next float above the score just past the allowed share.
fn threshold_for(mut benign: Vec<f32>, target_fpr: f32) -> f32 {
    benign.sort_by(|a, b| b.total_cmp(a));
    let allowed = (f64::from(target_fpr) * benign.len() as f64).floor() as usize;
    match benign.get(allowed) {
        Some(&s) => crate::screen::next_up(s),
        None => f32::MIN,
    }
}

/// The share of `scores` at or above `threshold` (0 when empty).
fn share_at(scores: &[f32], threshold: f32) -> f32 {
    if scores.is_empty() {
        0.0
    } else {
        scores.iter().filter(|&&c| c >= threshold).count() as f32 / scores.len() as f32
    }
}

/// The overlap weight, its threshold and planted recall: of [`COHERENCE_WEIGHTS`], the weight
/// whose threshold (for `target_fpr` on the benign texts) lets the most planted documents
/// through, the smallest of equals; `benign` and `planted` are out-of-fold `(contrast,
/// overlap)` pairs.
fn choose_coherence(
    benign: &[(f32, f32)],
    planted: &[(f32, f32)],
    target_fpr: f32,
) -> (f32, f32, f32) {
    let score = |pairs: &[(f32, f32)], weight: f32| -> Vec<f32> {
        pairs.iter().map(|&(c, o)| c - weight * o).collect()
    };
    let mut best: Option<(f32, f32, f32)> = None;
    for weight in COHERENCE_WEIGHTS {
        let threshold = threshold_for(score(benign, weight), target_fpr);
        let recall = share_at(&score(planted, weight), threshold);
        if best.is_none_or(|(_, _, r)| recall > r) {
            best = Some((weight, threshold, recall));
        }
    }
    best.expect("COHERENCE_WEIGHTS is not empty")
}

/// Trains the request contrast on the training files' rows, or `None` (with the reason) when
/// they are too few.
pub(crate) fn train(
    rows: &[LabelledText],
    prepare_config: &PrepareConfig,
    target_fpr: f32,
) -> std::result::Result<ScreenRequestMeta, String> {
    let data = RequestRows::gather(rows, prepare_config);
    let requests = data.request.iter().filter(|r| **r).count();
    let documents = data.request.len() - requests;
    if requests < MIN_REQUEST_ROWS || data.calibration.len() < MIN_REQUEST_ROWS {
        return Err(format!(
            "the training files give {requests} requests and {} benign texts longer than one window; the request contrast needs {MIN_REQUEST_ROWS} of each (train on manifests/injection-train.jsonl, which `python3 models/provision.py` writes)",
            data.calibration.len()
        ));
    }
    let sparse = Sparse {
        rows: data.texts.iter().map(|t| switchyard_lexical::hashed_features(t)).collect(),
    };
    let source = vec![1u32; data.texts.len()];
    // Out of fold: the calibration texts' contrasts, and the planted documents'.
    #[allow(clippy::type_complexity)]
    // per fold: (contrast, overlap) of the benign and planted texts
    let per_fold: Vec<(Vec<(f32, f32)>, Vec<(f32, f32)>)> = {
        use rayon::prelude::*;
        (0..FOLDS)
            .into_par_iter()
            .map(|k| {
                let used: Vec<bool> = data.fold.iter().map(|&f| f != k).collect();
                let w = fit(&sparse, &data.request, &source, &used, REQUEST_L2, None);
                let benign: Vec<(f32, f32)> = data
                    .calibration
                    .iter()
                    .filter(|(f, _)| *f == k)
                    .filter_map(|(_, text)| contrast_of(text, &w, prepare_config))
                    .collect();
                let attacks: Vec<&str> = data
                    .plantable
                    .iter()
                    .filter(|(f, _)| *f == k)
                    .map(|(_, t)| t.as_str())
                    .collect();
                let planted: Vec<(f32, f32)> = if attacks.is_empty() {
                    Vec::new()
                } else {
                    data.hosts
                        .iter()
                        .filter(|(f, _)| *f == k)
                        .enumerate()
                        .filter_map(|(i, (_, host))| {
                            let (text, _) = plant(host, attacks[(i * 7) % attacks.len()], i % 3);
                            contrast_of(&text, &w, prepare_config)
                        })
                        .collect()
                };
                (benign, planted)
            })
            .collect()
    };
    let benign: Vec<(f32, f32)> = per_fold.iter().flat_map(|(b, _)| b.iter().copied()).collect();
    let planted: Vec<(f32, f32)> = per_fold.iter().flat_map(|(_, p)| p.iter().copied()).collect();
    let (coherence_weight, threshold, oof_planted_recall) =
        choose_coherence(&benign, &planted, target_fpr);
    let benign_scores: Vec<f32> = benign.iter().map(|&(c, o)| c - coherence_weight * o).collect();
    let all = vec![true; data.texts.len()];
    let w = fit(&sparse, &data.request, &source, &all, REQUEST_L2, None);
    Ok(ScreenRequestMeta {
        head: LexicalScreenMeta {
            features_version: switchyard_lexical::HASHED_FEATURES_VERSION,
            buckets: switchyard_lexical::HASHED_BUCKETS as u32,
            bias: w[LEXICAL_WIDTH - 1] as f32,
            weights: w[..LEXICAL_WIDTH - 1].iter().map(|&v| v as f32).collect(),
            l2: REQUEST_L2 as f32,
        },
        threshold,
        oof_fpr: share_at(&benign_scores, threshold),
        oof_planted_recall,
        requests: requests as u32,
        document_rows: documents as u32,
        calibration_texts: benign.len() as u32,
        coherence_weight,
        coherence_reach_bytes: COHERENCE_REACH_BYTES as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The languages of a `build-index/data` file's rows.
    fn languages(file: &str) -> BTreeSet<String> {
        file.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["lang"].to_string())
            .collect()
    }

    /// The weight is the one that lets the most planted documents through at the target, and
    /// none when the overlap tells them apart no better than the contrast does.
    #[test]
    fn the_overlap_weight_is_chosen_for_the_planted_documents_and_zero_when_it_cannot_help() {
        // 100 benign texts: the most request-like ones (a user's own request among its
        // sentences) overlap their text; the planted requests stand as high and overlap nothing.
        let benign: Vec<(f32, f32)> = (0..100)
            .map(|i| if i >= 90 { (i as f32 / 30.0, 0.5) } else { (i as f32 / 60.0, 0.05) })
            .collect();
        let planted: Vec<(f32, f32)> = (0..20).map(|i| (2.0 + i as f32 / 20.0, 0.0)).collect();
        let (weight, threshold, recall) = choose_coherence(&benign, &planted, 0.01);
        assert!(weight > 0.0 && recall > 0.9, "{weight} {threshold} {recall}");
        let scored: Vec<f32> = benign.iter().map(|&(c, o)| c - weight * o).collect();
        assert!(share_at(&scored, threshold) <= 0.01, "the target holds with the weight");
        // The same overlap everywhere moves every score alike: no weight.
        let flat = |v: &[(f32, f32)]| v.iter().map(|&(c, _)| (c, 0.3)).collect::<Vec<_>>();
        let (weight, _, _) = choose_coherence(&flat(&benign), &flat(&planted), 0.01);
        assert_eq!(weight, 0.0);
    }

    /// The head must not learn "English" for "request": both sides hold many languages.
    #[test]
    fn the_built_in_requests_and_documents_are_in_many_languages() {
        let requests = texts_of(BUILT_IN_REQUESTS);
        assert!(requests.len() >= 150, "{} requests", requests.len());
        assert!(languages(BUILT_IN_REQUESTS).len() >= 15);
        let multilingual = include_str!("../data/multilingual-documents.jsonl");
        let files = || BUILT_IN_DOCUMENTS.iter().chain([&multilingual]);
        let document_languages: BTreeSet<String> = files().flat_map(|f| languages(f)).collect();
        assert!(document_languages.len() >= 15, "{document_languages:?}");
        // Every built-in document is read as document sentences, not as one request.
        let config = PrepareConfig::default();
        for text in files().flat_map(|f| texts_of(f)) {
            assert!(!document_rows(&text, &config).is_empty(), "no sentence in {text:?}");
        }
    }
}
