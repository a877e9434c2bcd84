//! A text's vector together with the states of its content tokens, for late interaction.
//!
//! Pooling averages a text's last-layer token states into one vector and throws them away. Kept,
//! they let a router compare a task with a catalog item token by token (ColBERT's MaxSim):
//! "reembolso" can meet "refund" even when the averages of a short task and a one-line
//! description disagree. They come from the same forward pass as the vector, so keeping them
//! costs no second embedding.

/// One text's pooled vector and the unit-length states of its content tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenStates {
    /// The pooled unit vector, bit for bit what [`crate::Embedder::embed`] (or
    /// [`crate::Embedder::embed_documents`]) gives for the text.
    pub vector: Vec<f32>,
    /// The content tokens' ids: the prefix and the special tokens left out.
    pub ids: Vec<u32>,
    /// `ids.len()` rows of `dim` values, each scaled to unit length (a zero state stays zero).
    pub states: Vec<f32>,
    /// Each content token's state length before it was scaled (`ids.len()` values).
    pub norms: Vec<f32>,
    /// The sum of the states of the tokens around the content (the special tokens and the
    /// prefix), `dim` values; empty for a model that does not pool by the mean. With
    /// [`TokenStates::norms`] it pools a run of the content as the model pools a whole text.
    pub frame: Vec<f32>,
}

impl TokenStates {
    /// The width of each state.
    pub fn dim(&self) -> usize {
        self.vector.len()
    }

    /// The state of content token `i`.
    pub fn state(&self, i: usize) -> &[f32] {
        let d = self.dim();
        &self.states[i * d..(i + 1) * d]
    }
    /// The unit vector the model's mean pooling gives the content tokens in `run` read with
    /// the text's frame, as if that run were the whole text (its states still read in the
    /// whole text's context); `None` without a frame or norms, or for an empty run.
    pub fn pool_run(&self, run: std::ops::Range<usize>, out: &mut [f32]) -> Option<()> {
        let d = self.dim();
        if self.frame.len() != d || self.norms.len() != self.ids.len() || run.is_empty() {
            return None;
        }
        out.copy_from_slice(&self.frame);
        for t in run {
            let norm = *self.norms.get(t)?;
            for (o, s) in out.iter_mut().zip(self.state(t)) {
                *o += norm * s;
            }
        }
        crate::l2_normalize(out);
        Some(())
    }
}

/// Where a text's content tokens start and end among the ids the model sees.
///
/// `frame` is what the tokenizer gives for the prefix and an empty text (`[CLS] [SEP]`, or
/// `<s> ▁ query : ▁ </s>` for e5). Its last id closes the sequence; everything before it that
/// `ids` repeats is prefix. The prefix's trailing piece can merge with the text's first word
/// (e5's lone `▁` becomes part of `▁did`), so the shared run is measured, not assumed.
#[cfg_attr(not(feature = "candle"), allow(dead_code))]
pub(crate) fn content_range(frame: &[u32], ids: &[u32]) -> std::ops::Range<usize> {
    let open = frame.len().saturating_sub(1);
    let start = frame[..open].iter().zip(ids).take_while(|(a, b)| a == b).count();
    // The closing special token ends every sequence the tokenizer frames.
    let end =
        if ids.len() > start && frame.last() == ids.last() { ids.len() - 1 } else { ids.len() };
    start..end.max(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_and_the_special_tokens_are_left_out() {
        // [CLS] ... [SEP] framing without a prefix.
        assert_eq!(content_range(&[101, 102], &[101, 7, 8, 9, 102]), 1..4);
        // e5's "query: " frame, whose trailing piece (6) merged into the text's first word.
        assert_eq!(content_range(&[0, 41, 1294, 12, 6, 2], &[0, 41, 1294, 12, 6777, 361, 2]), 4..6);
        // A text that starts with the lone piece keeps the run measured: the piece is prefix.
        assert_eq!(content_range(&[0, 41, 1294, 12, 6, 2], &[0, 41, 1294, 12, 6, 30, 2]), 5..6);
    }

    #[test]
    fn an_empty_text_has_no_content_tokens() {
        assert_eq!(content_range(&[101, 102], &[101, 102]), 1..1);
        assert_eq!(content_range(&[0, 41, 1294, 12, 6, 2], &[0, 41, 1294, 12, 6, 2]), 5..5);
    }
}
