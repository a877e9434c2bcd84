//! The `thinking` sections: the catalog's thinking modes, their rows (each mode's card, then
//! its examples, embedded as queries like a problem is) and the semantic fallback's margin,
//! measured exactly as the mode step's is (leave-one-out over the examples, see
//! [`crate::selection::leave_one_out`]).

use crate::selection::{LeaveOneOut, MODE_PRECISION, leave_one_out};
use crate::{Result, embed_all};
use switchyard_embed::Embedder;
use switchyard_format::{MIN_MODE_EXAMPLES, ModeCalibration, ThinkingMeta, ThinkingModeMeta};
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
    let off = |examples: u32, note: String| ModeCalibration {
        semantic_margin: None,
        examples,
        precision: None,
        coverage: None,
        note: Some(note),
    };
    let total: usize = spans.iter().map(|&(_, c)| c - 1).sum();
    if spans.len() < 2 {
        return off(total as u32, "fewer than two thinking modes".into());
    }
    let thin: Vec<&str> = catalog
        .thinking
        .iter()
        .zip(spans)
        .filter(|(m, span)| m.name != default && span.1 - 1 < MIN_MODE_EXAMPLES)
        .map(|(m, _)| m.name.as_str())
        .collect();
    if !thin.is_empty() {
        return off(
            total as u32,
            format!(
                "thinking mode(s) {} have fewer than {MIN_MODE_EXAMPLES} examples; keywords or the default ({default}) decide",
                thin.join(", ")
            ),
        );
    }
    match leave_one_out(rows, spans, dim) {
        LeaveOneOut::Margin { margin, examples, precision, coverage } => ModeCalibration {
            semantic_margin: Some(margin),
            examples,
            precision: Some(precision),
            coverage: Some(coverage),
            note: None,
        },
        LeaveOneOut::NoMargin { examples } => off(
            examples,
            format!(
                "no lead reached {MODE_PRECISION} leave-one-out precision on the thinking examples; keywords or the default ({default}) decide"
            ),
        ),
    }
}
