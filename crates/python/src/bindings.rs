//! The Python classes.

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use switchyard::{AssembleOptions, Assembler, AssemblerBuilder, TokenCounter};
use switchyard_embed::Embedder;
use switchyard_memory::MemoryStore;
use switchyard_router::{RouteOptions, Router, RouterBuilder};

pyo3::create_exception!(
    switchyard,
    SwitchyardError,
    PyException,
    "An index, model or memory store that cannot be used; the message says which file and how to fix it."
);

fn fail(e: impl std::error::Error) -> PyErr {
    SwitchyardError::new_err(switchyard::error_chain(&e))
}

/// A serialisable value as plain Python objects (dicts, lists, str, float, int, bool, None),
/// through the same JSON the CLI prints.
fn to_python<T: serde::Serialize>(py: Python<'_>, value: &T) -> PyResult<Py<PyAny>> {
    let json = serde_json::to_string(value)
        .map_err(|e| SwitchyardError::new_err(format!("serialising the answer: {e}")))?;
    Ok(py.import("json")?.call_method1("loads", (json,))?.unbind())
}

/// Opens `index` with `builder`'s settings and the model it records (or `model`), with the
/// GIL released: loading takes 0.1-0.5 s.
fn open_router(py: Python<'_>, builder: RouterBuilder, model: Option<String>) -> PyResult<Router> {
    py.detach(move || {
        let index = builder.open_index().map_err(fail)?;
        let name = model.unwrap_or_else(|| index.meta().model.name.clone());
        let embedder = crate::models::load(&name).map_err(SwitchyardError::new_err)?;
        builder.build_from(index, embedder).map_err(fail)
    })
}

/// `router`'s decision for `task` as plain Python objects, embedded with the GIL released.
fn route_with(
    py: Python<'_>,
    router: &Router,
    task: &str,
    mode: Option<String>,
    interactive: bool,
    git_changes: bool,
) -> PyResult<Py<PyAny>> {
    let options = RouteOptions { mode, interactive, git_changes };
    let d = py.detach(|| router.route(task, &options)).map_err(fail)?;
    to_python(py, &d)
}

fn check_texts(texts: &[String]) -> PyResult<Vec<&str>> {
    if texts.is_empty() {
        return Err(PyValueError::new_err("texts is empty; pass the untrusted texts to screen"));
    }
    Ok(texts.iter().map(String::as_str).collect())
}

fn screen_with(py: Python<'_>, router: &Router, texts: Vec<String>) -> PyResult<Py<PyAny>> {
    let report = py.detach(|| {
        let refs = check_texts(&texts)?;
        switchyard::screen_texts(router, &refs).map(|(r, _)| r).map_err(fail)
    })?;
    to_python(py, &report)
}

/// Routes tasks: mode, tools and skills, with every score and reason.
#[pyclass(frozen, name = "Router", module = "switchyard")]
pub struct PyRouter {
    router: Arc<Router>,
}

#[pymethods]
impl PyRouter {
    #[new]
    #[pyo3(signature = (index, *, model = None, max_tools = None, cache_size = 256))]
    fn new(
        py: Python<'_>,
        index: PathBuf,
        model: Option<String>,
        max_tools: Option<usize>,
        cache_size: usize,
    ) -> PyResult<Self> {
        let mut builder = RouterBuilder::new(index);
        builder.cache_size(cache_size);
        if let Some(n) = max_tools {
            builder.max_tools(n);
        }
        Ok(Self { router: Arc::new(open_router(py, builder, model)?) })
    }

    /// The decision for `task`, as `switchyard route --json` prints it.
    #[pyo3(signature = (task, *, mode = None, interactive = false, git_changes = false))]
    fn route(
        &self,
        py: Python<'_>,
        task: String,
        mode: Option<String>,
        interactive: bool,
        git_changes: bool,
    ) -> PyResult<Py<PyAny>> {
        route_with(py, &self.router, &task, mode, interactive, git_changes)
    }

    /// Screens untrusted texts, each window by window, as `switchyard screen --json`.
    fn screen(&self, py: Python<'_>, texts: Vec<String>) -> PyResult<Py<PyAny>> {
        screen_with(py, &self.router, texts)
    }

    /// The thinking mode for `problem` (`mode`: a mode's name, or auto) and its scaffold with
    /// the problem filled in, as `switchyard think --json`: `{"decision", "scaffold"}`.
    #[pyo3(signature = (problem, *, mode = None))]
    fn think(&self, py: Python<'_>, problem: String, mode: Option<String>) -> PyResult<Py<PyAny>> {
        let answer = py.detach(|| -> Result<serde_json::Value, switchyard::router::RouteError> {
            let decision = self.router.think(&problem, mode.as_deref())?;
            let scaffold = self.router.thinking_scaffold(&decision, &problem)?;
            Ok(serde_json::json!({ "decision": decision, "scaffold": scaffold }))
        });
        to_python(py, &answer.map_err(fail)?)
    }

