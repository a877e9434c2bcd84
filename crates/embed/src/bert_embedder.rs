use crate::bert::{BertEncoder, FastEncoder, Q4Linear, mean_pool};
use crate::cpu::image::ImageKey;
use crate::e5file::E5File;
use crate::model::{ResolvedModel, WeightFormat};
use crate::options::{EmbedOptions, EngineChoice};
use crate::token_states::content_range;
use crate::tokenize::{LoadSource, TextTokenizer};
use crate::words::WordTable;
use crate::{EmbedError, Embedder, LayeredVector, ModelInfo, Pooling, Result, TokenStates};
use candle_core::{Device, Tensor};
use std::path::PathBuf;

/// How the encoder runs.
enum Engine {
    /// Plain buffers and `gemm` (the default; see `cpu/forward.rs`).
    Fast(FastEncoder),
    /// candle ops (the Q4_0 matmul variant, or when forced).
    Candle(BertEncoder),
}

/// Texts per forward pass when embedding many: large enough to amortise per-op overhead, small
/// enough that padding within a length-sorted batch stays negligible.
const BATCH: usize = 32;

/// What building the engine gave.
struct EncoderLoad {
    engine: Engine,
    max_positions: usize,
    /// Since the load began: weights read (or image mapped), and packed.
    t_weights: std::time::Duration,
    t_pack: std::time::Duration,
    source: LoadSource,
    /// Why an image was not used, or could not be written.
    note: Option<String>,
    /// The image this engine was mapped from or wrote.
    image: Option<PathBuf>,
}

/// Where the packed image of `model` for `key`'s storage and kernel lives: beside its weights,
/// one file per storage and kernel (so they coexist).
fn image_path(model: &ResolvedModel, key: &ImageKey) -> PathBuf {
    let weights = model.path(&model.spec.weights);
    let name = weights.file_name().map_or_else(Default::default, |n| n.to_string_lossy());
    let storage = key.storage.replace('+', "-");
    weights.with_file_name(format!("{name}.{storage}-{}.switchyard-image", key.kernel))
}

/// A BERT-family sentence embedder on the CPU: tokenize (with the model's query or document
/// prefix, truncated at its limit, never padded alone), forward, attention-masked pooling, L2
/// norm. candle loads the weights (safetensors, Q4_0); the forward is this crate's packed-weight
/// kernels by default, or candle's own operations (the portable engine the fast path is tested
/// against) with [`crate::EngineChoice::Candle`].
pub struct BertEmbedder {
    info: ModelInfo,
    tokenizer: TextTokenizer,
    tokenizer_path: PathBuf,
    /// The ready-to-map files this load reads or wrote (tokenizer table, packed image).
    prepared: Vec<PathBuf>,
    encoder: Engine,
    pad_id: u32,
    /// The options it was loaded with.
    options: EmbedOptions,
    /// How its weights are held, for reports.
    storage: &'static str,
    /// Where the load's time went.
    load_timings: LoadTimings,
}

/// Where loading an encoder spent its time (milliseconds), for the cold-start breakdown.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct LoadTimings {
    /// Reading the weight file and building the layers (dequantizing where needed).
    pub weights_ms: f64,
    /// Packing the layers for the fast forward (or keeping candle's).
    pub pack_ms: f64,
    /// Loading the tokenizer (mapping its table, or parsing `tokenizer.json`), on its own
    /// thread while the weights load and pack (so it overlaps `weights_ms + pack_ms`; the load
    /// waits for the longer of the two).
    pub tokenizer_ms: f64,
    /// How the tokenizer was loaded.
    pub tokenizer_source: LoadSource,
    /// How the encoder's weights were loaded (`mapped`: from the packed image, with
    /// `weights_ms` the map and its checks and no packing).
    pub weights_source: LoadSource,
    /// All of the load, wall time.
    pub total_ms: f64,
}

impl std::fmt::Debug for BertEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BertEmbedder").field("info", &self.info).finish_non_exhaustive()
    }
}

impl BertEmbedder {
    /// The options it was loaded with.
    pub fn options(&self) -> &EmbedOptions {
        &self.options
    }

