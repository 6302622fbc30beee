//! `--flavor cosmos`: the server answers as Azure Cosmos DB for Table does (docs/cosmos.md).
//! Each test starts its own Cosmos-flavoured server and speaks to it as the SDKs speak to a
//! Cosmos endpoint: the Table endpoint at the root, signed as the emulator's account
//! `localhost`.
//!
//! This file holds only what differs from Table storage. Behaviour the two flavours share is
//! tested once and run under each by the `both_flavours!` cases of the Storage suites (auth,
//! batch, concurrency, entities, hostile_batch, hostile_filter, hostile_json, query, realism,
//! state, tables).

use crate::common;

use common::child::{ChildServer, Signer};
use common::{request, Reply, Signing, TestServer};
use tablestore::auth::accounts::{COSMOS_EMULATOR_ACCOUNT_KEY, COSMOS_EMULATOR_ACCOUNT_NAME};
use tablestore::config::{Config, FlavorArg};

/// A Cosmos-flavoured server: the kit's, which under `--flavor cosmos` sends to the root of
/// the endpoint signed as the emulator's account `localhost`.
struct Cosmos {
    t: TestServer,
}

impl Cosmos {
    async fn start() -> Cosmos {
        Cosmos::start_with(cosmos_config()).await
    }

    async fn start_with(config: Config) -> Cosmos {
        Cosmos {
            t: TestServer::start_with(config).await,
        }
    }

    /// A Cosmos-flavoured server on a loopback port (its connection string names the port).
    async fn listening() -> Cosmos {
        Cosmos {
            t: TestServer::listening_with(cosmos_config()).await,
        }
    }

    /// Sends `method` to `path` at the root of the endpoint, signed as the kit's signer.
    async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Reply {
        self.t.send(method, path, headers, body).await
    }

    async fn send_batch(&self, batch: &common::batch::BatchBody) -> Reply {
        self.t.send_batch(batch).await
    }

