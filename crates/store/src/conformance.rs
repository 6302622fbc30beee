//! The store conformance suite: one set of checks, written once against the [`Store`]
//! contract, that every implementation must pass. Each check is a plain function taking a
//! [`Harness`]; the [`store_conformance!`](crate::store_conformance) macro turns the whole
//! suite into `#[test]`s named `store_conformance::<check>` for one store, so
//! `cargo test store_conformance` runs it for every store. Adding a store takes one line
//! next to its code:
//!
//! ```ignore
//! crate::store_conformance!(durable: true, open: |dir: &std::path::Path| open_my_store(dir));
//! ```
//!
//! `open` is called once per check (with a fresh temporary folder) and again by the
//! reopen checks, which close the store (drop every handle) and open it over the same data;
//! they run only for durable stores. What the checks pin down: Azure's key order (ordinal by
//! UTF-16 code units, so a surrogate pair sorts below U+E000..U+FFFF), range bounds, paged
//! reads that resume from any key, atomic change sets, every ETag precondition, insert
//! uniqueness, the table life cycle and what survives a reopen.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use crate::model::{
    EdmDateTime, EdmValue, Entity, EntityKey, IfMatch, Property, TableRef, WriteKind, WriteOp,
};

use crate::read_fn;
use crate::{Footprint, KeyBound, KeyRange, Store, StoreError, TableId};

#[cfg(test)]
pub(crate) mod model_check;

/// A store being opened.
pub(crate) type Opening = Pin<Box<dyn Future<Output = Arc<dyn Store>> + Send>>;

/// How the suite reaches one store.
pub struct Harness {
    /// This check's data folder (the same on every open).
    dir: PathBuf,
    open: Box<dyn Fn(PathBuf) -> Opening + Send + Sync>,
    /// Whether data written before a close is there after the next open.
    pub(crate) durable: bool,
}

impl Harness {
    /// `open` opens the store over the data in the folder it is given.
    pub fn new<F, O>(dir: PathBuf, open: O, durable: bool) -> Harness
    where
        O: Fn(PathBuf) -> F + Send + Sync + 'static,
        F: Future<Output = Arc<dyn Store>> + Send + 'static,
    {
        Harness {
            dir,
            open: Box::new(move |dir| Box::pin(open(dir))),
            durable,
        }
    }

    /// Opens the store over this check's data.
    pub(crate) async fn open(&self) -> Arc<dyn Store> {
        (self.open)(self.dir.clone()).await
    }
}

/// Runs every check of the suite as a `#[tokio::test]` in a module `store_conformance`.
/// `open` is an expression of type `impl Fn(&std::path::Path) -> Arc<dyn Store>`, given a
/// temporary folder that lives as long as the check (`open_async`: of type
/// `impl Fn(std::path::PathBuf) -> impl Future<Output = Arc<dyn Store>>`); `durable` says
/// whether the store keeps its data across a close and reopen.
#[macro_export]
macro_rules! store_conformance {
    (durable: $durable:expr, open: $open:expr $(,)?) => {
        $crate::store_conformance!(@module $durable, {
            let open = ::std::sync::Arc::new($open);
            move |dir: ::std::path::PathBuf| {
                let open = ::std::sync::Arc::clone(&open);
                async move {
                    let store: ::std::sync::Arc<dyn $crate::Store> = open(&dir);
                    store
                }
            }
        });
    };
    (durable: $durable:expr, open_async: $open:expr $(,)?) => {
        $crate::store_conformance!(@module $durable, $open);
    };
    (@module $durable:expr, $open:expr) => {
        mod store_conformance {
            #[allow(unused_imports)]
            use super::*;

            async fn run<F: ::std::future::Future<Output = ()>>(
                check: fn($crate::conformance::Harness) -> F,
            ) {
                let dir = ::tempfile::tempdir().expect("a temporary folder");
                let harness = $crate::conformance::Harness::new(
                    dir.path().to_path_buf(),
                    $open,
                    $durable,
                );
                check(harness).await;
            }

            $crate::store_conformance!(@checks run;
                utf16_key_order,
                range_bounds,
                paging_and_continuation,
                scan_stops_when_asked,
                atomic_change_set,
                etag_preconditions,
                insert_uniqueness,
                merge_and_replace,
                distinct_increasing_timestamps,
                creation_instants_are_kept,
                table_life_cycle,
                tables_are_listed_in_folded_order,
                case_sensitive_names_round_trip,
                accounts_are_separate,
                acl_and_service_properties,
                reopen_after_close,
                footprint_counts_the_stored_entities,
                scans_see_change_sets_whole,
            );
        }
    };
    (@checks $run:ident; $($check:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                $run($crate::conformance::$check).await
            }
        )*
    };
}

fn key(pk: &str, rk: &str) -> EntityKey {
    EntityKey {
        partition_key: pk.into(),
        row_key: rk.into(),
    }
}

fn op(kind: WriteKind, pk: &str, rk: &str, n: i32) -> WriteOp {
    WriteOp {
        limits: Default::default(),
        kind,
        key: key(pk, rk),
        properties: vec![Property {
            name: "n".into(),
            value: EdmValue::Int32(n),
        }],
        if_match: IfMatch::Any,
    }
}

fn conditional(kind: WriteKind, pk: &str, rk: &str, n: i32, if_match: IfMatch) -> WriteOp {
    WriteOp {
        if_match,
        ..op(kind, pk, rk, n)
    }
}

async fn table(store: &dyn Store, name: &str) -> TableId {
    store
        .create_table(&TableRef::new("acct", name))
        .await
        .expect("create table")
        .id
}

