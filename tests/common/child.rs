//! The `tablestore` binary as a child process on a data folder (crash, fault and durability
//! tests); the tests' one request signer (Shared Key Lite and SAS tokens, over the server's own
//! string-to-sign and signature code in `tablestore::auth::canonical`); and a signing HTTP
//! client for any account and endpoint.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::Reply;
use tablestore::auth::canonical;
use tablestore::config::{DEV_ACCOUNT, DEV_ACCOUNT_KEY};

/// How long a child may take to print its address.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `tablestore` process. Killed (SIGKILL) when dropped.
pub struct ChildServer {
    child: Child,
    pub addr: SocketAddr,
    pub dir: PathBuf,
    /// Everything the child printed on stderr after start-up, collected in the background.
    stderr: mpsc::Receiver<String>,
    /// Stdout (the log) after start-up.
    stdout: mpsc::Receiver<String>,
    /// Stdout up to and including the `tablestore listening on` line.
    pub start_up: String,
}

/// A start-up that failed: the exit status (if the process ended) and what it printed.
#[derive(Debug)]
pub struct StartFailure {
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
}

pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_tablestore")
}

/// The command that starts the binary on `dir` with `--port 0` (plus `args` and `env`),
/// its output piped.
pub fn command(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(binary());
    command
        .args(["--host", "127.0.0.1", "--port", "0"])
        // Quiet unless the test asks for a level (the access-log tests need `info`).
        .args(if args.contains(&"--log-level") {
            &[][..]
        } else {
            &["--log-level", "warn"][..]
        })
        .arg("--location")
        .arg(dir)
        .args(args)
        .env_remove("AZURITE_ACCOUNTS")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

impl ChildServer {
    /// Starts the binary on `dir` with `--port 0` (plus `args`) and waits for its address.
    pub fn start(dir: &Path, args: &[&str]) -> ChildServer {
        match ChildServer::try_start(dir, args) {
            Ok(s) => s,
            Err(f) => panic!("tablestore did not start: {f:?}"),
        }
    }

    pub fn try_start(dir: &Path, args: &[&str]) -> Result<ChildServer, StartFailure> {
        ChildServer::try_start_with_env(dir, args, &[])
    }

    /// [`ChildServer::try_start`] with extra environment variables.
    pub fn try_start_with_env(
        dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<ChildServer, StartFailure> {
        let mut child = command(dir, args, env).spawn().expect("spawn tablestore");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let (line_tx, line_rx) = mpsc::channel::<String>();
        let out_tx = line_tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = out_tx.send(format!("out:{line}"));
            }
        });
        let (err_tx, err_rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = err_tx.send(line);
            }
        });
        drop(line_tx);
        let deadline = Instant::now() + START_TIMEOUT;
        let mut seen = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match line_rx.recv_timeout(left.min(Duration::from_millis(100))) {
                Ok(line) => {
                    let line = line.trim_start_matches("out:").to_string();
                    seen.push_str(&line);
                    seen.push('\n');
                    if let Some(addr) = line
                        .strip_prefix("tablestore listening on http://")
                        .and_then(|a| a.trim().parse().ok())
                    {
                        return Ok(ChildServer {
                            child,
                            addr,
                            dir: dir.to_path_buf(),
                            stderr: err_rx,
                            stdout: line_rx,
                            start_up: seen,
                        });
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {
                    if let Ok(Some(status)) = child.try_wait() {
                        return Err(StartFailure {
                            status: Some(status),
                            stdout: seen,
                            stderr: drain(&err_rx, Duration::from_secs(2)),
                        });
                    }
                }
                Err(_) => {
                    // Stdout closed or time is up: the process ended or hangs.
                    let status = wait_bounded(&mut child, Duration::from_secs(5));
                    if status.is_none() {
                        let _ = child.kill();
                        let _ = child.wait();
                    }
                    return Err(StartFailure {
                        status,
                        stdout: seen,
                        stderr: drain(&err_rx, Duration::from_secs(2)),
                    });
                }
            }
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`: no flush, no clean-up.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then waits (bounded) for the exit status.
    pub fn terminate(mut self) -> ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        match wait_bounded(&mut self.child, Duration::from_secs(30)) {
            Some(s) => s,
            None => panic!("tablestore did not exit within 30 s of SIGTERM"),
        }
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// What the child printed on stderr so far.
    pub fn stderr_so_far(&self) -> String {
        drain(&self.stderr, Duration::from_millis(50))
    }

    /// What the child logged (stdout) so far.
    pub fn log_so_far(&self) -> String {
        drain(&self.stdout, Duration::from_millis(50))
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn drain(rx: &mpsc::Receiver<String>, wait: Duration) -> String {
    let deadline = Instant::now() + wait;
    let mut out = String::new();
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn wait_bounded(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// Signs requests with Shared Key Lite for one account.
#[derive(Clone)]
pub struct Signer {
    pub account: String,
    pub key: Vec<u8>,
}

impl Signer {
    pub fn dev() -> Signer {
        Signer::new(DEV_ACCOUNT, DEV_ACCOUNT_KEY)
    }

    pub fn new(account: &str, key_base64: &str) -> Signer {
        let key = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, key_base64)
            .expect("key is base64");
        Signer {
            account: account.to_string(),
            key,
        }
    }

    /// `x-ms-date` and a Shared Key Lite `Authorization` for a request line's raw path and
    /// query.
    pub fn sign(&self, raw_path: &str, raw_query: Option<&str>) -> (String, String) {
        let date = now_rfc1123();
        let resource = canonical::canonicalized_resource(&self.account, raw_path, raw_query);
        let sts = canonical::shared_key_lite_string_to_sign(&date, &resource);
        let signature = canonical::compute_signature(&self.key, &sts);
        (date, format!("SharedKeyLite {}:{signature}", self.account))
    }

    /// `x-ms-date` and a Shared Key (full) `Authorization` for a request with no Content-MD5.
    pub fn sign_shared_key(
        &self,
        method: &str,
        content_type: &str,
        raw_path: &str,
        raw_query: Option<&str>,
    ) -> (String, String) {
        let date = now_rfc1123();
        let resource = canonical::canonicalized_resource(&self.account, raw_path, raw_query);
        let sts = canonical::shared_key_string_to_sign(method, "", content_type, &date, &resource);
        let signature = canonical::compute_signature(&self.key, &sts);
        (date, format!("SharedKey {}:{signature}", self.account))
    }

    /// A service SAS query string for this account: the fields that are set, then `sig`.
    pub fn service_sas(&self, f: &canonical::ServiceSasFields<'_>) -> String {
        let sts = canonical::service_sas_string_to_sign(&self.account, f);
        let sig = canonical::compute_signature(&self.key, &sts);
        sas_query(&[
            ("sv", f.sv),
            ("tn", f.tn),
            ("sp", f.sp),
            ("st", f.st),
            ("se", f.se),
            ("si", f.si),
            ("sip", f.sip),
            ("spr", f.spr),
            ("spk", f.spk),
            ("srk", f.srk),
            ("epk", f.epk),
            ("erk", f.erk),
            ("sig", &sig),
        ])
    }

    /// An account SAS for every table permission (`rwdlacu`) on service, container and object
    /// (`sco`), HTTP or HTTPS, expiring in 2099.
    pub fn account_sas_all(&self) -> String {
        self.account_sas(&canonical::AccountSasFields {
            sp: "rwdlacu",
            ss: "t",
            srt: "sco",
            se: "2099-01-01T00:00:00Z",
            spr: "https,http",
            sv: "2019-02-02",
            ..Default::default()
        })
    }

    /// An account SAS query string for this account: the fields that are set, then `sig`.
    pub fn account_sas(&self, f: &canonical::AccountSasFields<'_>) -> String {
        let sts = canonical::account_sas_string_to_sign(&self.account, f);
        let sig = canonical::compute_signature(&self.key, &sts);
        sas_query(&[
            ("sv", f.sv),
            ("ss", f.ss),
            ("srt", f.srt),
            ("sp", f.sp),
            ("st", f.st),
            ("se", f.se),
            ("sip", f.sip),
            ("spr", f.spr),
            ("ses", f.ses),
            ("sig", &sig),
        ])
    }
}

/// The `x-ms-date` form of now: `Wed, 25 Nov 2026 18:00:00 GMT`.
fn now_rfc1123() -> String {
    chrono::Utc::now()
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

/// `k=v&…` of the non-empty fields, values percent-encoded.
fn sas_query(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", super::url::encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// A signing client for one account at one endpoint, path style; errors are returned (a
/// killed server is expected in crash tests).
#[derive(Clone)]
pub struct Client {
    pub http: reqwest::Client,
    /// `http://127.0.0.1:port`
    pub endpoint: String,
    pub signer: Signer,
    /// The in-process server requests go to instead of `endpoint`'s socket
    /// ([`super::TestServer::client_as`]).
    in_process: Option<std::sync::Arc<tablestore::testing::InProcessServer>>,
    /// The account's URL when it is not `{endpoint}/{account}` (the root under Cosmos).
    account_url: Option<String>,
}

impl Client {
    pub fn new(endpoint: &str, signer: Signer) -> Client {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(4)
            .build()
            .expect("client");
        Client {
            http,
            endpoint: endpoint.to_string(),
            signer,
            in_process: None,
            account_url: None,
        }
    }

    /// This client with requests addressed below `account_url` instead of path style.
    pub fn at(mut self, account_url: String) -> Client {
        self.account_url = Some(account_url);
        self
    }

    /// A client of `server`, in this process (no socket).
    pub fn in_process(
        server: std::sync::Arc<tablestore::testing::InProcessServer>,
        signer: Signer,
    ) -> Client {
        let mut client = Client::new(&server.endpoint(), signer);
        client.in_process = Some(server);
        client
    }

    /// Sends `request`, over the socket or in process.
    async fn exchange(&self, request: reqwest::RequestBuilder) -> Result<Reply, reqwest::Error> {
        match &self.in_process {
            None => Reply::read(request.send().await?).await,
            Some(server) => {
                let request = super::in_process(request.build()?);
                Ok(Reply::from(server.answer(request).await))
            }
        }
    }

    /// Sends `method` to `path` below the account (path style), signed, JSON Accept unless
    /// given; a body defaults to `Content-Type: application/json`.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Result<Reply, reqwest::Error> {
        let url = format!("{}{}", self.account_url(), path);
        let headers: Vec<(&str, &str)> = [("x-ms-version", "2019-02-02")]
            .into_iter()
            .chain(headers.iter().copied())
            .collect();
        let signing = super::Signing::As(&self.signer);
        let req = super::request(&self.http, method, &url, &headers, body, signing);
        self.exchange(req).await
    }

    /// [`Client::send`] with a JSON body, for a request that must be answered: a failure to
    /// answer names the request and the endpoint.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<serde_json::Value>,
    ) -> Reply {
        self.send(
            method,
            path,
            headers,
            body.map(|b| b.to_string().into_bytes()),
        )
        .await
        .unwrap_or_else(|e| panic!("{method} {path} on {}: {e}", self.endpoint))
    }

    /// Inserts `entity` into `table` with the caller's headers; returns the reply whatever it
    /// is (unlike [`Client::insert`], which asserts a 204).
    pub async fn post_entity(
        &self,
        table: &str,
        entity: &serde_json::Value,
        headers: &[(&str, &str)],
    ) -> Result<Reply, reqwest::Error> {
        let body = entity.to_string().into_bytes();
        self.send("POST", &format!("/{table}"), headers, Some(body))
            .await
    }

    /// Inserts `entity` into `table` (`Prefer: return-no-content`) and asserts 204.
    pub async fn insert(&self, table: &str, entity: &serde_json::Value) -> Reply {
        let prefer = [("Prefer", "return-no-content")];
        let r = self
            .post_entity(table, entity, &prefer)
            .await
            .unwrap_or_else(|e| panic!("insert into {table} on {}: {e}", self.endpoint));
        assert_eq!(
            r.status.as_u16(),
            204,
            "insert on {}: {}",
            self.endpoint,
            r.text()
        );
        r
    }

    /// `http://127.0.0.1:port/<account>`, the base of [`BatchBody`](super::batch::BatchBody)'s
    /// sub-request URLs.
    pub fn account_url(&self) -> String {
        match &self.account_url {
            Some(url) => url.clone(),
            None => format!("{}/{}", self.endpoint, self.signer.account),
        }
    }

    /// Posts `batch` (its whole change set) to `/$batch` with its multipart Content-Type.
    pub async fn send_batch(
        &self,
        batch: &super::batch::BatchBody,
    ) -> Result<Reply, reqwest::Error> {
        let content_type = batch.content_type();
        let headers = [("Content-Type", content_type.as_str())];
        self.send("POST", "/$batch", &headers, Some(batch.body().into_bytes()))
            .await
    }

    /// Creates table `name` and asserts 201 Created.
    pub async fn create_table(&self, name: &str) {
        let body = format!(r#"{{"TableName":"{name}"}}"#).into_bytes();
        let r = self
            .send("POST", "/Tables", &[], Some(body))
            .await
            .expect("create table");
        assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    }

    /// `GET /_health` answers 200.
    pub async fn healthy(&self) -> bool {
        match self
            .exchange(self.http.get(format!("{}/_health", self.endpoint)))
            .await
        {
            Ok(r) => r.status.is_success(),
            Err(_) => false,
        }
    }
}
