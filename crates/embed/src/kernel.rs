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
//!
//! Model weights are stored as IEEE half floats by default ([`weight_precision`]): a forward
//! streams every weight once, and at few rows that stream, not the arithmetic, sets the time
//! (MiniLM's 10.6 M layer weights are 42 MB in f32, more than a 32 MiB L3; in f16, 21 MB, they
//! stay in it). Each block of KC inputs is widened to f32 once (F16C), in L1, and the
//! f32 tiles run on it unchanged, so the sums are the f32 kernel's over exactly-widened weights.
//! While the tiles run on one block, the next block's stored weights are prefetched a few lines
//! per tile, so widening it finds them in L1.

use crate::options::{KernelChoice, WeightsChoice};
use std::sync::OnceLock;

/// Columns per packed panel (the widest kernel's; narrower kernels walk half-panels).
pub const PANEL: usize = 32;

/// Inputs per block: a block of one panel (KC x 32 floats, 16 KiB) stays in L1 while every
/// tile of rows reads it; each output's sum still runs over k in ascending order.
const KC: usize = 128;

thread_local! {
    /// Per-thread accumulators of one panel, one row per input row.
    static ACC: std::cell::RefCell<Vec<[f32; PANEL]>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Per-thread block of widened weights (not a fresh one per panel: zeroing 16 KiB for each
    /// of a forward's 648 panels showed as 2% of it).
    static BLOCK: std::cell::RefCell<Box<Block>> =
        std::cell::RefCell::new(Box::new(Block([0.0; KC * PANEL])));
}

/// A weight matrix packed for the kernels.
pub struct PackedLinear {
    packed: Packed,
    bias: Vec<f32>,
    k: usize,
    n: usize,
}

/// Panels `[panel][k][PANEL]`, in f32 or as f16 bit patterns; or panels of runs `[panel][k /
/// 32]`: [`Q4Run`]s for weights shipped as Q4_0, [`Q8Run`]s for `SWITCHYARD_WEIGHTS=q8`, and
/// integer runs for `SWITCHYARD_WEIGHTS=i8` ([`crate::int8`]).
enum Packed {
    F32(Vec<f32>),
    F16(Vec<u16>),
    Q4(Vec<Q4Run>),
    Q8(Vec<Q8Run>),
    I8(Vec<crate::int8::I8Run>),
}

/// 32 inputs x one panel of 8-bit weights: the 32 outputs' scales, then per input the 32
/// outputs' values; a weight is `value * scale`.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Q8Run {
    scales: [f32; PANEL],
    values: [[i8; PANEL]; QUANT_RUN],
}

/// Inputs per quantization run (ggml's `QK4_0` and `QK8_0`): one scale per output per 32
/// inputs, for Q4_0 and q8 weights alike.
pub const QUANT_RUN: usize = 32;

/// Bytes of one ggml Q4_0 block: an f16 scale, then 16 bytes holding 32 nibbles.
pub const Q4_BLOCK_BYTES: usize = 18;

/// 32 inputs x one panel of Q4_0 weights, laid out for widening a whole panel row at once:
/// the 32 outputs' scales, then per input the 32 nibbles (output `2c` in the low half of byte
/// `c`, `2c + 1` in the high half). A weight is `(nibble - 8) * scale`, as ggml decodes it;
/// 5 bits per weight against f16's 16.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Q4Run {
    scales: [f32; PANEL],
    nibbles: [[u8; PANEL / 2]; QUANT_RUN],
}

/// How model weights are stored for the forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Exact f32 weights.
    F32,
    /// IEEE half floats, widened in L1 per block (half the memory traffic of f32).
    F16,
    /// 8-bit integers with an f32 scale per output per 32 inputs (Q8_0's blocking).
    Q8,
    /// 7-bit integers (scale per output per 32 inputs) multiplied by activations quantized to
    /// 8 bits per row per 32 inputs, in integer arithmetic ([`crate::int8`]).
    I8,
}

