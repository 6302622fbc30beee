//! Account isolation: with two accounts configured (`--accounts "acct1:<key1>;acct2:<key2>"`),
//! a request signed for one account can never read or write the other's data — path style,
//! host style (`acct2.table.localhost`), `$batch` (including inner URLs naming the other
//! account), service and account SAS, the `-secondary` endpoint — and no error message
//! leaks the other account's data or the server's file paths.

use crate::common;

use common::batch::BatchBody;
use common::child::Signer;
use common::Reply;
use common::TestServer;
use rand::{RngExt as _, SeedableRng as _};
use rand_pcg::Pcg64;
use reqwest::Method;
use serde_json::json;
use tablestore::auth::canonical::ServiceSasFields;
use tablestore::config::Config;

const SECRET1: &str = "acct1-secret-value-7f3a";
const SECRET2: &str = "acct2-secret-value-9c1e";

fn key(seed: u8) -> Vec<u8> {
    let mut rng = Pcg64::seed_from_u64(u64::from(seed));
    (0..64).map(|_| rng.random()).collect()
}

fn b64(bytes: &[u8]) -> String {
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bytes)
}

struct Setup {
    t: TestServer,
    http: reqwest::Client,
    key1: Vec<u8>,
    key2: Vec<u8>,
    data_dir: String,
    _dir: tempfile::TempDir,
}

/// How a request is signed.
#[derive(Clone, Copy)]
enum Auth<'a> {
    /// Shared Key Lite: the account named in the header and the key used.
    Lite(&'a str, &'a [u8]),
    /// Shared Key (full), likewise.
    Full(&'a str, &'a [u8]),
    /// A SAS query string appended to the URL.
    Sas(&'a str),
    None,
}

