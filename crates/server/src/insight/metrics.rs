//! The Prometheus metrics (`GET /metrics`), kept with the `prometheus-client` crate and
//! written in the Prometheus text exposition format. Names follow Prometheus conventions:
//! `tablestore_` prefix, base units, `_total` counters; labels are bounded sets (operation
//! names, status classes, query classes), never keys or table names.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use super::class::QueryClass;
use super::{Event, Report};
use crate::store::Footprint;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    operation: &'static str,
    status_class: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabel {
    operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassLabel {
    class: &'static str,
}

fn latency_histogram() -> Histogram {
    // 100 µs … ~6.5 s
    Histogram::new(exponential_buckets(0.0001, 3.0, 11))
}

fn batch_histogram() -> Histogram {
    Histogram::new([1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 90.0, 100.0])
}

pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<OperationLabel, Histogram, fn() -> Histogram>,
    queries: Family<ClassLabel, Counter>,
    examined: Counter,
    returned: Counter,
    written: Counter,
    batch_operations: Histogram,
    advice: Gauge,
    dropped: Counter,
    flushes: Counter,
    store_size: Gauge,
    store_logical: Gauge,
    store_entities: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<OperationLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let queries = Family::<ClassLabel, Counter>::default();
        let (examined, returned, written) =
            (Counter::default(), Counter::default(), Counter::default());
        let batch_operations = batch_histogram();
        let advice = Gauge::default();
        let dropped = Counter::default();
        let flushes = Counter::default();
        let store_size = Gauge::default();
        let store_logical = Gauge::default();
        let store_entities = Gauge::default();
        registry.register(
            "tablestore_requests",
            "Requests by operation and status class",
            requests.clone(),
        );
        registry.register(
            "tablestore_request_duration_seconds",
            "Time from request to response, by operation",
            latency.clone(),
        );
        registry.register(
            "tablestore_queries",
            "Entity and table queries by design-guide query class",
            queries.clone(),
        );
        registry.register(
            "tablestore_entities_examined",
            "Entities read by queries",
            examined.clone(),
        );
        registry.register(
            "tablestore_entities_returned",
            "Entities returned by queries",
            returned.clone(),
        );
        registry.register(
            "tablestore_entities_written",
            "Entities inserted, updated or deleted",
            written.clone(),
        );
        registry.register(
            "tablestore_batch_operations",
            "Operations per entity group transaction",
            batch_operations.clone(),
        );
        registry.register(
            "tablestore_advice_active",
            "Design advice currently raised (per table and rule, or per account)",
            advice.clone(),
        );
        registry.register(
            "tablestore_insight_dropped_observations",
            "Observations dropped because the statistics queue was full",
            dropped.clone(),
        );
        registry.register(
            "tablestore_group_commit_flushes",
            "Store flushes made by the group commit",
            flushes.clone(),
        );
        registry.register(
            "tablestore_store_size_bytes",
            "Bytes of the store's files on disk (0 in memory)",
            store_size.clone(),
        );
        registry.register(
            "tablestore_store_logical_bytes",
            "Bytes of the stored entities' keys and encoded values (the data itself)",
            store_logical.clone(),
        );
        registry.register(
            "tablestore_store_entities",
            "Entities stored, in all tables",
            store_entities.clone(),
        );
        for class in QueryClass::ALL {
            let _ = queries.get_or_create(&ClassLabel {
                class: class.label(),
            });
        }
        Metrics {
            registry,
            requests,
            latency,
            queries,
            examined,
            returned,
            written,
            batch_operations,
            advice,
            dropped,
            flushes,
            store_size,
            store_logical,
            store_entities,
        }
    }
}

fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

impl Metrics {
    pub(crate) fn record(&self, report: &Report) {
        self.requests
            .get_or_create(&RequestLabels {
                operation: report.operation,
                status_class: status_class(report.status),
            })
            .inc();
        self.latency
            .get_or_create(&OperationLabel {
                operation: report.operation,
            })
            .observe(report.latency.as_secs_f64());
        let Some(o) = &report.observation else {
            return;
        };
        match &o.event {
            Event::Query {
                class,
                examined,
                returned,
                ..
            } => {
                self.queries
                    .get_or_create(&ClassLabel {
                        class: class.label(),
                    })
                    .inc();
                self.examined.inc_by(*examined);
                self.returned.inc_by(*returned);
            }
            Event::Read { .. } => {
                self.examined.inc();
                self.returned.inc();
            }
            Event::Write { entities, batch } => {
                self.written.inc_by(entities.len() as u64);
                if let Some(b) = batch {
                    self.batch_operations.observe(b.operations as f64);
                }
            }
        }
    }

    pub(crate) fn dropped(&self) {
        self.dropped.inc();
    }

    /// Values read at scrape time, then the text exposition.
    pub(crate) fn encode(&self, advice: usize, flushes: u64, store: Option<Footprint>) -> String {
        self.advice.set(advice as i64);
        let seen = self.flushes.get();
        if flushes > seen {
            self.flushes.inc_by(flushes - seen);
        }
        let store = store.unwrap_or_default();
        self.store_size.set(store.disk_bytes.unwrap_or(0) as i64);
        self.store_logical.set(store.logical_bytes as i64);
        self.store_entities.set(store.entities as i64);
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}
