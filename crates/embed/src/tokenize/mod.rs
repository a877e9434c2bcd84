//! The model's tokenizer, loaded the fast way when it can be.
//!
//! A Unigram tokenizer (multilingual-e5-small's: 250k pieces, 17 MB of JSON) is served from a
//! [`table::PieceTable`] written beside `tokenizer.json` the first time it is read and mapped by
//! every later process; the rest of its pipeline is rebuilt by the `tokenizers` crate from a few
//! kilobytes of JSON kept in the table. Any other tokenizer (MiniLM's WordPiece parses in
//! 13 ms) is parsed by the `tokenizers` crate as before. A table that is stale (another
//! tokenizer file), foreign, from another layout version, truncated or damaged is never used:
//! it is rebuilt from the JSON, and the load reports why.

mod table;
mod unigram;

use crate::{EmbedError, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use table::{PieceTable, SourceKey, TableBytes};
use tokenizers::{
    AddedToken, DecoderWrapper, Model, Normalizer, NormalizerWrapper, PostProcessor,
    PostProcessorWrapper, PreTokenizer, PreTokenizerWrapper, Tokenizer, TokenizerBuilder,
    TokenizerImpl, TruncationDirection, TruncationParams, TruncationStrategy,
};
use unigram::MappedUnigram;

type MappedTokenizer = TokenizerImpl<
    MappedUnigram,
    NormalizerWrapper,
    PreTokenizerWrapper,
    PostProcessorWrapper,
    DecoderWrapper,
>;

/// Where a part of a loaded model (its tokenizer, its packed weights) came from, for the
/// cold-start report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadSource {
    /// Mapped from a ready-to-map file an earlier load wrote beside the model's files (a Unigram
    /// table beside `tokenizer.json`, a packed image beside the weights): nothing parsed or
    /// packed.
    Mapped,
    /// Read from the model's files this load (first use, or the ready-to-map file was stale,
    /// foreign or damaged), and the ready-to-map file written for the next process.
    Built,
    /// Read from the model's files; nothing ready-to-map applies (a tokenizer that is not
    /// Unigram, the candle engine).
    #[default]
    Parsed,
}

/// A tokenizer of either kind, answering token ids.
pub(crate) enum TextTokenizer {
    Parsed(Box<Tokenizer>),
    Mapped(Box<MappedTokenizer>),
}

/// A loaded tokenizer and how it was loaded.
pub(crate) struct Loaded {
    pub tokenizer: TextTokenizer,
    pub source: LoadSource,
    /// Why a table beside the file was not used, or could not be written.
    pub note: Option<String>,
}

fn limit<M: Model, N: Normalizer, PT: PreTokenizer, PP: PostProcessor, D: tokenizers::Decoder>(
    t: &mut TokenizerImpl<M, N, PT, PP, D>,
    max_tokens: usize,
) -> tokenizers::Result<()> {
    // Shipped tokenizer.json files often pad every input to 128 tokens: a single short task
    // would then cost 5-7x more. The embedder pads itself, within a batch only.
    t.with_padding(None);
    t.with_truncation(Some(TruncationParams {
        max_length: max_tokens,
        strategy: TruncationStrategy::LongestFirst,
        stride: 0,
        direction: TruncationDirection::Right,
    }))?;
    Ok(())
}

impl TextTokenizer {
    /// Token ids of a text, with the model's special tokens or without.
    pub(crate) fn ids(&self, text: &str, special: bool) -> tokenizers::Result<Vec<u32>> {
        let encoding = match self {
            TextTokenizer::Parsed(t) => t.encode(text, special)?,
            TextTokenizer::Mapped(t) => t.encode(text, special)?,
        };
        Ok(encoding.get_ids().to_vec())
    }

