use crate::git::{GitCache, GitContext};
use crate::prompts::PromptFiles;
use crate::render::*;
use crate::turn::{Profile, TurnContext};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;
use switchyard_memory::MemoryStore;
use switchyard_router::{Decision, RouteOptions, Router};

/// Errors of the assembler.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AssembleError {
    /// Routing failed.
    #[error(transparent)]
    Route(#[from] switchyard_router::RouteError),
    /// The memory store failed.
    #[error(transparent)]
    Memory(#[from] switchyard_memory::MemoryError),
    /// The memory store could not be opened when the assembler was built.
    #[error("{message}")]
    MemoryUnavailable {
        /// Why.
        message: String,
    },
    /// A setting is out of range.
    #[error("assembler config: {field}: {message}")]
    Config {
        /// The setting.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// The result type of the assembler.
pub type Result<T, E = AssembleError> = std::result::Result<T, E>;

mod builder;
mod untrusted;

use builder::AssemblerConfig;
pub use builder::{AssemblerBuilder, LayerFractions, RulesScale};
use untrusted::UntrustedPart;

/// Options of one assembly.
#[derive(Debug, Clone, Default)]
pub struct AssembleOptions {
    /// Explicit mode (`None`/`auto` infers it).
    pub mode: Option<String>,
    /// Repository root for the runtime context (default: the current directory).
    pub root: Option<PathBuf>,
    /// Hint: interactive session.
    pub interactive: bool,
    /// Hint: the repository has uncommitted changes. `None` detects it from `root` when
    /// `root` is given and is a git repository (no root given: no hint).
    pub git_changes: Option<bool>,
    /// This turn's sections from the harness, after the cache boundary.
    pub turn: TurnContext,
    /// Which layers the prompt has.
    pub profile: Profile,
    /// The conversation so far, oldest first (the latest 200 entries are used).
    pub history: Vec<crate::history::HistoryEntry>,
    /// The caller's session id, recorded in the trace log.
    pub session: Option<String>,
    /// When the task leaves its intent or target unsaid (or the scope of high-complexity
    /// work), add one line to the task layer asking the model to clarify before acting (see
    /// [`switchyard_router::TaskAnalysis::clarification`]).
    pub clarify: bool,
    /// Think the task through with a thinking mode's scaffold: the task layer becomes the
    /// scaffold with the task filled in. `"auto"` lets the keyword rules, the semantic fallback
    /// and the default choose (see [`switchyard_router::Router::think`]); a name forces that
    /// mode. The index must have thinking modes. Costs no model run: the task's embedding is
    /// the route's.
    pub thinking: Option<String>,
}

/// Environment facts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvContext {
    /// Working directory.
    pub cwd: String,
    /// Operating system.
    pub os: String,
}

/// Context gathered for the prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    /// Git state (`null` outside a repository).
    pub git: Option<GitContext>,
    /// Environment.
    pub env: EnvContext,
    /// The operator's rules promoted from memory into the trusted `MANDATORY RULES` layer.
    pub promoted_rules: Vec<String>,
    /// Memory entries included (untrusted).
    pub memories: Vec<String>,
    /// Activity entries included (untrusted).
    pub activity: Vec<String>,
    /// Entries removed: instruction-like kinds plus those flagged by injection screening.
    pub filtered_count: usize,
    /// Of those, flagged by screening.
    pub screened_out: usize,
}

/// Token counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssemblyMetrics {
    /// Real token count of the whole prompt.
    pub estimated_tokens: usize,
    /// Model calls this assembly made (1, or 0 on a cache hit / chit-chat).
    pub embedding_calls: u32,
    /// Tokens per layer.
    pub layer_tokens: BTreeMap<String, usize>,
    /// Layers cut to fit the budget.
    pub truncated_layers: Vec<String>,
    /// Tokens of a monolithic prompt with every tool and skill of the index (for comparison).
    pub monolithic_tokens: usize,
}

/// sha256 of each part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fingerprints {
    /// Constitution + rules + tools & skills.
    pub stable: String,
    /// Runtime + untrusted context + task.
    pub dynamic: String,
    /// The whole prompt.
    pub full: String,
}

