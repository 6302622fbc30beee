//! Design insight: the Azure design guide's verdict on the traffic this server sees.
//!
//! - [`class`]: the guide's query classes (point query, range query, partition scan, table
//!   scan, plus this server's union of key ranges), from the query planner's ranges.
//! - [`stats`]: statistics since start per account, table and partition, in bounded memory
//!   (counters, sliding windows, Space-Saving top-K in [`topk`], [`window`]).
//! - [`advice`]: rules citing the guide's sections, evaluated as observations arrive.
//! - [`metrics`]: the same observations as Prometheus metrics.
//!
//! What a request did is read from the executor's outcome as an [`Observation`]
//! ([`Observation::from_outcome`]); the server hands each finished request to
//! [`Insight::report`], which only tries to queue it: one thread does all the counting, so
//! insight never blocks a request (a full queue drops the report and counts the drop).
//! Depends on `model`, `query` (plan types), the filter AST, `exec` (its outcomes) and
//! `store::Footprint` (the store size `/metrics` reports).

pub(crate) mod advice;
pub(crate) mod class;
pub(crate) mod metrics;
pub(crate) mod stats;
pub(crate) mod topk;
pub(crate) mod window;

use parking_lot::Mutex;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) use class::QueryClass;

use crate::exec::{BatchOutcome, Outcome};
use crate::model::limits::entity_size;
use crate::model::{WriteKind, WriteOp};
use crate::protocol::dialect::Dialect;

/// Reports waiting for the statistics thread; beyond this they are dropped (and counted).
const QUEUE: usize = 16 * 1024;

/// The log target of advice lines.
pub(crate) const ADVICE_LOG_TARGET: &str = "tablestore::advice";

