//! `switchyard eval cases`: end-to-end routing cases for any manifest catalog: tool and skill
//! recall, and mode accuracy with the mode inferred (`auto`), overall and per language.

use crate::case_estimates::PerCase;
use crate::interval::Estimate;
use crate::metrics::round4;
use crate::tools::{EvalTimings, ModelInfo};
use crate::{EvalError, Progress, Result, cache, embedding, jsonl};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use switchyard_embed::Embedder;
use switchyard_manifest::Catalog;
use switchyard_router::{
    AnsweredBy, Decision, ModeSource, RouteOptions, RouterBuilder, Scratch, Selected, SelectedBy,
};

/// One line of `cases.jsonl`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CaseRow {
    /// The task as a user types it.
    pub task: String,
    /// Its language (BCP 47 primary tag, e.g. `en`, `pt`).
    pub lang: String,
    /// Tools it needs (any one is a separate recall target).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Skills it needs.
    #[serde(default)]
    pub skills: Vec<String>,
    /// The expected mode; a case without one (a catalog without modes, say) counts in every
    /// figure but mode accuracy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The same task in several languages shares a group (any name): each language's gap to
    /// English is then paired by task ([`CasesReport::language_gaps`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

impl CaseRow {
    /// Whether `mode` is the expected one; `None` for a case that expects none.
    pub fn mode_is(&self, mode: &str) -> Option<bool> {
        self.mode.as_deref().map(|m| m == mode)
    }
}

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct CasesEval {
    /// The manifest folder.
    pub manifests: PathBuf,
    /// The cases.
    pub cases: PathBuf,
    /// Where built indexes are kept.
    pub cache_dir: PathBuf,
    /// An index of the same catalog fitted by `switchyard fit`, reported beside the default.
    pub fitted: Option<PathBuf>,
    /// Tasks no tool of the catalog serves (`task`, `lang`), routed as deployed.
    pub off_topic: Option<PathBuf>,
    /// A query adapter to build the index with (`switchyard train adapter`).
    pub adapter: Option<switchyard_adapter::Adapter>,
}

/// A task no tool of the catalog serves.
#[derive(Debug, Clone, Deserialize)]
pub struct OffTopicRow {
    /// The task.
    pub task: String,
    /// Its language.
    pub lang: String,
}

/// How many off-topic tasks got no tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OffTopicTally {
    /// Tasks.
    pub tasks: usize,
    /// Those given no tool beyond their mode's base tools (which every task of the mode gets).
    pub given_no_tools: usize,
}

/// Off-topic tasks routed as deployed: all and per language.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OffTopicReport {
    /// Every task.
    pub all: OffTopicTally,
    /// Per language.
    pub per_lang: BTreeMap<String, OffTopicTally>,
    /// The tasks that got a tool by score, with the tools they got, in file order.
    pub given_tools: Vec<OffTopicMiss>,
}

/// An off-topic task that got tools.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffTopicMiss {
    /// The task.
    pub task: String,
    /// Its language.
    pub lang: String,
    /// The tools it got by score, best first.
    pub tools: Vec<String>,
}

/// Sums over a group of cases.
#[derive(Debug, Clone, Default)]
struct Tally {
    cases: usize,
    with_tools: usize,
    tool_r3: f64,
    tool_r5: f64,
    tool_selected: f64,
    with_skills: usize,
    skill_r3: f64,
    with_mode: usize,
    mode_ok: usize,
    static_answered: usize,
}

impl Tally {
    fn to_map(&self) -> BTreeMap<String, serde_json::Value> {
        let per = |x: f64, n: usize| (n > 0).then(|| round4(x / n as f64));
        let mut m = BTreeMap::new();
        m.insert("cases".into(), self.cases.into());
        m.insert("tool_recall@3".into(), per(self.tool_r3, self.with_tools).into());
        m.insert("tool_recall@5".into(), per(self.tool_r5, self.with_tools).into());
        m.insert("tool_recall_selected".into(), per(self.tool_selected, self.with_tools).into());
        m.insert("skill_recall@3".into(), per(self.skill_r3, self.with_skills).into());
        m.insert("mode_accuracy".into(), per(self.mode_ok as f64, self.with_mode).into());
        m.insert("static_answered".into(), per(self.static_answered as f64, self.cases).into());
        m
    }
}

