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

use std::sync::OnceLock;

/// Columns per packed panel (the widest kernel's; narrower kernels walk half-panels).
pub const PANEL: usize = 32;

/// Inputs per block: a block of one panel (KC x 32 floats, 16 KiB) stays in L1 while every
/// tile of rows reads it; each output's sum still runs over k in ascending order.
const KC: usize = 128;

thread_local! {
    /// Per-thread accumulators of one panel, one row per input row.
    static ACC32: std::cell::RefCell<Vec<[f32; PANEL]>> = const { std::cell::RefCell::new(Vec::new()) };
    static ACC16: std::cell::RefCell<Vec<[f32; 16]>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A weight matrix packed for [`matmul`].
pub struct PackedLinear {
    packed: Vec<f32>,
    bias: Vec<f32>,
    k: usize,
    n: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    Avx512,
    Avx2,
    Scalar,
}

fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| {
        if std::env::var("SWITCHYARD_KERNEL").as_deref() == Ok("scalar") {
            return Isa::Scalar;
        }
        #[cfg(target_arch = "x86_64")]
        {
            if std::env::var("SWITCHYARD_KERNEL").as_deref() != Ok("avx2")
                && is_x86_feature_detected!("avx512f")
            {
                return Isa::Avx512;
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                return Isa::Avx2;
            }
        }
        Isa::Scalar
    })
}

/// Whether the CPU has AVX2 and FMA (and they are not switched off by `SWITCHYARD_KERNEL`).
pub(crate) fn has_avx2_fma() -> bool {
    matches!(isa(), Isa::Avx2 | Isa::Avx512)
}

/// The kernel in use, for reports: `avx512`, `avx2` or `scalar`.
pub fn kernel_name() -> &'static str {
    match isa() {
        Isa::Avx512 => "avx512",
        Isa::Avx2 => "avx2",
        Isa::Scalar => "scalar",
    }
}

impl PackedLinear {
    /// Packs a weight given transposed, `w_t[k, n]` row-major, with its bias `[n]`.
    pub fn new(w_t: &[f32], bias: Vec<f32>, k: usize, n: usize) -> Self {
        let panels = n.div_ceil(PANEL);
        let mut packed = vec![0f32; panels * k * PANEL];
        for p in 0..panels {
            for kk in 0..k {
                for c in 0..PANEL {
                    let col = p * PANEL + c;
                    if col < n {
                        packed[(p * k + kk) * PANEL + c] = w_t[kk * n + col];
                    }
                }
            }
        }
        Self { packed, bias, k, n }
    }

    /// Packs a weight given in Hugging Face layout, `w[n, k]` row-major (each output's
    /// weights contiguous), reading it in order: the cheap way at load time.
    pub fn from_rows(w: &[f32], bias: Vec<f32>, n: usize, k: usize) -> Self {
        let panels = n.div_ceil(PANEL);
        let mut packed = vec![0f32; panels * k * PANEL];
        for col in 0..n {
            let (p, c) = (col / PANEL, col % PANEL);
            let base = p * k * PANEL + c;
            for (kk, &v) in w[col * k..(col + 1) * k].iter().enumerate() {
                packed[base + kk * PANEL] = v;
            }
        }
        Self { packed, bias, k, n }
    }

    /// Input width.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Output width.
    pub fn n(&self) -> usize {
        self.n
    }

    /// `out[m, n] = x[m, k] W^T + b`, splitting panels over `threads` (1 = this thread).
    pub fn forward(&self, x: &[f32], m: usize, out: &mut Vec<f32>, threads: usize) {
        self.forward_with(isa(), x, m, out, threads);
    }

    fn forward_with(&self, isa: Isa, x: &[f32], m: usize, out: &mut Vec<f32>, threads: usize) {
        assert_eq!(x.len(), m * self.k, "input is not [m, k]");
        out.clear();
        out.resize(m * self.n, 0.0);
        let panels = self.n.div_ceil(PANEL);
        if threads <= 1 || panels < 2 {
            self.panels(isa, x, m, 0..panels, out.as_mut_ptr());
            return;
        }
        let per = panels.div_ceil(threads);
        let dst = SendPtr(out.as_mut_ptr());
        rayon::scope(|s| {
            for t in 0..threads {
                let range = (t * per).min(panels)..((t + 1) * per).min(panels);
                if range.is_empty() {
                    continue;
                }
                s.spawn(move |_| self.panels(isa, x, m, range, dst.get()));
            }
        });
    }

