//! Which weight storage and which instruction set the kernels use: chosen once per process.

use crate::options::{KernelChoice, WeightsChoice};
use std::sync::OnceLock;

/// How model weights are stored for the forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Exact f32 weights.
    F32,
    /// IEEE half floats, widened in L1 per block (half the memory traffic of f32).
    F16,
    /// 8-bit integers with an f32 scale per output per 32 inputs (Q8_0's blocking).
    Q8,
    /// 7-bit integers (scale per output per 32 inputs) multiplied by activations quantized to
    /// 8 bits per row per 32 inputs, in integer arithmetic ([`crate::cpu::int8`]).
    I8,
}

/// The largest finite f16; a weight beyond it keeps its matrix in f32.
pub(super) const F16_MAX: f32 = 65504.0;

/// How model weights are stored and multiplied for a [`WeightsChoice`]. `Auto` gives integer
/// products ([`Precision::I8`]) where the CPU has AVX2 and FMA: 1.5-1.65x faster than f16 at a
/// task's few rows, and no measurable change on the eval sets (minimum cosine to the reference
/// 0.9991 for MiniLM, 0.9999 for e5-small; `crates/embed/README.md`). Otherwise f16 where the CPU widens
/// halves in hardware (F16C), else f32.
pub fn weight_precision(choice: WeightsChoice) -> Precision {
    match choice {
        WeightsChoice::F32 => Precision::F32,
        WeightsChoice::F16 => Precision::F16,
        WeightsChoice::Q8 => Precision::Q8,
        WeightsChoice::I8 => Precision::I8,
        WeightsChoice::Auto if has_avx2_fma() => Precision::I8,
        WeightsChoice::Auto if has_f16c() => Precision::F16,
        WeightsChoice::Auto => Precision::F32,
    }
}

/// Whether weights shipped as Q4_0 (multilingual-e5-small's) stay in their 4-bit blocks: with
/// f16 storage, where the CPU widens them in SIMD. They widen to exactly their f32
/// dequantization, so this changes speed, not results. (Integer products requantize them to
/// 7 bits; f32 and q8 dequantize them.)
pub fn keep_q4_0(precision: Precision) -> bool {
    precision == Precision::F16 && has_avx2_fma()
}

/// The kernel choice of this process: set by the first encoder loaded (or the first kernel
/// call, which takes [`KernelChoice::Auto`]).
static ISA: OnceLock<Isa> = OnceLock::new();

/// Fixes the process's matrix kernel. Kernels are chosen once per process (the packed layouts
/// and the dispatch depend on it), so asking for another one after the first choice is refused.
pub fn select_kernel(choice: KernelChoice) -> crate::Result<()> {
    let chosen = *ISA.get_or_init(|| detect(choice));
    if choice != KernelChoice::Auto && chosen != detect(choice) {
        return Err(crate::EmbedError::BadSetting {
            variable: "SWITCHYARD_KERNEL",
            value: format!("{choice:?}").to_lowercase(),
            expected: format!(
                "the kernel this process already runs ({}); kernels are chosen once per process",
                kernel_name()
            ),
        });
    }
    Ok(())
}

/// Whether the selected kernel can widen halves in hardware.
pub(super) fn has_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    if isa() != Isa::Scalar && is_x86_feature_detected!("f16c") {
        return true;
    }
    false
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Isa {
    Avx512,
    Avx2,
    Scalar,
}

pub(super) fn isa() -> Isa {
    *ISA.get_or_init(|| detect(KernelChoice::Auto))
}

/// The instruction set a choice gives on this CPU.
pub(super) fn detect(choice: KernelChoice) -> Isa {
    if choice == KernelChoice::Scalar {
        return Isa::Scalar;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if choice != KernelChoice::Avx2 && is_x86_feature_detected!("avx512f") {
            return Isa::Avx512;
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Isa::Avx2;
        }
    }
    Isa::Scalar
}

/// The integer kernel an instruction set runs: VNNI under the AVX-512 kernel where the CPU has
/// AVX-512 BW and VNNI as well, else AVX2 under either SIMD kernel.
pub(super) fn int_kernel(isa: Isa) -> crate::cpu::int8::IntKernel {
    use crate::cpu::int8::IntKernel;
    match isa {
        Isa::Scalar => IntKernel::Portable,
        Isa::Avx2 => IntKernel::Avx2,
        Isa::Avx512 if has_vnni() => IntKernel::Vnni,
        Isa::Avx512 => IntKernel::Avx2,
    }
}

/// Whether the process's integer kernel quantizes activations with AVX2.
pub(crate) fn int8_simd() -> bool {
    int_kernel(isa()).simd()
}

/// Whether the CPU has AVX-512 BW and VNNI (cached: detection is a few atomics, but the
/// driver asks once per product).
fn has_vnni() -> bool {
    static VNNI: OnceLock<bool> = OnceLock::new();
    *VNNI.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        return is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vnni");
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// Whether the process's kernel is the AVX-512 one (so the CPU has AVX-512 F).
pub(crate) fn has_avx512() -> bool {
    isa() == Isa::Avx512
}

/// Whether the CPU has AVX2 and FMA (and the process's kernel choice uses them).
pub(crate) fn has_avx2_fma() -> bool {
    matches!(isa(), Isa::Avx2 | Isa::Avx512)
}

/// How model weights are stored, for reports: `f16` or `f32`, with `+q4_0` when weights
/// shipped as Q4_0 keep their blocks.
pub fn weight_storage(precision: Precision) -> &'static str {
    match (precision, keep_q4_0(precision)) {
        (Precision::F16, true) => "f16+q4_0",
        (Precision::F16, false) => "f16",
        (Precision::F32, true) => "f32+q4_0",
        (Precision::F32, false) => "f32",
        (Precision::Q8, true) => "q8+q4_0",
        (Precision::Q8, false) => "q8",
        (Precision::I8, true) => "i8+q4_0",
        (Precision::I8, false) => "i8",
    }
}

/// The kernel in use, for reports: `avx512+vnni` (integer products by VNNI), `avx512`, `avx2`
/// or `scalar`.
pub fn kernel_name() -> &'static str {
    match isa() {
        Isa::Avx512 if has_vnni() => "avx512+vnni",
        Isa::Avx512 => "avx512",
        Isa::Avx2 => "avx2",
        Isa::Scalar => "scalar",
    }
}