    /// The byte length of the start of `text` the model reads within `max_tokens` tokens,
    /// special tokens included, cut where a content token ends: `text.len()` when all of it
    /// fits, or when the tokenizer's own limit is already at most `max_tokens`.
    pub(crate) fn fitting_bytes(&self, text: &str, max_tokens: usize) -> tokenizers::Result<usize> {
        let encoding = match self {
            TextTokenizer::Parsed(t) => t.encode(text, true)?,
            TextTokenizer::Mapped(t) => t.encode(text, true)?,
        };
        let special = encoding.get_special_tokens_mask();
        let offsets = encoding.get_offsets();
        // Within the limit, or cut by the model's own limit at most `max_tokens`: the model
        // reads the same tokens of the whole text as of any start it would be cut to.
        if special.len() <= max_tokens {
            return Ok(text.len());
        }
        // The specials after the last content token stay; the content before them is cut.
        let trailing = special.iter().rev().take_while(|s| **s == 1).count();
        let keep = max_tokens.saturating_sub(trailing).min(special.len());
        let end = offsets[..keep]
            .iter()
            .zip(&special[..keep])
            .filter(|(_, s)| **s == 0)
            .map(|(o, _)| o.1)
            .max()
            .unwrap_or(0);
        let mut end = end.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Ok(end)
    }

    pub(crate) fn token_to_id(&self, token: &str) -> Option<u32> {
        match self {
            TextTokenizer::Parsed(t) => t.token_to_id(token),
            TextTokenizer::Mapped(t) => t.token_to_id(token),
        }
    }

    /// Truncates at `max_tokens` (special tokens included) and never pads.
    pub(crate) fn limit(&mut self, max_tokens: usize) -> tokenizers::Result<()> {
        match self {
            TextTokenizer::Parsed(t) => limit(t, max_tokens),
            TextTokenizer::Mapped(t) => limit(t, max_tokens),
        }
    }
}

/// Where the table of `tokenizer` lives: beside it.
pub(crate) fn table_path(tokenizer: &Path) -> PathBuf {
    let name = tokenizer.file_name().map_or_else(Default::default, |n| n.to_string_lossy());
    tokenizer.with_file_name(format!("{name}.switchyard-unigram"))
}

/// Loads the tokenizer at `path`, whose sha256 the model folder declares as `sha256`.
pub(crate) fn load(path: &Path, sha256: &str) -> Result<Loaded> {
    let fail = |message: String| EmbedError::Tokenizer { path: path.to_path_buf(), message };
    std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
    let [len, mtime_ns, inode] = crate::prepared::file_stamp(path);
    let key = SourceKey { len, mtime_ns, sha256: sha256.to_string(), inode };
    let table_at = table_path(path);
    let stale = match open_mapped(&table_at, &key) {
        Ok(tokenizer) => {
            return Ok(Loaded { tokenizer, source: LoadSource::Mapped, note: None });
        }
        Err(why) => why.map(|w| format!("{}: {w}; rebuilt", table_at.display())),
    };
    let bytes = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
    let Some(parts) = unigram_parts(&bytes) else {
        let t = Tokenizer::from_bytes(&bytes).map_err(|e| fail(e.to_string()))?;
        return Ok(Loaded {
            tokenizer: TextTokenizer::Parsed(Box::new(t)),
            source: LoadSource::Parsed,
            note: None,
        });
    };
    let table_bytes =
        table::build(&parts.vocab, parts.unk_id, parts.byte_fallback, &parts.config, &key);
    let written = crate::prepared::write_atomically(&table_at, &table_bytes).err().map(|e| {
        format!(
            "{}: could not be written ({e}); every load will parse the JSON",
            table_at.display()
        )
    });
    let table = PieceTable::open(TableBytes::Owned(table_bytes), &key).map_err(fail)?;
    let tokenizer = mapped(table).map_err(|e| fail(e.to_string()))?;
    let note = match (stale, written) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    Ok(Loaded { tokenizer, source: LoadSource::Built, note })
}

/// The table beside the tokenizer: `Err(None)` when there is none, `Err(Some(why))` when it
/// cannot be used.
fn open_mapped(at: &Path, key: &SourceKey) -> std::result::Result<TextTokenizer, Option<String>> {
    let file = match std::fs::File::open(at) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(None),
        Err(e) => return Err(Some(e.to_string())),
    };
    // SAFETY: the table is only ever replaced by renaming a new file over it (never written in
    // place), so the mapped pages stay those of the file that was opened.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Some(e.to_string()))?;
    let table = PieceTable::open(TableBytes::Mapped(map), key).map_err(Some)?;
    mapped(table).map_err(|e| Some(format!("its configuration does not load: {e}")))
}

