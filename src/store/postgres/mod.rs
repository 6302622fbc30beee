//! The store contract on PostgreSQL (and, untested here, the distributed SQL engines that
//! speak its protocol: CockroachDB, YugabyteDB), so that several tablestore nodes can serve the
//! same accounts from one database.
//!
//! Rows keep the sled store's byte layout: entity keys are `table id ‖ enc(PartitionKey) ‖
//! enc(RowKey)` in a `bytea` primary key (`store/key.rs`), so the database's order is Azure's
//! (UTF-16 ordinal) whatever its collation, and every key range is one index range scan;
//! values are the `store/codec.rs` encoding. Scans read in pages by key (keyset pagination) of
//! at most 512 rows and, once large rows are seen, about 8 MiB: never a whole table at once.
//!
//! Every guarantee is the database's, not the process's, so it holds across nodes: a commit
//! (one write or a whole change set) is one transaction that reads each entity `FOR UPDATE`,
//! checks the preconditions, and writes with a statement that only succeeds if the row is
//! still what was read (`UPDATE … WHERE key = $1 AND ts = $prev`, `INSERT` against the
//! primary key). New Timestamps are later than the entity's previous one read in that
//! transaction (and than this process's last), so they increase per entity across nodes.
//! Serialization failures and deadlocks rerun the transaction with backoff; a lost or
//! unreachable database is [`StoreError::Unavailable`] (503 ServerBusy), and the pool
//! reconnects by itself once the database is back.
//!
//! The store runs on the caller's tokio runtime (the server's): the driver and the pool's
//! connection tasks live there, and every method but [`Store::read`] is native async. A read
//! job is synchronous (the query executor's page logic), so it runs on the blocking pool and
//! fetches its pages with [`Handle::block_on`] on the runtime that called `read`.

mod errors;
pub mod schema;
mod state;

use parking_lot::Mutex;
use std::ops::Bound;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio::runtime::Handle;
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

use super::read::ReadPool;
use super::{
    apply_write, key, Clock, CommitError, Footprint, KeyRange, ReadJob, RowSource, Store,
    StoreError, StoredRow, TableId, TableInfo, TableRef,
};
use crate::model::limits::EntityLimitError;
use crate::model::{EdmDateTime, Entity, WriteKind, WriteOp};
pub(crate) use errors::PgAddress;
use errors::{classify, from_db_error, from_pool_error, DbFailure};

/// How long to wait for a connection to the database before answering 503.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Rows per scan page: the first page is small (most scans are point-ish or stop early), later
/// ones larger, so a long scan costs few round trips and memory stays bounded.
const FIRST_PAGE: i64 = 64;
const MAX_PAGE: i64 = 512;
/// Bytes a scan page may hold once its rows' size is known.
const PAGE_BYTES: usize = 8 << 20;
/// Attempts of a transaction that keeps hitting serialization failures or deadlocks.
const MAX_ATTEMPTS: u32 = 12;
/// Entities counted exactly for the footprint; beyond, PostgreSQL's estimate of the row count.
const COUNTED_EXACTLY: i64 = 100_000;
/// Runs of the schema bootstrap when nodes starting together keep racing on it.
const BOOTSTRAP_ATTEMPTS: u32 = 10;
/// Entities removed per statement when purging a deleted table.
const PURGE_CHUNK: i64 = 1000;

/// One stored entity: its key and encoded value.
type Row = (Vec<u8>, Vec<u8>);

