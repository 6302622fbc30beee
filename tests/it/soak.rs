//! Concurrency soak on a durable on-disk store: many clients increment shared counters with
//! optimistic concurrency (read, then replace or merge with If-Match, retry on 412), while
//! others run change sets that rewrite whole partitions and others query everything.
//!
//! At the end every counter equals the number of increments that were acknowledged, and no
//! read ever saw a torn entity: each entity carries two properties that are always written
//! equal. Each change set also writes one generation number into all rows of its partition,
//! and no query (one response page) ever saw two generations in one partition: a page sees a
//! change set whole or not at all (docs/reliability.md). Bounded to ~6 s; `TABLESTORE_LONG_TESTS=1` runs for 2 minutes.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::batch::BatchBody;
use common::child::{Client, Signer};
use rand::{RngExt as _, SeedableRng as _};
use rand_pcg::Pcg64;
use serde_json::{json, Value};
use tablestore::config::Config;
use tablestore::testing::TestServer;

const COUNTERS: usize = 4;
const INCREMENTERS: usize = 8;
const BATCHERS: usize = 2;
const BATCH_ROWS: usize = 6;
const READERS: usize = 2;

fn run_for() -> Duration {
    if std::env::var("TABLESTORE_LONG_TESTS").is_ok_and(|v| v == "1") {
        Duration::from_secs(120)
    } else {
        Duration::from_secs(6)
    }
}

#[derive(Default)]
struct Stats {
    increments: [AtomicU64; COUNTERS],
    conflicts: AtomicU64,
    batches: AtomicU64,
    queries: AtomicU64,
    entities_read: AtomicU64,
    torn: AtomicU64,
    /// A query saw one partition's rows from different change sets.
    mixed_generations: AtomicU64,
}

fn counter_path(c: usize) -> String {
    format!("/soak(PartitionKey='counters',RowKey='c{c}')")
}

/// An entity is torn when a pair of properties that are always written equal differ.
fn is_torn(e: &Value) -> bool {
    e.get("count") != e.get("shadow") || e.get("a") != e.get("b")
}

async fn incrementer(client: Client, id: usize, stop: Arc<AtomicBool>, stats: Arc<Stats>) {
    let mut rng = Pcg64::seed_from_u64(id as u64);
    while !stop.load(Ordering::Relaxed) {
        let c = rng.random_range(0..COUNTERS);
        let r = client
            .send("GET", &counter_path(c), &[], None)
            .await
            .expect("get");
        assert_eq!(r.status.as_u16(), 200, "{}", r.text());
        let e = r.json();
        assert!(!is_torn(&e), "torn counter {e}");
        let n = e["count"].as_i64().expect("count");
        let etag = r.header("etag").expect("etag").to_string();
        let body = json!({"count": n + 1, "shadow": n + 1})
            .to_string()
            .into_bytes();
        let method = if rng.random::<bool>() { "PUT" } else { "MERGE" };
        let w = client
            .send(method, &counter_path(c), &[("If-Match", &etag)], Some(body))
            .await
            .expect("write");
        match w.status.as_u16() {
            204 => {
                stats.increments[c].fetch_add(1, Ordering::Relaxed);
            }
            412 => {
                assert_eq!(w.error_code(), "UpdateConditionNotSatisfied");
                stats.conflicts.fetch_add(1, Ordering::Relaxed);
            }
            other => panic!("increment answered {other}: {}", w.text()),
        }
    }
}

async fn batcher(client: Client, id: usize, stop: Arc<AtomicBool>, stats: Arc<Stats>) {
    let pk = format!("batch{id}");
    let mut generation = 0u64;
    while !stop.load(Ordering::Relaxed) {
        generation += 1;
        let mut batch = BatchBody::new(&client.account_url());
        for row in 0..BATCH_ROWS {
            let entity = json!({"PartitionKey": pk, "RowKey": format!("r{row}"), "a": generation, "b": generation});
            let path = format!("/soak(PartitionKey='{pk}',RowKey='r{row}')");
            batch.op("PUT", &path, &[], Some(&entity.to_string()));
        }
        let r = client.send_batch(&batch).await.expect("batch");
        assert_eq!(r.status.as_u16(), 202, "{}", r.text());
        assert!(!r.text().contains("odata.error"), "{}", r.text());
        stats.batches.fetch_add(1, Ordering::Relaxed);
    }
}

