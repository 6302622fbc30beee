//! The durability modes at the store level, with an instrumented backend: in `durable` mode
//! every commit returns only after a flush that started after its write (single operations
//! and change sets alike), concurrent commits share flushes (group commit), a failed flush
//! fails the commit; in `relaxed` mode commits never wait for a flush.
//! `tests/it/crash.rs` shows the same promises end to end with `kill -9`.

use std::cell::Cell;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tablestore::model::EdmValue;
use tablestore::model::{EntityKey, IfMatch, Property, TableId, TableRef, WriteKind, WriteOp};
use tablestore::store::kv::memory::MemoryKv;
use tablestore::store::{Backend, Durability, Kv, KvStore, Space, Store, StoreError};

/// Waits for `work` on this thread (a runtime of its own): the store applies a write on the
/// thread that awaits its commit, which [`LAST_APPLY`] relies on.
fn wait<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(work)
}

thread_local! {
    /// Sequence number of the last `apply` made by this thread.
    static LAST_APPLY: Cell<u64> = const { Cell::new(0) };
}

/// A memory backend that pretends to be persistent and records writes and flushes.
#[derive(Default)]
struct Recording {
    inner: MemoryKv,
    applies: AtomicU64,
    /// Every apply numbered at or below this is durable.
    durable_upto: AtomicU64,
    flushes: AtomicU64,
    flush_delay: Duration,
    fail_flushes: AtomicBool,
}

impl Kv for Recording {
    type Bytes = <MemoryKv as Kv>::Bytes;
    type Iter<'a> = <MemoryKv as Kv>::Iter<'a>;

    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Self::Bytes>, StoreError> {
        self.inner.get(space, key)
    }

    fn range(&self, space: Space, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> Self::Iter<'_> {
        self.inner.range(space, start, end)
    }