/// The `tokenizers` pipeline around a mapped Unigram model, rebuilt as that crate's own
/// deserializer builds it (same parts, then the added tokens).
fn mapped(table: PieceTable) -> tokenizers::Result<TextTokenizer> {
    let stored: StoredParts = serde_json::from_slice(table.config())?;
    let mut t = TokenizerBuilder::new()
        .with_model(MappedUnigram::new(table))
        .with_normalizer(stored.normalizer)
        .with_pre_tokenizer(stored.pre_tokenizer)
        .with_post_processor(stored.post_processor)
        .with_decoder(stored.decoder)
        .build()?;
    t.add_tokens(stored.added_tokens.into_iter().map(|a| a.token))?;
    Ok(TextTokenizer::Mapped(Box::new(t)))
}

/// What the table keeps of a tokenizer file besides its pieces.
#[derive(Deserialize)]
struct StoredParts {
    added_tokens: Vec<AddedTokenWithId>,
    normalizer: Option<NormalizerWrapper>,
    pre_tokenizer: Option<PreTokenizerWrapper>,
    post_processor: Option<PostProcessorWrapper>,
    decoder: Option<DecoderWrapper>,
}

#[derive(Deserialize)]
struct AddedTokenWithId {
    #[serde(flatten)]
    token: AddedToken,
}

/// A Unigram tokenizer file, split into its pieces and everything else.
struct UnigramParts {
    vocab: Vec<(String, f64)>,
    unk_id: Option<u32>,
    byte_fallback: bool,
    config: Vec<u8>,
}

#[derive(Deserialize)]
struct FileParts {
    version: Option<String>,
    #[serde(default)]
    added_tokens: Vec<serde_json::Value>,
    #[serde(default)]
    normalizer: serde_json::Value,
    #[serde(default)]
    pre_tokenizer: serde_json::Value,
    #[serde(default)]
    post_processor: serde_json::Value,
    #[serde(default)]
    decoder: serde_json::Value,
    model: ModelParts,
}

#[derive(Deserialize)]
struct ModelParts {
    #[serde(rename = "type")]
    kind: Option<String>,
    unk_id: Option<u32>,
    #[serde(default)]
    byte_fallback: bool,
    vocab: Option<Vocab>,
}

/// A Unigram vocabulary (a list of pairs); any other model's vocabulary is skipped unread.
enum Vocab {
    Pieces(Vec<(String, f64)>),
    Other,
}

impl<'de> Deserialize<'de> for Vocab {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Vocab;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a vocabulary")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Vocab, A::Error> {
                let mut pieces = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(pair) = seq.next_element::<(String, f64)>()? {
                    pieces.push(pair);
                }
                Ok(Vocab::Pieces(pieces))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Vocab, A::Error> {
                while map.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
                Ok(Vocab::Other)
            }
        }
        d.deserialize_any(Visit)
    }
}

/// The parts of a Unigram tokenizer file of a version this crate reads, or `None` for anything
/// else (left to the `tokenizers` crate, which also words any error).
fn unigram_parts(bytes: &[u8]) -> Option<UnigramParts> {
    let file: FileParts = serde_json::from_slice(bytes).ok()?;
    if file.version.as_deref().is_some_and(|v| v != "1.0")
        || file.model.kind.as_deref() != Some("Unigram")
    {
        return None;
    }
    let Some(Vocab::Pieces(vocab)) = file.model.vocab else { return None };
    if vocab.is_empty() || file.model.unk_id.is_some_and(|u| u as usize >= vocab.len()) {
        return None;
    }
    let config = serde_json::to_vec(&serde_json::json!({
        "added_tokens": file.added_tokens,
        "normalizer": file.normalizer,
        "pre_tokenizer": file.pre_tokenizer,
        "post_processor": file.post_processor,
        "decoder": file.decoder,
    }))
    .ok()?;
    Some(UnigramParts {
        vocab,
        unk_id: file.model.unk_id,
        byte_fallback: file.model.byte_fallback,
        config,
    })
}

#[cfg(test)]
mod tests;