impl Setup {
    async fn start() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let (key1, key2) = (key(1), key(2));
        let mut config = Config::for_tests();
        config.in_memory = false;
        config.location = data.clone();
        config.accounts_env = Some(format!("acct1:{};acct2:{}", b64(&key1), b64(&key2)));
        let s = Setup {
            t: TestServer::start_with(config).await,
            http: reqwest::Client::new(),
            key1,
            key2,
            data_dir: data.to_string_lossy().into_owned(),
            _dir: dir,
        };
        for (acct, key, secret) in [("acct1", &s.key1, SECRET1), ("acct2", &s.key2, SECRET2)] {
            let auth = Auth::Lite(acct, key);
            for table in ["secret", &format!("only{acct}")] {
                let body = json!({ "TableName": table }).to_string();
                let r = s
                    .send("POST", &format!("/{acct}/Tables"), None, auth, &body, &[])
                    .await;
                assert_eq!(r.status.as_u16(), 201, "{}", r.text());
            }
            let body = json!({"PartitionKey": "p", "RowKey": "r", "data": secret}).to_string();
            let r = s
                .send("POST", &format!("/{acct}/secret"), None, auth, &body, &[])
                .await;
            assert_eq!(r.status.as_u16(), 201, "{}", r.text());
        }
        s
    }

    /// Sends `method path` (raw, as on the request line) with an optional Host header.
    async fn send(
        &self,
        method: &str,
        path: &str,
        host: Option<&str>,
        auth: Auth<'_>,
        body: &str,
        headers: &[(&str, &str)],
    ) -> Reply {
        let (raw_path, raw_query) = match path.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path, None),
        };
        let url = match auth {
            Auth::Sas(sas) => match raw_query {
                Some(_) => format!("{}{path}&{sas}", self.t.server.endpoint()),
                None => format!("{}{path}?{sas}", self.t.server.endpoint()),
            },
            _ => format!("{}{path}", self.t.server.endpoint()),
        };
        let content_type = if body.is_empty() {
            ""
        } else if path.ends_with("$batch") {
            "multipart/mixed; boundary=b"
        } else {
            "application/json"
        };
        let mut req = self
            .http
            .request(Method::from_bytes(method.as_bytes()).unwrap(), &url)
            .header("x-ms-version", "2019-02-02")
            .header("Accept", "application/json;odata=minimalmetadata");
        if let Some(h) = host {
            req = req.header("Host", h);
        }
        let signed = match auth {
            Auth::Lite(account, key) => Some(signer(account, key).sign(raw_path, raw_query)),
            Auth::Full(account, key) => Some(signer(account, key).sign_shared_key(
                method,
                content_type,
                raw_path,
                raw_query,
            )),
            Auth::Sas(_) | Auth::None => None,
        };
        match signed {
            Some((date, authorization)) => {
                req = req
                    .header("x-ms-date", date)
                    .header("Authorization", authorization);
            }
            None => {
                let date = chrono::Utc::now().format("%a, %d %b %Y %H:%M:%S GMT");
                req = req.header("x-ms-date", date.to_string());
            }
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if !body.is_empty() {
            req = req
                .header("Content-Type", content_type)
                .body(body.to_string());
        }
        self.t.exchange(req).await
    }

    /// acct2's entity, read as acct2: unchanged.
    async fn assert_acct2_intact(&self) {
        let r = self
            .send(
                "GET",
                "/acct2/secret(PartitionKey='p',RowKey='r')",
                None,
                Auth::Lite("acct2", &self.key2),
                "",
                &[],
            )
            .await;
        assert_eq!(r.status.as_u16(), 200, "{}", r.text());
        assert_eq!(r.json()["data"], SECRET2);
        let r = self
            .send(
                "GET",
                "/acct2/secret()",
                None,
                Auth::Lite("acct2", &self.key2),
                "",
                &[],
            )
            .await;
        assert_eq!(
            r.json()["value"].as_array().map(Vec::len),
            Some(1),
            "{}",
            r.text()
        );
    }

    /// The answer to an attack: refused, and leaking nothing.
    fn assert_refused(&self, what: &str, r: &Reply) {
        let text = r.text();
        assert!(r.status.is_client_error(), "{what}: {} {text}", r.status);
        self.assert_no_leak(what, r);
    }

    fn assert_no_leak(&self, what: &str, r: &Reply) {
        let text = r.text();
        for secret in [
            SECRET2,
            "onlyacct2",
            self.data_dir.as_str(),
            "/tmp/",
            &b64(&self.key2),
        ] {
            assert!(!text.contains(secret), "{what}: leaks {secret:?}: {text}");
        }
        for (_, v) in r.headers.iter() {
            let v = String::from_utf8_lossy(v.as_bytes());
            assert!(
                !v.contains(SECRET2) && !v.contains(&self.data_dir),
                "{what}: header leaks: {v}"
            );
        }
    }
}

/// What, method, path, Host header, signature, body.
type Attack<'a> = (&'a str, &'a str, String, Option<String>, Auth<'a>, String);

/// A `$batch` body (boundary `b`) whose one sub-request addresses `inner_account`: a query
/// for GET, otherwise a change set with one `method` on row `p`/`r` (`If-Match: *`).
fn batch_body(endpoint: &str, inner_account: &str, method: &str, table: &str) -> String {
    let mut b = BatchBody::with_boundaries(&format!("{endpoint}/{inner_account}"), "b", "c");
    let row = format!("/{table}(PartitionKey='p',RowKey='r')");
    match method {
        "GET" => b.query(&row, &[]),
        "POST" => {
            let entity = json!({"PartitionKey": "p", "RowKey": "evil", "data": "x"}).to_string();
            b.op(
                "POST",
                &format!("/{table}"),
                &[("If-Match", "*")],
                Some(&entity),
            );
            b.body()
        }
        _ => {
            let patch = json!({"data": "overwritten"}).to_string();
            b.op(method, &row, &[("If-Match", "*")], Some(&patch));
            b.body()
        }
    }
}

