//! The `late` section: each tools and skills item's content-token states, for late interaction.
//!
//! Every row of an item (its card, as a document, then its examples, as a user would ask) is
//! run through the model once more, keeping the states of its content tokens; the item's tokens
//! are all of its rows' tokens together. Each state is stored as `i8` with a scale of its own,
//! a quarter of the `f32` size; the cosines the router takes over them move by well under a
//! hundredth. Each token's id and the number of items holding each id are stored too: the
//! router weighs a task's tokens, and an item's, by how rare they are in the catalog.

use crate::rows::CHUNK;
use crate::{Result, TextKind};
use rayon::prelude::*;
use switchyard_embed::{Embedder, TokenStates};
use switchyard_format::{LateItems, LateMeta};
use switchyard_manifest::Catalog;

/// Most bytes of token states (tools and skills together, one byte a dimension) a catalog may
/// have for the section to be written: 131,072 tokens of a 384-wide model. A route scores only
/// its best items' tokens (the router's candidate cut), so this bounds the index's size and its
/// opening, not routes: StableToolBench's 2,479 tools (124,000 tokens, 46 MiB) open in about
/// 30 ms more than without the section. It stays under the index's 64 MiB limit on one section.
pub const LATE_STATE_BUDGET: usize = 48 << 20;

/// The section for `catalog` at the model's late-interaction share; `None` when the model's
/// share is 0, the embedder keeps no token states, or the catalog's states pass
/// [`LATE_STATE_BUDGET`].
pub(crate) fn section(embedder: &dyn Embedder, catalog: &Catalog) -> Result<Option<LateMeta>> {
    let blend = embedder.info().late_interaction;
    if blend <= 0.0 || embedder.embed_with_tokens(&[""], false)?.is_none() {
        return Ok(None);
    }
    let tools: Vec<Vec<String>> = catalog.tools.iter().map(|t| t.texts()).collect();
    let skills: Vec<Vec<String>> = catalog.skills.iter().map(|s| s.texts()).collect();
    let (tools, skills) = (items(embedder, &tools)?, items(embedder, &skills)?);
    let tokens = tools.scales.len() + skills.scales.len();
    let bytes = tokens * embedder.dim();
    if bytes > LATE_STATE_BUDGET {
        tracing::info!(
            tokens,
            bytes,
            budget = LATE_STATE_BUDGET,
            "late interaction off: the catalog's token states pass the budget"
        );
        return Ok(None);
    }
    Ok(Some(LateMeta { blend: blend.min(1.0), dim: embedder.dim() as u32, tools, skills }))
}

/// The token states of items whose rows are `texts[item]` (the first row a card).
fn items(embedder: &dyn Embedder, texts: &[Vec<String>]) -> Result<LateItems> {
    let cards: Vec<&str> = texts.iter().filter_map(|t| t.first().map(String::as_str)).collect();
    let examples: Vec<&str> =
        texts.iter().flat_map(|t| t.iter().skip(1).map(String::as_str)).collect();
    let cards = states(embedder, &cards, TextKind::Document)?;
    let mut examples = states(embedder, &examples, TextKind::Query)?.into_iter();
    let dim = embedder.dim();
    let mut out = LateItems { offsets: vec![0], ..LateItems::default() };
    let mut states: Vec<i8> = Vec::new();
    let mut holders: std::collections::BTreeMap<u32, u32> = Default::default();
    let mut cards = cards.into_iter();
    for rows in texts {
        let mut ids: Vec<u32> = Vec::new();
        let item_rows =
            cards.next().into_iter().chain(examples.by_ref().take(rows.len().saturating_sub(1)));
        for row in item_rows {
            for (i, &id) in row.ids.iter().enumerate() {
                let (scale, values) = LateItems::quantize(row.state(i));
                out.scales.push(scale);
                states.extend(values);
                out.ids.push(id);
                ids.push(id);
            }
        }
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            *holders.entry(id).or_default() += 1;
        }
        out.offsets.push(out.scales.len() as u32);
    }
    debug_assert_eq!(states.len(), out.scales.len() * dim);
    out.states = states.into();
    out.doc_freq = holders.into_iter().collect();
    Ok(out)
}

/// Token states of texts of one kind, in fixed chunks, in parallel across chunks, in order.
fn states(embedder: &dyn Embedder, texts: &[&str], kind: TextKind) -> Result<Vec<TokenStates>> {
    let chunks: Vec<Vec<TokenStates>> = texts
        .par_chunks(CHUNK)
        .map(|chunk| {
            let kept = embedder.embed_with_tokens(chunk, kind == TextKind::Document)?;
            Ok(kept.unwrap_or_default())
        })
        .collect::<Result<_>>()?;
    Ok(chunks.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quantized_state_keeps_its_direction() {
        let state: Vec<f32> = (0..384).map(|i| ((i * 37 % 101) as f32 - 50.0) / 300.0).collect();
        let norm = state.iter().map(|x| x * x).sum::<f32>().sqrt();
        let state: Vec<f32> = state.iter().map(|x| x / norm).collect();
        let (scale, q) = LateItems::quantize(&state);
        let back: Vec<f32> = q.iter().map(|&v| f32::from(v) * scale).collect();
        let cos: f32 = state.iter().zip(&back).map(|(a, b)| a * b).sum::<f32>()
            / back.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!(cos > 0.999, "{cos}");
        assert_eq!(LateItems::quantize(&[0.0; 4]), (0.0, vec![0; 4]));
    }
}
