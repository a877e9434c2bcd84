//! The cascade's check: whether the index's static table answers a task without the model.

use crate::decision::{AppliedThresholds, CascadeCheck};
use crate::kernels;
use crate::router::Router;
use crate::scratch::Scratch;
use switchyard_embed::StaticTable;
use switchyard_format::{MatrixView, Thresholds};

impl Router {
    /// The cascade's first step: the task's static embedding and whether it is decisive. `None`
    /// when the cascade is off, the index has no static table or the embedder no vocabulary.
    ///
    /// Decisive means: the table knows most of the task's pieces (unknown pieces carry no
    /// evidence, so a task with many of them could be about anything), the best tool clears
    /// the static tool threshold, and it leads the next tool by a fixed share of the static
    /// space's related-unrelated spread (scale-free, so right for every model).
    pub(crate) fn cascade_check(
        &self,
        task: &str,
        scratch: &mut Scratch,
    ) -> Option<(Vec<f32>, CascadeCheck)> {
        if !self.config.cascade {
            return None;
        }
        let space = self.index.static_space()?;
        let pieces = self.embedder.piece_ids(task).ok()??;
        let meta = space.meta;
        let p = &space.pieces;
        let table = StaticTable::new(
            &meta.piece_ids,
            &meta.piece_weights,
            p.as_padded(),
            p.dim(),
            p.stride(),
        )?;
        let mut v = vec![0f32; p.dim()];
        let coverage = table.embed_into(&pieces, &mut v).share();
        let (top, lead) = top_two(&space.tools, &self.tools.row_owner, &v, scratch);
        let t = &meta.thresholds;
        let min_coverage = self.config.cascade_min_coverage.unwrap_or(meta.min_coverage);
        let min_lead = self.config.cascade_margin.unwrap_or(meta.margin)
            * (t.related_mean - t.unrelated_mean).max(0.0);
        // Skills must be as clear: either no skill comes close, or one leads as a tool must.
        // Without this the static space's weaker skill ranking cost skill recall on the cases.
        let (skill_top, skill_lead) = top_two(&space.skills, &self.skills.row_owner, &v, scratch);
        let skills_clear = skill_top.0 < t.skill_min || skill_lead >= min_lead;
        let accepted = top.1.is_some()
            && coverage >= min_coverage
            && top.0 >= t.tool_min
            && lead >= min_lead
            && skills_clear;
        let check = CascadeCheck {
            coverage,
            min_coverage,
            top_tool: top.1.map(|i| self.index.meta().tools[i].name.clone()),
            top_score: if top.0.is_finite() { top.0 } else { 0.0 },
            lead,
            min_lead,
            skills_clear,
            accepted,
        };
        Some((v, check))
    }
}

/// The best item (score, index) of a matrix whose rows belong to items, and its lead over the
/// next item (0 with a single item).
pub(crate) fn top_two(
    matrix: &MatrixView<'_>,
    row_owner: &[u32],
    v: &[f32],
    scratch: &mut Scratch,
) -> ((f32, Option<usize>), f32) {
    kernels::scores_into(matrix, v, &mut scratch.row_scores);
    let items = row_owner.iter().map(|&o| o as usize + 1).max().unwrap_or(0);
    let mut best = vec![f32::NEG_INFINITY; items];
    for (row, &s) in scratch.row_scores.iter().enumerate() {
        let owner = row_owner[row] as usize;
        best[owner] = best[owner].max(s);
    }
    let (mut top, mut second) = ((f32::NEG_INFINITY, None), f32::NEG_INFINITY);
    for (i, &s) in best.iter().enumerate() {
        if s > top.0 {
            second = top.0;
            top = (s, Some(i));
        } else if s > second {
            second = s;
        }
    }
    let lead = if second.is_finite() && top.0.is_finite() { top.0 - second } else { 0.0 };
    (top, lead)
}

/// The thresholds of a static space as applied (the router's overrides are on the model's
/// scale, so they do not apply to it).
pub(crate) fn applied(t: &Thresholds) -> AppliedThresholds {
    AppliedThresholds { tool_min: t.tool_min, skill_min: t.skill_min, mode_min: t.mode_min }
}
