//! The `tablestore` binary as users start it: Azurite-style command lines and environment,
//! `--help`/`--version`, bad flags, `--silent`, `--debug FILE` and `--healthcheck`
//! (issue 6: drop-in replacement for Azurite's table endpoint).
//!

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::StatusCode;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_tablestore");

/// A `tablestore` process on a free port; killed when dropped.
struct Server {
    child: Child,
    port: u16,
    output: Arc<Mutex<String>>,
}

impl Server {
    /// Starts the binary with `args` and only the environment in `env`, and waits for the
    /// line naming its port.
    fn start(args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .env_clear()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("the binary starts");
        let output = Arc::new(Mutex::new(String::new()));
        let (port_tx, port_rx) = mpsc::channel::<u16>();
        let stdout = child.stdout.take().expect("stdout is piped");
        let out = Arc::clone(&output);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("tablestore listening on http://") {
                    if let Some(port) = rest.rsplit(':').next().and_then(|p| p.parse().ok()) {
                        let _ = port_tx.send(port);
                    }
                }
                let mut o = out.lock().unwrap();
                o.push_str(&line);
                o.push('\n');
            }
        });
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let err = Arc::clone(&output);
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            err.lock().unwrap().push_str(&text);
        });
        let port = match port_rx.recv_timeout(Duration::from_secs(20)) {
            Ok(p) => p,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                std::thread::sleep(Duration::from_millis(200));
                panic!(
                    "no listening line; output:\n{}",
                    output.lock().unwrap().as_str()
                );
            }
        };
        Server {
            child,
            port,
            output,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn account_url(&self) -> String {
        format!("{}/devstoreaccount1", self.endpoint())
    }

    /// Everything printed so far, after a short pause for the reader threads.
    fn output(&self) -> String {
        std::thread::sleep(Duration::from_millis(300));
        self.output.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_clear()
        .output()
        .expect("the binary runs")
}

/// Signs a request to `url` for the development account (Shared Key Lite).
fn signed(req: reqwest::RequestBuilder, url: &str) -> reqwest::RequestBuilder {
    let parsed = reqwest::Url::parse(url).expect("valid url");
    let (date, authorization) = common::sign_lite(parsed.path(), parsed.query());
    req.header("x-ms-date", date)
        .header("Authorization", authorization)
}

async fn post_json(url: &str, body: &str, headers: &[(&str, &str)]) -> (StatusCode, String) {
    let mut req = signed(reqwest::Client::new().post(url), url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json;odata=nometadata")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.expect("answered");
    let status = r.status();
    (status, r.text().await.expect("body"))
}

async fn get(url: &str) -> (StatusCode, String) {
    let r = signed(reqwest::Client::new().get(url), url)
        .header("Accept", "application/json;odata=nometadata")
        .send()
        .await
        .expect("answered");
    let status = r.status();
    (status, r.text().await.expect("body"))
}

#[tokio::test]
async fn azurite_table_flags_serve_health_and_a_table_round_trip() {
    let s = Server::start(
        &[
            "--tableHost",
            "127.0.0.1",
            "--tablePort",
            "0",
            "--inMemoryPersistence",
            "--loose",
            "--skipApiVersionCheck",
        ],
        &[],
    );
    let (status, body) = get(&format!("{}/_health", s.endpoint())).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "OK"));

    // --skipApiVersionCheck: a version this server has never heard of is accepted.
    let future = [("x-ms-version", "2099-01-01-preview")];
    let (status, body) = post_json(
        &format!("{}/Tables", s.account_url()),
        r#"{"TableName":"people"}"#,
        &future,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = post_json(
        &format!("{}/people", s.account_url()),
        r#"{"PartitionKey":"nl","RowKey":"1","Name":"Ada"}"#,
        &future,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = get(&format!(
        "{}/people(PartitionKey='nl',RowKey='1')",
        s.account_url()
    ))
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(r#""Name":"Ada""#), "{body}");
    let (status, _) = post_json(
        &format!("{}/Tables", s.account_url()),
        r#"{"TableName":"people"}"#,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);

    let out = s.output();
    // Azurite 3.35's readiness line, word for word.
    assert!(
        out.contains("\nAzurite Table service is successfully listening at http://127.0.0.1:"),
        "{out}"
    );
    assert!(out.contains("Storage: in memory"), "{out}");
    // The access log: one line per request with its status and request id.
    let line = out
        .lines()
        .find(|l| l.contains("tablestore::request") && l.contains("path=/devstoreaccount1/people"))
        .unwrap_or_else(|| panic!("no access log line:\n{out}"));
    for part in [
        "method=POST",
        "status=201",
        "latency_ms=",
        "request_id=",
        "auth=SharedKey",
        "error=-",
    ] {
        assert!(line.contains(part), "{part} missing from {line}");
    }
    // A failed request's line names the Azure error code.
    let failed = out
        .lines()
        .find(|l| l.contains("tablestore::request") && l.contains("status=409"))
        .unwrap_or_else(|| panic!("no access log line for the 409:\n{out}"));
    assert!(failed.contains("error=TableAlreadyExists"), "{failed}");
}

#[tokio::test]
async fn azurite_image_command_line_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    // The shape of the Azurite image's command line (`azurite -l /data --blobHost … `).
    let s = Server::start(
        &[
            "azurite",
            "-l",
            location,
            "--blobHost",
            "127.0.0.1",
            "--queueHost",
            "127.0.0.1",
            "--tableHost",
            "127.0.0.1",
            "--tablePort",
            "0",
            "--disableTelemetry",
        ],
        &[],
    );
    let (status, _) = post_json(
        &format!("{}/Tables", s.account_url()),
        r#"{"TableName":"ondisk"}"#,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(dir.path().join("__tablestore__").is_dir());
    let out = s.output();
    assert!(
        out.contains("ignoring --blobHost, --queueHost: tablestore serves only the Table service"),
        "{out}"
    );
}

#[tokio::test]
async fn environment_configures_the_server() {
    let s = Server::start(
        &[],
        &[
            ("TABLESTORE_HOST", "0.0.0.0"),
            ("TABLESTORE_PORT", "0"),
            ("TABLESTORE_IN_MEMORY", "1"),
            ("TABLESTORE_SILENT", "yes"),
            ("TABLESTORE_LOOSE", "off"),
            ("AZURITE_SKIP_API_VERSION_CHECK", "true"),
        ],
    );
    let (status, body) = post_json(
        &format!("{}/Tables", s.account_url()),
        r#"{"TableName":"fromenv"}"#,
        &[("x-ms-version", "not-a-version")],
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let out = s.output();
    assert!(out.contains("Storage: in memory"), "{out}");
    assert!(
        !out.contains("tablestore::request"),
        "TABLESTORE_SILENT=yes: {out}"
    );
    // Listening on the wildcard address, the printed connection string names loopback.
    assert!(
        out.contains("tablestore listening on http://0.0.0.0:"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "TableEndpoint=http://127.0.0.1:{}/devstoreaccount1;",
            s.port
        )),
        "{out}"
    );
}

/// A new data folder gets the compression `--compression` names (lz4 by default), and a
/// folder keeps what it was created with whatever the flag says later; start-up says which.
#[test]
fn compression_is_chosen_when_a_folder_is_created() {
    let read = |dir: &std::path::Path, file: &str| {
        String::from_utf8_lossy(&std::fs::read(dir.join("__tablestore__").join(file)).unwrap())
            .into_owned()
    };
    // What a server on `dir` with `extra` arguments and `env` prints at start-up (it is
    // stopped before the folder is read).
    let start_up = |dir: &std::path::Path, extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["--location", dir.to_str().unwrap(), "--port", "0"];
        args.extend_from_slice(extra);
        Server::start(&args, env).output()
    };
    // (compression, sled's log compressed, store format, how it is reopened); lz4 is the
    // default, zstd is asked for by environment, off by flag.
    let cases = [
        ("lz4", false, "2", "off"),
        ("zstd", true, "1", "lz4"),
        ("off", false, "1", "zstd"),
    ];
    for (name, log_compressed, format, later) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = match name {
            "lz4" => start_up(dir.path(), &[], &[]),
            "zstd" => start_up(dir.path(), &[], &[("TABLESTORE_COMPRESSION", "zstd")]),
            _ => start_up(dir.path(), &["--compression", name], &[]),
        };
        let chosen = format!("Compression: {name} (--compression lz4|zstd|off chooses");
        assert!(out.contains(&chosen), "{name}: {out}");
        assert!(read(dir.path(), "conf").contains(&format!("use_compression: {log_compressed}")));
        assert!(read(dir.path(), "tablestore-format")
            .starts_with(&format!("tablestore data folder, store format {format}\n")));

        let out = start_up(dir.path(), &["--compression", later], &[]);
        let kept = format!(
            "Compression: {name} (this data folder was created with it; --compression {later} \
             applies to new folders)"
        );
        assert!(out.contains(&kept), "{name} reopened with {later}: {out}");
        assert!(read(dir.path(), "conf").contains(&format!("use_compression: {log_compressed}")));
    }
}

/// The on-disk store shows its RAM tier's budget at start-up: 256 MiB by default, off with 0
/// (by flag or environment); the in-memory store has none.
#[test]
fn the_memory_budget_is_shown_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let s = Server::start(&["--location", location, "--port", "0"], &[]);
    let out = s.output();
    assert!(
        out.contains("Memory budget: 256 MiB for tables read from RAM"),
        "{out}"
    );
    drop(s);
    let s = Server::start(
        &["--location", location, "--port", "0"],
        &[("TABLESTORE_MEMORY_BUDGET", "0")],
    );
    assert!(s.output().contains("Memory budget: off"), "{}", s.output());
    drop(s);
    let s = Server::start(&["--in-memory", "--port", "0"], &[]);
    assert!(!s.output().contains("Memory budget"));
}

/// `--write-buffer` (and its environment variable) sized the write-ahead log, which was
/// removed: either is answered with one sentence saying so and why, and nothing starts.
#[test]
fn the_removed_write_buffer_is_answered_with_one_sentence() {
    let by_flag = run(&["--in-memory", "--port", "0", "--write-buffer", "32"]);
    let by_env = Command::new(BIN)
        .args(["--in-memory", "--port", "0"])
        .env_clear()
        .env("TABLESTORE_WRITE_BUFFER", "32")
        .output()
        .unwrap();
    for (out, named) in [
        (by_flag, "--write-buffer"),
        (by_env, "TABLESTORE_WRITE_BUFFER"),
    ] {
        assert!(!out.status.success(), "{named} started a server");
        let said = String::from_utf8_lossy(&out.stderr);
        let first = said.lines().next().unwrap_or_default();
        assert!(first.contains(&format!("{named} was removed")), "{said}");
        assert!(first.contains("slower"), "says why: {said}");
    }
}

#[tokio::test]
async fn silent_and_debug_log() {
    let dir = tempfile::tempdir().unwrap();
    let debug_file = dir.path().join("debug.log");
    let s = Server::start(
        &[
            "--tablePort",
            "0",
            "--inMemoryPersistence",
            "-s",
            "-d",
            debug_file.to_str().unwrap(),
        ],
        &[],
    );
    let url = format!("{}/Tables", s.account_url());
    let parsed = reqwest::Url::parse(&url).unwrap();
    let (date, authorization) = common::sign_lite(parsed.path(), parsed.query());
    let signature = authorization.rsplit(':').next().unwrap().to_string();
    let r = reqwest::Client::new()
        .post(&url)
        .header("Content-Type", "application/json")
        .header("x-ms-date", date)
        .header("Authorization", &authorization)
        .body(r#"{"TableName":"traced"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    let out = s.output();
    assert!(!out.contains("tablestore::request"), "--silent: {out}");
    let trace = std::fs::read_to_string(&debug_file).unwrap();
    assert!(
        trace.contains("request POST /devstoreaccount1/Tables"),
        "{trace}"
    );
    assert!(
        trace.contains(r#"body="{\"TableName\":\"traced\"}""#),
        "{trace}"
    );
    assert!(trace.contains("response 201"), "{trace}");
    assert!(
        trace.contains("SharedKeyLite devstoreaccount1:<redacted>"),
        "{trace}"
    );
    assert!(!trace.contains(&signature), "the signature leaked: {trace}");
}

#[tokio::test]
async fn healthcheck_mode() {
    let s = Server::start(&["--tablePort", "0", "--inMemoryPersistence"], &[]);
    let port = s.port.to_string();
    let ok = run(&["--healthcheck", "--tablePort", &port]);
    assert!(ok.status.success(), "{ok:?}");
    // The probe maps a wildcard listen address to loopback, as inside a container.
    let ok = run(&[
        "--healthcheck",
        "--tableHost",
        "0.0.0.0",
        "--tablePort",
        &port,
    ]);
    assert!(ok.status.success(), "{ok:?}");
    drop(s);
    let down = run(&["--healthcheck", "--tablePort", &port]);
    assert_eq!(down.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&down.stderr).contains("not healthy"));
}

#[test]
fn help_lists_the_azurite_options() {
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for option in [
        "--tableHost",
        "--tablePort",
        "--location",
        "--inMemoryPersistence",
        "--loose",
        "--skipApiVersionCheck",
        "--disableProductStyleUrl",
        "--silent",
        "--debug",
        "--cert",
        "--key",
        "--pwd",
        "--oauth",
        "--disable-auth",
        "--healthcheck",
        "--blobHost",
        "--queueHost",
        "AZURITE_ACCOUNTS",
    ] {
        assert!(
            help.contains(option),
            "{option} missing from --help:\n{help}"
        );
    }
}

#[test]
fn version_is_printed() {
    for flag in ["--version", "-v", "-V"] {
        let out = run(&[flag]);
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("tablestore {}", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn bad_command_lines_fail_with_a_message() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["--tableHots", "0.0.0.0"],
            "unexpected argument '--tableHots'",
        ),
        (&["--debug"], "a value is required for '--debug <FILE>'"),
        (&["--tablePort", "http"], "invalid value 'http'"),
        (&["--memory-budget", "lots"], "invalid value 'lots'"),
        (&["--compression", "gzip"], "invalid value 'gzip'"),
        (&["azurite-blob"], "only the Table service"),
    ];
    for (args, message) in cases {
        let out = run(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

/// A start-up error is one sentence on stderr: no Rust debug text, exit status 1.
fn assert_one_clear_sentence(out: &Output, expected: &str) {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(expected), "{expected:?} missing: {stderr}");
    for debug_text in ["Io(", "Os {", "kind:", "os error"] {
        assert!(!stderr.contains(debug_text), "debug text in: {stderr}");
    }
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
fn a_data_location_that_is_a_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, "not a folder").unwrap();
    let out = run(&["--tablePort", "0", "--location", file.to_str().unwrap()]);
    assert_one_clear_sentence(&out, "is a file, not a folder");
    assert!(file.is_file(), "the file was left as it was");
}

#[test]
fn a_data_folder_in_use_names_the_other_server() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let _first = Server::start(&["--tablePort", "0", "--location", location], &[]);
    let out = run(&["--tablePort", "0", "--location", location]);
    assert_one_clear_sentence(&out, "another tablestore is using");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--location"));
}

#[test]
fn a_busy_port_fails_before_any_folder_is_created() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("new");
    let out = run(&[
        "--tableHost",
        "127.0.0.1",
        "--tablePort",
        &port,
        "--location",
        location.to_str().unwrap(),
    ]);
    assert_one_clear_sentence(&out, "is already in use");
    assert!(!location.exists(), "a folder was created before failing");
}

/// The `--tableKeepAliveTimeout` warning states the idle timeout the server really applies.
#[test]
fn the_keep_alive_warning_states_the_real_idle_timeout() {
    let config = tablestore::config::Config::try_parse_args(
        ["tablestore", "--tableKeepAliveTimeout", "5"],
        |_| None,
    )
    .unwrap();
    let secs = tablestore::server::ServeLimits::default()
        .header_read_timeout
        .as_secs();
    let expected = format!("an idle connection is closed after {secs} s without a request");
    assert!(
        config.warnings().iter().any(|w| w.contains(&expected)),
        "{:?}",
        config.warnings()
    );
}
