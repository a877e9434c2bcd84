//! Where the engine's arrays live: in memory the process built, or in a mapped file another
//! process may share ([`crate::cpu::image`]). The forward reads both as plain slices.

use std::ops::Deref;
use std::sync::Arc;

/// An array of plain numbers (or of packed runs of them), owned or mapped.
pub(crate) struct Store<T: bytemuck::Pod> {
    inner: Inner<T>,
}

enum Inner<T> {
    Owned(Vec<T>),
    Mapped { map: Arc<memmap2::Mmap>, start: usize, len: usize },
}

impl<T: bytemuck::Pod> Store<T> {
    /// `len` values of `T` at byte `start` of `map`; `None` when they do not fit in it or are
    /// not aligned for `T` (the image places every array on a 64-byte boundary).
    pub(crate) fn mapped(map: Arc<memmap2::Mmap>, start: usize, len: usize) -> Option<Self> {
        let bytes = len.checked_mul(size_of::<T>())?;
        let slice = map.get(start..start.checked_add(bytes)?)?;
        bytemuck::try_cast_slice::<u8, T>(slice).ok()?;
        Some(Self { inner: Inner::Mapped { map, start, len } })
    }

    /// The values as bytes (for writing an image).
    pub(crate) fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }
}

impl<T: bytemuck::Pod> From<Vec<T>> for Store<T> {
    fn from(v: Vec<T>) -> Self {
        Self { inner: Inner::Owned(v) }
    }
}

impl<T: bytemuck::Pod> Deref for Store<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.inner {
            Inner::Owned(v) => v,
            // Checked in `Store::mapped`: in bounds and aligned.
            Inner::Mapped { map, start, len } => {
                bytemuck::cast_slice(&map[*start..*start + len * size_of::<T>()])
            }
        }
    }
}

/// A layer norm's weight and bias.
pub(crate) type NormPair = (Store<f32>, Store<f32>);
