//! The fast CPU forward: the same BERT encoder as `bert.rs`, run on plain `f32` buffers.
//!
//! Why not candle ops: for one short task, candle's per-op cost dominated (an allocation and a
//! kernel launch per op, attention as batched 4-D matmuls, a scalar `gelu_erf`). Measured on
//! the 2-core VM, a 24-token MiniLM task spent ~35 ms there against ~0.5 GFLOP of real work.
//! This path keeps candle for loading (safetensors, Q4_0 decoding, the embedding-table gather)
//! and does the rest itself:
//!
//! - **Weights packed once** for a few-row matrix product (`cpu/kernel`, AVX-512/AVX2 picked at
//!   run time): candle's general GEMM re-packs the weights on every call, which for 10 rows
//!   cost more than the arithmetic.
//!
//! - **No padding.** The tokens of every text in a batch are packed into one `[tokens, hidden]`
//!   matrix; the linear layers see all of them at once, attention runs per text.
//! - **Fused projections.** Q, K and V are one `[hidden, 3 x hidden]` product.
//! - **Buffers reused** across layers and calls (per thread), so a forward allocates nothing
//!   once warm.
//! - **Threads by size, kept awake.** Products with few rows run on one thread, where two
//!   would spend more on synchronisation than they save. Larger steps (products split by
//!   column panels, attention by head, LayerNorm by row, GELU with its product's columns) go
//!   to a [`Team`] whose helpers stay awake between steps for the length of one forward, instead of
//!   sleeping and being woken ~30 times (`cpu/team.rs`).
//!
//! Every value is computed in `f32` in the same order whatever the thread count (threads split
//! output columns, never a sum), so results are deterministic.

use super::attention::{AttnScratch, attend_jobs};
use super::int8::Activations;
use super::kernel::{PackedLinear, Precision, SendPtr};
use super::math::{gelu_in_place, layer_norm_row};
use super::store::NormPair;
use super::team::{Team, share, share_by_work};
use std::cell::RefCell;

/// `y = x W^T + b` with `W` in Hugging Face layout, `[n, k]` row-major: as floats, or as
/// ggml Q4_0 blocks `[n, k / 32]` (each output's blocks contiguous).
pub(crate) struct DenseLinear {
    w: LinearWeight,
    bias: Vec<f32>,
    k: usize,
    n: usize,
}

enum LinearWeight {
    Floats(Vec<f32>),
    Q4_0(Vec<u8>),
}

impl DenseLinear {
    /// From a Hugging Face weight `[n, k]` (row-major) and bias `[n]`.
    pub fn from_hf(weight: &[f32], bias: Vec<f32>, n: usize, k: usize) -> Self {
        Self { w: LinearWeight::Floats(weight.to_vec()), bias, k, n }
    }

    /// From ggml Q4_0 blocks `[n, k / 32]` and bias `[n]`, kept 4-bit by [`DenseLinear::pack`].
    pub fn from_q4_0(blocks: Vec<u8>, bias: Vec<f32>, n: usize, k: usize) -> Self {
        Self { w: LinearWeight::Q4_0(blocks), bias, k, n }
    }

    /// Stacks layers that read the same input (Q, K, V) into one wider product: in `[n, k]`
    /// layout that is appending rows (blocks run along k within a row, so for Q4_0 too).
    /// `None` when the parts mix floats and blocks.
    pub fn concat(parts: &[DenseLinear]) -> Option<Self> {
        let k = parts[0].k;
        let n: usize = parts.iter().map(|p| p.n).sum();
        let bias = parts.iter().flat_map(|p| p.bias.iter().copied()).collect();
        let floats: Option<Vec<&[f32]>> = parts
            .iter()
            .map(|p| match &p.w {
                LinearWeight::Floats(w) => Some(w.as_slice()),
                LinearWeight::Q4_0(_) => None,
            })
            .collect();
        let blocks: Option<Vec<&[u8]>> = parts
            .iter()
            .map(|p| match &p.w {
                LinearWeight::Q4_0(b) => Some(b.as_slice()),
                LinearWeight::Floats(_) => None,
            })
            .collect();
        let w = match (floats, blocks) {
            (Some(f), _) => LinearWeight::Floats(f.concat()),
            (_, Some(b)) => LinearWeight::Q4_0(b.concat()),
            _ => return None,
        };
        Some(Self { w, bias, k, n })
    }

