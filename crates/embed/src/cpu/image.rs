//! The packed encoder as one ready-to-map file: what a load computes from the model's weights
//! (dequantized, packed into panels and runs, norms and tables in f32) written once and mapped
//! by every later process, which then reads and packs nothing. Pages are shared by every
//! process that maps the same image.
//!
//! An image is valid for one model (its fingerprint), one weight storage and one instruction
//! set, and for this layout version; anything else, a truncated file or a checksum that does not
//! match is refused with the reason, and the caller rebuilds it. The word table is not in it:
//! rows are read from the model file itself ([`crate::words`]).
//!
//! Layout: a 256-byte header (magic `SYIMAGE1`, version, crc32 of every byte after the header,
//! the file's length, the directory's length, fingerprint, storage, kernel, the weight file's
//! length, modification time and inode), the directory (JSON:
//! shapes and where each array is), then the arrays, each on a 64-byte boundary.

use super::forward::{FastLayer, FastLayers};
use super::kernel::{PANEL, Packed, PackedLinear, QUANT_RUN};
use super::store::{NormPair, Store};
use crate::prepared::{u32_at, u64_at};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

const MAGIC: &[u8; 8] = b"SYIMAGE1";
/// Bumped whenever the layout or the packing changes: an older image is rebuilt.
pub(crate) const VERSION: u32 = 1;
const HEADER: usize = 256;
const ALIGN: usize = 64;

/// What an image is valid for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImageKey {
    /// The model's fingerprint (hex).
    pub fingerprint: String,
    /// The weight storage (`i8`, `f16+q4_0`, ...).
    pub storage: String,
    /// The instruction set the kernels run (`avx512+vnni`, `avx512`, `avx2`, `scalar`).
    pub kernel: String,
    /// The weight file's length, modification time (ns) and inode (0 where there is none): an
    /// image outlives no change to the file it was packed from.
    pub weights_file: [u64; 3],
}

/// Everything of the fast encoder but its word table.
pub(crate) struct FastBody {
    pub position: Store<f32>,
    pub type0: Store<f32>,
    pub embed_norm: NormPair,
    pub layers: FastLayers,
    pub max_positions: usize,
}

#[derive(Serialize, Deserialize, Clone, Copy)]
struct Arr {
    at: usize,
    len: usize,
}

#[derive(Serialize, Deserialize)]
struct LinDir {
    kind: String,
    k: usize,
    n: usize,
    weights: Arr,
    bias: Arr,
}

#[derive(Serialize, Deserialize)]
struct LayerDir {
    qkv: LinDir,
    attn_out: LinDir,
    attn_norm: [Arr; 2],
    ffn_in: LinDir,
    ffn_out: LinDir,
    ffn_norm: [Arr; 2],
}

#[derive(Serialize, Deserialize)]
struct Dir {
    hidden: usize,
    heads: usize,
    eps_bits: u32,
    max_positions: usize,
    position: Arr,
    type0: Arr,
    embed_norm: [Arr; 2],
    layers: Vec<LayerDir>,
}

fn fixed<const N: usize>(s: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let n = s.len().min(N);
    out[..n].copy_from_slice(&s.as_bytes()[..n]);
    out
}

/// Lays arrays out one after another on `ALIGN`-byte boundaries (offsets relative to the end of
/// the directory's padding).
#[derive(Default)]
struct Arrays {
    bytes: Vec<u8>,
}

impl Arrays {
    fn put(&mut self, bytes: &[u8], elements: usize) -> Arr {
        let at = self.bytes.len().div_ceil(ALIGN) * ALIGN;
        self.bytes.resize(at, 0);
        self.bytes.extend_from_slice(bytes);
        Arr { at, len: elements }
    }
    fn floats(&mut self, v: &[f32]) -> Arr {
        self.put(bytemuck::cast_slice(v), v.len())
    }
    fn norm(&mut self, (w, b): &NormPair) -> [Arr; 2] {
        [self.floats(w), self.floats(b)]
    }
    fn linear(&mut self, lin: &PackedLinear) -> LinDir {
        let (packed, bias, k, n) = lin.parts();
        let (kind, weights) = match packed {
            Packed::F32(v) => ("f32", self.put(v.bytes(), v.len())),
            Packed::F16(v) => ("f16", self.put(v.bytes(), v.len())),
            Packed::Q4(v) => ("q4", self.put(v.bytes(), v.len())),
            Packed::Q8(v) => ("q8", self.put(v.bytes(), v.len())),
            Packed::I8(v) => ("i8", self.put(v.bytes(), v.len())),
        };
        LinDir { kind: kind.into(), k, n, weights, bias: self.floats(bias) }
    }
}

