//! The loaded index (an [`Assembler`] with its model) and its replacement when the index file
//! changes on disk: requests hold the engine they started with until they finish, so a reload
//! never drops or mixes one.

use crate::error::ServeError;
use std::path::Path;
use std::sync::Arc;
use switchyard::{Assembler, AssemblerBuilder};
use switchyard_embed::Embedder;

/// Loads a model by name (a short name, a folder...). The CLI passes one that reads its
/// encoder settings once; tests pass one that returns a small stand-in.
pub type ModelLoader =
    Arc<dyn Fn(&str) -> Result<Arc<dyn Embedder>, String> + Send + Sync + 'static>;

/// What identifies one version of the index file: a build-index output replaces the file
/// (a rename), which changes the inode, and usually the size and time too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

impl FileStamp {
    /// The stamp of `path` now, or `None` when it cannot be read (mid-replacement, deleted).
    pub fn of(path: &Path) -> Option<Self> {
        let m = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&m);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Self { len: m.len(), modified: m.modified().ok(), inode })
    }
}

/// One loaded version of the index.
pub struct Engine {
    /// The assembler; its router answers `/v1/route` and `/v1/screen`.
    pub assembler: Assembler,
    /// The file's stamp when it was opened.
    pub stamp: Option<FileStamp>,
    /// 1 for the first load, then one more per reload.
    pub generation: u64,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("index", &self.assembler.router().path())
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// The model in use.
    pub fn model(&self) -> &Arc<dyn Embedder> {
        self.assembler.router().embedder()
    }
}

/// Opens the index of `builder` and builds an assembler. The model is `current`'s when the
/// index was built with it (a reload of a rebuilt catalog loads nothing), else the one the
/// index records (or `model_override`) is loaded.
pub fn open_engine(
    builder: &AssemblerBuilder,
    model_override: Option<&str>,
    load: &ModelLoader,
    current: Option<&Arc<dyn Embedder>>,
    generation: u64,
) -> Result<Engine, ServeError> {
    let path = builder.index_path().to_path_buf();
    // Stamped before reading: a change while opening shows up as a new stamp next time.
    let stamp = FileStamp::of(&path);
    let index = builder.open_index()?;
    let recorded = &index.meta().model;
    let model = match current {
        Some(m) if m.info().fingerprint.to_hex() == recorded.fingerprint => Arc::clone(m),
        _ => {
            let name = model_override.map_or_else(|| recorded.name.clone(), str::to_string);
            load(&name).map_err(|message| ServeError::Model {
                model: name.clone(),
                index: path.clone(),
                message,
            })?
        }
    };
    let assembler = builder.build_from(index, model)?;
    Ok(Engine { assembler, stamp, generation })
}
