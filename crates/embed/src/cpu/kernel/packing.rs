//! Packing a weight matrix once, at load, into the panels the kernels stream.

use super::*;

impl PackedLinear {
    /// Packs a weight given transposed, `w_t[k, n]` row-major, with its bias `[n]`.
    pub fn new(w_t: &[f32], bias: Vec<f32>, k: usize, n: usize) -> Self {
        if n == PANEL {
            // One whole panel is `w_t` itself: one copy, not a call per row (attention's
            // values, packed per head, took a fortieth of a 512-token forward in `memcpy`s).
            let packed = w_t[..k * PANEL].to_vec();
            return Self { packed: Packed::F32(packed.into()), bias: bias.into(), k, n };
        }
        let panels = n.div_ceil(PANEL);
        let mut packed = vec![0f32; panels * k * PANEL];
        for p in 0..panels {
            for kk in 0..k {
                for c in 0..PANEL {
                    let col = p * PANEL + c;
                    if col < n {
                        packed[(p * k + kk) * PANEL + c] = w_t[kk * n + col];
                    }
                }
            }
        }
        Self { packed: Packed::F32(packed.into()), bias: bias.into(), k, n }
    }

    /// Packs a weight given in Hugging Face layout, `w[n, k]` row-major (each output's
    /// weights contiguous), reading it in order: the cheap way at load time.
    pub fn from_rows(w: &[f32], bias: Vec<f32>, n: usize, k: usize) -> Self {
        let panels = n.div_ceil(PANEL);
        let mut packed = vec![0f32; panels * k * PANEL];
        for col in 0..n {
            let (p, c) = (col / PANEL, col % PANEL);
            let base = p * k * PANEL + c;
            for (kk, &v) in w[col * k..(col + 1) * k].iter().enumerate() {
                packed[base + kk * PANEL] = v;
            }
        }
        Self { packed: Packed::F32(packed.into()), bias: bias.into(), k, n }
    }

    /// As [`PackedLinear::from_rows`], storing the weights in `precision`. A matrix with a
    /// weight outside f16's range stays in f32 (the conversion would make it infinite).
    pub fn from_rows_in(
        w: &[f32],
        bias: Vec<f32>,
        n: usize,
        k: usize,
        precision: Precision,
    ) -> Self {
        if k.is_multiple_of(QUANT_RUN) && bias.len() == n {
            match precision {
                Precision::Q8 => return Self::q8_from_rows(w, bias, n, k),
                Precision::I8 => {
                    return Self {
                        packed: Packed::I8(crate::cpu::int8::pack(w, n, k).into()),
                        bias: bias.into(),
                        k,
                        n,
                    };
                }
                Precision::F32 | Precision::F16 => {}
            }
        }
        let mut lin = Self::from_rows(w, bias, n, k);
        if precision == Precision::F16
            && w.iter().all(|v| v.abs() <= F16_MAX)
            && let Packed::F32(p) = &lin.packed
        {
            lin.packed = Packed::F16(f32_to_f16(p).into());
        }
        lin
    }

    /// Packs a weight shipped as ggml Q4_0 blocks (`[n, k]`, each output's `k / 32` blocks
    /// contiguous), keeping it 4-bit: the kernels widen it per block to exactly the values
    /// ggml's (and candle's) dequantization gives. `None` unless `k` is a multiple of 32 and
    /// `blocks` holds `n * k / 32` blocks.
    pub fn from_q4_0(blocks: &[u8], bias: Vec<f32>, n: usize, k: usize) -> Option<Self> {
        let runs = k / QUANT_RUN;
        if !k.is_multiple_of(QUANT_RUN)
            || blocks.len() != n * runs * Q4_BLOCK_BYTES
            || bias.len() != n
        {
            return None;
        }
        let panels = n.div_ceil(PANEL);
        let empty = Q4Run { scales: [0.0; PANEL], nibbles: [[0x88; PANEL / 2]; QUANT_RUN] };
        let mut packed = vec![empty; panels * runs];
        for col in 0..n {
            let (p, c) = (col / PANEL, col % PANEL);
            for r in 0..runs {
                let b = &blocks[(col * runs + r) * Q4_BLOCK_BYTES..][..Q4_BLOCK_BYTES];
                let run = &mut packed[p * runs + r];
                run.scales[c] = half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32();
                let shift = if c % 2 == 0 { 0 } else { 4 };
                for j in 0..QUANT_RUN {
                    // ggml: input j < 16 in the low nibble of byte j, input j + 16 in the high.
                    let q = if j < 16 { b[2 + j] & 0x0F } else { b[2 + j - 16] >> 4 };
                    let byte = &mut run.nibbles[j][c / 2];
                    *byte = (*byte & !(0x0F << shift)) | (q << shift);
                }
            }
        }
        Some(Self { packed: Packed::Q4(packed.into()), bias: bias.into(), k, n })
    }

    /// 8-bit weights, one scale per output per 32 inputs (the largest magnitude maps to 127).
    fn q8_from_rows(w: &[f32], bias: Vec<f32>, n: usize, k: usize) -> Self {
        let runs = k / QUANT_RUN;
        let panels = n.div_ceil(PANEL);
        let empty = Q8Run { scales: [0.0; PANEL], values: [[0; PANEL]; QUANT_RUN] };
        let mut packed = vec![empty; panels * runs];
        for col in 0..n {
            let (p, c) = (col / PANEL, col % PANEL);
            for r in 0..runs {
                let src = &w[col * k + r * QUANT_RUN..col * k + (r + 1) * QUANT_RUN];
                let amax = src.iter().fold(0f32, |a, v| a.max(v.abs()));
                let scale = amax / 127.0;
                let inv = if scale > 0.0 { 1.0 / scale } else { 0.0 };
                let run = &mut packed[p * runs + r];
                run.scales[c] = scale;
                for (j, &v) in src.iter().enumerate() {
                    run.values[j][c] = (v * inv).round().clamp(-127.0, 127.0) as i8;
                }
            }
        }
        Self { packed: Packed::Q8(packed.into()), bias: bias.into(), k, n }
    }
}
