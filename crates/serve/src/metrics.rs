//! Prometheus metrics: requests and their latency per endpoint, and what the library did for
//! them (model calls, cache hits, fallbacks, flagged untrusted entries, index reloads).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of a request.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The matched route (`/v1/route`, ...), or `unmatched`.
    pub endpoint: String,
    /// The HTTP status code.
    pub status: u16,
}

/// Labels of a latency observation.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndpointLabels {
    /// The matched route.
    pub endpoint: String,
}

/// Labels of an index reload.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReloadLabels {
    /// `ok` or `failed`.
    pub outcome: &'static str,
}

/// Every metric the server exports.
pub struct Metrics {
    registry: Registry,
    /// Requests answered, by endpoint and status.
    pub requests: Family<RequestLabels, Counter>,
    /// Latency in seconds, by endpoint.
    pub latency: Family<EndpointLabels, Histogram>,
    /// Calls to the embedding model.
    pub embedding_calls: Counter,
    /// Task embeddings served from the cache.
    pub cache_hits: Counter,
    /// Decisions that fell back to deterministic signals (the model failed or was too slow).
    pub fallbacks: Counter,
    /// Untrusted entries flagged by injection screening.
    pub flagged_entries: Counter,
    /// Index reloads, by outcome.
    pub reloads: Family<ReloadLabels, Counter>,
    /// How many times the index was (re)loaded since start, 1 after the first load.
    pub index_generation: Gauge,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("switchyard");
        // 0.25 ms to ~8 s: an in-process route is ~0.1-3 ms, a cold reload seconds.
        let latency = Family::<EndpointLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.000_25, 2.0, 16))
        });
        let m = Self {
            requests: Family::default(),
            latency,
            embedding_calls: Counter::default(),
            cache_hits: Counter::default(),
            fallbacks: Counter::default(),
            flagged_entries: Counter::default(),
            reloads: Family::default(),
            index_generation: Gauge::default(),
            registry: Registry::default(),
        };
        registry.register("requests", "HTTP requests answered", m.requests.clone());
        registry.register(
            "request_duration_seconds",
            "Time to answer a request",
            m.latency.clone(),
        );
        registry.register(
            "embedding_calls",
            "Calls to the embedding model",
            m.embedding_calls.clone(),
        );
        registry.register(
            "task_cache_hits",
            "Task embeddings served from the cache",
            m.cache_hits.clone(),
        );
        registry.register(
            "fallbacks",
            "Decisions that fell back to deterministic signals",
            m.fallbacks.clone(),
        );
        registry.register(
            "flagged_entries",
            "Untrusted entries flagged by injection screening",
            m.flagged_entries.clone(),
        );
        registry.register(
            "index_reloads",
            "Index reloads after the file changed",
            m.reloads.clone(),
        );
        registry.register(
            "index_generation",
            "Index loads since start (1 after the first)",
            m.index_generation.clone(),
        );
        Self { registry, ..m }
    }
}

impl Metrics {
    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Counts what one routing decision did.
    pub fn record_decision(&self, d: &switchyard_router::Decision) {
        self.embedding_calls.inc_by(u64::from(d.metrics.embedding_calls));
        if d.metrics.cache_hit {
            self.cache_hits.inc();
        }
        if d.fallback_reason.is_some() {
            self.fallbacks.inc();
        }
    }
}
