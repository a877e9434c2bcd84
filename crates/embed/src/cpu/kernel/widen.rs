//! Stored weights (f16, Q4_0 or q8 runs) widened to f32 one block at a time, in L1.

use super::*;

/// One panel's weights, `[k][PANEL]`.
#[derive(Clone, Copy)]
pub(super) enum Weights<'a> {
    F32(&'a [f32]),
    F16(&'a [u16]),
    Q4(&'a [Q4Run]),
    Q8(&'a [Q8Run]),
}

/// A block of KC x PANEL weights widened to f32, aligned for the tiles' loads.
#[repr(C, align(64))]
pub(crate) struct Block(pub(super) [f32; KC * PANEL]);

/// Converts f32 to f16 bit patterns, rounding to nearest even (F16C when present).
pub(super) fn f32_to_f16(src: &[f32]) -> Vec<u16> {
    let mut out = vec![0u16; src.len()];
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("f16c") {
        // SAFETY: f16c (which implies avx) was detected just above.
        unsafe { x86::narrow_f16c(src, &mut out) };
        return out;
    }
    for (o, &v) in out.iter_mut().zip(src) {
        *o = half::f16::from_f32(v).to_bits();
    }
    out
}

/// The f32 weights of inputs `kb..kb + kc` of a panel: borrowed, or widened into `block`.
pub(super) fn block_of<'b>(
    w: Weights<'b>,
    kb: usize,
    kc: usize,
    block: &'b mut Block,
) -> &'b [f32] {
    match w {
        Weights::F32(v) => &v[kb * PANEL..(kb + kc) * PANEL],
        Weights::F16(v) => {
            let src = &v[kb * PANEL..(kb + kc) * PANEL];
            let dst = &mut block.0[..kc * PANEL];
            #[cfg(target_arch = "x86_64")]
            if has_f16c() {
                // SAFETY: F16C was detected.
                unsafe { x86::widen_f16c(src, dst) };
                return dst;
            }
            for (d, &h) in dst.iter_mut().zip(src) {
                *d = half::f16::from_bits(h).to_f32();
            }
            dst
        }
        Weights::Q4(runs) => widen_runs(runs, kb, kc, block, |run, d| {
            #[cfg(target_arch = "x86_64")]
            if has_avx2_fma() {
                // SAFETY: AVX2 was detected.
                return unsafe { x86::widen_q4_avx2(run, d) };
            }
            widen_q4(run, d)
        }),
        Weights::Q8(runs) => widen_runs(runs, kb, kc, block, |run, d| {
            #[cfg(target_arch = "x86_64")]
            if has_avx2_fma() {
                // SAFETY: AVX2 was detected.
                return unsafe { x86::widen_q8_avx2(run, d) };
            }
            widen_q8(run, d)
        }),
    }
}

/// Where the weights after inputs `kb..kb + kc` of a panel are stored, and how many bytes a
/// block of them takes: the next block of this panel, or the first of the next panel (panels
/// are consecutive in one buffer). Only for prefetching: the address may lie past the buffer.
pub(super) fn next_block(w: Weights<'_>, kb: usize, kc: usize) -> (*const u8, usize) {
    fn after<T>(v: &[T], items: usize, per_block: usize) -> (*const u8, usize) {
        (v.as_ptr().wrapping_add(items).cast(), per_block * std::mem::size_of::<T>())
    }
    let next = kb + kc;
    match w {
        Weights::F32(v) => after(v, next * PANEL, KC * PANEL),
        Weights::F16(v) => after(v, next * PANEL, KC * PANEL),
        Weights::Q4(v) => after(v, next / QUANT_RUN, KC / QUANT_RUN),
        Weights::Q8(v) => after(v, next / QUANT_RUN, KC / QUANT_RUN),
    }
}

/// Widens the quantized runs of inputs `kb..kb + kc` into `block`, one run at a time. KC is a
/// multiple of QUANT_RUN and so is k for quantized weights, so a block is whole runs.
pub(super) fn widen_runs<'b, R>(
    runs: &[R],
    kb: usize,
    kc: usize,
    block: &'b mut Block,
    widen: impl Fn(&R, &mut [f32]),
) -> &'b [f32] {
    let dst = &mut block.0[..kc * PANEL];
    let first = kb / QUANT_RUN;
    for (run, d) in
        runs[first..first + kc / QUANT_RUN].iter().zip(dst.chunks_exact_mut(QUANT_RUN * PANEL))
    {
        widen(run, d);
    }
    dst
}

/// Widens one run of 8-bit weights into `QUANT_RUN` panel rows of f32 (the portable way).
pub(super) fn widen_q8(run: &Q8Run, dst: &mut [f32]) {
    for (vals, row) in run.values.iter().zip(dst.chunks_exact_mut(PANEL)) {
        for ((o, &v), &s) in row.iter_mut().zip(vals).zip(&run.scales) {
            *o = f32::from(v) * s;
        }
    }
}

/// Widens one run of Q4_0 weights into `QUANT_RUN` panel rows of f32 (the portable way).
pub(super) fn widen_q4(run: &Q4Run, dst: &mut [f32]) {
    for (nib, row) in run.nibbles.iter().zip(dst.chunks_exact_mut(PANEL)) {
        for (c, v) in row.iter_mut().enumerate() {
            let q = (nib[c / 2] >> (4 * (c % 2))) & 0x0F;
            *v = (i32::from(q) - 8) as f32 * run.scales[c];
        }
    }
}
