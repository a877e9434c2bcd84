//! Injection screening of untrusted entries that come with stored embeddings.
//!
//! An entry is screened as its **pieces**: the whole entry and its windows (sentence-aware
//! chunks, de-obfuscated, base64 payloads decoded; see `switchyard-untrusted`), each embedded
//! once when the entry was stored. The entry is flagged when any piece is, and the verdict
//! names the piece with the highest score: which part of the text, and why.
//!
//! **Rules.** With a learned head in the index (the default), a piece is flagged when the
//! head's logit over its embedding (and, if trained with them, its nearest-pattern scores),
//! plus the logit of the lexical head over the piece's hashed character and word n-grams when
//! the index has one (version 6 on), reaches the head's threshold, chosen at build time for a
//! target false-positive rate, or when it is a near copy of a known attack (closer to it than to any benign look-alike, and
//! at least as close as the head's `near_copy_threshold`). An index may also hold **family
//! heads** (version 9 on; see `switchyard_format::ScreenFamiliesMeta`): a head trained on one
//! family of attacks (jailbreaks), with its own embedding and lexical weights and threshold; a
//! piece is also flagged when a family head's logit reaches its threshold, and the verdict
//! names the head that came closest to (or furthest past) its threshold. From version 19 a
//! family head may read the embedding through a hidden layer of rectified units
//! (`switchyard_format::ScreenFamilyHiddenMeta`) instead of one direction. Without one (a catalog
//! too small to train it, or an index older than version 4), the nearest-pattern **contrast
//! rule** decides: `attack >= threshold` and `attack > benign + margin`, where `attack` and
//! `benign` are the piece's best cosines against the attack patterns and the benign
//! look-alikes.
//!
//! **Middle layer** (version 20 on; see `switchyard_format::ScreenLayerMeta`). An index may
//! have its heads read each piece's final vector and, after it, the vector pooled from the
//! model's states after a middle layer: `weights . [final; middle]`. `memory add` stores both
//! (`switchyard_memory::embed_for_screening` with [`Router::screen_layer`]); an entry stored
//! without that layer's vectors (before it, or for another layer) is embedded again here, whole
//! and piece by piece, and counted in [`ScreenReport::other_layer`]. The nearest-pattern
//! cosines stay on the final vector.
//!
//! **Request contrast** (version 14 on; see `switchyard_format::ScreenRequestMeta`). An entry
//! longer than one window is also flagged when one of its sentences (or clauses, or lines)
//! reads as a request among sentences that read as a document: its request logit (a lexical
//! head over the sentence's text) exceeds the mean of the others' by the index's threshold. It
//! decides the verdict (head `request`, piece `sentence`) when it stands further past (or closer
//! to) its threshold than the best piece does to the head's, as a family head does, flagged or
//! not; the nearest patterns stay those of that best piece. It reads text only: no embedding, whatever the triage cleared.
//!
//! **Sentence pieces** (version 17 on; see `switchyard_format::ScreenTriageMeta`). An entry
//! longer than one window is also screened sentence by sentence (see
//! `switchyard_untrusted::sentence_pieces`): windows pack sentences, and
//! an instruction packed with longer benign sentences is diluted in its window's embedding
//! where alone it is not. A sentence piece is scored by the main head alone (no family head,
//! no near-copy rule) against the index's sentence threshold, chosen at build time on benign
//! documents' sentences. `memory add` stores and embeds only the sentences the triage does not
//! clear, so an ordinary text costs little more. An index without a sentence threshold ignores
//! them.
//!
//! **Triage.** A piece stored without an embedding was cleared from its text alone by the
//! triage of the index `memory add` used (its lexical logit was under the index's floor; see
//! `switchyard_format::ScreenTriageMeta`). It is cleared again when this index's triage clears
//! it too, and counted in the verdict; otherwise (another index, or one without a triage) it is
//! embedded here, the only case where screening embeds, and counted as such.
//!
//! Scores come from dot products with stored vectors and the piece's own text.

