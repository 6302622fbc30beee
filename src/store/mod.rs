//! Ordered storage of tables and entities; knows nothing about OData or HTTP.
//!
//! [`Store`] is the asynchronous interface the rest of the server uses: the executor awaits
//! it directly. [`KvStore`] implements it once, over any ordered key-value backend ([`Kv`]):
//! sled on disk (`sled_kv.rs`, with the RAM tier of `tiered.rs` in front) or a BTreeMap in
//! memory (`memory.rs`); `postgres/` implements it on PostgreSQL. Preconditions (If-Match,
//! insert-must-not-exist) are checked inside [`Store::commit`] under a per-partition lock and
//! applied as one atomic backend batch, so conditional writes never race and a batch is
//! all-or-nothing; the commit then awaits the store's one group commit (`group_commit.rs`)
//! when the durability mode asks for it. The store stamps Timestamps from a process-wide
//! monotonic clock, so every write gets a distinct Timestamp and hence a distinct ETag.

pub mod codec;
#[cfg(any(test, feature = "testing"))]
pub mod conformance;
pub(crate) mod footprint;
mod group_commit;
pub(crate) mod intent;
pub mod key;
pub(crate) mod legacy_log;
pub mod memory;
pub(crate) mod memory_limit;
pub mod open;
pub mod postgres;
pub(crate) mod read;
pub(crate) mod row;
pub mod sled_kv;
pub mod state;
pub mod tiered;
pub(crate) mod value_lz4;

use parking_lot::{Mutex, RwLock};
use std::borrow::Cow;
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;

use crate::model::limits::{check_entity_as, EntityLimitError};
use crate::model::{EdmDateTime, Entity, IfMatch, Property, WriteKind, WriteOp};
pub use crate::model::{TableId, TableRef};
use codec::TableRecord;
pub(crate) use footprint::Footprint;
use group_commit::GroupCommit;
pub use key::{KeyBound, KeyRange};
use read::ReadPool;
pub use read::{read_fn, read_with, ReadJob, RowSource};
pub use row::{StoredRow, StoredRows};

/// Why a store operation failed: first the outcomes of the request itself (each answered with
/// its own Azure code), then failures of the store, which keep their cause as
/// [`std::error::Error::source`]. Callers decide on the variant, never on the text.
#[derive(Debug, Clone)]
pub enum StoreError {
    TableNotFound,
    TableAlreadyExists,
    EntityNotFound,
    EntityAlreadyExists,
    /// If-Match named an ETag that is not the entity's current one.
    PreconditionFailed,
    /// A merge would make the entity exceed a whole-entity limit.
    EntityLimit(EntityLimitError),
    /// Another process (a running server) holds the data folder.
    FolderInUse,
    /// Writes are refused while the file system has less free space than the reserve.
    DiskFull {
        free: u64,
        reserve: u64,
    },
    /// An earlier write failed and the store reopens itself; writes are refused meanwhile.
    Reopening(&'static str),
    /// The backend failed while doing `doing`; the source says why.
    Io {
        doing: Cow<'static, str>,
        source: ErrorSource,
    },
    /// The database refused the work or the configuration; `message` is one sentence for
    /// the user (it names the database and what to do).
    Database {
        message: String,
        source: Option<ErrorSource>,
    },
    /// The database behind the store cannot be reached (down, restarting, connection lost);
    /// the request may succeed when retried. `message` is one sentence.
    Unavailable {
        message: String,
        source: Option<ErrorSource>,
    },
    /// Stored bytes could not be decoded, or the folder is not the store it should be.
    Corrupt(String),
}

/// The cause of a [`StoreError`], shared so that the error stays cheap to clone (a failed
/// flush is reported to every writer that waited for it).
pub(crate) type ErrorSource = Arc<dyn std::error::Error + Send + Sync>;

impl StoreError {
    /// Whether the store failed, rather than refused the request: the request was not at
    /// fault and may succeed when retried.
    pub(crate) fn is_failure(&self) -> bool {
        !matches!(
            self,
            StoreError::TableNotFound
                | StoreError::TableAlreadyExists
                | StoreError::EntityNotFound
                | StoreError::EntityAlreadyExists
                | StoreError::PreconditionFailed
                | StoreError::EntityLimit(_)
        )
    }

    /// An I/O failure while doing `doing`.
    pub fn io(doing: impl Into<Cow<'static, str>>, source: std::io::Error) -> StoreError {
        StoreError::Io {
            doing: doing.into(),
            source: Arc::new(source),
        }
    }

    /// The database refused: `message` is one sentence for the user.
    pub(crate) fn database(message: impl Into<String>) -> StoreError {
        StoreError::Database {
            message: message.into(),
            source: None,
        }
    }

    /// The database cannot be reached now: `message` is one sentence for the user.
    pub(crate) fn unavailable(message: impl Into<String>) -> StoreError {
        StoreError::Unavailable {
            message: message.into(),
            source: None,
        }
    }