async fn keys_of(store: &dyn Store, t: TableId, range: &KeyRange) -> Vec<(String, String)> {
    let range = range.clone();
    read_fn(store, t, move |rows, keys: &mut Vec<(String, String)>| {
        rows.scan_raw(&range, &mut |row| {
            keys.push(row.keys().expect("well-formed key"));
            true
        })
    })
    .await
    .expect("scan")
}

fn pairs(keys: &[(&str, &str)]) -> Vec<(String, String)> {
    keys.iter()
        .map(|(p, r)| (p.to_string(), r.to_string()))
        .collect()
}

fn n_of(entity: &Entity) -> Option<&EdmValue> {
    entity.property("n")
}

/// Keys come back ordered by PartitionKey, then RowKey, each compared ordinally by UTF-16
/// code units: NUL and prefixes sort first, and a supplementary character (a surrogate pair
/// in UTF-16) sorts below U+E000..U+FFFF although its UTF-8 bytes are higher.
pub async fn utf16_key_order(h: Harness) {
    let store = h.open().await;
    let t = table(&*store, "order").await;
    let partitions = [
        "", "a", "a\u{0}", "a\u{0}b", "ab", "B", "é", "\u{FFFD}", "😀", "\u{E000}", "\u{7F}",
    ];
    let rows = ["", "0", "\u{0}", "😀", "\u{FFFF}", "z", "zz", "\u{10FFFF}"];
    let mut ops = Vec::new();
    for pk in partitions {
        ops.clear();
        for rk in rows {
            ops.push(op(WriteKind::Insert, pk, rk, 0));
        }
        store.commit(t, &ops).await.expect("commit");
    }
    let utf16 = |s: &str| s.encode_utf16().collect::<Vec<u16>>();
    let mut expected: Vec<(String, String)> = partitions
        .iter()
        .flat_map(|pk| rows.iter().map(move |rk| (pk.to_string(), rk.to_string())))
        .collect();
    expected.sort_by_key(|k| (utf16(&k.0), utf16(&k.1)));
    assert_eq!(keys_of(&*store, t, &KeyRange::all()).await, expected);
    let supplementary = expected.iter().position(|k| k.0 == "😀").expect("present");
    let private_use = expected
        .iter()
        .position(|k| k.0 == "\u{E000}")
        .expect("present");
    assert!(
        supplementary < private_use,
        "a surrogate pair sorts below U+E000"
    );
}

/// Every kind of bound selects exactly the keys it names, and a range never leaks into
/// another table.
pub async fn range_bounds(h: Harness) {
    let store = h.open().await;
    let t = table(&*store, "bounds").await;
    let other = table(&*store, "neighbour").await;
    for pk in ["a", "b", "b\u{0}", "bb", "c"] {
        let ops: Vec<_> = ["1", "2", "3"]
            .iter()
            .map(|rk| op(WriteKind::Insert, pk, rk, 0))
            .collect();
        store.commit(t, &ops).await.expect("commit");
        store.commit(other, &ops).await.expect("commit");
    }
    let all = keys_of(&*store, t, &KeyRange::all()).await;
    assert_eq!(all.len(), 15);
    let partition = keys_of(&*store, t, &KeyRange::partition("b")).await;
    assert_eq!(partition, pairs(&[("b", "1"), ("b", "2"), ("b", "3")]));
    assert_eq!(
        keys_of(&*store, t, &KeyRange::point("b", "2")).await,
        pairs(&[("b", "2")])
    );
    assert!(keys_of(&*store, t, &KeyRange::point("b", "4"))
        .await
        .is_empty());
    let range = |start, end| KeyRange { start, end };
    let s = |v: &str| v.to_string();
    assert_eq!(
        keys_of(
            &*store,
            t,
            &range(
                KeyBound::Excluded(s("a"), s("3")),
                KeyBound::Included(s("b"), s("1"))
            )
        )
        .await,
        pairs(&[("b", "1")])
    );
    assert_eq!(
        keys_of(
            &*store,
            t,
            &range(
                KeyBound::Included(s("b"), s("3")),
                KeyBound::Excluded(s("b\u{0}"), s("2"))
            )
        )
        .await,
        pairs(&[("b", "3"), ("b\u{0}", "1")])
    );
    assert_eq!(
        keys_of(
            &*store,
            t,
            &range(
                KeyBound::PartitionEnd(s("b")),
                KeyBound::PartitionStart(s("bb"))
            )
        )
        .await,
        pairs(&[("b\u{0}", "1"), ("b\u{0}", "2"), ("b\u{0}", "3")])
    );
    assert_eq!(
        keys_of(
            &*store,
            t,
            &range(KeyBound::PartitionEnd(s("bb")), KeyBound::Unbounded)
        )
        .await,
        pairs(&[("c", "1"), ("c", "2"), ("c", "3")])
    );
    assert_eq!(
        keys_of(
            &*store,
            t,
            &range(KeyBound::Unbounded, KeyBound::Excluded(s("a"), s("2")))
        )
        .await,
        pairs(&[("a", "1")])
    );
    // An empty (inverted) range reads nothing.
    assert!(keys_of(
        &*store,
        t,
        &range(
            KeyBound::Included(s("c"), s("1")),
            KeyBound::Included(s("a"), s("1"))
        )
    )
    .await
    .is_empty());
}

