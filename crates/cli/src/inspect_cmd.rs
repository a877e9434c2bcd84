//! `switchyard inspect`: what an index holds, section by section, and the screen's lines the
//! build output shares.

use crate::print_json;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use switchyard::format::{Index, OpenOptions};

/// Arguments of `switchyard inspect`.
#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The index file.
    pub file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn inspect(a: InspectArgs) -> Result<()> {
    let t = std::time::Instant::now();
    let index = Index::open(&a.file, &OpenOptions::new())?;
    let open_ms = t.elapsed().as_secs_f64() * 1e3;
    let h = index.header();
    let m = index.meta();
    let sections: Vec<serde_json::Value> = index
        .sections()
        .iter()
        .map(|s| serde_json::json!({"kind": s.kind.name(), "offset": s.offset, "len": s.len, "rows": s.rows, "cols": s.cols, "stride": s.stride, "crc32": format!("{:08x}", s.crc32)}))
        .collect();
    let report = serde_json::json!({
        "path": a.file, "format_version": h.version, "dim": h.dim, "file_len": h.file_len, "flags": h.flags,
        "model": m.model, "manifest_hash": m.manifest_hash, "sections": sections,
        "counts": {"tools": m.tools.len(), "skills": m.skills.len(), "modes": m.modes.len(), "injections": m.injections.len(), "benign": m.benign.len()},
        "default_mode": m.default_mode, "default_mode_tool_share": m.default_mode_tool_share(),
        "thresholds": m.thresholds, "open_ms": open_ms,
        "selection": index.selection().map(|sel| serde_json::json!({
            "builder_version": sel.builder_version,
            "tools": sel.tools, "skills": sel.skills, "mode": sel.mode,
            "out_of_mode_penalty": sel.out_of_mode_penalty, "hints": sel.hints,
            "servers": {"names": sel.servers.names, "weight": sel.servers.weight},
            "lexical_terms": {"tools": sel.tools_lexical.terms.len(), "skills": sel.skills_lexical.terms.len()},
        })),
        "screen": index.screen().map(|s| serde_json::json!({
            "builder_version": s.builder_version,
            "middle_layer": index.screen_layer(),
            "windowing": s.windowing,
            "fallback_reason": s.fallback_reason,
            "head": s.head.as_ref().map(|h| serde_json::json!({
                "threshold": h.threshold, "near_copy_threshold": h.near_copy_threshold, "target_fpr": h.target_fpr, "l2": h.l2,
                "attack_weight": h.attack_weight, "benign_weight": h.benign_weight,
                "oof_auc": h.oof_auc, "oof_recall": h.oof_recall, "oof_fpr": h.oof_fpr,
                "attacks": h.attacks, "benign": h.benign, "sources": h.sources,
            })),
        })),
        "screen_triage": index.screen_triage(),
        "screen_request": index.screen_request().map(|q| serde_json::json!({
            "threshold": q.threshold, "oof_fpr": q.oof_fpr, "oof_planted_recall": q.oof_planted_recall,
            "requests": q.requests, "document_rows": q.document_rows, "calibration_texts": q.calibration_texts,
        })),
        "screen_families": index.screen_families().map(|f| serde_json::json!({
            "family_fpr": f.family_fpr,
            "oof_fpr_combined": f.oof_fpr_combined,
            "heads": f.heads.iter().map(|h| serde_json::json!({
                "family": h.family, "categories": h.categories, "threshold": h.threshold,
                "lexical": h.lexical.is_some(), "lexical_floor": h.lexical_floor,
                "oof_auc": h.oof_auc, "oof_recall": h.oof_recall, "oof_fpr": h.oof_fpr,
                "attacks": h.attacks, "benign": h.benign,
                "hidden_units": index.screen_family_hidden()
                    .and_then(|l| l.layers.iter().find(|l| l.family == h.family))
                    .map(|l| l.units()),
            })).collect::<Vec<_>>(),
        })),
        "mode_questions": index.mode_questions().map(|q| serde_json::json!({
            "rules_version": q.rules_version,
            "modes": m.modes.iter().zip(&q.modes).map(|(mode, c)| serde_json::json!({
                "mode": mode.name, "examples": c.examples, "questions": c.questions,
            })).collect::<Vec<_>>(),
        })),
        "query_shift": index.query_shift().map(|q| serde_json::json!({
            "strength": q.strength, "requests": q.requests,
        })),
        "late": index.late().map(|l| serde_json::json!({
            "blend": l.blend,
            "tool_tokens": l.tools.scales.len(),
            "skill_tokens": l.skills.scales.len(),
            "both_sides": !l.tools.ids.is_empty(),
        })),
        "off_topic": index.off_topic().map(|o| serde_json::json!({
            "margin": o.margin, "topics": o.names, "covered": o.covered,
        })),
        "language_shift": index.language_shift().map(|l| serde_json::json!({
            "strength": l.strength, "full_margin": l.full_margin, "languages": l.languages,
            "catalog_language": l.catalog_language.and_then(|c| l.languages.get(c as usize)),
            "unmoved": l.unmoved,
        })),
        "adapter": index.adapter().map(|a| serde_json::json!({
            "id": a.id, "rank": a.rank, "trained_on": a.trained_on,
            "info": serde_json::from_str::<serde_json::Value>(&a.info_json).ok(),
        })),
    });
    if a.json {
        return print_json(&report);
    }
    println!("{}  format v{}  {} bytes  dim {}", a.file.display(), h.version, h.file_len, h.dim);
    println!(
        "model      {} ({}), prefix {:?}, pooling {}",
        m.model.name, m.model.fingerprint, m.model.prefix, m.model.pooling
    );
    println!("manifests  {}", m.manifest_hash);
    println!(
        "counts     {} tools, {} skills, {} modes, {} injection patterns, {} benign",
        m.tools.len(),
        m.skills.len(),
        m.modes.len(),
        m.injections.len(),
        m.benign.len()
    );
    let t = &m.thresholds;
    println!(
        "thresholds tool {:.3}  skill {:.3}  mode {:.3}  injection {:.3}  memory {:.3}",
        t.tool_min, t.skill_min, t.mode_min, t.injection, t.memory_min
    );
    match index.static_space() {
        Some(st) => {
            let c = st.meta;
            println!(
                "cascade    {} pieces; answers when coverage >= {:.2} and lead >= {:.2} of the \
                 static spread; static tool {:.3}  skill {:.3}  mode {:.3}",
                c.piece_ids.len(),
                c.min_coverage,
                c.margin,
                c.thresholds.tool_min,
                c.thresholds.skill_min,
                c.thresholds.mode_min
            );
        }
        None => println!("cascade    none (every task runs the model)"),
    }
    match index.screen() {
        Some(sc) => match &sc.head {
            Some(h) => println!(
                "screen     learned head ({}): threshold {:.3} for {:.1}% false positives, near copies of an attack from cosine {:.3}; {} attacks and {} benign rows ({}); out of fold AUC {:.3}, recall {:.3}, FPR {:.3}; windows of {} bytes, at most {}",
                match index.screen_lexical() {
                    Some(l) => format!(
                        "embedding + lexical n-grams, {} weights, features v{}",
                        l.weights.len(),
                        l.features_version
                    ),
                    None => "embedding".to_string(),
                }
                .replacen(
                    "embedding",
                    &match index.screen_layer() {
                        Some(l) => format!("embedding + layer {l}"),
                        None => "embedding".to_string(),
                    },
                    1,
                ),
                h.threshold,
                h.target_fpr * 100.0,
                h.near_copy_threshold,
                h.attacks,
                h.benign,
                h.sources.join(", "),
                h.oof_auc,
                h.oof_recall,
                h.oof_fpr,
                sc.windowing.target_bytes,
                sc.windowing.max_windows
            ),
            None => println!(
                "screen     contrast rule only: {}",
                sc.fallback_reason.as_deref().unwrap_or("no head")
            ),
        },
        None => println!(
            "screen     contrast rule only (format version {} has no learned screen)",
            h.version
        ),
    }
    if let Some(f) = index.screen_families() {
        println!("{}", families_line(f));
    }
    if let Some(q) = index.screen_request() {
        println!("{}", request_line(q));
    }
    match index.screen_triage() {
        Some(t) => println!("{}", triage_line(t)),
        None => println!("triage     none (every window of an untrusted entry is embedded)"),
    }
    match index.adapter() {
        Some(ad) => println!(
            "adapter    {} (rank {}, trained on {}): tools and skills are scored in its space",
            ad.id,
            ad.rank,
            ad.trained_on.join(", ")
        ),
        None => println!("adapter    none (the model's own vectors)"),
    }
    match index.query_shift() {
        Some(q) => println!(
            "shift      tasks score tools and skills less {:.2} x the centroid of {} ordinary requests",
            q.strength, q.requests
        ),
        None => println!("shift      none (built before format 7)"),
    }
    match index.late() {
        Some(l) => println!(
            "late       {:.2} of the dense score compares tokens one by one ({} tool and {} skill tokens; {})",
            l.blend,
            l.tools.scales.len(),
            l.skills.scales.len(),
            if l.tools.ids.is_empty() {
                "the task's tokens against the item's only, built before format 12"
            } else {
                "the task's tokens against the item's and the item's against the task's"
            }
        ),
        None => println!(
            "late       none (a model without a late-interaction share, a catalog whose token states pass {} MiB, or built before format 11)",
            switchyard_build_index::LATE_STATE_BUDGET >> 20
        ),
    }
    match index.off_topic() {
        Some(o) => {
            // A catalog in another language has each topic twice: in English and in its own.
            let mut kept: Vec<&str> = Vec::new();
            for n in &o.names {
                if !kept.contains(&n.as_str()) {
                    kept.push(n);
                }
            }
            println!(
                "off-topic  a task nearer to one of {} general topics{} than to every tool and skill card by {:.3} gets none ({}); left out as served by the catalog (measured, or listed in its off_topic.toml): {}",
                kept.len(),
                if o.names.len() > kept.len() {
                    " (in English and the catalog's language)"
                } else {
                    ""
                },
                o.margin,
                kept.join(", "),
                if o.covered.is_empty() { "none".to_string() } else { o.covered.join(", ") }
            )
        }
        None => println!(
            "off-topic  none (a model without an off-topic margin, an index with a query adapter, a catalog whose off_topic.toml says `check = false`, or built before format 16)"
        ),
    }
    match index.language_shift() {
        Some(l) => println!(
            "language   catalog {}; a task in another language moves {} times the offset between the two languages' centroids, in full from a lead of {:.3}; never moved: {}",
            l.catalog_language
                .and_then(|c| l.languages.get(c as usize))
                .map_or("not clear from its texts (no task moves)", String::as_str),
            l.strength,
            l.full_margin,
            if l.unmoved.is_empty() { "none".to_string() } else { l.unmoved.join(", ") }
        ),
        None => println!(
            "language   no shift (a model without one, an index with a query adapter, or built before format 18)"
        ),
    }
    match index.selection() {
        Some(sel) => {
            for (what, f, lex) in [
                ("tools", &sel.tools, &sel.tools_lexical),
                ("skills", &sel.skills, &sel.skills_lexical),
            ] {
                // Catalogs too small to gate store the lowest finite gate: always open.
                let gate = if f.gate_z <= f32::MIN / 2.0 {
                    "gate always open (too few items to gate)".to_string()
                } else {
                    format!("gate z {:.2} or lexical {:.2}", f.gate_z, f.lexical_gate)
                };
                println!(
                    "hybrid     {what}: lexical weight {:.2} ({}), {gate}, {} terms",
                    f.lexical_weight,
                    f.source,
                    lex.terms.len()
                );
            }
            if !sel.servers.names.is_empty() {
                println!(
                    "servers    {} MCP servers; a tool gains {:.2} of its server's lead over the mean tool",
                    sel.servers.names.len(),
                    sel.servers.weight
                );
            }
            let c = &sel.mode;
            match c.semantic_margin {
                Some(margin) => println!(
                    "modes      semantic guess needs a lead of {margin:.4} ({} examples, leave-one-out precision {:.2} on {:.0}% of them); default {}",
                    c.examples,
                    c.precision.unwrap_or(0.0),
                    100.0 * c.coverage.unwrap_or(0.0),
                    m.default_mode
                ),
                None => {
                    println!("modes      no semantic guess: {}", c.note.as_deref().unwrap_or("off"))
                }
            }
            if let Some(q) = index.mode_questions() {
                println!("{}", questions_line(m, q));
            }
            if let Some(share) = m.default_mode_tool_share() {
                let role = if share < switchyard::router::CATCH_ALL_SHARE {
                    "one topic among the others: an unsure task goes to the mode its best tools favour before it"
                } else {
                    "the catalog's catch-all: an unsure task the tools do not settle falls back to it"
                };
                println!(
                    "default    {} offers {:.0}% of the tools, {role}",
                    m.default_mode,
                    100.0 * share
                );
            }
        }
        None => {
            println!("hybrid     none (built before format 3: cosine thresholds, hard mode filter)")
        }
    }
    match index.thinking() {
        Some(t) => {
            let names: Vec<&str> = t.modes.iter().map(|m| m.name.as_str()).collect();
            let semantic = match t.calibration.semantic_margin {
                Some(margin) => format!("semantic fallback from a lead of {margin:.4}"),
                None => "no semantic fallback".to_string(),
            };
            println!("thinking   {}; default {}; {semantic}", names.join(", "), t.default_mode);
        }
        None => println!("thinking   none (rebuild to get the built-in modes)"),
    }
    println!(
        "{:<16} {:>10} {:>10} {:>7} {:>5} {:>6} {:>9}",
        "section", "offset", "len", "rows", "cols", "stride", "crc32"
    );
    for s in index.sections() {
        println!(
            "{:<16} {:>10} {:>10} {:>7} {:>5} {:>6} {:>9}",
            s.kind.name(),
            s.offset,
            s.len,
            s.rows,
            s.cols,
            s.stride,
            format!("{:08x}", s.crc32)
        );
    }
    Ok(())
}