#[tokio::test]
async fn shared_key_requests_cannot_cross_accounts() {
    let s = Setup::start().await;
    let (k1, k2) = (s.key1.clone(), s.key2.clone());
    let port = s.t.server.addr().port();
    let host2 = format!("acct2.table.localhost:{port}");
    let host1 = format!("acct1.table.localhost:{port}");
    let cases: Vec<Attack> = vec![
        (
            "path style, signed as acct1",
            "GET",
            "/acct2/secret(PartitionKey='p',RowKey='r')".into(),
            None,
            Auth::Lite("acct1", &k1),
            String::new(),
        ),
        (
            "path style, shared key, signed as acct1",
            "GET",
            "/acct2/secret()".into(),
            None,
            Auth::Full("acct1", &k1),
            String::new(),
        ),
        (
            "path style, claims acct2 with key1",
            "GET",
            "/acct2/secret()".into(),
            None,
            Auth::Lite("acct2", &k1),
            String::new(),
        ),
        (
            "path style query tables",
            "GET",
            "/acct2/Tables".into(),
            None,
            Auth::Lite("acct1", &k1),
            String::new(),
        ),
        (
            "host style, signed as acct1",
            "GET",
            "/secret()".into(),
            Some(host2.clone()),
            Auth::Lite("acct1", &k1),
            String::new(),
        ),
        (
            "host style, claims acct2 with key1",
            "GET",
            "/secret()".into(),
            Some(host2.clone()),
            Auth::Lite("acct2", &k1),
            String::new(),
        ),
        (
            "host acct1, path names acct2",
            "GET",
            "/acct2/secret()".into(),
            Some(host1.clone()),
            Auth::Lite("acct1", &k1),
            String::new(),
        ),
        (
            "upper-case account",
            "GET",
            "/ACCT2/secret()".into(),
            None,
            Auth::Lite("acct1", &k1),
            String::new(),
        ),
        (
            "percent-encoded account",
            "GET",
            "/acct%32/secret()".into(),
            None,
            Auth::Lite("acct1", &k1),
            String::new(),
        ),
        (
            "dot segments",
            "GET",
            "/acct1/../acct2/secret()".into(),
            None,
            Auth::Lite("acct1", &k1),
            String::new(),
        ),
        (
            "secondary endpoint",
            "GET",
            "/acct2-secondary/secret()".into(),
            None,
            Auth::Lite("acct1", &k1),
            String::new(),
        ),
        (
            "unsigned",
            "GET",
            "/acct2/secret()".into(),
            None,
            Auth::None,
            String::new(),
        ),
        (
            "write, path style",
            "PUT",
            "/acct2/secret(PartitionKey='p',RowKey='r')".into(),
            None,
            Auth::Lite("acct1", &k1),
            json!({"data": "overwritten"}).to_string(),
        ),
        (
            "write, host style",
            "PUT",
            "/secret(PartitionKey='p',RowKey='r')".into(),
            Some(host2.clone()),
            Auth::Lite("acct1", &k1),
            json!({"data": "overwritten"}).to_string(),
        ),
        (
            "insert",
            "POST",
            "/acct2/secret".into(),
            None,
            Auth::Lite("acct1", &k1),
            json!({"PartitionKey": "p", "RowKey": "evil"}).to_string(),
        ),
        (
            "delete",
            "DELETE",
            "/acct2/secret(PartitionKey='p',RowKey='r')".into(),
            None,
            Auth::Lite("acct1", &k1),
            String::new(),
        ),
        (
            "delete table",
            "DELETE",
            "/acct2/Tables('secret')".into(),
            None,
            Auth::Lite("acct1", &k1),
            String::new(),
        ),
        (
            "create table",
            "POST",
            "/acct2/Tables".into(),
            None,
            Auth::Lite("acct1", &k1),
            json!({"TableName": "planted"}).to_string(),
        ),
        (
            "get ACL",
            "GET",
            "/acct2/secret?comp=acl".into(),
            None,
            Auth::Lite("acct1", &k1),
            String::new(),
        ),
        (
            "service properties",
            "GET",
            "/acct2/?restype=service&comp=properties".into(),
            None,
            Auth::Lite("acct1", &k1),
            String::new(),
        ),
        (
            "batch to acct2",
            "POST",
            "/acct2/$batch".into(),
            None,
            Auth::Lite("acct1", &k1),
            batch_body(&s.t.server.endpoint(), "acct2", "MERGE", "secret"),
        ),
        (
            "batch, host style",
            "POST",
            "/$batch".into(),
            Some(host2.clone()),
            Auth::Lite("acct1", &k1),
            batch_body(&s.t.server.endpoint(), "acct2", "MERGE", "secret"),
        ),
    ];
    for (what, method, path, host, auth, body) in &cases {
        let r = s
            .send(
                method,
                path,
                host.as_deref(),
                *auth,
                body,
                &[("If-Match", "*")],
            )
            .await;
        s.assert_refused(what, &r);
    }
    // The owner still sees exactly its data.
    s.assert_acct2_intact().await;
    let r = s
        .send(
            "GET",
            "/acct2/Tables",
            None,
            Auth::Lite("acct2", &k2),
            "",
            &[],
        )
        .await;
    let names: Vec<String> = r.json()["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["TableName"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["onlyacct2", "secret"]);
}

/// acct1's own requests see only acct1's data, even for same-named tables.
#[tokio::test]
async fn each_account_sees_only_its_own_data() {
    let s = Setup::start().await;
    let k1 = s.key1.clone();
    let r = s
        .send(
            "GET",
            "/acct1/secret()",
            None,
            Auth::Lite("acct1", &k1),
            "",
            &[],
        )
        .await;
    assert_eq!(r.status.as_u16(), 200);
    s.assert_no_leak("acct1 query", &r);
    assert!(r.text().contains(SECRET1));
    let r = s
        .send(
            "GET",
            "/acct1/Tables",
            None,
            Auth::Lite("acct1", &k1),
            "",
            &[],
        )
        .await;
    s.assert_no_leak("acct1 tables", &r);
    let port = s.t.server.addr().port();
    let r = s
        .send(
            "GET",
            "/secret()",
            Some(&format!("acct1.table.localhost:{port}")),
            Auth::Lite("acct1", &k1),
            "",
            &[],
        )
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text());
    s.assert_no_leak("acct1 host style", &r);
    // Missing tables and entities of acct1 do not reveal acct2's.
    let r = s
        .send(
            "GET",
            "/acct1/onlyacct2()",
            None,
            Auth::Lite("acct1", &k1),
            "",
            &[],
        )
        .await;
    assert_eq!(r.status.as_u16(), 404);
    assert_eq!(r.error_code(), "TableNotFound");
}

