//! Dense and lexical scores combined into one ranking score, per task.
//!
//! Scores of the two sides live on unrelated scales (a cosine whose range depends on the model
//! and the length of the texts, an unbounded BM25 sum), so each is min-max normalised over the
//! task's items before a convex combination (Bruch et al., "An Analysis of Fusion Functions for
//! Hybrid Retrieval", 2023, found this robust and sample-efficient). The lexical minimum is the
//! theoretical one, 0 (no shared term); the dense minimum is the task's lowest item.

/// The fused view of one item.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Fused {
    /// Dense side, 0..=1 (1 = the task's best dense item, 0 = its worst).
    pub dense: f32,
    /// Late-interaction side, 0..=1 like `dense`; `None` without token states.
    pub late: Option<f32>,
    /// Lexical side, 0..=1 (1 = the task's best BM25 item; 0 when no term matches).
    pub lexical: f32,
    /// `(1 - weight) * dense + weight * lexical`, where `dense` is
    /// `(1 - blend) * dense + blend * late` when there is a late side.
    pub score: f32,
}

/// The lowest finite score and the span up to the highest, for min-max scaling over the task's
/// items (a span of 0 when they are equal or none is finite).
fn finite_range(scores: &[f32]) -> (f32, f32) {
    let (lo, hi) = scores
        .iter()
        .filter(|x| x.is_finite())
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    if hi > lo { (lo, hi - lo) } else { (0.0, 0.0) }
}

/// `x` min-max scaled by a [`finite_range`]: 0 when there is no span or `x` is not finite.
fn scaled(x: f32, (lo, span): (f32, f32)) -> f32 {
    if span > 0.0 && x.is_finite() { (x - lo) / span } else { 0.0 }
}

/// Fuses per-item dense scores (cosines) and BM25 scores into `out`, with `weight` on the
/// lexical side.
pub fn fuse_into(dense: &[f32], bm25: &[f32], weight: f32, out: &mut Vec<Fused>) {
    debug_assert_eq!(dense.len(), bm25.len());
    let range = finite_range(dense);
    let lexical_max = bm25.iter().copied().fold(0.0f32, f32::max);
    out.clear();
    out.extend(dense.iter().zip(bm25).map(|(&d, &b)| {
        let dense = scaled(d, range);
        let lexical = if lexical_max > 0.0 { (b / lexical_max).min(1.0) } else { 0.0 };
        Fused { dense, late: None, lexical, score: (1.0 - weight) * dense + weight * lexical }
    }));
}

/// Adds a late-interaction side to a fusion [`fuse_into`] made over the same items with the
/// same `weight`: the dense side becomes `(1 - blend)` of the cosines and `blend` of the late
/// scores, each min-max scaled over the task's items on its own. An item whose late score is
/// not a number was not scored: it takes the lowest (0) and no `late`. Taking the fusion
/// rather than remaking it lets a large catalog pick its late candidates from the same one.
pub fn add_late_side(fused: &mut [Fused], late: &[f32], blend: f32, weight: f32) {
    debug_assert_eq!(fused.len(), late.len());
    let range = finite_range(late);
    for (f, &raw) in fused.iter_mut().zip(late) {
        let l = scaled(raw, range);
        let dense_side = (1.0 - blend) * f.dense + blend * l;
        f.late = raw.is_finite().then_some(l);
        f.score = (1.0 - weight) * dense_side + weight * f.lexical;
    }
}

