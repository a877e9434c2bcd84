//! A Unigram vocabulary in its served form: one file, read in place through a memory map.
//!
//! Parsing multilingual-e5-small's 17 MB `tokenizer.json` and building its 250k-piece trie and
//! hash map took 400-460 ms of every cold start. This table is what that work produces, laid
//! out so that opening it costs a map, a checksum and a bounds check: pieces, scores and an
//! open-addressing hash table of piece bytes. Processes that map the same file share its pages.
//!
//! Layout (little-endian; every array starts on an 8-byte boundary):
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `SYUNIGRM` |
//! | 8..12 | layout version |
//! | 12..16 | crc32 of every byte after the header |
//! | 16..24, 24..32 | the source file's length and modification time (ns since 1970) |
//! | 32..96 | the source's sha256 as the model folder declares it (hex) |
//! | 96..128 | pieces, hash slots, unk id (`u32::MAX`: none), flags, longest piece, min score |
//! | 128..136 | the file's whole length |
//! | 136..144 | the source file's inode (0 where there is none) |
//! | 144.. | config JSON, scores (`f64`), piece offsets (`u32`), slots (`u32`, id + 1), piece bytes |

use crate::prepared::{u32_at, u64_at};
use std::ops::Range;

const MAGIC: &[u8; 8] = b"SYUNIGRM";
/// Bumped whenever the layout or what is derived into it changes: an older file is rebuilt.
pub(crate) const VERSION: u32 = 1;
const HEADER: usize = 144;
const NO_UNK: u32 = u32::MAX;
const BYTE_FALLBACK: u32 = 1;

/// What a table is valid for: the exact tokenizer file it was derived from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceKey {
    /// Length of the tokenizer file in bytes.
    pub len: u64,
    /// Its modification time in nanoseconds since 1970 (0 where the file system has none).
    pub mtime_ns: u64,
    /// Its sha256 as the model folder declares it (64 hex digits).
    pub sha256: String,
    /// Its inode on Unix (a file put in its place is another file), else 0.
    pub inode: u64,
}

impl SourceKey {
    fn sha_bytes(&self) -> [u8; 64] {
        let mut out = [b'0'; 64];
        let src = self.sha256.as_bytes();
        let n = src.len().min(64);
        out[..n].copy_from_slice(&src[..n]);
        out
    }
}

/// The bytes of a table: mapped from its file, or just built in memory.
pub(crate) enum TableBytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for TableBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            TableBytes::Mapped(m) => m,
            TableBytes::Owned(v) => v,
        }
    }
}

/// A vocabulary the Viterbi search reads in place.
pub(crate) struct PieceTable {
    bytes: TableBytes,
    pieces: usize,
    slots: usize,
    unk_id: Option<u32>,
    byte_fallback: bool,
    longest_piece: usize,
    min_score: f64,
    config: Range<usize>,
    scores_at: usize,
    offsets_at: usize,
    slots_at: usize,
    piece_bytes_at: usize,
}

impl std::fmt::Debug for PieceTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PieceTable").field("pieces", &self.pieces).finish_non_exhaustive()
    }
}

/// FNV-1a, fed one byte at a time so the search can extend a prefix's hash as it grows.
pub(crate) const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;
pub(crate) fn fnv_step(hash: u64, byte: u8) -> u64 {
    (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
}
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_START, |h, &b| fnv_step(h, b))
}

fn pad8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// Where each array starts, from the counts in the header.
struct Offsets {
    scores: usize,
    offsets: usize,
    slots: usize,
    piece_bytes: usize,
}

fn offsets(config_len: usize, pieces: usize, slots: usize) -> Option<Offsets> {
    let scores = HEADER.checked_add(pad8(config_len))?;
    let offsets = scores.checked_add(pieces.checked_mul(8)?)?;
    let slot_start = offsets.checked_add(pad8((pieces + 1).checked_mul(4)?))?;
    let piece_bytes = slot_start.checked_add(pad8(slots.checked_mul(4)?))?;
    Some(Offsets { scores, offsets, slots: slot_start, piece_bytes })
}

