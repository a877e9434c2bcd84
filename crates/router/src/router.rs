use crate::builder::RouterConfig;
use crate::cascade::applied;
use crate::decision::{
    AnsweredBy, AppliedThresholds, Decision, Dropped, GateCheck, Metrics, ModeFilter, ModeSource,
    Selected,
};
use crate::keywords::{Keyword, words};
use crate::scratch::Scratch;
use crate::select::HybridInput;
use crate::select::{Signal, is_content_word};
use crate::{Result, RouteError};
use lru::LruCache;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use switchyard_embed::{Embedder, TokenStates};
use switchyard_format::{Index, ItemMeta, MatrixView, SectionKind};
use switchyard_lexical::Bm25Scorer;

/// A compiled view of one item kind (tools or skills) for fast per-task work.
#[derive(Debug)]
pub(crate) struct ItemTable {
    pub(crate) kind: SectionKind,
    pub(crate) label: &'static str,
    /// `row_owner[row]` = item index.
    pub(crate) row_owner: Vec<u32>,
    /// Per item: the set of mode indices it is offered in (`None` = any).
    pub(crate) modes: Vec<Option<Vec<usize>>>,
    /// Lowercase words of name and description, for the fail-open keyword match.
    pub(crate) words: Vec<Vec<String>>,
    /// The lexical scorer (indexes with a selection section).
    pub(crate) bm25: Option<Bm25Scorer>,
    /// The IDF weight of each of the items' late-interaction tokens, for the item's side of the
    /// late score (empty without a late section or its token ids).
    pub(crate) late_weights: Vec<f32>,
}

/// Which embedding space a vector lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Space {
    /// The transformer's.
    Model,
    /// The cascade's static table.
    Static,
}

/// The per-kind settings of one selection.
pub(crate) struct Pick<'a> {
    pub(crate) base: &'a [String],
    pub(crate) mode: Option<usize>,
    pub(crate) min: f32,
    pub(crate) cap: usize,
}

/// A task's embedding as the cache keeps it: the vector, and its token states when the index
/// uses late interaction.
#[derive(Debug, Clone)]
struct Embedded {
    vector: Arc<[f32]>,
    tokens: Option<Arc<TokenStates>>,
    /// The model was asked for token states (it may have none to give, a wrapper may not
    /// forward them): asking again would not help.
    asked_for_tokens: bool,
}

/// Options of one routing call.
#[derive(Debug, Clone, Default)]
pub struct RouteOptions {
    /// An explicit mode (`None` or `"auto"` infers it).
    pub mode: Option<String>,
    /// The session is interactive (hint: plan).
    pub interactive: bool,
    /// The repository has uncommitted changes (hint: act).
    pub git_changes: bool,
}