/// The image's bytes for `body`.
pub(crate) fn encode(body: &FastBody, key: &ImageKey) -> Vec<u8> {
    let mut arrays = Arrays::default();
    let layers = body
        .layers
        .layers
        .iter()
        .map(|l| LayerDir {
            qkv: arrays.linear(&l.qkv),
            attn_out: arrays.linear(&l.attn_out),
            attn_norm: arrays.norm(&l.attn_norm),
            ffn_in: arrays.linear(&l.ffn_in),
            ffn_out: arrays.linear(&l.ffn_out),
            ffn_norm: arrays.norm(&l.ffn_norm),
        })
        .collect();
    let dir = Dir {
        hidden: body.layers.hidden,
        heads: body.layers.heads,
        eps_bits: body.layers.eps.to_bits(),
        max_positions: body.max_positions,
        position: arrays.floats(&body.position),
        type0: arrays.floats(&body.type0),
        embed_norm: arrays.norm(&body.embed_norm),
        layers,
    };
    let dir = serde_json::to_vec(&dir).unwrap_or_default();
    let data_at = (HEADER + dir.len()).div_ceil(ALIGN) * ALIGN;
    let mut out = vec![0u8; data_at];
    out[HEADER..HEADER + dir.len()].copy_from_slice(&dir);
    out.extend_from_slice(&arrays.bytes);
    out[0..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&VERSION.to_le_bytes());
    let total = out.len() as u64;
    out[16..24].copy_from_slice(&total.to_le_bytes());
    out[24..32].copy_from_slice(&(dir.len() as u64).to_le_bytes());
    out[32..96].copy_from_slice(&fixed::<64>(&key.fingerprint));
    out[96..112].copy_from_slice(&fixed::<16>(&key.storage));
    out[112..128].copy_from_slice(&fixed::<16>(&key.kernel));
    for (i, v) in key.weights_file.iter().enumerate() {
        out[128 + i * 8..136 + i * 8].copy_from_slice(&v.to_le_bytes());
    }
    let crc = crc32fast::hash(&out[HEADER..]);
    out[12..16].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Maps the image at `path`. `Err(None)`: there is none; `Err(Some(why))`: it cannot be used.
pub(crate) fn open(path: &Path, key: &ImageKey) -> Result<FastBody, Option<String>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(None),
        Err(e) => return Err(Some(e.to_string())),
    };
    // SAFETY: images are only ever replaced by renaming a new file over them (never written in
    // place), so the mapped pages stay those of the file that was opened.
    let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Some(e.to_string()))?);
    from_map(map, key).map_err(Some)
}

/// Checks a mapped image and reads it back.
pub(crate) fn from_map(map: Arc<memmap2::Mmap>, key: &ImageKey) -> Result<FastBody, String> {
    let b = &map[..];
    if b.len() < HEADER || &b[0..8] != MAGIC {
        return Err("not a switchyard image (bad magic or shorter than its header)".into());
    }
    let version = u32_at(b, 8);
    if version != VERSION {
        return Err(format!("layout version {version}, this build reads {VERSION}"));
    }
    if u64_at(b, 16) != b.len() as u64 {
        return Err(format!("truncated: {} bytes of {}", b.len(), u64_at(b, 16)));
    }
    let wanted =
        (fixed::<64>(&key.fingerprint), fixed::<16>(&key.storage), fixed::<16>(&key.kernel));
    if b[32..96] != wanted.0 {
        return Err("built for another model (fingerprint differs)".into());
    }
    if b[96..112] != wanted.1 || b[112..128] != wanted.2 {
        let text = |r: std::ops::Range<usize>| {
            String::from_utf8_lossy(&b[r]).trim_end_matches('\0').to_string()
        };
        return Err(format!(
            "built for {} weights on {} kernels, this process runs {} on {}",
            text(96..112),
            text(112..128),
            key.storage,
            key.kernel
        ));
    }
    if (0..3).any(|i| u64_at(b, 128 + i * 8) != key.weights_file[i]) {
        return Err("stale: packed from another version of the weight file".into());
    }
    if crc32fast::hash(&b[HEADER..]) != u32_at(b, 12) {
        return Err("damaged: checksum does not match".into());
    }
    let dir_len = usize::try_from(u64_at(b, 24)).unwrap_or(usize::MAX);
    let dir: Dir = b
        .get(HEADER..HEADER.saturating_add(dir_len))
        .and_then(|d| serde_json::from_slice(d).ok())
        .ok_or("damaged: its directory does not read")?;
    let data_at = (HEADER + dir_len).div_ceil(ALIGN) * ALIGN;
    Reader { map: &map, data_at, hidden: dir.hidden }.body(&dir)
}

