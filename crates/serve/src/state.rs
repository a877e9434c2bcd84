//! What every request shares: the current engine (swapped whole on reload), the memory
//! store's writer, the concurrency slots, the limits and the metrics.

use crate::ServeConfig;
use crate::engine::{Engine, FileStamp, ModelLoader, open_engine};
use crate::error::{ApiError, ServeError, error_chain};
use crate::metrics::{Metrics, ReloadLabels};
use arc_swap::ArcSwap;
use axum::http::StatusCode;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use switchyard_memory::MemoryStore;
use tokio::sync::Semaphore;

/// The state of a running server; cheap to clone (one `Arc`).
#[derive(Clone, Debug)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    config: ServeConfig,
    loader: ModelLoader,
    engine: ArcSwap<Engine>,
    /// A failed reload is not retried until the file changes again.
    failed_stamp: Mutex<Option<FileStamp>>,
    /// Serialises reloads (the watcher and explicit calls).
    reloading: tokio::sync::Mutex<()>,
    /// The writer used by `/v1/memory`; the assembler reads through its own connection and
    /// sees committed writes (the store reloads when the database's version changes).
    memory: Option<Arc<Mutex<MemoryStore>>>,
    slots: Arc<Semaphore>,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("engine", &self.engine.load()).finish_non_exhaustive()
    }
}

/// What a reload check did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// The file is the one in use (or the one that failed last time).
    Unchanged,
    /// The file is missing or unreadable right now; the engine in use stays.
    Unreadable,
    /// A new engine serves from now on.
    Reloaded {
        /// Its generation.
        generation: u64,
    },
    /// The new file could not be used; the engine in use stays.
    Failed {
        /// Why.
        message: String,
    },
}

impl AppState {
    /// Loads the index (and its model) and opens the memory store: the blocking start-up work.
    pub fn open(config: ServeConfig, loader: ModelLoader) -> Result<Self, ServeError> {
        let engine = open_engine(&config.assembler, config.model.as_deref(), &loader, None, 1)?;
        let memory = match config.assembler.memory_path() {
            Some(p) => {
                let mut store = MemoryStore::open(p)?;
                store
                    .set_prepare(engine.assembler.router().prepare_config())
                    .set_triage(engine.assembler.router().screen_triage())
                    .set_screen_layer(engine.assembler.router().screen_layer());
                Some(Arc::new(Mutex::new(store)))
            }
            None => None,
        };
        let metrics = Arc::new(Metrics::default());
        metrics.index_generation.set(1);
        let slots = Arc::new(Semaphore::new(config.limits.max_concurrent.max(1)));
        Ok(Self {
            inner: Arc::new(Inner {
                engine: ArcSwap::from_pointee(engine),
                failed_stamp: Mutex::new(None),
                reloading: tokio::sync::Mutex::new(()),
                memory,
                slots,
                metrics,
                loader,
                config,
            }),
        })
    }

    /// The engine in use now (requests keep the one they started with).
    pub fn engine(&self) -> Arc<Engine> {
        self.inner.engine.load_full()
    }

