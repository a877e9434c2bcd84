//! Late interaction: a task compared with each catalog item token by token.
//!
//! Two directions, averaged ([`ITEM_SIDE`]):
//! - **the task's side**: for each of the task's content tokens, its best cosine with any of
//!   the item's tokens (the `late` section of the index), averaged over the task's tokens;
//! - **the item's side**: for each of the item's tokens, its best cosine with any of the task's,
//!   averaged over the item's tokens. A task that meets every word of a short card scores high
//!   even where the task says more than the card.
//!
//! Both averages take IDF weights (`ln(1 + N / (df + 1))` over the catalog's N items), so that
//! tokens every card holds (the lone `▁`, "the", ":") count little. ColBERT's MaxSim, on states
//! of a model not trained for it: as one side of the dense score it lifts items whose words
//! meet the task's in any language. An index without token ids (format version 11) has the
//! task's side only.
//!
//! Both sides are `i8` with a scale per token, so each cosine is one integer dot product
//! (AVX-512 VNNI where the CPU has it, else AVX2, else portable; all three exact and equal); the
//! default catalog's few thousand tokens take a fraction of a millisecond per task.

use std::ops::Range;
use switchyard_embed::TokenStates;
use switchyard_format::LateItems;

/// The item's side's share of the late score (the task's side has the rest). Measured on the
/// development sets (metatool's dev rows, Seal-Tools `dev`, the warehouse catalog, the default
/// catalog's cases): both sides together beat the task's side alone on every one; the item's
/// side alone wins on some and loses on others, and the shares 0.25, 0.5 and 0.75 differ by
/// little, so the middle one is kept.
pub(crate) const ITEM_SIDE: f32 = 0.5;

/// The IDF weight of a token `df` of a catalog's `n` items hold.
fn idf(n: usize, df: u32) -> f32 {
    (1.0 + n as f32 / (df as f32 + 1.0)).ln()
}

/// The IDF weight of each of `items`' tokens, for the item's side; empty when the index holds
/// no token ids (format version 11).
pub(crate) fn item_token_weights(items: &LateItems) -> Vec<f32> {
    items.ids.iter().map(|&id| idf(items.items(), items.doc_freq(id))).collect()
}

/// A task's content tokens, ready to score: `i8` states (held as `i16`, the width the
/// products are summed in), a scale and a weight each.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskTokens {
    values: Vec<i16>,
    /// The same values plus 128, as `u8`: the unsigned side of VNNI's byte products.
    biased: Vec<u8>,
    scales: Vec<f32>,
    weights: Vec<f32>,
}

impl TaskTokens {
    /// The task's tokens weighted against `items`; `None` when the task has no content token.
    pub(crate) fn new(task: &TokenStates, items: &LateItems) -> Option<Self> {
        let n = task.ids.len();
        if n == 0 || task.dim() == 0 {
            return None;
        }
        let mut out = Self::default();
        for (i, &id) in task.ids.iter().enumerate() {
            let (scale, values) = LateItems::quantize(task.state(i));
            out.scales.push(scale);
            out.biased.extend(values.iter().map(|&v| (i16::from(v) + 128) as u8));
            out.values.extend(values.into_iter().map(i16::from));
            out.weights.push(idf(items.items(), items.doc_freq(id)));
        }
        Some(out)
    }

    fn len(&self) -> usize {
        self.scales.len()
    }
}

/// Most items a route computes late scores for. Past it, only the best items of the fusion
/// without the late side are scored, so a route's cost stops growing with the catalog. Measured
/// in a replica on Seal-Tools `dev` (4,076 tools), both sides: recall@5 0.878 over every item,
/// 0.877 over the best 100, 0.872 over the best 50.
pub(crate) const LATE_CANDIDATES: usize = 100;

/// `out[item]` = the task's late score against each item of `items` (0 for an item without
/// tokens; NaN for an item `only` leaves out). `item_weights` are [`item_token_weights`]
/// (empty: the task's side only). `best` is scratch space, kept across calls.
#[cfg(test)]
pub(crate) fn scores_into(
    task: &TaskTokens,
    items: &LateItems,
    item_weights: &[f32],
    dim: usize,
    only: Option<&[bool]>,
    best: &mut Vec<f32>,
    out: &mut Vec<f32>,
) {
    let parts = PartScores { parts: &[], out: &mut Vec::new() };
    scores_with_parts(task, items, item_weights, dim, only, best, out, parts);
}

