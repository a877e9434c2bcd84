//! The product over panels: threads, shares of a team, and the kernel each panel runs on.

use super::*;

impl PackedLinear {
    /// The precision the weights are stored in (`None`: Q4_0).
    #[cfg(test)]
    pub(super) fn precision(&self) -> Option<Precision> {
        match self.packed {
            Packed::F32(_) => Some(Precision::F32),
            Packed::F16(_) => Some(Precision::F16),
            Packed::Q4(_) => None,
            Packed::Q8(_) => Some(Precision::Q8),
            Packed::I8(_) => Some(Precision::I8),
        }
    }

    /// Input width.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Output width.
    pub fn n(&self) -> usize {
        self.n
    }

    /// `out[m, n] = x[m, k] W^T + b`, splitting panels over `threads` (1 = this thread).
    pub fn forward(&self, x: &[f32], m: usize, out: &mut Vec<f32>, threads: usize) {
        self.forward_with(isa(), x, m, out, threads);
    }

    pub(super) fn forward_with(
        &self,
        isa: Isa,
        x: &[f32],
        m: usize,
        out: &mut Vec<f32>,
        threads: usize,
    ) {
        assert_eq!(x.len(), m * self.k, "input is not [m, k]");
        // Not cleared first: every output is written whole by its panel, so zeroing `m x n`
        // floats on every call would be wasted stores (see `fast::linear`).
        out.resize(m * self.n, 0.0);
        let panels = self.n.div_ceil(PANEL);
        if threads <= 1 || panels < 2 {
            self.panels(isa, x, m, 0..panels, out.as_mut_ptr());
            return;
        }
        let per = panels.div_ceil(threads);
        let dst = SendPtr(out.as_mut_ptr());
        rayon::scope(|s| {
            for t in 0..threads {
                let range = (t * per).min(panels)..((t + 1) * per).min(panels);
                if range.is_empty() {
                    continue;
                }
                s.spawn(move |_| self.panels(isa, x, m, range, dst.get()));
            }
        });
    }

    /// Computes share `part` of `parts` of the output's panels (all rows), into `dst`, a
    /// `[m, n]` row-major buffer that other threads fill with the other shares. Returns the
    /// columns written. `quantized`: the activations of `x` for integer weights, already
    /// quantized by the team ([`PackedLinear::is_int8`]); `None` quantizes them on this thread.
    ///
    /// # Safety
    /// `dst` must point to `m * n` floats that nothing else reads or writes in these columns
    /// during the call; `quantized` must be `x`'s.
    pub(crate) unsafe fn forward_share(
        &self,
        x: &[f32],
        quantized: Option<&crate::cpu::int8::Activations>,
        m: usize,
        dst: *mut f32,
        part: usize,
        parts: usize,
    ) -> std::ops::Range<usize> {
        assert_eq!(x.len(), m * self.k, "input is not [m, k]");
        let panels = crate::cpu::team::share(self.n.div_ceil(PANEL), part, parts);
        let cols = (panels.start * PANEL).min(self.n)..(panels.end * PANEL).min(self.n);
        match (quantized, &self.packed) {
            (Some(a), Packed::I8(v)) => self.int8_panels(isa(), a, v, m, panels, dst),
            _ => self.panels(isa(), x, m, panels, dst),
        }
        cols
    }

    /// Whether the weights are integers, whose products read quantized activations.
    pub(crate) fn is_int8(&self) -> bool {
        matches!(self.packed, Packed::I8(_))
    }

    /// Computes the columns of `panels` for every row. `dst` points to `[m, n]` row-major.
    fn panels(&self, isa: Isa, x: &[f32], m: usize, panels: std::ops::Range<usize>, dst: *mut f32) {
        let len = self.k * PANEL;
        let runs = self.k / QUANT_RUN;
        if let Packed::I8(v) = &self.packed {
            let simd = super::settings::int_kernel(isa).simd();
            crate::cpu::int8::with_activations(simd, x, m, self.k, |a| {
                self.int8_panels(isa, a, v, m, panels, dst)
            });
            return;
        }
        for p in panels {
            let w = match &self.packed {
                Packed::F32(v) => Weights::F32(&v[p * len..(p + 1) * len]),
                Packed::F16(v) => Weights::F16(&v[p * len..(p + 1) * len]),
                Packed::Q4(v) => Weights::Q4(&v[p * runs..(p + 1) * runs]),
                Packed::Q8(v) => Weights::Q8(&v[p * runs..(p + 1) * runs]),
                Packed::I8(_) => unreachable!("integer weights took the branch above"),
            };
            let col0 = p * PANEL;
            let width = (self.n - col0).min(PANEL);
            let bias = &self.bias[col0..col0 + width];
            match isa {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: avx512f was detected at run time before `Isa::Avx512` was chosen, and
                // f16 weights exist only where F16C was detected too.
                Isa::Avx512 => unsafe {
                    x86::panel_avx512(x, m, self.k, w, bias, dst, self.n, col0)
                },
                #[cfg(target_arch = "x86_64")]
                // SAFETY: avx2 and fma were detected at run time before `Isa::Avx2` was chosen,
                // and f16 weights exist only where F16C was detected too.
                Isa::Avx2 => unsafe { x86::panel_avx2(x, m, self.k, w, bias, dst, self.n, col0) },
                _ => panel_scalar(x, m, self.k, w, bias, dst, self.n, col0),
            }
        }
    }

    /// The columns of `panels` for every row, from integer weights `v` and quantized
    /// activations `a`.
    fn int8_panels(
        &self,
        isa: Isa,
        a: &crate::cpu::int8::Activations,
        v: &[crate::cpu::int8::I8Run],
        m: usize,
        panels: std::ops::Range<usize>,
        dst: *mut f32,
    ) {
        let kernel = super::settings::int_kernel(isa);
        let runs = self.k / QUANT_RUN;
        for p in panels {
            let col0 = p * PANEL;
            let bias = &self.bias[col0..col0 + (self.n - col0).min(PANEL)];
            let panel_runs = &v[p * runs..(p + 1) * runs];
            // SAFETY: the kernel is the process's; dst is the caller's [m, n] output and the
            // panel's columns fit in it, written by this share only.
            unsafe {
                crate::cpu::int8::panel(kernel, a, m, self.k, panel_runs, bias, dst, self.n, col0)
            };
        }
    }
}
