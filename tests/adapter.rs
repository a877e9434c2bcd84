//! The query adapter end to end: build-index stores it and maps the rows it should, the router
//! maps each task with it (and only for tools and skills), a build records which adapter it
//! used, and an adapter trained for another model is refused.
#![allow(clippy::unwrap_used)]

mod common;

use common::sre_catalog;
use std::path::Path;
use std::sync::Arc;
use switchyard::adapter::{Adapter, AdapterInfo};
use switchyard_build_index::{BuildOptions, BuildOutcome, build_to_file};
use switchyard_embed::{Embedder, HashEmbedder};
use switchyard_format::SectionKind;
use switchyard_router::{Decision, RouteOptions, RouterBuilder, SelectedBy};

const TASK: &str = "zebra quantum marmalade";

fn hash() -> Arc<dyn Embedder> {
    Arc::new(HashEmbedder::new(384))
}

fn with_adapter(path: &Path, adapter: &Adapter) -> BuildOptions {
    BuildOptions { adapter: Some((path.to_path_buf(), adapter.clone())), ..Default::default() }
}

/// A rank-1 query-side adapter that sends `task` (and nothing orthogonal to it) onto `target`.
fn steering(model: &dyn Embedder, task: &[f32], target: &[f32]) -> Adapter {
    let mut a = Adapter::identity(
        model.fingerprint().0,
        model.dim(),
        1,
        AdapterInfo { model: model.info().name.clone(), rank: 1, ..AdapterInfo::default() },
    );
    a.v = task.to_vec();
    a.u = target.iter().map(|x| 4.0 * x).collect();
    a
}

/// The best tool the task itself scored (a mode's base tools come in regardless).
fn best_scored(d: &Decision) -> Option<&str> {
    d.tools
        .iter()
        .filter(|t| t.by != SelectedBy::Base)
        .max_by(|a, b| a.score.total_cmp(&b.score))
        .map(|t| t.name.as_str())
}

#[test]
fn the_router_maps_the_task_with_the_index_adapter_for_tools_only() {
    let model = hash();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.idx");
    build_to_file(&sre_catalog(), &plain, model.as_ref(), &Default::default()).unwrap();
    let router = RouterBuilder::new(&plain).build(Arc::clone(&model)).unwrap();
    let before = router.route(TASK, &RouteOptions::default()).unwrap();
    // Steer the task to the tool it ranks last among those with a card row.
    let meta = router.index().meta();
    let target = meta.tools.last().unwrap();
    assert_ne!(best_scored(&before), Some(target.name.as_str()), "{:?}", before.tools);
    let card = router.index().matrix(SectionKind::Tools).row(target.first_row as usize).to_vec();
    let task = model.embed(TASK).unwrap();
    let adapter = steering(model.as_ref(), &task, &card);
    let file = dir.path().join("steer.swya");
    adapter.write(&file).unwrap();

    let adapted = dir.path().join("adapted.idx");
    let outcome = build_to_file(
        &sre_catalog(),
        &adapted,
        model.as_ref(),
        &with_adapter(&file, &Adapter::read(&file).unwrap()),
    )
    .unwrap();
    let BuildOutcome::Built(report) = outcome else { panic!("a new file must be built") };
    assert_eq!(report.adapter.as_deref(), Some(adapter.id().as_str()));
    // The build says what such an index routes without, naming the adapter's file.
    let said = format!("{}: warning: an index with a query adapter routes without", file.display());
    assert!(report.warnings.iter().any(|w| w.starts_with(&said)), "{:?}", report.warnings);
    let router = RouterBuilder::new(&adapted).build(Arc::clone(&model)).unwrap();
    assert_eq!(router.index().adapter().map(|a| a.id.as_str()), Some(adapter.id().as_str()));
    // Every task runs through the model and the adapter: no static answer bypasses it.
    assert!(router.index().static_space().is_none());
    // A card row is not query-like: a query-side adapter leaves it as the model gave it.
    let stored = router.index().matrix(SectionKind::Tools).row(target.first_row as usize);
    assert_eq!(stored, card.as_slice());

    let after = router.route(TASK, &RouteOptions::default()).unwrap();
    assert_eq!(best_scored(&after), Some(target.name.as_str()), "{:?}", after.tools);
    // The task vector handed to memory search and screening, and the mode step, are the model's.
    assert_eq!(after.embedding.as_deref(), before.embedding.as_deref());
    assert_eq!(after.mode, before.mode);
}

#[test]
fn a_build_records_its_adapter_and_a_change_of_adapter_rebuilds() {
    let model = hash();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.idx");
    let task = model.embed(TASK).unwrap();
    let adapter = steering(model.as_ref(), &task, &model.embed("restart a service").unwrap());
    let file = dir.path().join("a.swya");
    let options = with_adapter(&file, &adapter);
    assert!(matches!(
        build_to_file(&sre_catalog(), &out, model.as_ref(), &options),
        Ok(BuildOutcome::Built(_))
    ));
    assert!(matches!(
        build_to_file(&sre_catalog(), &out, model.as_ref(), &options),
        Ok(BuildOutcome::UpToDate { .. })
    ));
    // Dropping the adapter (--no-adapter) is a different index.
    assert!(matches!(
        build_to_file(&sre_catalog(), &out, model.as_ref(), &Default::default()),
        Ok(BuildOutcome::Built(_))
    ));
    assert!(switchyard_format::Index::open(&out, &Default::default()).unwrap().adapter().is_none());
}

