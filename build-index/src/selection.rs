//! The `selection` section: lexical statistics, the fusion weight and gates of tools and
//! skills, and the mode step's calibration, all measured on the catalog itself.
//!
//! - **Lexical statistics**: BM25 over each item's whole text (name as words, description,
//!   tags, parameter names and descriptions, examples), analysed by `switchyard-lexical`.
//! - **Fusion weight**: with enough examples ([`MIN_PROBES`]), each example is a probe in
//!   leave-one-out (its own row and its own words removed from its item) and the weight in
//!   [`WEIGHT_GRID`] with the best mean reciprocal rank wins; a tie keeps the value nearer the
//!   default. Without examples there is nothing to measure, and [`DEFAULT_LEXICAL_WEIGHT`] holds.
//! - **Gate** (is the task about this catalog at all?): a task's *peak* is its best item's
//!   standard score among all items (how many standard deviations it stands above the mean
//!   item: the same measure on every model's cosine scale). Off-topic probes shipped with the
//!   builder ([`OFF_TOPIC`], eight languages) are scored like tasks and the gate sits at their
//!   90th percentile peak, but never above the 1st percentile of the catalog's own requests'
//!   peaks (its examples, from [`MIN_GATE_EXAMPLES`] of them; with fewer, each item's card
//!   against the other items less [`GATE_SLACK`]), so a catalog that really covers general
//!   topics keeps its recall. It never goes below [`MIN_GATE_Z`]; catalogs under
//!   [`MIN_GATED_ITEMS`] items are never gated.
//! - **Mode margin**: every mode example scored against the modes in leave-one-out; the
//!   semantic fallback decides only with a lead (best minus runner-up) at which leave-one-out
//!   precision reached [`MODE_PRECISION`]. Too few examples, or no such lead: the fallback is off
//!   and the declared default mode decides.
//! - **Mode questions** (its own section, [`mode_questions`]): how many of each mode's examples
//!   ask a question, which lets the router send a question the semantic guess is unsure of to
//!   the modes whose examples ask questions when the default mode's ask none.

use switchyard_format::{
    FusionMeta, ModeCalibration, ModeQuestionCount, ModeQuestionsMeta, QueryShiftMeta,
    SelectionMeta,
};
use switchyard_lexical::{
    Bm25Scorer, Fused, LexicalScores, analyze, build, fuse_into, standard_scores_into,
};
use switchyard_manifest::Catalog;

/// Version of this calibration; bump it whenever the selection section's figures change for
/// the same catalog and model, so cached and up-to-date checks rebuild. (7: the late section's
/// budget grew from 32,768 tokens to 48 MiB of states, so large catalogs gain one. 8: MiniLM's
/// share went from 0 to 0.5, and an index without a late section cannot say whether the share
/// was 0 or the catalog over the budget, so every index rebuilds once. 9: the off-topic
/// section. 10: fewer than a hundred examples leave the gate to the cards, and a tool's
/// examples lose the whole centroid of ordinary requests. 11: a catalog in German, French,
/// Spanish, Portuguese or Italian also gets the general topics in its language. 12: the mode
/// margin is a lead between the modes' centroids, `switchyard_format::MODE_CENTROIDS_SINCE`.
/// 13: the thinking modes' too, `switchyard_format::THINKING_CENTROIDS_SINCE`. 14: the tools'
/// MCP servers, `crate::servers`.)
pub const BUILDER_VERSION: u32 = 14;
/// How many of each mode's examples ask a question (see `switchyard_lexical::question`), in
/// the catalog's mode order.
pub fn mode_questions(catalog: &Catalog) -> ModeQuestionsMeta {
    ModeQuestionsMeta {
        rules_version: switchyard_lexical::QUESTION_RULES_VERSION,
        modes: catalog
            .modes
            .iter()
            .map(|m| ModeQuestionCount {
                examples: m.examples.len() as u32,
                questions: m.examples.iter().filter(|e| switchyard_lexical::is_question(e)).count()
                    as u32,
            })
            .collect(),
    }
}