/// A `$batch` authorized for acct1 whose inner requests name acct2 (in the URL) must not
/// touch or read acct2: it fails or acts on acct1 only.
#[tokio::test]
async fn batch_inner_urls_cannot_reach_another_account() {
    let s = Setup::start().await;
    let k1 = s.key1.clone();
    let endpoint = s.t.server.endpoint();
    for method in ["MERGE", "PUT", "DELETE", "POST", "GET"] {
        let body = batch_body(&endpoint, "acct2", method, "secret");
        let r = s
            .send(
                "POST",
                "/acct1/$batch",
                None,
                Auth::Lite("acct1", &k1),
                &body,
                &[],
            )
            .await;
        let refused = r.status.is_client_error()
            || (r.status.as_u16() == 202
                && r.text()
                    .lines()
                    .filter_map(|l| l.strip_prefix("HTTP/1.1 "))
                    .all(|l| l.starts_with('4')));
        assert!(
            refused,
            "inner {method} to acct2 was not refused: {}",
            r.text()
        );
        s.assert_no_leak(&format!("inner {method} to acct2"), &r);
        s.assert_acct2_intact().await;
        // The only table it may have touched is acct1's own.
        let own = s
            .send(
                "GET",
                "/acct1/secret()",
                None,
                Auth::Lite("acct1", &k1),
                "",
                &[],
            )
            .await;
        s.assert_no_leak("acct1 after batch", &own);
        // Restore acct1's entity for the next round.
        let restore = json!({"PartitionKey": "p", "RowKey": "r", "data": SECRET1}).to_string();
        let _ = s
            .send(
                "PUT",
                "/acct1/secret(PartitionKey='p',RowKey='r')",
                None,
                Auth::Lite("acct1", &k1),
                &restore,
                &[],
            )
            .await;
    }
}

