//! The PostgreSQL store against a real PostgreSQL started by the test (tests/common/postgres.rs):
//! the store conformance suite (each check in its own database), index range scans (EXPLAIN),
//! schema migrations, the one-sentence start-up errors, conditional writes through two store
//! handles ("nodes") that share nothing but the database, and 503-style `Unavailable` errors
//! while the database is down with recovery once it is back.

use crate::common;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use common::postgres::{Durability, PgCluster};
use tablestore::model::{EdmDateTime, EdmValue, EntityKey, IfMatch, Property, WriteKind, WriteOp};
use tablestore::store::postgres::{schema, PgStore};
use tablestore::store::{read_fn, KeyBound, KeyRange, Store, StoreError, TableId, TableRef};

/// The database of each conformance check, by its temporary folder: the reopen checks open
/// the same folder again and must find the same data.
fn database_for(dir: &Path) -> String {
    static DATABASES: OnceLock<Mutex<HashMap<PathBuf, String>>> = OnceLock::new();
    let mut map = DATABASES.get_or_init(Default::default).lock();
    map.entry(dir.to_path_buf())
        .or_insert_with(|| PgCluster::shared().fresh_database("conformance"))
        .clone()
}

tablestore::store_conformance!(
    durable: true,
    open_async: |dir: std::path::PathBuf| async move {
        let store: Arc<dyn tablestore::store::Store> = super::PgStore::open(&super::database_for(&dir))
            .await
            .expect("open the PostgreSQL store");
        store
    }
);

