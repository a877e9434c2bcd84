//! Test models: the hash embedder with settings a real model's `model.toml` gives.

use switchyard_embed::{Embedder, HashEmbedder, ModelInfo};

/// The hash embedder with an off-topic margin, as a real model's `model.toml` gives one.
pub(crate) struct WithMargin(HashEmbedder, ModelInfo);

impl WithMargin {
    pub(crate) fn new() -> Self {
        let hash = HashEmbedder::new(64);
        let mut info = hash.info().clone();
        info.off_topic_margin = Some(0.02);
        Self(hash, info)
    }

    /// The same with late interaction at `share`, as e5-small's and MiniLM's settings give.
    pub(crate) fn with_late_interaction(mut self, share: f32) -> Self {
        self.1.late_interaction = share;
        self
    }
}

impl Embedder for WithMargin {
    fn info(&self) -> &ModelInfo {
        &self.1
    }
    fn embed_batch(&self, texts: &[&str]) -> switchyard_embed::Result<Vec<Vec<f32>>> {
        self.0.embed_batch(texts)
    }
    fn count_tokens(&self, text: &str) -> switchyard_embed::Result<usize> {
        self.0.count_tokens(text)
    }
}
