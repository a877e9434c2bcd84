//! The plain-text form of `switchyard eval injection`'s report.

use crate::measure::{flatten, table};
use std::collections::BTreeMap;
use switchyard_eval::InjectionReport;
use switchyard_eval::injection::ScreenError;

/// Prints the figures as a table, then the samples the screen got wrong.
pub(crate) fn print_injection_report(report: &InjectionReport) {
    println!(
        "rule {}{} (threshold {:.3}){}, model {}, {:.1} pieces per sample",
        report.rule,
        if report.lexical_head { " (embedding + lexical n-grams)" } else { "" },
        report.threshold,
        report.fallback_reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default(),
        report.model.name,
        report.mean_pieces
    );
    let flat = |f: &switchyard_eval::injection::Figures| flatten(f);
    let overall = flat(&report.overall);
    let contrast = flat(&report.contrast_rule);
    let whole = flat(&report.whole_text_only);
    let untriaged = flat(&report.without_triage);
    let per: Vec<(String, BTreeMap<String, serde_json::Value>)> = report
        .per_lang
        .iter()
        .map(|(l, f)| (format!("lang:{l}"), flat(f)))
        .chain(report.per_kind.iter().map(|(k, f)| (format!("kind:{k}"), flat(f))))
        .collect();
    let mut rows = vec![
        ("all", &overall),
        ("contrast_rule", &contrast),
        ("whole_text_only", &whole),
        ("without_triage", &untriaged),
    ];
    rows.extend(per.iter().map(|(l, m)| (l.as_str(), m)));
    table(&rows);
    let interval = |e: &Option<switchyard_eval::interval::Estimate>| {
        e.map_or("-".into(), |e| format!("{:.3} [{:.3}, {:.3}]", e.value, e.low, e.high))
    };
    println!(
        "95% intervals: ROC AUC {} (bootstrap); at the threshold (Wilson) recall {}, false-positive rate {}",
        interval(&report.overall.auc_interval),
        interval(&report.overall.recall_interval),
        interval(&report.overall.fpr_interval)
    );
    if !report.family_thresholds.is_empty() {
        let by: Vec<String> = report.flagged_by.iter().map(|(h, n)| format!("{h} {n}")).collect();
        println!("flagged by head: {}", by.join(", "));
    }
    if let Some(t) = &report.triage {
        println!(
            "triage: {} of {} windows cleared unembedded (lexical floor {:.3}); {} samples flagged only with every window embedded ({} injections)",
            t.cleared, t.pieces, t.lexical_floor, t.flags_lost, t.injections_lost
        );
    }
    let e = &report.errors;
    print_errors("missed injections", &e.missed_injections, e.missed_total);
    print_errors("flagged benign texts", &e.flagged_benign, e.flagged_benign_total);
}

fn print_errors(what: &str, listed: &[ScreenError], total: usize) {
    if total == 0 {
        return;
    }
    println!("{what}: {total} (the {} furthest from the threshold)", listed.len());
    for x in listed {
        let tag = [x.lang.as_deref(), x.kind.as_deref()].into_iter().flatten().collect::<Vec<_>>();
        println!("  line {} [{}] {:+.3}: {:?}", x.line, tag.join(", "), x.margin, x.text);
        if x.decided_by.origin != "whole" {
            println!(
                "    decided by {} {}: {:?}",
                x.decided_by.origin, x.decided_by.piece, x.decided_by.excerpt
            );
        }
    }
}
