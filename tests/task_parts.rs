//! A task that asks for several things is also scored sentence by sentence: each part's vector
//! is pooled from the task's one pass, and each part can bring up its own tool (issue 18:
//! queries that need several tools).
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use common::*;
use switchyard_router::{RouteOptions, RouterBuilder};

#[test]
fn each_sentence_of_a_task_is_scored_alone_and_brings_up_its_own_tool() {
    let Some(model) = model_or_skip("e5-small") else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = build(&default_catalog(), model.as_ref(), dir.path(), "default.idx");
    let router = RouterBuilder::new(&path).build(model.clone()).unwrap();
    let task = "The old build artifacts are still in dist/. Delete that folder. Then look up the \
                React documentation for the useEffect hook. Finally, open a pull request with \
                the changes.";
    let d = router.route(task, &RouteOptions::default()).unwrap();
    assert_eq!(
        d.parts,
        [
            "The old build artifacts are still in dist/.",
            "Delete that folder.",
            "Then look up the React documentation for the useEffect hook.",
            "Finally, open a pull request with the changes.",
        ]
    );
    let names = d.tool_names();
    for tool in ["delete_file", "docs_lookup", "create_pull_request"] {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }
    // The decision says which part ranked a pick, where a part ranked it higher than the whole
    // task did (since session 55 the whole task ranks these three itself; a part still ranks
    // another pick).
    let by_part: Vec<(&str, usize)> = d
        .tools
        .iter()
        .filter_map(|t| t.signals.as_ref().unwrap().part.map(|p| (t.name.as_str(), p)))
        .collect();
    assert!(!by_part.is_empty(), "no pick ranked by a part: {:?}", d.tools);
    assert!(by_part.iter().all(|&(_, p)| p < d.parts.len()), "{by_part:?}");

    // Scored whole, the same task does not rank by any part.
    let whole = RouterBuilder::new(&path).task_parts(false).build(model.clone()).unwrap();
    let w = whole.route(task, &RouteOptions::default()).unwrap();
    assert!(w.parts.is_empty());
    assert!(w.tools.iter().all(|t| t.signals.as_ref().unwrap().part.is_none()));

    // Titles, initials and one-sentence tasks are not cut.
    for one in ["ask Dr. Silva to review the diff", "run the unit tests"] {
        assert!(router.route(one, &RouteOptions::default()).unwrap().parts.is_empty(), "{one}");
    }
}

#[test]
fn a_run_of_token_states_pools_as_the_model_pools_the_whole_text() {
    let Some(model) = model_or_skip("e5-small") else { return };
    let text = "Delete the staging machine. Then post the release notes in the channel.";
    let states = model.embed_with_tokens(&[text], false).unwrap().unwrap().pop().unwrap();
    let mut pooled = vec![0.0; states.dim()];
    states.pool_run(0..states.ids.len(), &mut pooled).unwrap();
    let cos: f32 = pooled.iter().zip(&states.vector).map(|(a, b)| a * b).sum();
    assert!(cos > 0.9999, "the whole run pools to {cos} of the text's vector");
    // A part alone is another vector.
    let mut first = vec![0.0; states.dim()];
    states.pool_run(0..5, &mut first).unwrap();
    let part_cos: f32 = first.iter().zip(&states.vector).map(|(a, b)| a * b).sum();
    assert!(part_cos < cos - 1e-3, "{part_cos} against {cos}");
    assert!(states.pool_run(0..0, &mut first).is_none());
}