    async fn create_table(&self, name: &str) -> Reply {
        let body = format!(r#"{{"TableName":"{name}"}}"#);
        self.send("POST", "/Tables", &[], Some(&body)).await
    }
}

fn cosmos_config() -> Config {
    let mut config = Config::for_tests();
    config.flavor = FlavorArg::Cosmos;
    config
}

/// The emulator's connection string, on this server's port: account `localhost`, its key,
/// and the Table endpoint at the root of `http://localhost:<port>/` (the host the SDKs take
/// for a Cosmos endpoint).
#[tokio::test]
async fn the_connection_string_is_the_emulators() {
    let c = Cosmos::listening().await;
    let port = c.t.server.addr().port();
    assert_eq!(
        c.t.server.connection_string(),
        format!(
            "DefaultEndpointsProtocol=http;AccountName=localhost;AccountKey={COSMOS_EMULATOR_ACCOUNT_KEY};TableEndpoint=http://localhost:{port}/;"
        )
    );
    assert_eq!(c.t.server.account_name(), "localhost");
    assert_eq!(c.t.server.account_url(), c.t.server.endpoint());
}

/// Tables and entities at the root of the endpoint, signed as the SDKs sign a Cosmos
/// endpoint (canonical resource `/localhost/<path>`).
#[tokio::test]
async fn the_root_is_the_emulator_account() {
    let c = Cosmos::start().await;
    let r = c.create_table("people").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = c
        .send(
            "POST",
            "/people",
            &[],
            Some(r#"{"PartitionKey":"p","RowKey":"r","Name":"Ann"}"#),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = c
        .send("GET", "/people(PartitionKey='p',RowKey='r')", &[], None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["Name"], "Ann");
    let r = c.send("GET", "/Tables", &[], None).await;
    assert_eq!(r.json()["value"][0]["TableName"], "people");
    // A wrong key is refused as anywhere else.
    let wrong = Signer::new("localhost", tablestore::config::DEV_ACCOUNT_KEY);
    let url = format!("{}/Tables", c.t.server.endpoint());
    let req = request(&c.t.client, "GET", &url, &[], None, Signing::As(&wrong));
    let r = c.t.exchange(req).await;
    assert_eq!(r.status, 403, "{}", r.text());
}

/// `AZURITE_ACCOUNTS` work as they do in the storage flavour (path style), and each account
/// may also use the root, the account its signature names.
#[tokio::test]
async fn configured_accounts_keep_their_urls() {
    let key = "a2V5MmtleTJrZXkya2V5Mg==";
    let mut config = cosmos_config();
    config.accounts_env = Some(format!("acct2:{key}"));
    let c = Cosmos::start_with(config).await;
    assert_eq!(c.t.server.account_name(), "acct2");
    let signer = Signer::new("acct2", key);
    let t = &c.t;
    let send = |method: &'static str, url: String, body: Option<&'static str>| {
        let req = request(
            &c.t.client,
            method,
            &url,
            &[],
            body.map(|b| b.as_bytes().to_vec()),
            Signing::As(&signer),
        );
        async move { t.exchange(req).await }
    };
    let endpoint = c.t.server.endpoint();
    let r = send(
        "POST",
        format!("{endpoint}/acct2/Tables"),
        Some(r#"{"TableName":"things"}"#),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = send("GET", format!("{endpoint}/Tables"), None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["value"][0]["TableName"], "things");
    // The emulator's account is not served when AZURITE_ACCOUNTS replace it.
    let r = c.send("GET", "/Tables", &[], None).await;
    assert_eq!(r.status, 403, "{}", r.text());
}

/// The storage flavour is untouched: the root is no account there.
#[tokio::test]
async fn the_storage_flavour_has_no_root_account() {
    let t = TestServer::start().await;
    let url = format!("{}/Tables", t.server.endpoint());
    let req = request(&t.client, "GET", &url, &[], None, Signing::Dev);
    let r = t.exchange(req).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.error_code(), "AuthenticationFailed");
}

/// The binary's start-up lines name the flavour and print the emulator's connection string.
#[tokio::test]
async fn start_up_prints_the_cosmos_connection_string() {
    let dir = tempfile::tempdir().unwrap();
    let child = ChildServer::start(dir.path(), &["--flavor", "cosmos", "--inMemoryPersistence"]);
    let port = child.addr.port();
    // The lines after the first arrive shortly after it.
    let mut printed = child.start_up.clone();
    for _ in 0..40 {
        printed.push_str(&child.log_so_far());
        if printed.contains("Connection string") {
            break;
        }
    }
    assert!(printed.contains("Flavor: cosmos"), "{printed}");
    assert!(
        printed.contains(&format!(
            "Connection string: DefaultEndpointsProtocol=http;AccountName=localhost;AccountKey={COSMOS_EMULATOR_ACCOUNT_KEY};TableEndpoint=http://localhost:{port}/;"
        )),
        "{printed}"
    );
    let env = ChildServer::try_start_with_env(
        dir.path(),
        &["--inMemoryPersistence"],
        &[("TABLESTORE_FLAVOR", "cosmos")],
    )
    .expect("starts");
    let mut printed = env.start_up.clone();
    for _ in 0..40 {
        printed.push_str(&env.log_so_far());
        if printed.contains("Flavor") {
            break;
        }
    }
    assert!(printed.contains("Flavor: cosmos"), "{printed}");
}

/// The access log names the Azure error code of a failed request under Cosmos too, where no
/// `x-ms-error-code` header carries it.
#[tokio::test]
async fn the_access_log_names_cosmos_errors() {
    let dir = tempfile::tempdir().unwrap();
    let accounts = format!("devstoreaccount1:{}", tablestore::config::DEV_ACCOUNT_KEY);
    let args = [
        "--flavor",
        "cosmos",
        "--inMemoryPersistence",
        "--log-level",
        "info",
    ];
    let child = ChildServer::try_start_with_env(
        dir.path(),
        &args,
        &[("AZURITE_ACCOUNTS", accounts.as_str())],
    )
    .expect("starts");
    let client = common::child::Client::new(&child.endpoint(), Signer::dev());
    client.create_table("logged").await;
    let body = serde_json::json!({"TableName": "logged"});
    let r = client.call("POST", "/Tables", &[], Some(body)).await;
    assert_eq!(r.status.as_u16(), 409, "{}", r.text());
    assert_eq!(r.header("x-ms-error-code"), None, "Cosmos sends none");
    let mut log = String::new();
    for _ in 0..40 {
        log.push_str(&child.log_so_far());
        if log.contains("status=409") {
            break;
        }
    }
    let failed = log
        .lines()
        .find(|l| l.contains("tablestore::request") && l.contains("status=409"))
        .unwrap_or_else(|| panic!("no access log line for the 409:\n{log}"));
    assert!(failed.contains("error=TableAlreadyExists"), "{failed}");
}

/// Storage-only response headers Cosmos never sends.
const STORAGE_ONLY_HEADERS: [&str; 6] = [
    "server",
    "x-ms-version",
    "x-ms-client-request-id",
    "cache-control",
    "x-content-type-options",
    "x-ms-error-code",
];

fn assert_cosmos_headers(r: &Reply) {
    for name in STORAGE_ONLY_HEADERS {
        assert!(r.header(name).is_none(), "{name} sent: {:?}", r.headers);
    }
    assert!(r.header("x-ms-request-id").is_some());
    assert!(r.header("date").is_some());
}

/// Whether `text` is a DateTime with exactly 7 fractional digits.
fn seven_digits(text: &str) -> bool {
    let b = text.as_bytes();
    text.len() == 28 && b[19] == b'.' && b[27] == b'Z' && b[20..27].iter().all(u8::is_ascii_digit)
}

/// DateTimes and ETags always carry 7 fractional digits; the ETag's instant is the
/// Timestamp; responses carry Cosmos's lean header set and Content-Type.
#[tokio::test]
async fn datetimes_etags_headers_and_content_types() {
    let c = Cosmos::start().await;
    let r = c.create_table("dates").await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r
        .header("etag")
        .is_some_and(|e| e.starts_with("W/\"datetime'")));
    assert_cosmos_headers(&r);
    let body = r#"{"PartitionKey":"p","RowKey":"r","When@odata.type":"Edm.DateTime","When":"1973-10-04T00:00:00.000000Z","Later@odata.type":"Edm.DateTime","Later":"2011-11-04T00:05:23.283000Z","Name":"x"}"#;
    let r = c
        .send(
            "POST",
            "/dates",
            &[("x-ms-client-request-id", "abc")],
            Some(body),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_cosmos_headers(&r);
    assert_eq!(
        r.header("content-type"),
        Some("application/json; odata=minimalmetadata")
    );
    let v = r.json();
    assert_eq!(v["When"], "1973-10-04T00:00:00.0000000Z");
    assert_eq!(v["Later"], "2011-11-04T00:05:23.2830000Z");
    let ts = v["Timestamp"].as_str().unwrap().to_string();
    assert!(seven_digits(&ts), "{ts}");
    let etag = r.header("etag").unwrap().to_string();
    assert_eq!(etag, format!("W/\"datetime'{}'\"", ts.replace(':', "%3A")));
    assert_eq!(v["odata.etag"], etag);
    // Timestamp comes last, after the properties in the order sent.
    let text = r.text();
    let at = |name: &str| text.find(&format!("\"{name}\":")).unwrap();
    assert!(
        at("Name") < at("Timestamp") && at("When") < at("Later"),
        "{text}"
    );
    // A single entity's metadata URL names the table as a path segment.
    let r = c
        .send(
            "GET",
            "/dates(PartitionKey='p',RowKey='r')?$select=Name",
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_cosmos_headers(&r);
    let metadata = r.json()["odata.metadata"].as_str().unwrap().to_string();
    assert!(
        metadata.ends_with("/dates/$metadata#dates/@Element"),
        "{metadata}"
    );
    // An upsert's 204 carries `Content-Type: application/json`, a conditional update's none.
    let r = c
        .send(
            "PUT",
            "/dates(PartitionKey='p',RowKey='u')",
            &[],
            Some(r#"{"A":1}"#),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(seven_digits(
        r.header("etag")
            .unwrap()
            .trim_start_matches("W/\"datetime'")
            .trim_end_matches("'\"")
            .replace("%3A", ":")
            .as_str()
    ));
    let r = c
        .send(
            "PUT",
            "/dates(PartitionKey='p',RowKey='u')",
            &[("If-Match", "*")],
            Some(r#"{"A":2}"#),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    assert!(r.header("content-type").is_none());
}

/// Cosmos's error envelope: `en-us`, `RequestID:<x-ms-request-id>\n`, a trailing CRLF, its
/// own texts, no `x-ms-error-code`, and full metadata on errors of writes.
#[tokio::test]
async fn errors_in_cosmos_envelope() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("errs").await.status, 201);
    let r = c.create_table("errs").await;
    assert_eq!(r.status, 409);
    assert_cosmos_headers(&r);
    // A plain POST's conflict is typed as a read's error (recording
    // `test_create_table_fail_on_exist`).
    assert_eq!(
        r.header("content-type"),
        Some("application/json; odata=minimalmetadata")
    );
    let text = r.text();
    assert!(text.ends_with("}\r\n"), "{text:?}");
    let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
    let request_id = r.header("x-ms-request-id").unwrap();
    assert_eq!(v["odata.error"]["code"], "TableAlreadyExists");
    assert_eq!(v["odata.error"]["message"]["lang"], "en-us");
    assert_eq!(
        v["odata.error"]["message"]["value"],
        format!("The specified table already exists.\nRequestID:{request_id}\n")
    );
    // A read's error mirrors the negotiated minimal metadata.
    let r = c
        .send("GET", "/errs(PartitionKey='a',RowKey='b')", &[], None)
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.header("content-type"),
        Some("application/json; odata=minimalmetadata")
    );
    assert_eq!(r.error_code(), "ResourceNotFound");
    // A missing table is ResourceNotFound, not TableNotFound.
    let r = c
        .send("GET", "/nosuch(PartitionKey='a',RowKey='b')", &[], None)
        .await;
    assert_eq!(
        (r.status.as_u16(), r.error_code()),
        (404, "ResourceNotFound".into())
    );
    // An unparsable filter.
    let r = c
        .send("GET", "/errs()?$filter=aaa%20bbb%20ccc", &[], None)
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), "InvalidInput");
    assert_eq!(
        error_text(&r),
        with_activity_line(&r, "Request url is invalid.")
    );
}

/// The message of an error Cosmos writes with its activity line: the text, then
/// `\r\nActivityId: <request id>, <gateway>`, then `\nRequestID:<request id>\n` (recordings
/// `test_insert_entity_missing_pk`, `test_query_invalid_filter`, `test_sas_add_outside_range`,
/// `test_retention_too_long`).
fn with_activity_line(r: &Reply, text: &str) -> String {
    let id = r.header("x-ms-request-id").expect("a request id");
    format!(
        "{text}\r\nActivityId: {id}, documentdb-dotnet-sdk/2.14.0 Host/64-bit \
         MicrosoftWindowsNT/6.2.9200.0\nRequestID:{id}\n"
    )
}

/// Cosmos types its errors by the request and the error, whatever `Accept` says: a read's
/// and a plain POST's 409 and 501 in minimal metadata (`test_insert_entity_conflict`,
/// `test_sas_add_outside_range`), the others in full (`test_update_entity_with_if_doesnt_match`,
/// `test_merge_entity_not_existing`, `test_insert_entity_missing_pk`).
#[tokio::test]
async fn errors_are_typed_as_recorded() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("typed").await.status, 201);
    let (minimal, full) = (
        Some("application/json; odata=minimalmetadata"),
        Some("application/json; odata=fullmetadata"),
    );
    let path = "/typed(PartitionKey='p',RowKey='r')";
    let body = r#"{"PartitionKey":"p","RowKey":"r"}"#;
    let accept = [("Accept", "application/json;odata=minimalmetadata")];
    assert_eq!(
        c.send("POST", "/typed", &accept, Some(body)).await.status,
        201
    );
    let r = c.send("POST", "/typed", &accept, Some(body)).await;
    assert_eq!(
        (r.status.as_u16(), r.header("content-type")),
        (409, minimal)
    );
    let r = c
        .send("POST", "/typed", &accept, Some(r#"{"RowKey":"r"}"#))
        .await;
    assert_eq!((r.status.as_u16(), r.header("content-type")), (400, full));
    let merge = [
        ("X-HTTP-Method", "MERGE"),
        (
            "If-Match",
            "W/\"datetime'2000-01-01T00%3A00%3A00.0000000Z'\"",
        ),
    ];
    let r = c.send("POST", path, &merge, Some(body)).await;
    assert_eq!((r.status.as_u16(), r.header("content-type")), (412, full));
    let r = c
        .send(
            "DELETE",
            "/typed(PartitionKey='p',RowKey='x')",
            &[("If-Match", "*")],
            None,
        )
        .await;
    assert_eq!((r.status.as_u16(), r.header("content-type")), (404, full));
    let r = c
        .send("GET", "/typed(PartitionKey='p',RowKey='x')", &accept, None)
        .await;
    assert_eq!(
        (r.status.as_u16(), r.header("content-type")),
        (404, minimal)
    );
}

/// The 404, 409 and 412 errors carry no activity line (recordings
/// `test_get_entity_not_existing`, `test_insert_entity_conflict`,
/// `test_update_entity_with_if_doesnt_match`); the 400s and 501s above do.
#[tokio::test]
async fn only_the_recorded_errors_carry_the_activity_line() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("lines").await.status, 201);
    let path = "/lines(PartitionKey='p',RowKey='r')";
    let r = c.send("GET", path, &[], None).await;
    assert_eq!(r.status, 404);
    let id = r.header("x-ms-request-id").unwrap().to_string();
    assert_eq!(
        error_text(&r),
        format!("The specified resource does not exist.\nRequestID:{id}\n")
    );
    let body = r#"{"PartitionKey":"p","RowKey":"r"}"#;
    assert_eq!(c.send("POST", "/lines", &[], Some(body)).await.status, 201);
    let r = c.send("POST", "/lines", &[], Some(body)).await;
    assert_eq!(r.status, 409);
    assert!(!error_text(&r).contains("ActivityId"), "{}", r.text());
    let stale = [(
        "If-Match",
        "W/\"datetime'2000-01-01T00%3A00%3A00.0000000Z'\"",
    )];
    let r = c.send("PUT", path, &stale, Some(body)).await;
    assert_eq!(r.status, 412);
    assert!(!error_text(&r).contains("ActivityId"), "{}", r.text());
    // A missing PartitionKey is worded and lined as an empty one.
    let r = c
        .send("POST", "/lines", &[], Some(r#"{"RowKey":"r"}"#))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        error_text(&r),
        with_activity_line(&r, "PartitionKey/RowKey cannot be empty")
    );
}

/// PATCH is refused with 405; Merge arrives as POST + X-HTTP-Method: MERGE.
#[tokio::test]
async fn merge_only_through_post_tunnelling() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("merges").await.status, 201);
    let path = "/merges(PartitionKey='p',RowKey='r')";
    let r = c.send("PATCH", path, &[], Some(r#"{"A":1}"#)).await;
    assert_eq!(r.status, 405, "{}", r.text());
    let r = c
        .send(
            "POST",
            path,
            &[("X-HTTP-Method", "MERGE")],
            Some(r#"{"A":1}"#),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = c
        .send(
            "POST",
            path,
            &[("X-HTTP-Method", "MERGE")],
            Some(r#"{"B":2}"#),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let v = c.send("GET", path, &[], None).await.json();
    assert_eq!((v["A"].as_i64(), v["B"].as_i64()), (Some(1), Some(2)));
}

/// The positions of `"name":` members in a JSON text, in the order given; panics when one is
/// missing.
fn member_positions(text: &str, names: &[&str]) -> Vec<usize> {
    names
        .iter()
        .map(|n| {
            text.find(&format!("\"{n}\":"))
                .unwrap_or_else(|| panic!("no member {n} in {text}"))
        })
        .collect()
}

fn in_order(text: &str, names: &[&str]) {
    let positions = member_positions(text, names);
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "members {names:?} out of order in {text}"
    );
}

/// Member order as recorded: full metadata writes `odata.type`, `odata.id`,
/// `odata.editLink`, `odata.metadata`, `odata.etag` (`test_get_entity_full_metadata`), feed
/// items the same without `odata.metadata` (`test_query_entities_full_metadata`), and feeds
/// put `value` before `odata.metadata`; a merge updates properties in place and appends new
/// ones, Timestamp last (`test_merge_entity`).
#[tokio::test]
async fn member_order_as_recorded() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("order").await.status, 201);
    let path = "/order(PartitionKey='p',RowKey='r')";
    let body = r#"{"PartitionKey":"p","RowKey":"r","zeta":1,"alpha":"a","mid":true}"#;
    assert_eq!(c.send("POST", "/order", &[], Some(body)).await.status, 201);
    let full = [("Accept", "application/json;odata=fullmetadata")];
    let r = c.send("GET", path, &full, None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert!(text.starts_with("{\"odata.type\":"), "{text}");
    in_order(
        &text,
        &[
            "odata.type",
            "odata.id",
            "odata.editLink",
            "odata.metadata",
            "odata.etag",
            "PartitionKey",
            "RowKey",
            "zeta",
            "alpha",
            "mid",
            "Timestamp@odata.type",
            "Timestamp",
        ],
    );
    let r = c.send("GET", "/order()", &full, None).await;
    let text = r.text();
    assert!(text.starts_with("{\"value\":[{\"odata.type\":"), "{text}");
    in_order(
        &text,
        &["odata.id", "odata.editLink", "odata.etag", "PartitionKey"],
    );
    assert!(
        text.contains("}],\"odata.metadata\":\"") && text.ends_with("$metadata#order\"}"),
        "{text}"
    );
    let r = c.send("GET", "/Tables", &[], None).await;
    let text = r.text();
    assert!(text.starts_with("{\"value\":["), "{text}");
    assert!(text.ends_with("$metadata#Tables\"}"), "{text}");

    let merge = [("X-HTTP-Method", "MERGE")];
    let patch = r#"{"PartitionKey":"p","RowKey":"r","new":2,"alpha":"b"}"#;
    let r = c.send("POST", path, &merge, Some(patch)).await;
    assert_eq!(r.status, 204, "{}", r.text());
    let text = c.send("GET", path, &[], None).await.text();
    in_order(
        &text,
        &[
            "PartitionKey",
            "RowKey",
            "zeta",
            "alpha",
            "mid",
            "new",
            "Timestamp",
        ],
    );
    assert!(text.contains("\"alpha\":\"b\""), "{text}");
}

/// Empty keys, over-long keys and the dropped `Etag` property.
#[tokio::test]
async fn key_rules_and_the_etag_property() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("keys").await.status, 201);
    for body in [
        r#"{"PartitionKey":"","RowKey":"r"}"#,
        r#"{"PartitionKey":"p","RowKey":""}"#,
    ] {
        let r = c.send("POST", "/keys", &[], Some(body)).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(r.error_code(), "PropertiesNeedValue");
        assert_eq!(
            error_text(&r),
            with_activity_line(&r, "PartitionKey/RowKey cannot be empty")
        );
    }
    let long = format!(r#"{{"PartitionKey":"p","RowKey":"{}"}}"#, "r".repeat(256));
    let r = c.send("POST", "/keys", &[], Some(&long)).await;
    assert_eq!(r.status, 400, "{}", r.text());
    let fits = format!(r#"{{"PartitionKey":"p","RowKey":"{}"}}"#, "r".repeat(255));
    assert_eq!(c.send("POST", "/keys", &[], Some(&fits)).await.status, 201);
    let r = c
        .send(
            "POST",
            "/keys",
            &[],
            Some(r#"{"PartitionKey":"p","RowKey":"e","etag":"bar","Etag":"baz"}"#),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let v = r.json();
    assert_eq!(v["etag"], "bar");
    assert!(v.get("Etag").is_none(), "{v}");
}

/// The surfaces Cosmos lacks answer 501 NotImplemented in JSON.
#[tokio::test]
async fn missing_surfaces_are_not_implemented() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("acl").await.status, 201);
    for (method, path) in [
        ("GET", "/?restype=service&comp=properties"),
        ("PUT", "/?restype=service&comp=properties"),
        ("GET", "/?restype=service&comp=stats"),
        ("GET", "/acl?comp=acl"),
        ("PUT", "/acl?comp=acl"),
    ] {
        let body = (method == "PUT").then_some("<x/>");
        let r = c
            .send(method, path, &[("Content-Type", "application/xml")], body)
            .await;
        assert_eq!(r.status, 501, "{method} {path}: {}", r.text());
        assert_eq!(r.error_code(), "NotImplemented", "{method} {path}");
        assert_eq!(
            error_text(&r),
            with_activity_line(&r, "The requested operation is not supported."),
            "{method} {path}"
        );
    }
    let url = format!("{}/acl", c.t.server.endpoint());
    let r =
        c.t.exchange(
            c.t.client
                .request(reqwest::Method::OPTIONS, &url)
                .header("Origin", "http://example.com")
                .header("Access-Control-Request-Method", "GET"),
        )
        .await;
    assert_eq!(r.status, 501);
}

/// `$batch`: Content-ID 1..n, each operation its own 7-digit ETag, a missing table
/// `ResourceNotFound` without an index prefix, other failures with `0:` and a blank line.
#[tokio::test]
async fn batches_in_cosmos_framing() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("batches").await.status, 201);
    let base = c.t.server.endpoint();
    let mut b = common::batch::BatchBody::new(&base);
    for rk in ["a", "b", "c"] {
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"{rk}"}}"#);
        b.op(
            "PUT",
            &format!("/batches(PartitionKey='p',RowKey='{rk}')"),
            &[],
            Some(&body),
        );
    }

    let r = c.send_batch(&b).await;
    assert_eq!(r.status, 202, "{}", r.text());
    let text = r.text();
    for n in 1..=3 {
        assert!(text.contains(&format!("Content-ID: {n}\r\n")), "{text}");
    }
    let etags: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("ETag: "))
        .collect();
    assert_eq!(etags.len(), 3, "{text}");
    for e in &etags {
        let t = e
            .trim_start_matches("W/\"datetime'")
            .trim_end_matches("'\"")
            .replace("%3A", ":");
        assert!(seven_digits(&t), "{e}");
    }
    assert!(!text.contains("DataServiceVersion"), "{text}");
    // Cosmos's framing: bare LF ends the change-set delimiters and part headers, CRLF the
    // inner messages and the batch delimiters (recording `test_batch_all_operations_together`).
    let batch = r
        .header("content-type")
        .and_then(|ct| ct.strip_prefix("multipart/mixed; boundary="))
        .expect("a batch boundary")
        .to_string();
    let changeset = text
        .split("boundary=")
        .nth(1)
        .and_then(|rest| rest.split("\r\n").next())
        .expect("a change-set boundary")
        .to_string();
    let part = format!(
        "--{changeset}\nContent-Type: application/http\nContent-Transfer-Encoding: binary\n\n\
         HTTP/1.1 204 No Content\r\n"
    );
    assert_eq!(text.matches(&part).count(), 3, "{text:?}");
    assert!(
        text.ends_with(&format!("\r\n\r\n--{changeset}--\n--{batch}--\r\n")),
        "{text:?}"
    );
    assert!(
        text.starts_with(&format!(
            "--{batch}\r\nContent-Type: multipart/mixed; boundary={changeset}\r\n\r\n--"
        )),
        "{text:?}"
    );
    // A missing table.
    let mut missing = common::batch::BatchBody::new(&base);
    missing.op(
        "POST",
        "/nosuch",
        &[],
        Some(r#"{"PartitionKey":"p","RowKey":"a"}"#),
    );
    let r = c.send_batch(&missing).await;
    assert_eq!(r.status, 202);
    let text = r.text();
    assert!(text.contains("\"code\":\"ResourceNotFound\""), "{text}");
    assert!(
        text.contains("\"value\":\"The specified resource does not exist.\\nRequestID:"),
        "{text}"
    );
    // A failing operation: `0:` and a blank line.
    let mut conflict = common::batch::BatchBody::new(&base);
    conflict.op(
        "POST",
        "/batches",
        &[],
        Some(r#"{"PartitionKey":"p","RowKey":"a"}"#),
    );
    let r = c.send_batch(&conflict).await;
    let text = r.text();
    assert!(text.contains("\"code\":\"EntityAlreadyExists\""), "{text}");
    assert!(
        text.contains("\"value\":\"0:The specified entity already exists.\\n\\nRequestID:"),
        "{text}"
    );
    // The error JSON is followed by the delimiter's CRLF only (recording
    // `test_batch_update_if_doesnt_match`).
    assert!(text.contains("\"}}}\r\n--changesetresponse_"), "{text:?}");
}

fn encoded(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// Pages through `path` (a query URL without continuation), following Cosmos's tokens.
async fn all_entity_pages(c: &Cosmos, path: &str) -> (Vec<(String, String)>, usize) {
    let pages = entity_pages(c, path).await;
    let count = pages.len();
    (pages.into_iter().flatten().collect(), count)
}

/// (PartitionKey, RowKey) of each entity of a Query Entities page, in the order answered.
fn page_keys(r: &Reply) -> Vec<(String, String)> {
    r.json()["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["PartitionKey"].as_str().unwrap().to_string(),
                e["RowKey"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Each page's keys, following the continuations to the end.
async fn entity_pages(c: &Cosmos, path: &str) -> Vec<Vec<(String, String)>> {
    let mut pages = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let url = match &next {
            Some(token) => format!("{path}&NextPartitionKey={}&NextRowKey=NA", encoded(token)),
            None => path.to_string(),
        };
        let r = c.send("GET", &url, &[], None).await;
        assert_eq!(r.status, 200, "{}", r.text());
        pages.push(page_keys(&r));
        match r.header("x-ms-continuation-nextpartitionkey") {
            Some(token) => {
                assert!(token.starts_with("{\"token\":\""), "{token}");
                assert_eq!(r.header("x-ms-continuation-nextrowkey"), Some("NA"));
                next = Some(token.to_string());
            }
            None => return pages,
        }
    }
}

/// `--page-breaks` cuts Cosmos-flavoured pages too, as Cosmos ends pages early ("Pagination
/// in Azure Cosmos DB for NoSQL": a page may hold fewer items than asked, or none, and still
/// carry a continuation): short and empty pages, the first included, each entity exactly
/// once across them.
#[tokio::test]
async fn page_breaks_cut_cosmos_pages_completely() {
    use tablestore::config::PageBreaksArg;
    let mut empty_first_pages = 0;
    let (mut short_pages, mut empty_pages) = (0, 0);
    for seed in 0..6 {
        let mut config = cosmos_config();
        config.realism.page_breaks = Some(PageBreaksArg::Random);
        config.realism.realism_seed = seed;
        let c = Cosmos::start_with(config).await;
        assert_eq!(c.create_table("cut").await.status, 201);
        let mut keys = Vec::new();
        for pk in ["a", "b", "c"] {
            for rk in 0..8 {
                let rk = format!("{rk:02}");
                let body = format!(r#"{{"PartitionKey":"{pk}","RowKey":"{rk}"}}"#);
                assert_eq!(c.send("POST", "/cut", &[], Some(&body)).await.status, 201);
                keys.push((pk.to_string(), rk));
            }
        }
        let pages = entity_pages(&c, "/cut()?$top=5").await;
        empty_first_pages += usize::from(pages[0].is_empty());
        let last = pages.len() - 1;
        short_pages += pages[..last].iter().filter(|p| p.len() < 5).count();
        empty_pages += pages[..last].iter().filter(|p| p.is_empty()).count();
        let mut seen: Vec<_> = pages.into_iter().flatten().collect();
        seen.sort();
        let unique = seen.len();
        seen.dedup();
        assert_eq!(seen.len(), unique, "seed {seed}: an entity was repeated");
        assert_eq!(seen, keys, "seed {seed}: every entity, once");
    }
    assert!(
        empty_pages > 0 && short_pages > empty_pages,
        "{short_pages} short, {empty_pages} empty"
    );
    assert!(
        empty_first_pages > 0,
        "an empty first page, with a token to the start"
    );

    // `partition` ends each page where the PartitionKey changes, in Cosmos's order too.
    let mut config = cosmos_config();
    config.realism.page_breaks = Some(PageBreaksArg::Partition);
    let c = Cosmos::start_with(config).await;
    assert_eq!(c.create_table("cut").await.status, 201);
    for (pk, rk) in [("a", "1"), ("b", "1"), ("a", "2"), ("b", "2"), ("c", "1")] {
        let body = format!(r#"{{"PartitionKey":"{pk}","RowKey":"{rk}"}}"#);
        assert_eq!(c.send("POST", "/cut", &[], Some(&body)).await.status, 201);
    }
    let pages = entity_pages(&c, "/cut()?$top=1000").await;
    assert!(pages.len() > 1, "{pages:?}");
    for page in &pages {
        assert!(page.iter().all(|(pk, _)| *pk == page[0].0), "{pages:?}");
    }
    assert_eq!(pages.iter().map(Vec::len).sum::<usize>(), 5);
}

/// Query results come in creation order, not key order, paged with Cosmos's opaque tokens,
/// every entity once.
#[tokio::test]
async fn entities_come_in_creation_order_and_page_completely() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("order").await.status, 201);
    // Written in neither key order nor its reverse: RowKeys descending, PartitionKeys mixed.
    let mut keys = Vec::new();
    for rk in (0..10).rev() {
        for pk in ["b", "c", "a"] {
            let rk = format!("{rk:02}");
            let body = format!(r#"{{"PartitionKey":"{pk}","RowKey":"{rk}","N":1}}"#);
            assert_eq!(c.send("POST", "/order", &[], Some(&body)).await.status, 201);
            keys.push((pk.to_string(), rk));
        }
    }
    let (seen, pages) = all_entity_pages(&c, "/order()?$top=7").await;
    assert_eq!(pages, 5);
    assert_eq!(seen, keys, "every entity once, in the order written");
    // A filter narrows the same order.
    let (filtered, _) =
        all_entity_pages(&c, "/order()?$filter=PartitionKey%20eq%20'b'&$top=3").await;
    let want: Vec<_> = keys.iter().filter(|(p, _)| p == "b").cloned().collect();
    assert_eq!(filtered, want);
    // A token that is not Cosmos's is refused.
    let r = c
        .send(
            "GET",
            "/order()?NextPartitionKey=1!4!cGs-&NextRowKey=NA",
            &[],
            None,
        )
        .await;
    assert_eq!(
        (r.status.as_u16(), r.error_code()),
        (400, "InvalidInput".into())
    );
}

/// The Python SDK's Cosmos recording `test_batch_all_operations_together`, replayed: four
/// entities created one by one, then one batch creates the base entity, deletes `-1`, merges
/// `-2`, replaces `-3`, upserts `-4` and upserts the new `-5`. Cosmos then answered `-2, -3,
/// -4, <base>, -5`: entities changed keep their places, new ones follow in the batch's order.
/// One deleted and created again goes to the end.
#[tokio::test]
async fn writes_keep_their_places_as_recorded() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("together").await.status, 201);
    let base = "batch_all_operations_together";
    for n in 1..=4 {
        let body = format!(r#"{{"PartitionKey":"003","RowKey":"{base}-{n}","test":true}}"#);
        let r = c.send("POST", "/together", &[], Some(&body)).await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let path = |rk: &str| format!("/together(PartitionKey='003',RowKey='{rk}')");
    let body = |rk: &str| format!(r#"{{"PartitionKey":"003","RowKey":"{rk}","test3":10}}"#);
    let if_any = [("If-Match", "*")];
    let merge = [("If-Match", "*"), ("X-HTTP-Method", "MERGE")];
    let mut b = common::batch::BatchBody::new(&c.t.server.endpoint());
    b.op("POST", "/together", &[], Some(&body(base)));
    b.op("DELETE", &path(&format!("{base}-1")), &if_any, None);
    let rk = format!("{base}-2");
    b.op("POST", &path(&rk), &merge, Some(&body(&rk)));
    let rk = format!("{base}-3");
    b.op("PUT", &path(&rk), &if_any, Some(&body(&rk)));
    let rk = format!("{base}-4");
    b.op("PUT", &path(&rk), &[], Some(&body(&rk)));
    let rk = format!("{base}-5");
    b.op("PUT", &path(&rk), &[], Some(&body(&rk)));
    let r = c.send_batch(&b).await;
    assert_eq!(r.status, 202, "{}", r.text());
    assert!(!r.text().contains("HTTP/1.1 4"), "{}", r.text());
    let order = || async {
        let (seen, _) = all_entity_pages(&c, "/together()?$top=2").await;
        seen.into_iter()
            .map(|(_, rk)| rk.replace(base, ""))
            .collect::<Vec<_>>()
    };
    assert_eq!(order().await, ["-2", "-3", "-4", "", "-5"]);
    let r = c
        .send("DELETE", &path(&format!("{base}-3")), &if_any, None)
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = c
        .send("POST", "/together", &[], Some(&body(&format!("{base}-3"))))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(order().await, ["-2", "-4", "", "-5", "-3"]);
}

/// `--cosmos-shuffle-seed N` answers in a fixed shuffle of the keys in place of creation
/// order, every entity once; another seed, another shuffle.
#[tokio::test]
async fn a_shuffle_seed_shuffles_entities() {
    let mut orders = Vec::new();
    let keys: Vec<(String, String)> = ["a", "b", "c"]
        .iter()
        .flat_map(|pk| (0..10).map(move |rk| (pk.to_string(), format!("{rk:02}"))))
        .collect();
    for seed in [7, 8] {
        let mut config = cosmos_config();
        config.cosmos_shuffle_seed = Some(seed);
        let c = Cosmos::start_with(config).await;
        assert_eq!(c.create_table("order").await.status, 201);
        for (pk, rk) in &keys {
            let body = format!(r#"{{"PartitionKey":"{pk}","RowKey":"{rk}"}}"#);
            assert_eq!(c.send("POST", "/order", &[], Some(&body)).await.status, 201);
        }
        let (seen, _) = all_entity_pages(&c, "/order()?$top=4").await;
        assert_ne!(seen, keys, "neither key order nor creation order");
        let mut sorted = seen.clone();
        sorted.sort();
        assert_eq!(sorted, keys, "every entity exactly once");
        orders.push(seen);
    }
    assert_ne!(orders[0], orders[1], "another seed, another order");
}

/// `--cosmos-shuffle-seed` belongs to the Cosmos flavour: with Table storage the server
/// refuses to start, with a sentence.
#[test]
fn a_shuffle_seed_needs_the_cosmos_flavour() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--inMemoryPersistence", "--cosmos-shuffle-seed", "3"];
    let Err(failed) = ChildServer::try_start(dir.path(), &args) else {
        panic!("the storage flavour took --cosmos-shuffle-seed");
    };
    assert!(
        failed
            .stderr
            .contains("--cosmos-shuffle-seed (TABLESTORE_COSMOS_SHUFFLE_SEED) applies to --flavor cosmos only"),
        "{}",
        failed.stderr
    );
    assert_eq!(
        failed.status.and_then(|s| s.code()),
        Some(1),
        "{}",
        failed.stderr
    );
}

/// A data folder written by the storage flavour and served again as Cosmos, through
/// restarts of the real binary: entities come in the order they were created, whichever
/// flavour created them and however often the server restarted.
#[tokio::test]
async fn creation_order_survives_restarts_and_flavours() {
    let dir = tempfile::tempdir().unwrap();
    let key = tablestore::config::DEV_ACCOUNT_KEY;
    let accounts = format!("devstoreaccount1:{key}");
    let env = [("AZURITE_ACCOUNTS", accounts.as_str())];
    let entity = |rk: &str| serde_json::json!({"PartitionKey": "p", "RowKey": rk});
    let storage = ChildServer::start(dir.path(), &[]);
    let client = common::child::Client::new(&storage.endpoint(), Signer::dev());
    client.create_table("kept").await;
    for rk in ["m", "z", "a"] {
        client.insert("kept", &entity(rk)).await;
    }
    // A merge keeps the entity's creation instant, under either flavour.
    let r = client
        .call(
            "MERGE",
            "/kept(PartitionKey='p',RowKey='m')",
            &[("If-Match", "*")],
            Some(serde_json::json!({"More": 1})),
        )
        .await;
    assert_eq!(r.status.as_u16(), 204, "{}", r.text());
    storage.terminate();
    let mut want: Vec<String> = ["m", "z", "a"].map(String::from).to_vec();
    for round in 0..2 {
        let cosmos = ChildServer::try_start_with_env(dir.path(), &["--flavor", "cosmos"], &env)
            .expect("the Cosmos flavour starts on the storage flavour's folder");
        let client = common::child::Client::new(&cosmos.endpoint(), Signer::dev());
        let r = client.call("GET", "/kept()", &[], None).await;
        assert_eq!(r.status.as_u16(), 200, "{}", r.text());
        let row_keys: Vec<String> = page_keys(&r).into_iter().map(|(_, rk)| rk).collect();
        assert_eq!(row_keys, want, "round {round}");
        let rk = format!("b{round}");
        client.insert("kept", &entity(&rk)).await;
        want.push(rk);
        cosmos.terminate();
    }
}

/// Table lists come in no name order, paged with an opaque NextTableName.
#[tokio::test]
async fn tables_come_unordered_and_page_completely() {
    let c = Cosmos::start().await;
    let mut names: Vec<String> = (0..8).map(|i| format!("table{i}")).collect();
    for n in &names {
        assert_eq!(c.create_table(n).await.status, 201);
    }
    let mut seen = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let path = match &next {
            Some(t) => format!("/Tables?$top=3&NextTableName={}", encoded(t)),
            None => "/Tables?$top=3".to_string(),
        };
        let r = c.send("GET", &path, &[], None).await;
        assert_eq!(r.status, 200, "{}", r.text());
        for t in r.json()["value"].as_array().unwrap() {
            seen.push(t["TableName"].as_str().unwrap().to_string());
        }
        match r.header("x-ms-continuation-nexttablename") {
            Some(t) => {
                assert!(!t.starts_with("1!"), "{t}");
                next = Some(t.to_string());
            }
            None => break,
        }
    }
    assert_ne!(seen, names, "tables must not come in name order");
    seen.sort();
    names.sort();
    assert_eq!(seen, names);
}

/// A table SAS works at the root (signed for `localhost`); one restricted to a key range is
/// 501 NotImplemented, as Cosmos answers it.
#[tokio::test]
async fn sas_with_key_ranges_is_not_implemented() {
    use tablestore::auth::canonical::ServiceSasFields;
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("sased").await.status, 201);
    let sas = |range: [&str; 4]| {
        c.t.signer.service_sas(&ServiceSasFields {
            sp: "raud",
            st: "2020-01-01T00:00:00Z",
            se: "2099-01-01T00:00:00Z",
            tn: "sased",
            si: "",
            sip: "",
            spr: "https,http",
            sv: "2019-02-02",
            spk: range[0],
            srk: range[1],
            epk: range[2],
            erk: range[3],
        })
    };
    let t = &c.t;
    let get = |query: String| {
        let url = format!("{}/sased()?{query}", t.server.endpoint());
        let req = request(&t.client, "GET", &url, &[], None, Signing::None);
        async move { t.exchange(req).await }
    };
    let r = get(sas(["", "", "", ""])).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = get(sas(["a", "", "z", ""])).await;
    assert_eq!(r.status, 501, "{}", r.text());
    assert_eq!(r.error_code(), "NotImplemented");
    assert_eq!(
        error_text(&r),
        with_activity_line(
            &r,
            "Shared access signature with PartitionKey or RowKey are not supported"
        )
    );
}

/// A Cosmos-flavoured server throttling by request units, `rus` per second per table.
fn request_units_config(rus: u32) -> Config {
    let mut config = cosmos_config();
    config.realism.simulate_targets = true;
    config.realism.cosmos_table_rus = Some(rus);
    config
}

/// The `value` of an error body's message.
fn error_text(r: &Reply) -> String {
    r.json()["odata.error"]["message"]["value"]
        .as_str()
        .expect("an error message")
        .to_string()
}

/// Over its budget a table answers Cosmos's 429 (recording `test_batch_inserts`): code
/// `TooManyRequests`, "Request rate is large" with `SubStatusCode: 3200`, the activity id
/// (the request id), no retry-after header; the refused insert wrote nothing, and the budget
/// refills at its rate.
#[tokio::test]
async fn over_its_request_units_a_table_answers_429_and_writes_nothing() {
    // 2 RU/s: one insert of three properties (5.6 RU) on a full bucket leaves it 3.6 RU in
    // debt, so the next insert waits 2.8 s for a full bucket: a wide window on a busy machine.
    let c = Cosmos::start_with(request_units_config(2)).await;
    assert_eq!(
        c.create_table("metered").await.status,
        201,
        "tables are free"
    );
    let c = &c;
    let insert = |rk: &'static str| {
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"{rk}","n":1}}"#);
        async move { c.send("POST", "/metered", &[], Some(&body)).await }
    };
    let r = insert("a").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = insert("b").await;
    assert_eq!(r.status, 429, "{}", r.text());
    assert_eq!(r.error_code(), "TooManyRequests");
    assert_eq!(
        r.header("content-type"),
        Some("application/json; odata=fullmetadata"),
        "a write's error, as Cosmos types them"
    );
    for header in ["retry-after", "retry-after-ms", "x-ms-retry-after-ms"] {
        assert_eq!(
            r.header(header),
            None,
            "{header}: the recorded 429s carry none"
        );
    }
    let request_id = r
        .header("x-ms-request-id")
        .expect("a request id")
        .to_string();
    let text = error_text(&r);
    assert!(
        text.starts_with(
            "Message: {\"Errors\":[\"Request rate is large. More Request Units may be needed, \
             so no changes were made."
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!("\r\nActivityId: {request_id}, ")),
        "{text}"
    );
    assert!(
        text.contains("StatusCode: 429, SubStatusCode: 3200"),
        "{text}"
    );
    assert!(text.contains("OperationType: Create"), "{text}");
    assert!(
        text.ends_with(&format!(
            "\r\n, SDK: documentdb-dotnet-sdk/2.14.0 Host/64-bit MicrosoftWindowsNT/6.2.9200.0\
             \nRequestID:{request_id}\n"
        )),
        "{text}"
    );
    assert!(r.body.ends_with(b"}}}\r\n"));

    // Once the debt is paid, the refused insert had written nothing (the read takes 1 RU)...
    tokio::time::sleep(std::time::Duration::from_millis(3000)).await;
    let r = c
        .send("GET", "/metered(PartitionKey='p',RowKey='b')", &[], None)
        .await;
    assert_eq!(r.status, 404, "{}", r.text());
    // ...and with the bucket full again it goes through.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let r = insert("b").await;
    assert_eq!(r.status, 201, "the budget refills: {}", r.text());
}

/// A query pays for what it returned once it ran (1 RU per KB): a costly page leaves the
/// table in debt, and the next read is answered 429 with a read's Content-Type until the
/// budget has refilled. A change set over the whole budget still runs on a full bucket.
#[tokio::test]
async fn a_query_pays_for_its_page_and_the_next_read_waits() {
    // 10 RU/s, so each debt below lasts seconds: wide windows on a busy machine.
    let c = Cosmos::start_with(request_units_config(10)).await;
    assert_eq!(c.create_table("pages").await.status, 201);
    let base = c.t.server.endpoint();
    let mut b = common::batch::BatchBody::new(&base);
    let filler = "x".repeat(4000);
    for i in 0..10 {
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"r{i}","s":"{filler}"}}"#);
        b.op("POST", "/pages", &[], Some(&body));
    }
    // Ten inserts of about 4 KB: about 70 RU, more than a full bucket of 10 holds.
    let r = c.send_batch(&b).await;
    assert_eq!(r.status, 202, "{}", r.text());
    assert!(!r.text().contains("TooManyRequests"), "{}", r.text());
    // The change set left about 60 RU of debt: wait it out, and the bucket fills again.
    tokio::time::sleep(std::time::Duration::from_millis(7500)).await;
    let r = c.send("GET", "/pages()", &[], None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["value"].as_array().unwrap().len(), 10);
    // That page returned about 40 KB: 40 RU from a bucket of 10, 30 in debt for 3 s.
    let r = c
        .send("GET", "/pages(PartitionKey='p',RowKey='r1')", &[], None)
        .await;
    assert_eq!(r.status, 429, "{}", r.text());
    assert_eq!(r.error_code(), "TooManyRequests");
    assert_eq!(
        r.header("content-type"),
        Some("application/json; odata=minimalmetadata"),
        "a read's error, as recorded"
    );
    assert!(error_text(&r).contains("OperationType: Read"));
    tokio::time::sleep(std::time::Duration::from_millis(4500)).await;
    let r = c
        .send("GET", "/pages(PartitionKey='p',RowKey='r1')", &[], None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
}

