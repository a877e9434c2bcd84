//! Thinking modes: which scaffold an agent should think a problem through with.
//!
//! The order, first that decides wins:
//! 1. **explicit**: the caller names a mode (`auto` or none lets the rules decide);
//! 2. **keywords**: each mode's keyword rules (whole words, any language, a trailing `*` for
//!    inflections); the mode with the most distinct keywords in the problem wins, and a tie goes
//!    to the mode matched first in the text (the request's main verb usually comes first);
//! 3. **semantic**: the problem's embedding against each mode's centroid (the normalised mean of
//!    its card's and examples' rows; on indexes from builder versions before
//!    [`switchyard_format::THINKING_CENTROIDS_SINCE`], its best row); it decides only when the
//!    best mode leads the runner-up by the margin measured at build time in
//!    leave-one-out over the examples (the same safety rule as mode inference); an index whose
//!    examples could not support that stores no margin, and this step never decides;
//! 4. **default**: the mode the manifest marks `default = true` (council in the default catalog).
//!
//! Only step 3 needs the embedding, and it takes it from the router's task cache: inside an
//! assembly the task was embedded once already, so thinking costs no model run.

use crate::keywords::{Keyword, words};
use crate::{Result, RouteError, Router, kernels};
use serde::Serialize;
use switchyard_format::{MatrixView, SectionKind, ThinkingMeta};

/// What chose the thinking mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThinkingSource {
    /// The caller named it.
    Explicit,
    /// Keyword rules.
    Keyword,
    /// The semantic fallback, with a lead over its margin.
    Semantic,
    /// Nothing else decided.
    Default,
}

/// The keywords of one mode found in the problem.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThinkingKeywords {
    /// The mode.
    pub mode: String,
    /// Its distinct keywords found, as written in the manifest.
    pub keywords: Vec<String>,
    /// Byte offset of its first match in the problem.
    pub first_at: usize,
}

/// What the semantic fallback saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThinkingSemantic {
    /// The best mode by cosine.
    pub best: String,
    /// Its score.
    pub score: f32,
    /// Its lead over the runner-up.
    pub lead: f32,
    /// The lead it needed (`None`: the index's examples support no margin).
    pub margin: Option<f32>,
    /// Whether it decided.
    pub decided: bool,
}

/// The choice of a thinking mode and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThinkingDecision {
    /// The chosen mode.
    pub mode: String,
    /// What chose it.
    pub source: ThinkingSource,
    /// One line saying why.
    pub detail: String,
    /// Keywords found, per mode, most first.
    pub keywords: Vec<ThinkingKeywords>,
    /// The semantic fallback's look, when it was consulted.
    pub semantic: Option<ThinkingSemantic>,
    /// The chosen scaffold's Success Criteria.
    pub criteria: Vec<String>,
    /// Model runs this decision made (0 when the rules decided or the embedding was cached).
    pub embedding_calls: u32,
}

/// The compiled keyword rules of an index's thinking modes.
#[derive(Debug, Default)]
pub(crate) struct ThinkingRules {
    keywords: Vec<Vec<Keyword>>,
    row_owner: Vec<u32>,
    /// Per mode, the length of the sum of its rows ([`crate::mode::sum_norms`]).
    centroid_norms: Vec<f32>,
}

impl ThinkingRules {
    pub(crate) fn new(meta: Option<&ThinkingMeta>, rows: MatrixView<'_>) -> Self {
        let Some(meta) = meta else { return Self::default() };
        let mut row_owner = Vec::new();
        for (i, m) in meta.modes.iter().enumerate() {
            row_owner.extend(std::iter::repeat_n(i as u32, m.row_count as usize));
        }
        Self {
            keywords: meta
                .modes
                .iter()
                .map(|m| m.keywords.iter().map(|k| Keyword::new(k)).collect())
                .collect(),
            centroid_norms: crate::mode::sum_norms(rows, &row_owner, meta.modes.len()),
            row_owner,
        }
    }
}

impl Router {
    /// The index's thinking modes, or an error saying how to add them.
    pub fn thinking(&self) -> Result<&ThinkingMeta> {
        self.index
            .thinking()
            .ok_or_else(|| RouteError::NoThinkingModes { path: self.index.path().to_path_buf() })
    }

