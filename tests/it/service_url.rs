//! A table name inside the service URL (`TableEndpoint=…/devstoreaccount1/people`): the SDKs
//! then send `POST /<account>/people/Tables`, `DELETE /<account>/people/Tables('people')`,
//! `GET /<account>/people/Tables`. Azure answers them without running them, as the SDKs'
//! suites recorded (Python `test_client_with_url_ends_with_table_name`, Storage, 2024 and
//! 2026; .NET `ThrowsWithTableNameInUri`), and the SDKs turn those answers into their "check
//! your account URL" hint (tests/compat). The access log says what happened.

use crate::common;

use common::child::Signer;
use common::logs::CapturedLog;
use common::{request, Reply, Signing, TestServer};
use reqwest::StatusCode;
use tablestore::auth::accounts::{COSMOS_EMULATOR_ACCOUNT_KEY, COSMOS_EMULATOR_ACCOUNT_NAME};
use tablestore::config::{Config, FlavorArg};

async fn send(
    t: &TestServer,
    method: &str,
    url: &str,
    body: Option<&str>,
    s: Signing<'_>,
) -> Reply {
    let body = body.map(|b| b.as_bytes().to_vec());
    let req = request(&t.client, method, url, &[], body, s);
    t.exchange(req).await
}

/// The text of an error before its `RequestId` line.
fn text_of(r: &Reply) -> String {
    let value = r.json()["odata.error"]["message"]["value"]
        .as_str()
        .expect("message")
        .to_string();
    value.split('\n').next().unwrap_or("").to_string()
}

#[tokio::test]
async fn storage_answers_as_azure_once_it_found_the_table() {
    let log = CapturedLog::start();
    let t = TestServer::start().await;
    let below = format!("{}/people", t.base());
    let create_body = r#"{"TableName":"people"}"#;
    let create = format!("{below}/Tables");
    // Before the table exists: 404 TableNotFound (recorded, the first two requests).
    let r = send(&t, "POST", &create, Some(create_body), Signing::Dev).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text());
    assert_eq!(r.error_code(), "TableNotFound");
    let line = log.request_line(r.header("x-ms-request-id").unwrap());
    assert!(
        line.contains("the URL names table 'people' before the resource"),
        "{line}"
    );

    t.create_table("people").await;
    let r = send(&t, "POST", &create, Some(create_body), Signing::Dev).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text());
    assert_eq!(r.error_code(), "PropertiesNeedValue");
    assert_eq!(
        text_of(&r),
        "The values are not specified for all properties in the entity."
    );

    let r = send(
        &t,
        "DELETE",
        &format!("{below}/Tables('people')"),
        None,
        Signing::Dev,
    )
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text());
    assert_eq!(r.error_code(), "InvalidInput");
    assert_eq!(
        text_of(&r),
        "The number of keys specified in the URI does not match number of key properties for \
         the resource 'devstoreaccount1.people'."
    );

    let r = send(&t, "GET", &create, None, Signing::Dev).await;
    assert_eq!(r.status, StatusCode::NOT_IMPLEMENTED, "{}", r.text());
    assert_eq!(r.error_code(), "NotImplemented");

    // Nothing ran: the table is still there and holds nothing.
    let r = t.send("GET", "/Tables('people')", &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    let r = t.send("GET", "/people()", &[], None).await;
    assert_eq!(r.json()["value"].as_array().unwrap().len(), 0);

    // Shapes no SDK sends stay what they were: the URL names no resource.
    let r = send(&t, "PUT", &create, Some(create_body), Signing::Dev).await;
    assert_eq!(r.error_code(), "InvalidUri", "{}", r.text());
}

/// Cosmos answers 400 `InvalidInput` "Request url is invalid." to each of them, and to a
/// `$batch` below the table (the Python SDK's Cosmos live test).
#[tokio::test]
async fn cosmos_answers_request_url_is_invalid() {
    let log = CapturedLog::start();
    let mut config = Config::for_tests();
    config.flavor = FlavorArg::Cosmos;
    let t = TestServer::start_with(config).await;
    let signer = Signer::new(COSMOS_EMULATOR_ACCOUNT_NAME, COSMOS_EMULATOR_ACCOUNT_KEY);
    let root = t.server.endpoint();
    let table = r#"{"TableName":"people"}"#.to_string();
    let r = send(
        &t,
        "POST",
        &format!("{root}/Tables"),
        Some(&table),
        Signing::As(&signer),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    for (method, path, body) in [
        ("POST", "/people/Tables", Some(table.as_str())),
        ("DELETE", "/people/Tables('people')", None),
        ("GET", "/people/Tables", None),
        ("POST", "/people/$batch", Some("--batch_x--")),
    ] {
        let url = format!("{root}{path}");
        let r = send(&t, method, &url, body, Signing::As(&signer)).await;
        assert_eq!(
            r.status,
            StatusCode::BAD_REQUEST,
            "{method} {path}: {}",
            r.text()
        );
        assert_eq!(r.error_code(), "InvalidInput", "{method} {path}");
        assert_eq!(text_of(&r), "Request url is invalid.\r", "{method} {path}");
        let line = log.request_line(r.header("x-ms-request-id").unwrap());
        assert!(line.contains("before the resource"), "{line}");
    }
    let r = send(
        &t,
        "GET",
        &format!("{root}/Tables"),
        None,
        Signing::As(&signer),
    )
    .await;
    assert_eq!(
        r.json()["value"].as_array().unwrap().len(),
        1,
        "{}",
        r.text()
    );
}
