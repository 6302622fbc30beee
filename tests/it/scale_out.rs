//! Several tablestore nodes over one PostgreSQL database: the guarantees of docs/scale-out.md,
//! each proven through different nodes (real `tablestore` processes on loopback ports, raw
//! signed HTTP). Every test takes its own database in the binary's one PostgreSQL cluster
//! (tests/common/postgres.rs); the database-restart test runs a cluster of its own. Counts and
//! times are bounded: a few hundred requests per test.

use crate::common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use common::assert::etag_timestamp;
use common::batch::BatchBody;
use common::child::Client;
use common::nodes::Nodes;
use common::postgres::{Durability, PgCluster};
use common::url::{encode, entity_url};
use common::Reply;
use serde_json::{json, Value};
use tokio::task::JoinSet;

/// `n` nodes over a fresh database of the shared cluster.
fn nodes(n: usize, prefix: &str) -> Nodes {
    Nodes::start(n, &PgCluster::shared().fresh_database(prefix), &[])
}

async fn get_entity(c: &Client, table: &str, pk: &str, rk: &str) -> Reply {
    c.call("GET", &entity_url(table, pk, rk), &[], None).await
}

/// Every entity of a query, following continuation tokens; page `i` is read through
/// `clients[i % len]`.
async fn query_round_robin(clients: &[Client], table: &str, query: &str) -> (Vec<Value>, usize) {
    common::query_all(&format!("/{table}()?{query}"), |i, path| {
        let c = &clients[i % clients.len()];
        async move { c.call("GET", &path, &[], None).await }
    })
    .await
}

fn timestamp_of(etag: &str) -> DateTime<Utc> {
    etag_timestamp(etag)
        .parse()
        .unwrap_or_else(|e| panic!("ETag timestamp of {etag}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_over_one_database_serve_the_same_account() {
    let n = nodes(3, "shared_view");
    let (a, b, c) = (n.client(0), n.client(1), n.client(2));
    a.create_table("people").await;
    let tables = b.call("GET", "/Tables", &[], None).await;
    assert_eq!(tables.status.as_u16(), 200, "{}", tables.text());
    let names: Vec<String> = tables.json()["value"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["TableName"].as_str().map(str::to_string))
        .collect();
    assert!(
        names.iter().any(|n| n == "people"),
        "table made on node A is listed on node B: {names:?}"
    );
    // A second create of the same table on another node is a conflict, not a second table.
    let again = c
        .call("POST", "/Tables", &[], Some(json!({"TableName": "people"})))
        .await;
    assert_eq!(again.status.as_u16(), 409, "{}", again.text());
    assert_eq!(again.error_code(), "TableAlreadyExists");

    let written = b
        .insert(
            "people",
            &json!({"PartitionKey": "p", "RowKey": "ada", "Age": 36}),
        )
        .await;
    let read = get_entity(&c, "people", "p", "ada").await;
    assert_eq!(
        read.status.as_u16(),
        200,
        "entity written on B is read on C: {}",
        read.text()
    );
    assert_eq!(read.json()["Age"], 36);
    assert_eq!(
        read.header("etag"),
        written.header("etag"),
        "one ETag whichever node answers"
    );

    let del = c.call("DELETE", "/Tables('people')", &[], None).await;
    assert_eq!(del.status.as_u16(), 204, "{}", del.text());
    let gone = get_entity(&a, "people", "p", "ada").await;
    assert_eq!(gone.status.as_u16(), 404, "{}", gone.text());
    assert_eq!(gone.error_code(), "TableNotFound");
}

/// Nodes started at the same moment on a fresh database all come up (the schema is created
/// once, by whichever is first) and serve at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nodes_started_together_on_a_fresh_database_all_come_up() {
    for round in 0..3 {
        let url = PgCluster::shared().fresh_database("together");
        let n = Nodes::start_together(3, &url)
            .unwrap_or_else(|e| panic!("round {round}: not every node came up:\n{e}"));
        let clients = n.clients();
        clients[round % 3].create_table("first").await;
        for c in &clients {
            let r = c.call("GET", "/Tables", &[], None).await;
            assert_eq!(r.status.as_u16(), 200, "{}", r.text());
            assert_eq!(r.json()["value"].as_array().map(Vec::len), Some(1));
        }
    }
}

/// A node that finds the schema made by another starts without PostgreSQL's NOTICEs
/// ("relation … already exists, skipping") in its log: they are not news to anyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_second_node_logs_no_notice_about_the_existing_schema() {
    let url = PgCluster::shared().fresh_database("quiet");
    let n = Nodes::start(2, &url, &["--log-level", "info"]);
    for i in 0..2 {
        let log = format!("{}{}", n.node(i).start_up, n.node(i).log_so_far());
        assert!(!log.contains("already exists"), "node {i}:\n{log}");
        assert!(!log.contains("NOTICE"), "node {i}:\n{log}");
    }
    let r = n.client(1).call("GET", "/Tables", &[], None).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text());
}

