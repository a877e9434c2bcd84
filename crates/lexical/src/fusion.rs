//! Dense and lexical scores combined into one ranking score, per task.
//!
//! Scores of the two sides live on unrelated scales (a cosine on the model's scale, an unbounded
//! BM25 sum), so each is first divided by the task's best item on that side (a min-max
//! normalisation with a fixed minimum, which Bruch et al., "An Analysis of Fusion Functions for
//! Hybrid Retrieval", 2023, found robust and sample-efficient for a convex combination). The
//! dense side is measured from the index's "unrelated" level (`z = 0`), so an item no closer than
//! an unrelated text gets 0, and the best gets 1.

/// The fused view of one item.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Fused {
    /// Dense side, 0..=1 (1 = the task's best dense item).
    pub dense: f32,
    /// Lexical side, 0..=1 (1 = the task's best BM25 item; 0 when no term matches).
    pub lexical: f32,
    /// `(1 - weight) * dense + weight * lexical`.
    pub score: f32,
}

/// Fuses per-item calibrated dense scores `z` (0 = unrelated level, 1 = typical related) and
/// BM25 scores into `out`, with `weight` on the lexical side.
pub fn fuse_into(z: &[f32], bm25: &[f32], weight: f32, out: &mut Vec<Fused>) {
    debug_assert_eq!(z.len(), bm25.len());
    let zmax = z.iter().copied().fold(0.0f32, f32::max);
    let bmax = bm25.iter().copied().fold(0.0f32, f32::max);
    out.clear();
    out.extend(z.iter().zip(bm25).map(|(&z, &b)| {
        let dense = if zmax > 0.0 { (z.max(0.0) / zmax).min(1.0) } else { 0.0 };
        let lexical = if bmax > 0.0 { b / bmax } else { 0.0 };
        Fused { dense, lexical, score: (1.0 - weight) * dense + weight * lexical }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_side_is_scaled_to_the_tasks_best_item() {
        let mut out = Vec::new();
        fuse_into(&[2.0, 1.0, -0.5], &[0.0, 6.0, 3.0], 0.5, &mut out);
        assert_eq!(out[0], Fused { dense: 1.0, lexical: 0.0, score: 0.5 });
        assert_eq!(out[1], Fused { dense: 0.5, lexical: 1.0, score: 0.75 });
        assert_eq!(out[2], Fused { dense: 0.0, lexical: 0.5, score: 0.25 });
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
    fn no_signal_gives_zeros_not_nan() {
        let mut out = Vec::new();
        fuse_into(&[-1.0, -2.0], &[0.0, 0.0], 0.3, &mut out);
        assert!(out.iter().all(|f| f.score == 0.0));
    }
}
