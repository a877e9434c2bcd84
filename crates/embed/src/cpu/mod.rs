//! The CPU inference engine: our packed-weight forward of BERT-family encoders. Each module
//! has one job; settings come in through [`crate::EmbedOptions`], never from the environment.
//!
//! - [`layout`]: the constants every part agrees on (panel width, L1 block, quantization run).
//! - [`kernel`]: the matrix products. `kernel/settings.rs` picks the instruction set and the
//!   weight storage (dispatch), `packing.rs` lays weights out in panels, `widen.rs` turns
//!   stored weights (f16, q8, Q4_0) back into floats, `x86.rs` holds the AVX-512/AVX2 tiles and
//!   `panel.rs`/`driver.rs` the one panel driver every instruction set shares.
//! - [`int8`]: integer products of 7-bit weights and 8-bit activations (the default where the
//!   CPU has AVX2 and FMA).
//! - [`forward`]: the encoder's layers on plain `f32` buffers; [`attention`] and [`math`]
//!   (LayerNorm, softmax's `e^x`, GELU) are its parts.
//! - [`team`]: the thread team one forward's parallel steps run on.
//! - [`image`]: the packed encoder written once as a ready-to-map file, mapped by later loads.
//! - [`store`]: arrays owned by the process or mapped from a file (weights read back from an
//!   image are the latter).
//!
//! Dependencies point one way: forward -> attention, math, kernel, team; kernel -> int8, team,
//! layout; int8 -> layout.

pub(crate) mod attention;
pub(crate) mod forward;
pub(crate) mod image;
pub(crate) mod int8;
pub(crate) mod kernel;
pub(crate) mod layout;
pub(crate) mod math;
pub(crate) mod store;
pub(crate) mod team;
