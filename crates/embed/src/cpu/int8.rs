//! Integer products for `SWITCHYARD_WEIGHTS=i8`: activations quantized to 8 bits per row per
//! run of 32 inputs, weights to 7 bits per output per run, multiplied in 16- and 32-bit
//! integers, each run's sum rescaled into an f32 accumulator.
//!
//! Why 7-bit weights: AVX2's int8 product (`vpmaddubsw`) multiplies unsigned bytes by signed
//! ones and adds pairs into a saturating 16-bit lane. Activations are stored offset by 128 as
//! unsigned (0..=254), so a pair is at most 2 x 254 x 63 = 32004, clear of 32767; with 8-bit
//! weights it would saturate. The offset is taken back exactly: each run stores 128 x the sum of
//! its weights. `cargo bench --bench ceiling` measured this product at 1.65x the f32 FMA rate
//! on the reference machine (both sides 8-bit signed, via `vpsignb`, was no faster than FMA).
//!
//! Each output is `bias + sum over runs of (integer sum) x (activation scale x weight scale)`, the
//! runs in ascending order, each added by one fused multiply-add: the AVX2 and the portable
//! code give the same bits, whatever the tiling or thread count.

use crate::cpu::layout::{PANEL, QUANT_RUN};

/// The largest stored weight magnitude (7 bits; see the module's note).
const WEIGHT_MAX: f32 = 63.0;

/// The largest activation magnitude (8 bits signed; stored + 128).
const ACTIVATION_MAX: f32 = 127.0;

/// Inputs per `vpmaddubsw` lane group: 4 consecutive inputs of one output in 4 bytes.
const QUAD: usize = 4;

/// 32 inputs x one panel of 7-bit weights, laid out for `vpmaddubsw`: per quad of 4 inputs, per
/// output, its 4 weights, so one 32-byte load holds 8 outputs x 4 inputs.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(crate) struct I8Run {
    /// A weight is `value * scale`, per output.
    scales: [f32; PANEL],
    /// 128 x the sum of each output's 32 values: what the activations' offset adds to a run.
    offset: [i32; PANEL],
    values: [[[i8; QUAD]; PANEL]; QUANT_RUN / QUAD],
}