struct Reader<'a> {
    map: &'a Arc<memmap2::Mmap>,
    data_at: usize,
    hidden: usize,
}

impl Reader<'_> {
    fn store<T: bytemuck::Pod>(&self, a: Arr, len: usize, what: &str) -> Result<Store<T>, String> {
        if a.len != len {
            return Err(format!("damaged: {what} holds {} values, its shape needs {len}", a.len));
        }
        Store::mapped(self.map.clone(), self.data_at.saturating_add(a.at), a.len)
            .ok_or_else(|| format!("damaged: {what} runs past the file or is misaligned"))
    }

    fn norm(&self, [w, b]: [Arr; 2], what: &str) -> Result<NormPair, String> {
        Ok((self.store(w, self.hidden, what)?, self.store(b, self.hidden, what)?))
    }

    fn linear(
        &self,
        d: &LinDir,
        k: usize,
        n: Option<usize>,
        what: &str,
    ) -> Result<PackedLinear, String> {
        if d.k != k || n.is_some_and(|n| n != d.n) || d.n == 0 {
            return Err(format!(
                "damaged: {what} is {}x{}, the encoder needs {k} inputs",
                d.n, d.k
            ));
        }
        let panels = d.n.div_ceil(PANEL);
        let runs = panels * (d.k / QUANT_RUN);
        let quantized = d.k.is_multiple_of(QUANT_RUN);
        let packed = match d.kind.as_str() {
            "f32" => Packed::F32(self.store(d.weights, panels * d.k * PANEL, what)?),
            "f16" => Packed::F16(self.store(d.weights, panels * d.k * PANEL, what)?),
            "q4" if quantized => Packed::Q4(self.store(d.weights, runs, what)?),
            "q8" if quantized => Packed::Q8(self.store(d.weights, runs, what)?),
            "i8" if quantized => Packed::I8(self.store(d.weights, runs, what)?),
            other => return Err(format!("damaged: {what} has weights of kind {other:?}")),
        };
        Ok(PackedLinear::from_parts(packed, self.store(d.bias, d.n, what)?, d.k, d.n))
    }

    fn body(&self, dir: &Dir) -> Result<FastBody, String> {
        let h = dir.hidden;
        if h == 0 || dir.heads == 0 || !h.is_multiple_of(dir.heads) || dir.layers.is_empty() {
            return Err("damaged: the encoder's shape is not one".into());
        }
        let mut layers = Vec::with_capacity(dir.layers.len());
        for (i, l) in dir.layers.iter().enumerate() {
            let ffn_in = self.linear(&l.ffn_in, h, None, &format!("layer {i} ffn_in"))?;
            layers.push(FastLayer {
                qkv: self.linear(&l.qkv, h, Some(3 * h), &format!("layer {i} qkv"))?,
                attn_out: self.linear(&l.attn_out, h, Some(h), &format!("layer {i} attn_out"))?,
                attn_norm: self.norm(l.attn_norm, &format!("layer {i} attn_norm"))?,
                ffn_out: self.linear(
                    &l.ffn_out,
                    ffn_in.n(),
                    Some(h),
                    &format!("layer {i} ffn_out"),
                )?,
                ffn_in,
                ffn_norm: self.norm(l.ffn_norm, &format!("layer {i} ffn_norm"))?,
            });
        }
        Ok(FastBody {
            position: self.store(dir.position, dir.max_positions * h, "position table")?,
            type0: self.store(dir.type0, h, "token type row")?,
            embed_norm: self.norm(dir.embed_norm, "embedding norm")?,
            layers: FastLayers {
                layers,
                hidden: h,
                heads: dir.heads,
                eps: f32::from_bits(dir.eps_bits),
            },
            max_positions: dir.max_positions,
        })
    }
}