/// `--cosmos-table-rus` belongs to the Cosmos flavour: with Table storage it is refused with
/// a sentence, and with Cosmos a zero budget is refused too.
#[test]
fn the_request_unit_budget_is_checked_at_start() {
    use tablestore::protocol::dialect::Flavor;
    use tablestore::server::realism::options;
    let mut config = request_units_config(400);
    let e = options(&config.realism, Flavor::Storage).unwrap_err();
    assert!(
        e.starts_with("--cosmos-table-rus applies to --flavor cosmos only"),
        "{e}"
    );
    assert!(options(&config.realism, Flavor::Cosmos).is_ok());
    config.realism.cosmos_table_rus = Some(0);
    let e = options(&config.realism, Flavor::Cosmos).unwrap_err();
    assert_eq!(e, "--cosmos-table-rus must be at least 1");
}

/// Insight under `--flavor cosmos`: "the latest 3" of a partition read with `$top=3` five
/// times raises `no-key-order` (not Storage's `portability`), and a table scan of 1,200
/// entities states its request units, in `/_tablestore/insight` and `/metrics`.
#[tokio::test]
async fn insight_advises_for_cosmos() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("log").await.status, 201);
    let base = c.t.server.endpoint();
    for chunk in 0..12 {
        let mut b = common::batch::BatchBody::new(&base);
        for i in 0..100 {
            let body = format!(r#"{{"PartitionKey":"p{chunk}","RowKey":"{i:03}","Level":"info"}}"#);
            b.op("POST", "/log", &[], Some(&body));
        }
        assert_eq!(c.send_batch(&b).await.status, 202);
    }
    let latest = format!(
        "/log()?$filter={}&$top=3",
        common::url::encode("PartitionKey eq 'p0'")
    );
    for _ in 0..5 {
        let r = c.send("GET", &latest, &[], None).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["value"].as_array().map(Vec::len), Some(3));
    }
    let scan = format!("/log()?$filter={}", common::url::encode("Level eq 'error'"));
    let r = c.send("GET", &scan, &[], None).await;
    assert_eq!(r.status, 200, "{}", r.text());

    let insight = c
        .send("GET", "/_tablestore/insight?settle", &[], None)
        .await;
    assert_eq!(insight.status, 200, "{}", insight.text());
    let tables = insight.json()["accounts"]["localhost"]["tables"].clone();
    let log = tables
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "log"))
        .expect("the log table")
        .clone();
    let ids: Vec<&str> = log["advice"]
        .as_array()
        .expect("advice")
        .iter()
        .filter_map(|a| a["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        ["table-scan", "no-key-order", "request-unit-cost"],
        "{log:#}"
    );
    let cost = log["advice"][2]["example"].as_str().unwrap_or_default();
    assert!(
        cost.contains("read 1200 entities and returned 0: about 120 RU"),
        "{cost}"
    );
    let metrics = c.send("GET", "/metrics", &[], None).await;
    assert!(
        metrics
            .text()
            .lines()
            .any(|l| l == "tablestore_advice_active 3"),
        "{}",
        metrics.text()
    );
}