use crate::screen_pieces::{ScreenVector, piece_text};
use crate::{Result, RouteError, Router, kernels};
use serde::Serialize;
use switchyard_format::{MatrixView, ScreenHead, ScreenRequestMeta, SectionKind};
use switchyard_untrusted::{Origin, PrepareConfig};

/// Version of the screening rules in [`Router::screen`]: part of [`Router::screen_key`], so
/// verdicts stored by an older rule are not read as this one's. Bump it whenever the same
/// index and pieces could reach another verdict.
pub const SCREEN_RULES_VERSION: u32 = 10;

/// Entries with at least this many pieces (the whole included) are scored on every core.
const PARALLEL_PIECES: usize = 8;

/// One stored piece of an entry.
#[derive(Debug, Clone, Copy)]
pub struct PieceRef<'a> {
    /// First byte of the entry it stands for.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
    /// Where it comes from.
    pub origin: Origin,
    /// Its embedding, made with the index's model; empty when a triage cleared it unembedded.
    pub embedding: &'a [f32],
    /// The pooled vector of the model's middle layer `ScreenEntry::layer`, made in the same
    /// pass; empty when none was stored.
    pub middle: &'a [f32],
}

/// One untrusted text, its stored whole-entry embedding and its stored pieces.
#[derive(Debug, Clone)]
pub struct ScreenEntry<'a> {
    /// The text.
    pub text: &'a str,
    /// Its embedding as a whole (also used by memory search).
    pub embedding: &'a [f32],
    /// Its middle layer's vector as a whole; empty when none was stored.
    pub middle: &'a [f32],
    /// The middle layer its `middle` vectors (and its pieces') were pooled from, `None` when
    /// it has none. An index whose screen reads another layer (see
    /// `switchyard_format::ScreenLayerMeta`) embeds the entry again while screening.
    pub layer: Option<usize>,
    /// Its windows' embeddings; empty for entries stored before windows existed, which are
    /// then screened as a whole only.
    pub pieces: Vec<PieceRef<'a>>,
}

impl<'a> ScreenEntry<'a> {
    /// An entry screened as a whole, from its final vector alone.
    pub fn whole(text: &'a str, embedding: &'a [f32]) -> Self {
        Self { text, embedding, middle: &[], layer: None, pieces: Vec::new() }
    }
}

/// The piece that decided a verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PieceVerdict {
    /// `whole` for the entry as a whole, `sentence` for the sentence the request contrast
    /// decided by, else the piece's position among the pieces.
    pub piece: String,
    /// Where it comes from: `whole`, `window`, `normalised`, `decoded` or `sentence`.
    pub origin: &'static str,
    /// Its byte range in the entry.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
    /// Its text in the entry (at most 160 bytes).
    pub excerpt: String,
}

/// The verdict on one entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// Position of the entry in the input.
    pub entry: usize,
    /// Whether it was flagged (and dropped).
    pub flagged: bool,
    /// The rule that decided: `head` or `contrast`.
    pub rule: &'static str,
    /// Under the `head` rule, the head whose score decided: `main`, a family head's name
    /// (`jailbreak`) when it came closer to its threshold than the main head did, or `request`
    /// when the request contrast did (its margin the largest, flagged or not).
    pub head: Option<String>,
    /// The best piece's score under that rule: the deciding head's logit, or for the contrast
    /// rule `min(attack - injection threshold, attack - benign - margin)`. Flagged exactly
    /// when it is >= `threshold`.
    pub score: f32,
    /// The deciding head's threshold, or 0 for the contrast rule.
    pub threshold: f32,
    /// The piece with the highest score.
    pub decided_by: PieceVerdict,
    /// Pieces screened (the whole entry counts).
    pub pieces_screened: usize,
    /// Of those, pieces cleared from their text alone by the triage, never embedded.
    pub pieces_cleared: usize,
    /// Of those, pieces stored without an embedding that this index's triage does not clear,
    /// embedded while screening.
    pub pieces_embedded_now: usize,
    /// Whether only the whole entry was screened (no stored windows).
    pub whole_entry_only: bool,
    /// Bytes of the entry past what screening reads (`switchyard_untrusted::screened_part`):
    /// an assembly never shows them, and a caller passing the text on should pass only that part.
    pub unread_bytes: usize,
    /// The deciding piece's lexical logit (hashed n-grams of its text), already part of
    /// `score`; absent without a lexical head.
    pub lexical_score: Option<f32>,
    /// The entry's request contrast (its most request-like sentence's request logit minus the
    /// mean of the other sentences', less the index's overlap weight times `request_overlap`),
    /// when the index has one, the entry is longer than one window and its other sentences read
    /// as a document.
    pub request_contrast: Option<f32>,
    /// The share of that sentence's character 4-grams found in the text around it
    /// (`switchyard_untrusted::neighbourhood_overlap`; 0 when the index gives it no weight).
    pub request_overlap: Option<f32>,
    /// The byte span of the entry's most request-like sentence, when `request_contrast` is
    /// given (whether or not it flagged the entry).
    pub request_sentence: Option<(usize, usize)>,
    /// Best score of the deciding piece against an attack pattern.
    pub attack_score: f32,
    /// That pattern's text.
    pub nearest_attack: String,
    /// Its category.
    pub attack_category: Option<String>,
    /// Best score of the deciding piece against a benign look-alike.
    pub benign_score: f32,
    /// That look-alike's text.
    pub nearest_benign: String,
}

