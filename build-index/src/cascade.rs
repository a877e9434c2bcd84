//! Distils the static embedding space of the router's cascade (model2vec's recipe, scoped to
//! the catalog).
//!
//! - **Vocabulary**: every word piece of the catalog's tools, skills and modes row texts (and
//!   of the tool-name probes). A task piece outside it carries no catalog evidence, so it is
//!   skipped and lowers the task's coverage, which the router demands be high before it trusts
//!   a static answer. Scoping to the catalog keeps the table small (a few thousand pieces
//!   instead of 30k-250k) and the distillation to about a second.
//! - **Vectors**: each piece embedded alone by the model, in its input frame (`[CLS] piece
//!   [SEP]`, with the `query:` prefix for e5), pooled and normalised like a text.
//! - **Weights**: the piece's inverse document frequency over those row texts, `ln(1 + N/df)`,
//!   so words every description shares ("the", "a", "file") say little.
//! - **Rows**: every tools, skills and modes row text embedded in that static space, and the
//!   static thresholds derived from them exactly as the model's are.
//!
//! No dimension reduction: the rows stay in the model's width, so the table costs
//! `pieces * dim * 4` bytes (about 3 MB for the default catalog with MiniLM).

use crate::{Result, derive_thresholds};
use std::collections::BTreeMap;
use switchyard_embed::{Embedder, StaticTable};
use switchyard_format::CascadeMeta;

/// Default share of a task's pieces the table must know for a static answer.
pub const DEFAULT_MIN_COVERAGE: f32 = 0.8;
/// Default lead of the best tool over the next, as a fraction of the static related-unrelated
/// spread, for a static answer. Chosen on the sweep of `switchyard eval` (cases, metatool,
/// api_bank, both models): at 0.25 the static answer's best tool was the model's in only 81% of
/// the metatool queries it answered (recall@3 -0.005 with MiniLM); at 0.5, in 99.4%, with no
/// loss on any set.
pub const DEFAULT_MARGIN: f32 = 0.5;

/// The texts the static space is built from: row texts per matrix and per-item spans.
pub(crate) struct Groups<'a> {
    pub tools: (&'a [String], &'a [(usize, usize)]),
    pub skills: (&'a [String], &'a [(usize, usize)]),
    pub modes: (&'a [String], &'a [(usize, usize)]),
    /// One probe text per tool (its name as words) when some tool has no examples.
    pub tool_names: Option<&'a [String]>,
}

/// The static rows (pieces, then tools, skills, modes rows) and metadata, or `None` when the
/// embedder has no vocabulary (the hash stand-in).
pub(crate) fn distil(
    embedder: &dyn Embedder,
    groups: &Groups<'_>,
) -> Result<Option<(Vec<f32>, CascadeMeta)>> {
    let dim = embedder.dim();
    let tokenize = |texts: &[String]| -> Result<Option<Vec<Vec<u32>>>> {
        let mut out = Vec::with_capacity(texts.len());
        for t in texts {
            match embedder.piece_ids(t)? {
                Some(ids) => out.push(ids),
                None => return Ok(None),
            }
        }
        Ok(Some(out))
    };
    let Some(tools) = tokenize(groups.tools.0)? else { return Ok(None) };
    let Some(skills) = tokenize(groups.skills.0)? else { return Ok(None) };
    let Some(modes) = tokenize(groups.modes.0)? else { return Ok(None) };
    let names = match groups.tool_names {
        Some(n) => tokenize(n)?,
        None => None,
    };

    // Document frequency over the row texts; probe-only pieces count as seen once.
    let rows: Vec<&Vec<u32>> = tools.iter().chain(&skills).chain(&modes).collect();
    let mut df: BTreeMap<u32, u32> = BTreeMap::new();
    for r in &rows {
        let mut seen: Vec<u32> = r.to_vec();
        seen.sort_unstable();
        seen.dedup();
        for p in seen {
            *df.entry(p).or_default() += 1;
        }
    }
    for p in names.iter().flatten().flatten() {
        df.entry(*p).or_insert(1);
    }
    let piece_ids: Vec<u32> = df.keys().copied().collect();
    let n = rows.len().max(1) as f32;
    let piece_weights: Vec<f32> = df.values().map(|&d| (1.0 + n / d as f32).ln()).collect();
    let vectors = embedder.embed_pieces(&piece_ids)?;
    // Every piece's vector shares a large common direction (the frame: [CLS], [SEP], the
    // prefix), which squeezes all static scores towards 1. Removing the mean piece vector
    // (the centring step of model2vec's PCA) spreads them out again.
    let mut mean = vec![0f64; dim];
    for v in &vectors {
        for (m, x) in mean.iter_mut().zip(v) {
            *m += f64::from(*x);
        }
    }
    let count = vectors.len().max(1) as f64;
    let mut piece_rows: Vec<f32> = Vec::with_capacity(vectors.len() * dim);
    for v in &vectors {
        let start = piece_rows.len();
        piece_rows.extend(v.iter().zip(&mean).map(|(x, m)| x - (m / count) as f32));
        switchyard_embed::l2_normalize(&mut piece_rows[start..]);
    }
    let table =
        StaticTable::new(&piece_ids, &piece_weights, &piece_rows, dim, dim).ok_or_else(|| {
            crate::BuildError::BadVector {
                model: embedder.info().name.clone(),
                text: "<static piece table>".into(),
                expected: dim,
                found: piece_rows.len() / piece_ids.len().max(1),
            }
        })?;
    let embed_rows = |texts: &[Vec<u32>]| -> Vec<f32> {
        let mut out = vec![0f32; texts.len() * dim];
        for (t, o) in texts.iter().zip(out.chunks_exact_mut(dim)) {
            table.embed_into(t, o);
        }
        out
    };
    let (t, s, m) = (embed_rows(&tools), embed_rows(&skills), embed_rows(&modes));
    let probes = names.as_deref().map(embed_rows);
    let thresholds = derive_thresholds(
        dim,
        (&t, groups.tools.1),
        (&s, groups.skills.1),
        (&m, groups.modes.1),
        &[],
        probes.as_deref(),
    );
    let mut all = piece_rows;
    all.extend(t);
    all.extend(s);
    all.extend(m);
    Ok(Some((
        all,
        CascadeMeta {
            piece_ids,
            piece_weights,
            thresholds,
            min_coverage: DEFAULT_MIN_COVERAGE,
            margin: DEFAULT_MARGIN,
        },
    )))
}
