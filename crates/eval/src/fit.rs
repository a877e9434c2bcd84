//! `switchyard fit`: learns an index's selection settings (lexical weight, late-interaction
//! share, server weight, gate, semantic mode margin) from labelled cases, cross-validated, and
//! writes them into the index or a copy.
//!
//! What is learned, and how (each on the training folds only):
//! - **Lexical weight and late share**: the pair of the grids with the best tool recall@3 (ties
//!   go to the pair nearest the index's); the late share only on an index with a `late`
//!   section. Then, on an index whose tools come from several MCP servers, the server weight
//!   of its grid with the best tool recall@3 at that pair (ties to the index's).
//! - **Tool gate**: lowered, never raised, to the 3rd percentile of the cases' peaks (the best
//!   tool's standard score among all tools), so tasks like the cases are not shut out; with negative cases (`"tools": []`)
//!   the gate that best separates the two sides while keeping 95% of the positives.
//! - **Mode margin**: over the cases the semantic step reaches (no explicit mode, hint or
//!   keyword), the margin with the best mode accuracy, the default mode answering below it;
//!   ties go to the larger margin (the safer one).
//! - **Off-topic margin** (indexes with an `off_topic` section): first raised, if need be, until
//!   at least 99% of the cases with tools stay open; then, with unrelated tasks (cases with
//!   `"tools": []`, or the `--off-topic` file), lowered to the candidate that leaves the most of
//!   them without a tool (by the gate or the check) while keeping those 99% open; ties go to the
//!   margin nearest the index's. Without unrelated tasks it is never lowered. The `--off-topic`
//!   tasks teach this margin only (not the gate); on an index without the section they are
//!   only measured.
//!
//! The report gives every metric with the index's settings and with fitted ones, both measured
//! on held-out folds (k-fold, cases split by position), so a fit that only memorises its cases
//! shows no gain there. The written settings are then fitted on all cases.

use crate::cases::{CaseRow, given_no_tools};
use crate::fit_groups::{FitGroup, GROUPS, GroupReport};
use crate::metrics::round4;
use crate::{EvalError, Progress, Result, embedding, jsonl};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use switchyard_embed::Embedder;
use switchyard_format::{Index, IndexWriter, OpenOptions};
use switchyard_router::{
    CATCH_ALL_SHARE, Decision, ModeSource, RouteOptions, Router, RouterBuilder, Scratch,
    TOOLS_DECIDE_SHARE,
};

/// Weights tried (the build-time grid).
const WEIGHTS: [f32; 8] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7];
/// Late-interaction shares tried (on indexes with a `late` section).
const LATE_SHARES: [f32; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];
/// Server weights tried (on indexes whose tools come from several MCP servers).
const SERVER_WEIGHTS: [f32; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];

/// What to fit.
#[derive(Debug, Clone)]
pub struct FitConfig {
    /// The index to fit.
    pub index: PathBuf,
    /// Labelled cases (the `eval cases` schema; `"tools": []` marks a task that needs none).
    pub cases: PathBuf,
    /// Tasks no tool of the catalog serves (JSONL: `task`, `lang`): unrelated tasks for the
    /// off-topic margin, with no mode to score.
    pub off_topic: Option<PathBuf>,
    /// Where to write the fitted index (the input itself to update it in place, atomically).
    pub out: PathBuf,
    /// Cross-validation folds (at least 2).
    pub folds: usize,
}

/// The settings `fit` learns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FitParams {
    /// Lexical weight of tools and skills.
    pub lexical_weight: f32,
    /// Tool gate (standard-score scale; skills keep theirs).
    pub gate_z: f32,
    /// Semantic mode margin (`None`: the fallback is off).
    pub mode_margin: Option<f32>,
    /// Late-interaction share of the dense score (`None`: the index has no `late` section).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub late_share: Option<f32>,
    /// Share of a tool's MCP server's lead added to it (`None`: the index's tools come from
    /// fewer than two servers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_weight: Option<f32>,
    /// Off-topic margin (`None`: the index has no `off_topic` section).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_topic_margin: Option<f32>,
}

