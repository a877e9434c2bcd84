//! The git state the runtime layer shows: branch and diff stat, cached while the repository
//! does not change.

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Git state of the root.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GitContext {
    /// Current branch.
    pub branch: String,
    /// Short diff stat of uncommitted changes ("clean" when none).
    pub summary: String,
}

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Branch and diff stat, or `None` outside a repository (not an error).
pub fn git_context(root: &Path) -> Option<GitContext> {
    let branch = git(root, &["rev-parse", "--abbrev-ref", "HEAD"])?;
    let stat = git(root, &["diff", "--shortstat", "HEAD"])
        .or_else(|| git(root, &["diff", "--shortstat"]))
        .unwrap_or_default();
    Some(GitContext { branch, summary: if stat.is_empty() { "clean".into() } else { stat } })
}

#[derive(Debug, Clone)]
struct GitCacheEntry {
    root: PathBuf,
    stamp: Option<GitStamp>,
    read_at: Instant,
    context: Option<GitContext>,
}

/// Modification times of `.git/HEAD` and `.git/index`: a checkout, commit or `git add`
/// changes one of them.
type GitStamp = (Option<std::time::SystemTime>, Option<std::time::SystemTime>);

fn git_stamp(root: &Path) -> Option<GitStamp> {
    let dir = root.ancestors().map(|d| d.join(".git")).find(|d| d.is_dir())?;
    let mtime = |f: &str| std::fs::metadata(dir.join(f)).and_then(|m| m.modified()).ok();
    Some((mtime("HEAD"), mtime("index")))
}

/// The last git context read, with what it was read for (see
/// [`crate::AssemblerBuilder::git_ttl`]).
#[derive(Debug, Default)]
pub(crate) struct GitCache(Mutex<Option<GitCacheEntry>>);

impl GitCache {
    /// The git context of `root`, reused within the TTL while the repository's stamp holds.
    pub(crate) fn context(&self, root: &Path, ttl: Duration) -> Option<GitContext> {
        if ttl.is_zero() {
            return git_context(root);
        }
        let stamp = git_stamp(root);
        if let Ok(cache) = self.0.lock()
            && let Some(e) = cache.as_ref()
            && e.root == root
            && e.stamp == stamp
            && e.read_at.elapsed() < ttl
        {
            return e.context.clone();
        }
        let context = git_context(root);
        if let Ok(mut cache) = self.0.lock() {
            *cache = Some(GitCacheEntry {
                root: root.to_path_buf(),
                stamp,
                read_at: Instant::now(),
                context: context.clone(),
            });
        }
        context
    }
}
