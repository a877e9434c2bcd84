//! The mode step when the catalog's examples leave it unsure (issue 18): the question rule, the
//! best tools deciding with nearly all their votes, and the best tools deciding before a
//! default mode that is one topic among the others.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use switchyard_embed::HashEmbedder;
use switchyard_router::{
    CATCH_ALL_SHARE, ModeFilter, ModeSource, RouteOptions, RouterBuilder, TOOLS_DECIDE_SHARE,
};

/// A shop catalog whose lookup mode is written in questions and whose other modes, the declared
/// default among them, in commands; its tools carry no mode, so they favour none.
fn shop_catalog(dir: &Path) -> PathBuf {
    small_catalog(
        &dir.join("shop"),
        r#"
[[mode]]
name = "fulfil"
default = true
description = "Get orders out of the door."
examples = ["ship the three oldest orders", "pack order 12 in the big box", "move the jackets to aisle 4"]

[[mode]]
name = "lookup"
description = "Find out where things are without changing anything."
examples = ["where is order 5531", "how many blue mugs are left?", "which carrier took the Keller parcel"]

[[mode]]
name = "support"
description = "Deal with customers."
examples = ["refund the broken vase", "tell the buyer it will be two more days", "send her another lamp"]
"#,
        SHOP_TOOLS,
    )
}

/// The shop's tools, offered in every mode, so they favour none.
const SHOP_TOOLS: &str = r#"
[[tool]]
name = "find_order"
description = "Look up an order by number and show its status."
modes = ["any"]

[[tool]]
name = "ship_order"
description = "Buy a label and hand an order to the carrier."
modes = ["any"]

[[tool]]
name = "issue_refund"
description = "Refund a customer's payment."
modes = ["any"]
"#;

/// A catalog folder holding these modes and tools.
fn small_catalog(folder: &Path, modes: &str, tools: &str) -> PathBuf {
    std::fs::create_dir_all(folder).unwrap();
    write(folder, "modes.toml", modes);
    write(folder, "tools.toml", tools);
    folder.to_path_buf()
}

/// A router whose semantic guess never decides by the examples' lead alone (a margin no lead
/// reaches), so what decides an unsure task can be seen.
fn unsure_router(path: &Path) -> switchyard_router::Router {
    RouterBuilder::new(path)
        .semantic_margin(Some(10.0))
        .build(Arc::new(HashEmbedder::new(384)))
        .unwrap()
}

#[test]
fn an_unsure_guess_of_a_question_goes_to_the_modes_whose_examples_ask_questions() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = shop_catalog(dir.path());
    let path = build(&manifests, &HashEmbedder::new(384), dir.path(), "x.idx");
    let index = switchyard_format::Index::open(&path, &Default::default()).unwrap();
    let counts: Vec<(u32, u32)> =
        index.mode_questions().unwrap().modes.iter().map(|c| (c.examples, c.questions)).collect();
    assert_eq!(counts, [(3, 0), (3, 3), (3, 0)]);
    drop(index);
    // A margin no lead reaches: the examples' scores alone never decide here.
    let router = |question_modes: bool| {
        RouterBuilder::new(&path)
            .semantic_margin(Some(10.0))
            .question_modes(question_modes)
            .build(Arc::new(HashEmbedder::new(384)))
            .unwrap()
    };
    let on = router(true);
    for task in [
        "did order 7702 go out already?",
        "where is order 7702 now",
        "how many blue mugs do we have?",
    ] {
        let d = on.route(task, &RouteOptions::default()).unwrap();
        assert_eq!((d.mode.as_str(), d.mode_source), ("lookup", ModeSource::Semantic), "{task}");
        // Still a guess: tools outside the mode are ordered after, never dropped.
        assert_eq!(d.mode_filter, ModeFilter::Soft);
        let check = d.semantic_mode.unwrap();
        let rule = check.question.unwrap();
        assert_eq!(rule.modes, [("lookup".to_string(), 3)]);
        assert_eq!(rule.default_examples, 3);
        assert_eq!(check.best, "lookup");
        assert!(d.mode_detail.unwrap().contains("the task asks a question"));
    }
    // A command, or a request framed as a question, is not a question: the default decides.
    for task in ["ship order 7702 today", "can you ship order 7702 today?"] {
        let d = on.route(task, &RouteOptions::default()).unwrap();
        assert_eq!((d.mode.as_str(), d.mode_source), ("fulfil", ModeSource::Default), "{task}");
        assert_eq!(d.semantic_mode.unwrap().question, None);
    }
    // Turned off, the question goes to the default mode like any unsure guess.
    let d = router(false).route("did order 7702 go out already?", &RouteOptions::default());
    assert_eq!(d.unwrap().mode_source, ModeSource::Default);

    // A catalog whose default mode's examples ask a question says nothing about where questions
    // go: the rule stays out of it.
    let modes = std::fs::read_to_string(manifests.join("modes.toml")).unwrap();
    write(
        &manifests,
        "modes.toml",
        &modes.replace(
            "\"ship the three oldest orders\"",
            "\"can we ship the oldest orders\", \"is everything packed for today\"",
        ),
    );
    let path = build(&manifests, &HashEmbedder::new(384), dir.path(), "asks.idx");
    let d = unsure_router(&path).route("did order 7702 go out already?", &RouteOptions::default());
    let d = d.unwrap();
    assert_eq!((d.mode.as_str(), d.mode_source), ("fulfil", ModeSource::Default));
    assert_eq!(d.semantic_mode.unwrap().question, None);
}

