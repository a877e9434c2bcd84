//! The lexical half of switchyard's hybrid selection.
//!
//! Dense embeddings miss rare exact words (a product name, `kubectl`, an error code) and lexical
//! matching misses paraphrase; each wins where the other loses, so the router fuses both. This
//! crate owns the lexical side: one analyser used at build time and at run time, BM25 statistics
//! built offline into the index's `selection` section, and a scorer for the per-task path.
//!
//! ```
//! use switchyard_lexical::{Bm25Scorer, LexicalScores, analyze, build};
//!
//! let stats = build(&["restart a deployment".to_string(), "scaleDeployment replicas".into()]);
//! let scorer = Bm25Scorer::new(&stats);
//! let mut scores = LexicalScores::default();
//! scorer.score(&stats, &analyze("restart the auth deployment"), &mut scores);
//! assert!(scores.bm25[0] > scores.bm25[1]);
//! ```
//!
//! **The analyser** ([`analyze`]): Unicode word segmentation (UAX #29); names split at `_`, `-`,
//! `.`, `::` and lower-to-upper steps (`getWeatherForecast` → get, weather, forecast); lowercase
//! with Latin diacritics folded (`réservé` → reserve); runs of CJK characters as overlapping
//! bigrams (Chinese and Japanese have no spaces); every alphabetic term cut to its first
//! [`STEM_PREFIX`] characters, a language-free stemmer that also meets across languages
//! (reservation, reserva, réserver, Reservierung → reserv). One-letter terms are dropped.
//!
//! **What a task names by its form** ([`entity_terms`]): a URL, an e-mail address, a file path,
//! a `#channel`, an `@mention` or a time of day adds the words tools use for it (`url`, `email`,
//! `path`, `channel`, `user`, `time`) to the task's terms, in any language.
#![deny(missing_docs)]

mod analyze;
mod bm25;
mod entities;
mod hashed;
pub mod question;
mod triage;

pub use crate::analyze::{ANALYZER_VERSION, STEM_PREFIX, analyze, fold, is_cjk};
pub use crate::bm25::{Bm25Scorer, LexicalScores, build, build_with};
pub use crate::entities::entity_terms;
pub use crate::hashed::{HASHED_BUCKETS, HASHED_FEATURES_VERSION, hashed_features, hashed_logit};
pub use crate::question::{QUESTION_RULES_VERSION, is_question};
pub use crate::triage::LexicalTriage;
pub use switchyard_format::LexicalMeta;

mod fusion;
pub use crate::fusion::{Fused, add_late_side, fuse_into, standard_scores_into};
