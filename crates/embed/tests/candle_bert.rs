//! Our BERT forward (which keeps Q4_0 tables quantized and shares one code path across weight
//! formats) against candle-transformers' own `BertModel` on the same MiniLM weights, for every
//! weight storage, chosen through `EmbedOptions` (no environment): exact f32 and f16 must agree
//! to cosine >= 0.99999, 8-bit weights (q8) and integer products (i8) within their documented
//! bars. Skips without a provisioned model, unless `SWITCHYARD_REQUIRE_MODELS=1`.
#![cfg(feature = "candle")]
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use candle_core::{DType, Device, Tensor};
use candle_transformers::models::bert::{BertModel, Config};
use switchyard_embed::{BertEmbedder, EmbedOptions, Embedder, WeightsChoice};

#[test]
fn our_encoder_matches_candle_transformers_bert() {
    let Some(model) = common::model_or_skip("minilm") else { return };
    let config: Config =
        serde_json::from_str(&std::fs::read_to_string(model.dir.join("config.json")).unwrap())
            .unwrap();
    let tensors =
        candle_core::safetensors::load(model.dir.join("model.safetensors"), &Device::Cpu).unwrap();
    let vb = candle_nn::VarBuilder::from_tensors(tensors, DType::F32, &Device::Cpu);
    let reference = BertModel::load(vb, &config).unwrap();
    for (weights, bar) in [
        (WeightsChoice::F32, 0.99999),
        (WeightsChoice::F16, 0.99999),
        (WeightsChoice::Q8, 0.9995),
        (WeightsChoice::I8, 0.998),
    ] {
        let ours =
            BertEmbedder::load_with(&model, &EmbedOptions { weights, ..EmbedOptions::default() })
                .unwrap();
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
            assert!(cos >= bar, "{weights:?} {text:?}: cosine {cos}");
        }
    }
}