/// Lexical weight when the catalog has too few examples to measure one. Chosen on development
/// splits only (a tenth of metatool, Seal-Tools' dev split), see `benches/RESULTS.md`: metatool
/// (paraphrased queries) peaks at 0.2-0.3, Seal-Tools (queries reusing the descriptions' words)
/// keeps rising to 0.6; 0.3 is within 0.005 of metatool's best and +0.04-0.06 over BM25 on
/// Seal-Tools dev.
pub const DEFAULT_LEXICAL_WEIGHT: f32 = 0.3;
/// Weights tried in calibration.
pub const WEIGHT_GRID: [f32; 8] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7];
/// Fewest probes (examples) for a measured fusion weight.
pub const MIN_PROBES: usize = 30;
/// Most probes used in calibration (the first ones by item order; keeps big catalogs fast).
pub const MAX_PROBES: usize = 600;
/// Lowest gate: the best item must stand at least this many standard deviations above the
/// task's mean item.
pub const MIN_GATE_Z: f32 = 1.0;
/// Quantile of the off-topic probes' peak standard score the gate sits at.
pub const OFF_TOPIC_QUANTILE: f32 = 0.9;
/// Quantile of the catalog's own probes' peaks the gate may not exceed: recall comes first, so
/// all but the lowest 1% of them pass.
pub const OWN_QUANTILE: f32 = 0.01;
/// Slack under the cards' bound (catalogs without examples), in standard deviations: a card is
/// not a request, and requests that name several tools or phrase a need unlike any description
/// stand out less (measured on Seal-Tools dev: the 1st percentile of its cards' peaks still
/// shut out 15% of its queries; one deviation lower, 1%).
pub const GATE_SLACK: f32 = 1.0;
/// Fewest examples whose own peaks bound the gate (else the cards' bound holds): a hundred, so
/// that their [`OWN_QUANTILE`] is not simply the lowest of a few.
pub const MIN_GATE_EXAMPLES: usize = 100;
/// Catalogs with fewer items keep their gate open: among `n` items no standard score can
/// exceed `sqrt(n - 1)`, so a small catalog's peaks have no room to separate on- from
/// off-topic (and it costs little to offer its tools).
pub const MIN_GATED_ITEMS: usize = 20;
/// Share of a task's term weight one item must match to open the gate on words alone.
pub const LEXICAL_GATE: f32 = 0.6;
/// Per-item floor once the gate is open: above the task's mean item, or sharing a term.
pub const FLOOR_Z: f32 = 0.0;
/// Leave-one-out precision the semantic mode fallback must reach at its margin.
pub const MODE_PRECISION: f32 = 0.9;
/// Fewest examples per non-default mode for a semantic mode fallback.
pub use switchyard_format::MIN_MODE_EXAMPLES;
/// Penalty of an item outside a weakly guessed mode, on the fused 0..=1 scale.
pub const OUT_OF_MODE_PENALTY: f32 = 0.15;

/// Tasks no ordinary catalog serves: general knowledge, chit-chat, creative writing, personal
/// questions, in eight languages. They calibrate the gate; they are never stored.
pub const OFF_TOPIC: &[&str] = &[
    "what is the capital of Peru",
    "tell me a joke about penguins",
    "write a short poem about the sea at night",
    "who painted the Mona Lisa",
    "how many legs does a spider have",
    "what should I cook for dinner tonight",
    "explain why the sky is blue",
    "I had a weird dream about my grandmother",
    "recommend a good fantasy novel",
    "what does the word serendipity mean",
    "how do I get over a breakup",
    "is it healthy to drink coffee every day",
    "qual é a capital da Austrália",
    "me conta uma curiosidade sobre baleias",
    "escreva um poema sobre o outono",
    "quelle est la plus haute montagne d'Europe",
    "raconte-moi une blague",
    "pourquoi les chats ronronnent-ils",
    "¿cuántos planetas hay en el sistema solar?",
    "escríbeme una canción de cumpleaños",
    "¿qué significa soñar con agua?",
    "wie hoch ist der Eiffelturm",
    "erzähl mir einen Witz über Hunde",
    "was ist der Sinn des Lebens",
    "chi ha scritto la Divina Commedia",
    "dimmi una barzelletta",
    "日本で一番高い山は何ですか",
    "面白い話をして",
    "天空为什么是蓝色的",
    "给我讲个笑话",
];

/// What the builder hands over: the catalog and its embedded rows.
pub(crate) struct Inputs<'a> {
    pub catalog: &'a Catalog,
    pub dim: usize,
    /// Unpadded row-major rows of tools, skills, modes.
    pub tools: (&'a [f32], &'a [(usize, usize)]),
    pub skills: (&'a [f32], &'a [(usize, usize)]),
    pub modes: (&'a [f32], &'a [(usize, usize)]),
    /// The embedded [`OFF_TOPIC`] probes.
    pub off_topic: &'a [f32],
    /// Per tools and skills row, what any request scores against it (subtracted from every
    /// probe's score, as the router does with a task's).
    pub shift: Option<&'a QueryShiftMeta>,
}