    /// The kind of the I/O error behind this one, if an I/O error caused it.
    pub(crate) fn io_kind(&self) -> Option<std::io::ErrorKind> {
        let mut cause = std::error::Error::source(self);
        while let Some(e) = cause {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                return Some(io.kind());
            }
            cause = e.source();
        }
        None
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::TableNotFound => f.write_str("the table does not exist"),
            StoreError::TableAlreadyExists => f.write_str("the table already exists"),
            StoreError::EntityNotFound => f.write_str("the entity does not exist"),
            StoreError::EntityAlreadyExists => f.write_str("the entity already exists"),
            StoreError::PreconditionFailed => f.write_str("the entity's ETag does not match"),
            StoreError::EntityLimit(l) => write!(f, "the entity cannot be stored: {l}"),
            StoreError::FolderInUse => f.write_str("the data folder is in use by another process"),
            StoreError::DiskFull { free, reserve } => write!(
                f,
                "not enough free disk space: {free} bytes free, {reserve} kept in reserve"
            ),
            StoreError::Reopening(why) => f.write_str(why),
            StoreError::Io { doing, source } => write!(f, "{doing}: {source}"),
            StoreError::Database { message, .. } | StoreError::Unavailable { message, .. } => {
                f.write_str(message)
            }
            StoreError::Corrupt(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(&**source as _),
            StoreError::Database { source, .. } | StoreError::Unavailable { source, .. } => {
                source.as_deref().map(|s| s as _)
            }
            _ => None,
        }
    }
}

/// Equal when of the same kind with the same details (a failure's cause compares by its text).
impl PartialEq for StoreError {
    fn eq(&self, other: &StoreError) -> bool {
        use StoreError::*;
        match (self, other) {
            (TableNotFound, TableNotFound)
            | (TableAlreadyExists, TableAlreadyExists)
            | (EntityNotFound, EntityNotFound)
            | (EntityAlreadyExists, EntityAlreadyExists)
            | (PreconditionFailed, PreconditionFailed)
            | (FolderInUse, FolderInUse) => true,
            (EntityLimit(a), EntityLimit(b)) => a == b,
            (
                DiskFull {
                    free: a,
                    reserve: r,
                },
                DiskFull {
                    free: b,
                    reserve: s,
                },
            ) => a == b && r == s,
            (Reopening(a), Reopening(b)) => a == b,
            (Corrupt(a), Corrupt(b)) => a == b,
            (Io { .. }, Io { .. })
            | (Database { .. }, Database { .. })
            | (Unavailable { .. }, Unavailable { .. }) => self.to_string() == other.to_string(),
            _ => false,
        }
    }
}

impl Eq for StoreError {}

/// Failure of one operation of a [`Store::commit`]; nothing of the commit was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitError {
    pub(crate) index: usize,
    pub error: StoreError,
}

/// A table as the store knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    pub id: TableId,
    /// Name with the casing used at creation.
    pub(crate) name: String,
    /// The identity it is stored under ([`crate::model::names::table_identity`]).
    pub(crate) identity: String,
    /// Stored access policies (opaque bytes owned by the auth layer).
    pub(crate) acl: Vec<u8>,
}

