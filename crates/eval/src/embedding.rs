//! Embedding large sets fast: texts are sorted by length before batching, so each batch pads
//! to a length close to its own texts' (metatool's 20k queries embed about 2x faster so).

use crate::{Progress, Result};
use switchyard_build_index::TextKind;
use switchyard_embed::Embedder;

/// Embeds queries in batches (in parallel across batches), returning vectors in input order.
pub fn embed_many(
    embedder: &dyn Embedder,
    texts: &[&str],
    stage: &str,
    progress: Progress<'_>,
) -> Result<Vec<Vec<f32>>> {
    embed_many_as(embedder, texts, TextKind::Query, stage, progress)
}

/// Embeds texts of one kind (queries, or catalog documents) in batches, in input order.
pub fn embed_many_as(
    embedder: &dyn Embedder,
    texts: &[&str],
    kind: TextKind,
    stage: &str,
    progress: Progress<'_>,
) -> Result<Vec<Vec<f32>>> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    // Characters are a good enough proxy for tokens; ties keep input order (stable sort).
    order.sort_by_key(|&i| texts[i].chars().count());
    let sorted: Vec<String> = order.iter().map(|&i| texts[i].to_string()).collect();
    let report = |done: usize, all: usize| progress(stage, done, all);
    let vectors = switchyard_build_index::embed_all_as(embedder, &sorted, kind, Some(&report))?;
    let mut out = vec![Vec::new(); texts.len()];
    for (v, &i) in vectors.into_iter().zip(&order) {
        out[i] = v;
    }
    Ok(out)
}