/// Whether `location` names a PostgreSQL database (`postgres://` or `postgresql://`).
pub(crate) fn is_postgres_url(location: &str) -> bool {
    let lower = location.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// `url` as start-up output shows it: `postgres://user@host:port/database`, never the
/// password (or `url` unchanged when it does not parse; opening it then fails anyway).
pub(crate) fn display_url(url: &str) -> String {
    match tokio_postgres::Config::from_str(url.trim()) {
        Ok(config) => PgAddress::from_config(&config).url(),
        Err(_) => "(an invalid URL)".to_string(),
    }
}

/// The [`Store`] over a PostgreSQL database.
pub struct PgStore {
    shared: Arc<Shared>,
    reads: ReadPool,
}

struct Shared {
    pool: Pool,
    target: PgAddress,
    clock: Clock,
}

impl PgStore {
    /// Connects to the database `url` names, applies missing schema migrations and resumes
    /// interrupted table purges. Errors are one sentence each (bad URL, unreachable, login
    /// refused, no rights, schema newer than this binary). The store's connections live on
    /// the runtime this is called on.
    pub async fn open(url: &str) -> Result<Arc<PgStore>, StoreError> {
        PgStore::open_in_schema(url, None).await
    }

    /// [`PgStore::open`] with the store's tables in `schema` (created if missing) instead of
    /// the user's default search path: tests give each server a schema of its own.
    pub(crate) async fn open_in_schema(
        url: &str,
        schema: Option<&str>,
    ) -> Result<Arc<PgStore>, StoreError> {
        let mut config = tokio_postgres::Config::from_str(url.trim()).map_err(|e| {
            StoreError::database(format!(
                "the store URL is not a valid PostgreSQL URL ({e}): use postgres://user[:password]@host[:port]/database"
            ))
        })?;
        if config.get_user().is_none() {
            return Err(StoreError::database(
                "the store URL names no database user: use postgres://user[:password]@host[:port]/database",
            ));
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("tablestore");
        }
        if let Some(schema) = schema {
            if !schema
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(StoreError::database(format!(
                    "the schema name {schema} may hold only letters, digits and _"
                )));
            }
            let options = match config.get_options() {
                Some(o) => format!("{o} -c search_path={schema}"),
                None => format!("-c search_path={schema}"),
            };
            config.options(&options);
        }
        let target = PgAddress::from_config(&config);
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT * 2))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| StoreError::database(format!("cannot set up the connection pool: {e}")))?;
        let shared = Arc::new(Shared {
            pool,
            target,
            clock: Clock::default(),
        });
        let pending = shared.migrate(schema).await?;
        let store = Arc::new(PgStore {
            shared,
            reads: ReadPool::new(),
        });
        for id in pending {
            store.spawn_purge(id);
        }
        Ok(store)
    }

    /// The plan PostgreSQL chooses for the statement a scan of `range` runs (its first
    /// page), as `EXPLAIN` prints it: for tests that check scans are index range scans.
    pub async fn explain_scan(
        &self,
        table: TableId,
        range: &KeyRange,
    ) -> Result<String, StoreError> {
        let (start, end) = range.to_bytes(table.0);
        let s = &self.shared;
        let (sql, params) = page_sql(&start, &end);
        let client = s.client().await?;
        let mut args: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
            params.iter().map(|p| p as _).collect();
        args.push(&MAX_PAGE);
        let rows = client
            .query(&format!("EXPLAIN {sql}"), &args)
            .await
            .map_err(|e| from_db_error(&s.target, &e))?;
        Ok(rows
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n"))
    }

    /// Purges a deleted table's entities in the background, on the runtime of the caller.
    fn spawn_purge(&self, table_id: i64) {
        let s = Arc::clone(&self.shared);
        tokio::spawn(async move {
            if let Err(e) = s.purge(table_id).await {
                tracing::warn!(table_id, error = %e, "purging a deleted table failed; a later start resumes it");
            }
        });
    }
}

/// One table's rows as a read job sees them: every page of every scan of the job reads one
/// snapshot. The first page begins a `READ ONLY` `REPEATABLE READ` transaction on a pooled
/// connection (sent with the page's statement in one round trip) that the job keeps until it
/// ends, so the job sees a concurrent change set (one transaction) whole or not at all,
/// however many ranges and pages it reads. The transaction ends in the background when the
/// job is done (the connection goes back to the pool); a connection that failed is never
/// pooled again. Pages are fetched with [`Handle::block_on`]: the job runs on a thread of the
/// blocking pool, and the driver's connection tasks on the runtime `handle` names.
struct PgRows {
    shared: Arc<Shared>,
    handle: Handle,
    table: TableId,
    snapshot: Mutex<Snapshot>,
}

/// The connection holding a read job's snapshot.
enum Snapshot {
    /// No page was read yet.
    NotBegun,
    Open(Box<Object>),
    /// A page failed: the rows before it came from a snapshot that is gone.
    Lost,
}

impl PgRows {
    /// Up to `limit` rows from `start` to `end`, in the job's snapshot.
    fn page(
        &self,
        start: &Bound<Vec<u8>>,
        end: &Bound<Vec<u8>>,
        limit: i64,
    ) -> Result<Vec<Row>, StoreError> {
        let mut snapshot = self.snapshot.lock();
        let open = match std::mem::replace(&mut *snapshot, Snapshot::Lost) {
            Snapshot::NotBegun => None,
            Snapshot::Open(client) => Some(*client),
            Snapshot::Lost => {
                return Err(StoreError::unavailable(format!(
                    "a scan on PostgreSQL at {} lost its snapshot; retry the request",
                    self.shared.target.host
                )))
            }
        };
        let (client, rows) = self
            .handle
            .block_on(self.shared.snapshot_page(open, start, end, limit));
        if let Some(client) = client {
            *snapshot = Snapshot::Open(Box::new(client));
        }
        rows
    }
}

