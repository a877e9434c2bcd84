//! The AVX-512 VNNI integer tile: `vpdpbusd` multiplies 4 unsigned activation bytes by 4
//! signed weight bytes and adds the 4 products into a 32-bit lane in one instruction, where
//! AVX2 needs `vpmaddubsw`, `vpmaddwd` and an add for half as many outputs. The integer sums
//! are the same exact integers (7-bit weights never saturate either way), each run's sum is
//! rescaled by the same multiply and fused multiply-add in the same order, so this tile gives
//! the AVX2 and portable code's bits.
//!
//! Unlike the AVX2 tile, a tile here keeps its rows' f32 accumulators in registers across
//! every run of the panel (a whole panel row is two registers): it starts them at the bias and
//! stores them straight into the output, with no per-thread accumulator rows to fill and copy
//! (at 512 tokens those two passes cost more than a tenth of the products).

use super::{Activations, I8Run, QUAD, QUANT_RUN};
use std::arch::x86_64::*;

/// Rows per tile. Its registers: ROWS x 2 float accumulators, ROWS x 2 integer sums, the two
/// weight registers and a broadcast, within AVX-512's 32.
const ROWS: usize = 6;

/// Quads of inputs per run, passed opaque for the reason the AVX2 tile gives.
const QUADS: usize = QUANT_RUN / QUAD;

/// Writes the panel's outputs of every row, `dst[r, col0 + c] = bias[c] + products`, for the
/// `bias.len()` (at most 32) columns of the panel, in tiles of up to ROWS rows, each tile over
/// every run of the panel.
///
/// # Safety
/// The CPU must have AVX-512 F, BW and VNNI; `runs` are the panel's `k / 32` runs; `dst` is an
/// `[m, n]` output with `col0 + bias.len() <= n` whose panel columns nothing else touches.
#[allow(clippy::too_many_arguments)] // a kernel's full description; grouping would hide it
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
pub(super) unsafe fn panel(
    a: &Activations,
    m: usize,
    k: usize,
    runs: &[I8Run],
    bias: &[f32],
    dst: *mut f32,
    n: usize,
    col0: usize,
) {
    let quads = std::hint::black_box(QUADS);
    // Columns of each half of the panel that exist: masked loads and stores for a last,
    // partial panel.
    let width = bias.len();
    let masks = [half_mask(width.min(16)), half_mask(width.saturating_sub(16))];
    // SAFETY: the masks cover only the bias's `width` floats.
    let start = unsafe {
        [
            _mm512_maskz_loadu_ps(masks[0], bias.as_ptr()),
            _mm512_maskz_loadu_ps(masks[1], bias.as_ptr().add(16.min(width))),
        ]
    };
    let out = Out { dst, n, col0, masks };
    let mut r0 = 0;
    while r0 < m {
        let left = m - r0;
        let rows = left.div_ceil(left.div_ceil(ROWS));
        // SAFETY: rows r0..r0 + rows <= m of the activations and the output.
        unsafe {
            match rows {
                1 => tile::<1>(a, r0, k, runs, start, &out, quads),
                2 => tile::<2>(a, r0, k, runs, start, &out, quads),
                3 => tile::<3>(a, r0, k, runs, start, &out, quads),
                4 => tile::<4>(a, r0, k, runs, start, &out, quads),
                5 => tile::<5>(a, r0, k, runs, start, &out, quads),
                _ => tile::<ROWS>(a, r0, k, runs, start, &out, quads),
            }
        }
        r0 += rows;
    }
}

/// Where a tile writes: the `[m, n]` output, the panel's first column and which of each half's
/// 16 columns exist.
struct Out {
    dst: *mut f32,
    n: usize,
    col0: usize,
    masks: [__mmask16; 2],
}

/// A mask of the first `cols` (at most 16) lanes.
fn half_mask(cols: usize) -> __mmask16 {
    ((1u32 << cols) - 1) as __mmask16
}

/// Writes rows `r0..r0 + R` of the panel: `start` (the bias) plus every run's products.
///
/// # Safety
/// As [`panel`]; rows `r0..r0 + R` exist in `a` (`k` values each) and in the output; `quads`
/// is [`QUADS`].
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,fma")]
#[inline]
unsafe fn tile<const R: usize>(
    a: &Activations,
    r0: usize,
    k: usize,
    runs: &[I8Run],
    start: [__m512; 2],
    out: &Out,
    quads: usize,
) {
    let per_row = k / QUANT_RUN;
    let mut acc = [start; R];
    for (u, run) in runs.iter().enumerate() {
        // SAFETY: a run is 64-byte aligned; its offsets, scales and values are whole 64-byte
        // lines (offsets at 128, values at 256), 16 lanes per register.
        unsafe {
            let offset = run.offset.as_ptr().cast::<__m512i>();
            // The activations' +128 is taken back by starting each sum at minus its offset.
            let zero = _mm512_setzero_si512();
            let start = [
                _mm512_sub_epi32(zero, _mm512_load_si512(offset)),
                _mm512_sub_epi32(zero, _mm512_load_si512(offset.add(1))),
            ];
            let mut sums = [start; R];
            let values = run.values.as_ptr().cast::<__m512i>();
            for q in 0..quads {
                let w = [
                    _mm512_load_si512(values.add(2 * q)),
                    _mm512_load_si512(values.add(2 * q + 1)),
                ];
                for (r, s) in sums.iter_mut().enumerate() {
                    // Inputs 4q..4q + 4 of run u of row r0 + r.
                    let x = a.values.as_ptr().add((r0 + r) * k + u * QUANT_RUN + q * QUAD);
                    let x = _mm512_set1_epi32(x.cast::<i32>().read_unaligned());
                    s[0] = _mm512_dpbusd_epi32(s[0], x, w[0]);
                    s[1] = _mm512_dpbusd_epi32(s[1], x, w[1]);
                }
            }
            let scales =
                [_mm512_load_ps(run.scales.as_ptr()), _mm512_load_ps(run.scales.as_ptr().add(16))];
            for (r, (o, s)) in acc.iter_mut().zip(&sums).enumerate() {
                let x_scale = _mm512_set1_ps(a.scales[(r0 + r) * per_row + u]);
                for g in 0..2 {
                    let exact = _mm512_cvtepi32_ps(s[g]);
                    let scale = _mm512_mul_ps(x_scale, scales[g]);
                    o[g] = _mm512_fmadd_ps(exact, scale, o[g]);
                }
            }
        }
    }
    for (r, o) in acc.iter().enumerate() {
        // SAFETY: row r0 + r of the [m, n] output, the panel's existing columns only.
        unsafe {
            let row = out.dst.add((r0 + r) * out.n + out.col0);
            _mm512_mask_storeu_ps(row, out.masks[0], o[0]);
            _mm512_mask_storeu_ps(row.add(16), out.masks[1], o[1]);
        }
    }
}