use switchyard_format::dot;

fn quantile(mut v: Vec<f32>, q: f32) -> Option<f32> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f32::total_cmp);
    Some(v[((v.len() - 1) as f32 * q).round() as usize])
}

/// One item kind's rows and texts.
struct Kind<'a> {
    rows: &'a [f32],
    spans: &'a [(usize, usize)],
    /// Per row, subtracted from a probe's score (empty: nothing).
    shift: &'a [f32],
    /// Per item: its lexical document and its examples (row 1.. texts).
    docs: Vec<String>,
    examples: Vec<Vec<String>>,
}

impl Kind<'_> {
    fn row(&self, dim: usize, r: usize) -> &[f32] {
        &self.rows[r * dim..(r + 1) * dim]
    }

    /// Best score (cosine less the row's shift) of every item for a probe, skipping row `skip`.
    fn cosines(&self, dim: usize, probe: &[f32], skip: Option<usize>) -> Vec<f32> {
        self.spans
            .iter()
            .map(|&(first, count)| {
                (first..first + count)
                    .filter(|&r| Some(r) != skip)
                    .map(|r| {
                        dot(probe, self.row(dim, r)) - self.shift.get(r).copied().unwrap_or(0.0)
                    })
                    .fold(f32::NEG_INFINITY, f32::max)
            })
            .collect()
    }

    /// The best item's standard score for a probe (see [`FusionMeta`]).
    fn peak(&self, dim: usize, probe: &[f32], skip: Option<usize>) -> f32 {
        let mut z = Vec::new();
        standard_scores_into(&self.cosines(dim, probe, skip), &mut z);
        z.into_iter().fold(f32::NEG_INFINITY, f32::max)
    }
}

/// Mean reciprocal rank of each weight of [`WEIGHT_GRID`] over the kind's example probes, in
/// leave-one-out; `None` with fewer than [`MIN_PROBES`] examples.
fn calibrate_weight(kind: &Kind<'_>, dim: usize) -> Option<f32> {
    let probes: Vec<(usize, usize, usize)> = kind
        .spans
        .iter()
        .enumerate()
        .flat_map(|(item, &(first, count))| (1..count).map(move |k| (item, first + k, k - 1)))
        .take(MAX_PROBES)
        .collect();
    if probes.len() < MIN_PROBES || kind.spans.len() < 2 {
        return None;
    }
    let mut rr = vec![0f64; WEIGHT_GRID.len()];
    let mut scores = LexicalScores::default();
    let mut fused: Vec<Fused> = Vec::new();
    for &(item, row, example) in &probes {
        let z = kind.cosines(dim, kind.row(dim, row), Some(row));
        // The probe's own words leave its item's document.
        let mut docs = kind.docs.clone();
        docs[item] = kind.docs_without(item, example);
        let stats = build(&docs);
        Bm25Scorer::new(&stats).score(&stats, &analyze(&kind.examples[item][example]), &mut scores);
        for (w, acc) in WEIGHT_GRID.iter().zip(rr.iter_mut()) {
            fuse_into(&z, &scores.bm25, *w, &mut fused);
            let own = fused[item].score;
            let rank = 1 + fused.iter().filter(|f| f.score > own).count();
            *acc += 1.0 / rank as f64;
        }
    }
    // Best MRR; ties (within a hair) go to the weight nearest the default.
    let best = rr.iter().copied().fold(f64::MIN, f64::max);
    WEIGHT_GRID.iter().zip(&rr).filter(|(_, r)| **r >= best - 1e-9).map(|(w, _)| *w).min_by(
        |a, b| (a - DEFAULT_LEXICAL_WEIGHT).abs().total_cmp(&(b - DEFAULT_LEXICAL_WEIGHT).abs()),
    )
}

impl Kind<'_> {
    /// Item `item`'s document without its example `example`.
    fn docs_without(&self, item: usize, example: usize) -> String {
        let ex = &self.examples[item][example];
        self.docs[item].lines().filter(|l| l != ex).collect::<Vec<_>>().join("\n")
    }
}

