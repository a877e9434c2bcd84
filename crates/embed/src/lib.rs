//! Sentence embeddings for switchyard.
//!
//! The [`Embedder`] trait is what the rest of switchyard depends on: a fingerprint that names the
//! exact model, a width, and batched embedding of texts into L2-normalised vectors. The candle
//! implementation ([`BertEmbedder`], feature `candle`, on by default) runs BERT-family encoders
//! from a model folder provisioned by `models/provision.py`, from any Hugging Face BERT folder,
//! or from the local Hugging Face cache. [`HashEmbedder`] is a deterministic stand-in for tests.
//!
//! **Settings.** Every choice about how the encoder runs (weight storage, matrix kernel, engine)
//! is an [`EmbedOptions`] passed to [`load_with`]; no engine setting is read from the
//! environment. The `switchyard` command builds them from `SWITCHYARD_WEIGHTS`,
//! `SWITCHYARD_KERNEL`, `SWITCHYARD_ENGINE` and `SWITCHYARD_Q4_MATMUL`
//! ([`EmbedOptions::from_vars`], [`SETTINGS`]). Where a model's files are looked for:
//! [`model_search_dirs`]: folders the caller passes first ([`load_in`], [`resolve_in`]; the
//! command and the Python package pass `$SWITCHYARD_MODELS`), then `models/` near the current
//! folder and the executable. The library reads no variable of its own (the Hugging Face cache
//! follows `HF_HOME`, through `hf-hub`).
//!
//! **Ready-to-map files.** The first load of a model writes its tokenizer's Unigram table and the
//! packed encoder for this storage and kernel beside the model's files; later loads map them
//! (see the crate README; [`BertEmbedder::prepared_files`], [`LoadSource`]).
//!
//! **Features.** `candle` (default): the encoders. `hf-hub`: models from the local Hugging Face
//! cache. `mkl` / `accelerate`: a BLAS under candle's own operations, which only the portable
//! engine ([`EngineChoice::Candle`]) uses; the default engine multiplies with this crate's kernels
//! on the CPU. There is no GPU feature: every forward runs on the CPU.
//!
//! ```
//! use switchyard_embed::{Embedder, HashEmbedder};
//!
//! let embedder = HashEmbedder::new(64);
//! let v = embedder.embed("run the unit tests").unwrap();
//! assert_eq!(v.len(), embedder.dim());
//! let norm: f32 = v.iter().map(|x| x * x).sum();
//! assert!((norm - 1.0).abs() < 1e-5);
//! ```
#![deny(missing_docs)]

#[cfg(feature = "candle")]
pub use crate::cpu::kernel::kernel_name;
pub use crate::error::{EmbedError, Result};
pub use crate::fingerprint::{Fingerprint, sha256_file, sha256_hex};
pub use crate::hash_embedder::HashEmbedder;
pub use crate::options::{EmbedOptions, EngineChoice, KernelChoice, SETTINGS, WeightsChoice};
pub use crate::static_table::{Coverage, StaticTable};
pub use crate::token_states::TokenStates;

/// The matrix kernel in use: none without the `candle` feature (no transformer is compiled in).
#[cfg(not(feature = "candle"))]
pub fn kernel_name() -> &'static str {
    "none"
}

pub use crate::model::{
    DEFAULT_LATE_INTERACTION, DEFAULT_MODEL, LanguageShift, ModelFile, ModelInfo,
    ModelSourcePackage, ModelSpec, Pooling, ResolvedModel, SHORT_NAMES, WeightFormat, from_dir,
    model_search_dirs, resolve, resolve_in,
};

#[cfg(feature = "candle")]
pub use crate::bert_embedder::{BertEmbedder, LoadTimings};
#[cfg(feature = "candle")]
pub use crate::tokenize::LoadSource;
/// The former name of [`BertEmbedder`] (it named a library that, on the default path, neither
/// multiplies nor attends).
#[cfg(feature = "candle")]
#[deprecated(since = "0.1.0", note = "renamed BertEmbedder")]
pub type CandleEmbedder = BertEmbedder;

