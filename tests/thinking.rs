//! Thinking modes (issue 21): the manifest kind, keyword routing with conflicts and other
//! languages, the default, an explicit override, the semantic fallback's safety rule, scaffolds
//! and their Success Criteria, and the labelled problems' accuracy.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use common::*;
use std::path::Path;
use std::sync::Arc;
use switchyard_embed::{Embedder, HashEmbedder};
use switchyard_manifest::{Catalog, ManifestError};
use switchyard_router::{Router, RouterBuilder, ThinkingSource};

fn hash() -> Arc<dyn Embedder> {
    Arc::new(HashEmbedder::new(384))
}

fn default_router(dir: &Path) -> Router {
    let path = build(&default_catalog(), hash().as_ref(), dir, "x.idx");
    RouterBuilder::new(&path).build(hash()).unwrap()
}

#[test]
fn keyword_rules_route_problems_in_several_languages() {
    let dir = tempfile::tempdir().unwrap();
    let router = default_router(dir.path());
    for (problem, mode) in [
        ("We are moving the sessions to Redis. What could go wrong?", "red_team"),
        ("Quais são os riscos de trocar o banco agora?", "red_team"),
        ("Joue l'avocat du diable contre ce plan", "red_team"),
        ("Brainstorm names for the new CLI", "be_creative"),
        ("Welche Alternativen gibt es zu Cron?", "be_creative"),
        ("Dame ideas para el onboarding", "be_creative"),
        ("Let's go back to first principles: why do we cache at all?", "first_principles"),
        ("Repensons depuis les principes de base", "first_principles"),
        ("Sollen wir Go oder Rust nehmen? Wäge die Sichtweisen ab.", "council"),
        ("Quali sono i rischi di questo piano?", "red_team"),
        ("この計画のリスクは何ですか", "red_team"),
        ("给这个功能来一次头脑风暴", "be_creative"),
    ] {
        let d = router.think(problem, None).unwrap();
        assert_eq!(
            (d.mode.as_str(), d.source),
            (mode, ThinkingSource::Keyword),
            "{problem}: {d:?}"
        );
        assert!(!d.keywords.is_empty());
    }
}

#[test]
fn a_conflict_goes_to_the_mode_with_more_keywords_then_to_the_first_matched() {
    let dir = tempfile::tempdir().unwrap();
    let router = default_router(dir.path());
    // red_team: "what could go wrong" and "go wrong"; be_creative: "brainstorm*" only.
    let d = router.think("Brainstorm what could go wrong with the rollout", None).unwrap();
    assert_eq!(d.mode, "red_team", "{d:?}");
    assert_eq!(d.keywords.len(), 2, "both modes' hits are reported: {:?}", d.keywords);
    // One keyword each: the mode matched first in the text wins, and the detail says so.
    let d = router.think("Brainstorm the risks of the rollout", None).unwrap();
    assert_eq!(d.mode, "be_creative", "{d:?}");
    assert!(d.detail.contains("tied with red_team"), "{}", d.detail);
    let d = router.think("The risks: brainstorm them", None).unwrap();
    assert_eq!(d.mode, "red_team", "{d:?}");
}

#[test]
fn without_a_keyword_the_default_decides_and_the_model_is_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let counting = Counting::new(hash());
    let path = build(&default_catalog(), counting.as_ref(), dir.path(), "x.idx");
    let router = RouterBuilder::new(&path).build(counting.clone()).unwrap();
    let before = counting.calls();
    for problem in ["The integration tests take forty minutes", "O deploy está lento"] {
        let d = router.think(problem, None).unwrap();
        assert_eq!((d.mode.as_str(), d.source), ("council", ThinkingSource::Default), "{d:?}");
    }
    let d = router.think("what could go wrong here?", None).unwrap();
    assert_eq!(d.source, ThinkingSource::Keyword);
    // The hash embedder's examples support no margin, so nothing needed the model.
    assert_eq!(router.thinking().unwrap().calibration.semantic_margin, None);
    assert_eq!(counting.calls(), before);
}

#[test]
fn an_explicit_mode_wins_and_an_unknown_one_is_refused_with_the_list() {
    let dir = tempfile::tempdir().unwrap();
    let router = default_router(dir.path());
    let d = router.think("Brainstorm names for the CLI", Some("red_team")).unwrap();
    assert_eq!((d.mode.as_str(), d.source), ("red_team", ThinkingSource::Explicit));
    let d = router.think("Brainstorm names for the CLI", Some("auto")).unwrap();
    assert_eq!(d.mode, "be_creative");
    let e = router.think("anything", Some("devils_advocate")).unwrap_err().to_string();
    assert!(
        e.contains("\"devils_advocate\"")
            && e.contains("be_creative, council, first_principles, red_team"),
        "{e}"
    );
    let e = router.think("   ", None).unwrap_err().to_string();
    assert!(e.contains("problem") && e.contains("empty"), "{e}");
}