    /// The ready-to-map files this model's loads share (beside its files): the tokenizer's
    /// Unigram table and the packed image of this storage and kernel, where they apply. An
    /// operator may delete them at any time; the next load writes them again.
    pub fn prepared_files(&self) -> &[PathBuf] {
        &self.prepared
    }

    /// Where loading it spent its time.
    pub fn load_timings(&self) -> &LoadTimings {
        &self.load_timings
    }

    /// Loads a resolved model (see [`crate::resolve`]) with default options.
    pub fn load(model: &ResolvedModel) -> Result<Self> {
        Self::load_with(model, &EmbedOptions::default())
    }

    /// Loads a resolved model with explicit options (weight storage, kernel, engine).
    ///
    /// The tokenizer is parsed on another thread while the weights load and pack: for
    /// multilingual-e5-small its 17 MB `tokenizer.json` takes longer than all its weights.
    pub fn load_with(model: &ResolvedModel, options: &EmbedOptions) -> Result<Self> {
        let t0 = std::time::Instant::now();
        crate::cpu::kernel::select_kernel(options.kernel)?;
        let spec = &model.spec;
        let tokenizer_path = model.path(&spec.tokenizer);
        let (encoder, parsed) = std::thread::scope(|s| {
            let parsing = s.spawn(|| {
                let t = std::time::Instant::now();
                let loaded = crate::tokenize::load(&tokenizer_path, &spec.tokenizer.sha256);
                (loaded, t.elapsed())
            });
            let encoder = Self::load_encoder(model, options, t0);
            let parsed = parsing.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (encoder, parsed)
        });
        let EncoderLoad { engine: encoder, max_positions, t_weights, t_pack, source, note, image } =
            encoder?;

        if let Some(note) = &note {
            tracing::warn!(model = %spec.name, "packed weights image {note}");
        }
        let (loaded, tokenizer_time) = parsed;
        let loaded = loaded?;
        let table = crate::tokenize::table_path(&tokenizer_path);
        let prepared: Vec<PathBuf> = (loaded.source != LoadSource::Parsed && table.exists())
            .then_some(table)
            .into_iter()
            .chain(image)
            .collect();
        if let Some(note) = &loaded.note {
            tracing::warn!(model = %spec.name, "tokenizer table {note}");
        }
        let mut tokenizer = loaded.tokenizer;
        let max_tokens = spec.max_tokens.min(max_positions);
        tokenizer.limit(max_tokens).map_err(|e| EmbedError::Tokenizer {
            path: tokenizer_path.clone(),
            message: e.to_string(),
        })?;
        let pad_id =
            ["[PAD]", "<pad>"].iter().find_map(|name| tokenizer.token_to_id(name)).unwrap_or(0);
        let mut info = model.info();
        info.max_tokens = max_tokens;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let load_timings = LoadTimings {
            weights_ms: ms(t_weights),
            pack_ms: ms(t_pack - t_weights),
            tokenizer_ms: ms(tokenizer_time),
            tokenizer_source: loaded.source,
            weights_source: source,
            total_ms: ms(t0.elapsed()),
        };
        let precision = crate::cpu::kernel::weight_precision(options.weights);
        let storage = match (&encoder, options.q4_matmul) {
            (Engine::Fast(_), _) => crate::cpu::kernel::weight_storage(precision),
            (Engine::Candle(_), true) => "candle+q4_0",
            (Engine::Candle(_), false) => "candle-f32",
        };
        Ok(Self {
            info,
            tokenizer,
            tokenizer_path,
            prepared,
            encoder,
            pad_id,
            options: *options,
            storage,
            load_timings,
        })
    }

