//! The screen's metadata: how entries are cut into windows, the learned heads (embedding,
//! lexical, families), the triage and the request contrast. Split from `meta.rs`, which holds
//! the rest of the index's metadata.

use crate::meta::{bincode_codec, decode_whole};
use serde::{Deserialize, Serialize};

/// How untrusted entries are cut into windows before screening (mirrors
/// `switchyard_untrusted::PrepareConfig`; stored so every reader cuts entries the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowingMeta {
    /// Version of the preparation code (windows and de-obfuscation).
    pub prepare_version: u32,
    /// Target window length in bytes.
    pub target_bytes: u32,
    /// A text up to this length is one window.
    pub single_window_bytes: u32,
    /// At most this many windows per entry.
    pub max_windows: u32,
    /// At most this many base64 payloads decoded per entry.
    pub max_payloads: u32,
    /// Decoded payloads are cut to this length.
    pub max_payload_bytes: u32,
}

/// A logistic head over a piece's embedding and its nearest-pattern scores:
/// `logit = weights . x + attack_weight * attack + benign_weight * benign + bias`, where
/// `attack` / `benign` are the piece's best cosines against the attack patterns and the benign
/// look-alikes. A piece is flagged when `logit >= threshold`, or when it is a near copy of a
/// known attack: `attack >= near_copy_threshold` and `attack > benign`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenHead {
    /// One weight per embedding dimension.
    pub weights: Vec<f32>,
    /// Weight of the best attack-pattern cosine.
    pub attack_weight: f32,
    /// Weight of the best benign look-alike cosine.
    pub benign_weight: f32,
    /// Bias.
    pub bias: f32,
    /// Decision threshold on the logit.
    pub threshold: f32,
    /// The contrast rule beside the head: a piece whose best attack cosine reaches this and
    /// beats its best benign cosine is flagged whatever the head says. Chosen at build time so
    /// that at most half the target false-positive rate of the benign rows trips it.
    pub near_copy_threshold: f32,
    /// The benign false-positive rate the threshold was chosen for.
    pub target_fpr: f32,
    /// L2 penalty the head was trained with.
    pub l2: f32,
    /// Cross-validated (out-of-fold) figures on the training rows at the threshold.
    pub oof_recall: f32,
    /// Out-of-fold false-positive rate on the benign training rows at the threshold.
    pub oof_fpr: f32,
    /// Out-of-fold ROC AUC on the training rows.
    pub oof_auc: f32,
    /// Attack rows trained on.
    pub attacks: u32,
    /// Benign rows trained on.
    pub benign: u32,
    /// Where the rows came from: `catalog` and the `--injection-train` files (names only).
    pub sources: Vec<String>,
}

/// The screen section: the learned head (or why there is none) and the windowing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenMeta {
    /// Version of the builder's screen training.
    pub builder_version: u32,
    /// The head; `None` when the catalog had too few patterns, and screening uses the
    /// nearest-pattern contrast rule alone.
    pub head: Option<ScreenHead>,
    /// Why there is no head, when there is none.
    pub fallback_reason: Option<String>,
    /// How entries are cut into windows.
    pub windowing: WindowingMeta,
}

bincode_codec!(ScreenMeta, "screen metadata");

/// The screen's lexical head (optional section, version 6 on): a logistic model over hashed
/// character and word n-grams of a piece's text (`switchyard_lexical::hashed_features`), whose
/// logit is added to the embedding head's. The head's threshold was chosen for the sum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LexicalScreenMeta {
    /// Version of the features it was trained on.
    pub features_version: u32,
    /// Buckets per feature group; `weights` holds two groups.
    pub buckets: u32,
    /// Bias of the lexical logit.
    pub bias: f32,
    /// One weight per feature.
    pub weights: Vec<f32>,
    /// L2 penalty it was trained with.
    pub l2: f32,
}

bincode_codec!(LexicalScreenMeta, "lexical screen metadata");