#[test]
fn an_adapter_trained_for_another_model_is_refused_naming_both() {
    let model = hash();
    let dir = tempfile::tempdir().unwrap();
    let mut adapter = Adapter::identity(
        [9; 16],
        model.dim(),
        2,
        AdapterInfo { model: "e5-small".into(), rank: 2, ..AdapterInfo::default() },
    );
    adapter.u[0] = 1.0;
    let file = dir.path().join("e5.swya");
    let err = build_to_file(
        &sre_catalog(),
        &dir.path().join("x.idx"),
        model.as_ref(),
        &with_adapter(&file, &adapter),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("e5.swya was trained for model e5-small"), "{err}");
    assert!(err.contains(&format!("not for {}", model.info().name)), "{err}");
    assert!(!dir.path().join("x.idx").exists(), "nothing is written");
}

#[test]
fn an_adapter_trained_on_a_catalogs_own_cases_is_reproducible_and_builds_into_its_index() {
    use switchyard_eval::adapter::{AdapterTraining, SetSpec, TrainConfig, ValidationSplit};
    let model = hash();
    let dir = tempfile::tempdir().unwrap();
    let manifests = common::default_catalog();
    let training = AdapterTraining {
        sets: vec![SetSpec::catalog(&manifests, &manifests.join("cases.jsonl"))],
        validate_on: Vec::new(),
        cache_dir: dir.path().join("cache"),
        config: TrainConfig { max_epochs: 3, rank: 8, ..TrainConfig::default() },
        validation_every: 5,
        validation_split: ValidationSplit::Queries,
    };
    let train = || {
        switchyard_eval::train_adapter(
            model.as_ref(),
            &training,
            &switchyard_eval::no_progress,
            &|_| {},
        )
        .unwrap()
    };
    let adapter = train();
    let set = &adapter.info.sets[0];
    assert_eq!(set.name, "manifests+cases.jsonl");
    assert!(set.train_queries > 40 && set.validation_queries > 5, "{set:?}");
    assert!(set.validation_recall5_after >= set.validation_recall5_before, "{set:?}");
    // The second run reads the embeddings from the cache and must give the same bytes.
    assert_eq!(train().to_bytes(), adapter.to_bytes());

    let file = dir.path().join("own.swya");
    adapter.write(&file).unwrap();
    let out = dir.path().join("own.idx");
    build_to_file(&manifests, &out, model.as_ref(), &with_adapter(&file, &adapter)).unwrap();
    let router = RouterBuilder::new(&out).build(Arc::clone(&model)).unwrap();
    let d = router.route("fix the flaky login test", &RouteOptions::default()).unwrap();
    assert!(!d.tools.is_empty());
    assert_eq!(
        router.index().adapter().map(|a| a.trained_on.clone()),
        Some(vec![set.name.clone()])
    );
}

#[test]
fn eval_tools_builds_and_reports_an_index_with_the_adapter_and_a_split() {
    let model = hash();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tools.jsonl"),
        "{\"name\": \"get_weather\", \"description\": \"Today's forecast for a city\"}\n\
         {\"name\": \"book_flight\", \"description\": \"Reserve a seat on a flight\"}\n\
         {\"name\": \"send_email\", \"description\": \"Send an e-mail to someone\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("queries.jsonl"),
        "{\"query\": \"will it rain in Lisbon\", \"gold\": [\"get_weather\"], \"split\": \"test\"}\n\
         {\"query\": \"fly me to Rome on Friday\", \"gold\": [\"book_flight\"], \"split\": \"test\"}\n\
         {\"query\": \"mail Ana the report\", \"gold\": [\"send_email\"], \"split\": \"dev\"}\n",
    )
    .unwrap();
    let task = model.embed("will it rain in Lisbon").unwrap();
    let adapter = steering(model.as_ref(), &task, &model.embed("get weather").unwrap());
    let cfg = |adapter: Option<Adapter>, split: Option<&str>| switchyard_eval::ToolsEval {
        tools: dir.path().join("tools.jsonl"),
        queries: dir.path().join("queries.jsonl"),
        ks: vec![1, 3],
        cache_dir: dir.path().join("cache"),
        limit: None,
        lexical_weight: None,
        adapter,
        split: split.map(str::to_string),
        max_errors: 10,
    };
    let run =
        |c| switchyard_eval::eval_tools(&c, Arc::clone(&model), &switchyard_eval::no_progress);
    let with = run(cfg(Some(adapter.clone()), Some("test"))).unwrap();
    assert_eq!(with.index.adapter.as_deref(), Some(adapter.id().as_str()));
    assert_eq!(with.dataset.queries, 2, "only the test split");
    let without = run(cfg(None, None)).unwrap();
    assert_eq!(without.index.adapter, None);
    assert_ne!(with.index.path, without.index.path, "indexes are cached per adapter");
    let err = run(cfg(None, Some("train"))).unwrap_err().to_string();
    assert!(err.contains("no query has split \"train\""), "{err}");
}