    /// Builds the engine: from the packed image beside the weights when one fits this model,
    /// storage and kernel; else from the weights, writing the image for the next process.
    fn load_encoder(
        model: &ResolvedModel,
        options: &EmbedOptions,
        t0: std::time::Instant,
    ) -> Result<EncoderLoad> {
        let precision = crate::cpu::kernel::weight_precision(options.weights);
        let fast = options.engine == EngineChoice::Fast && !options.q4_matmul;
        let key = ImageKey {
            fingerprint: model.fingerprint().to_hex(),
            storage: crate::cpu::kernel::weight_storage(precision).to_string(),
            kernel: crate::cpu::kernel::kernel_name().to_string(),
            weights_file: crate::prepared::file_stamp(&model.path(&model.spec.weights)),
        };
        let image_at = image_path(model, &key);
        let mut note = None;
        if fast {
            match crate::cpu::image::open(&image_at, &key) {
                Ok(body) => {
                    let word = Self::word_table(model)?;
                    let max_positions = body.max_positions;
                    let t = t0.elapsed();
                    return Ok(EncoderLoad {
                        engine: Engine::Fast(FastEncoder { word, body }),
                        max_positions,
                        t_weights: t,
                        t_pack: t,
                        source: LoadSource::Mapped,
                        note: None,
                        image: Some(image_at),
                    });
                }
                Err(why) => note = why.map(|w| format!("{}: {w}; rebuilt", image_at.display())),
            }
        }
        let encoder = Self::read_weights(model, options, precision)?;
        let t_weights = t0.elapsed();
        let max_positions = encoder.max_positions();
        let mut source = LoadSource::Parsed;
        let mut image = None;
        let engine = if !fast {
            Engine::Candle(encoder)
        } else {
            // A word table the fast path cannot read in place (not f32 or Q4_0) leaves the
            // model on candle's engine, as a quantized layer does.
            let fast = match Self::word_table(model) {
                Ok(word) => encoder.into_fast(precision, word),
                Err(e) => {
                    tracing::warn!(model = %model.spec.name, "fast path unavailable: {e}");
                    Err(Box::new((encoder, None)))
                }
            };
            match fast {
                Ok(fast) => {
                    let bytes = crate::cpu::image::encode(&fast.body, &key);
                    source = LoadSource::Built;
                    if let Err(e) = crate::prepared::write_atomically(&image_at, &bytes) {
                        let failed = format!(
                            "{}: could not be written ({e}); every load will pack the weights",
                            image_at.display()
                        );
                        note = Some(note.map_or(failed.clone(), |n| format!("{n}; {failed}")));
                    } else {
                        image = Some(image_at.clone());
                    }
                    Engine::Fast(fast)
                }
                Err(back) => match *back {
                    (enc, None) => Engine::Candle(enc),
                    (_, Some(e)) => {
                        return Err(EmbedError::Forward {
                            model: model.spec.name.clone(),
                            message: e.to_string(),
                        });
                    }
                },
            }
        };
        Ok(EncoderLoad {
            engine,
            max_positions,
            t_weights,
            t_pack: t0.elapsed(),
            source,
            note,
            image,
        })
    }

    /// The word table, read in place from the model file.
    fn word_table(model: &ResolvedModel) -> Result<WordTable> {
        let weights = model.path(&model.spec.weights);
        match model.spec.format {
            WeightFormat::BertSafetensors => WordTable::from_safetensors(&weights),
            WeightFormat::E5s1Q4 => WordTable::from_e5(&E5File::read(&weights)?),
        }
    }

    /// Reads the weights into candle's encoder.
    fn read_weights(
        model: &ResolvedModel,
        options: &EmbedOptions,
        precision: crate::cpu::kernel::Precision,
    ) -> Result<BertEncoder> {
        let candle_engine = options.engine == EngineChoice::Candle;
        let spec = &model.spec;
        let weights = model.path(&spec.weights);
        match spec.format {
            WeightFormat::BertSafetensors => {
                let config = spec.config.as_ref().map(|c| model.path(c)).ok_or_else(|| {
                    EmbedError::bad(
                        model.dir.join("model.toml"),
                        "config",
                        "bert-safetensors models need config.json",
                    )
                })?;
                BertEncoder::from_safetensors(&weights, &config)
            }
            WeightFormat::E5s1Q4 => {
                // Blocks kept as shipped where the fast path will widen them; no f32 copy of
                // the layers is ever made then (a smaller peak and a faster start).
                let hold = if options.q4_matmul {
                    Q4Linear::QMatMul
                } else if crate::cpu::kernel::keep_q4_0(precision) && !candle_engine {
                    Q4Linear::Blocks
                } else {
                    Q4Linear::Dequantize
                };
                BertEncoder::from_e5s1(&E5File::read(&weights)?, hold)
            }
        }
    }

