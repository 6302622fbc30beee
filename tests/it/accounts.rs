//! Accounts from `--accounts` / `AZURITE_ACCOUNTS` (Azurite's `name:key1[:key2];…` format):
//! each account is served with its own keys and its own data, and `devstoreaccount1` is
//! served only when listed (Azurite: "Default storage account devstoreaccount1 will be
//! disabled when providing customized storage accounts").

use crate::common;

use common::child::Signer;
use common::Signing;
use common::TestServer;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tablestore::config::{Config, DEV_ACCOUNT, DEV_ACCOUNT_KEY};

const BIN: &str = env!("CARGO_BIN_EXE_tablestore");
/// Keys of the second account (any base64 works; these are 32 bytes each).
const KEY2: &str = "c2Vjb25kLWFjY291bnQta2V5LW9uZS0xMjM0NTY3OA==";
const KEY2_ALT: &str = "c2Vjb25kLWFjY291bnQta2V5LXR3by0xMjM0NTY3ODk=";

/// A server in process serving `accounts`.
async fn server(accounts: &str) -> TestServer {
    TestServer::start_with(accounts_config(accounts)).await
}

fn accounts_config(accounts: &str) -> Config {
    let mut config = Config::for_tests();
    config.accounts_env = Some(accounts.to_string());
    config
}

struct Reply {
    status: StatusCode,
    body: Value,
}

/// A Shared Key Lite request for `account` signed with `key` (base64), through the kit's
/// request builder. `host` selects product style (`<account>.table.localhost`); otherwise the
/// path names the account.
async fn send(
    server: &TestServer,
    account: &str,
    key: &str,
    method: Method,
    resource: &str,
    body: Option<Value>,
    host_style: bool,
) -> Reply {
    let path = if host_style {
        resource.to_string()
    } else {
        format!("/{account}{resource}")
    };
    let host = format!("{account}.table.localhost");
    let mut headers = vec![
        ("x-ms-version", "2019-02-02"),
        ("Accept", "application/json;odata=nometadata"),
    ];
    if host_style {
        headers.push(("Host", &host));
    }
    let signer = Signer::new(account, key);
    let url = format!("{}{path}", server.server.endpoint());
    let body = body.map(|b| b.to_string().into_bytes());
    let req = common::request(
        &reqwest::Client::new(),
        method.as_str(),
        &url,
        &headers,
        body,
        Signing::As(&signer),
    );
    let reply = server.exchange(req).await;
    Reply {
        status: reply.status,
        body: serde_json::from_slice(&reply.body).unwrap_or(Value::Null),
    }
}