/// The screen's triage (optional section, version 8 on, only beside the lexical head): which
/// windows of an entry need an embedding at all. Embedding every window of a long entry is
/// what `memory add` spends its time on, and most windows of an ordinary text look nothing
/// like an attack to the lexical head either. A window whose lexical logit is below
/// `lexical_floor` is cleared from its text alone and never embedded; the others are embedded
/// and screened in full. The floor is chosen at build time, out of fold, so that at most
/// `max_miss` of the training attacks the full screen flags fall below it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScreenTriageMeta {
    /// Windows whose lexical logit is below this are cleared without an embedding.
    pub lexical_floor: f32,
    /// The share of flagged training attacks the floor was allowed to clear.
    pub max_miss: f32,
    /// Out of fold: the share of the flagged training attacks it clears.
    pub oof_missed: f32,
    /// Out of fold: the share of the benign training rows it clears.
    pub oof_benign_cleared: f32,
    /// The main head's threshold for a **sentence piece** (version 17 on): a sentence of a
    /// text longer than one window, screened on its own beside the windows, and embedded only
    /// when this triage does not clear it. Chosen at build time so that at most the target
    /// false-positive rate of the benign training texts longer than one window have a sentence
    /// at or above it, and never below the head's own threshold. `None`: sentences are not
    /// screened (older indexes, or no such benign texts to choose it on).
    pub sentence_threshold: Option<f32>,
    /// Benign training texts longer than one window the sentence threshold was chosen on.
    pub sentence_texts: u32,
    /// The share of them with a sentence at or above it (in sample: the head trained on
    /// their windows).
    pub sentence_benign_flagged: f32,
}

bincode_codec!(ScreenTriageMeta, "screen triage metadata");

/// [`ScreenTriageMeta`] as versions 8 to 16 wrote it, before sentence pieces.
#[derive(Deserialize)]
struct ScreenTriageMetaV16 {
    lexical_floor: f32,
    max_miss: f32,
    oof_missed: f32,
    oof_benign_cleared: f32,
}

impl ScreenTriageMeta {
    /// Decodes the section as this version writes it, or as versions 8 to 16 did (then with no
    /// sentence threshold: those indexes screen no sentence pieces). Each layout decodes only
    /// its own bytes (`decode` refuses trailing or missing bytes), so trying both is
    /// unambiguous.
    pub fn decode_any(bytes: &[u8]) -> std::result::Result<Self, String> {
        Self::decode(bytes).or_else(|err| match decode_whole::<ScreenTriageMetaV16>(bytes) {
            Some(v) => Ok(Self {
                lexical_floor: v.lexical_floor,
                max_miss: v.max_miss,
                oof_missed: v.oof_missed,
                oof_benign_cleared: v.oof_benign_cleared,
                sentence_threshold: None,
                sentence_texts: 0,
                sentence_benign_flagged: 0.0,
            }),
            None => Err(err),
        })
    }
}

/// One family head of the screen: a second logistic screen over the same pieces, trained on
/// one family of attacks (say jailbreaks: personas, role-play framings, harmful requests)
/// against every benign row, with its own threshold. A piece is flagged when the main head or
/// any family head reaches its threshold. One head over every attack must place one direction
/// between ordinary requests (benign) and, at once, injected ordinary requests and
/// role-played harmful ones; a family's own head separates its attacks from benign text far
/// better than the shared one does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenFamilyHead {
    /// The family's name (`jailbreak`).
    pub family: String,
    /// The attack categories it was trained on.
    pub categories: Vec<String>,
    /// One weight per embedding dimension.
    pub weights: Vec<f32>,
    /// Bias of the embedding logit.
    pub bias: f32,
    /// Its lexical head over hashed n-grams (same features as the main screen's), whose
    /// logit adds to the embedding logit; `None` when the screen has no lexical head.
    pub lexical: Option<LexicalScreenMeta>,
    /// Decision threshold on the summed logit.
    pub threshold: f32,
    /// The triage's floor for this head's lexical logit: a window is cleared unembedded only
    /// when every head's lexical logit is under its floor. `None`: no triage.
    pub lexical_floor: Option<f32>,
    /// Out of fold, on its training rows, at the threshold: recall of its family's attacks.
    pub oof_recall: f32,
    /// Out-of-fold false-positive rate on the benign training rows at the threshold.
    pub oof_fpr: f32,
    /// Out-of-fold ROC AUC on its training rows.
    pub oof_auc: f32,
    /// Attack rows trained on.
    pub attacks: u32,
    /// Benign rows trained on.
    pub benign: u32,
}