/// A front desk whose default mode is written in commands and whose billing mode in questions,
/// and whose tools each belong to one mode.
fn front_desk_catalog(dir: &Path) -> PathBuf {
    small_catalog(
        &dir.join("front_desk"),
        r#"
[[mode]]
name = "front_desk"
default = true
description = "Appointments and arrivals."
examples = ["book Mr Jones in on Monday", "the four o'clock patient is here", "fit Lea in this afternoon"]

[[mode]]
name = "billing"
description = "Payments and prices."
examples = ["who is still sitting on an unpaid bill?", "how much does a check-up cost?", "did Mr Sato pay?"]
"#,
        r#"
[[tool]]
name = "waiting_room_status"
description = "Show who is waiting in the waiting room."
modes = ["front_desk"]

[[tool]]
name = "check_in_patient"
description = "Mark a patient as arrived for an appointment."
modes = ["front_desk"]

[[tool]]
name = "outstanding_balances"
description = "List patients' unpaid bills."
modes = ["billing"]

[[tool]]
name = "issue_refund"
description = "Refund a payment to a patient."
modes = ["billing"]
"#,
    )
}

#[test]
fn the_best_tools_decide_an_unsure_mode_with_nearly_all_their_votes_or_before_a_topic_default() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = front_desk_catalog(dir.path());
    let path = build(&manifests, &HashEmbedder::new(384), dir.path(), "x.idx");
    let router = unsure_router(&path);
    // The task reads like billing's first example, but every one of its best tools is the
    // front desk's: the tools decide, and the decision says so.
    let d = router.route("who is still sitting in the waiting room?", &RouteOptions::default());
    let d = d.unwrap();
    let check = d.semantic_mode.clone().unwrap();
    let favour = check.tools_favour.clone().unwrap();
    assert_eq!(favour.mode, "front_desk");
    assert!(favour.share >= TOOLS_DECIDE_SHARE, "{favour:?}");
    assert_eq!((d.mode.as_str(), d.mode_source), ("front_desk", ModeSource::Semantic));
    assert!(check.by_tools && check.decided && check.question.is_none(), "{check:?}");
    assert_eq!(d.mode_filter, ModeFilter::SkillsOnly);
    assert!(d.mode_detail.unwrap().contains("they decide"));
    assert_eq!(d.tools[0].name, "waiting_room_status");

    // A question whose best tools give their mode less of their votes is left to the question
    // rule.
    let d = router.route("how much is a refund for an appointment?", &RouteOptions::default());
    let d = d.unwrap();
    let check = d.semantic_mode.unwrap();
    let favour = check.tools_favour.unwrap();
    assert_eq!(favour.mode, "front_desk");
    assert!(favour.share < TOOLS_DECIDE_SHARE, "{favour:?}");
    assert_eq!(d.mode, "billing");
    assert!(!check.by_tools && check.question.is_some());
    // A command the examples are unsure of, whose best tools lean to billing without holding
    // nearly all their votes: the front desk offers half the tools, one topic among the
    // others, so the tools decide rather than it.
    assert!(router.index().meta().default_mode_tool_share().unwrap() < CATCH_ALL_SHARE);
    let task = "book Lea in and refund her";
    let d = router.route(task, &RouteOptions::default()).unwrap();
    let check = d.semantic_mode.clone().unwrap();
    let favour = check.tools_favour.clone().unwrap();
    assert_eq!(favour.mode, "billing");
    assert!(favour.share < TOOLS_DECIDE_SHARE, "{favour:?}");
    assert_eq!((d.mode.as_str(), d.mode_source), ("billing", ModeSource::Semantic));
    assert!(check.by_tools && check.question.is_none(), "{check:?}");
    assert!(d.mode_detail.clone().unwrap().contains("front_desk offers 50% of the tools"));

    // Where the front desk offers most of the tools it is the catalog's catch-all: the same
    // lean of the tools leaves the task to it.
    let tools = std::fs::read_to_string(manifests.join("tools.toml")).unwrap();
    let extra: String = ["print_badge", "lost_property", "parking_permit"]
        .iter()
        .map(|n| format!("\n[[tool]]\nname = \"{n}\"\nmodes = [\"front_desk\"]\n"))
        .collect();
    write(&manifests, "tools.toml", &format!("{tools}{extra}"));
    let path = build(&manifests, &HashEmbedder::new(384), dir.path(), "catch_all.idx");
    let router = unsure_router(&path);
    assert!(router.index().meta().default_mode_tool_share().unwrap() >= CATCH_ALL_SHARE);
    let d = router.route(task, &RouteOptions::default()).unwrap();
    let favour = d.semantic_mode.clone().unwrap().tools_favour.unwrap();
    assert_eq!(favour.mode, "billing");
    assert!(favour.share < TOOLS_DECIDE_SHARE, "{favour:?}");
    assert_eq!((d.mode.as_str(), d.mode_source), ("front_desk", ModeSource::Default));
}