async fn reader(client: Client, stop: Arc<AtomicBool>, stats: Arc<Stats>) {
    while !stop.load(Ordering::Relaxed) {
        let r = client
            .send("GET", "/soak()", &[], None)
            .await
            .expect("query");
        assert_eq!(r.status.as_u16(), 200, "{}", r.text());
        let v = r.json();
        let entities = v["value"].as_array().expect("value");
        stats.queries.fetch_add(1, Ordering::Relaxed);
        stats
            .entities_read
            .fetch_add(entities.len() as u64, Ordering::Relaxed);
        for e in entities {
            if is_torn(e) {
                stats.torn.fetch_add(1, Ordering::Relaxed);
                eprintln!("torn entity in a query: {e}");
            }
        }
        for id in 0..BATCHERS {
            let pk = format!("batch{id}");
            let gens: Vec<&Value> = entities
                .iter()
                .filter(|e| e["PartitionKey"] == pk.as_str())
                .map(|e| &e["a"])
                .collect();
            if gens.windows(2).any(|w| w[0] != w[1]) {
                stats.mixed_generations.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optimistic_counters_batches_and_queries_stay_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::for_tests();
    config.in_memory = false;
    config.location = dir.path().join("data");
    let server = TestServer::start_with(config).await.expect("start");
    let client = Client::new(&server.endpoint(), Signer::dev());
    client.create_table("soak").await;
    for c in 0..COUNTERS {
        let r = client
            .send(
                "PUT",
                &counter_path(c),
                &[],
                Some(json!({"count": 0, "shadow": 0}).to_string().into_bytes()),
            )
            .await
            .unwrap();
        assert_eq!(r.status.as_u16(), 204);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(Stats::default());
    let mut tasks = Vec::new();
    for id in 0..INCREMENTERS {
        tasks.push(tokio::spawn(incrementer(
            Client::new(&server.endpoint(), Signer::dev()),
            id,
            Arc::clone(&stop),
            Arc::clone(&stats),
        )));
    }
    for id in 0..BATCHERS {
        tasks.push(tokio::spawn(batcher(
            Client::new(&server.endpoint(), Signer::dev()),
            id,
            Arc::clone(&stop),
            Arc::clone(&stats),
        )));
    }
    for _ in 0..READERS {
        tasks.push(tokio::spawn(reader(
            Client::new(&server.endpoint(), Signer::dev()),
            Arc::clone(&stop),
            Arc::clone(&stats),
        )));
    }
    let started = Instant::now();
    tokio::time::sleep(run_for()).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(30), t)
            .await
            .expect("client finished")
            .expect("client did not panic");
    }

    let mut total = 0;
    for c in 0..COUNTERS {
        let r = client
            .send("GET", &counter_path(c), &[], None)
            .await
            .unwrap();
        let e = r.json();
        let want = stats.increments[c].load(Ordering::Relaxed);
        assert_eq!(e["count"].as_u64(), Some(want), "counter {c}: {e}");
        assert_eq!(e["shadow"].as_u64(), Some(want));
        total += want;
    }
    println!(
        "{:?}: {total} increments, {} conflicts (412), {} batches, {} queries reading {} entities, {} mixed-generation partitions seen",
        started.elapsed(),
        stats.conflicts.load(Ordering::Relaxed),
        stats.batches.load(Ordering::Relaxed),
        stats.queries.load(Ordering::Relaxed),
        stats.entities_read.load(Ordering::Relaxed),
        stats.mixed_generations.load(Ordering::Relaxed),
    );
    assert_eq!(
        stats.torn.load(Ordering::Relaxed),
        0,
        "torn entities were read"
    );
    // A response page sees each change set whole or not at all (Azure gives change sets
    // snapshot isolation against concurrent queries).
    assert_eq!(
        stats.mixed_generations.load(Ordering::Relaxed),
        0,
        "a query saw part of a change set"
    );
    assert!(total > 0 && stats.batches.load(Ordering::Relaxed) > 0);
    assert!(
        stats.conflicts.load(Ordering::Relaxed) > 0,
        "no contention was exercised"
    );
    server.shutdown().await.expect("clean stop");
}
