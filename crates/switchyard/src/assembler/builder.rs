//! The assembler's settings and how an [`Assembler`] is built from them.

use super::{AssembleError, Assembler, Result};
use crate::git::GitCache;
use crate::prompts::PromptFiles;
use crate::render::{TokenCounter, TokenMemo};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use switchyard_embed::Embedder;
use switchyard_memory::MemoryStore;
use switchyard_router::RouterBuilder;

/// Shares of the token budget per layer. They must sum to at most 1.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerFractions {
    /// Constitution.
    pub constitution: f32,
    /// Mode rules.
    pub rules: f32,
    /// Tools and skills.
    pub tools: f32,
    /// Runtime context.
    pub runtime: f32,
    /// This turn's sections from the harness (retry, continuation, ...), when there are any.
    pub turn: f32,
    /// Untrusted context.
    pub untrusted: f32,
    /// The task.
    pub task: f32,
}

impl Default for LayerFractions {
    fn default() -> Self {
        Self {
            constitution: 0.15,
            rules: 0.10,
            tools: 0.35,
            runtime: 0.05,
            turn: 0.05,
            untrusted: 0.15,
            task: 0.15,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct AssemblerConfig {
    pub(super) budget: usize,
    pub(super) fractions: LayerFractions,
    pub(super) counter: TokenCounter,
    pub(super) max_memories: usize,
    pub(super) prompts: Option<PathBuf>,
    pub(super) memory: Option<PathBuf>,
    pub(super) git_ttl: std::time::Duration,
    pub(super) bootstrap: crate::prompts::BootstrapBudget,
    pub(super) history_share: f32,
    pub(super) trace: Option<crate::trace::TraceLog>,
    pub(super) rules_scale: RulesScale,
}

/// The share of the rules budget each task complexity gets (see
/// [`switchyard_router::TaskAnalysis`]): simple tasks need fewer directives, so the rules
/// layer is cut sooner for them. Each factor multiplies [`LayerFractions::rules`] and must be in
/// `0 < x <= 1`, so the prompt never outgrows the budget. Rules are cut from the end: put the
/// ones that must always hold first (the promoted `MANDATORY RULES` layer is never scaled).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RulesScale {
    /// Low complexity.
    pub low: f32,
    /// Medium complexity.
    pub medium: f32,
    /// High complexity.
    pub high: f32,
}

impl Default for RulesScale {
    fn default() -> Self {
        Self { low: 0.5, medium: 0.75, high: 1.0 }
    }
}

impl RulesScale {
    /// The factor for a complexity.
    pub fn factor(&self, c: switchyard_router::Complexity) -> f32 {
        match c {
            switchyard_router::Complexity::Low => self.low,
            switchyard_router::Complexity::Medium => self.medium,
            switchyard_router::Complexity::High => self.high,
        }
    }
}

/// Builds an [`Assembler`] from a router builder.
#[derive(Debug, Clone)]
pub struct AssemblerBuilder {
    router: RouterBuilder,
    config: AssemblerConfig,
}

impl AssemblerBuilder {
    /// An assembler over the index at `index`.
    pub fn new(index: impl Into<PathBuf>) -> Self {
        Self {
            router: RouterBuilder::new(index),
            config: AssemblerConfig {
                budget: 4000,
                fractions: LayerFractions::default(),
                counter: TokenCounter::Cl100k,
                max_memories: 3,
                prompts: None,
                memory: None,
                git_ttl: std::time::Duration::from_secs(2),
                bootstrap: crate::prompts::BootstrapBudget::default(),
                history_share: 0.20,
                trace: None,
                rules_scale: RulesScale::default(),
            },
        }
    }

    /// The router settings (max tools, thresholds, cache, budget...).
    pub fn router(&mut self) -> &mut RouterBuilder {
        &mut self.router
    }

    /// Total token budget (default 4000).
    pub fn budget(&mut self, tokens: usize) -> &mut Self {
        self.config.budget = tokens;
        self
    }

    /// The share of the rules budget per task complexity (default 0.5 / 0.75 / 1.0).
    pub fn rules_scale(&mut self, scale: RulesScale) -> &mut Self {
        self.config.rules_scale = scale;
        self
    }

    /// Budget shares per layer.
    pub fn fractions(&mut self, f: LayerFractions) -> &mut Self {
        self.config.fractions = f;
        self
    }

    /// Token counter (default cl100k_base).
    pub fn token_counter(&mut self, c: TokenCounter) -> &mut Self {
        self.config.counter = c;
        self
    }

    /// Most memory entries in a prompt (default 3).
    pub fn max_memories(&mut self, n: usize) -> &mut Self {
        self.config.max_memories = n;
        self
    }

    /// Folder with `constitution.md` and `rules/<mode>.md` (built-in defaults otherwise).
    pub fn prompts_dir(&mut self, dir: Option<PathBuf>) -> &mut Self {
        self.config.prompts = dir;
        self
    }

    /// How long the git part of the runtime context may be reused (default 2 s; zero reads it
    /// every time). It is re-read sooner whenever `.git/HEAD` or `.git/index` changes (a
    /// checkout, commit or `git add`); an edit to a tracked file shows up within the TTL.
    /// Reading it costs two `git` processes, a few milliseconds, most of a warm assembly.
    pub fn git_ttl(&mut self, ttl: std::time::Duration) -> &mut Self {
        self.config.git_ttl = ttl;
        self
    }

    /// Token caps of the operator's identity and user files (`SOUL.md`, `IDENTITY.md`,
    /// `USER.md` in the prompts folder): each file, and all of them (default 500 and 1000).
    pub fn bootstrap_budget(&mut self, per_file: usize, total: usize) -> &mut Self {
        self.config.bootstrap = crate::prompts::BootstrapBudget { per_file, total };
        self
    }

    /// The share of the budget the conversation history may take (default 0.2); the layer
    /// shares apply to what it leaves.
    pub fn history_share(&mut self, share: f32) -> &mut Self {
        self.config.history_share = share;
        self
    }

    /// Appends one JSON line per assembly to this log (off by default), pruned of lines older
    /// than its retention when the assembler is built.
    pub fn trace_log(&mut self, log: Option<crate::trace::TraceLog>) -> &mut Self {
        self.config.trace = log;
        self
    }

    /// The memory database (none by default).
    pub fn memory_db(&mut self, db: Option<PathBuf>) -> &mut Self {
        self.config.memory = db;
        self
    }

    /// The index file this builder opens.
    pub fn index_path(&self) -> &Path {
        self.router.index_path()
    }

    /// Opens and checks the index file, for [`AssemblerBuilder::build_from`].
    pub fn open_index(&self) -> Result<switchyard_format::Index> {
        Ok(self.router.open_index()?)
    }

    /// The memory database, if any.
    pub fn memory_path(&self) -> Option<&Path> {
        self.config.memory.as_deref()
    }

    /// Opens the index and the memory store.
    pub fn build(&self, embedder: Arc<dyn Embedder>) -> Result<Assembler> {
        self.build_from(self.router.open_index()?, embedder)
    }

    /// [`AssemblerBuilder::build`] on the index already opened with
    /// `self.router().open_index()`: a caller that reads the index first (to load the model it
    /// records) does not open it twice.
    pub fn build_from(
        &self,
        index: switchyard_format::Index,
        embedder: Arc<dyn Embedder>,
    ) -> Result<Assembler> {
        let f = &self.config.fractions;
        let parts = [f.constitution, f.rules, f.tools, f.runtime, f.turn, f.untrusted, f.task];
        if parts.iter().any(|x| !(0.0..=1.0).contains(x)) || parts.iter().sum::<f32>() > 1.0 + 1e-4
        {
            return Err(AssembleError::Config {
                field: "fractions",
                message: format!("{parts:?} must each be in 0..=1 and sum to at most 1"),
            });
        }
        let s = self.config.rules_scale;
        if [s.low, s.medium, s.high].iter().any(|x| !(*x > 0.0 && *x <= 1.0)) {
            return Err(AssembleError::Config {
                field: "rules_scale",
                message: format!(
                    "{s:?}: each factor must be in 0 < x <= 1 (it scales the rules share, which \
                     must stay within the budget)"
                ),
            });
        }
        if !(0.0..=0.8).contains(&self.config.history_share) {
            return Err(AssembleError::Config {
                field: "history_share",
                message: format!(
                    "{} must be in 0..=0.8 (the other layers need the rest)",
                    self.config.history_share
                ),
            });
        }
        if self.config.budget < 200 {
            return Err(AssembleError::Config {
                field: "budget",
                message: format!(
                    "{} tokens cannot hold the constitution; use at least 200",
                    self.config.budget
                ),
            });
        }
        // The token counter's vocabulary takes ~140 ms to build on first use: build it now, on
        // another core while the index and memory open, rather than in the first assembly.
        let counter = self.config.counter;
        let warm = std::thread::spawn(move || counter.count(""));
        let router = self.router.build_from(index, embedder)?;
        // Fail-open: a store that cannot be opened (damaged, unreadable) costs the untrusted
        // layer of every assembly, with a diagnostic, not the assembler.
        let memory = self.config.memory.as_ref().map(|p| {
            MemoryStore::open(p)
                .map(|mut store| {
                    store
                        .set_prepare(router.prepare_config())
                        .set_triage(router.screen_triage())
                        .set_screen_layer(router.screen_layer());
                    Mutex::new(store)
                })
                .map_err(|e| e.to_string())
        });
        // A panic there would panic again, with its message, at the first count.
        let _ = warm.join();
        // Pruning is housekeeping: a log that cannot be pruned now is pruned next time, and
        // appending reports its own errors.
        if let Some(log) = &self.config.trace {
            let _ = log.prune();
        }
        let screen_key = router.screen_key();
        Ok(Assembler {
            router,
            screen_key,
            monolithic_stable: std::sync::OnceLock::new(),
            token_memo: TokenMemo::default(),
            memory,
            prompts: PromptFiles::new(self.config.prompts.clone()),
            git: GitCache::default(),
            history_memo: crate::history::HistoryMemo::default(),
            verdicts: crate::screening::VerdictMemo::default(),
            config: self.config.clone(),
        })
    }
}
