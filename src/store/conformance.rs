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

use std::sync::Arc;

use crate::model::{
    EdmDateTime, EdmValue, Entity, EntityKey, IfMatch, Property, TableRef, WriteKind, WriteOp,
};

use super::{Footprint, KeyBound, KeyRange, Store, StoreError, TableId};

#[cfg(test)]
pub(crate) mod model_check;

/// How the suite reaches one store.
pub struct Harness<'a> {
    /// Opens the store over this check's data (the same data on every call).
    pub open: &'a dyn Fn() -> Arc<dyn Store>,
    /// Whether data written before a close is there after the next open.
    pub durable: bool,
}

/// Runs every check of the suite as a `#[test]` in a module `store_conformance`.
/// `open` is an expression of type `impl Fn(&std::path::Path) -> Arc<dyn Store>`, given a
/// temporary folder that lives as long as the check; `durable` says whether the store keeps
/// its data across a close and reopen.
#[macro_export]
macro_rules! store_conformance {
    (durable: $durable:expr, open: $open:expr $(,)?) => {
        mod store_conformance {
            #[allow(unused_imports)]
            use super::*;

            fn run(check: fn(&$crate::store::conformance::Harness<'_>)) {
                let dir = ::tempfile::tempdir().expect("a temporary folder");
                let open = $open;
                let open_here = || -> ::std::sync::Arc<dyn $crate::store::Store> { open(dir.path()) };
                check(&$crate::store::conformance::Harness {
                    open: &open_here,
                    durable: $durable,
                });
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
                table_life_cycle,
                tables_are_listed_in_folded_order,
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
            #[test]
            fn $check() {
                $run($crate::store::conformance::$check)
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

fn table(store: &dyn Store, name: &str) -> TableId {
    store
        .create_table(&TableRef::new("acct", name))
        .expect("create table")
        .id
}

fn keys_of(store: &dyn Store, t: TableId, range: &KeyRange) -> Vec<(String, String)> {
    store
        .scan(t, range)
        .map(|e| {
            let e = e.expect("scan");
            (e.partition_key, e.row_key)
        })
        .collect()
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
pub fn utf16_key_order(h: &Harness<'_>) {
    let store = (h.open)();
    let t = table(&*store, "order");
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
        store.commit(t, &ops).expect("commit");
    }
    let utf16 = |s: &str| s.encode_utf16().collect::<Vec<u16>>();
    let mut expected: Vec<(String, String)> = partitions
        .iter()
        .flat_map(|pk| rows.iter().map(move |rk| (pk.to_string(), rk.to_string())))
        .collect();
    expected.sort_by_key(|k| (utf16(&k.0), utf16(&k.1)));
    assert_eq!(keys_of(&*store, t, &KeyRange::all()), expected);
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
pub fn range_bounds(h: &Harness<'_>) {
    let store = (h.open)();
    let t = table(&*store, "bounds");
    let other = table(&*store, "neighbour");
    for pk in ["a", "b", "b\u{0}", "bb", "c"] {
        let ops: Vec<_> = ["1", "2", "3"]
            .iter()
            .map(|rk| op(WriteKind::Insert, pk, rk, 0))
            .collect();
        store.commit(t, &ops).expect("commit");
        store.commit(other, &ops).expect("commit");
    }
    let all = keys_of(&*store, t, &KeyRange::all());
    assert_eq!(all.len(), 15);
    let partition = keys_of(&*store, t, &KeyRange::partition("b"));
    assert_eq!(partition, pairs(&[("b", "1"), ("b", "2"), ("b", "3")]));
    assert_eq!(
        keys_of(&*store, t, &KeyRange::point("b", "2")),
        pairs(&[("b", "2")])
    );
    assert!(keys_of(&*store, t, &KeyRange::point("b", "4")).is_empty());
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
        ),
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
        ),
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
        ),
        pairs(&[("b\u{0}", "1"), ("b\u{0}", "2"), ("b\u{0}", "3")])
    );
    assert_eq!(
        keys_of(
            &*store,
            t,
            &range(KeyBound::PartitionEnd(s("bb")), KeyBound::Unbounded)
        ),
        pairs(&[("c", "1"), ("c", "2"), ("c", "3")])
    );
    assert_eq!(
        keys_of(
            &*store,
            t,
            &range(KeyBound::Unbounded, KeyBound::Excluded(s("a"), s("2")))
        ),
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
    .is_empty());
}

/// Reading a range a few rows at a time, resuming from the key after the last row seen (a
/// continuation), yields the whole range once, in order, with raw and decoded scans agreeing.
pub fn paging_and_continuation(h: &Harness<'_>) {
    let store = (h.open)();
    let t = table(&*store, "pages");
    for p in 0..7 {
        let ops: Vec<_> = (0..13)
            .map(|r| op(WriteKind::Insert, &format!("p{p}"), &format!("r{r:02}"), r))
            .collect();
        store.commit(t, &ops).expect("commit");
    }
    let whole = KeyRange {
        start: KeyBound::PartitionStart("p2".into()),
        end: KeyBound::Included("p5".into(), "r04".into()),
    };
    let expected = keys_of(&*store, t, &whole);
    assert_eq!(expected.len(), 13 * 3 + 5);
    for page_size in [1, 5, 13, 100] {
        let mut seen = Vec::new();
        let mut range = Some(whole.clone());
        while let Some(r) = range.take() {
            let mut page = Vec::new();
            let mut next = None;
            store
                .scan_raw(t, &r, &mut |row| {
                    let keys = row.keys().expect("well-formed key");
                    if page.len() == page_size {
                        next = Some(keys);
                        return false;
                    }
                    assert!(row.timestamp().is_some());
                    page.push(keys);
                    true
                })
                .expect("scan");
            seen.extend(page);
            range = next.and_then(|(pk, rk)| whole.resume_from(&pk, &rk));
        }
        assert_eq!(seen, expected, "page size {page_size}");
    }
}

/// A raw scan stops at the first row its visitor declines, and reads rows in place.
pub fn scan_stops_when_asked(h: &Harness<'_>) {
    let store = (h.open)();
    let t = table(&*store, "stops");
    let ops: Vec<_> = (0..50)
        .map(|r| op(WriteKind::Insert, "p", &format!("{r:02}"), r))
        .collect();
    store.commit(t, &ops).expect("commit");
    let mut visited = Vec::new();
    store
        .scan_raw(t, &KeyRange::all(), &mut |row| {
            visited.push(row.property("n").map(|v| v.to_owned_value()));
            visited.len() < 3
        })
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
pub fn atomic_change_set(h: &Harness<'_>) {
    let store = (h.open)();
    let t = table(&*store, "atomic");
    store
        .commit(t, &[op(WriteKind::Insert, "p", "07", 1)])
        .expect("seed");
    let ops: Vec<_> = (0..20)
        .map(|r| op(WriteKind::Insert, "p", &format!("{r:02}"), r))
        .collect();
    let err = store.commit(t, &ops).expect_err("row 07 exists");
    assert_eq!((err.index, err.error), (7, StoreError::EntityAlreadyExists));
    let err = store
        .commit_unsynced(t, &ops)
        .expect_err("row 07 still exists");
    assert_eq!(err.index, 7);
    assert_eq!(keys_of(&*store, t, &KeyRange::all()), pairs(&[("p", "07")]));
    let mixed = [
        op(WriteKind::InsertOrReplace, "p", "a", 1),
        op(WriteKind::Merge, "p", "missing", 2),
    ];
    let err = store
        .commit(t, &mixed)
        .expect_err("merge of a missing entity");
    assert_eq!((err.index, err.error), (1, StoreError::EntityNotFound));
    assert!(store.get_entity(t, "p", "a").expect("get").is_none());
    let good = [
        op(WriteKind::Insert, "p", "a", 1),
        op(WriteKind::Delete, "p", "07", 0),
        op(WriteKind::InsertOrMerge, "p", "b", 2),
    ];
    let stamps = store.commit(t, &good).expect("commit");
    assert_eq!(stamps.len(), 3);
    assert_eq!(
        keys_of(&*store, t, &KeyRange::all()),
        pairs(&[("p", "a"), ("p", "b")])
    );
    let committed = store
        .commit_unsynced(t, &[op(WriteKind::InsertOrReplace, "p", "c", 3)])
        .expect("commit");
    assert_eq!(committed.stamps.len(), 1);
    assert_eq!(committed.generation, store.generation());
    store.flush().expect("flush");
    assert!(store.get_entity(t, "p", "c").expect("get").is_some());
}

/// If-Match on Update, Merge and Delete: `*` needs an existing entity, an ETag (the
/// Timestamp it encodes) needs the current one; the upserts and Insert take no precondition.
pub fn etag_preconditions(h: &Harness<'_>) {
    let store = (h.open)();
    let t = table(&*store, "etags");
    for kind in [WriteKind::Update, WriteKind::Merge, WriteKind::Delete] {
        let err = store
            .commit(t, &[op(kind, "p", "missing", 0)])
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
            .expect_err("missing entity");
        assert_eq!(err.error, StoreError::EntityNotFound, "{kind:?} with ETag");
    }
    let first = store
        .commit(t, &[op(WriteKind::Insert, "p", "r", 1)])
        .expect("insert")[0];
    let stale = IfMatch::ETag(EdmDateTime(first.0 - 1));
    for kind in [WriteKind::Update, WriteKind::Merge, WriteKind::Delete] {
        let err = store
            .commit(t, &[conditional(kind, "p", "r", 9, stale)])
            .expect_err("stale ETag");
        assert_eq!(err.error, StoreError::PreconditionFailed, "{kind:?}");
    }
    let current = store.get_entity(t, "p", "r").expect("get").expect("exists");
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
        .expect("current ETag")[0];
    store
        .commit(t, &[op(WriteKind::Update, "p", "r", 4)])
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
        .expect_err("stale");
    assert_eq!(err.error, StoreError::PreconditionFailed);
    store
        .commit(t, &[op(WriteKind::Delete, "p", "r", 0)])
        .expect("delete with *");
    assert!(store.get_entity(t, "p", "r").expect("get").is_none());
}

/// Insert fails on an existing key (also within one change set), and succeeds again once
/// the entity is deleted.
pub fn insert_uniqueness(h: &Harness<'_>) {
    let store = (h.open)();
    let t = table(&*store, "unique");
    store
        .commit(t, &[op(WriteKind::Insert, "p", "r", 1)])
        .expect("insert");
    let err = store
        .commit(t, &[op(WriteKind::Insert, "p", "r", 2)])
        .expect_err("exists");
    assert_eq!((err.index, err.error), (0, StoreError::EntityAlreadyExists));
    // Keys differing only in case are different keys.
    store
        .commit(t, &[op(WriteKind::Insert, "P", "R", 3)])
        .expect("another key");
    store
        .commit(t, &[op(WriteKind::Delete, "p", "r", 0)])
        .expect("delete");
    store
        .commit(t, &[op(WriteKind::Insert, "p", "r", 4)])
        .expect("insert after delete");
    let e = store.get_entity(t, "p", "r").expect("get").expect("exists");
    assert_eq!(n_of(&e), Some(&EdmValue::Int32(4)));
}

/// Replace keeps only the new properties; Merge keeps the old ones and overwrites by name.
pub fn merge_and_replace(h: &Harness<'_>) {
    let store = (h.open)();
    let t = table(&*store, "merges");
    let with = |kind, props: &[(&str, EdmValue)]| WriteOp {
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
        .expect("insert");
    let e = store.get_entity(t, "p", "r").expect("get").expect("exists");
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
        .expect("merge");
    let e = store.get_entity(t, "p", "r").expect("get").expect("exists");
    assert_eq!(e.property("i"), Some(&EdmValue::Int32(2)));
    assert_eq!(e.property("new"), Some(&EdmValue::Boolean(false)));
    assert_eq!(e.property("s"), Some(&all_types[0].1));
    store
        .commit(
            t,
            &[with(WriteKind::Update, &[("only", EdmValue::Int32(1))])],
        )
        .expect("replace");
    let e = store.get_entity(t, "p", "r").expect("get").expect("exists");
    assert_eq!(e.properties.len(), 1);
    store
        .commit(
            t,
            &[with(
                WriteKind::InsertOrMerge,
                &[("more", EdmValue::Int32(2))],
            )],
        )
        .expect("upsert merge");
    let e = store.get_entity(t, "p", "r").expect("get").expect("exists");
    assert_eq!(e.properties.len(), 2);
    store
        .commit(t, &[with(WriteKind::InsertOrReplace, &[])])
        .expect("upsert replace");
    let e = store.get_entity(t, "p", "r").expect("get").expect("exists");
    assert!(e.properties.is_empty());
}

/// Every write gets a Timestamp later than every earlier one (so ETags never repeat), and
/// reads return the Timestamp the commit reported.
pub fn distinct_increasing_timestamps(h: &Harness<'_>) {
    let store = (h.open)();
    let t = table(&*store, "stamps");
    let mut last = EdmDateTime(0);
    for i in 0..200 {
        let stamps = store
            .commit(t, &[op(WriteKind::InsertOrReplace, "p", "r", i)])
            .expect("commit");
        assert!(stamps[0] > last, "write {i}");
        last = stamps[0];
    }
    let ops: Vec<_> = (0..10)
        .map(|r| op(WriteKind::Insert, "q", &r.to_string(), r))
        .collect();
    let stamps = store.commit(t, &ops).expect("commit");
    assert!(stamps.windows(2).all(|w| w[0] < w[1]));
    assert!(stamps[0] > last);
    let e = store.get_entity(t, "q", "3").expect("get").expect("exists");
    assert_eq!(e.timestamp, stamps[3]);
}

/// Create, look up case-insensitively (keeping the creation casing), refuse duplicates,
/// delete, and re-create under a new id that sees none of the old entities.
pub fn table_life_cycle(h: &Harness<'_>) {
    let store = (h.open)();
    let created = store
        .create_table(&TableRef::new("acct", "MyTable"))
        .expect("create");
    assert_eq!(created.name, "MyTable");
    let err = store
        .create_table(&TableRef::new("acct", "mytable"))
        .expect_err("same name in another casing");
    assert_eq!(err, StoreError::TableAlreadyExists);
    let found = store
        .get_table(&TableRef::new("acct", "MYTABLE"))
        .expect("get")
        .expect("exists");
    assert_eq!((found.id, found.name.as_str()), (created.id, "MyTable"));
    assert!(store
        .get_table(&TableRef::new("acct", "other"))
        .expect("get")
        .is_none());
    store
        .commit(created.id, &[op(WriteKind::Insert, "p", "r", 1)])
        .expect("insert");
    store
        .delete_table(&TableRef::new("acct", "mytable"))
        .expect("delete");
    assert!(store
        .get_table(&TableRef::new("acct", "MyTable"))
        .expect("get")
        .is_none());
    assert_eq!(
        store.delete_table(&TableRef::new("acct", "MyTable")),
        Err(StoreError::TableNotFound)
    );
    assert_eq!(
        store.set_table_acl(&TableRef::new("acct", "MyTable"), vec![1]),
        Err(StoreError::TableNotFound)
    );
    let again = store
        .create_table(&TableRef::new("acct", "mytable"))
        .expect("re-create");
    assert_ne!(again.id, created.id, "a re-created table gets a new id");
    assert_eq!(again.name, "mytable");
    assert!(keys_of(&*store, again.id, &KeyRange::all()).is_empty());
    assert!(store.get_entity(again.id, "p", "r").expect("get").is_none());
}

/// Query Tables reads tables by lower-cased name from an inclusive start.
pub fn tables_are_listed_in_folded_order(h: &Harness<'_>) {
    let store = (h.open)();
    for name in ["beta", "Alpha", "gamma", "Delta", "alphabet"] {
        table(&*store, name);
    }
    let names = |start: Option<&str>| -> Vec<String> {
        store
            .list_tables("acct", start)
            .expect("list")
            .map(|t| t.expect("table").name)
            .collect()
    };
    assert_eq!(names(None), ["Alpha", "alphabet", "beta", "Delta", "gamma"]);
    assert_eq!(names(Some("beta")), ["beta", "Delta", "gamma"]);
    assert_eq!(names(Some("c")), ["Delta", "gamma"]);
    assert!(names(Some("h")).is_empty());
}

/// Accounts share nothing: names, listings and service properties are per account.
pub fn accounts_are_separate(h: &Harness<'_>) {
    let store = (h.open)();
    let a = store
        .create_table(&TableRef::new("one", "shared"))
        .expect("create");
    let b = store
        .create_table(&TableRef::new("two", "shared"))
        .expect("same name in another account");
    assert_ne!(a.id, b.id);
    store
        .commit(a.id, &[op(WriteKind::Insert, "p", "r", 1)])
        .expect("insert");
    assert!(store.get_entity(b.id, "p", "r").expect("get").is_none());
    store
        .create_table(&TableRef::new("one", "solo"))
        .expect("create");
    let listed: Vec<String> = store
        .list_tables("two", None)
        .expect("list")
        .map(|t| t.expect("table").name)
        .collect();
    assert_eq!(listed, ["shared"]);
    store
        .set_service_properties("one", b"<props/>".to_vec())
        .expect("set");
    assert_eq!(store.get_service_properties("two").expect("get"), None);
    store
        .delete_table(&TableRef::new("two", "shared"))
        .expect("delete");
    assert!(store
        .get_table(&TableRef::new("one", "shared"))
        .expect("get")
        .is_some());
}

/// The table ACL and the service properties are opaque bytes the store keeps as given.
pub fn acl_and_service_properties(h: &Harness<'_>) {
    let store = (h.open)();
    let t = TableRef::new("acct", "Guarded");
    store.create_table(&t).expect("create");
    assert!(store
        .get_table(&t)
        .expect("get")
        .expect("exists")
        .acl
        .is_empty());
    store
        .set_table_acl(&t, vec![0, 1, 2, 255])
        .expect("set acl");
    let info = store
        .get_table(&TableRef::new("acct", "guarded"))
        .expect("get")
        .expect("exists");
    assert_eq!(
        (info.acl, info.name.as_str()),
        (vec![0, 1, 2, 255], "Guarded")
    );
    assert_eq!(store.get_service_properties("acct").expect("get"), None);
    store
        .set_service_properties("acct", vec![1, 2])
        .expect("set");
    store
        .set_service_properties("acct", vec![3])
        .expect("overwrite");
    assert_eq!(
        store.get_service_properties("acct").expect("get"),
        Some(vec![3])
    );
}

/// A durable store keeps, across a close and reopen: tables (with id, casing and ACL),
/// entities with their Timestamps, service properties, deletions, and the id counter (a
/// table created after the reopen never reuses an id).
pub fn reopen_after_close(h: &Harness<'_>) {
    if !h.durable {
        return;
    }
    let (kept, gone, stamp) = {
        let store = (h.open)();
        let kept = store
            .create_table(&TableRef::new("acct", "Kept"))
            .expect("create");
        let gone = store
            .create_table(&TableRef::new("acct", "gone"))
            .expect("create");
        store
            .set_table_acl(&TableRef::new("acct", "kept"), vec![9, 8])
            .expect("acl");
        let ops: Vec<_> = (0..30)
            .map(|r| op(WriteKind::Insert, "p😀", &format!("{r:02}"), r))
            .collect();
        let stamps = store.commit(kept.id, &ops).expect("commit");
        store
            .commit(gone.id, &[op(WriteKind::Insert, "p", "r", 0)])
            .expect("commit");
        store
            .commit(kept.id, &[op(WriteKind::Delete, "p😀", "05", 0)])
            .expect("delete");
        store
            .delete_table(&TableRef::new("acct", "gone"))
            .expect("delete table");
        store
            .set_service_properties("acct", vec![4, 2])
            .expect("set");
        store.flush().expect("flush");
        (kept.id, gone.id, stamps[7])
    };
    let store = (h.open)();
    let info = store
        .get_table(&TableRef::new("acct", "KEPT"))
        .expect("get")
        .expect("kept");
    assert_eq!(
        (info.id, info.name.as_str(), info.acl),
        (kept, "Kept", vec![9, 8])
    );
    assert!(store
        .get_table(&TableRef::new("acct", "gone"))
        .expect("get")
        .is_none());
    let rows = keys_of(&*store, kept, &KeyRange::all());
    assert_eq!(rows.len(), 29);
    assert!(!rows.contains(&("p😀".to_string(), "05".to_string())));
    let e = store
        .get_entity(kept, "p😀", "07")
        .expect("get")
        .expect("kept");
    assert_eq!((e.timestamp, n_of(&e)), (stamp, Some(&EdmValue::Int32(7))));
    assert_eq!(
        store.get_service_properties("acct").expect("get"),
        Some(vec![4, 2])
    );
    let later = store
        .create_table(&TableRef::new("acct", "later"))
        .expect("create");
    assert!(later.id != kept && later.id != gone, "ids are never reused");
    let after = store
        .commit(later.id, &[op(WriteKind::Insert, "p", "r", 0)])
        .expect("commit")[0];
    assert!(after > stamp, "Timestamps keep increasing across a reopen");
}

/// What [`Store::footprint`] must report: the entities of every table and the bytes of their
/// stored keys and values, read back here with a scan.
fn recount(store: &dyn Store, tables: &[TableId]) -> (u64, u64) {
    let (mut n, mut bytes) = (0, 0);
    for &t in tables {
        for e in store.scan(t, &KeyRange::all()) {
            let e = e.expect("scan");
            n += 1;
            bytes += (super::key::entity_key(t.0, &e.partition_key, &e.row_key).len()
                + super::codec::encode_entity(e.timestamp, &e.properties).len())
                as u64;
        }
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
pub fn footprint_counts_the_stored_entities(h: &Harness<'_>) {
    let store = (h.open)();
    let Some(empty) = store.footprint() else {
        return;
    };
    assert_eq!((empty.entities, empty.logical_bytes), (0, 0));
    let a = table(&*store, "sizes");
    let b = table(&*store, "scratch");
    let big = |kind: WriteKind, rk: &str, len: usize| WriteOp {
        properties: vec![Property {
            name: "s".into(),
            value: EdmValue::String("x".repeat(len)),
        }],
        ..op(kind, "p", rk, 0)
    };
    store
        .commit(a, &[big(WriteKind::Insert, "1", 500)])
        .expect("insert");
    store
        .commit(a, &[op(WriteKind::Insert, "p", "2", 2)])
        .expect("insert");
    store
        .commit(a, &[big(WriteKind::InsertOrReplace, "1", 20)])
        .expect("shrink");
    store
        .commit(a, &[big(WriteKind::InsertOrReplace, "2", 900)])
        .expect("grow");
    store
        .commit(a, &[op(WriteKind::Merge, "p", "1", 7)])
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
        .expect("batch with two writes of one key");
    store
        .commit(a, &[op(WriteKind::Delete, "p", "2", 0)])
        .expect("delete");
    let scratch: Vec<WriteOp> = (0..40)
        .map(|r| op(WriteKind::Insert, "s", &format!("{r:03}"), r))
        .collect();
    store.commit(b, &scratch).expect("batch");
    let expected = recount(&*store, &[a, b]);
    assert_eq!(expected.0, 46);
    assert_eq!(counted(store.footprint()), expected);

    store
        .delete_table(&TableRef::new("acct", "scratch"))
        .expect("delete table");
    let expected = recount(&*store, &[a]);
    // The deleted table's rows go in the background.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while counted(store.footprint()) != expected && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(counted(store.footprint()), expected);
    store.flush().expect("flush");
    drop(store);
    if h.durable {
        let store = (h.open)();
        assert_eq!(counted(store.footprint()), expected);
    }
}

/// A scan of a whole table, run through [`Store::read_consistently`] while change sets of 100
/// rows spread over a 2,000-row partition commit, sees each change set whole or not at all:
/// every rewritten row shows the same round. The rows span several chunks of every backend's
/// range reads (and the PostgreSQL store's pages), and partitions before and after make the
/// scan cross partitions.
pub fn scans_see_change_sets_whole(h: &Harness<'_>) {
    const ROWS: usize = 2000;
    const EVERY: usize = 20;
    const ROUNDS: i32 = 40;
    let store = (h.open)();
    let t = table(&*store, "whole");
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
        store.commit(t, &ops).expect("fill the partition");
    }
    for pk in ["o", "q"] {
        let ops: Vec<_> = (0..50)
            .map(|r| op(WriteKind::Insert, pk, &format!("{r:02}"), -1))
            .collect();
        store.commit(t, &ops).expect("fill a neighbour");
    }
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (store, done) = (&store, &done);
                scope.spawn(move || {
                    let mut scans = 0;
                    while scans == 0 || !done.load(std::sync::atomic::Ordering::Relaxed) {
                        let mut rounds = Vec::new();
                        let mut rows = 0;
                        store
                            .read_consistently(t, &mut || {
                                rounds.clear();
                                rows = 0;
                                store.scan_raw(t, &KeyRange::all(), &mut |row| {
                                    rows += 1;
                                    let (pk, rk) = row.keys().expect("keys");
                                    let n = row.property("n").map(|v| v.to_owned_value());
                                    if pk == "p"
                                        && rk.parse::<usize>().expect("row key") % EVERY == 0
                                    {
                                        rounds.push(n);
                                    }
                                    true
                                })
                            })
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
            store.commit(t, &rewritten(round)).expect("change set");
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        for r in readers {
            assert!(r.join().expect("reader") > 0);
        }
    });
}