/// Cosmos's 2 MB limits ("Azure Cosmos DB service quotas": an item's "UTF-8 length of JSON
/// representation" and the "Maximum request size"; FAQ: "Batches can only have up to 2 MBs").
const TWO_MB: usize = 2 * 1024 * 1024;

/// An entity body of exactly `len` bytes: keys and one string property padded to fit.
fn entity_body_of(rk: &str, len: usize) -> String {
    let empty = format!(r#"{{"PartitionKey":"p","RowKey":"{rk}","Big":""}}"#);
    let body = format!(
        r#"{{"PartitionKey":"p","RowKey":"{rk}","Big":"{}"}}"#,
        "x".repeat(len - empty.len())
    );
    assert_eq!(body.len(), len);
    body
}

/// Items up to 2 MB go in (Storage's 1 MiB entity and 64 KiB property limits do not apply);
/// a body one byte over is 413, and so is a merge that would make the item larger than 2 MB.
#[tokio::test]
async fn items_up_to_two_megabytes() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("items").await.status, 201);
    let r = c
        .send("POST", "/items", &[], Some(&entity_body_of("fits", TWO_MB)))
        .await;
    assert_eq!(r.status, 201, "{}", &r.text()[..r.text().len().min(300)]);
    let r = c
        .send("GET", "/items(PartitionKey='p',RowKey='fits')", &[], None)
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["Big"].as_str().unwrap().len(), TWO_MB - 45);

    let over = entity_body_of("over", TWO_MB + 1);
    for (method, path) in [
        ("POST", "/items"),
        ("PUT", "/items(PartitionKey='p',RowKey='over')"),
    ] {
        let r = c.send(method, path, &[], Some(&over)).await;
        assert_eq!(r.status, 413, "{method}: {}", r.text());
        assert_eq!(r.error_code(), "RequestBodyTooLarge");
        assert!(r.text().contains("maximum permissible limit of 2 MB"));
    }
    let r = c
        .send("GET", "/items(PartitionKey='p',RowKey='over')", &[], None)
        .await;
    assert_eq!(r.status, 404, "nothing of the refused write is kept");
    // Past the server's own body limit (4 MiB) the body is not read, and the answer is the same.
    let huge = entity_body_of("huge", 5 * 1024 * 1024);
    let r = c.send("POST", "/items", &[], Some(&huge)).await;
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.error_code(), "RequestBodyTooLarge");
    assert_eq!(r.json()["odata.error"]["message"]["lang"], "en-us");

    // A merge is held to the item it leaves: half now, the rest merged in.
    let half = entity_body_of("merged", TWO_MB / 2);
    assert_eq!(c.send("POST", "/items", &[], Some(&half)).await.status, 201);
    // The item's JSON is the half body plus `,"More":"…"` (9 bytes and the padding).
    let merge = |pad: usize| format!(r#"{{"More":"{}"}}"#, "y".repeat(pad));
    let path = "/items(PartitionKey='p',RowKey='merged')";
    let tunnel = [("X-HTTP-Method", "MERGE"), ("If-Match", "*")];
    let fits = TWO_MB - TWO_MB / 2 - 10;
    let r = c.send("POST", path, &tunnel, Some(&merge(fits + 1))).await;
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.error_code(), "RequestBodyTooLarge");
    assert!(
        r.text()
            .contains("larger than the maximum item size of 2 MB"),
        "{}",
        r.text()
    );
    let r = c.send("POST", path, &tunnel, Some(&merge(fits))).await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = c.send("GET", path, &[], None).await;
    assert_eq!(r.json()["More"].as_str().unwrap().len(), fits);
}