/// A task's parts (runs of its tokens, see `crate::clauses`) and where each part's late
/// score against each item goes: `parts.len()` runs of one score per item, as if the part
/// were the task (NaN for an item left out).
pub(crate) struct PartScores<'a> {
    pub parts: &'a [Range<usize>],
    pub out: &'a mut Vec<f32>,
}

/// [`scores_into`], and each part's scores from the same products.
#[allow(clippy::too_many_arguments)] // each is one plain input of the one computation
pub(crate) fn scores_with_parts(
    task: &TaskTokens,
    items: &LateItems,
    item_weights: &[f32],
    dim: usize,
    only: Option<&[bool]>,
    best: &mut Vec<f32>,
    out: &mut Vec<f32>,
    part_scores: PartScores<'_>,
) {
    let PartScores { parts, out: part_out } = part_scores;
    let parts = if parts.iter().all(|p| p.end <= task.len()) { parts } else { &[] };
    part_out.clear();
    let sides = Sides { items, item_weights, dim, only, parts };
    #[cfg(target_arch = "x86_64")]
    if dim.is_multiple_of(64) && has_vnni() {
        // SAFETY: the CPU has AVX-512 F, BW and VNNI, checked just above.
        unsafe { scores_vnni(task, &sides, best, out, part_out) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        unsafe { scores_avx2(task, &sides, best, out, part_out) };
        return;
    }
    let mut row = vec![0i16; dim];
    scores_with(task, &sides, best, out, part_out, |r, o| {
        widen(r, &mut row);
        dots_portable(&row, &task.values, o)
    });
}

/// Whether the CPU multiplies bytes with AVX-512 VNNI (`vpdpbusd`: 64 products an instruction,
/// four times AVX2's 16-bit multiply-adds).
#[cfg(target_arch = "x86_64")]
fn has_vnni() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vnni")
}

/// `row` as `i16`, the width the AVX2 and portable products take.
fn widen(row: &[i8], out: &mut [i16]) {
    for (o, &v) in out.iter_mut().zip(row) {
        *o = i16::from(v);
    }
}

/// The catalog's side of a late score.
struct Sides<'a> {
    items: &'a LateItems,
    /// One weight per token of `items`, or none.
    item_weights: &'a [f32],
    dim: usize,
    /// Per item: whether to score it (`None`: every item).
    only: Option<&'a [bool]>,
    /// The task's parts (runs of its tokens), when it asks for several things: an item scores
    /// the best of the whole task's late score and each part's.
    parts: &'a [Range<usize>],
}

/// [`scores_with`] over [`dots_avx2`] (LLVM does not find 16-bit multiply-adds in the portable
/// loop: it widens to 32 bits and multiplies 8 at a time).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scores_avx2(
    task: &TaskTokens,
    sides: &Sides<'_>,
    best: &mut Vec<f32>,
    out: &mut Vec<f32>,
    part_out: &mut Vec<f32>,
) {
    let mut row = vec![0i16; sides.dim];
    scores_with(task, sides, best, out, part_out, |r, o| {
        widen(r, &mut row);
        // SAFETY: this function only runs where AVX2 is available (its caller checked).
        unsafe { dots_avx2(&row, &task.values, o) }
    });
}

/// [`scores_with`] over [`dots_vnni`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn scores_vnni(
    task: &TaskTokens,
    sides: &Sides<'_>,
    best: &mut Vec<f32>,
    out: &mut Vec<f32>,
    part_out: &mut Vec<f32>,
) {
    // SAFETY: this function only runs where AVX-512 VNNI is available (its caller checked), and
    // `dim` is a multiple of 64 (likewise).
    scores_with(task, sides, best, out, part_out, |r, o| unsafe { dots_vnni(r, &task.biased, o) });
}

