//! What `eval tools` got wrong, for reading rather than guessing: the queries whose deployed
//! selection left out a right tool, and which tools are left out, or picked wrongly, most
//! often. A catalog author sees which descriptions need work and which tools crowd others out.

use crate::tools::QueryRow;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

/// A right tool the deployed selection left out.
#[derive(Debug, Clone, Serialize)]
pub struct MissingTool {
    /// Its name.
    pub name: String,
    /// Its place in the hybrid ranking (1 = first); `None` when it is not among the ranked.
    pub hybrid_rank: Option<usize>,
}

/// A query whose deployed selection left out at least one right tool.
#[derive(Debug, Clone, Serialize)]
pub struct ToolMiss {
    /// Its line in the queries file.
    pub line: usize,
    /// The query.
    pub query: String,
    /// Its language, when the file gives one.
    pub lang: Option<String>,
    /// The right tools left out.
    pub missing: Vec<MissingTool>,
    /// What the deployed router selected.
    pub selected: Vec<String>,
}

/// The queries the deployed selection got wrong and the tools behind them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ToolErrors {
    /// Queries with a right tool left out, the one ranked furthest down first (unranked
    /// first of all), at most `max_errors`; of `missed_total`.
    pub misses: Vec<ToolMiss>,
    /// How many queries had a right tool left out.
    pub missed_total: usize,
    /// The right tools left out most often, with how often (the most first, at most
    /// `max_errors`).
    pub most_left_out: Vec<(String, usize)>,
    /// The tools selected most often where they were not right, with how often: tools that
    /// crowd others out (the most first, at most `max_errors`).
    pub most_wrongly_selected: Vec<(String, usize)>,
}

/// Collects the errors of the deployed selections `deployed` against `rows`' gold tools, with
/// `hybrid` (the full ranking, same order as `rows`) giving each left-out tool's place.
pub fn tool_errors(
    rows: &[QueryRow],
    hybrid: &[Vec<String>],
    deployed: &[Vec<String>],
    max: usize,
) -> ToolErrors {
    let mut misses = Vec::new();
    let mut left_out: BTreeMap<String, usize> = BTreeMap::new();
    let mut wrong: BTreeMap<String, usize> = BTreeMap::new();
    for ((row, ranked), selected) in rows.iter().zip(hybrid).zip(deployed) {
        let gold: HashSet<&str> = row.gold.iter().map(String::as_str).collect();
        for s in selected.iter().filter(|s| !gold.contains(s.as_str())) {
            *wrong.entry(s.clone()).or_default() += 1;
        }
        let mut seen = HashSet::new();
        let missing: Vec<MissingTool> = row
            .gold
            .iter()
            .filter(|g| seen.insert(g.as_str()) && !selected.contains(g))
            .map(|g| MissingTool {
                name: g.clone(),
                hybrid_rank: ranked.iter().position(|r| r == g).map(|p| p + 1),
            })
            .collect();
        for m in &missing {
            *left_out.entry(m.name.clone()).or_default() += 1;
        }
        if !missing.is_empty() {
            misses.push(ToolMiss {
                line: row.line,
                query: row.query.clone(),
                lang: row.lang.clone(),
                missing,
                selected: selected.clone(),
            });
        }
    }
    let missed_total = misses.len();
    // Furthest down first: an unranked tool sorts below every ranked one.
    let worst = |m: &ToolMiss| {
        m.missing.iter().map(|t| t.hybrid_rank.unwrap_or(usize::MAX)).max().unwrap_or(0)
    };
    misses.sort_by(|a, b| worst(b).cmp(&worst(a)).then(a.line.cmp(&b.line)));
    misses.truncate(max);
    ToolErrors {
        misses,
        missed_total,
        most_left_out: most_often(left_out, max),
        most_wrongly_selected: most_often(wrong, max),
    }
}

/// The `max` most frequent names, the most first, ties by name.
fn most_often(counts: BTreeMap<String, usize>, max: usize) -> Vec<(String, usize)> {
    let mut v: Vec<(String, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(max);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(line: usize, query: &str, gold: &[&str]) -> QueryRow {
        QueryRow {
            line,
            query: query.into(),
            gold: gold.iter().map(|g| g.to_string()).collect(),
            lang: None,
            split: None,
        }
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn misses_are_listed_furthest_down_first_with_the_tools_behind_them() {
        let rows = [
            row(2, "ship it", &["ship"]),
            row(3, "refund and tell them", &["refund", "message"]),
            row(5, "where is it", &["track"]),
            row(6, "refund please", &["refund"]),
        ];
        let hybrid = [
            names(&["ship", "cancel"]),
            names(&["cancel", "refund", "hold", "message"]),
            names(&["cancel", "hold"]),
            names(&["cancel", "hold", "refund"]),
        ];
        let deployed = [
            names(&["ship"]),
            names(&["cancel", "refund"]),
            names(&["cancel"]),
            names(&["cancel", "hold"]),
        ];
        let e = tool_errors(&rows, &hybrid, &deployed, 10);
        assert_eq!(e.missed_total, 3);
        // "track" is not ranked at all, "message" 4th, the second "refund" 3rd.
        let order: Vec<usize> = e.misses.iter().map(|m| m.line).collect();
        assert_eq!(order, [5, 3, 6]);
        assert_eq!(e.misses[0].missing[0].hybrid_rank, None);
        assert_eq!(e.misses[1].missing.len(), 1);
        assert_eq!(e.misses[1].missing[0].name, "message");
        assert_eq!(e.misses[1].missing[0].hybrid_rank, Some(4));
        assert_eq!(e.most_wrongly_selected[0], ("cancel".to_string(), 3));
        assert_eq!(e.most_left_out.len(), 3);
        // The lists are capped; the total is not.
        let capped = tool_errors(&rows, &hybrid, &deployed, 1);
        assert_eq!((capped.misses.len(), capped.missed_total), (1, 3));
        assert_eq!(capped.most_wrongly_selected.len(), 1);
    }

    #[test]
    fn a_gold_tool_listed_twice_is_left_out_once() {
        let rows = [row(1, "q", &["a", "a"])];
        let e = tool_errors(&rows, &[names(&["b"])], &[names(&["b"])], 10);
        assert_eq!(e.misses[0].missing.len(), 1);
        assert_eq!(e.most_left_out, [("a".to_string(), 1)]);
    }
}
