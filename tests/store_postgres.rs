//! The PostgreSQL store against a real PostgreSQL started by the test (tests/common/postgres.rs):
//! the store conformance suite (each check in its own database), index range scans (EXPLAIN),
//! schema migrations, the one-sentence start-up errors, conditional writes through two store
//! handles ("nodes") that share nothing but the database, and 503-style `Unavailable` errors
//! while the database is down with recovery once it is back.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use common::postgres::{Durability, PgCluster};
use tablestore::model::{EdmDateTime, EdmValue, EntityKey, IfMatch, Property, WriteKind, WriteOp};
use tablestore::store::postgres::{schema, PgStore};
use tablestore::store::{KeyBound, KeyRange, Store, StoreError, TableId, TableRef};

/// The database of each conformance check, by its temporary folder: the reopen checks open
/// the same folder again and must find the same data.
fn database_for(dir: &Path) -> String {
    static DATABASES: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();
    let mut map = DATABASES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    map.entry(dir.to_path_buf())
        .or_insert_with(|| PgCluster::shared().fresh_database("conformance"))
        .clone()
}

tablestore::store_conformance!(
    durable: true,
    open: |dir: &std::path::Path| -> Arc<dyn tablestore::store::Store> {
        super::PgStore::open(&super::database_for(dir)).expect("open the PostgreSQL store")
    }
);

fn write(kind: WriteKind, pk: &str, rk: &str, n: i64, if_match: IfMatch) -> WriteOp {
    WriteOp {
        kind,
        key: EntityKey {
            partition_key: pk.into(),
            row_key: rk.into(),
        },
        properties: vec![Property {
            name: "n".into(),
            value: EdmValue::Int64(n),
        }],
        if_match,
    }
}

