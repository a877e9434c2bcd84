//! The AVX-512 and AVX2 tiles (and F16C, Q4_0 and q8 widening) of x86-64.

use super::{Block, KC, PANEL, Q4Run, Q8Run, Weights, block_of, next_block, with_panel};
use std::arch::x86_64::*;

/// Adds `x[R rows, kc] * w[kc, 32]` into `acc` (R rows of 32), in zmm registers.
///
/// # Safety
/// `x` points to R rows of at least `kc` floats at stride `ldx`, `w` to `kc * PANEL`
/// floats, `acc` to R rows of PANEL floats, and the CPU has avx512f.
#[target_feature(enable = "avx512f")]
unsafe fn tile_avx512<const R: usize>(
    x: *const f32,
    ldx: usize,
    kc: usize,
    w: *const f32,
    acc: *mut f32,
) {
    // SAFETY: as the caller's; rows of the accumulators read and written in place.
    unsafe { tile_avx512_to::<R>(x, ldx, kc, w, acc, PANEL, acc, PANEL) }
}

/// Writes `start + x[R rows, kc] * w[kc, 32]` to `out` (R rows of 32 at stride `out_ld`),
/// where `start` is R rows of 32 at stride `start_ld` (0: one row, the bias, for every row).
///
/// # Safety
/// `x` points to R rows of at least `kc` floats at stride `ldx`, `w` to `kc * PANEL`
/// floats, `start` and `out` to R rows of PANEL floats at their strides, and the CPU has
/// avx512f.
#[allow(clippy::too_many_arguments)] // a tile's full description; grouping would hide it
#[target_feature(enable = "avx512f")]
unsafe fn tile_avx512_to<const R: usize>(
    x: *const f32,
    ldx: usize,
    kc: usize,
    w: *const f32,
    start: *const f32,
    start_ld: usize,
    out: *mut f32,
    out_ld: usize,
) {
    let mut a = [[_mm512_setzero_ps(); 2]; R];
    for (r, reg) in a.iter_mut().enumerate() {
        // SAFETY: start has R rows of PANEL floats at stride start_ld.
        unsafe {
            reg[0] = _mm512_loadu_ps(start.add(r * start_ld));
            reg[1] = _mm512_loadu_ps(start.add(r * start_ld + 16));
        }
    }
    for kk in 0..kc {
        // SAFETY: kk < kc, so both 16-float loads lie in w's kc * PANEL floats.
        let (w0, w1) = unsafe {
            (_mm512_loadu_ps(w.add(kk * PANEL)), _mm512_loadu_ps(w.add(kk * PANEL + 16)))
        };
        for (r, reg) in a.iter_mut().enumerate() {
            // SAFETY: row r < R, column kk < kc.
            let xv = _mm512_set1_ps(unsafe { *x.add(r * ldx + kk) });
            reg[0] = _mm512_fmadd_ps(xv, w0, reg[0]);
            reg[1] = _mm512_fmadd_ps(xv, w1, reg[1]);
        }
    }
    for (r, reg) in a.iter().enumerate() {
        // SAFETY: out has R rows of PANEL floats at stride out_ld.
        unsafe {
            _mm512_storeu_ps(out.add(r * out_ld), reg[0]);
            _mm512_storeu_ps(out.add(r * out_ld + 16), reg[1]);
        }
    }
}

/// Adds `x[R rows, kc] * w[kc, 16 of 32]` into `acc` (R rows of 16 at stride PANEL), in
/// ymm registers.
///
/// # Safety
/// `x` points to R rows of at least `kc` floats at stride `ldx`, `w` to `kc * PANEL`
/// floats read 16 at a time, `acc` to R rows of 16 floats at stride PANEL, and the CPU has
/// avx2 and fma.
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2<const R: usize>(
    x: *const f32,
    ldx: usize,
    kc: usize,
    w: *const f32,
    acc: *mut f32,
) {
    let mut a = [[_mm256_setzero_ps(); 2]; R];
    for (r, reg) in a.iter_mut().enumerate() {
        // SAFETY: acc has R rows of 16 floats at stride PANEL.
        unsafe {
            reg[0] = _mm256_loadu_ps(acc.add(r * PANEL));
            reg[1] = _mm256_loadu_ps(acc.add(r * PANEL + 8));
        }
    }
    // One pointer per row, so each broadcast is a single base + index load rather than a
    // chain of stride additions (measured: the loop was issue-bound, not FMA-bound).
    // SAFETY: rows r < R of x.
    let rows: [*const f32; R] = std::array::from_fn(|r| unsafe { x.add(r * ldx) });
    let mut wk = w;
    for kk in 0..kc {
        // SAFETY: kk < kc, so both 8-float loads lie in this half of w's panel row.
        let (w0, w1) = unsafe { (_mm256_loadu_ps(wk), _mm256_loadu_ps(wk.add(8))) };
        for (reg, &xr) in a.iter_mut().zip(&rows) {
            // SAFETY: row r < R, column kk < kc.
            let xv = _mm256_broadcast_ss(unsafe { &*xr.add(kk) });
            reg[0] = _mm256_fmadd_ps(xv, w0, reg[0]);
            reg[1] = _mm256_fmadd_ps(xv, w1, reg[1]);
        }
        // SAFETY: at most one past the block's last row.
        wk = unsafe { wk.add(PANEL) };
    }
    for (r, reg) in a.iter().enumerate() {
        // SAFETY: acc has R rows of 16 floats at stride PANEL.
        unsafe {
            _mm256_storeu_ps(acc.add(r * PANEL), reg[0]);
            _mm256_storeu_ps(acc.add(r * PANEL + 8), reg[1]);
        }
    }
}

