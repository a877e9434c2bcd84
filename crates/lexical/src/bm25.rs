//! BM25 statistics, built offline, scored per task.

use crate::analyze::{ANALYZER_VERSION, analyze};
use std::collections::BTreeMap;
use switchyard_format::LexicalMeta;

/// Okapi BM25 term-frequency saturation (the usual value).
const K1: f32 = 1.2;
/// Okapi BM25 length normalisation (the usual value).
const B: f32 = 0.75;

/// Lucene's non-negative BM25 idf for a term in `df` of `n` documents.
fn idf(n: usize, df: usize) -> f32 {
    ((n as f32 - df as f32 + 0.5) / (df as f32 + 0.5) + 1.0).ln()
}

/// BM25 statistics of `docs` (one per item) with the usual k1 = 1.2, b = 0.75.
pub fn build(docs: &[String]) -> LexicalMeta {
    build_with(docs, K1, B)
}

/// BM25 statistics of `docs` with explicit k1 and b.
pub fn build_with(docs: &[String], k1: f32, b: f32) -> LexicalMeta {
    // term -> (doc, tf) postings, docs ascending because docs are visited in order.
    let mut postings: BTreeMap<String, Vec<(u32, u32)>> = BTreeMap::new();
    let mut doc_len = Vec::with_capacity(docs.len());
    for (d, text) in docs.iter().enumerate() {
        let terms = analyze(text);
        doc_len.push(u32::try_from(terms.len()).unwrap_or(u32::MAX));
        let mut tf: BTreeMap<String, u32> = BTreeMap::new();
        for t in terms {
            *tf.entry(t).or_insert(0) += 1;
        }
        for (t, n) in tf {
            postings.entry(t).or_default().push((d as u32, n));
        }
    }
    let mut meta = LexicalMeta {
        analyzer_version: ANALYZER_VERSION,
        k1,
        b,
        doc_len,
        term_start: vec![0],
        ..LexicalMeta::default()
    };
    for (term, list) in postings {
        meta.idf.push(idf(docs.len(), list.len()));
        meta.terms.push(term);
        for (d, n) in list {
            meta.post_doc.push(d);
            meta.post_tf.push(n);
        }
        meta.term_start.push(meta.post_doc.len() as u32);
    }
    meta
}

/// Per-task lexical scores of every item, reused across calls.
#[derive(Debug, Clone, Default)]
pub struct LexicalScores {
    /// BM25 score of each item.
    pub bm25: Vec<f32>,
    /// Sum of the idf of the task's distinct terms that each item contains.
    pub matched: Vec<f32>,
    /// Sum of the idf of all the task's distinct terms (terms the catalog lacks count at the
    /// idf of a term in no document), so `matched[i] / query_mass` is the share of the task's
    /// term weight item `i` covers.
    pub query_mass: f32,
}

/// Scores tasks against one [`LexicalMeta`]; holds the per-document length norms.
#[derive(Debug, Clone)]
pub struct Bm25Scorer {
    /// `k1 * (1 - b + b * len / avg_len)` per document.
    doc_norm: Vec<f32>,
    /// Idf of a term that no document has.
    unknown_idf: f32,
}

impl Bm25Scorer {
    /// Precomputes the length norms of `meta`'s documents.
    pub fn new(meta: &LexicalMeta) -> Self {
        let n = meta.doc_len.len();
        let avg = meta.doc_len.iter().map(|&l| l as f32).sum::<f32>() / n.max(1) as f32;
        let doc_norm = meta
            .doc_len
            .iter()
            .map(|&l| meta.k1 * (1.0 - meta.b + meta.b * l as f32 / avg.max(1e-6)))
            .collect();
        Self { doc_norm, unknown_idf: idf(n, 0) }
    }

    /// Scores the task's `terms` (from [`crate::analyze`]) against every document.
    pub fn score(&self, meta: &LexicalMeta, terms: &[String], out: &mut LexicalScores) {
        let n = self.doc_norm.len();
        out.bm25.clear();
        out.bm25.resize(n, 0.0);
        out.matched.clear();
        out.matched.resize(n, 0.0);
        out.query_mass = 0.0;
        // Distinct terms only: a repeated word is not more evidence. Sorted, so a long text
        // costs n log n, not n^2.
        let mut distinct: Vec<&String> = terms.iter().collect();
        distinct.sort_unstable();
        distinct.dedup();
        for t in distinct {
            let Ok(at) = meta.terms.binary_search(t) else {
                out.query_mass += self.unknown_idf;
                continue;
            };
            let idf = meta.idf[at];
            out.query_mass += idf;
            let (start, end) = (meta.term_start[at] as usize, meta.term_start[at + 1] as usize);
            for (&d, &tf) in meta.post_doc[start..end].iter().zip(&meta.post_tf[start..end]) {
                let (d, tf) = (d as usize, tf as f32);
                out.bm25[d] += idf * tf * (meta.k1 + 1.0) / (tf + self.doc_norm[d]);
                out.matched[d] += idf;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_document_sharing_rare_terms_ranks_first() {
        let d =
            docs(&["weather forecast for a city", "book a flight", "weather of the stock market"]);
        let meta = build(&d);
        let mut s = LexicalScores::default();
        Bm25Scorer::new(&meta).score(&meta, &analyze("city weather forecast"), &mut s);
        assert!(s.bm25[0] > s.bm25[2] && s.bm25[2] > 0.0 && s.bm25[1] == 0.0);
    }

    #[test]
    fn unknown_terms_count_in_the_query_mass() {
        let meta = build(&docs(&["restart service", "scale deployment"]));
        let scorer = Bm25Scorer::new(&meta);
        let mut known = LexicalScores::default();
        scorer.score(&meta, &analyze("restart"), &mut known);
        assert!((known.matched[0] / known.query_mass - 1.0).abs() < 1e-6);
        let mut mixed = LexicalScores::default();
        scorer.score(&meta, &analyze("restart zebra"), &mut mixed);
        assert!(mixed.matched[0] / mixed.query_mass < 0.6);
    }

    #[test]
    fn statistics_are_consistent_and_deterministic() {
        let d = docs(&["a b c", "runTests now", "run the tests now now"]);
        let (a, b) = (build(&d), build(&d));
        assert_eq!(a, b);
        assert_eq!(a.term_start.len(), a.terms.len() + 1);
        assert_eq!(*a.term_start.last().unwrap_or(&0) as usize, a.post_doc.len());
        assert!(a.terms.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(a.doc_len, [0, 3, 5]);
    }

    #[test]
    fn an_empty_catalog_scores_nothing() {
        let meta = build(&[]);
        let mut s = LexicalScores::default();
        Bm25Scorer::new(&meta).score(&meta, &analyze("anything"), &mut s);
        assert!(s.bm25.is_empty() && s.query_mass > 0.0);
    }
}