/// Builds the table's bytes. Pieces keep their vocabulary ids; where two pieces have the same
/// text, the later id wins (as in the `tokenizers` crate's map).
pub(crate) fn build(
    vocab: &[(String, f64)],
    unk_id: Option<u32>,
    byte_fallback: bool,
    config_json: &[u8],
    key: &SourceKey,
) -> Vec<u8> {
    let pieces = vocab.len();
    let slots = (pieces * 2).next_power_of_two().max(2);
    let min_score = vocab.iter().map(|(_, s)| *s).fold(f64::INFINITY, f64::min);
    let longest = vocab.iter().map(|(p, _)| p.len()).max().unwrap_or(0);
    let total_piece_bytes: usize = vocab.iter().map(|(p, _)| p.len()).sum();
    let at = offsets(config_json.len(), pieces, slots).unwrap_or(Offsets {
        scores: 0,
        offsets: 0,
        slots: 0,
        piece_bytes: 0,
    });
    let mut out = vec![0u8; at.piece_bytes + total_piece_bytes];
    out[HEADER..HEADER + config_json.len()].copy_from_slice(config_json);
    let mut table = vec![0u32; slots];
    let mut offset = 0u32;
    for (id, (piece, score)) in vocab.iter().enumerate() {
        out[at.scores + id * 8..][..8].copy_from_slice(&score.to_le_bytes());
        out[at.offsets + id * 4..][..4].copy_from_slice(&offset.to_le_bytes());
        let start = at.piece_bytes + offset as usize;
        out[start..start + piece.len()].copy_from_slice(piece.as_bytes());
        offset += piece.len() as u32;
        let mut slot = (fnv(piece.as_bytes()) as usize) & (slots - 1);
        loop {
            match table[slot] {
                0 => break table[slot] = id as u32 + 1,
                taken if vocab[taken as usize - 1].0 == *piece => {
                    break table[slot] = id as u32 + 1;
                }
                _ => slot = (slot + 1) & (slots - 1),
            }
        }
    }
    out[at.offsets + pieces * 4..][..4].copy_from_slice(&offset.to_le_bytes());
    for (i, v) in table.iter().enumerate() {
        out[at.slots + i * 4..][..4].copy_from_slice(&v.to_le_bytes());
    }
    out[0..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&VERSION.to_le_bytes());
    out[16..24].copy_from_slice(&key.len.to_le_bytes());
    out[24..32].copy_from_slice(&key.mtime_ns.to_le_bytes());
    out[32..96].copy_from_slice(&key.sha_bytes());
    out[96..100].copy_from_slice(&(pieces as u32).to_le_bytes());
    out[100..104].copy_from_slice(&(slots as u32).to_le_bytes());
    out[104..108].copy_from_slice(&unk_id.unwrap_or(NO_UNK).to_le_bytes());
    out[108..112].copy_from_slice(&(if byte_fallback { BYTE_FALLBACK } else { 0 }).to_le_bytes());
    out[112..116].copy_from_slice(&(longest as u32).to_le_bytes());
    out[116..120].copy_from_slice(&(config_json.len() as u32).to_le_bytes());
    out[120..128].copy_from_slice(&min_score.to_le_bytes());
    let total = out.len() as u64;
    out[128..136].copy_from_slice(&total.to_le_bytes());
    out[136..144].copy_from_slice(&key.inode.to_le_bytes());
    let crc = crc32fast::hash(&out[HEADER..]);
    out[12..16].copy_from_slice(&crc.to_le_bytes());
    out
}