/// Runs `$tile` over all `$m` rows of the accumulators `$acc` (rows of PANEL, from `$col`)
/// for one block of `$kc` inputs from `$kb`, whose weights `$wb` stay in L1 while every tile
/// of rows reads them. Tiles are balanced (64 rows in 6-row tiles: 6 x 10 + 4 would stream
/// the block for 4 rows; 7,7,...,6 does not). Before each tile, `$pf` ([`Prefetch`]) asks
/// for a few lines of the next block.
macro_rules! rows_of_block {
    ($tile:ident, $full:literal, $x:ident, $m:ident, $k:ident, $kb:ident, $kc:ident, $wb:expr, $acc:expr, $pf:ident) => {{
        let mut r0 = 0;
        while r0 < $m {
            $pf.step();
            // SAFETY: r0 < m and kb < k keep the pointer inside x.
            let xp = unsafe { $x.as_ptr().add(r0 * $k + $kb) };
            // SAFETY: row r0 < m of the accumulators.
            let ap = unsafe { $acc.add(r0 * PANEL) };
            macro_rules! go {
                ($r:literal) => {{
                    // SAFETY: the CPU feature was checked by the dispatch; at least $r rows
                    // are left; xp, wb and ap are in bounds as above.
                    unsafe { $tile::<$r>(xp, $k, $kc, $wb, ap) };
                    r0 += $r;
                }};
            }
            balanced_tile!($m - r0, $full, go);
        }
    }};
}

/// Calls `$go!(R)` with the height of the next tile when `$left` rows are left and a tile has
/// at most `$full` rows: tiles are balanced (64 rows of at most 6 are 7,7,...,6, not 6 x 10 +
/// 4, which would stream a block for 4 rows).
macro_rules! balanced_tile {
    ($left:expr, $full:literal, $go:ident) => {{
        let left = $left;
        match left.div_ceil(left.div_ceil($full)) {
            1 => $go!(1),
            2 => $go!(2),
            3 => $go!(3),
            4 => $go!(4),
            5 => $go!(5),
            6 => $go!(6),
            7 => $go!(7),
            8 => $go!(8),
            9 => $go!(9),
            10 => $go!(10),
            11 => $go!(11),
            _ => $go!(12),
        }
    }};
}

/// One panel's outputs for every row, with the AVX-512 tiles.
///
/// # Safety
/// The CPU must have AVX-512F and F16C; `dst` points at an `[m, n]` output that holds the
/// panel's columns from `col0`.
#[allow(clippy::too_many_arguments)] // a kernel's full description; grouping would hide it
#[target_feature(enable = "avx512f,f16c")]
pub(super) unsafe fn panel_avx512(
    x: &[f32],
    m: usize,
    k: usize,
    w: Weights<'_>,
    bias: &[f32],
    dst: *mut f32,
    n: usize,
    col0: usize,
) {
    if let (Weights::F32(wf), true, true) = (w, k <= KC, bias.len() == PANEL) {
        // SAFETY: as the caller's.
        return unsafe { one_block_avx512(x, m, k, wf, bias, dst.add(col0), n) };
    }
    let body = |acc: &mut [[f32; PANEL]], block: &mut Block| {
        let ap = acc.as_mut_ptr().cast::<f32>();
        for kb in (0..k).step_by(KC) {
            let kc = KC.min(k - kb);
            let wb = block_of(w, kb, kc, block).as_ptr();
            let mut pf = Prefetch::new(w, kb, kc, m.div_ceil(12));
            rows_of_block!(tile_avx512, 12, x, m, k, kb, kc, wb, ap, pf);
        }
    };
    // SAFETY: the caller's output is [m, n] and the panel's columns fit in it.
    unsafe { with_panel(m, bias, dst, n, col0, body) }
}

