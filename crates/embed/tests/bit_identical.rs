//! Our forward pass gives the same bits as the committed fixture (`tests/fixtures/vector-bits.json`)
//! for every weight storage, kernel and thread count on both models, whether the weights were
//! read and packed this load or mapped from the packed image an earlier load wrote; and a padded
//! batch gives each text the bits it gets alone.
//!
//! Why exact bits and not a cosine bar: an index stores vectors the builder computed, and a
//! route compares them with vectors computed later, maybe on another machine or thread count.
//! A refactor of the engine must not move a single bit. The fixture's hashes were first checked
//! against the command of the commit on which the engine's reshaping began (1c37d22; see
//! `benches/RESULTS.md`), so "unchanged" means unchanged since before it.
//!
//! The SIMD kernels (AVX-512 and AVX2) sum in one order and share a key; the portable kernel
//! sums in another and has its own. Threads split work by output rows, never inside a sum, so
//! every thread count must give the same bits. The kernel is chosen once per process, so the
//! test runs the CPU's best kernel itself and re-runs this binary once per other kernel.
//!
//! To re-record after a change that is meant to move bits: `SWITCHYARD_RECORD_BITS=1 cargo test
//! -p switchyard-embed --test bit_identical`, and say why in the commit. Skips without the
//! provisioned models, unless `SWITCHYARD_REQUIRE_MODELS=1`.
#![cfg(feature = "candle")]
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use switchyard_embed::{
    BertEmbedder, EmbedOptions, Embedder, KernelChoice, LoadSource, WeightsChoice, kernel_name,
    sha256_hex,
};

fn is_image(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e == "switchyard-image")
}

const TEST_NAME: &str = "vectors_are_bit_identical_to_the_fixture";
/// Set in the re-run child: which kernel it measures.
const CHILD_KERNEL: &str = "SWITCHYARD_TEST_KERNEL";
const MODELS: [&str; 2] = ["minilm", "e5-small"];
const STORAGES: [(WeightsChoice, &str); 4] = [
    (WeightsChoice::F32, "f32"),
    (WeightsChoice::F16, "f16"),
    (WeightsChoice::Q8, "q8"),
    (WeightsChoice::I8, "i8"),
];
const THREADS: [usize; 3] = [1, 2, 3];

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/vector-bits.json")
}

#[derive(serde::Deserialize, serde::Serialize)]
struct Fixture {
    about: String,
    texts: Vec<String>,
    /// `model/storage/kernel family` -> sha256 of the vectors' little-endian bits.
    sha256: BTreeMap<String, String>,
}

fn bits_hash(vectors: &[Vec<f32>]) -> String {
    let bytes: Vec<u8> = vectors.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
    sha256_hex(&bytes)
}

/// The fixture's key family for the kernel this process runs.
fn family() -> &'static str {
    if kernel_name() == "scalar" { "scalar" } else { "simd" }
}

/// Every hash this process can compute with `kernel`: (key, how, hash) per model, storage, thread
/// count, alone and batched.
fn measure(kernel: KernelChoice, texts: &[String]) -> Option<Vec<(String, String, String)>> {
    let mut out = Vec::new();
    for name in MODELS {
        let model = common::model_or_skip(name)?;
        for (weights, storage) in STORAGES {
            let options = EmbedOptions { weights, kernel, ..EmbedOptions::default() };
            // The first load reads and packs the weights (or maps an image an earlier run
            // left); the second maps the image: both must give the fixture's bits.
            let first = BertEmbedder::load_with(&model, &options).unwrap();
            let created: Vec<PathBuf> = match first.load_timings().weights_source {
                LoadSource::Built => {
                    first.prepared_files().iter().filter(|p| is_image(p)).cloned().collect()
                }
                _ => Vec::new(),
            };
            let second = BertEmbedder::load_with(&model, &options).unwrap();
            assert_eq!(
                second.load_timings().weights_source,
                LoadSource::Mapped,
                "{name} {storage}"
            );
            for (how, embedder) in [("", &first), (", from the image", &second)] {
                for threads in THREADS {
                    let pool =
                        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                    let (single, batch) = pool.install(|| {
                        let single: Vec<Vec<f32>> =
                            texts.iter().map(|t| embedder.embed(t).unwrap()).collect();
                        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                        (single, embedder.embed_batch(&refs).unwrap())
                    });
                    let key = format!("{name}/{storage}/{}", family());
                    out.push((key.clone(), format!("{threads} threads{how}"), bits_hash(&single)));
                    out.push((key, format!("{threads} threads, batched{how}"), bits_hash(&batch)));
                }
            }
            // Images of storages nobody uses by default would fill a CI runner's disk.
            for image in created {
                let _ = std::fs::remove_file(image);
            }
        }
    }
    Some(out)
}

fn check(kernel: KernelChoice) {
    let path = fixture_path();
    let mut fixture: Fixture =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let Some(measured) = measure(kernel, &fixture.texts) else { return };
    eprintln!("kernel {} ({} hashes)", kernel_name(), measured.len());
    if std::env::var("SWITCHYARD_RECORD_BITS").as_deref() == Ok("1") {
        for (key, _, hash) in &measured {
            fixture.sha256.insert(key.clone(), hash.clone());
        }
        let text = serde_json::to_string_pretty(&fixture).unwrap() + "\n";
        std::fs::write(&path, text).unwrap();
    }
    let mut wrong = Vec::new();
    for (key, how, hash) in &measured {
        match fixture.sha256.get(key) {
            Some(want) if want == hash => {}
            Some(want) => wrong.push(format!("{key} on {how}: {hash}, fixture {want}")),
            None => wrong.push(format!("{key}: not in {}", path.display())),
        }
    }
    assert!(wrong.is_empty(), "vectors moved:\n{}", wrong.join("\n"));
}

#[test]
fn vectors_are_bit_identical_to_the_fixture() {
    match std::env::var(CHILD_KERNEL).as_deref() {
        Ok("avx2") => return check(KernelChoice::Avx2),
        Ok("scalar") => return check(KernelChoice::Scalar),
        Ok(other) => panic!("{CHILD_KERNEL}={other}: expected avx2 or scalar"),
        Err(_) => {}
    }
    check(KernelChoice::Auto);
    // The other kernels each need a process of their own (the choice is process-wide).
    for kernel in ["avx2", "scalar"] {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD_KERNEL, kernel)
            .status()
            .unwrap();
        assert!(status.success(), "the {kernel} kernel's run failed (its output is above)");
    }
}
