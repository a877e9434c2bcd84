//! multilingual-e5-small's tokenizer served from its mapped table gives the ids the `tokenizers`
//! crate gives parsing `tokenizer.json`, on every text this repository holds (tasks, catalogs,
//! attacks and benign look-alikes in many languages) and on edge cases: empty and blank texts,
//! special tokens written in the text, unknown characters, control characters, long inputs cut
//! at the model's limit; and, where `../shared/data` is present, on every string of its
//! third-party sets. Skips without the provisioned model, unless `SWITCHYARD_REQUIRE_MODELS=1`.
#![cfg(feature = "candle")]
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use std::path::{Path, PathBuf};
use switchyard_embed::{BertEmbedder, Embedder, LoadSource};
use tokenizers::{Tokenizer, TruncationParams};

fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(o) => o.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// Every string in the JSON-lines files under `dirs`.
fn corpus(dirs: &[PathBuf]) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = dirs.to_vec();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for file in files {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                strings(&v, &mut out);
            }
        }
    }
    out
}

fn edge_cases() -> Vec<String> {
    let mut out: Vec<String> = [
        "",
        " ",
        "   \t\n  ",
        "<s>",
        "hello </s> world <pad>",
        "a <mask> b",
        "x<unk>y",
        "\u{0}\u{7}bell",
        "emoji 🤖🚀 and ZWJ 👩‍💻",
        "combining e\u{301} vs é; ﬁ ligature; ＦＵＬＬ width",
        "RTL: مرحبا بالعالم; Hebrew: שלום",
        "Thai: สวัสดีครับ; Khmer: សួស្តី",
        "\u{feff}BOM and NBSP\u{a0}here and\u{2028}line sep",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters; 𓀀 hieroglyph; \u{10ffff}",
    ]
    .map(String::from)
    .to_vec();
    out.push("long input that runs past the limit ".repeat(200));
    out.push("日本語のテキスト".repeat(300));
    out
}

#[test]
fn the_mapped_e5_tokenizer_gives_the_crates_ids_on_every_text() {
    let Some(model) = common::model_or_skip("e5-small") else { return };
    let ours = BertEmbedder::load(&model).unwrap();
    // The first load of a fresh checkout builds the table; any later load maps it.
    let source = ours.load_timings().tokenizer_source;
    assert!(matches!(source, LoadSource::Mapped | LoadSource::Built), "{source:?}");
    let again = BertEmbedder::load(&model).unwrap();
    assert_eq!(again.load_timings().tokenizer_source, LoadSource::Mapped);

    let mut reference = Tokenizer::from_file(model.path(&model.spec.tokenizer)).unwrap();
    reference.with_padding(None);
    let max_length = ours.info().max_tokens;
    reference.with_truncation(Some(TruncationParams { max_length, ..Default::default() })).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ours_dirs = ["tests", "manifests", "build-index"].map(|d| root.join(d));
    let shared = root.join("../shared/data");
    if !shared.is_dir() {
        eprintln!("{} is absent: comparing on this repository's texts only", shared.display());
    }
    let texts: Vec<String> =
        corpus(&ours_dirs).into_iter().chain(corpus(&[shared])).chain(edge_cases()).collect();
    assert!(texts.len() > 2000, "only {} texts found", texts.len());
    let mut wrong = Vec::new();
    for text in &texts {
        let want = reference.encode(text.as_str(), false).unwrap().get_ids().to_vec();
        if ours.piece_ids(text).unwrap() != Some(want) {
            wrong.push(format!("pieces of {text:?}"));
        }
        let prefixed = format!("{}{text}", model.spec.prefix);
        let want = reference.encode(prefixed, true).unwrap().get_ids().to_vec();
        if ours.token_ids(text).unwrap() != want {
            wrong.push(format!("ids of {text:?}"));
        }
    }
    eprintln!("{} texts compared, {} differ", texts.len(), wrong.len());
    assert!(wrong.is_empty(), "{} of {} differ:\n{}", wrong.len(), texts.len(), wrong.join("\n"));
}
