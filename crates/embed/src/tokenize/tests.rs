//! The table's life (built, mapped, refused and rebuilt) on a small Unigram tokenizer written
//! here, and its ids against the `tokenizers` crate reading the same file. The same comparison on
//! multilingual-e5-small's real 250k-piece tokenizer is `tests/mapped_tokenizer.rs`.
#![allow(clippy::unwrap_used)]

use super::*;

const SHA: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn unigram_json() -> String {
    let pieces = [
        ("<unk>", 0.0),
        ("<s>", 0.0),
        ("</s>", 0.0),
        ("▁", -2.0),
        ("▁a", -3.0),
        ("▁ab", -4.0),
        ("a", -3.5),
        ("b", -3.5),
        ("c", -4.5),
        ("bc", -4.0),
        ("▁the", -2.5),
        ("▁cat", -3.0),
        ("ca", -5.0),
        ("t", -4.0),
        ("日本", -6.0),
        ("日", -7.0),
        ("▁a", -1.0),
    ];
    let vocab: Vec<serde_json::Value> =
        pieces.iter().map(|(p, s)| serde_json::json!([p, s])).collect();
    let added: Vec<serde_json::Value> = ["<unk>", "<s>", "</s>"]
        .iter()
        .enumerate()
        .map(|(i, c)| {
            serde_json::json!({"id": i, "content": c, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFKC"},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}
        ]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "add_prefix_space": true},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]},
                               "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}},
        "decoder": {"type": "Metaspace", "replacement": "▁", "add_prefix_space": true},
        "model": {"type": "Unigram", "unk_id": 0, "vocab": vocab}
    })
    .to_string()
}

const TEXTS: [&str; 12] = [
    "the cat",
    "a abc  bc",
    "",
    "   ",
    "xyz the cat",
    "日本日日本 cat",
    "<s> the </s>",
    "ｔｈｅ ｃａｔ",
    "ab\tcab\n the",
    "thecat",
    "zz日q",
    "a<s>b",
];

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, unigram_json()).unwrap();
    (dir, path)
}

fn ids(t: &TextTokenizer, special: bool) -> Vec<Vec<u32>> {
    TEXTS.iter().map(|x| t.ids(x, special).unwrap()).collect()
}

fn reference(path: &Path, special: bool) -> Vec<Vec<u32>> {
    let t = TextTokenizer::Parsed(Box::new(Tokenizer::from_file(path).unwrap()));
    ids(&t, special)
}

#[test]
fn the_mapped_tokenizer_gives_the_ids_the_tokenizers_crate_gives() {
    let (_dir, path) = setup();
    let built = load(&path, SHA).unwrap();
    assert_eq!(built.source, LoadSource::Built);
    let mapped = load(&path, SHA).unwrap();
    assert_eq!(mapped.source, LoadSource::Mapped);
    for special in [true, false] {
        let want = reference(&path, special);
        assert_eq!(ids(&built.tokenizer, special), want, "built, special tokens {special}");
        assert_eq!(ids(&mapped.tokenizer, special), want, "mapped, special tokens {special}");
    }
    // Unknown characters fuse into one <unk>; a repeated piece answers its later id.
    assert_eq!(mapped.tokenizer.ids("zz", false).unwrap(), vec![3, 0]);
    assert_eq!(mapped.tokenizer.ids("a", false).unwrap(), vec![16]);
    assert_eq!(mapped.tokenizer.token_to_id("<s>"), Some(1));
}

#[test]
fn truncation_keeps_the_special_tokens_as_the_crate_does() {
    let (_dir, path) = setup();
    let mut ours = load(&path, SHA).unwrap().tokenizer;
    let mut theirs = TextTokenizer::Parsed(Box::new(Tokenizer::from_file(&path).unwrap()));
    ours.limit(4).unwrap();
    theirs.limit(4).unwrap();
    let long = "the cat the cat the cat";
    assert_eq!(ours.ids(long, true).unwrap().len(), 4);
    assert_eq!(ours.ids(long, true).unwrap(), theirs.ids(long, true).unwrap());
    assert_eq!(ours.ids(long, false).unwrap(), theirs.ids(long, false).unwrap());
}