/// Cosmos has "no practical limit" on the number of properties or the length of their names
/// ("Azure Cosmos DB service quotas", per-item limits): 300 properties and a 300-character
/// name, both refused by Table storage, are kept.
#[tokio::test]
async fn no_property_count_or_name_length_limit() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("wide").await.status, 201);
    let mut entity = serde_json::json!({"PartitionKey": "p", "RowKey": "r"});
    for i in 0..300 {
        entity[format!("P{i}")] = serde_json::json!(i);
    }
    let long_name = format!("N{}", "a".repeat(299));
    entity[&long_name] = serde_json::json!("long");
    let r = c
        .send("POST", "/wide", &[], Some(&entity.to_string()))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = c
        .send("GET", "/wide(PartitionKey='p',RowKey='r')", &[], None)
        .await;
    let v = r.json();
    assert_eq!(v["P299"], 299);
    assert_eq!(v[&long_name], "long");
    // Names must still be names.
    let r = c
        .send(
            "POST",
            "/wide",
            &[],
            Some(r#"{"PartitionKey":"p","RowKey":"s","1bad":1}"#),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.error_code(), "PropertyNameInvalid");
}

/// A `$batch` body of exactly 2 MB is taken; one byte more is 413 before anything runs.
#[tokio::test]
async fn batches_up_to_two_megabytes() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("bulk").await.status, 201);
    let base = c.t.server.endpoint();
    // Four inserts whose bodies are padded so that the whole batch is `len` bytes.
    let batch_of = |len: usize| {
        let build = |pad: usize| {
            let mut b = common::batch::BatchBody::new(&base);
            for (i, rk) in ["a", "b", "c", "d"].iter().enumerate() {
                let filler = if i == 0 { pad } else { 400_000 };
                let body = format!(
                    r#"{{"PartitionKey":"p","RowKey":"{rk}","Big":"{}"}}"#,
                    "x".repeat(filler)
                );
                b.op("POST", "/bulk", &[], Some(&body));
            }
            b
        };
        let mut pad = 1000;
        loop {
            let b = build(pad);
            let n = b.body().len();
            if n == len {
                return b;
            }
            pad = (pad as isize + len as isize - n as isize) as usize;
        }
    };
    let r = c.send_batch(&batch_of(TWO_MB + 1)).await;
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.error_code(), "RequestBodyTooLarge");
    let r = c
        .send("GET", "/bulk(PartitionKey='p',RowKey='a')", &[], None)
        .await;
    assert_eq!(r.status, 404);
    let r = c.send_batch(&batch_of(TWO_MB)).await;
    assert_eq!(r.status, 202, "{}", &r.text()[..r.text().len().min(500)]);
    assert!(!r.text().contains("odata.error"), "{}", r.text());
    let r = c
        .send("GET", "/bulk(PartitionKey='p',RowKey='d')", &[], None)
        .await;
    assert_eq!(r.status, 200);
}