fn write(kind: WriteKind, pk: &str, rk: &str, n: i64, if_match: IfMatch) -> WriteOp {
    WriteOp {
        limits: Default::default(),
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

async fn counter(store: &dyn Store, t: TableId) -> (i64, EdmDateTime) {
    let e = store
        .get_entity(t, "p", "counter")
        .await
        .unwrap()
        .expect("counter");
    match &e.properties[0].value {
        EdmValue::Int64(n) => (*n, e.timestamp),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scans_are_index_range_scans_not_sorted_sequential_scans() {
    let cluster = PgCluster::shared();
    let url = cluster.fresh_database("explain");
    let store = PgStore::open(&url).await.unwrap();
    let t = store
        .create_table(&TableRef::new("acct", "big"))
        .await
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
        store.commit(t, &ops).await.unwrap();
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
        let plan = store.explain_scan(t, &range).await.unwrap();
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
    let keys = read_fn(&*store, t, |rows, keys: &mut Vec<String>| {
        rows.scan_raw(&KeyRange::partition("p07"), &mut |row| {
            keys.push(row.keys().unwrap().1);
            true
        })
    })
    .await
    .unwrap();
    assert_eq!(keys.len(), 100);
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn migrations_apply_once_and_newer_schemas_are_refused() {
    let cluster = PgCluster::shared();
    let url = cluster.fresh_database("migrate");
    let db = url.rsplit('/').next().unwrap().to_string();
    {
        let store = PgStore::open(&url).await.unwrap();
        store
            .create_table(&TableRef::new("acct", "kept"))
            .await
            .unwrap();
    }
    assert_eq!(
        cluster.psql(&db, "SELECT version FROM schema_version"),
        schema::CURRENT.to_string()
    );
    // Opening again applies nothing and keeps the data.
    let store = PgStore::open(&url).await.unwrap();
    assert!(store
        .get_table(&TableRef::new("acct", "KEPT"))
        .await
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
    let Err(StoreError::Database { message, .. }) = PgStore::open(&url).await else {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn start_up_errors_are_one_sentence() {
    let cluster = PgCluster::shared();
    // Nothing listens on a port we just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let Err(StoreError::Unavailable { message, .. }) =
        PgStore::open(&format!("postgres://tablestore@127.0.0.1:{port}/nowhere")).await
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
    let Err(StoreError::Database { message, .. }) = PgStore::open(&missing).await else {
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
    let Err(StoreError::Database { message, .. }) = PgStore::open(&limited).await else {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conditional_writes_through_two_nodes_lose_no_update() {
    let url = PgCluster::shared().fresh_database("nodes");
    let mut nodes: Vec<Arc<PgStore>> = Vec::new();
    for _ in 0..2 {
        nodes.push(PgStore::open(&url).await.unwrap());
    }
    let t = nodes[0]
        .create_table(&TableRef::new("acct", "counters"))
        .await
        .unwrap()
        .id;
    assert_eq!(
        nodes[1]
            .get_table(&TableRef::new("acct", "COUNTERS"))
            .await
            .unwrap()
            .map(|i| i.id),
        Some(t)
    );
    nodes[0]
        .commit(
            t,
            &[write(WriteKind::Insert, "p", "counter", 0, IfMatch::Any)],
        )
        .await
        .unwrap();
    // Every task reads the counter and writes it + 1 under If-Match; a 412 means another
    // write came first, so it reads again. The count of successful writes must equal the
    // counter: no acknowledged update lost.
    let tasks: Vec<_> = (0..4)
        .map(|i| {
            let node = Arc::clone(&nodes[i % 2]);
            tokio::spawn(async move {
                let mut done = 0;
                let mut previous_stamp = EdmDateTime(0);
                while done < 15 {
                    let (n, etag) = counter(&*node, t).await;
                    let result = node
                        .commit(
                            t,
                            &[write(
                                WriteKind::Update,
                                "p",
                                "counter",
                                n + 1,
                                IfMatch::ETag(etag),
                            )],
                        )
                        .await;
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
    let mut successes = 0;
    for task in tasks {
        successes += task.await.unwrap();
    }
    assert_eq!(successes, 60);
    assert_eq!(counter(&*nodes[1], t).await.0, 60);
    // Insert's uniqueness holds across nodes: exactly one of two racing inserts wins.
    let racing: Vec<_> = nodes
        .iter()
        .map(|node| {
            let node = Arc::clone(node);
            tokio::spawn(async move {
                node.commit(t, &[write(WriteKind::Insert, "p", "once", 1, IfMatch::Any)])
                    .await
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in racing {
        results.push(task.await.unwrap());
    }
    assert_eq!(
        results.iter().filter(|r| r.is_ok()).count(),
        1,
        "{results:?}"
    );
    assert!(results
        .iter()
        .any(|r| matches!(r, Err(e) if e.error == StoreError::EntityAlreadyExists)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stopped_database_is_unavailable_and_the_store_recovers_when_it_is_back() {
    let cluster = PgCluster::start(Durability::Fast);
    let url = cluster.create_database("restart");
    let store = PgStore::open(&url).await.unwrap();
    let t = store
        .create_table(&TableRef::new("acct", "survivor"))
        .await
        .unwrap()
        .id;
    store
        .commit(t, &[write(WriteKind::Insert, "p", "r", 1, IfMatch::Any)])
        .await
        .unwrap();
    cluster.stop();
    match store.get_entity(t, "p", "r").await {
        Err(StoreError::Unavailable { message, .. }) => {
            assert!(message.contains("PostgreSQL"), "{message}");
            assert_one_sentence(&message);
        }
        other => panic!("expected Unavailable, got {other:?}"),
    }
    let err = store
        .commit(t, &[write(WriteKind::Insert, "p", "r2", 1, IfMatch::Any)])
        .await
        .expect_err("the database is down");
    assert!(
        matches!(err.error, StoreError::Unavailable { .. }),
        "{err:?}"
    );
    cluster.start_again();
    // The same store handle (the pool) reconnects by itself.
    let e = store.get_entity(t, "p", "r").await.unwrap().expect("kept");
    assert_eq!(e.properties[0].value, EdmValue::Int64(1));
    store
        .commit(t, &[write(WriteKind::Insert, "p", "r2", 1, IfMatch::Any)])
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keys_longer_than_the_index_takes_are_refused_not_busy() {
    let store = PgStore::open(&PgCluster::shared().fresh_database("longkeys"))
        .await
        .unwrap();
    let t = store
        .create_table(&TableRef::new("acct", "long"))
        .await
        .unwrap()
        .id;
    // ASCII keys at Azure's limit (1024 UTF-16 units each) fit.
    let ascii = "k".repeat(1024);
    store
        .commit(
            t,
            &[write(WriteKind::Insert, &ascii, &ascii, 1, IfMatch::Any)],
        )
        .await
        .unwrap();
    assert!(store.get_entity(t, &ascii, &ascii).await.unwrap().is_some());
    // 1024 CJK characters are 3 KB each in UTF-8: beyond PostgreSQL's B-tree entry limit.
    let wide: String = (0..1024u32)
        .map(|i| char::from_u32(0x4E00 + (i * 7919) % 20000).unwrap())
        .collect();
    let err = store
        .commit(
            t,
            &[write(WriteKind::Insert, &wide, &wide, 1, IfMatch::Any)],
        )
        .await
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
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_bootstraps_at_once_on_fresh_databases_all_succeed() {
    const ROUNDS: usize = 12;
    const AT_ONCE: usize = 8;
    let cluster = PgCluster::shared();
    for round in 0..ROUNDS {
        let url = cluster.fresh_database("bootstrap");
        let barrier = Arc::new(tokio::sync::Barrier::new(AT_ONCE));
        let starts: Vec<_> = (0..AT_ONCE)
            .map(|_| {
                let (url, barrier) = (url.clone(), Arc::clone(&barrier));
                tokio::spawn(async move {
                    barrier.wait().await;
                    PgStore::open(&url).await.map(drop)
                })
            })
            .collect();
        let mut results: Vec<Result<(), StoreError>> = Vec::new();
        for start in starts {
            results.push(start.await.unwrap());
        }
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
