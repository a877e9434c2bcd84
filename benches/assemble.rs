//! What's measured: a whole prompt assembly on the default catalog (routing, git and
//! environment context, layers, token counting, rendering), with the task embedding computed
//! (cache off) and cached, for each provisioned model. No memory store.
//!
//! Run with: `cargo bench --bench assemble`

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::Arc;
use switchyard::{AssembleOptions, AssemblerBuilder};

const TASK: &str = "fix the flaky login test and run the suite again";

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("assemble");
    group.sample_size(30);
    let options = AssembleOptions {
        root: Some(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
        ..AssembleOptions::default()
    };
    for (name, model) in common::models() {
        let index = common::default_index(model.as_ref(), dir.path(), name);
        for (label, cache) in [("computed", 0usize), ("cached", 256)] {
            let mut builder = AssemblerBuilder::new(&index);
            builder.router().cache_size(cache);
            let assembler = builder.build(Arc::clone(&model)).expect("assembler");
            assembler.assemble(TASK, &options).expect("warm up");
            group.bench_function(format!("{name}/embedding={label}"), |b| {
                b.iter(|| assembler.assemble(black_box(TASK), &options).expect("assemble"))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
