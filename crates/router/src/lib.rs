//! The runtime core of switchyard: one task embedding drives tool and skill selection, the
//! semantic fallback of mode inference and (through the caller) memory search; untrusted
//! entries are screened against the index's injection patterns with their stored embeddings.
//!
//! ```no_run
//! use std::sync::Arc;
//! use switchyard_router::{RouteOptions, RouterBuilder};
//!
//! let embedder = Arc::new(switchyard_embed::HashEmbedder::new(384));
//! let router = RouterBuilder::new("switchyard.idx").max_tools(8).build(embedder)?;
//! let decision = router.route("run the unit tests", &RouteOptions::default())?;
//! println!("{} via {:?}: {:?}", decision.mode, decision.mode_source, decision.tool_names());
//! # Ok::<(), switchyard_router::RouteError>(())
//! ```
//!
//! Nothing on the per-task path reads files or parses anything: the index is memory-mapped
//! and its tables are compiled once in [`RouterBuilder::build`].
//!
//! **The cascade.** An index built from a real model carries a static table: each word piece
//! of the catalog embedded alone by the model at build time, weighted by its rarity in the
//! catalog (see `switchyard-build-index`). Before running the model, the router sums the task's
//! pieces from that table (microseconds) and answers from it when the answer is clear: the table
//! knows most of the task's pieces, one tool leads the next by a share of the static score
//! spread, and the skills are as clear. Otherwise the model runs as usual.
//! [`Decision::answered_by`] and [`Decision::cascade`] record which path answered and why;
//! [`RouterBuilder::cascade`]`(false)` turns it off.
#![deny(missing_docs)]

pub use crate::analysis::{Complexity, Missing, TaskAnalysis, analyze_task};
pub use crate::builder::RouterBuilder;
pub use crate::decision::{
    AnsweredBy, AppliedThresholds, CascadeCheck, Decision, DropReason, Dropped, GateCheck,
    LanguageCheck, Metrics, ModeFilter, ModeSource, OffTopicCheck, QuestionRule, Selected,
    SelectedBy, SemanticCheck, Signals, Timings, ToolEvidence,
};
pub use crate::error::{Result, RouteError};
pub use crate::mode::{CATCH_ALL_SHARE, TOOLS_DECIDE_SHARE};
pub use crate::off_topic::FOREIGN_MARGIN_SHARE;
pub use crate::router::{RouteOptions, Router};
pub use crate::scratch::Scratch;
pub use crate::screen::{
    PieceRef, PieceVerdict, SCREEN_RULES_VERSION, ScreenEntry, ScreenReport, Verdict,
};
pub use crate::think::{ThinkingDecision, ThinkingKeywords, ThinkingSemantic, ThinkingSource};
pub use switchyard_untrusted::Origin;

pub mod analysis;
mod builder;
mod cascade;
mod clauses;
mod decision;
mod error;
pub mod kernels;
pub mod keywords;
mod language;
mod late;
mod mode;
mod off_topic;
mod router;
mod scratch;
mod screen;
mod screen_pieces;
mod select;
mod servers;
mod think;

#[cfg(test)]
mod tests {
    #[test]
    fn router_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<super::Router>();
    }
}