    /// Token ids of one text as the model sees it (prefix and special tokens included).
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>> {
        self.token_ids_with(&self.info.prefix, text)
    }

    /// Token ids of one text behind `prefix`, special tokens included.
    fn token_ids_with(&self, prefix: &str, text: &str) -> Result<Vec<u32>> {
        let input = format!("{prefix}{text}");
        self.tokenizer.ids(&input, true).map_err(|e| EmbedError::Tokenizer {
            path: self.tokenizer_path.clone(),
            message: e.to_string(),
        })
    }

    fn forward_batch(&self, ids: &[Vec<u32>]) -> Result<Vec<Vec<f32>>> {
        let fail = |e: candle_core::Error| EmbedError::Forward {
            model: self.info.name.clone(),
            message: e.to_string(),
        };
        let encoder = match &self.encoder {
            Engine::Fast(fast) => return self.forward_fast(fast, ids).map_err(fail),
            Engine::Candle(enc) => enc,
        };
        let seq = ids.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let mut flat = Vec::with_capacity(ids.len() * seq);
        let mut mask = Vec::with_capacity(ids.len() * seq);
        for row in ids {
            flat.extend_from_slice(row);
            flat.extend(std::iter::repeat_n(self.pad_id, seq - row.len()));
            mask.extend(std::iter::repeat_n(1f32, row.len()));
            mask.extend(std::iter::repeat_n(0f32, seq - row.len()));
        }
        let ids_t = Tensor::from_vec(flat, (ids.len(), seq), &Device::Cpu).map_err(fail)?;
        let mask_t = Tensor::from_vec(mask, (ids.len(), seq), &Device::Cpu).map_err(fail)?;
        let hidden = encoder.forward(&ids_t, &mask_t).map_err(fail)?;
        let pooled = match self.info.pooling {
            Pooling::Cls => hidden.narrow(1, 0, 1).and_then(|t| t.squeeze(1)),
            _ => mean_pool(&hidden, &mask_t),
        }
        .map_err(fail)?;
        let mut rows: Vec<Vec<f32>> = pooled.to_vec2().map_err(fail)?;
        for r in &mut rows {
            crate::l2_normalize(r);
        }
        Ok(rows)
    }
}

impl BertEmbedder {
    fn forward_fast(
        &self,
        fast: &FastEncoder,
        ids: &[Vec<u32>],
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let (ids, hidden) = self.fast_states(fast, ids)?;
        let h = fast.hidden();
        let mut out = Vec::with_capacity(ids.len());
        let mut row = 0;
        for r in &ids {
            out.push(self.pool(&hidden[row * h..(row + r.len()) * h], h));
            row += r.len();
        }
        Ok(out)
    }

    /// The fast engine's last hidden states, packed `[sum of lengths, hidden]`, with the ids
    /// they belong to.
    fn fast_states(
        &self,
        fast: &FastEncoder,
        ids: &[Vec<u32>],
    ) -> candle_core::Result<(Vec<Vec<u32>>, Vec<f32>)> {
        let (ids, hidden, _) = self.fast_states_keeping(fast, ids, None)?;
        Ok((ids, hidden))
    }

    /// [`Self::fast_states`], and the states after the first `after` layers when asked.
    #[allow(clippy::type_complexity)] // (ids, last states, kept states), read right away
    fn fast_states_keeping(
        &self,
        fast: &FastEncoder,
        ids: &[Vec<u32>],
        after: Option<usize>,
    ) -> candle_core::Result<(Vec<Vec<u32>>, Vec<f32>, Option<Vec<f32>>)> {
        // An empty text still has its special tokens; guard anyway so pooling never divides by 0.
        let ids: Vec<Vec<u32>> =
            ids.iter().map(|r| if r.is_empty() { vec![self.pad_id] } else { r.clone() }).collect();
        let (hidden, kept) = fast.forward_keeping(&ids, after)?;
        Ok((ids, hidden, kept))
    }

