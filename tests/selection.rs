//! Selection that holds on any catalog (issue 18): a guessed mode never hides a tool, the
//! semantic mode fallback decides only when the catalog's own examples support it, lexical and
//! dense scores are fused and shown per pick, a task about nothing in the catalog gets no tool
//! by score, hints map to the modes the manifest names, `fit` learns from labelled cases, and a
//! catalog given a few examples routes no worse for them.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use switchyard_embed::HashEmbedder;
use switchyard_eval::FitGroup;
use switchyard_router::{
    DropReason, ModeFilter, ModeSource, RouteOptions, RouterBuilder, SelectedBy,
};

/// A small ops catalog: `observe` is the declared default and has examples; `operate` has one
/// example, too few for a semantic guess. `restart_service` is offered in `operate` only.
fn ops_catalog(dir: &Path) -> PathBuf {
    let m = dir.join("ops");
    std::fs::create_dir_all(&m).unwrap();
    write(
        &m,
        "modes.toml",
        r#"
[[mode]]
name = "observe"
default = true
hints = ["interactive"]
description = "Look at dashboards, metrics and logs without changing anything."
examples = ["is the site healthy", "how is the error budget", "show me the latency graph"]

[[mode]]
name = "operate"
hints = ["git_changes"]
description = "Take action on production: restart, scale, roll back."
examples = ["bring the cluster back up"]
"#,
    );
    write(
        &m,
        "tools.toml",
        r#"
[[tool]]
name = "restart_service"
description = "Restart a systemd unit on a host and wait until it reports healthy."
modes = ["operate"]

[[tool]]
name = "query_metrics"
description = "Query time-series metrics such as CPU, latency percentiles and error rates."
modes = ["any"]

[[tool]]
name = "search_logs"
description = "Search centralised logs by service, time window and text."
modes = ["any"]

[[tool]]
name = "scale_deployment"
description = "Change the replica count of a Kubernetes deployment."
modes = ["operate"]

[[tool]]
name = "page_oncall"
description = "Page the on-call engineer with a summary of an incident."
modes = ["operate"]

[[tool]]
name = "rollback_release"
modes = ["operate"]
parameters = { type = "object", properties = { service = { type = "string", description = "Service to roll back" }, version = { type = "string", description = "Release tag to go back to" } } }
"#,
    );
    m
}

#[test]
fn a_tool_without_a_description_is_a_warning_and_stays_routable() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = ops_catalog(dir.path());
    let catalog = switchyard_manifest::Catalog::load(&manifests).unwrap();
    let w: Vec<String> = catalog.warnings.iter().map(ToString::to_string).collect();
    assert!(
        w.iter().any(|w| w.contains("tool.description: rollback_release has no description")
            && w.contains("routable by its name and parameters")),
        "{w:?}"
    );
    let tool = catalog.tools.iter().find(|t| t.name == "rollback_release").unwrap();
    assert_eq!(
        tool.card(),
        "rollback release Parameters: service (Service to roll back); version (Release tag to go back to)."
    );
    let path = build(&manifests, &HashEmbedder::new(384), dir.path(), "x.idx");
    let router = RouterBuilder::new(&path).build(Arc::new(HashEmbedder::new(384))).unwrap();
    let d = router
        .route("roll back the release of the checkout service", &RouteOptions::default())
        .unwrap();
    assert!(d.tool_names().contains(&"rollback_release"), "{:?}", d.tools);
    let pick = d.tools.iter().find(|t| t.name == "rollback_release").unwrap();
    let s = pick.signals.unwrap();
    assert!(s.lexical > 0.0 && (0.0..=1.0).contains(&s.dense) && s.fused > 0.0, "{s:?}");
}

