//! Shared set-up of the model benches: the models (skipped with a message when not
//! provisioned) and a default-catalog index built once per model.

#![allow(dead_code)] // each bench uses a subset

use std::path::PathBuf;
use std::sync::Arc;
use switchyard_embed::Embedder;

/// The provisioned models among `minilm` and `e5-small`.
///
/// The `SWITCHYARD_*` variables apply (`SWITCHYARD_KERNEL=avx2` measures the AVX2 kernels on a
/// CPU that has AVX-512), as they do for the CLI.
pub fn models() -> Vec<(&'static str, Arc<dyn Embedder>)> {
    let options = switchyard_embed::EmbedOptions::from_vars(|v| std::env::var(v).ok())
        .unwrap_or_else(|e| panic!("{e}"));
    ["minilm", "e5-small"]
        .into_iter()
        .filter_map(|name| match switchyard_embed::load_with(name, &options) {
            Ok(m) => Some((name, Arc::new(m) as Arc<dyn Embedder>)),
            Err(e) => {
                eprintln!("skipping {name}: {e} (run `python3 models/provision.py`)");
                None
            }
        })
        .collect()
}

/// Builds the default catalog's index for `model` under `dir`.
pub fn default_index(model: &dyn Embedder, dir: &std::path::Path, name: &str) -> PathBuf {
    let out = dir.join(format!("{name}.idx"));
    let manifests = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("manifests");
    switchyard_build_index::build_to_file(&manifests, &out, model, &Default::default())
        .expect("building the default index");
    out
}

/// A task of exactly `tokens` tokens as `model` counts them (special tokens included), made of
/// words of an ordinary engineering request.
pub fn task_of(model: &dyn Embedder, tokens: usize) -> String {
    const WORDS: &str = "please fix the flaky login test in the auth module then run the whole \
        suite again and check that the retry logic still handles timeouts from the payment \
        service before you commit the change with a clear message and open a pull request \
        for review by the platform team who own the deployment pipeline and its configuration \
        files in the infrastructure repository next to the service code";
    let words: Vec<&str> = WORDS.split_whitespace().cycle().take(400).collect();
    let mut text = String::new();
    for w in words {
        let next = if text.is_empty() { w.to_string() } else { format!("{text} {w}") };
        if model.count_tokens(&next).expect("tokenize") > tokens {
            break;
        }
        text = next;
    }
    text
}
