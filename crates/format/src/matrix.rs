//! [`MatrixView`]: a zero-copy view of one matrix section, and [`dot`], the one dot product
//! every score in switchyard is made with (the router's kernels, memory search, and the
//! builder's calibration and screen training, so what is trained is what is served).

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

/// Dot product of two equal-length slices. Written so LLVM vectorises it at the baseline
/// target: 16-wide chunks into independent accumulators, a fixed reduction order, then a scalar
/// tail, so a score never depends on the machine or the thread count.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "dot of slices of different lengths");
    let mut acc = [0f32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let (ta, tb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut tail = 0f32;
    for (x, y) in ta.iter().zip(tb) {
        tail += x * y;
    }
    // Fixed pairwise reduction order.
    let mut s8 = [0f32; 8];
    for i in 0..8 {
        s8[i] = acc[i] + acc[i + 8];
    }
    let s4 = [s8[0] + s8[4], s8[1] + s8[5], s8[2] + s8[6], s8[3] + s8[7]];
    (s4[0] + s4[2]) + (s4[1] + s4[3]) + tail
}

/// Reference dot product: a plain sequential sum, for tests.
pub fn dot_naive(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