/// `$top` over 1,000 is taken ("TakeCount isn't limited to 1000", API for Table FAQ): the page
/// holds that many entities; a page stops at about 4 MB of entities, continuation given
/// ("Azure Cosmos DB service quotas": "Maximum response size" 4 MB). Storage refuses it.
#[tokio::test]
async fn top_over_a_thousand_and_four_megabyte_pages() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("many").await.status, 201);
    let base = c.t.server.endpoint();
    for chunk in 0..12 {
        let mut b = common::batch::BatchBody::new(&base);
        for i in 0..100 {
            let body = format!(
                r#"{{"PartitionKey":"p","RowKey":"{:04}"}}"#,
                chunk * 100 + i
            );
            b.op("POST", "/many", &[], Some(&body));
        }
        let r = c.send_batch(&b).await;
        assert!(!r.text().contains("odata.error"), "{}", r.text());
    }
    let r = c.send("GET", "/many()?$top=5000", &[], None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["value"].as_array().unwrap().len(), 1200);
    assert!(r.header("x-ms-continuation-nextpartitionkey").is_none());
    let (seen, pages) = all_entity_pages(&c, "/many()?$top=1100").await;
    assert_eq!((seen.len(), pages), (1200, 2));
    let r = c.send("GET", "/many()?$top=2147483648", &[], None).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.error_code(), "InvalidQueryParameterValue");
    // Tables too.
    let r = c.send("GET", "/Tables?$top=5000", &[], None).await;
    assert_eq!(r.status, 200, "{}", r.text());

    // Three entities of 1.5 MB: two fit a 4 MB page, the third comes next.
    assert_eq!(c.create_table("big").await.status, 201);
    for rk in ["a", "b", "c"] {
        let body = entity_body_of(rk, 1_500_000);
        assert_eq!(c.send("POST", "/big", &[], Some(&body)).await.status, 201);
    }
    let (seen, pages) = all_entity_pages(&c, "/big()?$top=5000").await;
    assert_eq!((seen.len(), pages), (3, 2), "{seen:?}");
    let mut keys: Vec<String> = seen.into_iter().map(|(_, rk)| rk).collect();
    keys.sort();
    assert_eq!(keys, ["a", "b", "c"]);

    // The storage flavour keeps Table storage's limit.
    let s = TestServer::start().await;
    let r = s.send("GET", "/Tables?$top=1001", &[], None).await;
    assert_eq!(r.status, 400, "{}", r.text());
}