/// The `inspect` line of the mode questions: which modes' examples ask questions, and whether
/// the question rule can apply (the default mode's examples ask none).
fn questions_line(
    m: &switchyard::format::IndexMeta,
    q: &switchyard::format::ModeQuestionsMeta,
) -> String {
    let counts: Vec<String> = m
        .modes
        .iter()
        .zip(&q.modes)
        .map(|(mode, c)| format!("{} {}/{}", mode.name, c.questions, c.examples))
        .collect();
    let default = m.modes.iter().zip(&q.modes).find(|(mode, _)| mode.name == m.default_mode);
    let applies = default.is_some_and(|(_, c)| c.examples > 0 && c.questions == 0)
        && q.modes.iter().any(|c| c.questions > 0);
    let effect = if applies {
        "an unsure guess of a question goes to the best mode whose examples ask questions"
    } else {
        "no question rule (it needs a default mode whose examples ask none and another mode whose examples ask some)"
    };
    format!("questions  examples that ask one: {}; {effect}", counts.join(", "))
}

/// The screen's family heads, one line each (build output and `inspect`).
pub(crate) fn families_line(f: &switchyard::format::ScreenFamiliesMeta) -> String {
    let heads: Vec<String> = f
        .heads
        .iter()
        .map(|h| {
            format!(
                "families   {} head ({} attacks of {}): threshold {:.3}{}; out of fold AUC {:.3}, recall {:.3}, FPR {:.3}",
                h.family,
                h.attacks,
                h.categories.join(", "),
                h.threshold,
                h.lexical_floor
                    .map(|f| format!(", triage floor {f:.3}"))
                    .unwrap_or_default(),
                h.oof_auc,
                h.oof_recall,
                h.oof_fpr
            )
        })
        .collect();
    format!(
        "{}\nfamilies   the main head and the family heads (allowed {:.2}% more) together flag {:.2}% of the benign training rows out of fold",
        heads.join("\n"),
        f.family_fpr * 100.0,
        f.oof_fpr_combined * 100.0
    )
}