/// Reading a range a few rows at a time, resuming from the key after the last row seen (a
/// continuation), yields the whole range once, in order, with raw and decoded scans agreeing.
pub async fn paging_and_continuation(h: Harness) {
    let store = h.open().await;
    let t = table(&*store, "pages").await;
    for p in 0..7 {
        let ops: Vec<_> = (0..13)
            .map(|r| op(WriteKind::Insert, &format!("p{p}"), &format!("r{r:02}"), r))
            .collect();
        store.commit(t, &ops).await.expect("commit");
    }
    let whole = KeyRange {
        start: KeyBound::PartitionStart("p2".into()),
        end: KeyBound::Included("p5".into(), "r04".into()),
    };
    let expected = keys_of(&*store, t, &whole).await;
    assert_eq!(expected.len(), 13 * 3 + 5);
    for page_size in [1, 5, 13, 100] {
        let mut seen = Vec::new();
        let mut range = Some(whole.clone());
        while let Some(r) = range.take() {
            type Page = (Vec<(String, String)>, Option<(String, String)>);
            let (page, next) = read_fn(&*store, t, move |rows, (page, next): &mut Page| {
                rows.scan_raw(&r, &mut |row| {
                    let keys = row.keys().expect("well-formed key");
                    if page.len() == page_size {
                        *next = Some(keys);
                        return false;
                    }
                    assert!(row.timestamp().is_some());
                    page.push(keys);
                    true
                })
            })
            .await
            .expect("scan");
            seen.extend(page);
            range = next.and_then(|(pk, rk)| whole.resume_from(&pk, &rk));
        }
        assert_eq!(seen, expected, "page size {page_size}");
    }
}

/// A raw scan stops at the first row its visitor declines, and reads rows in place.
pub async fn scan_stops_when_asked(h: Harness) {
    let store = h.open().await;
    let t = table(&*store, "stops").await;
    let ops: Vec<_> = (0..50)
        .map(|r| op(WriteKind::Insert, "p", &format!("{r:02}"), r))
        .collect();
    store.commit(t, &ops).await.expect("commit");
    let visited = read_fn(&*store, t, |rows, visited: &mut Vec<Option<EdmValue>>| {
        rows.scan_raw(&KeyRange::all(), &mut |row| {
            visited.push(row.property("n").map(|v| v.to_owned_value()));
            visited.len() < 3
        })
    })
    .await
    .expect("scan");
    assert_eq!(
        visited,
        vec![
            Some(EdmValue::Int32(0)),
            Some(EdmValue::Int32(1)),
            Some(EdmValue::Int32(2))
        ]
    );
}

/// A change set is applied whole or not at all; the error names the failing operation.
pub async fn atomic_change_set(h: Harness) {
    let store = h.open().await;
    let t = table(&*store, "atomic").await;
    store
        .commit(t, &[op(WriteKind::Insert, "p", "07", 1)])
        .await
        .expect("seed");
    let ops: Vec<_> = (0..20)
        .map(|r| op(WriteKind::Insert, "p", &format!("{r:02}"), r))
        .collect();
    let err = store.commit(t, &ops).await.expect_err("row 07 exists");
    assert_eq!((err.index, err.error), (7, StoreError::EntityAlreadyExists));
    assert_eq!(
        keys_of(&*store, t, &KeyRange::all()).await,
        pairs(&[("p", "07")])
    );
    let mixed = [
        op(WriteKind::InsertOrReplace, "p", "a", 1),
        op(WriteKind::Merge, "p", "missing", 2),
    ];
    let err = store
        .commit(t, &mixed)
        .await
        .expect_err("merge of a missing entity");
    assert_eq!((err.index, err.error), (1, StoreError::EntityNotFound));
    assert!(store.get_entity(t, "p", "a").await.expect("get").is_none());
    let good = [
        op(WriteKind::Insert, "p", "a", 1),
        op(WriteKind::Delete, "p", "07", 0),
        op(WriteKind::InsertOrMerge, "p", "b", 2),
    ];
    let stamps = store.commit(t, &good).await.expect("commit");
    assert_eq!(stamps.len(), 3);
    assert_eq!(
        keys_of(&*store, t, &KeyRange::all()).await,
        pairs(&[("p", "a"), ("p", "b")])
    );
    store
        .commit(t, &[op(WriteKind::InsertOrReplace, "p", "c", 3)])
        .await
        .expect("commit");
    store.flush().await.expect("flush");
    assert!(store.get_entity(t, "p", "c").await.expect("get").is_some());
}