#[test]
fn too_few_mode_examples_turn_the_guess_off_and_the_default_mode_only_orders_tools() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = ops_catalog(dir.path());
    let path = build(&manifests, &HashEmbedder::new(384), dir.path(), "x.idx");
    let index = switchyard_format::Index::open(&path, &Default::default()).unwrap();
    let sel = index.selection().unwrap();
    assert_eq!(sel.mode.semantic_margin, None);
    assert!(sel.mode.note.as_deref().unwrap().contains("operate"), "{:?}", sel.mode.note);
    assert_eq!(index.meta().default_mode, "observe");
    drop(index);

    let router = RouterBuilder::new(&path).build(Arc::new(HashEmbedder::new(384))).unwrap();
    // No keyword, no hint: the default decides, softly. The operate-only tool the task names
    // is still selected, marked as outside the mode.
    let d =
        router.route("restart the systemd unit on host web-3", &RouteOptions::default()).unwrap();
    assert_eq!(
        (d.mode.as_str(), d.mode_source, d.mode_filter),
        ("observe", ModeSource::Default, ModeFilter::Soft)
    );
    let pick = d.tools.iter().find(|t| t.name == "restart_service");
    assert!(pick.is_some_and(|p| p.signals.unwrap().outside_mode), "{:?}", d.tools);
    // An explicit mode still filters hard.
    let explicit = RouteOptions { mode: Some("observe".into()), ..RouteOptions::default() };
    let d = router.route("restart the systemd unit on host web-3", &explicit).unwrap();
    assert_eq!(d.mode_filter, ModeFilter::Hard);
    assert!(!d.tool_names().contains(&"restart_service"));
    assert!(
        d.dropped.iter().any(|x| x.name == "restart_service" && x.reason == DropReason::WrongMode)
    );
    // Hints select the modes the manifest maps them to.
    let hinted = RouteOptions { git_changes: true, ..RouteOptions::default() };
    let d = router.route("have a look", &hinted).unwrap();
    assert_eq!((d.mode.as_str(), d.mode_source), ("operate", ModeSource::Hint));
    let hinted = RouteOptions { interactive: true, ..RouteOptions::default() };
    assert_eq!(router.route("have a look", &hinted).unwrap().mode, "observe");
}

