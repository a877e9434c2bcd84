//! The Unigram model over a mapped [`PieceTable`]: the `tokenizers` crate's own Viterbi search
//! (`Unigram::encode_optimized`, which follows sentencepiece), step for step, reading pieces and
//! scores in place instead of from a trie and a hash map built at load. The rest of the pipeline
//! (added tokens, normalizer, pre-tokenizer, truncation, post-processor) stays the `tokenizers`
//! crate's, so only this search had to be reproduced; a test holds it to that crate's ids.

use super::table::{FNV_START, PieceTable, fnv_step};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tokenizers::models::unigram::UnigramTrainer;
use tokenizers::{Model, Token};

/// What an unknown character costs below the lowest piece (sentencepiece's `kUnkPenalty`).
const UNKNOWN_PENALTY: f64 = 10.0;

/// A Unigram vocabulary served from a [`PieceTable`].
pub(crate) struct MappedUnigram {
    table: PieceTable,
}

/// The best path's last piece ending at one byte position.
#[derive(Clone, Copy)]
struct Best {
    id: u32,
    score: f64,
    start: Option<usize>,
}

fn error(message: String) -> tokenizers::Error {
    message.into()
}

impl MappedUnigram {
    pub(crate) fn new(table: PieceTable) -> Self {
        Self { table }
    }

    /// The pieces of the best segmentation, as (start, end, id) byte spans; runs of unknown
    /// characters come fused into one span with id `None`.
    fn segment(&self, sentence: &str) -> tokenizers::Result<Vec<(usize, usize, Option<u32>)>> {
        let size = sentence.len();
        let bytes = sentence.as_bytes();
        let unk_score = self.table.min_score() - UNKNOWN_PENALTY;
        let mut best = vec![Best { id: 0, score: 0.0, start: None }; size + 1];
        let mut start = 0;
        while start < size {
            let till_here = best[start].score;
            let first_char = sentence[start..].chars().next().map_or(1, char::len_utf8);
            let mut has_single = false;
            let mut hash = FNV_START;
            let limit = (start + self.table.longest_piece()).min(size);
            for end in start + 1..=limit {
                hash = fnv_step(hash, bytes[end - 1]);
                if !sentence.is_char_boundary(end) {
                    continue;
                }
                let Some(id) = self.table.id_hashed(&bytes[start..end], hash) else { continue };
                let candidate = self.table.score(id) + till_here;
                let target = &mut best[end];
                if target.start.is_none() || candidate > target.score {
                    *target = Best { id, score: candidate, start: Some(start) };
                }
                has_single |= end - start == first_char;
            }
            if !has_single {
                let unk = self.table.unk_id().ok_or_else(|| error("Missing unk_id".into()))?;
                let candidate = unk_score + till_here;
                let target = &mut best[start + first_char];
                if target.start.is_none() || candidate > target.score {
                    *target = Best { id: unk, score: candidate, start: Some(start) };
                }
            }
            start += first_char;
        }
        let unk = self.table.unk_id();
        let mut spans = Vec::new();
        let mut end = size;
        while end > 0 {
            let node = best[end];
            let start = node.start.ok_or_else(|| error("Unigram: broken best path".into()))?;
            match spans.last_mut() {
                Some((fused_start, _, None)) if Some(node.id) == unk => *fused_start = start,
                _ if Some(node.id) == unk => spans.push((start, end, None)),
                _ => spans.push((start, end, Some(node.id))),
            }
            end = start;
        }
        spans.reverse();
        Ok(spans)
    }
}

impl Model for MappedUnigram {
    type Trainer = UnigramTrainer;

    fn tokenize(&self, sentence: &str) -> tokenizers::Result<Vec<Token>> {
        if sentence.is_empty() {
            return Ok(Vec::new());
        }
        let mut tokens = Vec::new();
        for (start, end, id) in self.segment(sentence)? {
            let text = &sentence[start..end];
            // A fused run of unknown characters is looked up as a whole, as the crate does.
            let id = id.or_else(|| self.table.id(text.as_bytes()));
            let id = match id {
                Some(id) => id,
                None => {
                    if self.table.byte_fallback() {
                        let bytes: Option<Vec<Token>> = text
                            .bytes()
                            .map(|b| {
                                let name = format!("<0x{b:02X}>");
                                self.table
                                    .id(name.as_bytes())
                                    .map(|id| Token::new(id, name, (start, end)))
                            })
                            .collect();
                        if let Some(bytes) = bytes {
                            tokens.extend(bytes);
                            continue;
                        }
                    }
                    self.table.unk_id().ok_or_else(|| error("Missing unk_id".into()))?
                }
            };
            tokens.push(Token::new(id, text.to_string(), (start, end)));
        }
        Ok(tokens)
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.table.id(token.as_bytes())
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        ((id as usize) < self.table.len())
            .then(|| String::from_utf8_lossy(self.table.piece(id)).into_owned())
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        (0..self.table.len() as u32)
            .map(|id| (String::from_utf8_lossy(self.table.piece(id)).into_owned(), id))
            .collect()
    }

    fn get_vocab_size(&self) -> usize {
        self.table.len()
    }

    fn save(&self, _folder: &Path, _prefix: Option<&str>) -> tokenizers::Result<Vec<PathBuf>> {
        Err(error("a mapped Unigram table is saved by switchyard, not by tokenizers".into()))
    }

    fn get_trainer(&self) -> UnigramTrainer {
        UnigramTrainer::default()
    }
}
