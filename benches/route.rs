//! What's measured: one routing decision on the default catalog's index (mode, tools, skills,
//! thresholds), with the task embedding cached (the router alone) and computed (cache off),
//! for each provisioned model.
//!
//! Run with: `cargo bench --bench route`

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::Arc;
use switchyard_router::{RouteOptions, RouterBuilder, Scratch};

const TASK: &str = "fix the flaky login test and run the suite again";

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("route");
    for (name, model) in common::models() {
        let index = common::default_index(model.as_ref(), dir.path(), name);
        let cached = RouterBuilder::new(&index).build(Arc::clone(&model)).expect("router");
        let uncached =
            RouterBuilder::new(&index).cache_size(0).build(Arc::clone(&model)).expect("router");
        let options = RouteOptions::default();
        let mut scratch = Scratch::default();
        cached.route(TASK, &options).expect("warm the cache");
        group.bench_function(format!("{name}/embedding=cached"), |b| {
            b.iter(|| cached.route_with(black_box(TASK), &options, &mut scratch).expect("route"))
        });
        group.bench_function(format!("{name}/embedding=computed"), |b| {
            b.iter(|| uncached.route_with(black_box(TASK), &options, &mut scratch).expect("route"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
