//! What screening reads of a stored piece: its vectors as the heads read them, its text rebuilt
//! from the entry, and the pieces embedded while screening (stored without an embedding, or
//! without the middle layer the index's heads read).

use crate::screen::{PieceRef, ScreenEntry};
use crate::{Result, RouteError, Router, kernels};
use switchyard_untrusted::{Origin, PrepareConfig};

/// A piece as the heads read it: its final vector and, when the index's screen reads a middle
/// layer, that layer's vector (else empty). The heads' weights span both, one after the other.
#[derive(Clone, Copy)]
pub(crate) struct ScreenVector<'a> {
    pub(crate) last: &'a [f32],
    pub(crate) middle: &'a [f32],
}

impl ScreenVector<'_> {
    /// `w . [last; middle]`.
    pub(crate) fn dot(&self, w: &[f32]) -> f32 {
        let d = self.last.len();
        let middle = if self.middle.is_empty() {
            0.0
        } else {
            kernels::dot(&w[d..d + self.middle.len()], self.middle)
        };
        kernels::dot(&w[..d], self.last) + middle
    }

    /// `[last; middle]` as one vector (a hidden layer reads it whole).
    pub(crate) fn joined(&self) -> Vec<f32> {
        [self.last, self.middle].concat()
    }
}

/// The text a stored piece's embedding was made from, rebuilt from the entry as
/// `switchyard_untrusted::prepare` made it: the window as it is, de-obfuscated, or the decoded
/// payload.
pub(crate) fn piece_text(text: &str, piece: &PieceRef<'_>, prepare: &PrepareConfig) -> String {
    let (start, end) = (piece.start.min(text.len()), piece.end.min(text.len()));
    let Some(raw) = text.get(start..end) else { return String::new() };
    match piece.origin {
        Origin::Window => raw.to_string(),
        Origin::Normalised | Origin::Sentence => switchyard_untrusted::normalise(raw),
        Origin::Decoded => switchyard_untrusted::base64_payloads(raw, 1)
            .into_iter()
            .next()
            .map(|(_, _, decoded)| {
                let mut cut = decoded.len().min(prepare.max_payload_bytes);
                while !decoded.is_char_boundary(cut) {
                    cut -= 1;
                }
                switchyard_untrusted::normalise(&decoded[..cut])
            })
            .unwrap_or_default(),
    }
}

impl Router {
    /// The pieces stored without an embedding: those this index's triage clears (entry,
    /// piece), and the others embedded now, keyed (entry, piece) with `None` for the whole.
    /// With a `layer` the heads read, an entry stored without that layer's vectors is embedded
    /// now too, whole and every embedded piece, and counted (the last value).
    #[allow(clippy::type_complexity)]
    pub(crate) fn unembedded_pieces(
        &self,
        entries: &[ScreenEntry<'_>],
        prepare: &PrepareConfig,
        layer: Option<usize>,
    ) -> Result<(
        Vec<(usize, usize)>,
        std::collections::HashMap<(usize, Option<usize>), switchyard_embed::LayeredVector>,
        usize,
    )> {
        let triage = self.screen_triage();
        let sentences = self.sentence_threshold().is_some();
        let mut cleared = Vec::new();
        let mut to_embed: Vec<((usize, Option<usize>), String)> = Vec::new();
        let mut other_layer = 0;
        for (i, e) in entries.iter().enumerate() {
            let used = |p: &PieceRef<'_>| sentences || p.origin != Origin::Sentence;
            if let Some(layer) = layer {
                let lacks = |v: &[f32], middle: &[f32]| !v.is_empty() && middle.is_empty();
                let stale = e.layer != Some(layer) || lacks(e.embedding, e.middle);
                if stale {
                    other_layer += 1;
                    // As `memory add` embeds a whole text now: its first tokens only.
                    let cut = self
                        .embedder()
                        .fitting_prefix(e.text, prepare.whole_text_tokens)
                        .map_err(|e| RouteError::Embedding {
                            message: format!("cutting a stored text to the tokens screened: {e}"),
                        })?;
                    to_embed.push(((i, None), e.text[..cut].to_string()));
                }
                for (k, p) in e.pieces.iter().enumerate() {
                    if used(p) && (stale && !p.embedding.is_empty() || lacks(p.embedding, p.middle))
                    {
                        to_embed.push(((i, Some(k)), piece_text(e.text, p, prepare)));
                    }
                }
            }
            // Sentence pieces an index without a sentence threshold ignores are not embedded.
            let unembedded =
                e.pieces.iter().enumerate().filter(|(_, p)| p.embedding.is_empty() && used(p));
            for (k, p) in unembedded {
                let text = piece_text(e.text, p, prepare);
                // Only the main head scores a sentence, so only its floor clears one.
                let needed = |t: &switchyard_lexical::LexicalTriage| match p.origin {
                    Origin::Sentence => t.sentence_needs_embedding(&text),
                    _ => t.needs_embedding(&text),
                };
                match &triage {
                    Some(t) if !needed(t) => cleared.push((i, k)),
                    _ => to_embed.push(((i, Some(k)), text)),
                }
            }
        }
        let texts: Vec<&str> = to_embed.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = switchyard_embed::embed_layered(self.embedder().as_ref(), &texts, layer)
            .map_err(|e| RouteError::Embedding {
                message: format!(
                    "embedding pieces stored without the vectors this index reads: {e}"
                ),
            })?;
        let embedded = to_embed.iter().map(|(key, _)| *key).zip(vectors).collect();
        Ok((cleared, embedded, other_layer))
    }
}