#[cfg(feature = "candle")]
mod bert;
#[cfg(feature = "candle")]
mod bert_embedder;
#[cfg(feature = "candle")]
mod cpu;
#[cfg(feature = "candle")]
mod e5file;
mod error;
mod fingerprint;
mod hash_embedder;
mod model;
mod options;
#[cfg(feature = "candle")]
mod prepared;
mod static_table;
mod token_states;
#[cfg(feature = "candle")]
mod tokenize;
#[cfg(feature = "candle")]
mod words;

/// A text's unit vector and the unit vector pooled from a middle layer's states (see
/// [`Embedder::embed_with_layer`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LayeredVector {
    /// The final vector, as [`Embedder::embed_batch`] gives it.
    pub vector: Vec<f32>,
    /// The middle layer's states, pooled like the final ones and normalised.
    pub middle: Vec<f32>,
}

/// Embeds texts for the injection screen, in chunks of 64: each text's final vector and, with
/// a `layer`, that middle layer's pooled vector from the same forward pass (see
/// [`Embedder::embed_with_layer`]); without one, `middle` is empty. An embedder that cannot give
/// the layer is an error naming it ([`EmbedError::NoLayers`]).
pub fn embed_layered(
    model: &dyn Embedder,
    texts: &[&str],
    layer: Option<usize>,
) -> Result<Vec<LayeredVector>> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(64) {
        match layer {
            None => out.extend(
                model
                    .embed_batch(chunk)?
                    .into_iter()
                    .map(|vector| LayeredVector { vector, middle: Vec::new() }),
            ),
            Some(layer) => {
                out.extend(model.embed_with_layer(chunk, layer)?.ok_or_else(|| {
                    EmbedError::NoLayers { model: model.info().name.clone(), layer }
                })?)
            }
        }
    }
    Ok(out)
}

/// Turns texts into unit vectors. Implementations are `Send + Sync` so one loaded model serves
/// every thread.
pub trait Embedder: Send + Sync {
    /// Name, width, prefix, pooling, token limit and fingerprint.
    fn info(&self) -> &ModelInfo;