/// The outcome of screening a batch.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ScreenReport {
    /// Entries kept, in input order.
    pub kept: Vec<Verdict>,
    /// Entries dropped, in input order.
    pub dropped: Vec<Verdict>,
    /// `dropped.len()`.
    pub dropped_count: usize,
    /// The rule in force: `head` or `contrast`.
    pub rule: &'static str,
    /// Why the contrast rule screens alone, when it does.
    pub fallback_reason: Option<String>,
    /// Entries screened as a whole only because they have no stored windows.
    pub whole_entry_only: usize,
    /// Pieces embedded while screening (stored unembedded, not cleared by this index, or
    /// stored for another screen layer).
    pub embedded_now: usize,
    /// Entries whose stored vectors lack the middle layer this index's screen reads (stored
    /// before it, or for another layer): embedded again while screening, whole and piece by
    /// piece. `switchyard memory reembed` stores the vectors this index reads.
    pub other_layer: usize,
}

/// One piece's screening: the deciding head (`None`: the main head or the contrast rule, else
/// the family head's position), its score, threshold and lexical logit, and the piece's
/// nearest attack and benign look-alike (score, row).
#[derive(Clone, Copy)]
struct Scored {
    head: Option<usize>,
    score: f32,
    threshold: f32,
    lexical: Option<f32>,
    attack: (f32, usize),
    benign: (f32, usize),
}

/// `bias + w . features` over hashed n-gram features.
fn lexical_logit(weights: &[f32], bias: f32, features: &[(u32, f32)]) -> f32 {
    bias + features.iter().map(|&(i, v)| weights[i as usize] * v).sum::<f32>()
}

/// Best score and its row (ties to the lowest row); `(0, 0)` for an empty matrix.
fn nearest(m: &MatrixView<'_>, v: &[f32]) -> (f32, usize) {
    let mut best = (f32::NEG_INFINITY, 0);
    for r in 0..m.rows() {
        let s = kernels::dot(m.row(r), v);
        if s > best.0 {
            best = (s, r);
        }
    }
    if m.rows() == 0 { (0.0, 0) } else { best }
}

/// An entry's request contrast: its most request-like sentence, the contrast compared with the
/// threshold (less the overlap term) and that sentence's overlap with the text around it.
#[derive(Debug, Clone, Copy)]
struct RequestContrast {
    sentence: switchyard_untrusted::Window,
    contrast: f32,
    overlap: f32,
}

