//! Mode inference after an explicit mode: context hints (mapped to modes by the manifest),
//! keyword rules, the chit-chat short cut, and the semantic fallback, which decides only when
//! confident.
//!
//! On an index with a selection section, the best mode must lead the runner-up by the margin
//! measured at build time in leave-one-out over the catalog's own mode examples (where that
//! lead reached 90% precision); an index whose examples could not support that stores no
//! margin, and the default mode decides. Older indexes keep the earlier rule (the winner must
//! beat the default mode by a tenth of the catalog's score spread).
//!
//! From builder version 12 on ([`switchyard_format::MODE_CENTROIDS_SINCE`]) a mode scores a
//! task by its centroid, the normalised mean of its description's and examples' rows, and the
//! margin was measured on centroid leads; older indexes keep each mode's best row. A mode's few
//! rows each stand for part of what the mode covers, and the best single row is as often
//! another mode's look-alike of the task as its own (on the development catalogs the centroid
//! named the right mode for 4-13 more tasks in 100 than the best row; `benches/RESULTS.md`,
//! session 57). Whether the task is about any mode at all is still asked of the best row.
//!
//! When the margin does not decide, the task's best tools may: their mode decides when it agrees
//! with the examples' best, or when it holds nearly all their votes ([`TOOLS_DECIDE_SHARE`]).
//!
//! When neither the margin nor the tools decide and the task asks a question, the question rule
//! may: if the default mode's examples ask no question and some modes' examples do (the index's
//! `mode_questions` section), the best of those modes decides. The catalog's own phrasing says
//! where questions go; a catalog whose examples ask no questions, or whose default mode's do,
//! is left as it was.
//!
//! Last, before the default mode: when the default mode offers under [`CATCH_ALL_SHARE`] of the
//! catalog's tools, it is one topic among the others rather than where unsure tasks belong, and
//! the mode the best tools favour, by any lead, decides.

use crate::decision::{ModeFilter, ModeSource, QuestionRule, SemanticCheck, ToolEvidence};
use crate::kernels;
use crate::keywords::words;
use crate::router::{ItemTable, RouteOptions, Router, Space};
use crate::scratch::Scratch;
use switchyard_format::{Index, MatrixView, SectionKind};
use switchyard_lexical::Fused;

/// How many of the task's best tools vote on its mode.
const VOTING_TOOLS: usize = 5;
/// How fast a tool's vote falls off with its distance to the best tool, in the fused scale
/// (where the best tool scores about 1 and the worst about 0): a tool 0.1 behind votes with
/// weight 1/e.
const VOTE_TEMPERATURE: f32 = 0.1;
/// The favoured mode must out-vote the runner-up by this factor, so that a catalog whose tools
/// carry no modes (every vote split evenly) favours none.
const VOTE_LEAD: f32 = 1.01;
/// The share of the best tools' votes with which their mode decides when the examples' lead
/// did not, before the question rule and in place of the default mode. Measured on the
/// development catalogs (default, warehouse, clinic, hotel; `benches/RESULTS.md`, session 48):
/// where the tools and the rest of the mode step disagreed, the tools were right in 14 of 16
/// tasks from 0.9 of the votes up, and the question rule or the default mode was right more
/// often than the tools in every band below it.
pub const TOOLS_DECIDE_SHARE: f32 = 0.9;
/// The share of a catalog's tools its default mode must offer to be the catalog's catch-all:
/// the mode an unsure task falls back to. A default mode that offers fewer is one topic among
/// the others (a clinic's front desk, a garage's workshop), and an unsure task goes to the mode
/// its best tools favour, by any lead, before it. Measured on the development catalogs
/// (`benches/RESULTS.md`, session 48): the default modes that offer 90% and 76% of their
/// catalogs' tools were right where the tools were not, those that offer 61% and 53% wrong
/// where the tools were right.
pub const CATCH_ALL_SHARE: f32 = 2.0 / 3.0;

