//! Shared helpers of the end-to-end tests.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report
#![allow(dead_code)] // each test binary uses a different subset

use sha2::Digest;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use switchyard_embed::{Embedder, ModelInfo};

mod screening;
#[allow(unused_imports)] // only the screening tests use them
pub use screening::*;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn sre_catalog() -> PathBuf {
    root().join("tests/catalogs/sre")
}

pub fn default_catalog() -> PathBuf {
    root().join("manifests")
}

/// Writes a manifest file into a catalog folder.
pub fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).unwrap();
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
///
/// A catalog of this repository is built once per model into `target/tmp` and copied: a real
/// model's default index takes minutes to build in a debug build, and a dozen tests in several
/// test binaries need the same one. `build_to_file`'s own check (manifests, training files,
/// model fingerprint, format and builder versions) decides whether the cached file is still the
/// index these inputs give, so an edit to a catalog rebuilds it; the file's name carries a hash
/// of the library sources, so an edit to the code does too, version bump or not.
pub fn build(catalog: &Path, embedder: &dyn Embedder, dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    let Ok(relative) = catalog.strip_prefix(root()) else {
        switchyard_build_index::build_to_file(catalog, &out, embedder, &build_options())
            .expect("build");
        return out;
    };
    let cached = Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-indexes").join(format!(
        "{}-{}-{}-{}.idx",
        relative.to_string_lossy().replace(['/', '\\'], "_"),
        embedder.info().name,
        &embedder.fingerprint().to_hex()[..12],
        sources_hash()
    ));
    // Tests of one binary run in parallel: one builds, the others wait for its file.
    let lock = {
        static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
        let mut locks = LOCKS.get_or_init(Default::default).lock().unwrap();
        Arc::clone(locks.entry(cached.clone()).or_default())
    };
    let _guard = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    std::fs::create_dir_all(cached.parent().unwrap()).unwrap();
    switchyard_build_index::build_to_file(catalog, &cached, embedder, &build_options())
        .expect("build");
    std::fs::copy(&cached, &out).unwrap();
    out
}

/// Build options with the screen's vector cache in `target/tmp`, as `build-index` keeps one by
/// default: every real-model build trains the screen on the same thousands of built-in texts,
/// and embedding them is most of a build (about 240 of 300 s with e5-small in a debug build).
/// A vector read back is the model's own, so the index is byte-identical to an uncached build.
pub fn build_options() -> switchyard_build_index::BuildOptions {
    let mut options = switchyard_build_index::BuildOptions::default();
    options.screen.vector_cache = Some(switchyard_build_index::VectorCache::new(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("vector-cache"),
    ));
    options
}

/// A hash of every Rust source of the libraries an index build runs (`build-index/`, `crates/`).
fn sources_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, files);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        let mut files = Vec::new();
        walk(&root().join("build-index/src"), &mut files);
        walk(&root().join("crates"), &mut files);
        files.sort();
        let mut hasher = sha2::Sha256::new();
        for f in files {
            hasher.update(f.strip_prefix(root()).unwrap().to_string_lossy().as_bytes());
            hasher.update(std::fs::read(&f).unwrap());
        }
        hasher.finalize().iter().take(6).map(|b| format!("{b:02x}")).collect()
    })
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
    fn fitting_prefix(&self, text: &str, max_tokens: usize) -> switchyard_embed::Result<usize> {
        self.inner.fitting_prefix(text, max_tokens)
    }
    fn piece_ids(&self, text: &str) -> switchyard_embed::Result<Option<Vec<u32>>> {
        self.inner.piece_ids(text)
    }
    fn embed_pieces(&self, ids: &[u32]) -> switchyard_embed::Result<Vec<Vec<f32>>> {
        self.inner.embed_pieces(ids)
    }
    fn embed_with_tokens(
        &self,
        texts: &[&str],
        documents: bool,
    ) -> switchyard_embed::Result<Option<Vec<switchyard_embed::TokenStates>>> {
        self.calls.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed_with_tokens(texts, documents)
    }
    fn embed_with_layer(
        &self,
        texts: &[&str],
        layer: usize,
    ) -> switchyard_embed::Result<Option<Vec<switchyard_embed::LayeredVector>>> {
        self.calls.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed_with_layer(texts, layer)
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

/// A model seen through a wrapper: another [`ModelInfo`] (a late-interaction share a
/// `model.toml` might give) and, optionally, no token states (a wrapper that does not forward
/// them). Vectors are forwarded unchanged.
#[allow(dead_code)] // not every test binary uses it
pub struct Rewrapped {
    pub inner: Arc<dyn Embedder>,
    pub info: ModelInfo,
    pub token_states: bool,
}

#[allow(dead_code)]
impl Rewrapped {
    pub fn new(inner: Arc<dyn Embedder>) -> Self {
        Self { info: inner.info().clone(), inner, token_states: true }
    }
}

impl Embedder for Rewrapped {
    fn info(&self) -> &ModelInfo {
        &self.info
    }
    fn embed_batch(&self, texts: &[&str]) -> switchyard_embed::Result<Vec<Vec<f32>>> {
        self.inner.embed_batch(texts)
    }
    fn embed_documents(&self, texts: &[&str]) -> switchyard_embed::Result<Vec<Vec<f32>>> {
        self.inner.embed_documents(texts)
    }
    fn count_tokens(&self, text: &str) -> switchyard_embed::Result<usize> {
        self.inner.count_tokens(text)
    }
    fn fitting_prefix(&self, text: &str, max_tokens: usize) -> switchyard_embed::Result<usize> {
        self.inner.fitting_prefix(text, max_tokens)
    }
    fn embed_with_tokens(
        &self,
        texts: &[&str],
        documents: bool,
    ) -> switchyard_embed::Result<Option<Vec<switchyard_embed::TokenStates>>> {
        if self.token_states { self.inner.embed_with_tokens(texts, documents) } else { Ok(None) }
    }
    fn embed_with_layer(
        &self,
        texts: &[&str],
        layer: usize,
    ) -> switchyard_embed::Result<Option<Vec<switchyard_embed::LayeredVector>>> {
        self.inner.embed_with_layer(texts, layer)
    }
}
