//! The matrix product of the fast path, `y[t, :] = x[t, :] W^T + b`, for the shapes a single
//! task produces: few rows (tokens), hundreds to thousands of columns.
//!
//! General-purpose GEMMs (candle's `gemm`) pack the weight matrix on every call; with 10 rows
//! that packing and its memory traffic cost more than the arithmetic (measured: 24 ms for a
//! 10-token MiniLM forward, 8.7 GFLOP/s). Here the weights are packed once, at load, into
//! column panels of `PANEL` floats laid out `[panel][k][PANEL]`, so the kernel streams each
//! panel once per call and keeps a tile of rows in registers across the whole `k` loop.
//!
//! Kernels: AVX-512F (32-wide panels as two zmm, 12-row tiles), AVX2+FMA (16-wide as two ymm,
//! 6-row tiles), and a portable scalar one; picked at run time once (`is_x86_feature_detected!`)
//! and cached. Each output value is one sum over `k` in ascending order, whatever the kernel's
//! tiling or thread count, so results do not depend on how many threads ran.
//!
//! How weights are stored is chosen once per process ([`weight_precision`]): by default 7-bit
//! integers multiplied by 8-bit activations in integer arithmetic where the CPU has AVX2 and
//! FMA ([`crate::cpu::int8`]), else IEEE half floats where it widens them in hardware (F16C), else
//! f32. At few rows a forward's time is set by streaming every weight once, not by the
//! arithmetic (MiniLM's 10.6 M layer weights are 42 MB in f32, more than a 32 MiB L3; in f16,
//! 21 MB, they stay in it). Stored floats are widened to f32 per block of KC inputs, in L1, and
//! the f32 tiles run on them unchanged, so the sums are the f32 kernel's over exactly-widened
//! weights; while the tiles run on one block, the next block's stored weights are prefetched.
//!
//! One job per file: `settings` (storage and instruction set, chosen once per process),
//! `packing` (weights packed into panels at load), `driver` (the product over panels, threads
//! and team shares), `widen` (stored weights to f32, one block at a time), `panel` (per-thread
//! accumulators and the portable kernel), `x86` (the AVX-512 and AVX2 tiles).

/// A weight matrix packed for the kernels.
pub struct PackedLinear {
    packed: Packed,
    bias: Store<f32>,
    k: usize,
    n: usize,
}

/// Panels `[panel][k][PANEL]`, in f32 or as f16 bit patterns; or panels of runs `[panel][k /
/// 32]`: [`Q4Run`]s for weights shipped as Q4_0, [`Q8Run`]s for `SWITCHYARD_WEIGHTS=q8`, and
/// integer runs for `SWITCHYARD_WEIGHTS=i8` ([`crate::cpu::int8`]).
pub(crate) enum Packed {
    F32(Store<f32>),
    F16(Store<u16>),
    Q4(Store<Q4Run>),
    Q8(Store<Q8Run>),
    I8(Store<crate::cpu::int8::I8Run>),
}

/// 32 inputs x one panel of 8-bit weights: the 32 outputs' scales, then per input the 32
/// outputs' values; a weight is `value * scale`.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct Q8Run {
    scales: [f32; PANEL],
    values: [[i8; PANEL]; QUANT_RUN],
}

/// 32 inputs x one panel of Q4_0 weights, laid out for widening a whole panel row at once:
/// the 32 outputs' scales, then per input the 32 nibbles (output `2c` in the low half of byte
/// `c`, `2c + 1` in the high half). A weight is `(nibble - 8) * scale`, as ggml decodes it;
/// 5 bits per weight against f16's 16.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct Q4Run {
    scales: [f32; PANEL],
    nibbles: [[u8; PANEL / 2]; QUANT_RUN],
}

// SAFETY: both are `repr(C)` arrays of plain numbers whose sizes are whole multiples of their
// 64-byte alignment (checked below), so they have no padding and every bit pattern is a value.
unsafe impl bytemuck::Zeroable for Q8Run {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for Q8Run {}
// SAFETY: as above.
unsafe impl bytemuck::Zeroable for Q4Run {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for Q4Run {}
const _: () = assert!(size_of::<Q8Run>() == 4 * PANEL + PANEL * QUANT_RUN);
const _: () = assert!(size_of::<Q4Run>() == 4 * PANEL + PANEL / 2 * QUANT_RUN);

impl PackedLinear {
    /// Its parts, for writing an image: the packed weights, the bias, `k` and `n`.
    pub(crate) fn parts(&self) -> (&Packed, &[f32], usize, usize) {
        (&self.packed, &self.bias, self.k, self.n)
    }

    /// From parts read back from an image (shapes checked by the caller).
    pub(crate) fn from_parts(packed: Packed, bias: Store<f32>, k: usize, n: usize) -> Self {
        Self { packed, bias, k, n }
    }
}

mod driver;
mod packing;
mod panel;
mod settings;
#[cfg(test)]
mod tests;
mod widen;
#[cfg(target_arch = "x86_64")]
mod x86;

use crate::cpu::layout::KC;
pub use crate::cpu::layout::{PANEL, Q4_BLOCK_BYTES, QUANT_RUN};
use crate::cpu::store::Store;
pub(crate) use panel::SendPtr;
use panel::panel_scalar;
pub(crate) use panel::with_panel;
use settings::{F16_MAX, Isa, has_f16c, isa};
pub use settings::{
    Precision, keep_q4_0, kernel_name, select_kernel, weight_precision, weight_storage,
};
pub(crate) use settings::{has_avx2_fma, has_avx512, int8_simd};
pub(crate) use widen::Block;
use widen::{Weights, block_of, f32_to_f16, next_block};
#[cfg(test)]
use widen::{widen_q4, widen_q8};
