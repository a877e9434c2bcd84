//! Unrelated tasks get no tool (issue 18, item 4): the off-topic check of e5-small indexes,
//! general topics against the catalog's cards, and `fit` learning its margin from a catalog's
//! own unrelated tasks.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use common::*;
use std::path::PathBuf;
use std::sync::Arc;
use switchyard_router::{
    DropReason, FOREIGN_MARGIN_SHARE, RouteOptions, RouterBuilder, SelectedBy,
};

/// The off-topic check (e5-small): a task nearer to a general topic (jokes, trivia, recipes)
/// than to any tool or skill card gets none, in five languages (a task in another language
/// than the catalog by half the margin), while every one of the development catalog's 60 tasks
/// keeps its tools. MiniLM, which reads non-English tasks as
/// off-topic, has no such check.
#[test]
fn a_task_nearer_to_a_general_topic_than_to_any_card_gets_no_tool() {
    let Some(model) = model_or_skip("e5-small") else { return };
    let dir = tempfile::tempdir().unwrap();
    let catalog = root().join("tests/catalogs/dev-warehouse");
    let path = warehouse_index(&model);
    let router = RouterBuilder::new(&path).build(Arc::clone(&model)).unwrap();
    let off_topic = [
        "who won the football world cup in 2010",
        "what's a good name for a golden retriever puppy",
        "I can't sleep, any tips?",
        "sugere um filme de comédia para hoje à noite",
        "comment on dit merci en japonais",
        "schreib mir ein kurzes Gedicht über den Winter",
    ];
    for task in off_topic {
        let d = router.route(task, &RouteOptions::default()).unwrap();
        let check = d.off_topic.clone().unwrap();
        assert!(
            check.closed && check.topic_score - check.best_item_score >= check.margin,
            "{task}: {check:?}"
        );
        assert!(d.tools.is_empty() && d.skills.is_empty(), "{task}: {:?}", d.tools);
        assert!(!d.tool_gate.unwrap().open, "{task}");
        assert!(d.dropped.iter().any(|x| x.reason == DropReason::OffTopic), "{task}");
    }
    // A task in another language than the catalog clears half the index's margin; one in the
    // catalog's language the whole of it.
    let margin = |task: &str| {
        let d = router.route(task, &RouteOptions::default()).unwrap();
        (d.off_topic.unwrap().margin, d.language.is_some_and(|l| l.strength > 0.0))
    };
    let (english, moved) = margin(off_topic[0]);
    assert!(!moved);
    let (portuguese, moved) = margin(off_topic[3]);
    assert!(moved);
    assert!((portuguese - english * FOREIGN_MARGIN_SHARE).abs() < 1e-6, "{portuguese} {english}");
    let tasks = std::fs::read_to_string(catalog.join("tasks.jsonl")).unwrap();
    for line in tasks.lines() {
        let task = serde_json::from_str::<serde_json::Value>(line).unwrap()["task"]
            .as_str()
            .unwrap()
            .to_string();
        let d = router.route(&task, &RouteOptions::default()).unwrap();
        assert!(!d.off_topic.unwrap().closed, "{task}");
        assert!(!d.tools.is_empty(), "{task}");
    }
    // Turned off, the same task gets tools again.
    let open = RouterBuilder::new(&path).off_topic(false).build(Arc::clone(&model)).unwrap();
    let d = open.route(off_topic[1], &RouteOptions::default()).unwrap();
    assert!(d.off_topic.is_none() && !d.tools.is_empty(), "{:?}", d.tools);
    // A margin the lead never reaches keeps it open too.
    let wide = RouterBuilder::new(&path).off_topic_margin(Some(2.0)).build(Arc::clone(&model));
    let d = wide.unwrap().route(off_topic[1], &RouteOptions::default()).unwrap();
    assert!(!d.off_topic.unwrap().closed && !d.tools.is_empty(), "{:?}", d.tools);

    let Some(minilm) = model_or_skip("minilm") else { return };
    let path = build(&sre_catalog(), minilm.as_ref(), dir.path(), "sre.idx");
    let index = switchyard_format::Index::open(&path, &Default::default()).unwrap();
    assert!(index.off_topic().is_none());
}