/// Metrics of one setting over some cases.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FitMetrics {
    /// Cases measured.
    pub cases: usize,
    /// Of them, cases with tools (what tool recall is over).
    pub tool_cases: usize,
    /// Of them, cases with skills (what skill recall is over).
    pub skill_cases: usize,
    /// Of them, cases that expect a mode (what mode accuracy is over; none on a catalog
    /// without modes).
    pub mode_cases: usize,
    /// Tool recall@3 over cases with tools.
    pub tool_recall_at_3: f64,
    /// Skill recall@3 over cases with skills.
    pub skill_recall_at_3: f64,
    /// Mode accuracy (over the cases with a mode: not the `--off-topic` tasks).
    pub mode_accuracy: f64,
    /// Share of the unrelated tasks (cases without tools, `--off-topic` tasks) that got a tool
    /// by score, beyond their mode's base tools (`None` without such tasks).
    pub no_tool_selected_rate: Option<f64>,
    /// Share of the cases with tools that the off-topic check closed (`None` on an index
    /// without an `off_topic` section).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_closed_off_topic_rate: Option<f64>,
}

/// What `fit` did.
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    /// The index read.
    pub index: PathBuf,
    /// The index written.
    pub out: PathBuf,
    /// The index's settings before.
    pub before: FitParams,
    /// The settings fitted on all cases, before the held-out check.
    pub proposed: FitParams,
    /// The settings written to `out`: the proposed ones of the groups the held-out folds kept,
    /// the index's for the others.
    pub after: FitParams,
    /// Held-out metrics with the index's settings.
    pub cross_validated_before: FitMetrics,
    /// Held-out metrics with the kept groups fitted on the other folds.
    pub cross_validated_after: FitMetrics,
    /// Each group's held-out metrics and whether it was kept.
    pub groups: Vec<GroupReport>,
    /// Folds used.
    pub folds: usize,
}

/// One case, embedded, with its labels.
struct Case<'a> {
    row: &'a CaseRow,
    /// Its place in the fitter's embeddings.
    at: usize,
    /// A task from the `--off-topic` file: it has no mode to score.
    unrelated: bool,
}

impl Case<'_> {
    fn needs_no_tool(&self) -> bool {
        self.unrelated || self.row.tools.is_empty()
    }
}

/// How far the task's best general topic led its best card (`None`: no check ran).
fn off_topic_lead(d: &Decision) -> Option<f32> {
    d.off_topic.as_ref().map(|c| c.topic_score - c.best_item_score)
}

/// Share of the cases with tools that the off-topic check may close (99% stay open).
const OPEN_REAL_SHARE: f64 = 0.99;
/// A margin never ties a lead exactly: placed this far above the case it keeps open.
const ABOVE: f32 = 1e-4;
/// A margin the check never reaches (leads are differences of two cosines).
const NEVER: f32 = 2.0;

fn recall(ranked: &[&str], gold: &[String], k: usize) -> f64 {
    gold.iter().filter(|g| ranked.iter().take(k).any(|r| r == g)).count() as f64
        / gold.len().max(1) as f64
}

fn ranked(items: &[switchyard_router::Selected]) -> Vec<&str> {
    let mut v: Vec<&switchyard_router::Selected> = items.iter().collect();
    v.sort_by(|a, b| b.rank_score().total_cmp(&a.rank_score()).then_with(|| a.name.cmp(&b.name)));
    v.into_iter().map(|s| s.name.as_str()).collect()
}

struct Fitter<'a> {
    path: &'a std::path::Path,
    embedder: Arc<dyn Embedder>,
    default_mode: String,
    /// Whether the default mode offers under `CATCH_ALL_SHARE` of the tools, so that the best
    /// tools' mode decides an unsure task before it, by any lead.
    topic_default: bool,
    embedded: &'a embedding::TaskEmbeddings,
}

