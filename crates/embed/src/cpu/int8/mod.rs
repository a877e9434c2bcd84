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

/// Quantizes `x[m, k]` on this thread (each helper of a product with few rows does it for
/// itself: a few microseconds against a rendezvous) and runs `body` on the result.
pub(crate) fn with_activations<T>(
    simd: bool,
    x: &[f32],
    m: usize,
    k: usize,
    body: impl FnOnce(&Activations) -> T,
) -> T {
    ACTIVATIONS.with(|cell| {
        let mut a = cell.borrow_mut();
        a.resize(m, k);
        let Activations { values, scales } = &mut *a;
        quantize(simd, x, values, scales);
        body(&a)
    })
}

impl Activations {
    /// Sizes the buffers for `[m, k]` activations.
    pub(crate) fn resize(&mut self, m: usize, k: usize) {
        self.values.resize(m * k, 0);
        self.scales.resize(m * k / QUANT_RUN, 0.0);
    }

    /// Where [`RowWriter::quantize_rows`] writes, for threads that each quantize some rows.
    pub(crate) fn writer(&mut self) -> RowWriter {
        RowWriter { values: self.values.as_mut_ptr(), scales: self.scales.as_mut_ptr() }
    }
}

/// Raw access to an [`Activations`]' buffers for threads that quantize disjoint rows of it.
#[derive(Clone, Copy)]
pub(crate) struct RowWriter {
    values: *mut u8,
    scales: *mut f32,
}

// SAFETY: the threads of a product write disjoint rows (see `quantize_rows`) and are joined
// before the activations are read.
unsafe impl Send for RowWriter {}
// SAFETY: as above.
unsafe impl Sync for RowWriter {}

impl RowWriter {
    /// Quantizes `rows` of `x[m, k]` into the activations this writer came from.
    ///
    /// # Safety
    /// The activations were sized for `[m, k]` with `rows.end <= m`, are not moved or resized
    /// until every writer is done, and no other thread writes or reads these rows meanwhile.
    pub(crate) unsafe fn quantize_rows(
        self,
        simd: bool,
        x: &[f32],
        k: usize,
        rows: std::ops::Range<usize>,
    ) {
        let (n, runs) = (rows.len() * k, rows.len() * k / QUANT_RUN);
        // SAFETY: rows `rows` of the sized buffers, written by this thread only.
        let (values, scales) = unsafe {
            (
                std::slice::from_raw_parts_mut(self.values.add(rows.start * k), n),
                std::slice::from_raw_parts_mut(self.scales.add(rows.start * k / QUANT_RUN), runs),
            )
        };
        quantize(simd, &x[rows.start * k..rows.end * k], values, scales);
    }
}

/// Quantizes `x` run by run into `values` (value + 128) and `scales`.
fn quantize(simd: bool, x: &[f32], values: &mut [u8], scales: &mut [f32]) {
    for ((src, dst), scale) in
        x.chunks_exact(QUANT_RUN).zip(values.chunks_exact_mut(QUANT_RUN)).zip(scales.iter_mut())
    {
        #[cfg(target_arch = "x86_64")]
        if simd {
            // SAFETY: the caller passes `simd` only where AVX2 was detected.
            *scale = unsafe { avx2::quantize_run(src, dst) };
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

/// Which code multiplies integer runs: picked by the product's caller from the process's
/// instruction set. Every kernel gives the same bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntKernel {
    /// Plain Rust, any CPU.
    Portable,
    /// AVX2 and FMA (`vpmaddubsw`).
    Avx2,
    /// AVX-512 F, BW and VNNI (`vpdpbusd`): one instruction per 64 multiply-adds, where the
    /// AVX2 tile needs three per 32.
    Vnni,
}

impl IntKernel {
    /// Whether activations are quantized with AVX2 (every kernel but the portable one).
    pub(crate) fn simd(self) -> bool {
        self != IntKernel::Portable
    }
}

/// Writes one panel's outputs for every row: `dst[r, col0 + c] = bias[c] + sum over runs`, for
/// the panel's `bias.len()` (at most 32) columns. `runs` are the panel's `k / 32` runs.
///
/// # Safety
/// `kernel` must be one the CPU has; `dst` is an `[m, n]` output with `col0 + bias.len() <= n`
/// whose panel columns nothing else touches during the call.
#[allow(clippy::too_many_arguments)] // a kernel's full description; grouping would hide it
pub(crate) unsafe fn panel(
    kernel: IntKernel,
    a: &Activations,
    m: usize,
    k: usize,
    runs: &[I8Run],
    bias: &[f32],
    dst: *mut f32,
    n: usize,
    col0: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if kernel == IntKernel::Vnni {
        // SAFETY: the caller picks Vnni only where AVX-512 F, BW and VNNI were detected, and
        // passes an output that holds the panel.
        return unsafe { vnni::panel(a, m, k, runs, bias, dst, n, col0) };
    }
    let body = |acc: &mut [[f32; PANEL]], _: &mut crate::cpu::kernel::Block| {
        accumulate(kernel, a, m, k, runs, acc)
    };
    // SAFETY: the caller's output is [m, n] and the panel's columns fit in it.
    unsafe { crate::cpu::kernel::with_panel(m, bias, dst, n, col0, body) }
}

/// Adds one panel's products for every row into `acc` (`m` rows of PANEL, holding the bias),
/// with a kernel that works on accumulator rows: AVX2 or portable.
fn accumulate(
    kernel: IntKernel,
    a: &Activations,
    m: usize,
    k: usize,
    runs: &[I8Run],
    acc: &mut [[f32; PANEL]],
) {
    debug_assert_eq!(acc.len(), m);
    #[cfg(target_arch = "x86_64")]
    if kernel != IntKernel::Portable {
        // SAFETY: the caller picks Avx2 (or Vnni, whose CPUs have AVX2 too) only where AVX2
        // and FMA were detected.
        return unsafe { avx2::panel(a, m, k, runs, acc) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = kernel;
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
mod avx2;
#[cfg(target_arch = "x86_64")]
mod vnni;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every integer kernel this CPU can run (the portable one always).
    fn kernels_available() -> Vec<IntKernel> {
        let mut v = vec![IntKernel::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                v.push(IntKernel::Avx2);
            }
            if is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vnni") {
                v.push(IntKernel::Vnni);
            }
        }
        v
    }

    fn simd_available() -> bool {
        kernels_available().len() > 1
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
        for kernel in kernels_available() {
            let mut out = vec![0f32; m * n];
            with_activations(kernel.simd(), &x, m, k, |a| {
                // SAFETY: the kernel is available; out is [m, n] and the panel is all of it.
                unsafe { panel(kernel, a, m, k, &runs, &[0.0; PANEL], out.as_mut_ptr(), n, 0) }
            });
            for (r, row) in out.chunks_exact(n).enumerate() {
                for (c, &got) in row.iter().enumerate() {
                    let want: f32 = w[c * k..(c + 1) * k].iter().sum();
                    assert!((got - want).abs() < 1e-4, "{kernel:?} [{r}, {c}]: {got} vs {want}");
                }
            }
        }
    }
}
