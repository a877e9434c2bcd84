//! The packed image beside a model's weights: written by the first load, mapped by the next, and
//! never used when it does not fit (damaged, truncated, another layout version, another kernel
//! or storage, another model): the load rebuilds it, says why, and gives the same vectors.
//! Runs on a copy of the MiniLM folder (its large files linked, not copied). Skips without the
//! provisioned model, unless `SWITCHYARD_REQUIRE_MODELS=1`.
#![cfg(feature = "candle")]
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use std::path::{Path, PathBuf};
use switchyard_embed::{BertEmbedder, Embedder, LoadSource, ResolvedModel, from_dir};

const TEXT: &str = "roll back the payments deployment";

fn model_copy() -> Option<(tempfile::TempDir, ResolvedModel)> {
    let source = common::model_or_skip("minilm")?;
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&source.dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.contains("switchyard") {
            continue; // this folder starts with no prepared file
        }
        let to = dir.path().join(&name);
        if name == "model.toml" {
            std::fs::copy(entry.path(), to).unwrap();
        } else {
            std::os::unix::fs::symlink(entry.path(), to).unwrap();
        }
    }
    let model = from_dir(dir.path()).unwrap();
    Some((dir, model))
}

fn image_of(e: &BertEmbedder) -> PathBuf {
    e.prepared_files()
        .iter()
        .find(|p| p.extension().is_some_and(|x| x == "switchyard-image"))
        .cloned()
        .unwrap()
}

fn rewrite(path: &Path, edit: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    edit(&mut bytes);
    // A new file in its place, as an editor or a bad copy would leave it.
    std::fs::remove_file(path).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A change made to an image's bytes.
type Edit = Box<dyn Fn(&mut Vec<u8>)>;

fn put(bytes: &mut [u8], at: usize, text: &[u8]) {
    bytes[at..at + 16].fill(0);
    bytes[at..at + text.len()].copy_from_slice(text);
}

#[test]
fn the_image_is_written_once_then_mapped_and_a_bad_one_is_rebuilt() {
    let Some((_dir, model)) = model_copy() else { return };
    let first = BertEmbedder::load(&model).unwrap();
    assert_eq!(first.load_timings().weights_source, LoadSource::Built);
    let want = first.embed(TEXT).unwrap();
    let image = image_of(&first);
    assert!(image.starts_with(&model.dir), "{}", image.display());
    let mapped = BertEmbedder::load(&model).unwrap();
    assert_eq!(mapped.load_timings().weights_source, LoadSource::Mapped);
    assert_eq!(mapped.load_timings().pack_ms, 0.0);
    assert_eq!(
        mapped.embed(TEXT).unwrap(),
        want,
        "mapped vectors are the packed ones, bit for bit"
    );

    let cases: [(&str, Edit); 8] = [
        ("packed from another weight file", Box::new(|b: &mut Vec<u8>| b[136] ^= 1)),
        ("a flipped byte", Box::new(|b: &mut Vec<u8>| b[4096] ^= 0x10)),
        ("truncated", Box::new(|b: &mut Vec<u8>| b.truncate(b.len() - 100))),
        ("another layout version", Box::new(|b: &mut Vec<u8>| b[8] = b[8].wrapping_add(1))),
        ("packed for another kernel", Box::new(|b: &mut Vec<u8>| put(b, 112, b"avx10"))),
        ("another weight storage", Box::new(|b: &mut Vec<u8>| put(b, 96, b"f64"))),
        ("another model", Box::new(|b: &mut Vec<u8>| b[32..96].fill(b'7'))),
        ("not an image", Box::new(|b: &mut Vec<u8>| *b = b"hello".to_vec())),
    ];
    for (case, edit) in cases {
        rewrite(&image, edit);
        let again = BertEmbedder::load(&model).unwrap();
        assert_eq!(again.load_timings().weights_source, LoadSource::Built, "{case}");
        assert_eq!(again.embed(TEXT).unwrap(), want, "{case}: vectors after the rebuild");
        let next = BertEmbedder::load(&model).unwrap();
        assert_eq!(next.load_timings().weights_source, LoadSource::Mapped, "{case}: rebuilt image");
    }
}

#[test]
fn a_folder_that_cannot_be_written_costs_speed_not_correctness() {
    let Some((dir, model)) = model_copy() else { return };
    let reference = BertEmbedder::load(&model).unwrap();
    let want = reference.embed(TEXT).unwrap();
    let image = image_of(&reference);
    std::fs::remove_file(&image).unwrap();
    std::fs::create_dir(&image).unwrap(); // a folder where the image should go
    let loaded = BertEmbedder::load(&model).unwrap();
    assert_eq!(loaded.load_timings().weights_source, LoadSource::Built);
    assert!(loaded.prepared_files().iter().all(|p| p != &image));
    assert_eq!(loaded.embed(TEXT).unwrap(), want);
    drop(dir);
}
