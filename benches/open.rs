//! What's measured: opening an index file (mmap + header/section validation + metadata decode),
//! with payload checksums verified (the default) and skipped (hot start), on an index the size
//! of the default catalog (415 rows, d = 384) and on 10k rows.
//!
//! Run with: `cargo bench --bench open`

use criterion::{Criterion, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::StdRng};
use std::hint::black_box;
use switchyard_format::*;

fn write_index(dir: &std::path::Path, rows: usize, dim: usize) -> std::path::PathBuf {
    let mut rng = StdRng::seed_from_u64(42);
    let mut data = Vec::with_capacity(rows * dim);
    for _ in 0..rows {
        let v: Vec<f32> = (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        data.extend(v.iter().map(|x| x / n));
    }
    let meta = IndexMeta {
        model: ModelMeta {
            name: "bench".into(),
            prefix: String::new(),
            dim: dim as u32,
            max_tokens: 256,
            pooling: "mean".into(),
            fingerprint: "00".repeat(16),
        },
        manifest_hash: String::new(),
        tools: vec![ItemMeta {
            name: "t".into(),
            description: "d".into(),
            modes: vec!["any".into()],
            first_row: 0,
            row_count: rows as u32,
            parameters: None,
            body: None,
        }],
        skills: vec![],
        modes: vec![],
        default_mode: "act".into(),
        injections: vec![],
        benign: vec![],
        thresholds: Thresholds {
            tool_min: 0.2,
            skill_min: 0.2,
            mode_min: 0.2,
            injection: 0.5,
            memory_min: 0.2,
            unrelated_mean: 0.1,
            related_mean: 0.4,
        },
        string_base: vec![0, rows as u32, rows as u32, rows as u32, rows as u32],
    };
    let mut w = IndexWriter::new(dim, [0; 16]);
    w.matrix(SectionKind::Tools, data)
        .expect("unit rows")
        .strings((0..rows).map(|i| format!("row {i}")).collect())
        .meta(&meta)
        .expect("meta");
    let path = dir.join(format!("bench-{rows}.idx"));
    w.write(&path).expect("write");
    path
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("open");
    for rows in [415usize, 10_000] {
        let path = write_index(dir.path(), rows, 384);
        group.bench_function(format!("n={rows}/d=384/verify"), |b| {
            b.iter(|| Index::open(black_box(&path), &OpenOptions::new()).expect("open"))
        });
        group.bench_function(format!("n={rows}/d=384/no-verify"), |b| {
            b.iter(|| {
                Index::open(black_box(&path), OpenOptions::new().verify_payload(false))
                    .expect("open")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
