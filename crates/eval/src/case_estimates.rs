//! `eval cases`' figures with their 95% intervals: each metric per case, then the interval of
//! its mean, of a second routing's gain over the deployed one on the same cases, and of each
//! language's gap to English.

use crate::cases::{CaseRow, by_score, recall};
use crate::interval::{Estimate, group_difference, mean_interval, paired_difference};
use std::collections::BTreeMap;
use switchyard_router::Decision;

/// The metrics `eval cases` reports, per case; `None` where a case has nothing to measure (no
/// expected tool, no expected skill).
pub(crate) struct PerCase {
    metrics: Vec<(&'static str, Vec<Option<f64>>)>,
    langs: Vec<String>,
}

/// The metrics that get intervals, by their report key.
pub(crate) const METRICS: [&str; 4] =
    ["tool_recall@3", "tool_recall@5", "skill_recall@3", "mode_accuracy"];

impl PerCase {
    pub(crate) fn new(cases: &[CaseRow], decisions: &[Decision]) -> Self {
        let mut columns: [Vec<Option<f64>>; 4] = Default::default();
        for (c, d) in cases.iter().zip(decisions) {
            let tools = by_score(&d.tools);
            let skills = by_score(&d.skills);
            let has_tools = !c.tools.is_empty();
            columns[0].push(has_tools.then(|| recall(&tools, &c.tools, 3)));
            columns[1].push(has_tools.then(|| recall(&tools, &c.tools, 5)));
            columns[2].push((!c.skills.is_empty()).then(|| recall(&skills, &c.skills, 3)));
            columns[3].push(Some(f64::from(u8::from(d.mode == c.mode))));
        }
        PerCase {
            metrics: METRICS.into_iter().zip(columns).collect(),
            langs: cases.iter().map(|c| c.lang.clone()).collect(),
        }
    }

    /// The values of one metric over the cases `keep` accepts (by index), those measured only.
    fn values(&self, metric: usize, keep: impl Fn(usize) -> bool) -> Vec<f64> {
        self.metrics[metric]
            .1
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .filter_map(|(_, v)| *v)
            .collect()
    }

    /// Each metric's mean over all cases with its interval.
    pub(crate) fn intervals(&self) -> BTreeMap<String, Estimate> {
        (0..METRICS.len())
            .filter_map(|m| {
                Some((METRICS[m].to_string(), mean_interval(&self.values(m, |_| true))?))
            })
            .collect()
    }

    /// What `other` (the same cases routed another way) gains over `self`, per metric, paired
    /// by case. Metrics where both routings measure nothing are left out.
    pub(crate) fn gain(&self, other: &PerCase) -> BTreeMap<String, Estimate> {
        (0..METRICS.len())
            .filter_map(|m| {
                let pairs: Vec<(f64, f64)> = self.metrics[m]
                    .1
                    .iter()
                    .zip(&other.metrics[m].1)
                    .filter_map(|(a, b)| Some(((*a)?, (*b)?)))
                    .collect();
                let (a, b): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
                Some((METRICS[m].to_string(), paired_difference(&a, &b)?))
            })
            .collect()
    }

    /// Each language's gap to English (the language's mean less English's), per metric; empty
    /// when no case is in English. English is any tag whose primary subtag is `en` (`en-GB`).
    pub(crate) fn language_gaps(&self) -> BTreeMap<String, BTreeMap<String, Estimate>> {
        let english = |i: usize| is_english(&self.langs[i]);
        if !(0..self.langs.len()).any(english) {
            return BTreeMap::new();
        }
        let mut langs: Vec<&String> = self.langs.iter().filter(|l| !is_english(l)).collect();
        langs.sort();
        langs.dedup();
        langs
            .into_iter()
            .map(|lang| {
                let gaps = (0..METRICS.len())
                    .filter_map(|m| {
                        let english = self.values(m, english);
                        let group = self.values(m, |i| &self.langs[i] == lang);
                        let gap = group_difference(&english, &group)?;
                        Some((METRICS[m].to_string(), gap))
                    })
                    .collect();
                (lang.clone(), gaps)
            })
            .collect()
    }
}

fn is_english(lang: &str) -> bool {
    lang.split(['-', '_']).next().is_some_and(|primary| primary.eq_ignore_ascii_case("en"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_is_any_tag_of_the_english_language() {
        for tag in ["en", "EN", "en-GB", "en_US"] {
            assert!(is_english(tag), "{tag}");
        }
        for tag in ["de", "eng", "fr-CA", ""] {
            assert!(!is_english(tag), "{tag}");
        }
    }
}
