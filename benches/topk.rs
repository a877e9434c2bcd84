//! What's measured: the per-task scoring path without the model: matrix-vector scores of one
//! unit query against n rows (d in {384, 768}), then top-k (k = 8); and batched screening,
//! 50 entries x 500 patterns (d = 384) through the blocked sgemm.
//!
//! Run with: `cargo bench --bench topk`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::StdRng};
use std::hint::black_box;
use switchyard_format::{MatrixView, stride_for};
use switchyard_router::kernels;

fn matrix(rows: usize, dim: usize, rng: &mut StdRng) -> Vec<f32> {
    let stride = stride_for(dim);
    let mut data = vec![0f32; rows * stride];
    for r in 0..rows {
        for c in 0..dim {
            data[r * stride + c] = rng.random_range(-1.0f32..1.0);
        }
    }
    data
}

fn bench(c: &mut Criterion) {
    let mut rng = StdRng::seed_from_u64(42);
    let mut group = c.benchmark_group("topk");
    for dim in [384usize, 768] {
        for n in [1_000usize, 10_000, 100_000] {
            let data = matrix(n, dim, &mut rng);
            let view = MatrixView::new(&data, n, dim, stride_for(dim)).expect("view");
            let q: Vec<f32> = (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            let mut scores = Vec::with_capacity(n);
            group.throughput(Throughput::Elements((n * dim) as u64));
            group.bench_function(format!("n={n}/d={dim}/k=8"), |b| {
                b.iter(|| {
                    kernels::scores_into(black_box(&view), black_box(&q), &mut scores);
                    kernels::top_k(&scores, 8)
                })
            });
        }
    }
    group.finish();
    let mut group = c.benchmark_group("filter");
    let dim = 384;
    let patterns = matrix(500, dim, &mut rng);
    let view = MatrixView::new(&patterns, 500, dim, stride_for(dim)).expect("view");
    let entries: Vec<Vec<f32>> =
        (0..50).map(|_| (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect()).collect();
    let refs: Vec<&[f32]> = entries.iter().map(Vec::as_slice).collect();
    group.throughput(Throughput::Elements((50 * 500 * dim) as u64));
    group.bench_function("m=50/n=500/d=384", |b| {
        b.iter(|| kernels::batch_scores(black_box(&refs), black_box(&view)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