    /// The settings the server runs with.
    pub fn config(&self) -> &ServeConfig {
        &self.inner.config
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    pub(crate) fn metrics_arc(&self) -> Arc<Metrics> {
        Arc::clone(&self.inner.metrics)
    }

    pub(crate) fn memory_path(&self) -> Option<&Path> {
        self.inner.config.assembler.memory_path()
    }

    pub(crate) fn default_root(&self) -> Option<PathBuf> {
        self.inner.config.root.clone()
    }

    pub(crate) fn memory_store(&self) -> Result<Arc<Mutex<MemoryStore>>, ApiError> {
        self.inner.memory.clone().ok_or_else(|| {
            ApiError::not_found(
                "this server has no memory store; start it with --memory DB to use /v1/memory",
            )
        })
    }

    /// Runs `f` on a blocking thread (embedding and SQLite never block the async threads),
    /// within one of the concurrency slots and the request timeout.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Engine) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let limits = &self.inner.config.limits;
        let deadline = tokio::time::Instant::now() + limits.request_timeout;
        let permit = tokio::time::timeout_at(deadline, Arc::clone(&self.inner.slots).acquire_owned())
            .await
            .map_err(|_| {
                ApiError::unavailable(format!(
                    "all {} request slots stayed busy for the whole request timeout ({} ms); retry, or start the server with a larger --max-concurrent",
                    limits.max_concurrent,
                    limits.request_timeout.as_millis()
                ))
            })?
            .map_err(|_| ApiError::unavailable("the server is shutting down"))?;
        let engine = self.engine();
        let job = tokio::task::spawn_blocking(move || {
            let _slot = permit;
            f(&engine)
        });
        match tokio::time::timeout_at(deadline, job).await {
            Ok(Ok(result)) => result,
            Ok(Err(join)) => Err(ApiError::internal(format!(
                "the request failed inside the library ({join}); the server goes on"
            ))),
            Err(_) => Err(ApiError {
                status: StatusCode::GATEWAY_TIMEOUT,
                message: format!(
                    "the work took longer than the request timeout ({} ms); it finishes in the background (a memory write is kept) but its answer is dropped",
                    limits.request_timeout.as_millis()
                ),
            }),
        }
    }

    /// Reloads the index when its file changed since the engine in use was opened. The new
    /// engine is built on a blocking thread while requests go on with the old one, then
    /// swapped in whole; a file that cannot be used leaves the old engine serving.
    pub async fn reload_if_changed(&self) -> ReloadOutcome {
        let _one_at_a_time = self.inner.reloading.lock().await;
        let current = self.engine();
        let path = self.inner.config.assembler.index_path().to_path_buf();
        let Some(stamp) = FileStamp::of(&path) else {
            return ReloadOutcome::Unreadable;
        };
        let failed = self.inner.failed_stamp.lock().ok().and_then(|s| *s);
        if Some(stamp) == current.stamp || Some(stamp) == failed {
            return ReloadOutcome::Unchanged;
        }
        let state = self.clone();
        let model = Arc::clone(current.model());
        let generation = current.generation + 1;
        let opened = tokio::task::spawn_blocking(move || {
            let c = &state.inner.config;
            open_engine(
                &c.assembler,
                c.model.as_deref(),
                &state.inner.loader,
                Some(&model),
                generation,
            )
        })
        .await;
        let metrics = &self.inner.metrics;
        match opened {
            Ok(Ok(engine)) => {
                if let Ok(mut failed) = self.inner.failed_stamp.lock() {
                    *failed = None;
                }
                if let Some(store) = &self.inner.memory
                    && let Ok(mut store) = store.lock()
                {
                    store
                        .set_prepare(engine.assembler.router().prepare_config())
                        .set_triage(engine.assembler.router().screen_triage())
                        .set_screen_layer(engine.assembler.router().screen_layer());
                }
                tracing::info!(index = %path.display(), generation, model = %engine.model().info().name, "index reloaded");
                self.inner.engine.store(Arc::new(engine));
                metrics.reloads.get_or_create(&ReloadLabels { outcome: "ok" }).inc();
                metrics.index_generation.set(generation as i64);
                ReloadOutcome::Reloaded { generation }
            }
            Ok(Err(e)) => {
                let message = error_chain(&e);
                self.failed(stamp, &path, message)
            }
            Err(join) => self.failed(stamp, &path, format!("reloading panicked: {join}")),
        }
    }

    fn failed(&self, stamp: FileStamp, path: &Path, message: String) -> ReloadOutcome {
        tracing::warn!(index = %path.display(), error = %message, "the changed index could not be loaded; still serving the previous one");
        if let Ok(mut failed) = self.inner.failed_stamp.lock() {
            *failed = Some(stamp);
        }
        self.inner.metrics.reloads.get_or_create(&ReloadLabels { outcome: "failed" }).inc();
        ReloadOutcome::Failed { message }
    }
}
