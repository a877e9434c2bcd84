//! Scoring kernels on plain slices: dot products, matrix-vector scores, top-K and the batched
//! product used by screening. Written so LLVM vectorises them at the baseline target: 16-wide
//! chunks into independent accumulators, then a scalar tail. Row sums always run in the same
//! order, so scores do not depend on the thread count.

use std::cmp::Ordering;
use switchyard_format::MatrixView;

pub use switchyard_format::{dot, dot_naive};

/// Rows above which matrix-vector scoring is split across threads.
const PARALLEL_ROWS: usize = 16_384;

/// `out[i] = matrix.row(i) . query` for every row; `out` is resized, never reallocated when
/// its capacity suffices (pass the same buffer every call).
pub fn scores_into(matrix: &MatrixView<'_>, query: &[f32], out: &mut Vec<f32>) {
    assert_eq!(query.len(), matrix.dim(), "query width differs from the matrix");
    out.clear();
    out.resize(matrix.rows(), 0.0);
    if matrix.rows() >= PARALLEL_ROWS {
        use rayon::prelude::*;
        out.par_chunks_mut(1024).enumerate().for_each(|(c, chunk)| {
            for (j, o) in chunk.iter_mut().enumerate() {
                *o = dot(matrix.row(c * 1024 + j), query);
            }
        });
    } else {
        for (i, o) in out.iter_mut().enumerate() {
            *o = dot(matrix.row(i), query);
        }
    }
}

/// Best first; ties on ascending id.
#[inline]
fn better(a: &(u32, f32), b: &(u32, f32)) -> Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// The `k` best `(id, score)` pairs, best first, ties broken by ascending id. `k = 0` gives
/// nothing; `k > n` gives all `n`. Keeps a buffer of `2k` and prunes it with
/// `select_nth_unstable_by`, so the cost is O(n) plus O(k log k).
pub fn top_k(scores: &[f32], k: usize) -> Vec<(u32, f32)> {
    if k == 0 {
        return Vec::new();
    }
    let mut buf: Vec<(u32, f32)> = Vec::with_capacity(2 * k.min(scores.len()) + 1);
    for (i, &s) in scores.iter().enumerate() {
        buf.push((i as u32, s));
        if buf.len() >= 2 * k {
            buf.select_nth_unstable_by(k - 1, better);
            buf.truncate(k);
        }
    }
    if buf.len() > k {
        buf.select_nth_unstable_by(k - 1, better);
        buf.truncate(k);
    }
    buf.sort_unstable_by(better);
    buf
}

/// `queries (n x dim) . patterns^T` as an `n x rows` row-major score matrix, through
/// ndarray's blocked sgemm (matrixmultiply) on zero-copy views of the padded index rows.
pub fn batch_scores(queries: &[&[f32]], patterns: &MatrixView<'_>) -> Vec<f32> {
    let dim = patterns.dim();
    let n = queries.len();
    let m = patterns.rows();
    if n == 0 || m == 0 {
        return vec![0.0; n * m];
    }
    let mut q = ndarray::Array2::<f32>::zeros((n, dim));
    for (i, row) in queries.iter().enumerate() {
        assert_eq!(row.len(), dim, "query {i} width differs from the matrix");
        q.row_mut(i).assign(&ndarray::ArrayView1::from(*row));
    }
    use ndarray::ShapeBuilder;
    // Shape and stride come from a validated view (rows * stride == len), so this cannot fail;
    // if it somehow did, no pattern matches rather than a panic.
    let Ok(p) = ndarray::ArrayView2::from_shape(
        (m, dim).strides((patterns.stride(), 1)),
        patterns.as_padded(),
    ) else {
        return vec![0.0; n * m];
    };
    let out = q.dot(&p.t());
    out.into_raw_vec_and_offset().0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive_top_k(scores: &[f32], k: usize) -> Vec<(u32, f32)> {
        let mut all: Vec<(u32, f32)> =
            scores.iter().enumerate().map(|(i, &s)| (i as u32, s)).collect();
        all.sort_by(better);
        all.truncate(k);
        all
    }

    #[test]
    fn top_k_edges() {
        assert!(top_k(&[1.0, 2.0], 0).is_empty());
        assert_eq!(top_k(&[1.0, 2.0], 5), vec![(1, 2.0), (0, 1.0)]);
        assert_eq!(top_k(&[0.5, 0.5, 0.5], 2), vec![(0, 0.5), (1, 0.5)]);
        assert!(top_k(&[], 3).is_empty());
    }

    #[test]
    fn batch_scores_match_dots_on_padded_rows() {
        let dim = 5;
        let stride = 16;
        let mut data = vec![0f32; 3 * stride];
        for r in 0..3 {
            for c in 0..dim {
                data[r * stride + c] = (r * 10 + c) as f32 * 0.01;
            }
        }
        let view = MatrixView::new(&data, 3, dim, stride).unwrap();
        let q1 = [1.0, 0.0, 0.5, 0.0, 2.0];
        let q2 = [0.0, 1.0, 0.0, 1.0, 0.0];
        let out = batch_scores(&[&q1, &q2], &view);
        for (i, q) in [q1, q2].iter().enumerate() {
            for r in 0..3 {
                assert!((out[i * 3 + r] - dot_naive(view.row(r), q)).abs() < 1e-5);
            }
        }
    }

    proptest! {
        #[test]
        fn dot_matches_naive(v in prop::collection::vec((-1f32..1f32, -1f32..1f32), 0..300)) {
            let (a, b): (Vec<f32>, Vec<f32>) = v.into_iter().unzip();
            let (x, y) = (dot(&a, &b), dot_naive(&a, &b));
            prop_assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()) + 1e-4, "{} vs {}", x, y);
        }

        #[test]
        fn top_k_matches_full_sort(scores in prop::collection::vec(prop_oneof![Just(0.5f32), -1f32..1f32], 0..200), k in 0usize..40) {
            prop_assert_eq!(top_k(&scores, k), naive_top_k(&scores, k));
        }

        #[test]
        fn scores_into_matches_naive(rows in 1usize..20, dim in 1usize..40, seed in any::<u32>()) {
            let stride = dim.div_ceil(16) * 16;
            let mut data = vec![0f32; rows * stride];
            let mut x = seed;
            for r in 0..rows { for c in 0..dim { x = x.wrapping_mul(1664525).wrapping_add(1013904223); data[r * stride + c] = (x >> 8) as f32 / (1u32 << 24) as f32 - 0.5; } }
            let view = MatrixView::new(&data, rows, dim, stride).unwrap();
            let q: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.37).sin()).collect();
            let mut out = Vec::new();
            scores_into(&view, &q, &mut out);
            for (r, &o) in out.iter().enumerate() {
                prop_assert!((o - dot_naive(view.row(r), &q)).abs() < 1e-4);
            }
        }
    }
}
