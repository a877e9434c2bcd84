//! The plain-text form of `switchyard eval cases`' report.

use crate::measure::table;
use std::collections::BTreeMap;
use switchyard_eval::CasesReport;
use switchyard_eval::interval::Estimate;

/// `0.780 [0.68, 0.87]`, or with a sign for a difference: `+0.102 [+0.03, +0.17]`.
fn estimate(e: &Estimate, signed: bool) -> String {
    if signed {
        format!("{:+.3} [{:+.2}, {:+.2}]", e.value, e.low, e.high)
    } else {
        format!("{:.3} [{:.2}, {:.2}]", e.value, e.low, e.high)
    }
}

/// The metrics of `estimates` under their short names, in `eval cases`' order.
fn estimates(estimates: &BTreeMap<String, Estimate>, signed: bool) -> String {
    let names = [
        ("tool_recall@3", "tool recall@3"),
        ("tool_recall@5", "@5"),
        ("skill_recall@3", "skill recall@3"),
        ("mode_accuracy", "mode accuracy"),
    ];
    names
        .iter()
        .filter_map(|(key, label)| {
            Some(format!("{label} {}", estimate(estimates.get(*key)?, signed)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Prints the figures overall and per language (with intervals), then what was missed.
pub(crate) fn print_cases_report(report: &CasesReport) {
    if let Some(id) = &report.index.adapter {
        println!("query adapter {id}: tools and skills are scored in its space");
    }
    let mut rows = vec![("all", &report.overall)];
    rows.extend(report.per_lang.iter().map(|(l, m)| (l.as_str(), m)));
    if let Some(several) = &report.several_tools {
        rows.push(("several tools", several));
    }
    let fitted_labels: Vec<String> =
        report.fitted_per_lang.keys().map(|l| format!("fitted {l}")).collect();
    if let Some(f) = &report.fitted {
        rows.push(("fitted all", f));
        rows.extend(fitted_labels.iter().map(String::as_str).zip(report.fitted_per_lang.values()));
    }
    table(&rows);
    println!("95% intervals (bootstrap over the cases): {}", estimates(&report.intervals, false));
    if !report.language_gaps.is_empty() {
        let gaps: Vec<String> = report
            .language_gaps
            .iter()
            .filter_map(|(lang, g)| {
                let paired = report
                    .language_gaps_paired
                    .get(lang)
                    .map_or(String::new(), |n| format!(" (paired, {n} tasks)"));
                Some(format!("{lang} {}{paired}", estimate(g.get("tool_recall@3")?, true)))
            })
            .collect();
        println!(
            "gap to English, tool recall@3 (95%; an interval holding 0 is no measured difference): {}",
            gaps.join(", ")
        );
    }
    let at = |m: &BTreeMap<String, serde_json::Value>, k: &str| {
        m.get(k).and_then(serde_json::Value::as_f64).map_or("-".into(), |x| format!("{x:.3}"))
    };
    let gain = |k: &str| report.mode_given_gain.get(k).map_or("-".into(), |e| estimate(e, true));
    // Mode figures only where some case expects a mode (a catalog of MCP servers has none).
    let has_modes = report.overall.get("mode_accuracy").is_some_and(serde_json::Value::is_number);
    if has_modes {
        println!(
            "tool recall@3 / @5 with each case's expected mode given: {} / {} (as deployed {} / {}: the difference, {} / {} paired by case, is what a known mode, filtering hard, is worth)",
            at(&report.mode_given, "tool_recall@3"),
            at(&report.mode_given, "tool_recall@5"),
            at(&report.overall, "tool_recall@3"),
            at(&report.overall, "tool_recall@5"),
            gain("tool_recall@3"),
            gain("tool_recall@5"),
        );
    }
    if !report.fitted_gain.is_empty() {
        println!(
            "fitted less default (95%, paired by case): {}",
            estimates(&report.fitted_gain, true)
        );
    }
    let steps: Vec<String> = report
        .mode_steps
        .iter()
        .map(|(step, s)| format!("{step} {}/{}", s.right, s.cases))
        .collect();
    if has_modes {
        println!("mode right / decided, by deciding step: {}", steps.join(", "));
    }
    for (label, o) in [("", &report.off_topic), (", fitted", &report.fitted_off_topic)] {
        let Some(o) = o else { continue };
        let langs: Vec<String> = o
            .per_lang
            .iter()
            .map(|(l, t)| format!("{l} {}/{}", t.given_no_tools, t.tasks))
            .collect();
        println!(
            "off-topic tasks given no tool{label}: {}/{} ({})",
            o.all.given_no_tools,
            o.all.tasks,
            langs.join(", ")
        );
        for m in &o.given_tools {
            println!("  given tools [{}] {:?}: {}", m.lang, m.task, m.tools.join(", "));
        }
    }
    for m in &report.misses {
        let mode = if has_modes {
            format!(
                " mode {} (expected {})",
                m.got_mode,
                m.expected_mode.as_deref().unwrap_or("ok")
            )
        } else {
            String::new()
        };
        println!(
            "miss [{}] {:?}: tools {:?} skills {:?}{mode}",
            m.lang, m.task, m.missing_tools, m.missing_skills
        );
    }
}
