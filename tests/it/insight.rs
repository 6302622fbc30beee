//! Issue 14: query classes and examined/returned counts on a 100,000-entity table for the
//! design guide's query shapes; the insight and metrics endpoints (access, content); the
//! access log's class and counts; design advice logged once per table and rule.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::child::{ChildServer, Client, Signer};
use common::url::encode as enc;
use common::{Reply, TestServer};
use reqwest::StatusCode;
use serde_json::Value;
use tablestore::config::{DEV_ACCOUNT, DEV_ACCOUNT_KEY};
use tablestore::model::{EdmValue, EntityKey, IfMatch, Property, TableRef, WriteKind, WriteOp};
use tablestore::store::kv::memory::MemoryKv;
use tablestore::store::{Durability, KvStore, Store};

/// `people`: 100 partitions `p000`…`p099` × 1,000 rows `r0000`…`r0999`; `LastName` is
/// `n00`…`n49` by row (so 20 per partition share a name), `Amount` the row number.
async fn hundred_thousand() -> Arc<dyn Store> {
    let store = KvStore::open(MemoryKv::new(), Durability::Relaxed).expect("store");
    let info = store
        .create_table(&TableRef::new(DEV_ACCOUNT, "people"))
        .await
        .expect("create");
    for p in 0..100 {
        let pk = format!("p{p:03}");
        for chunk in (0..1000).collect::<Vec<u32>>().chunks(100) {
            let ops: Vec<WriteOp> = chunk
                .iter()
                .map(|&r| WriteOp {
                    limits: Default::default(),
                    kind: WriteKind::InsertOrReplace,
                    key: EntityKey {
                        partition_key: pk.clone(),
                        row_key: format!("r{r:04}"),
                    },
                    properties: vec![
                        Property {
                            name: "LastName".into(),
                            value: EdmValue::String(format!("n{:02}", r % 50)),
                        },
                        Property {
                            name: "Amount".into(),
                            value: EdmValue::Int32(r as i32),
                        },
                    ],
                    if_match: IfMatch::Any,
                })
                .collect();
            store.commit(info.id, &ops).await.expect("commit");
        }
    }
    store
}