/// Stage timings in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AssemblyTimings {
    /// Routing (embedding included).
    pub route_ms: f64,
    /// Git and environment.
    pub runtime_ms: f64,
    /// Memory search and screening.
    pub memory_ms: f64,
    /// Rendering and token counting.
    pub render_ms: f64,
    /// The whole assembly.
    pub total_ms: f64,
}

/// A deterministic prompt and the full account of how it was made.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Assembly {
    /// Decided mode.
    pub mode: String,
    /// The task.
    pub task: String,
    /// Selected tools.
    pub tools: Vec<String>,
    /// Selected skills.
    pub skills: Vec<String>,
    /// Gathered context.
    pub context: Context,
    /// Counts.
    pub metrics: AssemblyMetrics,
    /// The prompt: stable part, the cache boundary line, dynamic part.
    pub prompt: String,
    /// The cacheable prefix (up to, not including, the boundary line).
    pub stable: String,
    /// The rest after the boundary line.
    pub dynamic: String,
    /// sha256 fingerprints.
    pub fingerprints: Fingerprints,
    /// The selected tools' parameters as JSON schema, for the provider's tool-calling API.
    pub tool_schemas: Vec<serde_json::Value>,
    /// The router's decision.
    pub decision: Decision,
    /// Timings.
    pub timings: AssemblyTimings,
    /// How the conversation history was fitted (`null` without history).
    pub history: Option<crate::history::HistoryReport>,
    /// Fallbacks and notes (built-in constitution used, memory unavailable, ...).
    pub diagnostics: Vec<String>,
    /// The thinking mode chosen for the task layer (`null` unless asked for).
    pub thinking: Option<switchyard_router::ThinkingDecision>,
}

/// Assembles prompts. `Send + Sync`.
pub struct Assembler {
    router: Router,
    monolithic_stable: std::sync::OnceLock<usize>,
    /// Token counts of the texts that recur across assemblies.
    token_memo: TokenMemo,
    /// The store, or why it could not be opened.
    memory: Option<std::result::Result<Mutex<MemoryStore>, String>>,
    prompts: PromptFiles,
    /// The last git context read (see [`AssemblerBuilder::git_ttl`]).
    git: GitCache,
    history_memo: crate::history::HistoryMemo,
    /// Screening verdicts already reached (stored memory entries, history entries).
    verdicts: crate::screening::VerdictMemo,
    /// The router's [`switchyard_router::Router::screen_key`]: verdicts recorded in the memory
    /// store under it are read instead of screening again.
    screen_key: String,
    config: AssemblerConfig,
}

impl std::fmt::Debug for Assembler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assembler").field("router", &self.router).finish_non_exhaustive()
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

impl Assembler {
    /// The router.
    pub fn router(&self) -> &Router {
        &self.router
    }

    /// How many times prompt files were read from disk (cache misses).
    pub fn prompt_file_reads(&self) -> usize {
        self.prompts.reads()
    }

    /// Routes the task (one embedding), gathers context, screens untrusted entries and renders
    /// the prompt in fixed layers within the token budget.
    pub fn assemble(&self, task: &str, options: &AssembleOptions) -> Result<Assembly> {
        let t0 = Instant::now();
        let mut diagnostics = Vec::new();
        let root = options
            .root
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("."));

        let tr = Instant::now();
        // Pending changes are a mode hint; read from the root only when the caller named one.
        let full = options.profile == Profile::Full;
        let git_changes = options.git_changes.unwrap_or_else(|| {
            full && options.root.is_some()
                && self
                    .git
                    .context(&root, self.config.git_ttl)
                    .is_some_and(|g| g.summary != "clean")
        });
        let route_opts = RouteOptions {
            mode: options.mode.clone(),
            interactive: options.interactive,
            git_changes,
        };
        let decision = self.router.route(task, &route_opts)?;
        if let Some(r) = &decision.fallback_reason {
            diagnostics.push(format!("router fell back to deterministic signals: {r}"));
        }
        let route_ms = ms(tr);

        let trt = Instant::now();
        let git = if decision.chitchat || !full {
            None
        } else {
            self.git.context(&root, self.config.git_ttl)
        };
        let env =
            EnvContext { cwd: root.display().to_string(), os: std::env::consts::OS.to_string() };
        let runtime_ms = ms(trt);