/// The screen's request contrast, in one line (build output and `inspect`).
pub(crate) fn request_line(q: &switchyard::format::ScreenRequestMeta) -> String {
    // An index before version 15 (or a build that chose no weight) compares the contrast alone.
    let overlap = if q.coherence_weight > 0.0 {
        format!(
            ", less {} times the share of its 4-grams found within {} bytes around it",
            q.coherence_weight, q.coherence_reach_bytes
        )
    } else {
        String::new()
    };
    format!(
        "request    an entry longer than a window is flagged when its most request-like sentence stands {:.3} above the others' mean{overlap} (request head on {} requests and {} document sentences); out of fold it flags {:.1}% of {} long benign texts and {:.1}% of documents with a request planted",
        q.threshold,
        q.requests,
        q.document_rows,
        q.oof_fpr * 100.0,
        q.calibration_texts,
        q.oof_planted_recall * 100.0
    )
}

/// What the screen's triage does, and the sentence pieces' threshold it makes affordable
/// (build output and `inspect`).
pub(crate) fn triage_line(t: &switchyard::format::ScreenTriageMeta) -> String {
    let sentences = match t.sentence_threshold {
        Some(s) => format!(
            "\nsentences  each sentence of an entry longer than one window is screened alone too (when the triage keeps it), flagged at a logit of {s:.3}; {:.1}% of {} long benign training texts reach it",
            t.sentence_benign_flagged * 100.0,
            t.sentence_texts
        ),
        None => "\nsentences  not screened on their own (an index before version 17, built with --no-sentence-pieces, or without a long benign training text to set their threshold on)".into(),
    };
    format!(
        "triage     windows with a lexical logit under {:.3} are cleared without an embedding; out of fold it clears {:.1}% of the flagged training attacks (at most {:.1}%) and {:.1}% of the benign rows{sentences}",
        t.lexical_floor,
        t.oof_missed * 100.0,
        t.max_miss * 100.0,
        t.oof_benign_cleared * 100.0
    )
}