async fn query(t: &TestServer, filter: &str, extra: &str) -> Reply {
    let path = if filter.is_empty() {
        format!("/people()?{extra}")
    } else {
        format!("/people()?$filter={}{extra}", enc(filter))
    };
    let r = t
        .send("GET", &path, &[("x-tablestore-debug-plan", "true")], None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    r
}

/// Runs a query to its end, following continuation tokens, and returns how many pages (requests)
/// it took: a page may end early (its time budget) when the machine is busy.
async fn query_to_the_end(t: &TestServer, filter: &str) -> u64 {
    let mut extra = String::new();
    for pages in 1..=1000 {
        let r = query(t, filter, &extra).await;
        match continuation(&r) {
            Some(next) => extra = next,
            None => return pages,
        }
    }
    panic!("the query did not end in 1,000 pages");
}

/// The query string that asks for the page after `r`, if there is one.
fn continuation(r: &Reply) -> Option<String> {
    let pk = r.header("x-ms-continuation-NextPartitionKey")?;
    let rk = r.header("x-ms-continuation-NextRowKey")?;
    Some(format!(
        "&NextPartitionKey={}&NextRowKey={}",
        enc(pk),
        enc(rk)
    ))
}

/// (class, examined, returned, pages) from the debug headers.
fn verdict(r: &Reply) -> (String, u64, u64, String) {
    let h = |n: &str| {
        r.header(n)
            .unwrap_or_else(|| panic!("{n} missing"))
            .to_string()
    };
    let returned: u64 = h("x-tablestore-returned").parse().expect("number");
    assert_eq!(
        returned as usize,
        r.json()["value"].as_array().map_or(0, Vec::len),
        "x-tablestore-returned counts the page"
    );
    (
        h("x-tablestore-class"),
        h("x-tablestore-examined").parse().expect("number"),
        returned,
        h("x-tablestore-pages"),
    )
}

/// Class, examined, returned and pages a query shape should report.
type Expected = (&'static str, u64, u64, &'static str);

#[tokio::test]
async fn the_guides_query_shapes_on_a_hundred_thousand_entities() {
    let t = TestServer::start_with_store(hundred_thousand().await).await;
    let cases: [(&str, &str, Expected); 7] = [
        (
            "PartitionKey eq 'p050' and RowKey eq 'r0500'",
            "",
            ("point query", 1, 1, "1"),
        ),
        (
            "PartitionKey eq 'p077' and RowKey ge 'r0100' and RowKey lt 'r0200'",
            "",
            ("range query", 100, 100, "1"),
        ),
        (
            "PartitionKey eq 'p010' and LastName eq 'n07'",
            "",
            ("partition scan", 1000, 20, "1"),
        ),
        (
            "PartitionKey eq 'p001' and (RowKey eq 'r0001' or RowKey eq 'r0999')",
            "",
            ("union of key ranges", 2, 2, "1"),
        ),
        // 2,000 matches over the whole table (20 per partition): the first page stops at
        // the 1,000th match (row r0957 of p049) after 49,958 entities plus the look-ahead;
        // the second at p099's r0957, whose look-ahead r0958 leaves a third, empty page.
        ("LastName eq 'n07'", "", ("table scan", 49_959, 1000, "3")),
        // No filter, `$top=5`: 20,000 pages, more than the header counts.
        ("", "$top=5", ("table scan", 6, 5, "1000+")),
        (
            "PartitionKey eq 'p003' and PartitionKey eq 'p004'",
            "",
            ("empty", 0, 0, "1"),
        ),
    ];
    for (filter, extra, (class, examined, returned, pages)) in cases {
        let r = query(&t, filter, extra).await;
        assert_eq!(
            verdict(&r),
            (class.to_string(), examined, returned, pages.to_string()),
            "{filter} {extra}"
        );
    }
    // Without the opt-in header nothing extra is sent.
    let r = t
        .send(
            "GET",
            "/people()?$filter=PartitionKey%20eq%20'p050'",
            &[],
            None,
        )
        .await;
    assert!(r.header("x-tablestore-class").is_none());
    assert!(r.header("x-tablestore-pages").is_none());
}

/// GET an insight path signed by `signer` (or unsigned).
async fn get(t: &TestServer, path: &str, signer: Option<&Signer>) -> Reply {
    t.exchange(get_request(&t.client, &t.server.endpoint(), path, signer))
        .await
}

/// [`get`] from any server at `endpoint`.
async fn get_at(
    http: &reqwest::Client,
    endpoint: &str,
    path: &str,
    signer: Option<&Signer>,
) -> Reply {
    let resp = get_request(http, endpoint, path, signer)
        .send()
        .await
        .expect("request");
    Reply::read(resp).await.expect("body")
}

/// A GET of `path` at `endpoint`, signed by `signer` (or unsigned).
fn get_request(
    http: &reqwest::Client,
    endpoint: &str,
    path: &str,
    signer: Option<&Signer>,
) -> reqwest::RequestBuilder {
    let url = format!("{endpoint}{path}");
    let mut req = http.get(&url);
    if let Some(s) = signer {
        let parsed = reqwest::Url::parse(&url).expect("url");
        let (date, authorization) = s.sign(parsed.path(), parsed.query());
        req = req
            .header("x-ms-date", date)
            .header("Authorization", authorization);
    }
    req
}

#[tokio::test]
async fn insight_and_metrics_need_the_account_key() {
    let t = TestServer::start_with_store(hundred_thousand().await).await;
    // A table scan that returns 100 of 100,000 entities: the table-scan advice. Each page of it
    // counts as one query and one request.
    let pages = query_to_the_end(&t, "LastName eq 'n07' and Amount lt 50").await;
    let dev = Signer::dev();

    for path in ["/_tablestore/insight", "/metrics"] {
        let r = get(&t, path, None).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{path}: {}", r.text());
        let wrong = Signer::new(DEV_ACCOUNT, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
        let r = get(&t, path, Some(&wrong)).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{path}: {}", r.text());
        assert!(r.text().contains("AuthenticationFailed"), "{}", r.text());
    }

    let r = get(&t, "/_tablestore/insight?settle", Some(&dev)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let v: Value = r.json();
    let table = &v["accounts"][DEV_ACCOUNT]["tables"][0];
    assert_eq!(table["name"], "people");
    assert_eq!(table["queries"]["table scan"], pages);
    assert_eq!(table["examined"], 100_000);
    assert_eq!(table["returned"], 100);
    let advice = table["advice"].as_array().expect("advice list");
    assert_eq!(advice.len(), 1, "{advice:?}");
    assert_eq!(advice[0]["id"], "table-scan");
    assert_eq!(advice[0]["guide_page"], "Table design patterns");
    assert!(advice[0]["example"]
        .as_str()
        .is_some_and(|e| e.contains("Amount, LastName")));

    let r = get(&t, "/metrics", Some(&dev)).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r
        .header("content-type")
        .is_some_and(|c| c.starts_with("text/plain; version=0.0.4")));
    let text = r.text();
    for line in [
        format!("tablestore_queries_total{{class=\"table_scan\"}} {pages}"),
        "tablestore_entities_examined_total 100000".to_string(),
        "tablestore_entities_returned_total 100".to_string(),
        "tablestore_advice_active 1".to_string(),
        format!(
            "tablestore_requests_total{{operation=\"QueryEntities\",status_class=\"2xx\"}} {pages}"
        ),
        format!(
            "tablestore_request_duration_seconds_bucket{{operation=\"QueryEntities\",le=\"+Inf\"}} {pages}"
        ),
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from\n{text}"
        );
    }
}

#[tokio::test]
async fn insight_is_open_with_auth_disabled_and_the_access_log_shows_the_class() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ChildServer::start(
        dir.path(),
        &["--disable-auth", "--in-memory", "--log-level", "info"],
    );
    let client = Client::new(&server.endpoint(), Signer::dev());
    client.create_table("logged").await;
    for i in 0..3 {
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"{i}","Kind":"x"}}"#);
        let r = client
            .send("POST", "/logged", &[], Some(body.into_bytes()))
            .await
            .expect("insert");
        assert_eq!(r.status, StatusCode::CREATED);
    }
    let r = client
        .send("GET", "/logged()?$filter=Kind%20eq%20'x'", &[], None)
        .await
        .expect("query");
    assert_eq!(r.status, StatusCode::OK);
    let http = reqwest::Client::new();
    let r = http
        .get(format!("{}/_tablestore/insight?settle", server.endpoint()))
        .send()
        .await
        .expect("insight");
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = serde_json::from_slice(&r.bytes().await.expect("body")).expect("json");
    let table = &v["accounts"][DEV_ACCOUNT]["tables"][0];
    assert_eq!(table["name"], "logged");
    assert_eq!(table["inserts"], 3);
    assert_eq!(table["hot_partitions"][0]["partition_key"], "p");
    let mut log = String::new();
    for _ in 0..50 {
        log.push_str(&server.log_so_far());
        if log.contains("examined=3") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let line = log
        .lines()
        .find(|l| l.contains("/logged()") && l.contains("class="))
        .unwrap_or_else(|| panic!("no query line with a class in\n{log}"));
    assert!(
        line.contains("class=table scan")
            && line.contains("examined=3")
            && line.contains("returned=3"),
        "{line}"
    );
}

