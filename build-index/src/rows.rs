//! The texts each matrix of an index is made of, and their embedding: in fixed chunks, in
//! parallel across chunks, each text as a query or as a catalog document.

use crate::{BuildError, Result};
use rayon::prelude::*;
use switchyard_embed::Embedder;
use switchyard_manifest::Catalog;

/// Texts embedded per parallel work unit: each is one `embed_batch` call.
pub(crate) const CHUNK: usize = 64;

/// What a text is to the model: a query (tasks, examples, probes, patterns) or a catalog
/// document (the card of a tool or skill), which asymmetric models such as e5 embed behind
/// another prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// Embedded with [`Embedder::embed_batch`].
    Query,
    /// Embedded with [`Embedder::embed_documents`].
    Document,
}

/// Embeds queries in fixed chunks, in parallel across chunks, keeping order.
pub fn embed_all(
    embedder: &dyn Embedder,
    texts: &[String],
    progress: Option<&(dyn Fn(usize, usize) + Send + Sync)>,
) -> Result<Vec<Vec<f32>>> {
    embed_all_as(embedder, texts, TextKind::Query, progress)
}

/// Embeds texts as the injection screen reads them, in fixed chunks, in parallel across chunks,
/// keeping order: each text's **screen vector**, its final vector followed, with a `layer`, by
/// that middle layer's from the same pass (see `switchyard_format::ScreenLayerMeta`).
pub fn embed_screen(
    embedder: &dyn Embedder,
    texts: &[String],
    layer: Option<usize>,
    progress: Option<&(dyn Fn(usize, usize) + Send + Sync)>,
) -> Result<Vec<Vec<f32>>> {
    let Some(layer) = layer else { return embed_all(embedder, texts, progress) };
    let done = std::sync::atomic::AtomicUsize::new(0);
    let chunks: Vec<Vec<Vec<f32>>> = texts
        .par_chunks(CHUNK)
        .map(|chunk| {
            let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
            let out: Vec<Vec<f32>> = switchyard_embed::embed_layered(embedder, &refs, Some(layer))?
                .into_iter()
                .map(|v| [v.vector, v.middle].concat())
                .collect();
            let n = done.fetch_add(chunk.len(), std::sync::atomic::Ordering::Relaxed) + chunk.len();
            if let Some(p) = progress {
                p(n, texts.len());
            }
            Ok(out)
        })
        .collect::<Result<_>>()?;
    Ok(chunks.into_iter().flatten().collect())
}

/// Embeds texts of one kind in fixed chunks, in parallel across chunks, keeping order.
pub fn embed_all_as(
    embedder: &dyn Embedder,
    texts: &[String],
    kind: TextKind,
    progress: Option<&(dyn Fn(usize, usize) + Send + Sync)>,
) -> Result<Vec<Vec<f32>>> {
    let done = std::sync::atomic::AtomicUsize::new(0);
    let chunks: Vec<Vec<Vec<f32>>> = texts
        .par_chunks(CHUNK)
        .map(|chunk| {
            let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
            let out = match kind {
                TextKind::Query => embedder.embed_batch(&refs)?,
                TextKind::Document => embedder.embed_documents(&refs)?,
            };
            let n = done.fetch_add(chunk.len(), std::sync::atomic::Ordering::Relaxed) + chunk.len();
            if let Some(p) = progress {
                p(n, texts.len());
            }
            Ok(out)
        })
        .collect::<Result<_>>()?;
    let out: Vec<Vec<f32>> = chunks.into_iter().flatten().collect();
    let dim = embedder.dim();
    for (v, t) in out.iter().zip(texts) {
        if v.len() != dim {
            return Err(BuildError::BadVector {
                model: embedder.info().name.clone(),
                text: t.clone(),
                expected: dim,
                found: v.len(),
            });
        }
    }
    Ok(out)
}

/// The row texts of each matrix, in [`switchyard_format::SectionKind::MATRICES`] order.
pub fn row_texts(catalog: &Catalog) -> [Vec<String>; 5] {
    [
        catalog.tools.iter().flat_map(|t| t.texts()).collect(),
        catalog.skills.iter().flat_map(|s| s.texts()).collect(),
        catalog.modes.iter().flat_map(|m| m.texts()).collect(),
        catalog.patterns.iter().map(|p| p.text.clone()).collect(),
        catalog.benign.iter().map(|b| b.text.clone()).collect(),
    ]
}

/// Which row texts of [`row_texts`] are catalog documents: the first row (the card) of each
/// tool and skill; their examples, like everything else, are written as a user would ask.
pub fn row_kinds(catalog: &Catalog) -> [Vec<TextKind>; 5] {
    let cards = |n: usize| {
        std::iter::once(TextKind::Document).chain(std::iter::repeat_n(TextKind::Query, n - 1))
    };
    [
        catalog.tools.iter().flat_map(|t| cards(t.texts().len())).collect(),
        catalog.skills.iter().flat_map(|s| cards(s.texts().len())).collect(),
        catalog.modes.iter().flat_map(|m| vec![TextKind::Query; m.texts().len()]).collect(),
        vec![TextKind::Query; catalog.patterns.len()],
        vec![TextKind::Query; catalog.benign.len()],
    ]
}

/// Embeds texts of mixed kinds (one embedding pass per kind), keeping order.
pub fn embed_mixed(
    embedder: &dyn Embedder,
    texts: &[String],
    kinds: &[TextKind],
    progress: Option<&(dyn Fn(usize, usize) + Send + Sync)>,
) -> Result<Vec<Vec<f32>>> {
    debug_assert_eq!(texts.len(), kinds.len());
    let total = texts.len();
    let mut out = vec![Vec::new(); total];
    let mut offset = 0usize;
    for kind in [TextKind::Document, TextKind::Query] {
        let at: Vec<usize> = (0..total).filter(|&i| kinds[i] == kind).collect();
        if at.is_empty() {
            continue;
        }
        let part: Vec<String> = at.iter().map(|&i| texts[i].clone()).collect();
        let shifted = progress.map(|p| move |done: usize, _: usize| p(offset + done, total));
        let report = shifted.as_ref().map(|f| f as &(dyn Fn(usize, usize) + Send + Sync));
        for (v, &i) in embed_all_as(embedder, &part, kind, report)?.into_iter().zip(&at) {
            out[i] = v;
        }
        offset += at.len();
    }
    Ok(out)
}
