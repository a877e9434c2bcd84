//! The `thinking` sections: the catalog's thinking modes, their rows (each mode's card, then
//! its examples, embedded as queries like a problem is) and the semantic fallback's margin,
//! measured exactly as the mode step's is (leave-one-out over the examples, see
//! [`crate::selection::leave_one_out`]).

use crate::selection::{Classes, calibrate_classes};
use crate::{Result, embed_all};
use switchyard_embed::Embedder;
use switchyard_format::{ModeCalibration, ThinkingMeta, ThinkingModeMeta};
use switchyard_manifest::{Catalog, default_thinking};

/// The thinking rows (unpadded, `rows * dim`) and metadata of a catalog with thinking modes.
pub(crate) fn thinking_section(
    catalog: &Catalog,
    embedder: &dyn Embedder,
) -> Result<Option<(Vec<f32>, ThinkingMeta)>> {
    let Some(default) = default_thinking(&catalog.thinking) else { return Ok(None) };
    let texts: Vec<String> = catalog.thinking.iter().flat_map(|m| m.texts()).collect();
    let rows: Vec<f32> = embed_all(embedder, &texts, None)?.into_iter().flatten().collect();
    let mut spans = Vec::new();
    let mut modes = Vec::new();
    let mut first = 0usize;
    for m in &catalog.thinking {
        let count = m.texts().len();
        spans.push((first, count));
        modes.push(ThinkingModeMeta {
            name: m.name.clone(),
            description: m.description.clone(),
            keywords: m.keywords.clone(),
            scaffold: m.scaffold.clone(),
            criteria: m.criteria.clone(),
            first_row: first as u32,
            row_count: count as u32,
        });
        first += count;
    }
    let calibration = calibrate(catalog, &rows, &spans, embedder.dim(), &default.name);
    Ok(Some((rows, ThinkingMeta { modes, default_mode: default.name.clone(), calibration })))
}

fn calibrate(
    catalog: &Catalog,
    rows: &[f32],
    spans: &[(usize, usize)],
    dim: usize,
    default: &str,
) -> ModeCalibration {
    let names: Vec<&str> = catalog.thinking.iter().map(|m| m.name.as_str()).collect();
    let decides = format!("keywords or the default ({default}) decide");
    calibrate_classes(
        &Classes { names: &names, spans, rows, dim, default, what: "thinking mode" },
        &decides,
        &decides,
    )
}