/// A case the router got wrong, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct Miss {
    /// The task.
    pub task: String,
    /// Its language.
    pub lang: String,
    /// Expected tools missing from the top 5.
    pub missing_tools: Vec<String>,
    /// Expected skills missing from the top 3.
    pub missing_skills: Vec<String>,
    /// Expected mode, when the router chose another.
    pub expected_mode: Option<String>,
    /// The mode chosen and how.
    pub got_mode: String,
    /// Which signal answered (model or the cascade's static table).
    pub answered_by: AnsweredBy,
    /// The top 5 tools chosen.
    pub got_tools: Vec<String>,
}

/// The report of `eval cases`.
#[derive(Debug, Clone, Serialize)]
pub struct CasesReport {
    /// The manifest folder.
    pub manifests: PathBuf,
    /// The cases file.
    pub cases_file: PathBuf,
    /// Model name and fingerprint.
    pub model: ModelInfo,
    /// The index used.
    pub index: cache::CachedIndex,
    /// All cases, routed as deployed (the cascade answers easy tasks from its static table;
    /// `static_answered` is the share it answered).
    pub overall: BTreeMap<String, serde_json::Value>,
    /// Per language, as deployed.
    pub per_lang: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
    /// The cases whose task needs two tools or more, as deployed, reported apart: each of their
    /// tools counts in their recall, so one found of two is half a hit. `None` without such
    /// cases.
    pub several_tools: Option<BTreeMap<String, serde_json::Value>>,
    /// All cases with the cascade off: every task through the model.
    pub transformer_only: BTreeMap<String, serde_json::Value>,
    /// Per language, cascade off.
    pub transformer_only_per_lang: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
    /// All cases routed with each case's expected mode given (as `--mode` would: an explicit
    /// mode filters tools hard), so the difference from `overall` is what a known mode is
    /// worth to the selection, against the mode step's guess, which only orders tools; a
    /// catalog whose cases' tools are not offered in their own mode shows it here too.
    pub mode_given: BTreeMap<String, serde_json::Value>,
    /// Per language, expected mode given.
    pub mode_given_per_lang: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
    /// `overall`'s tool and skill recall and mode accuracy with their 95% intervals
    /// (bootstrap over the cases): how far figures from a few dozen cases can be trusted.
    pub intervals: BTreeMap<String, Estimate>,
    /// What the expected mode given gains over the deployed routing (`mode_given` less
    /// `overall`), paired by case, with 95% intervals.
    pub mode_given_gain: BTreeMap<String, Estimate>,
    /// Each language's gap to English (its figure less English's) with 95% intervals, as
    /// deployed; empty when no case is in English. One case of ten is 0.1, so a gap whose
    /// interval holds 0 is not a measured difference. Where every case of the language and of
    /// English has a `group`, the gap is taken over the groups both have, paired by group
    /// (`language_gaps_paired` says for which languages); otherwise the two groups of cases
    /// are resampled apart.
    pub language_gaps: BTreeMap<String, BTreeMap<String, Estimate>>,
    /// The languages whose gap is paired by group, with how many groups they share with
    /// English.
    pub language_gaps_paired: BTreeMap<String, usize>,
    /// All cases with the cascade's requirements at each point of [`crate::CASCADE_SWEEP`].
    pub cascade_sweep: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
    /// All cases routed with the fitted index, when one was given.
    pub fitted: Option<BTreeMap<String, serde_json::Value>>,
    /// Per language, fitted index.
    pub fitted_per_lang: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
    /// What the fitted index gains over the default one (`fitted` less `overall`), paired by
    /// case, with 95% intervals; empty without a fitted index.
    pub fitted_gain: BTreeMap<String, Estimate>,
    /// Mode accuracy by the step that decided the mode (as deployed): `explicit`, `hint`,
    /// `keyword`, `semantic`, `tools` (the best tools' votes, against an unsure look at the
    /// examples), `question` (the semantic step's question rule), `default`, `chitchat`. Shows which step a catalog's mode errors come from.
    pub mode_steps: BTreeMap<String, ModeStep>,
    /// Off-topic tasks given no tool, when a file of them was given.
    pub off_topic: Option<OffTopicReport>,
    /// The same with the fitted index, when one was given too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fitted_off_topic: Option<OffTopicReport>,
    /// Cases with any miss.
    pub misses: Vec<Miss>,
    /// Where the time went.
    pub timings: EvalTimings,
}

