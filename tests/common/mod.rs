//! The integration tests' one kit, a module of their one binary (`tests/it`): the server in
//! process (no socket) or on an ephemeral loopback port, a signing client speaking to it, the
//! cases run under both flavours (`both_flavours!`) and paging through
//! continuation tokens (here), the `tablestore` binary as a child process, its client and the
//! one request signer (`child`), several nodes over one database (`nodes`), a real PostgreSQL
//! server (`postgres`), raw HTTP over TCP (`raw`), `$batch` bodies (`batch`), URL
//! encoding (`url`), assertions on Azure's answers (`assert`) and the in-process server's log
//! (`logs`).
#![allow(dead_code)] // each test file uses a different subset of these helpers

pub mod assert;
pub mod batch;
pub mod child;
pub mod logs;
pub mod nodes;
pub mod postgres;
pub mod raw;
pub mod url;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use tablestore::auth::accounts::{COSMOS_EMULATOR_ACCOUNT_KEY, COSMOS_EMULATOR_ACCOUNT_NAME};
use tablestore::config::{Config, FlavorArg};

/// Runs each named case, an `async fn(FlavorArg)`, under both flavours (`--flavor storage`
/// and `--flavor cosmos`): the tests `<case>::storage` and `<case>::cosmos`. For the suites
/// whose behaviour is the same under both; what differs stays in `tests/it/cosmos.rs`. The
/// test attribute is `#[tokio::test]` unless one is given first.
macro_rules! both_flavours {
    (#[$test:meta] $($case:ident),+ $(,)?) => {
        $(
            mod $case {
                use tablestore::config::FlavorArg;

                #[$test]
                async fn storage() {
                    super::$case(FlavorArg::Storage).await
                }

                #[$test]
                async fn cosmos() {
                    super::$case(FlavorArg::Cosmos).await
                }
            }
        )+
    };
    ($($case:ident),+ $(,)?) => {
        both_flavours!(#[tokio::test] $($case),+);
    };
}

pub const JSON_MINIMAL: &str = "application/json;odata=minimalmetadata";
pub const JSON_NONE: &str = "application/json;odata=nometadata";
pub const JSON_FULL: &str = "application/json;odata=fullmetadata";

/// Signs a request for the development account with Shared Key Lite (the JS SDK's scheme):
/// returns the `x-ms-date` value and the `Authorization` header.
pub fn sign_lite(raw_path: &str, raw_query: Option<&str>) -> (String, String) {
    child::Signer::dev().sign(raw_path, raw_query)
}

/// Whether and as whom [`request`] signs (Shared Key Lite), unless `headers` carry
/// `Authorization` or `x-unsigned`.
#[derive(Clone, Copy)]
pub enum Signing<'a> {
    /// The development account.
    Dev,
    /// Another account.
    As(&'a child::Signer),
    /// Never (a server with authentication off, or a URL outside the account).
    None,
}

/// The kit's one request builder: `method` on the absolute `url`, signed as `signing` says,
/// with JSON `Accept` and, when there is a body, JSON `Content-Type` unless `headers` name
/// them; `headers` are added as given.
pub fn request(
    client: &reqwest::Client,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
    signing: Signing<'_>,
) -> reqwest::RequestBuilder {
    let named = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let method = Method::from_bytes(method.as_bytes()).expect("valid method");
    let mut req = client.request(method, url);
    let dev;
    let signer = match signing {
        Signing::Dev => {
            dev = child::Signer::dev();
            Some(&dev)
        }
        Signing::As(signer) => Some(signer),
        Signing::None => None,
    };
    if let Some(signer) = signer.filter(|_| !named("authorization") && !named("x-unsigned")) {
        let parsed = reqwest::Url::parse(url).expect("valid url");
        let (date, authorization) = signer.sign(parsed.path(), parsed.query());
        req = req
            .header("x-ms-date", date)
            .header("Authorization", authorization);
    }
    if !named("accept") {
        req = req.header("Accept", JSON_MINIMAL);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        if !named("content-type") {
            req = req.header("Content-Type", "application/json");
        }
        req = req.body(b);
    }
    req
}

/// Follows a query's continuation tokens to its end. `page(i, path)` fetches page `i` at
/// `path`: `query` (a path below the account with its `?…` query) plus the token the page
/// before answered; each page must answer 200. Returns every entity and the number of pages.
pub async fn query_all<F, Fut>(query: &str, mut page: F) -> (Vec<Value>, usize)
where
    F: FnMut(usize, String) -> Fut,
    Fut: std::future::Future<Output = Reply>,
{
    let mut out = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let r = page(pages, format!("{query}{token}")).await;
        assert_eq!(r.status, StatusCode::OK, "query page {pages}: {}", r.text());
        pages += 1;
        assert!(pages < 10_000, "{query}: no end after {pages} pages");
        out.extend(r.json()["value"].as_array().expect("value").iter().cloned());
        match (
            r.header("x-ms-continuation-NextPartitionKey"),
            r.header("x-ms-continuation-NextRowKey"),
        ) {
            (Some(pk), Some(rk)) => {
                token = format!(
                    "&NextPartitionKey={}&NextRowKey={}",
                    url::encode(pk),
                    url::encode(rk)
                )
            }
            (Some(pk), None) => token = format!("&NextPartitionKey={}", url::encode(pk)),
            _ => return (out, pages),
        }
    }
}