/// Every worker loops read → `PUT If-Match` (counter + 1) through its own node. Each 204 is an
/// acknowledged increment; a 412 is a lost race and changes nothing. The final counter must
/// equal the number of 204s: none lost, none invented.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conditional_updates_through_different_nodes_lose_no_update() {
    const KEYS: usize = 3;
    const WORKERS: usize = 6;
    const ATTEMPTS: usize = 15;
    let n = nodes(3, "no_lost_update");
    let clients = n.clients();
    clients[0].create_table("counters").await;
    for k in 0..KEYS {
        clients[0]
            .insert(
                "counters",
                &json!({"PartitionKey": "c", "RowKey": format!("k{k}"), "n": 0}),
            )
            .await;
    }
    let mut set = JoinSet::new();
    for w in 0..WORKERS {
        let c = clients[w % clients.len()].clone();
        set.spawn(async move {
            let mut acked = [0usize; KEYS];
            let mut refused = 0;
            for i in 0..ATTEMPTS {
                let k = (w + i) % KEYS;
                let rk = format!("k{k}");
                let r = get_entity(&c, "counters", "c", &rk).await;
                assert_eq!(r.status.as_u16(), 200, "{}", r.text());
                let etag = r.header("etag").expect("ETag").to_string();
                let next = r.json()["n"].as_i64().expect("n") + 1;
                let body = json!({"PartitionKey": "c", "RowKey": rk, "n": next});
                let u = c
                    .call(
                        "PUT",
                        &entity_url("counters", "c", &rk),
                        &[("If-Match", &etag)],
                        Some(body),
                    )
                    .await;
                match u.status.as_u16() {
                    204 => acked[k] += 1,
                    412 => {
                        assert_eq!(
                            u.error_code(),
                            "UpdateConditionNotSatisfied",
                            "{}",
                            u.text()
                        );
                        refused += 1;
                    }
                    s => panic!(
                        "an ETag-guarded update is applied (204) or refused (412), not {s}: {}",
                        u.text()
                    ),
                }
            }
            (acked, refused)
        });
    }
    let mut acked = [0usize; KEYS];
    let mut refused = 0;
    while let Some(done) = set.join_next().await {
        let (a, r) = done.expect("worker");
        for k in 0..KEYS {
            acked[k] += a[k];
        }
        refused += r;
    }
    for (k, want) in acked.iter().enumerate() {
        let r = get_entity(
            &clients[(k + 1) % clients.len()],
            "counters",
            "c",
            &format!("k{k}"),
        )
        .await;
        assert_eq!(
            r.json()["n"].as_u64(),
            Some(*want as u64),
            "key k{k}: final value is the count of acknowledged increments"
        );
    }
    assert_eq!(acked.iter().sum::<usize>() + refused, WORKERS * ATTEMPTS);
    assert!(
        acked.iter().all(|a| *a > 0),
        "every key saw progress: {acked:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_inserts_of_one_key_through_different_nodes_make_exactly_one() {
    const WRITERS: usize = 9;
    let n = nodes(3, "insert_once");
    let clients = n.clients();
    clients[0].create_table("once").await;
    for round in 0..5 {
        let mut set = JoinSet::new();
        for w in 0..WRITERS {
            let c = clients[w % clients.len()].clone();
            set.spawn(async move {
                let body = json!({"PartitionKey": "p", "RowKey": format!("r{round}"), "writer": w});
                (w, c.call("POST", "/once", &[], Some(body)).await)
            });
        }
        let mut winners = Vec::new();
        while let Some(done) = set.join_next().await {
            let (w, r) = done.expect("writer");
            match r.status.as_u16() {
                201 | 204 => winners.push(w),
                409 => assert_eq!(r.error_code(), "EntityAlreadyExists", "{}", r.text()),
                s => panic!("insert answered {s}: {}", r.text()),
            }
        }
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exactly one insert wins, got {winners:?}"
        );
        let stored = get_entity(&clients[2], "once", "p", &format!("r{round}")).await;
        assert_eq!(
            stored.json()["writer"].as_u64(),
            Some(winners[0] as u64),
            "the stored entity is the winner's"
        );
    }
}