/// The largest finite f16; a weight beyond it keeps its matrix in f32.
const F16_MAX: f32 = 65504.0;

/// How model weights are stored and multiplied for a [`WeightsChoice`]. `Auto` gives integer
/// products ([`Precision::I8`]) where the CPU has AVX2 and FMA: 1.5-1.65x faster than f16 at a
/// task's few rows, and no measurable change on the eval sets (minimum cosine to the reference
/// 0.9991 for MiniLM, 0.9999 for e5-small; README, "Speed"). Otherwise f16 where the CPU widens
/// halves in hardware (F16C), else f32.
pub fn weight_precision(choice: WeightsChoice) -> Precision {
    match choice {
        WeightsChoice::F32 => Precision::F32,
        WeightsChoice::F16 => Precision::F16,
        WeightsChoice::Q8 => Precision::Q8,
        WeightsChoice::I8 => Precision::I8,
        WeightsChoice::Auto if has_avx2_fma() => Precision::I8,
        WeightsChoice::Auto if has_f16c() => Precision::F16,
        WeightsChoice::Auto => Precision::F32,
    }
}

/// Whether weights shipped as Q4_0 (multilingual-e5-small's) stay in their 4-bit blocks: with
/// f16 storage, where the CPU widens them in SIMD. They widen to exactly their f32
/// dequantization, so this changes speed, not results. (Integer products requantize them to
/// 7 bits; f32 and q8 dequantize them.)
pub fn keep_q4_0(precision: Precision) -> bool {
    precision == Precision::F16 && has_avx2_fma()
}

/// The kernel choice of this process: set by the first encoder loaded (or the first kernel
/// call, which takes [`KernelChoice::Auto`]).
static ISA: OnceLock<Isa> = OnceLock::new();

/// Fixes the process's matrix kernel. Kernels are chosen once per process (the packed layouts
/// and the dispatch depend on it), so asking for another one after the first choice is refused.
pub fn select_kernel(choice: KernelChoice) -> crate::Result<()> {
    let chosen = *ISA.get_or_init(|| detect(choice));
    if choice != KernelChoice::Auto && chosen != detect(choice) {
        return Err(crate::EmbedError::BadSetting {
            variable: "SWITCHYARD_KERNEL",
            value: format!("{choice:?}").to_lowercase(),
            expected: format!(
                "the kernel this process already runs ({}); kernels are chosen once per process",
                kernel_name()
            ),
        });
    }
    Ok(())
}

/// Whether the selected kernel can widen halves in hardware.
fn has_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    if isa() != Isa::Scalar && is_x86_feature_detected!("f16c") {
        return true;
    }
    false
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    Avx512,
    Avx2,
    Scalar,
}

fn isa() -> Isa {
    *ISA.get_or_init(|| detect(KernelChoice::Auto))
}

/// The instruction set a choice gives on this CPU.
fn detect(choice: KernelChoice) -> Isa {
    if choice == KernelChoice::Scalar {
        return Isa::Scalar;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if choice != KernelChoice::Avx2 && is_x86_feature_detected!("avx512f") {
            return Isa::Avx512;
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Isa::Avx2;
        }
    }
    Isa::Scalar
}

/// Whether the CPU has AVX2 and FMA (and the process's kernel choice uses them).
pub(crate) fn has_avx2_fma() -> bool {
    matches!(isa(), Isa::Avx2 | Isa::Avx512)
}

