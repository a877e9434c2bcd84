//! Embedding large sets fast: texts are sorted by length before batching, so each batch pads
//! to a length close to its own texts' (metatool's 20k queries embed about 2x faster so).

use crate::{Progress, Result};
use switchyard_embed::Embedder;

/// Embeds `texts` in batches (in parallel across batches), returning vectors in input order.
pub fn embed_many(
    embedder: &dyn Embedder,
    texts: &[&str],
    stage: &str,
    progress: Progress<'_>,
) -> Result<Vec<Vec<f32>>> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    // Characters are a good enough proxy for tokens; ties keep input order (stable sort).
    order.sort_by_key(|&i| texts[i].chars().count());
    let sorted: Vec<String> = order.iter().map(|&i| texts[i].to_string()).collect();
    let report = |done: usize, all: usize| progress(stage, done, all);
    let vectors = switchyard_build_index::embed_all(embedder, &sorted, Some(&report))?;
    let mut out = vec![Vec::new(); texts.len()];
    for (v, &i) in vectors.into_iter().zip(&order) {
        out[i] = v;
    }
    Ok(out)
}