        // Untrusted context: semantic search with the task's one embedding, instruction-like
        // kinds excluded before scoring, then injection screening of the survivors.
        let tm = Instant::now();
        let untrusted = if decision.chitchat || !full {
            UntrustedPart::default()
        } else {
            // Fail-open: a store that cannot be read (locked, damaged, another model's) costs
            // the untrusted layer, never the prompt; the diagnostic says why.
            self.untrusted_part(task, &decision, &mut diagnostics).unwrap_or_else(|e| {
                diagnostics
                    .push(format!("memory unavailable, assembled without untrusted context: {e}"));
                UntrustedPart::default()
            })
        };
        let UntrustedPart {
            promoted_rules,
            memories,
            activity,
            filtered,
            screened_out,
            embedding_calls,
        } = untrusted;
        let memory_embedding_calls = embedding_calls;
        let memory_ms = ms(tm);

        let trd = Instant::now();
        let meta = self.router.index().meta();
        let counter = self.config.counter;
        // The operator's identity and user files come first, within their own caps; the layer
        // shares apply to what they leave, so the prompt stays within the budget.
        let bootstrap = if full {
            self.prompts.bootstrap(counter, &self.config.bootstrap, &mut diagnostics)
        } else {
            None
        };
        let bootstrap_tokens = bootstrap.as_ref().map_or(0, |b| counter.count(b));
        let mut history_calls = 0;
        let history = (full && !options.history.is_empty())
            .then(|| self.history_layer(&options.history, &mut diagnostics, &mut history_calls));
        let history_tokens = history.as_ref().map_or(0, |(text, _)| counter.count(text));
        let budget = self.config.budget.saturating_sub(bootstrap_tokens + history_tokens) as f32;
        let f = &self.config.fractions;
        // The untrusted layer is truncated inside the tags so the closing tag always survives.
        let untrusted_body = {
            let mut inner = String::new();
            for (kind, texts) in [("memory", &memories), ("activity", &activity)] {
                for t in texts {
                    inner.push_str(&format!("- [{kind}] {}\n", neutralize(t)));
                }
            }
            if inner.is_empty() {
                inner.push_str("(nothing relevant)");
            }
            let (inner, cut) = counter
                .truncate(inner.trim_end(), ((budget * f.untrusted) as usize).saturating_sub(16));
            (format!("{OPEN_TAG}\n{inner}\n{CLOSE_TAG}"), cut)
        };
        let untrusted_layer = format!("{H_UNTRUSTED}\n{}\n", untrusted_body.0);
        let mut layer_tokens = BTreeMap::new();
        let mut truncated = Vec::new();
        let bootstrap_layer = bootstrap.as_ref().map(|b| format!("{H_BOOTSTRAP}\n{b}\n"));
        if let Some(text) = &bootstrap_layer {
            layer_tokens.insert("bootstrap".to_string(), self.token_memo.count(counter, text));
        }
        // Stable layers recur from one assembly to the next, so their counts are remembered;
        // the dynamic ones (the task is new each time) are counted afresh.
        let memo = &self.token_memo;
        let mut layer = |name: &str, heading: &str, body: &str, share: f32| -> String {
            let stable = matches!(name, "constitution" | "rules" | "tools");
            let max = (budget * share) as usize;
            let (body, cut) = if stable {
                memo.truncate(counter, body.trim_end(), max)
            } else {
                counter.truncate(body.trim_end(), max)
            };
            if cut {
                truncated.push(name.to_string());
            }
            let text = format!("{heading}\n{body}\n");
            let tokens = if stable { memo.count(counter, &text) } else { counter.count(&text) };
            layer_tokens.insert(name.to_string(), tokens);
            text
        };

        let own = self.router.index().prompts().and_then(|p| p.constitution.as_deref());
        let (constitution, diag) = self.prompts.constitution(own);
        diagnostics.extend(diag);
        let mode_rules =
            meta.modes.iter().find(|m| m.name == decision.mode).and_then(|m| m.rules.as_deref());
        let (rules, diag) = self.prompts.rules(&decision.mode, mode_rules);
        diagnostics.extend(diag);