/// The ops catalog with three examples for `operate`: enough to guess from, too few for a
/// leave-one-out margin.
fn ops_catalog_with_examples(dir: &Path) -> PathBuf {
    let m = ops_catalog(dir);
    let modes = std::fs::read_to_string(m.join("modes.toml")).unwrap();
    let more = r#"examples = ["bring the cluster back up", "roll back the checkout release", "scale the api to ten replicas"]"#;
    write(&m, "modes.toml", &modes.replace(r#"examples = ["bring the cluster back up"]"#, more));
    m
}

#[test]
fn the_guess_decides_when_the_best_tools_favour_the_same_mode() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = ops_catalog_with_examples(dir.path());
    // Builds the catalog as it is now; routes with a margin no lead reaches, so only the tools'
    // agreement can let the guess decide. Returns whether the index supports the agreement.
    let route = |file: &str| {
        let path = build(&manifests, &HashEmbedder::new(384), dir.path(), file);
        let index = switchyard_format::Index::open(&path, &Default::default()).unwrap();
        let supported = index.meta().supports_tool_agreement();
        drop(index);
        let router = RouterBuilder::new(&path)
            .semantic_margin(Some(10.0))
            .build(Arc::new(HashEmbedder::new(384)))
            .unwrap();
        let task = "scale the checkout deployment to ten replicas";
        (supported, router.route(task, &RouteOptions::default()).unwrap())
    };

    // The examples' best mode is operate, and so are the best tools (operate-only).
    let (supported, d) = route("x.idx");
    assert!(supported);
    let check = d.semantic_mode.clone().unwrap();
    let favour = check.tools_favour.clone().unwrap();
    assert_eq!((check.best.as_str(), favour.mode.as_str()), ("operate", "operate"), "{check:?}");
    assert_eq!(favour.voters.first().map(String::as_str), Some("scale_deployment"), "{favour:?}");
    assert!(favour.share > 0.5 && favour.share <= 1.0, "{favour:?}");
    assert_eq!((d.mode.as_str(), d.mode_source), ("operate", ModeSource::Semantic));
    assert!(d.mode_detail.as_deref().unwrap().contains("favour the same mode"), "{d:?}");
    // Still a guess: tools outside the mode are ordered after, never dropped.
    assert_eq!(d.mode_filter, ModeFilter::Soft);
    assert_eq!(d.metrics.embedding_calls, 1);

    // Tools that carry no mode ("any" everywhere) vote for none: the default decides.
    let tools = std::fs::read_to_string(manifests.join("tools.toml")).unwrap();
    write(&manifests, "tools.toml", &tools.replace(r#"modes = ["operate"]"#, r#"modes = ["any"]"#));
    let (supported, d) = route("any.idx");
    assert!(!supported);
    assert_eq!((d.mode.as_str(), d.mode_source), ("observe", ModeSource::Default));
    assert_eq!(d.semantic_mode.unwrap().tools_favour, None);
}

#[test]
fn mode_manifest_mistakes_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let m = ops_catalog(dir.path());
    let modes = std::fs::read_to_string(m.join("modes.toml")).unwrap();
    write(
        &m,
        "modes.toml",
        &modes.replace("hints = [\"git_changes\"]", "hints = [\"git_changes\"]\ndefault = true"),
    );
    let e = switchyard_manifest::Catalog::load(&m).unwrap_err().to_string();
    assert!(
        e.contains("modes.toml:")
            && e.contains("mode.default: observe (line 4) is already the default mode"),
        "{e}"
    );
    write(&m, "modes.toml", &modes.replace("hints = [\"git_changes\"]", "hints = [\"dirty\"]"));
    let e = switchyard_manifest::Catalog::load(&m).unwrap_err().to_string();
    assert!(
        e.contains("mode.hints: \"dirty\" is not a hint; allowed: interactive, git_changes"),
        "{e}"
    );
    std::fs::write(m.join("modes.toml"), b"[[mode]]\nname = \"a\"\ndescription = \"caf\xe9\"\n")
        .unwrap();
    let e = switchyard_manifest::Catalog::load(&m).unwrap_err().to_string();
    assert!(
        e.contains("modes.toml:3: (file): byte") && e.contains("save the file as UTF-8"),
        "{e}"
    );
}

#[test]
fn an_off_topic_task_gets_no_tool_by_score_on_the_default_catalog() {
    let Some(model) = model_or_skip("minilm") else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = build(&default_catalog(), model.as_ref(), dir.path(), "d.idx");
    let router = RouterBuilder::new(&path).build(model).unwrap();
    for task in ["what is the capital of Australia", "who won the football world cup in 2010"] {
        let d = router.route(task, &RouteOptions::default()).unwrap();
        let gate = d.tool_gate.clone().unwrap();
        assert!(!gate.open, "{task}: {gate:?}");
        assert!(d.tools.iter().all(|t| t.by == SelectedBy::Base), "{task}: {:?}", d.tools);
        assert!(d.dropped.iter().any(|x| x.reason == DropReason::GateClosed));
    }
    // An on-topic task opens it, and its picks show both signals.
    let d = router
        .route("run the unit tests and show me the failures", &RouteOptions::default())
        .unwrap();
    assert!(d.tool_gate.unwrap().open);
    assert!(d.tools.iter().any(|t| t.name == "run_tests" && t.signals.is_some()), "{:?}", d.tools);
}

#[test]
fn fit_learns_from_cases_cross_validated_and_writes_a_copy() {
    let Some(model) = model_or_skip("minilm") else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = build(&default_catalog(), model.as_ref(), dir.path(), "d.idx");
    let before = std::fs::read(&path).unwrap();
    let out = dir.path().join("fitted.idx");
    let cfg = switchyard_eval::FitConfig {
        index: path.clone(),
        cases: root().join("manifests/cases.jsonl"),
        off_topic: None,
        out: out.clone(),
        folds: 5,
    };
    let r = switchyard_eval::fit(&cfg, Arc::clone(&model), &switchyard_eval::no_progress).unwrap();
    assert_eq!(r.cross_validated_before.cases, r.cross_validated_after.cases);
    assert!(r.cross_validated_before.cases >= 60);
    // The input is untouched; the copy opens, carries the fitted figures and routes.
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let fitted = switchyard_format::Index::open(&out, &Default::default()).unwrap();
    let sel = fitted.selection().unwrap();
    assert_eq!(sel.tools.source, "fitted");
    assert_eq!(sel.tools.lexical_weight, r.after.lexical_weight);
    assert_eq!(sel.mode.semantic_margin, r.after.mode_margin);
    assert_eq!(r.before.late_share, Some(0.8), "MiniLM's index keeps token states");
    assert!(r.after.late_share.is_some_and(|s| (0.0..=1.0).contains(&s)), "{:?}", r.after);
    // A group is written only when the held-out folds kept it; the others keep the index's.
    assert_eq!(r.groups.len(), 4);
    for g in &r.groups {
        let (b, p, a) = (&r.before, &r.proposed, &r.after);
        let written_as = |before_eq: bool, proposed_eq: bool| {
            if g.kept { proposed_eq } else { before_eq }
        };
        let ok = match g.group {
            FitGroup::Fusion => written_as(
                (b.lexical_weight, b.late_share) == (a.lexical_weight, a.late_share),
                (p.lexical_weight, p.late_share) == (a.lexical_weight, a.late_share),
            ),
            FitGroup::Gate => written_as(b.gate_z == a.gate_z, p.gate_z == a.gate_z),
            FitGroup::ModeMargin => {
                written_as(b.mode_margin == a.mode_margin, p.mode_margin == a.mode_margin)
            }
            FitGroup::OffTopicMargin => written_as(
                b.off_topic_margin == a.off_topic_margin,
                p.off_topic_margin == a.off_topic_margin,
            ),
        };
        assert!(ok, "{g:?}: {r:?}");
    }
    drop(fitted);
    let router = RouterBuilder::new(&out).build(model).unwrap();
    assert!(
        !router.route("run the unit tests", &RouteOptions::default()).unwrap().tools.is_empty()
    );
}

#[test]
fn an_index_from_another_analyser_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = ops_catalog(dir.path());
    let path = build(&manifests, &HashEmbedder::new(384), dir.path(), "x.idx");
    let index = switchyard_format::Index::open(&path, &Default::default()).unwrap();
    let mut sel = index.selection().unwrap().clone();
    sel.tools_lexical.analyzer_version = 99;
    let mut w = switchyard_format::IndexWriter::from_index(&index).unwrap();
    w.selection(&sel).unwrap();
    let other = dir.path().join("other.idx");
    w.write(&other).unwrap();
    let e = RouterBuilder::new(&other).build(Arc::new(HashEmbedder::new(384))).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "index {}: its lexical statistics come from analyser version 99, this build analyses \
             tasks with version {}; rebuild it with switchyard build-index",
            other.display(),
            switchyard_lexical::ANALYZER_VERSION
        )
    );
}

