//! A catalog's screen checks (`screen_checks.toml`) run against a built index: every text the
//! screen must flag, and every one it must let through, screened exactly as `memory add`
//! stores an entry.

use serde::Serialize;
use std::path::PathBuf;
use switchyard_manifest::{ScreenCheck, ScreenChecks};

/// A check the index's screen failed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScreenCheckFailure {
    /// What the check asked for: `flag` or `keep`.
    pub expected: &'static str,
    /// The check's line in its file.
    pub line: usize,
    /// Its language.
    pub lang: String,
    /// Its text.
    pub text: String,
    /// The score of its deciding piece, under the rule in force.
    pub score: f32,
    /// The threshold that score is judged against.
    pub threshold: f32,
}

/// The outcome of a catalog's screen checks on one index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScreenCheckReport {
    /// The checks' file.
    pub file: PathBuf,
    /// The rule in force: `head` or `contrast`.
    pub rule: &'static str,
    /// Texts that must be flagged, and how many were.
    pub must_flag: usize,
    /// How many of those were flagged.
    pub flagged: usize,
    /// Texts that must be let through.
    pub must_keep: usize,
    /// How many of those were let through.
    pub kept: usize,
    /// Every failed check, in file order within each side.
    pub failures: Vec<ScreenCheckFailure>,
}

impl ScreenCheckReport {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

impl std::fmt::Display for ScreenCheckFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (must, verb) = match self.expected {
            "flag" => ("must be flagged", "below"),
            _ => ("must be let through", "at or above"),
        };
        let excerpt: String = self.text.chars().take(100).collect();
        write!(
            f,
            "line {} ({}): {must}, but scores {:.2}, {verb} the threshold {:.2}: {excerpt:?}",
            self.line, self.lang, self.score, self.threshold
        )
    }
}

/// Screens every check of `checks` with `router` and reports those the screen got wrong.
pub fn run_screen_checks(
    router: &switchyard_router::Router,
    checks: &ScreenChecks,
) -> Result<ScreenCheckReport, crate::AssembleError> {
    let all: Vec<(&ScreenCheck, bool)> = checks
        .must_flag
        .iter()
        .map(|c| (c, true))
        .chain(checks.must_keep.iter().map(|c| (c, false)))
        .collect();
    let texts: Vec<&str> = all.iter().map(|(c, _)| c.text.as_str()).collect();
    let (report, _) = crate::screen_texts(router, &texts)?;
    let mut verdicts: Vec<_> = report.kept.iter().chain(&report.dropped).collect();
    verdicts.sort_by_key(|v| v.entry);
    let mut failures = Vec::new();
    let (mut flagged, mut kept) = (0, 0);
    for v in verdicts {
        let (check, must_flag) = all[v.entry];
        match (must_flag, v.flagged) {
            (true, true) => flagged += 1,
            (false, false) => kept += 1,
            _ => failures.push(ScreenCheckFailure {
                expected: if must_flag { "flag" } else { "keep" },
                line: check.line,
                lang: check.lang.clone(),
                text: check.text.clone(),
                score: v.score,
                threshold: v.threshold,
            }),
        }
    }
    Ok(ScreenCheckReport {
        file: checks.path.clone(),
        rule: report.rule,
        must_flag: checks.must_flag.len(),
        flagged,
        must_keep: checks.must_keep.len(),
        kept,
        failures,
    })
}