/// The request contrast of an entry longer than one window, compared sentence by sentence
/// (`switchyard_untrusted::contrast_units`).
fn request_contrast(
    r: &ScreenRequestMeta,
    text: &str,
    prepare: &PrepareConfig,
) -> Option<RequestContrast> {
    let units = switchyard_untrusted::contrast_units(text, prepare)?;
    let logit = |(_, t): &(switchyard_untrusted::Window, String)| {
        lexical_logit(&r.head.weights, r.head.bias, &switchyard_lexical::hashed_features(t))
    };
    // A long entry's sentences are scored on every core; each logit is the same either way.
    let logits: Vec<f32> = if units.len() >= PARALLEL_PIECES {
        use rayon::prelude::*;
        units.par_iter().map(logit).collect()
    } else {
        units.iter().map(logit).collect()
    };
    let (top, c) = ScreenRequestMeta::contrast(&logits)?;
    let sentence = units[top].0;
    // An index before version 15 has no overlap weight: its threshold was chosen without it.
    let overlap = if r.coherence_weight > 0.0 {
        switchyard_untrusted::neighbourhood_overlap(
            text,
            sentence,
            r.coherence_reach_bytes as usize,
        )
    } else {
        0.0
    };
    Some(RequestContrast { sentence, contrast: r.coherent_contrast(c, overlap), overlap })
}

fn excerpt(text: &str, start: usize, end: usize) -> String {
    let (start, end) = (start.min(text.len()), end.min(text.len()));
    let mut cut = end.min(start + 160);
    while cut > start && !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut s0 = start;
    while s0 < cut && !text.is_char_boundary(s0) {
        s0 += 1;
    }
    text[s0..cut].to_string()
}