/// A whole panel of f32 weights whose inputs fit one block (attention's `Q K^T`: 32 inputs,
/// a head's width): each tile starts at the bias and stores straight into the output, with
/// no accumulator rows to fill and copy out (they were a twentieth of a 512-token forward).
/// The same sums in the same order as the blocked path: the same bits.
///
/// # Safety
/// The CPU has AVX-512F; `x` is `[m, k]`, `w` holds `k * PANEL` floats, `bias` PANEL, and
/// `out` points at row 0, column 0 of the panel in an output of row stride `n`.
#[target_feature(enable = "avx512f")]
unsafe fn one_block_avx512(
    x: &[f32],
    m: usize,
    k: usize,
    w: &[f32],
    bias: &[f32],
    out: *mut f32,
    n: usize,
) {
    let (wp, bp) = (w.as_ptr(), bias.as_ptr());
    let mut r0 = 0;
    while r0 < m {
        // SAFETY: r0 < m rows of x and of the output.
        let (xp, op) = unsafe { (x.as_ptr().add(r0 * k), out.add(r0 * n)) };
        macro_rules! go {
            ($r:literal) => {{
                // SAFETY: at least $r rows are left; the bias is read as one row for all.
                unsafe { tile_avx512_to::<$r>(xp, k, k, wp, bp, 0, op, n) };
                r0 += $r;
            }};
        }
        balanced_tile!(m - r0, 12, go);
    }
}

/// One panel's outputs for every row, with the AVX2 tiles.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C; `dst` points at an `[m, n]` output that holds the
/// panel's columns from `col0`.
#[allow(clippy::too_many_arguments)] // a kernel's full description; grouping would hide it
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn panel_avx2(
    x: &[f32],
    m: usize,
    k: usize,
    w: Weights<'_>,
    bias: &[f32],
    dst: *mut f32,
    n: usize,
    col0: usize,
) {
    let body = |acc: &mut [[f32; PANEL]], block: &mut Block| {
        let ap = acc.as_mut_ptr().cast::<f32>();
        for kb in (0..k).step_by(KC) {
            let kc = KC.min(k - kb);
            let wb = block_of(w, kb, kc, block).as_ptr();
            let mut pf = Prefetch::new(w, kb, kc, 2 * m.div_ceil(6));
            // Both 16-column halves of the block while it is in L1.
            for half in 0..2 {
                let c = half * 16;
                if c >= bias.len() {
                    break;
                }
                // SAFETY: column c < PANEL of the block and of the accumulator rows.
                let (wh, ah) = unsafe { (wb.add(c), ap.add(c)) };
                rows_of_block!(tile_avx2, 6, x, m, k, kb, kc, wh, ah, pf);
            }
        }
    };
    // SAFETY: the caller's output is [m, n] and the panel's columns fit in it.
    unsafe { with_panel(m, bias, dst, n, col0, body) }
}

/// Brings the next block's stored weights into L1 a few lines per tile while the tiles
/// work on this block, so widening it does not wait on memory. A block is read in a burst
/// and then computed on for microseconds: the hardware prefetcher, which follows steady
/// streams, left the widening's loads waiting (perf: 11% of a 64-token forward in
/// `widen_f16c`). All lines at once stalled on the fill buffers instead.
struct Prefetch {
    next: *const u8,
    end: *const u8,
    per_tile: usize,
}

impl Prefetch {
    #[inline(always)]
    fn new(w: Weights<'_>, kb: usize, kc: usize, tiles: usize) -> Self {
        let (next, len) = next_block(w, kb, kc);
        let lines = len.div_ceil(64);
        Self { next, end: next.wrapping_add(len), per_tile: lines.div_ceil(tiles.max(1)) }
    }

    #[inline(always)]
    fn step(&mut self) {
        for _ in 0..self.per_tile {
            if self.next >= self.end {
                return;
            }
            // SAFETY: prefetching never faults, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(self.next.cast()) };
            self.next = self.next.wrapping_add(64);
        }
    }
}

