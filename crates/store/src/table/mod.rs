//! The table layer: [`KvStore`], the one [`Store`] implementation over an ordered key-value
//! engine ([`crate::Kv`], with its [`Backend`] abilities). It owns tables (ids, metadata, the purge of deleted ones), Timestamps
//! ([`Clock`]), preconditions checked under a per-partition lock, change sets applied as one
//! engine batch, reads that see each change set whole, and durability through the store's one
//! group commit ([`group_commit`]).

mod group_commit;
mod state;

use parking_lot::{Mutex, RwLock};
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;

use crate::contract::read::ReadPool;
use crate::encoding::codec::{self, TableRecord};
use crate::encoding::key;
use crate::model::limits::check_entity_as;
use crate::model::{EdmDateTime, Entity, IfMatch, Property, TableId, TableRef, WriteKind, WriteOp};
use crate::{
    Backend, CommitError, Durability, Footprint, KeyRange, ReadJob, RowSource, Space, Store,
    StoreError, StoredRow, TableInfo,
};
use group_commit::GroupCommit;

const LOCK_STRIPES: usize = 1024;
/// Stripes (by table id) of the commit counters behind consistent reads ([`Store::read`]).
const WATCH_STRIPES: usize = 64;
/// Reads tried while no commit overlaps them before commits are held off for one.
const OPTIMISTIC_READS: usize = 4;

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
pub struct KvStore<B: Backend> {
    pub(crate) kv: Arc<B>,
    /// Serialises table creation/deletion and id allocation.
    table_lock: Mutex<()>,
    next_table_id: AtomicU64,
    /// Per-partition locks (striped) held while a commit checks preconditions and applies.
    partition_locks: Vec<Mutex<()>>,
    /// Per stripe of `partition_locks`: odd while a multi-key write applies, so that a point
    /// read never sees part of a change set (the backend's apply need not be atomic for
    /// readers: sled's is not, see `kv/sled/intent.rs`).
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
pub struct KvRows<B: Backend> {
    kv: Arc<B>,
    table: TableId,
}

impl<B: Backend> RowSource for KvRows<B> {
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

impl<B: Backend> KvStore<B> {
    pub fn open(kv: B, durability: Durability) -> Result<Arc<KvStore<B>>, StoreError> {
        let kv = Arc::new(kv);
        let next = match kv.get(Space::Tables, key::NEXT_TABLE_ID_KEY)? {
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
            .range(Space::Tables, key::deleted_tables_start(), Bound::Unbounded)
            .filter_map(Result::ok)
            .filter_map(|(k, _)| key::deleted_table_of(k.as_ref()))
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
    pub(crate) fn stripe(table_id: u64, partition_key: &str) -> usize {
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
                key::NEXT_TABLE_ID_KEY.to_vec(),
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
        let generation = self.write_tables(vec![
            (key::table_meta_key(account, &folded), None),
            (key::deleted_table_key(record.id), Some(Vec::new())),
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
        kv.apply(
            Space::Tables,
            vec![(key::deleted_table_key(table_id), None)],
        )
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
impl<B: Backend> Store for KvStore<B> {
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
            .get(Space::Tables, &key::service_properties_key(account))?
            .map(|b| b.as_ref().to_vec()))
    }

    async fn set_service_properties(
        &self,
        account: &str,
        properties: Vec<u8>,
    ) -> Result<(), StoreError> {
        let generation = self.write_tables(vec![(
            key::service_properties_key(account),
            Some(properties),
        )])?;
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

    fn state(&self) -> Option<&dyn crate::state::StoreState> {
        Some(self)
    }
}