/// The store contract: tables addressed by [`TableRef`], entities by the [`TableId`] a table
/// resolved to, key ranges ([`KeyRange`]) and rows ([`StoredRow`]) in Azure's key order.
/// Every implementation passes the one conformance suite (`conformance`, in test builds).
///
/// Asynchronous, so that the server awaits the store on its own runtime: a point read or a
/// commit runs where it is awaited (`KvStore`'s take microseconds; PostgreSQL's await the
/// database), scans run as [`ReadJob`]s on the blocking pool, and a commit returns once the
/// write is as durable as the store's durability mode promises.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Creates the table; its name must be valid ([`crate::model::TableName::parse`]).
    async fn create_table(&self, table: &TableRef) -> Result<TableInfo, StoreError>;
    /// Removes the table and (eventually, in the background) its entities.
    async fn delete_table(&self, table: &TableRef) -> Result<(), StoreError>;
    /// Looks a table up by name, case-insensitively or case-sensitively as `table` says.
    async fn get_table(&self, table: &TableRef) -> Result<Option<TableInfo>, StoreError>;
    /// At most `limit` tables of an account, ordered by identity (the lower-cased name of every
    /// table the storage flavour creates), from `start_folded` (inclusive).
    async fn list_tables(
        &self,
        account: &str,
        start_folded: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TableInfo>, StoreError>;
    async fn set_table_acl(&self, table: &TableRef, acl: Vec<u8>) -> Result<(), StoreError>;
    async fn get_entity(
        &self,
        table: TableId,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Option<Entity>, StoreError>;
    /// Runs `job` (the scans of `table` behind one response page) over the table's rows on
    /// the blocking pool, so that it sees each change set committed to `table` whole or not
    /// at all while commits go on (the store may run it again from the start for that), and
    /// gives it back. Not across jobs: the next page reads later data.
    /// [`read::read_with`] is the typed way to call it.
    async fn read(
        &self,
        table: TableId,
        job: Box<dyn ReadJob>,
    ) -> Result<Box<dyn ReadJob>, StoreError>;
    /// Applies all operations atomically (all share one PartitionKey when more than one), or
    /// none. Returns the new Timestamp of each operation (`Delete`'s is unused) once they are
    /// as durable as the store promises ([`Durability`]).
    async fn commit(
        &self,
        table: TableId,
        ops: &[WriteOp],
    ) -> Result<Vec<EdmDateTime>, CommitError>;
    /// Forces everything written so far to stable storage.
    async fn flush(&self) -> Result<(), StoreError>;
    /// The account's service properties document (opaque to the store), if ever set.
    async fn get_service_properties(&self, account: &str) -> Result<Option<Vec<u8>>, StoreError>;
    async fn set_service_properties(
        &self,
        account: &str,
        properties: Vec<u8>,
    ) -> Result<(), StoreError>;
    /// The stored entities' count and logical size, and the data folder's size. `None` if
    /// the store does not keep count.
    async fn footprint(&self) -> Option<Footprint> {
        None
    }
    /// Flushes the store's group commit has run (the `tablestore_group_commit_flushes_total`
    /// metric); 0 for stores that have none.
    fn group_commit_flushes(&self) -> u64 {
        0
    }
    /// Reset, snapshots and restore ([`state`]); `None` for a store without them.
    fn state(&self) -> Option<&dyn state::StoreState> {
        None
    }
}

/// Runs `future` to completion on a runtime of its own: for synchronous tests (property
/// tests) of code that awaits the store.
#[cfg(test)]
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

/// The ordered key-value backend under [`KvStore`]. Two keyspaces: table metadata and entities.
pub trait Kv: Send + Sync + 'static {
    type Bytes: AsRef<[u8]> + Send;
    type Iter<'a>: Iterator<Item = Result<(Self::Bytes, Self::Bytes), StoreError>> + Send + 'a
    where
        Self: 'a;

    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Self::Bytes>, StoreError>;
    fn range(&self, space: Space, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> Self::Iter<'_>;
    /// Visits the entries of a range in key order, lent in place, until `visit` returns false.
    fn visit(
        &self,
        space: Space,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), StoreError> {
        visit_entries(self.range(space, start, end), visit)
    }
    /// The key of an entry near the middle of a range holding at least `min_rows` entries
    /// (never the range's first entry), for scanning the range's halves at once; `None` when
    /// the range is smaller or the backend reads it from disk (two cursors would only add
    /// seeks to a scan bound by the backend's pages).
    fn split_point(
        &self,
        _space: Space,
        _start: &Bound<Vec<u8>>,
        _end: &Bound<Vec<u8>>,
        _min_rows: usize,
    ) -> Option<Vec<u8>> {
        None
    }
    /// Applies all puts (`Some`) and removes (`None`) atomically.
    fn apply(&self, space: Space, batch: Vec<(Vec<u8>, Option<Vec<u8>>)>)
        -> Result<(), StoreError>;
    /// [`Kv::apply`] of puts only, to keys the caller found holding no value under the lock
    /// that orders every write of them (the partition lock): a backend may make such a write
    /// crash-atomic more cheaply (sled: a record of its keys only, see `intent`).
    fn apply_new_keys(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        self.apply(space, batch)
    }
    fn flush(&self) -> Result<(), StoreError>;
    /// Whether [`Kv::flush`] does any work (false for memory).
    fn is_persistent(&self) -> bool;
    /// Called before a write: a backend may reopen itself here after a failed write (sled
    /// refuses all writes after one failed). Returns the backend's generation.
    fn begin_write(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
    /// A number that changes whenever the backend discarded writes that were not yet flushed
    /// (by reopening). A write is durable only if its flush ended in the generation it was
    /// applied in.
    fn generation(&self) -> u64 {
        0
    }
    /// The entity keyspace's totals and the bytes on disk ([`Store::footprint`]).
    fn footprint(&self) -> Option<Footprint> {
        None
    }
    /// Table `table_id` was deleted: its entities are about to be purged and never read again.
    fn forget_table(&self, _table_id: u64) {}
    /// A value read from the backend as shared bytes, for an image of the store's state
    /// ([`state::Image`]): a copy, unless the backend already holds it shared (the memory
    /// store), so an image of the memory store shares its entities' bytes.
    fn share(bytes: Self::Bytes) -> Arc<[u8]> {
        Arc::from(bytes.as_ref())
    }
    /// [`Kv::apply_new_keys`] of entities whose values are shared bytes (an image's, being
    /// restored): a backend that keeps values shared (the memory store) keeps these as they
    /// are, so a restored entity shares its bytes with the snapshot; others copy them.
    fn put_new_shared(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Arc<[u8]>)>,
    ) -> Result<(), StoreError> {
        let batch = batch
            .into_iter()
            .map(|(k, v)| (k, Some(v.to_vec())))
            .collect();
        self.apply_new_keys(space, batch)
    }
}

/// Lends the entries of `entries` in order to `visit` until it returns false (the body of
/// [`Kv::visit`] for a backend that reads ranges as iterators).
pub(crate) fn visit_entries<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    entries: impl Iterator<Item = Result<(K, V), StoreError>>,
    visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
) -> Result<(), StoreError> {
    for entry in entries {
        let (k, v) = entry?;
        if !visit(k.as_ref(), v.as_ref()) {
            break;
        }
    }
    Ok(())
}