#[test]
fn a_mode_the_tools_chose_leaves_the_tools_in_their_own_order() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = front_desk_catalog(dir.path());
    let tools = std::fs::read_to_string(manifests.join("tools.toml")).unwrap();
    let extra = r#"
[[tool]]
name = "refund_note"
description = "Leave a note for the front desk team."
modes = ["front_desk"]

[[tool]]
name = "payment_history"
description = "Past payments of a patient, and their refunds."
modes = ["billing"]
"#;
    write(&manifests, "tools.toml", &format!("{tools}{extra}"));
    let path = build(&manifests, &HashEmbedder::new(384), dir.path(), "x.idx");
    let router = unsure_router(&path);
    let d = router.route("refund the payment", &RouteOptions::default()).unwrap();
    // Billing's tools hold nearly all the votes, so they choose billing...
    assert_eq!((d.mode.as_str(), d.mode_source), ("billing", ModeSource::Semantic));
    assert!(d.semantic_mode.as_ref().unwrap().by_tools);
    assert_eq!(d.mode_filter, ModeFilter::SkillsOnly);
    assert!(d.mode_detail.unwrap().contains("keep their own order"));
    // ...and the front desk's note, second by its own score, stays second: billing's
    // history trails it by less than the penalty that would have put it first.
    let names: Vec<&str> = d.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names[..3], ["issue_refund", "refund_note", "payment_history"], "{names:?}");
    let fused = |i: usize| d.tools[i].signals.unwrap().fused;
    assert!(d.tools[1].signals.unwrap().outside_mode);
    let penalty = router.index().selection().unwrap().out_of_mode_penalty;
    assert!(fused(1) > fused(2) && fused(1) - fused(2) < penalty, "{:?}", d.tools);
}

/// The shop with two modes: support has one example that looks like a fulfilment task word for
/// word, while the fulfilment mode's examples share the task's words among them.
fn look_alike_catalog(dir: &Path) -> PathBuf {
    small_catalog(
        &dir.join("look-alike"),
        r#"
[[mode]]
name = "fulfil"
default = true
description = "Ship and pack orders."
examples = ["ship the oldest orders", "pack the orders today", "ship and pack the orders today"]

[[mode]]
name = "support"
description = "Deal with customers."
examples = ["refund the broken vase", "send the customer another lamp", "ship orders today for the angry customer"]
"#,
        SHOP_TOOLS,
    )
}

#[test]
fn a_mode_is_scored_by_what_its_examples_share_not_by_its_one_look_alike_example() {
    let dir = tempfile::tempdir().unwrap();
    let manifests = look_alike_catalog(dir.path());
    let path = build(&manifests, &HashEmbedder::new(384), dir.path(), "x.idx");
    let guess = |path: &Path| {
        let router = RouterBuilder::new(path)
            .semantic_margin(Some(0.0))
            .build(Arc::new(HashEmbedder::new(384)))
            .unwrap();
        router.route("ship orders today", &RouteOptions::default()).unwrap()
    };
    let d = guess(&path);
    assert_eq!((d.mode.as_str(), d.mode_source), ("fulfil", ModeSource::Semantic), "{d:#?}");
    assert_eq!(d.semantic_mode.as_ref().unwrap().best, "fulfil");

    // The same index as an older builder wrote it (its margin measured between each mode's best
    // row) is read that way: support's look-alike example wins there.
    let index = switchyard_format::Index::open(&path, &Default::default()).unwrap();
    let mut selection = index.selection().unwrap().clone();
    assert!(selection.modes_by_centroid());
    selection.builder_version = switchyard_format::MODE_CENTROIDS_SINCE - 1;
    let mut w = switchyard_format::IndexWriter::from_index(&index).unwrap();
    w.selection(&selection).unwrap();
    let older = dir.path().join("older.idx");
    w.write(&older).unwrap();
    let d = guess(&older);
    assert_eq!(d.semantic_mode.as_ref().unwrap().best, "support", "{d:#?}");
}