    /// One text's pooled unit vector from its `[tokens, h]` states.
    fn pool(&self, rows: &[f32], h: usize) -> Vec<f32> {
        let mut v = match self.info.pooling {
            Pooling::Cls => rows[..h].to_vec(),
            _ => {
                let mut acc = vec![0f32; h];
                for t in rows.chunks_exact(h) {
                    for (a, x) in acc.iter_mut().zip(t) {
                        *a += x;
                    }
                }
                let n = (rows.len() / h) as f32;
                acc.iter_mut().for_each(|a| *a /= n);
                acc
            }
        };
        crate::l2_normalize(&mut v);
        v
    }

    /// [`Embedder::embed_with_tokens`] for this model: the fast engine keeps each text's states
    /// from its batch's packed forward; the candle engine runs each text alone.
    fn tokens_with_prefix(&self, prefix: &str, texts: &[&str]) -> Result<Vec<TokenStates>> {
        let fail = |e: candle_core::Error| EmbedError::Forward {
            model: self.info.name.clone(),
            message: e.to_string(),
        };
        let frame = self.token_ids_with(prefix, "")?;
        let ids =
            texts.iter().map(|t| self.token_ids_with(prefix, t)).collect::<Result<Vec<_>>>()?;
        let h = self.info.dim;
        let pooling = self.info.pooling;
        let mut out = Vec::with_capacity(ids.len());
        let mut keep = |ids: &[u32], rows: &[f32], vector: Vec<f32>| {
            let range = content_range(&frame, ids);
            let mut states = rows[range.start * h..range.end * h].to_vec();
            let norms = states
                .chunks_exact(h)
                .map(|s| s.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>().sqrt() as f32)
                .collect();
            states.chunks_exact_mut(h).for_each(crate::l2_normalize);
            // What the frame adds to a mean pool (the special tokens and the prefix).
            let frame_sum = match pooling {
                Pooling::Cls => Vec::new(),
                _ => {
                    let mut sum = vec![0f32; h];
                    let framing = (0..range.start).chain(range.end..rows.len() / h);
                    for t in framing {
                        for (a, x) in sum.iter_mut().zip(&rows[t * h..(t + 1) * h]) {
                            *a += x;
                        }
                    }
                    sum
                }
            };
            out.push(TokenStates {
                vector,
                ids: ids[range].to_vec(),
                states,
                norms,
                frame: frame_sum,
            });
        };
        match &self.encoder {
            Engine::Fast(fast) => {
                for chunk in ids.chunks(BATCH) {
                    let (framed, hidden) = self.fast_states(fast, chunk).map_err(fail)?;
                    let mut row = 0;
                    for r in &framed {
                        let rows = &hidden[row * h..(row + r.len()) * h];
                        keep(r, rows, self.pool(rows, h));
                        row += r.len();
                    }
                }
            }
            Engine::Candle(enc) => {
                // The reference engine: a second pass per text for the vector keeps its bits
                // those of `embed` (its pooling sums in another order than `pool`).
                for r in &ids {
                    let seq = r.len().max(1);
                    let ids_t =
                        Tensor::from_vec(r.clone(), (1, r.len()), &Device::Cpu).map_err(fail)?;
                    let mask_t = Tensor::ones((1, seq), candle_core::DType::F32, &Device::Cpu)
                        .map_err(fail)?;
                    let hidden = enc.forward(&ids_t, &mask_t).map_err(fail)?;
                    let rows: Vec<f32> =
                        hidden.flatten_all().and_then(|t| t.to_vec1()).map_err(fail)?;
                    let vector =
                        self.forward_batch(std::slice::from_ref(r))?.pop().unwrap_or_default();
                    keep(r, &rows, vector);
                }
            }
        }
        Ok(out)
    }
}