    /// Chooses the thinking mode for a problem (see the module docs for the order).
    /// `requested` names a mode; `None` or `"auto"` lets the rules decide.
    pub fn think(&self, problem: &str, requested: Option<&str>) -> Result<ThinkingDecision> {
        let meta = self.thinking()?;
        if problem.trim().is_empty() {
            return Err(RouteError::Config {
                field: "problem",
                message: "is empty; pass the problem to think about".into(),
            });
        }
        let position = |name: &str| meta.modes.iter().position(|m| m.name == name);
        let decide = |m: usize, source, detail: String, keywords, semantic, calls| {
            Ok(ThinkingDecision {
                mode: meta.modes[m].name.clone(),
                source,
                detail,
                keywords,
                semantic,
                criteria: meta.modes[m].criteria.clone(),
                embedding_calls: calls,
            })
        };
        let keywords = self.thinking_keywords(problem);
        if let Some(name) = requested.filter(|r| !r.eq_ignore_ascii_case("auto")) {
            let Some(m) = position(name) else {
                return Err(RouteError::UnknownThinkingMode {
                    path: self.index.path().to_path_buf(),
                    mode: name.to_string(),
                    known: meta
                        .modes
                        .iter()
                        .map(|m| m.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            };
            return decide(m, ThinkingSource::Explicit, "asked for".into(), keywords, None, 0);
        }
        if let Some(top) = keywords.first() {
            let detail = match keywords.get(1) {
                Some(next) if next.keywords.len() == top.keywords.len() => format!(
                    "keywords {:?}; tied with {} ({:?}), matched first",
                    top.keywords, next.mode, next.keywords
                ),
                _ => format!("keywords {:?}", top.keywords),
            };
            let m = position(&top.mode).unwrap_or(0);
            return decide(m, ThinkingSource::Keyword, detail, keywords, None, 0);
        }
        let default = position(&meta.default_mode).unwrap_or(0);
        let Some(margin) = meta.calibration.semantic_margin.filter(|_| self.config.semantic_modes)
        else {
            let why =
                meta.calibration.note.clone().unwrap_or_else(|| "semantic fallback off".into());
            return decide(
                default,
                ThinkingSource::Default,
                format!("no keyword matched; {why}"),
                keywords,
                None,
                0,
            );
        };
        let calls = u32::from(self.peek_cache(problem).is_none());
        let embedding = self.task_embedding(problem)?;
        let semantic = self.thinking_semantic(meta, &embedding, margin);
        let (m, source, detail) = if semantic.decided {
            let m = position(&semantic.best).unwrap_or(default);
            let detail = format!(
                "score {:.3}, lead {:.3} >= margin {margin:.3}",
                semantic.score, semantic.lead
            );
            (m, ThinkingSource::Semantic, detail)
        } else {
            let detail = format!(
                "no keyword matched; the best mode by meaning, {}, leads by {:.3} < margin {margin:.3}",
                semantic.best, semantic.lead
            );
            (default, ThinkingSource::Default, detail)
        };
        decide(m, source, detail, keywords, Some(semantic), calls)
    }

    /// The chosen mode's scaffold with the problem filled in.
    pub fn thinking_scaffold(&self, decision: &ThinkingDecision, problem: &str) -> Result<String> {
        let meta = self.thinking()?;
        let mode = meta.modes.iter().find(|m| m.name == decision.mode).ok_or_else(|| {
            RouteError::UnknownThinkingMode {
                path: self.index.path().to_path_buf(),
                mode: decision.mode.clone(),
                known: meta.modes.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", "),
            }
        })?;
        Ok(mode.render(problem))
    }

    /// Keyword hits per mode: most distinct keywords first, then the earliest first match,
    /// then manifest order.
    fn thinking_keywords(&self, problem: &str) -> Vec<ThinkingKeywords> {
        let Some(meta) = self.index.thinking() else { return Vec::new() };
        let lower = problem.to_lowercase();
        let problem_words = words(problem);
        let mut hits: Vec<(usize, ThinkingKeywords)> = Vec::new();
        for (m, rules) in self.thinking_rules.keywords.iter().enumerate() {
            let mut found: Vec<String> = Vec::new();
            let mut first_at = usize::MAX;
            for k in rules {
                if let Some(at) = k.find(&lower, &problem_words)
                    && !found.contains(&k.text)
                {
                    found.push(k.text.clone());
                    first_at = first_at.min(at);
                }
            }
            if !found.is_empty() {
                let mode = meta.modes[m].name.clone();
                hits.push((m, ThinkingKeywords { mode, keywords: found, first_at }));
            }
        }
        hits.sort_by(|(ma, a), (mb, b)| {
            b.keywords
                .len()
                .cmp(&a.keywords.len())
                .then(a.first_at.cmp(&b.first_at))
                .then(ma.cmp(mb))
        });
        hits.into_iter().map(|(_, h)| h).collect()
    }

    fn thinking_semantic(
        &self,
        meta: &ThinkingMeta,
        embedding: &[f32],
        margin: f32,
    ) -> ThinkingSemantic {
        let rows = self.index.matrix(SectionKind::ThinkingRows);
        let mut scores = Vec::new();
        kernels::scores_into(&rows, embedding, &mut scores);
        let rules = &self.thinking_rules;
        let by_centroid = self.index.selection().is_some_and(|s| s.thinking_by_centroid());
        let best = if by_centroid {
            crate::mode::centroid_scores(&scores, &rules.row_owner, &rules.centroid_norms)
        } else {
            let mut best = vec![f32::NEG_INFINITY; meta.modes.len()];
            for (&s, &m) in scores.iter().zip(&rules.row_owner) {
                best[m as usize] = best[m as usize].max(s);
            }
            best
        };
        let mut order: Vec<usize> = (0..best.len()).collect();
        order.sort_by(|&a, &b| best[b].total_cmp(&best[a]).then(a.cmp(&b)));
        let top = order[0];
        let lead = order.get(1).map_or(1.0, |&r| best[top] - best[r]);
        ThinkingSemantic {
            best: meta.modes[top].name.clone(),
            score: best[top],
            lead,
            margin: Some(margin),
            decided: lead >= margin,
        }
    }
}