#[inline(always)]
fn scores_with(
    task: &TaskTokens,
    sides: &Sides<'_>,
    best: &mut Vec<f32>,
    out: &mut Vec<f32>,
    part_out: &mut Vec<f32>,
    mut dots: impl FnMut(&[i8], &mut [i32]),
) {
    let (items, dim, parts) = (sides.items, sides.dim, sides.parts);
    let item_side = sides.item_weights.len() == items.scales.len();
    let total_weight: f32 = task.weights.iter().sum();
    let part_weights: Vec<f32> =
        parts.iter().map(|p| task.weights[p.clone()].iter().sum()).collect();
    let mut products = vec![0i32; task.len()];
    // Per task token, its cosine with the current item token (for the parts' item sides).
    let mut cosines = vec![0f32; if parts.is_empty() { 0 } else { task.len() }];
    // Per part: the item side's weighted sum.
    let mut part_item_sums = vec![0f32; parts.len()];
    let n_items = items.offsets.len().saturating_sub(1);
    part_out.clear();
    part_out.resize(parts.len() * n_items, f32::NAN);
    out.clear();
    for (item, range) in items.offsets.windows(2).enumerate() {
        let (start, end) = (range[0] as usize, range[1] as usize);
        if sides.only.is_some_and(|only| !only[item]) {
            out.push(f32::NAN);
            continue;
        }
        if start == end || total_weight <= 0.0 {
            out.push(0.0);
            for j in 0..parts.len() {
                part_out[j * n_items + item] = 0.0;
            }
            continue;
        }
        best.clear();
        best.resize(task.len(), f32::NEG_INFINITY);
        part_item_sums.iter_mut().for_each(|s| *s = 0.0);
        // The item's side: its tokens' best cosines with the task's, weighted.
        let (mut item_sum, mut item_weight) = (0.0f32, 0.0f32);
        for k in start..end {
            dots(&items.states[k * dim..(k + 1) * dim], &mut products);
            let scale = items.scales[k];
            let mut best_task = f32::NEG_INFINITY;
            for (t, ((b, &p), &s)) in best.iter_mut().zip(&products).zip(&task.scales).enumerate() {
                let cos = scale * p as f32;
                if cos > *b {
                    *b = cos;
                }
                best_task = best_task.max(cos * s);
                if let Some(c) = cosines.get_mut(t) {
                    *c = cos * s;
                }
            }
            if item_side {
                let w = sides.item_weights[k];
                item_sum += w * best_task;
                item_weight += w;
                for (sum, part) in part_item_sums.iter_mut().zip(parts) {
                    *sum += w * cosines[part.clone()].iter().copied().fold(f32::MIN, f32::max);
                }
            }
        }
        let side = |run: Range<usize>, weight: f32, item_sum: f32| {
            let sum: f32 = best[run.clone()]
                .iter()
                .zip(&task.weights[run.clone()])
                .zip(&task.scales[run])
                .map(|((b, w), s)| w * s * b)
                .sum();
            let task_side = sum / weight;
            if item_weight > 0.0 {
                (1.0 - ITEM_SIDE) * task_side + ITEM_SIDE * item_sum / item_weight
            } else {
                task_side
            }
        };
        out.push(side(0..task.len(), total_weight, item_sum));
        for (j, ((part, &weight), &part_item)) in
            parts.iter().zip(&part_weights).zip(&part_item_sums).enumerate()
        {
            part_out[j * n_items + item] =
                if weight > 0.0 { side(part.clone(), weight, part_item) } else { 0.0 };
        }
    }
}

/// `out[t]` = `row . tokens[t]` for each of the task's tokens (rows of `row.len()`).
fn dots_portable(row: &[i16], tokens: &[i16], out: &mut [i32]) {
    for (o, t) in out.iter_mut().zip(tokens.chunks_exact(row.len())) {
        *o = dot_i16(row, t);
    }
}

