//! How far a mean over a few dozen cases can be trusted: percentile bootstrap intervals, for one
//! mean, for the difference of two routings of the same cases (paired), and for the difference
//! of two groups of other cases (a language against English); and Wilson's interval for a plain
//! rate (a screen's recall or false-positive rate: k of n).
//!
//! Why: a catalog's labelled cases are few (10-20 per language), so one case moves recall by
//! 0.05-0.10, and a difference that size between two settings, or between a language and
//! English, says nothing by itself. The bootstrap needs no assumption about the metric (recall
//! of a multi-tool case is a fraction, mode accuracy a 0/1), and the draws come from a fixed
//! seed, so the same report gives the same intervals.

use serde::Serialize;
use switchyard_build_index::rng::SplitMix64;

/// Resamples per interval: enough for the 2.5th and 97.5th percentiles to settle to about
/// 0.005 on a few dozen cases, and a few milliseconds.
const RESAMPLES: usize = 2000;
/// The seed of every interval's draws (any fixed value: reproducible reports).
const SEED: u64 = 0x5eed_1e55_0000_0001;

/// A value with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The value on all cases.
    pub value: f64,
    /// The 2.5th percentile of the resampled values.
    pub low: f64,
    /// The 97.5th percentile of the resampled values.
    pub high: f64,
}

impl Estimate {
    /// Whether the interval leaves zero out (a difference that is more than noise).
    pub fn excludes_zero(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }

    fn rounded(self) -> Self {
        let r = crate::metrics::round4;
        Estimate { value: r(self.value), low: r(self.low), high: r(self.high) }
    }
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// The 2.5th and 97.5th percentiles of `samples` (sorted in place).
fn percentiles(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.025), at(0.975))
}

/// The mean of `values` with its 95% interval; `None` for no values.
pub fn mean_interval(values: &[f64]) -> Option<Estimate> {
    if values.is_empty() {
        return None;
    }
    let mut draws = SplitMix64(SEED);
    let n = values.len();
    let mut samples: Vec<f64> =
        (0..RESAMPLES).map(|_| mean((0..n).map(|_| values[draws.below(n)]))).collect();
    let (low, high) = percentiles(&mut samples);
    Some(Estimate { value: mean(values.iter().copied()), low, high }.rounded())
}

/// The mean of `after - before` over the same cases, with its 95% interval: each resample draws
/// cases, not values, so what both routings share (an easy case, a hard one) cancels. `None`
/// when the lengths differ or there are no cases.
pub fn paired_difference(before: &[f64], after: &[f64]) -> Option<Estimate> {
    if before.len() != after.len() || before.is_empty() {
        return None;
    }
    let diffs: Vec<f64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
    mean_interval(&diffs)
}

/// `mean(group) - mean(reference)` for two groups of different cases, with its 95% interval:
/// each group is resampled on its own. `None` when either group is empty.
pub fn group_difference(reference: &[f64], group: &[f64]) -> Option<Estimate> {
    if reference.is_empty() || group.is_empty() {
        return None;
    }
    let mut draws = SplitMix64(SEED);
    let resample =
        |xs: &[f64], draws: &mut SplitMix64| mean((0..xs.len()).map(|_| xs[draws.below(xs.len())]));
    let mut samples: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let g = resample(group, &mut draws);
            g - resample(reference, &mut draws)
        })
        .collect();
    let (low, high) = percentiles(&mut samples);
    let value = mean(group.iter().copied()) - mean(reference.iter().copied());
    Some(Estimate { value, low, high }.rounded())
}

/// A statistic of `n` samples with its 95% interval: `statistic` is given the indices of one
/// resample (drawn with replacement) and may decline one (`None`, e.g. an AUC of a resample with
/// one class only; such draws are left out). `None` when the statistic of all samples is.
pub fn bootstrap(n: usize, statistic: impl Fn(&[usize]) -> Option<f64>) -> Option<Estimate> {
    let all: Vec<usize> = (0..n).collect();
    let value = statistic(&all)?;
    let mut draws = SplitMix64(SEED);
    let mut picked = vec![0usize; n];
    let mut samples: Vec<f64> = (0..RESAMPLES)
        .filter_map(|_| {
            picked.iter_mut().for_each(|i| *i = draws.below(n));
            statistic(&picked)
        })
        .collect();
    if samples.is_empty() {
        return None;
    }
    let (low, high) = percentiles(&mut samples);
    Some(Estimate { value, low, high }.rounded())
}