    /// The model's name.
    #[getter]
    fn model(&self) -> String {
        self.router.embedder().info().name.clone()
    }

    /// The index file.
    #[getter]
    fn index(&self) -> PathBuf {
        self.router.path().to_path_buf()
    }

    fn __repr__(&self) -> String {
        format!("Router({:?}, model={:?})", self.router.path(), self.model())
    }
}

/// Assembles prompts: layers, trust wrapper, budgets, fingerprints.
#[pyclass(frozen, name = "Assembler", module = "switchyard")]
pub struct PyAssembler {
    assembler: Arc<Assembler>,
}

#[pymethods]
impl PyAssembler {
    #[new]
    #[pyo3(signature = (index, *, memory = None, prompts = None, budget = 4000, tokenizer = "cl100k", model = None, trace = None))]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments
    fn new(
        py: Python<'_>,
        index: PathBuf,
        memory: Option<PathBuf>,
        prompts: Option<PathBuf>,
        budget: usize,
        tokenizer: &str,
        model: Option<String>,
        trace: Option<PathBuf>,
    ) -> PyResult<Self> {
        let counter = match tokenizer {
            "cl100k" | "cl100k_base" => TokenCounter::Cl100k,
            "o200k" | "o200k_base" => TokenCounter::O200k,
            other => {
                return Err(PyValueError::new_err(format!(
                    "tokenizer {other:?}: use \"cl100k\" or \"o200k\""
                )));
            }
        };
        let mut b = AssemblerBuilder::new(index);
        b.budget(budget).token_counter(counter).prompts_dir(prompts).memory_db(memory);
        b.trace_log(trace.map(switchyard::TraceLog::new));
        let assembler = py.detach(move || {
            let index = b.open_index().map_err(fail)?;
            let name = model.unwrap_or_else(|| index.meta().model.name.clone());
            let embedder = crate::models::load(&name).map_err(SwitchyardError::new_err)?;
            b.build_from(index, embedder).map_err(fail)
        })?;
        Ok(Self { assembler: Arc::new(assembler) })
    }

    /// The prompt for `task` and its full account, as `switchyard assemble --json` prints it.
    /// `retry`, `continuation`, `tool_recovery`, `orchestration`, `context` and `now` fill
    /// this turn's layer after the cache boundary.
    #[pyo3(signature = (task, *, mode = None, root = None, interactive = false, git_changes = None, retry = None, continuation = None, tool_recovery = None, orchestration = None, context = None, now = false, profile = "full", history = None, session = None, clarify = false, thinking = None))]
    #[allow(clippy::too_many_arguments)] // Python keyword arguments
    fn assemble(
        &self,
        py: Python<'_>,
        task: String,
        mode: Option<String>,
        root: Option<PathBuf>,
        interactive: bool,
        git_changes: Option<bool>,
        retry: Option<String>,
        continuation: Option<String>,
        tool_recovery: Option<String>,
        orchestration: Option<String>,
        context: Option<String>,
        now: bool,
        profile: &str,
        history: Option<Bound<'_, PyAny>>,
        session: Option<String>,
        clarify: bool,
        thinking: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let profile: switchyard::Profile = profile.parse().map_err(PyValueError::new_err)?;
        let history: Vec<switchyard::HistoryEntry> = match history {
            None => Vec::new(),
            Some(h) => {
                let json: String = py.import("json")?.call_method1("dumps", (h,))?.extract()?;
                serde_json::from_str(&json).map_err(|e| {
                    PyValueError::new_err(format!(
                        "history: expected a list of {{\"role\", \"content\", \"tool\"?}} dicts: {e}"
                    ))
                })?
            }
        };
        let turn = switchyard::TurnContext {
            retry,
            continuation,
            tool_recovery,
            orchestration,
            context,
            now,
        };
        let options = AssembleOptions {
            mode,
            root,
            interactive,
            git_changes,
            turn,
            profile,
            history,
            session,
            clarify,
            thinking,
        };
        let a = py.detach(|| self.assembler.assemble(&task, &options).map_err(fail))?;
        to_python(py, &a)
    }