/// A writer on node A replaces a whole partition of 10 entities in one batch, round after
/// round; readers on the other nodes query the partition meanwhile and must always see one
/// round, never a mix. A batch that fails part-way (an insert of an existing key) applies
/// nothing, seen from another node.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batches_are_atomic_across_nodes() {
    batch_atomicity(10).await;
}

/// The same with 100 entities (a full batch), read back in one response: the PostgreSQL
/// store reads a scan in pages of 64 then 512 rows, each its own statement, all in one
/// snapshot (one read-only repeatable-read transaction per scan). Before that, a query could
/// see a batch that committed between two pages (observed: rounds 8 and 9 split at row 64).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batches_are_atomic_across_nodes_for_reads_of_more_than_one_store_page() {
    batch_atomicity(100).await;
}

async fn batch_atomicity(rows: usize) {
    const ROUNDS: usize = 25;
    let n = nodes(3, "atomic_batch");
    let clients = n.clients();
    clients[0].create_table("batched").await;
    let base = clients[0].account_url();
    let batch_of = |round: usize, rows: usize| {
        let mut b = BatchBody::new(&base);
        for r in 0..rows {
            let body = json!({"PartitionKey": "p", "RowKey": format!("r{r:02}"), "round": round})
                .to_string();
            b.op(
                "PUT",
                &entity_url("batched", "p", &format!("r{r:02}")),
                &[],
                Some(&body),
            );
        }
        b
    };
    let post_batch = |c: Client, b: BatchBody| async move {
        let r = c.send_batch(&b).await.expect("batch answered");
        assert_eq!(r.status.as_u16(), 202, "{}", r.text());
        r.text()
    };
    post_batch(clients[0].clone(), batch_of(0, rows)).await;

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut readers = JoinSet::new();
    for c in clients[1..].iter().cloned() {
        let stop = stop.clone();
        readers.spawn(async move {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || reads == 0 {
                let r = c
                    .call(
                        "GET",
                        "/batched()?$filter=PartitionKey%20eq%20'p'",
                        &[],
                        None,
                    )
                    .await;
                assert_eq!(r.status.as_u16(), 200, "{}", r.text());
                let rounds: Vec<u64> = r.json()["value"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| e["round"].as_u64().unwrap())
                    .collect();
                assert_eq!(rounds.len(), rows);
                assert!(
                    rounds.iter().all(|x| *x == rounds[0]),
                    "half a batch seen on {}: {rounds:?}",
                    c.endpoint
                );
                reads += 1;
            }
            reads
        });
    }
    for round in 1..=ROUNDS {
        post_batch(clients[0].clone(), batch_of(round, rows)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    while let Some(done) = readers.join_next().await {
        assert!(done.expect("reader") > 0);
    }

    // Replace every row, then insert a key that exists (written through another node): the
    // whole change set fails at its last operation, and none of it is visible anywhere.
    clients[2]
        .insert(
            "batched",
            &json!({"PartitionKey": "p", "RowKey": "zz", "round": ROUNDS}),
        )
        .await;
    let mut b = batch_of(999, rows - 1);
    b.op(
        "POST",
        "/batched",
        &[],
        Some(&json!({"PartitionKey": "p", "RowKey": "zz"}).to_string()),
    );
    let text = post_batch(clients[0].clone(), b).await;
    assert!(
        text.contains("409") && text.contains("EntityAlreadyExists"),
        "{text}"
    );
    let (all, _) = query_round_robin(&clients[1..], "batched", "").await;
    assert_eq!(all.len(), rows + 1);
    assert!(
        all.iter()
            .all(|e| e["round"].as_u64() == Some(ROUNDS as u64)),
        "nothing of the failed batch is visible"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn continuation_tokens_issued_by_one_node_work_on_another() {
    let n = nodes(3, "continuation");
    let clients = n.clients();
    clients[0].create_table("paged").await;
    let base = clients[0].account_url();
    let mut expected = Vec::new();
    for pk in ["a", "b", "c"] {
        let mut b = BatchBody::new(&base);
        for r in 0..9 {
            let rk = format!("{r:02}");
            expected.push(format!("{pk}/{rk}"));
            b.op(
                "POST",
                "/paged",
                &[("Prefer", "return-no-content")],
                Some(&json!({"PartitionKey": pk, "RowKey": rk}).to_string()),
            );
        }
        let r = clients[1].send_batch(&b).await.expect("batch");
        assert_eq!(r.status.as_u16(), 202, "{}", r.text());
    }
    // Pages of 4 read round-robin through the three nodes.
    let (all, pages) = query_round_robin(&clients, "paged", "$top=4").await;
    let keys: Vec<String> = all
        .iter()
        .map(|e| {
            format!(
                "{}/{}",
                e["PartitionKey"].as_str().unwrap(),
                e["RowKey"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(keys, expected, "every entity once, in key order");
    assert!(pages >= 7, "the query really was paged ({pages} pages)");

    // Table listing continuation (NextTableName) across nodes too.
    for t in ["tab1", "tab2", "tab3", "tab4", "tab5"] {
        clients[2].create_table(t).await;
    }
    let mut names = Vec::new();
    let mut token = String::new();
    for page in 0.. {
        let c = &clients[page % clients.len()];
        let r = c
            .call("GET", &format!("/Tables?$top=2{token}"), &[], None)
            .await;
        assert_eq!(r.status.as_u16(), 200, "{}", r.text());
        names.extend(
            r.json()["value"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["TableName"].as_str().unwrap().to_string()),
        );
        match r.header("x-ms-continuation-NextTableName") {
            Some(next) => token = format!("&NextTableName={}", encode(next)),
            None => break,
        }
    }
    assert_eq!(names, ["paged", "tab1", "tab2", "tab3", "tab4", "tab5"]);
}

/// Updates of one entity alternate between nodes, with no pause: each ETag (and Timestamp) is
/// strictly later than the one before.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn timestamps_and_etags_increase_per_entity_across_nodes() {
    let n = nodes(3, "monotonic");
    let clients = n.clients();
    clients[0].create_table("clock").await;
    let first = clients[0]
        .insert(
            "clock",
            &json!({"PartitionKey": "p", "RowKey": "r", "i": 0}),
        )
        .await;
    let mut last = first.header("etag").expect("ETag").to_string();
    for i in 1..40 {
        let c = &clients[i % clients.len()];
        let method = if i % 2 == 0 { "MERGE" } else { "PUT" };
        let r = c
            .call(
                method,
                &entity_url("clock", "p", "r"),
                &[],
                Some(json!({"i": i})),
            )
            .await;
        assert_eq!(r.status.as_u16(), 204, "{}", r.text());
        let etag = r.header("etag").expect("ETag").to_string();
        assert!(
            timestamp_of(&etag) > timestamp_of(&last),
            "update {i} on {}: {etag} is not after {last}",
            c.endpoint
        );
        last = etag;
    }
    let read = get_entity(&clients[1], "clock", "p", "r").await;
    assert_eq!(read.header("etag"), Some(last.as_str()));
    let ts: DateTime<Utc> = read.json()["Timestamp"]
        .as_str()
        .expect("Timestamp")
        .parse()
        .unwrap();
    assert_eq!(ts, timestamp_of(&last), "Timestamp is the ETag's time");
}

/// Workers insert distinct entities through all three nodes; node 0 is killed with SIGKILL
/// mid-run. Every insert that was acknowledged (204) is there afterwards, read through another
/// node, and the other nodes kept acknowledging writes after the kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_of_a_node_under_load_loses_no_acknowledged_write() {
    let mut n = nodes(3, "kill_node");
    let clients = n.clients();
    clients[0].create_table("load").await;
    let killed_at = std::sync::Arc::new(std::sync::OnceLock::<Instant>::new());
    let deadline = Instant::now() + Duration::from_secs(4);
    let mut set = JoinSet::new();
    for w in 0..6 {
        let c = clients[w % clients.len()].clone();
        let killed_at = killed_at.clone();
        set.spawn(async move {
            let mut acked = Vec::new();
            let mut acked_after_kill = 0;
            for i in 0.. {
                if Instant::now() > deadline {
                    break;
                }
                let body =
                    json!({"PartitionKey": format!("w{w}"), "RowKey": format!("{i:05}"), "v": i})
                        .to_string();
                match c
                    .send(
                        "POST",
                        "/load",
                        &[("Prefer", "return-no-content")],
                        Some(body.into_bytes()),
                    )
                    .await
                {
                    Ok(r) if r.status.as_u16() == 204 => {
                        acked.push(i);
                        if killed_at.get().is_some() {
                            acked_after_kill += 1;
                        }
                    }
                    Ok(r) => panic!("insert answered {}: {}", r.status, r.text()),
                    // The killed node: the connection is cut; that write is not acknowledged.
                    Err(_) => break,
                }
            }
            (w, acked, acked_after_kill)
        });
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    n.kill9(0);
    killed_at.set(Instant::now()).unwrap();
    let mut acked = BTreeMap::new();
    while let Some(done) = set.join_next().await {
        let (w, keys, after) = done.expect("worker");
        if w % 3 != 0 {
            assert!(
                after > 0,
                "worker {w} on a surviving node kept being served after the kill"
            );
        }
        acked.insert(w, keys);
    }
    n.restart(0);
    let readers = n.clients();
    for (w, keys) in &acked {
        assert!(!keys.is_empty(), "worker {w} wrote something");
        let (stored, _) = query_round_robin(
            &readers,
            "load",
            &format!("$filter=PartitionKey%20eq%20'w{w}'"),
        )
        .await;
        let stored: Vec<u64> = stored.iter().map(|e| e["v"].as_u64().unwrap()).collect();
        for i in keys {
            assert!(
                stored.contains(&(*i as u64)),
                "acknowledged insert w{w}/{i:05} is lost"
            );
        }
    }
}

/// While PostgreSQL is down every node answers 503 ServerBusy (Azure's shape, which the SDKs
/// retry) promptly; when it is back the same nodes serve again, without a restart, and the data
/// is intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_restart_gives_503_server_busy_and_the_nodes_recover() {
    let pg = PgCluster::start(Durability::Fast);
    let n = Nodes::start(2, &pg.fresh_database("restart"), &[]);
    let clients = n.clients();
    clients[0].create_table("survivor").await;
    clients[0]
        .insert(
            "survivor",
            &json!({"PartitionKey": "p", "RowKey": "before", "v": 1}),
        )
        .await;
    assert_eq!(
        get_entity(&clients[1], "survivor", "p", "before")
            .await
            .status
            .as_u16(),
        200
    );

    pg.stop();
    for c in &clients {
        for (method, path, body) in [
            ("GET", entity_url("survivor", "p", "before"), None),
            (
                "POST",
                "/survivor".to_string(),
                Some(json!({"PartitionKey": "p", "RowKey": "down"})),
            ),
            ("GET", "/Tables".to_string(), None),
        ] {
            let started = Instant::now();
            let r = c.call(method, &path, &[], body).await;
            assert_eq!(
                r.status.as_u16(),
                503,
                "{method} {path} on {} with the database down: {}",
                c.endpoint,
                r.text()
            );
            assert_eq!(r.error_code(), "ServerBusy", "{}", r.text());
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "answered promptly, not after {:?}",
                started.elapsed()
            );
        }
    }

    pg.start_again();
    for c in &clients {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let r = c
                .call("GET", &entity_url("survivor", "p", "before"), &[], None)
                .await;
            if r.status.as_u16() == 200 {
                assert_eq!(r.json()["v"], 1);
                break;
            }
            assert_eq!(r.status.as_u16(), 503, "{}", r.text());
            assert!(
                Instant::now() < deadline,
                "node {} did not recover within 30 s of the database",
                c.endpoint
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    clients[1]
        .insert(
            "survivor",
            &json!({"PartitionKey": "p", "RowKey": "after", "v": 2}),
        )
        .await;
    let after = get_entity(&clients[0], "survivor", "p", "after").await;
    assert_eq!(after.status.as_u16(), 200, "{}", after.text());
    let down = get_entity(&clients[0], "survivor", "p", "down").await;
    assert_eq!(
        down.status.as_u16(),
        404,
        "the insert refused with 503 was not applied"
    );
}

/// The fixture itself: a cluster starts, hands out databases, survives a restart with its
/// data (the restart test above relies on this), and leaves nothing behind when dropped.
#[test]
fn postgres_fixture_creates_databases_and_restarts() {
    let pg = PgCluster::start(Durability::Fast);
    let url = pg.fresh_database("fixture");
    let db = url.rsplit('/').next().unwrap().to_string();
    assert!(url.starts_with("postgres://tablestore@127.0.0.1:"), "{url}");
    pg.psql(
        &db,
        "CREATE TABLE t (k int PRIMARY KEY); INSERT INTO t VALUES (7)",
    );
    pg.restart();
    assert!(pg.is_ready(), "{}", pg.log());
    assert_eq!(pg.psql(&db, "SELECT k FROM t"), "7");
    pg.stop();
    assert!(!pg.is_ready());
    pg.start_again();
    assert_eq!(pg.psql(&db, "SELECT count(*) FROM t"), "1");
    assert!(!pg.log().is_empty());
    let root = pg.root().to_path_buf();
    assert!(root.join("data").is_dir());
    drop(pg);
    assert!(!root.exists(), "{} is left behind", root.display());
}

/// The shared cluster is one per binary and gives every caller distinct databases.
#[test]
fn shared_cluster_hands_out_distinct_databases() {
    let a = PgCluster::shared().fresh_database("shared");
    let b = PgCluster::shared().fresh_database("shared");
    assert_ne!(a, b);
    assert_eq!(
        PgCluster::shared().psql("postgres", "SELECT 1"),
        "1",
        "the shared cluster answers"
    );
}

/// Every node reports the database's data (PostgreSQL counts it: exact up to 100,000
/// entities), whichever node wrote it: the same entity count and logical bytes in `/metrics`
/// and in the insight document's `store` member, and the entities table's size on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_node_reports_the_databases_entity_count_and_size() {
    // Without auth, so /metrics and the insight document are plain GETs at the root.
    let n = Nodes::start(
        2,
        &PgCluster::shared().fresh_database("footprint"),
        &["--disable-auth"],
    );
    let clients = n.clients();
    clients[0].create_table("sized").await;
    for r in 0..30 {
        clients[r % 2]
            .insert(
                "sized",
                &json!({"PartitionKey": "p", "RowKey": format!("{r:02}"), "Text": "x".repeat(100)}),
            )
            .await;
    }
    let mut seen = Vec::new();
    let http = reqwest::Client::new();
    let get = |url: String| {
        let http = http.clone();
        async move {
            let r = http.get(&url).send().await.expect("answered");
            assert_eq!(r.status().as_u16(), 200, "{url}");
            r.text().await.expect("body")
        }
    };
    for (i, c) in clients.iter().enumerate() {
        let text = get(format!("{}/metrics", n.endpoint(i))).await;
        let metric = |name: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
                .unwrap_or_else(|| panic!("{name} missing from\n{text}"))
        };
        let (entities, logical, disk) = (
            metric("tablestore_store_entities"),
            metric("tablestore_store_logical_bytes"),
            metric("tablestore_store_size_bytes"),
        );
        assert_eq!(entities, 30, "on {}", c.endpoint);
        assert!(logical > 30 * 100, "{logical} bytes on {}", c.endpoint);
        assert!(disk >= 8192, "{disk} bytes on disk on {}", c.endpoint);
        let insight: Value =
            serde_json::from_str(&get(format!("{}/_tablestore/insight", n.endpoint(i))).await)
                .expect("json");
        let store = insight["store"].clone();
        assert_eq!(store["entities"].as_u64(), Some(30), "{store}");
        assert_eq!(store["logicalBytes"].as_u64(), Some(logical), "{store}");
        seen.push(logical);
    }
    assert_eq!(seen[0], seen[1], "both nodes report the same data");
}