impl RowSource for PgRows {
    /// Reads `range` page by page: each page starts after the last key read; pages grow from
    /// [`FIRST_PAGE`] to [`MAX_PAGE`] rows but hold no more than [`PAGE_BYTES`] at the largest
    /// row seen so far, so large entities keep pages small.
    fn scan_raw(
        &self,
        range: &KeyRange,
        visit: &mut dyn FnMut(StoredRow<'_>) -> bool,
    ) -> Result<(), StoreError> {
        let (mut start, end) = range.to_bytes(self.table.0);
        let mut limit = FIRST_PAGE;
        loop {
            let rows = self.page(&start, &end, limit)?;
            for (k, v) in &rows {
                if !visit(StoredRow::new(k, v)) {
                    return Ok(());
                }
            }
            if (rows.len() as i64) < limit {
                return Ok(());
            }
            if let Some((k, _)) = rows.last() {
                start = Bound::Excluded(k.clone());
            }
            limit = next_limit(limit, &rows);
        }
    }
}

impl Drop for PgRows {
    /// Ends the job's transaction in the background and gives its connection back.
    fn drop(&mut self) {
        let snapshot = self.snapshot.get_mut();
        if let Snapshot::Open(client) = std::mem::replace(snapshot, Snapshot::Lost) {
            let client = *client;
            self.handle.spawn(async move {
                if client.batch_execute("ROLLBACK").await.is_err() {
                    // Unusable (the database went away): never hand it out again.
                    drop(Object::take(client));
                }
            });
        }
    }
}

/// The row limit of the page after one of `limit` rows that returned `rows`.
fn next_limit(limit: i64, rows: &[Row]) -> i64 {
    let largest = rows
        .iter()
        .map(|(k, v)| k.len() + v.len())
        .max()
        .unwrap_or(1);
    let fits = (PAGE_BYTES / largest.max(1)).max(1) as i64;
    (limit * 4).min(MAX_PAGE).min(fits)
}

/// An entity's Timestamp and the first [`super::codec::ENTITY_STAMPS_LEN`] bytes of its
/// value (the header that holds its creation instant), locked for the transaction.
const SELECT_STAMPS: &str =
    "SELECT ts, substring(value from 1 for 17) FROM entities WHERE key = $1 FOR UPDATE";
const _: () = assert!(
    super::codec::ENTITY_STAMPS_LEN == 17,
    "SELECT_STAMPS cuts the header"
);

fn decode_entity(k: &[u8], v: &[u8]) -> Result<Entity, StoreError> {
    let row = StoredRow::new(k, v);
    let (partition_key, row_key) = row.keys()?;
    let (timestamp, properties) =
        super::codec::decode_entity(v).ok_or_else(|| StoreError::Corrupt("entity".into()))?;
    Ok(Entity {
        partition_key,
        row_key,
        timestamp,
        properties,
    })
}

/// The statement of one scan page from `start` to `end` and its key parameters; the row
/// limit is the last parameter.
fn page_sql(start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> (String, Vec<Vec<u8>>) {
    let mut conditions = Vec::new();
    let mut params = Vec::new();
    for (bound, inclusive, exclusive) in [(start, ">=", ">"), (end, "<=", "<")] {
        let (op, k) = match bound {
            Bound::Included(k) => (inclusive, k),
            Bound::Excluded(k) => (exclusive, k),
            Bound::Unbounded => continue,
        };
        params.push(k.clone());
        conditions.push(format!("key {op} ${}", params.len()));
    }
    let filter = if conditions.is_empty() {
        String::new()
    } else {
        format!("WHERE {} ", conditions.join(" AND "))
    };
    let sql = format!(
        "SELECT key, value FROM entities {filter}ORDER BY key LIMIT ${}",
        params.len() + 1
    );
    (sql, params)
}

/// Runs a scan page's statement (see [`page_sql`]) on `client`.
async fn query_page(
    client: &Object,
    sql: &str,
    params: &[Vec<u8>],
    limit: i64,
) -> Result<Vec<Row>, tokio_postgres::Error> {
    let stmt = client.prepare_cached(sql).await?;
    let mut args: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
        params.iter().map(|p| p as _).collect();
    args.push(&limit);
    let rows = client.query(&stmt, &args).await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.get::<_, Vec<u8>>(0), r.get::<_, Vec<u8>>(1)))
        .collect())
}

/// Why one attempt of a transaction ended without committing.
enum Abort<E> {
    /// Serialization failure, deadlock, or a row that changed under us: run it again.
    Retry,
    Fail(E),
}

impl<E> Abort<E> {
    fn db(
        target: &PgAddress,
        e: &tokio_postgres::Error,
        wrap: impl FnOnce(StoreError) -> E,
    ) -> Self {
        match classify(target, e) {
            DbFailure::Retry => Abort::Retry,
            DbFailure::Fail(err) => Abort::Fail(wrap(err)),
        }
    }
}

/// Waits before attempt `attempt` (1-based) of a transaction: exponential, with jitter so
/// that transactions that collided do not collide again.
async fn backoff(attempt: u32) {
    let base = 2u64 << attempt.min(8);
    let jitter = u64::from(std::process::id() ^ attempt).wrapping_mul(2654435761) % base;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    tokio::time::sleep(Duration::from_millis(base + (jitter ^ nanos) % base)).await;
}

