//! Durability over raw HTTP (issue 2): everything acknowledged is there after a restart on
//! the same folder — same values, ETags and Timestamps — deleted tables stay deleted, and an
//! acknowledged write is on disk even without a clean shutdown.

use crate::common;

use std::path::Path;

use common::assert::assert_error;
use common::url::{encode_key, entity_url};
use common::{TestServer, JSON_MINIMAL, JSON_NONE};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tablestore::config::Config;

fn disk_config(dir: &Path) -> Config {
    let mut config = Config::for_tests();
    config.in_memory = false;
    config.location = dir.to_path_buf();
    config.port = 0;
    config
}

async fn start_on(dir: &Path) -> TestServer {
    TestServer::start_with(disk_config(dir)).await
}

async fn stop(t: TestServer) {
    let TestServer { server, client, .. } = t;
    drop(client);
    server
        .shutdown()
        .await
        .expect("clean stop flushes the store");
}

const ALL_TYPES: &str = r#"{"PartitionKey":"types","RowKey":"all",
    "Str":"héllo 漢字 😀","B":true,"I":-42,"L@odata.type":"Edm.Int64","L":"9223372036854775807",
    "D":5.0,"DN@odata.type":"Edm.Double","DN":"NaN","DI@odata.type":"Edm.Double","DI":"-Infinity",
    "T@odata.type":"Edm.DateTime","T":"2021-02-05T17:15:16.7935715Z",
    "G@odata.type":"Edm.Guid","G":"4185404a-5818-48c3-b9be-f217df0dba6f",
    "X@odata.type":"Edm.Binary","X":"AQIDBA=="}"#;

