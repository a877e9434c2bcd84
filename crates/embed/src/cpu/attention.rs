//! Attention of one text for one head, through the same packed matrix kernel as the linear
//! layers.

use super::kernel::{PackedLinear, SendPtr};
use super::math::{exp_neg, lane_map_sum, lane_max};

/// Per-thread buffers of one head's attention.
#[derive(Default)]
pub(super) struct AttnScratch {
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    scores: Vec<f32>,
    ctx: Vec<f32>,
}

/// Runs attention `jobs` (`(first row, tokens, head)`) into `ctx`, compiled for the widest
/// vectors of the process's kernel. Not through a closure handed to a `target_feature`
/// function: a closure this size is compiled on its own, without the features (perf: the
/// softmax ran 4 lanes wide that way).
pub(super) fn attend_jobs(
    qkv: &[f32],
    jobs: &[(usize, usize, usize)],
    hd: usize,
    h: usize,
    ctx: SendPtr,
    sc: &mut AttnScratch,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::kernel::has_avx512() {
            // SAFETY: avx512f was detected at run time (and AVX-512 CPUs have AVX2 and FMA).
            return unsafe { attend_jobs_avx512(qkv, jobs, hd, h, ctx, sc) };
        }
        if crate::cpu::kernel::has_avx2_fma() {
            // SAFETY: avx2 and fma were detected at run time.
            return unsafe { attend_jobs_avx2(qkv, jobs, hd, h, ctx, sc) };
        }
    }
    attend_jobs_body(qkv, jobs, hd, h, ctx, sc);
}

/// # Safety
/// The CPU must have AVX-512 F, AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn attend_jobs_avx512(
    qkv: &[f32],
    jobs: &[(usize, usize, usize)],
    hd: usize,
    h: usize,
    ctx: SendPtr,
    sc: &mut AttnScratch,
) {
    attend_jobs_body(qkv, jobs, hd, h, ctx, sc);
}

/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn attend_jobs_avx2(
    qkv: &[f32],
    jobs: &[(usize, usize, usize)],
    hd: usize,
    h: usize,
    ctx: SendPtr,
    sc: &mut AttnScratch,
) {
    attend_jobs_body(qkv, jobs, hd, h, ctx, sc);
}

#[inline(always)]
fn attend_jobs_body(
    qkv: &[f32],
    jobs: &[(usize, usize, usize)],
    hd: usize,
    h: usize,
    ctx: SendPtr,
    sc: &mut AttnScratch,
) {
    for &(start, len, head) in jobs {
        attend(qkv, start, len, head, hd, h, ctx, sc);
    }
}

/// Attention of one text's tokens (rows `[start, start + len)` of `qkv`) for one head,
/// written to the head's columns of those rows of `ctx` (`[tokens, h]`).
///
/// Both products (`Q K^T` and `P V`) go through the packed matrix kernel: K (a weight with one
/// output per key) and V are packed per call (`len x head_dim` floats, cheap next to the
/// products) so attention runs at the same SIMD width as the linear layers.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one head of one text: all of it is needed, nothing groups
fn attend(
    qkv: &[f32],
    start: usize,
    len: usize,
    head: usize,
    hd: usize,
    h: usize,
    ctx: SendPtr,
    sc: &mut AttnScratch,
) {
    let stride = 3 * h;
    let scale = 1.0 / (hd as f32).sqrt();
    // Every element of the three is written below.
    sc.q.resize(len * hd, 0.0);
    sc.k.resize(len * hd, 0.0);
    sc.v.resize(len * hd, 0.0);
    for j in 0..len {
        if j + GATHER_AHEAD < len {
            prefetch_head_rows(qkv, (start + j + GATHER_AHEAD) * stride, head * hd, hd, h);
        }
        let row = &qkv[(start + j) * stride..(start + j + 1) * stride];
        copy_head_row(&row[head * hd..(head + 1) * hd], &mut sc.q[j * hd..(j + 1) * hd]);
        copy_head_row(&row[h + head * hd..h + (head + 1) * hd], &mut sc.k[j * hd..(j + 1) * hd]);
        let v = &row[2 * h + head * hd..2 * h + (head + 1) * hd];
        copy_head_row(v, &mut sc.v[j * hd..(j + 1) * hd]);
    }
    // Scaled in one pass over the gathered rows, which vectorises (inside the gather it did not).
    for v in sc.q.iter_mut() {
        *v *= scale;
    }
    // `K` as rows `[len, hd]` is the weight of `Q K^T` in Hugging Face layout (one output per
    // key): packed from its rows, with no transposed copy (its scattered stores were a seventh
    // of attention).
    let keys = PackedLinear::from_rows(&sc.k, vec![0.0; len], len, hd);
    let values = PackedLinear::new(&sc.v, vec![0.0; hd], len, hd);
    // Query rows a block at a time, so a block's scores and the products' accumulator rows
    // stay in cache (a 512-token text's whole score matrix is 1 MiB per head). Each row's
    // values do not depend on the blocking.
    for first in (0..len).step_by(QUERY_BLOCK) {
        let rows = QUERY_BLOCK.min(len - first);
        keys.forward(&sc.q[first * hd..(first + rows) * hd], rows, &mut sc.scores, 1);
        for row in sc.scores.chunks_exact_mut(len) {
            let max = lane_max(row);
            let inv = 1.0 / lane_map_sum(row, |s| exp_neg(s - max));
            for s in row.iter_mut() {
                *s *= inv;
            }
        }
        values.forward(&sc.scores, rows, &mut sc.ctx, 1);
        for (i, c) in sc.ctx.chunks_exact(hd).enumerate() {
            // SAFETY: row start + first + i, columns of this head: inside `ctx` and written
            // only here.
            let out = unsafe {
                std::slice::from_raw_parts_mut(
                    ctx.get().add((start + first + i) * h + head * hd),
                    hd,
                )
            };
            copy_head_row(c, out);
        }
    }
}

/// Rows ahead of the gather that [`prefetch_head_rows`] asks for. A `qkv` row is `3 h` floats
/// (4.5 KiB for h = 384), more than a page, and hardware prefetchers stop at page edges: without
/// it every head's rows came from memory one demand miss at a time (perf: most of the gather).
const GATHER_AHEAD: usize = 6;

/// Asks for the cache lines of one head's query, key and value slices in the `qkv` row that
/// starts at `row`. A hint only: it changes no value.
#[inline(always)]
fn prefetch_head_rows(qkv: &[f32], row: usize, col: usize, hd: usize, h: usize) {
    #[cfg(target_arch = "x86_64")]
    for part in [0, h, 2 * h] {
        let first = row + part + col;
        // 16 floats per 64-byte line.
        for off in (0..hd).step_by(16) {
            if let Some(v) = qkv.get(first + off) {
                // SAFETY: prefetching is a hint; the address is inside `qkv`.
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                        (v as *const f32).cast(),
                    )
                };
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (qkv, row, col, hd, h);
}

/// Copies one head's row of floats. Inline for rows of 32 (both models' heads): a `memmove`
/// call per row of every head cost more than the copies themselves.
#[inline(always)]
fn copy_head_row(src: &[f32], dst: &mut [f32]) {
    const HEAD: usize = 32;
    match (<&[f32; HEAD]>::try_from(src), <&mut [f32; HEAD]>::try_from(&mut *dst)) {
        (Ok(s), Ok(d)) => *d = *s,
        _ => dst.copy_from_slice(src),
    }
}

/// Query rows per block of [`attend`]: 64 rows of a 512-token text's scores are 128 KiB.
const QUERY_BLOCK: usize = 64;
