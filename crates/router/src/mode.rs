//! Mode inference after an explicit mode: context hints (mapped to modes by the manifest),
//! keyword rules, the chit-chat short cut, and the semantic fallback, which decides only when
//! confident.
//!
//! On an index with a selection section, the best mode must lead the runner-up by the margin
//! measured at build time in leave-one-out over the catalog's own mode examples (where that
//! lead reached 90% precision); an index whose examples could not support that stores no
//! margin, and the default mode decides. Older indexes keep the earlier rule (the winner must
//! beat the default mode by a tenth of the catalog's score spread).

use crate::decision::SemanticCheck;
use crate::kernels;
use crate::keywords::words;
use crate::router::{RouteOptions, Router, Scratch, Space};
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
