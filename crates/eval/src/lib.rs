//! Switchyard's measuring harness: how good (retrieval and screening evaluations on labelled
//! data, with a BM25 baseline in the same run) and how fast (per-stage latency, cold start,
//! peak memory). The `switchyard eval` and `switchyard bench` commands are thin shells over it.
//!
//! ```
//! use switchyard_eval::{Bm25, metrics::score_query};
//! let bm25 = Bm25::new(&["get_weather: today's forecast for a city", "book_flight: reserve a seat"]);
//! let top: Vec<&str> = bm25.top("weather forecast in Lisbon", 2).iter()
//!     .map(|&i| ["get_weather", "book_flight"][i]).collect();
//! let s = score_query(&top, &["get_weather".to_string()], &[1]);
//! assert_eq!(s.recall, [1.0]);
//! ```
#![deny(missing_docs)]

#[cfg(feature = "candle")]
pub use crate::adapter::{AdapterTraining, SetSpec, ValidationSplit, train_adapter};
pub use crate::analysis::{Agreement, AnalysisCase, AnalysisMiss, AnalysisReport, eval_analysis};
pub use crate::bm25::Bm25;
pub use crate::cache::CachedIndex;
pub use crate::cases::{
    CaseRow, CasesEval, CasesReport, ModeStep, OffTopicMiss, OffTopicReport, OffTopicRow,
    OffTopicTally, deciding_step, eval_cases,
};
pub use crate::error::{EvalError, Result};
pub use crate::fit::{FitConfig, FitMetrics, FitParams, FitReport, fit};
pub use crate::fit_groups::{FitGroup, GroupReport};
pub use crate::injection::{InjectionEval, InjectionReport, eval_injection};
pub use crate::thinking::{
    ThinkingCase, ThinkingEval, ThinkingMiss, ThinkingReport, ThinkingScore, eval_thinking,
};
pub use crate::tools::{
    CASCADE_SWEEP, Compared, HybridGain, SweepPoint, ToolsEval, ToolsReport, eval_tools,
    load_tools, normalize_ks,
};

#[cfg(feature = "candle")]
pub mod adapter;
mod analysis;
pub mod bench;
mod bm25;
mod cache;
mod case_estimates;
mod cases;
mod embedding;
mod error;
mod fit;
mod fit_groups;
pub mod injection;
pub mod interval;
mod jsonl;
pub mod metrics;
mod thinking;
pub mod tool_errors;
mod tools;

/// Progress callback: (stage, done, total). Called from worker threads.
pub type Progress<'a> = &'a (dyn Fn(&str, usize, usize) + Send + Sync);

/// A progress callback that reports nothing.
pub fn no_progress(_: &str, _: usize, _: usize) {}
