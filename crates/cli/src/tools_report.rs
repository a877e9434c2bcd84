//! The plain-text form of `switchyard eval tools`' report.

use crate::measure::table;
use switchyard_eval::ToolsReport;

/// Prints the figures per side and group, then what the deployed selection got wrong.
pub(crate) fn print_tools_report(report: &ToolsReport) {
    println!(
        "{} tools ({} without a description), {} queries ({} skipped, {} need no tool), model {}, {:.1} s",
        report.dataset.tools,
        report.dataset.warnings,
        report.dataset.queries,
        report.dataset.skipped_unknown_gold,
        report.dataset.no_tool_queries,
        report.model.name,
        report.timings.total_ms / 1e3
    );
    if let Some(id) = &report.index.adapter {
        println!("query adapter {id}: tools are scored in its space");
    }
    if let Some(f) = &report.selection {
        println!(
            "fusion: lexical weight {:.2} ({}), gate z {:.3}, lexical gate {:.2}; deployed: {:.2} tools per query",
            f.lexical_weight, f.source, f.gate_z, f.lexical_gate, report.mean_selected_deployed
        );
    }
    if let Some(r) = report.no_tool_selected_rate {
        println!("no-tool queries that got a tool: {r:.3}");
    }
    let mut labels: Vec<String> = Vec::new();
    let mut groups: Vec<(&str, &switchyard_eval::Compared)> = Vec::new();
    if let Some(o) = &report.overall {
        groups.push(("", o));
    }
    groups.extend(report.per_group.iter().map(|(k, c)| (k.as_str(), c)));
    for (g, _) in &groups {
        for side in ["dense", "bm25", "hybrid", "hybrid@max_results", "deployed"] {
            labels.push(if g.is_empty() { side.into() } else { format!("{g}: {side}") });
        }
    }
    let mut rows = Vec::new();
    for (i, (_, c)) in groups.iter().enumerate() {
        let sides = [&c.dense, &c.bm25, &c.hybrid, &c.hybrid_cut_at_max_results, &c.deployed];
        for (j, m) in sides.into_iter().enumerate() {
            rows.push((labels[i * 5 + j].as_str(), m));
        }
    }
    table(&rows);
    if let Some(g) = &report.hybrid_gain {
        let e = |e: &switchyard_eval::interval::Estimate| {
            format!("{:+.3} [{:+.3}, {:+.3}]", e.value, e.low, e.high)
        };
        println!(
            "hybrid recall@{} less dense {}, less bm25 {}; less the better side ({}) {} (95%, paired by query)",
            g.k,
            e(&g.over_dense),
            e(&g.over_bm25),
            g.better_side,
            e(&g.over_better_side)
        );
    }
    let e = &report.errors;
    if e.missed_total == 0 {
        return;
    }
    let counts = |v: &[(String, usize)]| {
        v.iter().map(|(name, n)| format!("{name} {n}")).collect::<Vec<_>>().join(", ")
    };
    println!("left out most often: {}", counts(&e.most_left_out));
    println!("selected most often where not right: {}", counts(&e.most_wrongly_selected));
    println!(
        "queries with a right tool left out: {} (the {} ranked furthest down)",
        e.missed_total,
        e.misses.len()
    );
    for m in &e.misses {
        let missing: Vec<String> = m
            .missing
            .iter()
            .map(|t| match t.hybrid_rank {
                Some(r) => format!("{} (ranked {r})", t.name),
                None => format!("{} (not ranked)", t.name),
            })
            .collect();
        println!(
            "  line {}{} {:?}: left out {}; selected {}",
            m.line,
            m.lang.as_deref().map(|l| format!(" [{l}]")).unwrap_or_default(),
            m.query,
            missing.join(", "),
            m.selected.join(", ")
        );
    }
}
