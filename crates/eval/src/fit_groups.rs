//! The groups of settings `fit` learns, each kept only when the held-out folds show it helps:
//! a setting fitted on a few dozen cases can merely memorise them, and then it costs the tasks
//! it never saw (on the development warehouse catalog, the fusion weights fitted on 48 cases
//! lowered held-out tool recall@3 from 0.727 to 0.684).

use crate::fit::{FitMetrics, FitParams};
use serde::Serialize;

/// One group of settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FitGroup {
    /// Lexical weight, late-interaction share and server weight.
    Fusion,
    /// The tool gate.
    Gate,
    /// The semantic mode margin.
    ModeMargin,
    /// The off-topic margin.
    OffTopicMargin,
}

/// Every group, in the order they are fitted.
pub(crate) const GROUPS: [FitGroup; 4] =
    [FitGroup::Fusion, FitGroup::Gate, FitGroup::ModeMargin, FitGroup::OffTopicMargin];

/// Below this, two held-out figures are the same.
const SAME: f64 = 1e-9;

impl FitGroup {
    /// `start` with this group's settings taken from `fitted`.
    pub(crate) fn apply(self, start: &FitParams, fitted: &FitParams) -> FitParams {
        match self {
            FitGroup::Fusion => FitParams {
                lexical_weight: fitted.lexical_weight,
                late_share: fitted.late_share,
                server_weight: fitted.server_weight,
                ..*start
            },
            FitGroup::Gate => FitParams { gate_z: fitted.gate_z, ..*start },
            FitGroup::ModeMargin => FitParams { mode_margin: fitted.mode_margin, ..*start },
            FitGroup::OffTopicMargin => {
                FitParams { off_topic_margin: fitted.off_topic_margin, ..*start }
            }
        }
    }

    /// Whether the group's held-out figures with its fitted settings (`after`) beat the index's
    /// (`before`) on what the group is for, without losing on what it trades against.
    pub(crate) fn helps(self, before: &FitMetrics, after: &FitMetrics) -> bool {
        let tools = after.tool_recall_at_3 - before.tool_recall_at_3;
        let skills = after.skill_recall_at_3 - before.skill_recall_at_3;
        // Fewer unrelated tasks given a tool is a gain (0 without unrelated tasks).
        let unrelated = match (before.no_tool_selected_rate, after.no_tool_selected_rate) {
            (Some(b), Some(a)) => b - a,
            _ => 0.0,
        };
        let closed = match (before.real_closed_off_topic_rate, after.real_closed_off_topic_rate) {
            (Some(b), Some(a)) => a - b,
            _ => 0.0,
        };
        // Tools and skills found, counted over the cases each recall is over.
        let found = tools * after.tool_cases as f64 + skills * after.skill_cases as f64;
        match self {
            FitGroup::Fusion => tools >= -SAME && found > SAME,
            FitGroup::Gate => {
                tools >= -SAME && unrelated >= -SAME && (tools > SAME || unrelated > SAME)
            }
            FitGroup::ModeMargin => after.mode_accuracy - before.mode_accuracy > SAME,
            // Each unrelated task left without a tool against each real task closed.
            FitGroup::OffTopicMargin => unrelated - closed > SAME && tools >= -closed - SAME,
        }
    }
}

/// What the held-out folds said about one group.
#[derive(Debug, Clone, Serialize)]
pub struct GroupReport {
    /// The group.
    pub group: FitGroup,
    /// Held-out metrics with this group fitted on the other folds, the rest as the index has it.
    pub cross_validated: FitMetrics,
    /// Whether it beat the index's settings there, so its fitted settings were written.
    pub kept: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(tools: f64, mode: f64, unrelated: Option<f64>, closed: Option<f64>) -> FitMetrics {
        FitMetrics {
            cases: 10,
            tool_cases: 10,
            skill_cases: 2,
            mode_cases: 10,
            tool_recall_at_3: tools,
            skill_recall_at_3: 0.5,
            mode_accuracy: mode,
            no_tool_selected_rate: unrelated,
            real_closed_off_topic_rate: closed,
        }
    }

    #[test]
    fn a_group_is_kept_only_when_it_gains_on_held_out_cases() {
        let before = metrics(0.70, 0.80, Some(0.5), Some(0.0));
        // Fusion: more tool recall is kept; the same or less is not.
        assert!(FitGroup::Fusion.helps(&before, &metrics(0.72, 0.8, Some(0.5), Some(0.0))));
        assert!(!FitGroup::Fusion.helps(&before, &before));
        assert!(!FitGroup::Fusion.helps(&before, &metrics(0.68, 0.8, Some(0.5), Some(0.0))));
        // A tool found on each of 2 more cases in 10 outweighs a skill lost on 1 of 2.
        let mut more_tools = metrics(0.9, 0.8, Some(0.5), Some(0.0));
        more_tools.skill_recall_at_3 = 0.0;
        assert!(FitGroup::Fusion.helps(&before, &more_tools));
        // Gate: fewer unrelated tasks with tools, at no loss of recall.
        assert!(FitGroup::Gate.helps(&before, &metrics(0.70, 0.8, Some(0.3), Some(0.0))));
        assert!(!FitGroup::Gate.helps(&before, &metrics(0.69, 0.8, Some(0.1), Some(0.0))));
        // Mode margin: accuracy.
        assert!(FitGroup::ModeMargin.helps(&before, &metrics(0.7, 0.85, Some(0.5), Some(0.0))));
        assert!(!FitGroup::ModeMargin.helps(&before, &metrics(0.9, 0.80, Some(0.5), Some(0.0))));
        // Off-topic margin: unrelated tasks closed must outweigh real tasks closed.
        let closes = |u, c, t| FitGroup::OffTopicMargin.helps(&before, &metrics(t, 0.8, u, c));
        assert!(closes(Some(0.2), Some(0.01), 0.69));
        assert!(!closes(Some(0.45), Some(0.10), 0.60));
        assert!(!closes(None, None, 0.70), "nothing to gain without unrelated tasks");
    }
}
