//! The AVX2 integer tile: `vpmaddubsw` pairs widened by `vpmaddwd`, 8 outputs per register.

use super::{Activations, I8Run, PANEL, QUAD, QUANT_RUN};
use std::arch::x86_64::*;

/// Quantizes one run of 32 activations into `dst` (`round(v / scale) + 128`) and returns
/// its scale, as the portable code does.
///
/// # Safety
/// The CPU has AVX2; `src` and `dst` hold 32 values.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn quantize_run(src: &[f32], dst: &mut [u8]) -> f32 {
    debug_assert!(src.len() == QUANT_RUN && dst.len() == QUANT_RUN);
    // SAFETY: four 8-float loads and one 32-byte store within the run.
    unsafe {
        let v: [__m256; 4] = std::array::from_fn(|i| _mm256_loadu_ps(src.as_ptr().add(8 * i)));
        let sign = _mm256_set1_ps(-0.0);
        let abs = v.map(|x| _mm256_andnot_ps(sign, x));
        let m8 = _mm256_max_ps(_mm256_max_ps(abs[0], abs[1]), _mm256_max_ps(abs[2], abs[3]));
        let m4 = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps::<1>(m8));
        let m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        let m1 = _mm_max_ss(m2, _mm_shuffle_ps::<1>(m2, m2));
        let (scale, inv) = super::run_scale(_mm_cvtss_f32(m1));
        let inv = _mm256_set1_ps(inv);
        let q = v.map(|x| _mm256_cvtps_epi32(_mm256_mul_ps(x, inv)));
        // Packing works within 128-bit lanes; the permute puts the 32 bytes back in order.
        let words = [_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3])];
        let bytes = _mm256_packs_epi16(words[0], words[1]);
        let ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        let unsigned = _mm256_add_epi8(ordered, _mm256_set1_epi8(-128));
        _mm256_storeu_si256(dst.as_mut_ptr().cast(), unsigned);
        scale
    }
}

/// Rows and 8-output groups per tile. Its registers: ROWS x GROUPS accumulators, GROUPS
/// weight groups, the broadcast activations, a product and the ones, within AVX2's 16.
const ROWS: usize = 4;
const GROUPS: usize = 2;

/// Quads of inputs per run, passed to the tile as an opaque value: as a constant, the
/// compiler unrolled the run whole and hoisted all its weight loads, spilling the
/// accumulators to the stack (perf: a third of the tile's time in spills).
const QUADS: usize = QUANT_RUN / QUAD;

/// Adds the panel's products for every row into `acc`: run by run (a run's 1280 bytes
/// stay in L1 while every tile reads them), in tiles of up to ROWS rows x GROUPS groups of
/// 8 outputs, each tile's integer sums rescaled into `acc` at the end of the run.
///
/// # Safety
/// The CPU must have AVX2 and FMA; `acc` holds `m` rows of the panel's outputs.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn panel(
    a: &Activations,
    m: usize,
    k: usize,
    runs: &[I8Run],
    acc: &mut [[f32; PANEL]],
) {
    // Opaque to the compiler (see QUADS).
    let quads = std::hint::black_box(QUADS);
    for (u, run) in runs.iter().enumerate() {
        // The next run's lines, fetched while this one is computed on: without it the
        // first tile of each run waited on memory (perf: half the kernel's time on its
        // first weight load).
        if let Some(next) = runs.get(u + 1) {
            let base = std::ptr::from_ref(next).cast::<i8>();
            for line in 0..size_of::<I8Run>() / 64 {
                // SAFETY: prefetching never faults; the address is inside `next`.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(base.add(64 * line)) };
            }
        }
        for g0 in (0..PANEL / 8).step_by(GROUPS) {
            let mut r0 = 0;
            while r0 < m {
                let left = m - r0;
                let rows = left.div_ceil(left.div_ceil(ROWS));
                // SAFETY: rows r0..r0 + rows <= m of the activations and accumulators,
                // groups g0..g0 + GROUPS <= 4.
                unsafe {
                    match rows {
                        1 => tile::<1, GROUPS>(a, r0, g0, k, u, run, acc, quads),
                        2 => tile::<2, GROUPS>(a, r0, g0, k, u, run, acc, quads),
                        3 => tile::<3, GROUPS>(a, r0, g0, k, u, run, acc, quads),
                        _ => tile::<ROWS, GROUPS>(a, r0, g0, k, u, run, acc, quads),
                    }
                }
                r0 += rows;
            }
        }
    }
}

/// Adds rows `r0..r0 + R`, outputs `8 * g0..8 * (g0 + G)`, of run `u`'s products into
/// `acc`.
///
/// # Safety
/// The CPU has AVX2 and FMA; rows `r0..r0 + R` exist in `a` (`k` values each) and `acc`;
/// `g0 + G <= 4`; `u < k / 32`; `quads` is [`QUADS`].
#[allow(clippy::too_many_arguments)] // a kernel's full description; grouping would hide it
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn tile<const R: usize, const G: usize>(
    a: &Activations,
    r0: usize,
    g0: usize,
    k: usize,
    u: usize,
    run: &I8Run,
    acc: &mut [[f32; PANEL]],
    quads: usize,
) {
    let ones = _mm256_set1_epi16(1);
    // One pointer per row, as in the f32 tile: each broadcast is a single load.
    // SAFETY: input u * 32 of rows r0..r0 + R of the [m, k] activations.
    let rows: [*const i32; R] = std::array::from_fn(|r| unsafe {
        a.values.as_ptr().add((r0 + r) * k + u * QUANT_RUN).cast::<i32>()
    });
    let mut sums = [[_mm256_setzero_si256(); G]; R];
    let values = run.values.as_ptr().cast::<__m256i>();
    for q in 0..quads {
        // SAFETY: quad q, outputs 8(g0 + g)..+8: aligned 32-byte groups of the run's
        // values (the run is 64-byte aligned, its values at byte 256).
        let w: [__m256i; G] =
            std::array::from_fn(|g| unsafe { _mm256_load_si256(values.add(4 * q + g0 + g)) });
        for (row, &xr) in sums.iter_mut().zip(&rows) {
            // SAFETY: inputs q * 4..q * 4 + 4 of this row's run.
            let x = _mm256_set1_epi32(unsafe { xr.add(q).read_unaligned() });
            for (s, &wg) in row.iter_mut().zip(&w) {
                let pairs = _mm256_maddubs_epi16(x, wg);
                *s = _mm256_add_epi32(*s, _mm256_madd_epi16(pairs, ones));
            }
        }
    }
    for (r, row) in sums.iter().enumerate() {
        let x_scale = _mm256_set1_ps(a.scales[(r0 + r) * (k / QUANT_RUN) + u]);
        let out = &mut acc[r0 + r];
        for (g, s) in (g0..).zip(row) {
            // SAFETY: group g's 8 outputs lie in the run's 32 and the row's PANEL.
            unsafe {
                let offset = _mm256_load_si256(run.offset[8 * g..].as_ptr().cast());
                let exact = _mm256_cvtepi32_ps(_mm256_sub_epi32(*s, offset));
                let scale = _mm256_mul_ps(x_scale, _mm256_load_ps(run.scales[8 * g..].as_ptr()));
                let o = out.as_mut_ptr().add(8 * g);
                _mm256_storeu_ps(o, _mm256_fmadd_ps(exact, scale, _mm256_loadu_ps(o)));
            }
        }
    }
}