    /// Packs the weight for the kernel: floats in `precision`, Q4_0 blocks as they are.
    /// `None` when the blocks do not fit the shape.
    pub fn pack(self, precision: Precision) -> Option<PackedLinear> {
        match self.w {
            LinearWeight::Floats(w) => {
                Some(PackedLinear::from_rows_in(&w, self.bias, self.n, self.k, precision))
            }
            LinearWeight::Q4_0(b) => PackedLinear::from_q4_0(&b, self.bias, self.n, self.k),
        }
    }
}

/// Products below this many multiply-adds run on one thread: splitting them saves less than
/// handing out a step costs, even with the team spinning (measured with `switchyard embed
/// --repeat` at 8 tokens, where attention's output product, 1.2 M, is just under).
const SPLIT_MIN_PRODUCT: usize = 1_000_000;

/// Attention of fewer multiply-adds than this (`sum(len^2) x hidden`) runs on one thread.
const SPLIT_MIN_ATTENTION: usize = 100_000;

/// LayerNorm over fewer rows than this runs on one thread.
const SPLIT_MIN_ROWS: usize = 16;

/// Runs `f` compiled for the widest vectors of the process's kernel: AVX-512 (16 lanes), else
/// AVX2 and FMA (8). A helper thread's share of a step runs in a closure, which does not
/// inherit [`FastLayers::forward_avx2`]'s features. The width changes speed, not results: the
/// element-wise math never fuses a multiply and an add, and every sum adds in a fixed order.
///
/// Only for small closures (GELU, LayerNorm: checked in the disassembly, `zmm` registers): the
/// compiler may compile a large closure on its own, without the features. Attention's body is
/// one, so it has its own `target_feature` functions (`attention::attend_jobs`).
#[inline(always)]
fn with_simd<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::kernel::has_avx512() {
            /// # Safety
            /// The CPU must have AVX-512 F, AVX2 and FMA.
            #[target_feature(enable = "avx512f,avx2,fma")]
            unsafe fn run<R>(f: impl FnOnce() -> R) -> R {
                f()
            }
            // SAFETY: avx512f was detected at run time (and AVX-512 CPUs have AVX2 and FMA).
            return unsafe { run(f) };
        }
        if crate::cpu::kernel::has_avx2_fma() {
            /// # Safety
            /// The CPU must have AVX2 and FMA.
            #[target_feature(enable = "avx2,fma")]
            unsafe fn run<R>(f: impl FnOnce() -> R) -> R {
                f()
            }
            // SAFETY: avx2 and fma were detected at run time.
            return unsafe { run(f) };
        }
    }
    f()
}

/// Products with integer weights over at least this many rows quantize their activations
/// once, split across the team, before the products; below it each thread quantizes all rows
/// for itself, which costs less than the extra rendezvous (a 64-row, 1536-wide input takes
/// ~50 µs to quantize on one thread).
const SHARED_QUANTIZE_MIN_ROWS: usize = 64;

