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
    groups: Vec<Option<String>>,
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
            columns[3].push(c.mode_is(&d.mode).map(|right| f64::from(u8::from(right))));
        }
        PerCase {
            metrics: METRICS.into_iter().zip(columns).collect(),
            langs: cases.iter().map(|c| c.lang.clone()).collect(),
            groups: cases.iter().map(|c| c.group.clone()).collect(),
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

    /// The languages other than English, when some case is in English.
    fn other_languages(&self) -> Vec<&String> {
        if !self.langs.iter().any(|l| is_english(l)) {
            return Vec::new();
        }
        let mut langs: Vec<&String> = self.langs.iter().filter(|l| !is_english(l)).collect();
        langs.sort();
        langs.dedup();
        langs
    }

    /// The (English case, `lang` case) pairs of the same task, when every case of both has a
    /// group and no group is in English twice; `None` otherwise, or when no group is shared.
    fn pairs(&self, lang: &str) -> Option<Vec<(usize, usize)>> {
        let of = |keep: &dyn Fn(&str) -> bool| -> Option<Vec<(usize, &str)>> {
            (0..self.langs.len())
                .filter(|&i| keep(&self.langs[i]))
                .map(|i| Some((i, self.groups[i].as_deref()?)))
                .collect()
        };
        let english = of(&|l| is_english(l))?;
        let mut by_group = std::collections::HashMap::new();
        for (i, g) in english {
            if by_group.insert(g, i).is_some() {
                return None;
            }
        }
        let pairs: Vec<(usize, usize)> = of(&|l| l == lang)?
            .into_iter()
            .filter_map(|(i, g)| Some((*by_group.get(g)?, i)))
            .collect();
        (!pairs.is_empty()).then_some(pairs)
    }

    /// Each language's gap to English (the language's mean less English's), per metric; empty
    /// when no case is in English. English is any tag whose primary subtag is `en` (`en-GB`).
    /// Paired by task where the cases' groups allow it ([`PerCase::pairs`]), else the two
    /// groups of cases resampled apart.
    pub(crate) fn language_gaps(&self) -> BTreeMap<String, BTreeMap<String, Estimate>> {
        self.other_languages()
            .into_iter()
            .map(|lang| {
                let pairs = self.pairs(lang);
                let gaps = (0..METRICS.len())
                    .filter_map(|m| {
                        let column = &self.metrics[m].1;
                        let gap = match &pairs {
                            Some(pairs) => {
                                let (english, own): (Vec<f64>, Vec<f64>) = pairs
                                    .iter()
                                    .filter_map(|&(e, l)| Some((column[e]?, column[l]?)))
                                    .unzip();
                                paired_difference(&english, &own)?
                            }
                            None => {
                                let english = self.values(m, |i| is_english(&self.langs[i]));
                                let own = self.values(m, |i| &self.langs[i] == lang);
                                group_difference(&english, &own)?
                            }
                        };
                        Some((METRICS[m].to_string(), gap))
                    })
                    .collect();
                (lang.clone(), gaps)
            })
            .collect()
    }

    /// The languages whose gap is paired by task, with how many tasks they share with English.
    pub(crate) fn paired_languages(&self) -> BTreeMap<String, usize> {
        self.other_languages()
            .into_iter()
            .filter_map(|lang| Some((lang.clone(), self.pairs(lang)?.len())))
            .collect()
    }
}

fn is_english(lang: &str) -> bool {
    lang.split(['-', '_']).next().is_some_and(|primary| primary.eq_ignore_ascii_case("en"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cases with only a tool recall@3 (1 right, 0 wrong), in `langs`, of `groups`.
    fn cases(recall: &[f64], langs: &[&str], groups: &[Option<&str>]) -> PerCase {
        let mut metrics: Vec<(&'static str, Vec<Option<f64>>)> =
            METRICS.iter().map(|m| (*m, vec![None; recall.len()])).collect();
        metrics[0].1 = recall.iter().map(|&r| Some(r)).collect();
        PerCase {
            metrics,
            langs: langs.iter().map(|l| l.to_string()).collect(),
            groups: groups.iter().map(|g| g.map(str::to_string)).collect(),
        }
    }

    #[test]
    fn the_same_tasks_in_two_languages_are_compared_task_by_task() {
        // Ten tasks in English and German; German misses the last two, and the tasks are of
        // every difficulty, so only pairing sees the gap clearly.
        let groups: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
        let mut recall = Vec::new();
        let (mut langs, mut group) = (Vec::new(), Vec::new());
        for (i, g) in groups.iter().enumerate() {
            let en = f64::from(u8::from(i % 3 != 0));
            for (lang, r) in [("en", en), ("de", if i >= 8 { 0.0 } else { en })] {
                recall.push(r);
                langs.push(lang);
                group.push(Some(g.as_str()));
            }
        }
        let paired = cases(&recall, &langs, &group);
        assert_eq!(paired.paired_languages(), BTreeMap::from([("de".to_string(), 10)]));
        let gap = paired.language_gaps()["de"]["tool_recall@3"];
        assert!((gap.value + 0.1).abs() < 1e-9, "{gap:?}");
        // Without groups the same figures are compared as two samples: a wider interval.
        let apart = cases(&recall, &langs, &vec![None; recall.len()]);
        assert!(apart.paired_languages().is_empty());
        let wide = apart.language_gaps()["de"]["tool_recall@3"];
        assert!((wide.value - gap.value).abs() < 1e-9);
        assert!(wide.high - wide.low > gap.high - gap.low, "{wide:?} {gap:?}");
        // One case without a group, or a group twice in English: not paired.
        let mut one_missing = group.clone();
        one_missing[1] = None;
        assert!(cases(&recall, &langs, &one_missing).paired_languages().is_empty());
        let mut twice = group.clone();
        twice[2] = Some("t0");
        assert!(cases(&recall, &langs, &twice).paired_languages().is_empty());
    }

    #[test]
    fn a_case_line_may_name_its_group_and_nothing_else_unknown() {
        let line = r#"{"task": "wie viele Tage hat Ben noch?", "lang": "de", "tools": ["leave_balance"], "mode": "ask", "group": "p03"}"#;
        let row: CaseRow = serde_json::from_str(line).unwrap();
        assert_eq!(row.group.as_deref(), Some("p03"));
        let without: CaseRow =
            serde_json::from_str(&line.replace(r#", "group": "p03""#, "")).unwrap();
        assert_eq!(without.group, None);
        let typo = line.replace("\"group\"", "\"grup\"");
        assert!(serde_json::from_str::<CaseRow>(&typo).is_err());
    }

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