/// The gate of one kind: see the module docs. Catalogs of fewer than [`MIN_GATED_ITEMS`] items
/// have no meaningful spread of scores, so their gate stays open.
fn gate(kind: &Kind<'_>, inputs: &Inputs<'_>) -> f32 {
    let dim = inputs.dim;
    if kind.spans.len() < MIN_GATED_ITEMS {
        return f32::MIN;
    }
    let off: Vec<f32> =
        inputs.off_topic.chunks_exact(dim).map(|p| kind.peak(dim, p, None)).collect();
    // The examples, each against the catalog without its own row, bound the gate once there
    // are enough of them for their 1st percentile to be more than their lowest: with a few, an
    // example is written for its tool and stands out more than a colloquial request does, and
    // the warehouse catalog given 12 examples closed 13 of its 60 real tasks
    // (`benches/RESULTS.md`, session 55).
    let example_rows: usize = kind.spans.iter().map(|&(_, count)| count.saturating_sub(1)).sum();
    let own_q = if example_rows >= MIN_GATE_EXAMPLES {
        let examples: Vec<f32> = kind
            .spans
            .iter()
            .flat_map(|&(first, count)| first + 1..first + count)
            .map(|r| kind.peak(dim, kind.row(dim, r), Some(r)))
            .collect();
        quantile(examples, OWN_QUANTILE)
    } else {
        None
    };
    // With fewer, each item's card probes the other items (its own left out), a text about
    // the catalog's subject that no item matches exactly: a lower bound on how much a real
    // request stands out, less the slack.
    let own_q = own_q.unwrap_or_else(|| {
        let cards: Vec<f32> = (0..kind.spans.len().min(MAX_PROBES))
            .map(|i| {
                let mut c = kind.cosines(dim, kind.row(dim, kind.spans[i].0), None);
                c[i] = f32::NEG_INFINITY;
                let mut z = Vec::new();
                standard_scores_into(&c, &mut z);
                z.into_iter().fold(f32::NEG_INFINITY, f32::max)
            })
            .collect();
        quantile(cards, OWN_QUANTILE).map_or(f32::INFINITY, |q| q - GATE_SLACK)
    });
    let off_q = quantile(off, OFF_TOPIC_QUANTILE).unwrap_or(MIN_GATE_Z);
    off_q.min(own_q).max(MIN_GATE_Z)
}

fn fusion(kind: &Kind<'_>, inputs: &Inputs<'_>) -> FusionMeta {
    let measured = calibrate_weight(kind, inputs.dim);
    FusionMeta {
        lexical_weight: measured.unwrap_or(DEFAULT_LEXICAL_WEIGHT),
        gate_z: gate(kind, inputs),
        lexical_gate: LEXICAL_GATE,
        floor_z: FLOOR_Z,
        source: if measured.is_some() { "calibrated" } else { "default" }.into(),
    }
}

/// Leave-one-out over mode examples: the semantic fallback's margin, or why it is off.
fn calibrate_modes(inputs: &Inputs<'_>) -> ModeCalibration {
    let (rows, spans) = inputs.modes;
    let catalog = inputs.catalog;
    let default = catalog.default_mode();
    // The same test as `IndexMeta::supports_tool_agreement`, on the catalog: the examples are
    // enough (checked in `calibrate_classes`), and some tool is offered in fewer than all modes.
    let tool_agreement = catalog.tools.iter().any(|t| {
        !t.modes.is_empty()
            && !t.modes.iter().any(|m| m == "any")
            && catalog.modes.iter().any(|m| !t.modes.contains(&m.name))
    });
    let decides = format!("the default mode {default} decides");
    let unless = if tool_agreement {
        format!("{decides} unless the task's best tools favour the examples' best mode")
    } else {
        decides.clone()
    };
    let names: Vec<&str> = catalog.modes.iter().map(|m| m.name.as_str()).collect();
    calibrate_classes(
        &Classes { names: &names, spans, rows, dim: inputs.dim, default: &default, what: "mode" },
        &decides,
        &unless,
    )
}

/// A set of classes (modes, thinking modes) whose rows are a card then examples each.
pub(crate) struct Classes<'a> {
    /// Class names, in row order.
    pub names: &'a [&'a str],
    /// (first row, rows) per class.
    pub spans: &'a [(usize, usize)],
    /// The unpadded rows.
    pub rows: &'a [f32],
    /// Row width.
    pub dim: usize,
    /// The class that decides when the guess may not.
    pub default: &'a str,
    /// What a class is called in notes (`mode`, `thinking mode`).
    pub what: &'a str,
}