/// Bytes a [`Kv`] layered over a backend (the RAM tier, the write-ahead log) holds itself,
/// shared with the readers that copied them out, or the backend's own.
pub enum LayeredBytes<T> {
    Held(Arc<[u8]>),
    Backend(T),
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for LayeredBytes<T> {
    fn as_ref(&self) -> &[u8] {
        match self {
            LayeredBytes::Held(b) => b,
            LayeredBytes::Backend(b) => b.as_ref(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    Tables,
    Entities,
}

/// When an acknowledged write reaches stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Every commit is flushed before it returns; concurrent commits share one flush.
    #[default]
    Durable,
    /// The backend flushes in the background (sled: every 500 ms); a crash may lose the
    /// last moments of writes. Graceful shutdown still flushes.
    Relaxed,
}

const LOCK_STRIPES: usize = 1024;
/// Stripes (by table id) of the commit counters behind consistent reads ([`Store::read`]).
const WATCH_STRIPES: usize = 64;
/// Reads tried while no commit overlaps them before commits are held off for one.
const OPTIMISTIC_READS: usize = 4;
/// Metadata keys outside every account's key range (account encodings never start with 0xFF).
const NEXT_TABLE_ID_KEY: &[u8] = b"\xFF\xFFnext-table-id";
const DELETED_TABLE_PREFIX: &[u8] = b"\xFF\xFEdeleted-table/";
const SERVICE_PROPERTIES_PREFIX: &[u8] = b"\xFF\xFDservice-properties/";

fn service_properties_key(account: &str) -> Vec<u8> {
    let mut key = SERVICE_PROPERTIES_PREFIX.to_vec();
    key.extend_from_slice(account.as_bytes());
    key
}

/// Hands out Timestamps in ticks: now, but later than every one handed out before by this
/// clock and than a given previous one, so no two writes share a Timestamp (and an ETag).
#[derive(Default)]
pub(crate) struct Clock {
    last: AtomicI64,
}

impl Clock {
    /// A Timestamp later than `previous` (when given) and than every one this clock handed
    /// out, and not before now.
    pub(crate) fn stamp_after(&self, previous: Option<EdmDateTime>) -> EdmDateTime {
        let floor = EdmDateTime::now().0.max(previous.map_or(0, |p| p.0 + 1));
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let next = floor.max(last + 1);
            match self
                .last
                .compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return EdmDateTime(next),
                Err(current) => last = current,
            }
        }
    }
}

/// The single [`Store`] implementation over a key-value backend, generic over the backend.
pub struct KvStore<B: Kv> {
    kv: Arc<B>,
    /// Serialises table creation/deletion and id allocation.
    table_lock: Mutex<()>,
    next_table_id: AtomicU64,
    /// Per-partition locks (striped) held while a commit checks preconditions and applies.
    partition_locks: Vec<Mutex<()>>,
    /// Per stripe of `partition_locks`: odd while a multi-key write applies, so that a point
    /// read never sees part of a change set (the backend's apply need not be atomic for
    /// readers: sled's is not, see `intent.rs`).
    applying: Vec<AtomicU64>,
    clock: Clock,
    /// Makes writes durable (`None`: nothing to flush, in memory or with relaxed durability).
    group_commit: Option<GroupCommit>,
    /// Commits to the entities of the tables of each stripe, for consistent reads.
    watches: Arc<CommitWatches>,
    reads: ReadPool,
}

/// Commits to the tables of one stripe, counted as they start and finish applying: a read
/// that began with none in flight and saw none start meanwhile overlapped none, so it saw
/// each change set whole or not at all (the backends' range reads are no snapshots: sled's
/// iterators are not, the RAM tier and the memory store read a chunk per lock). `gate`, held
/// shared by every commit while it applies, lets a read that kept overlapping commits hold
/// them off once.
#[derive(Default)]
struct CommitWatch {
    started: AtomicU64,
    finished: AtomicU64,
    gate: RwLock<()>,
}

/// The [`CommitWatch`]es of every table stripe.
struct CommitWatches(Vec<CommitWatch>);

impl CommitWatches {
    fn new() -> CommitWatches {
        CommitWatches((0..WATCH_STRIPES).map(|_| CommitWatch::default()).collect())
    }

    fn of(&self, table_id: u64) -> &CommitWatch {
        &self.0[(table_id % WATCH_STRIPES as u64) as usize]
    }