/// `out = x W^T + b` for `m` rows, then GELU if `gelu`, split across the team by panels.
/// `acts` holds the activations the team quantizes for large integer products.
fn linear(
    team: &Team,
    lin: &PackedLinear,
    x: &[f32],
    m: usize,
    out: &mut Vec<f32>,
    gelu: bool,
    acts: &mut Activations,
) {
    if team.size() == 1 || m * lin.n() * lin.k() < SPLIT_MIN_PRODUCT {
        lin.forward(x, m, out, 1);
        if gelu {
            with_simd(|| gelu_in_place(out));
        }
        return;
    }
    let n = lin.n();
    // Not cleared first: the parts write every column of every row. Zeroing it here would
    // also make this core own every line of it, so the helpers' first stores to their columns
    // would each fetch a line from this core (1-2% of a 64-token forward on 2 threads).
    out.resize(m * n, 0.0);
    let dst = SendPtr(out.as_mut_ptr());
    let quantized = if lin.is_int8() && m >= SHARED_QUANTIZE_MIN_ROWS {
        acts.resize(m, lin.k());
        let writer = acts.writer();
        let (simd, k) = (crate::cpu::kernel::int8_simd(), lin.k());
        team.split(&|part, parts| {
            // SAFETY: sized for [m, k] above and not touched until the split returns; each
            // part writes its own rows.
            unsafe { writer.quantize_rows(simd, x, k, share(m, part, parts)) }
        });
        Some(&*acts)
    } else {
        None
    };
    team.split(&|part, parts| {
        // SAFETY: each part writes only its own panels' columns of the `[m, n]` output, and
        // `quantized` holds x's activations.
        let cols = unsafe { lin.forward_share(x, quantized, m, dst.get(), part, parts) };
        if gelu {
            with_simd(|| {
                for r in 0..m {
                    // SAFETY: row r's columns of this part, written by this part only.
                    let row = unsafe {
                        std::slice::from_raw_parts_mut(
                            dst.get().add(r * n + cols.start),
                            cols.len(),
                        )
                    };
                    gelu_in_place(row);
                }
            });
        }
    });
}

pub(crate) struct FastLayer {
    pub qkv: PackedLinear,
    pub attn_out: PackedLinear,
    pub attn_norm: NormPair,
    pub ffn_in: PackedLinear,
    pub ffn_out: PackedLinear,
    pub ffn_norm: NormPair,
}

/// The transformer layers of a BERT encoder on plain buffers.
pub(crate) struct FastLayers {
    pub layers: Vec<FastLayer>,
    pub hidden: usize,
    pub heads: usize,
    pub eps: f32,
}

#[derive(Default)]
struct Scratch {
    qkv: Vec<f32>,
    ctx: Vec<f32>,
    tmp: Vec<f32>,
    mid: Vec<f32>,
    acts: Activations,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
    static ATTN: RefCell<AttnScratch> = RefCell::new(AttnScratch::default());
}

/// In-place LayerNorm of each `h`-wide row of `x`, after adding `residual` to it; rows split
/// across the team.
fn add_layer_norm(
    team: &Team,
    x: &mut [f32],
    residual: &[f32],
    norm: &NormPair,
    h: usize,
    eps: f32,
) {
    let rows = x.len() / h;
    if team.size() == 1 || rows < SPLIT_MIN_ROWS {
        with_simd(|| add_layer_norm_rows(x, residual, norm, h, eps));
        return;
    }
    let dst = SendPtr(x.as_mut_ptr());
    team.split(&|part, parts| {
        let r = share(rows, part, parts);
        // SAFETY: each part owns its rows of `x`.
        let mine =
            unsafe { std::slice::from_raw_parts_mut(dst.get().add(r.start * h), r.len() * h) };
        with_simd(|| add_layer_norm_rows(mine, &residual[r.start * h..r.end * h], norm, h, eps));
    });
}

#[inline(always)]
fn add_layer_norm_rows(x: &mut [f32], residual: &[f32], (w, b): &NormPair, h: usize, eps: f32) {
    for (row, res) in x.chunks_exact_mut(h).zip(residual.chunks_exact(h)) {
        for (v, r) in row.iter_mut().zip(res) {
            *v += r;
        }
        layer_norm_row(row, w, b, eps);
    }
}