/// Routes tasks against one index with one embedder. `Send + Sync`: share it across threads.
pub struct Router {
    pub(crate) index: Index,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) config: RouterConfig,
    pub(crate) tools: ItemTable,
    pub(crate) skills: ItemTable,
    pub(crate) mode_keywords: Vec<Vec<Keyword>>,
    pub(crate) mode_row_owner: Vec<u32>,
    pub(crate) mode_centroids: crate::mode::ModeCentroids,
    /// Keyword rules and row owners of the thinking modes.
    pub(crate) thinking_rules: crate::think::ThinkingRules,
    /// Whether the catalog lets the task's best tools confirm a semantic mode guess
    /// ([`switchyard_format::IndexMeta::supports_tool_agreement`]).
    pub(crate) tool_agreement: bool,
    /// The share of the catalog's tools its default mode offers
    /// ([`switchyard_format::IndexMeta::default_mode_tool_share`]): under
    /// [`crate::mode::CATCH_ALL_SHARE`] the default mode is one topic among the others, and the
    /// best tools' mode decides an unsure task before it.
    pub(crate) default_tool_share: Option<f32>,
    /// The query adapter the index's tools and skills rows were mapped with.
    adapter: Option<switchyard_adapter::Adapter>,
    cache: Option<Mutex<LruCache<String, Embedded>>>,
    /// The screen's triage, made on first use (it copies the lexical head's weights).
    pub(crate) triage: std::sync::OnceLock<Option<switchyard_lexical::LexicalTriage>>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("index", &self.index.path())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Router {
    pub(crate) fn from_index(
        index: Index,
        embedder: Arc<dyn Embedder>,
        config: RouterConfig,
    ) -> Result<Self> {
        let meta = index.meta();
        let mode_pos = |name: &str| meta.modes.iter().position(|m| m.name == name);
        let selection = index.selection();
        let table = |kind: SectionKind, label: &'static str, items: &[ItemMeta]| -> ItemTable {
            let rows = index.matrix(kind).rows();
            let mut row_owner = vec![0u32; rows];
            for (i, it) in items.iter().enumerate() {
                for r in it.first_row..it.first_row + it.row_count {
                    row_owner[r as usize] = i as u32;
                }
            }
            ItemTable {
                kind,
                label,
                row_owner,
                modes: items
                    .iter()
                    .map(|it| {
                        if it.modes.iter().any(|m| m == "any") {
                            None
                        } else {
                            Some(it.modes.iter().filter_map(|m| mode_pos(m)).collect())
                        }
                    })
                    .collect(),
                words: items
                    .iter()
                    .map(|it| {
                        words(&format!(
                            "{} {}",
                            it.name.replace(['_', '-', '.'], " "),
                            it.description
                        ))
                        .into_iter()
                        .map(|(_, w)| w)
                        .collect()
                    })
                    .collect(),
                bm25: selection.map(|sel| {
                    Bm25Scorer::new(match kind {
                        SectionKind::Tools => &sel.tools_lexical,
                        _ => &sel.skills_lexical,
                    })
                }),
                late_weights: index.late().map_or_else(Vec::new, |l| {
                    crate::late::item_token_weights(match kind {
                        SectionKind::Tools => &l.tools,
                        _ => &l.skills,
                    })
                }),
            }
        };
        let tools = table(SectionKind::Tools, "tool", &meta.tools);
        let skills = table(SectionKind::Skills, "skill", &meta.skills);
        let mode_keywords = meta
            .modes
            .iter()
            .map(|m| m.keywords.iter().map(|k| Keyword::new(k)).collect())
            .collect();
        let mut mode_row_owner = vec![0u32; index.matrix(SectionKind::Modes).rows()];
        for (i, m) in meta.modes.iter().enumerate() {
            for r in m.first_row..m.first_row + m.row_count {
                mode_row_owner[r as usize] = i as u32;
            }
        }
        let mode_centroids =
            crate::mode::ModeCentroids::new(&index, &mode_row_owner, meta.modes.len());
        let tool_agreement = meta.supports_tool_agreement();
        let default_tool_share = meta.default_mode_tool_share();
        let thinking_rules = crate::think::ThinkingRules::new(
            index.thinking(),
            index.matrix(SectionKind::ThinkingRows),
        );
        let cache = NonZeroUsize::new(config.cache_size).map(|n| Mutex::new(LruCache::new(n)));
        let adapter = index.adapter().map(|a| switchyard_adapter::Adapter {
            fingerprint: index.header().fingerprint,
            dim: index.dim(),
            rank: a.rank as usize,
            u: a.u.clone(),
            v: a.v.clone(),
            info: switchyard_adapter::AdapterInfo::default(),
        });
        Ok(Self {
            index,
            embedder,
            config,
            tools,
            skills,
            mode_keywords,
            mode_row_owner,
            mode_centroids,
            thinking_rules,
            tool_agreement,
            default_tool_share,
            adapter,
            cache,
            triage: std::sync::OnceLock::new(),
        })
    }

    /// The mapped index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The embedder.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The injection threshold in force (override or the index's).
    pub fn injection_threshold(&self) -> f32 {
        self.config.injection.unwrap_or(self.index.meta().thresholds.injection)
    }

    /// The margin of the screening contrast rule.
    pub fn injection_margin(&self) -> f32 {
        self.config.injection_margin
    }

    /// Whether the contrast rule was forced.
    pub(crate) fn contrast_only(&self) -> bool {
        self.config.contrast_only
    }

    fn thresholds(&self) -> AppliedThresholds {
        let t = &self.index.meta().thresholds;
        AppliedThresholds {
            tool_min: self.config.tool_min.unwrap_or(t.tool_min),
            skill_min: self.config.skill_min.unwrap_or(t.skill_min),
            mode_min: self.config.mode_min.unwrap_or(t.mode_min),
        }
    }

    /// Routes with a fresh scratch buffer; see [`Router::route_with`].
    pub fn route(&self, task: &str, options: &RouteOptions) -> Result<Decision> {
        self.route_with(task, options, &mut Scratch::default())
    }

    /// Decides mode, tools and skills for `task`, embedding it at most once.
    pub fn route_with(
        &self,
        task: &str,
        options: &RouteOptions,
        scratch: &mut Scratch,
    ) -> Result<Decision> {
        let t0 = Instant::now();
        let meta = self.index.meta();
        let thresholds = self.thresholds();
        let lower = task.to_lowercase();
        let task_words = words(task);
        let mut metrics = Metrics::default();

        // Explicit mode first: it is validated even for chit-chat.
        let explicit = match options.mode.as_deref() {
            None | Some("auto") | Some("") => None,
            Some(m) => Some(
                meta.modes.iter().position(|x| x.name == m).map(|_| m.to_string()).ok_or_else(
                    || RouteError::UnknownMode {
                        path: self.index.path().to_path_buf(),
                        mode: m.to_string(),
                        known: meta
                            .modes
                            .iter()
                            .map(|x| x.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    },
                )?,
            ),
        };
        let keyword = self.keyword_mode(&lower, &task_words);

        if self.is_chitchat(task, &lower, keyword.is_some()) {
            metrics.timings.total_ms = ms(t0);
            return Ok(Decision {
                task: task.to_string(),
                mode: explicit.unwrap_or_else(|| meta.default_mode.clone()),
                mode_source: ModeSource::Chitchat,
                mode_filter: ModeFilter::Hard,
                mode_detail: None,
                semantic_mode: None,
                chitchat: true,
                analysis: crate::analysis::analyze_task(task),
                tools: Vec::new(),
                skills: Vec::new(),
                dropped: Vec::new(),
                thresholds,
                tool_gate: None,
                skill_gate: None,
                off_topic: None,
                language: None,
                parts: Vec::new(),
                fallback_reason: None,
                answered_by: AnsweredBy::Rules,
                cascade: None,
                metrics,
                embedding: None,
            });
        }

        // One embedding, shared by every lookup below and handed to the caller; or, for an
        // easy task, the cascade's static embedding and no model run at all.
        let te = Instant::now();
        scratch.task_tokens = None;
        let mut cascade = None;
        let mut static_vec = None;
        let tc = Instant::now();
        if let Some((v, check)) = self.cascade_check(task, scratch) {
            if check.accepted {
                static_vec = Some(v);
            }
            cascade = Some(check);
        }
        metrics.timings.static_ms = ms(tc);
        let (embedding, fallback_reason) = if static_vec.is_some() {
            // The model's embedding still rides along when it is already cached (free).
            (self.peek_cache(task), None)
        } else {
            match self.embed_task(task, &mut metrics) {
                Ok(e) => {
                    scratch.task_tokens = e.tokens;
                    (Some(e.vector), None)
                }
                Err(reason) => {
                    tracing::warn!(%reason, "no task embedding; routing on keywords and words alone");
                    (None, Some(reason))
                }
            }
        };
        metrics.timings.embed_ms = ms(te);
        let (space, thresholds) = match (&static_vec, self.index.static_space()) {
            (Some(_), Some(st)) => (Space::Static, applied(&st.meta.thresholds)),
            _ => (Space::Model, thresholds),
        };
        let vector: Option<&[f32]> = static_vec.as_deref().or(embedding.as_deref());
        let answered_by = match (space, vector) {
            (Space::Static, _) => AnsweredBy::Static,
            (Space::Model, Some(_)) => AnsweredBy::Model,
            (Space::Model, None) => AnsweredBy::Words,
        };

        // Tools and skills rows of an index built with an adapter live in its space (mode rows
        // stay in the encoder's).
        let adapted: Option<Vec<f32>> = match (&self.adapter, vector, space) {
            (Some(a), Some(e), Space::Model) => {
                let mut out = Vec::with_capacity(e.len());
                a.apply(e, &mut out);
                Some(out)
            }
            _ => None,
        };
        let item_vector = adapted.as_deref().or(vector);
        // A task that asks for several things: each part's vector from the one pass (model
        // space; an adapter's space has none).
        scratch.parts = 0;
        if let (Space::Model, None, true, Some(tokens)) =
            (space, &self.adapter, self.config.task_parts, scratch.task_tokens.as_deref())
        {
            let parts = crate::clauses::task_parts(task, &tokens.ids, self.embedder.as_ref());
            scratch.parts =
                crate::clauses::part_vectors_into(tokens, &parts, &mut scratch.part_vectors);
            scratch.part_spans = parts.iter().map(|p| p.tokens.clone()).collect();
            scratch.part_terms =
                parts.iter().map(|p| self.lexical_terms(&task[p.text.clone()])).collect();
            scratch.part_texts = parts.iter().map(|p| task[p.text.clone()].to_string()).collect();
            tracing::debug!(parts = scratch.parts, "task parts scored alone");
        }
        // The language shift, in the model's space (an index with an adapter has none).
        scratch.language_offset.clear();
        let language = match (space, vector) {
            (Space::Model, Some(e)) if self.adapter.is_none() => {
                self.language_check(e).map(|(check, offset)| {
                    scratch.language_offset = offset;
                    check
                })
            }
            _ => None,
        };
        let terms = self.lexical_terms(task);
        // Once per task: the decision reports it, and the mode step reads whether it is a question.
        let analysis = crate::analysis::analyze_task(task);
        // The tools' scores do not depend on the mode: computed once, before the mode step,
        // whenever the off-topic check or the mode step reads them; selection reuses them.
        let mut tools_prescored = false;
        let tp = Instant::now();
        // Whether the task is about the catalog at all, against general topics (model space;
        // an index with an adapter has no `off_topic` section, so `vector` is the items' too).
        let off_topic = match (space, vector, item_vector) {
            (Space::Model, Some(e), Some(iv)) if self.off_topic_applies() => {
                tools_prescored =
                    self.score_hybrid(&self.tools, iv, space, &terms, scratch).is_some();
                // Another language than the catalog's, moved or not (an English task is not).
                let foreign = language
                    .as_ref()
                    .is_some_and(|l| l.margin > 0.0 && l.task_language != l.catalog_language);
                tools_prescored.then(|| self.off_topic_check(e, foreign, scratch)).flatten()
            }
            _ => None,
        };
        let closed_off_topic = off_topic.as_ref().is_some_and(|c| c.closed);
        // Scoring for the check is selection's work, counted with it.
        let check_ms = ms(tp);

        let tm = Instant::now();
        let hint = self.hint_mode(options);
        let semantic = match (&explicit, &hint, &keyword, vector) {
            (None, None, None, Some(e)) => {
                // The tools' scores also tell which mode the task's best tools belong to.
                let agreement = self.index.selection().is_some() && self.tool_agreement;
                // Only tools that are clearly about the task (their gate opens) may vote.
                let evidence = item_vector.filter(|_| agreement).and_then(|iv| {
                    if !tools_prescored {
                        self.score_hybrid(&self.tools, iv, space, &terms, scratch)?;
                        tools_prescored = true;
                    }
                    let fusion = &self.index.selection()?.tools;
                    self.gate(&self.tools, fusion, scratch)
                        .open
                        .then(|| self.tool_mode_evidence(&self.tools, &scratch.fused))?
                });
                let question = analysis.signals.question;
                self.semantic_mode(e, space, thresholds.mode_min, evidence, question, scratch)
            }
            _ => None,
        };
        let (mode, mode_source, mode_detail) = if let Some(m) = explicit {
            (m, ModeSource::Explicit, None)
        } else if let Some((hint, m)) = hint {
            (m, ModeSource::Hint, Some(hint))
        } else if let Some((m, kw)) = keyword {
            (meta.modes[m].name.clone(), ModeSource::Keyword, Some(kw))
        } else if let Some(guess) = semantic.as_ref().filter(|g| g.check.decided) {
            (meta.modes[guess.mode].name.clone(), ModeSource::Semantic, Some(guess.detail()))
        } else {
            let why = self.index.selection().and_then(|s| s.mode.note.clone());
            (meta.default_mode.clone(), ModeSource::Default, why)
        };
        let hybrid = self.index.selection().is_some();
        let mode_filter = crate::mode::mode_filter(hybrid, mode_source, semantic.as_ref());
        metrics.timings.mode_ms = ms(tm);

        let ts = Instant::now();
        let mode_idx = meta.modes.iter().position(|m| m.name == mode);
        let base_tools = mode_idx.map(|i| meta.modes[i].base_tools.as_slice()).unwrap_or(&[]);
        let base_skills = mode_idx.map(|i| meta.modes[i].base_skills.as_slice()).unwrap_or(&[]);
        let mut dropped = Vec::new();
        let content: Vec<String> =
            task_words.iter().map(|(_, w)| w.clone()).filter(|w| is_content_word(w)).collect();
        let vector = item_vector;
        let signal = match vector {
            Some(e) => Signal::Embedding(e, space),
            None => Signal::Words(&content),
        };
        let pick_kind = |table: &ItemTable,
                         items: &[ItemMeta],
                         pick: Pick<'_>,
                         override_min: Option<f32>,
                         prescored: bool,
                         mode_orders: bool,
                         scratch: &mut Scratch,
                         dropped: &mut Vec<Dropped>|
         -> (Vec<Selected>, Option<GateCheck>) {
            if let Some(e) = vector {
                let input = HybridInput {
                    embedding: e,
                    space,
                    terms: &terms,
                    soft_mode: mode_filter != ModeFilter::Hard,
                    mode_orders,
                    override_min,
                    prescored,
                    off_topic: closed_off_topic,
                };
                let hybrid = self.select_hybrid(
                    table,
                    items,
                    Pick { base: pick.base, mode: pick.mode, min: pick.min, cap: pick.cap },
                    &input,
                    scratch,
                    dropped,
                );
                if let Some((selected, gate)) = hybrid {
                    return (selected, Some(gate));
                }
            }
            (self.select(table, items, pick, &signal, scratch, dropped), None)
        };
        let (tools, tool_gate) = pick_kind(
            &self.tools,
            &meta.tools,
            Pick {
                base: base_tools,
                mode: mode_idx,
                min: thresholds.tool_min,
                cap: self.config.max_tools,
            },
            self.config.tool_min,
            tools_prescored,
            mode_filter != ModeFilter::SkillsOnly,
            scratch,
            &mut dropped,
        );
        let (skills, skill_gate) = pick_kind(
            &self.skills,
            &meta.skills,
            Pick {
                base: base_skills,
                mode: mode_idx,
                min: thresholds.skill_min,
                cap: self.config.max_skills,
            },
            self.config.skill_min,
            false,
            true,
            scratch,
            &mut dropped,
        );
        metrics.timings.select_ms = ms(ts) + check_ms;
        metrics.timings.total_ms = ms(t0);
        Ok(Decision {
            task: task.to_string(),
            mode,
            mode_source,
            mode_filter,
            mode_detail,
            semantic_mode: semantic.map(|g| g.check),
            chitchat: false,
            analysis,
            tools,
            skills,
            dropped,
            thresholds,
            tool_gate,
            skill_gate,
            off_topic,
            language,
            parts: scratch.part_texts[..scratch.parts].to_vec(),
            fallback_reason,
            answered_by,
            cascade,
            metrics,
            embedding,
        })
    }

    /// The task's model embedding if it is in the cache.
    pub(crate) fn peek_cache(&self, task: &str) -> Option<Arc<[f32]>> {
        Some(Arc::clone(&self.cache.as_ref()?.lock().ok()?.peek(task)?.vector))
    }

    pub(crate) fn matrix_of(&self, kind: SectionKind, space: Space) -> MatrixView<'_> {
        match (space, self.index.static_space()) {
            (Space::Static, Some(st)) => match kind {
                SectionKind::Tools => st.tools,
                SectionKind::Skills => st.skills,
                _ => st.modes,
            },
            _ => self.index.matrix(kind),
        }
    }

    /// Gets the task's embedding (and, for late interaction, its token states) from the cache
    /// or the model, within the time budget.
    fn embed_task(
        &self,
        task: &str,
        metrics: &mut Metrics,
    ) -> std::result::Result<Embedded, String> {
        let late = self.index.late().is_some() && self.config.late_interaction;
        if let Some(cache) = &self.cache
            && let Some(hit) = cache.lock().ok().and_then(|mut c| c.get(task).cloned())
            && (hit.tokens.is_some() || hit.asked_for_tokens || !late)
        {
            metrics.cache_hit = true;
            return Ok(hit);
        }
        metrics.embedding_calls += 1;
        let embed = move |embedder: &dyn Embedder, text: &str| -> EmbedResult {
            let fail = |e: switchyard_embed::EmbedError| format!("embedder failed: {e}");
            if late
                && let Some(mut kept) = embedder.embed_with_tokens(&[text], false).map_err(fail)?
            {
                let tokens = kept.pop().ok_or("embedder returned no token states")?;
                return Ok((tokens.vector.clone(), Some(tokens)));
            }
            Ok((embedder.embed(text).map_err(fail)?, None))
        };
        let result: EmbedResult = match self.config.embed_budget {
            None => embed(self.embedder.as_ref(), task),
            Some(budget) => {
                // The model cannot be interrupted, so it runs on its own thread; when it is
                // late we answer without it, and its result still lands in the cache.
                let (tx, rx) = std::sync::mpsc::channel();
                let embedder = Arc::clone(&self.embedder);
                let text = task.to_string();
                std::thread::spawn(move || {
                    let _ = tx.send(embed(embedder.as_ref(), &text));
                });
                rx.recv_timeout(budget).unwrap_or_else(|_| {
                    Err(format!("embedder exceeded the {} ms budget", budget.as_millis()))
                })
            }
        };
        let (v, tokens) = result?;
        if v.len() != self.index.dim() || v.iter().any(|x| !x.is_finite()) {
            return Err(format!(
                "embedder returned an unusable vector ({} values, index dim {})",
                v.len(),
                self.index.dim()
            ));
        }
        // Unusable token states only cost the late side, never the route.
        let tokens = tokens
            .filter(|t| t.dim() == self.index.dim() && t.states.iter().all(|x| x.is_finite()))
            .map(Arc::new);
        let embedded = Embedded { vector: v.into(), tokens, asked_for_tokens: late };
        if let Some(cache) = &self.cache
            && let Ok(mut c) = cache.lock()
        {
            c.put(task.to_string(), embedded.clone());
        }
        Ok(embedded)
    }

    /// The task's model embedding (from the cache, else one model run, then cached): for
    /// lookups in the model's space after the cascade answered the routing statically.
    pub fn task_embedding(&self, task: &str) -> Result<Arc<[f32]>> {
        self.embed_task(task, &mut Metrics::default())
            .map(|e| e.vector)
            .map_err(|message| RouteError::Embedding { message })
    }

    /// Puts a precomputed task embedding in the cache (e.g. one made in a batch). On an index
    /// with late interaction ([`Router::uses_late_interaction`]) a route still runs the model
    /// once for the task's token states; [`Router::prime_cache_with_tokens`] saves that run.
    pub fn prime_cache(&self, task: &str, embedding: Vec<f32>) {
        if let Some(cache) = &self.cache
            && let Ok(mut c) = cache.lock()
        {
            let vector = embedding.into();
            c.put(task.to_string(), Embedded { vector, tokens: None, asked_for_tokens: false });
        }
    }

    /// Puts a precomputed task embedding with its token states in the cache (one made in a
    /// batch by [`Embedder::embed_with_tokens`]), so late interaction needs no model run.
    pub fn prime_cache_with_tokens(&self, task: &str, tokens: TokenStates) {
        if let Some(cache) = &self.cache
            && let Ok(mut c) = cache.lock()
        {
            let vector = tokens.vector.clone().into();
            let tokens = Some(Arc::new(tokens));
            c.put(task.to_string(), Embedded { vector, tokens, asked_for_tokens: true });
        }
    }

    /// Whether routes use late interaction: the index has token states for its items and the
    /// configuration leaves it on. A caller priming the cache in batches should then prime it
    /// with [`Router::prime_cache_with_tokens`].
    pub fn uses_late_interaction(&self) -> bool {
        self.index.late().is_some() && self.config.late_interaction
    }

    /// The fingerprint-checked path of the index.
    pub fn path(&self) -> &Path {
        self.index.path()
    }
}

/// A task's vector and, when asked for and given, its token states; or why there is none.
type EmbedResult = std::result::Result<(Vec<f32>, Option<TokenStates>), String>;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