impl PieceTable {
    /// Checks a table and opens it. `Err` says why it cannot be used (the caller rebuilds it).
    pub(crate) fn open(bytes: TableBytes, key: &SourceKey) -> Result<Self, String> {
        let b = &*bytes;
        if b.len() < HEADER || &b[0..8] != MAGIC {
            return Err(
                "not a switchyard tokenizer table (bad magic or shorter than its header)".into()
            );
        }
        let version = u32_at(b, 8);
        if version != VERSION {
            return Err(format!("layout version {version}, this build reads {VERSION}"));
        }
        if u64_at(b, 128) != b.len() as u64 {
            return Err(format!("truncated: {} bytes of {}", b.len(), u64_at(b, 128)));
        }
        let (len, mtime_ns) = (u64_at(b, 16), u64_at(b, 24));
        let same_file = len == key.len && mtime_ns == key.mtime_ns && u64_at(b, 136) == key.inode;
        if !same_file || b[32..96] != key.sha_bytes() {
            return Err("stale: built from another tokenizer file".into());
        }
        let (pieces, slots) = (u32_at(b, 96) as usize, u32_at(b, 100) as usize);
        let config_len = u32_at(b, 116) as usize;
        let at =
            offsets(config_len, pieces, slots).ok_or("truncated or damaged: sizes overflow")?;
        if at.piece_bytes > b.len() || !slots.is_power_of_two() {
            return Err("truncated or damaged: shorter than its arrays".into());
        }
        if crc32fast::hash(&b[HEADER..]) != u32_at(b, 12) {
            return Err("damaged: checksum does not match".into());
        }
        let table = Self {
            pieces,
            slots,
            unk_id: Some(u32_at(b, 104)).filter(|&u| u != NO_UNK),
            byte_fallback: u32_at(b, 108) & BYTE_FALLBACK != 0,
            longest_piece: u32_at(b, 112) as usize,
            min_score: f64::from_le_bytes(b[120..128].try_into().unwrap_or([0; 8])),
            config: HEADER..HEADER + config_len,
            scores_at: at.scores,
            offsets_at: at.offsets,
            slots_at: at.slots,
            piece_bytes_at: at.piece_bytes,
            bytes,
        };
        table.check_arrays()?;
        Ok(table)
    }

    /// Offsets rise and stay inside the file, slots name real pieces, ids fit: so no lookup can
    /// read out of bounds even from a file whose checksum was forged.
    fn check_arrays(&self) -> Result<(), String> {
        let b = &*self.bytes;
        let room = b.len() - self.piece_bytes_at;
        let mut previous = 0;
        for i in 0..=self.pieces {
            let o = u32_at(b, self.offsets_at + i * 4) as usize;
            if o < previous || o > room {
                return Err("damaged: piece offsets out of order".into());
            }
            previous = o;
        }
        if previous != room {
            return Err("truncated or damaged: piece bytes do not end the file".into());
        }
        let slot_ok =
            (0..self.slots).all(|i| u32_at(b, self.slots_at + i * 4) as usize <= self.pieces);
        let unk_ok = self.unk_id.is_none_or(|u| (u as usize) < self.pieces);
        if !slot_ok || !unk_ok || std::str::from_utf8(self.config()).is_err() {
            return Err("damaged: ids out of range".into());
        }
        Ok(())
    }

