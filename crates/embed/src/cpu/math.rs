//! The element-wise and row-wise math of the forward: in-order lane reductions, LayerNorm of a
//! row, a branch-free `e^x` for softmax and erf, GELU. Every loop adds in a fixed order, so the
//! results do not depend on the thread count.

/// Lanes of the reductions below: `iter().sum()` must add in order (f32 addition does not
/// associate), a chain of dependent adds at one per 3-4 cycles; eight independent partial
/// sums vectorise to one SIMD add per 8 values. The order is still fixed, so results stay
/// deterministic.
pub(super) const LANES: usize = 8;

/// `sum(f(v))` over `v` in eight interleaved partial sums.
#[inline(always)]
pub(super) fn lane_sum(v: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; LANES];
    let mut chunks = v.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += f(x);
        }
    }
    let tail: f32 = chunks.remainder().iter().map(|&x| f(x)).sum();
    acc.iter().sum::<f32>() + tail
}

/// Replaces each `v` by `f(v)` and returns `sum(f(v))`, added exactly as [`lane_sum`] adds
/// (same lanes, same order, same bits), in one pass instead of two. `f` runs on 16 values at a
/// time, so it vectorises at AVX-512 width while the sums stay eight lanes wide.
#[inline(always)]
pub(super) fn lane_map_sum(v: &mut [f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; LANES];
    let mut pairs = v.chunks_exact_mut(2 * LANES);
    for c in &mut pairs {
        for x in c.iter_mut() {
            *x = f(*x);
        }
        for half in c.chunks_exact(LANES) {
            for (a, &x) in acc.iter_mut().zip(half) {
                *a += x;
            }
        }
    }
    let rest = pairs.into_remainder();
    let mut chunks = rest.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *x = f(*x);
            *a += *x;
        }
    }
    let tail: f32 = chunks
        .into_remainder()
        .iter_mut()
        .map(|x| {
            *x = f(*x);
            *x
        })
        .sum();
    acc.iter().sum::<f32>() + tail
}

/// The largest value of `v` (`-inf` when empty), eight lanes at a time.
#[inline(always)]
pub(super) fn lane_max(v: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let mut chunks = v.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            // Not f32::max: its NaN rule keeps the compiler from using SIMD max.
            *a = if x > *a { x } else { *a };
        }
    }
    let tail = chunks.remainder().iter().fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m });
    acc.iter().fold(tail, |m, &x| if x > m { x } else { m })
}

#[inline(always)]
pub(crate) fn layer_norm_row(row: &mut [f32], w: &[f32], b: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = lane_sum(row, |v| v) / n;
    let var = lane_sum(row, |v| (v - mean) * (v - mean)) / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, w), b) in row.iter_mut().zip(w).zip(b) {
        *v = (*v - mean) * inv * w + b;
    }
}

/// `e^x` for `x <= 0` (all this file needs: softmax after max-subtraction, and `-a^2` in erf),
/// branch-free so loops over it vectorise. Cody-Waite reduction `x = i ln2 + r` with ln2 split
/// in two constants (so `r` keeps full precision), `|r| <= ln2 / 2`, and a degree-7 Taylor
/// polynomial for `e^r`: within a few ulps of libm's `expf`.
#[inline(always)]
pub(super) fn exp_neg(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    const ROUNDER: f32 = 12_582_912.0; // 1.5 * 2^23
    let x = x.max(-87.0);
    // Round to nearest by the 1.5 * 2^23 trick: branch-free and vectorisable, unlike roundf.
    let shifted = x * std::f32::consts::LOG2_E + ROUNDER;
    let i = shifted - ROUNDER;
    let r = (x - i * LN2_HI) - i * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0
                        + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // `i` as an integer is in `shifted`'s low mantissa bits: reading it there is a bit cast
    // and an integer subtraction, where `i as i32` (a saturating cast) was done one lane at
    // a time (perf: most of GELU's time).
    let int = shifted.to_bits() as i32 - ROUNDER.to_bits() as i32;
    f32::from_bits(((int + 127) as u32) << 23) * p
}

/// erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below f32 resolution of GELU's output).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let y = 1.0
        - (((((1.061_405_4 * t - 1.453_152_1) * t) + 1.421_413_7) * t - 0.284_496_74) * t
            + 0.254_829_6)
            * t
            * exp_neg(-a * a);
    y.copysign(x)
}

#[inline(always)]
pub(super) fn gelu_in_place(v: &mut [f32]) {
    for x in v {
        *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_map_sum_adds_as_lane_sum_does() {
        for n in [0, 1, 7, 8, 9, 31, 512, 517] {
            let v: Vec<f32> = (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.173).collect();
            let want_sum = lane_sum(&v, |x| exp_neg(x - 9.0));
            let mut got = v.clone();
            let got_sum = lane_map_sum(&mut got, |x| exp_neg(x - 9.0));
            assert_eq!(got_sum.to_bits(), want_sum.to_bits(), "n = {n}");
            let want: Vec<u32> = v.iter().map(|&x| exp_neg(x - 9.0).to_bits()).collect();
            assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want, "n = {n}");
        }
    }

    #[test]
    fn exp_neg_is_as_accurate_as_f32_exp() {
        // Down to -87, where it clamps (e^-87 ~ 1.6e-38, the edge of normal f32).
        for i in 0..=1740 {
            let x = -(i as f32) * 0.05;
            let (got, want) = (exp_neg(x), x.exp());
            assert!((got - want).abs() <= want * 4e-7 + 1e-38, "exp({x}) = {got}, want {want}");
        }
        assert_eq!(exp_neg(-1000.0), exp_neg(-87.0));
    }

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
            (4.0, 1.0),
        ] {
            assert!((erf(x) - want).abs() < 3e-7, "erf({x}) = {} not {want}", erf(x));
        }
    }
}
