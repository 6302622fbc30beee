//! What real clients send and Azure accepts, on the wire (issues 20 and 22): booleans sent as
//! annotated strings (Azure CLI, Storage Explorer) on every entity-body path including
//! `$batch`, `$top=0`, weak ETags that do not match, a readable 413, SAS fields given twice,
//! Get Service Stats on the primary, ACL operations on a missing table, and the order of CORS
//! header lists.

use crate::common;

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
fn batch(t: &TestServer, subs: &[(&str, String, String)]) -> BatchBody {
    let mut batch = BatchBody::new(&t.base());
    for (method, path, payload) in subs {
        batch.op(
            method,
            path,
            &[("Prefer", "return-no-content")],
            Some(payload),
        );
    }
    batch
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
    let r = t.send_batch(&body).await;
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
    let r = t.send_batch(&body).await;
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

#[tokio::test]
async fn weak_etags_that_do_not_match_are_412_and_non_etags_400() {
    let t = TestServer::start().await;
    t.create_table("etags").await;
    t.insert(
        "etags",
        &json!({"PartitionKey": "p", "RowKey": "r", "v": 1}),
    )
    .await;
    let url = entity_url("etags", "p", "r");
    let weak = [
        "W/\"wrong\"",
        "w/\"wrong\"",
        "W/\"\"",
        "W/\"datetime'notadate'\"",
        "w/\"datetime'2001-01-01T00%3A00%3A00.1234567Z'\"",
        "W/\"0x8D9C2E5F1A2B3C4\"",
    ];
    for etag in weak {
        for method in ["PUT", "MERGE", "DELETE"] {
            let body = (method != "DELETE").then_some(r#"{"v":2}"#);
            let r = t.send(method, &url, &[("If-Match", etag)], body).await;
            assert_error(&r, 412, "UpdateConditionNotSatisfied");
        }
        // On a missing entity the entity is looked for first: 404, as for a stale ETag.
        let missing = entity_url("etags", "p", "missing");
        let r = t
            .send("MERGE", &missing, &[("If-Match", etag)], Some("{}"))
            .await;
        assert_error(&r, 404, "ResourceNotFound");
    }
    // Inside a change set: the change set fails with 412 at that index.
    let mut batch = BatchBody::new(&t.base());
    batch.op("DELETE", &url, &[("If-Match", "W/\"wrong\"")], None);
    let r = t.send_batch(&batch).await;
    assert!(r.text().contains("HTTP/1.1 412"), "{}", r.text());
    assert!(
        r.text().contains("UpdateConditionNotSatisfied"),
        "{}",
        r.text()
    );
    // Values that are not ETags at all stay 400 InvalidInput.
    for bad in ["bogus", "\"0x8D\"", "W/wrong", "W/\"a\"b\"", "W/\""] {
        let r = t.send("DELETE", &url, &[("If-Match", bad)], None).await;
        assert_error(&r, 400, "InvalidInput");
    }
    // The entity is untouched, and the current ETag still works.
    let r = t.send("GET", &url, &[], None).await;
    assert_eq!(r.json()["v"], json!(1));
    let etag = r.header("etag").unwrap().to_string();
    let r = t.send("DELETE", &url, &[("If-Match", &etag)], None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn a_sas_field_given_twice_fails_authentication() {
    let t = TestServer::start().await;
    let sas = common::child::Signer::dev().account_sas_all();
    let unsigned = [("x-unsigned", "1")];
    let r = t
        .send("GET", &format!("/Tables?{sas}"), &unsigned, None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "the SAS works: {}", r.text());
    let sig = sas.rsplit_once("&sig=").unwrap().1;
    for doubled in [
        // The SAS appended again (a client's retry), the same signature twice, another
        // expiry after the signed one.
        format!("{sas}&{sas}"),
        format!("{sas}&sig={sig}"),
        format!("{sas}&se=2098-01-01T00%3A00%3A00Z"),
        format!("sp=r&{sas}"),
    ] {
        let r = t
            .send("GET", &format!("/Tables?{doubled}"), &unsigned, None)
            .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{doubled}: {}", r.text());
        assert_eq!(r.error_code(), "AuthenticationFailed", "{doubled}");
    }
}

#[tokio::test]
async fn service_stats_only_on_the_secondary_endpoint() {
    let t = TestServer::start().await;
    let r = t
        .send("GET", "/?restype=service&comp=stats", &[], None)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text());
    assert_eq!(
        common::assert::xml_error_code(&r),
        "InvalidQueryParameterValue"
    );
    assert!(
        r.text().contains("<m:error xmlns:m=\"http://schemas.microsoft.com/ado/2007/08/dataservices/metadata\"><m:code>InvalidQueryParameterValue</m:code><m:message xml:lang=\"en-US\">Value for one of the query parameters specified in the request URI is invalid."),
        "{}",
        r.text()
    );
    let r = t.get_secondary("/?restype=service&comp=stats").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.text().contains("<Status>live</Status>"));
}

#[tokio::test]
async fn table_acl_on_a_missing_table_is_resource_not_found() {
    let t = TestServer::start().await;
    let policy = "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers><SignedIdentifier><Id>p1</Id><AccessPolicy><Start>2020-01-01T00:00:00Z</Start><Expiry>2099-01-01T00:00:00Z</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>";
    let cases: [(&str, Option<&str>); 3] =
        [("GET", None), ("PUT", Some("")), ("PUT", Some(policy))];
    for (method, body) in cases {
        let r = t.send(method, "/nosuch?comp=acl", &[], body).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{method}: {}", r.text());
        assert_eq!(
            common::assert::xml_error_code(&r),
            "ResourceNotFound",
            "{method}"
        );
        assert!(
            r.text().contains("The specified resource does not exist."),
            "{}",
            r.text()
        );
    }
    // The -secondary endpoint answers the same (Shared Key Lite here; the Python scenario signs
    // with Shared Key).
    let r = t.get_secondary("/nosuch?comp=acl").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(common::assert::xml_error_code(&r), "ResourceNotFound");
}

#[tokio::test]
async fn cors_header_lists_are_returned_exact_names_first() {
    let t = TestServer::start().await;
    let props = "/?restype=service&comp=properties";
    let body = "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties><Cors><CorsRule><AllowedOrigins>www.xyz.com,www.ab.com,www.bc.com</AllowedOrigins><AllowedMethods>PUT,GET</AllowedMethods><MaxAgeInSeconds>500</MaxAgeInSeconds><ExposedHeaders>x-ms-meta-data*,x-ms-meta-source*,x-ms-meta-abc,x-ms-meta-bcd</ExposedHeaders><AllowedHeaders>x-ms-meta-data*,x-ms-meta-target*,x-ms-meta-xyz,x-ms-meta-foo</AllowedHeaders></CorsRule></Cors></StorageServiceProperties>";
    let r = t.send("PUT", props, &[], Some(body)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
    let r = t.send("GET", props, &[], None).await;
    let text = r.text();
    for part in [
        "<AllowedOrigins>www.xyz.com,www.ab.com,www.bc.com</AllowedOrigins>",
        "<AllowedMethods>PUT,GET</AllowedMethods>",
        "<ExposedHeaders>x-ms-meta-abc,x-ms-meta-bcd,x-ms-meta-data*,x-ms-meta-source*</ExposedHeaders>",
        "<AllowedHeaders>x-ms-meta-xyz,x-ms-meta-foo,x-ms-meta-data*,x-ms-meta-target*</AllowedHeaders>",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
}

/// Sends a whole request — head, then `body_len` bytes in 64 KiB pieces, as the SDKs do —
/// before reading the answer. Returns the answer; panics if the server broke the connection
/// while the body was still being sent (the `EPIPE` the SDKs used to see).
async fn send_whole_then_read(
    t: &TestServer,
    extra_headers: &str,
    body_len: usize,
    chunked: bool,
) -> common::raw::RawReply {
    use tokio::io::AsyncWriteExt;
    let addr = t.server.addr();
    let path = "/devstoreaccount1/big";
    let (date, auth) = common::sign_lite(path, None);
    let framing = if chunked {
        "Transfer-Encoding: chunked".to_string()
    } else {
        format!("Content-Length: {body_len}")
    };
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-ms-date: {date}\r\nAuthorization: {auth}\r\n\
         x-ms-version: 2019-02-02\r\nAccept: application/json;odata=minimalmetadata\r\n\
         Content-Type: application/json\r\n{extra_headers}{framing}\r\n\r\n"
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let piece = vec![b'x'; 64 * 1024];
    let mut sent = 0;
    while sent < body_len {
        let n = piece.len().min(body_len - sent);
        let result = if chunked {
            let mut chunk = format!("{n:x}\r\n").into_bytes();
            chunk.extend_from_slice(&piece[..n]);
            chunk.extend_from_slice(b"\r\n");
            stream.write_all(&chunk).await
        } else {
            stream.write_all(&piece[..n]).await
        };
        if let Err(e) = result {
            panic!("the connection broke after {sent} of {body_len} bytes: {e}");
        }
        sent += n;
    }
    if chunked {
        stream.write_all(b"0\r\n\r\n").await.unwrap();
    }
    common::raw::read_response(&mut stream, std::time::Duration::from_secs(30))
        .await
        .reply()
}

/// On a loopback port: the subject is what the connection does with a body it refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversize_body_is_read_and_answered_413_not_cut_off() {
    let t = TestServer::listening().await;
    t.create_table("big").await;
    for (len, chunked) in [
        (5 * 1024 * 1024, false),
        (5 * 1024 * 1024, true),
        (40 * 1024 * 1024, false),
    ] {
        let r = send_whole_then_read(&t, "", len, chunked).await;
        assert_eq!(r.status, 413, "{len} chunked={chunked}: {}", r.text());
        assert_eq!(r.error_code().as_deref(), Some("RequestBodyTooLarge"));
    }
    // The server is still there and the table untouched.
    let r = t.send("GET", "/big()", &[], None).await;
    assert_eq!(r.json()["value"], json!([]));
}