#[test]
fn bad_fit_and_fusion_settings_are_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = ops_catalog(dir.path());
    let path = build(&manifests, &HashEmbedder::new(384), dir.path(), "x.idx");
    let e = RouterBuilder::new(&path)
        .lexical_weight(Some(1.5))
        .build(Arc::new(HashEmbedder::new(384)))
        .unwrap_err();
    assert_eq!(e.to_string(), "router config: lexical_weight: 1.5 is not a weight in 0..=1");
    for (share, shown) in [(-0.25f32, "-0.25"), (f32::NAN, "NaN")] {
        let e = RouterBuilder::new(&path)
            .late_share(Some(share))
            .build(Arc::new(HashEmbedder::new(384)))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("router config: late_share: {shown} is not a weight in 0..=1")
        );
        let e = RouterBuilder::new(&path)
            .server_weight(Some(share))
            .build(Arc::new(HashEmbedder::new(384)))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("router config: server_weight: {shown} is not a weight in 0..=1")
        );
    }
    let e = RouterBuilder::new(&path)
        .off_topic_margin(Some(f32::NAN))
        .build(Arc::new(HashEmbedder::new(384)))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "router config: off_topic_margin: NaN is not a difference of two cosines, in -2..=2"
    );

    let fit_with = |index: PathBuf, folds: usize, off_topic: Option<PathBuf>| {
        let cfg = switchyard_eval::FitConfig {
            index,
            cases: root().join("manifests/cases.jsonl"),
            off_topic,
            out: dir.path().join("fitted.idx"),
            folds,
        };
        switchyard_eval::fit(&cfg, Arc::new(HashEmbedder::new(384)), &switchyard_eval::no_progress)
            .unwrap_err()
            .to_string()
    };
    let fit = |index: PathBuf, folds: usize| fit_with(index, folds, None);
    assert_eq!(fit(path.clone(), 1), "--folds: use at least 2 folds");
    // An unrelated task without its text is named by file and line.
    write(
        dir.path(),
        "off.jsonl",
        "{\"task\": \"tell me a joke\", \"lang\": \"en\"}\n{\"lang\": \"en\"}\n",
    );
    let e = fit_with(path.clone(), 5, Some(dir.path().join("off.jsonl")));
    assert!(e.contains("off.jsonl:2") && e.contains("missing field `task`"), "{e}");
    // A version 2 index has no selection section to fit.
    let old = root().join("tests/fixtures/index_v2.bin");
    let e = fit(old, 5);
    assert!(e.contains("has no selection section") && e.contains("switchyard build-index"), "{e}");
    assert!(!dir.path().join("fitted.idx").exists());
}

