//! Test state on a running server (issue #42, docs/test-isolation.md): reset, snapshots and
//! accounts on demand over `/_tablestore/…`, who may call them, their answers to bad input
//! (Azure's error shape), and their atomicity for concurrent requests. In process where the
//! socket is not the subject; the crash and disk-full cases run the binary (`state_faults`).

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::batch::BatchBody;
use common::child::{Client, Signer};
use common::{request, Signing, TestServer};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tablestore::config::{Config, FlavorArg};

/// A control call (`path` from the server's root), signed as `signing` says.
async fn control(
    t: &TestServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    signing: Signing<'_>,
) -> common::Reply {
    let url = format!("{}{path}", t.server.endpoint());
    let req = request(&t.client, method, &url, headers, None, signing);
    t.exchange(req).await
}

async fn dev(t: &TestServer, method: &str, path: &str) -> common::Reply {
    control(t, method, path, &[], Signing::Dev).await
}

async fn table_names(client: &Client) -> Vec<String> {
    let r = client.call("GET", "/Tables", &[], None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    r.json()["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["TableName"].as_str().unwrap().to_string())
        .collect()
}

async fn rows(client: &Client, table: &str) -> Vec<Value> {
    let r = client.call("GET", &format!("/{table}()"), &[], None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    r.json()["value"].as_array().unwrap().clone()
}

async fn fill(client: &Client, table: &str, n: usize) {
    client.create_table(table).await;
    for i in 0..n {
        client
            .insert(
                table,
                &json!({"PartitionKey": "p", "RowKey": format!("{i:04}"), "n": i}),
            )
            .await;
    }
}

fn assert_error(r: &common::Reply, status: u16, code: &str, says: &str) {
    assert_eq!(r.status.as_u16(), status, "{}", r.text());
    assert_eq!(r.error_code(), code, "{}", r.text());
    let message = r.json()["odata.error"]["message"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains(says), "{message:?} should say {says:?}");
}

#[tokio::test]
async fn reset_brings_the_start_up_state_back() {
    // The server starts holding one table (as after --seed); tests add more and change it.
    let store = tablestore::store::open::open(&tablestore::store::open::StoreOptions::Memory {
        durability: Default::default(),
    })
    .await
    .unwrap();
    let seeded = TestServer::start_with_store(store).await;
    let dev_client = seeded.dev_client();
    // Filled after start-up: not part of the start-up state.
    fill(&dev_client, "later", 3).await;
    let r = dev(&seeded, "POST", "/_tablestore/reset").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.json()["scope"], "server");
    assert_eq!(r.json()["tablesRemoved"], 1);
    assert!(table_names(&dev_client).await.is_empty());
}

#[tokio::test]
async fn reset_of_a_start_up_seed_keeps_the_seed() {
    // A store filled before the server starts is its start-up state.
    let store = tablestore::store::open::open(&tablestore::store::open::StoreOptions::Memory {
        durability: Default::default(),
    })
    .await
    .unwrap();
    {
        let t = TestServer::start_with_store(Arc::clone(&store)).await;
        fill(&t.dev_client(), "seeded", 2).await;
        t.server.shutdown().await.unwrap();
    }
    let t = TestServer::start_with_store(store).await;
    let c = t.dev_client();
    c.insert("seeded", &json!({"PartitionKey": "p", "RowKey": "extra"}))
        .await;
    fill(&c, "scratch", 1).await;
    let r = dev(&t, "POST", "/_tablestore/reset").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(table_names(&c).await, vec!["seeded"]);
    assert_eq!(rows(&c, "seeded").await.len(), 2);
}

#[tokio::test]
async fn snapshots_save_restore_list_and_delete() {
    let t = TestServer::start().await;
    let c = t.dev_client();
    fill(&c, "people", 5).await;
    let r = dev(&t, "PUT", "/_tablestore/snapshots/five").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    assert_eq!(r.json()["entities"], 5);
    assert_eq!(r.json()["scope"], "server");

    c.insert("people", &json!({"PartitionKey": "p", "RowKey": "new"}))
        .await;
    c.call(
        "DELETE",
        "/people(PartitionKey='p',RowKey='0000')",
        &[("If-Match", "*")],
        None,
    )
    .await;
    fill(&c, "other", 1).await;

    let r = dev(&t, "POST", "/_tablestore/snapshots/five/restore").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.json()["entities"], 5);
    assert_eq!(table_names(&c).await, vec!["people"]);
    let keys: Vec<String> = rows(&c, "people")
        .await
        .iter()
        .map(|e| e["RowKey"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys, vec!["0000", "0001", "0002", "0003", "0004"]);
    // Restored entities keep their ETags: a conditional update with the old ETag works.
    let list = dev(&t, "GET", "/_tablestore/snapshots").await;
    assert_eq!(list.json()["kept"], "memory");
    assert_eq!(list.json()["snapshots"][0]["name"], "five");
    let one = dev(&t, "GET", "/_tablestore/snapshots/five").await;
    assert_eq!(one.json()["tables"], 1);
    // A restore can be repeated: the snapshot is not used up.
    c.insert("people", &json!({"PartitionKey": "p", "RowKey": "again"}))
        .await;
    let r = dev(&t, "POST", "/_tablestore/snapshots/five/restore").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(rows(&c, "people").await.len(), 5);

    let r = dev(&t, "DELETE", "/_tablestore/snapshots/five").await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = dev(&t, "POST", "/_tablestore/snapshots/five/restore").await;
    assert_error(&r, 404, "ResourceNotFound", "no snapshot named \"five\"");
}

#[tokio::test]
async fn bad_names_and_unknown_things_are_answered_in_azures_shape() {
    let t = TestServer::start().await;
    for path in [
        "/_tablestore/snapshots/..%2Fetc",
        "/_tablestore/snapshots/a%2Fb",
        "/_tablestore/snapshots/.hidden",
        "/_tablestore/snapshots/a%5Cb",
    ] {
        let r = dev(&t, "PUT", path).await;
        assert_error(&r, 400, "InvalidInput", "path characters");
    }
    let r = dev(&t, "PUT", "/_tablestore/snapshots/a%20b").await;
    assert_error(&r, 400, "InvalidInput", "letters, digits");
    let r = dev(&t, "POST", "/_tablestore/snapshots/nothing/restore").await;
    assert_error(&r, 404, "ResourceNotFound", "no snapshot named");
    let r = dev(&t, "DELETE", "/_tablestore/snapshots/nothing").await;
    assert_error(&r, 404, "ResourceNotFound", "no snapshot named");
    let r = dev(&t, "POST", "/_tablestore/reset?account=nosuch").await;
    assert_error(&r, 404, "ResourceNotFound", "no account named \"nosuch\"");
    let r = dev(&t, "DELETE", "/_tablestore/accounts/nosuch").await;
    assert_error(&r, 404, "ResourceNotFound", "no account named");
    let r = dev(&t, "GET", "/_tablestore/reset").await;
    assert_error(&r, 405, "UnsupportedHttpVerb", "");
    let r = dev(&t, "POST", "/_tablestore/accounts?name=Bad-Name").await;
    assert_error(&r, 400, "InvalidInput", "3 to 24 lower-case letters");
    let r = dev(&t, "DELETE", "/_tablestore/accounts/devstoreaccount1").await;
    assert_error(&r, 400, "InvalidInput", "given at start-up");
    // Azure's JSON error shape, whatever the request's Accept asked for.
    assert!(r.json()["odata.error"]["code"].is_string(), "{}", r.text());
}

async fn the_calls_are_never_open_by_default(flavor: FlavorArg) {
    let args = [
        "tablestore",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--inMemoryPersistence",
        "--admin-token",
        "s3cret-token",
    ];
    let mut config = Config::try_parse_args(args, |_| None).unwrap();
    config.flavor = flavor;
    let t = TestServer::start_with(config).await;
    // Unsigned: refused.
    let r = control(&t, "POST", "/_tablestore/reset", &[], Signing::None).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.text());
    // A wrong key: refused.
    let stranger = Signer::new("devstoreaccount1", "a2V5");
    let r = control(
        &t,
        "POST",
        "/_tablestore/reset",
        &[],
        Signing::As(&stranger),
    )
    .await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.text());
    // A wrong token: refused; the right one opens the calls.
    let wrong = [("Authorization", "Bearer nope")];
    let r = control(&t, "POST", "/_tablestore/reset", &wrong, Signing::None).await;
    assert_error(&r, 403, "AuthenticationFailed", "--admin-token");
    let right = [("Authorization", "Bearer s3cret-token")];
    let r = control(&t, "POST", "/_tablestore/reset", &right, Signing::None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    // The token opens the state calls only, not the tables.
    let url = format!("{}/Tables", t.base());
    let r = t
        .exchange(
            t.client
                .get(url)
                .header("Authorization", "Bearer s3cret-token"),
        )
        .await;
    assert_ne!(r.status, StatusCode::OK);
    // A SAS does not grant them.
    let sas = Signer::dev().account_sas_all();
    let r = control(
        &t,
        "POST",
        &format!("/_tablestore/reset?{sas}"),
        &[],
        Signing::None,
    )
    .await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.text());
}