/// The cases one mode step decided, and how many of them it got right.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModeStep {
    /// Cases this step decided.
    pub cases: usize,
    /// Those whose mode was the expected one.
    pub right: usize,
}

/// The step that decided a decision's mode (see [`CasesReport::mode_steps`]).
pub fn deciding_step(d: &Decision) -> String {
    let question = d.semantic_mode.as_ref().is_some_and(|s| s.question.is_some());
    let by_tools = d.semantic_mode.as_ref().is_some_and(|s| s.by_tools);
    match d.mode_source {
        ModeSource::Semantic if by_tools => "tools".into(),
        ModeSource::Semantic if question => "question".into(),
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| format!("{other:?}").to_lowercase()),
    }
}

fn mode_steps(cases: &[CaseRow], decisions: &[Decision]) -> BTreeMap<String, ModeStep> {
    let mut steps: BTreeMap<String, ModeStep> = BTreeMap::new();
    // Only the cases that expect a mode: a step cannot be right or wrong on the others.
    for (right, d) in
        cases.iter().zip(decisions).filter_map(|(c, d)| Some((c.mode_is(&d.mode)?, d)))
    {
        let step = steps.entry(deciding_step(d)).or_default();
        step.cases += 1;
        step.right += usize::from(right);
    }
    steps
}

/// The router's selection, best score first (the order a reader of the prompt sees matters
/// less than whether the tool is there; sorting makes @k comparable across modes).
pub(crate) fn by_score(items: &[Selected]) -> Vec<&str> {
    let mut v: Vec<&Selected> = items.iter().collect();
    v.sort_by(|a, b| b.rank_score().total_cmp(&a.rank_score()).then_with(|| a.name.cmp(&b.name)));
    v.into_iter().map(|s| s.name.as_str()).collect()
}

pub(crate) fn recall(ranked: &[&str], gold: &[String], k: usize) -> f64 {
    gold.iter().filter(|g| ranked.iter().take(k).any(|r| r == g)).count() as f64 / gold.len() as f64
}