/// Like multilingual-e5, every query leans towards one common direction; so does the card of
/// one vague tool ("helper"), which then scores well for any task.
struct CommonDirection(HashEmbedder);

impl CommonDirection {
    fn lean(v: Vec<f32>) -> Vec<f32> {
        let mut v = v;
        v[0] += 1.0;
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }
}

impl switchyard_embed::Embedder for CommonDirection {
    fn info(&self) -> &switchyard_embed::ModelInfo {
        self.0.info()
    }
    fn embed_batch(&self, texts: &[&str]) -> switchyard_embed::Result<Vec<Vec<f32>>> {
        Ok(self.0.embed_batch(texts)?.into_iter().map(Self::lean).collect())
    }
    fn embed_documents(&self, texts: &[&str]) -> switchyard_embed::Result<Vec<Vec<f32>>> {
        let docs = self.0.embed_documents(texts)?;
        Ok(texts
            .iter()
            .zip(docs)
            .map(|(t, v)| if t.starts_with("helper") { Self::lean(v) } else { v })
            .collect())
    }
    fn count_tokens(&self, text: &str) -> switchyard_embed::Result<usize> {
        self.0.count_tokens(text)
    }
}

#[test]
fn what_every_request_scores_against_a_row_does_not_count_for_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = ops_catalog(dir.path());
    let tools = std::fs::read_to_string(manifests.join("tools.toml")).unwrap();
    write(
        &manifests,
        "tools.toml",
        &format!(
            "{tools}\n[[tool]]\nname = \"helper\"\ndescription = \"General assistance.\"\nmodes = [\"any\"]\n"
        ),
    );
    let embedder = Arc::new(CommonDirection(HashEmbedder::new(384)));
    let path = build(&manifests, embedder.as_ref(), dir.path(), "x.idx");
    let index = switchyard_format::Index::open(&path, &Default::default()).unwrap();
    let shift = index.query_shift().unwrap();
    let helper = index.meta().tools.iter().find(|t| t.name == "helper").unwrap();
    let restart = index.meta().tools.iter().find(|t| t.name == "restart_service").unwrap();
    // The ordinary requests' centroid leans the same way as the helper's card, not the others.
    assert!(shift.tools[helper.first_row as usize] > 0.1, "{:?}", shift.tools);
    assert!(shift.tools[restart.first_row as usize].abs() < 0.05, "{:?}", shift.tools);
    let top = |shifted: bool| {
        let router = RouterBuilder::new(&path)
            .rank_all(true)
            .lexical_weight(Some(0.0))
            .query_shift(shifted)
            .build(embedder.clone())
            .unwrap();
        let d = router
            .route(
                "restart the systemd unit on that host, wait until it is healthy",
                &RouteOptions { mode: Some("operate".into()), ..Default::default() },
            )
            .unwrap();
        d.tools[0].name.clone()
    };
    assert_eq!(top(false), "helper");
    assert_eq!(top(true), "restart_service");
}