        let mut tools_text = String::new();
        if !decision.tools.is_empty() {
            tools_text.push_str("## Tools (call them through the tool-calling interface)\n");
            for t in &decision.tools {
                if let Some(item) = meta.tools.iter().find(|i| i.name == t.name) {
                    tools_text.push_str(&format!("- {}: {}\n", item.name, item.description));
                }
            }
        }
        if !decision.skills.is_empty() {
            tools_text.push_str("## Skills\n");
            for s in &decision.skills {
                if let Some(item) = meta.skills.iter().find(|i| i.name == s.name) {
                    tools_text.push_str(&format!("### {}\n{}\n", item.name, item.description));
                    if let Some(body) = &item.body {
                        tools_text.push_str(body.trim_end());
                        tools_text.push('\n');
                    }
                }
            }
        }
        if tools_text.is_empty() {
            tools_text.push_str("(none needed)\n");
        }

        // Values from outside (a directory name, a branch name) are printed on one line with
        // no tags, so none can forge a heading or a wrapper in the trusted layer.
        let mut runtime = String::new();
        match &git {
            Some(g) => runtime.push_str(&format!(
                "git branch: {}\ngit changes: {}\n",
                neutralize(&g.branch),
                neutralize(&g.summary)
            )),
            None => runtime.push_str("git: not a repository\n"),
        }
        runtime.push_str(&format!(
            "cwd: {}\nos: {}\nmode: {}\n",
            neutralize(&env.cwd),
            env.os,
            decision.mode
        ));

        // Stable part first so it is a cacheable prefix; see the crate docs for the order.
        let mut stable_layers = Vec::new();
        if options.profile != Profile::None {
            stable_layers.push(layer(
                "constitution",
                H_CONSTITUTION,
                &constitution,
                f.constitution,
            ));
            if let Some(text) = &bootstrap_layer {
                stable_layers.push(text.clone());
            }
            // Simple tasks get a smaller share of the rules budget (cut from the end).
            let rules_share =
                f.rules * self.config.rules_scale.factor(decision.analysis.complexity);
            stable_layers.push(layer("rules", H_RULES, &rules, rules_share));
            if !promoted_rules.is_empty() {
                let body: String = promoted_rules
                    .iter()
                    .map(|r| format!("- {}\n", neutralize(r.trim())))
                    .collect();
                stable_layers.push(layer("mandatory_rules", H_MANDATORY_RULES, &body, f.rules));
            }
            stable_layers.push(layer("tools", H_TOOLS, &tools_text, f.tools));
        }
        let stable = stable_layers.join("\n");
        let mut dynamic_layers = Vec::new();
        if full {
            dynamic_layers.push(layer("runtime", H_RUNTIME, &runtime, f.runtime));
            if let Some(turn) = options.turn.render() {
                dynamic_layers.push(layer("turn", H_TURN, &turn, f.turn));
            }
            dynamic_layers.push(untrusted_layer.clone());
            if let Some((text, _)) = &history {
                dynamic_layers.push(text.clone());
            }
        }
        let hint = options.clarify.then(|| decision.analysis.clarification()).flatten();
        let thinking = match &options.thinking {
            Some(requested) => Some(self.router.think(task, Some(requested))?),
            None => None,
        };
        let task_text = match &thinking {
            Some(d) => self.router.thinking_scaffold(d, task)?,
            None => task.to_string(),
        };
        let task_body = match &hint {
            Some(h) => format!("{}\n\nNote: {h}.", task_text.trim_end()),
            None => task_text,
        };
        dynamic_layers.push(layer("task", H_TASK, &task_body, f.task));
        let dynamic = dynamic_layers.join("\n");
        if history_tokens > 0 {
            layer_tokens.insert("history".into(), history_tokens);
        }
        if full {
            layer_tokens.insert("untrusted".into(), counter.count(&untrusted_layer));
            if untrusted_body.1 {
                truncated.push("untrusted".into());
            }
        }
        // Without a stable part (profile `none`) there is no prefix to mark.
        let head = if stable.is_empty() {
            String::new()
        } else {
            format!("{stable}\n{CACHE_BOUNDARY}\n\n")
        };
        let prompt = format!("{head}{dynamic}");
        // The dynamic half starts with a heading after a blank line, so no token spans the two
        // halves and the prompt's count is the sum of theirs (tested): the head's is remembered.
        let dynamic_tokens = counter.count(&dynamic);
        let estimated_tokens = memo.count(counter, &head) + dynamic_tokens;

