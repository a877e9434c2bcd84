//! One panel of the output: per-thread accumulators and the portable (scalar) kernel.

use super::*;

thread_local! {
    /// Per-thread accumulators of one panel, one row per input row.
    static ACC: std::cell::RefCell<Vec<[f32; PANEL]>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Per-thread block of widened weights (not a fresh one per panel: zeroing 16 KiB for each
    /// of a forward's 648 panels showed as 2% of it).
    static BLOCK: std::cell::RefCell<Box<Block>> =
        std::cell::RefCell::new(Box::new(Block([0.0; KC * PANEL])));
}

/// A buffer's pointer handed to threads that write disjoint parts of it.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr(pub *mut f32);

impl SendPtr {
    // A method, so closures capture the whole (Send) wrapper rather than the raw field.
    pub(crate) fn get(self) -> *mut f32 {
        self.0
    }
}
// SAFETY: threads write disjoint parts (distinct panels, rows or heads) of the buffer, and are
// joined before it is used again.
unsafe impl Send for SendPtr {}
// SAFETY: as above; the pointer is only copied, never dereferenced concurrently on one element.
unsafe impl Sync for SendPtr {}

/// Runs `body` on this thread's accumulators (`m` rows of one panel, starting at the bias) and
/// block of widened weights, then writes the rows' first `bias.len()` columns to `dst[r, col0..]`.
///
/// # Safety
/// `dst` is a `[m, n]` buffer with `col0 + bias.len() <= n`.
pub(crate) unsafe fn with_panel(
    m: usize,
    bias: &[f32],
    dst: *mut f32,
    n: usize,
    col0: usize,
    body: impl FnOnce(&mut [[f32; PANEL]], &mut Block),
) {
    ACC.with(|cell| {
        BLOCK.with(|blk| {
            let mut acc = cell.borrow_mut();
            let mut b = [0f32; PANEL];
            b[..bias.len()].copy_from_slice(bias);
            acc.clear();
            acc.resize(m, b);
            body(&mut acc, &mut blk.borrow_mut());
            if bias.len() == PANEL {
                // A whole panel row is a copy of known size, done inline: a call to `memmove`
                // per row of each panel was a tenth of a 512-token forward.
                for (r, row) in acc.iter().enumerate() {
                    // SAFETY: row r < m and columns col0..col0 + PANEL lie in the [m, n] output.
                    unsafe { dst.add(r * n + col0).cast::<[f32; PANEL]>().write_unaligned(*row) };
                }
            } else {
                for (r, row) in acc.iter().enumerate() {
                    // SAFETY: row r < m and columns col0..col0+bias.len() lie in the [m, n] output.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            row.as_ptr(),
                            dst.add(r * n + col0),
                            bias.len(),
                        )
                    };
                }
            }
        })
    });
}

/// Writes the panel's columns from `col0` (`bias.len()` of them) of every row: `dst[r, col0 + c]`.
#[allow(clippy::too_many_arguments)] // a kernel's full description; grouping would hide it
pub(super) fn panel_scalar(
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
        for kb in (0..k).step_by(KC) {
            let kc = KC.min(k - kb);
            let wb = block_of(w, kb, kc, block);
            for (r, a) in acc.iter_mut().enumerate() {
                let xr = &x[r * k + kb..r * k + kb + kc];
                for (&xv, wr) in xr.iter().zip(wb.chunks_exact(PANEL)) {
                    for (s, wv) in a.iter_mut().zip(wr) {
                        *s += xv * wv;
                    }
                }
            }
        }
    };
    // SAFETY: the caller's output is [m, n] and the panel's columns fit in it.
    unsafe { with_panel(m, bias, dst, n, col0, body) }
}
