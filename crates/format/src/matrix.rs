//! [`MatrixView`]: a zero-copy view of one matrix section.

/// A borrowed, row-major f32 matrix whose rows are `stride` floats apart.
#[derive(Debug, Clone, Copy)]
pub struct MatrixView<'a> {
    pub(crate) data: &'a [f32],
    pub(crate) rows: usize,
    pub(crate) dim: usize,
    pub(crate) stride: usize,
}

impl<'a> MatrixView<'a> {
    /// Wraps plain data (tests, in-memory matrices). `data.len()` must be `rows * stride`.
    pub fn new(data: &'a [f32], rows: usize, dim: usize, stride: usize) -> Option<Self> {
        (stride >= dim && rows.checked_mul(stride) == Some(data.len())).then_some(Self {
            data,
            rows,
            dim,
            stride,
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Width of a row.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Floats between row starts.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Row `i`, `dim` floats. Panics if `i >= rows`, like slice indexing.
    #[inline]
    pub fn row(&self, i: usize) -> &'a [f32] {
        &self.data[i * self.stride..i * self.stride + self.dim]
    }

    /// The whole padded buffer (`rows * stride` floats).
    pub fn as_padded(&self) -> &'a [f32] {
        self.data
    }

    /// Whether the matrix has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Rows `first..first + count` as a matrix of their own (clamped to the rows there are).
    pub fn slice_rows(&self, first: usize, count: usize) -> MatrixView<'a> {
        let first = first.min(self.rows);
        let count = count.min(self.rows - first);
        MatrixView {
            data: &self.data[first * self.stride..(first + count) * self.stride],
            rows: count,
            dim: self.dim,
            stride: self.stride,
        }
    }
}
