//! Helpers of the manifest tests: a manifest folder from (path, text) pairs, and the error a
//! folder's load gives with the folder's path written `DIR`.
#![allow(clippy::unwrap_used, dead_code)] // test helpers: a panic is the failure report

use switchyard_manifest::Catalog;

/// A temporary manifest folder holding `files` (paths may name subfolders).
pub fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

/// The catalog of a folder holding `files`.
pub fn load(files: &[(&str, &str)]) -> Catalog {
    Catalog::load(folder(files).path()).unwrap()
}

/// The error loading a folder holding `files` gives, its path written `DIR`.
pub fn err(files: &[(&str, &str)]) -> String {
    let dir = folder(files);
    let e = Catalog::load(dir.path()).unwrap_err().to_string();
    e.replace(&dir.path().display().to_string(), "DIR")
}