impl FastLayers {
    /// Runs every layer on `x` (`[tokens, hidden]`, embeddings already normalised), where the
    /// texts are the consecutive row ranges of `lens`. `x` ends as the last hidden states.
    /// It also gives a copy of the hidden states after the first `after` layers (`Some(n)`,
    /// `1..=layers`): a middle layer's states at no extra work.
    pub fn forward_keeping(
        &self,
        x: &mut Vec<f32>,
        lens: &[usize],
        after: Option<usize>,
    ) -> Option<Vec<f32>> {
        let threads = rayon::current_num_threads();
        let tokens: usize = lens.iter().sum();
        if threads > 1 && self.any_product_parallel(tokens) {
            Team::run(threads - 1, |team| self.forward_in(team, x, lens, after))
        } else {
            self.forward_in(&Team::solo(), x, lens, after)
        }
    }

    fn forward_in(
        &self,
        team: &Team,
        x: &mut Vec<f32>,
        lens: &[usize],
        after: Option<usize>,
    ) -> Option<Vec<f32>> {
        // The buffers are moved out of the thread-local and back, so the body runs in this
        // function's code (a closure passed to `with` would not get the AVX2 build below).
        let mut scratch = SCRATCH.with(|c| std::mem::take(&mut *c.borrow_mut()));
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::kernel::has_avx2_fma() {
            // SAFETY: avx2 and fma were detected at run time.
            let kept = unsafe { self.forward_avx2(team, x, lens, &mut scratch, after) };
            SCRATCH.with(|c| *c.borrow_mut() = scratch);
            return kept;
        }
        let kept = self.forward_body(team, x, lens, &mut scratch, after);
        SCRATCH.with(|c| *c.borrow_mut() = scratch);
        kept
    }

    /// Whether a product of a forward over `tokens` rows is large enough to split.
    fn any_product_parallel(&self, tokens: usize) -> bool {
        self.layers.iter().any(|l| tokens * l.ffn_in.n() * l.ffn_in.k() >= SPLIT_MIN_PRODUCT)
    }