fn signer(account: &str, key: &[u8]) -> Signer {
    Signer {
        account: account.to_string(),
        key: key.to_vec(),
    }
}

fn service_sas(account: &str, key: &[u8], table: &str, sp: &str) -> String {
    signer(account, key).service_sas(&ServiceSasFields {
        sp,
        st: "2020-01-01T00:00:00Z",
        se: "2099-01-01T00:00:00Z",
        tn: table,
        si: "",
        sip: "",
        spr: "https,http",
        sv: "2019-02-02",
        spk: "",
        srk: "",
        epk: "",
        erk: "",
    })
}

#[tokio::test]
async fn sas_tokens_of_one_account_do_not_open_another() {
    let s = Setup::start().await;
    let k1 = s.key1.clone();
    let endpoint = s.t.server.endpoint();
    let port = s.t.server.addr().port();
    let host2 = format!("acct2.table.localhost:{port}");
    let svc = service_sas("acct1", &k1, "secret", "raud");
    let acc = signer("acct1", &k1).account_sas_all();
    // Sanity: the tokens work on acct1.
    let r = s
        .send("GET", "/acct1/secret()", None, Auth::Sas(&svc), "", &[])
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text());
    let r = s
        .send("GET", "/acct1/secret()", None, Auth::Sas(&acc), "", &[])
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text());
    let write = json!({"data": "overwritten"}).to_string();
    for (name, sas) in [("service SAS", &svc), ("account SAS", &acc)] {
        let cases: Vec<(&str, &str, String, Option<&str>, String)> = vec![
            (
                "read",
                "GET",
                "/acct2/secret(PartitionKey='p',RowKey='r')".into(),
                None,
                String::new(),
            ),
            (
                "query",
                "GET",
                "/acct2/secret()".into(),
                None,
                String::new(),
            ),
            (
                "host style",
                "GET",
                "/secret()".into(),
                Some(host2.as_str()),
                String::new(),
            ),
            (
                "write",
                "PUT",
                "/acct2/secret(PartitionKey='p',RowKey='r')".into(),
                None,
                write.clone(),
            ),
            (
                "batch",
                "POST",
                "/acct2/$batch".into(),
                None,
                batch_body(&endpoint, "acct2", "MERGE", "secret"),
            ),
            ("tables", "GET", "/acct2/Tables".into(), None, String::new()),
        ];
        for (what, method, path, host, body) in cases {
            let r = s
                .send(
                    method,
                    &path,
                    host,
                    Auth::Sas(sas),
                    &body,
                    &[("If-Match", "*")],
                )
                .await;
            s.assert_refused(&format!("{name}: {what}"), &r);
        }
        // A batch to acct1 carrying the token, with inner requests naming acct2.
        let body = batch_body(&endpoint, "acct2", "MERGE", "secret");
        let r = s
            .send("POST", "/acct1/$batch", None, Auth::Sas(sas), &body, &[])
            .await;
        s.assert_no_leak(&format!("{name}: batch via acct1"), &r);
    }
    s.assert_acct2_intact().await;
}
