//! Per-model score thresholds, derived at build time from the catalog itself.
//!
//! Cosine scores live on different scales per model: MiniLM gives unrelated texts ~0.1-0.3,
//! e5 ~0.75-0.85. Fixed constants would be right for one model only, so each index carries
//! thresholds measured on its own catalog with its own model:
//!
//! - **Selection** (tools, skills, modes). *Related* = mean score of an item's example against
//!   its own description; *unrelated* = mean score of an example against the other items'
//!   descriptions. The minimum score is `unrelated + 0.35 * (related - unrelated)`: a third of
//!   the way from "about something else" to "a way of asking for this item". It sits low on
//!   purpose: selection is capped by `max_results`, so recall matters more than precision.
//!   Tools without examples are probed with their names instead (as words: "add agenda"), a
//!   short query-like text, embedded at build time but not stored. Measured on metatool and
//!   api_bank, which have no examples: comparing descriptions with descriptions instead set
//!   e5-small's threshold above most real queries (recall@5 at threshold 0.31 and 0.12).
//!   Groups with too few items borrow the tools' figures.
//! - **Memory relevance** uses the tools' minimum (the same task-vs-short-text comparison).
//! - **Injection**. *Ordinary* = for each tool description, its best score against any attack
//!   pattern (catalog text is ordinary, instruction-like but benign); *attack* = for each
//!   pattern, its best score against another pattern (leave-one-out). The threshold is halfway
//!   from the 95th percentile of ordinary to the median of attack, and never below the former.
//!   At run time an entry is flagged when its best attack score reaches it AND beats its best
//!   benign look-alike score (the router's contrast rule).

use switchyard_format::Thresholds;

use switchyard_format::dot;

fn mean(v: &[f32]) -> Option<f32> {
    (!v.is_empty()).then(|| v.iter().sum::<f32>() / v.len() as f32)
}

fn quantile(v: &mut [f32], q: f32) -> Option<f32> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f32::total_cmp);
    let i = ((v.len() - 1) as f32 * q).round() as usize;
    Some(v[i])
}

/// (unrelated mean, related mean) of one group of items given as row spans of a matrix.
///
/// Both sides compare the same kinds of text, an example against a description: *related* is
/// an example against its own item's description, *unrelated* an example against every other
/// item's description. (Description against description would mislead: descriptions share a
/// template, and for e5 they score higher with each other than with their own examples.)
/// Items without examples use their name (as words, a short query-like text) as the probe when
/// `names` (one row per item) is given, else their description against other descriptions.
fn group_scale(
    dim: usize,
    rows: &[f32],
    spans: &[(usize, usize)],
    names: Option<&[f32]>,
) -> (Option<f32>, Option<f32>) {
    let row = |i: usize| &rows[i * dim..(i + 1) * dim];
    let mut unrelated = Vec::new();
    let mut related = Vec::new();
    for (a, &(first, count)) in spans.iter().enumerate() {
        let probes: Vec<&[f32]> = if count > 1 {
            (first + 1..first + count).map(row).collect()
        } else if let Some(n) = names.filter(|n| n.len() >= (a + 1) * dim) {
            vec![&n[a * dim..(a + 1) * dim]]
        } else {
            vec![row(first)]
        };
        let is_probe_text = count > 1 || names.is_some();
        for p in probes {
            if is_probe_text {
                related.push(dot(p, row(first)));
            }
            for (b, other) in spans.iter().enumerate() {
                if a != b {
                    unrelated.push(dot(p, row(other.0)));
                }
            }
        }
    }
    (mean(&unrelated), mean(&related))
}

fn min_score(unrelated: f32, related: f32) -> f32 {
    unrelated + 0.35 * (related - unrelated).max(0.0)
}

/// Derives thresholds; matrices are unpadded row-major `dim`-wide rows.
pub fn derive_thresholds(
    dim: usize,
    tools: (&[f32], &[(usize, usize)]),
    skills: (&[f32], &[(usize, usize)]),
    modes: (&[f32], &[(usize, usize)]),
    attacks: &[f32],
    tool_names: Option<&[f32]>,
) -> Thresholds {
    let (tu, tr) = group_scale(dim, tools.0, tools.1, tool_names);
    // Without two tools there is nothing to measure; these defaults are MiniLM-like and only
    // matter for toy catalogs.
    let tool_unrelated = tu.unwrap_or(0.15);
    let tool_related = tr.unwrap_or(tool_unrelated + 0.5 * (1.0 - tool_unrelated));
    // With neither examples nor names there is no measure of "related": the floor is then the
    // unrelated mean itself.
    let tool_min =
        if tr.is_some() { min_score(tool_unrelated, tool_related) } else { tool_unrelated };
    let scaled = |(u, r): (Option<f32>, Option<f32>)| match (u, r) {
        (Some(u), Some(r)) => min_score(u, r),
        (Some(u), None) => u,
        _ => tool_min,
    };
    let skill_min = if skills.1.len() >= 2 {
        scaled(group_scale(dim, skills.0, skills.1, None))
    } else {
        tool_min
    };
    let mode_min = if modes.1.len() >= 2 {
        scaled(group_scale(dim, modes.0, modes.1, None))
    } else {
        tool_min
    };

    let n_attacks = attacks.len() / dim.max(1);
    let attack = |i: usize| &attacks[i * dim..(i + 1) * dim];
    let mut loo: Vec<f32> = (0..n_attacks)
        .map(|i| {
            (0..n_attacks)
                .filter(|&j| j != i)
                .map(|j| dot(attack(i), attack(j)))
                .fold(f32::MIN, f32::max)
        })
        .filter(|s| *s > f32::MIN)
        .collect();
    let mut ordinary: Vec<f32> = tools
        .1
        .iter()
        .map(|&(first, _)| {
            (0..n_attacks)
                .map(|j| dot(&tools.0[first * dim..(first + 1) * dim], attack(j)))
                .fold(f32::MIN, f32::max)
        })
        .filter(|s| *s > f32::MIN)
        .collect();
    let injection = match (quantile(&mut ordinary, 0.95), quantile(&mut loo, 0.5)) {
        (Some(o), Some(a)) => o + 0.5 * (a - o).max(0.0),
        (Some(o), None) => o + 0.5 * (1.0 - o),
        (None, Some(a)) => a,
        (None, None) => 0.8,
    };
    Thresholds {
        tool_min,
        skill_min,
        mode_min,
        injection,
        memory_min: tool_min,
        unrelated_mean: tool_unrelated,
        related_mean: tool_related,
    }
}
