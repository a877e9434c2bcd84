//! What's measured: this CPU's arithmetic ceiling for the products of a transformer forward,
//! the bound no kernel can beat. Criterion reports each as elements per second, an element
//! being one multiply-add:
//! - `f32-fma`: ten independent chains of 8-lane fused multiply-adds (AVX2 + FMA), on one
//!   thread and on two at once (whether the two vCPUs are two cores or one core's two threads);
//! - `u8xi8`: the int8 product an AVX2 kernel would use (`vpmaddubsw`, `vpmaddwd` against ones,
//!   `vpaddd`; 32 multiply-adds a chain step), which needs 7-bit weights or an offset to stay
//!   clear of the 16-bit saturation of `vpmaddubsw`;
//! - `i8xi8`: the same with both sides signed (`vpsignb` moves the activation's sign onto the
//!   weight), which needs no offset.
//!
//! Divide a forward's multiply-adds by these rates for its floor: all-MiniLM-L6-v2 does
//! 10.6 M per token in its linear layers (6 x (4 x 384 x 384 + 2 x 384 x 1536)).
//! Skipped with a message where the CPU lacks AVX2 and FMA.
//!
//! Run with: `cargo bench --bench ceiling`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Loop trips per measured call: long enough (a few ms) that spawning the second thread of the
/// two-thread case is noise.
const TRIPS: u64 = 1_000_000;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::TRIPS;
    use std::arch::x86_64::*;
    use std::hint::black_box;

    /// Multiply-adds done by one call of [`fma_chains`].
    pub const FMA_MACS: u64 = TRIPS * 10 * 8;
    /// Multiply-adds done by one call of [`int8_chains`].
    pub const INT8_MACS: u64 = TRIPS * 12 * 32;

    /// Ten independent FMA chains: enough in flight to cover FMA's latency on both pipes.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn fma_chains(seed: f32) -> f32 {
        let b = _mm256_set1_ps(black_box(1.000_000_1));
        let c = _mm256_set1_ps(black_box(1e-9));
        let mut acc = [_mm256_set1_ps(seed); 10];
        for _ in 0..TRIPS {
            for a in acc.iter_mut() {
                *a = _mm256_fmadd_ps(*a, b, c);
            }
        }
        let mut sum = _mm256_setzero_ps();
        for a in acc {
            sum = _mm256_add_ps(sum, a);
        }
        _mm256_cvtss_f32(sum)
    }

    /// Twelve int8 chains (3 broadcast activations x 4 weight registers, a kernel's tile), with
    /// the activation unsigned (`signed = false`) or moved onto the weight's sign (`true`).
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn int8_chains(seed: i32, signed: bool) -> i32 {
        let ones = _mm256_set1_epi16(1);
        let w = [1i8, 2, 3, 4].map(|v| _mm256_set1_epi8(black_box(v)));
        let mut acc = [_mm256_set1_epi32(seed); 12];
        for trip in 0..TRIPS as i32 {
            for (r, row) in acc.chunks_exact_mut(4).enumerate() {
                let x = _mm256_set1_epi32(trip.wrapping_add(r as i32));
                for (a, &wv) in row.iter_mut().zip(&w) {
                    let pairs = if signed {
                        _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(wv, x))
                    } else {
                        _mm256_maddubs_epi16(x, wv)
                    };
                    *a = _mm256_add_epi32(*a, _mm256_madd_epi16(pairs, ones));
                }
            }
        }
        let mut sum = _mm256_setzero_si256();
        for a in acc {
            sum = _mm256_add_epi32(sum, a);
        }
        _mm256_cvtsi256_si32(sum)
    }
}

#[cfg(target_arch = "x86_64")]
fn bench(c: &mut Criterion) {
    use std::hint::black_box;
    if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
        eprintln!("skipping ceiling: this CPU has no AVX2 and FMA, the kernels' fast path");
        return;
    }
    let mut group = c.benchmark_group("ceiling");
    group.sample_size(20);
    // SAFETY: AVX2 and FMA were detected above.
    let fma = |seed: f32| unsafe { x86::fma_chains(black_box(seed)) };
    // SAFETY: AVX2 was detected above.
    let int8 = |signed: bool| unsafe { x86::int8_chains(black_box(1), signed) };
    group.throughput(Throughput::Elements(x86::FMA_MACS));
    group.bench_function("f32-fma/threads=1", |b| b.iter(|| fma(1.0)));
    group.throughput(Throughput::Elements(2 * x86::FMA_MACS));
    group.bench_function("f32-fma/threads=2", |b| {
        b.iter(|| {
            std::thread::scope(|s| {
                let other = s.spawn(|| fma(2.0));
                fma(1.0) + other.join().expect("the second FMA thread")
            })
        })
    });
    group.throughput(Throughput::Elements(x86::INT8_MACS));
    group.bench_function("u8xi8/threads=1", |b| b.iter(|| int8(false)));
    group.bench_function("i8xi8/threads=1", |b| b.iter(|| int8(true)));
    group.finish();
}

#[cfg(not(target_arch = "x86_64"))]
fn bench(_: &mut Criterion) {
    eprintln!("skipping ceiling: its chains are written for x86-64 (AVX2 and FMA)");
}

criterion_group!(benches, bench);
criterion_main!(benches);