/// Runs a transaction, `$attempt` (a future using a pooled connection `$client`), until it
/// commits, fails for good, or has been retried [`MAX_ATTEMPTS`] times; `$busy` turns a store
/// error into the caller's. A macro, not a function taking an async closure: the spawned
/// future must be `Send` for every borrow of the connection, which such a closure cannot
/// promise yet.
macro_rules! retried {
    ($shared:expr, $busy:expr, |$client:ident| $attempt:expr) => {{
        let busy = $busy;
        let mut n = 0;
        loop {
            n += 1;
            let mut $client = $shared.client().await.map_err(&busy)?;
            match $attempt.await {
                Ok(v) => break Ok(v),
                Err(Abort::Fail(e)) => break Err(e),
                Err(Abort::Retry) => $shared.before_retry(n).await.map_err(&busy)?,
            }
        }
    }};
}

impl Shared {
    async fn client(&self) -> Result<Object, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| from_pool_error(&self.target, e))
    }

    /// Applies the schema migrations; returns the ids of tables whose purge is pending. Nodes
    /// starting together race on creating the schema: a creation that lost the race (see
    /// [`schema::created_concurrently`]) or a serialization failure runs the whole bootstrap
    /// again, up to [`BOOTSTRAP_ATTEMPTS`] times with a short backoff.
    async fn migrate(&self, schema: Option<&str>) -> Result<Vec<i64>, StoreError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut client = self.client().await?;
            // Every node after the first finds the schema there: PostgreSQL's NOTICE that
            // `CREATE … IF NOT EXISTS` skipped an object (logged by the driver at INFO) says
            // nothing worth reading, so this session asks for warnings and errors only.
            let quiet = client
                .batch_execute("SET client_min_messages TO warning")
                .await;
            let bootstrapped = match (quiet, schema) {
                (Err(e), _) => Err(e),
                (Ok(()), Some(schema)) => {
                    client
                        .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
                        .await
                }
                (Ok(()), None) => Ok(()),
            };
            let migrated = match bootstrapped {
                Ok(()) => schema::migrate(&mut client).await,
                Err(e) => Err(e),
            };
            match migrated {
                Ok(schema::Migrated::Newer(found)) => {
                    return Err(StoreError::database(format!(
                        "the database {} at {} holds a tablestore schema of version {found}, newer than this tablestore's ({}): run a newer tablestore, or point --store at another database",
                        self.target.database, self.target.host, schema::CURRENT
                    )));
                }
                Ok(schema::Migrated::Current { applied }) => {
                    if applied > 0 {
                        tracing::info!(
                            applied,
                            version = schema::CURRENT,
                            "PostgreSQL schema migrated"
                        );
                    }
                    break;
                }
                Err(e)
                    if attempt < BOOTSTRAP_ATTEMPTS
                        && (schema::created_concurrently(&e)
                            || matches!(classify(&self.target, &e), DbFailure::Retry)) =>
                {
                    tracing::debug!(attempt, error = %e, "schema bootstrap raced another node; running it again");
                    backoff(attempt.min(4)).await
                }
                Err(e) => return Err(from_db_error(&self.target, &e)),
            }
        }
        let client = self.client().await?;
        let rows = client
            .query("SELECT id FROM deleted_tables", &[])
            .await
            .map_err(|e| from_db_error(&self.target, &e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Runs a read, once more on a fresh connection if the pooled one turned out to be dead
    /// (the database restarted since it was last used).
    async fn read<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        F: Fn(Object) -> Fut,
        Fut: std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let mut retried = false;
        loop {
            let client = self.client().await?;
            match f(client).await {
                Ok(v) => return Ok(v),
                Err(e) => {
                    let err = from_db_error(&self.target, &e);
                    if matches!(err, StoreError::Unavailable { .. }) && !retried {
                        retried = true;
                        continue;
                    }
                    if matches!(classify(&self.target, &e), DbFailure::Retry) && !retried {
                        retried = true;
                        continue;
                    }
                    return Err(err);
                }
            }
        }
    }

    /// One page of a scan, up to `limit` rows from `start` to `end`, read in the scan's
    /// snapshot: on `snapshot`, the connection of the scan's earlier pages, or (first page) on
    /// a pooled connection where it begins the scan's `READ ONLY` `REPEATABLE READ`
    /// transaction, sent with the page's statement in one round trip. Returns the connection
    /// to keep for the next page (`None` after a failure: it is dropped, not pooled).
    ///
    /// A first page that finds its connection dead, or a serialization failure (possible on
    /// distributed SQL engines), is tried again on a fresh transaction: nothing was handed
    /// out yet. A later page cannot be, as the rows before it came from the lost snapshot:
    /// the scan fails with `Unavailable` (503), and the client repeats its request.
    async fn snapshot_page(
        &self,
        snapshot: Option<Object>,
        start: &Bound<Vec<u8>>,
        end: &Bound<Vec<u8>>,
        limit: i64,
    ) -> (Option<Object>, Result<Vec<Row>, StoreError>) {
        let (sql, params) = page_sql(start, end);
        if let Some(client) = snapshot {
            return match query_page(&client, &sql, &params, limit).await {
                Ok(rows) => (Some(client), Ok(rows)),
                Err(e) => {
                    drop(Object::take(client));
                    let err = match classify(&self.target, &e) {
                        DbFailure::Retry => StoreError::unavailable(format!(
                            "a scan on PostgreSQL at {} conflicted with concurrent writes; retry the request",
                            self.target.host
                        )),
                        DbFailure::Fail(err) => err,
                    };
                    (None, Err(err))
                }
            };
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let client = match self.client().await {
                Ok(c) => c,
                Err(e) => return (None, Err(e)),
            };
            let (begun, rows) = tokio::join!(
                client.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"),
                query_page(&client, &sql, &params, limit)
            );
            match begun.and(rows) {
                Ok(rows) => return (Some(client), Ok(rows)),
                Err(e) => {
                    drop(Object::take(client));
                    let err = from_db_error(&self.target, &e);
                    let again = matches!(err, StoreError::Unavailable { .. })
                        || matches!(classify(&self.target, &e), DbFailure::Retry);
                    if again && attempt < 3 {
                        backoff(attempt).await;
                        continue;
                    }
                    return (None, Err(err));
                }
            }
        }
    }

    /// Up to `limit` tables of `account` ordered by identity, from `start_folded` (inclusive).
    async fn table_page(
        &self,
        account: &str,
        start_folded: Option<&str>,
        limit: i64,
    ) -> Result<Vec<TableInfo>, StoreError> {
        let from = key::table_meta_key(account, start_folded.unwrap_or(""));
        // The account's records end before `enc(account)` with its terminator 00 01 raised
        // to 00 02.
        let mut end = key::account_prefix(account);
        let n = end.len();
        end[n - 1] = 0x02;
        let rows = self
            .read(|client| {
                let (from, end) = (&from, &end);
                async move {
                    let stmt = client
                        .prepare_cached(
                            "SELECT meta_key, id, name, acl FROM tables WHERE meta_key >= $1 AND meta_key < $2 ORDER BY meta_key LIMIT $3",
                        )
                        .await?;
                    client.query(&stmt, &[from, end, &limit]).await
                }
            })
            .await?;
        Ok(rows.iter().map(table_info).collect())
    }

    async fn get_table(
        &self,
        account: &str,
        folded: &str,
    ) -> Result<Option<TableInfo>, StoreError> {
        let meta_key = key::table_meta_key(account, folded);
        let row = self
            .read(|client| {
                let meta_key = &meta_key;
                async move {
                    let stmt = client
                        .prepare_cached(
                            "SELECT meta_key, id, name, acl FROM tables WHERE meta_key = $1",
                        )
                        .await?;
                    client.query_opt(&stmt, &[meta_key]).await
                }
            })
            .await?;
        Ok(row.as_ref().map(table_info))
    }

    /// What the database says cheaply about the entities: their count and stored bytes,
    /// exact up to [`COUNTED_EXACTLY`] entities (one bounded read), beyond that PostgreSQL's
    /// row-count estimate (from its last ANALYZE or VACUUM) at the counted entities' average
    /// size; and the entities table's size with its indexes and TOAST
    /// (`pg_total_relation_size`, `None` where the engine lacks it).
    async fn footprint(&self) -> Result<Footprint, StoreError> {
        let counted = self
            .read(|client| async move {
                client
                    .query_one(
                        "SELECT count(*), COALESCE(sum(octet_length(key) + octet_length(value)), 0)::BIGINT \
                         FROM (SELECT key, value FROM entities LIMIT $1) AS counted",
                        &[&COUNTED_EXACTLY],
                    )
                    .await
            })
            .await?;
        let (mut entities, mut bytes): (i64, i64) = (counted.get(0), counted.get(1));
        if entities >= COUNTED_EXACTLY {
            let estimate = self
                .read(|client| async move {
                    client
                        .query_one(
                            "SELECT reltuples::BIGINT FROM pg_class WHERE oid = 'entities'::regclass",
                            &[],
                        )
                        .await
                })
                .await
                .map(|r| r.get::<_, i64>(0))
                .unwrap_or(0);
            if estimate > entities {
                bytes = (bytes as f64 * estimate as f64 / entities as f64) as i64;
                entities = estimate;
            }
        }
        let disk = self
            .read(|client| async move {
                client
                    .query_one("SELECT pg_total_relation_size('entities')::BIGINT", &[])
                    .await
            })
            .await
            .ok()
            .map(|r| r.get::<_, i64>(0).max(0) as u64);
        Ok(Footprint {
            entities: entities.max(0) as u64,
            logical_bytes: bytes.max(0) as u64,
            disk_bytes: disk,
        })
    }

    /// Before attempt `n + 1` of a transaction that asked to be retried: waits, or gives up
    /// after [`MAX_ATTEMPTS`].
    async fn before_retry(&self, n: u32) -> Result<(), StoreError> {
        if n >= MAX_ATTEMPTS {
            return Err(StoreError::unavailable(format!(
                "a transaction on PostgreSQL at {} kept conflicting with concurrent ones ({MAX_ATTEMPTS} attempts)",
                self.target.host
            )));
        }
        backoff(n).await;
        Ok(())
    }

    async fn commit(
        &self,
        table: TableId,
        ops: &[WriteOp],
    ) -> Result<Vec<EdmDateTime>, CommitError> {
        let busy = |error| CommitError {
            index: ops.len().saturating_sub(1),
            error,
        };
        retried!(self, busy, |client| self.commit_once(
            &mut client,
            table,
            ops
        ))
    }

    async fn create_table(&self, table: &TableRef) -> Result<TableInfo, StoreError> {
        retried!(self, |e| e, |client| self
            .create_table_once(&mut client, table))
    }

    async fn delete_table(&self, table: &TableRef) -> Result<i64, StoreError> {
        retried!(self, |e| e, |client| self
            .delete_table_once(&mut client, table))
    }

    /// One attempt at committing `ops` as one transaction.
    async fn commit_once(
        &self,
        client: &mut Object,
        table: TableId,
        ops: &[WriteOp],
    ) -> Result<Vec<EdmDateTime>, Abort<CommitError>> {
        let target = &self.target;
        let last = ops.len().saturating_sub(1);
        let fail_at = |index: usize| {
            move |e: tokio_postgres::Error| {
                Abort::db(target, &e, |error| CommitError { index, error })
            }
        };
        let tx = client.transaction().await.map_err(fail_at(0))?;
        let mut stamps = Vec::with_capacity(ops.len());
        for (index, op) in ops.iter().enumerate() {
            let fail = fail_at(index);
            let key = key::entity_key(table.0, &op.key.partition_key, &op.key.row_key);
            // Replace and Delete need only the value's header (the Timestamp and creation
            // instant, `apply_write` reads no further); merges need the whole value.
            let needs_value = matches!(op.kind, WriteKind::Merge | WriteKind::InsertOrMerge);
            let select = if needs_value {
                "SELECT ts, value FROM entities WHERE key = $1 FOR UPDATE"
            } else {
                SELECT_STAMPS
            };
            let stmt = tx.prepare_cached(select).await.map_err(&fail)?;
            let current = tx.query_opt(&stmt, &[&key]).await.map_err(&fail)?;
            let previous: Option<i64> = current.as_ref().map(|r| r.get(0));
            let current_value: Option<Vec<u8>> = current.as_ref().map(|r| r.get(1));
            // Later than the entity's Timestamp read under the row lock: increasing per
            // entity across nodes, whatever their clocks.
            let ts = self.clock.stamp_after(previous.map(EdmDateTime));
            let value = apply_write(op, current_value.as_deref(), ts)
                .map_err(|error| Abort::Fail(CommitError { index, error }))?;
            let changed = match (previous, value) {
                (None, None) => 1,
                (None, Some(value)) => {
                    let stmt = tx
                        .prepare_cached("INSERT INTO entities (key, ts, value) VALUES ($1, $2, $3)")
                        .await
                        .map_err(&fail)?;
                    match tx.execute(&stmt, &[&key, &ts.0, &value]).await {
                        Ok(n) => n,
                        // Another transaction inserted the entity after our read: Insert's
                        // uniqueness, enforced by the primary key; other kinds read again.
                        Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                            if op.kind == WriteKind::Insert {
                                return Err(Abort::Fail(CommitError {
                                    index,
                                    error: StoreError::EntityAlreadyExists,
                                }));
                            }
                            return Err(Abort::Retry);
                        }
                        // An index entry over PostgreSQL's B-tree limit (long non-ASCII keys).
                        Err(e) if e.code() == Some(&SqlState::PROGRAM_LIMIT_EXCEEDED) => {
                            return Err(Abort::Fail(CommitError {
                                index,
                                error: StoreError::EntityLimit(
                                    EntityLimitError::KeysTooLongForStore,
                                ),
                            }));
                        }
                        Err(e) => return Err(fail(e)),
                    }
                }
                (Some(prev), Some(value)) => {
                    let stmt = tx
                        .prepare_cached(
                            "UPDATE entities SET ts = $2, value = $3 WHERE key = $1 AND ts = $4",
                        )
                        .await
                        .map_err(&fail)?;
                    tx.execute(&stmt, &[&key, &ts.0, &value, &prev])
                        .await
                        .map_err(&fail)?
                }
                (Some(prev), None) => {
                    let stmt = tx
                        .prepare_cached("DELETE FROM entities WHERE key = $1 AND ts = $2")
                        .await
                        .map_err(&fail)?;
                    tx.execute(&stmt, &[&key, &prev]).await.map_err(&fail)?
                }
            };
            if changed != 1 {
                // The row is no longer the version read (possible where FOR UPDATE does not
                // lock, e.g. under snapshot isolation): check everything again.
                return Err(Abort::Retry);
            }
            stamps.push(ts);
        }
        tx.commit().await.map_err(fail_at(last))?;
        Ok(stamps)
    }

    async fn create_table_once(
        &self,
        client: &mut Object,
        table: &TableRef,
    ) -> Result<TableInfo, Abort<StoreError>> {
        let meta_key = key::table_meta_key(&table.account, &table.identity());
        let fail = |e: tokio_postgres::Error| Abort::db(&self.target, &e, |e| e);
        let tx = client.transaction().await.map_err(fail)?;
        if tx
            .query_opt("SELECT 1 FROM tables WHERE meta_key = $1", &[&meta_key])
            .await
            .map_err(fail)?
            .is_some()
        {
            return Err(Abort::Fail(StoreError::TableAlreadyExists));
        }
        let id: i64 = tx
            .query_one(
                "UPDATE counters SET value = value + 1 WHERE name = 'table_id' RETURNING value",
                &[],
            )
            .await
            .map_err(fail)?
            .get(0);
        let inserted = tx
            .execute(
                "INSERT INTO tables (meta_key, account, name, id, acl) VALUES ($1, $2, $3, $4, $5)",
                &[
                    &meta_key,
                    &table.account,
                    &table.name,
                    &id,
                    &Vec::<u8>::new(),
                ],
            )
            .await;
        match inserted {
            Ok(_) => {}
            // Another node created the name after our read: uniqueness by the primary key.
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                return Err(Abort::Fail(StoreError::TableAlreadyExists))
            }
            Err(e) => return Err(fail(e)),
        }
        tx.commit().await.map_err(fail)?;
        Ok(TableInfo {
            id: TableId(id as u64),
            name: table.name.clone(),
            identity: table.identity(),
            acl: Vec::new(),
        })
    }

    async fn delete_table_once(
        &self,
        client: &mut Object,
        table: &TableRef,
    ) -> Result<i64, Abort<StoreError>> {
        let meta_key = key::table_meta_key(&table.account, &table.identity());
        let fail = |e: tokio_postgres::Error| Abort::db(&self.target, &e, |e| e);
        let tx = client.transaction().await.map_err(fail)?;
        let Some(row) = tx
            .query_opt(
                "DELETE FROM tables WHERE meta_key = $1 RETURNING id",
                &[&meta_key],
            )
            .await
            .map_err(fail)?
        else {
            return Err(Abort::Fail(StoreError::TableNotFound));
        };
        let id: i64 = row.get(0);
        tx.execute(
            "INSERT INTO deleted_tables (id) VALUES ($1) ON CONFLICT (id) DO NOTHING",
            &[&id],
        )
        .await
        .map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        Ok(id)
    }

    /// Removes a deleted table's entities in chunks, then forgets the table id. Any node may
    /// run it (again): every statement is idempotent.
    async fn purge(&self, table_id: i64) -> Result<(), StoreError> {
        let (start, end) = KeyRange::all().to_bytes(table_id as u64);
        let start = match start {
            Bound::Included(k) | Bound::Excluded(k) => k,
            Bound::Unbounded => Vec::new(),
        };
        let end = match end {
            Bound::Included(k) | Bound::Excluded(k) => k,
            Bound::Unbounded => vec![0xFF; 9],
        };
        loop {
            let removed = self
                .read(|client| {
                    let (start, end) = (&start, &end);
                    async move {
                        client
                            .execute(
                                "DELETE FROM entities WHERE key IN (SELECT key FROM entities WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3)",
                                &[start, end, &PURGE_CHUNK],
                            )
                            .await
                    }
                })
                .await?;
            if removed == 0 {
                break;
            }
        }
        self.read(|client| async move {
            client
                .execute("DELETE FROM deleted_tables WHERE id = $1", &[&table_id])
                .await
        })
        .await?;
        Ok(())
    }
}