/// Every entity of `table` (one page is enough here), as (nometadata body text, ETag).
async fn snapshot(t: &TestServer, table: &str) -> Vec<(String, String)> {
    let r = t
        .send(
            "GET",
            &format!("/{table}()"),
            &[("Accept", JSON_NONE)],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert!(r.header("x-ms-continuation-NextPartitionKey").is_none());
    let mut out = Vec::new();
    for e in r.json()["value"].as_array().expect("value") {
        let pk = e["PartitionKey"].as_str().expect("pk");
        let rk = e["RowKey"].as_str().expect("rk");
        let g = t
            .send(
                "GET",
                &entity_url(table, pk, rk),
                &[("Accept", JSON_MINIMAL)],
                None,
            )
            .await;
        assert_eq!(g.status, StatusCode::OK);
        let etag = g.header("etag").expect("ETag").to_string();
        assert_eq!(g.json()["odata.etag"], etag.as_str());
        let n = t
            .send(
                "GET",
                &entity_url(table, pk, rk),
                &[("Accept", JSON_NONE)],
                None,
            )
            .await;
        out.push((n.text(), etag));
    }
    out
}

async fn tables(t: &TestServer) -> Vec<String> {
    let r = t.send("GET", "/Tables", &[], None).await;
    r.json()["value"]
        .as_array()
        .expect("value")
        .iter()
        .map(|v| v["TableName"].as_str().expect("name").to_string())
        .collect()
}

#[tokio::test]
async fn tables_and_entities_survive_a_restart_unchanged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let t = start_on(dir.path()).await;
    for name in ["Keep", "Gone", "Reborn", "other"] {
        t.create_table(name).await;
    }
    let r = t
        .send(
            "POST",
            "/Keep",
            &[("Prefer", "return-no-content")],
            Some(ALL_TYPES),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    for (pk, rk) in [
        ("", ""),
        ("it's", ":@+,$=& "),
        ("漢字", "😀"),
        ("p", "r1"),
        ("p", "r2"),
        ("p", "r3"),
    ] {
        t.insert("Keep", &json!({"PartitionKey": pk, "RowKey": rk, "v": 1}))
            .await;
    }
    // Replace, merge and delete some, so the stored state is not just the inserts.
    let r = t
        .send(
            "PUT",
            "/Keep(PartitionKey='p',RowKey='r1')",
            &[("If-Match", "*")],
            Some(r#"{"replaced":true}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = t
        .send(
            "MERGE",
            "/Keep(PartitionKey='p',RowKey='r2')",
            &[("If-Match", "*")],
            Some(r#"{"merged":2}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = t
        .send(
            "DELETE",
            "/Keep(PartitionKey='p',RowKey='r3')",
            &[("If-Match", "*")],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    for i in 0..5 {
        t.insert(
            "Gone",
            &json!({"PartitionKey": "g", "RowKey": format!("{i}")}),
        )
        .await;
        t.insert(
            "Reborn",
            &json!({"PartitionKey": "old", "RowKey": format!("{i}")}),
        )
        .await;
    }
    t.insert("other", &json!({"PartitionKey": "o", "RowKey": "o"}))
        .await;
    for name in ["Gone", "Reborn"] {
        let r = t
            .send("DELETE", &format!("/Tables('{name}')"), &[], None)
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
    }
    t.create_table("reborn").await;
    t.insert("reborn", &json!({"PartitionKey": "new", "RowKey": "1"}))
        .await;

    let keep = snapshot(&t, "Keep").await;
    assert_eq!(keep.len(), 6);
    let reborn = snapshot(&t, "reborn").await;
    let other = snapshot(&t, "other").await;
    let names = tables(&t).await;
    assert_eq!(names, vec!["Keep", "other", "reborn"]);
    let first_page = t.send("GET", "/Tables?$top=1", &[], None).await;
    let token = first_page
        .header("x-ms-continuation-NextTableName")
        .expect("token")
        .to_string();
    stop(t).await;

    let t = start_on(dir.path()).await;
    assert_eq!(tables(&t).await, names, "tables, with their casing");
    assert_eq!(
        snapshot(&t, "Keep").await,
        keep,
        "values, ETags and Timestamps"
    );
    assert_eq!(snapshot(&t, "reborn").await, reborn);
    assert_eq!(snapshot(&t, "other").await, other);
    let e = t
        .send(
            "GET",
            "/Keep(PartitionKey='types',RowKey='all')",
            &[("Accept", JSON_MINIMAL)],
            None,
        )
        .await
        .json();
    assert_eq!(e["L"], "9223372036854775807");
    assert_eq!(e["L@odata.type"], "Edm.Int64");
    assert_eq!(e["DN"], "NaN");
    assert_eq!(e["T"], "2021-02-05T17:15:16.7935715Z");
    assert_eq!(e["X"], "AQIDBA==");
    assert_eq!(e["Str"], "héllo 漢字 😀");
    // A continuation token issued before the restart still works.
    let r = t
        .send(
            "GET",
            &format!("/Tables?$top=1&NextTableName={}", encode_key(&token)),
            &[],
            None,
        )
        .await;
    assert_eq!(r.json()["value"][0]["TableName"], "other");
    // Deleted things stay deleted.
    let r = t.send("GET", "/Gone()", &[], None).await;
    assert_error(&r, 404, "TableNotFound");
    let r = t
        .send("GET", "/Keep(PartitionKey='p',RowKey='r3')", &[], None)
        .await;
    assert_error(&r, 404, "ResourceNotFound");
    // A deleted table's name can be created again, empty; new tables do not see old data.
    t.create_table("gone").await;
    let r = t.send("GET", "/gone()", &[], None).await;
    assert_eq!(r.json()["value"], json!([]));
    t.create_table("brandnew").await;
    let r = t.send("GET", "/brandnew()", &[], None).await;
    assert_eq!(r.json()["value"], json!([]));
    // Writes go on: an ETag from before the restart still guards the entity.
    let (_, etag) = keep
        .iter()
        .find(|(body, _)| body.contains(r#""RowKey":"r1""#))
        .expect("r1")
        .clone();
    let r = t
        .send(
            "MERGE",
            "/Keep(PartitionKey='p',RowKey='r1')",
            &[("If-Match", etag.as_str())],
            Some(r#"{"after":1}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    let r = t
        .send(
            "MERGE",
            "/Keep(PartitionKey='p',RowKey='r1')",
            &[("If-Match", etag.as_str())],
            Some(r#"{"after":2}"#),
        )
        .await;
    assert_error(&r, 412, "UpdateConditionNotSatisfied");
    stop(t).await;

    // And once more, with the post-restart writes.
    let t = start_on(dir.path()).await;
    let r = t
        .send(
            "GET",
            "/Keep(PartitionKey='p',RowKey='r1')",
            &[("Accept", JSON_NONE)],
            None,
        )
        .await;
    let e: Value = r.json();
    assert_eq!(
        (e["replaced"].clone(), e["after"].clone()),
        (json!(true), json!(1))
    );
    assert_eq!(
        tables(&t).await,
        vec!["brandnew", "gone", "Keep", "other", "reborn"]
    );
    stop(t).await;
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[tokio::test]
async fn acknowledged_writes_are_on_disk_without_a_clean_shutdown() {
    let dir = tempfile::tempdir().expect("temp dir");
    let t = start_on(dir.path()).await;
    t.create_table("durable").await;
    let mut etags = Vec::new();
    for i in 0..10 {
        let r = t
            .insert(
                "durable",
                &json!({"PartitionKey": "p", "RowKey": format!("{i}"), "i": i}),
            )
            .await;
        etags.push(r.header("etag").expect("ETag").to_string());
    }
    let r = t
        .send(
            "DELETE",
            "/durable(PartitionKey='p',RowKey='9')",
            &[("If-Match", "*")],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    // The files as a crash would leave them right now: the server is still running.
    let copy = tempfile::tempdir().expect("temp dir");
    copy_dir(dir.path(), copy.path());
    let t2 = start_on(copy.path()).await;
    let r = t2
        .send("GET", "/durable()", &[("Accept", JSON_MINIMAL)], None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let value = r.json()["value"].as_array().expect("value").clone();
    assert_eq!(value.len(), 9);
    for (i, e) in value.iter().enumerate() {
        assert_eq!(e["i"], i);
        assert_eq!(e["odata.etag"], etags[i].as_str());
    }
    stop(t2).await;
    stop(t).await;
}