/// The semantic guess's calibration over a set of classes: off with fewer than two classes or a
/// non-default class under [`MIN_MODE_EXAMPLES`] examples (the note ends in `thin`), else the
/// leave-one-out margin, or off when none reached [`MODE_PRECISION`] (the note ends in
/// `no_margin`).
pub(crate) fn calibrate_classes(c: &Classes<'_>, thin: &str, no_margin: &str) -> ModeCalibration {
    let off = |examples: u32, note: String| ModeCalibration {
        semantic_margin: None,
        examples,
        precision: None,
        coverage: None,
        note: Some(note),
    };
    let total: usize = c.spans.iter().map(|&(_, n)| n - 1).sum();
    if c.spans.len() < 2 {
        return off(total as u32, format!("fewer than two {}s; {thin}", c.what));
    }
    let few: Vec<&str> = c
        .names
        .iter()
        .zip(c.spans)
        .filter(|(name, span)| **name != c.default && span.1 - 1 < MIN_MODE_EXAMPLES)
        .map(|(name, _)| *name)
        .collect();
    if !few.is_empty() {
        return off(
            total as u32,
            format!(
                "{}(s) {} have fewer than {MIN_MODE_EXAMPLES} examples; {thin}",
                c.what,
                few.join(", ")
            ),
        );
    }
    match leave_one_out(c.rows, c.spans, c.dim) {
        LeaveOneOut::Margin { margin, examples, precision, coverage } => ModeCalibration {
            semantic_margin: Some(margin),
            examples,
            precision: Some(precision),
            coverage: Some(coverage),
            note: None,
        },
        LeaveOneOut::NoMargin { examples } => off(
            examples,
            format!(
                "no lead reached {MODE_PRECISION} leave-one-out precision on the {} examples; {no_margin}",
                c.what
            ),
        ),
    }
}

/// What leave-one-out over a set of classes' examples supports.
pub(crate) enum LeaveOneOut {
    /// A lead at which [`MODE_PRECISION`] was reached.
    Margin { margin: f32, examples: u32, precision: f32, coverage: f32 },
    /// No lead reached it.
    NoMargin { examples: u32 },
}

/// Scores every example (each class's rows after its first, the card) against every class's
/// centroid without itself (as the router scores classes, since [`BUILDER_VERSION`] 12 for
/// modes and 13 for thinking modes), and finds the smallest lead (best class
/// minus runner-up) above which the best class was right at least [`MODE_PRECISION`] of the
/// time. `spans` are (first row, rows).
pub(crate) fn leave_one_out(rows: &[f32], spans: &[(usize, usize)], dim: usize) -> LeaveOneOut {
    let mut outcomes = loo_outcomes(rows, spans, dim);
    outcomes.sort_by(|a, b| b.0.total_cmp(&a.0));
    // The longest prefix (largest leads first) whose precision reaches the target.
    let mut chosen: Option<(usize, f32)> = None;
    let mut right = 0usize;
    for (i, &(_, ok)) in outcomes.iter().enumerate() {
        right += ok as usize;
        let precision = right as f32 / (i + 1) as f32;
        if i + 1 >= MIN_MODE_EXAMPLES && precision >= MODE_PRECISION {
            chosen = Some((i + 1, precision));
        }
    }
    let examples = outcomes.len() as u32;
    match chosen {
        // The accepted lead itself is the margin.
        Some((n, precision)) => LeaveOneOut::Margin {
            margin: outcomes[n - 1].0.max(0.0),
            examples,
            precision,
            coverage: n as f32 / outcomes.len() as f32,
        },
        None => LeaveOneOut::NoMargin { examples },
    }
}

/// Each example's (lead, whether its own class was best), in row order.
fn loo_outcomes(rows: &[f32], spans: &[(usize, usize)], dim: usize) -> Vec<(f32, bool)> {
    let row = |r: usize| &rows[r * dim..(r + 1) * dim];
    // (lead, correct) per example.
    let mut outcomes: Vec<(f32, bool)> = Vec::new();
    for (m, &(first, count)) in spans.iter().enumerate() {
        for r in first + 1..first + count {
            let best: Vec<f32> = spans
                .iter()
                .map(|&(f, c)| {
                    let others: Vec<&[f32]> = (f..f + c).filter(|&x| x != r).map(row).collect();
                    centroid_score(row(r), &others)
                })
                .collect();
            let mut order: Vec<usize> = (0..best.len()).collect();
            order.sort_by(|&a, &b| best[b].total_cmp(&best[a]));
            let lead = best[order[0]] - best[order[1]];
            outcomes.push((lead, order[0] == m));
        }
    }
    outcomes
}