fn table_names(reply: &Reply) -> Vec<String> {
    reply.body["value"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["TableName"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn error_code(reply: &Reply) -> &str {
    reply.body["odata.error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn each_account_has_its_own_keys_and_data() {
    let s = server(&format!(
        "{DEV_ACCOUNT}:{DEV_ACCOUNT_KEY};acct2:{KEY2}:{KEY2_ALT}"
    ))
    .await;
    assert_eq!(s.server.account_name(), DEV_ACCOUNT);
    let tables = "/Tables";
    for (account, key) in [(DEV_ACCOUNT, DEV_ACCOUNT_KEY), ("acct2", KEY2)] {
        let r = send(
            &s,
            account,
            key,
            Method::POST,
            tables,
            Some(json!({ "TableName": "shared" })),
            false,
        )
        .await;
        assert_eq!(r.status, StatusCode::CREATED, "{account}: {}", r.body);
        let r = send(
            &s,
            account,
            key,
            Method::POST,
            "/shared",
            Some(json!({ "PartitionKey": "p", "RowKey": "r", "owner": account })),
            false,
        )
        .await;
        assert_eq!(r.status, StatusCode::CREATED, "{account}: {}", r.body);
    }
    // A table only in acct2.
    let r = send(
        &s,
        "acct2",
        KEY2,
        Method::POST,
        tables,
        Some(json!({ "TableName": "onlytwo" })),
        false,
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED);

    let dev = send(
        &s,
        DEV_ACCOUNT,
        DEV_ACCOUNT_KEY,
        Method::GET,
        tables,
        None,
        false,
    )
    .await;
    assert_eq!(table_names(&dev), ["shared"]);
    let two = send(&s, "acct2", KEY2, Method::GET, tables, None, false).await;
    assert_eq!(table_names(&two), ["onlytwo", "shared"]);
    for (account, key) in [(DEV_ACCOUNT, DEV_ACCOUNT_KEY), ("acct2", KEY2)] {
        let r = send(&s, account, key, Method::GET, "/shared()", None, false).await;
        let owners: Vec<&str> = r.body["value"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["owner"].as_str().unwrap())
            .collect();
        assert_eq!(owners, [account], "{account} sees only its own entity");
    }
    let r = send(
        &s,
        DEV_ACCOUNT,
        DEV_ACCOUNT_KEY,
        Method::GET,
        "/onlytwo()",
        None,
        false,
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    // key2 signs too; another account's key does not.
    let r = send(&s, "acct2", KEY2_ALT, Method::GET, tables, None, false).await;
    assert_eq!(r.status, StatusCode::OK);
    let r = send(
        &s,
        "acct2",
        DEV_ACCOUNT_KEY,
        Method::GET,
        tables,
        None,
        false,
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(error_code(&r), "AuthenticationFailed");

    // Product-style URL: the Host names the account.
    let r = send(&s, "acct2", KEY2, Method::GET, tables, None, true).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(table_names(&r), ["onlytwo", "shared"]);
}

#[tokio::test]
async fn the_development_account_is_absent_unless_listed() {
    // On a loopback port: the library's fixture, whose connection string names the
    // configured account.
    let s = TestServer::listening_with(accounts_config(&format!("acct2:{KEY2}"))).await;
    assert_eq!(s.server.account_name(), "acct2");
    assert_eq!(s.server.account_key(), KEY2);
    assert!(s.server.connection_string().contains("AccountName=acct2;"));
    assert!(s.server.account_url().ends_with("/acct2"));

    let r = send(&s, "acct2", KEY2, Method::GET, "/Tables", None, false).await;
    assert_eq!(r.status, StatusCode::OK);
    let r = send(
        &s,
        DEV_ACCOUNT,
        DEV_ACCOUNT_KEY,
        Method::GET,
        "/Tables",
        None,
        false,
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(error_code(&r), "AuthenticationFailed");
}

#[tokio::test]
async fn malformed_accounts_are_refused() {
    for bad in ["acct2", "acct2:not base64!", ":a2V5", ";"] {
        let mut config = Config::for_tests();
        config.accounts_env = Some(bad.to_string());
        assert!(
            tablestore::testing::InProcessServer::start_with(config)
                .await
                .is_err(),
            "{bad:?} must be refused"
        );
    }
}

/// The binary reads `AZURITE_ACCOUNTS` and prints the configured account's connection string.
#[test]
fn the_binary_reads_azurite_accounts() {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(BIN)
        .args(["--port", "0", "--in-memory"])
        .env_clear()
        .env("AZURITE_ACCOUNTS", format!("acct2:{KEY2}"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        let done = line.contains("Table service is successfully listening");
        lines.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let text = lines.join("\n");
    assert!(
        text.contains(&format!("AccountName=acct2;AccountKey={KEY2};")),
        "{text}"
    );
    assert!(
        text.contains("/acct2\n") || text.contains("/acct2;"),
        "{text}"
    );
    assert!(!text.contains(DEV_ACCOUNT), "{text}");

    let bad = std::process::Command::new(BIN)
        .args(["--port", "0", "--in-memory"])
        .env_clear()
        .env("AZURITE_ACCOUNTS", "acct2")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid accounts"));
}
