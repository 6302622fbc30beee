//! The integration tests' one kit, a module of their one binary (`tests/it`): a real server on
//! an ephemeral loopback port, a signing HTTP client speaking to it and paging through
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
use tablestore::config::Config;

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

/// The kit's server: the library's fixture and a client for it. Requests go through
/// [`TestServer::send`] (signed for the development account unless the headers say otherwise).
pub struct TestServer {
    /// The library's fixture (`tablestore::testing::TestServer`): `endpoint()`,
    /// `account_url()`, `connection_string()`, `shutdown()`.
    pub server: tablestore::testing::TestServer,
    pub client: reqwest::Client,
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
    pub async fn start() -> TestServer {
        TestServer::start_with(Config::for_tests()).await
    }

    /// An in-memory server with one table, `name`.
    pub async fn with_table(name: &str) -> TestServer {
        let t = TestServer::start().await;
        t.create_table(name).await;
        t
    }

    /// A [`child::Client`] of the development account for this server (errors returned, not
    /// asserted: for tests that send what a server may refuse or drop).
    pub fn dev_client(&self) -> child::Client {
        child::Client::new(&self.server.endpoint(), child::Signer::dev())
    }

    /// A server with explicit connection limits and timeouts.
    pub async fn start_with_limits(
        config: Config,
        limits: tablestore::server::ServeLimits,
    ) -> TestServer {
        let server = tablestore::testing::TestServer::start_with_limits(config, limits)
            .await
            .expect("server starts");
        TestServer {
            server,
            client: reqwest::Client::new(),
        }
    }

    pub async fn start_with(config: Config) -> TestServer {
        let server = tablestore::testing::TestServer::start_with(config)
            .await
            .expect("server starts");
        TestServer {
            server,
            client: reqwest::Client::new(),
        }
    }

    /// A server over `store`, which the test may have filled through the store API.
    pub async fn start_with_store(
        store: std::sync::Arc<dyn tablestore::store::Store>,
    ) -> TestServer {
        let server = tablestore::testing::TestServer::start_with_store(Config::for_tests(), store)
            .await
            .expect("server starts");
        TestServer {
            server,
            client: reqwest::Client::new(),
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
        let req = request(&self.client, method, &url, headers, body, Signing::Dev);
        Reply::read(req.send().await.expect("request is answered"))
            .await
            .expect("body")
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
            Signing::Dev,
        );
        Reply::read(req.send().await.expect("request is answered"))
            .await
            .expect("body")
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