/// Late interaction (e5-small, whose model gives it 0.8 of the dense score): the default index
/// keeps every tool's and skill's token states, one model run per task gives the vector and the
/// task's token states together, each pick shows its late side, and a cache primed in a batch
/// routes to the same picks without running the model. MiniLM's index keeps them too.
#[test]
fn late_interaction_compares_the_task_with_each_item_token_by_token() {
    let Some(model) = model_or_skip("e5-small") else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = build(&default_catalog(), model.as_ref(), dir.path(), "e5.idx");
    let index = switchyard_format::Index::open(&path, &Default::default()).unwrap();
    let late = index.late().expect("an e5-small index keeps token states");
    assert_eq!(late.blend, 0.8);
    assert_eq!(late.tools.items(), index.meta().tools.len());
    assert_eq!(late.skills.items(), index.meta().skills.len());
    // Every tool has a card of several words, so several tokens.
    assert!(late.tools.offsets.windows(2).all(|w| w[1] - w[0] >= 3), "{:?}", late.tools.offsets);
    // Each token keeps its id, so an item's own tokens are weighed too (the item's side).
    assert_eq!(late.tools.ids.len(), late.tools.scales.len());
    assert_eq!(late.skills.ids.len(), late.skills.scales.len());

    let counting = Counting::new(model.clone());
    let router = RouterBuilder::new(&path).cascade(false).build(counting.clone()).unwrap();
    let task = "o build não passa, roda os testes e me mostra o que falhou";
    let d = router.route(task, &RouteOptions::default()).unwrap();
    assert_eq!(counting.calls(), 1, "one model run gives the vector and the token states");
    assert!(d.tools.iter().any(|t| t.name == "run_tests"), "{:?}", d.tools);
    let sides: Vec<f32> = d.tools.iter().filter_map(|t| t.signals?.late).collect();
    assert!(!sides.is_empty() && sides.iter().all(|l| (0.0..=1.0).contains(l)), "{:?}", d.tools);

    let picks = |d: &switchyard_router::Decision| {
        d.tools.iter().map(|t| (t.name.clone(), t.signals)).collect::<Vec<_>>()
    };
    let primed = RouterBuilder::new(&path).cascade(false).build(counting.clone()).unwrap();
    let kept = model.embed_with_tokens(&[task], false).unwrap().unwrap().pop().unwrap();
    primed.prime_cache_with_tokens(task, kept);
    let again = primed.route(task, &RouteOptions::default()).unwrap();
    assert_eq!(counting.calls(), 1, "a primed cache needs no model run");
    assert_eq!(picks(&again), picks(&d));

    let off = RouterBuilder::new(&path)
        .cascade(false)
        .late_interaction(false)
        .build(model.clone())
        .unwrap();
    let d = off.route(task, &RouteOptions::default()).unwrap();
    assert!(d.tools.iter().all(|t| t.signals.is_none_or(|s| s.late.is_none())), "{:?}", d.tools);

    // A wrapper that does not forward token states routes without the late side, and its
    // cache still answers the second time.
    let wrapped = RouterBuilder::new(&path)
        .cascade(false)
        .build(Arc::new(common::Rewrapped {
            token_states: false,
            ..common::Rewrapped::new(Arc::clone(&model))
        }))
        .unwrap();
    let first = wrapped.route(task, &RouteOptions::default()).unwrap();
    assert!(first.tools.iter().all(|t| t.signals.is_none_or(|s| s.late.is_none())));
    let second = wrapped.route(task, &RouteOptions::default()).unwrap();
    assert!(second.metrics.cache_hit && second.metrics.embedding_calls == 0);

    // `fit` learns the share with the lexical weight, cross-validated, and writes it when the
    // held-out folds gain (else the index's own share stays).
    let cases = dir.path().join("cases.jsonl");
    let rows = std::fs::read_to_string(root().join("manifests/cases.jsonl")).unwrap();
    std::fs::write(&cases, rows.lines().take(24).collect::<Vec<_>>().join("\n")).unwrap();
    let out = dir.path().join("fitted.idx");
    let cfg = switchyard_eval::FitConfig {
        index: path.clone(),
        cases,
        off_topic: None,
        out: out.clone(),
        folds: 2,
    };
    let r = switchyard_eval::fit(&cfg, model, &switchyard_eval::no_progress).unwrap();
    assert_eq!(r.before.late_share, Some(0.8));
    let share = r.after.late_share.expect("an index with a late section fits its share");
    assert!([0.0, 0.25, 0.5, 0.75, 0.8, 1.0].contains(&share), "{share}");
    let fitted = switchyard_format::Index::open(&out, &Default::default()).unwrap();
    assert_eq!(fitted.late().unwrap().blend, share);

    // MiniLM's states gain too, once an item's tokens are met in the task as well.
    let Some(minilm) = model_or_skip("minilm") else { return };
    let path = build(&default_catalog(), minilm.as_ref(), dir.path(), "minilm.idx");
    let index = switchyard_format::Index::open(&path, &Default::default()).unwrap();
    assert_eq!(index.late().map(|l| l.blend), Some(0.8), "MiniLM keeps token states too");
}