/// The length of the sum of each mode's rows, in the model's space and in the static one, so
/// that a mode's centroid score is the sum of its rows' scores over it: the step scores every
/// row anyway, and the centroid costs no second pass.
pub(crate) struct ModeCentroids {
    model: Vec<f32>,
    static_space: Vec<f32>,
}

impl ModeCentroids {
    pub(crate) fn new(index: &Index, owners: &[u32], modes: usize) -> Self {
        Self {
            model: sum_norms(index.matrix(SectionKind::Modes), owners, modes),
            static_space: index
                .static_space()
                .map(|st| sum_norms(st.modes, owners, modes))
                .unwrap_or_default(),
        }
    }

    fn norms(&self, space: Space) -> &[f32] {
        match space {
            Space::Static if !self.static_space.is_empty() => &self.static_space,
            _ => &self.model,
        }
    }
}

/// The length of the sum of each class's rows (`owners[row]` is the row's class), so that a
/// class's centroid score is the sum of its rows' scores over it.
pub(crate) fn sum_norms(matrix: MatrixView<'_>, owners: &[u32], classes: usize) -> Vec<f32> {
    let mut sums = vec![vec![0.0f32; matrix.dim()]; classes];
    for (r, &m) in owners.iter().enumerate().take(matrix.rows()) {
        sums[m as usize].iter_mut().zip(matrix.row(r)).for_each(|(a, b)| *a += b);
    }
    sums.iter().map(|v| v.iter().map(|x| x * x).sum::<f32>().sqrt()).collect()
}

/// Each class's centroid score from its rows' scores: their sum over `norms`
/// ([`sum_norms`]); a class without rows scores minus infinity.
pub(crate) fn centroid_scores(row_scores: &[f32], owners: &[u32], norms: &[f32]) -> Vec<f32> {
    let mut sums = vec![0.0f32; norms.len()];
    for (&s, &m) in row_scores.iter().zip(owners) {
        sums[m as usize] += s;
    }
    sums.iter().zip(norms).map(|(&s, &n)| if n > 0.0 { s / n } else { f32::NEG_INFINITY }).collect()
}

/// How the decided mode constrains selection. A guess or the default must not hide the tools a
/// task needs: on a hybrid index it only orders them. A mode the best tools chose by their
/// votes would only reorder the tools that chose it, so it orders the skills alone (measured in
/// `benches/RESULTS.md`, session 51: the penalty after such a choice cost more tools than it
/// found).
pub(crate) fn mode_filter(
    hybrid: bool,
    source: ModeSource,
    semantic: Option<&SemanticMode>,
) -> ModeFilter {
    let weak = hybrid && matches!(source, ModeSource::Semantic | ModeSource::Default);
    let by_tools =
        matches!(source, ModeSource::Semantic) && semantic.is_some_and(|g| g.check.by_tools);
    match (weak, by_tools) {
        (false, _) => ModeFilter::Hard,
        (true, false) => ModeFilter::Soft,
        (true, true) => ModeFilter::SkillsOnly,
    }
}

/// The semantic step's look at the modes: the best mode, and whether it may decide.
pub(crate) struct SemanticMode {
    pub mode: usize,
    pub check: SemanticCheck,
    /// The share of the tools the default mode offers, when it is under [`CATCH_ALL_SHARE`]
    /// and the tools decided because of it.
    pub topic_default: Option<(String, f32)>,
}

