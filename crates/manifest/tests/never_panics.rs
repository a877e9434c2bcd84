//! A manifest folder damaged in any way loads or is refused with an error that names one of its
//! files and a line inside that file: loading never panics, and what a build reads next (the
//! texts, the content hash, the screen checks, the scaffolds) never panics on what loaded.
//!
//! The damage is random edits of the default catalog's own files (bytes removed, inserted,
//! overwritten, lines doubled, files cut short), so every parser and every rule after it sees
//! near-valid input, where panics hide, rather than noise a parser rejects at byte one.
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use switchyard_manifest::{Catalog, ManifestError, ScreenChecks};

/// An MCP server's tool list beside `tools.toml`, so that the JSON reader is damaged too.
const TOOLS_JSON: &str = r#"{
  "tools": [
    {
      "name": "getForecast",
      "description": "Get the weather forecast for a city.",
      "inputSchema": {
        "type": "object",
        "properties": { "city": { "type": "string", "description": "City name" } },
        "required": ["city"]
      }
    },
    { "name": "list_alerts", "inputSchema": { "type": "object" } }
  ]
}"#;

const OFF_TOPIC: &str = "serves = [\"jokes\", \"word meanings\"]\n";

/// Text that parsers and rules treat specially: quotes, table headers, escapes, keys the files
/// use, empty and very long values, control characters, text in other scripts, combining marks,
/// right-to-left marks, byte order marks and lone continuation bytes.
const FRAGMENTS: &[&[u8]] = &[
    b"\"",
    b"'",
    b"\"\"\"",
    b"\n[[tool]]\n",
    b"\n[[mode]]\nname = \"x\"\n",
    b"\n[[skill]]\n",
    b"\n[[attack]]\n",
    b"\n[[benign]]\n",
    b"\n[[thinking]]\n",
    b"name = \"\"\n",
    b"modes = []\n",
    b"modes = [\"nowhere\"]\n",
    b"default = true\n",
    b"body = \"../../etc/passwd\"\n",
    b"body = \"/\"\n",
    b"scaffold = \"\"\n",
    b"keywords = [\"\", \" \"]\n",
    b"\\u{D800}",
    b"\\uD800",
    b"\\",
    b"=",
    b"]]",
    b"{",
    b"}",
    b",",
    b"\0",
    b"\r\n",
    b"\t",
    b"\xEF\xBB\xBF",
    b"\x80",
    b"\xC3",
    b"\xF0\x9F",
    "\u{202E}".as_bytes(),
    "e\u{301}\u{301}\u{301}".as_bytes(),
    "ツール 工具 أداة".as_bytes(),
    "🦀🦀🦀".as_bytes(),
    b"{problem}",
    b"## Success Criteria\n- \n",
    b"null",
    b"1e999",
    b"-0",
];

/// One edit of a file's bytes; positions are fractions of its length, so that every edit lands
/// inside whatever the earlier edits left.
#[derive(Debug, Clone)]
enum Edit {
    Remove { at: f64, len: usize },
    Insert { at: f64, fragment: usize, times: usize },
    Overwrite { at: f64, byte: u8 },
    DoubleLine { at: f64 },
    CutShort { at: f64 },
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0.0..1.0f64, 1..40usize).prop_map(|(at, len)| Edit::Remove { at, len }),
        (0.0..1.0f64, 0..FRAGMENTS.len(), prop_oneof![4 => Just(1usize), 1 => Just(20_000usize)])
            .prop_map(|(at, fragment, times)| Edit::Insert { at, fragment, times }),
        (0.0..1.0f64, any::<u8>()).prop_map(|(at, byte)| Edit::Overwrite { at, byte }),
        (0.0..1.0f64).prop_map(|at| Edit::DoubleLine { at }),
        (0.0..1.0f64).prop_map(|at| Edit::CutShort { at }),
    ]
}