/// `dst = f16(src)`, rounding to nearest even.
///
/// # Safety
/// The CPU has F16C; `dst` is as long as `src`.
#[target_feature(enable = "avx,f16c")]
pub(super) unsafe fn narrow_f16c(src: &[f32], dst: &mut [u16]) {
    let mut s = src.chunks_exact(8);
    let mut d = dst.chunks_exact_mut(8);
    for (si, di) in (&mut s).zip(&mut d) {
        // SAFETY: 8 floats in, 8 halves out.
        unsafe {
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(si.as_ptr()));
            _mm_storeu_si128(di.as_mut_ptr().cast(), h);
        }
    }
    for (o, &v) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *o = half::f16::from_f32(v).to_bits();
    }
}

/// A panel's 32 per-output scales in four registers.
#[target_feature(enable = "avx2")]
fn panel_scales(scales: &[f32; PANEL]) -> [__m256; 4] {
    let s = scales.as_ptr();
    // SAFETY: the four 8-float loads cover the panel's 32 scales.
    unsafe {
        [
            _mm256_loadu_ps(s),
            _mm256_loadu_ps(s.add(8)),
            _mm256_loadu_ps(s.add(16)),
            _mm256_loadu_ps(s.add(24)),
        ]
    }
}

/// Widens one run of Q4_0 weights into `QUANT_RUN` panel rows of f32: `(nibble - 8) *
/// scale`, exact (a 4-bit integer times a half fits in an f32's mantissa).
///
/// # Safety
/// The CPU has AVX2; `dst` holds `QUANT_RUN * PANEL` floats.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn widen_q4_avx2(run: &Q4Run, dst: &mut [f32]) {
    debug_assert_eq!(dst.len(), super::QUANT_RUN * PANEL);
    // SAFETY: each nibble row is 16 bytes; dst has a row of 32 floats per input.
    unsafe {
        let scales = panel_scales(&run.scales);
        let low = _mm_set1_epi8(0x0F);
        let eight = _mm_set1_epi8(8);
        for (nib, row) in run.nibbles.iter().zip(dst.chunks_exact_mut(PANEL)) {
            let bytes = _mm_loadu_si128(nib.as_ptr().cast());
            let even = _mm_and_si128(bytes, low);
            let odd = _mm_and_si128(_mm_srli_epi16(bytes, 4), low);
            // Interleaved back to output order, centred on 0: outputs 0-15, then 16-31.
            let first = _mm_sub_epi8(_mm_unpacklo_epi8(even, odd), eight);
            let second = _mm_sub_epi8(_mm_unpackhi_epi8(even, odd), eight);
            let o = row.as_mut_ptr();
            for (i, q) in [first, _mm_srli_si128(first, 8), second, _mm_srli_si128(second, 8)]
                .into_iter()
                .enumerate()
            {
                let v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
                _mm256_storeu_ps(o.add(8 * i), _mm256_mul_ps(v, scales[i]));
            }
        }
    }
}

/// Widens one run of 8-bit weights into `QUANT_RUN` panel rows of f32: `value * scale`.
///
/// # Safety
/// The CPU has AVX2; `dst` holds `QUANT_RUN * PANEL` floats.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn widen_q8_avx2(run: &Q8Run, dst: &mut [f32]) {
    debug_assert_eq!(dst.len(), super::QUANT_RUN * PANEL);
    // SAFETY: each value row is 32 bytes; dst has 32 floats per input.
    unsafe {
        let scales = panel_scales(&run.scales);
        for (vals, row) in run.values.iter().zip(dst.chunks_exact_mut(PANEL)) {
            let v = vals.as_ptr();
            let o = row.as_mut_ptr();
            for (i, sc) in scales.iter().enumerate() {
                let q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(v.add(8 * i).cast()));
                _mm256_storeu_ps(o.add(8 * i), _mm256_mul_ps(_mm256_cvtepi32_ps(q), *sc));
            }
        }
    }
}

/// `dst = f32(src)` (exact).
///
/// # Safety
/// The CPU has F16C; `dst` is as long as `src`, a multiple of 8 (whole panel rows).
#[target_feature(enable = "avx,f16c")]
pub(super) unsafe fn widen_f16c(src: &[u16], dst: &mut [f32]) {
    debug_assert!(src.len() == dst.len() && src.len().is_multiple_of(8));
    for (si, di) in src.chunks_exact(8).zip(dst.chunks_exact_mut(8)) {
        // SAFETY: 8 halves in, 8 floats out.
        unsafe {
            let v = _mm256_cvtph_ps(_mm_loadu_si128(si.as_ptr().cast()));
            _mm256_storeu_ps(di.as_mut_ptr(), v);
        }
    }
}