/// Standard scores of `scores` (how far each stands above the task's mean item, in standard
/// deviations), into `out`: a scale-free measure of how much an item stands out, comparable
/// across models whose cosines live in different ranges. Fewer than 2 finite scores give 0s.
pub fn standard_scores_into(scores: &[f32], out: &mut Vec<f32>) {
    let finite = scores.iter().filter(|x| x.is_finite());
    let n = finite.clone().count();
    out.clear();
    if n < 2 {
        out.resize(scores.len(), 0.0);
        return;
    }
    let mean = finite.clone().map(|&x| f64::from(x)).sum::<f64>() / n as f64;
    let var = finite.map(|&x| (f64::from(x) - mean).powi(2)).sum::<f64>() / n as f64;
    let sd = var.sqrt().max(1e-9);
    out.extend(scores.iter().map(|&x| {
        if x.is_finite() { ((f64::from(x) - mean) / sd) as f32 } else { f32::NEG_INFINITY }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_side_is_scaled_to_the_tasks_best_item() {
        let mut out = Vec::new();
        fuse_into(&[0.9, 0.7, 0.5], &[0.0, 6.0, 3.0], 0.5, &mut out);
        assert_eq!(out[0], Fused { dense: 1.0, late: None, lexical: 0.0, score: 0.5 });
        assert!((out[1].dense - 0.5).abs() < 1e-6 && out[1].lexical == 1.0);
        assert_eq!(out[2], Fused { dense: 0.0, late: None, lexical: 0.5, score: 0.25 });
    }

    #[test]
    fn weight_zero_is_the_dense_ranking_and_one_the_lexical() {
        let mut out = Vec::new();
        fuse_into(&[0.9, 0.3], &[1.0, 5.0], 0.0, &mut out);
        assert!(out[0].score > out[1].score);
        fuse_into(&[0.9, 0.3], &[1.0, 5.0], 1.0, &mut out);
        assert!(out[0].score < out[1].score);
    }

    #[test]
    fn an_item_without_a_late_score_takes_the_lowest_and_shows_none() {
        let mut out = Vec::new();
        fuse_into(&[0.9, 0.5, 0.7], &[0.0; 3], 0.0, &mut out);
        add_late_side(&mut out, &[0.6, f32::NAN, 0.8], 0.5, 0.0);
        assert_eq!(out.iter().map(|f| f.late).collect::<Vec<_>>(), [Some(0.0), None, Some(1.0)]);
        // Its dense side is its cosine's share alone: item 1's scaled cosine is 0.
        assert_eq!(out[1].score, 0.0);
        assert!((out[2].score - (0.5 * 0.5 + 0.5)).abs() < 1e-6, "{out:?}");
    }

    #[test]
    fn the_late_side_takes_its_share_of_the_dense_side() {
        let mut out = Vec::new();
        // Cosines prefer item 0, late scores item 1; lexical says nothing.
        let (dense, late, bm25) = ([0.9, 0.5], [0.6, 0.8], [0.0, 0.0]);
        fuse_into(&dense, &bm25, 0.3, &mut out);
        add_late_side(&mut out, &late, 0.5, 0.3);
        assert_eq!(out[0].late, Some(0.0));
        assert_eq!(out[1].late, Some(1.0));
        assert!((out[0].score - 0.35).abs() < 1e-6 && (out[1].score - 0.35).abs() < 1e-6);
        // Blend 0 is the plain fusion, blend 1 ranks the dense side by the late scores alone.
        let mut plain = Vec::new();
        fuse_into(&dense, &bm25, 0.3, &mut plain);
        out.clone_from(&plain);
        add_late_side(&mut out, &late, 0.0, 0.3);
        assert!(out.iter().zip(&plain).all(|(a, b)| a.score == b.score));
        out.clone_from(&plain);
        add_late_side(&mut out, &late, 1.0, 0.3);
        assert!(out[1].score > out[0].score);
    }

    #[test]
    fn no_signal_gives_zeros_not_nan() {
        let mut out = Vec::new();
        fuse_into(&[0.5, 0.5], &[0.0, 0.0], 0.3, &mut out);
        assert!(out.iter().all(|f| f.score == 0.0));
    }

    #[test]
    fn standard_scores_measure_how_far_an_item_stands_out() {
        let mut z = Vec::new();
        standard_scores_into(&[0.9, 0.5, 0.5, 0.5], &mut z);
        assert!(z[0] > 1.5 && z[1] < 0.0);
        // The same shape on another model's scale gives the same scores.
        let mut z2 = Vec::new();
        standard_scores_into(&[0.95, 0.85, 0.85, 0.85], &mut z2);
        assert!(z.iter().zip(&z2).all(|(a, b)| (a - b).abs() < 1e-4));
        standard_scores_into(&[0.3], &mut z);
        assert_eq!(z, [0.0]);
    }
}