/// The rate `k / n` with its 95% Wilson score interval; `None` for `n` = 0. Unlike the
/// bootstrap, it stays honest at 0 of n and n of n (a screen with no false positive on 144
/// benign texts may still flag 2.6% of such texts).
pub fn rate_interval(k: usize, n: usize) -> Option<Estimate> {
    if n == 0 {
        return None;
    }
    const Z: f64 = 1.959_963_984_540_054;
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    Some(
        Estimate { value: p, low: (centre - half).max(0.0), high: (centre + half).min(1.0) }
            .rounded(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_holds_the_mean_and_narrows_with_more_cases() {
        let few: Vec<f64> = (0..10).map(|i| f64::from(u8::from(i % 4 != 0))).collect();
        let many: Vec<f64> = (0..400).map(|i| f64::from(u8::from(i % 4 != 0))).collect();
        let (a, b) = (mean_interval(&few).unwrap(), mean_interval(&many).unwrap());
        assert!(a.low <= a.value && a.value <= a.high, "{a:?}");
        assert!((b.value - 0.75).abs() < 1e-9);
        assert!(b.high - b.low < (a.high - a.low) / 3.0, "{a:?} {b:?}");
        // A 75% rate on 400 cases: the normal approximation's half-width is 0.042.
        assert!((b.high - b.low - 2.0 * 0.042).abs() < 0.015, "{b:?}");
    }

    #[test]
    fn the_same_values_give_the_same_interval() {
        let v = [1.0, 0.0, 0.5, 1.0, 1.0, 0.0, 1.0];
        assert_eq!(mean_interval(&v), mean_interval(&v));
    }

    #[test]
    fn constant_values_have_no_spread_and_no_values_no_estimate() {
        assert_eq!(mean_interval(&[1.0; 12]), Some(Estimate { value: 1.0, low: 1.0, high: 1.0 }));
        assert_eq!(mean_interval(&[]), None);
        assert_eq!(paired_difference(&[1.0], &[]), None);
        assert_eq!(group_difference(&[], &[1.0]), None);
    }

    #[test]
    fn wilson_intervals_match_the_textbook_and_stay_inside_zero_and_one() {
        // 8 of 144: the score interval worked by hand is 0.0284-0.1058.
        let e = rate_interval(8, 144).unwrap();
        assert!((e.value - 0.0556).abs() < 1e-4, "{e:?}");
        assert!((e.low - 0.0284).abs() < 5e-4 && (e.high - 0.1058).abs() < 5e-4, "{e:?}");
        let none = rate_interval(0, 144).unwrap();
        assert_eq!((none.value, none.low), (0.0, 0.0));
        assert!(none.high > 0.02 && none.high < 0.03, "{none:?}");
        let all = rate_interval(20, 20).unwrap();
        assert_eq!((all.value, all.high), (1.0, 1.0));
        assert!(all.low > 0.8, "{all:?}");
        assert_eq!(rate_interval(0, 0), None);
    }

    #[test]
    fn a_bootstrapped_statistic_holds_its_value_and_skips_declined_draws() {
        let xs: Vec<f64> = (0..50).map(f64::from).collect();
        let max = |idx: &[usize]| idx.iter().map(|&i| xs[i]).reduce(f64::max);
        let e = bootstrap(xs.len(), max).unwrap();
        assert_eq!((e.value, e.high), (49.0, 49.0));
        assert!(e.low < 49.0, "{e:?}");
        // A statistic that declines every draw but the full sample has no interval.
        let picky = |idx: &[usize]| (idx.windows(2).all(|w| w[0] < w[1])).then_some(1.0);
        assert_eq!(bootstrap(30, picky), None);
        assert_eq!(bootstrap(0, |_: &[usize]| None), None);
    }

    #[test]
    fn pairing_sees_a_small_consistent_gain_that_two_groups_cannot() {
        // Forty cases of every difficulty; the second routing gets four more right and none
        // worse. Paired, that is a gain; as two unrelated groups the spread of the cases hides it.
        let before: Vec<f64> = (0..40).map(|i| f64::from(u8::from(i % 2 == 0))).collect();
        let mut after = before.clone();
        for i in [1, 3, 5, 7] {
            after[i] = 1.0;
        }
        let paired = paired_difference(&before, &after).unwrap();
        assert!((paired.value - 0.1).abs() < 1e-9);
        assert!(paired.excludes_zero(), "{paired:?}");
        let unpaired = group_difference(&before, &after).unwrap();
        assert!((unpaired.value - 0.1).abs() < 1e-9);
        assert!(!unpaired.excludes_zero(), "{unpaired:?}");
    }
}