    /// The same code compiled for AVX2: attention, GELU and LayerNorm vectorise 8 wide instead
    /// of SSE2's 4 (the matrix products dispatch on their own).
    ///
    /// # Safety
    /// The CPU must have avx2 and fma.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn forward_avx2(
        &self,
        team: &Team,
        x: &mut Vec<f32>,
        lens: &[usize],
        s: &mut Scratch,
        after: Option<usize>,
    ) -> Option<Vec<f32>> {
        self.forward_body(team, x, lens, s, after)
    }

    #[inline(always)]
    fn forward_body(
        &self,
        team: &Team,
        x: &mut Vec<f32>,
        lens: &[usize],
        s: &mut Scratch,
        after: Option<usize>,
    ) -> Option<Vec<f32>> {
        let h = self.hidden;
        let tokens: usize = lens.iter().sum();
        // One attention job per (text, head); each writes its own columns of its own rows.
        let mut jobs = Vec::with_capacity(lens.len() * self.heads);
        let mut start = 0;
        for &l in lens {
            jobs.extend((0..self.heads).map(|head| (start, l, head)));
            start += l;
        }
        let attention_work = lens.iter().map(|l| l * l).sum::<usize>() * h;
        // Each job's work so far, to split jobs between threads by work: a batch sorted by
        // length puts a long text's heads together, and a split by count gave one thread all
        // of them (a 512-token entry batched with one short window took 115 ms, not 77).
        let mut job_work = Vec::with_capacity(jobs.len() + 1);
        job_work.push(0usize);
        for &(_, len, _) in &jobs {
            job_work.push(job_work.last().copied().unwrap_or(0) + len * len + len);
        }
        let mut kept = None;
        for (done, layer) in self.layers.iter().enumerate() {
            if after == Some(done) {
                kept = Some(x.clone());
            }
            linear(team, &layer.qkv, x, tokens, &mut s.qkv, false, &mut s.acts);
            // Every (text, head) job writes its columns of its rows: no clearing needed.
            s.ctx.resize(tokens * h, 0.0);
            self.attention(team, &s.qkv, &jobs, &job_work, attention_work, &mut s.ctx);
            linear(team, &layer.attn_out, &s.ctx, tokens, &mut s.tmp, false, &mut s.acts);
            add_layer_norm(team, &mut s.tmp, x, &layer.attn_norm, h, self.eps);
            std::mem::swap(x, &mut s.tmp);
            linear(team, &layer.ffn_in, x, tokens, &mut s.mid, true, &mut s.acts);
            linear(team, &layer.ffn_out, &s.mid, tokens, &mut s.tmp, false, &mut s.acts);
            add_layer_norm(team, &mut s.tmp, x, &layer.ffn_norm, h, self.eps);
            std::mem::swap(x, &mut s.tmp);
        }
        if after == Some(self.layers.len()) {
            kept = Some(x.clone());
        }
        kept
    }

    /// Runs the attention `jobs` (`(first row, tokens, head)`), split across the team when the
    /// work is large enough, into `ctx`.
    fn attention(
        &self,
        team: &Team,
        qkv: &[f32],
        jobs: &[(usize, usize, usize)],
        job_work: &[usize],
        work: usize,
        ctx: &mut [f32],
    ) {
        let (h, hd) = (self.hidden, self.hidden / self.heads);
        let ctx = SendPtr(ctx.as_mut_ptr());
        let run = |mine: &[(usize, usize, usize)]| {
            let mut sc = ATTN.with(|c| std::mem::take(&mut *c.borrow_mut()));
            attend_jobs(qkv, mine, hd, h, ctx, &mut sc);
            ATTN.with(|c| *c.borrow_mut() = sc);
        };
        if team.size() == 1 || work < SPLIT_MIN_ATTENTION {
            run(jobs);
        } else {
            team.split(&|part, parts| run(&jobs[share_by_work(job_work, part, parts)]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_linear_matches_naive_and_concat_stacks_outputs() {
        let (n, k, m) = (5, 3, 4);
        let w: Vec<f32> = (0..n * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..n).map(|i| i as f32 * 0.1).collect();
        let x: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.11).cos()).collect();
        for precision in [Precision::F32, Precision::F16, Precision::Q8, Precision::I8] {
            let Some(lin) = DenseLinear::from_hf(&w, b.clone(), n, k).pack(precision) else {
                panic!("floats always pack")
            };
            // `pack` stores the weights in the precision asked for; the kernel is exact on them.
            let stored: Vec<f32> = match precision {
                crate::cpu::kernel::Precision::F16 => {
                    w.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect()
                }
                // k = 3 is not whole runs of 32, so q8 and i8 keep this one in f32.
                crate::cpu::kernel::Precision::F32
                | crate::cpu::kernel::Precision::Q8
                | crate::cpu::kernel::Precision::I8 => w.clone(),
            };
            let mut out = Vec::new();
            lin.forward(&x, m, &mut out, 1);
            for r in 0..m {
                for c in 0..n {
                    let want: f32 =
                        (0..k).map(|i| x[r * k + i] * stored[c * k + i]).sum::<f32>() + b[c];
                    assert!((out[r * n + c] - want).abs() < 1e-5);
                }
            }
            let Some(both) = DenseLinear::concat(&[
                DenseLinear::from_hf(&w, b.clone(), n, k),
                DenseLinear::from_hf(&w, b.clone(), n, k),
            ])
            .and_then(|d| d.pack(precision)) else {
                panic!("floats always stack and pack")
            };
            let mut out2 = Vec::new();
            both.forward(&x, m, &mut out2, 2);
            for r in 0..m {
                for c in 0..n {
                    assert!((out2[r * 2 * n + c] - out[r * n + c]).abs() < 1e-6);
                    assert!((out2[r * 2 * n + n + c] - out[r * n + c]).abs() < 1e-6);
                }
            }
        }
    }
}