/// If-Match on Update, Merge and Delete: `*` needs an existing entity, an ETag (the
/// Timestamp it encodes) needs the current one; the upserts and Insert take no precondition.
pub async fn etag_preconditions(h: Harness) {
    let store = h.open().await;
    let t = table(&*store, "etags").await;
    for kind in [WriteKind::Update, WriteKind::Merge, WriteKind::Delete] {
        let err = store
            .commit(t, &[op(kind, "p", "missing", 0)])
            .await
            .expect_err("missing entity");
        assert_eq!(err.error, StoreError::EntityNotFound, "{kind:?} with *");
        let err = store
            .commit(
                t,
                &[conditional(
                    kind,
                    "p",
                    "missing",
                    0,
                    IfMatch::ETag(EdmDateTime(1)),
                )],
            )
            .await
            .expect_err("missing entity");
        assert_eq!(err.error, StoreError::EntityNotFound, "{kind:?} with ETag");
    }
    let first = store
        .commit(t, &[op(WriteKind::Insert, "p", "r", 1)])
        .await
        .expect("insert")[0];
    let stale = IfMatch::ETag(EdmDateTime(first.0 - 1));
    for kind in [WriteKind::Update, WriteKind::Merge, WriteKind::Delete] {
        let err = store
            .commit(t, &[conditional(kind, "p", "r", 9, stale)])
            .await
            .expect_err("stale ETag");
        assert_eq!(err.error, StoreError::PreconditionFailed, "{kind:?}");
    }
    let current = store
        .get_entity(t, "p", "r")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(current.timestamp, first);
    assert_eq!(n_of(&current), Some(&EdmValue::Int32(1)), "nothing changed");
    let second = store
        .commit(
            t,
            &[conditional(
                WriteKind::Update,
                "p",
                "r",
                2,
                IfMatch::ETag(first),
            )],
        )
        .await
        .expect("current ETag")[0];
    assert!(second > first);
    let err = store
        .commit(
            t,
            &[conditional(
                WriteKind::Merge,
                "p",
                "r",
                3,
                IfMatch::ETag(first),
            )],
        )
        .await
        .expect_err("the old ETag is stale now");
    assert_eq!(err.error, StoreError::PreconditionFailed);
    let third = store
        .commit(
            t,
            &[conditional(
                WriteKind::Merge,
                "p",
                "r",
                3,
                IfMatch::ETag(second),
            )],
        )
        .await
        .expect("current ETag")[0];
    store
        .commit(t, &[op(WriteKind::Update, "p", "r", 4)])
        .await
        .expect("If-Match: *");
    // The upserts ignore whatever precondition they carry.
    store
        .commit(
            t,
            &[conditional(
                WriteKind::InsertOrReplace,
                "p",
                "r",
                5,
                IfMatch::ETag(third),
            )],
        )
        .await
        .expect("upsert");
    store
        .commit(
            t,
            &[conditional(
                WriteKind::InsertOrMerge,
                "p",
                "new",
                6,
                IfMatch::ETag(third),
            )],
        )
        .await
        .expect("upsert");
    let err = store
        .commit(
            t,
            &[conditional(
                WriteKind::Delete,
                "p",
                "r",
                0,
                IfMatch::ETag(third),
            )],
        )
        .await
        .expect_err("stale");
    assert_eq!(err.error, StoreError::PreconditionFailed);
    store
        .commit(t, &[op(WriteKind::Delete, "p", "r", 0)])
        .await
        .expect("delete with *");
    assert!(store.get_entity(t, "p", "r").await.expect("get").is_none());
}

/// Insert fails on an existing key (also within one change set), and succeeds again once
/// the entity is deleted.
pub async fn insert_uniqueness(h: Harness) {
    let store = h.open().await;
    let t = table(&*store, "unique").await;
    store
        .commit(t, &[op(WriteKind::Insert, "p", "r", 1)])
        .await
        .expect("insert");
    let err = store
        .commit(t, &[op(WriteKind::Insert, "p", "r", 2)])
        .await
        .expect_err("exists");
    assert_eq!((err.index, err.error), (0, StoreError::EntityAlreadyExists));
    // Keys differing only in case are different keys.
    store
        .commit(t, &[op(WriteKind::Insert, "P", "R", 3)])
        .await
        .expect("another key");
    store
        .commit(t, &[op(WriteKind::Delete, "p", "r", 0)])
        .await
        .expect("delete");
    store
        .commit(t, &[op(WriteKind::Insert, "p", "r", 4)])
        .await
        .expect("insert after delete");
    let e = store
        .get_entity(t, "p", "r")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(n_of(&e), Some(&EdmValue::Int32(4)));
}

/// Replace keeps only the new properties; Merge keeps the old ones and overwrites by name.
pub async fn merge_and_replace(h: Harness) {
    let store = h.open().await;
    let t = table(&*store, "merges").await;
    let with = |kind, props: &[(&str, EdmValue)]| WriteOp {
        limits: Default::default(),
        kind,
        key: key("p", "r"),
        properties: props
            .iter()
            .map(|(n, v)| Property {
                name: n.to_string(),
                value: v.clone(),
            })
            .collect(),
        if_match: IfMatch::Any,
    };
    let all_types = [
        ("s", EdmValue::String("x\u{0}😀".into())),
        ("i", EdmValue::Int32(-1)),
        ("l", EdmValue::Int64(i64::MIN)),
        ("d", EdmValue::Double(0.5)),
        ("b", EdmValue::Boolean(true)),
        (
            "t",
            EdmValue::DateTime(EdmDateTime(638_000_000_000_000_000)),
        ),
        ("g", EdmValue::Guid([7; 16])),
        ("x", EdmValue::Binary(vec![0, 255])),
    ];
    store
        .commit(t, &[with(WriteKind::Insert, &all_types)])
        .await
        .expect("insert");
    let e = store
        .get_entity(t, "p", "r")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(e.properties.len(), all_types.len());
    for (name, value) in &all_types {
        assert_eq!(e.property(name), Some(value), "{name} round-trips");
    }
    store
        .commit(
            t,
            &[with(
                WriteKind::Merge,
                &[("i", EdmValue::Int32(2)), ("new", EdmValue::Boolean(false))],
            )],
        )
        .await
        .expect("merge");
    let e = store
        .get_entity(t, "p", "r")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(e.property("i"), Some(&EdmValue::Int32(2)));
    assert_eq!(e.property("new"), Some(&EdmValue::Boolean(false)));
    assert_eq!(e.property("s"), Some(&all_types[0].1));
    store
        .commit(
            t,
            &[with(WriteKind::Update, &[("only", EdmValue::Int32(1))])],
        )
        .await
        .expect("replace");
    let e = store
        .get_entity(t, "p", "r")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(e.properties.len(), 1);
    store
        .commit(
            t,
            &[with(
                WriteKind::InsertOrMerge,
                &[("more", EdmValue::Int32(2))],
            )],
        )
        .await
        .expect("upsert merge");
    let e = store
        .get_entity(t, "p", "r")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(e.properties.len(), 2);
    store
        .commit(t, &[with(WriteKind::InsertOrReplace, &[])])
        .await
        .expect("upsert replace");
    let e = store
        .get_entity(t, "p", "r")
        .await
        .expect("get")
        .expect("exists");
    assert!(e.properties.is_empty());
}