/// The kit's server and a client for it. Requests go through [`TestServer::send`] (signed for
/// the development account unless the headers say otherwise) or [`TestServer::exchange`].
pub struct TestServer {
    /// The server: in process ([`TestServer::start`] and most constructors) or on a loopback
    /// port ([`TestServer::listening`], for tests about connections, clients and the SDKs).
    pub server: Server,
    pub client: reqwest::Client,
    /// Who [`TestServer::send`] signs as: the development account, or under `--flavor cosmos`
    /// the emulator's account `localhost` (as the SDKs sign for a Cosmos endpoint).
    pub signer: child::Signer,
}

/// The server under test: the library's in-process server (no socket; the default for wire
/// tests that are not about connections) or its fixture on a free loopback port.
pub enum Server {
    InProcess(std::sync::Arc<tablestore::testing::InProcessServer>),
    Socket(tablestore::testing::TestServer),
}

impl Server {
    /// `http://127.0.0.1:<port>`; in process the notional `http://127.0.0.1:0`, which requests
    /// name in their `Host` header (no client can connect to it).
    pub fn endpoint(&self) -> String {
        match self {
            Server::InProcess(s) => s.endpoint(),
            Server::Socket(s) => s.endpoint(),
        }
    }

    /// The table endpoint of the account (path style; the root under Cosmos).
    pub fn account_url(&self) -> String {
        match self {
            Server::InProcess(s) => s.account_url(),
            Server::Socket(s) => s.account_url(),
        }
    }

    pub fn account_name(&self) -> &str {
        match self {
            Server::InProcess(s) => s.account_name(),
            Server::Socket(s) => s.account_name(),
        }
    }

    pub fn account_key(&self) -> &str {
        match self {
            Server::InProcess(s) => s.account_key(),
            Server::Socket(s) => s.account_key(),
        }
    }

    /// The listening address (in process: the notional `127.0.0.1:0`).
    pub fn addr(&self) -> std::net::SocketAddr {
        match self {
            Server::InProcess(_) => tablestore::testing::InProcessServer::ADDR,
            Server::Socket(s) => s.addr(),
        }
    }

    /// The connection string an SDK is given: only a server on a socket has one.
    pub fn connection_string(&self) -> String {
        match self {
            Server::InProcess(_) => {
                panic!("an in-process server has no connection string: start it listening")
            }
            Server::Socket(s) => s.connection_string(),
        }
    }

