//! Layout constants every part of the engine agrees on: the panel width the weights are packed
//! in, the block of inputs that stays in L1, the quantization run. Kept apart so the kernels and
//! the integer products depend on them, not on each other.

/// Columns per packed panel (the widest kernel's; narrower kernels walk half-panels).
pub const PANEL: usize = 32;

/// Inputs per block: a block of one panel (KC x 32 floats, 16 KiB) stays in L1 while every
/// tile of rows reads it; each output's sum still runs over k in ascending order.
pub const KC: usize = 128;

/// Inputs per quantization run (ggml's `QK4_0` and `QK8_0`): one scale per output per 32
/// inputs, for Q4_0, q8 and i8 weights alike.
pub const QUANT_RUN: usize = 32;

/// Bytes of one ggml Q4_0 block: an f16 scale, then 16 bytes holding 32 nibbles.
pub const Q4_BLOCK_BYTES: usize = 18;
