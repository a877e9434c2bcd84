//! The `switchyard` binary: help for every subcommand, and bad input answered with exit code 2
//! and a message naming the file and the fix.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchyard")).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_works_for_every_subcommand() {
    let top = run(&["--help"]);
    assert!(top.status.success());
    let text = String::from_utf8_lossy(&top.stdout).into_owned();
    for sub in [
        "embed",
        "build-index",
        "inspect",
        "verify",
        "route",
        "screen",
        "models",
        "assemble",
        "memory",
    ] {
        assert!(text.contains(sub), "{sub} missing from --help");
        let o = run(&[sub, "--help"]);
        assert!(o.status.success(), "{sub} --help failed");
        assert!(String::from_utf8_lossy(&o.stdout).contains("--json"), "{sub} has no --json");
    }
}

#[test]
fn a_garbage_index_is_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("junk.idx");
    std::fs::write(
        &path,
        b"definitely not an index, but long enough to have a header of sixty-four bytes",
    )
    .unwrap();
    for args in [
        vec!["verify", path.to_str().unwrap()],
        vec!["inspect", path.to_str().unwrap()],
        vec!["route", "x y z", "--index", path.to_str().unwrap()],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = stderr(&o);
        assert!(e.contains("junk.idx") && e.contains("switchyard build-index"), "{e}");
    }
}

#[test]
fn a_missing_manifest_folder_names_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&[
        "build-index",
        "--manifests",
        dir.path().to_str().unwrap(),
        "--out",
        dir.path().join("x.idx").to_str().unwrap(),
        "--model",
        "minilm",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    // Either the model is missing (says how to provision) or the folder has no tools.toml.
    assert!(e.contains("no tools.toml") || e.contains("provision.py"), "{e}");
}

#[test]
fn unknown_models_and_tokenizers_are_explained() {
    let o = run(&["embed", "hello there", "--model", "no-such-model"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("short name (minilm, e5-small)"), "{}", stderr(&o));
}
