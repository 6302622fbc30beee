//! The benchmark run: table setup, preload, one timed phase per workload, measurement.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use tokio::time::Instant;

use crate::cli::{LoadMode, RunArgs, Workload};
use crate::client::{ClientConfig, Conn, Extra, RequestError, Response};
use crate::data::{
    batch_insert_body, batch_statuses, count_entities, encode_query_value, entity_json, merge_json,
    pk, rk, Layout, Rng, BUCKETS,
};
use crate::hist::Histogram;
use crate::procstat;
use crate::report::{
    DataDirReport, Latency, LoadReport, RunReport, ServerReport, Settings, TimelinePoint,
    WorkloadReport, WorkloadServer,
};

/// Most pages one query operation follows (each page also counts against its time bound).
const MAX_PAGES: u64 = 1_000_000;
/// Most operations of one phase when --ops does not set fewer (the time limit is the other
/// bound).
const HARD_OP_CAP: u64 = 1_000_000_000;
/// Extra time allowed after a phase's deadline for the requests still in flight.
const TAIL: Duration = Duration::from_secs(5);

pub struct Ctx {
    pub client: Arc<ClientConfig>,
    pub args: RunArgs,
    pub run_id: String,
    pub threads: usize,
    created: Mutex<Vec<String>>,
    load_mode: Mutex<Option<LoadMode>>,
    merge: Method,
    /// The server answered `/metrics` without a logical size: do not ask again.
    no_metrics: std::sync::atomic::AtomicBool,
}

/// The value of an unlabelled sample `name` in a Prometheus text exposition.
pub fn metric_value(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?.strip_prefix(' ')?;
        let v: f64 = rest.split_whitespace().next()?.parse().ok()?;
        (v >= 0.0).then_some(v as u64)
    })
}

/// What one operation of a phase does.
#[derive(Debug, Clone)]
enum Job {
    Insert {
        table: String,
        partitions: u64,
    },
    PointRead {
        table: String,
        layout: Layout,
    },
    Upsert {
        table: String,
        layout: Layout,
    },
    Merge {
        table: String,
        layout: Layout,
    },
    Delete {
        table: String,
        layout: Layout,
    },
    BatchInsert {
        table: String,
        partitions: u64,
    },
    RangeQuery {
        table: String,
        layout: Layout,
    },
    ScanFilter {
        table: String,
        layout: Layout,
    },
    Load {
        table: String,
        layout: Layout,
        batch: bool,
    },
}

impl Job {
    /// Size of the index space that operations claim in order; `None` = unbounded/random.
    fn index_limit(&self, batch_size: u64) -> Option<u64> {
        match self {
            Job::Delete { layout, .. } => Some(layout.slots()),
            Job::Load {
                layout,
                batch: true,
                ..
            } => Some(layout.batch_count(batch_size)),
            Job::Load {
                layout,
                batch: false,
                ..
            } => Some(layout.slots()),
            _ => None,
        }
    }
}

enum Outcome {
    Ok {
        entities: u64,
        rows: u64,
        bad: bool,
    },
    Err {
        label: String,
        detail: String,
    },
    /// An empty slot of the index space: nothing was sent.
    Skip,
}

#[derive(Default)]
struct Stats {
    hist: Histogram,
    ok: u64,
    failed: u64,
    entities: u64,
    rows: u64,
    bad: u64,
    errors: BTreeMap<String, u64>,
    sample: Option<String>,
    exhausted: bool,
    ops_limited: bool,
}

impl Stats {
    fn merge(&mut self, o: Stats) {
        self.hist.merge(&o.hist);
        self.ok += o.ok;
        self.failed += o.failed;
        self.entities += o.entities;
        self.rows += o.rows;
        self.bad += o.bad;
        for (k, v) in o.errors {
            *self.errors.entry(k).or_default() += v;
        }
        if self.sample.is_none() {
            self.sample = o.sample;
        }
        self.exhausted |= o.exhausted;
        self.ops_limited |= o.ops_limited;
    }
}

/// Counters that live across the warm-up and measured phases of a workload.
#[derive(Default)]
struct Shared {
    next: AtomicU64,
    entities_done: AtomicU64,
}

struct Phase {
    deadline: Instant,
    max_ops: u64,
    record: bool,
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.clamp(0.0, 1.0e7))
}

fn progress(ctx: &Ctx, msg: &str) {
    if !ctx.args.quiet {
        eprintln!("[tablestore-bench] {msg}");
    }
}

fn fail(status_or_label: impl Into<String>, detail: String) -> Outcome {
    Outcome::Err {
        label: status_or_label.into(),
        detail,
    }
}

fn http_fail(what: &str, r: &Response) -> Outcome {
    let body = String::from_utf8_lossy(&r.body[..r.body.len().min(300)]).into_owned();
    fail(
        r.status.to_string(),
        format!("{} on {what}: {body}", r.status),
    )
}

fn io_fail(what: &str, e: RequestError) -> Outcome {
    fail(e.label(), format!("{e} on {what}"))
}

fn entity_path(table: &str, pk: &str, rk: &str) -> String {
    format!("/{table}(PartitionKey='{pk}',RowKey='{rk}')")
}

const JSON: &str = "application/json";

