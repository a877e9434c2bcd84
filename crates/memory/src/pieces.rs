//! What screening reads of an untrusted text: the whole text's embedding and one per piece
//! (windows, de-obfuscated text, decoded payloads), computed once, when the text is written.
//! With the index's triage, a piece whose text alone clears it is stored without an embedding
//! (most windows of an ordinary long text): the whole text is always embedded (memory search
//! reads it), from its first [`PrepareConfig::whole_text_tokens`] tokens. A sentence piece the triage clears is not stored at all: an ordinary long text has
//! a hundred sentences, and storing each only for the screen to clear it again cost more than
//! embedding the few the triage keeps.

use crate::StoredPiece;
use rusqlite::params;
use switchyard_embed::Embedder;
use switchyard_lexical::LexicalTriage;
use switchyard_untrusted::{Origin, PrepareConfig, prepare};

pub(crate) fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A middle vector's blob: NULL when there is none.
pub(crate) fn middle_blob(v: &[f32]) -> Option<Vec<u8>> {
    (!v.is_empty()).then(|| to_blob(v))
}

/// An entry's texts to embed, the whole text first, and its pieces' spans (start, end, origin).
pub type ScreeningTexts = (Vec<String>, Vec<(usize, usize, Origin)>);

/// The texts to embed for one entry: the whole text first, from its first
/// [`PrepareConfig::whole_text_tokens`] tokens as `model` reads them (its windows hold the
/// rest), then every piece that is not just the whole text again (a short plain entry is
/// embedded once), with the pieces' spans.
pub fn screening_texts(
    model: &dyn Embedder,
    text: &str,
    config: &PrepareConfig,
) -> Result<ScreeningTexts, switchyard_embed::EmbedError> {
    let pieces = prepare(text, config);
    let only_itself =
        pieces.len() == 1 && pieces[0].origin == Origin::Window && pieces[0].text == text.trim();
    let start = model.fitting_prefix(text, config.whole_text_tokens)?;
    let mut texts = vec![text[..start].to_string()];
    let mut spans = Vec::new();
    if !only_itself {
        for p in pieces {
            spans.push((p.start, p.end, p.origin));
            texts.push(p.text);
        }
    }
    Ok((texts, spans))
}

/// An untrusted text embedded for screening: as a whole, and piece by piece.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmbeddedEntry {
    /// The whole text's unit embedding, from its first
    /// [`PrepareConfig::whole_text_tokens`] tokens.
    pub embedding: Vec<f32>,
    /// The whole text's middle-layer vector (empty without a layer).
    pub middle: Vec<f32>,
    /// The middle layer the vectors were pooled from, if any.
    pub layer: Option<usize>,
    /// Its pieces (none when the text is one plain window).
    pub pieces: Vec<StoredPiece>,
}

/// Embeds texts for screening exactly as `add` stores them, batching every text and piece
/// through the model in chunks of 64: what `screen` and `eval injection` measure is what an
/// assembly sees. With a `triage`, the pieces it clears get an empty embedding instead (the
/// whole text is always embedded). With a `layer` (the index's screen layer), each vector also
/// gets that middle layer's, from the same forward pass.
pub fn embed_for_screening(
    model: &dyn Embedder,
    texts: &[&str],
    config: &PrepareConfig,
    triage: Option<&LexicalTriage>,
    layer: Option<usize>,
) -> Result<Vec<EmbeddedEntry>, switchyard_embed::EmbedError> {
    let prepared: Vec<_> = texts
        .iter()
        .map(|t| {
            let (texts, spans) = screening_texts(model, t, config)?;
            Ok(match triage {
                Some(tr) => drop_cleared_sentences(texts, spans, tr),
                None => (texts, spans),
            })
        })
        .collect::<Result<_, switchyard_embed::EmbedError>>()?;
    // Which texts go through the model: every whole text (the first of each entry's texts),
    // and the pieces the triage does not clear.
    let wanted: Vec<Vec<bool>> = prepared
        .iter()
        .map(|(t, _)| {
            t.iter()
                .enumerate()
                .map(|(k, text)| k == 0 || triage.is_none_or(|tr| tr.needs_embedding(text)))
                .collect()
        })
        .collect();
    let all: Vec<&str> = prepared
        .iter()
        .zip(&wanted)
        .flat_map(|((t, _), w)| t.iter().zip(w).filter(|(_, w)| **w).map(|(t, _)| t.as_str()))
        .collect();
    let pieces: usize = prepared.iter().map(|(t, _)| t.len() - 1).sum();
    tracing::debug!(
        entries = texts.len(),
        pieces,
        pieces_embedded = all.len() - texts.len(),
        "embedding entries for screening"
    );
    let vectors = switchyard_embed::embed_layered(model, &all, layer)?;
    let mut it = vectors.into_iter();
    let empty = || switchyard_embed::LayeredVector { vector: Vec::new(), middle: Vec::new() };
    let mut filled =
        wanted.iter().flatten().map(|&w| if w { it.next().unwrap_or_else(empty) } else { empty() });
    Ok(prepared
        .into_iter()
        .map(|(_, spans)| EmbeddedEntry::take(spans, &mut filled, layer))
        .collect())
}

/// An entry's texts and spans without the sentence pieces `triage` clears (the whole text,
/// first, stays).
fn drop_cleared_sentences(
    texts: Vec<String>,
    spans: Vec<(usize, usize, Origin)>,
    triage: &LexicalTriage,
) -> (Vec<String>, Vec<(usize, usize, Origin)>) {
    let mut texts = texts.into_iter();
    let whole = texts.next().unwrap_or_default();
    let (kept_texts, kept_spans): (Vec<String>, Vec<_>) = texts
        .zip(spans)
        .filter(|(t, (_, _, origin))| {
            *origin != Origin::Sentence || triage.sentence_needs_embedding(t)
        })
        .unzip();
    (std::iter::once(whole).chain(kept_texts).collect(), kept_spans)
}

impl EmbeddedEntry {
    /// Takes the whole embedding and one per span from `vectors`, in [`screening_texts`] order;
    /// `layer` is the middle layer they hold, if any.
    pub fn take(
        spans: Vec<(usize, usize, Origin)>,
        vectors: &mut impl Iterator<Item = switchyard_embed::LayeredVector>,
        layer: Option<usize>,
    ) -> Self {
        let whole = vectors
            .next()
            .unwrap_or(switchyard_embed::LayeredVector { vector: Vec::new(), middle: Vec::new() });
        let pieces = spans
            .into_iter()
            .zip(vectors)
            .map(|((start, end, origin), v)| StoredPiece {
                start,
                end,
                origin,
                embedding: v.vector,
                middle: v.middle,
            })
            .collect();
        Self { embedding: whole.vector, middle: whole.middle, layer, pieces }
    }
}

pub(crate) fn insert_pieces(
    tx: &rusqlite::Transaction<'_>,
    id: i64,
    pieces: &[StoredPiece],
) -> rusqlite::Result<()> {
    for (seq, p) in pieces.iter().enumerate() {
        tx.execute(
            "INSERT INTO pieces (entry_id, seq, start, end, origin, embedding, middle) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![id, seq as i64, p.start as i64, p.end as i64, p.origin.as_str(), to_blob(&p.embedding), middle_blob(&p.middle)],
        )?;
    }
    Ok(())
}