        let tool_schemas = decision
            .tools
            .iter()
            .filter_map(|t| meta.tools.iter().find(|i| i.name == t.name))
            .map(|i| {
                let params = i.parameters.as_deref().and_then(|p| serde_json::from_str(p).ok()).unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
                serde_json::json!({"name": i.name, "description": i.description, "parameters": params})
            })
            .collect();
        // A monolithic prompt = every tool, skill and rule, plus the same dynamic part. The
        // stable half never changes for an assembler, so it is counted once.
        let monolithic_tokens = *self.monolithic_stable.get_or_init(|| {
            let mut all = String::new();
            for t in &meta.tools {
                all.push_str(&format!("- {}: {}\n", t.name, t.description));
            }
            for s in &meta.skills {
                all.push_str(&format!(
                    "### {}\n{}\n{}\n",
                    s.name,
                    s.description,
                    s.body.as_deref().unwrap_or("")
                ));
            }
            let rules_all: String =
                meta.modes.iter().filter_map(|m| m.rules.clone()).collect::<Vec<_>>().join("\n");
            counter.count(&format!(
                "{H_CONSTITUTION}\n{constitution}\n{H_RULES}\n{rules_all}\n{H_TOOLS}\n{all}\n"
            ))
        }) + dynamic_tokens;
        let render_ms = ms(trd);
        let history = history.map(|(_, report)| report);
        if let Some(log) = &self.config.trace {
            let name = |v: serde_json::Value| v.as_str().unwrap_or_default().to_string();
            let record = crate::trace::TraceRecord {
                ts: crate::trace::now(),
                session: options.session.clone(),
                mode: decision.mode.clone(),
                mode_source: name(serde_json::to_value(decision.mode_source).unwrap_or_default()),
                profile: name(serde_json::to_value(options.profile).unwrap_or_default()),
                layer_tokens: layer_tokens.clone(),
                truncated: truncated.clone(),
                ms: [
                    ("route", route_ms),
                    ("runtime", runtime_ms),
                    ("memory", memory_ms),
                    ("render", render_ms),
                    ("total", ms(t0)),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
                embedding_calls: decision.metrics.embedding_calls
                    + memory_embedding_calls
                    + history_calls,
                fallback: decision.fallback_reason.clone(),
                complexity: Some(decision.analysis.complexity),
                missing: decision.analysis.missing.clone(),
                clarified: hint.is_some(),
                memory_flagged: screened_out,
                memory_excluded: filtered - screened_out,
                history_flagged: history.as_ref().map_or(0, |h| h.flagged.len()),
                fingerprints: [sha256(&stable), sha256(&dynamic), sha256(&prompt)],
                diagnostics: diagnostics.clone(),
            };
            if let Err(e) = log.append(&record) {
                diagnostics.push(format!("trace log {}: {e}; not recorded", log.path.display()));
            }
        }
        for d in &diagnostics {
            tracing::warn!(diagnostic = %d, "assembly went on without a part");
        }
        tracing::debug!(
            mode = %decision.mode,
            tools = decision.tools.len(),
            tokens = estimated_tokens,
            memories = memories.len(),
            screened_out,
            ms = ms(t0),
            "assembled"
        );
        Ok(Assembly {
            mode: decision.mode.clone(),
            task: task.to_string(),
            tools: decision.tools.iter().map(|t| t.name.clone()).collect(),
            skills: decision.skills.iter().map(|t| t.name.clone()).collect(),
            context: Context {
                git,
                env,
                promoted_rules,
                memories,
                activity,
                filtered_count: filtered,
                screened_out,
            },
            metrics: AssemblyMetrics {
                estimated_tokens,
                embedding_calls: decision.metrics.embedding_calls
                    + memory_embedding_calls
                    + history_calls
                    + thinking.as_ref().map_or(0, |t| t.embedding_calls),
                layer_tokens,
                truncated_layers: truncated,
                monolithic_tokens,
            },
            fingerprints: Fingerprints {
                stable: sha256(&stable),
                dynamic: sha256(&dynamic),
                full: sha256(&prompt),
            },
            prompt,
            stable,
            dynamic,
            tool_schemas,
            decision,
            thinking,
            timings: AssemblyTimings {
                route_ms,
                runtime_ms,
                memory_ms,
                render_ms,
                total_ms: ms(t0),
            },
            history,
            diagnostics,
        })
    }
}
