//! `--flavor cosmos`: the server answers as Azure Cosmos DB for Table does (docs/cosmos.md).
//! Each test starts its own Cosmos-flavoured server and speaks to it as the SDKs speak to a
//! Cosmos endpoint: the Table endpoint at the root, signed as the emulator's account
//! `localhost`.

mod common;

use common::child::{ChildServer, Signer};
use common::{request, Reply, Signing, TestServer};
use tablestore::auth::accounts::{COSMOS_EMULATOR_ACCOUNT_KEY, COSMOS_EMULATOR_ACCOUNT_NAME};
use tablestore::config::{Config, FlavorArg};

/// A Cosmos-flavoured server and a signer for the emulator's account.
struct Cosmos {
    t: TestServer,
    signer: Signer,
}

impl Cosmos {
    async fn start() -> Cosmos {
        Cosmos::start_with(cosmos_config()).await
    }

    async fn start_with(config: Config) -> Cosmos {
        Cosmos {
            t: TestServer::start_with(config).await,
            signer: Signer::new(COSMOS_EMULATOR_ACCOUNT_NAME, COSMOS_EMULATOR_ACCOUNT_KEY),
        }
    }

    /// Sends `method` to `path` at the root of the endpoint, signed as `localhost`.
    async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Reply {
        let url = format!("{}{path}", self.t.server.endpoint());
        let body = body.map(|b| b.as_bytes().to_vec());
        let req = request(
            &self.t.client,
            method,
            &url,
            headers,
            body,
            Signing::As(&self.signer),
        );
        Reply::read(req.send().await.expect("request is answered"))
            .await
            .expect("body")
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
    let c = Cosmos::start().await;
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
    let r = Reply::read(req.send().await.unwrap()).await.unwrap();
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
    let send = |method: &'static str, url: String, body: Option<&'static str>| {
        let req = request(
            &c.t.client,
            method,
            &url,
            &[],
            body.map(|b| b.as_bytes().to_vec()),
            Signing::As(&signer),
        );
        async move { Reply::read(req.send().await.unwrap()).await.unwrap() }
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
    let r = Reply::read(req.send().await.unwrap()).await.unwrap();
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