/// A text's cosine to the normalised sum of a class's rows; minus infinity without rows.
fn centroid_score(text: &[f32], rows: &[&[f32]]) -> f32 {
    let mut sum = vec![0.0f32; text.len()];
    for r in rows {
        sum.iter_mut().zip(*r).for_each(|(a, b)| *a += b);
    }
    let norm = dot(&sum, &sum).sqrt();
    if norm > 0.0 { dot(text, &sum) / norm } else { f32::NEG_INFINITY }
}

/// Hints and their modes: as declared; a catalog that declares none keeps the historical
/// mapping (interactive -> plan, git_changes -> act) where those modes exist.
fn hints(catalog: &Catalog) -> Vec<(String, String)> {
    let declared: Vec<(String, String)> = catalog
        .modes
        .iter()
        .flat_map(|m| m.hints.iter().map(move |h| (h.clone(), m.name.clone())))
        .collect();
    if !declared.is_empty() {
        return declared;
    }
    [("interactive", "plan"), ("git_changes", "act")]
        .into_iter()
        .filter(|(_, m)| catalog.modes.iter().any(|x| x.name == *m))
        .map(|(h, m)| (h.to_string(), m.to_string()))
        .collect()
}

/// Builds the selection section.
pub(crate) fn selection(inputs: &Inputs<'_>) -> SelectionMeta {
    let c = inputs.catalog;
    let tools = Kind {
        rows: inputs.tools.0,
        spans: inputs.tools.1,
        shift: inputs.shift.map_or(&[][..], |s| &s.tools),
        docs: c.tools.iter().map(|t| t.document()).collect(),
        examples: c.tools.iter().map(|t| t.examples.clone()).collect(),
    };
    let skills = Kind {
        rows: inputs.skills.0,
        spans: inputs.skills.1,
        shift: inputs.shift.map_or(&[][..], |s| &s.skills),
        docs: c.skills.iter().map(|s| s.document()).collect(),
        examples: c.skills.iter().map(|s| s.examples.clone()).collect(),
    };
    SelectionMeta {
        builder_version: BUILDER_VERSION,
        tools_lexical: build(&tools.docs),
        skills_lexical: build(&skills.docs),
        tools: fusion(&tools, inputs),
        skills: fusion(&skills, inputs),
        mode: calibrate_modes(inputs),
        out_of_mode_penalty: OUT_OF_MODE_PENALTY,
        hints: hints(c),
        servers: crate::servers::tool_servers(&c.tools),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A unit vector along `parts` (axis, weight) in 8 dimensions.
    fn unit(parts: &[(usize, f32)]) -> Vec<f32> {
        let mut v = vec![0.0f32; 8];
        parts.iter().for_each(|&(i, w)| v[i] = w);
        let n = dot(&v, &v).sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn leave_one_out_scores_an_example_by_its_class_centroid_not_by_one_look_alike_row() {
        // Class 0: a card and two examples around axis 0, and an example half on axis 4.
        // Class 1: a card and two examples around axis 5, and a look-alike of that example.
        let class_rows = [
            unit(&[(0, 1.0)]),
            unit(&[(0, 1.0), (1, 1.0)]),
            unit(&[(0, 1.0), (2, 1.0)]),
            unit(&[(0, 1.0), (4, 1.0)]),
            unit(&[(5, 1.0)]),
            unit(&[(5, 1.0), (6, 1.0)]),
            unit(&[(5, 1.0), (7, 1.0)]),
            unit(&[(0, 0.3), (4, 1.0)]),
        ];
        // The example on axis 4 is nearer class 1's look-alike than any row of its own class.
        let near = |r: usize, x: usize| dot(&class_rows[r], &class_rows[x]);
        assert!(near(3, 7) > (0..3).map(|x| near(3, x)).fold(f32::MIN, f32::max));
        let right: Vec<bool> =
            loo_outcomes(&class_rows.concat(), &[(0, 4), (4, 4)], 8).iter().map(|o| o.1).collect();
        // By the centroids it goes where its class's rows point. (The look-alike itself shares
        // nothing with its own class and is wrong either way.)
        assert_eq!(right, [true, true, true, true, true, false]);
    }
}