/// Every write gets a Timestamp later than every earlier one (so ETags never repeat), and
/// reads return the Timestamp the commit reported.
pub async fn distinct_increasing_timestamps(h: Harness) {
    let store = h.open().await;
    let t = table(&*store, "stamps").await;
    let mut last = EdmDateTime(0);
    for i in 0..200 {
        let stamps = store
            .commit(t, &[op(WriteKind::InsertOrReplace, "p", "r", i)])
            .await
            .expect("commit");
        assert!(stamps[0] > last, "write {i}");
        last = stamps[0];
    }
    let ops: Vec<_> = (0..10)
        .map(|r| op(WriteKind::Insert, "q", &r.to_string(), r))
        .collect();
    let stamps = store.commit(t, &ops).await.expect("commit");
    assert!(stamps.windows(2).all(|w| w[0] < w[1]));
    assert!(stamps[0] > last);
    let e = store
        .get_entity(t, "q", "3")
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(e.timestamp, stamps[3]);
}

/// The creation instant of each entity of `t`, by RowKey, as a scan reads them.
async fn created_of(store: &dyn Store, t: TableId) -> Vec<(String, EdmDateTime)> {
    read_fn(
        store,
        t,
        move |rows, found: &mut Vec<(String, EdmDateTime)>| {
            rows.scan_raw(&KeyRange::all(), &mut |row| {
                let (_, rk) = row.keys().expect("well-formed key");
                found.push((rk, row.created().expect("well-formed value")));
                true
            })
        },
    )
    .await
    .expect("scan")
}

/// An entity keeps the instant it was created (what Cosmos DB's creation order sorts by)
/// through merges, replaces and, under Cosmos's rules, upserts, across a reopen; one deleted
/// and inserted again, or replaced by a Storage-rules Insert Or Replace, is created anew.
pub async fn creation_instants_are_kept(h: Harness) {
    use crate::model::limits::EntityLimits;
    let store = h.open().await;
    let t = table(&*store, "created").await;
    let cosmos = |kind| WriteOp {
        limits: EntityLimits::JsonItem,
        ..op(kind, "p", "a", 1)
    };
    let first = store
        .commit(t, &[cosmos(WriteKind::Insert)])
        .await
        .expect("insert")[0];
    let b = store
        .commit(t, &[op(WriteKind::Insert, "p", "b", 1)])
        .await
        .expect("b")[0];
    for kind in [
        WriteKind::Merge,
        WriteKind::Update,
        WriteKind::InsertOrReplace,
        WriteKind::InsertOrMerge,
    ] {
        let stamps = store.commit(t, &[cosmos(kind)]).await.expect("write");
        assert!(stamps[0] > first, "{kind:?} stamps the write anew");
        let found = created_of(&*store, t).await;
        assert_eq!(found, [("a".into(), first), ("b".into(), b)], "{kind:?}");
    }
    let storage_upsert = op(WriteKind::InsertOrReplace, "p", "b", 2);
    let b = store.commit(t, &[storage_upsert]).await.expect("upsert")[0];
    store
        .commit(t, &[cosmos(WriteKind::Delete)])
        .await
        .expect("delete");
    let again = store
        .commit(t, &[cosmos(WriteKind::Insert)])
        .await
        .expect("again")[0];
    assert!(again > b);
    let want = [("a".to_string(), again), ("b".to_string(), b)];
    assert_eq!(created_of(&*store, t).await, want);
    if h.durable {
        drop(store);
        let store = h.open().await;
        assert_eq!(created_of(&*store, t).await, want, "after a reopen");
    }
}

/// Create, look up case-insensitively (keeping the creation casing), refuse duplicates,
/// delete, and re-create under a new id that sees none of the old entities.
pub async fn table_life_cycle(h: Harness) {
    let store = h.open().await;
    let created = store
        .create_table(&TableRef::new("acct", "MyTable"))
        .await
        .expect("create");
    assert_eq!(created.name, "MyTable");
    let err = store
        .create_table(&TableRef::new("acct", "mytable"))
        .await
        .expect_err("same name in another casing");
    assert_eq!(err, StoreError::TableAlreadyExists);
    let found = store
        .get_table(&TableRef::new("acct", "MYTABLE"))
        .await
        .expect("get")
        .expect("exists");
    assert_eq!((found.id, found.name.as_str()), (created.id, "MyTable"));
    assert!(store
        .get_table(&TableRef::new("acct", "other"))
        .await
        .expect("get")
        .is_none());
    store
        .commit(created.id, &[op(WriteKind::Insert, "p", "r", 1)])
        .await
        .expect("insert");
    store
        .delete_table(&TableRef::new("acct", "mytable"))
        .await
        .expect("delete");
    assert!(store
        .get_table(&TableRef::new("acct", "MyTable"))
        .await
        .expect("get")
        .is_none());
    assert_eq!(
        store.delete_table(&TableRef::new("acct", "MyTable")).await,
        Err(StoreError::TableNotFound)
    );
    assert_eq!(
        store
            .set_table_acl(&TableRef::new("acct", "MyTable"), vec![1])
            .await,
        Err(StoreError::TableNotFound)
    );
    let again = store
        .create_table(&TableRef::new("acct", "mytable"))
        .await
        .expect("re-create");
    assert_ne!(again.id, created.id, "a re-created table gets a new id");
    assert_eq!(again.name, "mytable");
    assert!(keys_of(&*store, again.id, &KeyRange::all())
        .await
        .is_empty());
    assert!(store
        .get_entity(again.id, "p", "r")
        .await
        .expect("get")
        .is_none());
}