/// How model weights are stored, for reports: `f16` or `f32`, with `+q4_0` when weights
/// shipped as Q4_0 keep their blocks.
pub fn weight_storage(precision: Precision) -> &'static str {
    match (precision, keep_q4_0(precision)) {
        (Precision::F16, true) => "f16+q4_0",
        (Precision::F16, false) => "f16",
        (Precision::F32, true) => "f32+q4_0",
        (Precision::F32, false) => "f32",
        (Precision::Q8, true) => "q8+q4_0",
        (Precision::Q8, false) => "q8",
        (Precision::I8, true) => "i8+q4_0",
        (Precision::I8, false) => "i8",
    }
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
        Self { packed: Packed::F32(packed), bias, k, n }
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
        Self { packed: Packed::F32(packed), bias, k, n }
    }

    /// As [`PackedLinear::from_rows`], storing the weights in `precision`. A matrix with a
    /// weight outside f16's range stays in f32 (the conversion would make it infinite).
    pub fn from_rows_in(
        w: &[f32],
        bias: Vec<f32>,
        n: usize,
        k: usize,
        precision: Precision,
    ) -> Self {
        if k.is_multiple_of(QUANT_RUN) && bias.len() == n {
            match precision {
                Precision::Q8 => return Self::q8_from_rows(w, bias, n, k),
                Precision::I8 => {
                    return Self { packed: Packed::I8(crate::int8::pack(w, n, k)), bias, k, n };
                }
                Precision::F32 | Precision::F16 => {}
            }
        }
        let mut lin = Self::from_rows(w, bias, n, k);
        if precision == Precision::F16
            && w.iter().all(|v| v.abs() <= F16_MAX)
            && let Packed::F32(p) = &lin.packed
        {
            lin.packed = Packed::F16(f32_to_f16(p));
        }
        lin
    }

    /// Packs a weight shipped as ggml Q4_0 blocks (`[n, k]`, each output's `k / 32` blocks
    /// contiguous), keeping it 4-bit: the kernels widen it per block to exactly the values
    /// ggml's (and candle's) dequantization gives. `None` unless `k` is a multiple of 32 and
    /// `blocks` holds `n * k / 32` blocks.
    pub fn from_q4_0(blocks: &[u8], bias: Vec<f32>, n: usize, k: usize) -> Option<Self> {
        let runs = k / QUANT_RUN;
        if !k.is_multiple_of(QUANT_RUN)
            || blocks.len() != n * runs * Q4_BLOCK_BYTES
            || bias.len() != n
        {
            return None;
        }
        let panels = n.div_ceil(PANEL);
        let empty = Q4Run { scales: [0.0; PANEL], nibbles: [[0x88; PANEL / 2]; QUANT_RUN] };
        let mut packed = vec![empty; panels * runs];
        for col in 0..n {
            let (p, c) = (col / PANEL, col % PANEL);
            for r in 0..runs {
                let b = &blocks[(col * runs + r) * Q4_BLOCK_BYTES..][..Q4_BLOCK_BYTES];
                let run = &mut packed[p * runs + r];
                run.scales[c] = half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32();
                let shift = if c % 2 == 0 { 0 } else { 4 };
                for j in 0..QUANT_RUN {
                    // ggml: input j < 16 in the low nibble of byte j, input j + 16 in the high.
                    let q = if j < 16 { b[2 + j] & 0x0F } else { b[2 + j - 16] >> 4 };
                    let byte = &mut run.nibbles[j][c / 2];
                    *byte = (*byte & !(0x0F << shift)) | (q << shift);
                }
            }
        }
        Some(Self { packed: Packed::Q4(packed), bias, k, n })
    }

    /// 8-bit weights, one scale per output per 32 inputs (the largest magnitude maps to 127).
    fn q8_from_rows(w: &[f32], bias: Vec<f32>, n: usize, k: usize) -> Self {
        let runs = k / QUANT_RUN;
        let panels = n.div_ceil(PANEL);
        let empty = Q8Run { scales: [0.0; PANEL], values: [[0; PANEL]; QUANT_RUN] };
        let mut packed = vec![empty; panels * runs];
        for col in 0..n {
            let (p, c) = (col / PANEL, col % PANEL);
            for r in 0..runs {
                let src = &w[col * k + r * QUANT_RUN..col * k + (r + 1) * QUANT_RUN];
                let amax = src.iter().fold(0f32, |a, v| a.max(v.abs()));
                let scale = amax / 127.0;
                let inv = if scale > 0.0 { 1.0 / scale } else { 0.0 };
                let run = &mut packed[p * runs + r];
                run.scales[c] = scale;
                for (j, &v) in src.iter().enumerate() {
                    run.values[j][c] = (v * inv).round().clamp(-127.0, 127.0) as i8;
                }
            }
        }
        Self { packed: Packed::Q8(packed), bias, k, n }
    }

    /// The precision the weights are stored in (`None`: Q4_0).
    #[cfg(test)]
    fn precision(&self) -> Option<Precision> {
        match self.packed {
            Packed::F32(_) => Some(Precision::F32),
            Packed::F16(_) => Some(Precision::F16),
            Packed::Q4(_) => None,
            Packed::Q8(_) => Some(Precision::Q8),
            Packed::I8(_) => Some(Precision::I8),
        }
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
        // Not cleared first: every output is written whole by its panel, so zeroing `m x n`
        // floats on every call would be wasted stores (see `fast::linear`).
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
        let len = self.k * PANEL;
        let runs = self.k / QUANT_RUN;
        if let Packed::I8(v) = &self.packed {
            // AVX-512 CPUs have AVX2 and FMA too.
            let simd = isa != Isa::Scalar;
            crate::int8::with_activations(simd, x, m, self.k, |a| {
                for p in panels {
                    let col0 = p * PANEL;
                    let bias = &self.bias[col0..col0 + (self.n - col0).min(PANEL)];
                    let panel_runs = &v[p * runs..(p + 1) * runs];
                    let body = |acc: &mut [[f32; PANEL]], _: &mut Block| {
                        crate::int8::panel(simd, a, m, self.k, panel_runs, acc)
                    };
                    // SAFETY: dst is the caller's [m, n] output and the panel's columns fit in it.
                    unsafe { with_panel(m, bias, dst, self.n, col0, body) };
                }
            });
            return;
        }
        for p in panels {
            let w = match &self.packed {
                Packed::F32(v) => Weights::F32(&v[p * len..(p + 1) * len]),
                Packed::F16(v) => Weights::F16(&v[p * len..(p + 1) * len]),
                Packed::Q4(v) => Weights::Q4(&v[p * runs..(p + 1) * runs]),
                Packed::Q8(v) => Weights::Q8(&v[p * runs..(p + 1) * runs]),
                Packed::I8(_) => unreachable!("integer weights took the branch above"),
            };
            let col0 = p * PANEL;
            let width = (self.n - col0).min(PANEL);
            let bias = &self.bias[col0..col0 + width];
            match isa {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: avx512f was detected at run time before `Isa::Avx512` was chosen, and
                // f16 weights exist only where F16C was detected too.
                Isa::Avx512 => unsafe {
                    x86::panel_avx512(x, m, self.k, w, bias, dst, self.n, col0)
                },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: avx2 and fma were detected at run time before `Isa::Avx2` was chosen,
                // and f16 weights exist only where F16C was detected too.
                Isa::Avx2 => unsafe { x86::panel_avx2(x, m, self.k, w, bias, dst, self.n, col0) },
                _ => panel_scalar(x, m, self.k, w, bias, dst, self.n, col0),
            }
        }
    }
}