    /// Runs `read` (which may be run again from the start) so that it sees each change set
    /// committed to `table_id` whole or not at all, while commits go on.
    fn read_consistently(
        &self,
        table_id: u64,
        read: &mut dyn FnMut() -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let watch = self.of(table_id);
        for _ in 0..OPTIMISTIC_READS {
            // `finished` first: equal counts then mean no commit was applying at the second
            // load (a commit counts `started` before `finished`).
            let finished = watch.finished.load(Ordering::SeqCst);
            let started = watch.started.load(Ordering::SeqCst);
            if finished == started {
                read()?;
                if watch.started.load(Ordering::SeqCst) == started {
                    return Ok(());
                }
            } else {
                std::thread::yield_now();
            }
        }
        // Commits keep overlapping the read: hold them off while it runs once more.
        let _gate = watch.gate.write();
        read()
    }
}

/// One table's rows in a [`KvStore`], as a [`ReadJob`] reads them.
pub struct KvRows<B: Kv> {
    kv: Arc<B>,
    table: TableId,
}

impl<B: Kv> RowSource for KvRows<B> {
    fn scan_raw(
        &self,
        range: &KeyRange,
        visit: &mut dyn FnMut(StoredRow<'_>) -> bool,
    ) -> Result<(), StoreError> {
        let (start, end) = range.to_bytes(self.table.0);
        self.kv.visit(Space::Entities, start, end, &mut |k, v| {
            visit(StoredRow::new(k, v))
        })
    }

    fn split_point(&self, range: &KeyRange, min_rows: usize) -> Option<String> {
        let (start, end) = range.to_bytes(self.table.0);
        let middle = self
            .kv
            .split_point(Space::Entities, &start, &end, min_rows)?;
        let (partition, _) = key::decode_entity_key(&middle)?;
        // The halves meet at a partition's start (a partition is read by one thread); the
        // first half must still hold a row.
        let (boundary, _) = KeyRange::partition(&partition).to_bytes(self.table.0);
        let Bound::Included(boundary) = boundary else {
            return None;
        };
        let mut first = None;
        self.kv
            .visit(Space::Entities, start, end, &mut |k, _| {
                first = Some(k.to_vec());
                false
            })
            .ok()?;
        (first? < boundary).then_some(partition)
    }
}

impl<B: Kv> KvStore<B> {
    pub fn open(kv: B, durability: Durability) -> Result<Arc<KvStore<B>>, StoreError> {
        let kv = Arc::new(kv);
        let next = match kv.get(Space::Tables, NEXT_TABLE_ID_KEY)? {
            Some(b) => u64::from_le_bytes(
                b.as_ref()
                    .try_into()
                    .map_err(|_| StoreError::Corrupt("table id counter".into()))?,
            ),
            None => 1,
        };
        let group_commit = if durability == Durability::Durable && kv.is_persistent() {
            // The flusher holds the backend weakly: closing the store drops it at once.
            let backend = Arc::downgrade(&kv);
            Some(GroupCommit::start(Box::new(move || {
                let kv = backend.upgrade()?;
                let result = kv.flush();
                Some((result, kv.generation()))
            }))?)
        } else {
            None
        };
        let store = Arc::new(KvStore {
            kv,
            table_lock: Mutex::new(()),
            next_table_id: AtomicU64::new(next),
            partition_locks: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            applying: (0..LOCK_STRIPES).map(|_| AtomicU64::new(0)).collect(),
            clock: Clock::default(),
            group_commit,
            watches: Arc::new(CommitWatches::new()),
            reads: ReadPool::new(),
        });
        // Finish purging tables whose deletion was interrupted.
        let pending: Vec<u64> = store
            .kv
            .range(
                Space::Tables,
                Bound::Included(DELETED_TABLE_PREFIX.to_vec()),
                Bound::Unbounded,
            )
            .filter_map(Result::ok)
            .filter_map(|(k, _)| {
                let k = k.as_ref();
                k.strip_prefix(DELETED_TABLE_PREFIX)
                    .and_then(|id| id.try_into().ok())
                    .map(u64::from_be_bytes)
            })
            .collect();
        for id in pending {
            store.spawn_purge(id);
        }
        Ok(store)
    }

    /// One table's rows as read jobs see them, read directly on the calling thread (not
    /// through [`Store::read`], so without its consistency): for tests and benchmarks.
    pub fn rows(&self, table: TableId) -> KvRows<B> {
        KvRows {
            kv: Arc::clone(&self.kv),
            table,
        }
    }

    /// A Timestamp later than every one handed out before (by this process).
    fn next_timestamp(&self) -> EdmDateTime {
        self.clock.stamp_after(None)
    }

    /// The stripe of a partition's lock and apply counter.
    fn stripe(table_id: u64, partition_key: &str) -> usize {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        table_id.hash(&mut h);
        partition_key.hash(&mut h);
        (h.finish() as usize) % LOCK_STRIPES
    }

    /// Reads one entity's stored bytes as of before or after each change set of its
    /// partition, never in the middle of one: read, and if a multi-key write of the stripe
    /// was applying or started meanwhile, read again under the partition's lock (which that
    /// write holds until it has applied).
    fn get_whole(
        &self,
        table_id: u64,
        partition_key: &str,
        key: &[u8],
    ) -> Result<Option<B::Bytes>, StoreError> {
        let stripe = Self::stripe(table_id, partition_key);
        let applying = &self.applying[stripe];
        let before = applying.load(Ordering::Acquire);
        if before.is_multiple_of(2) {
            let value = self.kv.get(Space::Entities, key)?;
            if applying.load(Ordering::Acquire) == before {
                return Ok(value);
            }
        }
        let _guard = self.partition_locks[stripe].lock();
        self.kv.get(Space::Entities, key)
    }

    /// Waits until writes applied in backend generation `generation` are durable (when the
    /// store makes them so).
    async fn durable(&self, generation: u64) -> Result<(), StoreError> {
        match &self.group_commit {
            Some(group) => group.wait(generation).await,
            None => Ok(()),
        }
    }

    /// Applies one metadata write; returns the backend generation it was applied in.
    fn write_tables(&self, batch: Vec<(Vec<u8>, Option<Vec<u8>>)>) -> Result<u64, StoreError> {
        let generation = self.kv.begin_write()?;
        self.kv.apply(Space::Tables, batch)?;
        Ok(generation)
    }

