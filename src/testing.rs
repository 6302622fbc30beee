//! An embeddable test fixture: a real server inside your test process, on a free loopback
//! port, that the Azure SDKs (or any HTTP client) reach through its connection string. Each
//! test gets its own server, so tests run in parallel without sharing state.
//!
//! ```
//! use tablestore::testing::TestServer;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let server = TestServer::start().await?; // in memory, 127.0.0.1, free port
//!
//!     // Hand this to an SDK: TableServiceClient.from_connection_string(...)
//!     let connection_string = server.connection_string();
//!     assert!(connection_string.contains("TableEndpoint=http://127.0.0.1:"));
//!
//!     let http = reqwest::Client::new();
//!     let health = http.get(format!("{}/_health", server.endpoint())).send().await?;
//!     assert_eq!(health.status(), 200);
//!     server.shutdown().await?; // finishes in-flight requests, flushes the store
//!
//!     // Requests must be signed as the SDKs sign them; to speak plain HTTP, turn
//!     // authentication off.
//!     let mut config = tablestore::config::Config::for_tests();
//!     config.disable_auth = true;
//!     let server = TestServer::start_with(config).await?;
//!     let created = http
//!         .post(format!("{}/Tables", server.account_url()))
//!         .header("Content-Type", "application/json")
//!         .header("Accept", "application/json;odata=nometadata")
//!         .body(r#"{"TableName":"people"}"#)
//!         .send()
//!         .await?;
//!     assert_eq!(created.status(), 201);
//!
//!     server.shutdown().await?; // finishes in-flight requests, flushes the store
//!     Ok(())
//! }
//! ```
//!
//! [`InProcessServer`] is the same server with no socket, for tests whose subject is not the
//! connection: requests are handed to it in this process and answered whole.
//!
//! Depends on [`crate::server`], [`crate::config`] and the [`crate::store::Store`] contract.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::config::{connection_string_for, Config};
use crate::protocol::dialect::Flavor;
use crate::server::{
    open_store, serve_inner, tls, AppState, InProcess, InProcessRequest, InProcessResponse,
    ServeLimits,
};
use crate::store::Store;

/// A server running in this process; dropping it stops it (without waiting), and
/// [`TestServer::shutdown`] stops it and waits for the store to be flushed.
pub struct TestServer {
    addr: SocketAddr,
    /// `true` when the server speaks HTTPS (the configuration named a certificate).
    https: bool,
    /// The account [`TestServer::connection_string`] names and its base64 key
    /// (see [`Config::default_account`]).
    account: String,
    account_key: String,
    /// The service the server answers as.
    flavor: Flavor,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    /// An in-memory server on `127.0.0.1` and a free port.
    pub async fn start() -> std::io::Result<TestServer> {
        TestServer::start_with(Config::for_tests()).await
    }

    /// An on-disk server whose workspace is `path` (the store lives in
    /// `path/__tablestore__`); start another on the same path later to see the same data.
    pub async fn start_on_disk(path: impl AsRef<Path>) -> std::io::Result<TestServer> {
        let mut config = Config::for_tests();
        config.in_memory = false;
        config.location = path.as_ref().to_path_buf();
        TestServer::start_with(config).await
    }

    /// An in-memory server on `127.0.0.1` and a free port that answers as Azure Cosmos DB for
    /// Table (`--flavor cosmos`): account `localhost` with the Cosmos DB emulator's key, the
    /// Table endpoint at the root; its connection string names `localhost`, as the
    /// emulator's does, so the SDKs treat it as a Cosmos endpoint.
    pub async fn start_cosmos() -> std::io::Result<TestServer> {
        let mut config = Config::for_tests();
        config.flavor = crate::config::FlavorArg::Cosmos;
        TestServer::start_with(config).await
    }

