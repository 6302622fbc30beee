//! Entity group transactions over HTTP: every operation kind, each rule, rollback, the
//! failure shape, query batches, SDK-captured bodies, and batches racing single writes.

use crate::common;

use common::batch::BatchBody;
use common::TestServer;
use reqwest::StatusCode;
use serde_json::json;
use tablestore::config::FlavorArg;

/// One sub-request: verb, path below the account, extra headers, body.
struct Sub<'a>(&'a str, String, Vec<(&'a str, String)>, Option<String>);

fn insert(table: &str, pk: &str, rk: &str) -> Sub<'static> {
    Sub(
        "POST",
        format!("/{table}"),
        vec![("Prefer", "return-no-content".into())],
        Some(json!({"PartitionKey": pk, "RowKey": rk, "v": 1}).to_string()),
    )
}

fn entity_path(table: &str, pk: &str, rk: &str) -> String {
    format!("/{table}(PartitionKey='{pk}',RowKey='{rk}')")
}

/// Posts one change set holding `subs`.
async fn submit(t: &TestServer, subs: &[Sub<'_>]) -> common::Reply {
    let mut batch = BatchBody::new(&t.base());
    for Sub(method, path, headers, payload) in subs {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        batch.op(method, path, &headers, payload.as_deref());
    }
    t.send_batch(&batch).await
}

/// The status lines of the sub-responses, in order.
fn statuses(r: &common::Reply) -> Vec<u16> {
    r.text()
        .lines()
        .filter_map(|l| l.strip_prefix("HTTP/1.1 "))
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .collect()
}

/// The `odata.error` of the single failure sub-response.
fn failure(r: &common::Reply) -> (String, String) {
    let text = r.text();
    let start = text.find("{\"odata.error\"").expect("an error body");
    let end = text[start..]
        .find("\r\n")
        .map(|e| start + e)
        .unwrap_or(text.len());
    let v: serde_json::Value = serde_json::from_str(&text[start..end]).unwrap();
    (
        v["odata.error"]["code"].as_str().unwrap().to_string(),
        v["odata.error"]["message"]["value"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

async fn count(t: &TestServer, table: &str) -> usize {
    let r = t.send("GET", &format!("/{table}()"), &[], None).await;
    r.json()["value"].as_array().unwrap().len()
}

async fn every_operation_kind_in_one_change_set(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    t.create_table("kinds").await;
    for rk in ["merge", "replace", "delete", "upsert"] {
        t.insert(
            "kinds",
            &json!({"PartitionKey": "p", "RowKey": rk, "keep": "k", "n": 1}),
        )
        .await;
    }
    let patch = Some(json!({"n": 2}).to_string());
    let r = submit(
        &t,
        &[
            insert("kinds", "p", "new"),
            Sub(
                "MERGE",
                entity_path("kinds", "p", "merge"),
                vec![("If-Match", "*".into())],
                patch.clone(),
            ),
            Sub(
                "PUT",
                entity_path("kinds", "p", "replace"),
                vec![("If-Match", "*".into())],
                patch.clone(),
            ),
            Sub(
                "DELETE",
                entity_path("kinds", "p", "delete"),
                vec![("If-Match", "*".into())],
                None,
            ),
            Sub(
                "PATCH",
                entity_path("kinds", "p", "upsert"),
                vec![],
                patch.clone(),
            ),
            Sub(
                "PUT",
                entity_path("kinds", "p", "upsert2"),
                vec![],
                patch.clone(),
            ),
            Sub(
                "POST",
                entity_path("kinds", "p", "tunnel"),
                vec![("X-HTTP-Method", "MERGE".into())],
                patch,
            ),
        ],
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("multipart/mixed; boundary=batchresponse_"));
    assert!(r.text().contains("--changesetresponse_"));
    assert_eq!(statuses(&r), vec![204; 7], "{}", r.text());
    assert_eq!(
        r.text().matches("ETag: W/\"datetime'").count(),
        6,
        "every write but the delete has an ETag"
    );
    let paths: Vec<String> = ["merge", "replace", "delete", "upsert", "upsert2", "tunnel"]
        .iter()
        .map(|rk| entity_path("kinds", "p", rk))
        .collect();
    let get = |i: usize| t.send("GET", &paths[i], &[], None);
    let merged = get(0).await.json();
    assert_eq!(
        (merged["keep"].as_str(), merged["n"].as_i64()),
        (Some("k"), Some(2))
    );
    let replaced = get(1).await.json();
    assert!(replaced.get("keep").is_none() && replaced["n"] == 2);
    assert_eq!(get(2).await.status, StatusCode::NOT_FOUND);
    assert_eq!(get(3).await.json()["keep"], "k");
    assert_eq!(get(4).await.json()["n"], 2);
    assert_eq!(get(5).await.json()["n"], 2);
}

async fn insert_without_prefer_returns_the_entity(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    t.create_table("bodies").await;
    let sub = Sub(
        "POST",
        "/bodies".into(),
        vec![],
        Some(json!({"PartitionKey": "p", "RowKey": "1", "x": 5}).to_string()),
    );
    let r = submit(&t, &[sub]).await;
    assert_eq!(statuses(&r), vec![201]);
    let text = r.text();
    assert!(
        text.contains("Location: ") && text.contains("RowKey='1')"),
        "{text}"
    );
    assert!(text.contains("\"x\":5"), "{text}");
}

async fn a_failure_at_57_rolls_back_and_names_the_index(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    t.create_table("rollback").await;
    t.insert("rollback", &json!({"PartitionKey": "p", "RowKey": "057"}))
        .await;
    let subs: Vec<Sub> = (0..100)
        .map(|i| insert("rollback", "p", &format!("{i:03}")))
        .collect();
    let r = submit(&t, &subs).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    assert_eq!(
        statuses(&r),
        vec![409],
        "only the failing operation answers"
    );
    let (code, message) = failure(&r);
    assert_eq!(code, "EntityAlreadyExists");
    assert!(
        message.starts_with("57:The specified entity already exists."),
        "{message}"
    );
    assert!(r.text().contains("Preference-Applied: return-no-content"));
    assert_eq!(
        count(&t, "rollback").await,
        1,
        "nothing of the batch is left"
    );
}

#[tokio::test]
async fn change_set_rules() {
    let t = TestServer::start().await;
    t.create_table("rules").await;
    let many: Vec<Sub> = (0..101)
        .map(|i| insert("rules", "p", &i.to_string()))
        .collect();
    let r = submit(&t, &many).await;
    assert_eq!(statuses(&r), vec![400]);
    let (code, message) = failure(&r);
    assert_eq!(code, "InvalidInput");
    assert!(
        message.starts_with(
            "99:The batch request operation exceeds the maximum 100 changes per change set."
        ),
        "{message}"
    );

    let r = submit(&t, &[insert("rules", "p", "1"), insert("rules", "q", "2")]).await;
    let (code, message) = failure(&r);
    assert_eq!(code, "CommandsInBatchActOnDifferentPartitions");
    assert!(
        message.starts_with("1:All commands in a batch must operate on same entity group."),
        "{message}"
    );

    let merge = Sub(
        "MERGE",
        entity_path("rules", "p", "1"),
        vec![("If-Match", "*".into())],
        Some("{}".into()),
    );
    let r = submit(
        &t,
        &[merge, insert("rules", "p", "2"), insert("rules", "p", "1")],
    )
    .await;
    let (code, message) = failure(&r);
    assert_eq!(code, "InvalidDuplicateRow");
    assert!(
        message.starts_with("2:The batch request contains multiple changes with same row key."),
        "{message}"
    );

    let r = submit(&t, &[insert("rules", "p", "1"), insert("other", "p", "2")]).await;
    assert_eq!(failure(&r).0, "InvalidInput");

    let r = submit(&t, &[insert("missing", "p", "1")]).await;
    assert_eq!(statuses(&r), vec![404]);
    let (code, message) = failure(&r);
    assert_eq!(code, "TableNotFound");
    assert!(
        message.starts_with("0:The table specified does not exist."),
        "{message}"
    );

    let bad = Sub(
        "POST",
        "/rules".into(),
        vec![],
        Some(r#"{"PartitionKey":"p","RowKey":"x","a b":1}"#.into()),
    );
    let r = submit(&t, &[insert("rules", "p", "1"), bad]).await;
    let (code, message) = failure(&r);
    assert_eq!(code, "PropertyNameInvalid");
    assert!(message.starts_with("1:"), "{message}");
    assert_eq!(
        count(&t, "rules").await,
        0,
        "no failed batch leaves anything behind"
    );
}

#[tokio::test]
async fn conditional_failures_in_a_batch() {
    let t = TestServer::start().await;
    t.create_table("cond").await;
    let r = t
        .insert("cond", &json!({"PartitionKey": "p", "RowKey": "1", "v": 1}))
        .await;
    let etag = r.header("etag").unwrap().to_string();
    t.send(
        "MERGE",
        &entity_path("cond", "p", "1"),
        &[("If-Match", "*")],
        Some(r#"{"v":2}"#),
    )
    .await;
    let stale = Sub(
        "PUT",
        entity_path("cond", "p", "1"),
        vec![("If-Match", etag)],
        Some("{}".into()),
    );
    let r = submit(&t, &[stale]).await;
    assert_eq!(statuses(&r), vec![412]);
    let (code, message) = failure(&r);
    assert_eq!(code, "UpdateConditionNotSatisfied");
    assert!(
        message.starts_with("The update condition specified"),
        "no index prefix at 0: {message}"
    );

    let missing = Sub(
        "DELETE",
        entity_path("cond", "p", "nope"),
        vec![("If-Match", "*".into())],
        None,
    );
    let r = submit(&t, &[insert("cond", "p", "2"), missing]).await;
    assert_eq!(statuses(&r), vec![404]);
    let (code, message) = failure(&r);
    assert_eq!(code, "ResourceNotFound");
    assert!(message.starts_with("1:"), "{message}");
    assert_eq!(count(&t, "cond").await, 1);
}

/// Azure leaves out the `N:` index only when the change set holds the failing operation
/// alone; in a longer change set the first operation's failure reads `0:…` (the transaction
/// tests of CloudStub, an Azure.Data.Tables stub whose suite runs against a storage account).
#[tokio::test]
async fn the_index_prefix_is_left_out_only_for_a_lone_operation() {
    let t = TestServer::start().await;
    t.create_table("lone").await;
    let delete = |rk: &str| {
        Sub(
            "DELETE",
            entity_path("lone", "p", rk),
            vec![("If-Match", "*".into())],
            None,
        )
    };
    let r = submit(&t, &[delete("missing")]).await;
    assert_eq!(statuses(&r), vec![404]);
    let (code, message) = failure(&r);
    assert_eq!(code, "ResourceNotFound");
    assert!(
        message.starts_with("The specified resource does not exist."),
        "{message}"
    );
    let r = submit(&t, &[delete("missing"), delete("other")]).await;
    assert_eq!(statuses(&r), vec![404]);
    let (code, message) = failure(&r);
    assert_eq!(code, "ResourceNotFound");
    assert!(
        message.starts_with("0:The specified resource does not exist."),
        "{message}"
    );
    // A stale ETag at index 0 of two operations.
    let created = t
        .insert("lone", &json!({"PartitionKey": "p", "RowKey": "1"}))
        .await;
    let etag = created.header("etag").unwrap().to_string();
    t.send(
        "MERGE",
        &entity_path("lone", "p", "1"),
        &[("If-Match", "*")],
        Some("{}"),
    )
    .await;
    let stale = Sub(
        "MERGE",
        entity_path("lone", "p", "1"),
        vec![("If-Match", etag)],
        Some("{}".into()),
    );
    let r = submit(&t, &[stale, insert("lone", "p", "2")]).await;
    assert_eq!(statuses(&r), vec![412]);
    let (code, message) = failure(&r);
    assert_eq!(code, "UpdateConditionNotSatisfied");
    assert!(
        message.starts_with("0:The update condition specified"),
        "{message}"
    );
    assert_eq!(
        count(&t, "lone").await,
        1,
        "nothing of either batch applied"
    );
}

async fn malformed_batches_are_refused_before_running(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    t.create_table("malformed").await;
    for (ct, body) in [
        ("multipart/mixed; boundary=batch_x", "no boundary here"),
        ("application/json", "{}"),
        ("multipart/mixed", "--batch_x\r\n"),
    ] {
        let r = t
            .send("POST", "/$batch", &[("Content-Type", ct)], Some(body))
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{ct}: {}", r.text());
        assert_eq!(r.error_code(), "InvalidInput");
    }
    let big = "x".repeat(4 * 1024 * 1024 + 1);
    let r = t
        .send(
            "POST",
            "/$batch",
            &[("Content-Type", "multipart/mixed; boundary=b")],
            Some(&big),
        )
        .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    let health = t.send("GET", "/Tables", &[], None).await;
    assert_eq!(health.status, StatusCode::OK);
}

async fn query_batch_reads_one_entity(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    t.create_table("qbatch").await;
    t.insert(
        "qbatch",
        &json!({"PartitionKey": "p", "RowKey": "1", "v": 7}),
    )
    .await;
    let batch = BatchBody::with_boundaries(&t.base(), "batch_q", "changeset_q");
    let body = batch.query("/qbatch(PartitionKey='p',RowKey='1')", &[]);
    let r = t
        .send(
            "POST",
            "/$batch",
            &[("Content-Type", &batch.content_type())],
            Some(&body),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
    assert_eq!(statuses(&r), vec![200]);
    assert!(!r.text().contains("changesetresponse_"));
    assert!(r.text().contains("\"v\":7"));
}

#[tokio::test]
async fn sdk_captured_bodies_execute() {
    for fixture in ["js_create", "py_create"] {
        let t = TestServer::start().await;
        t.create_table("batchtable").await;
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/batch/");
        let body = std::fs::read_to_string(format!("{dir}{fixture}.http")).unwrap();
        let ct = std::fs::read_to_string(format!("{dir}{fixture}.content-type")).unwrap();
        let r = t
            .send(
                "POST",
                "/$batch",
                &[("Content-Type", ct.trim())],
                Some(&body),
            )
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{fixture}");
        assert!(
            statuses(&r).iter().all(|s| *s == 201 || *s == 204),
            "{fixture}: {}",
            r.text()
        );
        assert_eq!(
            count(&t, "batchtable").await,
            statuses(&r).len(),
            "{fixture}"
        );
    }
}

async fn concurrent_batches_on_the_same_rows_serialize(flavor: FlavorArg) {
    let t = std::sync::Arc::new(TestServer::start_as(flavor).await);
    t.create_table("race").await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            let subs: Vec<Sub> = (0..20)
                .map(|i| insert("race", "p", &i.to_string()))
                .collect();
            statuses(&submit(&t, &subs).await)
        }));
    }
    let mut winners = 0;
    for task in tasks {
        let s = task.await.unwrap();
        if s.len() == 20 {
            winners += 1;
        } else {
            assert_eq!(s, vec![409]);
        }
    }
    assert_eq!(winners, 1, "exactly one batch inserts the rows");
    assert_eq!(count(&t, "race").await, 20);
}

// The cases above whose behaviour is the same under both flavours, run under each.
both_flavours!(
    every_operation_kind_in_one_change_set,
    insert_without_prefer_returns_the_entity,
    a_failure_at_57_rolls_back_and_names_the_index,
    malformed_batches_are_refused_before_running,
    query_batch_reads_one_entity,
    concurrent_batches_on_the_same_rows_serialize,
);