/// Query Tables reads tables by lower-cased name from an inclusive start.
pub async fn tables_are_listed_in_folded_order(h: Harness) {
    let store = h.open().await;
    for name in ["beta", "Alpha", "gamma", "Delta", "alphabet"] {
        table(&*store, name).await;
    }
    let names = |start: Option<&'static str>, limit: usize| {
        let store = Arc::clone(&store);
        async move {
            store
                .list_tables("acct", start, limit)
                .await
                .expect("list")
                .into_iter()
                .map(|t| t.name)
                .collect::<Vec<String>>()
        }
    };
    assert_eq!(
        names(None, 100).await,
        ["Alpha", "alphabet", "beta", "Delta", "gamma"]
    );
    assert_eq!(names(Some("beta"), 100).await, ["beta", "Delta", "gamma"]);
    assert_eq!(names(Some("c"), 100).await, ["Delta", "gamma"]);
    assert!(names(Some("h"), 100).await.is_empty());
    // A page holds at most `limit` tables.
    assert_eq!(names(None, 2).await, ["Alpha", "alphabet"]);
    assert_eq!(names(Some("alphabet"), 2).await, ["alphabet", "beta"]);
    assert!(names(None, 0).await.is_empty());
}

/// Case-sensitive (Cosmos) table names: `Orders` and `orders` are two tables, names with
/// characters unsafe in URLs, paths and keys come back as they went in, in lookups and in
/// listings (whose identities name them), and a case-insensitive lookup does not find a
/// case-sensitive table with capitals.
pub async fn case_sensitive_names_round_trip(h: Harness) {
    use crate::model::names::{name_of_identity, NameCase};
    let store = h.open().await;
    let sensitive = |name: &str| TableRef::in_case("acct", name, NameCase::Sensitive);
    let names = [
        "Orders",
        "orders",
        "ORDERS",
        "my table",
        "a.b-c_d~e'f\"g*h:i%j&k=l+m;n,o",
        "Ünïcode 名前 ☃ 😀",
        "..",
        "tables",
    ];
    let mut ids = Vec::new();
    for name in names {
        let info = store.create_table(&sensitive(name)).await.expect(name);
        assert_eq!(info.name, name);
        ids.push(info.id);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), names.len(), "every name is its own table");
    assert_eq!(
        store.create_table(&sensitive("Orders")).await,
        Err(StoreError::TableAlreadyExists)
    );
    for name in names {
        let info = store
            .get_table(&sensitive(name))
            .await
            .expect("get")
            .expect(name);
        assert_eq!(name_of_identity(&info.identity), name);
    }
    let mut listed: Vec<String> = store
        .list_tables("acct", None, 100)
        .await
        .expect("list")
        .into_iter()
        .map(|t| name_of_identity(&t.identity))
        .collect();
    listed.sort();
    let mut want: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    want.sort();
    assert_eq!(listed, want);
    // Only the lower-case name is a case-insensitive identity too.
    let insensitive = |name: &str| TableRef::new("acct", name);
    let found = store.get_table(&insensitive("ORDERS")).await.expect("get");
    assert_eq!(found.map(|t| t.name).as_deref(), Some("orders"));
    store
        .delete_table(&sensitive("Orders"))
        .await
        .expect("delete");
    assert!(store
        .get_table(&sensitive("Orders"))
        .await
        .expect("get")
        .is_none());
    assert!(store
        .get_table(&sensitive("ORDERS"))
        .await
        .expect("get")
        .is_some());
}

