//! The `late` section's `i8` token states, read in place from a mapped index.
//!
//! A large catalog's states are tens of megabytes (Seal-Tools' 74,000 tokens: 28 MB). Copying
//! them out of the file at every open cost each router its own copy and most of its cold
//! start. They are `i8`, so they need no alignment: an index opened from a file reads them where
//! they lie in its mapping, and every router of the process shares the page cache's one copy.
//!
//! bincode writes a byte string and a sequence of `i8` alike (a length, then one byte each), so
//! the states are (de)serialized as bytes and files written either way read the same.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// `i8` token states: built in memory, or a range of a mapped index file. Reads as `&[i8]`.
#[derive(Clone, Default)]
pub struct LateStates(Repr);

#[derive(Clone)]
enum Repr {
    Owned(Vec<i8>),
    Mapped { map: Arc<memmap2::Mmap>, start: usize, len: usize },
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Owned(Vec::new())
    }
}

impl LateStates {
    /// The states `bytes` hold, a slice of `map`, read in place.
    ///
    /// # Errors
    /// When `bytes` does not lie in `map`.
    fn in_place(bytes: &[u8], map: &Arc<memmap2::Mmap>) -> Result<Self, String> {
        // Both are slices of one mapping, so the distance between their starts is the offset.
        let start = (bytes.as_ptr() as usize)
            .checked_sub(map.as_ptr() as usize)
            .filter(|start| start + bytes.len() <= map.len())
            .ok_or("token states outside the mapped file")?;
        Ok(Self(Repr::Mapped { map: Arc::clone(map), start, len: bytes.len() }))
    }

    /// Whether the states are read in place from a mapped file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.0, Repr::Mapped { .. })
    }
}

impl std::ops::Deref for LateStates {
    type Target = [i8];

    fn deref(&self) -> &[i8] {
        match &self.0 {
            Repr::Owned(values) => values,
            Repr::Mapped { map, start, len } => bytemuck::cast_slice(&map[*start..*start + *len]),
        }
    }
}

impl From<Vec<i8>> for LateStates {
    fn from(values: Vec<i8>) -> Self {
        Self(Repr::Owned(values))
    }
}

impl PartialEq for LateStates {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl std::fmt::Debug for LateStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mapped = if self.is_mapped() { ", mapped" } else { "" };
        write!(f, "LateStates({} values{mapped})", self.len())
    }
}

impl Serialize for LateStates {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(bytemuck::cast_slice(self))
    }
}

impl<'de> Deserialize<'de> for LateStates {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_bytes(Bytes)
    }
}

/// Copies the bytes a decoder gives (an index held in memory); [`decode_mapped`] reads a
/// mapped file's in place instead.
struct Bytes;

impl<'de> de::Visitor<'de> for Bytes {
    type Value = LateStates;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bytes of i8 values")
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<LateStates, E> {
        Ok(bytemuck::cast_slice::<u8, i8>(bytes).to_vec().into())
    }

    fn visit_byte_buf<E: de::Error>(self, bytes: Vec<u8>) -> Result<LateStates, E> {
        // In place: the same allocation, each byte read as the `i8` it was written from.
        Ok(bytes.into_iter().map(u8::cast_signed).collect::<Vec<i8>>().into())
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<LateStates, A::Error> {
        let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(v) = seq.next_element::<i8>()? {
            values.push(v);
        }
        Ok(values.into())
    }
}

/// [`crate::LateMeta`] with each kind's states borrowed from the buffer decoded: the same
/// fields in the same order (the `late` section's layout), so that [`decode_mapped`] finds the
/// states in the mapping instead of copying them.
#[derive(Deserialize)]
struct LateInPlace<'a> {
    blend: f32,
    dim: u32,
    #[serde(borrow)]
    tools: ItemsInPlace<'a>,
    #[serde(borrow)]
    skills: ItemsInPlace<'a>,
}

/// [`crate::LateItems`] as [`LateInPlace`] reads it.
#[derive(Deserialize)]
struct ItemsInPlace<'a> {
    offsets: Vec<u32>,
    states: &'a [u8],
    scales: Vec<f32>,
    doc_freq: Vec<(u32, u32)>,
}

impl ItemsInPlace<'_> {
    fn mapped(self, map: &Arc<memmap2::Mmap>) -> Result<crate::LateItems, String> {
        Ok(crate::LateItems {
            offsets: self.offsets,
            states: LateStates::in_place(self.states, map)?,
            scales: self.scales,
            doc_freq: self.doc_freq,
            ids: Vec::new(),
        })
    }
}

/// Decodes a `late` section: from a mapped file (`section` is a slice of `map`), its states read
/// in place; from memory, copied.
pub(crate) fn decode(
    section: &[u8],
    map: Option<&Arc<memmap2::Mmap>>,
) -> Result<crate::LateMeta, String> {
    match map {
        Some(map) => decode_mapped(section, map),
        None => crate::LateMeta::decode(section),
    }
}

/// Decodes a `late` section lying in `map` (`section` is a slice of it), its states read in
/// place rather than copied.
fn decode_mapped(section: &[u8], map: &Arc<memmap2::Mmap>) -> Result<crate::LateMeta, String> {
    let (late, used) = bincode::serde::borrow_decode_from_slice::<LateInPlace<'_>, _>(
        section,
        bincode::config::standard().with_limit::<{ 64 << 20 }>(),
    )
    .map_err(|e| e.to_string())?;
    if used != section.len() {
        return Err(format!("{} trailing bytes", section.len() - used));
    }
    Ok(crate::LateMeta {
        blend: late.blend,
        dim: late.dim,
        tools: late.tools.mapped(map)?,
        skills: late.skills.mapped(map)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout the states had as a plain `Vec<i8>` (format 11 and 12 files).
    #[derive(Serialize)]
    struct AsSequence(Vec<u32>, Vec<i8>, Vec<f32>);

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct AsBytes(Vec<u32>, LateStates, Vec<f32>);

    fn values() -> Vec<i8> {
        (0..300u16).map(|i| i8::from_ne_bytes([(i * 37).to_le_bytes()[0]])).collect()
    }

    #[test]
    fn states_as_bytes_keep_the_layout_of_a_sequence_of_i8() {
        let config = bincode::config::standard();
        let old = AsSequence(vec![0, 2, 3], values(), vec![0.5, 0.25]);
        let new = AsBytes(vec![0, 2, 3], values().into(), vec![0.5, 0.25]);
        let written = bincode::serde::encode_to_vec(&new, config).unwrap();
        assert_eq!(written, bincode::serde::encode_to_vec(&old, config).unwrap());
        let (read, used): (AsBytes, usize) =
            bincode::serde::decode_from_slice(&written, config).unwrap();
        assert_eq!((read, used), (new, written.len()));
    }

    #[test]
    fn states_outside_the_mapping_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("states.bin");
        std::fs::write(&path, [1u8, 2, 3]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a private temporary file, never written while mapped.
        let map = Arc::new(unsafe { memmap2::Mmap::map(&file) }.unwrap());
        let inside = LateStates::in_place(&map[1..], &map).unwrap();
        assert_eq!((&inside[..], inside.is_mapped()), (&[2i8, 3][..], true));
        assert!(LateStates::in_place(&[1, 2], &map).is_err());
    }
}