    fn read_table(&self, account: &str, folded: &str) -> Result<Option<TableRecord>, StoreError> {
        match self
            .kv
            .get(Space::Tables, &key::table_meta_key(account, folded))?
        {
            Some(bytes) => codec::decode_table(bytes.as_ref())
                .map(Some)
                .ok_or_else(|| StoreError::Corrupt(format!("table record of {folded}"))),
            None => Ok(None),
        }
    }

    /// Creates the table record under the table lock; returns it and the generation.
    fn apply_create_table(&self, table: &TableRef) -> Result<(TableInfo, u64), StoreError> {
        let _guard = self.table_lock.lock();
        let account = table.account.as_str();
        let folded = table.identity();
        if self.read_table(account, &folded)?.is_some() {
            return Err(StoreError::TableAlreadyExists);
        }
        let id = self.next_table_id.fetch_add(1, Ordering::SeqCst);
        let record = TableRecord {
            id,
            name: table.name.clone(),
            acl: Vec::new(),
        };
        let generation = self.write_tables(vec![
            (
                NEXT_TABLE_ID_KEY.to_vec(),
                Some((id + 1).to_le_bytes().to_vec()),
            ),
            (
                key::table_meta_key(account, &folded),
                Some(codec::encode_table(&record)),
            ),
        ])?;
        let info = TableInfo {
            id: TableId(id),
            name: record.name,
            identity: folded,
            acl: record.acl,
        };
        Ok((info, generation))
    }

    /// Removes the table record under the table lock, leaving a marker for the purge;
    /// returns the table id and the generation.
    fn apply_delete_table(&self, table: &TableRef) -> Result<(u64, u64), StoreError> {
        let _guard = self.table_lock.lock();
        let account = table.account.as_str();
        let folded = table.identity();
        let record = self
            .read_table(account, &folded)?
            .ok_or(StoreError::TableNotFound)?;
        let mut marker = DELETED_TABLE_PREFIX.to_vec();
        marker.extend_from_slice(&record.id.to_be_bytes());
        let generation = self.write_tables(vec![
            (key::table_meta_key(account, &folded), None),
            (marker, Some(Vec::new())),
        ])?;
        Ok((record.id, generation))
    }

    fn apply_table_acl(&self, table: &TableRef, acl: Vec<u8>) -> Result<u64, StoreError> {
        let _guard = self.table_lock.lock();
        let account = table.account.as_str();
        let folded = table.identity();
        let mut record = self
            .read_table(account, &folded)?
            .ok_or(StoreError::TableNotFound)?;
        record.acl = acl;
        self.write_tables(vec![(
            key::table_meta_key(account, &folded),
            Some(codec::encode_table(&record)),
        )])
    }

    /// Checks the operations' preconditions under the partition lock and applies them as
    /// one backend batch. Returns their Timestamps and the generation they were applied in;
    /// they are visible to reads, not yet durable.
    fn apply_commit(
        &self,
        table: TableId,
        ops: &[WriteOp],
    ) -> Result<(Vec<EdmDateTime>, u64), CommitError> {
        let table_id = table.0;
        let Some(first) = ops.first() else {
            return Ok((Vec::new(), self.kv.generation()));
        };
        let last = ops.len() - 1;
        let generation = self
            .kv
            .begin_write()
            .map_err(|error| CommitError { index: last, error })?;
        let stripe = Self::stripe(table_id, &first.key.partition_key);
        let _guard = self.partition_locks[stripe].lock();
        let mut batch = Vec::with_capacity(ops.len());
        let mut stamps = Vec::with_capacity(ops.len());
        // Whether every operation puts a key found holding no value (inserts of new entities).
        let mut new_keys = true;
        for (index, op) in ops.iter().enumerate() {
            let key = key::entity_key(table_id, &op.key.partition_key, &op.key.row_key);
            // Insert Or Replace has no precondition and, under Storage, keeps nothing of the
            // old entity: the lookup would be wasted (Cosmos keeps its creation instant).
            let current =
                if op.kind == WriteKind::InsertOrReplace && !op.limits.upsert_keeps_creation() {
                    None
                } else {
                    self.kv
                        .get(Space::Entities, &key)
                        .map_err(|error| CommitError { index, error })?
                };
            let ts = self.next_timestamp();
            let value = apply_write(op, current.as_ref().map(AsRef::as_ref), ts)
                .map_err(|error| CommitError { index, error })?;
            new_keys &=
                op.kind != WriteKind::InsertOrReplace && current.is_none() && value.is_some();
            batch.push((key, value));
            stamps.push(ts);
        }
        let watch = self.watches.of(table_id);
        let applied = {
            let _gate = watch.gate.read();
            watch.started.fetch_add(1, Ordering::SeqCst);
            let several = batch.len() > 1;
            if several {
                self.applying[stripe].fetch_add(1, Ordering::AcqRel);
            }
            let applied = if new_keys {
                self.kv.apply_new_keys(Space::Entities, batch)
            } else {
                self.kv.apply(Space::Entities, batch)
            };
            if several {
                self.applying[stripe].fetch_add(1, Ordering::AcqRel);
            }
            watch.finished.fetch_add(1, Ordering::SeqCst);
            applied
        };
        applied.map_err(|error| CommitError { index: last, error })?;
        Ok((stamps, generation))
    }