/// The development warehouse catalog (36 one-line tools, no examples), written to `dir` with
/// `examples` added to the named tools, and built with `model` (its screen from the catalog's
/// own attacks only: the tests read selection).
fn warehouse_with_examples(
    model: &dyn switchyard_embed::Embedder,
    dir: &Path,
    name: &str,
    examples: &[(&str, &str)],
) -> PathBuf {
    let src = root().join("tests/catalogs/dev-warehouse");
    let m = dir.join(name);
    std::fs::create_dir_all(&m).unwrap();
    for file in ["modes.toml", "skills.toml"] {
        std::fs::copy(src.join(file), m.join(file)).unwrap();
    }
    let mut tools = std::fs::read_to_string(src.join("tools.toml")).unwrap();
    for (tool, example) in examples {
        let line = format!("name = \"{tool}\"\n");
        assert!(tools.contains(&line), "{tool} is not in the warehouse catalog");
        tools = tools.replace(&line, &format!("{line}examples = [\"{example}\"]\n"));
    }
    write(&m, "tools.toml", &tools);
    let out = dir.join(format!("{name}.idx"));
    let options =
        switchyard_build_index::BuildOptions { own_attacks_only: true, ..build_options() };
    switchyard_build_index::build_to_file(&m, &out, model, &options).unwrap();
    out
}

/// Six examples a user might add to a catalog of 36 tools. Before session 55 the gate sat at
/// the examples' lowest peak (2.65 standard deviations against 1.00 without them), and the
/// examples' rows led the tasks of tools that had none.
const SIX_EXAMPLES: [(&str, &str); 6] = [
    ("book_carrier_pickup", "we need DHL to swing by at 3 for the pallets"),
    ("pack_order", "get the 40 orders from this morning picked and boxed"),
    ("change_shipping_address", "she moved house, deliver order 3310 to the new place"),
    ("issue_voucher", "give the customer with the cracked teapot 15% off next time"),
    ("adjust_inventory", "bin C12 actually has 14 of the lamps, not 20, fix the count"),
    ("demand_forecast", "how many units of the yoga mat will we need for January"),
];