impl Router {
    /// Screens entries piece by piece: the head's logit (or the contrast rule) per piece,
    /// the entry flagged when any piece is.
    pub fn screen(&self, entries: &[ScreenEntry<'_>]) -> Result<ScreenReport> {
        let dim = self.index().dim();
        for (i, e) in entries.iter().enumerate() {
            // A piece may have no embedding (cleared by a triage); the whole entry always has.
            // Middle vectors are optional, but of the index's width when there.
            let bad = e
                .pieces
                .iter()
                .flat_map(|p| [p.embedding.len(), p.middle.len()])
                .filter(|&n| n != 0)
                .chain([e.embedding.len()])
                .chain(Some(e.middle.len()).filter(|&n| n != 0))
                .find(|&n| n != dim);
            if let Some(found) = bad {
                return Err(RouteError::BadEmbedding { index: i, found, expected: dim });
            }
        }
        let attacks = self.index().matrix(SectionKind::Injections);
        let benign = self.index().matrix(SectionKind::Benign);
        let head = self.screen_head();
        let mut report = ScreenReport {
            rule: if head.is_some() { "head" } else { "contrast" },
            fallback_reason: self.screen_fallback_reason(),
            ..ScreenReport::default()
        };
        let lexical = head.and(self.index().screen_lexical());
        let prepare = self.prepare_config();
        // The middle layer the heads read beside the final vector, if any.
        let layer = head.and(self.index().screen_layer());
        let (cleared, embedded_now, other_layer) =
            self.unembedded_pieces(entries, &prepare, layer)?;
        report.embedded_now = embedded_now.keys().filter(|(_, k)| k.is_some()).count();
        report.other_layer = other_layer;
        let families = head.and(self.index().screen_families()).map_or(&[][..], |f| &f.heads[..]);
        // Each family head's hidden layer, when it has one (version 19 on).
        let hidden: Vec<Option<&switchyard_format::FamilyHiddenLayer>> = families
            .iter()
            .map(|f| {
                self.index()
                    .screen_family_hidden()
                    .and_then(|h| h.layers.iter().find(|l| l.family == f.family))
            })
            .collect();
        let request = head.and(self.index().screen_request());
        // A piece's screening under every head: the one closest to (or furthest past) its
        // threshold decides.
        let sentence_threshold = self.sentence_threshold();
        let score_piece =
            |v: ScreenVector<'_>, text: &dyn Fn() -> String, sentence: bool| -> Scored {
                // The nearest patterns are the final vectors'.
                let (a, b) = (nearest(&attacks, v.last), nearest(&benign, v.last));
                match head {
                    Some(h) => {
                        let needs_text =
                            lexical.is_some() || families.iter().any(|f| f.lexical.is_some());
                        let features = if needs_text {
                            switchyard_lexical::hashed_features(&text())
                        } else {
                            vec![]
                        };
                        let lex = lexical.map(|l| lexical_logit(&l.weights, l.bias, &features));
                        // The nearest patterns are features of the head and the near-copy check.
                        let logit = v.dot(&h.weights)
                            + h.attack_weight * a.0
                            + h.benign_weight * b.0
                            + h.bias
                            + lex.unwrap_or(0.0);
                        if let (true, Some(t)) = (sentence, sentence_threshold) {
                            // A sentence: the main head alone, at the sentence threshold.
                            return Scored {
                                head: None,
                                score: logit,
                                threshold: t,
                                lexical: lex,
                                attack: a,
                                benign: b,
                            };
                        }
                        let near_copy = a.0 >= h.near_copy_threshold && a.0 > b.0;
                        // A near copy counts as reaching the threshold (its logit is kept when
                        // higher).
                        let score = if near_copy { logit.max(h.threshold) } else { logit };
                        let mut best = Scored {
                            head: None,
                            score,
                            threshold: h.threshold,
                            lexical: lex,
                            attack: a,
                            benign: b,
                        };
                        for (k, f) in families.iter().enumerate() {
                            let lex = f
                                .lexical
                                .as_ref()
                                .map(|l| lexical_logit(&l.weights, l.bias, &features));
                            let embedding = match hidden[k] {
                                Some(layer) => layer.logit(&v.joined()),
                                None => v.dot(&f.weights),
                            };
                            let score = embedding + f.bias + lex.unwrap_or(0.0);
                            if score - f.threshold > best.score - best.threshold {
                                best = Scored {
                                    head: Some(k),
                                    score,
                                    threshold: f.threshold,
                                    lexical: lex,
                                    ..best
                                };
                            }
                        }
                        best
                    }
                    None => {
                        let t = self.injection_threshold();
                        let over_benign = a.0 - b.0 - self.injection_margin();
                        let score = if attacks.rows() == 0 {
                            f32::NEG_INFINITY
                        } else {
                            (a.0 - t).min(over_benign)
                        };
                        // Strictly above the benign side, as the rule says.
                        let score = if over_benign == 0.0 { -f32::MIN_POSITIVE } else { score };
                        Scored {
                            head: None,
                            score,
                            threshold: 0.0,
                            lexical: None,
                            attack: a,
                            benign: b,
                        }
                    }
                }
            };
        for (i, e) in entries.iter().enumerate() {
            // A piece's vectors: embedded here, else as stored (the middle one only when the
            // heads read it); `None` for a piece the triage cleared.
            let reads_middle = layer.is_some();
            let vector_of = |k: Option<usize>| -> Option<ScreenVector<'_>> {
                if let Some(v) = embedded_now.get(&(i, k)) {
                    return Some(ScreenVector { last: &v.vector, middle: &v.middle });
                }
                let (last, middle) = match k {
                    None => (e.embedding, e.middle),
                    Some(k) => (e.pieces[k].embedding, e.pieces[k].middle),
                };
                let middle: &[f32] = if reads_middle { middle } else { &[] };
                (!last.is_empty()).then_some(ScreenVector { last, middle })
            };
            let pieces = (0..e.pieces.len()).filter_map(|k| {
                if e.pieces[k].origin == Origin::Sentence && sentence_threshold.is_none() {
                    return None;
                }
                vector_of(Some(k)).map(|v| (Some(k), v))
            });
            let all: Vec<(Option<usize>, ScreenVector<'_>)> =
                vector_of(None).map(|v| (None, v)).into_iter().chain(pieces).collect();
            let cleared_here = cleared.iter().filter(|&&(ei, _)| ei == i).count();
            let embedded_here =
                embedded_now.keys().filter(|&&(ei, k)| ei == i && k.is_some()).count();
            // The text a piece's embedding was made from (only read with a lexical head).
            let text_of = |k: Option<usize>| match k {
                None => e.text.to_string(),
                Some(k) => piece_text(e.text, &e.pieces[k], &prepare),
            };
            let is_sentence =
                |k: Option<usize>| k.is_some_and(|k| e.pieces[k].origin == Origin::Sentence);
            let score_one = |&(k, v): &(Option<usize>, ScreenVector<'_>)| {
                score_piece(v, &|| text_of(k), is_sentence(k))
            };
            // A long entry's pieces are scored on every core (each is a pass over the attack
            // and benign rows); the reduction below is sequential, so the verdict is the same.
            let scored: Vec<_> = if all.len() >= PARALLEL_PIECES {
                use rayon::prelude::*;
                all.par_iter().map(score_one).collect()
            } else {
                all.iter().map(score_one).collect()
            };
            // The piece furthest past (or closest to) its deciding head's threshold.
            let mut best: Option<(Option<usize>, Scored)> = None;
            for (&(k, _), s) in all.iter().zip(&scored) {
                if best
                    .as_ref()
                    .is_none_or(|(_, b0)| s.score - s.threshold > b0.score - b0.threshold)
                {
                    best = Some((k, *s));
                }
            }
            let Some((
                k,
                Scored {
                    head: deciding,
                    mut score,
                    mut threshold,
                    mut lexical,
                    attack: a,
                    benign: b,
                },
            )) = best
            else {
                continue;
            };
            let mut head_name = head.map(|_| match deciding {
                Some(f) => families[f].family.clone(),
                None => "main".to_string(),
            });
            // Like the pieces, it reads only what a prompt may show.
            let read = switchyard_untrusted::screened_part(e.text);
            let contrast = request.and_then(|r| request_contrast(r, read, &prepare));
            // The request contrast decides, as a family head does, when it stands further past
            // (or closer to) its threshold than the best piece does under its own head: the
            // verdict's margin is then the largest of the heads' margins, whose sign is the
            // flag and whose order ranks entries (`eval injection`'s curves), flagged or not.
            let mut sentence = None;
            if let (Some(r), Some(c)) = (request, contrast)
                && c.contrast - r.threshold > score - threshold
            {
                sentence = Some(c.sentence);
                (score, threshold, lexical) = (c.contrast, r.threshold, None);
                head_name = Some("request".into());
            }
            let (start, end, origin, piece) = match (sentence, k) {
                (Some(w), _) => (w.start, w.end, "sentence", "sentence".to_string()),
                (None, Some(k)) => {
                    let p = &e.pieces[k];
                    (p.start, p.end, p.origin.as_str(), k.to_string())
                }
                (None, None) => (0, e.text.len(), "whole", "whole".to_string()),
            };
            let meta = self.index().meta();
            let v = Verdict {
                entry: i,
                flagged: score >= threshold,
                rule: report.rule,
                head: head_name,
                score,
                threshold,
                decided_by: PieceVerdict {
                    piece,
                    origin,
                    start,
                    end,
                    excerpt: excerpt(e.text, start, end),
                },
                pieces_screened: 1 + e.pieces.len(),
                pieces_cleared: cleared_here,
                pieces_embedded_now: embedded_here,
                whole_entry_only: e.pieces.is_empty(),
                unread_bytes: e.text.len() - read.len(),
                lexical_score: lexical,
                request_contrast: contrast.map(|c| c.contrast),
                request_overlap: contrast.map(|c| c.overlap),
                request_sentence: contrast.map(|c| (c.sentence.start, c.sentence.end)),
                attack_score: a.0,
                nearest_attack: if attacks.rows() > 0 {
                    self.index().row_text(SectionKind::Injections, a.1).to_string()
                } else {
                    String::new()
                },
                attack_category: meta.injections.get(a.1).and_then(|p| p.category.clone()),
                benign_score: b.0,
                nearest_benign: if benign.rows() > 0 {
                    self.index().row_text(SectionKind::Benign, b.1).to_string()
                } else {
                    String::new()
                },
            };
            report.whole_entry_only += usize::from(v.whole_entry_only);
            if v.flagged { report.dropped.push(v) } else { report.kept.push(v) }
        }
        report.dropped_count = report.dropped.len();
        Ok(report)
    }