    /// The tokenizer's other parts (normalizer, pre-tokenizer, post-processor, decoder, added
    /// tokens) as JSON, for the `tokenizers` crate to rebuild.
    pub(crate) fn config(&self) -> &[u8] {
        &self.bytes[self.config.clone()]
    }
    pub(crate) fn len(&self) -> usize {
        self.pieces
    }
    pub(crate) fn unk_id(&self) -> Option<u32> {
        self.unk_id
    }
    pub(crate) fn byte_fallback(&self) -> bool {
        self.byte_fallback
    }
    pub(crate) fn longest_piece(&self) -> usize {
        self.longest_piece
    }
    pub(crate) fn min_score(&self) -> f64 {
        self.min_score
    }
    pub(crate) fn score(&self, id: u32) -> f64 {
        let at = self.scores_at + id as usize * 8;
        f64::from_le_bytes(self.bytes[at..at + 8].try_into().unwrap_or([0; 8]))
    }
    pub(crate) fn piece(&self, id: u32) -> &[u8] {
        let b = &*self.bytes;
        let start = u32_at(b, self.offsets_at + id as usize * 4) as usize;
        let end = u32_at(b, self.offsets_at + id as usize * 4 + 4) as usize;
        &b[self.piece_bytes_at + start..self.piece_bytes_at + end]
    }
    /// The id of a piece, given the FNV-1a hash of its bytes.
    pub(crate) fn id_hashed(&self, piece: &[u8], hash: u64) -> Option<u32> {
        let mut slot = (hash as usize) & (self.slots - 1);
        loop {
            match u32_at(&self.bytes, self.slots_at + slot * 4) {
                0 => return None,
                v if self.piece(v - 1) == piece => return Some(v - 1),
                _ => slot = (slot + 1) & (self.slots - 1),
            }
        }
    }
    pub(crate) fn id(&self, piece: &[u8]) -> Option<u32> {
        self.id_hashed(piece, fnv(piece))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SourceKey {
        SourceKey { len: 10, mtime_ns: 20, sha256: "ab".repeat(32), inode: 7 }
    }
    fn vocab() -> Vec<(String, f64)> {
        [("<unk>", 0.0), ("▁a", -1.0), ("b", -2.5), ("▁a", -0.5), ("日本", -3.0)]
            .map(|(p, s)| (p.to_string(), s))
            .to_vec()
    }
    fn open(bytes: Vec<u8>) -> Result<PieceTable, String> {
        PieceTable::open(TableBytes::Owned(bytes), &key())
    }

    #[test]
    fn a_built_table_answers_what_the_vocabulary_says() {
        let t = open(build(&vocab(), Some(0), false, b"{}", &key())).unwrap();
        assert_eq!(t.len(), 5);
        assert_eq!(t.id("b".as_bytes()), Some(2));
        assert_eq!(t.id("日本".as_bytes()), Some(4));
        assert_eq!(t.id("▁a".as_bytes()), Some(3), "a repeated piece keeps its later id");
        assert_eq!(t.id(b"zz"), None);
        assert_eq!((t.score(2), t.min_score(), t.longest_piece()), (-2.5, -3.0, 6));
        assert_eq!((t.unk_id(), t.byte_fallback(), t.config()), (Some(0), false, &b"{}"[..]));
    }

    #[test]
    fn damage_truncation_version_and_staleness_are_each_refused() {
        let good = build(&vocab(), Some(0), false, b"{}", &key());
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(open(flipped).unwrap_err().contains("checksum"));
        assert!(open(good[..good.len() - 3].to_vec()).unwrap_err().contains("truncated"));
        assert!(open(good[..40].to_vec()).unwrap_err().contains("magic"));
        let mut old = good.clone();
        old[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
        assert!(open(old).unwrap_err().contains("version"));
        let other = SourceKey { mtime_ns: 21, ..key() };
        let stale = PieceTable::open(TableBytes::Owned(good.clone()), &other);
        assert!(stale.unwrap_err().contains("stale"));
        let moved = SourceKey { inode: 8, ..key() };
        let stale = PieceTable::open(TableBytes::Owned(good.clone()), &moved);
        assert!(stale.unwrap_err().contains("stale"));
        let foreign = SourceKey { sha256: "cd".repeat(32), ..key() };
        assert!(PieceTable::open(TableBytes::Owned(good), &foreign).unwrap_err().contains("stale"));
    }

    #[test]
    fn a_forged_checksum_does_not_let_offsets_escape_the_file() {
        let mut bytes = build(&vocab(), Some(0), false, b"{}", &key());
        let at = offsets(2, 5, 16).unwrap();
        bytes[at.offsets + 4..at.offsets + 8].copy_from_slice(&9999u32.to_le_bytes());
        let crc = crc32fast::hash(&bytes[HEADER..]);
        bytes[12..16].copy_from_slice(&crc.to_le_bytes());
        assert!(open(bytes).unwrap_err().contains("offsets"));
    }
}