    /// An in-memory HTTPS server on `127.0.0.1` and a free port, with the PEM certificate
    /// chain `cert` and private key `key` (clients must trust the certificate).
    pub async fn start_https(
        cert: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> std::io::Result<TestServer> {
        let mut config = Config::for_tests();
        config.cert = Some(cert.as_ref().to_path_buf());
        config.key = Some(key.as_ref().to_path_buf());
        TestServer::start_with(config).await
    }

    /// A server with any configuration (start from [`Config::for_tests`]) on its host and
    /// port (port 0 picks a free one); set `cert` and `key` (PEM), or `cert` and `pwd`
    /// (PFX), for HTTPS.
    pub async fn start_with(config: Config) -> std::io::Result<TestServer> {
        TestServer::start_with_limits(config, ServeLimits::default()).await
    }

    /// A server with explicit connection limits and timeouts.
    pub async fn start_with_limits(
        config: Config,
        limits: ServeLimits,
    ) -> std::io::Result<TestServer> {
        let store = open_store(&config).await.map_err(std::io::Error::other)?;
        TestServer::start_over(config, store, limits, false).await
    }

    /// A server over a store the caller built (e.g. pre-filled through the store API);
    /// `config`'s store settings are ignored.
    pub async fn start_with_store(
        config: Config,
        store: Arc<dyn Store>,
    ) -> std::io::Result<TestServer> {
        TestServer::start_over(config, store, ServeLimits::default(), true).await
    }

    /// `caller_built`: the store came from the caller (its content is the start-up state).
    async fn start_over(
        config: Config,
        store: Arc<dyn Store>,
        limits: ServeLimits,
        caller_built: bool,
    ) -> std::io::Result<TestServer> {
        let tls = tls::server_config(&config).map_err(std::io::Error::other)?;
        let bind_to = (config.host.clone(), config.port);
        let Prepared {
            state,
            account,
            account_key,
            flavor,
        } = Prepared::new(config, store, caller_built).await?;
        let listener = TcpListener::bind((bind_to.0.as_str(), bind_to.1)).await?;
        let addr = listener.local_addr()?;
        let (tx, rx) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = rx.await;
        };
        let https = tls.is_some();
        let task = tokio::spawn(serve_inner(listener, tls, state, shutdown, limits));
        Ok(TestServer {
            addr,
            https,
            account,
            account_key,
            flavor,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`, or `https://127.0.0.1:<port>` for a server started with a
    /// certificate ([`TestServer::start_https`]).
    pub fn endpoint(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// `true` when the server speaks HTTPS.
    pub fn is_https(&self) -> bool {
        self.https
    }

    /// `http://127.0.0.1:<port>/devstoreaccount1`, the table endpoint of the development
    /// account (path style); with `--accounts` that leave it out, of the first account. A
    /// Cosmos-flavoured server's Table endpoint is the root, `http://127.0.0.1:<port>`.
    pub fn account_url(&self) -> String {
        match self.flavor {
            Flavor::Storage => format!("{}/{}", self.endpoint(), self.account),
            Flavor::Cosmos => self.endpoint(),
        }
    }

    /// The connection string of [`TestServer::account_name`] for this server
    /// (`DefaultEndpointsProtocol=https` for an HTTPS server). With `--flavor cosmos` it is
    /// the emulator's shape, on `localhost` (the host the SDKs take for a Cosmos endpoint):
    /// `…;TableEndpoint=http://localhost:<port>/;`.
    pub fn connection_string(&self) -> String {
        let endpoint = match self.flavor {
            Flavor::Storage => self.endpoint(),
            Flavor::Cosmos => self
                .endpoint()
                .replacen(&self.addr.ip().to_string(), "localhost", 1),
        };
        connection_string_for(self.flavor, &endpoint, &self.account, &self.account_key)
    }

    /// The account the connection string names: `devstoreaccount1` unless the configuration's
    /// accounts leave it out, then the first configured account.
    pub fn account_name(&self) -> &str {
        &self.account
    }

    /// That account's base64 key.
    pub fn account_key(&self) -> &str {
        &self.account_key
    }

    /// Stops accepting requests, finishes those in flight and flushes the store.
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(std::io::Error::other)?,
            None => Ok(()),
        }
    }
}

/// What a server, on a socket or in process, starts from.
struct Prepared {
    state: AppState,
    account: String,
    account_key: String,
    flavor: Flavor,
}

impl Prepared {
    /// `caller_built`: the store came from the caller (its content is the start-up state).
    async fn new(
        config: Config,
        store: Arc<dyn Store>,
        caller_built: bool,
    ) -> std::io::Result<Prepared> {
        let (account, account_key) = config.default_account().map_err(std::io::Error::other)?;
        let flavor = config.flavor();
        // A reset brings back what the server started with: an in-memory store's content,
        // or the content of a store the caller built; a data folder or database, empty.
        let capture = config.is_in_memory() || caller_built;
        let state = AppState::serving(store, config, capture)
            .await
            .map_err(std::io::Error::other)?;
        Ok(Prepared {
            state,
            account,
            account_key,
            flavor,
        })
    }
}

/// A server with no socket, for tests whose subject is not the connection: each request is
/// handed to the application in this process, as the connection loop hands it one over plain
/// HTTP, and its answer comes back whole (framed as on the wire). No port is taken and no
/// client is needed; the wire tests of this repository (`tests/it`) use it through their kit,
/// which turns a signed request into an [`InProcessRequest`] for [`InProcessServer::answer`].
///
/// It has no address: its [`InProcessServer::endpoint`] is the notional
/// `http://127.0.0.1:0` (nothing can connect to port 0), which requests name in their `Host`
/// header as a client of a socket would name the server's address, and which the server's
/// answers repeat in their URLs.
pub struct InProcessServer {
    app: InProcess,
    store: Arc<dyn Store>,
    account: String,
    account_key: String,
    flavor: Flavor,
}

impl InProcessServer {
    /// The notional address of every in-process server: requests' `Host`, and their peer.
    pub const ADDR: SocketAddr =
        SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

    /// A server with any configuration (start from [`Config::for_tests`]); its host, port,
    /// certificate and connection limits play no part.
    pub async fn start_with(config: Config) -> std::io::Result<InProcessServer> {
        let store = open_store(&config).await.map_err(std::io::Error::other)?;
        InProcessServer::start_over(config, store, false).await
    }

    /// A server over a store the caller built; `config`'s store settings are ignored.
    pub async fn start_with_store(
        config: Config,
        store: Arc<dyn Store>,
    ) -> std::io::Result<InProcessServer> {
        InProcessServer::start_over(config, store, true).await
    }

    async fn start_over(
        config: Config,
        store: Arc<dyn Store>,
        caller_built: bool,
    ) -> std::io::Result<InProcessServer> {
        let Prepared {
            state,
            account,
            account_key,
            flavor,
        } = Prepared::new(config, Arc::clone(&store), caller_built).await?;
        Ok(InProcessServer {
            app: InProcess::new(state),
            store,
            account,
            account_key,
            flavor,
        })
    }

    /// Answers `request` (its URI the path and query, as a request line carries them; its
    /// `Host` header set) from [`InProcessServer::ADDR`], and reads the whole answer.
    pub async fn answer(&self, request: InProcessRequest) -> InProcessResponse {
        self.app.answer(request, InProcessServer::ADDR).await
    }

    /// `http://127.0.0.1:0`, the notional endpoint (see [`InProcessServer`]).
    pub fn endpoint(&self) -> String {
        format!("http://{}", InProcessServer::ADDR)
    }

    /// The table endpoint of the account, as [`TestServer::account_url`].
    pub fn account_url(&self) -> String {
        match self.flavor {
            Flavor::Storage => format!("{}/{}", self.endpoint(), self.account),
            Flavor::Cosmos => self.endpoint(),
        }
    }

    /// The account requests are signed for, as [`TestServer::account_name`].
    pub fn account_name(&self) -> &str {
        &self.account
    }

    /// That account's base64 key.
    pub fn account_key(&self) -> &str {
        &self.account_key
    }

    /// Flushes the store (requests are answered before they return, so none is in flight).
    pub async fn shutdown(&self) -> std::io::Result<()> {
        self.store.flush().await.map_err(std::io::Error::other)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An on-disk server that accepts the unsigned requests of this test.
    async fn unsigned_on_disk(dir: &Path) -> TestServer {
        let mut config = Config::for_tests();
        config.in_memory = false;
        config.location = dir.to_path_buf();
        config.disable_auth = true;
        TestServer::start_with(config).await.unwrap()
    }

    #[tokio::test]
    async fn on_disk_data_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let client = reqwest::Client::new();
        let first = unsigned_on_disk(dir.path()).await;
        let r = client
            .post(format!("{}/Tables", first.account_url()))
            .header("Content-Type", "application/json")
            .body(r#"{"TableName":"kept"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        first.shutdown().await.unwrap();
        assert!(dir.path().join(crate::config::STORE_DIR_NAME).is_dir());

        let second = unsigned_on_disk(dir.path()).await;
        let r = client
            .get(format!("{}/Tables", second.account_url()))
            .header("Accept", "application/json;odata=nometadata")
            .send()
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(body["value"][0]["TableName"], "kept");
        second.shutdown().await.unwrap();
    }
}
