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
