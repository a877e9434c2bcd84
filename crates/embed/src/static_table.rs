//! Static embeddings: a text as the weighted sum of per-piece vectors, no transformer run.
//!
//! The table is distilled from the model at build time (each piece embedded alone, the
//! model2vec recipe) and stored in the index; this is the arithmetic both the builder and the
//! router's cascade use, so a catalog row and a task land in the same space.

/// How much of a text the table knows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Pieces found in the table (each occurrence counts).
    pub known: usize,
    /// Pieces in the text.
    pub total: usize,
}

impl Coverage {
    /// Share of the text's pieces the table knows (0 for an empty text).
    pub fn share(&self) -> f32 {
        if self.total == 0 { 0.0 } else { self.known as f32 / self.total as f32 }
    }
}

/// A borrowed static table: sorted piece ids, a weight and a unit row per piece.
#[derive(Debug, Clone, Copy)]
pub struct StaticTable<'a> {
    ids: &'a [u32],
    weights: &'a [f32],
    rows: &'a [f32],
    dim: usize,
    stride: usize,
}

impl<'a> StaticTable<'a> {
    /// Wraps a table; `None` unless `ids` ascend strictly, there is one weight per id, and
    /// `rows` holds `ids.len()` rows of `dim` floats `stride` apart.
    pub fn new(
        ids: &'a [u32],
        weights: &'a [f32],
        rows: &'a [f32],
        dim: usize,
        stride: usize,
    ) -> Option<Self> {
        let ok = weights.len() == ids.len()
            && stride >= dim
            && ids.len().checked_mul(stride) == Some(rows.len())
            && ids.windows(2).all(|w| w[0] < w[1]);
        ok.then_some(Self { ids, weights, rows, dim, stride })
    }

    /// Number of pieces.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Writes the unit static embedding of a text given as piece ids into `out` (`dim` floats)
    /// and says how many of its pieces the table knows. Unknown pieces are skipped; a text with
    /// none known gives the zero vector. Pieces are summed in text order, so the result is a
    /// pure function of the input.
    pub fn embed_into(&self, pieces: &[u32], out: &mut [f32]) -> Coverage {
        assert_eq!(out.len(), self.dim, "output width differs from the table's");
        out.fill(0.0);
        let mut known = 0;
        for p in pieces {
            let Ok(i) = self.ids.binary_search(p) else { continue };
            known += 1;
            let w = self.weights[i];
            let row = &self.rows[i * self.stride..i * self.stride + self.dim];
            for (o, x) in out.iter_mut().zip(row) {
                *o += w * x;
            }
        }
        crate::l2_normalize(out);
        Coverage { known, total: pieces.len() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_sum_of_known_pieces_normalised() {
        // Pieces 3 and 7 on the two axes; 7 weighs three times 3.
        let rows = [1.0, 0.0, 0.0, 1.0];
        let t = StaticTable::new(&[3, 7], &[1.0, 3.0], &rows, 2, 2).unwrap();
        let mut out = [0.0; 2];
        let c = t.embed_into(&[3, 7, 99], &mut out);
        assert_eq!(c, Coverage { known: 2, total: 3 });
        assert!((out[0] - 1.0 / 10f32.sqrt()).abs() < 1e-6);
        assert!((out[1] - 3.0 / 10f32.sqrt()).abs() < 1e-6);
        assert_eq!(t.embed_into(&[1, 2], &mut out).share(), 0.0);
        assert_eq!(out, [0.0, 0.0]);
    }

    #[test]
    fn rejects_unsorted_or_short_tables() {
        assert!(StaticTable::new(&[7, 3], &[1.0, 1.0], &[0.0; 4], 2, 2).is_none());
        assert!(StaticTable::new(&[3, 7], &[1.0], &[0.0; 4], 2, 2).is_none());
        assert!(StaticTable::new(&[3, 7], &[1.0, 1.0], &[0.0; 3], 2, 2).is_none());
    }
}