/// A catalog that says in its `off_topic.toml` that it serves a general topic keeps tasks about
/// that topic open: the warehouse's own index closes "a name for a puppy" on `pets`; a copy
/// of the catalog that declares `pets` served has no `pets` row, lists it as served, and gives
/// the task tools (its nearest topic is then another, by less than the margin).
#[test]
fn a_topic_the_catalog_says_it_serves_never_closes_a_task() {
    let Some(model) = model_or_skip("e5-small") else { return };
    let task = "what's a good name for a golden retriever puppy";
    let shipped = RouterBuilder::new(warehouse_index(&model)).build(Arc::clone(&model)).unwrap();
    let check = shipped.route(task, &RouteOptions::default()).unwrap().off_topic.unwrap();
    assert!(check.closed && check.topic == "pets", "{check:?}");

    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("warehouse");
    std::fs::create_dir(&catalog).unwrap();
    for entry in std::fs::read_dir(root().join("tests/catalogs/dev-warehouse")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, catalog.join(path.file_name().unwrap())).unwrap();
    }
    std::fs::write(catalog.join("off_topic.toml"), "serves = [\"pets\"]\n").unwrap();
    let path = build(&catalog, model.as_ref(), dir.path(), "declared.idx");
    let index = switchyard_format::Index::open(&path, &Default::default()).unwrap();
    let section = index.off_topic().unwrap();
    assert!(section.covered.iter().any(|t| t == "pets"), "{:?}", section.covered);
    assert!(!section.names.iter().any(|t| t == "pets"), "{:?}", section.names);
    drop(index);
    let declared = RouterBuilder::new(&path).build(Arc::clone(&model)).unwrap();
    let d = declared.route(task, &RouteOptions::default()).unwrap();
    let check = d.off_topic.unwrap();
    assert!(check.topic != "pets" && !check.closed, "{check:?}");
    assert!(!d.tools.is_empty(), "{check:?}");
}

/// The development warehouse catalog built with e5-small once for the tests that need it (the
/// build takes about 15 s).
fn warehouse_index(model: &Arc<dyn switchyard_embed::Embedder>) -> PathBuf {
    static BUILT: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    let (_, path) = BUILT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let catalog = root().join("tests/catalogs/dev-warehouse");
        let path = build(&catalog, model.as_ref(), dir.path(), "w.idx");
        (dir, path)
    });
    path.clone()
}

#[test]
fn fit_lowers_the_off_topic_margin_when_unrelated_tasks_stay_open_and_keeps_real_tasks_open() {
    let Some(model) = model_or_skip("e5-small") else { return };
    let catalog = root().join("tests/catalogs/dev-warehouse");
    let path = warehouse_index(&model);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fitted.idx");
    let cfg = switchyard_eval::FitConfig {
        index: path.clone(),
        cases: catalog.join("tasks.jsonl"),
        off_topic: Some(catalog.join("offtopic.jsonl")),
        out: out.clone(),
        folds: 2,
    };
    let r = switchyard_eval::fit(&cfg, Arc::clone(&model), &switchyard_eval::no_progress).unwrap();
    let shipped = switchyard_format::Index::open(&path, &Default::default())
        .unwrap()
        .off_topic()
        .unwrap()
        .margin;
    assert_eq!(r.before.off_topic_margin, Some(shipped));
    let kept = r.groups.iter().find(|g| g.group == switchyard_eval::FitGroup::OffTopicMargin);
    assert!(kept.unwrap().kept, "{r:?}");
    let fitted_margin = r.after.off_topic_margin.unwrap();
    assert!(fitted_margin < shipped, "{:?}", r.after);
    let copy = switchyard_format::Index::open(&out, &Default::default()).unwrap();
    assert_eq!(copy.off_topic().unwrap().margin, fitted_margin);
    drop(copy);

    // More of the unrelated tasks get no tool, and every real task stays open.
    let given_none = |router: &switchyard_router::Router| {
        let text = std::fs::read_to_string(catalog.join("offtopic.jsonl")).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .map(|row| router.route(row["task"].as_str().unwrap(), &RouteOptions::default()))
            .filter(|d| d.as_ref().unwrap().tools.iter().all(|t| t.by == SelectedBy::Base))
            .count()
    };
    let before = RouterBuilder::new(&path).build(Arc::clone(&model)).unwrap();
    let after = RouterBuilder::new(&out).build(Arc::clone(&model)).unwrap();
    assert!(given_none(&after) > given_none(&before));
    let tasks = std::fs::read_to_string(catalog.join("tasks.jsonl")).unwrap();
    for line in tasks.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let d = after.route(row["task"].as_str().unwrap(), &RouteOptions::default()).unwrap();
        assert!(!d.off_topic.unwrap().closed, "{}", row["task"]);
    }
    assert_eq!(r.cross_validated_after.real_closed_off_topic_rate, Some(0.0));

    // `eval cases` reports the fitted index's off-topic figures beside the default's.
    let cache = tempfile::tempdir().unwrap();
    let cfg = switchyard_eval::CasesEval {
        manifests: catalog.clone(),
        cases: catalog.join("tasks.jsonl"),
        cache_dir: cache.path().to_path_buf(),
        fitted: Some(out.clone()),
        off_topic: Some(catalog.join("offtopic.jsonl")),
        adapter: None,
    };
    let report =
        switchyard_eval::eval_cases(&cfg, Arc::clone(&model), &switchyard_eval::no_progress);
    let report = report.unwrap();
    // And the fitted index's gain on each figure, paired by case: the difference of the two.
    let fitted_all = report.fitted.as_ref().unwrap();
    for (name, gain) in &report.fitted_gain {
        let of =
            |m: &std::collections::BTreeMap<String, serde_json::Value>| m[name].as_f64().unwrap();
        assert!(
            (gain.value - (of(fitted_all) - of(&report.overall))).abs() < 2e-3,
            "{name}: {gain:?}"
        );
    }
    assert!(report.fitted_gain.contains_key("tool_recall@3"), "{:?}", report.fitted_gain);
    let (default, fitted) = (report.off_topic.unwrap(), report.fitted_off_topic.unwrap());
    assert_eq!(default.all.given_no_tools, given_none(&before));
    assert_eq!(fitted.all.given_no_tools, given_none(&after));
    // Each task that got tools is listed with them, in file order.
    for o in [&default, &fitted] {
        assert_eq!(o.given_tools.len(), o.all.tasks - o.all.given_no_tools);
        assert!(o.given_tools.iter().all(|m| !m.tools.is_empty() && !m.task.is_empty()));
    }

    // A fitted index of another catalog (one description changed) is refused.
    let other = tempfile::tempdir().unwrap();
    for file in ["tools.toml", "skills.toml", "modes.toml"] {
        let text = std::fs::read_to_string(catalog.join(file)).unwrap();
        let text = text.replacen("Look up an order", "Find an order", 1);
        std::fs::write(other.path().join(file), text).unwrap();
    }
    let cfg = switchyard_eval::CasesEval { manifests: other.path().to_path_buf(), ..cfg };
    let e = switchyard_eval::eval_cases(&cfg, Arc::clone(&model), &switchyard_eval::no_progress);
    let e = e.unwrap_err().to_string();
    assert!(e.contains("was built from other manifests"), "{e}");
}

