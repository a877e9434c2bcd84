use super::*;

fn naive(x: &[f32], w_t: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for r in 0..m {
        for c in 0..n {
            out[r * n + c] = b[c] + (0..k).map(|i| x[r * k + i] * w_t[i * n + c]).sum::<f32>();
        }
    }
    out
}

/// `[m, k]` inputs in [-6/7, 6/7], repeating every 13.
fn inputs(m: usize, k: usize) -> Vec<f32> {
    (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect()
}

fn biases(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 / 10.0).collect()
}

/// `[n, k]` weights in [-0.2, 0.2], varying smoothly (so runs of 32 have mixed scales).
fn smooth_weights(n: usize, k: usize) -> Vec<f32> {
    (0..n * k).map(|i| ((i as f32) * 0.37).sin() * 0.2).collect()
}

/// The `[n, k]` weights a q8 or i8 matrix stores, as the values its products use.
fn stored_weights(lin: &PackedLinear) -> Vec<f32> {
    let (n, k) = (lin.n, lin.k);
    let run_of = |col: usize, kk: usize| (col / PANEL) * (k / QUANT_RUN) + kk / QUANT_RUN;
    let mut out = vec![0f32; n * k];
    for col in 0..n {
        for kk in 0..k {
            let (c, j) = (col % PANEL, kk % QUANT_RUN);
            out[col * k + kk] = match &lin.packed {
                Packed::Q8(runs) => {
                    let run = &runs[run_of(col, kk)];
                    f32::from(run.values[j][c]) * run.scales[c]
                }
                Packed::I8(runs) => crate::cpu::int8::stored(&runs[run_of(col, kk)], c, j),
                _ => panic!("not stored as integers"),
            };
        }
    }
    out
}

/// The largest magnitude in the run of 32 that holds element `i` of `v`.
fn run_amax(v: &[f32], i: usize) -> f32 {
    let start = i / QUANT_RUN * QUANT_RUN;
    v[start..start + QUANT_RUN].iter().fold(0f32, |a, x| a.max(x.abs()))
}

/// Every kernel this CPU can run (the scalar one always).
fn available() -> Vec<Isa> {
    let mut v = vec![Isa::Scalar];
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            v.push(Isa::Avx2);
        }
        if is_x86_feature_detected!("avx512f") {
            v.push(Isa::Avx512);
        }
    }
    eprintln!("kernels tested: {v:?}");
    v
}