fn table_info(row: &tokio_postgres::Row) -> TableInfo {
    let meta_key: Vec<u8> = row.get(0);
    TableInfo {
        id: TableId(row.get::<_, i64>(1) as u64),
        name: row.get(2),
        identity: key::table_identity_of(&meta_key).unwrap_or_default(),
        acl: row.get(3),
    }
}

#[async_trait]
impl Store for PgStore {
    async fn create_table(&self, table: &TableRef) -> Result<TableInfo, StoreError> {
        self.shared.create_table(table).await
    }

    async fn delete_table(&self, table: &TableRef) -> Result<(), StoreError> {
        let id = self.shared.delete_table(table).await?;
        self.spawn_purge(id);
        Ok(())
    }

    async fn get_table(&self, table: &TableRef) -> Result<Option<TableInfo>, StoreError> {
        self.shared
            .get_table(&table.account, &table.identity())
            .await
    }

    async fn list_tables(
        &self,
        account: &str,
        start_folded: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TableInfo>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.shared.table_page(account, start_folded, limit).await
    }

    async fn set_table_acl(&self, table: &TableRef, acl: Vec<u8>) -> Result<(), StoreError> {
        let meta_key = key::table_meta_key(&table.account, &table.identity());
        let updated = self
            .shared
            .read(|client| {
                let (meta_key, acl) = (&meta_key, &acl);
                async move {
                    client
                        .execute(
                            "UPDATE tables SET acl = $2 WHERE meta_key = $1",
                            &[meta_key, acl],
                        )
                        .await
                }
            })
            .await?;
        if updated == 0 {
            return Err(StoreError::TableNotFound);
        }
        Ok(())
    }