    /// Removes every entity of a deleted table, in chunks, then forgets the table id.
    fn purge_table(kv: &B, table_id: u64) -> Result<(), StoreError> {
        kv.forget_table(table_id);
        let (start, end) = KeyRange::all().to_bytes(table_id);
        loop {
            let chunk: Vec<(Vec<u8>, Option<Vec<u8>>)> = kv
                .range(Space::Entities, start.clone(), end.clone())
                .take(1000)
                .map(|r| r.map(|(k, _)| (k.as_ref().to_vec(), None)))
                .collect::<Result<_, _>>()?;
            if chunk.is_empty() {
                break;
            }
            kv.apply(Space::Entities, chunk)?;
        }
        let mut marker = DELETED_TABLE_PREFIX.to_vec();
        marker.extend_from_slice(&table_id.to_be_bytes());
        kv.apply(Space::Tables, vec![(marker, None)])
    }

    fn spawn_purge(&self, table_id: u64) {
        let kv = Arc::clone(&self.kv);
        let spawned = std::thread::Builder::new()
            .name(format!("purge-table-{table_id}"))
            .spawn(move || {
                if let Err(e) = Self::purge_table(&kv, table_id) {
                    tracing::warn!(table_id, error = ?e, "purging a deleted table failed; will retry at next start");
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "could not start table purge thread");
        }
    }
}

/// The new stored bytes of one operation (`None`: the entity is removed), given the entity's
/// current stored bytes and the Timestamp the write gets: checks the operation's precondition
/// (insert-must-not-exist, If-Match) and, for merges, the whole-entity limits. An entity that
/// exists keeps its creation instant; a new one is created at `ts`. Shared by every store so
/// that all of them apply writes alike. Unless the operation merges, `current` may be cut to
/// its first [`codec::ENTITY_STAMPS_LEN`] bytes.
pub(crate) fn apply_write(
    op: &WriteOp,
    current: Option<&[u8]>,
    ts: EdmDateTime,
) -> Result<Option<Vec<u8>>, StoreError> {
    let current_stamps = match current {
        Some(b) => Some(
            codec::decode_entity_stamps(b)
                .ok_or_else(|| StoreError::Corrupt("entity timestamp".into()))?,
        ),
        None => None,
    };
    let current_ts = current_stamps.map(|s| s.timestamp);
    // Under Storage's rules an Insert Or Replace counts as a new entity whether or not the
    // store looked the old one up (`KvStore` does not), so every store orders alike.
    let keeps_creation = op.kind != WriteKind::InsertOrReplace || op.limits.upsert_keeps_creation();
    let stamps = codec::EntityStamps {
        timestamp: ts,
        created: match current_stamps {
            Some(current) if keeps_creation => current.created,
            _ => ts,
        },
    };
    let check_if_match = || match (current_ts, op.if_match) {
        (None, _) => Err(StoreError::EntityNotFound),
        (Some(_), IfMatch::Any) => Ok(()),
        (Some(ts), IfMatch::ETag(want)) if ts == want => Ok(()),
        (Some(_), IfMatch::ETag(_) | IfMatch::Unmatchable) => Err(StoreError::PreconditionFailed),
    };
    let replace = || Some(codec::encode_entity_stamped(stamps, &op.properties));
    let merge = || -> Result<Option<Vec<u8>>, StoreError> {
        let mut props: Vec<Property> = match current {
            Some(b) => {
                codec::decode_entity(b)
                    .ok_or_else(|| StoreError::Corrupt("entity".into()))?
                    .1
            }
            None => Vec::new(),
        };
        for p in &op.properties {
            match props.iter_mut().find(|q| q.name == p.name) {
                Some(q) => q.value = p.value.clone(),
                None => props.push(p.clone()),
            }
        }
        check_entity_as(op.limits, &op.key.partition_key, &op.key.row_key, &props)
            .map_err(StoreError::EntityLimit)?;
        Ok(Some(codec::encode_entity_stamped(stamps, &props)))
    };
    Ok(match op.kind {
        WriteKind::Insert => {
            if current.is_some() {
                return Err(StoreError::EntityAlreadyExists);
            }
            replace()
        }
        WriteKind::InsertOrReplace => replace(),
        WriteKind::InsertOrMerge => merge()?,
        WriteKind::Update => {
            check_if_match()?;
            replace()
        }
        WriteKind::Merge => {
            check_if_match()?;
            merge()?
        }
        WriteKind::Delete => {
            check_if_match()?;
            None
        }
    })
}

#[async_trait]
impl<B: Kv> Store for KvStore<B> {
    async fn create_table(&self, table: &TableRef) -> Result<TableInfo, StoreError> {
        let (info, generation) = self.apply_create_table(table)?;
        self.durable(generation).await?;
        Ok(info)
    }

    async fn delete_table(&self, table: &TableRef) -> Result<(), StoreError> {
        let (id, generation) = self.apply_delete_table(table)?;
        self.durable(generation).await?;
        self.spawn_purge(id);
        Ok(())
    }

