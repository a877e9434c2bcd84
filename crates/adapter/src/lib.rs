//! The query adapter: a light map learned from task/tool pairs over a frozen sentence encoder.
//!
//! The map is a low-rank residual, `a(x) = normalise(x + U (Vᵀ x))` with `U` and `V` of
//! `dim × rank`. It is applied on both sides of tool retrieval: build-index maps the tool and
//! skill rows, the router maps the task vector, so their cosine is the adapted cosine. Modes,
//! memory search and injection screening keep the encoder's own vectors. With `U = 0` the map is
//! the identity, which is where training starts and where weight decay pulls it back.
//!
//! ```no_run
//! let adapter = switchyard_adapter::Adapter::read(std::path::Path::new("e5-small.swya"))?;
//! let task = vec![0.0f32; adapter.dim()];
//! let mut out = Vec::new();
//! adapter.apply(&task, &mut out);
//! # Ok::<(), switchyard_adapter::AdapterError>(())
//! ```
//!
//! The file format is in [`mod@file`]; the trainer (feature `train`, candle autograd) in `train`.

pub mod file;
#[cfg(feature = "train")]
pub mod train;

pub use file::{ADAPTER_FILE_VERSION, AdapterError, AdapterInfo, SetSummary};

/// A trained adapter: the low-rank factors, the model they were trained for and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Adapter {
    /// Model fingerprint (the index header's 16 bytes) the adapter was trained on.
    pub fingerprint: [u8; 16],
    /// Embedding dimension.
    pub dim: usize,
    /// Rank of the residual.
    pub rank: usize,
    /// `dim × rank`, row-major: the residual's output side.
    pub u: Vec<f32>,
    /// `dim × rank`, row-major: the residual's input side.
    pub v: Vec<f32>,
    /// How it was trained (sets, settings, validation figures).
    pub info: AdapterInfo,
}

impl Adapter {
    /// The identity adapter of `rank` (its `U` is zero): where training starts.
    pub fn identity(fingerprint: [u8; 16], dim: usize, rank: usize, info: AdapterInfo) -> Self {
        Self { fingerprint, dim, rank, u: vec![0.0; dim * rank], v: vec![0.0; dim * rank], info }
    }

    /// Embedding dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Maps `x` (an L2-normalised embedding of [`Adapter::dim`] values) into `out`, normalised.
    /// A few microseconds: `2 · dim · rank` multiply-adds.
    pub fn apply(&self, x: &[f32], out: &mut Vec<f32>) {
        debug_assert_eq!(x.len(), self.dim);
        let r = self.rank;
        let mut t = vec![0f32; r];
        for (xi, vrow) in x.iter().zip(self.v.chunks_exact(r)) {
            for (tk, vk) in t.iter_mut().zip(vrow) {
                *tk += xi * vk;
            }
        }
        out.clear();
        out.extend(
            x.iter()
                .zip(self.u.chunks_exact(r))
                .map(|(xi, urow)| xi + urow.iter().zip(&t).map(|(u, tk)| u * tk).sum::<f32>()),
        );
        let norm = out.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            out.iter_mut().for_each(|v| *v /= norm);
        }
    }

    /// Maps every row of a row-major matrix of `dim` columns.
    pub fn apply_rows(&self, rows: &[f32]) -> Vec<f32> {
        let mut out = Vec::with_capacity(rows.len());
        let mut one = Vec::with_capacity(self.dim);
        for row in rows.chunks_exact(self.dim) {
            self.apply(row, &mut one);
            out.extend_from_slice(&one);
        }
        out
    }

    /// A short stable id: the first 16 hex digits of the SHA-256 of the adapter's file bytes.
    pub fn id(&self) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(self.to_bytes());
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn the_identity_adapter_changes_nothing() {
        let a = Adapter::identity([1; 16], 4, 2, AdapterInfo::default());
        let x = unit(&[1.0, -2.0, 0.5, 3.0]);
        let mut out = Vec::new();
        a.apply(&x, &mut out);
        assert_eq!(out, x);
    }

    #[test]
    fn apply_is_the_normalised_residual() {
        let mut a = Adapter::identity([1; 16], 2, 1, AdapterInfo::default());
        // U = [1, 0]ᵀ, V = [0, 1]ᵀ: x + U (Vᵀ x) = (x0 + x1, x1).
        a.u = vec![1.0, 0.0];
        a.v = vec![0.0, 1.0];
        let mut out = Vec::new();
        a.apply(&[0.6, 0.8], &mut out);
        let want = unit(&[1.4, 0.8]);
        assert!(out.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-6), "{out:?}");
        let rows = a.apply_rows(&[0.6, 0.8, 0.6, 0.8]);
        assert_eq!(rows, [out.clone(), out].concat(), "rows are mapped one by one");
    }
}
