//! What's measured: one task embedding (tokenize, transformer forward, pooling, normalisation)
//! for tasks of 8, 24 and 64 tokens, with each provisioned model, on 1 and 2 threads.
//! Models that are not provisioned are skipped with a message.
//!
//! Run with: `cargo bench --bench embed`

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("embed");
    group.sample_size(30);
    for (name, model) in common::models() {
        for tokens in [8usize, 24, 64] {
            let task = common::task_of(model.as_ref(), tokens);
            for threads in [1usize, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("thread pool");
                group.bench_function(format!("{name}/tokens={tokens}/threads={threads}"), |b| {
                    pool.install(|| b.iter(|| model.embed(black_box(&task)).expect("embed")))
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
