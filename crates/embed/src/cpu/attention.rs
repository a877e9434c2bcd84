//! Attention of one text for one head, through the same packed matrix kernel as the linear
//! layers.

use super::kernel::{PackedLinear, SendPtr};
use super::math::{exp_neg, lane_max, lane_sum};

/// Per-thread buffers of one head's attention.
#[derive(Default)]
pub(super) struct AttnScratch {
    q: Vec<f32>,
    kt: Vec<f32>,
    v: Vec<f32>,
    scores: Vec<f32>,
    ctx: Vec<f32>,
}

/// Attention of one text's tokens (rows `[start, start + len)` of `qkv`) for one head,
/// written to the head's columns of those rows of `ctx` (`[tokens, h]`).
///
/// Both products (`Q K^T` and `P V`) go through the packed matrix kernel: K^T and V are packed
/// per call (`len x head_dim` floats, cheap next to the products) so attention runs at the
/// same SIMD width as the linear layers.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one head of one text: all of it is needed, nothing groups
pub(super) fn attend(
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
    sc.q.clear();
    sc.kt.resize(hd * len, 0.0);
    sc.v.clear();
    for j in 0..len {
        let row = &qkv[(start + j) * stride..(start + j + 1) * stride];
        sc.q.extend(row[head * hd..(head + 1) * hd].iter().map(|v| v * scale));
        for (d, &kv) in row[h + head * hd..h + (head + 1) * hd].iter().enumerate() {
            sc.kt[d * len + j] = kv;
        }
        sc.v.extend_from_slice(&row[2 * h + head * hd..2 * h + (head + 1) * hd]);
    }
    let keys = PackedLinear::new(&sc.kt, vec![0.0; len], hd, len);
    keys.forward(&sc.q, len, &mut sc.scores, 1);
    for row in sc.scores.chunks_exact_mut(len) {
        let max = lane_max(row);
        for s in row.iter_mut() {
            *s = exp_neg(*s - max);
        }
        let inv = 1.0 / lane_sum(row, |v| v);
        for s in row.iter_mut() {
            *s *= inv;
        }
    }
    let values = PackedLinear::new(&sc.v, vec![0.0; hd], len, hd);
    values.forward(&sc.scores, len, &mut sc.ctx, 1);
    for (i, c) in sc.ctx.chunks_exact(hd).enumerate() {
        // SAFETY: row start + i, columns of this head: inside `ctx` and written only here.
        unsafe {
            std::ptr::copy_nonoverlapping(
                c.as_ptr(),
                ctx.get().add((start + i) * h + head * hd),
                hd,
            )
        };
    }
}