#[test]
fn every_shape_matches_the_naive_product_on_any_thread_count() {
    for &(m, k, n) in &[
        (1, 3, 5),
        (7, 17, 40),
        (13, 64, 96),
        (25, 33, 70),
        (12, 8, 32),
        (30, 300, 48),
        (9, 130, 33),
    ] {
        let x = inputs(m, k);
        let w: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 9.0).collect();
        let b: Vec<f32> = (0..n).map(|i| i as f32 / 10.0).collect();
        let lin = PackedLinear::new(&w, b.clone(), k, n);
        let rows: Vec<f32> = (0..n * k).map(|i| w[(i % k) * n + i / k]).collect();
        assert_eq!(
            PackedLinear::from_rows(&rows, b.clone(), n, k).precision(),
            Some(Precision::F32)
        );
        let half = PackedLinear::from_rows_in(&rows, b.clone(), n, k, Precision::F16);
        assert_eq!(half.precision(), Some(Precision::F16));
        // The f16 kernels compute with exactly the rounded weights.
        let rounded: Vec<f32> = w.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect();
        for (lin, w) in [(&lin, &w), (&half, &rounded)] {
            let want = naive(&x, w, &b, m, k, n);
            for isa in available() {
                for threads in [1, 2, 3] {
                    // A reused buffer's old values never show: every output is written.
                    let mut out = vec![f32::NAN; m * n + 7];
                    lin.forward_with(isa, &x, m, &mut out, threads);
                    assert_eq!(out.len(), m * n);
                    for (i, (a, e)) in out.iter().zip(&want).enumerate() {
                        assert!(
                            (a - e).abs() < 1e-4,
                            "{m}x{k}x{n} {isa:?} {:?} t{threads} [{i}]: {a} vs {e}",
                            lin.precision()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn halves_round_to_nearest_and_widen_exactly() {
    let src: Vec<f32> = (0..1000).map(|i| ((i as f32) * 0.37 - 170.0).sin() * 3.0).collect();
    let narrow = f32_to_f16(&src);
    for (&v, &h) in src.iter().zip(&narrow) {
        assert_eq!(h, half::f16::from_f32(v).to_bits(), "{v}");
    }
    let mut block = Block([0.0; KC * PANEL]);
    let rows = narrow.len() / PANEL;
    let wide = block_of(Weights::F16(&narrow[..rows * PANEL]), 0, rows, &mut block);
    for (&w, &h) in wide.iter().zip(&narrow) {
        assert_eq!(w, half::f16::from_bits(h).to_f32());
    }
}

/// ggml Q4_0 blocks for an `[n, k]` weight, and their dequantization (ggml's formula).
fn q4_0_weight(n: usize, k: usize) -> (Vec<u8>, Vec<f32>) {
    let mut blocks = Vec::new();
    let mut w = Vec::new();
    for row in 0..n {
        for b in 0..k / QUANT_RUN {
            let d = half::f16::from_f32(0.01 + ((row * 7 + b * 3) % 17) as f32 / 97.0);
            blocks.extend(d.to_bits().to_le_bytes());
            let q: Vec<u8> =
                (0..QUANT_RUN).map(|j| ((row * 31 + b * 5 + j * 11) % 16) as u8).collect();
            blocks.extend((0..16).map(|j| q[j] | (q[j + 16] << 4)));
            w.extend(q.iter().map(|&v| (i32::from(v) - 8) as f32 * d.to_f32()));
        }
    }
    (blocks, w)
}

#[test]
fn q4_0_weights_give_exactly_the_products_of_their_dequantization() {
    // k: one run, a partial KC block after a whole one, several blocks; n: partial panels.
    for &(m, k, n) in &[(1, 32, 5), (7, 160, 40), (13, 384, 70), (30, 96, 33)] {
        let (blocks, w) = q4_0_weight(n, k);
        let (x, b) = (inputs(m, k), biases(n));
        let q4 = PackedLinear::from_q4_0(&blocks, b.clone(), n, k).expect("valid blocks");
        assert_eq!(q4.precision(), None);
        let exact = PackedLinear::from_rows(&w, b.clone(), n, k);
        for isa in available() {
            for threads in [1, 2, 3] {
                let (mut got, mut want) = (Vec::new(), Vec::new());
                q4.forward_with(isa, &x, m, &mut got, threads);
                exact.forward_with(isa, &x, m, &mut want, threads);
                assert_eq!(got, want, "{m}x{k}x{n} {isa:?} t{threads}");
            }
        }
    }
}

#[test]
fn q8_weights_are_within_half_a_step_and_exact_in_every_kernel() {
    for &(m, k, n) in &[(1, 32, 5), (7, 160, 40), (13, 384, 70)] {
        let (rows, x, b) = (smooth_weights(n, k), inputs(m, k), biases(n));
        let q8 = PackedLinear::from_rows_in(&rows, b.clone(), n, k, Precision::Q8);
        assert_eq!(q8.precision(), Some(Precision::Q8));
        // Each stored weight is within half a quantization step of the original.
        let stored = stored_weights(&q8);
        for (i, (v, w)) in stored.iter().zip(&rows).enumerate() {
            let step = run_amax(&rows, i) / 127.0;
            assert!((v - w).abs() <= step * 0.5 + 1e-7, "[{i}]: {v} for {w}");
        }
        let exact = PackedLinear::from_rows(&stored, b.clone(), n, k);
        for isa in available() {
            for threads in [1, 2, 3] {
                let (mut got, mut want) = (Vec::new(), Vec::new());
                q8.forward_with(isa, &x, m, &mut got, threads);
                exact.forward_with(isa, &x, m, &mut want, threads);
                assert_eq!(got, want, "{m}x{k}x{n} {isa:?} t{threads}");
            }
        }
    }
    // An input width that is not whole runs cannot be q8: it falls back to f32.
    let odd = PackedLinear::from_rows_in(&[0.5; 30], vec![0.0; 1], 1, 30, Precision::Q8);
    assert_eq!(odd.precision(), Some(Precision::F32));
}

/// i8 products: exactly the integer sums of what was quantized, rescaled; the same bits
/// from every kernel on any thread count; close to the float product.
#[test]
fn i8_products_are_the_products_of_what_is_stored_in_every_kernel() {
    // k: one run, several; m: every tile height and remainders; n: partial panels.
    for &(m, k, n) in &[(1, 32, 5), (2, 64, 33), (7, 160, 40), (13, 384, 70), (30, 96, 64)] {
        let (rows, x, b) = (smooth_weights(n, k), inputs(m, k), biases(n));
        let i8 = PackedLinear::from_rows_in(&rows, b.clone(), n, k, Precision::I8);
        assert_eq!(i8.precision(), Some(Precision::I8));
        let stored = stored_weights(&i8);
        let xq = crate::cpu::int8::tests::dequantized_activations(false, &x, m, k);
        let w_t = |w: &[f32]| -> Vec<f32> { (0..k * n).map(|i| w[(i % n) * k + i / n]).collect() };
        let of_stored = naive(&xq, &w_t(&stored), &b, m, k, n);
        let exact = naive(&x, &w_t(&rows), &b, m, k, n);
        // How far quantizing may move an output: each factor within half its step.
        let x_step: Vec<f32> = (0..x.len()).map(|i| run_amax(&x, i) / 127.0).collect();
        let w_step: Vec<f32> = (0..rows.len()).map(|i| run_amax(&rows, i) / 63.0).collect();
        let bound = |r: usize, c: usize| -> f32 {
            (0..k)
                .map(|i| {
                    let (xs, ws) = (x_step[r * k + i], w_step[c * k + i]);
                    xq[r * k + i].abs() * ws / 2.0
                        + stored[c * k + i].abs() * xs / 2.0
                        + xs * ws / 4.0
                })
                .sum::<f32>()
                + 1e-4
        };
        let mut first: Option<Vec<f32>> = None;
        for isa in available() {
            for threads in [1, 2, 3] {
                let mut got = vec![f32::NAN; m * n + 3];
                i8.forward_with(isa, &x, m, &mut got, threads);
                assert_eq!(got.len(), m * n);
                for (i, ((g, s), e)) in got.iter().zip(&of_stored).zip(&exact).enumerate() {
                    assert!((g - s).abs() < 1e-4, "{m}x{k}x{n} {isa:?} t{threads} [{i}]");
                    let most = bound(i / n, i % n);
                    assert!((g - e).abs() <= most, "{m}x{k}x{n} [{i}]: {g} vs {e} (+-{most})");
                }
                match &first {
                    None => first = Some(got),
                    Some(f) => assert_eq!(&got, f, "{m}x{k}x{n} {isa:?} t{threads}"),
                }
            }
        }
    }
    // An input width that is not whole runs cannot be i8: it falls back to f32.
    let odd = PackedLinear::from_rows_in(&[0.5; 30], vec![0.0; 1], 1, 30, Precision::I8);
    assert_eq!(odd.precision(), Some(Precision::F32));
}

#[test]
fn quantized_widening_is_the_same_in_simd_and_portable_code() {
    let (blocks, _) = q4_0_weight(PANEL, QUANT_RUN);
    let q4 = PackedLinear::from_q4_0(&blocks, vec![0.0; PANEL], PANEL, QUANT_RUN).unwrap();
    let rows: Vec<f32> = (0..PANEL * QUANT_RUN).map(|i| ((i as f32) * 0.61).cos()).collect();
    let q8 = PackedLinear::from_rows_in(&rows, vec![0.0; PANEL], PANEL, QUANT_RUN, Precision::Q8);
    let (Packed::Q4(q4), Packed::Q8(q8)) = (&q4.packed, &q8.packed) else {
        panic!("not kept quantized")
    };
    let mut portable = [vec![0f32; QUANT_RUN * PANEL], vec![0f32; QUANT_RUN * PANEL]];
    widen_q4(&q4[0], &mut portable[0]);
    widen_q8(&q8[0], &mut portable[1]);
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        let mut simd = [vec![0f32; QUANT_RUN * PANEL], vec![0f32; QUANT_RUN * PANEL]];
        // SAFETY: AVX2 was detected.
        unsafe {
            x86::widen_q4_avx2(&q4[0], &mut simd[0]);
            x86::widen_q8_avx2(&q8[0], &mut simd[1]);
        }
        assert_eq!(simd, portable);
    }
}

#[test]
fn q4_0_blocks_of_the_wrong_size_are_not_packed() {
    let (blocks, _) = q4_0_weight(4, 64);
    assert!(PackedLinear::from_q4_0(&blocks, vec![0.0; 4], 4, 64).is_some());
    assert!(PackedLinear::from_q4_0(&blocks[1..], vec![0.0; 4], 4, 64).is_none());
    assert!(PackedLinear::from_q4_0(&blocks, vec![0.0; 4], 4, 60).is_none());
    assert!(PackedLinear::from_q4_0(&blocks, vec![0.0; 2], 2, 128).is_some());
}

#[test]
fn weights_beyond_the_f16_range_stay_in_f32() {
    let w = vec![1.0, 70000.0, -2.0, 0.5];
    let lin = PackedLinear::from_rows_in(&w, vec![0.0; 2], 2, 2, Precision::F16);
    assert_eq!(lin.precision(), Some(Precision::F32));
    let mut out = Vec::new();
    lin.forward(&[1.0, 1.0], 1, &mut out, 1);
    assert_eq!(out, vec![70001.0, -1.5]);
}

/// Values in [-1, 1) from a seed (a 64-bit LCG: the shrinker reproduces a failure from it).
fn seeded(seed: u64, len: usize) -> Vec<f32> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Every SIMD kernel this CPU has computes what the portable kernel computes, on random
    /// shapes (tile remainders, partial panels, odd widths), values and thread counts: within
    /// float rounding for f32, f16 and q8 weights (they are widened to floats, so only the
    /// summation order differs), bit for bit for i8 products, whose integer sums are exact.
    #[test]
    fn simd_kernels_agree_with_the_portable_kernel_on_random_shapes(
        m in 1usize..24,
        k_runs in 1usize..6,
        k_extra in 0usize..32,
        n in 1usize..90,
        seed in proptest::prelude::any::<u64>(),
        threads in 1usize..4,
    ) {
        // Whole runs for the integer storages; odd widths exercise the float paths.
        for k in [k_runs * QUANT_RUN, k_runs * QUANT_RUN + k_extra] {
            let x = seeded(seed, m * k);
            let rows: Vec<f32> = seeded(seed ^ 0x9e37_79b9, n * k).iter().map(|v| v * 0.3).collect();
            let b = seeded(seed ^ 0x85eb_ca6b, n);
            for precision in [Precision::F32, Precision::F16, Precision::Q8, Precision::I8] {
                let lin = PackedLinear::from_rows_in(&rows, b.clone(), n, k, precision);
                let mut portable = Vec::new();
                lin.forward_with(Isa::Scalar, &x, m, &mut portable, 1);
                for isa in available() {
                    let mut got = vec![f32::NAN; m * n + 5];
                    lin.forward_with(isa, &x, m, &mut got, threads);
                    proptest::prop_assert_eq!(got.len(), m * n);
                    for (i, (g, p)) in got.iter().zip(&portable).enumerate() {
                        let exact = lin.precision() == Some(Precision::I8);
                        let close = if exact { g == p } else { (g - p).abs() <= 1e-4 * (1.0 + p.abs()) };
                        proptest::prop_assert!(
                            close,
                            "{m}x{k}x{n} {precision:?}->{:?} {isa:?} t{threads} [{i}]: {g} vs {p}",
                            lin.precision()
                        );
                    }
                }
            }
        }
    }
}
