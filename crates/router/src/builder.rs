//! [`RouterBuilder`]: the router's settings, checked, and the index opened against the model.

use crate::router::Router;
use crate::{Result, RouteError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use switchyard_embed::Embedder;
use switchyard_format::{Index, OpenOptions};

/// Router settings. Every default is a setting, not a constant in code.
#[derive(Debug, Clone)]
pub(crate) struct RouterConfig {
    /// Most tools in a decision, base tools included.
    pub(crate) max_tools: usize,
    /// Most skills in a decision, base skills included.
    pub(crate) max_skills: usize,
    /// Most items picked by score (per kind), before merging with the base set.
    pub(crate) max_results: usize,
    /// Overrides of the index's derived thresholds.
    pub(crate) tool_min: Option<f32>,
    pub(crate) skill_min: Option<f32>,
    pub(crate) mode_min: Option<f32>,
    pub(crate) injection: Option<f32>,
    /// Margin by which an entry's attack score must beat its benign score to be flagged.
    pub(crate) injection_margin: f32,
    /// Screen with the contrast rule even when the index has a learned head.
    pub(crate) contrast_only: bool,
    /// Task embeddings kept (0 disables the cache).
    pub(crate) cache_size: usize,
    /// Longest wait for the embedder before answering from deterministic signals.
    pub(crate) embed_budget: Option<Duration>,
    /// Whether the semantic mode fallback runs.
    pub(crate) semantic_modes: bool,
    /// Nearest misses reported as `below_threshold`, per kind.
    pub(crate) near_misses: usize,
    /// Verify payload checksums on open.
    pub(crate) verify: bool,
    /// Whether the cascade may answer from the index's static table.
    pub(crate) cascade: bool,
    /// Rank every item by score, thresholds ignored (evaluation).
    pub(crate) rank_all: bool,
    /// Overrides of the index's cascade settings.
    pub(crate) cascade_min_coverage: Option<f32>,
    pub(crate) cascade_margin: Option<f32>,
    /// Override of the index's lexical weight (both kinds; hybrid indexes).
    pub(crate) lexical_weight: Option<f32>,
    /// Override of the index's tool gate (standard-score scale).
    pub(crate) gate_z: Option<f32>,
    /// Override of the semantic mode margin (`f32::INFINITY` turns the fallback off).
    pub(crate) semantic_margin: Option<f32>,
    /// Whether the index's query shift applies.
    pub(crate) query_shift: bool,
    /// Whether an unsure semantic guess of a question may go to the modes whose examples ask
    /// questions (the index's `mode_questions` section).
    pub(crate) question_modes: bool,
    /// Whether the index's late section takes its share of the dense score.
    pub(crate) late_interaction: bool,
    /// Override of the index's late-interaction share, 0..=1.
    pub(crate) late_share: Option<f32>,
    /// Override of the index's server weight, 0..=1.
    pub(crate) server_weight: Option<f32>,
    /// Whether the index's off-topic check may close selection.
    pub(crate) off_topic: bool,
    /// Override of the index's off-topic margin (cosine difference).
    pub(crate) off_topic_margin: Option<f32>,
    /// Whether the index's language shift applies.
    pub(crate) language_shift: bool,
    /// Whether each part of a task that asks for several things is scored alone too.
    pub(crate) task_parts: bool,
    /// Whether what a task names by form (a URL, a path, `#channel`) adds its words to the
    /// task's lexical terms.
    pub(crate) entity_terms: bool,
}

impl Default for RouterConfig {
    fn default() -> Self {
        Self {
            max_tools: 10,
            max_skills: 3,
            max_results: 5,
            tool_min: None,
            skill_min: None,
            mode_min: None,
            injection: None,
            injection_margin: 0.0,
            contrast_only: false,
            cache_size: 256,
            embed_budget: None,
            semantic_modes: true,
            near_misses: 3,
            verify: true,
            cascade: true,
            rank_all: false,
            cascade_min_coverage: None,
            cascade_margin: None,
            lexical_weight: None,
            gate_z: None,
            semantic_margin: None,
            query_shift: true,
            question_modes: true,
            late_interaction: true,
            late_share: None,
            server_weight: None,
            off_topic: true,
            off_topic_margin: None,
            language_shift: true,
            task_parts: true,
            entity_terms: true,
        }
    }
}

/// Builds a [`Router`]: `RouterBuilder::new(path).max_tools(8).build(embedder)?`.
#[derive(Debug, Clone)]
pub struct RouterBuilder {
    path: PathBuf,
    config: RouterConfig,
}

macro_rules! setter {
    ($(#[$doc:meta])* $name:ident: $ty:ty => $field:ident) => {
        $(#[$doc])*
        pub fn $name(&mut self, value: $ty) -> &mut Self {
            self.config.$field = value;
            self
        }
    };
}

impl RouterBuilder {
    /// A builder for the index at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into(), config: RouterConfig::default() }
    }

    setter!(/// Most tools per decision (default 10).
        max_tools: usize => max_tools);
    setter!(/// Most skills per decision (default 3).
        max_skills: usize => max_skills);
    setter!(/// Most items picked by score per kind (default 5).
        max_results: usize => max_results);
    setter!(/// Overrides the index's tool threshold.
        tool_min: Option<f32> => tool_min);
    setter!(/// Overrides the index's skill threshold.
        skill_min: Option<f32> => skill_min);
    setter!(/// Overrides the index's mode threshold.
        mode_min: Option<f32> => mode_min);
    setter!(/// Overrides the index's injection threshold.
        injection_threshold: Option<f32> => injection);
    setter!(/// Margin an attack score must beat the benign score by (default 0).
        injection_margin: f32 => injection_margin);
    setter!(/// Screens with the nearest-pattern contrast rule even when the index has a learned
        /// head (default false: the head decides when there is one).
        contrast_only: bool => contrast_only);
    setter!(/// Task embeddings cached (default 256; 0 disables).
        cache_size: usize => cache_size);
    setter!(/// Longest wait for the embedder (default none).
        embed_budget: Option<Duration> => embed_budget);
    setter!(/// Whether the semantic mode fallback runs (default true).
        semantic_modes: bool => semantic_modes);
    setter!(/// Verify index checksums on open (default true).
        verify_payload: bool => verify);
    setter!(/// Whether easy tasks may be answered from the index's static table without running
        /// the model (default true; needs an index built with a cascade).
        cascade: bool => cascade);
    setter!(/// Ranks every tool and skill by score with no threshold, in whichever space
        /// answered (for evaluation; default false).
        rank_all: bool => rank_all);
    setter!(/// Overrides the share of a task's pieces the static table must know (0..=1).
        cascade_min_coverage: Option<f32> => cascade_min_coverage);
    setter!(/// Overrides the static lead needed, as a fraction of the static score spread.
        cascade_margin: Option<f32> => cascade_margin);

    setter!(/// Overrides the index's lexical weight in the fused score, 0..=1 (0 ranks by the
        /// embedding alone; hybrid indexes only).
        lexical_weight: Option<f32> => lexical_weight);
    setter!(/// Overrides the index's tool gate: the standard score among the task's tools the
        /// best tool must reach for the task to count as about the catalog (hybrid indexes
        /// only; skills keep their own gate).
        gate_z: Option<f32> => gate_z);
    setter!(/// Overrides the lead the semantic mode fallback needs over the runner-up mode
        /// (`f32::INFINITY` turns it off; hybrid indexes only).
        semantic_margin: Option<f32> => semantic_margin);
    setter!(/// Whether a task's scores against tools and skills are taken less what any request
        /// scores against the same rows (the index's `query_shift` section, written by the
        /// builder since format version 7; default true, for comparisons).
        query_shift: bool => query_shift);
    setter!(/// Whether a task that asks a question, when the semantic mode guess is unsure and
        /// the default mode's examples ask no questions, goes to the best of the modes whose
        /// examples do (the index's `mode_questions` section, written by the builder since
        /// format version 10; default true, for comparisons).
        question_modes: bool => question_modes);
    setter!(/// Whether a task's token states are compared with each tool's and skill's (the
        /// index's `late` section, written by the builder since format version 11 for models
        /// with a late-interaction share; default true, for comparisons).
        late_interaction: bool => late_interaction);
    setter!(/// Overrides the index's late-interaction share of the dense score, 0..=1 (indexes
        /// with a `late` section only; `switchyard fit` learns it).
        late_share: Option<f32> => late_share);
    setter!(/// Overrides the index's server weight, 0..=1: how much of the gap between a tool's
        /// MCP server's mean fused score and every tool's mean moves the tool (0 turns it off;
        /// indexes of catalogs with two servers or more only).
        server_weight: Option<f32> => server_weight);
    setter!(/// Whether a task nearer to a general topic than to any tool or skill gets none (the
        /// index's `off_topic` section, written by the builder since format version 16 for
        /// models with an off-topic margin; default true, for comparisons).
        off_topic: bool => off_topic);
    setter!(/// Overrides the index's off-topic margin: how far the task's best general topic
        /// must beat its best tool or skill card (a cosine difference in -2..=2; indexes with
        /// an `off_topic` section only; `switchyard fit` learns it).
        off_topic_margin: Option<f32> => off_topic_margin);
    setter!(/// Whether each sentence of a task that asks for several things is also scored alone
        /// against the tools and skills, its vector pooled from the task's one pass (default
        /// true, for comparisons).
        task_parts: bool => task_parts);
    setter!(/// Whether what a task names by its form (a URL, an e-mail address, a file path, a
        /// `#channel`, an `@mention`, a time of day) adds the words tools use for it (`url`,
        /// `email`, `path`, `channel`, `user`, `time`) to the task's lexical terms; see
        /// [`switchyard_lexical::entity_terms`] (default true, for comparisons).
        entity_terms: bool => entity_terms);
    setter!(/// Whether a task in another language than the catalog is moved towards the
        /// catalog's language before the tools are scored (the index's `language_shift`
        /// section, written by the builder since format version 18 for models with a language
        /// shift; default true, for comparisons).
        language_shift: bool => language_shift);

    /// Opens the index, checks the model fingerprint and precomputes the per-item tables.
    pub fn build(&self, embedder: Arc<dyn Embedder>) -> Result<Router> {
        self.build_from(self.open_index()?, embedder)
    }

    /// The index file this builder opens.
    pub fn index_path(&self) -> &Path {
        &self.path
    }

    /// Opens the index alone (checksums verified unless turned off), for a caller that must
    /// read it before it has a model, e.g. to load the model it records; then
    /// [`RouterBuilder::build_from`] builds on it without opening the file again.
    pub fn open_index(&self) -> Result<Index> {
        Ok(Index::open(&self.path, OpenOptions::new().verify_payload(self.config.verify))?)
    }

    /// [`RouterBuilder::build`] on an index already open ([`RouterBuilder::open_index`]).
    pub fn build_from(&self, index: Index, embedder: Arc<dyn Embedder>) -> Result<Router> {
        let c = &self.config;
        if c.max_results == 0 && c.max_tools == 0 {
            return Err(RouteError::Config {
                field: "max_results",
                message: "both max_results and max_tools are 0: nothing could ever be selected"
                    .into(),
            });
        }
        for (field, v) in [
            ("tool_min", c.tool_min),
            ("skill_min", c.skill_min),
            ("mode_min", c.mode_min),
            ("injection_threshold", c.injection),
        ] {
            if let Some(v) = v
                && !(-1.0..=1.0).contains(&v)
            {
                return Err(RouteError::Config {
                    field,
                    message: format!("{v} is not a cosine score in -1..=1"),
                });
            }
        }
        for (field, value) in [
            ("lexical_weight", c.lexical_weight),
            ("late_share", c.late_share),
            ("server_weight", c.server_weight),
        ] {
            if let Some(w) = value
                && !(0.0..=1.0).contains(&w)
            {
                return Err(RouteError::Config {
                    field,
                    message: format!("{w} is not a weight in 0..=1"),
                });
            }
        }
        if let Some(m) = c.off_topic_margin
            && !(-2.0..=2.0).contains(&m)
        {
            return Err(RouteError::Config {
                field: "off_topic_margin",
                message: format!("{m} is not a difference of two cosines, in -2..=2"),
            });
        }
        if let Some(q) = index.mode_questions()
            && q.rules_version != switchyard_lexical::QUESTION_RULES_VERSION
            && c.question_modes
        {
            tracing::warn!(
                index = %self.path.display(),
                counted_with = q.rules_version,
                current = switchyard_lexical::QUESTION_RULES_VERSION,
                "the index counted its modes' questions with other question rules, so the \
                 question rule stays off; rebuild it with switchyard build-index"
            );
        }
        let info = embedder.info();
        if index.header().fingerprint != info.fingerprint.0 || index.dim() != info.dim {
            let m = &index.meta().model;
            return Err(RouteError::ModelMismatch {
                path: self.path.clone(),
                index_model: m.name.clone(),
                index_fingerprint: m.fingerprint.clone(),
                model: info.name.clone(),
                fingerprint: info.fingerprint.to_hex(),
            });
        }
        if let Some(sel) = index.selection() {
            for found in [sel.tools_lexical.analyzer_version, sel.skills_lexical.analyzer_version] {
                if found != switchyard_lexical::ANALYZER_VERSION {
                    return Err(RouteError::AnalyzerMismatch {
                        path: self.path.clone(),
                        found,
                        expected: switchyard_lexical::ANALYZER_VERSION,
                    });
                }
            }
        }
        if let Some(lexical) = index.screen_lexical()
            && (lexical.features_version != switchyard_lexical::HASHED_FEATURES_VERSION
                || lexical.buckets as usize != switchyard_lexical::HASHED_BUCKETS)
        {
            return Err(RouteError::ScreenFeaturesMismatch {
                path: self.path.clone(),
                found: lexical.features_version,
                buckets: lexical.buckets,
                expected: switchyard_lexical::HASHED_FEATURES_VERSION,
                expected_buckets: switchyard_lexical::HASHED_BUCKETS,
            });
        }
        Router::from_index(index, embedder, c.clone())
    }
}