/// What one successful request did to one table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Observation {
    pub(crate) account: String,
    pub(crate) table: String,
    pub(crate) event: Event,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    /// Query Entities (or Query Tables, with the account's table list as `table`).
    Query {
        class: QueryClass,
        examined: u64,
        returned: u64,
        /// The one partition a point, range or partition-scan query reads.
        partition: Option<String>,
        /// Properties the filter compares, keys included.
        properties: Vec<String>,
        /// A first page that `$top` cut short, of a query not pinned to one entity: it
        /// returned "the first N" matches in the service's order (key order in Table storage,
        /// none in Cosmos DB for Table; `class::top_first_n`).
        top_first_n: bool,
    },
    /// Get Entity.
    Read { partition: String },
    /// Entity writes, one or (in a batch) several.
    Write {
        entities: Vec<EntityFacts>,
        batch: Option<BatchFacts>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntityFacts {
    pub(crate) partition: String,
    /// Size by the service's accounting formula.
    pub(crate) size: usize,
    pub(crate) properties: usize,
    /// Insert (or an upsert): counts towards the prepend/append rule.
    pub(crate) inserted: bool,
    pub(crate) deleted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchFacts {
    pub(crate) operations: usize,
    pub(crate) body_bytes: usize,
}

impl Observation {
    /// A query's observation.
    pub(crate) fn query(
        account: &str,
        table: &str,
        class: QueryClass,
        examined: u64,
        returned: u64,
        partition: Option<String>,
        properties: Vec<String>,
    ) -> Observation {
        Observation {
            account: account.to_string(),
            table: table.to_string(),
            event: Event::Query {
                class,
                examined,
                returned,
                partition,
                properties,
                top_first_n: false,
            },
        }
    }

    /// What a successful operation did, from its outcome (`None` for operations insight
    /// does not count: table, ACL and service operations, a query batch, a failed change set).
    pub(crate) fn from_outcome(outcome: &Outcome) -> Option<Observation> {
        match outcome {
            // The account's table list is observed as the (reserved, so never a real table)
            // `Tables`.
            Outcome::Tables(tables) => Some(Observation::query(
                &tables.account,
                "Tables",
                QueryClass::of_table_plan(&tables.page.plan),
                tables.page.examined,
                tables.page.names.len() as u64,
                None,
                Vec::new(),
            )),
            Outcome::Entities(q) => {
                let class = QueryClass::of_plan(&q.plan);
                let mut o = Observation::query(
                    &q.table.account,
                    &q.table.name,
                    class,
                    q.page.examined,
                    q.page.rows.len() as u64,
                    class::single_partition(&q.plan),
                    class::filtered_properties(q.filter.as_deref()),
                );
                if let Event::Query { top_first_n, .. } = &mut o.event {
                    *top_first_n = class::top_first_n(
                        class,
                        q.first_page,
                        q.top,
                        q.page.rows.len(),
                        q.page.next.is_some() || q.unordered_next.is_some(),
                    );
                }
                Some(o)
            }
            Outcome::Entity { table, entity } => Some(Observation {
                account: table.account.clone(),
                table: table.name.clone(),
                event: Event::Read {
                    partition: entity.partition_key.clone(),
                },
            }),
            Outcome::Written(w) => Some(Observation::writes(
                &w.table.account,
                &w.table.name,
                std::slice::from_ref(&w.op),
                None,
            )),
            Outcome::Batch(BatchOutcome::Applied(applied)) => {
                let facts = BatchFacts {
                    operations: applied.ops.len(),
                    body_bytes: applied.size,
                };
                let table = &applied.table;
                Some(Observation::writes(
                    &table.account,
                    &table.name,
                    &applied.ops,
                    Some(facts),
                ))
            }
            _ => None,
        }
    }

    /// The observation of committed writes (`batch` for an entity group transaction).
    pub(crate) fn writes(
        account: &str,
        table: &str,
        ops: &[WriteOp],
        batch: Option<BatchFacts>,
    ) -> Observation {
        let entities = ops
            .iter()
            .map(|op| EntityFacts {
                partition: op.key.partition_key.clone(),
                size: entity_size(&op.key.partition_key, &op.key.row_key, &op.properties),
                properties: op.properties.len(),
                inserted: matches!(
                    op.kind,
                    WriteKind::Insert | WriteKind::InsertOrReplace | WriteKind::InsertOrMerge
                ),
                deleted: op.kind == WriteKind::Delete,
            })
            .collect();
        Observation {
            account: account.to_string(),
            table: table.to_string(),
            event: Event::Write { entities, batch },
        }
    }
}

/// One finished request, as the server reports it.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    /// The REST operation's name (`QueryEntities`, …) or `Other`.
    pub(crate) operation: &'static str,
    pub(crate) status: u16,
    pub(crate) latency: Duration,
    /// The account that was charged a transaction (authenticated requests only).
    pub(crate) account: Option<String>,
    /// Present when the request succeeded and touched a table.
    pub(crate) observation: Option<Observation>,
}

struct Shared {
    started: Instant,
    stats: Mutex<stats::Stats>,
    metrics: metrics::Metrics,
}

/// The handle the server keeps: queue reports, read snapshots.
#[derive(Clone)]
pub(crate) struct Insight {
    queue: SyncSender<Report>,
    shared: Arc<Shared>,
}

impl Insight {
    /// Starts the statistics thread for a Table storage server; it ends when the last
    /// handle is dropped.
    #[cfg(test)]
    pub(crate) fn start() -> Insight {
        Insight::start_as(&crate::protocol::dialect::STORAGE)
    }

    /// Starts the statistics thread, its advice for the service the server answers as.
    pub(crate) fn start_as(dialect: &'static Dialect) -> Insight {
        let (queue, rx) = sync_channel(QUEUE);
        let shared = Arc::new(Shared {
            started: Instant::now(),
            stats: Mutex::new(stats::Stats::for_dialect(dialect)),
            metrics: metrics::Metrics::default(),
        });
        let worker = Arc::clone(&shared);
        // If the thread cannot start the queue fills and reports are dropped (and counted);
        // requests are unaffected.
        let _ = std::thread::Builder::new()
            .name("tablestore-insight".into())
            .spawn(move || count(rx, worker));
        Insight { queue, shared }
    }

    /// Queues a finished request's report without waiting.
    pub(crate) fn report(&self, report: Report) {
        match self.queue.try_send(report) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.shared.metrics.dropped(),
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    fn now(&self) -> u64 {
        self.shared.started.elapsed().as_secs()
    }

    /// The statistics and advice (of one account when given) as JSON.
    pub(crate) fn snapshot(&self, account: Option<&str>) -> serde_json::Value {
        let stats = self.shared.stats.lock();
        stats.snapshot(self.now(), account)
    }

    /// The Prometheus text exposition, with the group commit's flush count and the store's
    /// size read by the caller at scrape time.
    pub(crate) fn metrics(&self, flushes: u64, store: Option<crate::store::Footprint>) -> String {
        let advice = {
            let stats = self.shared.stats.lock();
            stats.active_advice().len()
        };
        self.shared.metrics.encode(advice, flushes, store)
    }

    /// Forgets the statistics and advice of one account's tables (every account's when
    /// `None`): its data was reset or restored, so what was learnt about it no longer holds.
    /// Queued behind the reports of the requests before it, without waiting for them.
    pub(crate) fn forget(&self, account: Option<&str>) {
        let marker = Report {
            operation: FORGET,
            status: 0,
            latency: Duration::ZERO,
            account: account.map(str::to_string),
            observation: None,
        };
        if let Err(TrySendError::Full(_)) = self.queue.try_send(marker) {
            // A queue that full is dropping reports anyway: forget now.
            self.shared.stats.lock().forget(account);
        }
    }

    /// Waits until every report queued so far has been counted (tests and the endpoint's
    /// `?sync` option read their own writes with it); gives up after `timeout`.
    pub(crate) fn settle(&self, timeout: Duration) -> bool {
        let (tx, rx) = std::sync::mpsc::channel();
        let marker = Report {
            operation: SETTLE,
            status: 0,
            latency: Duration::ZERO,
            account: None,
            observation: None,
        };
        {
            let mut stats = self.shared.stats.lock();
            stats.settle_waiters.push(tx);
        }
        let deadline = Instant::now() + timeout;
        loop {
            match self.queue.try_send(marker.clone()) {
                Ok(()) => break,
                Err(TrySendError::Full(_)) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(_) => return false,
            }
        }
        rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_ok()
    }
}

/// Marker operation of [`Insight::settle`].
const SETTLE: &str = "_settle";
/// Marker operation of [`Insight::forget`] (its account: the one to forget, `None` all).
const FORGET: &str = "_forget";

/// How long the counting thread rests after emptying the queue: requests then queue their
/// reports without waking it (a wake-up per request was 3 % of a single insert's CPU).
/// Reports wait at most this long to be counted; [`Insight::settle`] waits for them.
const REST: Duration = Duration::from_millis(2);

fn count(rx: Receiver<Report>, shared: Arc<Shared>) {
    while let Ok(first) = rx.recv() {
        count_one(first, &shared);
        while let Ok(report) = rx.try_recv() {
            count_one(report, &shared);
        }
        std::thread::sleep(REST);
    }
}

fn count_one(report: Report, shared: &Shared) {
    let now = shared.started.elapsed().as_secs();
    let mut stats = shared.stats.lock();
    if report.operation == SETTLE {
        for w in stats.settle_waiters.drain(..) {
            let _ = w.send(());
        }
        return;
    }
    if report.operation == FORGET {
        stats.forget(report.account.as_deref());
        return;
    }
    shared.metrics.record(&report);
    let mut fired = Vec::new();
    if let Some(account) = &report.account {
        fired.extend(stats.transaction(account, now));
    }
    if let Some(o) = &report.observation {
        fired.extend(stats.observe(o, now));
    }
    drop(stats);
    for a in fired {
        let info = a.rule.info();
        tracing::warn!(
            target: ADVICE_LOG_TARGET,
            account = %a.account,
            table = a.table.as_deref().unwrap_or("-"),
            rule = info.id,
            guide = %format!("{}: {}", info.guide_page, info.guide_section),
            observed = %a.example,
            "design advice: {} {}",
            info.problem,
            info.suggestion
        );
    }
}

#[cfg(test)]
mod tests;