/// Loads after `spoil` changed something, and says what the load reported.
fn reload_after(spoil: impl FnOnce(&Path, &Path)) -> (LoadSource, String, bool) {
    let (_dir, path) = setup();
    load(&path, SHA).unwrap();
    spoil(&path, &table_path(&path));
    let again = load(&path, SHA).unwrap();
    let right = ids(&again.tokenizer, true) == reference(&path, true);
    let next = load(&path, SHA).unwrap().source;
    assert_eq!(next, LoadSource::Mapped, "the rebuilt table serves the next load");
    (again.source, again.note.unwrap_or_default(), right)
}

#[test]
fn a_damaged_truncated_old_or_stale_table_is_rebuilt_never_used() {
    let flip = |_: &Path, table: &Path| {
        let mut b = std::fs::read(table).unwrap();
        let at = b.len() / 2;
        b[at] ^= 0x40;
        std::fs::write(table, b).unwrap();
    };
    let truncate = |_: &Path, table: &Path| {
        let b = std::fs::read(table).unwrap();
        std::fs::write(table, &b[..b.len() - 10]).unwrap();
    };
    let old_version = |_: &Path, table: &Path| {
        let mut b = std::fs::read(table).unwrap();
        b[8..12].copy_from_slice(&(table::VERSION + 1).to_le_bytes());
        std::fs::write(table, b).unwrap();
    };
    let edited_source = |source: &Path, _: &Path| {
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        let f = std::fs::File::options().write(true).open(source).unwrap();
        f.set_modified(later).unwrap();
    };
    let foreign = |source: &Path, table: &Path| {
        // The table of another tokenizer file, copied in beside this one.
        let other = source.with_file_name("other.json");
        std::fs::write(&other, unigram_json().replace("▁cat", "▁dog")).unwrap();
        load(&other, SHA).unwrap();
        std::fs::copy(table_path(&other), table).unwrap();
    };
    let not_a_table = |_: &Path, table: &Path| std::fs::write(table, b"hello").unwrap();
    for (case, spoil, says) in [
        ("flipped byte", Box::new(flip) as Box<dyn FnOnce(&Path, &Path)>, "damaged"),
        ("truncated", Box::new(truncate), "truncated"),
        ("other layout version", Box::new(old_version), "version"),
        ("tokenizer edited", Box::new(edited_source), "stale"),
        ("another tokenizer's table", Box::new(foreign), "stale"),
        ("not a table", Box::new(not_a_table), "magic"),
    ] {
        let (source, note, right) = reload_after(spoil);
        assert_eq!(source, LoadSource::Built, "{case}");
        assert!(note.contains(says) && note.contains("rebuilt"), "{case}: {note}");
        assert!(right, "{case}: ids after the rebuild");
    }
}

#[test]
fn a_table_that_cannot_be_written_costs_speed_not_correctness() {
    let (_dir, path) = setup();
    std::fs::create_dir(table_path(&path)).unwrap(); // a folder where the file should go
    let loaded = load(&path, SHA).unwrap();
    assert_eq!(loaded.source, LoadSource::Built);
    assert!(loaded.note.unwrap().contains("could not be written"));
    assert_eq!(ids(&loaded.tokenizer, true), reference(&path, true));
}

#[test]
fn a_tokenizer_that_is_not_unigram_is_parsed_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    let wordpiece = serde_json::json!({
        "version": "1.0", "added_tokens": [],
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {"[UNK]": 0, "run": 1, "##s": 2}}
    });
    std::fs::write(&path, wordpiece.to_string()).unwrap();
    let loaded = load(&path, SHA).unwrap();
    assert_eq!(loaded.source, LoadSource::Parsed);
    assert_eq!(loaded.tokenizer.ids("runs", false).unwrap(), vec![1, 2]);
    assert!(!table_path(&path).exists());
}

#[test]
fn a_broken_tokenizer_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, "{ not json").unwrap();
    let err = load(&path, SHA).err().unwrap().to_string();
    assert!(err.contains("tokenizer.json"), "{err}");
}