    async fn get_table(&self, table: &TableRef) -> Result<Option<TableInfo>, StoreError> {
        let identity = table.identity();
        Ok(self
            .read_table(&table.account, &identity)?
            .map(|r| TableInfo {
                id: TableId(r.id),
                name: r.name,
                identity,
                acl: r.acl,
            }))
    }

    async fn list_tables(
        &self,
        account: &str,
        start_folded: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TableInfo>, StoreError> {
        let prefix = key::account_prefix(account);
        let start = key::table_meta_key(account, start_folded.unwrap_or(""));
        let end = {
            // The prefix ends with the terminator 00 01; 00 02 bounds it.
            let mut e = prefix.clone();
            let n = e.len();
            e[n - 1] = 0x02;
            e
        };
        self.kv
            .range(Space::Tables, Bound::Included(start), Bound::Excluded(end))
            .take(limit)
            .map(|r| {
                let (k, v) = r?;
                let identity = key::table_identity_of(k.as_ref());
                codec::decode_table(v.as_ref())
                    .zip(identity)
                    .map(|(r, identity)| TableInfo {
                        id: TableId(r.id),
                        name: r.name,
                        identity,
                        acl: r.acl,
                    })
                    .ok_or_else(|| StoreError::Corrupt("table record".into()))
            })
            .collect()
    }

    async fn set_table_acl(&self, table: &TableRef, acl: Vec<u8>) -> Result<(), StoreError> {
        let generation = self.apply_table_acl(table, acl)?;
        self.durable(generation).await
    }

    async fn get_entity(
        &self,
        table: TableId,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Option<Entity>, StoreError> {
        let key = key::entity_key(table.0, partition_key, row_key);
        match self.get_whole(table.0, partition_key, &key)? {
            Some(bytes) => {
                let (timestamp, properties) = codec::decode_entity(bytes.as_ref())
                    .ok_or_else(|| StoreError::Corrupt("entity".into()))?;
                Ok(Some(Entity {
                    partition_key: partition_key.to_string(),
                    row_key: row_key.to_string(),
                    timestamp,
                    properties,
                }))
            }
            None => Ok(None),
        }
    }

    async fn read(
        &self,
        table: TableId,
        job: Box<dyn ReadJob>,
    ) -> Result<Box<dyn ReadJob>, StoreError> {
        let rows = self.rows(table);
        let watches = Arc::clone(&self.watches);
        self.reads
            .run_job(job, move |job| {
                watches.read_consistently(table.0, &mut || job.run(&rows))
            })
            .await
    }

    async fn commit(
        &self,
        table: TableId,
        ops: &[WriteOp],
    ) -> Result<Vec<EdmDateTime>, CommitError> {
        let (stamps, generation) = self.apply_commit(table, ops)?;
        self.durable(generation)
            .await
            .map_err(|error| CommitError {
                index: ops.len().saturating_sub(1),
                error,
            })?;
        Ok(stamps)
    }

    async fn flush(&self) -> Result<(), StoreError> {
        if !self.kv.is_persistent() {
            return Ok(());
        }
        let kv = Arc::clone(&self.kv);
        self.reads.run(move || kv.flush()).await
    }

    async fn get_service_properties(&self, account: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .kv
            .get(Space::Tables, &service_properties_key(account))?
            .map(|b| b.as_ref().to_vec()))
    }

    async fn set_service_properties(
        &self,
        account: &str,
        properties: Vec<u8>,
    ) -> Result<(), StoreError> {
        let generation =
            self.write_tables(vec![(service_properties_key(account), Some(properties))])?;
        self.durable(generation).await
    }

    async fn footprint(&self) -> Option<Footprint> {
        // Walks the data folder: off the async workers.
        let kv = Arc::clone(&self.kv);
        self.reads.run(move || Ok(kv.footprint())).await.ok()?
    }

    fn group_commit_flushes(&self) -> u64 {
        self.group_commit.as_ref().map_or(0, GroupCommit::flushes)
    }

    fn state(&self) -> Option<&dyn state::StoreState> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every store error reads as words (logs and start-up lines print it), never as Rust's
    /// debug text, and keeps its cause.
    #[test]
    fn store_errors_read_as_words_and_keep_their_cause() {
        let errors = [
            StoreError::EntityLimit(EntityLimitError::TooManyProperties),
            StoreError::EntityLimit(EntityLimitError::EntityTooLarge),
            StoreError::EntityLimit(EntityLimitError::KeysTooLongForStore),
            StoreError::FolderInUse,
            StoreError::DiskFull {
                free: 1,
                reserve: 2,
            },
            StoreError::io("writing", std::io::ErrorKind::StorageFull.into()),
            StoreError::database("the database said no"),
            StoreError::Corrupt("the entity".into()),
        ];
        for e in &errors {
            let text = e.to_string();
            assert!(
                !text.contains('{') && !text.contains("::") && !text.contains("Error("),
                "{text}"
            );
            if let StoreError::EntityLimit(l) = e {
                assert!(!text.contains(&format!("{l:?}")), "debug text: {text}");
            }
        }
        let io = &errors[5];
        assert!(std::error::Error::source(io).is_some());
        assert_eq!(io.io_kind(), Some(std::io::ErrorKind::StorageFull));
    }
}
