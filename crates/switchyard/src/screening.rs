//! Stored memory entries as the router screens them.

use switchyard_memory::StoredPiece;
use switchyard_router::{PieceRef, ScreenEntry};

/// The [`ScreenEntry`] of a text with the embeddings stored for it (by `memory add`, or by
/// [`switchyard_memory::embed_for_screening`]): the whole text and each of its pieces. With
/// `windows` off, only the whole text is screened (the pre-window behaviour, for comparison).
pub fn screen_entry<'a>(
    text: &'a str,
    embedding: &'a [f32],
    pieces: &'a [StoredPiece],
    windows: bool,
) -> ScreenEntry<'a> {
    let pieces = match windows {
        true => pieces
            .iter()
            .map(|p| PieceRef {
                start: p.start,
                end: p.end,
                origin: p.origin,
                embedding: &p.embedding,
            })
            .collect(),
        false => Vec::new(),
    };
    ScreenEntry { text, embedding, pieces }
}

/// Screens untrusted texts with `router` exactly as `memory add` would store and an assembly
/// would screen them: each cut into windows, embedded whole and window by window in batches,
/// then screened. What `switchyard screen`, `POST /v1/screen`, MCP `screen` and the Python
/// `Router.screen` answer. Also returns how many texts the model embedded (wholes and windows).
pub fn screen_texts(
    router: &switchyard_router::Router,
    texts: &[&str],
) -> Result<(switchyard_router::ScreenReport, usize), crate::AssembleError> {
    let stored = switchyard_memory::embed_for_screening(
        router.embedder().as_ref(),
        texts,
        &router.prepare_config(),
    )
    .map_err(|e| switchyard_router::RouteError::Embedding {
        message: format!("embedding the texts to screen: {e}"),
    })?;
    let embedded = stored.iter().map(|e| 1 + e.pieces.len()).sum();
    let entries: Vec<ScreenEntry<'_>> = texts
        .iter()
        .zip(&stored)
        .map(|(t, e)| screen_entry(t, &e.embedding, &e.pieces, true))
        .collect();
    Ok((router.screen(&entries)?, embedded))
}