fn validate(cases: &[CaseRow], catalog: &Catalog, path: &std::path::Path) -> Result<()> {
    let invalid = |line: usize, field, message: String| EvalError::Invalid {
        path: path.to_path_buf(),
        line,
        field,
        message,
    };
    let mut groups: std::collections::HashMap<(&str, &str), usize> = Default::default();
    for (i, c) in cases.iter().enumerate() {
        if c.task.trim().is_empty() {
            return Err(invalid(i + 1, "task", "is empty".into()));
        }
        if let Some(g) = &c.group
            && let Some(first) = groups.insert((g.as_str(), c.lang.as_str()), i + 1)
        {
            return Err(invalid(
                i + 1,
                "group",
                format!(
                    "{g} already has a case in language {} (line {first}); a group holds one version of a task per language",
                    c.lang
                ),
            ));
        }
        for t in &c.tools {
            if !catalog.tools.iter().any(|x| &x.name == t) {
                return Err(invalid(
                    i + 1,
                    "tools",
                    format!("{t} is not a tool of the catalog; fix the name or the manifests"),
                ));
            }
        }
        for s in &c.skills {
            if !catalog.skills.iter().any(|x| &x.name == s) {
                return Err(invalid(i + 1, "skills", format!("{s} is not a skill of the catalog")));
            }
        }
        if let Some(mode) = &c.mode
            && !catalog.modes.iter().any(|m| &m.name == mode)
            && *mode != catalog.default_mode()
        {
            let known: Vec<&str> = catalog.modes.iter().map(|m| m.name.as_str()).collect();
            return Err(invalid(
                i + 1,
                "mode",
                format!(
                    "{mode} is not a mode; known: {} (or leave `mode` out to score the case without one)",
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Runs the evaluation.
pub fn eval_cases(
    cfg: &CasesEval,
    embedder: Arc<dyn Embedder>,
    progress: Progress<'_>,
) -> Result<CasesReport> {
    let t0 = Instant::now();
    let catalog =
        Catalog::load(&cfg.manifests).map_err(switchyard_build_index::BuildError::from)?;
    let cases: Vec<CaseRow> = jsonl::read_jsonl(&cfg.cases)?;
    validate(&cases, &catalog, &cfg.cases)?;
    // Read before any work, so a bad file is refused before the index is built.
    let off_topic_rows: Option<Vec<OffTopicRow>> =
        cfg.off_topic.as_deref().map(jsonl::read_jsonl).transpose()?;
    let index = cache::cached_index(
        &catalog,
        embedder.as_ref(),
        cfg.adapter.as_ref(),
        &cfg.cache_dir,
        progress,
    )?;
    let router = RouterBuilder::new(&index.path).build(Arc::clone(&embedder))?;
    let plain = RouterBuilder::new(&index.path).cascade(false).build(Arc::clone(&embedder))?;

    let te = Instant::now();
    let texts: Vec<&str> = cases.iter().map(|c| c.task.as_str()).collect();
    let late = router.uses_late_interaction();
    let embedded =
        embedding::TaskEmbeddings::new(embedder.as_ref(), &texts, late, "embed tasks", progress)?;
    let embed_ms = te.elapsed().as_secs_f64() * 1e3;

    let tr = Instant::now();
    let mut scratch = Scratch::default();
    // `mode_given`: each case's expected mode as an explicit mode; else inferred as deployed.
    let mut route_modes = |router: &switchyard_router::Router, mode_given: bool| {
        let mut out = Vec::with_capacity(cases.len());
        for (i, c) in cases.iter().enumerate() {
            embedded.prime(router, i, &c.task);
            // A case may expect the catalog's default mode where the catalog declares no modes:
            // then there is nothing to give, and the mode is inferred as deployed.
            let given = c.mode.as_ref().filter(|&mode| {
                mode_given && router.index().meta().modes.iter().any(|m| &m.name == mode)
            });
            let options = RouteOptions { mode: given.cloned(), ..RouteOptions::default() };
            out.push(router.route_with(&c.task, &options, &mut scratch)?);
        }
        Ok::<_, EvalError>(out)
    };
    let decisions = route_modes(&router, false)?;
    let plain_decisions = route_modes(&plain, false)?;
    let given_decisions = route_modes(&router, true)?;
    let mut route_all = |router: &switchyard_router::Router| route_modes(router, false);
    let mut cascade_sweep = BTreeMap::new();
    for &(margin, coverage) in crate::tools::CASCADE_SWEEP {
        let r = RouterBuilder::new(&index.path)
            .cascade_margin(Some(margin))
            .cascade_min_coverage(Some(coverage))
            .build(Arc::clone(&embedder))?;
        let (groups, _) = tally(&cases, &route_all(&r)?);
        cascade_sweep.insert(format!("lead {margin} coverage {coverage}"), groups[&None].to_map());
    }
    let fitted_router = match &cfg.fitted {
        Some(path) => {
            let r = RouterBuilder::new(path).build(Arc::clone(&embedder))?;
            if !hashes_as_built(&catalog)?.contains(&r.index().meta().manifest_hash) {
                return Err(EvalError::Usage(format!(
                    "{}: the fitted index was built from other manifests than {}; fit an index of this catalog",
                    path.display(),
                    cfg.manifests.display()
                )));
            }
            Some(r)
        }
        None => None,
    };
    let fitted_decisions = fitted_router.as_ref().map(&mut route_all).transpose()?;
    let (off_topic, fitted_off_topic) = match &off_topic_rows {
        Some(rows) => (
            Some(route_off_topic(&router, rows, &mut scratch)?),
            match &fitted_router {
                Some(r) => Some(route_off_topic(r, rows, &mut scratch)?),
                None => None,
            },
        ),
        None => (None, None),
    };
    let route_ms = tr.elapsed().as_secs_f64() * 1e3;

    let (groups, misses) = tally(&cases, &decisions);
    let steps = mode_steps(&cases, &decisions);
    let (plain_groups, _) = tally(&cases, &plain_decisions);
    let split = |groups: &BTreeMap<Option<String>, Tally>| {
        let per_lang: BTreeMap<String, BTreeMap<String, serde_json::Value>> = groups
            .iter()
            .filter_map(|(k, g)| k.as_ref().map(|k| (k.clone(), g.to_map())))
            .collect();
        (groups[&None].to_map(), per_lang)
    };
    let (overall, per_lang) = split(&groups);
    let several_tools = several_tools(&cases, &decisions);
    let (transformer_only, transformer_only_per_lang) = split(&plain_groups);
    let (mode_given, mode_given_per_lang) = split(&tally(&cases, &given_decisions).0);
    let deployed = PerCase::new(&cases, &decisions);
    let fitted_gain = fitted_decisions
        .as_ref()
        .map(|d| deployed.gain(&PerCase::new(&cases, d)))
        .unwrap_or_default();
    let (fitted, fitted_per_lang) = match &fitted_decisions {
        Some(d) => {
            let (g, _) = tally(&cases, d);
            let (o, per) = split(&g);
            (Some(o), per)
        }
        None => (None, BTreeMap::new()),
    };
    let total_ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok(CasesReport {
        manifests: cfg.manifests.clone(),
        cases_file: cfg.cases.clone(),
        model: ModelInfo::of(embedder.as_ref()),
        timings: EvalTimings {
            build_ms: index.build_ms,
            embed_ms,
            route_ms,
            bm25_ms: 0.0,
            total_ms,
            per_second: cases.len() as f64 / (total_ms / 1e3),
        },
        index,
        overall,
        per_lang,
        several_tools,
        transformer_only,
        transformer_only_per_lang,
        mode_given,
        mode_given_per_lang,
        intervals: deployed.intervals(),
        mode_given_gain: deployed.gain(&PerCase::new(&cases, &given_decisions)),
        language_gaps: deployed.language_gaps(),
        language_gaps_paired: deployed.paired_languages(),
        cascade_sweep,
        fitted,
        fitted_per_lang,
        fitted_gain,
        mode_steps: steps,
        off_topic,
        fitted_off_topic,
        misses,
    })
}

/// Routes each off-topic task as deployed and counts those given no tool.
/// The manifest hashes an index of `catalog` may carry: as loaded (the evaluation cache's
/// builds), and as `build-index` records it, with or without its own attacks only.
fn hashes_as_built(catalog: &Catalog) -> Result<Vec<String>> {
    let mut hashes = vec![catalog.content_hash()];
    for own_attacks_only in [true, false] {
        let mut c = catalog.clone();
        switchyard_build_index::give_built_ins(&mut c, own_attacks_only)?;
        hashes.push(c.content_hash());
    }
    Ok(hashes)
}

/// Whether a decision gave no tool by score (its mode's base tools aside).
pub(crate) fn given_no_tools(d: &Decision) -> bool {
    d.tools.iter().all(|t| t.by == SelectedBy::Base)
}

fn route_off_topic(
    router: &switchyard_router::Router,
    rows: &[OffTopicRow],
    scratch: &mut Scratch,
) -> Result<OffTopicReport> {
    let mut report = OffTopicReport::default();
    for row in rows {
        let d = router.route_with(&row.task, &RouteOptions::default(), scratch)?;
        let none = given_no_tools(&d);
        for t in [&mut report.all, report.per_lang.entry(row.lang.clone()).or_default()] {
            t.tasks += 1;
            t.given_no_tools += none as usize;
        }
        if !none {
            report.given_tools.push(OffTopicMiss {
                task: row.task.clone(),
                lang: row.lang.clone(),
                tools: d
                    .tools
                    .iter()
                    .filter(|t| t.by != SelectedBy::Base)
                    .map(|t| t.name.clone())
                    .collect(),
            });
        }
    }
    Ok(report)
}

/// `tally`'s figures over the cases that need two tools or more; `None` without any.
fn several_tools(
    cases: &[CaseRow],
    decisions: &[Decision],
) -> Option<BTreeMap<String, serde_json::Value>> {
    let (cases, decisions): (Vec<CaseRow>, Vec<Decision>) = cases
        .iter()
        .zip(decisions)
        .filter(|(c, _)| c.tools.len() > 1)
        .map(|(c, d)| (c.clone(), d.clone()))
        .unzip();
    (!cases.is_empty()).then(|| tally(&cases, &decisions).0[&None].to_map())
}

/// Per-group tallies (`None` = all cases) and the misses of one set of decisions.
fn tally(
    cases: &[CaseRow],
    decisions: &[Decision],
) -> (BTreeMap<Option<String>, Tally>, Vec<Miss>) {
    let mut groups: BTreeMap<Option<String>, Tally> = BTreeMap::new();
    let mut misses = Vec::new();
    for (c, d) in cases.iter().zip(decisions) {
        let tools = by_score(&d.tools);
        let skills = by_score(&d.skills);
        let mode_ok = c.mode_is(&d.mode);
        for key in [None, Some(c.lang.clone())] {
            let g = groups.entry(key).or_default();
            g.cases += 1;
            g.with_mode += mode_ok.is_some() as usize;
            g.mode_ok += (mode_ok == Some(true)) as usize;
            g.static_answered += (d.answered_by == AnsweredBy::Static) as usize;
            if !c.tools.is_empty() {
                g.with_tools += 1;
                g.tool_r3 += recall(&tools, &c.tools, 3);
                g.tool_r5 += recall(&tools, &c.tools, 5);
                g.tool_selected += recall(&tools, &c.tools, usize::MAX);
            }
            if !c.skills.is_empty() {
                g.with_skills += 1;
                g.skill_r3 += recall(&skills, &c.skills, 3);
            }
        }
        let missing_tools: Vec<String> =
            c.tools.iter().filter(|t| !tools.iter().take(5).any(|x| x == t)).cloned().collect();
        let missing_skills: Vec<String> =
            c.skills.iter().filter(|t| !skills.iter().take(3).any(|x| x == t)).cloned().collect();
        if !missing_tools.is_empty() || !missing_skills.is_empty() || mode_ok == Some(false) {
            misses.push(Miss {
                task: c.task.clone(),
                lang: c.lang.clone(),
                missing_tools,
                missing_skills,
                expected_mode: c.mode.clone().filter(|_| mode_ok == Some(false)),
                got_mode: format!("{} ({})", d.mode, deciding_step(d)),
                got_tools: tools.iter().take(5).map(|s| s.to_string()).collect(),
                answered_by: d.answered_by,
            });
        }
    }
    (groups, misses)
}
