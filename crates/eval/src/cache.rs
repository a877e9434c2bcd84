//! Indexes built for evaluation, kept between runs under a cache folder and keyed by the
//! catalog's content hash and the model's fingerprint, so a second run of the same catalog
//! with the same model embeds nothing.

use crate::{EvalError, Progress, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;
use switchyard_adapter::Adapter;
use switchyard_build_index::{ScreenTraining, build_bytes_with};
use switchyard_embed::Embedder;
use switchyard_format::{Index, OpenOptions};
use switchyard_manifest::Catalog;

/// Where an index came from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CachedIndex {
    /// The index file.
    pub path: PathBuf,
    /// Whether it was already there (nothing embedded).
    pub cached: bool,
    /// Time spent getting it, in milliseconds.
    pub build_ms: f64,
    /// The id of the query adapter it was built with.
    pub adapter: Option<String>,
}

/// Returns the cached index of `catalog` for `embedder` (and `adapter`), building it if needed.
pub fn cached_index(
    catalog: &Catalog,
    embedder: &dyn Embedder,
    adapter: Option<&Adapter>,
    cache_dir: &Path,
    progress: Progress<'_>,
) -> Result<CachedIndex> {
    let t0 = Instant::now();
    let dir = cache_dir.join("indexes");
    std::fs::create_dir_all(&dir).map_err(|source| EvalError::Io { path: dir.clone(), source })?;
    let hash = catalog.content_hash();
    let fp = embedder.fingerprint().to_hex();
    let adapter_id = adapter.map(Adapter::id);
    let suffix = adapter_id.as_ref().map(|id| format!("-a{id}")).unwrap_or_default();
    let path = dir.join(format!("{}-{}{suffix}.idx", &hash[..16], &fp[..16]));
    let up_to_date = Index::open(&path, &OpenOptions::new()).is_ok_and(|idx| {
        idx.meta().manifest_hash == hash
            && idx.header().fingerprint == embedder.fingerprint().0
            && idx.header().version == switchyard_format::FORMAT_VERSION
            && idx.selection().map(|s| s.builder_version)
                == Some(switchyard_build_index::BUILDER_VERSION)
            && idx.adapter().map(|a| a.id.clone()) == adapter_id
            && switchyard_build_index::late_matches(&idx, embedder)
            && switchyard_build_index::off_topic_matches(&idx, embedder, catalog.off_topic.check)
            && switchyard_build_index::language_shift_matches(&idx, embedder)
            && switchyard_build_index::mode_questions_match(&idx)
            && switchyard_build_index::screen_code_matches(&idx)
    });
    if !up_to_date {
        let report = |done: usize, all: usize| progress("build index", done, all);
        let bytes = build_bytes_with(
            catalog,
            embedder,
            &ScreenTraining::default(),
            adapter,
            Some(&report),
        )?
        .bytes;
        switchyard_format::write_atomic(&path, &bytes)
            .map_err(switchyard_build_index::BuildError::from)?;
    }
    Ok(CachedIndex {
        path,
        cached: up_to_date,
        build_ms: t0.elapsed().as_secs_f64() * 1e3,
        adapter: adapter_id,
    })
}