#[test]
fn every_scaffold_takes_the_problem_and_ends_in_three_to_five_success_criteria() {
    let dir = tempfile::tempdir().unwrap();
    let router = default_router(dir.path());
    let catalog = Catalog::load(&default_catalog()).unwrap();
    let names: Vec<&str> = catalog.thinking.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["be_creative", "council", "first_principles", "red_team"]);
    for mode in &catalog.thinking {
        assert!((3..=5).contains(&mode.criteria.len()), "{}: {:?}", mode.name, mode.criteria);
        let problem = "Should we shard the users table?";
        let d = router.think(problem, Some(&mode.name)).unwrap();
        let text = router.thinking_scaffold(&d, problem).unwrap();
        assert!(text.contains(problem) && !text.contains("{problem}"), "{text}");
        let footer = text.split("## Success Criteria").nth(1).expect("a Success Criteria footer");
        let items = footer.lines().filter(|l| l.trim_start().starts_with("- ")).count();
        assert_eq!(items, d.criteria.len(), "{}", mode.name);
    }
}

#[test]
fn a_catalog_without_thinking_modes_thinks_with_the_built_in_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(&sre_catalog(), hash().as_ref(), dir.path(), "sre.idx");
    let router = RouterBuilder::new(&path).build(hash()).unwrap();
    let d = router.think("We move the queue to Kafka next week. What could go wrong?", None);
    let d = d.unwrap();
    assert_eq!((d.mode.as_str(), d.source), ("red_team", ThinkingSource::Keyword), "{d:?}");
    let d = router.think("O deploy está lento", None).unwrap();
    assert_eq!((d.mode.as_str(), d.source), ("council", ThinkingSource::Default), "{d:?}");
    let text = router.thinking_scaffold(&d, "O deploy está lento").unwrap();
    assert!(text.contains("O deploy está lento") && text.contains("## Success Criteria"), "{text}");
}

#[test]
fn an_index_without_thinking_modes_says_how_to_add_them() {
    // The library's build_bytes keeps a catalog as it is: this index has no thinking modes,
    // like an index built before switchyard shipped its own.
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::load(&sre_catalog()).unwrap();
    assert!(catalog.thinking.is_empty());
    let (bytes, _, _) =
        switchyard_build_index::build_bytes(&catalog, hash().as_ref(), None).unwrap();
    let path = dir.path().join("bare.idx");
    std::fs::write(&path, bytes).unwrap();
    let router = RouterBuilder::new(&path).build(hash()).unwrap();
    let e = router.think("what could go wrong?", None).unwrap_err().to_string();
    assert!(e.contains("no thinking modes") && e.contains("switchyard build-index"), "{e}");
}