    /// The triage of new entries' pieces: the lexical head and the floor of the index's
    /// `screen_triage` section; `None` without one (every piece is embedded) or when the
    /// contrast rule screens alone (it has no lexical head to clear with).
    pub fn screen_triage(&self) -> Option<switchyard_lexical::LexicalTriage> {
        self.screen_head()?;
        self.triage
            .get_or_init(|| {
                let floor = self.index().screen_triage()?.lexical_floor;
                let lexical = self.index().screen_lexical()?;
                let families = self.index().screen_families();
                switchyard_lexical::LexicalTriage::of_screen(lexical, floor, families)
            })
            .clone()
    }

    /// How untrusted entries are cut into pieces: the windowing recorded in the index, else
    /// the default (indexes older than version 4).
    pub fn prepare_config(&self) -> switchyard_untrusted::PrepareConfig {
        let mut c = switchyard_untrusted::PrepareConfig::default();
        if let Some(w) = self.index().screen().map(|s| s.windowing) {
            c.windows.target_bytes = w.target_bytes as usize;
            c.windows.single_window_bytes = w.single_window_bytes as usize;
            c.windows.max_windows = w.max_windows as usize;
            c.max_payloads = w.max_payloads as usize;
            c.max_payload_bytes = w.max_payload_bytes as usize;
        }
        c.sentence_pieces = self.sentence_threshold().is_some();
        c
    }