#[test]
fn a_few_examples_never_raise_the_tool_gate() {
    let Some(model) = model_or_skip("e5-small") else { return };
    let dir = tempfile::tempdir().unwrap();
    let gate = |path: &Path| {
        let index = switchyard_format::Index::open(path, &Default::default()).unwrap();
        index.selection().unwrap().tools.gate_z
    };
    let without = warehouse_with_examples(model.as_ref(), dir.path(), "plain", &[]);
    let with = warehouse_with_examples(model.as_ref(), dir.path(), "six", &SIX_EXAMPLES);
    assert!(gate(&with) <= gate(&without), "{} > {}", gate(&with), gate(&without));
    // A colloquial task of a tool without examples still gets tools.
    let router = RouterBuilder::new(&with).build(model.clone()).unwrap();
    let d = router.route("the new stock from Porto came in this morning", &Default::default());
    assert!(!d.unwrap().tools.is_empty());
}

#[test]
fn a_tools_examples_do_not_draw_the_tasks_of_tools_without_them() {
    let Some(model) = model_or_skip("e5-small") else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = warehouse_with_examples(model.as_ref(), dir.path(), "six", &SIX_EXAMPLES);
    let router = RouterBuilder::new(&path).rank_all(true).build(model.clone()).unwrap();
    let top3 = |task: &str| -> Vec<String> {
        let d = router.route(task, &Default::default()).unwrap();
        d.tools.iter().take(3).map(|t| t.name.clone()).collect()
    };
    // `receive_delivery` has no example; `book_carrier_pickup`'s mentions pallets too.
    let got = top3("the pallet from Ceramica Rossi just arrived, book it in");
    assert!(got.contains(&"receive_delivery".to_string()), "{got:?}");
    // An example still brings its own tool first for a request phrased like it.
    assert_eq!(top3("get DHL to come by at 4 for the pallets")[0], "book_carrier_pickup");
}

#[test]
fn what_a_task_names_by_its_form_finds_the_tool_that_takes_it_in_any_language() {
    // The tasks say neither "url", "channel" nor "path"; the tools say so in their parameters
    // only. The hash embedder gives the dense side no help, so the lexical side decides.
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("servers");
    std::fs::create_dir_all(&m).unwrap();
    let tool = |name: &str, description: &str, param: &str| {
        format!(
            r#"{{"name": "{name}", "description": "{description}", "inputSchema": {{"type": "object", "properties": {{"{param}": {{"type": "string"}}}}}}}}"#
        )
    };
    let tools = [
        tool("fetch", "Gets a page and returns it as markdown", "url"),
        tool("post_message", "Posts a message", "channel_id"),
        tool("read_text_file", "Reads a document", "path"),
        tool("create_invoice", "Creates an invoice", "customer"),
        tool("list_orders", "Lists orders", "status"),
    ];
    write(&m, "tools.json", &format!("{{\"tools\": [{}]}}", tools.join(",")));
    let path = build(&m, &HashEmbedder::new(384), dir.path(), "x.idx");
    let model = Arc::new(HashEmbedder::new(384));
    let with = RouterBuilder::new(&path).build(model.clone()).unwrap();
    let without = RouterBuilder::new(&path).entity_terms(false).build(model).unwrap();
    let lexical = |router: &switchyard_router::Router, task: &str, tool: &str| {
        // (A tool left out of the selection has no lexical score to show, and counts as 0.)
        let d = router.route(task, &RouteOptions::default()).unwrap();
        d.tools.iter().find(|t| t.name == tool).and_then(|t| t.signals).map_or(0.0, |s| s.lexical)
    };
    for (task, tool) in [
        ("résume-moi https://example.org/q3", "fetch"),
        ("avisa no #geral que a reunião foi adiada", "post_message"),
        ("zeig mir /var/log/app/error.log", "read_text_file"),
    ] {
        assert!(lexical(&with, task, tool) > 0.0, "{task}: {tool} has no lexical score");
        assert_eq!(lexical(&without, task, tool), 0.0, "{task}: {tool} without the forms' words");
        let d = with.route(task, &RouteOptions::default()).unwrap();
        assert!(d.tool_names().contains(&tool), "{task}: {:?}", d.tools);
    }
}