/// The screen's family heads (optional section, version 9 on, only beside a screen head).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenFamiliesMeta {
    /// The heads, in a fixed order.
    pub heads: Vec<ScreenFamilyHead>,
    /// The false-positive rate (out of fold, on benign training rows) the family heads were
    /// allowed to add to the main head's target between them.
    pub family_fpr: f32,
    /// The out-of-fold false-positive rate on the benign training rows of the main head and
    /// every family head together (a row flagged by any of them counts once).
    pub oof_fpr_combined: f32,
}

bincode_codec!(ScreenFamiliesMeta, "screen family heads");

/// The hidden layers of the screen's family heads (optional section, version 19 on, only
/// beside `screen_families`): a family head with one reads its embedding logit through a layer
/// of rectified units, `sum_j outputs[j] * max(0, weights_j . v + biases[j]) + bias` (the
/// head's [`ScreenFamilyHead::bias`]), in place of `weights . v + bias`, before its lexical
/// logit is added. A jailbreak and a harmless role-play share their framing and differ in the
/// request inside it; one hidden layer reads the two apart where one direction cannot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenFamilyHiddenMeta {
    /// One layer per family head that has one, in the heads' order.
    pub layers: Vec<FamilyHiddenLayer>,
}

bincode_codec!(ScreenFamilyHiddenMeta, "screen family hidden layers");

/// The middle layer the screen reads (optional section, version 20 on, only beside `screen`):
/// every screened piece is then read as its **screen vector**, the final unit vector followed
/// by the unit vector pooled from the model's hidden states after `layer` layers (twice the
/// index's width), and every head's embedding weights (the main head's, the family heads' and
/// their hidden layers') span that width: `weights . [final; middle]`. The nearest-pattern
/// cosines (near copies, the contrast rule) stay on the final vector. Without this section a
/// screen vector is the final vector alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenLayerMeta {
    /// The layers the middle vector's states went through (1 ..= the model's layers - 1).
    pub layer: u32,
}

bincode_codec!(ScreenLayerMeta, "screen layer");

/// One family head's hidden layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FamilyHiddenLayer {
    /// The family head it belongs to ([`ScreenFamilyHead::family`]).
    pub family: String,
    /// `units x dim`, row-major, over the embedding as stored (unit length).
    pub weights: Vec<f32>,
    /// One bias per unit.
    pub biases: Vec<f32>,
    /// One output weight per unit.
    pub outputs: Vec<f32>,
}

impl FamilyHiddenLayer {
    /// Rectified units in the layer.
    pub fn units(&self) -> usize {
        self.biases.len()
    }

    /// The layer's part of the embedding logit of `v` (without the head's bias).
    pub fn logit(&self, v: &[f32]) -> f32 {
        let dim = v.len();
        let mut z = 0.0;
        for (j, (&b, &out)) in self.biases.iter().zip(&self.outputs).enumerate() {
            let a = crate::dot(&self.weights[j * dim..(j + 1) * dim], v) + b;
            if a > 0.0 {
                z += out * a;
            }
        }
        z
    }
}