    async fn get_entity(
        &self,
        table: TableId,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Option<Entity>, StoreError> {
        let key = key::entity_key(table.0, partition_key, row_key);
        let found = self
            .shared
            .read(|client| {
                let key = &key;
                async move {
                    let stmt = client
                        .prepare_cached("SELECT value FROM entities WHERE key = $1")
                        .await?;
                    let row = client.query_opt(&stmt, &[key]).await?;
                    Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
                }
            })
            .await?;
        found.map(|value| decode_entity(&key, &value)).transpose()
    }

    /// The job reads one snapshot ([`PgRows`]), so it runs once.
    async fn read(
        &self,
        table: TableId,
        job: Box<dyn ReadJob>,
    ) -> Result<Box<dyn ReadJob>, StoreError> {
        let rows = PgRows {
            shared: Arc::clone(&self.shared),
            handle: Handle::current(),
            table,
            snapshot: Mutex::new(Snapshot::NotBegun),
        };
        self.reads.run_job(job, move |job| job.run(&rows)).await
    }

    /// Durable on return: a committed transaction is the database's own guarantee.
    async fn commit(
        &self,
        table: TableId,
        ops: &[WriteOp],
    ) -> Result<Vec<EdmDateTime>, CommitError> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        self.shared.commit(table, ops).await
    }

