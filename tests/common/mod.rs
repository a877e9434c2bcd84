//! Shared helpers of the end-to-end tests.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use switchyard_embed::{Embedder, ModelInfo};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn sre_catalog() -> PathBuf {
    root().join("tests/catalogs/sre")
}

pub fn default_catalog() -> PathBuf {
    root().join("manifests")
}

/// Loads a real model, or skips (returns None) with a message; with
/// `SWITCHYARD_REQUIRE_MODELS=1` (CI) a missing model fails instead.
pub fn model_or_skip(name: &str) -> Option<Arc<dyn Embedder>> {
    match switchyard_embed::load(name) {
        Ok(m) => Some(Arc::new(m)),
        Err(e) => {
            assert!(
                std::env::var("SWITCHYARD_REQUIRE_MODELS").as_deref() != Ok("1"),
                "SWITCHYARD_REQUIRE_MODELS=1 but {name} is missing: {e}"
            );
            eprintln!("skipping: {e}");
            None
        }
    }
}

/// Builds an index of `catalog` with `embedder` into `dir`.
pub fn build(catalog: &Path, embedder: &dyn Embedder, dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    switchyard_build_index::build_to_file(catalog, &out, embedder, &Default::default())
        .expect("build");
    out
}

/// Wraps an embedder and counts the texts it embeds.
pub struct Counting {
    pub inner: Arc<dyn Embedder>,
    pub calls: AtomicUsize,
}

impl Counting {
    pub fn new(inner: Arc<dyn Embedder>) -> Arc<Self> {
        Arc::new(Self { inner, calls: AtomicUsize::new(0) })
    }
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Embedder for Counting {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }
    fn embed_batch(&self, texts: &[&str]) -> switchyard_embed::Result<Vec<Vec<f32>>> {
        self.calls.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed_batch(texts)
    }
    fn embed_documents(&self, texts: &[&str]) -> switchyard_embed::Result<Vec<Vec<f32>>> {
        self.calls.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed_documents(texts)
    }
    fn count_tokens(&self, text: &str) -> switchyard_embed::Result<usize> {
        self.inner.count_tokens(text)
    }
    fn piece_ids(&self, text: &str) -> switchyard_embed::Result<Option<Vec<u32>>> {
        self.inner.piece_ids(text)
    }
    fn embed_pieces(&self, ids: &[u32]) -> switchyard_embed::Result<Vec<Vec<f32>>> {
        self.inner.embed_pieces(ids)
    }
}

/// An embedder with a model's identity that always fails, or sleeps past any budget.
pub struct Broken {
    pub info: ModelInfo,
    pub sleep: Option<std::time::Duration>,
}

impl Embedder for Broken {
    fn info(&self) -> &ModelInfo {
        &self.info
    }
    fn embed_batch(&self, texts: &[&str]) -> switchyard_embed::Result<Vec<Vec<f32>>> {
        if let Some(d) = self.sleep {
            std::thread::sleep(d);
            return Ok(texts.iter().map(|_| vec![0.0; self.info.dim]).collect());
        }
        Err(switchyard_embed::EmbedError::Forward {
            model: self.info.name.clone(),
            message: "simulated failure".into(),
        })
    }
    fn count_tokens(&self, _: &str) -> switchyard_embed::Result<usize> {
        Ok(1)
    }
}