/// On a loopback port: the client follows the console's redirect as a browser does.
#[tokio::test]
async fn the_console_is_served_with_its_safety_headers_and_turns_off() {
    let t = TestServer::listening().await;
    let r = get(&t, "/_tablestore/console/", None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.text().contains("<script src=\"app.js\" defer>"));
    assert_eq!(r.header("x-frame-options"), Some("DENY"));
    assert!(r
        .header("content-security-policy")
        .is_some_and(|c| c.contains("connect-src 'self'")));
    assert!(r.header("access-control-allow-origin").is_none());
    let r = get(&t, "/_tablestore/console/config.json", None).await;
    assert_eq!(r.json()["auth"], true);
    assert_eq!(r.json()["accounts"][0], DEV_ACCOUNT);
    // The development account's published key, which the page fills in (it asked for it).
    assert_eq!(r.json()["published_keys"][DEV_ACCOUNT], DEV_ACCOUNT_KEY);
    let r = get(&t, "/_tablestore/console", None).await;
    assert_eq!(r.status, StatusCode::OK, "the redirect is followed");
    // The icon: the page links it, and a browser's own `/favicon.ico` gets it too (it was a
    // 403 AuthenticationFailed), while an SDK-shaped request keeps the service's answer.
    for path in ["/_tablestore/console/favicon.svg", "/favicon.ico"] {
        let r = get(&t, path, None).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("image/svg+xml"), "{path}");
        assert!(r.text().starts_with("<svg"), "{path}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    }
    let r = get(&t, "/favicon.ico", Some(&Signer::dev())).await;
    assert_ne!(r.status, StatusCode::OK);
    assert_ne!(r.header("content-type"), Some("image/svg+xml"));

    // An account with a key of its own: nothing is filled in.
    let mut config = tablestore::config::Config::for_tests();
    config.accounts_env = Some("devstoreaccount1:a2V5MQ==".into());
    let own_key = TestServer::start_with(config).await;
    let r = get(&own_key, "/_tablestore/console/config.json", None).await;
    assert_eq!(r.json()["published_keys"], serde_json::json!({}));

    let mut config = tablestore::config::Config::for_tests();
    config.no_console = true;
    let off = TestServer::start_with(config).await;
    let r = get(&off, "/_tablestore/console/", None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(r.text().contains("--no-console"), "{}", r.text());
    let r = get(&off, "/favicon.ico", None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text());
}

/// `/metrics` and the insight document's `store` member: what the store holds.
async fn store_figures(endpoint: &str) -> (u64, u64, u64, Value) {
    let http = reqwest::Client::new();
    let text = http
        .get(format!("{endpoint}/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("body");
    let metric = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing from\n{text}"))
    };
    let insight = http
        .get(format!("{endpoint}/_tablestore/insight"))
        .send()
        .await
        .expect("insight")
        .bytes()
        .await
        .expect("body");
    let insight: Value = serde_json::from_slice(&insight).expect("json");
    (
        metric("tablestore_store_entities"),
        metric("tablestore_store_logical_bytes"),
        metric("tablestore_store_size_bytes"),
        insight["store"].clone(),
    )
}

#[tokio::test]
async fn the_store_size_is_reported_and_survives_restarts_and_crashes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ChildServer::start(dir.path(), &["--disable-auth"]);
    let client = Client::new(&server.endpoint(), Signer::dev());
    client.create_table("sized").await;
    let entity = |r: u32, text: &str| {
        format!(r#"{{"PartitionKey":"p","RowKey":"{r:03}","Text":"{text}"}}"#).into_bytes()
    };
    for r in 0..20 {
        let reply = client
            .send("POST", "/sized", &[], Some(entity(r, "short")))
            .await
            .expect("insert");
        assert_eq!(reply.status, StatusCode::CREATED);
    }
    let (_, small, _, _) = store_figures(&server.endpoint()).await;
    for r in 0..5 {
        let path = format!("/sized(PartitionKey='p',RowKey='{r:03}')");
        let reply = client
            .send("PUT", &path, &[], Some(entity(r, &"long ".repeat(100))))
            .await
            .expect("replace");
        assert_eq!(reply.status, StatusCode::NO_CONTENT);
    }
    for r in 17..20 {
        let path = format!("/sized(PartitionKey='p',RowKey='{r:03}')");
        let reply = client
            .send("DELETE", &path, &[("If-Match", "*")], None)
            .await
            .expect("delete");
        assert_eq!(reply.status, StatusCode::NO_CONTENT);
    }
    let (entities, logical, disk, store) = store_figures(&server.endpoint()).await;
    assert_eq!(entities, 17);
    // Five entities grew by ~490 bytes each and three went away.
    assert!(logical > small + 5 * 450 - 3 * (small / 20) && logical < small + 5 * 600);
    assert!(disk > 0);
    assert_eq!(store["entities"], 17);
    assert_eq!(store["logicalBytes"], logical);
    assert!(
        store["diskBytes"].as_u64().is_some_and(|d| d > 0),
        "{store}"
    );
    assert!(
        store["diskToLogical"].as_f64().is_some_and(|r| r > 0.0),
        "{store}"
    );

    // A clean stop records the totals; the next start reads them back.
    assert!(server.terminate().success());
    let server = ChildServer::start(dir.path(), &["--disable-auth"]);
    let (e, l, _, _) = store_figures(&server.endpoint()).await;
    assert_eq!((e, l), (entities, logical));

    // After kill -9 the totals are counted again from the data.
    let client = Client::new(&server.endpoint(), Signer::dev());
    for r in 100..105 {
        let reply = client
            .send("POST", "/sized", &[], Some(entity(r, "short")))
            .await
            .expect("insert");
        assert_eq!(reply.status, StatusCode::CREATED);
    }
    let (entities, logical, _, _) = store_figures(&server.endpoint()).await;
    assert_eq!(entities, 22);
    server.kill9();
    let server = ChildServer::start(dir.path(), &["--disable-auth"]);
    let (e, l, _, _) = store_figures(&server.endpoint()).await;
    assert_eq!((e, l), (entities, logical));
}

/// The advice a server has raised, account and table rules alike, as `table: rule` lines.
fn all_advice(insight: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (name, account) in insight["accounts"].as_object().expect("accounts") {
        for a in account["advice"].as_array().expect("account advice") {
            out.push(format!("{name}: {} ({})", a["id"], a["example"]));
        }
        for t in account["tables"].as_array().expect("tables") {
            for a in t["advice"].as_array().expect("table advice") {
                out.push(format!("{}: {} ({})", t["name"], a["id"], a["example"]));
            }
        }
    }
    out
}

/// Follows a query's continuation to its end; returns the entities it returned.
async fn read_to_the_end(client: &Client, table: &str, filter: &str) -> usize {
    let mut extra = String::new();
    let mut seen = 0;
    loop {
        let path = format!("/{table}()?$filter={}{extra}", enc(filter));
        let r = client.send("GET", &path, &[], None).await.expect("query");
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        seen += r.json()["value"].as_array().map_or(0, Vec::len);
        match continuation(&r) {
            Some(next) => extra = next,
            None => return seen,
        }
    }
}

/// Posts change sets of 100 inserts: `batches` per partition, round-robin over `partitions`.
async fn batches_of_100(client: &Client, table: &str, partitions: &[&str], batches: u32) {
    for b in 0..batches {
        for pk in partitions {
            let mut batch = common::batch::BatchBody::new(&client.account_url());
            for r in 0..100 {
                let body = format!(
                    r#"{{"PartitionKey":"{pk}","RowKey":"{:06}","Kind":"event","N":{r}}}"#,
                    b * 100 + r
                );
                batch.op("POST", &format!("/{table}"), &[], Some(&body));
            }
            let r = client.send_batch(&batch).await.expect("batch");
            assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
            assert!(!r.text().contains("HTTP/1.1 4"), "{}", r.text());
        }
    }
}

/// The precision suite over a real server: an import, a seed, batches of 100 into a few
/// partitions, reads of a large partition and an application's ordinary mix of calls raise no
/// advice at all, while the statistics show the traffic was counted. (Each rule's own
/// scenario, with exact rates, is in `src/insight/tests.rs`; the table-scan advice over HTTP
/// is `insight_and_metrics_need_the_account_key`.)
#[tokio::test]
async fn ordinary_workloads_raise_no_advice() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A 2,000-entity export (20 partitions of 100, key order) to import, and a seed folder.
    let mut export = String::new();
    for p in 0..20 {
        for r in 0..100 {
            export.push_str(&format!(
                "{{\"PartitionKey\":\"dept{p:02}\",\"RowKey\":\"{r:04}\",\"Name\":\"n{r}\",\"Age\":{r}}}\n"
            ));
        }
    }
    let file = dir.path().join("people.jsonl");
    std::fs::write(&file, export).expect("export file");
    let seed = dir.path().join("seed");
    std::fs::create_dir(&seed).expect("seed folder");
    let mut orders = String::new();
    for c in 0..10 {
        for o in 0..50 {
            orders.push_str(&format!(
                "{{\"PartitionKey\":\"customer{c}\",\"RowKey\":\"{o:05}\",\"Total\":{}}}\n",
                o * 3
            ));
        }
    }
    std::fs::write(seed.join("orders.jsonl"), orders).expect("seed file");

    let data = dir.path().join("data");
    let seed_arg = seed.to_string_lossy().to_string();
    let server = ChildServer::start(&data, &["--seed", &seed_arg]);
    let client = Client::new(&server.endpoint(), Signer::dev());

    // `tablestore import` over HTTP: change sets of 100, one partition after the other.
    let out = std::process::Command::new(common::child::binary())
        .args(["import", "-q", "--url", &client.account_url()])
        .args(["--account-key", tablestore::config::DEV_ACCOUNT_KEY])
        .arg(&file)
        .output()
        .expect("run tablestore import");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Full change sets round-robin into a few partitions.
    client.create_table("events").await;
    batches_of_100(&client, "events", &["tenant1", "tenant2", "tenant3"], 4).await;

    // A large partition, read whole (page by page) twice, and by key.
    client.create_table("big").await;
    batches_of_100(&client, "big", &["all"], 30).await;
    for _ in 0..2 {
        assert_eq!(
            read_to_the_end(&client, "big", "PartitionKey eq 'all'").await,
            3000
        );
    }
    for r in (0..3000).step_by(100) {
        let path = format!("/big(PartitionKey='all',RowKey='{r:06}')");
        let reply = client.send("GET", &path, &[], None).await.expect("read");
        assert_eq!(reply.status, StatusCode::OK);
    }

    // An application's ordinary calls on the seeded and imported tables.
    for filter in [
        "PartitionKey eq 'customer3' and RowKey eq '00007'",
        "PartitionKey eq 'customer4' and RowKey ge '00010' and RowKey lt '00020'",
        "PartitionKey eq 'customer5' and Total gt 20",
        "PartitionKey eq 'dept07'",
        "Age gt 10",
    ] {
        let table = if filter.contains("customer") {
            "orders"
        } else {
            "people"
        };
        assert!(
            read_to_the_end(&client, table, filter).await > 0,
            "{filter}"
        );
    }
    for r in 0..20 {
        let path = format!("/orders(PartitionKey='customer1',RowKey='{r:05}')");
        let body = format!(r#"{{"Total":{r},"Paid":true}}"#).into_bytes();
        let reply = client
            .send("MERGE", &path, &[("If-Match", "*")], Some(body))
            .await
            .expect("merge");
        assert_eq!(reply.status, StatusCode::NO_CONTENT, "{}", reply.text());
    }
    let reply = client
        .send("GET", "/Tables", &[], None)
        .await
        .expect("tables");
    assert_eq!(reply.status, StatusCode::OK);

    let signer = Signer::dev();
    let path = "/_tablestore/insight?settle";
    let insight = get_at(&client.http, &server.endpoint(), path, Some(&signer))
        .await
        .json();
    let tables = insight["accounts"][DEV_ACCOUNT]["tables"]
        .as_array()
        .expect("tables");
    let table = |name: &str| {
        tables
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} not counted: {insight}"))
    };
    // The traffic was seen: the import's 2,000 inserts in change sets of 100, the events'
    // and the large partition's change sets, the reads.
    assert_eq!(table("people")["inserts"], 2000);
    assert_eq!(table("people")["batch_operations"]["max"], 100);
    assert_eq!(table("events")["inserts"], 1200);
    assert_eq!(table("big")["returned"].as_u64(), Some(6000));
    assert!(table("orders")["queries"]["point query"].as_u64() >= Some(1));
    assert_eq!(all_advice(&insight), Vec::<String>::new(), "{insight:#}");
}

/// The portability rule over HTTP: "the latest 3" of a partition read with `$top=3` five
/// times (each a first page cut in key order) raises `portability` with the Cosmos DB for
/// Table evidence, once, in `/_tablestore/insight` and `/metrics`; the same partition read
/// whole, and by key, does not count towards it.
#[tokio::test]
async fn top_in_key_order_raises_the_portability_advice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = ChildServer::start(&dir.path().join("data"), &[]);
    let client = Client::new(&server.endpoint(), Signer::dev());
    client.create_table("log").await;
    client.create_table("plain").await;
    for table in ["log", "plain"] {
        batches_of_100(&client, table, &["app"], 1).await;
    }
    let latest = format!("/log()?$filter={}&$top=3", enc("PartitionKey eq 'app'"));
    for _ in 0..5 {
        let r = client.send("GET", &latest, &[], None).await.expect("query");
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        assert_eq!(r.json()["value"].as_array().map(Vec::len), Some(3));
        assert!(continuation(&r).is_some(), "$top cut the page");
    }
    for _ in 0..5 {
        assert_eq!(
            read_to_the_end(&client, "plain", "PartitionKey eq 'app'").await,
            100
        );
        let path = format!(
            "/plain()?$filter={}&$top=3",
            enc("PartitionKey eq 'app' and RowKey eq '000007'")
        );
        let r = client.send("GET", &path, &[], None).await.expect("point");
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    }

    let signer = Signer::dev();
    let insight = get_at(
        &client.http,
        &server.endpoint(),
        "/_tablestore/insight?settle",
        Some(&signer),
    )
    .await
    .json();
    let advice = all_advice(&insight);
    assert_eq!(advice.len(), 1, "{advice:?}");
    assert!(
        advice[0].starts_with("\"log\": \"portability\""),
        "{advice:?}"
    );
    let tables = insight["accounts"][DEV_ACCOUNT]["tables"]
        .as_array()
        .expect("tables");
    let log = tables.iter().find(|t| t["name"] == "log").expect("log");
    let rule = &log["advice"][0];
    assert_eq!(rule["count"], 1);
    assert!(rule["guide_section"]
        .as_str()
        .is_some_and(|s| s.contains("aren't sorted in partition key/row key order")));
    assert!(rule["problem"]
        .as_str()
        .is_some_and(|s| s.contains("Cosmos DB for Table would answer them differently")));

    let metrics = get_at(&client.http, &server.endpoint(), "/metrics", Some(&signer)).await;
    assert!(
        metrics
            .text()
            .lines()
            .any(|l| l == "tablestore_advice_active 1"),
        "{}",
        metrics.text()
    );
}
