//! What every model test shares: a provisioned model, or a skip with the reason. Without the
//! models a test skips with a message, unless `SWITCHYARD_REQUIRE_MODELS=1` (set by `.ci/run`)
//! turns the skip into a failure, so CI can never pass by skipping.

use switchyard_embed::{ResolvedModel, resolve};

/// The provisioned model `name`, or `None` after printing why the test skips.
pub fn model_or_skip(name: &str) -> Option<ResolvedModel> {
    match resolve(name) {
        Ok(m) => Some(m),
        Err(e) => {
            assert!(
                std::env::var("SWITCHYARD_REQUIRE_MODELS").as_deref() != Ok("1"),
                "SWITCHYARD_REQUIRE_MODELS=1 but {name} is missing: {e}"
            );
            eprintln!("skipping: {e}");
            None
        }
    }
}