impl SemanticMode {
    /// For `mode_detail`.
    pub(crate) fn detail(&self) -> String {
        let c = &self.check;
        // The question rule first: it decides even where a lead under the mode threshold
        // reached the margin.
        if let Some(q) = c.question.as_ref().filter(|_| c.decided) {
            let modes: Vec<String> = q.modes.iter().map(|(m, n)| format!("{m} {n}")).collect();
            return format!(
                "score {:.3}; the task asks a question, none of the default mode's {} examples does, and these modes' examples do ({}): the best of them decides",
                c.score,
                q.default_examples,
                modes.join(", ")
            );
        }
        match (&c.tools_favour, c.margin) {
            (_, Some(m)) if c.lead >= m => {
                format!("score {:.3}, lead {:.3} >= margin {m:.3}", c.score, c.lead)
            }
            (Some(e), _) if c.by_tools => match &self.topic_default {
                Some((default, share)) => format!(
                    "score {:.3}; the examples' lead {:.3} is unsure, the best tools ({}) favour this mode ({:.0}% of their votes), and the default mode {default} offers {:.0}% of the tools, one topic among the others: the tools decide, and keep their own order",
                    c.score,
                    c.lead,
                    e.voters.join(", "),
                    100.0 * e.share,
                    100.0 * share
                ),
                None => format!(
                    "score {:.3}; the examples' lead {:.3} is unsure, and the best tools ({}) favour this mode with {:.0}% of their votes: they decide, and keep their own order",
                    c.score,
                    c.lead,
                    e.voters.join(", "),
                    100.0 * e.share
                ),
            },
            (Some(e), _) => format!(
                "score {:.3}, lead {:.3}; the best tools ({}) favour the same mode ({:.0}% of their votes)",
                c.score,
                c.lead,
                e.voters.join(", "),
                100.0 * e.share
            ),
            _ => format!("score {:.3}, lead {:.3}", c.score, c.lead),
        }
    }
}