/// Accounts share nothing: names, listings and service properties are per account.
pub async fn accounts_are_separate(h: Harness) {
    let store = h.open().await;
    let a = store
        .create_table(&TableRef::new("one", "shared"))
        .await
        .expect("create");
    let b = store
        .create_table(&TableRef::new("two", "shared"))
        .await
        .expect("same name in another account");
    assert_ne!(a.id, b.id);
    store
        .commit(a.id, &[op(WriteKind::Insert, "p", "r", 1)])
        .await
        .expect("insert");
    assert!(store
        .get_entity(b.id, "p", "r")
        .await
        .expect("get")
        .is_none());
    store
        .create_table(&TableRef::new("one", "solo"))
        .await
        .expect("create");
    let listed: Vec<String> = store
        .list_tables("two", None, 100)
        .await
        .expect("list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(listed, ["shared"]);
    store
        .set_service_properties("one", b"<props/>".to_vec())
        .await
        .expect("set");
    assert_eq!(
        store.get_service_properties("two").await.expect("get"),
        None
    );
    store
        .delete_table(&TableRef::new("two", "shared"))
        .await
        .expect("delete");
    assert!(store
        .get_table(&TableRef::new("one", "shared"))
        .await
        .expect("get")
        .is_some());
}

/// The table ACL and the service properties are opaque bytes the store keeps as given.
pub async fn acl_and_service_properties(h: Harness) {
    let store = h.open().await;
    let t = TableRef::new("acct", "Guarded");
    store.create_table(&t).await.expect("create");
    assert!(store
        .get_table(&t)
        .await
        .expect("get")
        .expect("exists")
        .acl
        .is_empty());
    store
        .set_table_acl(&t, vec![0, 1, 2, 255])
        .await
        .expect("set acl");
    let info = store
        .get_table(&TableRef::new("acct", "guarded"))
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(
        (info.acl, info.name.as_str()),
        (vec![0, 1, 2, 255], "Guarded")
    );
    assert_eq!(
        store.get_service_properties("acct").await.expect("get"),
        None
    );
    store
        .set_service_properties("acct", vec![1, 2])
        .await
        .expect("set");
    store
        .set_service_properties("acct", vec![3])
        .await
        .expect("overwrite");
    assert_eq!(
        store.get_service_properties("acct").await.expect("get"),
        Some(vec![3])
    );
}

/// A durable store keeps, across a close and reopen: tables (with id, casing and ACL),
/// entities with their Timestamps, service properties, deletions, and the id counter (a
/// table created after the reopen never reuses an id).
pub async fn reopen_after_close(h: Harness) {
    if !h.durable {
        return;
    }
    let (kept, gone, stamp) = {
        let store = h.open().await;
        let kept = store
            .create_table(&TableRef::new("acct", "Kept"))
            .await
            .expect("create");
        let gone = store
            .create_table(&TableRef::new("acct", "gone"))
            .await
            .expect("create");
        store
            .set_table_acl(&TableRef::new("acct", "kept"), vec![9, 8])
            .await
            .expect("acl");
        let ops: Vec<_> = (0..30)
            .map(|r| op(WriteKind::Insert, "p😀", &format!("{r:02}"), r))
            .collect();
        let stamps = store.commit(kept.id, &ops).await.expect("commit");
        store
            .commit(gone.id, &[op(WriteKind::Insert, "p", "r", 0)])
            .await
            .expect("commit");
        store
            .commit(kept.id, &[op(WriteKind::Delete, "p😀", "05", 0)])
            .await
            .expect("delete");
        store
            .delete_table(&TableRef::new("acct", "gone"))
            .await
            .expect("delete table");
        store
            .set_service_properties("acct", vec![4, 2])
            .await
            .expect("set");
        store.flush().await.expect("flush");
        (kept.id, gone.id, stamps[7])
    };
    let store = h.open().await;
    let info = store
        .get_table(&TableRef::new("acct", "KEPT"))
        .await
        .expect("get")
        .expect("kept");
    assert_eq!(
        (info.id, info.name.as_str(), info.acl),
        (kept, "Kept", vec![9, 8])
    );
    assert!(store
        .get_table(&TableRef::new("acct", "gone"))
        .await
        .expect("get")
        .is_none());
    let rows = keys_of(&*store, kept, &KeyRange::all()).await;
    assert_eq!(rows.len(), 29);
    assert!(!rows.contains(&("p😀".to_string(), "05".to_string())));
    let e = store
        .get_entity(kept, "p😀", "07")
        .await
        .expect("get")
        .expect("kept");
    assert_eq!((e.timestamp, n_of(&e)), (stamp, Some(&EdmValue::Int32(7))));
    assert_eq!(
        store.get_service_properties("acct").await.expect("get"),
        Some(vec![4, 2])
    );
    let later = store
        .create_table(&TableRef::new("acct", "later"))
        .await
        .expect("create");
    assert!(later.id != kept && later.id != gone, "ids are never reused");
    let after = store
        .commit(later.id, &[op(WriteKind::Insert, "p", "r", 0)])
        .await
        .expect("commit")[0];
    assert!(after > stamp, "Timestamps keep increasing across a reopen");
}

/// What [`Store::footprint`] must report: the entities of every table and the bytes of their
/// stored keys and values, read back here with a scan.
async fn recount(store: &dyn Store, tables: &[TableId]) -> (u64, u64) {
    let (mut n, mut bytes) = (0, 0);
    for &t in tables {
        let (rows, size) = read_fn(store, t, move |rows, (n, bytes): &mut (u64, u64)| {
            rows.scan_raw(&KeyRange::all(), &mut |row| {
                let e = row.view().expect("entity").into_entity();
                let stamps = crate::encoding::codec::EntityStamps {
                    timestamp: e.timestamp,
                    created: row.created().expect("creation instant"),
                };
                *n += 1;
                *bytes += (crate::encoding::key::entity_key(t.0, &e.partition_key, &e.row_key)
                    .len()
                    + crate::encoding::codec::encode_entity_stamped(stamps, &e.properties).len())
                    as u64;
                true
            })
        })
        .await
        .expect("scan");
        n += rows;
        bytes += size;
    }
    (n, bytes)
}

fn counted(f: Option<Footprint>) -> (u64, u64) {
    let f = f.expect("a footprint");
    (f.entities, f.logical_bytes)
}

/// The entity count and logical size follow inserts, replaces that grow or shrink an entity,
/// merges, batches, deletes and the purge of a deleted table, and survive a reopen. A store
/// that keeps no count (`footprint()` is `None`) skips the check.
pub async fn footprint_counts_the_stored_entities(h: Harness) {
    let store = h.open().await;
    let Some(empty) = store.footprint().await else {
        return;
    };
    assert_eq!((empty.entities, empty.logical_bytes), (0, 0));
    let a = table(&*store, "sizes").await;
    let b = table(&*store, "scratch").await;
    let big = |kind: WriteKind, rk: &str, len: usize| WriteOp {
        properties: vec![Property {
            name: "s".into(),
            value: EdmValue::String("x".repeat(len)),
        }],
        ..op(kind, "p", rk, 0)
    };
    store
        .commit(a, &[big(WriteKind::Insert, "1", 500)])
        .await
        .expect("insert");
    store
        .commit(a, &[op(WriteKind::Insert, "p", "2", 2)])
        .await
        .expect("insert");
    store
        .commit(a, &[big(WriteKind::InsertOrReplace, "1", 20)])
        .await
        .expect("shrink");
    store
        .commit(a, &[big(WriteKind::InsertOrReplace, "2", 900)])
        .await
        .expect("grow");
    store
        .commit(a, &[op(WriteKind::Merge, "p", "1", 7)])
        .await
        .expect("merge");
    let batch: Vec<WriteOp> = (0..5)
        .map(|r| op(WriteKind::InsertOrReplace, "q", &r.to_string(), r))
        .chain(
            [big(WriteKind::InsertOrMerge, "x", 10)]
                .into_iter()
                .map(|o| WriteOp {
                    key: key("q", "0"),
                    ..o
                }),
        )
        .collect();
    store
        .commit(a, &batch)
        .await
        .expect("batch with two writes of one key");
    store
        .commit(a, &[op(WriteKind::Delete, "p", "2", 0)])
        .await
        .expect("delete");
    let scratch: Vec<WriteOp> = (0..40)
        .map(|r| op(WriteKind::Insert, "s", &format!("{r:03}"), r))
        .collect();
    store.commit(b, &scratch).await.expect("batch");
    let expected = recount(&*store, &[a, b]).await;
    assert_eq!(expected.0, 46);
    assert_eq!(counted(store.footprint().await), expected);

    store
        .delete_table(&TableRef::new("acct", "scratch"))
        .await
        .expect("delete table");
    let expected = recount(&*store, &[a]).await;
    // The deleted table's rows go in the background.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while counted(store.footprint().await) != expected && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(counted(store.footprint().await), expected);
    store.flush().await.expect("flush");
    drop(store);
    if h.durable {
        let store = h.open().await;
        assert_eq!(counted(store.footprint().await), expected);
    }
}

/// A scan of a whole table, run as a read job ([`Store::read`]) while change sets of 100
/// rows spread over a 2,000-row partition commit, sees each change set whole or not at all:
/// every rewritten row shows the same round. The rows span several chunks of every backend's
/// range reads (and the PostgreSQL store's pages), and partitions before and after make the
/// scan cross partitions. One reader reads the table as two ranges that cut the partition in
/// half (as a query page of two key ranges does): the job sees one state across both.
pub async fn scans_see_change_sets_whole(h: Harness) {
    const ROWS: usize = 2000;
    const EVERY: usize = 20;
    const ROUNDS: i32 = 40;
    let store = h.open().await;
    let t = table(&*store, "whole").await;
    let rewritten = |round: i32| -> Vec<WriteOp> {
        (0..ROWS)
            .step_by(EVERY)
            .map(|r| op(WriteKind::InsertOrReplace, "p", &format!("{r:04}"), round))
            .collect()
    };
    for chunk in (0..ROWS).collect::<Vec<_>>().chunks(100) {
        let ops: Vec<_> = chunk
            .iter()
            .map(|r| op(WriteKind::Insert, "p", &format!("{r:04}"), 0))
            .collect();
        store.commit(t, &ops).await.expect("fill the partition");
    }
    for pk in ["o", "q"] {
        let ops: Vec<_> = (0..50)
            .map(|r| op(WriteKind::Insert, pk, &format!("{r:02}"), -1))
            .collect();
        store.commit(t, &ops).await.expect("fill a neighbour");
    }
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let halves = vec![
        KeyRange {
            start: KeyBound::Unbounded,
            end: KeyBound::Excluded("p".into(), format!("{:04}", ROWS / 2)),
        },
        KeyRange {
            start: KeyBound::Included("p".into(), format!("{:04}", ROWS / 2)),
            end: KeyBound::Unbounded,
        },
    ];
    let readers: Vec<_> = [vec![KeyRange::all()], halves]
        .into_iter()
        .map(|ranges| {
            let (store, done) = (Arc::clone(&store), Arc::clone(&done));
            tokio::spawn(async move {
                let mut scans = 0;
                while scans == 0 || !done.load(std::sync::atomic::Ordering::Relaxed) {
                    type Seen = (usize, Vec<Option<EdmValue>>);
                    let ranges = ranges.clone();
                    let (rows, rounds) =
                        read_fn(&*store, t, move |source, (rows, rounds): &mut Seen| {
                            for range in &ranges {
                                source.scan_raw(range, &mut |row| {
                                    *rows += 1;
                                    let (pk, rk) = row.keys().expect("keys");
                                    let n = row.property("n").map(|v| v.to_owned_value());
                                    let r: usize = rk.parse().expect("row key");
                                    if pk == "p" && r.is_multiple_of(EVERY) {
                                        rounds.push(n);
                                    }
                                    true
                                })?;
                            }
                            Ok(())
                        })
                        .await
                        .expect("scan");
                    assert_eq!(rows, ROWS + 100);
                    assert_eq!(rounds.len(), ROWS / EVERY);
                    assert!(
                        rounds.iter().all(|n| *n == rounds[0]),
                        "a scan saw part of a change set: {rounds:?}"
                    );
                    scans += 1;
                }
                scans
            })
        })
        .collect();
    for round in 1..=ROUNDS {
        store
            .commit(t, &rewritten(round))
            .await
            .expect("change set");
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.await.expect("reader") > 0);
    }
}
