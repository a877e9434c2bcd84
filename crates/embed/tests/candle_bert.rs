//! Our BERT forward (which keeps Q4_0 tables quantized and shares one code path across weight
//! formats) against candle-transformers' own `BertModel` on the same MiniLM weights, with f16
//! storage: the pooled vectors must agree to cosine >= 0.99999. Skips without a provisioned model, unless
//! `SWITCHYARD_REQUIRE_MODELS=1`.
#![cfg(feature = "candle")]
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use candle_core::{DType, Device, Tensor};
use candle_transformers::models::bert::{BertModel, Config};
use switchyard_embed::{CandleEmbedder, Embedder, resolve};

#[test]
fn our_encoder_matches_candle_transformers_bert() {
    let model = match resolve("minilm") {
        Ok(m) => m,
        Err(e) => {
            assert!(std::env::var("SWITCHYARD_REQUIRE_MODELS").as_deref() != Ok("1"), "{e}");
            eprintln!("skipping: {e}");
            return;
        }
    };
    // The float path: the default integer products are measured against the references
    // instead (`tests/reference.rs`, `i8_products_keep_minilm_within_the_reference_bar`).
    // SAFETY: the only test of this binary, before anything reads the environment.
    unsafe { std::env::set_var("SWITCHYARD_WEIGHTS", "f16") };
    let ours = CandleEmbedder::load(&model).unwrap();
    let config: Config =
        serde_json::from_str(&std::fs::read_to_string(model.dir.join("config.json")).unwrap())
            .unwrap();
    let tensors =
        candle_core::safetensors::load(model.dir.join("model.safetensors"), &Device::Cpu).unwrap();
    let vb = candle_nn::VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
    let reference = BertModel::load(vb, &config).unwrap();
    for text in ["fix the flaky login test", "Ränder: 日本語のテキストも大丈夫？", "a b c"]
    {
        let ids = ours.token_ids(text).unwrap();
        let n = ids.len();
        let input = Tensor::from_vec(ids, (1, n), &Device::Cpu).unwrap();
        let hidden = reference.forward(&input, &input.zeros_like().unwrap(), None).unwrap();
        let pooled: Vec<f32> = hidden.mean(1).unwrap().squeeze(0).unwrap().to_vec1().unwrap();
        let mine = ours.embed(text).unwrap();
        let norm = pooled.iter().map(|x| x * x).sum::<f32>().sqrt();
        let cos: f32 = mine.iter().zip(&pooled).map(|(a, b)| a * b / norm).sum();
        assert!(cos >= 0.99999, "{text:?}: cosine {cos}");
    }
}