/// A manifest folder with one tool and the given thinking.toml and scaffold files.
fn folder(thinking: &str, scaffolds: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tools.toml"),
        "[[tool]]\nname = \"read_file\"\ndescription = \"Read a file\"\nmodes = [\"any\"]\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("thinking.toml"), thinking).unwrap();
    for (name, text) in scaffolds {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

const GOOD: &str = "Problem: {problem}\n\n## Success Criteria\n- one\n- two\n- three\n";

fn load_err(thinking: &str, scaffolds: &[(&str, &str)]) -> String {
    let dir = folder(thinking, scaffolds);
    match Catalog::load(dir.path()) {
        Err(e @ (ManifestError::Invalid { .. } | ManifestError::Parse { .. })) => e.to_string(),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn bad_thinking_manifests_are_refused_naming_file_line_and_field() {
    let one = |scaffold: &str| {
        format!(
            "[[thinking]]\nname = \"council\"\ndescription = \"d\"\nscaffold = \"{scaffold}\"\n"
        )
    };
    let e = load_err(&one("c.md"), &[("c.md", "## Success Criteria\n- a\n- b\n- c\n")]);
    assert!(e.contains("c.md:1: thinking.scaffold") && e.contains("{problem}"), "{e}");
    let e =
        load_err(&one("c.md"), &[("c.md", "Problem: {problem}\n## Success Criteria\n- a\n- b\n")]);
    assert!(e.contains("c.md:2: thinking.scaffold") && e.contains("has 2 items"), "{e}");
    let six = format!("Problem: {{problem}}\n## Success Criteria\n{}", "- x\n".repeat(6));
    let e = load_err(&one("c.md"), &[("c.md", &six)]);
    assert!(e.contains("has 6 items; write 3 to 5"), "{e}");
    let e = load_err(&one("c.md"), &[("c.md", "Problem: {problem}\nthink hard\n")]);
    assert!(e.contains("no \"Success Criteria\" heading"), "{e}");
    let e = load_err(&one("missing.md"), &[]);
    assert!(
        e.contains("thinking.toml:4: thinking.scaffold") && e.contains("does not exist"),
        "{e}"
    );
    let two_defaults = format!(
        "{}default = true\n{}default = true\n",
        one("c.md"),
        one("c.md").replace("council", "other")
    );
    let e = load_err(&two_defaults, &[("c.md", GOOD)]);
    assert!(e.contains("thinking.default") && e.contains("already the default"), "{e}");
    let e = load_err(&format!("{}colour = \"red\"\n", one("c.md")), &[("c.md", GOOD)]);
    assert!(e.contains("thinking.toml:5") && e.contains("colour"), "{e}");
    let e = load_err(&format!("{}{}", one("c.md"), one("c.md")), &[("c.md", GOOD)]);
    assert!(e.contains("thinking.name") && e.contains("already defined"), "{e}");
}

#[test]
fn operators_add_their_own_modes_and_the_semantic_fallback_decides_only_with_a_lead() {
    // Examples of one mode share their words and no other mode's, so the hash embedder's
    // leave-one-out is sure of them and the index stores a margin.
    let mut toml = String::new();
    let words = [("council", "budget staffing roadmap"), ("postmortem", "outage incident pager")];
    for (name, w) in words {
        toml += &format!(
            "[[thinking]]\nname = \"{name}\"\ndescription = \"{name} thinking\"\nscaffold = \"s.md\"\nexamples = [\"{w} one\", \"{w} two\", \"{w} three\", \"{w} four\"]\n"
        );
    }
    let dir = folder(&toml, &[("s.md", GOOD)]);
    let out = tempfile::tempdir().unwrap();
    let path = build(dir.path(), hash().as_ref(), out.path(), "own.idx");
    let router = RouterBuilder::new(&path).build(hash()).unwrap();
    let margin = router.thinking().unwrap().calibration.semantic_margin;
    assert!(margin.is_some(), "{:?}", router.thinking().unwrap().calibration);
    let d = router.think("outage incident pager again", None).unwrap();
    assert_eq!((d.mode.as_str(), d.source), ("postmortem", ThinkingSource::Semantic), "{d:?}");
    let d = router.think("completely unrelated words here", None).unwrap();
    assert_eq!((d.mode.as_str(), d.source), ("council", ThinkingSource::Default), "{d:?}");
    assert!(d.semantic.is_some_and(|s| !s.decided));
}

#[test]
fn labelled_problems_are_routed_by_the_keyword_rules_alone() {
    // The keyword rules do not depend on the model: with the hash embedder (no semantic margin)
    // this is their accuracy on the development half. The held-out half is reported in
    // benches/RESULTS.md with the real models, never tested against a figure here.
    let cache = tempfile::tempdir().unwrap();
    let cfg = switchyard_eval::ThinkingEval {
        manifests: default_catalog(),
        cases: root().join("tests/thinking/dev.jsonl"),
        cache_dir: cache.path().to_path_buf(),
    };
    let report = switchyard_eval::eval_thinking(&cfg, hash(), &|_, _, _| {}).unwrap();
    assert_eq!(report.overall.cases, 35);
    assert!(report.overall.accuracy >= 0.9, "{:?}", report.misses);
    assert_eq!(report.per_lang.len(), 5);
}

#[test]
fn the_assembler_puts_the_scaffold_in_the_task_layer_without_another_model_run() {
    use switchyard::{AssembleOptions, AssemblerBuilder, CACHE_BOUNDARY, H_TASK};
    let dir = tempfile::tempdir().unwrap();
    let counting = Counting::new(hash());
    let path = build(&default_catalog(), counting.as_ref(), dir.path(), "x.idx");
    let assembler = AssemblerBuilder::new(&path).build(counting.clone()).unwrap();
    let task = "We switch the payment provider on Friday. What could go wrong?";
    let plain_options =
        AssembleOptions { root: Some(std::path::PathBuf::from("/")), ..AssembleOptions::default() };
    let before = counting.calls();
    let plain = assembler.assemble(task, &plain_options).unwrap();
    let plain_calls = counting.calls() - before;
    let options = AssembleOptions { thinking: Some("auto".into()), ..plain_options.clone() };
    // A fresh assembler, so the task cache of the first one does not hide a model run.
    let assembler = AssemblerBuilder::new(&path).build(counting.clone()).unwrap();
    let before = counting.calls();
    let thought = assembler.assemble(task, &options).unwrap();
    assert_eq!(counting.calls() - before, plain_calls, "thinking adds no model run");
    let d = thought.thinking.as_ref().expect("the thinking decision is in the account");
    assert_eq!(d.mode, "red_team");
    // The stable prefix does not change; the task layer is the scaffold with the task in it.
    assert_eq!(thought.stable, plain.stable);
    assert!(plain.thinking.is_none());
    let task_layer = thought.prompt.split(H_TASK).last().unwrap();
    assert!(
        task_layer.contains(task) && task_layer.contains("## Success Criteria"),
        "{task_layer}"
    );
    assert!(task_layer.contains("at least five concrete failure modes"));
    assert_eq!(thought.prompt.matches(task).count(), 1, "the task is said once");
    assert!(thought.prompt.contains(CACHE_BOUNDARY));
    // A named mode wins; an unknown one is an error naming the modes.
    let named = AssembleOptions { thinking: Some("council".into()), ..plain_options.clone() };
    assert_eq!(assembler.assemble(task, &named).unwrap().thinking.unwrap().mode, "council");
    let bad = AssembleOptions { thinking: Some("sideways".into()), ..plain_options };
    let e = assembler.assemble(task, &bad).unwrap_err().to_string();
    assert!(e.contains("sideways") && e.contains("red_team"), "{e}");
}
