//! Screening helpers shared by the injection tests: screening texts as `switchyard screen`
//! does, and checking that attacks stored in memory never reach an assembled prompt.

use super::root;
use std::path::Path;
use std::sync::Arc;
use switchyard::{AssembleOptions, AssemblerBuilder};
use switchyard_embed::{Embedder, HashEmbedder};
use switchyard_memory::{MemoryStore, embed_for_screening};
use switchyard_router::ScreenEntry;

/// The hash embedder the model-free tests screen with.
pub fn hash() -> Arc<dyn Embedder> {
    Arc::new(HashEmbedder::new(384))
}

pub fn options_here() -> AssembleOptions {
    AssembleOptions { root: Some(root()), ..AssembleOptions::default() }
}

/// Screens texts the way `switchyard screen` does: cut, embedded, screened.
pub fn screen_texts(
    router: &switchyard_router::Router,
    model: &dyn Embedder,
    texts: &[&str],
    windows: bool,
) -> switchyard_router::ScreenReport {
    let stored = embed_for_screening(
        model,
        texts,
        &router.prepare_config(),
        router.screen_triage().as_ref(),
        router.screen_layer(),
    )
    .unwrap();
    let entries: Vec<ScreenEntry<'_>> =
        texts.iter().zip(&stored).map(|(t, e)| switchyard::screen_entry(t, e, windows)).collect();
    router.screen(&entries).unwrap()
}

/// Stores each attack in a note that opens with `note` (so memory search offers it to the
/// tasks; only screening stands between it and the prompt) and `clean` alone, then checks that
/// every task's prompt keeps the clean note (`kept` is a part of it) and none of the attacks.
pub fn attacks_stay_out(
    index: &Path,
    model: &Arc<dyn Embedder>,
    (note, clean, kept): (&str, &str, &str),
    attacks: &[&str],
    tasks: &[&str],
) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let mut store = MemoryStore::open(&db).unwrap();
    for a in attacks {
        store.add(model.as_ref(), "memory", &format!("{note}\n{a}"), "test").unwrap();
    }
    store.add(model.as_ref(), "memory", clean, "test").unwrap();
    let mut b = AssemblerBuilder::new(index);
    b.memory_db(Some(db)).max_memories(8);
    let a = b.build(Arc::clone(model)).unwrap();
    for task in tasks {
        let out = a.assemble(task, &options_here()).unwrap();
        for attack in attacks {
            assert!(!out.prompt.contains(attack), "{task:?}: {attack:?} reached the prompt");
        }
        assert_eq!(out.context.screened_out, attacks.len(), "{:?}", out.context);
        assert!(
            out.context.memories.iter().any(|m| m.contains(kept)),
            "the clean note is kept: {:?}",
            out.context
        );
    }
}