#[tokio::test]
async fn accounts_on_demand_for_parallel_workers() {
    let t = TestServer::start().await;
    let r = dev(&t, "POST", "/_tablestore/accounts?name=worker1").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let created = r.json();
    assert_eq!(created["name"], "worker1");
    let cs = created["connectionString"].as_str().unwrap();
    assert!(cs.contains("AccountName=worker1;"), "{cs}");
    assert!(
        cs.contains(&format!("TableEndpoint={}/worker1", t.server.endpoint())),
        "{cs}"
    );
    let key = created["key"].as_str().unwrap();
    let worker = t.client_as(Signer::new("worker1", key));
    // Its first request is answered at once, with its own data only.
    fill(&worker, "mine", 2).await;
    assert!(table_names(&t.dev_client()).await.is_empty());
    // A random name when none is given; a taken name is a conflict.
    let r = dev(&t, "POST", "/_tablestore/accounts").await;
    assert_eq!(r.status, StatusCode::CREATED);
    let other = r.json()["name"].as_str().unwrap().to_string();
    assert!(other.starts_with("acct"), "{other}");
    let r = dev(&t, "POST", "/_tablestore/accounts?name=worker1").await;
    assert_error(
        &r,
        409,
        "AccountAlreadyExists",
        "already has an account named worker1",
    );

    // The worker resets its own account with its own key, and nothing else.
    let w = Signer::new("worker1", key);
    let r = control(
        &t,
        "POST",
        "/_tablestore/reset?account=worker1",
        &[],
        Signing::As(&w),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert!(table_names(&worker).await.is_empty());
    let r = control(&t, "POST", "/_tablestore/reset", &[], Signing::As(&w)).await;
    assert_error(&r, 403, "AuthorizationFailure", "add ?account=worker1");
    let path = format!("/_tablestore/reset?account={other}");
    let r = control(&t, "POST", &path, &[], Signing::As(&w)).await;
    assert_eq!(r.status.as_u16(), 403);
    // It may snapshot its own account.
    fill(&worker, "again", 1).await;
    let r = control(
        &t,
        "PUT",
        "/_tablestore/snapshots/w1?account=worker1",
        &[],
        Signing::As(&w),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    assert_eq!(r.json()["account"], "worker1");
    let list = control(&t, "GET", "/_tablestore/accounts", &[], Signing::As(&w)).await;
    assert_eq!(list.json()["accounts"].as_array().unwrap().len(), 1);

    // Deleting it removes its data and its key stops working; start-up accounts stay.
    let r = control(
        &t,
        "DELETE",
        "/_tablestore/accounts/worker1",
        &[],
        Signing::As(&w),
    )
    .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    let r = worker.send("GET", "/Tables", &[], None).await.unwrap();
    assert_eq!(r.status.as_u16(), 403, "{}", r.text());
    // A new account of the same name starts empty.
    let r = dev(&t, "POST", "/_tablestore/accounts?name=worker1").await;
    let key = r.json()["key"].as_str().unwrap().to_string();
    let worker = t.client_as(Signer::new("worker1", &key));
    assert!(table_names(&worker).await.is_empty());
    let list = dev(&t, "GET", "/_tablestore/accounts").await.json();
    let names: Vec<&str> = list["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"devstoreaccount1") && names.contains(&"worker1"));
}

#[tokio::test]
async fn an_account_restores_its_part_of_a_server_snapshot() {
    let t = TestServer::start().await;
    let c = t.dev_client();
    fill(&c, "mine", 2).await;
    let r = dev(&t, "POST", "/_tablestore/accounts?name=other").await;
    let other = t.client_as(Signer::new("other", r.json()["key"].as_str().unwrap()));
    fill(&other, "theirs", 1).await;
    assert_eq!(
        dev(&t, "PUT", "/_tablestore/snapshots/all").await.status,
        StatusCode::CREATED
    );
    fill(&c, "more", 1).await;
    fill(&other, "more", 1).await;
    let r = dev(
        &t,
        "POST",
        "/_tablestore/snapshots/all/restore?account=devstoreaccount1",
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(table_names(&c).await, vec!["mine"]);
    // The other account was not touched.
    assert_eq!(table_names(&other).await, vec!["more", "theirs"]);
}

#[tokio::test]
async fn insight_forgets_what_a_reset_removed() {
    let t = TestServer::start().await;
    let c = t.dev_client();
    fill(&c, "watched", 3).await;
    rows(&c, "watched").await;
    let before = dev(&t, "GET", "/_tablestore/insight?settle").await;
    assert!(before.text().contains("watched"), "{}", before.text());
    assert_eq!(
        dev(&t, "POST", "/_tablestore/reset").await.status,
        StatusCode::OK
    );
    let after = dev(&t, "GET", "/_tablestore/insight?settle").await;
    assert!(!after.text().contains("watched"), "{}", after.text());
}

#[tokio::test]
async fn on_disk_snapshots_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    // A data folder whatever store the other tests run on.
    let location = dir.path().to_str().unwrap();
    let args = [
        "tablestore",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--location",
        location,
    ];
    let config = Config::try_parse_args(args, |_| None).unwrap();
    let t = TestServer::start_with(config.clone()).await;
    fill(&t.dev_client(), "kept", 4).await;
    let r = dev(&t, "PUT", "/_tablestore/snapshots/base").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    assert!(r.json()["fileBytes"].as_u64().unwrap() > 0);
    t.server.shutdown().await.unwrap();
    assert!(dir
        .path()
        .join("__tablestore_snapshots__/base.snapshot")
        .is_file());

    let t = TestServer::start_with(config).await;
    let c = t.dev_client();
    assert_eq!(
        dev(&t, "GET", "/_tablestore/snapshots").await.json()["kept"],
        "disk"
    );
    assert_eq!(
        dev(&t, "POST", "/_tablestore/reset").await.status,
        StatusCode::OK
    );
    assert!(table_names(&c).await.is_empty());
    let r = dev(&t, "POST", "/_tablestore/snapshots/base/restore").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(rows(&c, "kept").await.len(), 4);
}

/// Change sets and queries run while restores and resets go on: every query sees each
/// change set whole (both entities of a partition carry the same number, or neither exists),
/// and a write acknowledged after the last restore is there at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restores_are_atomic_for_concurrent_requests() {
    let t = TestServer::start().await;
    let c = t.dev_client();
    c.create_table("pairs").await;
    assert_eq!(
        dev(&t, "PUT", "/_tablestore/snapshots/start").await.status,
        StatusCode::CREATED
    );
    let stop = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for w in 0..3 {
        let (c, stop) = (c.clone(), Arc::clone(&stop));
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                let mut batch = BatchBody::new(&c.account_url());
                for rk in ["a", "b"] {
                    let path = format!("/pairs(PartitionKey='w{w}',RowKey='{rk}')");
                    let body = json!({"n": n}).to_string();
                    batch.op("PUT", &path, &[], Some(&body));
                }
                let r = c.send_batch(&batch).await.unwrap();
                // The table may be gone for a moment (reset): a clear refusal, never a tear.
                assert!(
                    r.status.as_u16() == 202 || r.status.as_u16() == 404,
                    "{}",
                    r.text()
                );
            }
        }));
    }
    for w in 0..3 {
        let (c, stop, checked) = (c.clone(), Arc::clone(&stop), Arc::clone(&checked));
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let path = format!("/pairs()?$filter=PartitionKey%20eq%20'w{w}'");
                let r = c.send("GET", &path, &[], None).await.unwrap();
                if r.status.as_u16() == 404 {
                    continue;
                }
                assert_eq!(r.status.as_u16(), 200, "{}", r.text());
                let rows = r.json()["value"].as_array().unwrap().clone();
                let ns: Vec<&Value> = rows.iter().map(|e| &e["n"]).collect();
                assert!(
                    ns.is_empty() || (ns.len() == 2 && ns[0] == ns[1]),
                    "a torn change set: {ns:?}"
                );
                checked.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    for i in 0..20 {
        let path = if i % 3 == 0 {
            "/_tablestore/reset"
        } else {
            "/_tablestore/snapshots/start/restore"
        };
        let r = dev(&t, "POST", path).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        if i % 3 == 0 {
            c.create_table("pairs").await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    stop.store(true, Ordering::SeqCst);
    for task in tasks {
        task.await.unwrap();
    }
    assert!(checked.load(Ordering::SeqCst) > 0, "the readers read");
    // After the last restore, an acknowledged write stays.
    c.insert("pairs", &json!({"PartitionKey": "last", "RowKey": "x"}))
        .await;
    let r = c
        .call("GET", "/pairs(PartitionKey='last',RowKey='x')", &[], None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

// The cases above whose behaviour is the same under both flavours, run under each.
both_flavours!(the_calls_are_never_open_by_default,);
