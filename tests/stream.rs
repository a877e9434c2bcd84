//! The conversation stream (issue 21): idempotent appends, per-stage views, level gating,
//! private thoughts, loud failures, and a stage's prompt holding exactly what it may see.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use common::*;
use std::path::Path;
use std::sync::Arc;
use switchyard::{AssembleOptions, AssemblerBuilder, H_TASK, history_from_stream};
use switchyard_embed::{Embedder, HashEmbedder};
use switchyard_stream::{MessageType, NewMessage, Policy, Stages, Stream, StreamError};

const STAGES: &str = r#"
[[stage]]
name = "director"

[[stage]]
name = "researcher"
policy = "own"

[[stage]]
name = "narrator"
types = ["say", "result", "system"]

[[stage]]
name = "critic"
policy = "turn"
min_level = 2
"#;

fn stream(dir: &Path) -> Stream {
    Stream::open(&dir.join("s.db"), Stages::parse(Path::new("stages.toml"), STAGES).unwrap())
        .unwrap()
}

fn msg(id: &str, stage: &str, kind: MessageType, turn: &str, content: &str) -> NewMessage {
    NewMessage {
        id: id.into(),
        stage: stage.into(),
        kind,
        turn: turn.into(),
        content: content.into(),
    }
}

/// A small pipeline: two turns, every stage speaking, a private thought, a tool call and result.
fn pipeline(s: &mut Stream) {
    use MessageType::*;
    for m in [
        msg("d1", "director", Say, "1", "Act one ends at the harbour."),
        msg("d2", "director", Thought, "1", "PRIVATE-director: the narrator is unreliable"),
        msg("r1", "researcher", ToolCall, "1", "search: 1890s harbour trades"),
        msg("r2", "researcher", Result, "1", "tar, rope, herring"),
        msg("r3", "researcher", Thought, "1", "PRIVATE-researcher: sources are thin"),
        msg("n1", "narrator", Say, "2", "The harbour smelled of tar."),
        msg("s1", "director", System, "2", "turn 2 begins"),
    ] {
        s.append(&m).unwrap();
    }
}

fn ids(view: &[switchyard_stream::Message]) -> Vec<&str> {
    view.iter().map(|m| m.id.as_str()).collect()
}

#[test]
fn a_retried_append_never_duplicates_and_a_reused_id_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = stream(dir.path());
    let m = msg("m1", "director", MessageType::Say, "1", "Act one.");
    let first = s.append(&m).unwrap();
    let again = s.append(&m).unwrap();
    assert!(!first.duplicate && again.duplicate && first.seq == again.seq);
    let err = s.append(&NewMessage { content: "Another act.".into(), ..m.clone() }).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("stage director: message id \"m1\" already holds another message"),
        "{err}"
    );
    // Retries racing from several connections still store the message once.
    let db = dir.path().join("s.db");
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let db = db.clone();
            scope.spawn(move || {
                let stages = Stages::parse(Path::new("stages.toml"), STAGES).unwrap();
                let mut s = Stream::open(&db, stages).unwrap();
                for _ in 0..10 {
                    s.append(&msg("race", "narrator", MessageType::Say, "1", "once")).unwrap();
                }
            });
        }
    });
    let view = s.view("director", Some(Policy::Public), None).unwrap();
    assert_eq!(view.iter().filter(|m| m.id == "race").count(), 1);
    assert_eq!(view.len(), 2);
}

#[test]
fn views_follow_the_policy_and_private_thoughts_stay_with_their_owner() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = stream(dir.path());
    pipeline(&mut s);
    // public: everything but other stages' thoughts.
    assert_eq!(ids(&s.view("director", None, None).unwrap()), ["d1", "d2", "r1", "r2", "n1", "s1"]);
    // own: the stage's messages, its thoughts included.
    assert_eq!(ids(&s.view("researcher", None, None).unwrap()), ["r1", "r2", "r3"]);
    assert_eq!(ids(&s.view("director", Some(Policy::Own), None).unwrap()), ["d1", "d2", "s1"]);
    // types: the narrator sees no tool calls of others.
    assert_eq!(ids(&s.view("narrator", None, None).unwrap()), ["d1", "r2", "n1", "s1"]);
    // turn: the latest turn only; --last.
    assert_eq!(ids(&s.view("director", Some(Policy::Turn), None).unwrap()), ["n1", "s1"]);
    assert_eq!(ids(&s.view("director", None, Some(2)).unwrap()), ["n1", "s1"]);
    // No view of any other stage holds a private thought it does not own.
    for stage in ["director", "researcher", "narrator"] {
        for policy in [Policy::Own, Policy::Public, Policy::Turn] {
            let Ok(view) = s.view(stage, Some(policy), None) else { continue };
            for m in view.iter().filter(|m| m.kind == MessageType::Thought) {
                assert_eq!(m.stage, stage, "{stage} {policy:?} saw {m:?}");
            }
        }
    }
    // A stage limited to its own view may not ask for a wider one.
    let err = s.view("researcher", Some(Policy::Public), None).unwrap_err().to_string();
    assert!(err.contains("stage researcher: may see only its \"own\" view"), "{err}");
}