    /// Computes share `part` of `parts` of the output's panels (all rows), into `dst`, a
    /// `[m, n]` row-major buffer that other threads fill with the other shares. Returns the
    /// columns written.
    ///
    /// # Safety
    /// `dst` must point to `m * n` floats that nothing else reads or writes in these columns
    /// during the call.
    pub(crate) unsafe fn forward_share(
        &self,
        x: &[f32],
        m: usize,
        dst: *mut f32,
        part: usize,
        parts: usize,
    ) -> std::ops::Range<usize> {
        assert_eq!(x.len(), m * self.k, "input is not [m, k]");
        let panels = crate::team::share(self.n.div_ceil(PANEL), part, parts);
        let cols = (panels.start * PANEL).min(self.n)..(panels.end * PANEL).min(self.n);
        self.panels(isa(), x, m, panels, dst);
        cols
    }

    /// Computes the columns of `panels` for every row. `dst` points to `[m, n]` row-major.
    fn panels(&self, isa: Isa, x: &[f32], m: usize, panels: std::ops::Range<usize>, dst: *mut f32) {
        for p in panels {
            let w = &self.packed[p * self.k * PANEL..(p + 1) * self.k * PANEL];
            let col0 = p * PANEL;
            let width = (self.n - col0).min(PANEL);
            match isa {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: avx512f was detected at run time before `Isa::Avx512` was chosen.
                Isa::Avx512 => unsafe {
                    x86::panel_avx512(
                        x,
                        m,
                        self.k,
                        w,
                        &self.bias[col0..col0 + width],
                        dst,
                        self.n,
                        col0,
                        width,
                    )
                },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: avx2 and fma were detected at run time before `Isa::Avx2` was chosen.
                Isa::Avx2 => unsafe {
                    x86::panel_avx2(
                        x,
                        m,
                        self.k,
                        w,
                        &self.bias[col0..col0 + width],
                        dst,
                        self.n,
                        col0,
                        width,
                    )
                },
                _ => panel_scalar(
                    x,
                    m,
                    self.k,
                    w,
                    &self.bias[col0..col0 + width],
                    dst,
                    self.n,
                    col0,
                    width,
                ),
            }
        }
    }
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

/// Writes `width` columns from `col0` of every row: `dst[r, col0 + c]`.
#[allow(clippy::too_many_arguments)] // a kernel's full description; grouping would hide it
fn panel_scalar(
    x: &[f32],
    m: usize,
    k: usize,
    w: &[f32],
    bias: &[f32],
    dst: *mut f32,
    n: usize,
    col0: usize,
    width: usize,
) {
    let mut acc = [0f32; PANEL];
    for r in 0..m {
        acc[..width].copy_from_slice(bias);
        acc[width..].fill(0.0);
        let xr = &x[r * k..(r + 1) * k];
        for (kk, &xv) in xr.iter().enumerate() {
            let wr = &w[kk * PANEL..(kk + 1) * PANEL];
            for (a, wv) in acc.iter_mut().zip(wr) {
                *a += xv * wv;
            }
        }
        // SAFETY: row r, columns col0..col0+width lie inside the [m, n] output.
        let out = unsafe { std::slice::from_raw_parts_mut(dst.add(r * n + col0), width) };
        out.copy_from_slice(&acc[..width]);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{KC, PANEL};
    use std::arch::x86_64::*;

    /// Adds `x[R rows, kc] * w[kc, 32]` into `acc` (R rows of 32), in zmm registers.
    ///
    /// # Safety
    /// `x` points to R rows of at least `kc` floats at stride `ldx`, `w` to `kc * PANEL`
    /// floats, and the CPU has avx512f.
    #[target_feature(enable = "avx512f")]
    unsafe fn tile_avx512<const R: usize>(
        x: *const f32,
        ldx: usize,
        kc: usize,
        w: *const f32,
        acc: &mut [[f32; PANEL]],
    ) {
        let mut a = [[_mm512_setzero_ps(); 2]; R];
        for (r, reg) in a.iter_mut().enumerate() {
            // SAFETY: acc has R rows of 32 floats.
            unsafe {
                reg[0] = _mm512_loadu_ps(acc[r].as_ptr());
                reg[1] = _mm512_loadu_ps(acc[r].as_ptr().add(16));
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
            // SAFETY: acc has R rows of 32 floats.
            unsafe {
                _mm512_storeu_ps(acc[r].as_mut_ptr(), reg[0]);
                _mm512_storeu_ps(acc[r].as_mut_ptr().add(16), reg[1]);
            }
        }
    }

    /// Adds `x[R rows, kc] * w[kc, 16 of 32]` into `acc` (R rows of 16), in ymm registers.
    ///
    /// # Safety
    /// `x` points to R rows of at least `kc` floats at stride `ldx`, `w` to `kc * PANEL`
    /// floats read 16 at a time, and the CPU has avx2 and fma.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn tile_avx2<const R: usize>(
        x: *const f32,
        ldx: usize,
        kc: usize,
        w: *const f32,
        acc: &mut [[f32; 16]],
    ) {
        let mut a = [[_mm256_setzero_ps(); 2]; R];
        for (r, reg) in a.iter_mut().enumerate() {
            // SAFETY: acc has R rows of 16 floats.
            unsafe {
                reg[0] = _mm256_loadu_ps(acc[r].as_ptr());
                reg[1] = _mm256_loadu_ps(acc[r].as_ptr().add(8));
            }
        }
        for kk in 0..kc {
            // SAFETY: kk < kc, so both 8-float loads lie in this half of w's panel row.
            let (w0, w1) = unsafe {
                (_mm256_loadu_ps(w.add(kk * PANEL)), _mm256_loadu_ps(w.add(kk * PANEL + 8)))
            };
            for (r, reg) in a.iter_mut().enumerate() {
                // SAFETY: row r < R, column kk < kc.
                let xv = _mm256_set1_ps(unsafe { *x.add(r * ldx + kk) });
                reg[0] = _mm256_fmadd_ps(xv, w0, reg[0]);
                reg[1] = _mm256_fmadd_ps(xv, w1, reg[1]);
            }
        }
        for (r, reg) in a.iter().enumerate() {
            // SAFETY: acc has R rows of 16 floats.
            unsafe {
                _mm256_storeu_ps(acc[r].as_mut_ptr(), reg[0]);
                _mm256_storeu_ps(acc[r].as_mut_ptr().add(8), reg[1]);
            }
        }
    }

    /// Runs `$tile` over all rows in tiles of `$full` (then one smaller tile), for each block
    /// of KC inputs: a weight block stays in L1 while every row tile uses it.
    macro_rules! blocked {
        ($tile:ident, $full:literal, $x:ident, $m:ident, $k:ident, $w:expr, $acc:ident) => {{
            let mut kb = 0;
            while kb < $k {
                let kc = KC.min($k - kb);
                // SAFETY: kb < k keeps the block inside the packed panel.
                let wb = unsafe { $w.add(kb * PANEL) };
                let mut r0 = 0;
                while r0 < $m {
                    // SAFETY: r0 < m and kb < k keep the pointer inside x.
                    let xp = unsafe { $x.as_ptr().add(r0 * $k + kb) };
                    let rows = &mut $acc[r0..];
                    macro_rules! go {
                        ($r:literal) => {{
                            // SAFETY: the CPU feature was checked by the dispatch; rows has at
                            // least $r rows; xp and wb are in bounds as above.
                            unsafe { $tile::<$r>(xp, $k, kc, wb, rows) };
                            r0 += $r;
                        }};
                    }
                    // Balanced tiles (64 rows: 11,11,11,11,10,10 rather than 12 x 5 + 4): a
                    // short last tile streams the weight block for few rows.
                    let left = $m - r0;
                    let tiles = left.div_ceil($full);
                    match left.div_ceil(tiles) {
                        1 => go!(1),
                        2 => go!(2),
                        3 => go!(3),
                        4 => go!(4),
                        5 => go!(5),
                        6 => go!(6),
                        7 => go!(7),
                        8 => go!(8),
                        9 => go!(9),
                        10 => go!(10),
                        11 => go!(11),
                        _ => go!(12),
                    }
                }
                kb += KC;
            }
        }};
    }

    #[allow(clippy::too_many_arguments)] // a kernel's full description; grouping would hide it
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn panel_avx512(
        x: &[f32],
        m: usize,
        k: usize,
        w: &[f32],
        bias: &[f32],
        dst: *mut f32,
        n: usize,
        col0: usize,
        width: usize,
    ) {
        super::ACC32.with(|cell| {
            let mut acc = cell.borrow_mut();
            acc.clear();
            let mut b = [0f32; PANEL];
            b[..width].copy_from_slice(bias);
            acc.resize(m, b);
            blocked!(tile_avx512, 12, x, m, k, w.as_ptr(), acc);
            for (r, row) in acc.iter().enumerate() {
                // SAFETY: row r < m and columns col0..col0+width < n lie in the output.
                unsafe {
                    std::ptr::copy_nonoverlapping(row.as_ptr(), dst.add(r * n + col0), width)
                };
            }
        });
    }

    #[allow(clippy::too_many_arguments)] // a kernel's full description; grouping would hide it
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn panel_avx2(
        x: &[f32],
        m: usize,
        k: usize,
        w: &[f32],
        bias: &[f32],
        dst: *mut f32,
        n: usize,
        col0: usize,
        width: usize,
    ) {
        super::ACC16.with(|cell| {
            let mut acc = cell.borrow_mut();
            for half in 0..2 {
                let c = half * 16;
                if c >= width {
                    break;
                }
                let wd = (width - c).min(16);
                let mut b = [0f32; 16];
                b[..wd].copy_from_slice(&bias[c..c + wd]);
                acc.clear();
                acc.resize(m, b);
                // SAFETY: the half-panel starts inside the packed panel.
                let wp = unsafe { w.as_ptr().add(c) };
                blocked!(tile_avx2, 6, x, m, k, wp, acc);
                for (r, row) in acc.iter().enumerate() {
                    // SAFETY: row r < m and columns col0+c..col0+c+wd < n lie in the output.
                    unsafe {
                        std::ptr::copy_nonoverlapping(row.as_ptr(), dst.add(r * n + col0 + c), wd)
                    };
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f32], w_t: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut out = vec![0f32; m * n];
        for r in 0..m {
            for c in 0..n {
                out[r * n + c] = b[c] + (0..k).map(|i| x[r * k + i] * w_t[i * n + c]).sum::<f32>();
            }
        }
        out
    }

    /// Every kernel this CPU can run (the scalar one always).
    fn available() -> Vec<Isa> {
        let mut v = vec![Isa::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                v.push(Isa::Avx2);
            }
            if is_x86_feature_detected!("avx512f") {
                v.push(Isa::Avx512);
            }
        }
        eprintln!("kernels tested: {v:?}");
        v
    }

    #[test]
    fn every_shape_matches_the_naive_product_on_any_thread_count() {
        for &(m, k, n) in
            &[(1, 3, 5), (7, 17, 40), (13, 64, 96), (25, 33, 70), (12, 8, 32), (30, 300, 48)]
        {
            let x: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect();
            let w: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 9.0).collect();
            let b: Vec<f32> = (0..n).map(|i| i as f32 / 10.0).collect();
            let want = naive(&x, &w, &b, m, k, n);
            let lin = PackedLinear::new(&w, b.clone(), k, n);
            let rows: Vec<f32> = (0..n * k).map(|i| w[(i % k) * n + i / k]).collect();
            assert_eq!(PackedLinear::from_rows(&rows, b, n, k).packed, lin.packed);
            for isa in available() {
                for threads in [1, 2, 3] {
                    let mut out = Vec::new();
                    lin.forward_with(isa, &x, m, &mut out, threads);
                    for (i, (a, e)) in out.iter().zip(&want).enumerate() {
                        assert!(
                            (a - e).abs() < 1e-4,
                            "{m}x{k}x{n} {isa:?} t{threads} [{i}]: {a} vs {e}"
                        );
                    }
                }
            }
        }
    }
}