/// One panel's weights, `[k][PANEL]`.
#[derive(Clone, Copy)]
enum Weights<'a> {
    F32(&'a [f32]),
    F16(&'a [u16]),
    Q4(&'a [Q4Run]),
    Q8(&'a [Q8Run]),
}

/// A block of KC x PANEL weights widened to f32, aligned for the tiles' loads.
#[repr(C, align(64))]
struct Block([f32; KC * PANEL]);

/// Converts f32 to f16 bit patterns, rounding to nearest even (F16C when present).
fn f32_to_f16(src: &[f32]) -> Vec<u16> {
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
fn block_of<'b>(w: Weights<'b>, kb: usize, kc: usize, block: &'b mut Block) -> &'b [f32] {
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
fn next_block(w: Weights<'_>, kb: usize, kc: usize) -> (*const u8, usize) {
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
fn widen_runs<'b, R>(
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
fn widen_q8(run: &Q8Run, dst: &mut [f32]) {
    for (vals, row) in run.values.iter().zip(dst.chunks_exact_mut(PANEL)) {
        for ((o, &v), &s) in row.iter_mut().zip(vals).zip(&run.scales) {
            *o = f32::from(v) * s;
        }
    }
}

/// Widens one run of Q4_0 weights into `QUANT_RUN` panel rows of f32 (the portable way).
fn widen_q4(run: &Q4Run, dst: &mut [f32]) {
    for (nib, row) in run.nibbles.iter().zip(dst.chunks_exact_mut(PANEL)) {
        for (c, v) in row.iter_mut().enumerate() {
            let q = (nib[c / 2] >> (4 * (c % 2))) & 0x0F;
            *v = (i32::from(q) - 8) as f32 * run.scales[c];
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

/// Runs `body` on this thread's accumulators (`m` rows of one panel, starting at the bias) and
/// block of widened weights, then writes the rows' first `bias.len()` columns to `dst[r, col0..]`.
///
/// # Safety
/// `dst` is a `[m, n]` buffer with `col0 + bias.len() <= n`.
unsafe fn with_panel(
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
            for (r, row) in acc.iter().enumerate() {
                // SAFETY: row r < m and columns col0..col0+bias.len() lie in the [m, n] output.
                unsafe {
                    std::ptr::copy_nonoverlapping(row.as_ptr(), dst.add(r * n + col0), bias.len())
                };
            }
        })
    });
}

/// Writes the panel's columns from `col0` (`bias.len()` of them) of every row: `dst[r, col0 + c]`.
#[allow(clippy::too_many_arguments)] // a kernel's full description; grouping would hide it
fn panel_scalar(
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

#[cfg(target_arch = "x86_64")]
mod x86 {
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
        let mut a = [[_mm512_setzero_ps(); 2]; R];
        for (r, reg) in a.iter_mut().enumerate() {
            // SAFETY: acc has R rows of PANEL floats.
            unsafe {
                reg[0] = _mm512_loadu_ps(acc.add(r * PANEL));
                reg[1] = _mm512_loadu_ps(acc.add(r * PANEL + 16));
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
            // SAFETY: acc has R rows of PANEL floats.
            unsafe {
                _mm512_storeu_ps(acc.add(r * PANEL), reg[0]);
                _mm512_storeu_ps(acc.add(r * PANEL + 16), reg[1]);
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
        }};
    }

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

    /// `[m, k]` inputs in [-6/7, 6/7], repeating every 13.
    fn inputs(m: usize, k: usize) -> Vec<f32> {
        (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect()
    }

    fn biases(n: usize) -> Vec<f32> {
        (0..n).map(|i| i as f32 / 10.0).collect()
    }

    /// `[n, k]` weights in [-0.2, 0.2], varying smoothly (so runs of 32 have mixed scales).
    fn smooth_weights(n: usize, k: usize) -> Vec<f32> {
        (0..n * k).map(|i| ((i as f32) * 0.37).sin() * 0.2).collect()
    }

    /// The `[n, k]` weights a q8 or i8 matrix stores, as the values its products use.
    fn stored_weights(lin: &PackedLinear) -> Vec<f32> {
        let (n, k) = (lin.n, lin.k);
        let run_of = |col: usize, kk: usize| (col / PANEL) * (k / QUANT_RUN) + kk / QUANT_RUN;
        let mut out = vec![0f32; n * k];
        for col in 0..n {
            for kk in 0..k {
                let (c, j) = (col % PANEL, kk % QUANT_RUN);
                out[col * k + kk] = match &lin.packed {
                    Packed::Q8(runs) => {
                        let run = &runs[run_of(col, kk)];
                        f32::from(run.values[j][c]) * run.scales[c]
                    }
                    Packed::I8(runs) => crate::int8::stored(&runs[run_of(col, kk)], c, j),
                    _ => panic!("not stored as integers"),
                };
            }
        }
        out
    }

    /// The largest magnitude in the run of 32 that holds element `i` of `v`.
    fn run_amax(v: &[f32], i: usize) -> f32 {
        let start = i / QUANT_RUN * QUANT_RUN;
        v[start..start + QUANT_RUN].iter().fold(0f32, |a, x| a.max(x.abs()))
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
        for &(m, k, n) in &[
            (1, 3, 5),
            (7, 17, 40),
            (13, 64, 96),
            (25, 33, 70),
            (12, 8, 32),
            (30, 300, 48),
            (9, 130, 33),
        ] {
            let x = inputs(m, k);
            let w: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 9.0).collect();
            let b: Vec<f32> = (0..n).map(|i| i as f32 / 10.0).collect();
            let lin = PackedLinear::new(&w, b.clone(), k, n);
            let rows: Vec<f32> = (0..n * k).map(|i| w[(i % k) * n + i / k]).collect();
            assert_eq!(
                PackedLinear::from_rows(&rows, b.clone(), n, k).precision(),
                Some(Precision::F32)
            );
            let half = PackedLinear::from_rows_in(&rows, b.clone(), n, k, Precision::F16);
            assert_eq!(half.precision(), Some(Precision::F16));
            // The f16 kernels compute with exactly the rounded weights.
            let rounded: Vec<f32> = w.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect();
            for (lin, w) in [(&lin, &w), (&half, &rounded)] {
                let want = naive(&x, w, &b, m, k, n);
                for isa in available() {
                    for threads in [1, 2, 3] {
                        // A reused buffer's old values never show: every output is written.
                        let mut out = vec![f32::NAN; m * n + 7];
                        lin.forward_with(isa, &x, m, &mut out, threads);
                        assert_eq!(out.len(), m * n);
                        for (i, (a, e)) in out.iter().zip(&want).enumerate() {
                            assert!(
                                (a - e).abs() < 1e-4,
                                "{m}x{k}x{n} {isa:?} {:?} t{threads} [{i}]: {a} vs {e}",
                                lin.precision()
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn halves_round_to_nearest_and_widen_exactly() {
        let src: Vec<f32> = (0..1000).map(|i| ((i as f32) * 0.37 - 170.0).sin() * 3.0).collect();
        let narrow = f32_to_f16(&src);
        for (&v, &h) in src.iter().zip(&narrow) {
            assert_eq!(h, half::f16::from_f32(v).to_bits(), "{v}");
        }
        let mut block = Block([0.0; KC * PANEL]);
        let rows = narrow.len() / PANEL;
        let wide = block_of(Weights::F16(&narrow[..rows * PANEL]), 0, rows, &mut block);
        for (&w, &h) in wide.iter().zip(&narrow) {
            assert_eq!(w, half::f16::from_bits(h).to_f32());
        }
    }

    /// ggml Q4_0 blocks for an `[n, k]` weight, and their dequantization (ggml's formula).
    fn q4_0_weight(n: usize, k: usize) -> (Vec<u8>, Vec<f32>) {
        let mut blocks = Vec::new();
        let mut w = Vec::new();
        for row in 0..n {
            for b in 0..k / QUANT_RUN {
                let d = half::f16::from_f32(0.01 + ((row * 7 + b * 3) % 17) as f32 / 97.0);
                blocks.extend(d.to_bits().to_le_bytes());
                let q: Vec<u8> =
                    (0..QUANT_RUN).map(|j| ((row * 31 + b * 5 + j * 11) % 16) as u8).collect();
                blocks.extend((0..16).map(|j| q[j] | (q[j + 16] << 4)));
                w.extend(q.iter().map(|&v| (i32::from(v) - 8) as f32 * d.to_f32()));
            }
        }
        (blocks, w)
    }

    #[test]
    fn q4_0_weights_give_exactly_the_products_of_their_dequantization() {
        // k: one run, a partial KC block after a whole one, several blocks; n: partial panels.
        for &(m, k, n) in &[(1, 32, 5), (7, 160, 40), (13, 384, 70), (30, 96, 33)] {
            let (blocks, w) = q4_0_weight(n, k);
            let (x, b) = (inputs(m, k), biases(n));
            let q4 = PackedLinear::from_q4_0(&blocks, b.clone(), n, k).expect("valid blocks");
            assert_eq!(q4.precision(), None);
            let exact = PackedLinear::from_rows(&w, b.clone(), n, k);
            for isa in available() {
                for threads in [1, 2, 3] {
                    let (mut got, mut want) = (Vec::new(), Vec::new());
                    q4.forward_with(isa, &x, m, &mut got, threads);
                    exact.forward_with(isa, &x, m, &mut want, threads);
                    assert_eq!(got, want, "{m}x{k}x{n} {isa:?} t{threads}");
                }
            }
        }
    }

    #[test]
    fn q8_weights_are_within_half_a_step_and_exact_in_every_kernel() {
        for &(m, k, n) in &[(1, 32, 5), (7, 160, 40), (13, 384, 70)] {
            let (rows, x, b) = (smooth_weights(n, k), inputs(m, k), biases(n));
            let q8 = PackedLinear::from_rows_in(&rows, b.clone(), n, k, Precision::Q8);
            assert_eq!(q8.precision(), Some(Precision::Q8));
            // Each stored weight is within half a quantization step of the original.
            let stored = stored_weights(&q8);
            for (i, (v, w)) in stored.iter().zip(&rows).enumerate() {
                let step = run_amax(&rows, i) / 127.0;
                assert!((v - w).abs() <= step * 0.5 + 1e-7, "[{i}]: {v} for {w}");
            }
            let exact = PackedLinear::from_rows(&stored, b.clone(), n, k);
            for isa in available() {
                for threads in [1, 2, 3] {
                    let (mut got, mut want) = (Vec::new(), Vec::new());
                    q8.forward_with(isa, &x, m, &mut got, threads);
                    exact.forward_with(isa, &x, m, &mut want, threads);
                    assert_eq!(got, want, "{m}x{k}x{n} {isa:?} t{threads}");
                }
            }
        }
        // An input width that is not whole runs cannot be q8: it falls back to f32.
        let odd = PackedLinear::from_rows_in(&[0.5; 30], vec![0.0; 1], 1, 30, Precision::Q8);
        assert_eq!(odd.precision(), Some(Precision::F32));
    }

    /// i8 products: exactly the integer sums of what was quantized, rescaled; the same bits
    /// from every kernel on any thread count; close to the float product.
    #[test]
    fn i8_products_are_the_products_of_what_is_stored_in_every_kernel() {
        // k: one run, several; m: every tile height and remainders; n: partial panels.
        for &(m, k, n) in &[(1, 32, 5), (2, 64, 33), (7, 160, 40), (13, 384, 70), (30, 96, 64)] {
            let (rows, x, b) = (smooth_weights(n, k), inputs(m, k), biases(n));
            let i8 = PackedLinear::from_rows_in(&rows, b.clone(), n, k, Precision::I8);
            assert_eq!(i8.precision(), Some(Precision::I8));
            let stored = stored_weights(&i8);
            let xq = crate::int8::tests::dequantized_activations(false, &x, m, k);
            let w_t =
                |w: &[f32]| -> Vec<f32> { (0..k * n).map(|i| w[(i % n) * k + i / n]).collect() };
            let of_stored = naive(&xq, &w_t(&stored), &b, m, k, n);
            let exact = naive(&x, &w_t(&rows), &b, m, k, n);
            // How far quantizing may move an output: each factor within half its step.
            let x_step: Vec<f32> = (0..x.len()).map(|i| run_amax(&x, i) / 127.0).collect();
            let w_step: Vec<f32> = (0..rows.len()).map(|i| run_amax(&rows, i) / 63.0).collect();
            let bound = |r: usize, c: usize| -> f32 {
                (0..k)
                    .map(|i| {
                        let (xs, ws) = (x_step[r * k + i], w_step[c * k + i]);
                        xq[r * k + i].abs() * ws / 2.0
                            + stored[c * k + i].abs() * xs / 2.0
                            + xs * ws / 4.0
                    })
                    .sum::<f32>()
                    + 1e-4
            };
            let mut first: Option<Vec<f32>> = None;
            for isa in available() {
                for threads in [1, 2, 3] {
                    let mut got = vec![f32::NAN; m * n + 3];
                    i8.forward_with(isa, &x, m, &mut got, threads);
                    assert_eq!(got.len(), m * n);
                    for (i, ((g, s), e)) in got.iter().zip(&of_stored).zip(&exact).enumerate() {
                        assert!((g - s).abs() < 1e-4, "{m}x{k}x{n} {isa:?} t{threads} [{i}]");
                        let most = bound(i / n, i % n);
                        assert!((g - e).abs() <= most, "{m}x{k}x{n} [{i}]: {g} vs {e} (+-{most})");
                    }
                    match &first {
                        None => first = Some(got),
                        Some(f) => assert_eq!(&got, f, "{m}x{k}x{n} {isa:?} t{threads}"),
                    }
                }
            }
        }
        // An input width that is not whole runs cannot be i8: it falls back to f32.
        let odd = PackedLinear::from_rows_in(&[0.5; 30], vec![0.0; 1], 1, 30, Precision::I8);
        assert_eq!(odd.precision(), Some(Precision::F32));
    }

    #[test]
    fn quantized_widening_is_the_same_in_simd_and_portable_code() {
        let (blocks, _) = q4_0_weight(PANEL, QUANT_RUN);
        let q4 = PackedLinear::from_q4_0(&blocks, vec![0.0; PANEL], PANEL, QUANT_RUN).unwrap();
        let rows: Vec<f32> = (0..PANEL * QUANT_RUN).map(|i| ((i as f32) * 0.61).cos()).collect();
        let q8 =
            PackedLinear::from_rows_in(&rows, vec![0.0; PANEL], PANEL, QUANT_RUN, Precision::Q8);
        let (Packed::Q4(q4), Packed::Q8(q8)) = (&q4.packed, &q8.packed) else {
            panic!("not kept quantized")
        };
        let mut portable = [vec![0f32; QUANT_RUN * PANEL], vec![0f32; QUANT_RUN * PANEL]];
        widen_q4(&q4[0], &mut portable[0]);
        widen_q8(&q8[0], &mut portable[1]);
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2") {
            let mut simd = [vec![0f32; QUANT_RUN * PANEL], vec![0f32; QUANT_RUN * PANEL]];
            // SAFETY: AVX2 was detected.
            unsafe {
                x86::widen_q4_avx2(&q4[0], &mut simd[0]);
                x86::widen_q8_avx2(&q8[0], &mut simd[1]);
            }
            assert_eq!(simd, portable);
        }
    }

    #[test]
    fn q4_0_blocks_of_the_wrong_size_are_not_packed() {
        let (blocks, _) = q4_0_weight(4, 64);
        assert!(PackedLinear::from_q4_0(&blocks, vec![0.0; 4], 4, 64).is_some());
        assert!(PackedLinear::from_q4_0(&blocks[1..], vec![0.0; 4], 4, 64).is_none());
        assert!(PackedLinear::from_q4_0(&blocks, vec![0.0; 4], 4, 60).is_none());
        assert!(PackedLinear::from_q4_0(&blocks, vec![0.0; 2], 2, 128).is_some());
    }

    #[test]
    fn weights_beyond_the_f16_range_stay_in_f32() {
        let w = vec![1.0, 70000.0, -2.0, 0.5];
        let lin = PackedLinear::from_rows_in(&w, vec![0.0; 2], 2, 2, Precision::F16);
        assert_eq!(lin.precision(), Some(Precision::F32));
        let mut out = Vec::new();
        lin.forward(&[1.0, 1.0], 1, &mut out, 1);
        assert_eq!(out, vec![70001.0, -1.5]);
    }
}
