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
//! **Planted recall.** Each benign training document longer than one window in a fold also
//! gets one of that fold's short attacks planted on a line of its own (start, middle or end, in
//! turn), and the share that reaches the threshold is stored: what the contrast catches in
//! documents it never saw, with instructions it never saw.

use crate::logistic::{FOLDS, LEXICAL_WIDTH, Sparse, fit, fold_of};
use crate::train_file::{LabelledText, plant};
use switchyard_format::{LexicalScreenMeta, ScreenRequestMeta};
use switchyard_untrusted::{PrepareConfig, contrast_units, normalise, sentence_units};

/// L2 penalty of the request head on the class-balanced loss: the penalty of scikit-learn's
/// default (`C = 1`) on the default training file's 3,357 rows (`2 / (C n)`), taken as it is
/// rather than tuned.
pub(crate) const REQUEST_L2: f64 = 6e-4;
/// Below this many requests or benign texts longer than a window, no request contrast is
/// trained.
pub const MIN_REQUEST_ROWS: usize = 20;
/// Only attacks up to this long are planted for the planted recall (as for the main head).
const MAX_PLANTED_BYTES: usize = 300;

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

/// The units a contrast compares in `text` (`switchyard_untrusted::contrast_units`), if any.
fn units_of(text: &str, prepare_config: &PrepareConfig) -> Option<Vec<String>> {
    contrast_units(text, prepare_config).map(|u| u.into_iter().map(|(_, t)| t).collect())
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
    /// Benign texts longer than one window: their fold and units.
    calibration: Vec<(usize, Vec<String>)>,
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
            if let Some(units) = units_of(text, prepare_config).filter(|_| !attack) {
                if document {
                    r.hosts.push((fold, text.to_string()));
                }
                r.calibration.push((fold, units));
            }
        }
        r
    }
}

/// The contrast of `units` under the request head `w` (f64 weights, bias last).
fn contrast_of(units: &[String], w: &[f64]) -> Option<f32> {
    let logits: Vec<f32> = units
        .iter()
        .map(|t| {
            let f = switchyard_lexical::hashed_features(t);
            let z = f.iter().map(|&(k, v)| w[k as usize] * f64::from(v)).sum::<f64>()
                + w[LEXICAL_WIDTH - 1];
            z as f32
        })
        .collect();
    ScreenRequestMeta::contrast(&logits).map(|(_, c)| c)
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
    let per_fold: Vec<(Vec<f32>, Vec<f32>)> = {
        use rayon::prelude::*;
        (0..FOLDS)
            .into_par_iter()
            .map(|k| {
                let used: Vec<bool> = data.fold.iter().map(|&f| f != k).collect();
                let w = fit(&sparse, &data.request, &source, &used, REQUEST_L2, None);
                let benign: Vec<f32> = data
                    .calibration
                    .iter()
                    .filter(|(f, _)| *f == k)
                    .filter_map(|(_, units)| contrast_of(units, &w))
                    .collect();
                let attacks: Vec<&str> = data
                    .plantable
                    .iter()
                    .filter(|(f, _)| *f == k)
                    .map(|(_, t)| t.as_str())
                    .collect();
                let planted: Vec<f32> = if attacks.is_empty() {
                    Vec::new()
                } else {
                    data.hosts
                        .iter()
                        .filter(|(f, _)| *f == k)
                        .enumerate()
                        .filter_map(|(i, (_, host))| {
                            let (text, _) = plant(host, attacks[(i * 7) % attacks.len()], i % 3);
                            contrast_of(&units_of(&text, prepare_config)?, &w)
                        })
                        .collect()
                };
                (benign, planted)
            })
            .collect()
    };
    let mut benign: Vec<f32> = per_fold.iter().flat_map(|(b, _)| b.iter().copied()).collect();
    let planted: Vec<f32> = per_fold.iter().flat_map(|(_, p)| p.iter().copied()).collect();
    benign.sort_by(|a, b| b.total_cmp(a));
    let allowed = (f64::from(target_fpr) * benign.len() as f64).floor() as usize;
    let threshold = match benign.get(allowed) {
        Some(&s) => crate::screen::next_up(s),
        None => f32::MIN,
    };
    let share = |v: &[f32]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().filter(|&&c| c >= threshold).count() as f32 / v.len() as f32
        }
    };
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
        oof_fpr: share(&benign),
        oof_planted_recall: share(&planted),
        requests: requests as u32,
        document_rows: documents as u32,
        calibration_texts: benign.len() as u32,
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
