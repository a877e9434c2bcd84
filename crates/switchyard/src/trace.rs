//! Assembly traces: one JSON line per assembly appended to a log the operator opted into, and
//! pruned of lines older than the retention when the assembler opens it. `switchyard trace
//! stats` summarises a log.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One assembly, as the trace log records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRecord {
    /// Seconds since the Unix epoch.
    pub ts: u64,
    /// The caller's session id, if it gave one.
    #[serde(default)]
    pub session: Option<String>,
    /// The decided mode and the step that decided it.
    pub mode: String,
    /// `explicit`, `hint`, `keyword`, `semantic`, `default`...
    pub mode_source: String,
    /// The profile.
    pub profile: String,
    /// Tokens per layer.
    pub layer_tokens: BTreeMap<String, usize>,
    /// Layers cut to fit.
    pub truncated: Vec<String>,
    /// Milliseconds per stage (`route`, `runtime`, `memory`, `render`, `total`).
    pub ms: BTreeMap<String, f64>,
    /// Model calls.
    pub embedding_calls: u32,
    /// Why the router fell back to deterministic signals, if it did.
    #[serde(default)]
    pub fallback: Option<String>,
    /// The task's complexity (absent in lines written before it was recorded).
    #[serde(default)]
    pub complexity: Option<switchyard_router::Complexity>,
    /// What the task left unsaid: `intent`, `target`, `scope`.
    #[serde(default)]
    pub missing: Vec<switchyard_router::Missing>,
    /// Whether a clarification line was added to the task layer.
    #[serde(default)]
    pub clarified: bool,
    /// Memory entries the screen flagged.
    pub memory_flagged: usize,
    /// Instruction-like memory entries kept out that would have taken a slot.
    pub memory_excluded: usize,
    /// History entries the screen flagged.
    pub history_flagged: usize,
    /// sha256 of the stable part, the dynamic part and the whole prompt.
    pub fingerprints: [String; 3],
    /// Diagnostics of the assembly.
    pub diagnostics: Vec<String>,
}

/// The trace log: where, and how long lines are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceLog {
    /// The JSONL file.
    pub path: PathBuf,
    /// Lines older than this are pruned when the log is opened.
    pub retention: Duration,
}

impl TraceLog {
    /// A log at `path` keeping 14 days.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), retention: Duration::from_secs(14 * 86_400) }
    }

    /// Drops the lines older than the retention (and lines that are not records), writing the
    /// rest to a temporary file renamed over the log; returns how many were dropped.
    pub fn prune(&self) -> std::io::Result<usize> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        let cutoff = now().saturating_sub(self.retention.as_secs());
        let mut kept = String::new();
        let mut dropped = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<TraceRecord>(line) {
                Ok(r) if r.ts >= cutoff => {
                    kept.push_str(line);
                    kept.push('\n');
                }
                _ => dropped += 1,
            }
        }
        if dropped > 0 {
            let tmp = self.path.with_extension("prune.tmp");
            std::fs::write(&tmp, kept)?;
            std::fs::rename(&tmp, &self.path)?;
        }
        Ok(dropped)
    }

    /// Appends one record as one line (one write, in append mode: lines of concurrent
    /// assemblies never interleave).
    pub fn append(&self, record: &TraceRecord) -> std::io::Result<()> {
        let mut line = serde_json::to_string(record).map_err(std::io::Error::other)?;
        line.push('\n');
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
        f.write_all(line.as_bytes())
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A summary of a trace log.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TraceStats {
    /// Records read.
    pub assemblies: usize,
    /// Lines that were not records.
    pub unreadable_lines: usize,
    /// First and last timestamps.
    pub span: Option<(u64, u64)>,
    /// Distinct sessions.
    pub sessions: usize,
    /// Assemblies per mode.
    pub modes: BTreeMap<String, usize>,
    /// Assemblies per mode source.
    pub mode_sources: BTreeMap<String, usize>,
    /// p50 and p95 per stage, milliseconds.
    pub stage_ms: BTreeMap<String, (f64, f64)>,
    /// Share of assemblies answered from deterministic signals.
    pub fallback_rate: f64,
    /// Share of assemblies where screening flagged a memory or history entry.
    pub injection_rate: f64,
    /// Entries flagged in all (memory and history).
    pub flagged_entries: usize,
    /// Share of assemblies with a layer cut to fit.
    pub truncation_rate: f64,
}

/// Reads and summarises a trace log.
pub fn trace_stats(path: &Path) -> std::io::Result<TraceStats> {
    let text = std::fs::read_to_string(path)?;
    let mut stats = TraceStats::default();
    let mut stages: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut sessions = std::collections::BTreeSet::new();
    let (mut fallbacks, mut injected, mut truncated) = (0, 0, 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(r) = serde_json::from_str::<TraceRecord>(line) else {
            stats.unreadable_lines += 1;
            continue;
        };
        stats.assemblies += 1;
        stats.span = Some(stats.span.map_or((r.ts, r.ts), |(a, b)| (a.min(r.ts), b.max(r.ts))));
        if let Some(s) = &r.session {
            sessions.insert(s.clone());
        }
        *stats.modes.entry(r.mode.clone()).or_default() += 1;
        *stats.mode_sources.entry(r.mode_source.clone()).or_default() += 1;
        for (k, v) in &r.ms {
            stages.entry(k.clone()).or_default().push(*v);
        }
        fallbacks += usize::from(r.fallback.is_some());
        let flagged = r.memory_flagged + r.history_flagged;
        injected += usize::from(flagged > 0);
        stats.flagged_entries += flagged;
        truncated += usize::from(!r.truncated.is_empty());
    }
    stats.sessions = sessions.len();
    let n = stats.assemblies.max(1) as f64;
    stats.fallback_rate = fallbacks as f64 / n;
    stats.injection_rate = injected as f64 / n;
    stats.truncation_rate = truncated as f64 / n;
    for (k, mut v) in stages {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        stats.stage_ms.insert(k, (at(0.5), at(0.95)));
    }
    Ok(stats)
}