    /// The routing decision alone (the assembler's router; no second model).
    #[pyo3(signature = (task, *, mode = None, interactive = false, git_changes = false))]
    fn route(
        &self,
        py: Python<'_>,
        task: String,
        mode: Option<String>,
        interactive: bool,
        git_changes: bool,
    ) -> PyResult<Py<PyAny>> {
        route_with(py, self.assembler.router(), &task, mode, interactive, git_changes)
    }

    /// Screens untrusted texts, as `Router.screen`.
    fn screen(&self, py: Python<'_>, texts: Vec<String>) -> PyResult<Py<PyAny>> {
        screen_with(py, self.assembler.router(), texts)
    }

    fn __repr__(&self) -> String {
        format!("Assembler({:?})", self.assembler.router().path())
    }
}

/// The store of untrusted memory and activity, embedded once on write with the index's model.
#[pyclass(frozen, name = "Memory", module = "switchyard")]
pub struct PyMemory {
    store: Mutex<MemoryStore>,
    model: Arc<dyn Embedder>,
    /// Screens what is added, so assemblies read the recorded verdict.
    router: Router,
}

impl PyMemory {
    fn with_store<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut MemoryStore, &dyn Embedder) -> Result<T, switchyard_memory::MemoryError>
        + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut store = self
                .store
                .lock()
                .map_err(|_| SwitchyardError::new_err("the memory store's lock is poisoned"))?;
            f(&mut store, self.model.as_ref()).map_err(|e| match e {
                switchyard_memory::MemoryError::BadKind { .. }
                | switchyard_memory::MemoryError::EmptyText => PyValueError::new_err(e.to_string()),
                other => fail(other),
            })
        })
    }
}

#[pymethods]
impl PyMemory {
    #[new]
    #[pyo3(signature = (db, *, index, model = None))]
    fn new(py: Python<'_>, db: PathBuf, index: PathBuf, model: Option<String>) -> PyResult<Self> {
        let router = open_router(py, RouterBuilder::new(index), model)?;
        let store = py.detach(|| {
            let mut store = MemoryStore::open(&db).map_err(fail)?;
            store
                .set_prepare(router.prepare_config())
                .set_triage(router.screen_triage())
                .set_screen_layer(router.screen_layer());
            Ok::<_, PyErr>(store)
        })?;
        Ok(Self { store: Mutex::new(store), model: Arc::clone(router.embedder()), router })
    }

    /// Stores `text` (embedded now, whole and window by window; screened, the verdict recorded for
    /// assemblies with this index); returns its id.
    #[pyo3(signature = (text, *, kind = "memory", source = "python"))]
    fn add(&self, py: Python<'_>, text: &str, kind: &str, source: &str) -> PyResult<i64> {
        let (text, kind, source) = (text.trim().to_string(), kind.to_string(), source.to_string());
        let id = self.with_store(py, move |s, m| s.add(m, &kind, &text, &source))?;
        // Screened once now and recorded: assemblies with this index read the verdict.
        py.detach(|| {
            let mut store = self
                .store
                .lock()
                .map_err(|_| SwitchyardError::new_err("the memory store's lock is poisoned"))?;
            switchyard::screen_and_record(&mut store, &self.router, &[id]).map_err(fail)
        })?;
        Ok(id)
    }

    /// Every entry, oldest first, as `switchyard memory list --json`.
    fn list(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let entries = self.with_store(py, |s, _| Ok(s.list()?.to_vec()))?;
        to_python(py, &entries)
    }

    /// Removes entry `id`; returns whether it existed.
    fn remove(&self, py: Python<'_>, id: i64) -> PyResult<bool> {
        self.with_store(py, move |s, _| s.remove(id))
    }

    /// Re-embeds entries with the index's model; returns how many. Every entry after a model
    /// change or with `all=True`; else only those whose pieces are missing or an older version's
    /// (after an upgrade of switchyard), the others and their verdicts kept.
    #[pyo3(signature = (*, all = false))]
    fn reembed(&self, py: Python<'_>, all: bool) -> PyResult<usize> {
        self.with_store(py, move |s, m| Ok(s.reembed_as_needed(m, all)?.len()))
    }

    fn __repr__(&self) -> PyResult<String> {
        let store = self.store.lock().map_err(|_| SwitchyardError::new_err("poisoned"))?;
        Ok(format!("Memory({:?})", store.path()))
    }
}

/// The `switchyard` module.
#[pymodule]
#[pyo3(name = "switchyard")]
fn switchyard_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRouter>()?;
    m.add_class::<PyAssembler>()?;
    m.add_class::<PyMemory>()?;
    m.add("SwitchyardError", m.py().get_type::<SwitchyardError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