    fn apply(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        self.inner.apply(space, batch)?;
        let n = self.applies.fetch_add(1, Ordering::SeqCst) + 1;
        LAST_APPLY.with(|c| c.set(n));
        Ok(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        let covers = self.applies.load(Ordering::SeqCst);
        std::thread::sleep(self.flush_delay);
        self.flushes.fetch_add(1, Ordering::SeqCst);
        if self.fail_flushes.load(Ordering::SeqCst) {
            return Err(StoreError::io(
                "writing",
                std::io::Error::from(std::io::ErrorKind::StorageFull),
            ));
        }
        self.durable_upto.fetch_max(covers, Ordering::SeqCst);
        Ok(())
    }

    fn is_persistent(&self) -> bool {
        true
    }
}

/// Lets the test keep a handle on the backend the store owns.
struct Shared(Arc<Recording>);

impl Kv for Shared {
    type Bytes = <Recording as Kv>::Bytes;
    type Iter<'a> = <Recording as Kv>::Iter<'a>;
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Self::Bytes>, StoreError> {
        self.0.get(space, key)
    }
    fn range(&self, space: Space, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> Self::Iter<'_> {
        self.0.range(space, start, end)
    }
    fn apply(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        self.0.apply(space, batch)
    }
    fn flush(&self) -> Result<(), StoreError> {
        self.0.flush()
    }
    fn is_persistent(&self) -> bool {
        true
    }
}

/// A plain engine: none of the abilities beyond `Kv`.
impl Backend for Shared {}

fn open(
    durability: Durability,
    flush_delay: Duration,
) -> (Arc<KvStore<Shared>>, Arc<Recording>, TableId) {
    let rec = Arc::new(Recording {
        flush_delay,
        ..Recording::default()
    });
    let store = KvStore::open(Shared(Arc::clone(&rec)), durability).expect("open");
    let table = wait(store.create_table(&TableRef::new("acct", "durable"))).expect("create");
    (store, rec, table.id)
}

fn upsert(pk: &str, rk: &str, n: i32) -> WriteOp {
    WriteOp {
        limits: Default::default(),
        kind: WriteKind::InsertOrReplace,
        key: EntityKey {
            partition_key: pk.into(),
            row_key: rk.into(),
        },
        properties: vec![Property {
            name: "n".into(),
            value: EdmValue::Int32(n),
        }],
        if_match: IfMatch::Any,
    }
}

/// Runs `threads` × `per_thread` commits (every fourth a 3-operation change set) and checks
/// after each that its own write was covered by a completed flush.
fn hammer(
    store: &Arc<KvStore<Shared>>,
    rec: &Arc<Recording>,
    table: TableId,
    threads: usize,
    per_thread: usize,
    durable: bool,
) {
    std::thread::scope(|s| {
        for t in 0..threads {
            let store = Arc::clone(store);
            let rec = Arc::clone(rec);
            s.spawn(move || {
                for i in 0..per_thread {
                    let pk = format!("p{t}");
                    let ops: Vec<WriteOp> = if i % 4 == 0 {
                        (0..3).map(|j| upsert(&pk, &format!("b{i}-{j}"), i as i32)).collect()
                    } else {
                        vec![upsert(&pk, &format!("r{i}"), i as i32)]
                    };
                    wait(store.commit(table, &ops)).expect("commit");
                    let mine = LAST_APPLY.with(Cell::get);
                    let durable_upto = rec.durable_upto.load(Ordering::SeqCst);
                    if durable {
                        assert!(
                            durable_upto >= mine,
                            "commit returned before its write ({mine}) was flushed (durable up to {durable_upto})"
                        );
                    }
                }
            });
        }
    });
}

#[test]
fn durable_commits_return_after_their_flush_and_share_flushes() {
    let (store, rec, table) = open(Durability::Durable, Duration::from_millis(3));
    let before = rec.flushes.load(Ordering::SeqCst);
    let (threads, per_thread) = (16, 25);
    hammer(&store, &rec, table, threads, per_thread, true);
    let flushes = rec.flushes.load(Ordering::SeqCst) - before;
    let commits = (threads * per_thread) as u64;
    println!("{commits} concurrent commits, {flushes} flushes");
    assert!(
        flushes * 2 < commits,
        "group commit: {commits} commits needed {flushes} flushes"
    );
}

#[test]
fn durable_single_writer_flushes_every_commit() {
    let (store, rec, table) = open(Durability::Durable, Duration::ZERO);
    let before = rec.flushes.load(Ordering::SeqCst);
    hammer(&store, &rec, table, 1, 20, true);
    assert_eq!(rec.flushes.load(Ordering::SeqCst) - before, 20);
}

#[test]
fn relaxed_commits_never_wait_for_a_flush() {
    let (store, rec, table) = open(Durability::Relaxed, Duration::from_millis(50));
    let before = rec.flushes.load(Ordering::SeqCst);
    let started = std::time::Instant::now();
    hammer(&store, &rec, table, 4, 25, false);
    assert_eq!(
        rec.flushes.load(Ordering::SeqCst),
        before,
        "no flush on commit"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // An explicit flush (graceful shutdown) makes everything durable.
    wait(store.flush()).expect("flush");
    assert_eq!(
        rec.durable_upto.load(Ordering::SeqCst),
        rec.applies.load(Ordering::SeqCst)
    );
}

#[test]
fn a_failed_flush_fails_the_commit_and_a_later_one_succeeds() {
    let (store, rec, table) = open(Durability::Durable, Duration::ZERO);
    rec.fail_flushes.store(true, Ordering::SeqCst);
    let err = wait(store.commit(table, &[upsert("p", "r", 1)])).expect_err("flush failed");
    assert!(matches!(err.error, StoreError::Io { .. }), "{err:?}");
    rec.fail_flushes.store(false, Ordering::SeqCst);
    wait(store.commit(table, &[upsert("p", "r", 2)])).expect("commit");
    let e = wait(store.get_entity(table, "p", "r"))
        .expect("get")
        .expect("present");
    assert_eq!(e.properties[0].value, EdmValue::Int32(2));
}

/// Table creation, deletion and ACL changes are flushed before they return, too.
#[test]
fn table_metadata_changes_are_durable_on_return() {
    let (store, rec, _) = open(Durability::Durable, Duration::ZERO);
    let name = TableRef::new("acct", "second");
    wait(store.create_table(&name)).expect("create");
    assert_eq!(
        LAST_APPLY.with(Cell::get),
        rec.durable_upto.load(Ordering::SeqCst)
    );
    wait(store.set_table_acl(&name, vec![1, 2, 3])).expect("acl");
    assert_eq!(
        LAST_APPLY.with(Cell::get),
        rec.durable_upto.load(Ordering::SeqCst)
    );
    wait(store.set_service_properties("acct", b"<x/>".to_vec())).expect("props");
    assert_eq!(
        LAST_APPLY.with(Cell::get),
        rec.durable_upto.load(Ordering::SeqCst)
    );
    wait(store.delete_table(&name)).expect("delete");
    assert!(rec.durable_upto.load(Ordering::SeqCst) >= LAST_APPLY.with(Cell::get));
}
