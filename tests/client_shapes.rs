//! Request shapes that real clients send and Azure accepts, on the wire: booleans sent as
//! annotated strings (Azure CLI, Storage Explorer) through every entity-body path including
//! `$batch`.

mod common;

use common::assert::assert_error;
use common::batch::BatchBody;
use common::url::entity_url;
use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// The body the Azure CLI sends for `az storage entity insert ... Ok=true Ok@odata.type=Edm.Boolean`.
fn cli_body(pk: &str, rk: &str, ok: &str) -> String {
    json!({"PartitionKey": pk, "RowKey": rk, "Ok": ok, "Ok@odata.type": "Edm.Boolean"}).to_string()
}

async fn stored_ok(t: &TestServer, table: &str, rk: &str) -> Value {
    let r = t.send("GET", &entity_url(table, "p", rk), &[], None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let v = r.json();
    // A stored boolean comes back as a JSON boolean with no annotation.
    assert!(v.get("Ok@odata.type").is_none(), "{v}");
    v["Ok"].clone()
}

#[tokio::test]
async fn annotated_boolean_strings_are_stored_as_booleans_on_every_body_path() {
    let t = TestServer::start().await;
    t.create_table("cli").await;

    // Insert (any letter case).
    for (rk, text, want) in [
        ("1", "true", true),
        ("2", "FALSE", false),
        ("3", "True", true),
    ] {
        let r = t
            .send(
                "POST",
                "/cli",
                &[("Prefer", "return-content")],
                Some(&cli_body("p", rk, text)),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
        assert_eq!(r.json()["Ok"], json!(want));
        assert_eq!(stored_ok(&t, "cli", rk).await, json!(want));
    }

    // Update (If-Match *), Merge (If-Match *), Insert Or Replace, Insert Or Merge.
    // (method, If-Match, row, text, stored value)
    let cases = [
        ("PUT", Some("*"), "1", "false", false),
        ("MERGE", Some("*"), "2", "tRUE", true),
        ("PUT", None, "4", "FaLsE", false),
        ("MERGE", None, "5", "TRUE", true),
    ];
    for (method, if_match, rk, text, want) in cases {
        let headers: Vec<(&str, &str)> = if_match.map(|m| ("If-Match", m)).into_iter().collect();
        let r = t
            .send(
                method,
                &entity_url("cli", "p", rk),
                &headers,
                Some(&cli_body("p", rk, text)),
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::NO_CONTENT,
            "{method} {rk}: {}",
            r.text()
        );
        assert_eq!(stored_ok(&t, "cli", rk).await, json!(want), "{method} {rk}");
    }

    // A filter sees a real boolean.
    let r = t
        .send("GET", "/cli()?$filter=Ok%20eq%20true", &[], None)
        .await;
    let mut keys: Vec<String> = r.json()["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["RowKey"].as_str().unwrap().to_string())
        .collect();
    keys.sort();
    assert_eq!(keys, ["2", "3", "5"]);

    // Anything but true/false stays 400 InvalidInput, on every path.
    for bad in ["yes", "1", "", "t"] {
        let r = t
            .send("POST", "/cli", &[], Some(&cli_body("p", "x", bad)))
            .await;
        assert_error(&r, 400, "InvalidInput");
        let r = t
            .send(
                "PUT",
                &entity_url("cli", "p", "x"),
                &[],
                Some(&cli_body("p", "x", bad)),
            )
            .await;
        assert_error(&r, 400, "InvalidInput");
        let r = t
            .send(
                "MERGE",
                &entity_url("cli", "p", "x"),
                &[],
                Some(&cli_body("p", "x", bad)),
            )
            .await;
        assert_error(&r, 400, "InvalidInput");
    }
}

/// One change set with one sub-request per entity body: insert, replace and merge.
fn batch(t: &TestServer, subs: &[(&str, String, String)]) -> String {
    let mut batch = BatchBody::new(&t.base());
    for (method, path, payload) in subs {
        batch.op(
            method,
            path,
            &[("Prefer", "return-no-content")],
            Some(payload),
        );
    }
    batch.body()
}

#[tokio::test]
async fn annotated_boolean_strings_inside_a_batch() {
    let t = TestServer::start().await;
    t.create_table("csv").await;
    let body = batch(
        &t,
        &[
            ("POST", "/csv".into(), cli_body("p", "a", "TRUE")),
            (
                "PUT",
                entity_url("csv", "p", "b"),
                cli_body("p", "b", "false"),
            ),
            (
                "MERGE",
                entity_url("csv", "p", "c"),
                cli_body("p", "c", "True"),
            ),
        ],
    );
    let ct = [("Content-Type", "multipart/mixed; boundary=batch_b1")];
    let r = t.send("POST", "/$batch", &ct, Some(&body)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
    assert!(!r.text().contains("odata.error"), "{}", r.text());
    assert_eq!(stored_ok(&t, "csv", "a").await, json!(true));
    assert_eq!(stored_ok(&t, "csv", "b").await, json!(false));
    assert_eq!(stored_ok(&t, "csv", "c").await, json!(true));

    // "yes" fails the change set with InvalidInput and nothing is written.
    let body = batch(
        &t,
        &[
            ("POST", "/csv".into(), cli_body("p", "d", "true")),
            ("POST", "/csv".into(), cli_body("p", "e", "yes")),
        ],
    );
    let r = t.send("POST", "/$batch", &ct, Some(&body)).await;
    assert!(r.text().contains("\"InvalidInput\""), "{}", r.text());
    let r = t.send("GET", &entity_url("csv", "p", "d"), &[], None).await;
    assert_error(&r, 404, "ResourceNotFound");
}

#[tokio::test]
async fn top_zero_answers_an_empty_page_without_continuation() {
    let t = TestServer::start().await;
    t.create_table("topzero").await;
    for rk in ["a", "b"] {
        t.insert("topzero", &json!({"PartitionKey": "0", "RowKey": rk}))
            .await;
    }
    // What Storage Explorer sends (Azurite #1428).
    for path in [
        "/topzero()?$top=0&$select=&$filter=PartitionKey%20eq%20%270%27",
        "/topzero()?$top=0",
        "/topzero?$top=0&NextPartitionKey=0&NextRowKey=a",
        "/Tables?$top=0",
        "/Tables?$top=0&$filter=TableName%20eq%20%27topzero%27",
    ] {
        let r = t.send("GET", path, &[], None).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text());
        assert_eq!(r.json()["value"], json!([]), "{path}");
        for h in [
            "x-ms-continuation-NextPartitionKey",
            "x-ms-continuation-NextRowKey",
            "x-ms-continuation-NextTableName",
        ] {
            assert!(r.header(h).is_none(), "{path}: {h}");
        }
    }
    // The rest of the request is still checked: a missing table, a bad filter.
    let r = t.send("GET", "/nosuch()?$top=0", &[], None).await;
    assert_error(&r, 404, "TableNotFound");
    let r = t
        .send("GET", "/topzero()?$top=0&$filter=aaa%20bbb", &[], None)
        .await;
    assert_error(&r, 400, "InvalidInput");
    // 1001 is still out of range.
    let r = t.send("GET", "/topzero()?$top=1001", &[], None).await;
    assert_error(&r, 400, "InvalidQueryParameterValue");
}