/// [`dots_portable`] with AVX2's `vpmaddwd` (16 products summed pairwise into 8 lanes an
/// instruction), four task tokens at a time so each chunk of the row is loaded once for four,
/// their four sums reduced together by horizontal adds. Through raw pointers: the slice
/// indexing of five loads a chunk kept its bounds checks in the loop. Integer sums, so the
/// same values as the portable code in any order.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dots_avx2(row: &[i16], tokens: &[i16], out: &mut [i32]) {
    use std::arch::x86_64::*;
    let dim = row.len();
    if dim == 0 || !dim.is_multiple_of(16) {
        return dots_portable(row, tokens, out);
    }
    // As the portable code: one output per whole task token.
    let n = out.len().min(tokens.len() / dim);
    let (row, tokens) = (row.as_ptr(), tokens.as_ptr());
    // Every caller passes a `p` at 16 `i16` inside `row` or inside one of the first `n` tokens
    // of `tokens` (`c + 16 <= dim`, token `t + j < n`).
    let load = |p: *const i16| {
        // SAFETY: `p` points at 16 readable `i16` (above), the 32 bytes of one unaligned load.
        unsafe { _mm256_loadu_si256(p.cast()) }
    };
    let mut t = 0;
    while t + 4 <= n {
        // SAFETY: token t's first value; tokens t..t + 4 exist (t + 4 <= n).
        let base = unsafe { tokens.add(t * dim) };
        let mut acc = [_mm256_setzero_si256(); 4];
        for c in (0..dim).step_by(16) {
            // SAFETY: offsets within the row and within tokens t..t + 4 (see `load`).
            unsafe {
                let r = load(row.add(c));
                for (j, a) in acc.iter_mut().enumerate() {
                    *a = _mm256_add_epi32(*a, _mm256_madd_epi16(r, load(base.add(j * dim + c))));
                }
            }
        }
        // Lanes of acc[j] summed: two rounds of pairwise adds leave [s0 s1 s2 s3] in each
        // 128-bit half, added together.
        let pairs = [_mm256_hadd_epi32(acc[0], acc[1]), _mm256_hadd_epi32(acc[2], acc[3])];
        let quads = _mm256_hadd_epi32(pairs[0], pairs[1]);
        let sums =
            _mm_add_epi32(_mm256_castsi256_si128(quads), _mm256_extracti128_si256::<1>(quads));
        // SAFETY: outputs t..t + 4 < n <= out.len(); a 16-byte unaligned store.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().add(t).cast(), sums) };
        t += 4;
    }
    while t < n {
        let mut acc = _mm256_setzero_si256();
        for c in (0..dim).step_by(16) {
            // SAFETY: offsets within the row and within token t < n (see `load`).
            unsafe {
                acc = _mm256_add_epi32(
                    acc,
                    _mm256_madd_epi16(load(row.add(c)), load(tokens.add(t * dim + c))),
                );
            }
        }
        let mut lanes = [0i32; 8];
        // SAFETY: `lanes` is 32 bytes, the width of one unaligned store.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc) };
        out[t] = lanes.iter().sum();
        t += 1;
    }
}

/// `out[t]` = `row . tokens[t]` with AVX-512 VNNI, four task tokens at a time. `vpdpbusd`
/// multiplies unsigned by signed bytes, so the task's values come biased by 128 and the bias is
/// taken off again: `(t + 128) . r = t . r + 128 * sum(r)`. Exact, like the other two.
///
/// # Safety
/// The CPU must support AVX-512 F, BW and VNNI, and `row.len()` must be a multiple of 64.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn dots_vnni(row: &[i8], biased: &[u8], out: &mut [i32]) {
    use std::arch::x86_64::*;
    let dim = row.len();
    debug_assert!(dim.is_multiple_of(64) && biased.len() == out.len() * dim);
    let load = |bytes: &[u8], c: usize| {
        let chunk = &bytes[c..c + 64];
        // SAFETY: `chunk` holds 64 bytes, the width of one unaligned load.
        unsafe { _mm512_loadu_si512(chunk.as_ptr().cast()) }
    };
    // SAFETY: `i8` and `u8` have the same size and alignment; only the loads read the bytes.
    let row_bytes = unsafe { std::slice::from_raw_parts(row.as_ptr().cast::<u8>(), dim) };
    let ones = _mm512_set1_epi8(1);
    let mut row_sum = _mm512_setzero_si512();
    for c in (0..dim).step_by(64) {
        row_sum = _mm512_dpbusd_epi32(row_sum, ones, load(row_bytes, c));
    }
    let bias = 128 * _mm512_reduce_add_epi32(row_sum);
    let mut groups = biased.chunks_exact(4 * dim);
    let mut at = 0;
    for group in groups.by_ref() {
        let mut acc = [_mm512_setzero_si512(); 4];
        for c in (0..dim).step_by(64) {
            let r = load(row_bytes, c);
            for (j, a) in acc.iter_mut().enumerate() {
                *a = _mm512_dpbusd_epi32(*a, load(group, j * dim + c), r);
            }
        }
        for (o, a) in out[at..at + 4].iter_mut().zip(acc) {
            *o = _mm512_reduce_add_epi32(a) - bias;
        }
        at += 4;
    }
    for (o, t) in out[at..].iter_mut().zip(groups.remainder().chunks_exact(dim)) {
        let mut acc = _mm512_setzero_si512();
        for c in (0..dim).step_by(64) {
            acc = _mm512_dpbusd_epi32(acc, load(t, c), load(row_bytes, c));
        }
        *o = _mm512_reduce_add_epi32(acc) - bias;
    }
}