/// A catalog written in Spanish also gets the general topics in Spanish (after the English
/// rows, under the English names), so a Spanish task about jokes meets a Spanish card of the
/// topic as an English task meets the English one; an English catalog keeps the English topics
/// alone. A hash embedder scores shared words only, so without the Spanish cards the Spanish
/// task would share no word with any topic.
#[test]
fn a_catalog_in_another_language_gets_the_general_topics_in_its_language_too() {
    let mut model = Rewrapped::new(Arc::new(switchyard_embed::HashEmbedder::new(256)));
    model.info.off_topic_margin = Some(0.02);
    let model: Arc<dyn switchyard_embed::Embedder> = Arc::new(model);
    let dir = tempfile::tempdir().unwrap();
    let topics = switchyard_build_index::GENERAL_TOPICS.len();
    let english =
        build(&root().join("tests/catalogs/dev-warehouse"), model.as_ref(), dir.path(), "en.idx");
    let index = switchyard_format::Index::open(&english, &Default::default()).unwrap();
    let off = index.off_topic().unwrap();
    assert_eq!(off.names.len() + off.covered.len(), topics, "{:?}", off.covered);

    let spanish = build(
        &root().join("tests/catalogs/dev-warehouse-es"),
        model.as_ref(),
        dir.path(),
        "es.idx",
    );
    let index = switchyard_format::Index::open(&spanish, &Default::default()).unwrap();
    let off = index.off_topic().unwrap();
    let kept = topics - off.covered.len();
    assert_eq!(off.names.len(), 2 * kept, "{:?}", off.covered);
    assert_eq!(off.names[..kept], off.names[kept..], "the Spanish rows carry the English names");
    assert!(off.names.contains(&"jokes".to_string()), "{:?}", off.covered);

    let router = RouterBuilder::new(&spanish).build(Arc::clone(&model)).unwrap();
    let d = router
        .route("cuéntame un chiste o una historia graciosa", &RouteOptions::default())
        .unwrap();
    let check = d.off_topic.unwrap();
    assert!(check.closed && check.topic == "jokes", "{check:?}");
    assert!(d.tools.is_empty(), "{:?}", d.tools);
}
