//! Agreement of the task analysis with hand-labelled tasks (`switchyard eval analysis`).

use crate::Result;
use crate::jsonl::read_jsonl;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;
use switchyard_router::analysis::{Complexity, Missing, TaskAnalysis, analyze_task};

/// One labelled task.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalysisCase {
    /// The task.
    pub task: String,
    /// Its language (for the per-language table).
    #[serde(default)]
    pub lang: Option<String>,
    /// The labelled complexity.
    pub complexity: Complexity,
    /// What the task does not say.
    pub missing: Vec<Missing>,
}

/// Agreement figures over a set of tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Agreement {
    /// Tasks.
    pub cases: usize,
    /// Share of tasks whose complexity matches the label.
    pub complexity_accuracy: f64,
    /// Share of tasks whose complexity is off by two levels (low for high or the reverse).
    pub complexity_off_by_two: f64,
    /// Share whose sufficiency (intent and target said) matches the label.
    pub sufficiency_accuracy: f64,
    /// Per part (intent, target, scope): share of tasks where "missing or not" matches.
    pub missing_accuracy: BTreeMap<String, f64>,
    /// Share of tasks where the whole missing set matches.
    pub exact_missing: f64,
}

/// A disagreement, for reading.
#[derive(Debug, Clone, Serialize)]
pub struct AnalysisMiss {
    /// The task.
    pub task: String,
    /// Labelled complexity and what the analyser said.
    pub complexity: (Complexity, Complexity),
    /// Labelled missing parts and what the analyser said.
    pub missing: (Vec<Missing>, Vec<Missing>),
    /// What the analyser found.
    pub analysis: TaskAnalysis,
}

/// The report of `switchyard eval analysis`.
#[derive(Debug, Clone, Serialize)]
pub struct AnalysisReport {
    /// The cases file.
    pub cases_file: String,
    /// All tasks.
    pub overall: Agreement,
    /// Per language.
    pub per_lang: BTreeMap<String, Agreement>,
    /// Labelled (rows) against predicted (columns) complexity, low/medium/high.
    pub confusion: [[usize; 3]; 3],
    /// The tasks where anything disagrees.
    pub misses: Vec<AnalysisMiss>,
    /// Mean analysis time per task, microseconds (100 rounds).
    pub mean_us: f64,
}

/// A labelled case with the analyser's complexity and missing parts.
type Row<'a> = (&'a AnalysisCase, Complexity, Vec<Missing>);

fn agreement(rows: &[Row<'_>]) -> Agreement {
    let n = rows.len().max(1) as f64;
    let share = |f: &dyn Fn(&Row<'_>) -> bool| rows.iter().filter(|r| f(r)).count() as f64 / n;
    let mut missing_accuracy = BTreeMap::new();
    for part in [Missing::Intent, Missing::Target, Missing::Scope] {
        let name = serde_json::to_value(part).ok().and_then(|v| v.as_str().map(str::to_string));
        missing_accuracy.insert(
            name.unwrap_or_default(),
            share(&|(c, _, got)| c.missing.contains(&part) == got.contains(&part)),
        );
    }
    Agreement {
        cases: rows.len(),
        complexity_accuracy: share(&|(c, got, _)| c.complexity == *got),
        complexity_off_by_two: share(&|(c, got, _)| {
            matches!(
                (c.complexity, got),
                (Complexity::Low, Complexity::High) | (Complexity::High, Complexity::Low)
            )
        }),
        sufficiency_accuracy: share(&|(c, _, got)| {
            TaskAnalysis::is_sufficient(&c.missing) == TaskAnalysis::is_sufficient(got)
        }),
        missing_accuracy,
        exact_missing: share(&|(c, _, got)| {
            let mut want = c.missing.clone();
            want.sort();
            want == *got
        }),
    }
}

/// Runs the analyser over labelled tasks and reports its agreement with the labels.
pub fn eval_analysis(cases_file: &Path) -> Result<AnalysisReport> {
    let cases: Vec<AnalysisCase> = read_jsonl(cases_file)?;
    let rows: Vec<_> = cases
        .iter()
        .map(|c| {
            let a = analyze_task(&c.task);
            (c, a.complexity, a.missing)
        })
        .collect();
    let mut by_lang: BTreeMap<String, Vec<_>> = BTreeMap::new();
    for r in &rows {
        by_lang.entry(r.0.lang.clone().unwrap_or_else(|| "?".into())).or_default().push(r.clone());
    }
    let mut confusion = [[0; 3]; 3];
    for (c, got, _) in &rows {
        confusion[c.complexity as usize][*got as usize] += 1;
    }
    let misses = rows
        .iter()
        .filter(|(c, got, missing)| {
            let mut want = c.missing.clone();
            want.sort();
            c.complexity != *got || want != *missing
        })
        .map(|(c, got, missing)| AnalysisMiss {
            task: c.task.clone(),
            complexity: (c.complexity, *got),
            missing: (c.missing.clone(), missing.clone()),
            analysis: analyze_task(&c.task),
        })
        .collect();
    let rounds = 100;
    let t = Instant::now();
    for _ in 0..rounds {
        for c in &cases {
            std::hint::black_box(analyze_task(std::hint::black_box(&c.task)));
        }
    }
    let mean_us = t.elapsed().as_secs_f64() * 1e6 / (rounds * cases.len()) as f64;
    Ok(AnalysisReport {
        cases_file: cases_file.display().to_string(),
        overall: agreement(&rows),
        per_lang: by_lang.iter().map(|(l, r)| (l.clone(), agreement(r))).collect(),
        confusion,
        misses,
        mean_us,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_file_with_an_unknown_complexity_is_refused_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bad.jsonl");
        std::fs::write(
            &f,
            "{\"task\": \"fix it\", \"complexity\": \"low\", \"missing\": [\"target\"]}\n\
             {\"task\": \"x\", \"complexity\": \"huge\", \"missing\": []}\n",
        )
        .unwrap();
        let e = eval_analysis(&f).unwrap_err().to_string();
        assert!(e.contains("bad.jsonl:2") && e.contains("huge"), "{e}");
    }
}
