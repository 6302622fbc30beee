//! Concurrent writers over raw HTTP (issue 2): optimistic concurrency holds under contention —
//! exactly one conditional update wins per ETag, exactly one insert per key, and concurrent
//! merges under `If-Match: *` lose nothing.

use crate::common;

use std::sync::Arc;

use common::assert::assert_error;
use common::{TestServer, JSON_MINIMAL, JSON_NONE};
use reqwest::StatusCode;
use serde_json::json;
use tablestore::config::FlavorArg;
use tokio::task::JoinSet;

const WRITERS: usize = 12;

async fn start(table: &str) -> Arc<TestServer> {
    start_as(FlavorArg::Storage, table).await
}

async fn start_as(flavor: FlavorArg, table: &str) -> Arc<TestServer> {
    Arc::new(TestServer::with_table_as(flavor, table).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_one_conditional_update_wins_each_round() {
    let t = start("race").await;
    let url = "/race(PartitionKey='p',RowKey='r')";
    let r = t
        .insert(
            "race",
            &json!({"PartitionKey": "p", "RowKey": "r", "winner": -1}),
        )
        .await;
    let mut etag = r.header("etag").expect("ETag").to_string();
    for round in 0..8 {
        let mut set = JoinSet::new();
        for w in 0..WRITERS {
            let t = Arc::clone(&t);
            let etag = etag.clone();
            // Alternate replace and merge; both are guarded by the same ETag.
            let method = if (w + round) % 2 == 0 { "PUT" } else { "MERGE" };
            set.spawn(async move {
                let body = json!({"winner": w, "round": round}).to_string();
                let r = t
                    .send(method, url, &[("If-Match", etag.as_str())], Some(&body))
                    .await;
                (w, r)
            });
        }
        let mut winners = Vec::new();
        while let Some(done) = set.join_next().await {
            let (w, r) = done.expect("task");
            match r.status {
                StatusCode::NO_CONTENT => {
                    winners.push((w, r.header("etag").expect("ETag").to_string()))
                }
                _ => assert_error(&r, 412, "UpdateConditionNotSatisfied"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one winner");
        let (w, new_etag) = winners.remove(0);
        let g = t.send("GET", url, &[("Accept", JSON_MINIMAL)], None).await;
        assert_eq!(g.header("etag"), Some(new_etag.as_str()));
        assert_eq!(g.json()["winner"], w, "the stored value is the winner's");
        assert_eq!(g.json()["round"], round);
        assert_ne!(new_etag, etag);
        etag = new_etag;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exactly_one_concurrent_insert_of_a_key_succeeds() {
    let t = start("inserts").await;
    for round in 0..5 {
        let mut set = JoinSet::new();
        for w in 0..WRITERS {
            let t = Arc::clone(&t);
            set.spawn(async move {
                let body = json!({"PartitionKey": "p", "RowKey": format!("k{round}"), "writer": w});
                let r = t.post_entity("inserts", &body, &[]).await;
                (w, r)
            });
        }
        let mut created = Vec::new();
        while let Some(done) = set.join_next().await {
            let (w, r) = done.expect("task");
            if r.status == StatusCode::CREATED {
                created.push((w, r.header("etag").expect("ETag").to_string()));
            } else {
                assert_error(&r, 409, "EntityAlreadyExists");
            }
        }
        assert_eq!(created.len(), 1, "round {round}: exactly one 201");
        let (w, etag) = &created[0];
        let g = t
            .send(
                "GET",
                &format!("/inserts(PartitionKey='p',RowKey='k{round}')"),
                &[],
                None,
            )
            .await;
        assert_eq!(g.json()["writer"], *w);
        assert_eq!(g.header("etag"), Some(etag.as_str()));
    }
}

async fn concurrent_merges_of_different_properties_lose_nothing(flavor: FlavorArg) {
    let t = start_as(flavor, "merges").await;
    let url = "/merges(PartitionKey='p',RowKey='r')";
    t.insert(
        "merges",
        &json!({"PartitionKey": "p", "RowKey": "r", "base": 0}),
    )
    .await;
    let writers = 40;
    let mut set = JoinSet::new();
    for w in 0..writers {
        let t = Arc::clone(&t);
        set.spawn(async move {
            let body = json!({ format!("p{w:02}"): w }).to_string();
            // Half with If-Match: *, half as Insert Or Merge.
            let headers: &[(&str, &str)] = if w % 2 == 0 {
                &[("If-Match", "*")]
            } else {
                &[]
            };
            let r = t.send("MERGE", url, headers, Some(&body)).await;
            assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
            r.header("etag").expect("ETag").to_string()
        });
    }
    let mut etags = Vec::new();
    while let Some(done) = set.join_next().await {
        etags.push(done.expect("task"));
    }
    etags.sort();
    etags.dedup();
    assert_eq!(etags.len(), writers, "every merge got its own ETag");
    let e = t
        .send("GET", url, &[("Accept", JSON_NONE)], None)
        .await
        .json();
    assert_eq!(e["base"], 0);
    for w in 0..writers {
        assert_eq!(e[format!("p{w:02}")], w, "property of writer {w}: {e}");
    }
}

async fn concurrent_inserts_of_different_keys_and_tables_all_land(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    for name in ["left", "right"] {
        t.create_table(name).await;
    }
    let t = Arc::new(t);
    let mut set = JoinSet::new();
    for w in 0..60usize {
        let t = Arc::clone(&t);
        set.spawn(async move {
            let table = if w % 2 == 0 { "left" } else { "right" };
            let body = json!({"PartitionKey": format!("p{}", w % 5), "RowKey": format!("{w:03}")});
            let r = t
                .post_entity(table, &body, &[("Prefer", "return-no-content")])
                .await;
            assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
        });
    }
    while let Some(done) = set.join_next().await {
        done.expect("task");
    }
    for name in ["left", "right"] {
        let r = t.send("GET", &format!("/{name}()"), &[], None).await;
        assert_eq!(
            r.json()["value"].as_array().map(Vec::len),
            Some(30),
            "{name}"
        );
    }
}

both_flavours!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    concurrent_merges_of_different_properties_lose_nothing,
    concurrent_inserts_of_different_keys_and_tables_all_land,
);
