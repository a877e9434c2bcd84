//! The semantic fallback of mode inference: it decides only when confident.
//!
//! On an index with a selection section, the best mode must lead the runner-up by the margin
//! measured at build time in leave-one-out over the catalog's own mode examples (where that
//! lead reached 90% precision); an index whose examples could not support that stores no
//! margin, and the default mode decides. Older indexes keep the earlier rule (the winner must
//! beat the default mode by a tenth of the catalog's score spread).

use crate::decision::SemanticCheck;
use crate::kernels;
use crate::router::{Router, Scratch, Space};
use switchyard_format::SectionKind;

/// The semantic step's look at the modes: the best mode, and whether it may decide.
pub(crate) struct SemanticMode {
    pub mode: usize,
    pub check: SemanticCheck,
}

impl SemanticMode {
    /// For `mode_detail`.
    pub(crate) fn detail(&self) -> String {
        let c = &self.check;
        format!("score {:.3}, lead {:.3} >= margin {:.3}", c.score, c.lead, c.margin.unwrap_or(0.0))
    }
}

impl Router {
    pub(crate) fn semantic_mode(
        &self,
        embedding: &[f32],
        space: Space,
        min: f32,
        scratch: &mut Scratch,
    ) -> Option<SemanticMode> {
        if !self.config.semantic_modes {
            return None;
        }
        let modes = self.matrix_of(SectionKind::Modes, space);
        if modes.is_empty() {
            return None;
        }
        kernels::scores_into(&modes, embedding, &mut scratch.row_scores);
        let meta = self.index.meta();
        let mut best = vec![f32::NEG_INFINITY; meta.modes.len()];
        for (row, &s) in scratch.row_scores.iter().enumerate() {
            let m = self.mode_row_owner[row] as usize;
            best[m] = best[m].max(s);
        }
        let mut order: Vec<usize> = (0..best.len()).collect();
        order.sort_by(|&a, &b| best[b].total_cmp(&best[a]).then(a.cmp(&b)));
        let top = order[0];
        let score = best[top];
        if score < min {
            return None;
        }
        // (An index with a selection section and no margin still reports what it saw.)
        let runner_up = order.get(1).map_or(f32::NEG_INFINITY, |&i| best[i]);
        let lead = if runner_up.is_finite() { score - runner_up } else { f32::INFINITY };
        let model_t = &meta.thresholds;
        let t = match (space, self.index.static_space()) {
            (Space::Static, Some(st)) => &st.meta.thresholds,
            _ => model_t,
        };
        let (lead, margin) = match self.index.selection() {
            Some(sel) => {
                // Measured in the model's space; a static answer rescales it by the ratio of
                // the two spaces' score spreads.
                let margin = self.config.semantic_margin.map_or(sel.mode.semantic_margin, Some);
                let scale = (t.related_mean - t.unrelated_mean)
                    / (model_t.related_mean - model_t.unrelated_mean).max(1e-6);
                (lead, margin.map(|m| m * scale.max(0.0)))
            }
            None => {
                // Older indexes: the winner must beat the default mode by a tenth of the
                // catalog's score spread.
                let margin = 0.1 * (t.related_mean - t.unrelated_mean).max(0.0);
                let d = meta.modes.iter().position(|m| m.name == meta.default_mode);
                let lead_over_default = match d {
                    Some(d) if d != top => score - best[d],
                    _ => f32::INFINITY,
                };
                (lead_over_default, Some(margin))
            }
        };
        let decided = margin.is_some_and(|m| lead >= m);
        let check = SemanticCheck {
            best: meta.modes[top].name.clone(),
            score,
            lead: if lead.is_finite() { lead } else { 1.0 },
            margin,
            decided,
        };
        Some(SemanticMode { mode: top, check })
    }
}