impl Fitter<'_> {
    fn router(&self, p: &FitParams) -> Result<Router> {
        Ok(RouterBuilder::new(self.path)
            .lexical_weight(Some(p.lexical_weight))
            .late_share(p.late_share)
            .server_weight(p.server_weight)
            .gate_z(Some(p.gate_z))
            .semantic_margin(Some(p.mode_margin.unwrap_or(f32::INFINITY)))
            .off_topic_margin(p.off_topic_margin)
            .cascade(false)
            .build(Arc::clone(&self.embedder))?)
    }

    fn decide(&self, router: &Router, cases: &[&Case<'_>]) -> Result<Vec<Decision>> {
        let mut scratch = Scratch::default();
        cases
            .iter()
            .map(|c| {
                self.embedded.prime(router, c.at, &c.row.task);
                Ok(router.route_with(&c.row.task, &RouteOptions::default(), &mut scratch)?)
            })
            .collect()
    }

    fn metrics(&self, p: &FitParams, cases: &[&Case<'_>]) -> Result<FitMetrics> {
        let decisions = self.decide(&self.router(p)?, cases)?;
        let (mut tools, mut n_tools, mut skills, mut n_skills) = (0.0, 0, 0.0, 0);
        let (mut modes, mut n_modes, mut real_closed) = (0, 0, 0);
        let (mut none, mut none_selected) = (0usize, 0usize);
        for (c, d) in cases.iter().zip(&decisions) {
            if c.needs_no_tool() {
                none += 1;
                none_selected += !given_no_tools(d) as usize;
            } else {
                n_tools += 1;
                tools += recall(&ranked(&d.tools), &c.row.tools, 3);
                real_closed += d.off_topic.as_ref().is_some_and(|o| o.closed) as usize;
            }
            if !c.row.skills.is_empty() {
                n_skills += 1;
                skills += recall(&ranked(&d.skills), &c.row.skills, 3);
            }
            if let Some(right) = c.row.mode_is(&d.mode).filter(|_| !c.unrelated) {
                n_modes += 1;
                modes += right as usize;
            }
        }
        Ok(FitMetrics {
            cases: cases.len(),
            tool_cases: n_tools,
            skill_cases: n_skills,
            mode_cases: n_modes,
            tool_recall_at_3: round4(tools / n_tools.max(1) as f64),
            skill_recall_at_3: round4(skills / n_skills.max(1) as f64),
            mode_accuracy: round4(modes as f64 / n_modes.max(1) as f64),
            no_tool_selected_rate: (none > 0).then(|| round4(none_selected as f64 / none as f64)),
            real_closed_off_topic_rate: p
                .off_topic_margin
                .map(|_| round4(real_closed as f64 / n_tools.max(1) as f64)),
        })
    }

    /// Fits the settings on `cases`, starting from `start`.
    fn fit(&self, start: &FitParams, cases: &[&Case<'_>]) -> Result<FitParams> {
        // Lexical weight and late share: best tool recall@3, ranked without a gate.
        let shares: Vec<Option<f32>> = match start.late_share {
            Some(_) => LATE_SHARES.iter().map(|&b| Some(b)).collect(),
            None => vec![None],
        };
        let distance = |w: f32, b: Option<f32>| {
            (w - start.lexical_weight).abs()
                + b.zip(start.late_share).map_or(0.0, |(b, s)| (b - s).abs())
        };
        let mut best = (f64::MIN, start.lexical_weight, start.late_share);
        for &w in &WEIGHTS {
            for &b in &shares {
                let p = FitParams {
                    lexical_weight: w,
                    late_share: b,
                    gate_z: f32::NEG_INFINITY,
                    ..*start
                };
                let r = self.metrics(&p, cases)?.tool_recall_at_3;
                let closer = distance(w, b) < distance(best.1, best.2);
                if r > best.0 + 1e-9 || ((r - best.0).abs() <= 1e-9 && closer) {
                    best = (r, w, b);
                }
            }
        }
        let (lexical_weight, late_share) = (best.1, best.2);
        let server_weight = match start.server_weight {
            Some(s) => Some(self.fit_server_weight(
                &FitParams { lexical_weight, late_share, gate_z: f32::NEG_INFINITY, ..*start },
                s,
                cases,
            )?),
            None => None,
        };

        // Gate: from the peaks (best standard scores) the cases reach.
        let probe = FitParams { lexical_weight, late_share, server_weight, ..*start };
        let decisions = self.decide(&self.router(&probe)?, cases)?;
        let best_z = |d: &Decision| d.tool_gate.as_ref().map_or(0.0, |g| g.best_z);
        let mut pos: Vec<f32> = Vec::new();
        let mut neg: Vec<f32> = Vec::new();
        // The `--off-topic` tasks teach the off-topic margin alone: raising the gate to shut
        // them out cost 4 points of held-out tool recall@3 on both development catalogs.
        for (c, d) in cases.iter().zip(&decisions).filter(|(c, _)| !c.unrelated) {
            if c.needs_no_tool() { neg.push(best_z(d)) } else { pos.push(best_z(d)) }
        }
        pos.sort_by(f32::total_cmp);
        let gate_z = if pos.is_empty() {
            start.gate_z
        } else if neg.is_empty() {
            let q = pos[((pos.len() - 1) as f32 * 0.03).round() as usize];
            start.gate_z.min(q - 1e-4)
        } else {
            // The candidate with the best TPR - FPR among those keeping 95% of the positives.
            let mut best = (f64::MIN, start.gate_z);
            for &g in pos.iter().chain(&neg) {
                let tpr = pos.iter().filter(|&&z| z >= g).count() as f64 / pos.len() as f64;
                let fpr = neg.iter().filter(|&&z| z >= g).count() as f64 / neg.len() as f64;
                if tpr >= 0.95 && tpr - fpr > best.0 {
                    best = (tpr - fpr, g);
                }
            }
            best.1
        };

        // Mode margin: over the cases the semantic step reaches.
        let open = FitParams {
            lexical_weight,
            gate_z,
            mode_margin: Some(0.0),
            late_share,
            server_weight,
            ..*start
        };
        let decisions = self.decide(&self.router(&open)?, cases)?;
        // Lead, guess right, default right, guess taken anyway (the best tools agree), and
        // whether the mode the best tools favour is right where they decide under the margin:
        // with nearly all their votes, or with any lead when the default mode is a topic of its
        // own (the question rule, which decides between the two, is not modelled).
        let mut seen: Vec<(f32, bool, bool, bool, Option<bool>)> = Vec::new();
        for (d, expected) in cases
            .iter()
            .zip(&decisions)
            .filter(|(c, _)| !c.unrelated)
            .filter_map(|(c, d)| Some((d, c.row.mode.as_deref()?)))
        {
            if let Some(s) = &d.semantic_mode
                && matches!(d.mode_source, ModeSource::Semantic | ModeSource::Default)
            {
                let agreed = s.tools_favour.as_ref().is_some_and(|e| e.mode == s.best);
                let tools = s
                    .tools_favour
                    .as_ref()
                    .filter(|e| e.share >= TOOLS_DECIDE_SHARE || self.topic_default)
                    .map(|e| e.mode == expected);
                let (guess, default) = (s.best == expected, self.default_mode == expected);
                seen.push((s.lead, guess, default, agreed, tools));
            }
        }
        let accuracy = |m: f32| {
            seen.iter()
                .filter(
                    |&&(lead, g, d, agreed, tools)| {
                        if lead >= m || agreed { g } else { tools.unwrap_or(d) }
                    },
                )
                .count()
        };
        let mut mode_margin = None;
        let mut best_acc = accuracy(f32::INFINITY);
        let mut leads: Vec<f32> = seen.iter().map(|s| s.0).collect();
        leads.sort_by(|a, b| b.total_cmp(a)); // larger margins first: ties keep the safer one
        for m in leads {
            let a = accuracy(m);
            if a > best_acc {
                best_acc = a;
                mode_margin = Some(m);
            }
        }
        let fitted =
            FitParams { lexical_weight, gate_z, mode_margin, late_share, server_weight, ..*start };
        let off_topic_margin = match start.off_topic_margin {
            Some(m) => Some(self.fit_off_topic_margin(&fitted, m, cases)?),
            None => None,
        };
        Ok(FitParams { off_topic_margin, ..fitted })
    }

    /// The server weight of the grid with the best tool recall@3 at settings `p`, ties to the
    /// one nearest the index's `start`.
    fn fit_server_weight(&self, p: &FitParams, start: f32, cases: &[&Case<'_>]) -> Result<f32> {
        let mut best = (f64::MIN, start);
        for &s in &SERVER_WEIGHTS {
            let r =
                self.metrics(&FitParams { server_weight: Some(s), ..*p }, cases)?.tool_recall_at_3;
            let closer = (s - start).abs() < (best.1 - start).abs();
            if r > best.0 + 1e-9 || ((r - best.0).abs() <= 1e-9 && closer) {
                best = (r, s);
            }
        }
        Ok(best.1)
    }

    /// The off-topic margin for settings `p` (see the module's documentation), from the index's
    /// margin `start`.
    fn fit_off_topic_margin(&self, p: &FitParams, start: f32, cases: &[&Case<'_>]) -> Result<f32> {
        // The check's lead on every case, and whether the gate alone leaves it without a tool.
        let probe = FitParams { off_topic_margin: Some(NEVER), ..*p };
        let decisions = self.decide(&self.router(&probe)?, cases)?;
        let mut real: Vec<f32> = Vec::new();
        let mut unrelated: Vec<(f32, bool)> = Vec::new();
        for (c, d) in cases.iter().zip(&decisions) {
            let Some(lead) = off_topic_lead(d) else { continue };
            if c.needs_no_tool() {
                unrelated.push((lead, given_no_tools(d)));
            } else {
                real.push(lead);
            }
        }
        // The lowest margin that keeps 99% of the real tasks open: above the lead of the first
        // one it may not close.
        real.sort_by(|a, b| b.total_cmp(a));
        let may_close = ((1.0 - OPEN_REAL_SHARE) * real.len() as f64).floor() as usize;
        let lowest = real.get(may_close).map_or(f32::NEG_INFINITY, |&l| l + ABOVE);
        let given_none =
            |m: f32| unrelated.iter().filter(|&&(lead, gated)| gated || lead >= m).count();
        let candidates = std::iter::once(start.max(lowest))
            .chain(unrelated.iter().map(|u| u.0).filter(|&l| l >= lowest));
        let mut best = (given_none(start.max(lowest)), start.max(lowest));
        for m in candidates {
            let n = given_none(m);
            if n > best.0 || (n == best.0 && (m - start).abs() < (best.1 - start).abs()) {
                best = (n, m);
            }
        }
        Ok(best.1.clamp(-NEVER, NEVER))
    }
}

/// Runs `fit`: cross-validated report, then the fitted settings written to `cfg.out`.
pub fn fit(
    cfg: &FitConfig,
    embedder: Arc<dyn Embedder>,
    progress: Progress<'_>,
) -> Result<FitReport> {
    if cfg.folds < 2 {
        return Err(EvalError::Usage("--folds: use at least 2 folds".into()));
    }
    let index = Index::open(&cfg.index, &OpenOptions::new())?;
    let Some(selection) = index.selection().cloned() else {
        return Err(EvalError::Usage(format!(
            "{}: the index has no selection section (built before format 3); rebuild it with switchyard build-index",
            cfg.index.display()
        )));
    };
    let mut rows: Vec<CaseRow> = jsonl::read_jsonl(&cfg.cases)?;
    let labelled = rows.len();
    if let Some(path) = &cfg.off_topic {
        let unrelated: Vec<crate::cases::OffTopicRow> = jsonl::read_jsonl(path)?;
        rows.extend(unrelated.into_iter().map(|r| CaseRow {
            task: r.task,
            lang: r.lang,
            tools: Vec::new(),
            skills: Vec::new(),
            mode: None,
            group: None,
        }));
    }
    if rows.len() < cfg.folds * 2 {
        return Err(EvalError::Usage(format!(
            "{}: {} cases cannot fill {} folds; label at least {} tasks",
            cfg.cases.display(),
            rows.len(),
            cfg.folds,
            cfg.folds * 2
        )));
    }
    let texts: Vec<&str> = rows.iter().map(|r| r.task.as_str()).collect();
    let late = index.late().is_some();
    let embedded =
        embedding::TaskEmbeddings::new(embedder.as_ref(), &texts, late, "embed cases", progress)?;
    let cases: Vec<Case<'_>> = rows
        .iter()
        .enumerate()
        .map(|(at, row)| Case { row, at, unrelated: at >= labelled })
        .collect();
    let fitter = Fitter {
        path: &cfg.index,
        embedder: Arc::clone(&embedder),
        default_mode: index.meta().default_mode.clone(),
        topic_default: index
            .meta()
            .default_mode_tool_share()
            .is_some_and(|share| share < CATCH_ALL_SHARE),
        embedded: &embedded,
    };
    let before = FitParams {
        lexical_weight: selection.tools.lexical_weight,
        gate_z: selection.tools.gate_z,
        mode_margin: selection.mode.semantic_margin,
        late_share: index.late().map(|l| l.blend),
        server_weight: (!selection.servers.names.is_empty()).then_some(selection.servers.weight),
        off_topic_margin: index.off_topic().map(|o| o.margin),
    };

    // Held-out metrics, fold by fold, merged by weighting each fold by its cases: the index's
    // settings, then each group fitted on the other folds alone.
    let mut held_before: Vec<(FitMetrics, usize)> = Vec::new();
    let mut held_group: Vec<Vec<(FitMetrics, usize)>> = vec![Vec::new(); GROUPS.len()];
    let mut per_fold: Vec<(FitParams, Vec<&Case<'_>>)> = Vec::new();
    for f in 0..cfg.folds {
        let train: Vec<&Case<'_>> =
            cases.iter().enumerate().filter(|(i, _)| i % cfg.folds != f).map(|(_, c)| c).collect();
        let test: Vec<&Case<'_>> =
            cases.iter().enumerate().filter(|(i, _)| i % cfg.folds == f).map(|(_, c)| c).collect();
        let fitted = fitter.fit(&before, &train)?;
        held_before.push((fitter.metrics(&before, &test)?, test.len()));
        for (g, group) in GROUPS.iter().enumerate() {
            let p = group.apply(&before, &fitted);
            let m =
                if p == before { held_before[f].0.clone() } else { fitter.metrics(&p, &test)? };
            held_group[g].push((m, test.len()));
        }
        per_fold.push((fitted, test));
        progress("cross-validate", f + 1, cfg.folds);
    }
    let cross_validated_before = merge(&held_before);
    let groups: Vec<GroupReport> = GROUPS
        .iter()
        .zip(&held_group)
        .map(|(&group, held)| {
            let cross_validated = merge(held);
            let kept = group.helps(&cross_validated_before, &cross_validated);
            GroupReport { group, cross_validated, kept }
        })
        .collect();
    let keep = |start: &FitParams, fitted: &FitParams| {
        groups.iter().filter(|g| g.kept).fold(*start, |p, g| g.group.apply(&p, fitted))
    };
    // The kept groups together, on the same folds.
    let mut held_after: Vec<(FitMetrics, usize)> = Vec::new();
    for (fitted, test) in &per_fold {
        held_after.push((fitter.metrics(&keep(&before, fitted), test)?, test.len()));
    }
    let proposed = fitter.fit(&before, &cases.iter().collect::<Vec<_>>())?;
    let after = keep(&before, &proposed);
    let mode_kept = groups.iter().any(|g| g.group == FitGroup::ModeMargin && g.kept);

    let mut fitted = selection;
    fitted.tools.gate_z = after.gate_z;
    for kind in [&mut fitted.tools, &mut fitted.skills] {
        kind.lexical_weight = after.lexical_weight;
        kind.source = "fitted".into();
    }
    if let Some(weight) = after.server_weight {
        fitted.servers.weight = weight;
    }
    if mode_kept {
        fitted.mode.semantic_margin = after.mode_margin;
        fitted.mode.note = match after.mode_margin {
            Some(_) => None,
            None => Some(format!(
                "fitted on {}: the semantic fallback did not beat the default mode",
                cfg.cases.display()
            )),
        };
    }
    let mut w = IndexWriter::from_index(&index)?;
    w.selection(&fitted)?;
    if let (Some(late), Some(share)) = (index.late(), after.late_share) {
        w.late(&switchyard_format::LateMeta { blend: share, ..late.clone() })?;
    }
    if let (Some(off), Some(margin)) = (index.off_topic(), after.off_topic_margin) {
        w.off_topic(&switchyard_format::OffTopicMeta { margin, ..off.clone() })?;
    }
    let bytes = w.to_bytes()?;
    drop(index);
    switchyard_format::write_atomic(&cfg.out, &bytes)?;
    Ok(FitReport {
        index: cfg.index.clone(),
        out: cfg.out.clone(),
        before,
        proposed,
        after,
        cross_validated_before,
        cross_validated_after: merge(&held_after),
        groups,
        folds: cfg.folds,
    })
}

/// Case-weighted mean of per-fold metrics (rates are weighted by cases, a close enough
/// approximation of pooling when folds are equal in size).
fn merge(folds: &[(FitMetrics, usize)]) -> FitMetrics {
    let n: usize = folds.iter().map(|f| f.1).sum();
    let mean = |get: &dyn Fn(&FitMetrics) -> f64| {
        round4(folds.iter().map(|(m, k)| get(m) * *k as f64).sum::<f64>() / n.max(1) as f64)
    };
    let none: Vec<f64> = folds.iter().filter_map(|(m, _)| m.no_tool_selected_rate).collect();
    let closed: Vec<f64> = folds.iter().filter_map(|(m, _)| m.real_closed_off_topic_rate).collect();
    FitMetrics {
        cases: n,
        tool_cases: folds.iter().map(|(m, _)| m.tool_cases).sum(),
        skill_cases: folds.iter().map(|(m, _)| m.skill_cases).sum(),
        mode_cases: folds.iter().map(|(m, _)| m.mode_cases).sum(),
        tool_recall_at_3: mean(&|m| m.tool_recall_at_3),
        skill_recall_at_3: mean(&|m| m.skill_recall_at_3),
        mode_accuracy: mean(&|m| m.mode_accuracy),
        no_tool_selected_rate: (!none.is_empty())
            .then(|| round4(none.iter().sum::<f64>() / none.len() as f64)),
        real_closed_off_topic_rate: (!closed.is_empty())
            .then(|| round4(closed.iter().sum::<f64>() / closed.len() as f64)),
    }
}