/// The `TableName`s of a Query Tables answer, sorted.
fn table_names(r: &Reply) -> Vec<String> {
    let mut names: Vec<String> = r.json()["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["TableName"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// Table names are case-sensitive on Cosmos (API for Table FAQ: "Table names in Azure Table
/// storage aren't case-sensitive, but they are in Azure Cosmos DB for Table"): `Orders` and
/// `orders` are two tables, each with its own entities.
#[tokio::test]
async fn table_names_are_case_sensitive() {
    let c = Cosmos::start().await;
    for name in ["Orders", "orders"] {
        let r = c.create_table(name).await;
        assert_eq!(r.status, 201, "{name}: {}", r.text());
        assert_eq!(r.json()["TableName"], name);
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"r","In":"{name}"}}"#);
        let r = c.send("POST", &format!("/{name}"), &[], Some(&body)).await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let r = c.create_table("Orders").await;
    assert_eq!(r.status, 409, "{}", r.text());
    for name in ["Orders", "orders"] {
        let r = c
            .send(
                "GET",
                &format!("/{name}(PartitionKey='p',RowKey='r')"),
                &[],
                None,
            )
            .await;
        assert_eq!(r.json()["In"], name);
        let r = c
            .send("GET", &format!("/Tables('{name}')"), &[], None)
            .await;
        assert_eq!(r.json()["TableName"], name);
    }
    let r = c
        .send("GET", "/ORDERS(PartitionKey='p',RowKey='r')", &[], None)
        .await;
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(r.error_code(), "ResourceNotFound");
    let r = c
        .send(
            "GET",
            "/Tables?$filter=TableName%20eq%20'Orders'",
            &[],
            None,
        )
        .await;
    let listed = table_names(&r);
    assert_eq!(listed, ["Orders"]);
    let all = table_names(&c.send("GET", "/Tables", &[], None).await);
    assert_eq!(all, ["Orders", "orders"]);
    let r = c.send("DELETE", "/Tables('Orders')", &[], None).await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = c
        .send("GET", "/orders(PartitionKey='p',RowKey='r')", &[], None)
        .await;
    assert_eq!(r.json()["In"], "orders", "the other table is untouched");
}

/// Cosmos's table-name rules: 1–254 characters, none of `/ \ # ?`, no trailing space, any
/// other character (the Python SDK's `_validate_cosmos_tablename`). Refusals carry the codes and
/// texts that SDK's `_validate_tablename_error` recognises, so it raises its `ValueError`.
#[tokio::test]
async fn cosmos_table_name_rules() {
    let c = Cosmos::start().await;
    for name in [
        "my table",
        "Ünïcode 名前",
        "a.b-c_d~e",
        "x",
        "tables",
        &"n".repeat(254),
    ] {
        let body = serde_json::json!({ "TableName": name }).to_string();
        let r = c.send("POST", "/Tables", &[], Some(&body)).await;
        assert_eq!(r.status, 201, "{name}: {}", r.text());
        assert_eq!(r.json()["TableName"], name);
        let location = r.header("location").expect("a Location header");
        assert!(location.is_ascii() && !location.contains(' '), "{location}");
        let path = format!("/{}", encoded(name));
        let r = c
            .send(
                "POST",
                &path,
                &[],
                Some(r#"{"PartitionKey":"p","RowKey":"r"}"#),
            )
            .await;
        assert_eq!(r.status, 201, "{name}: {}", r.text());
        let r = c
            .send(
                "GET",
                &format!("{path}(PartitionKey='p',RowKey='r')"),
                &[],
                None,
            )
            .await;
        assert_eq!(r.status, 200, "{name}: {}", r.text());
        let r = c.send("GET", &format!("{path}()"), &[], None).await;
        assert_eq!(r.json()["value"].as_array().unwrap().len(), 1);
    }
    let refused = [
        (
            "a/b",
            500,
            "InternalServerError",
            "The resource name presented contains invalid character",
        ),
        (
            "a\\b",
            500,
            "InternalServerError",
            "The resource name presented contains invalid character",
        ),
        (
            "a#b",
            500,
            "InternalServerError",
            "The resource name presented contains invalid character",
        ),
        (
            "a?b",
            500,
            "InternalServerError",
            "The resource name presented contains invalid character",
        ),
        (
            "ab ",
            500,
            "InternalServerError",
            "The resource name can't end with space",
        ),
        ("", 400, "BadRequest", "The input name is invalid."),
    ];
    let too_long = "-".repeat(255);
    for (name, status, code, text) in refused.into_iter().chain([(
        too_long.as_str(),
        400,
        "BadRequest",
        "The input name is invalid.",
    )]) {
        let body = serde_json::json!({ "TableName": name }).to_string();
        let r = c.send("POST", "/Tables", &[], Some(&body)).await;
        assert_eq!(r.status, status, "{name:?}: {}", r.text());
        assert_eq!(r.error_code(), code, "{name:?}");
        assert!(r.text().contains(text), "{name:?}: {}", r.text());
    }
    // In a URL, the same characters are InvalidInput with the texts the SDK knows.
    let body = Some(r#"{"PartitionKey":"p","RowKey":"r"}"#);
    let r = c.send("POST", "/a%23b", &[], body).await;
    assert_eq!(
        (r.status.as_u16(), r.error_code()),
        (400, "InvalidInput".into())
    );
    assert!(r
        .text()
        .contains("The table name contains an invalid character"));
    let r = c.send("POST", "/ab%20", &[], body).await;
    assert_eq!(
        (r.status.as_u16(), r.error_code()),
        (400, "InvalidInput".into())
    );
    assert!(r.text().contains("Table name cannot end with a space."));
    // A name too long to create is simply not there (the SDK's live test).
    let r = c.send("POST", &format!("/{too_long}"), &[], body).await;
    assert_eq!(
        (r.status.as_u16(), r.error_code()),
        (404, "ResourceNotFound".into())
    );
    // The storage flavour keeps Table storage's rules.
    let s = TestServer::start().await;
    let r = s
        .send("POST", "/Tables", &[], Some(r#"{"TableName":"my table"}"#))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.error_code(), "InvalidResourceName");
}

/// One store served by both flavours (an `AZURITE_ACCOUNTS` account is served by both): a
/// name without capitals is one table for both; the storage flavour's `Orders` is `orders` to
/// the Cosmos flavour; a Cosmos table whose name has capitals is the Cosmos flavour's alone.
#[tokio::test]
async fn a_store_shared_by_both_flavours() {
    let store = tablestore::store::open::open(&tablestore::store::open::StoreOptions::Memory {
        durability: tablestore::store::Durability::Durable,
    })
    .await
    .unwrap();
    let storage = TestServer::start_with_store(store.clone()).await;
    let mut config = cosmos_config();
    config.accounts_env = Some(format!(
        "devstoreaccount1:{}",
        tablestore::config::DEV_ACCOUNT_KEY
    ));
    let mut cosmos = Cosmos {
        t: TestServer::start_over(config, store).await,
    };
    cosmos.t.signer = Signer::new("devstoreaccount1", tablestore::config::DEV_ACCOUNT_KEY);
    storage.create_table("Orders").await;
    storage.create_table("shared").await;
    let r = cosmos.send("GET", "/Tables('orders')", &[], None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["TableName"], "orders");
    let r = cosmos.send("GET", "/Tables('Orders')", &[], None).await;
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(cosmos.create_table("Orders").await.status, 201);
    assert_eq!(cosmos.create_table("orders").await.status, 409);
    let listed = table_names(&cosmos.send("GET", "/Tables", &[], None).await);
    assert_eq!(listed, ["Orders", "orders", "shared"]);
    let listed = table_names(&storage.send("GET", "/Tables", &[], None).await);
    assert_eq!(
        listed,
        ["Orders", "shared"],
        "the storage flavour's own tables"
    );
    // The storage flavour's `Orders` is still its table, not the Cosmos one.
    let r = storage
        .send(
            "POST",
            "/ORDERS",
            &[],
            Some(r#"{"PartitionKey":"p","RowKey":"s"}"#),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = cosmos
        .send("GET", "/orders(PartitionKey='p',RowKey='s')", &[], None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = cosmos
        .send("GET", "/Orders(PartitionKey='p',RowKey='s')", &[], None)
        .await;
    assert_eq!(r.status, 404, "{}", r.text());
}

/// `--seed` of a Cosmos-flavoured server goes by Cosmos's rules: the seeded `Orders` is the
/// table a Cosmos client names `Orders` (not `orders`), and its 1.5 MB item is taken.
#[tokio::test]
async fn a_seed_goes_by_cosmos_rules() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("Orders.jsonl");
    let line = format!(
        r#"{{"PartitionKey":"p","RowKey":"r","Text":"{}"}}"#,
        "x".repeat(1_500_000)
    );
    std::fs::write(&file, line).unwrap();
    let store = tablestore::store::open::open(&tablestore::store::open::StoreOptions::Memory {
        durability: tablestore::store::Durability::Durable,
    })
    .await
    .unwrap();
    let seeded = std::sync::Arc::clone(&store);
    let summary = tokio::task::spawn_blocking(move || {
        tablestore::data::cli::seed(
            seeded,
            &file,
            COSMOS_EMULATOR_ACCOUNT_NAME,
            tablestore::protocol::dialect::Flavor::Cosmos,
            None,
        )
    })
    .await
    .unwrap()
    .expect("the seed loads");
    assert_eq!(summary.entities, 1);
    let c = Cosmos {
        t: TestServer::start_over(cosmos_config(), store).await,
    };
    let r = c
        .send("GET", "/Orders(PartitionKey='p',RowKey='r')", &[], None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["Text"].as_str().unwrap().len(), 1_500_000);
    assert_eq!(
        table_names(&c.send("GET", "/Tables", &[], None).await),
        ["Orders"]
    );
}

/// A change set naming one row twice: Cosmos refuses the whole request with 400
/// `InvalidDuplicateRow` in its JSON envelope, where Storage answers 202 with the failed
/// operation inside (the Java SDK suite's `submitTransactionWithSameRowKeys`, Cosmos branch).
/// Nothing is written.
#[tokio::test]
async fn a_change_set_naming_a_row_twice_is_refused_whole() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("dups").await.status, 201);
    let base = c.t.server.endpoint();
    let mut b = common::batch::BatchBody::new(&base);
    for rk in ["a", "b", "c", "a"] {
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"{rk}"}}"#);
        b.op("POST", "/dups", &[], Some(&body));
    }
    let r = c.send_batch(&b).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/json; odata=fullmetadata")
    );
    assert_cosmos_headers(&r);
    let text = r.text();
    assert!(text.ends_with("}\r\n"), "{text:?}");
    let body = r.json();
    assert_eq!(body["odata.error"]["code"], "InvalidDuplicateRow");
    let message = body["odata.error"]["message"]["value"].as_str().unwrap();
    let request_id = r.header("x-ms-request-id").unwrap();
    assert_eq!(
        message,
        format!(
            "3:The batch request contains multiple changes with same row key. An entity can \
             appear only once in a batch request.\nRequestID:{request_id}\n"
        )
    );
    let r = c.send("GET", "/dups()", &[], None).await;
    assert_eq!(r.json()["value"].as_array().unwrap().len(), 0);
}

/// `Accept` wins over `$format` on Cosmos (Go `aztables` suite, recording
/// `TestListTables_cosmos`, 2024-02-26: `Accept: application/json;odata=minimalmetadata` with
/// `$format=application/json;odata=fullmetadata` answered minimal metadata); Storage lets
/// `$format` win (tests/it/tables.rs).
#[tokio::test]
async fn accept_wins_over_format() {
    let c = Cosmos::start().await;
    assert_eq!(c.create_table("formats").await.status, 201);
    let full = "$format=application%2Fjson%3Bodata%3Dfullmetadata";
    let minimal = [("Accept", "application/json;odata=minimalmetadata")];
    let r = c
        .send("GET", &format!("/Tables?{full}"), &minimal, None)
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/json; odata=minimalmetadata")
    );
    assert!(
        r.json()["value"][0].get("odata.type").is_none(),
        "{}",
        r.text()
    );
    // Without a JSON `Accept`, `$format` still counts.
    let r = c
        .send(
            "GET",
            &format!("/Tables?{full}"),
            &[("Accept", "*/*")],
            None,
        )
        .await;
    assert_eq!(
        r.header("content-type"),
        Some("application/json; odata=fullmetadata")
    );
}

/// A full Query Tables page continues even when no table follows, and the next page is empty
/// (Go `aztables` suite, recording `TestQueryTable_cosmos`, 2024-02-26); Storage ends such a
/// page without a token (tests/it/tables.rs).
#[tokio::test]
async fn a_full_table_page_continues_to_an_empty_one() {
    let c = Cosmos::start().await;
    for name in ["zzza0", "zzza1", "zzza2", "zzza3", "zzzb4"] {
        assert_eq!(c.create_table(name).await.status, 201);
    }
    let filter = encoded("TableName ge 'zzza' and TableName lt 'zzzb'");
    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut path = format!("/Tables?$filter={filter}&$top=2");
        if let Some(t) = &token {
            path.push_str(&format!("&NextTableName={}", encoded(t)));
        }
        let r = c.send("GET", &path, &[], None).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let names = table_names(&r);
        sizes.push(names.len());
        seen.extend(names);
        token = r
            .header("x-ms-continuation-NextTableName")
            .map(str::to_string);
        if token.is_none() {
            break;
        }
        assert!(sizes.len() < 10, "no end");
    }
    assert_eq!(sizes, [2, 2, 0]);
    seen.sort();
    assert_eq!(seen, ["zzza0", "zzza1", "zzza2", "zzza3"]);
}
