//! HTTPS (`--cert`/`--key`, `--cert`/`--pwd`) and what depends on it: SAS `spr=https`, the
//! client address behind SAS `sip`, bearer tokens (`--oauth basic`), `--healthcheck` and the
//! start-up output. Certificates are generated here, at test time.

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::child::Signer;
use common::{Reply, Signing};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tablestore::auth::bearer::STORAGE_APP_ID;
use tablestore::auth::canonical::ServiceSasFields;
use tablestore::config::{Config, OAuthLevel, DEV_ACCOUNT};
use tablestore::testing::TestServer;

const BIN: &str = env!("CARGO_BIN_EXE_tablestore");

/// A self-signed certificate for `localhost` and `127.0.0.1`, written as PEM files.
struct Cert {
    _dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
    cert_pem: String,
    cert_der: Vec<u8>,
    key_der: Vec<u8>,
}

fn make_cert() -> Cert {
    let generated =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("rcgen makes a certificate");
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    let cert_pem = generated.cert.pem();
    std::fs::write(&cert, &cert_pem).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
    Cert {
        cert,
        key,
        cert_pem,
        cert_der: generated.cert.der().to_vec(),
        key_der: generated.signing_key.serialize_der(),
        _dir: dir,
    }
}

/// An HTTP client that trusts only `cert`.
fn https_client(cert: &Cert) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(cert.cert_pem.as_bytes()).unwrap())
        .build()
        .unwrap()
}

fn https_config(cert: &Cert) -> Config {
    let mut config = Config::for_tests();
    config.cert = Some(cert.cert.clone());
    config.key = Some(cert.key.clone());
    config
}