// SAFETY: `repr(C)` arrays of plain numbers, 1,280 bytes, a whole multiple of the 64-byte
// alignment (checked below): no padding, and every bit pattern is a value.
unsafe impl bytemuck::Zeroable for I8Run {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for I8Run {}
const _: () = assert!(size_of::<I8Run>() == 8 * PANEL + PANEL * QUANT_RUN);

/// Packs `w[n, k]` (row-major, each output's weights contiguous) into runs `[panel][k / 32]`;
/// `k` must be whole runs.
pub(crate) fn pack(w: &[f32], n: usize, k: usize) -> Vec<I8Run> {
    debug_assert!(k.is_multiple_of(QUANT_RUN) && w.len() == n * k);
    let runs = k / QUANT_RUN;
    let empty = I8Run {
        scales: [0.0; PANEL],
        offset: [0; PANEL],
        values: [[[0; QUAD]; PANEL]; QUANT_RUN / QUAD],
    };
    let mut packed = vec![empty; n.div_ceil(PANEL) * runs];
    for col in 0..n {
        let (p, c) = (col / PANEL, col % PANEL);
        for r in 0..runs {
            let src = &w[col * k + r * QUANT_RUN..][..QUANT_RUN];
            let amax = src.iter().fold(0f32, |a, v| a.max(v.abs()));
            let scale = amax / WEIGHT_MAX;
            let inv = if scale > 0.0 { 1.0 / scale } else { 0.0 };
            let run = &mut packed[p * runs + r];
            run.scales[c] = scale;
            let mut sum = 0i32;
            for (j, &v) in src.iter().enumerate() {
                let q = round_even(v * inv).clamp(-WEIGHT_MAX, WEIGHT_MAX) as i8;
                run.values[j / QUAD][c][j % QUAD] = q;
                sum += i32::from(q);
            }
            run.offset[c] = 128 * sum;
        }
    }
    packed
}

/// The weight a packed run stores for output `c`, input `j` of the run (for tests).
#[cfg(test)]
pub(crate) fn stored(run: &I8Run, c: usize, j: usize) -> f32 {
    f32::from(run.values[j / QUAD][c][j % QUAD]) * run.scales[c]
}

/// One product's activations: `[m, k]` bytes (value + 128) and `[m, k / 32]` scales.
#[derive(Default)]
pub(crate) struct Activations {
    values: Vec<u8>,
    scales: Vec<f32>,
}

thread_local! {
    /// Per-thread quantized activations, reused across products.
    static ACTIVATIONS: std::cell::RefCell<Activations> = std::cell::RefCell::default();
}

/// Quantizes `x[m, k]` on this thread (each helper of a product does it for itself: a few
/// microseconds against a rendezvous) and runs `body` on the result.
pub(crate) fn with_activations<T>(
    simd: bool,
    x: &[f32],
    m: usize,
    k: usize,
    body: impl FnOnce(&Activations) -> T,
) -> T {
    ACTIVATIONS.with(|cell| {
        let mut a = cell.borrow_mut();
        a.values.resize(m * k, 0);
        a.scales.resize(m * k / QUANT_RUN, 0.0);
        let Activations { values, scales } = &mut *a;
        for ((src, dst), scale) in
            x.chunks_exact(QUANT_RUN).zip(values.chunks_exact_mut(QUANT_RUN)).zip(scales.iter_mut())
        {
            #[cfg(target_arch = "x86_64")]
            if simd {
                // SAFETY: the caller passes `simd` only where AVX2 was detected.
                *scale = unsafe { x86::quantize_run(src, dst) };
                continue;
            }
            let _ = simd;
            let amax = src.iter().fold(0f32, |a, v| a.max(v.abs()));
            let (s, inv) = run_scale(amax);
            *scale = s;
            for (d, &v) in dst.iter_mut().zip(src) {
                let q = round_even(v * inv).clamp(-ACTIVATION_MAX, ACTIVATION_MAX);
                *d = (q as i32 + 128) as u8;
            }
        }
        body(&a)
    })
}

/// `v` rounded to the nearest integer, ties to even (as the SIMD conversion rounds), for
/// `|v| < 2^22`: adding 1.5 x 2^23 leaves no fraction bits. `round_ties_even` is a library call
/// on the x86-64 baseline (no SSE4.1), a third of loading a model when it was used here.
fn round_even(v: f32) -> f32 {
    const SHIFT: f32 = 12_582_912.0;
    (v + SHIFT) - SHIFT
}

/// A run of activations' scale (its largest magnitude maps to 127) and the scale's inverse.
fn run_scale(amax: f32) -> (f32, f32) {
    let scale = amax / ACTIVATION_MAX;
    (scale, if scale > 0.0 { 1.0 / scale } else { 0.0 })
}

/// Adds one panel's products for every row into `acc` (`m` rows of PANEL, holding the bias):
/// `runs` are the panel's `k / 32` runs.
pub(crate) fn panel(
    simd: bool,
    a: &Activations,
    m: usize,
    k: usize,
    runs: &[I8Run],
    acc: &mut [[f32; PANEL]],
) {
    debug_assert_eq!(acc.len(), m);
    #[cfg(target_arch = "x86_64")]
    if simd {
        // SAFETY: the caller passes `simd` only where AVX2 and FMA were detected.
        unsafe { x86::panel(a, m, k, runs, acc) };
        return;
    }
    let _ = simd;
    let per_row = k / QUANT_RUN;
    for (r, row) in acc.iter_mut().enumerate() {
        for (u, run) in runs.iter().enumerate() {
            let xs = &a.values[r * k + u * QUANT_RUN..][..QUANT_RUN];
            let x_scale = a.scales[r * per_row + u];
            for (c, out) in row.iter_mut().enumerate() {
                let mut sum = -run.offset[c];
                for (j, &xv) in xs.iter().enumerate() {
                    sum += i32::from(xv) * i32::from(run.values[j / QUAD][c][j % QUAD]);
                }
                *out = (sum as f32).mul_add(x_scale * run.scales[c], *out);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
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
            let ordered =
                _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
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
                    let scale =
                        _mm256_mul_ps(x_scale, _mm256_load_ps(run.scales[8 * g..].as_ptr()));
                    let o = out.as_mut_ptr().add(8 * g);
                    _mm256_storeu_ps(o, _mm256_fmadd_ps(exact, scale, _mm256_loadu_ps(o)));
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn simd_available() -> bool {
        #[cfg(target_arch = "x86_64")]
        return is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// The values the kernel multiplies: activations as quantized, dequantized.
    pub(crate) fn dequantized_activations(simd: bool, x: &[f32], m: usize, k: usize) -> Vec<f32> {
        with_activations(simd, x, m, k, |a| {
            a.values
                .iter()
                .enumerate()
                .map(|(i, &q)| (f32::from(q) - 128.0) * a.scales[i / QUANT_RUN])
                .collect()
        })
    }

    #[test]
    fn activations_round_the_same_in_simd_and_portable_code() {
        let (m, k) = (5, 96);
        let mut x: Vec<f32> = (0..m * k).map(|i| ((i as f32) * 0.731).sin() * 3.0).collect();
        x[32..64].fill(0.0); // a run of zeros: scale 0, every value stored as 128
        x[100] = 0.5; // exact halves of a step round to even
        let portable = with_activations(false, &x, m, k, |a| (a.values.clone(), a.scales.clone()));
        assert!(portable.0[32..64].iter().all(|&q| q == 128));
        assert_eq!(portable.1[1], 0.0);
        // Each stored activation is within half a step of the original.
        for (i, (&v, &q)) in x.iter().zip(&portable.0).enumerate() {
            let scale = portable.1[i / QUANT_RUN];
            assert!(((f32::from(q) - 128.0) * scale - v).abs() <= scale * 0.5 + 1e-6, "[{i}]");
        }
        if simd_available() {
            let simd = with_activations(true, &x, m, k, |a| (a.values.clone(), a.scales.clone()));
            assert_eq!(simd, portable);
        } else {
            eprintln!("skipping the SIMD half: no AVX2 and FMA");
        }
    }

    #[test]
    fn stored_weights_are_7_bit_and_within_half_a_step() {
        let (n, k) = (40, 64);
        let w: Vec<f32> = (0..n * k).map(|i| ((i as f32) * 0.37).cos() * 0.2).collect();
        let runs = pack(&w, n, k);
        for col in 0..n {
            for kk in 0..k {
                let run = &runs[(col / PANEL) * (k / QUANT_RUN) + kk / QUANT_RUN];
                let (c, j) = (col % PANEL, kk % QUANT_RUN);
                assert!(run.values[j / QUAD][c][j % QUAD].unsigned_abs() <= 63);
                let err = (stored(run, c, j) - w[col * k + kk]).abs();
                assert!(err <= run.scales[c] * 0.5 + 1e-7, "col {col} input {kk}: {err}");
            }
        }
    }

    /// The worst case for `vpmaddubsw`'s 16-bit pairs: every activation at the top of its range
    /// (stored 255) against weights at +-63.
    #[test]
    fn the_largest_pairs_do_not_saturate() {
        let (m, k, n) = (4, 64, 32);
        let x = vec![1.0f32; m * k];
        let w: Vec<f32> = (0..n * k).map(|i| if i % 3 == 0 { -1.0 } else { 1.0 }).collect();
        let runs = pack(&w, n, k);
        let mut kernels = vec![false];
        if simd_available() {
            kernels.push(true);
        }
        for simd in kernels {
            let mut acc = vec![[0f32; PANEL]; m];
            with_activations(simd, &x, m, k, |a| panel(simd, a, m, k, &runs, &mut acc));
            for (r, row) in acc.iter().enumerate() {
                for (c, &got) in row.iter().enumerate() {
                    let want: f32 = w[c * k..(c + 1) * k].iter().sum();
                    assert!((got - want).abs() < 1e-4, "simd {simd} [{r}, {c}]: {got} vs {want}");
                }
            }
        }
    }
}
