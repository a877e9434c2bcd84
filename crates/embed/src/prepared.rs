//! What the ready-to-map files beside a model share: how they are written (atomically) and
//! what a source file is checked by (length, modification time, inode), and how their headers
//! are read.

use std::io::Write;
use std::path::Path;

/// A file's length, modification time (ns since 1970) and inode (0 where there is none; all
/// zero when it cannot be read): what a ready-to-map file derived from it is checked against.
pub(crate) fn file_stamp(path: &Path) -> [u64; 3] {
    let Ok(meta) = std::fs::metadata(path) else { return [0; 3] };
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    [meta.len(), mtime_ns, inode]
}

/// Writes `bytes` to `path` atomically: a temporary file beside it, renamed over it, so a process
/// that maps the old file keeps its pages and a reader never sees half a file.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // Unique per process and per call: tests load the same model on many threads at once.
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("swyd.tmp{}.{call}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        // No fsync: a file that a crash leaves half-written fails its length or checksum
        // check and is rebuilt, so durability is not worth the flush on the first load.
        f.write_all(bytes)?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The little-endian `u32` at byte `at` of a header (the caller has checked the length).
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]))
}

/// The little-endian `u64` at byte `at` of a header (the caller has checked the length).
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}