fn counter(store: &dyn Store, t: TableId) -> (i64, EdmDateTime) {
    let e = store
        .get_entity(t, "p", "counter")
        .unwrap()
        .expect("counter");
    match &e.properties[0].value {
        EdmValue::Int64(n) => (*n, e.timestamp),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn scans_are_index_range_scans_not_sorted_sequential_scans() {
    let cluster = PgCluster::shared();
    let url = cluster.fresh_database("explain");
    let store = PgStore::open(&url).unwrap();
    let t = store
        .create_table(&TableRef::new("acct", "big"))
        .unwrap()
        .id;
    for p in 0..20 {
        let ops: Vec<_> = (0..100)
            .map(|r| {
                write(
                    WriteKind::Insert,
                    &format!("p{p:02}"),
                    &format!("{r:03}"),
                    r,
                    IfMatch::Any,
                )
            })
            .collect();
        store.commit(t, &ops).unwrap();
    }
    cluster.psql(url.rsplit('/').next().unwrap(), "ANALYZE entities");
    let ranges = [
        KeyRange::partition("p07"),
        KeyRange {
            start: KeyBound::Excluded("p03".into(), "050".into()),
            end: KeyBound::Included("p09".into(), "010".into()),
        },
        KeyRange::all(),
    ];
    for range in ranges {
        let plan = store.explain_scan(t, &range).unwrap();
        assert!(
            plan.contains("Index Scan using entities_pkey")
                || plan.contains("Index Only Scan using entities_pkey"),
            "{range:?} is not an index scan:\n{plan}"
        );
        assert!(
            !plan.contains("Seq Scan") && !plan.contains("Sort"),
            "{range:?}:\n{plan}"
        );
        assert!(plan.contains("Index Cond"), "{range:?}:\n{plan}");
    }
    // And the scan itself returns exactly the partition, in order.
    let keys: Vec<String> = store
        .scan(t, &KeyRange::partition("p07"))
        .map(|e| e.unwrap().row_key)
        .collect();
    assert_eq!(keys.len(), 100);
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn migrations_apply_once_and_newer_schemas_are_refused() {
    let cluster = PgCluster::shared();
    let url = cluster.fresh_database("migrate");
    let db = url.rsplit('/').next().unwrap().to_string();
    {
        let store = PgStore::open(&url).unwrap();
        store.create_table(&TableRef::new("acct", "kept")).unwrap();
    }
    assert_eq!(
        cluster.psql(&db, "SELECT version FROM schema_version"),
        schema::CURRENT.to_string()
    );
    // Opening again applies nothing and keeps the data.
    let store = PgStore::open(&url).unwrap();
    assert!(store
        .get_table(&TableRef::new("acct", "KEPT"))
        .unwrap()
        .is_some());
    drop(store);
    assert_eq!(
        cluster.psql(&db, "SELECT count(*) FROM schema_version"),
        "1"
    );
    cluster.psql(
        &db,
        &format!(
            "UPDATE schema_version SET version = {}",
            schema::CURRENT + 1
        ),
    );
    let Err(StoreError::Database { message, .. }) = PgStore::open(&url) else {
        panic!("a newer schema must be refused")
    };
    assert!(
        message.contains(&format!(
            "schema of version {}, newer than this tablestore's ({})",
            schema::CURRENT + 1,
            schema::CURRENT
        )),
        "{message}"
    );
    assert_one_sentence(&message);
}

fn assert_one_sentence(message: &str) {
    assert!(!message.contains('\n'), "{message}");
    for debug in ["Error {", "kind:", "Some(", "DbError"] {
        assert!(!message.contains(debug), "debug text in: {message}");
    }
}

#[test]
fn start_up_errors_are_one_sentence() {
    let cluster = PgCluster::shared();
    // Nothing listens on a port we just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let Err(StoreError::Unavailable { message, .. }) =
        PgStore::open(&format!("postgres://tablestore@127.0.0.1:{port}/nowhere"))
    else {
        panic!("an unreachable database must be Unavailable")
    };
    assert!(
        message.starts_with(&format!(
            "cannot reach the PostgreSQL database nowhere at 127.0.0.1:{port}"
        )),
        "{message}"
    );
    assert_one_sentence(&message);

    let missing = cluster.url("no_such_database");
    let Err(StoreError::Database { message, .. }) = PgStore::open(&missing) else {
        panic!("a missing database must be refused")
    };
    assert!(
        message.contains("has no database no_such_database"),
        "{message}"
    );
    assert_one_sentence(&message);

    // A user that may log in but not create tables (PostgreSQL 15 grants no CREATE on the
    // public schema to other users).
    let url = cluster.fresh_database("rights");
    let db = url.rsplit('/').next().unwrap().to_string();
    cluster.psql(&db, "CREATE ROLE limited_user LOGIN");
    cluster.psql(&db, "REVOKE CREATE ON SCHEMA public FROM PUBLIC");
    let limited = url.replacen("tablestore@", "limited_user@", 1);
    let Err(StoreError::Database { message, .. }) = PgStore::open(&limited) else {
        panic!("a user without CREATE must be refused")
    };
    assert!(
        message.starts_with(&format!(
            "the PostgreSQL user limited_user lacks a right tablestore needs in database {db}"
        )),
        "{message}"
    );
    assert!(message.contains("GRANT"), "{message}");
    assert_one_sentence(&message);
}

#[test]
fn conditional_writes_through_two_nodes_lose_no_update() {
    let url = PgCluster::shared().fresh_database("nodes");
    let nodes: Vec<Arc<PgStore>> = (0..2).map(|_| PgStore::open(&url).unwrap()).collect();
    let t = nodes[0]
        .create_table(&TableRef::new("acct", "counters"))
        .unwrap()
        .id;
    assert_eq!(
        nodes[1]
            .get_table(&TableRef::new("acct", "COUNTERS"))
            .unwrap()
            .map(|i| i.id),
        Some(t)
    );
    nodes[0]
        .commit(
            t,
            &[write(WriteKind::Insert, "p", "counter", 0, IfMatch::Any)],
        )
        .unwrap();
    // Every thread reads the counter and writes it + 1 under If-Match; a 412 means another
    // write came first, so it reads again. The count of successful writes must equal the
    // counter: no acknowledged update lost.
    let successes: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let node = Arc::clone(&nodes[i % 2]);
                scope.spawn(move || {
                    let mut done = 0;
                    let mut previous_stamp = EdmDateTime(0);
                    while done < 15 {
                        let (n, etag) = counter(&*node, t);
                        let result = node.commit(
                            t,
                            &[write(
                                WriteKind::Update,
                                "p",
                                "counter",
                                n + 1,
                                IfMatch::ETag(etag),
                            )],
                        );
                        match result {
                            Ok(stamps) => {
                                assert!(stamps[0] > etag && stamps[0] > previous_stamp);
                                previous_stamp = stamps[0];
                                done += 1;
                            }
                            Err(e) => assert_eq!(e.error, StoreError::PreconditionFailed),
                        }
                    }
                    done
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(successes, 60);
    assert_eq!(counter(&*nodes[1], t).0, 60);
    // Insert's uniqueness holds across nodes: exactly one of two racing inserts wins.
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = nodes
            .iter()
            .map(|node| {
                scope.spawn(move || {
                    node.commit(t, &[write(WriteKind::Insert, "p", "once", 1, IfMatch::Any)])
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    assert!(results
        .iter()
        .any(|r| matches!(r, Err(e) if e.error == StoreError::EntityAlreadyExists)));
}

#[test]
fn a_stopped_database_is_unavailable_and_the_store_recovers_when_it_is_back() {
    let cluster = PgCluster::start(Durability::Fast);
    let url = cluster.create_database("restart");
    let store = PgStore::open(&url).unwrap();
    let t = store
        .create_table(&TableRef::new("acct", "survivor"))
        .unwrap()
        .id;
    store
        .commit(t, &[write(WriteKind::Insert, "p", "r", 1, IfMatch::Any)])
        .unwrap();
    cluster.stop();
    match store.get_entity(t, "p", "r") {
        Err(StoreError::Unavailable { message, .. }) => {
            assert!(message.contains("PostgreSQL"), "{message}");
            assert_one_sentence(&message);
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    let err = store
        .commit(t, &[write(WriteKind::Insert, "p", "r2", 1, IfMatch::Any)])
        .expect_err("the database is down");
    assert!(
        matches!(err.error, StoreError::Unavailable { .. }),
        "{err:?}"
    );
    cluster.start_again();
    // The same store handle (the pool) reconnects by itself.
    let e = store.get_entity(t, "p", "r").unwrap().expect("kept");
    assert_eq!(e.properties[0].value, EdmValue::Int64(1));
    store
        .commit(t, &[write(WriteKind::Insert, "p", "r2", 1, IfMatch::Any)])
        .unwrap();
}

#[test]
fn keys_longer_than_the_index_takes_are_refused_not_busy() {
    let store = PgStore::open(&PgCluster::shared().fresh_database("longkeys")).unwrap();
    let t = store
        .create_table(&TableRef::new("acct", "long"))
        .unwrap()
        .id;
    // ASCII keys at Azure's limit (1024 UTF-16 units each) fit.
    let ascii = "k".repeat(1024);
    store
        .commit(
            t,
            &[write(WriteKind::Insert, &ascii, &ascii, 1, IfMatch::Any)],
        )
        .unwrap();
    assert!(store.get_entity(t, &ascii, &ascii).unwrap().is_some());
    // 1024 CJK characters are 3 KB each in UTF-8: beyond PostgreSQL's B-tree entry limit.
    let wide: String = (0..1024u32)
        .map(|i| char::from_u32(0x4E00 + (i * 7919) % 20000).unwrap())
        .collect();
    let err = store
        .commit(
            t,
            &[write(WriteKind::Insert, &wide, &wide, 1, IfMatch::Any)],
        )
        .expect_err("too long to index");
    assert_eq!(
        err.error,
        StoreError::EntityLimit(tablestore::model::limits::EntityLimitError::KeysTooLongForStore)
    );
}

/// Nodes starting together on a fresh database all run the schema bootstrap at once, and
/// PostgreSQL's `CREATE TABLE IF NOT EXISTS` is not safe between concurrent sessions (one of
/// them can fail on the catalog's unique indexes: 42710, 42P07 or 23505). Every start must
/// still succeed, with the schema applied once.
#[test]
fn many_bootstraps_at_once_on_fresh_databases_all_succeed() {
    const ROUNDS: usize = 12;
    const AT_ONCE: usize = 8;
    let cluster = PgCluster::shared();
    for round in 0..ROUNDS {
        let url = cluster.fresh_database("bootstrap");
        let barrier = std::sync::Barrier::new(AT_ONCE);
        let results: Vec<Result<(), StoreError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..AT_ONCE)
                .map(|_| {
                    let (url, barrier) = (&url, &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        PgStore::open(url).map(drop)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in &results {
            assert!(r.is_ok(), "round {round}: a bootstrap failed: {r:?}");
        }
        let db = url.rsplit('/').next().unwrap();
        assert_eq!(
            cluster.psql(db, "SELECT version FROM schema_version"),
            schema::CURRENT.to_string()
        );
        assert_eq!(
            cluster.psql(db, "SELECT value FROM counters WHERE name = 'table_id'"),
            "0"
        );
    }
}