#[test]
fn a_stage_joins_only_once_its_level_is_reached() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = stream(dir.path());
    pipeline(&mut s);
    let early = msg("c1", "critic", MessageType::Say, "2", "Too slow.");
    for err in [s.view("critic", None, None).unwrap_err(), s.append(&early).unwrap_err()] {
        let text = err.to_string();
        assert!(
            text.starts_with("stage critic: joins at state level 2, and the stream is at level 0"),
            "{text}"
        );
    }
    s.set_level(1).unwrap();
    assert!(s.view("critic", None, None).is_err());
    s.set_level(2).unwrap();
    assert_eq!(s.level().unwrap(), 2);
    s.append(&early).unwrap();
    assert_eq!(ids(&s.view("critic", None, None).unwrap()), ["n1", "s1", "c1"]);
}

#[test]
fn malformed_messages_and_stage_files_are_refused_naming_the_stage_and_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = stream(dir.path());
    let cases = [
        (
            msg("x", "ghost", MessageType::Say, "1", "boo"),
            "stage ghost: no such stage in stages.toml (defined: director, researcher, narrator, critic)",
        ),
        (
            msg("", "director", MessageType::Say, "1", "hi"),
            "stage director: message id \"\" must be",
        ),
        (
            msg("x", "director", MessageType::Say, " ", "hi"),
            "stage director: message x: the turn is empty",
        ),
        (
            msg("x", "director", MessageType::Say, "1", "  "),
            "stage director: message x: the content is empty",
        ),
    ];
    for (m, want) in cases {
        let err = s.append(&m).unwrap_err();
        assert!(matches!(err, StreamError::Refused { .. }));
        assert!(err.to_string().starts_with(want), "{err}");
    }
    let bad = |text: &str| Stages::parse(Path::new("stages.toml"), text).unwrap_err().to_string();
    let e = bad("[[stage]]\nname = \"a\"\npolicy = \"everything\"\n");
    assert!(e.starts_with("stages.toml:3: stage.policy: policy \"everything\" is not known; use own, public or turn"), "{e}");
    let e = bad("[[stage]]\nname = \"a\"\ntypes = [\"say\", \"shout\"]\n");
    assert!(e.starts_with("stages.toml:3: stage.types: message type \"shout\""), "{e}");
    let e = bad("[[stage]]\nname = \"a\"\n[[stage]]\nname = \"a\"\n");
    assert!(e.starts_with("stages.toml:4: stage.name") && e.contains("defined twice"), "{e}");
    let e = bad("[[stage]]\nname = \"A b\"\n");
    assert!(e.contains("stage.name") && e.contains("not allowed"), "{e}");
    let e = bad("[[stage]]\nname = \"a\"\nlevel = 3\n");
    assert!(e.starts_with("stages.toml:3:") && e.contains("level"), "{e}");
    assert!(bad("").contains("no [[stage]] entries"));
}

#[test]
fn a_private_thought_never_reaches_another_stages_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = stream(dir.path());
    pipeline(&mut s);
    let model: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(384));
    let index = build(&default_catalog(), model.as_ref(), dir.path(), "x.idx");
    let assembler = AssemblerBuilder::new(&index).build(model).unwrap();
    let prompt_for = |stage: &str| {
        let view = s.view(stage, None, None).unwrap();
        let options = AssembleOptions {
            root: Some(std::path::PathBuf::from("/")),
            history: history_from_stream(&view, stage),
            ..AssembleOptions::default()
        };
        assembler.assemble("Write the next scene", &options).unwrap().prompt
    };
    let director = prompt_for("director");
    let researcher = prompt_for("researcher");
    let narrator = prompt_for("narrator");
    assert!(director.contains("PRIVATE-director") && !director.contains("PRIVATE-researcher"));
    assert!(researcher.contains("PRIVATE-researcher") && !researcher.contains("PRIVATE-director"));
    assert!(!narrator.contains("PRIVATE-"), "{narrator}");
    // The narrator's prompt holds exactly its view: others under their names, its own turns as
    // the assistant's, the researcher's tool result as a tool entry, no tool call.
    assert!(narrator.contains("- [director] Act one ends at the harbour."));
    assert!(narrator.contains("- [assistant] The harbour smelled of tar."));
    assert!(narrator.contains("- [tool researcher] tar, rope, herring"));
    assert!(!narrator.contains("search: 1890s"));
    assert!(researcher.contains("search: 1890s") && !researcher.contains("Act one ends"));
    assert!(narrator.split(H_TASK).last().unwrap().contains("Write the next scene"));
}
