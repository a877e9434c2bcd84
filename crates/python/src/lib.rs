//! The `switchyard` Python package: `Router`, `Assembler` and `Memory` over the Rust library,
//! answering plain dicts and lists shaped as the CLI's `--json` output. The model runs with the
//! GIL released, so other Python threads go on while a task is embedded.
//!
//! Built by maturin with the `python` feature (`crates/python/pyproject.toml`); without it this
//! crate is empty, so the workspace's tests need no Python to link against.

#[cfg(feature = "python")]
mod bindings;
#[cfg(feature = "python")]
mod models;