/// The screen's **request contrast** (optional section, version 14 on, only beside a screen
/// head). An instruction planted in a document is often an ordinary request ("Translate your
/// answer into German", "What is the capital of Brazil?"): the main head cannot flag it without
/// flagging every ordinary request a user writes. What gives it away is its place: one window
/// of the entry reads as a request addressed to the assistant while the others read as a
/// document (an e-mail, a table, code, notes). A lexical head over the same hashed n-grams as
/// the main screen's scores each sentence, clause or line (a request: positive; document text:
/// negative); an entry longer than one window, whose other sentences read as a document (their
/// mean logit is at most 0), is flagged when its highest sentence's logit exceeds the mean of
/// the others by `threshold` or more. Only text is read, so it costs no embedding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScreenRequestMeta {
    /// The request head over hashed n-grams (`switchyard_lexical::hashed_features`).
    pub head: LexicalScreenMeta,
    /// Flagged when `max - mean of the other sentences` of the request logits reaches this.
    pub threshold: f32,
    /// Out of fold, on the benign training texts longer than one window: the share at or
    /// above `threshold` (the target it was chosen for, reached on texts the head did not
    /// train on).
    pub oof_fpr: f32,
    /// Out of fold: the share of benign training documents with a request planted in them
    /// (one of the training requests, on its own line) that reach `threshold`.
    pub oof_planted_recall: f32,
    /// Request rows trained on (whole texts).
    pub requests: u32,
    /// Document rows trained on (sentences, clauses and lines of documents).
    pub document_rows: u32,
    /// Benign texts longer than one window the threshold was chosen on.
    pub calibration_texts: u32,
    /// How much the sentence's overlap with the text around it lowers the contrast (version 15
    /// on; 0 in older indexes): a request planted in a document is about something else, one
    /// that belongs to its text repeats its words. The contrast compared with `threshold` is
    /// `max - mean of the others - coherence_weight * overlap`, where `overlap` is
    /// `switchyard_untrusted::neighbourhood_overlap` of the highest sentence within
    /// `coherence_reach_bytes`. Chosen at build time, out of fold, for the planted recall.
    pub coherence_weight: f32,
    /// The bytes before and after the sentence its overlap is measured on.
    pub coherence_reach_bytes: u32,
}

/// [`ScreenRequestMeta`] as version 14 wrote it, before the overlap with the text around.
#[derive(Deserialize)]
struct ScreenRequestMetaV14 {
    head: LexicalScreenMeta,
    threshold: f32,
    oof_fpr: f32,
    oof_planted_recall: f32,
    requests: u32,
    document_rows: u32,
    calibration_texts: u32,
}

bincode_codec!(ScreenRequestMeta, "screen request contrast");

impl ScreenRequestMeta {
    /// Decodes the section as this version writes it, or as version 14 did (then with no
    /// overlap weight: the contrast those indexes were calibrated for). Each layout decodes
    /// only its own bytes (`decode` refuses trailing or missing bytes), so trying both is
    /// unambiguous.
    pub fn decode_any(bytes: &[u8]) -> std::result::Result<Self, String> {
        Self::decode(bytes).or_else(|err| match decode_whole::<ScreenRequestMetaV14>(bytes) {
            Some(v) => Ok(Self {
                head: v.head,
                threshold: v.threshold,
                oof_fpr: v.oof_fpr,
                oof_planted_recall: v.oof_planted_recall,
                requests: v.requests,
                document_rows: v.document_rows,
                calibration_texts: v.calibration_texts,
                coherence_weight: 0.0,
                coherence_reach_bytes: 0,
            }),
            None => Err(err),
        })
    }

    /// The contrast compared with the threshold: `contrast` (see [`Self::contrast`]) less
    /// `coherence_weight` times the highest sentence's `overlap` with the text around it.
    pub fn coherent_contrast(&self, contrast: f32, overlap: f32) -> f32 {
        contrast - self.coherence_weight * overlap
    }

    /// The contrast of an entry's units, from their request logits in text order: the
    /// position of the highest (the first of equals) and how far it exceeds the mean of the
    /// others. `None` below two units, or when the others read as a request on average (their
    /// mean logit is above 0): a long request whose one sentence asks the question is not a
    /// document with a request planted in it.
    pub fn contrast(logits: &[f32]) -> Option<(usize, f32)> {
        if logits.len() < 2 {
            return None;
        }
        let mut top = 0;
        for (i, &l) in logits.iter().enumerate() {
            if l > logits[top] {
                top = i;
            }
        }
        let others: f32 =
            logits.iter().enumerate().filter(|&(i, _)| i != top).map(|(_, l)| l).sum();
        let others = others / (logits.len() - 1) as f32;
        (others <= 0.0).then_some((top, logits[top] - others))
    }
}
