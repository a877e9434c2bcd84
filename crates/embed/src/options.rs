//! How an encoder runs: weight storage, matrix kernel, engine. Chosen by the caller and passed
//! to [`crate::load_with`]; this crate never reads the environment. The `switchyard` command
//! reads the `SWITCHYARD_*` variables at its edge with [`EmbedOptions::from_vars`], which
//! refuses an unknown value with the list of accepted ones.

use crate::{EmbedError, Result};

/// How weights are stored and multiplied (accuracy of each: `crates/embed/README.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightsChoice {
    /// Integer products where the CPU has AVX2 and FMA, else f16 where it widens halves in
    /// hardware (F16C), else f32.
    #[default]
    Auto,
    /// Exact f32.
    F32,
    /// IEEE halves (e5-small keeps its shipped Q4_0 blocks).
    F16,
    /// 8-bit integers widened to floats.
    Q8,
    /// 7-bit weights times 8-bit activations in integer arithmetic.
    I8,
}

/// Which matrix kernels run. One choice per process: the first encoder loaded fixes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KernelChoice {
    /// The best the CPU has (AVX-512, else AVX2 with FMA, else scalar).
    #[default]
    Auto,
    /// AVX2 with FMA even where AVX-512 exists (falls back to scalar without AVX2).
    Avx2,
    /// Portable scalar code.
    Scalar,
}

/// Which forward pass runs the encoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineChoice {
    /// Our packed-weight SIMD forward (`cpu/`).
    #[default]
    Fast,
    /// candle's ops: the portable reference, for comparison (both meet the fixtures).
    Candle,
}

/// The encoder's settings. `EmbedOptions::default()` is what a plain [`crate::load`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EmbedOptions {
    /// Weight storage.
    pub weights: WeightsChoice,
    /// Matrix kernel (process-wide).
    pub kernel: KernelChoice,
    /// Forward pass.
    pub engine: EngineChoice,
    /// Keep Q4_0 linear weights quantized in candle's matmul (less memory, slower; implies the
    /// candle engine for those layers).
    pub q4_matmul: bool,
}

/// The variables [`EmbedOptions::from_vars`] reads, with the values each accepts.
pub const SETTINGS: [(&str, &[&str]); 4] = [
    ("SWITCHYARD_WEIGHTS", &["f32", "f16", "q8", "i8"]),
    ("SWITCHYARD_KERNEL", &["avx2", "scalar"]),
    ("SWITCHYARD_ENGINE", &["fast", "candle"]),
    ("SWITCHYARD_Q4_MATMUL", &["0", "1"]),
];

impl EmbedOptions {
    /// Options from `SWITCHYARD_*` variables, looked up with `get` (the CLI passes the process
    /// environment; tests pass a map). A variable that is not set keeps the default; a value
    /// outside [`SETTINGS`] is refused naming the variable and what it accepts.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut o = Self::default();
        for (variable, accepted) in SETTINGS {
            let Some(value) = get(variable) else { continue };
            if !accepted.contains(&value.as_str()) {
                return Err(EmbedError::BadSetting {
                    variable,
                    value,
                    expected: accepted.join(", "),
                });
            }
            match (variable, value.as_str()) {
                ("SWITCHYARD_WEIGHTS", "f32") => o.weights = WeightsChoice::F32,
                ("SWITCHYARD_WEIGHTS", "f16") => o.weights = WeightsChoice::F16,
                ("SWITCHYARD_WEIGHTS", "q8") => o.weights = WeightsChoice::Q8,
                ("SWITCHYARD_WEIGHTS", "i8") => o.weights = WeightsChoice::I8,
                ("SWITCHYARD_KERNEL", "avx2") => o.kernel = KernelChoice::Avx2,
                ("SWITCHYARD_KERNEL", "scalar") => o.kernel = KernelChoice::Scalar,
                ("SWITCHYARD_ENGINE", "candle") => o.engine = EngineChoice::Candle,
                ("SWITCHYARD_Q4_MATMUL", "1") => o.q4_matmul = true,
                _ => {}
            }
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let owned: Vec<(String, String)> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| owned.iter().find(|(name, _)| name == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn unset_variables_keep_the_defaults() {
        assert_eq!(EmbedOptions::from_vars(vars(&[])).unwrap(), EmbedOptions::default());
    }

    #[test]
    fn every_variable_is_read() {
        let o = EmbedOptions::from_vars(vars(&[
            ("SWITCHYARD_WEIGHTS", "q8"),
            ("SWITCHYARD_KERNEL", "scalar"),
            ("SWITCHYARD_ENGINE", "candle"),
            ("SWITCHYARD_Q4_MATMUL", "1"),
        ]))
        .unwrap();
        assert_eq!(
            o,
            EmbedOptions {
                weights: WeightsChoice::Q8,
                kernel: KernelChoice::Scalar,
                engine: EngineChoice::Candle,
                q4_matmul: true,
            }
        );
    }

    #[test]
    fn an_unknown_value_of_any_variable_is_refused_with_what_it_accepts() {
        for (variable, accepted) in SETTINGS {
            let err = EmbedOptions::from_vars(vars(&[(variable, "typo")])).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains(variable) && msg.contains("typo"), "{msg}");
            assert!(msg.contains(&accepted.join(", ")), "{msg}");
        }
    }
}