    /// Embeds texts; row `i` of the result is the unit vector of `texts[i]`.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// Embeds catalog documents (the cards of tools and skills) with the model's document
    /// prefix ([`ModelInfo::document_prefix`]); the same as [`Embedder::embed_batch`] for a
    /// model without one. Wrappers must forward it.
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_batch(texts)
    }

    /// Embeds one text.
    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed_batch(&[text])?.pop().unwrap_or_default())
    }

    /// Number of model tokens of `text`, specials and prefix included (after truncation).
    fn count_tokens(&self, text: &str) -> Result<usize>;

    /// The byte length of the start of `text` the model reads as a query within `max_tokens`
    /// tokens (prefix and special tokens included), cut where a token ends: `text.len()` when
    /// it all fits. Embedding that start gives the vector of the text's first `max_tokens`
    /// tokens, at the cost of that many. An embedder without a tokenizer reads every text
    /// whole (the default). Wrappers must forward it.
    fn fitting_prefix(&self, text: &str, max_tokens: usize) -> Result<usize> {
        let _ = max_tokens;
        Ok(text.len())
    }

    /// How the weights are held, for reports (`i8`, `f16+q4_0`, ...; `none` without weights).
    fn weight_storage(&self) -> &'static str {
        "none"
    }

    /// The text's word-piece ids as the model's tokenizer splits it, without the prefix and
    /// special tokens: the keys of a static table. `None` when the embedder has no vocabulary.
    fn piece_ids(&self, text: &str) -> Result<Option<Vec<u32>>> {
        let _ = text;
        Ok(None)
    }

    /// Embeds each piece alone in the model's input frame (special tokens and prefix around
    /// it), pooled and normalised like a text: the rows of a static table (the model2vec
    /// distillation). Fails with [`EmbedError::NoVocabulary`] when there is no vocabulary.
    fn embed_pieces(&self, ids: &[u32]) -> Result<Vec<Vec<f32>>> {
        let _ = ids;
        Err(EmbedError::NoVocabulary { model: self.info().name.clone() })
    }

    /// Embeds texts and keeps the unit-length states of their content tokens (see
    /// [`TokenStates`]), behind the document prefix when `documents` is true. Each vector is
    /// bit for bit what [`Embedder::embed_batch`] or [`Embedder::embed_documents`] gives for the
    /// text alone. `None` for an embedder without token states (a hash or static embedder).
    /// Wrappers must forward it.
    fn embed_with_tokens(
        &self,
        texts: &[&str],
        documents: bool,
    ) -> Result<Option<Vec<TokenStates>>> {
        let _ = (texts, documents);
        Ok(None)
    }

    /// Embeds texts and also pools the hidden states after the model's first `layer` layers the
    /// same way, to unit length: a middle layer, which the learned injection screen may read
    /// beside the final vector (`build-index --screen-layer`). Each [`LayeredVector::vector`] is
    /// bit for bit what [`Embedder::embed_batch`] gives. `None` for an embedder without layers
    /// (a hash embedder, candle's reference engine); an error when `layer` is 0 or past the
    /// last layer. Wrappers must forward it.
    fn embed_with_layer(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<LayeredVector>>> {
        let _ = (texts, layer);
        Ok(None)
    }

    /// The identity of the exact weights + tokenizer + pooling.
    fn fingerprint(&self) -> Fingerprint {
        self.info().fingerprint
    }

    /// Embedding width.
    fn dim(&self) -> usize {
        self.info().dim
    }
}

/// Loads a model by what a user typed: `minilm`, `e5-small`, a folder, or a Hugging Face repo id
/// already in the local cache.
#[cfg(feature = "candle")]
pub fn load(name: &str) -> Result<BertEmbedder> {
    BertEmbedder::load(&resolve(name)?)
}

/// [`load`] with explicit options (weight storage, kernel, engine).
#[cfg(feature = "candle")]
pub fn load_with(name: &str, options: &EmbedOptions) -> Result<BertEmbedder> {
    load_in(name, &[], options)
}

/// [`load_with`], looking for short-name models in the `first` folders before the default ones
/// (see [`model_search_dirs`]).
#[cfg(feature = "candle")]
pub fn load_in(
    name: &str,
    first: &[std::path::PathBuf],
    options: &EmbedOptions,
) -> Result<BertEmbedder> {
    BertEmbedder::load_with(&resolve_in(name, first)?, options)
}

/// Scales `v` to unit length in place. The sum of squares runs in f64 so long vectors do not
/// lose precision; a zero vector stays zero rather than becoming NaN.
pub fn l2_normalize(v: &mut [f32]) {
    let sum: f64 = v.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
    if sum > 0.0 && sum.is_finite() {
        let inv = (1.0 / sum.sqrt()) as f32;
        for x in v.iter_mut() {
            *x *= inv;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn layered_embedding_without_a_layer_gives_final_vectors_and_a_hash_embedder_has_no_layers() {
        let model = crate::HashEmbedder::new(32);
        let plain = super::embed_layered(&model, &["a", "b"], None).unwrap();
        assert_eq!(plain[0].vector, model.embed("a").unwrap());
        assert!(plain.iter().all(|v| v.middle.is_empty()));
        let e = super::embed_layered(&model, &["a"], Some(8)).unwrap_err().to_string();
        assert!(e.contains("cannot give layer 8") && e.contains("--screen-layer 0"), "{e}");
    }

    use super::*;

    #[test]
    fn zero_vector_stays_zero() {
        let mut v = vec![0.0f32; 4];
        l2_normalize(&mut v);
        assert_eq!(v, vec![0.0; 4]);
    }
}