fn apply(bytes: &mut Vec<u8>, edit: &Edit) {
    let pos = |at: f64, len: usize| ((at * len as f64) as usize).min(len);
    match *edit {
        Edit::Remove { at, len } => {
            let start = pos(at, bytes.len());
            let end = (start + len).min(bytes.len());
            bytes.drain(start..end);
        }
        Edit::Insert { at, fragment, times } => {
            let start = pos(at, bytes.len());
            let text = FRAGMENTS[fragment].repeat(times);
            bytes.splice(start..start, text);
        }
        Edit::Overwrite { at, byte } => {
            if !bytes.is_empty() {
                let i = pos(at, bytes.len() - 1);
                bytes[i] = byte;
            }
        }
        Edit::DoubleLine { at } => {
            let i = pos(at, bytes.len());
            let start = bytes[..i].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
            let end =
                bytes[i..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |p| i + p + 1);
            let line = bytes[start..end].to_vec();
            bytes.splice(end..end, line);
        }
        Edit::CutShort { at } => bytes.truncate(pos(at, bytes.len())),
    }
}

/// The files a damaged folder may have damaged: the default catalog's, and two it lacks.
const DAMAGEABLE: &[&str] = &[
    "tools.toml",
    "modes.toml",
    "skills.toml",
    "injection.toml",
    "thinking.toml",
    "constitution.md",
    "screen_checks.toml",
    "off_topic.toml",
    "tools.json",
];

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The default catalog, with an MCP tool list and an `off_topic.toml` beside it.
fn whole_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let manifests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../manifests");
    copy_tree(&manifests, dir.path());
    std::fs::write(dir.path().join("tools.json"), TOOLS_JSON).unwrap();
    std::fs::write(dir.path().join("off_topic.toml"), OFF_TOPIC).unwrap();
    dir
}

/// Whatever a build reads from a catalog that loaded; none of it may panic.
fn read_like_a_build(dir: &Path, mut catalog: Catalog) {
    for tool in &catalog.tools {
        let _ = (tool.texts(), tool.card(), tool.document(), tool.name_words());
    }
    for skill in &catalog.skills {
        let _ = (skill.texts(), skill.document());
    }
    for mode in &catalog.modes {
        let _ = mode.texts();
    }
    let _ = (catalog.content_hash(), catalog.default_mode());
    let _ = catalog.use_built_in_attacks().unwrap();
    let _ = catalog.use_built_in_thinking().unwrap();
    for thinking in &catalog.thinking {
        let _ = (thinking.texts(), thinking.render("why is the build slow?"));
    }
    if let Err(e) = ScreenChecks::load(dir) {
        names_a_line_of_a_file_in(dir, &e);
    }
}

/// The error names a file of the folder (or the folder itself) and, where it gives a line, a
/// line that file has.
fn names_a_line_of_a_file_in(dir: &Path, error: &ManifestError) {
    let text = error.to_string();
    let (path, line): (&PathBuf, Option<usize>) = match error {
        ManifestError::Io { path, .. } => (path, None),
        ManifestError::NoTools { dir } => (dir, None),
        ManifestError::Parse { path, line, .. } | ManifestError::Invalid { path, line, .. } => {
            (path, Some(*line))
        }
        other => panic!("an error of a kind this test does not know: {other}"),
    };
    assert!(path.starts_with(dir), "{text}: the error names no file of the folder");
    assert!(!text.trim().is_empty());
    if let Some(line) = line {
        assert!(line >= 1, "{text}: lines are counted from 1");
        if path.is_file() {
            let lines = std::fs::read(path).unwrap().iter().filter(|&&b| b == b'\n').count() + 1;
            assert!(line <= lines, "{text}: the file has {lines} lines");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn a_damaged_manifest_folder_is_loaded_or_refused_with_its_file_and_line_never_a_panic(
        file in 0..DAMAGEABLE.len(),
        edits in prop::collection::vec(edit(), 1..5),
    ) {
        let dir = whole_folder();
        let path = dir.path().join(DAMAGEABLE[file]);
        let mut bytes = std::fs::read(&path).unwrap();
        for e in &edits {
            apply(&mut bytes, e);
        }
        std::fs::write(&path, &bytes).unwrap();
        match Catalog::load(dir.path()) {
            Ok(catalog) => read_like_a_build(dir.path(), catalog),
            Err(e) => names_a_line_of_a_file_in(dir.path(), &e),
        }
    }
}

#[test]
fn the_undamaged_folder_loads_so_the_damage_is_what_the_property_tests() {
    let dir = whole_folder();
    let catalog = Catalog::load(dir.path()).unwrap();
    assert!(catalog.tools.iter().any(|t| t.name == "getForecast"), "tools.json was read");
    assert!(!catalog.off_topic.is_default(), "off_topic.toml was read");
    read_like_a_build(dir.path(), catalog);
}