impl Ctx {
    pub fn new(client: Arc<ClientConfig>, args: RunArgs, threads: usize) -> Ctx {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let mut r = Rng::new(nanos ^ u64::from(std::process::id()));
        let run_id = format!("{:08x}", r.next_u64() as u32);
        Ctx {
            client,
            args,
            run_id,
            threads,
            created: Mutex::new(Vec::new()),
            load_mode: Mutex::new(None),
            merge: Method::from_bytes(b"MERGE").unwrap_or(Method::PATCH),
            no_metrics: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn table_name(&self, kind: &str) -> String {
        format!("{}{kind}{}", self.args.table_prefix, self.run_id)
    }

    fn remember(&self, table: &str) {
        let mut g = self.created.lock();
        g.push(table.to_string());
    }

    /// Creates `table`; `Ok(false)` when it existed already.
    async fn create_table(&self, conn: &mut Conn, table: &str) -> Result<bool, String> {
        let body = format!("{{\"TableName\":\"{table}\"}}");
        let extra = Extra {
            content_type: Some(JSON),
            prefer_no_content: true,
            ..Extra::default()
        };
        let r = conn
            .send(Method::POST, "/Tables", None, &extra, Bytes::from(body))
            .await
            .map_err(|e| format!("create table {table}: {e}"))?;
        match r.status {
            201 | 204 => Ok(true),
            409 => Ok(false),
            s => Err(format!(
                "create table {table}: HTTP {s}: {}",
                String::from_utf8_lossy(&r.body[..r.body.len().min(300)])
            )),
        }
    }

    async fn new_table(&self, conn: &mut Conn, kind: &str) -> Result<String, String> {
        let t = self.table_name(kind);
        self.create_table(conn, &t).await?;
        self.remember(&t);
        Ok(t)
    }

    /// The server's logical data size, if it publishes one: tablestore's
    /// `tablestore_store_logical_bytes` in `GET /metrics` (signed like any request). A
    /// server without it (Azurite) is asked once.
    pub async fn logical_bytes(&self) -> Option<u64> {
        if self.no_metrics.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        let mut conn = Conn::new(self.client.clone());
        let extra = Extra {
            from_root: true,
            ..Extra::default()
        };
        let found = match conn
            .send(Method::GET, "/metrics", None, &extra, Bytes::new())
            .await
        {
            Ok(r) if r.status == 200 => metric_value(
                &String::from_utf8_lossy(&r.body),
                "tablestore_store_logical_bytes",
            ),
            _ => None,
        };
        if found.is_none() {
            self.no_metrics
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        found
    }

    /// Deletes the tables this run created (unless --keep-tables).
    pub async fn cleanup(&self) {
        if self.args.keep_tables {
            return;
        }
        let tables: Vec<String> = {
            let g = self.created.lock();
            g.clone()
        };
        let mut conn = Conn::new(self.client.clone());
        for t in tables {
            let path = format!("/Tables('{t}')");
            match conn
                .send(Method::DELETE, &path, None, &Extra::default(), Bytes::new())
                .await
            {
                Ok(r) if r.status == 204 || r.status == 404 => {}
                Ok(r) => progress(
                    self,
                    &format!("could not delete table {t}: HTTP {}", r.status),
                ),
                Err(e) => progress(self, &format!("could not delete table {t}: {e}")),
            }
        }
    }

    async fn execute(&self, job: &Job, conn: &mut Conn, rng: &mut Rng, n: u64) -> Outcome {
        match job {
            Job::Insert { table, partitions } => {
                let (p, r) = (pk(n % partitions), format!("i{n:012}"));
                self.insert(conn, table, &entity_json(&p, &r, n, 0)).await
            }
            Job::PointRead { table, layout } => {
                let (p, j) = pick(layout, rng);
                let path = entity_path(table, &pk(p), &rk(j));
                match conn
                    .send(Method::GET, &path, None, &Extra::default(), Bytes::new())
                    .await
                {
                    Ok(r) if r.status == 200 => {
                        let rows = count_entities(&r.body);
                        Outcome::Ok {
                            entities: 1,
                            rows,
                            bad: rows != 1,
                        }
                    }
                    Ok(r) => http_fail("point read", &r),
                    Err(e) => io_fail("point read", e),
                }
            }
            Job::Upsert { table, layout } => {
                let (p, j) = pick(layout, rng);
                let (pks, rks) = (pk(p), rk(j));
                let body = entity_json(&pks, &rks, layout.index(p, j), rng.next_u64());
                let extra = Extra {
                    content_type: Some(JSON),
                    ..Extra::default()
                };
                let path = entity_path(table, &pks, &rks);
                self.write(conn, Method::PUT, &path, &extra, body, "upsert")
                    .await
            }
            Job::Merge { table, layout } => {
                let (p, j) = pick(layout, rng);
                let extra = Extra {
                    content_type: Some(JSON),
                    if_match: Some("*"),
                    ..Extra::default()
                };
                let path = entity_path(table, &pk(p), &rk(j));
                let body = merge_json(rng.next_u64());
                self.write(conn, self.merge.clone(), &path, &extra, body, "merge")
                    .await
            }
            Job::Delete { table, layout } => {
                let Some((p, j)) = layout.nth(n) else {
                    return Outcome::Skip;
                };
                let extra = Extra {
                    if_match: Some("*"),
                    ..Extra::default()
                };
                let path = entity_path(table, &pk(p), &rk(j));
                self.write(conn, Method::DELETE, &path, &extra, String::new(), "delete")
                    .await
            }
            Job::BatchInsert { table, partitions } => {
                let p = pk(n % partitions);
                let es: Vec<String> = (0..self.args.batch_size)
                    .map(|k| entity_json(&p, &format!("b{n:010}-{k:03}"), n * 100 + k, 0))
                    .collect();
                self.batch(conn, table, &es).await
            }
            Job::Load {
                table,
                layout,
                batch: true,
            } => {
                let Some((p, rows)) = layout.batch(n, self.args.batch_size) else {
                    return Outcome::Skip;
                };
                let pks = pk(p);
                let es: Vec<String> = rows
                    .map(|j| entity_json(&pks, &rk(j), layout.index(p, j), 0))
                    .collect();
                self.batch(conn, table, &es).await
            }
            Job::Load {
                table,
                layout,
                batch: false,
            } => {
                let Some((p, j)) = layout.nth(n) else {
                    return Outcome::Skip;
                };
                let body = entity_json(&pk(p), &rk(j), layout.index(p, j), 0);
                self.insert(conn, table, &body).await
            }
            Job::RangeQuery { table, layout } => {
                let p = rng.below(layout.used_partitions());
                let rows = layout.rows_in(p);
                let width = self.args.range_rows.min(rows);
                let j0 = rng.below(rows - width + 1);
                let filter = format!(
                    "PartitionKey eq '{}' and RowKey ge '{}' and RowKey lt '{}'",
                    pk(p),
                    rk(j0),
                    rk(j0 + width)
                );
                self.query(conn, table, &filter, width).await
            }
            Job::ScanFilter { table, layout } => {
                let b = rng.below(BUCKETS);
                let filter = format!("Bucket eq {b}");
                self.query(conn, table, &filter, layout.bucket_matches(b))
                    .await
            }
        }
    }

    async fn insert(&self, conn: &mut Conn, table: &str, body: &str) -> Outcome {
        let extra = Extra {
            content_type: Some(JSON),
            prefer_no_content: true,
            ..Extra::default()
        };
        let path = format!("/{table}");
        self.write(
            conn,
            Method::POST,
            &path,
            &extra,
            body.to_string(),
            "insert",
        )
        .await
    }

    async fn write(
        &self,
        conn: &mut Conn,
        method: Method,
        path: &str,
        extra: &Extra<'_>,
        body: String,
        what: &str,
    ) -> Outcome {
        match conn
            .send(method, path, None, extra, Bytes::from(body))
            .await
        {
            Ok(r) if (200..300).contains(&r.status) => Outcome::Ok {
                entities: 1,
                rows: 0,
                bad: false,
            },
            Ok(r) => http_fail(what, &r),
            Err(e) => io_fail(what, e),
        }
    }

    async fn batch(&self, conn: &mut Conn, table: &str, entities: &[String]) -> Outcome {
        let (ct, body) = batch_insert_body(&conn.target().base_url, table, entities);
        let extra = Extra {
            content_type: Some(&ct),
            ..Extra::default()
        };
        let r = match conn
            .send(Method::POST, "/$batch", None, &extra, Bytes::from(body))
            .await
        {
            Ok(r) => r,
            Err(e) => return io_fail("$batch", e),
        };
        if r.status != 202 {
            return http_fail("$batch", &r);
        }
        let codes = batch_statuses(&r.body);
        let n = entities.len() as u64;
        if let Some(bad) = codes.iter().find(|c| !(200..300).contains(*c)) {
            let body = String::from_utf8_lossy(&r.body[..r.body.len().min(600)]).into_owned();
            return fail(
                format!("batch:{bad}"),
                format!("sub-response {bad} in $batch: {body}"),
            );
        }
        if codes.len() as u64 != n {
            return fail(
                "batch:count",
                format!(
                    "$batch answered {} sub-responses for {n} inserts",
                    codes.len()
                ),
            );
        }
        Outcome::Ok {
            entities: n,
            rows: 0,
            bad: false,
        }
    }

    /// Runs a query to the end of its continuation chain; `bad` when the row count differs
    /// from `expected`.
    async fn query(&self, conn: &mut Conn, table: &str, filter: &str, expected: u64) -> Outcome {
        let path = format!("/{table}()");
        let base = format!("$filter={}", encode_query_value(filter));
        let started = Instant::now();
        let limit = secs(self.args.scan_timeout);
        let mut rows = 0u64;
        let mut query = base.clone();
        for _ in 0..MAX_PAGES {
            let r = match conn
                .send(
                    Method::GET,
                    &path,
                    Some(&query),
                    &Extra::default(),
                    Bytes::new(),
                )
                .await
            {
                Ok(r) => r,
                Err(e) => return io_fail("query", e),
            };
            if r.status != 200 {
                return http_fail("query", &r);
            }
            rows += count_entities(&r.body);
            let header = |name: &str| {
                r.headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
            };
            let Some(npk) = header("x-ms-continuation-nextpartitionkey") else {
                return Outcome::Ok {
                    entities: rows,
                    rows,
                    bad: rows != expected,
                };
            };
            query = format!("{base}&NextPartitionKey={}", encode_query_value(&npk));
            if let Some(nrk) = header("x-ms-continuation-nextrowkey") {
                query.push_str("&NextRowKey=");
                query.push_str(&encode_query_value(&nrk));
            }
            if started.elapsed() > limit {
                return fail(
                    "query-time-cap",
                    format!("query {filter:?} still had pages after {limit:?}"),
                );
            }
        }
        fail(
            "query-page-cap",
            format!("query {filter:?} had more than {MAX_PAGES} pages"),
        )
    }

    async fn worker(
        self: Arc<Ctx>,
        job: Arc<Job>,
        shared: Arc<Shared>,
        budget: Arc<AtomicU64>,
        phase: Arc<Phase>,
        mut conn: Conn,
        mut rng: Rng,
    ) -> (Stats, Conn) {
        let mut st = Stats::default();
        let limit = job.index_limit(self.args.batch_size);
        // Bounded by the deadline, the op budget and the index space.
        while Instant::now() < phase.deadline {
            if budget.fetch_add(1, Ordering::Relaxed) >= phase.max_ops {
                st.ops_limited = true;
                break;
            }
            let n = match limit {
                Some(lim) => {
                    let n = shared.next.fetch_add(1, Ordering::Relaxed);
                    if n >= lim {
                        st.exhausted = true;
                        break;
                    }
                    n
                }
                None => shared.next.fetch_add(1, Ordering::Relaxed),
            };
            let t0 = Instant::now();
            let out = self.execute(&job, &mut conn, &mut rng, n).await;
            let micros = t0.elapsed().as_micros() as u64;
            match out {
                Outcome::Skip => {}
                Outcome::Ok {
                    entities,
                    rows,
                    bad,
                } => {
                    shared.entities_done.fetch_add(entities, Ordering::Relaxed);
                    if phase.record {
                        st.hist.record(micros);
                        st.ok += 1;
                        st.entities += entities;
                        st.rows += rows;
                        st.bad += u64::from(bad);
                    }
                }
                Outcome::Err { label, detail } => {
                    if phase.record {
                        st.failed += 1;
                        *st.errors.entry(label).or_default() += 1;
                        if st.sample.is_none() {
                            st.sample = Some(detail);
                        }
                    }
                }
            }
        }
        (st, conn)
    }

    /// Runs `job` on every connection until the phase ends; returns the merged stats.
    async fn run_phase(
        self: &Arc<Ctx>,
        job: &Arc<Job>,
        shared: &Arc<Shared>,
        conns: &mut Vec<Conn>,
        phase: Phase,
        seed: u64,
    ) -> Stats {
        let phase = Arc::new(phase);
        let budget = Arc::new(AtomicU64::new(0));
        let mut handles = Vec::with_capacity(conns.len());
        for (i, conn) in conns.drain(..).enumerate() {
            let rng = Rng::new(seed ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
            handles.push(tokio::spawn(Ctx::worker(
                self.clone(),
                job.clone(),
                shared.clone(),
                budget.clone(),
                phase.clone(),
                conn,
                rng,
            )));
        }
        let mut total = Stats::default();
        for h in handles {
            match h.await {
                Ok((st, conn)) => {
                    total.merge(st);
                    conns.push(conn);
                }
                Err(e) => {
                    total.failed += 1;
                    *total.errors.entry("client-panic".into()).or_default() += 1;
                    total.sample.get_or_insert_with(|| e.to_string());
                    conns.push(Conn::new(self.client.clone()));
                }
            }
        }
        total
    }

    fn connections(&self) -> Vec<Conn> {
        (0..self.args.concurrency)
            .map(|_| Conn::new(self.client.clone()))
            .collect()
    }

    /// Decides how tables are loaded; in `auto` mode by sending batch 0 of `layout`.
    /// Returns the mode and whether batch 0 was already written.
    async fn decide_load_mode(
        &self,
        conn: &mut Conn,
        table: &str,
        layout: &Layout,
    ) -> (LoadMode, bool) {
        let known = *self.load_mode.lock();
        let mode = known.unwrap_or(self.args.preload);
        if mode != LoadMode::Auto {
            return (mode, false);
        }
        let job = Job::Load {
            table: table.to_string(),
            layout: *layout,
            batch: true,
        };
        let mut rng = Rng::new(0);
        let decided = match self.execute(&job, conn, &mut rng, 0).await {
            Outcome::Ok { .. } | Outcome::Skip => (LoadMode::Batch, true),
            Outcome::Err { detail, .. } => {
                progress(
                    self,
                    &format!("$batch does not work here ({detail}); loading with single inserts"),
                );
                (LoadMode::Single, false)
            }
        };
        *self.load_mode.lock() = Some(decided.0);
        decided
    }

    /// Fills `table` with `layout`; `what` names it in progress lines.
    async fn load(
        self: &Arc<Ctx>,
        table: &str,
        layout: Layout,
        what: &str,
    ) -> Result<LoadReport, String> {
        let mut conns = self.connections();
        let first = conns
            .first_mut()
            .ok_or_else(|| "no connection".to_string())?;
        let started = Instant::now();
        let (mode, first_done) = self.decide_load_mode(first, table, &layout).await;
        let batch = mode != LoadMode::Single;
        let shared = Arc::new(Shared::default());
        if first_done {
            shared.next.store(1, Ordering::Relaxed);
            let first_batch = layout
                .batch(0, self.args.batch_size)
                .map(|(_, r)| r.end - r.start)
                .unwrap_or(0);
            shared.entities_done.store(first_batch, Ordering::Relaxed);
        }
        progress(
            self,
            &format!(
                "loading {what}: {} entities into {table} ({})",
                layout.total,
                if batch { "$batch" } else { "single inserts" }
            ),
        );
        let job = Arc::new(Job::Load {
            table: table.to_string(),
            layout,
            batch,
        });
        let deadline = started + secs(self.args.setup_timeout);
        let sampler = Sampler::start(self.clone(), shared.clone(), None, deadline, what);
        let st = self
            .run_phase(
                &job,
                &shared,
                &mut conns,
                Phase {
                    deadline,
                    max_ops: HARD_OP_CAP,
                    record: true,
                },
                self.args.seed,
            )
            .await;
        sampler.stop().await;
        let seconds = started.elapsed().as_secs_f64();
        let entities = shared.entities_done.load(Ordering::Relaxed);
        if !st.errors.is_empty() {
            progress(
                self,
                &format!(
                    "loading {what} had errors {:?}; results that read it may be off. First: {}",
                    st.errors,
                    st.sample.clone().unwrap_or_default()
                ),
            );
        }
        if !st.exhausted {
            progress(self, &format!("loading {what} stopped by --setup-timeout"));
        }
        Ok(LoadReport {
            table: table.to_string(),
            mode: if batch { "batch" } else { "single" }.into(),
            entities,
            seconds,
            entities_per_s: entities as f64 / seconds.max(1e-9),
            errors: st.errors,
            error_sample: st.sample,
        })
    }

    /// Creates and loads the preloaded table (or adopts `--preload-table`).
    pub async fn preload(self: &Arc<Ctx>) -> Result<(String, Layout, LoadReport), String> {
        let layout = Layout::new(self.args.entities, self.args.partitions);
        let mut conn = Conn::new(self.client.clone());
        let (table, created) = match &self.args.preload_table {
            Some(t) => (t.clone(), self.create_table(&mut conn, t).await?),
            None => (self.new_table(&mut conn, "load").await?, true),
        };
        if !created {
            progress(
                self,
                &format!(
                    "{table} exists: assuming it holds {} entities in {} partitions",
                    layout.total, layout.partitions
                ),
            );
            return Ok((
                table.clone(),
                layout,
                LoadReport {
                    table,
                    mode: "existing".into(),
                    entities: layout.total,
                    seconds: 0.0,
                    entities_per_s: 0.0,
                    errors: BTreeMap::new(),
                    error_sample: None,
                },
            ));
        }
        let report = self.load(&table, layout, "the preload table").await?;
        Ok((table, layout, report))
    }

    /// Runs `--phase-hook` (if given) as `CMD EDGE WORKLOAD`, waiting for it to finish.
    fn phase_hook(&self, edge: &str, w: Workload) -> Result<(), String> {
        let Some(hook) = &self.args.phase_hook else {
            return Ok(());
        };
        let command = format!("{hook} {edge} {}", w.name());
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(&command)
            .status()
            .map_err(|e| format!("--phase-hook: cannot run `{command}`: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("--phase-hook: `{command}` failed ({status})"))
        }
    }

    /// Runs one workload: setup, optional warm-up, the measured phase.
    pub async fn workload(
        self: &Arc<Ctx>,
        w: Workload,
        preloaded: Option<&(String, Layout)>,
    ) -> Result<WorkloadReport, String> {
        let a = &self.args;
        let mut setup = Conn::new(self.client.clone());
        let pre = || {
            preloaded
                .cloned()
                .ok_or_else(|| "internal: no preloaded table".to_string())
        };
        let job = match w {
            Workload::Insert => Job::Insert {
                table: self.new_table(&mut setup, "ins").await?,
                partitions: a.partitions,
            },
            Workload::BatchInsert => Job::BatchInsert {
                table: self.new_table(&mut setup, "bat").await?,
                partitions: a.partitions,
            },
            Workload::PointRead => {
                let (table, layout) = pre()?;
                Job::PointRead { table, layout }
            }
            Workload::Upsert => {
                let (table, layout) = pre()?;
                Job::Upsert { table, layout }
            }
            Workload::Merge => {
                let (table, layout) = pre()?;
                Job::Merge { table, layout }
            }
            Workload::RangeQuery => {
                let (table, layout) = pre()?;
                Job::RangeQuery { table, layout }
            }
            Workload::ScanFilter => {
                let (table, layout) = pre()?;
                Job::ScanFilter { table, layout }
            }
            Workload::Delete => {
                let table = self.new_table(&mut setup, "del").await?;
                let pool = a.delete_pool.or(a.ops).unwrap_or(50_000).max(1);
                let layout = Layout::new(pool, a.partitions);
                self.load(&table, layout, "the delete pool").await?;
                Job::Delete { table, layout }
            }
            Workload::BulkLoad => {
                let table = self.new_table(&mut setup, "bulk").await?;
                let layout = Layout::new(a.bulk_entities.max(1), a.partitions);
                Job::Load {
                    table,
                    layout,
                    batch: true,
                }
            }
        };
        let table = match &job {
            Job::Insert { table, .. }
            | Job::PointRead { table, .. }
            | Job::Upsert { table, .. }
            | Job::Merge { table, .. }
            | Job::Delete { table, .. }
            | Job::BatchInsert { table, .. }
            | Job::RangeQuery { table, .. }
            | Job::ScanFilter { table, .. }
            | Job::Load { table, .. } => table.clone(),
        };
        let job = Arc::new(job);
        let shared = Arc::new(Shared::default());
        let mut conns = self.connections();
        let seed = a.seed.wrapping_add((w as u64) << 32);
        let warm = !matches!(w, Workload::Delete | Workload::BulkLoad) && a.warmup > 0.0;
        if warm {
            progress(
                self,
                &format!("{}: warming up for {} s", w.name(), a.warmup),
            );
            let deadline = Instant::now() + secs(a.warmup);
            self.run_phase(
                &job,
                &shared,
                &mut conns,
                Phase {
                    deadline,
                    max_ops: HARD_OP_CAP,
                    record: false,
                },
                seed ^ 1,
            )
            .await;
        }
        let bulk = w == Workload::BulkLoad;
        let (max_ops, run_for) = if bulk {
            (HARD_OP_CAP, secs(a.bulk_max_seconds))
        } else {
            (a.ops.unwrap_or(HARD_OP_CAP), secs(a.duration))
        };
        progress(
            self,
            &format!(
                "{}: running{} on {} connections",
                w.name(),
                if bulk {
                    format!(" until {} entities", a.bulk_entities)
                } else {
                    format!(
                        " for {} s{}",
                        a.duration,
                        a.ops.map(|o| format!(" or {o} ops")).unwrap_or_default()
                    )
                },
                conns.len()
            ),
        );
        self.phase_hook("start", w)?;
        let pid = a.server_pid;
        let cpu0 = pid.and_then(procstat::cpu_ticks);
        let me = std::process::id();
        let client_cpu0 = procstat::cpu_ticks(me);
        let connects0: u64 = conns.iter().map(|c| c.connects).sum();
        let entities0 = shared.entities_done.load(Ordering::Relaxed);
        let started = Instant::now();
        let deadline = started + run_for;
        let sampler = Sampler::start(
            self.clone(),
            shared.clone(),
            bulk.then_some(entities0),
            deadline,
            w.name(),
        );
        let st = self
            .run_phase(
                &job,
                &shared,
                &mut conns,
                Phase {
                    deadline,
                    max_ops,
                    record: true,
                },
                seed,
            )
            .await;
        let elapsed = started.elapsed().as_secs_f64().max(1e-9);
        let sampled = sampler.stop().await;
        let cpu1 = pid.and_then(procstat::cpu_ticks);
        self.phase_hook("end", w)?;
        let client_cpu_us_per_op = match (client_cpu0, procstat::cpu_ticks(me)) {
            (Some(a), Some(b)) if st.ok > 0 => {
                Some(procstat::ticks_to_ms(b.saturating_sub(a)) * 1000.0 / st.ok as f64)
            }
            _ => None,
        };
        let connects1: u64 = conns.iter().map(|c| c.connects).sum();
        let server = pid.map(|p| {
            let cpu_ms = match (cpu0, cpu1) {
                (Some(a), Some(b)) => procstat::ticks_to_ms(b.saturating_sub(a)),
                _ => 0.0,
            };
            WorkloadServer {
                cpu_ms,
                cpu_us_per_op: (st.ok > 0).then(|| cpu_ms * 1000.0 / st.ok as f64),
                cpu_us_per_entity: (st.entities > 0 && w.is_batch())
                    .then(|| cpu_ms * 1000.0 / st.entities as f64),
                rss_peak_kib: sampled.rss_peak_kib,
                vmhwm_kib: procstat::memory(p).map(|m| m.hwm_kib),
            }
        });
        let stopped_by = if st.exhausted {
            "exhausted"
        } else if st.ops_limited && a.ops.is_some() {
            "ops"
        } else if bulk {
            "time-cap"
        } else {
            "duration"
        };
        let h = &st.hist;
        let ms = |us: u64| us as f64 / 1000.0;
        let report = WorkloadReport {
            name: w.name().into(),
            table,
            ops: st.ok,
            failed: st.failed,
            entities: st.entities,
            rows: st.rows,
            bad_results: st.bad,
            elapsed_s: elapsed,
            ops_per_s: st.ok as f64 / elapsed,
            entities_per_s: st.entities as f64 / elapsed,
            latency: Latency {
                min_ms: ms(h.min()),
                mean_ms: h.mean() / 1000.0,
                p50_ms: ms(h.quantile(0.50)),
                p90_ms: ms(h.quantile(0.90)),
                p99_ms: ms(h.quantile(0.99)),
                p999_ms: ms(h.quantile(0.999)),
                max_ms: ms(h.max()),
            },
            errors: st.errors,
            error_sample: st.sample,
            stopped_by: stopped_by.into(),
            connections_opened: connects1.saturating_sub(connects0),
            client_cpu_us_per_op,
            server,
            data_dir_bytes: a.data_dir.as_deref().and_then(procstat::dir_size),
            logical_bytes: self.logical_bytes().await,
            timeline: bulk.then_some(sampled.timeline),
        };
        progress(
            self,
            &format!(
                "{}: {} ops in {:.1} s = {:.1} ops/s, p99 {:.2} ms, {} failed",
                w.name(),
                report.ops,
                elapsed,
                report.ops_per_s,
                report.latency.p99_ms,
                report.failed
            ),
        );
        Ok(report)
    }
}

/// Uniform choice of an existing entity of `layout`.
fn pick(layout: &Layout, rng: &mut Rng) -> (u64, u64) {
    let p = rng.below(layout.used_partitions());
    let j = rng.below(layout.rows_in(p));
    (p, j)
}

struct Sampled {
    rss_peak_kib: Option<u64>,
    timeline: Vec<TimelinePoint>,
}

/// Background sampling during a phase: the server's VmRSS every 250 ms, entities done every
/// second (timeline, progress lines every 5 s). Stops when told or after the phase deadline
/// plus the request timeout.
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: tokio::task::JoinHandle<Sampled>,
}

impl Sampler {
    fn start(
        ctx: Arc<Ctx>,
        shared: Arc<Shared>,
        timeline_base: Option<u64>,
        deadline: Instant,
        what: &str,
    ) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let what = what.to_string();
        let handle = tokio::spawn(async move {
            let tick = Duration::from_millis(250);
            let hard_end = deadline + ctx.client.timeout + TAIL;
            let started = Instant::now();
            let max_ticks =
                (hard_end.saturating_duration_since(started).as_millis() / 250) as u64 + 2;
            let pid = ctx.args.server_pid;
            let mut peak = pid.and_then(procstat::memory).map(|m| m.rss_kib);
            let mut timeline = Vec::new();
            let mut last_total = timeline_base.unwrap_or(0);
            let mut interval = tokio::time::interval(tick);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            for i in 1..=max_ticks {
                interval.tick().await;
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                if let Some(m) = pid.and_then(procstat::memory) {
                    peak = Some(peak.unwrap_or(0).max(m.rss_kib));
                }
                if i.is_multiple_of(4) {
                    let total = shared.entities_done.load(Ordering::Relaxed);
                    if let Some(base) = timeline_base {
                        timeline.push(TimelinePoint {
                            t_s: started.elapsed().as_secs_f64(),
                            entities_total: total.saturating_sub(base),
                            entities_per_s: total.saturating_sub(last_total) as f64,
                        });
                    }
                    last_total = total;
                    if i.is_multiple_of(20) {
                        progress(
                            &ctx,
                            &format!(
                                "{what}: {:.0} s, {} entities so far",
                                started.elapsed().as_secs_f64(),
                                total
                            ),
                        );
                    }
                }
            }
            Sampled {
                rss_peak_kib: peak,
                timeline,
            }
        });
        Sampler { stop, handle }
    }

    async fn stop(self) -> Sampled {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.await.unwrap_or(Sampled {
            rss_peak_kib: None,
            timeline: Vec::new(),
        })
    }
}

/// The whole run: preload if needed, every selected workload, final figures, cleanup.
pub async fn run(ctx: Arc<Ctx>) -> Result<RunReport, String> {
    let a = ctx.args.clone();
    let started_at = chrono::Utc::now().to_rfc3339();
    let selected = a.selected();
    let mut preload_report = None;
    let mut preloaded = None;
    if selected.iter().any(|w| w.uses_preload()) {
        let (table, layout, rep) = ctx.preload().await?;
        preloaded = Some((table, layout));
        preload_report = Some(rep);
    }
    let bytes_after_preload = a.data_dir.as_deref().and_then(procstat::dir_size);
    let logical_after_preload = ctx.logical_bytes().await;
    let mut workloads = Vec::new();
    for w in &selected {
        match ctx.workload(*w, preloaded.as_ref()).await {
            Ok(r) => workloads.push(r),
            Err(e) => {
                progress(&ctx, &format!("{} could not run: {e}", w.name()));
                return Err(e);
            }
        }
    }
    let server = a.server_pid.map(|pid| {
        let mem = procstat::memory(pid);
        ServerReport {
            pid,
            vmhwm_kib: mem.map(|m| m.hwm_kib),
            vmrss_kib: mem.map(|m| m.rss_kib),
            cpu_seconds_total: procstat::cpu_ticks(pid).map(|t| procstat::ticks_to_ms(t) / 1000.0),
        }
    });
    let logical_at_end = ctx.logical_bytes().await;
    let data_dir = a.data_dir.as_ref().map(|d| DataDirReport {
        path: d.display().to_string(),
        bytes_after_preload,
        bytes_at_end: procstat::dir_size(d),
        logical_bytes_after_preload: logical_after_preload,
        logical_bytes_at_end: logical_at_end,
    });
    ctx.cleanup().await;
    Ok(RunReport {
        tool: "tablestore-bench".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        label: a.label.clone(),
        endpoint: a.endpoint.clone(),
        started_at,
        finished_at: chrono::Utc::now().to_rfc3339(),
        settings: Settings {
            workloads: selected.iter().map(|w| w.name().to_string()).collect(),
            concurrency: a.concurrency,
            duration_s: a.duration,
            ops: a.ops,
            warmup_s: a.warmup,
            entities: a.entities,
            partitions: a.partitions,
            batch_size: a.batch_size,
            bulk_entities: a.bulk_entities,
            range_rows: a.range_rows,
            metadata: a.metadata.accept().into(),
            api_version: a.api_version.clone(),
            client_threads: ctx.threads,
            entity_json_bytes: entity_json(&pk(0), &rk(0), 0, 0).len(),
        },
        preload: preload_report,
        workloads,
        server,
        data_dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use crate::client::Endpoints;
    use crate::sign::Signer;
    use clap::Parser;
    use http::HeaderValue;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn reads_an_unlabelled_metric() {
        let text = "# HELP tablestore_store_logical_bytes Bytes\n\
                    # TYPE tablestore_store_logical_bytes gauge\n\
                    tablestore_store_logical_bytes_other 5\n\
                    tablestore_store_logical_bytes 123456\n";
        assert_eq!(
            metric_value(text, "tablestore_store_logical_bytes"),
            Some(123456)
        );
        assert_eq!(metric_value(text, "tablestore_store_entities"), None);
        assert_eq!(metric_value("<html>not metrics</html>", "x"), None);
    }

    type Seen = Arc<Mutex<Vec<String>>>;

    /// A loopback HTTP/1.1 server answering every request with `answer(head)`; records the
    /// request heads. Each connection ends at EOF.
    async fn fake_server(answer: fn(&str) -> String) -> (String, Seen) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen: Seen = Arc::new(Mutex::new(Vec::new()));
        let rec = seen.clone();
        tokio::spawn(async move {
            for _ in 0..16 {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let rec = rec.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    for _ in 0..64 {
                        let head_end = loop {
                            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break i + 4;
                            }
                            let mut chunk = [0u8; 4096];
                            match sock.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                        let len: usize = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap())
                            })
                            .unwrap_or(0);
                        while buf.len() < head_end + len {
                            let mut chunk = [0u8; 4096];
                            match sock.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        buf.drain(..head_end + len);
                        rec.lock().push(head.clone());
                        if sock.write_all(answer(&head).as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (format!("http://{addr}/devstoreaccount1"), seen)
    }

    fn response(status: &str, headers: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\ncontent-length: {}\r\n{headers}\r\n{body}",
            body.len()
        )
    }

    fn ctx(endpoint: &str) -> Arc<Ctx> {
        let cli =
            Cli::try_parse_from(["tablestore-bench", "--endpoint", endpoint, "--quiet"]).unwrap();
        let a = cli.run;
        let client = Arc::new(ClientConfig {
            targets: Endpoints::parse(&a.endpoint, false).unwrap(),
            signer: Signer::new(&a.account, &a.key).unwrap(),
            timeout: Duration::from_secs(5),
            accept: HeaderValue::from_static(a.metadata.accept()),
            version: HeaderValue::from_static("2019-02-02"),
        });
        Arc::new(Ctx::new(client, a, 1))
    }

    fn header<'a>(head: &'a str, name: &str) -> &'a str {
        head.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim())
            })
            .unwrap_or("")
    }

    #[tokio::test]
    async fn query_follows_continuation_and_requests_are_signed() {
        let (endpoint, seen) = fake_server(|head| {
            if head.contains("NextPartitionKey=") {
                response("200 OK", "", r#"{"value":[{"PartitionKey":"p","RowKey":"3"}]}"#)
            } else {
                response(
                    "200 OK",
                    "x-ms-continuation-NextPartitionKey: 1!4!cDAx\r\nx-ms-continuation-NextRowKey: 1!4!cjAx\r\n",
                    r#"{"value":[{"PartitionKey":"p","RowKey":"1"},{"PartitionKey":"p","RowKey":"2"}]}"#,
                )
            }
        })
        .await;
        let c = ctx(&endpoint);
        let mut conn = Conn::new(c.client.clone());
        match c.query(&mut conn, "t1", "Bucket eq 7", 3).await {
            Outcome::Ok { rows, bad, .. } => assert_eq!((rows, bad), (3, false)),
            _ => panic!("query failed"),
        }
        match c.query(&mut conn, "t1", "Bucket eq 7", 5).await {
            Outcome::Ok { bad, .. } => assert!(bad),
            _ => panic!("query failed"),
        }
        assert_eq!(conn.connects, 1, "keep-alive connection reused");
        let seen = seen.lock().clone();
        assert!(
            seen[0].starts_with("GET /devstoreaccount1/t1()?$filter=Bucket%20eq%207 HTTP/1.1\r\n")
        );
        assert!(seen[1].starts_with(
            "GET /devstoreaccount1/t1()?$filter=Bucket%20eq%207&NextPartitionKey=1%214%21cDAx&NextRowKey=1%214%21cjAx HTTP/1.1\r\n"
        ));
        let date = header(&seen[0], "x-ms-date");
        let expected = Signer::new(crate::cli::DEV_ACCOUNT, crate::cli::DEV_ACCOUNT_KEY)
            .unwrap()
            .authorization(date, "/devstoreaccount1/t1()", None);
        assert_eq!(header(&seen[0], "authorization"), expected);
        assert_eq!(header(&seen[0], "x-ms-version"), "2019-02-02");
        assert_eq!(
            header(&seen[0], "accept"),
            "application/json;odata=minimalmetadata"
        );
    }

    #[tokio::test]
    async fn batch_reports_sub_response_failures() {
        let (endpoint, seen) = fake_server(|head| {
            let fail = header(head, "content-length").parse::<usize>().unwrap_or(0) < 2000;
            let sub = if fail {
                "--changesetresponse_1\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 409 Conflict\r\n\r\n{}\r\n".to_string()
            } else {
                "--changesetresponse_1\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n".repeat(2)
            };
            response(
                "202 Accepted",
                "content-type: multipart/mixed; boundary=batchresponse_1\r\n",
                &format!("--batchresponse_1\r\n{sub}--changesetresponse_1--\r\n--batchresponse_1--\r\n"),
            )
        })
        .await;
        let c = ctx(&endpoint);
        let mut conn = Conn::new(c.client.clone());
        let es = vec![entity_json("p", "1", 1, 0), entity_json("p", "2", 2, 0)];
        match c.batch(&mut conn, "t1", &es).await {
            Outcome::Ok { entities, .. } => assert_eq!(entities, 2),
            _ => panic!("batch failed"),
        }
        match c.batch(&mut conn, "t1", &es[..1]).await {
            Outcome::Err { label, .. } => assert_eq!(label, "batch:409"),
            _ => panic!("a failed sub-response must fail the batch"),
        }
        let head = seen.lock()[0].clone();
        assert!(head.starts_with("POST /devstoreaccount1/$batch HTTP/1.1\r\n"));
        assert!(header(&head, "content-type").starts_with("multipart/mixed; boundary=batch_"));
    }

    #[tokio::test]
    async fn logical_size_comes_from_the_servers_metrics_once_supported() {
        let (endpoint, seen) = fake_server(|head| {
            if head.starts_with("GET /metrics ") {
                response(
                    "200 OK",
                    "content-type: text/plain; version=0.0.4\r\n",
                    "tablestore_store_size_bytes 900\ntablestore_store_logical_bytes 600\n",
                )
            } else {
                response("404 Not Found", "", "")
            }
        })
        .await;
        let c = ctx(&endpoint);
        assert_eq!(c.logical_bytes().await, Some(600));
        let head = seen.lock()[0].clone();
        // From the server's root, signed for `/{account}/metrics` like the server expects.
        let date = header(&head, "x-ms-date");
        let expected = Signer::new(crate::cli::DEV_ACCOUNT, crate::cli::DEV_ACCOUNT_KEY)
            .unwrap()
            .authorization(date, "/metrics", None);
        assert_eq!(header(&head, "authorization"), expected);

        // A server without the metric (Azurite answers 400 or 404) is asked once only.
        let (endpoint, seen) = fake_server(|_| response("404 Not Found", "", "")).await;
        let c = ctx(&endpoint);
        assert_eq!(c.logical_bytes().await, None);
        assert_eq!(c.logical_bytes().await, None);
        assert_eq!(seen.lock().len(), 1);
    }

    /// `--endpoint a,b`: connections alternate between the nodes, and a `$batch` names the
    /// node it is sent to in its sub-request URLs.
    #[tokio::test]
    async fn connections_are_spread_round_robin_over_several_endpoints() {
        let ok = |_: &str| response("204 No Content", "", "");
        let (a, seen_a) = fake_server(ok).await;
        let (b, seen_b) = fake_server(ok).await;
        let c = ctx(&format!("{a}, {b}"));
        let mut conns: Vec<Conn> = (0..4).map(|_| Conn::new(c.client.clone())).collect();
        for conn in &mut conns {
            let r = conn
                .send(
                    Method::GET,
                    "/Tables",
                    None,
                    &Extra::default(),
                    Bytes::new(),
                )
                .await
                .expect("answered");
            assert_eq!(r.status, 204);
        }
        assert_eq!(seen_a.lock().len(), 2);
        assert_eq!(seen_b.lock().len(), 2);
        assert_eq!(conns[1].target().base_url, b);
        assert!(Endpoints::parse(" , ", false).is_err());
        assert!(Endpoints::parse(&format!("{a},http://192.0.2.1:1/x"), false).is_err());
    }
}