    async fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }

    async fn get_service_properties(&self, account: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.shared
            .read(|client| async move {
                let row = client
                    .query_opt(
                        "SELECT properties FROM service_properties WHERE account = $1",
                        &[&account],
                    )
                    .await?;
                Ok(row.map(|r| r.get::<_, Vec<u8>>(0)))
            })
            .await
    }

    async fn set_service_properties(
        &self,
        account: &str,
        properties: Vec<u8>,
    ) -> Result<(), StoreError> {
        self.shared
            .read(|client| {
                let properties = &properties;
                async move {
                    client
                        .execute(
                            "INSERT INTO service_properties (account, properties) VALUES ($1, $2) \
                             ON CONFLICT (account) DO UPDATE SET properties = excluded.properties",
                            &[&account, properties],
                        )
                        .await
                }
            })
            .await?;
        Ok(())
    }

    async fn footprint(&self) -> Option<Footprint> {
        self.shared
            .footprint()
            .await
            .inspect_err(
                |e| tracing::warn!(error = %e, "reading the PostgreSQL store's size failed"),
            )
            .ok()
    }

    fn state(&self) -> Option<&dyn crate::store::state::StoreState> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_statements_follow_the_bounds() {
        let (sql, params) = page_sql(&Bound::Included(vec![1]), &Bound::Excluded(vec![2]));
        assert_eq!(
            sql,
            "SELECT key, value FROM entities WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3"
        );
        assert_eq!(params, vec![vec![1], vec![2]]);
        let (sql, params) = page_sql(&Bound::Excluded(vec![1]), &Bound::Unbounded);
        assert_eq!(
            sql,
            "SELECT key, value FROM entities WHERE key > $1 ORDER BY key LIMIT $2"
        );
        assert_eq!(params.len(), 1);
        let (sql, _) = page_sql(&Bound::Unbounded, &Bound::Included(vec![3]));
        assert_eq!(
            sql,
            "SELECT key, value FROM entities WHERE key <= $1 ORDER BY key LIMIT $2"
        );
    }

    #[test]
    fn pages_grow_but_hold_few_large_rows() {
        let small: Vec<Row> = vec![(vec![0; 20], vec![0; 100]); 64];
        assert_eq!(next_limit(FIRST_PAGE, &small), 256);
        assert_eq!(next_limit(256, &small), MAX_PAGE);
        // 1 MiB entities: 8 MiB a page.
        let large: Vec<Row> = vec![(vec![0; 20], vec![0; 1 << 20]); 4];
        assert_eq!(next_limit(MAX_PAGE, &large), 7);
        let huge: Vec<Row> = vec![(vec![0; 20], vec![0; 16 << 20])];
        assert_eq!(next_limit(MAX_PAGE, &huge), 1);
    }

    #[test]
    fn postgres_urls_are_recognised() {
        assert!(is_postgres_url("postgres://u@h/db"));
        assert!(is_postgres_url("PostgreSQL://u@h/db"));
        assert!(!is_postgres_url("/var/lib/tablestore"));
        assert!(!is_postgres_url("sled"));
    }

    #[tokio::test]
    async fn bad_urls_are_one_sentence() {
        let Err(StoreError::Database { message: m, .. }) =
            PgStore::open("postgres://u@h:notaport/db").await
        else {
            panic!("a bad port must be refused")
        };
        assert!(
            m.starts_with("the store URL is not a valid PostgreSQL URL"),
            "{m}"
        );
        assert!(!m.contains("Error {"), "{m}");
        let Err(StoreError::Database { message: m, .. }) = PgStore::open("postgres://h/db").await
        else {
            panic!("a URL without a user must be refused")
        };
        assert!(m.contains("names no database user"), "{m}");
    }
}
