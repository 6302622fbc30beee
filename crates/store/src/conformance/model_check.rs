//! The model check: random operation sequences run against a store under test and against
//! the memory store side by side, with clean reopens in between plus the steps that matter
//! for that store alone (eviction for the RAM tier). After every step both must give the same answers, and at the end hold the same
//! data. Each store's test module supplies how to open it, its extra steps and what must
//! hold after each step, and runs [`run`] from its own `proptest!` (so each keeps its case
//! count and its regression file).

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::kv::memory::MemoryKv;
use crate::model::{EdmValue, EntityKey, IfMatch, Property, TableRef, WriteKind, WriteOp};
use crate::{read_fn, Backend, Durability, KeyRange, KvStore, Store, TableId};

/// One step of a sequence; tables are numbered 0 and 1, row keys `r0`..`r5` in partition `p`.
#[derive(Debug, Clone)]
pub(crate) enum Step<X> {
    /// A change set of (kind, row, size) triples: see [`write_op`].
    Commit(usize, Vec<(u8, u8, i32)>),
    Get(usize, u8),
    Scan(usize),
    /// Close the store under test (drop every handle) and open it again over the same folder.
    Reopen,
    /// A step of the store under test's own.
    Extra(X),
}

/// Sequences of 1 to 39 steps: commits, reads, scans and reopens in the weights 6:3:2:1,
/// plus the store's own steps drawn from `extra` with weight `extra_weight`.
pub(crate) fn steps<X: Debug + Clone + 'static>(
    extra: impl Strategy<Value = X> + 'static,
    extra_weight: u32,
) -> impl Strategy<Value = Vec<Step<X>>> {
    let step = prop_oneof![
        6 => (0..2usize, prop::collection::vec((0..7u8, 0..6u8, 0..100i32), 1..4))
            .prop_map(|(t, ops)| Step::Commit(t, ops)),
        3 => (0..2usize, 0..6u8).prop_map(|(t, r)| Step::Get(t, r)),
        2 => (0..2usize).prop_map(Step::Scan),
        1 => Just(Step::Reopen),
        extra_weight => extra.prop_map(Step::Extra),
    ];
    prop::collection::vec(step, 1..40)
}

const KINDS: [WriteKind; 6] = [
    WriteKind::Insert,
    WriteKind::InsertOrReplace,
    WriteKind::InsertOrMerge,
    WriteKind::Update,
    WriteKind::Merge,
    WriteKind::Delete,
];

/// Kinds 0..=5 are [`KINDS`] unconditionally; kind 6 is an Update with an ETag that matches
/// nothing. `n` sets the size and the name of the one property.
fn write_op(kind: u8, rk: u8, n: i32) -> WriteOp {
    let (kind, if_match) = match KINDS.get(kind as usize) {
        Some(k) => (*k, IfMatch::Any),
        None => (WriteKind::Update, IfMatch::Unmatchable),
    };
    WriteOp {
        limits: Default::default(),
        kind,
        key: EntityKey {
            partition_key: "p".into(),
            row_key: format!("r{rk}"),
        },
        properties: if kind == WriteKind::Delete {
            Vec::new()
        } else {
            vec![Property {
                name: format!("c{}", n % 3),
                value: EdmValue::String("x".repeat(n as usize)),
            }]
        },
        if_match,
    }
}

/// The ids of tables `one` and `two`, created if the store does not have them yet.
async fn tables(store: &dyn Store) -> Vec<TableId> {
    let mut ids = Vec::new();
    for name in ["one", "two"] {
        let t = TableRef::new("acct", name);
        ids.push(match store.get_table(&t).await.expect("get") {
            Some(info) => info.id,
            None => store.create_table(&t).await.expect("create").id,
        });
    }
    ids
}

async fn contents(store: &dyn Store, t: TableId) -> Vec<(String, Vec<Property>)> {
    read_fn(store, t, |rows, out: &mut Vec<(String, Vec<Property>)>| {
        rows.scan_raw(&KeyRange::all(), &mut |row| {
            let e = row.view().expect("entity").into_entity();
            out.push((e.row_key, e.properties));
            true
        })
    })
    .await
    .expect("scan")
}

/// Runs `steps` against the store `open` opens in a fresh temporary folder and against the
/// memory store. `extra` carries out a store's own step (given its backend and the table
/// ids); `invariant` is checked on the backend after every step.
pub(crate) fn run<K: Backend, X>(
    steps: Vec<Step<X>>,
    open: impl Fn(&Path) -> Arc<KvStore<K>>,
    extra: impl Fn(&K, &[TableId], X) -> Result<(), TestCaseError>,
    invariant: impl Fn(&K) -> Result<(), TestCaseError>,
) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let memory = KvStore::open(MemoryKv::new(), Durability::Durable).expect("memory");
        let mem_ids = tables(&*memory).await;
        let mut store = open(dir.path());
        let mut ids = tables(&*store).await;
        for step in steps {
            let reopen = match step {
                Step::Commit(t, ops) => {
                    let ops: Vec<WriteOp> =
                        ops.iter().map(|&(k, r, n)| write_op(k, r, n)).collect();
                    let a = store.commit(ids[t], &ops).await.map(|s| s.len());
                    let b = memory.commit(mem_ids[t], &ops).await.map(|s| s.len());
                    prop_assert_eq!(
                        a.map_err(|e| (e.index, e.error)),
                        b.map_err(|e| (e.index, e.error))
                    );
                    false
                }
                Step::Get(t, r) => {
                    let row = format!("r{r}");
                    let a = store.get_entity(ids[t], "p", &row).await.expect("get");
                    let b = memory.get_entity(mem_ids[t], "p", &row).await.expect("get");
                    prop_assert_eq!(a.map(|e| e.properties), b.map(|e| e.properties));
                    false
                }
                Step::Scan(t) => {
                    prop_assert_eq!(
                        contents(&*store, ids[t]).await,
                        contents(&*memory, mem_ids[t]).await
                    );
                    false
                }
                Step::Reopen => true,
                Step::Extra(x) => {
                    extra(&store.kv, &ids, x)?;
                    false
                }
            };
            if reopen {
                // The old handle must let go of the folder before the new one opens it.
                drop(store);
                store = open(dir.path());
                ids = tables(&*store).await;
            }
            invariant(&store.kv)?;
        }
        for t in 0..2 {
            prop_assert_eq!(
                contents(&*store, ids[t]).await,
                contents(&*memory, mem_ids[t]).await
            );
        }
        Ok(())
    })
}