impl Router {
    pub(crate) fn semantic_mode(
        &self,
        embedding: &[f32],
        space: Space,
        min: f32,
        tools_favour: Option<(usize, ToolEvidence)>,
        question: bool,
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
        // Under the mode threshold the examples' scores alone say nothing; the question rule,
        // a signal of its own, may still choose among the modes whose examples ask questions.
        let below_min = best.iter().copied().fold(f32::NEG_INFINITY, f32::max) < min;
        // What ranks the modes: their centroids on an index whose margin was measured on them.
        let by_centroid = self.index.selection().is_some_and(|s| s.modes_by_centroid());
        let rank: Vec<f32> = if by_centroid {
            let norms = self.mode_centroids.norms(space);
            centroid_scores(&scratch.row_scores, &self.mode_row_owner, norms)
        } else {
            best.clone()
        };
        let mut order: Vec<usize> = (0..rank.len()).collect();
        order.sort_by(|&a, &b| rank[b].total_cmp(&rank[a]).then(a.cmp(&b)));
        let top = order[0];
        let score = rank[top];
        let rule = question.then(|| self.question_rule()).flatten();
        // The tools' mode, when nearly all of the best tools' votes go to it: a signal of its
        // own as well (the tools' gate opened, so the task is about the catalog).
        let tools_decide =
            tools_favour.as_ref().filter(|(_, e)| e.share >= TOOLS_DECIDE_SHARE).map(|(m, _)| *m);
        // A default mode that offers few of the tools is a topic like the others: whichever mode
        // the best tools favour decides before it.
        let topic_default = self
            .default_tool_share
            .filter(|&share| share < CATCH_ALL_SHARE)
            .map(|share| (meta.default_mode.clone(), share));
        let tools_before_default = tools_favour.as_ref().filter(|_| topic_default.is_some());
        if below_min && rule.is_none() && tools_decide.is_none() && tools_before_default.is_none() {
            return None;
        }
        // (An index with a selection section and no margin still reports what it saw.)
        let runner_up = order.get(1).map_or(f32::NEG_INFINITY, |&i| rank[i]);
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
                    Some(d) if d != top => score - rank[d],
                    _ => f32::INFINITY,
                };
                (lead_over_default, Some(margin))
            }
        };
        let agrees = tools_favour.as_ref().is_some_and(|(m, _)| *m == top);
        let mut decided = !below_min && (margin.is_some_and(|m| lead >= m) || agrees);
        let mut chosen = top;
        let mut by_tools = false;
        // Nearly all the best tools' votes outweigh an unsure look at a few examples a mode,
        // the question rule's reading of where questions go, and the default mode.
        if !decided && let Some(m) = tools_decide {
            (chosen, decided, by_tools) = (m, true, true);
        }
        let rule = rule.filter(|_| !decided);
        if let Some((rule, asks)) = &rule {
            // The best mode (by score) among those whose examples ask questions.
            if let Some(&m) = order.iter().find(|&&m| asks[m]) {
                chosen = m;
                decided = true;
            }
            debug_assert!(!rule.modes.is_empty());
        }
        let mut decided_for_topic = false;
        if !decided && let Some((m, _)) = tools_before_default {
            (chosen, decided, by_tools, decided_for_topic) = (*m, true, true, true);
        }
        let check = SemanticCheck {
            best: meta.modes[chosen].name.clone(),
            score: rank[chosen],
            lead: if lead.is_finite() { lead } else { 1.0 },
            margin,
            tools_favour: tools_favour.map(|(_, e)| e),
            decided,
            by_tools,
            question: rule.map(|(r, _)| r),
        };
        let topic_default = topic_default.filter(|_| decided_for_topic);
        Some(SemanticMode { mode: chosen, check, topic_default })
    }

    /// The question rule's view of the catalog, when it applies: the modes whose examples ask
    /// questions (and which modes those are, by index), provided the default mode has examples
    /// and none of them asks one. `None` on an index without the counts, with counts from other
    /// question rules, or when turned off.
    fn question_rule(&self) -> Option<(QuestionRule, Vec<bool>)> {
        if !self.config.question_modes {
            return None;
        }
        let counts = self.index.mode_questions()?;
        if counts.rules_version != switchyard_lexical::QUESTION_RULES_VERSION {
            return None;
        }
        let meta = self.index.meta();
        let default = meta.modes.iter().position(|m| m.name == meta.default_mode)?;
        let d = counts.modes.get(default)?;
        if d.examples == 0 || d.questions > 0 {
            return None;
        }
        let asks: Vec<bool> = counts.modes.iter().map(|c| c.questions > 0).collect();
        let modes: Vec<(String, u32)> = meta
            .modes
            .iter()
            .zip(&counts.modes)
            .filter(|(_, c)| c.questions > 0)
            .map(|(m, c)| (m.name.clone(), c.questions))
            .collect();
        (!modes.is_empty()).then_some((QuestionRule { modes, default_examples: d.examples }, asks))
    }

    /// The mode the task's best tools favour (see [`ToolEvidence`]), from the tools' fused
    /// scores for this task; `None` when no mode out-votes the others.
    pub(crate) fn tool_mode_evidence(
        &self,
        table: &ItemTable,
        fused: &[Fused],
    ) -> Option<(usize, ToolEvidence)> {
        let meta = self.index.meta();
        let n_modes = meta.modes.len();
        if n_modes < 2 || fused.is_empty() {
            return None;
        }
        let mut order: Vec<usize> = (0..fused.len()).collect();
        order.sort_by(|&a, &b| fused[b].score.total_cmp(&fused[a].score).then(a.cmp(&b)));
        order.truncate(VOTING_TOOLS);
        let best = fused[order[0]].score;
        let mut votes = vec![0.0f32; n_modes];
        for &i in &order {
            let weight = ((fused[i].score - best) / VOTE_TEMPERATURE).exp();
            match &table.modes[i] {
                Some(ms) if !ms.is_empty() => {
                    for &m in ms {
                        votes[m] += weight / ms.len() as f32;
                    }
                }
                _ => votes.iter_mut().for_each(|v| *v += weight / n_modes as f32),
            }
        }
        let mut ranked: Vec<usize> = (0..n_modes).collect();
        ranked.sort_by(|&a, &b| votes[b].total_cmp(&votes[a]).then(a.cmp(&b)));
        let (top, second) = (ranked[0], ranked[1]);
        let total: f32 = votes.iter().sum();
        // (Votes are finite and non-negative: `<=` also catches a tie.)
        if votes[top] <= VOTE_LEAD * votes[second] || total <= 0.0 {
            return None;
        }
        let items = &meta.tools;
        Some((
            top,
            ToolEvidence {
                mode: meta.modes[top].name.clone(),
                share: votes[top] / total,
                voters: order.iter().map(|&i| items[i].name.clone()).collect(),
            },
        ))
    }

    /// The mode a context hint selects: from the index's selection section (declared in the
    /// modes manifest); older indexes map interactive -> plan and git_changes -> act.
    pub(crate) fn hint_mode(&self, options: &RouteOptions) -> Option<(String, String)> {
        let on = |hint: &str| match hint {
            "interactive" => options.interactive,
            "git_changes" => options.git_changes,
            _ => false,
        };
        let modes = &self.index.meta().modes;
        match self.index.selection() {
            Some(sel) => sel.hints.iter().find(|(h, _)| on(h)).map(|(h, m)| (h.clone(), m.clone())),
            None => [("interactive", "plan"), ("git_changes", "act")]
                .into_iter()
                .find(|(h, m)| on(h) && modes.iter().any(|x| x.name == *m))
                .map(|(h, m)| (h.to_string(), m.to_string())),
        }
    }

    /// Chit-chat: a known greeting or thanks, or a very short text with no task signal.
    pub(crate) fn is_chitchat(&self, task: &str, lower: &str, has_keyword: bool) -> bool {
        let trimmed: String = lower.trim().trim_matches(|c: char| !c.is_alphanumeric()).to_string();
        if trimmed.is_empty() {
            return true;
        }
        if CHITCHAT.contains(&trimmed.as_str()) {
            return true;
        }
        // A CJK character carries about a word ("运行单元测试" is "run the unit tests"), so it
        // weighs as three letters here.
        let weight: usize = task.trim().chars().map(|c| if is_cjk(c) { 3 } else { 1 }).sum();
        let short = weight < 10;
        if !short || has_keyword {
            return false;
        }
        // A short text naming a tool ("git status", "ls src") is a task.
        let ws = words(task);
        let names_a_tool = self
            .tools
            .words
            .iter()
            .any(|tw| ws.iter().any(|(_, w)| w.len() >= 3 && tw.contains(w)));
        !names_a_tool
    }

    /// The earliest keyword match across modes; ties go to the mode listed first.
    pub(crate) fn keyword_mode(
        &self,
        lower: &str,
        task_words: &[(usize, String)],
    ) -> Option<(usize, String)> {
        let mut best: Option<(usize, usize, String)> = None;
        for (m, kws) in self.mode_keywords.iter().enumerate() {
            for k in kws {
                if let Some(at) = k.find(lower, task_words)
                    && best.as_ref().is_none_or(|b| at < b.0)
                {
                    best = Some((at, m, k.text.clone()));
                }
            }
        }
        best.map(|(_, m, k)| (m, k))
    }
}

const CHITCHAT: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "yo",
    "thanks",
    "thank you",
    "thx",
    "ty",
    "ok",
    "okay",
    "cool",
    "nice",
    "great",
    "bye",
    "good morning",
    "good night",
    "good evening",
    "how are you",
    "olá",
    "oi",
    "obrigado",
    "obrigada",
    "valeu",
    "bom dia",
    "boa tarde",
    "tchau",
    "merci",
    "bonjour",
    "salut",
    "bonsoir",
    "hola",
    "gracias",
    "buenos días",
    "adiós",
    "danke",
    "hallo",
    "tschüss",
    "ciao",
    "grazie",
    "buongiorno",
    "こんにちは",
    "ありがとう",
    "你好",
    "谢谢",
];

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF)
}