enum Auth<'a> {
    /// Shared Key Lite with the development account.
    SharedKey,
    /// A SAS query string appended to the URL.
    Sas(&'a str),
    /// `Authorization: Bearer <token>`.
    Bearer(&'a str),
}

/// Sends a request to `endpoint` + `path` (path style, account included), through the kit's
/// request builder, authenticated as `auth` says.
async fn send(
    client: &reqwest::Client,
    endpoint: &str,
    method: Method,
    path: &str,
    auth: Auth<'_>,
    body: Option<Value>,
) -> Reply {
    let url = match auth {
        Auth::Sas(q) => format!("{endpoint}{path}?{q}"),
        _ => format!("{endpoint}{path}"),
    };
    let bearer;
    let mut headers = vec![
        ("x-ms-version", "2019-02-02"),
        ("DataServiceVersion", "3.0"),
    ];
    if let Auth::Bearer(token) = auth {
        bearer = format!("Bearer {token}");
        headers.push(("Authorization", &bearer));
    }
    let signing = match auth {
        Auth::SharedKey => Signing::Dev,
        Auth::Sas(_) | Auth::Bearer(_) => Signing::None,
    };
    let body = body.map(|b| b.to_string().into_bytes());
    let req = common::request(client, method.as_str(), &url, &headers, body, signing);
    let response = req.send().await.expect("the request is answered");
    Reply::read(response).await.expect("body")
}

async fn create_table(client: &reqwest::Client, endpoint: &str, name: &str) {
    let r = send(
        client,
        endpoint,
        Method::POST,
        &format!("/{DEV_ACCOUNT}/Tables"),
        Auth::SharedKey,
        Some(json!({ "TableName": name })),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
}

/// A service SAS for reading `table` (sv 2019-02-02) with the given `spr` and `sip`.
fn read_sas(table: &str, spr: &str, sip: &str) -> String {
    Signer::dev().service_sas(&ServiceSasFields {
        sp: "r",
        st: "2020-01-01T00:00:00Z",
        se: "2099-01-01T00:00:00Z",
        tn: table,
        si: "",
        sip,
        spr,
        sv: "2019-02-02",
        spk: "",
        srk: "",
        epk: "",
        erk: "",
    })
}

/// A well-formed, unsigned JWT as `TokenCredential`s hand out (no key can check it; the
/// server checks form, audience and lifetime only).
fn unsigned_jwt(audience: &str) -> String {
    jwt_from(
        audience,
        "https://sts.windows.net/00000000-0000-0000-0000-000000000000/",
    )
}

/// [`unsigned_jwt`] with the issuer `iss`.
fn jwt_from(audience: &str, iss: &str) -> String {
    let now = chrono::Utc::now().timestamp();
    let header = URL_SAFE_NO_PAD.encode(json!({ "alg": "RS256", "typ": "JWT" }).to_string());
    let payload = URL_SAFE_NO_PAD.encode(
        json!({
            "aud": audience,
            "iss": iss,
            "iat": now - 60,
            "nbf": now - 60,
            "exp": now + 3600,
            "oid": "11111111-1111-1111-1111-111111111111",
        })
        .to_string(),
    );
    format!("{header}.{payload}.c2lnbmF0dXJlLW5vdC1jaGVja2Vk")
}

#[tokio::test]
async fn https_round_trip_with_a_pem_certificate() {
    let cert = make_cert();
    let server = TestServer::start_https(&cert.cert, &cert.key)
        .await
        .unwrap();
    assert!(server.is_https());
    assert!(server.endpoint().starts_with("https://127.0.0.1:"));
    assert!(server
        .connection_string()
        .starts_with("DefaultEndpointsProtocol=https;"));
    let client = https_client(&cert);
    let endpoint = server.endpoint();

    let health = client
        .get(format!("{endpoint}/_health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);

    create_table(&client, &endpoint, "secure").await;
    let path = format!("/{DEV_ACCOUNT}/secure");
    let r = send(
        &client,
        &endpoint,
        Method::POST,
        &path,
        Auth::SharedKey,
        Some(json!({ "PartitionKey": "p", "RowKey": "r", "v": 7 })),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    // URLs in responses carry the scheme the request came with.
    let metadata = r.json()["odata.metadata"].as_str().unwrap().to_string();
    assert!(metadata.starts_with("https://"), "{metadata}");
    let r = send(
        &client,
        &endpoint,
        Method::GET,
        &path,
        Auth::SharedKey,
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["value"][0]["v"], 7);

    // The HTTPS port does not speak plain HTTP.
    let plain = reqwest::Client::new()
        .get(format!("http://{}/_health", server.addr()))
        .send()
        .await;
    assert!(
        plain.map(|r| r.status() != StatusCode::OK).unwrap_or(true),
        "plain HTTP must not be served on the HTTPS port"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn https_only_sas_is_accepted_over_tls_and_refused_over_http() {
    let cert = make_cert();
    let tls = TestServer::start_https(&cert.cert, &cert.key)
        .await
        .unwrap();
    let plain = TestServer::start().await.unwrap();
    let tls_client = https_client(&cert);
    let plain_client = reqwest::Client::new();
    create_table(&tls_client, &tls.endpoint(), "sastable").await;
    create_table(&plain_client, &plain.endpoint(), "sastable").await;
    let path = format!("/{DEV_ACCOUNT}/sastable()");

    let https_only = read_sas("sastable", "https", "");
    let r = send(
        &tls_client,
        &tls.endpoint(),
        Method::GET,
        &path,
        Auth::Sas(&https_only),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let r = send(
        &plain_client,
        &plain.endpoint(),
        Method::GET,
        &path,
        Auth::Sas(&https_only),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text());
    assert_eq!(r.error_code(), "AuthorizationProtocolMismatch");

    // `https,http` works over both.
    let either = read_sas("sastable", "https,http", "");
    for (client, server) in [(&tls_client, &tls), (&plain_client, &plain)] {
        let r = send(
            client,
            &server.endpoint(),
            Method::GET,
            &path,
            Auth::Sas(&either),
            None,
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    }
}

#[tokio::test]
async fn sas_source_ip_sees_the_client_address_over_tls() {
    let cert = make_cert();
    let server = TestServer::start_https(&cert.cert, &cert.key)
        .await
        .unwrap();
    let client = https_client(&cert);
    create_table(&client, &server.endpoint(), "iptable").await;
    let path = format!("/{DEV_ACCOUNT}/iptable()");
    for (sip, expected) in [
        ("127.0.0.1", StatusCode::OK),
        ("127.0.0.0-127.0.0.255", StatusCode::OK),
        ("10.9.9.9", StatusCode::FORBIDDEN),
    ] {
        let sas = read_sas("iptable", "https", sip);
        let r = send(
            &client,
            &server.endpoint(),
            Method::GET,
            &path,
            Auth::Sas(&sas),
            None,
        )
        .await;
        assert_eq!(r.status, expected, "sip={sip}: {}", r.text());
        if expected == StatusCode::FORBIDDEN {
            assert_eq!(r.error_code(), "AuthorizationSourceIPMismatch");
        }
    }
}

#[tokio::test]
async fn bearer_tokens_need_oauth_and_https() {
    let cert = make_cert();
    let client = https_client(&cert);
    let token = unsigned_jwt("https://storage.azure.com");
    let tables = format!("/{DEV_ACCOUNT}/Tables");

    // --oauth basic over HTTPS: accepted, and the token may do everything on the account.
    let mut config = https_config(&cert);
    config.oauth = Some(OAuthLevel::Basic);
    let oauth = TestServer::start_with(config).await.unwrap();
    let r = send(
        &client,
        &oauth.endpoint(),
        Method::POST,
        &tables,
        Auth::Bearer(&token),
        Some(json!({ "TableName": "tokentable" })),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let r = send(
        &client,
        &oauth.endpoint(),
        Method::POST,
        &format!("/{DEV_ACCOUNT}/tokentable"),
        Auth::Bearer(&token),
        Some(json!({ "PartitionKey": "p", "RowKey": "r" })),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    // Another audience is refused (401, as Azure).
    let other = unsigned_jwt("https://management.azure.com");
    let r = send(
        &client,
        &oauth.endpoint(),
        Method::GET,
        &tables,
        Auth::Bearer(&other),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text());
    assert_eq!(r.error_code(), "InvalidAuthenticationInfo");
    // Azure's bearer challenge comes with it.
    let challenge = r.headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with("Bearer authorization_uri=") && challenge.contains("resource_id="),
        "{challenge}"
    );

    // --oauth basic over plain HTTP: refused, Azurite's words.
    let mut config = Config::for_tests();
    config.oauth = Some(OAuthLevel::Basic);
    let http_oauth = TestServer::start_with(config).await.unwrap();
    let r = send(
        &reqwest::Client::new(),
        &http_oauth.endpoint(),
        Method::GET,
        &tables,
        Auth::Bearer(&token),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text());
    assert_eq!(r.error_code(), "AuthenticationFailed");
    assert!(
        r.text()
            .contains("Authentication scheme Bearer is not allowed with HTTP"),
        "{}",
        r.text()
    );

    // Without --oauth (Azurite's default): bearer tokens are not accepted, even over HTTPS.
    let no_oauth = TestServer::start_https(&cert.cert, &cert.key)
        .await
        .unwrap();
    let r = send(
        &client,
        &no_oauth.endpoint(),
        Method::GET,
        &tables,
        Auth::Bearer(&token),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text());
    assert_eq!(r.error_code(), "AuthenticationFailed");
}

#[tokio::test]
async fn pfx_certificate_with_a_password() {
    let cert = make_cert();
    let mut store = p12_keystore::KeyStore::new();
    let chain = p12_keystore::PrivateKeyChain::new(
        &cert.key_der,
        [1u8; 20],
        [p12_keystore::Certificate::from_der(&cert.cert_der).unwrap()],
    );
    store.add_entry(
        "tablestore",
        p12_keystore::KeyStoreEntry::PrivateKeyChain(chain),
    );
    let pfx = store.writer("s3cret").write().unwrap();
    let pfx_path = cert.cert.with_file_name("cert.pfx");
    std::fs::write(&pfx_path, pfx).unwrap();

    let mut config = Config::for_tests();
    config.cert = Some(pfx_path.clone());
    config.pwd = Some("s3cret".to_string());
    let server = TestServer::start_with(config).await.unwrap();
    let client = https_client(&cert);
    create_table(&client, &server.endpoint(), "pfxtable").await;

    let mut wrong = Config::for_tests();
    wrong.cert = Some(pfx_path);
    wrong.pwd = Some("wrong".to_string());
    let e = TestServer::start_with(wrong).await.err().expect("refused");
    assert!(e.to_string().contains("cannot be opened as a PFX"), "{e}");
}

#[tokio::test]
async fn a_stalled_handshake_does_not_hold_up_other_clients() {
    let cert = make_cert();
    let server = TestServer::start_https(&cert.cert, &cert.key)
        .await
        .unwrap();
    // Connections that never send a ClientHello.
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(tokio::net::TcpStream::connect(server.addr()).await.unwrap());
    }
    let client = https_client(&cert);
    let health = tokio::time::timeout(
        Duration::from_secs(5),
        client.get(format!("{}/_health", server.endpoint())).send(),
    )
    .await
    .expect("answered while other handshakes are pending")
    .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    drop(idle);
}

// Multi-threaded: the probe process is waited for synchronously while the in-process
// server keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthcheck_probes_over_tls() {
    let cert = make_cert();
    let server = TestServer::start_https(&cert.cert, &cert.key)
        .await
        .unwrap();
    let port = server.addr().port().to_string();
    let cert_arg = cert.cert.to_str().unwrap();
    let key_arg = cert.key.to_str().unwrap();
    let probe = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .env_clear()
            .output()
            .expect("the binary runs")
    };
    let ok = probe(&[
        "--healthcheck",
        "--port",
        &port,
        "--cert",
        cert_arg,
        "--key",
        key_arg,
    ]);
    assert!(ok.status.success(), "{ok:?}");
    // A plain-HTTP probe cannot read an HTTPS server's answer.
    let plain = probe(&["--healthcheck", "--port", &port]);
    assert_eq!(plain.status.code(), Some(1), "{plain:?}");
    server.shutdown().await.unwrap();
    let down = probe(&[
        "--healthcheck",
        "--port",
        &port,
        "--cert",
        cert_arg,
        "--key",
        key_arg,
    ]);
    assert_eq!(down.status.code(), Some(1), "{down:?}");
}

/// The binary with a certificate: HTTPS endpoint and connection string printed, requests
/// served, SIGTERM stops it cleanly.
#[tokio::test]
async fn the_binary_serves_https_and_prints_https_endpoints() {
    let cert = make_cert();
    let mut child = Command::new(BIN)
        .args([
            "--port",
            "0",
            "--in-memory",
            "--cert",
            cert.cert.to_str().unwrap(),
            "--key",
            cert.key.to_str().unwrap(),
            "--oauth",
            "basic",
        ])
        .env_clear()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) {
        let done = line.contains("Table service is successfully listening");
        lines.push(line);
        if done {
            break;
        }
    }
    let text = lines.join("\n");
    let endpoint = lines
        .iter()
        .find_map(|l| l.strip_prefix("tablestore listening on "))
        .unwrap_or_else(|| panic!("no endpoint line: {text}"))
        .to_string();
    assert!(endpoint.starts_with("https://127.0.0.1:"), "{text}");
    assert!(
        text.contains("Connection string: DefaultEndpointsProtocol=https;"),
        "{text}"
    );
    assert!(text.contains("TableEndpoint=https://127.0.0.1:"), "{text}");

    let client = https_client(&cert);
    let token = unsigned_jwt("https://storage.azure.com");
    let r = send(
        &client,
        &endpoint,
        Method::GET,
        &format!("/{DEV_ACCOUNT}/Tables"),
        Auth::Bearer(&token),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    // The access log names the credential.
    let logged = std::iter::from_fn(|| rx.recv_timeout(Duration::from_secs(5)).ok())
        .find(|l| l.contains("tablestore::request") && l.contains("/Tables"))
        .unwrap_or_default();
    assert!(logged.contains("auth=Bearer"), "{logged}");

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "graceful shutdown exits 0: {status:?}");
}

#[test]
fn bad_certificate_options_stop_start_up() {
    let cert = make_cert();
    let cert_arg = cert.cert.to_str().unwrap();
    let key_arg = cert.key.to_str().unwrap();
    for (args, words) in [
        (vec!["--cert", cert_arg], "needs --key"),
        (vec!["--key", key_arg], "--key needs --cert"),
        (
            vec!["--cert", "/nonexistent/cert.pem", "--key", key_arg],
            "cannot read --cert /nonexistent/cert.pem",
        ),
        // Certificate and key swapped.
        (
            vec!["--cert", key_arg, "--key", cert_arg],
            "holds no PEM certificate",
        ),
    ] {
        let mut full = vec!["--port", "0", "--in-memory"];
        full.extend(args.iter().copied());
        let mut child = Command::new(BIN)
            .args(&full)
            .env_clear()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success(), "{full:?} must not start");
        assert!(stderr.contains(words), "{full:?}: {stderr}");
    }
}

/// Only Microsoft Entra ID issuers (global and sovereign clouds, v1 and v2 tokens) are
/// accepted; any other is 401 with Azure's detail and the bearer challenge.
#[tokio::test]
async fn bearer_tokens_need_an_entra_id_issuer() {
    let cert = make_cert();
    let client = https_client(&cert);
    let mut config = https_config(&cert);
    config.oauth = Some(OAuthLevel::Basic);
    let server = TestServer::start_with(config).await.unwrap();
    let tables = format!("/{DEV_ACCOUNT}/Tables");
    let tid = "72f988bf-86f1-41af-91ab-2d7cd011db47";
    let accepted = [
        format!("https://sts.windows.net/{tid}/"),
        format!("https://sts.chinacloudapi.cn/{tid}/"),
        format!("https://login.microsoftonline.com/{tid}/v2.0"),
        format!("https://login.microsoftonline.us/{tid}/v2.0"),
        format!("https://login.partner.microsoftonline.cn/{tid}/v2.0"),
        format!("https://sts.windows-ppe.net/{tid}/"),
        format!("https://sts.windows-ppe.net/{tid}"),
    ];
    let refused = [
        "https://accounts.google.com".to_string(),
        "https://sts.windows.net/".to_string(),
        format!("https://login.microsoftonline.com/{tid}/"),
        format!("https://evil.example/{tid}/v2.0"),
    ];
    let cases = accepted
        .iter()
        .map(|iss| (iss, true))
        .chain(refused.iter().map(|iss| (iss, false)));
    for (iss, ok) in cases {
        let token = jwt_from("https://storage.azure.com", iss);
        let r = send(
            &client,
            &server.endpoint(),
            Method::GET,
            &tables,
            Auth::Bearer(&token),
            None,
        )
        .await;
        if ok {
            assert_eq!(r.status, StatusCode::OK, "{iss}: {}", r.text());
            continue;
        }
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{iss}: {}", r.text());
        assert_eq!(r.error_code(), "InvalidAuthenticationInfo", "{iss}");
        assert!(r.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer authorization_uri="));
    }
    // A token without `iss` is refused the same way; the XML form carries Azure's detail.
    let now = chrono::Utc::now().timestamp();
    let payload = URL_SAFE_NO_PAD.encode(
        json!({"aud": "https://storage.azure.com", "nbf": now - 60, "exp": now + 3600}).to_string(),
    );
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "RS256"}).to_string());
    let token = format!("{header}.{payload}.c2ln");
    let r = send(
        &client,
        &server.endpoint(),
        Method::GET,
        &format!("/{DEV_ACCOUNT}/?restype=service&comp=properties"),
        Auth::Bearer(&token),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text());
    assert!(
        r.text()
            .contains("Issuer validation failed. Issuer did not match."),
        "{}",
        r.text()
    );
}

/// `GET {path}` with `Authorization: Bearer {token}`.
async fn get_with_token(
    client: &reqwest::Client,
    endpoint: &str,
    path: &str,
    token: &str,
) -> Reply {
    send(
        client,
        endpoint,
        Method::GET,
        path,
        Auth::Bearer(token),
        None,
    )
    .await
}

/// A token with Azurite's test suite's claims (`generateJWTToken` in its `tests/testutils.ts`):
/// times as Unix seconds, `scp`, `oid`, `tid`.
fn suite_token(nbf: &str, exp: &str, iss: &str, aud: &str) -> String {
    let seconds = |day: &str| {
        chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d")
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc()
            .timestamp()
    };
    let header = URL_SAFE_NO_PAD.encode(json!({ "alg": "RS256", "typ": "JWT" }).to_string());
    let payload = URL_SAFE_NO_PAD.encode(
        json!({
            "nbf": seconds(nbf),
            "iat": seconds("2019-01-01"),
            "exp": seconds(exp),
            "iss": iss,
            "aud": aud,
            "scp": "user_impersonation",
            "oid": "23657296-5cd5-45b0-a809-d972a7f4dfe1",
            "tid": "dd0d0df1-06c3-436c-8034-4b9a153097ce",
        })
        .to_string(),
    );
    format!("{header}.{payload}.c2lnbmF0dXJlLW5vdC1jaGVja2Vk")
}

/// The token forms of Azurite's OAuth tests, on the wire: its pre-production issuer with every
/// audience it lists, the sovereign-cloud issuers, and the refusals (issuer, audience, `nbf`,
/// `exp`) with Azure's 401 `InvalidAuthenticationInfo`, detail and challenge.
#[tokio::test]
async fn the_token_forms_of_azurites_suite() {
    let cert = make_cert();
    let client = https_client(&cert);
    let mut config = https_config(&cert);
    config.oauth = Some(OAuthLevel::Basic);
    let server = TestServer::start_with(config).await.unwrap();
    let endpoint = server.endpoint();
    let tenant = "ab1f708d-50f6-404c-a006-d71b2ac7a606";
    let ppe = format!("https://sts.windows-ppe.net/{tenant}/");
    let (valid_from, valid_to) = ("2019-01-01", "2100-01-01");

    // Azurite's "Should work with create table" token, then each of its valid audiences.
    let token = suite_token(valid_from, valid_to, &ppe, "https://storage.azure.com");
    let table = "oauthsuiteforms";
    let r = send(
        &client,
        &endpoint,
        Method::POST,
        &format!("/{DEV_ACCOUNT}/Tables"),
        Auth::Bearer(&token),
        Some(json!({ "TableName": table })),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let audiences = [
        "https://storage.azure.com",
        "https://storage.azure.com/",
        "e406a681-f3d4-42a8-90b6-c2b029497af1",
        "https://devstoreaccount1.table.core.windows.net",
        "https://devstoreaccount1.table.core.windows.net/",
        "https://devstoreaccount1.table.core.chinacloudapi.cn",
        "https://devstoreaccount1.table.core.chinacloudapi.cn/",
        "https://devstoreaccount1.table.core.usgovcloudapi.net",
        "https://devstoreaccount1.table.core.usgovcloudapi.net/",
        "https://devstoreaccount1.table.core.cloudapi.de",
        "https://devstoreaccount1.table.core.cloudapi.de/",
    ];
    // The issuers of its valid-issuer list, each with one tenant segment (the PPE one also
    // without the trailing `/`).
    let issuers = [
        format!("https://sts.windows.net/{tenant}/"),
        format!("https://sts.microsoftonline.de/{tenant}/"),
        format!("https://sts.chinacloudapi.cn/{tenant}/"),
        format!("https://sts.windows-ppe.net/{tenant}"),
        ppe.clone(),
    ];
    let accepted = audiences
        .iter()
        .map(|aud| {
            (
                aud.to_string(),
                suite_token(valid_from, valid_to, &ppe, aud),
            )
        })
        .chain(issuers.iter().map(|iss| {
            let token = suite_token(valid_from, valid_to, iss, STORAGE_APP_ID);
            (iss.clone(), token)
        }));
    for (what, token) in accepted {
        let path = format!("/{DEV_ACCOUNT}/{table}()");
        let r = get_with_token(&client, &endpoint, &path, &token).await;
        assert_eq!(r.status, StatusCode::OK, "{what}: {}", r.text());
    }

    let table_aud = "https://devstoreaccount1.table.core.windows.net";
    let refused = [
        (
            suite_token(
                valid_from,
                valid_to,
                &format!("https://invalidissuer/{tenant}/"),
                table_aud,
            ),
            "Issuer validation failed. Issuer did not match.",
        ),
        // Azurite's list written as `{prefix}/{tenant}/`: an empty segment before the tenant.
        (
            suite_token(
                valid_from,
                valid_to,
                &format!("https://sts.windows.net//{tenant}/"),
                table_aud,
            ),
            "Issuer validation failed. Issuer did not match.",
        ),
        (
            suite_token(
                valid_from,
                valid_to,
                &ppe,
                "https://invalidaccount.table.core.windows.net",
            ),
            "Audience validation failed. Audience did not match.",
        ),
        (
            suite_token("2119-01-01", valid_to, &ppe, table_aud),
            "Lifetime validation failed. The token is not yet valid.",
        ),
        (
            suite_token(valid_from, "2019-01-01", &ppe, table_aud),
            "Lifetime validation failed. The token is expired.",
        ),
    ];
    for (token, detail) in refused {
        let r = get_with_token(
            &client,
            &endpoint,
            &format!("/{DEV_ACCOUNT}/Tables"),
            &token,
        )
        .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{detail}: {}", r.text());
        assert_eq!(r.error_code(), "InvalidAuthenticationInfo", "{detail}");
        assert!(r.text().contains(detail), "{detail}: {}", r.text());
        assert!(r.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer authorization_uri="));
    }
}

/// An X.509 version 1 certificate (what `openssl x509 -req -signkey` makes) is served as
/// given: a client that chooses to trust it completes the handshake. A key that does not
/// belong to the certificate stops start-up with one sentence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_1_certificates_are_served() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls");
    let (v1_cert, v1_key) = (fixtures.join("v1-cert.pem"), fixtures.join("v1-key.pem"));
    let server = TestServer::start_https(&v1_cert, &v1_key)
        .await
        .expect("a v1 certificate is served");
    // The health probe trusts any certificate: it is a real TLS handshake and request.
    let port = server.addr().port().to_string();
    let probe = Command::new(BIN)
        .args(["--healthcheck", "--port", &port, "--cert"])
        .arg(&v1_cert)
        .arg("--key")
        .arg(&v1_key)
        .env_clear()
        .output()
        .unwrap();
    assert!(probe.status.success(), "{probe:?}");
    server.shutdown().await.unwrap();

    // The same certificate with another key: one clear line, no Rust debug text.
    let other = make_cert();
    let out = Command::new(BIN)
        .args(["--port", "0", "--in-memory", "--cert"])
        .arg(&v1_cert)
        .arg("--key")
        .arg(&other.key)
        .env_clear()
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("does not match the certificate")
            && stderr.contains(other.key.to_str().unwrap()),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        !stderr.contains("UnsupportedCertVersion") && !stderr.contains("Error {"),
        "{stderr}"
    );
}