    /// The main head's threshold for sentence pieces: only with a learned head and a triage
    /// (which keeps their embedding affordable) that records one (version 17 on).
    pub fn sentence_threshold(&self) -> Option<f32> {
        self.screen_head()?;
        self.screen_triage()?;
        self.index().screen_triage()?.sentence_threshold
    }

    /// What a verdict of [`Router::screen`] depends on besides the entry's stored pieces: the
    /// screening rules' version, the index (its header and every section's length and crc32:
    /// another build, even of the same catalog, is another key) and the settings in force
    /// (threshold override, margin, contrast rule forced). A verdict stored under this key is
    /// the verdict this router would reach again, so a store may keep it
    /// (`MemoryStore::record_verdicts`) and an assembly may read it instead of screening.
    pub fn screen_key(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"switchyard-screen\0");
        h.update(SCREEN_RULES_VERSION.to_le_bytes());
        let header = self.index().header();
        h.update(header.version.to_le_bytes());
        h.update(header.fingerprint);
        h.update(header.file_len.to_le_bytes());
        for s in self.index().sections() {
            h.update((s.kind as u32).to_le_bytes());
            h.update(s.len.to_le_bytes());
            h.update(s.crc32.to_le_bytes());
        }
        h.update(self.injection_threshold().to_bits().to_le_bytes());
        h.update(self.injection_margin().to_bits().to_le_bytes());
        h.update([u8::from(self.contrast_only())]);
        h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The middle layer the learned heads read beside the final vector (see
    /// `switchyard_format::ScreenLayerMeta`): what `memory add` and every screening caller must
    /// embed with (`switchyard_memory::embed_for_screening`). `None` without one, or when the
    /// contrast rule screens (it reads the final vector alone).
    pub fn screen_layer(&self) -> Option<usize> {
        self.screen_head()?;
        self.index().screen_layer()
    }

    /// The learned head, unless the contrast rule was forced or the index has none.
    pub fn screen_head(&self) -> Option<&ScreenHead> {
        if self.contrast_only() {
            return None;
        }
        self.index().screen().and_then(|s| s.head.as_ref())
    }

    /// Why the contrast rule screens alone, when it does.
    pub fn screen_fallback_reason(&self) -> Option<String> {
        if self.contrast_only() {
            return Some("the contrast rule was chosen explicitly".into());
        }
        match self.index().screen() {
            None => Some(format!(
                "index {} has no learned screen (format version {}); rebuild it with this version of build-index",
                self.index().path().display(),
                self.index().header().version
            )),
            Some(s) => s.fallback_reason.clone(),
        }
    }
}