    /// Stops it and flushes the store.
    pub async fn shutdown(self) -> std::io::Result<()> {
        match self {
            Server::InProcess(s) => s.shutdown().await,
            Server::Socket(s) => s.shutdown().await,
        }
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    /// Status, headers and the whole body of `response`.
    pub async fn read(response: reqwest::Response) -> Result<Reply, reqwest::Error> {
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes().await?.to_vec();
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    /// An in-process answer (read whole, framed as the wire would frame it).
    pub fn from(response: tablestore::server::InProcessResponse) -> Reply {
        let (parts, body) = response.into_parts();
        Reply {
            status: parts.status,
            headers: parts.headers,
            body: body.to_vec(),
        }
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `odata.error.code` of a JSON error body.
    pub fn error_code(&self) -> String {
        self.json()["odata.error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl TestServer {
    /// An in-memory server in process.
    pub async fn start() -> TestServer {
        TestServer::start_with(Config::for_tests()).await
    }

    /// An in-memory server in process with one table, `name`.
    pub async fn with_table(name: &str) -> TestServer {
        let t = TestServer::start().await;
        t.create_table(name).await;
        t
    }

    /// An in-memory server in process answering as `flavor` (`--flavor`), for the suites that
    /// run under both flavours.
    pub async fn start_as(flavor: FlavorArg) -> TestServer {
        TestServer::start_with(flavoured(flavor)).await
    }

    /// [`TestServer::start_as`] with one table, `name`.
    pub async fn with_table_as(flavor: FlavorArg, name: &str) -> TestServer {
        let t = TestServer::start_as(flavor).await;
        t.create_table(name).await;
        t
    }

    /// A server in process with `config` (its host, port, certificate and limits play no part).
    pub async fn start_with(config: Config) -> TestServer {
        let signer = signer_for(&config);
        let server = tablestore::testing::InProcessServer::start_with(config)
            .await
            .expect("server starts");
        TestServer::over(Server::InProcess(std::sync::Arc::new(server)), signer)
    }

    /// A server in process over `store`, which the test may have filled through the store API.
    pub async fn start_with_store(
        store: std::sync::Arc<dyn tablestore::store::Store>,
    ) -> TestServer {
        TestServer::start_over(Config::for_tests(), store).await
    }

    /// A server in process with `config` over `store` (`config`'s store settings ignored).
    pub async fn start_over(
        config: Config,
        store: std::sync::Arc<dyn tablestore::store::Store>,
    ) -> TestServer {
        let signer = signer_for(&config);
        let server = tablestore::testing::InProcessServer::start_with_store(config, store)
            .await
            .expect("server starts");
        TestServer::over(Server::InProcess(std::sync::Arc::new(server)), signer)
    }

    /// An in-memory server on a free loopback port, for tests about connections or clients.
    pub async fn listening() -> TestServer {
        TestServer::listening_with(Config::for_tests()).await
    }

    /// A server with `config` on its host and port (0: a free one).
    pub async fn listening_with(config: Config) -> TestServer {
        let signer = signer_for(&config);
        let server = tablestore::testing::TestServer::start_with(config)
            .await
            .expect("server starts");
        TestServer::over(Server::Socket(server), signer)
    }

    /// A server on a free loopback port with explicit connection limits and timeouts.
    pub async fn start_with_limits(
        config: Config,
        limits: tablestore::server::ServeLimits,
    ) -> TestServer {
        let signer = signer_for(&config);
        let server = tablestore::testing::TestServer::start_with_limits(config, limits)
            .await
            .expect("server starts");
        TestServer::over(Server::Socket(server), signer)
    }

    fn over(server: Server, signer: child::Signer) -> TestServer {
        TestServer {
            server,
            client: reqwest::Client::new(),
            signer,
        }
    }

    /// A [`child::Client`] of the development account for this server (errors returned, not
    /// asserted: for tests that send what a server may refuse or drop).
    pub fn dev_client(&self) -> child::Client {
        self.client_as(child::Signer::dev())
    }

    /// A [`child::Client`] that signs and addresses requests as [`TestServer::send`] does (the
    /// development account, path style; under `--flavor cosmos` the emulator's account at the
    /// root): for the cases run under both flavours.
    pub fn signed_client(&self) -> child::Client {
        self.client_as(self.signer.clone()).at(self.base())
    }

    /// A [`child::Client`] signing as `signer` for this server, in process when it is.
    pub fn client_as(&self, signer: child::Signer) -> child::Client {
        match &self.server {
            Server::InProcess(server) => child::Client::in_process(server.clone(), signer),
            Server::Socket(server) => child::Client::new(&server.endpoint(), signer),
        }
    }

    /// Sends `request` (built on any client, e.g. by [`request`]) and reads the answer: over the
    /// socket, or in process as the socket would carry it (the `Host`, `Accept` and
    /// `Content-Length` headers a client adds, the URL's path and query as the request line's
    /// target).
    pub async fn exchange(&self, request: reqwest::RequestBuilder) -> Reply {
        self.try_exchange(request)
            .await
            .expect("request is answered")
    }

    /// [`TestServer::exchange`] that returns a connection the server dropped as `Err` (in
    /// process there is none to drop: always `Ok`).
    pub async fn try_exchange(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<Reply, reqwest::Error> {
        let (client, request) = request.build_split();
        let request = request.expect("a valid request");
        match &self.server {
            Server::Socket(_) => Reply::read(client.execute(request).await?).await,
            Server::InProcess(server) => Ok(Reply::from(server.answer(in_process(request)).await)),
        }
    }

    /// `http://127.0.0.1:<port>/devstoreaccount1`
    pub fn base(&self) -> String {
        self.server.account_url()
    }

    /// Sends a request to `path` (relative to the account URL), built by [`request`] and
    /// signed unless `headers` say otherwise.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Reply {
        let url = format!("{}{}", self.base(), path);
        let body = body.map(|b| b.as_bytes().to_vec());
        let signing = Signing::As(&self.signer);
        let req = request(&self.client, method, &url, headers, body, signing);
        self.exchange(req).await
    }

    /// Posts `batch` (its whole change set) to `/$batch` with its multipart Content-Type.
    pub async fn send_batch(&self, batch: &batch::BatchBody) -> Reply {
        let content_type = batch.content_type();
        let headers = [("Content-Type", content_type.as_str())];
        self.send("POST", "/$batch", &headers, Some(&batch.body()))
            .await
    }

    /// A signed GET of `path` on the account's `-secondary` endpoint (reqwest's own `Accept`).
    pub async fn get_secondary(&self, path: &str) -> Reply {
        let url = format!("{}-secondary{path}", self.base());
        let req = request(
            &self.client,
            "GET",
            &url,
            &[("Accept", "*/*")],
            None,
            Signing::As(&self.signer),
        );
        self.exchange(req).await
    }

    pub async fn create_table(&self, name: &str) {
        let r = self
            .send(
                "POST",
                "/Tables",
                &[],
                Some(&format!(r#"{{"TableName":"{name}"}}"#)),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    }

    /// Inserts `entity` with the caller's headers and returns the reply whatever it is
    /// (unlike [`TestServer::insert`], which asserts a 204).
    pub async fn post_entity(
        &self,
        table: &str,
        entity: &Value,
        headers: &[(&str, &str)],
    ) -> Reply {
        self.send(
            "POST",
            &format!("/{table}"),
            headers,
            Some(&entity.to_string()),
        )
        .await
    }

    /// Every entity `query` (a path below the account with its `?…`) answers, following
    /// continuation tokens, and the number of pages.
    pub async fn query_all(&self, query: &str) -> (Vec<Value>, usize) {
        query_all(query, |_, path| async move {
            self.send("GET", &path, &[], None).await
        })
        .await
    }

    pub async fn insert(&self, table: &str, entity: &Value) -> Reply {
        let r = self
            .send(
                "POST",
                &format!("/{table}"),
                &[("Prefer", "return-no-content")],
                Some(&entity.to_string()),
            )
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
        r
    }
}

/// [`Config::for_tests`] answering as `flavor`.
pub fn flavoured(flavor: FlavorArg) -> Config {
    let mut config = Config::for_tests();
    config.flavor = flavor;
    config
}

/// Who the kit signs as for a server configured so: the development account, or under
/// `--flavor cosmos` the emulator's account.
fn signer_for(config: &Config) -> child::Signer {
    match config.flavor {
        FlavorArg::Storage => child::Signer::dev(),
        FlavorArg::Cosmos => {
            child::Signer::new(COSMOS_EMULATOR_ACCOUNT_NAME, COSMOS_EMULATOR_ACCOUNT_KEY)
        }
    }
}

/// `request` as it reaches a server over a socket: the URL's path and query as the target, the
/// headers reqwest and hyper add on the way (`Host`, `Accept: */*` when none is named,
/// `Content-Length` of a body) and the body.
pub(crate) fn in_process(request: reqwest::Request) -> tablestore::server::InProcessRequest {
    let url = request.url();
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    let host = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().expect("a host")),
        None => url.host_str().expect("a host").to_string(),
    };
    let body = request
        .body()
        .map(|b| b.as_bytes().expect("a body in memory").to_vec());
    let mut builder = http::Request::builder()
        .method(request.method().clone())
        .uri(target);
    let headers = builder.headers_mut().expect("a valid request");
    *headers = request.headers().clone();
    if !headers.contains_key(http::header::HOST) {
        headers.insert(http::header::HOST, host.parse().expect("a valid Host"));
    }
    if !headers.contains_key(http::header::ACCEPT) {
        headers.insert(http::header::ACCEPT, http::HeaderValue::from_static("*/*"));
    }
    if let Some(body) = &body {
        if !headers.contains_key(http::header::CONTENT_LENGTH) {
            headers.insert(http::header::CONTENT_LENGTH, body.len().into());
        }
    }
    builder
        .body(bytes::Bytes::from(body.unwrap_or_default()))
        .expect("a valid request")
}
