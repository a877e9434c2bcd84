//! The token states an embedder keeps for late interaction: one forward pass gives the text's
//! vector (the same bits as `embed`) and its content tokens' unit-length states, without the
//! prefix and the special tokens, on both models and both sides (tasks and catalog documents).
//!
//! Needs provisioned models; skips without them unless `SWITCHYARD_REQUIRE_MODELS=1`.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report
#![cfg(feature = "candle")]

mod common;

use switchyard_embed::{BertEmbedder, EmbedOptions, Embedder, EngineChoice};

fn load_or_skip(name: &str) -> Option<BertEmbedder> {
    load_with_or_skip(name, &EmbedOptions::default())
}

fn load_with_or_skip(name: &str, options: &EmbedOptions) -> Option<BertEmbedder> {
    let m = common::model_or_skip(name)?;
    Some(BertEmbedder::load_with(&m, options).expect("model loads"))
}

const TEXTS: [&str; 5] = [
    "did 7702 go out already?",
    "o pedido 4410 já saiu?",
    "restart deployment: Restart a Kubernetes deployment in a namespace.",
    "¿qué transportista nos sale más barato para Portugal?",
    "",
];

#[test]
fn each_text_keeps_its_vector_and_its_content_tokens() {
    let candle = EmbedOptions { engine: EngineChoice::Candle, ..EmbedOptions::default() };
    for (model, options) in [
        ("minilm", EmbedOptions::default()),
        ("e5-small", EmbedOptions::default()),
        ("e5-small", candle),
    ] {
        let Some(e) = load_with_or_skip(model, &options) else { return };
        let model = format!("{model} ({:?})", options.engine);
        for documents in [false, true] {
            let kept = e.embed_with_tokens(&TEXTS, documents).unwrap().expect("a BERT has states");
            assert_eq!(kept.len(), TEXTS.len());
            for (k, text) in kept.iter().zip(TEXTS) {
                let at = format!("{model}, documents {documents}, {text:?}");
                // The candle engine pads a batch, which moves the last bits; a text alone is
                // the contract on both engines.
                let alone =
                    if documents { e.embed_documents(&[text]) } else { e.embed_batch(&[text]) };
                let alone = alone.unwrap().pop().unwrap();
                assert_eq!(k.vector, alone, "the vector is embed's, bit for bit: {at}");
                // The tokenizer's pieces of the text alone: no prefix, no special token.
                let pieces = e.piece_ids(text).unwrap().unwrap();
                assert_eq!(k.ids, pieces, "content tokens: {at}");
                assert_eq!(k.states.len(), k.ids.len() * k.dim(), "{at}");
                for i in 0..k.ids.len() {
                    let norm: f32 = k.state(i).iter().map(|x| x * x).sum::<f32>().sqrt();
                    assert!((norm - 1.0).abs() < 1e-4, "unit states: {at}, token {i}: {norm}");
                }
            }
        }
    }
}

#[test]
fn a_token_state_depends_on_its_context() {
    // Late interaction is worth keeping only if a state is not the word's fixed vector.
    let Some(e) = load_or_skip("e5-small") else { return };
    let kept =
        e.embed_with_tokens(&["bank of the river", "bank transfer fee"], false).unwrap().unwrap();
    let (a, b) = (&kept[0], &kept[1]);
    assert_eq!(a.ids[0], b.ids[0], "both texts start with the same piece");
    let cos: f32 = a.state(0).iter().zip(b.state(0)).map(|(x, y)| x * y).sum();
    assert!(cos < 0.999, "the first piece's states differ with its context: {cos}");
}
