//! The builder's deterministic random numbers: the same seed gives the same stream on every
//! platform, so a build (and anything else that draws from it, such as `switchyard-eval`'s
//! bootstrap intervals) is byte-reproducible.

/// SplitMix64: a small, fixed, well-mixed stream of random numbers.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in [-bound, bound).
    pub fn symmetric(&mut self, bound: f32) -> f32 {
        (2.0 * self.unit() - 1.0) * bound
    }

    /// Uniform in 0..n (`n` > 0; the modulo's bias is far below what any use here can see).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}