/// Integer dot product in 16-wide chunks of independent `i32` sums (LLVM turns them into
/// 16-bit multiply-adds); exact, so the order never matters. Values fit in `i8`, so no product
/// or sum of 384 of them overflows.
#[inline(always)]
fn dot_i16(a: &[i16], b: &[i16]) -> i32 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: i32 =
        ca.remainder().iter().zip(cb.remainder()).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    acc.iter().sum::<i32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    /// Items of `dim` 4 from their tokens' (id, state) pairs.
    fn items(tokens: &[&[(u32, [f32; 4])]]) -> LateItems {
        let mut out = LateItems { offsets: vec![0], ..LateItems::default() };
        let mut states = Vec::new();
        let mut df = std::collections::BTreeMap::<u32, u32>::new();
        for item in tokens {
            let mut ids = Vec::new();
            for (id, s) in item.iter() {
                let (scale, q) = LateItems::quantize(&unit(s));
                out.scales.push(scale);
                states.extend(q);
                out.ids.push(*id);
                ids.push(*id);
            }
            ids.sort_unstable();
            ids.dedup();
            ids.into_iter().for_each(|id| *df.entry(id).or_default() += 1);
            out.offsets.push(out.scales.len() as u32);
        }
        out.doc_freq = df.into_iter().collect();
        out.states = states.into();
        out
    }

    fn task(tokens: &[(u32, [f32; 4])]) -> TokenStates {
        TokenStates {
            vector: vec![0.5; 4],
            ids: tokens.iter().map(|t| t.0).collect(),
            states: tokens.iter().flat_map(|t| unit(&t.1)).collect(),
            norms: vec![1.0; tokens.len()],
            frame: Vec::new(),
        }
    }

    #[test]
    fn each_task_token_counts_its_best_match_in_the_item() {
        let cat = items(&[
            &[(1, [1.0, 0.0, 0.0, 0.0]), (2, [0.0, 1.0, 0.0, 0.0])],
            &[(3, [0.0, 0.0, 1.0, 0.0])],
        ]);
        let t =
            TaskTokens::new(&task(&[(9, [1.0, 0.0, 0.0, 0.0]), (8, [0.0, 1.0, 0.0, 0.0])]), &cat)
                .unwrap();
        let (mut best, mut out) = (Vec::new(), Vec::new());
        scores_into(&t, &cat, &[], 4, None, &mut best, &mut out);
        // Both task tokens meet a token of item 0 exactly; none meets item 1's.
        assert!((out[0] - 1.0).abs() < 0.01, "{out:?}");
        assert!(out[1].abs() < 0.01, "{out:?}");
    }

    #[test]
    fn a_token_every_item_holds_weighs_less_than_a_rare_one() {
        // Token 1 is in both items, token 2 only in item 0.
        let cat = items(&[
            &[(1, [1.0, 0.0, 0.0, 0.0]), (2, [0.0, 1.0, 0.0, 0.0])],
            &[(1, [1.0, 0.0, 0.0, 0.0])],
        ]);
        let t =
            TaskTokens::new(&task(&[(1, [1.0, 0.0, 0.0, 0.0]), (2, [0.0, 1.0, 0.0, 0.0])]), &cat)
                .unwrap();
        assert!(t.weights[0] < t.weights[1]);
        let (mut best, mut out) = (Vec::new(), Vec::new());
        scores_into(&t, &cat, &[], 4, None, &mut best, &mut out);
        // Item 1 matches only the common token: under half the weight.
        assert!(out[0] > 0.99 && out[1] < 0.5, "{out:?}");
    }

    #[test]
    fn the_item_side_prefers_the_item_whose_every_token_the_task_meets() {
        // Item 0 holds the task's two words and two more; item 1 holds just the task's two.
        let cat = items(&[
            &[
                (1, [1.0, 0.0, 0.0, 0.0]),
                (2, [0.0, 1.0, 0.0, 0.0]),
                (3, [0.0, 0.0, 1.0, 0.0]),
                (4, [0.0, 0.0, 0.0, 1.0]),
            ],
            &[(1, [1.0, 0.0, 0.0, 0.0]), (2, [0.0, 1.0, 0.0, 0.0])],
        ]);
        let t =
            TaskTokens::new(&task(&[(1, [1.0, 0.0, 0.0, 0.0]), (2, [0.0, 1.0, 0.0, 0.0])]), &cat)
                .unwrap();
        let (mut best, mut out) = (Vec::new(), Vec::new());
        // The task's side alone: every task token is met in both items.
        scores_into(&t, &cat, &[], 4, None, &mut best, &mut out);
        assert!((out[0] - out[1]).abs() < 0.01 && out[0] > 0.99, "{out:?}");
        // With the item's side, half of item 0's weight is unmet.
        let weights = item_token_weights(&cat);
        assert_eq!(weights.len(), 6);
        scores_into(&t, &cat, &weights, 4, None, &mut best, &mut out);
        assert!(out[1] > 0.99, "{out:?}");
        assert!(out[0] < 1.0 - 0.4 * ITEM_SIDE, "{out:?}");
    }

    #[test]
    fn an_item_left_out_of_the_candidates_is_not_scored_and_the_rest_score_as_before() {
        let cat = items(&[
            &[(1, [1.0, 0.0, 0.0, 0.0])],
            &[(2, [0.0, 1.0, 0.0, 0.0])],
            &[(3, [0.6, 0.8, 0.0, 0.0])],
        ]);
        let t = TaskTokens::new(&task(&[(1, [1.0, 0.0, 0.0, 0.0])]), &cat).unwrap();
        let weights = item_token_weights(&cat);
        let (mut best, mut all, mut some) = (Vec::new(), Vec::new(), Vec::new());
        scores_into(&t, &cat, &weights, 4, None, &mut best, &mut all);
        scores_into(&t, &cat, &weights, 4, Some(&[true, false, true]), &mut best, &mut some);
        assert!(some[1].is_nan(), "{some:?}");
        assert_eq!((some[0], some[2]), (all[0], all[2]));
    }

    #[test]
    fn a_task_without_content_tokens_has_no_late_side() {
        let cat = items(&[&[(1, [1.0, 0.0, 0.0, 0.0])]]);
        assert!(TaskTokens::new(&task(&[]), &cat).is_none());
    }

    #[test]
    fn the_integer_dot_product_is_exact_past_a_chunk() {
        let a: Vec<i16> = (0..70).map(|i| i % 255 - 127).collect();
        let b: Vec<i16> = (0..70).map(|i| 127 - i * 3 % 255).collect();
        let want: i32 = a.iter().zip(&b).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum();
        assert_eq!(dot_i16(&a, &b), want);
    }

    #[test]
    fn the_avx2_products_match_the_portable_ones() {
        let dim = 48;
        let row: Vec<i16> = (0..dim as i16).map(|i| i * 5 % 255 - 127).collect();
        // The extremes of a quantized state, against a row of them too.
        let extremes: Vec<i16> = (0..dim).map(|i| if i % 3 == 0 { -127 } else { 127 }).collect();
        // Token counts around the groups of four: none, fewer, whole groups, groups and a rest.
        for n in [0usize, 1, 3, 4, 5, 7, 8, 9] {
            let tokens: Vec<i16> = (0..(n * dim) as i16).map(|i| 127 - i * 7 % 255).collect();
            for row in [&row, &extremes] {
                let mut want = vec![0; n];
                dots_portable(row, &tokens, &mut want);
                if n > 0 {
                    assert_eq!(want[0], dot_i16(row, &tokens[..dim]));
                }
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    let mut got = vec![0; n];
                    // SAFETY: the CPU has AVX2, checked just above.
                    unsafe { dots_avx2(row, &tokens, &mut got) };
                    assert_eq!(got, want, "{n} tokens");
                }
            }
        }
    }

    #[test]
    fn the_vnni_products_match_the_portable_ones() {
        #[cfg(target_arch = "x86_64")]
        if has_vnni() {
            let dim = 128;
            // Every value a quantized state takes, the extremes included.
            let row: Vec<i8> =
                (0..dim).map(|i| (i * 37 % 255) as i16 - 127).map(|v| v as i8).collect();
            // Seven tokens: a group of four, then three left over.
            let tokens: Vec<i8> =
                (0..7 * dim).map(|i| 127 - (i * 11 % 255) as i16).map(|v| v as i8).collect();
            let wide = |v: &[i8]| v.iter().map(|&x| i16::from(x)).collect::<Vec<_>>();
            let mut want = vec![0; 7];
            dots_portable(&wide(&row), &wide(&tokens), &mut want);
            let biased: Vec<u8> = tokens.iter().map(|&v| (i16::from(v) + 128) as u8).collect();
            let mut got = vec![0; 7];
            // SAFETY: the CPU has AVX-512 VNNI, checked just above; 128 is a multiple of 64.
            unsafe { dots_vnni(&row, &biased, &mut got) };
            assert_eq!(got, want);
        }
    }
}
