//! Batched injection screening of untrusted entries that come with stored embeddings.
//!
//! **Rule.** For each entry, `attack` is its best score against the index's attack patterns
//! and `benign` its best score against the benign look-alikes. The entry is flagged when
//! `attack >= threshold` AND `attack > benign + margin`: it is close to a known attack, and not
//! better explained as one of the harmless texts that share an attack's trigger words ("ignore
//! the lint warning", "delete the temp files"). The threshold is derived per model at build
//! time (see build-index) and can be overridden; the margin defaults to 0.
//!
//! Scores come from one matrix product per matrix (entries x patterns), never from embedding:
//! the entries' vectors were computed once, when they were stored.

use crate::{Result, RouteError, Router, kernels};
use serde::Serialize;
use switchyard_format::SectionKind;

/// One untrusted text and its stored unit embedding.
#[derive(Debug, Clone, Copy)]
pub struct ScreenEntry<'a> {
    /// The text.
    pub text: &'a str,
    /// Its embedding, made with the index's model.
    pub embedding: &'a [f32],
}

/// The verdict on one entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// Position of the entry in the input.
    pub entry: usize,
    /// Whether it was flagged (and dropped).
    pub flagged: bool,
    /// Best score against an attack pattern.
    pub attack_score: f32,
    /// That pattern's text.
    pub nearest_attack: String,
    /// Its category.
    pub attack_category: Option<String>,
    /// Best score against a benign look-alike.
    pub benign_score: f32,
    /// That look-alike's text.
    pub nearest_benign: String,
}

/// The outcome of screening a batch.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ScreenReport {
    /// Entries kept, in input order.
    pub kept: Vec<Verdict>,
    /// Entries dropped, in input order.
    pub dropped: Vec<Verdict>,
    /// `dropped.len()`.
    pub dropped_count: usize,
    /// The threshold used.
    pub threshold: f32,
}

fn best_per_row(scores: &[f32], n: usize, m: usize) -> Vec<(f32, usize)> {
    (0..n)
        .map(|i| {
            let row = &scores[i * m..(i + 1) * m];
            // Ties go to the lowest pattern row, for determinism.
            row.iter()
                .enumerate()
                .fold((f32::NEG_INFINITY, 0), |b, (j, &s)| if s > b.0 { (s, j) } else { b })
        })
        .collect()
}

impl Router {
    /// Screens entries against the injection and benign matrices in one batched product each.
    pub fn screen(&self, entries: &[ScreenEntry<'_>]) -> Result<ScreenReport> {
        let dim = self.index().dim();
        for (i, e) in entries.iter().enumerate() {
            if e.embedding.len() != dim {
                return Err(RouteError::BadEmbedding {
                    index: i,
                    found: e.embedding.len(),
                    expected: dim,
                });
            }
        }
        let threshold = self.injection_threshold();
        let margin = self.injection_margin();
        let attacks = self.index().matrix(SectionKind::Injections);
        let benign = self.index().matrix(SectionKind::Benign);
        let queries: Vec<&[f32]> = entries.iter().map(|e| e.embedding).collect();
        let n = entries.len();
        let a = best_per_row(&kernels::batch_scores(&queries, &attacks), n, attacks.rows());
        let b = best_per_row(&kernels::batch_scores(&queries, &benign), n, benign.rows());
        let meta = self.index().meta();
        let mut report = ScreenReport { threshold, ..ScreenReport::default() };
        for i in 0..n {
            let (attack_score, ai) = a[i];
            let (benign_score, bi) = b[i];
            let has_attacks = attacks.rows() > 0;
            let flagged =
                has_attacks && attack_score >= threshold && attack_score > benign_score + margin;
            let v = Verdict {
                entry: i,
                flagged,
                attack_score: if has_attacks { attack_score } else { 0.0 },
                nearest_attack: if has_attacks {
                    self.index().row_text(SectionKind::Injections, ai).to_string()
                } else {
                    String::new()
                },
                attack_category: meta.injections.get(ai).and_then(|p| p.category.clone()),
                benign_score: if benign.rows() > 0 { benign_score } else { 0.0 },
                nearest_benign: if benign.rows() > 0 {
                    self.index().row_text(SectionKind::Benign, bi).to_string()
                } else {
                    String::new()
                },
            };
            if flagged { report.dropped.push(v) } else { report.kept.push(v) }
        }
        report.dropped_count = report.dropped.len();
        Ok(report)
    }
}