impl BertEmbedder {
    /// [`Embedder::embed_with_layer`] for this model: one packed forward per batch keeps the
    /// states after `layer` layers on the way.
    fn layered(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<LayeredVector>>> {
        let Engine::Fast(fast) = &self.encoder else { return Ok(None) };
        let layers = fast.layers();
        if layer == 0 || layer > layers {
            return Err(EmbedError::Forward {
                model: self.info.name.clone(),
                message: format!(
                    "layer {layer} does not exist: the model has layers 1 to {layers}"
                ),
            });
        }
        let fail = |e: candle_core::Error| EmbedError::Forward {
            model: self.info.name.clone(),
            message: e.to_string(),
        };
        let prefix = &self.info.prefix;
        let ids =
            texts.iter().map(|t| self.token_ids_with(prefix, t)).collect::<Result<Vec<_>>>()?;
        let h = fast.hidden();
        let mut out = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(BATCH) {
            let (framed, last, middle) =
                self.fast_states_keeping(fast, chunk, Some(layer)).map_err(fail)?;
            let middle = middle.unwrap_or_default();
            let mut row = 0;
            for r in &framed {
                let span = row * h..(row + r.len()) * h;
                out.push(LayeredVector {
                    vector: self.pool(&last[span.clone()], h),
                    middle: self.pool(&middle[span], h),
                });
                row += r.len();
            }
        }
        Ok(Some(out))
    }

    /// Embeds texts behind `prefix` (the query or the document prefix).
    fn embed_with_prefix(&self, prefix: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let ids =
            texts.iter().map(|t| self.token_ids_with(prefix, t)).collect::<Result<Vec<_>>>()?;
        // Sort by length so each forward pass pads little; the order is a pure function of the
        // inputs, so the same texts always meet the same batch-mates (byte-reproducible builds).
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| (ids[i].len(), i));
        let mut out = vec![Vec::new(); ids.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<Vec<u32>> = chunk.iter().map(|&i| ids[i].clone()).collect();
            for (&i, v) in chunk.iter().zip(self.forward_batch(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

impl Embedder for BertEmbedder {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn weight_storage(&self) -> &'static str {
        self.storage
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_with_prefix(&self.info.prefix, texts)
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_with_prefix(&self.info.document_prefix, texts)
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        let ids = self.token_ids(text)?;
        Ok(self.forward_batch(&[ids])?.pop().unwrap_or_default())
    }

    fn count_tokens(&self, text: &str) -> Result<usize> {
        Ok(self.token_ids(text)?.len())
    }

    fn fitting_prefix(&self, text: &str, max_tokens: usize) -> Result<usize> {
        let prefix = &self.info.prefix;
        let input = format!("{prefix}{text}");
        let end = self.tokenizer.fitting_bytes(&input, max_tokens).map_err(|e| {
            EmbedError::Tokenizer { path: self.tokenizer_path.clone(), message: e.to_string() }
        })?;
        Ok(end.saturating_sub(prefix.len()).min(text.len()))
    }

    fn embed_with_layer(&self, texts: &[&str], layer: usize) -> Result<Option<Vec<LayeredVector>>> {
        self.layered(texts, layer)
    }

    fn embed_with_tokens(
        &self,
        texts: &[&str],
        documents: bool,
    ) -> Result<Option<Vec<TokenStates>>> {
        let prefix = if documents { &self.info.document_prefix } else { &self.info.prefix };
        self.tokens_with_prefix(prefix, texts).map(Some)
    }

    fn piece_ids(&self, text: &str) -> Result<Option<Vec<u32>>> {
        let ids = self.tokenizer.ids(text, false).map_err(|e| EmbedError::Tokenizer {
            path: self.tokenizer_path.clone(),
            message: e.to_string(),
        })?;
        Ok(Some(ids))
    }

    fn embed_pieces(&self, ids: &[u32]) -> Result<Vec<Vec<f32>>> {
        // The frame an empty text gets ([CLS] [SEP], or <s> "query:" </s> for e5): each piece
        // goes in before the closing special token, as it would in a one-word text.
        let frame = self.token_ids("")?;
        let Some((&close, open)) = frame.split_last() else {
            return Err(EmbedError::Tokenizer {
                path: self.tokenizer_path.clone(),
                message: "an empty text has no special tokens to frame a piece with".into(),
            });
        };
        let mut out = Vec::with_capacity(ids.len());
        // Large batches: with no padding, a forward over many 3-5 token texts keeps the matrix
        // kernel busy on both cores.
        for chunk in ids.chunks(8 * BATCH) {
            let batch: Vec<Vec<u32>> =
                chunk.iter().map(|&id| open.iter().copied().chain([id, close]).collect()).collect();
            out.extend(self.forward_batch(&batch)?);
        }
        Ok(out)
    }
}
