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

use crate::common;

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
        Server::start_program(BIN, args, env)
    }

    /// [`Server::start`] of the binary under another name (a link to it).
    fn start_program(program: &str, args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = piped(program, args, env.iter().copied())
            .spawn()
            .expect("the binary starts");
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

/// `program` (the binary or a link to it) with `args` and only the environment `env`, no
/// input and its output piped.
fn piped<A, K, V>(
    program: &str,
    args: impl IntoIterator<Item = A>,
    env: impl IntoIterator<Item = (K, V)>,
) -> Command
where
    A: AsRef<std::ffi::OsStr>,
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
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
        "--metrics-token",
        "--import-azurite-if-present",
        "tablestore admin --help",
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

/// What a run of the binary printed, and whether it was accepted (it became ready and was
/// stopped) or refused (it exited on its own, with this status).
struct Outcome {
    output: String,
    refused: Option<i32>,
}

/// Runs the binary with `args` and only the environment `env`, in `cwd`, until it exits or
/// prints a readiness line (then it is stopped).
fn run_to_verdict(args: &[String], env: &[(String, String)], cwd: &std::path::Path) -> Outcome {
    let mut child = piped(BIN, args, env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .spawn()
        .expect("the binary starts");
    let output = Arc::new(Mutex::new(String::new()));
    let readers: Vec<_> = [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ]
    .into_iter()
    .map(|stream| {
        let out = Arc::clone(&output);
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                let mut o = out.lock().unwrap();
                o.push_str(&line);
                o.push('\n');
            }
        })
    })
    .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let refused = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status.code().unwrap_or(-1));
        }
        let ready = output.lock().unwrap().contains("Azurite Table service");
        if ready || std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            assert!(ready, "{args:?} {env:?}: neither ready nor refused in 20 s");
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    for reader in readers {
        let _ = reader.join();
    }
    let output = output.lock().unwrap().clone();
    Outcome { output, refused }
}

/// Every option and environment variable, given a bad value, ends in a clear answer: an
/// error of a sentence or two, or (for values that cannot be told from good ones, such as an
/// ignored Azurite option) a server that starts. Never Rust debug text (`{`, `::`,
/// `Error(`), a panic or a hang. The options are read from the parser itself, so a new one is
/// covered the day it is added.
#[test]
fn bad_values_for_every_option_and_variable_are_answered_in_a_sentence() {
    use clap::CommandFactory;
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    // Files of the wrong kind for the options that take a file or folder.
    let not_a_folder = cwd.join("a-file");
    std::fs::write(&not_a_folder, "not a folder").unwrap();
    let bad_export = cwd.join("bad.jsonl");
    std::fs::write(&bad_export, "not json\n").unwrap();
    let bad_rules = cwd.join("bad.toml");
    std::fs::write(&bad_rules, "rules = [\n").unwrap();
    let missing = cwd.join("no-such-file.pem");
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let bad_value = |id: &str, possible: bool| -> String {
        match id {
            "location" => path(&not_a_folder),
            "debug" => path(cwd),
            "seed" | "seed_if_present" => path(&bad_export),
            "faults" => path(&bad_rules),
            "cert" | "key" => path(&missing),
            "accounts_env" => "bad".into(),
            "store" => "mysql://db/tables".into(),
            "log_level" => "verbose".into(),
            "metrics_token" => "two words".into(),
            "host" | "blob_host" | "queue_host" => "no-such-host.invalid".into(),
            _ if possible => "sometimes".into(),
            _ => "lots".into(),
        }
    };
    // (what is tested, arguments, environment)
    type Case = (String, Vec<String>, Vec<(String, String)>);
    let mut cases: Vec<Case> = Vec::new();
    let command = tablestore::config::Config::command();
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str().to_string();
        if matches!(id.as_str(), "help" | "version") {
            continue;
        }
        let takes_value = arg.get_action().takes_values();
        let value = bad_value(&id, !arg.get_possible_values().is_empty());
        // The rest of the command line: a free port, in memory, unless the option under test
        // is one of those (an option given twice is refused for that reason alone).
        let mut base: Vec<String> = Vec::new();
        if id != "port" {
            base.extend(["--port".into(), "0".into()]);
        }
        if !matches!(id.as_str(), "in_memory" | "store" | "location") {
            base.push("--in-memory".into());
        }
        let flag = match arg.get_long() {
            Some(long) => format!("--{long}"),
            None => format!("-{}", arg.get_short().unwrap()),
        };
        let mut args = base.clone();
        if takes_value {
            args.extend([flag, value.clone()]);
        } else {
            args.push(format!("{flag}=maybe"));
        }
        cases.push((format!("{id} (flag)"), args, Vec::new()));
        if let Some(env) = arg.get_env() {
            let value = if takes_value { value } else { "maybe".into() };
            cases.push((
                format!("{id} (environment)"),
                base,
                vec![(env.to_str().unwrap().to_string(), value)],
            ));
        }
    }
    cases.push((
        "AZURITE_SKIP_API_VERSION_CHECK".into(),
        vec!["--port".into(), "0".into(), "--in-memory".into()],
        vec![("AZURITE_SKIP_API_VERSION_CHECK".into(), "maybe".into())],
    ));
    assert!(cases.len() > 60, "only {} cases", cases.len());
    let mut refused = 0;
    for (name, args, env) in &cases {
        let outcome = run_to_verdict(args, env, cwd);
        for debug_text in ["{", "::", "Error(", "panicked"] {
            assert!(
                !outcome.output.contains(debug_text),
                "{name}: {debug_text:?} in the output of {args:?} {env:?}:\n{}",
                outcome.output
            );
        }
        if let Some(status) = outcome.refused {
            refused += 1;
            assert!(matches!(status, 1 | 2), "{name}: exit status {status}");
            let first = outcome.output.lines().next().unwrap_or("");
            assert!(
                first.starts_with("tablestore: ") || first.starts_with("error: "),
                "{name}: {}",
                outcome.output
            );
            // One sentence; clap adds its usage line and the pointer to --help.
            assert!(
                outcome
                    .output
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .count()
                    <= 3,
                "{name}: more than a sentence:\n{}",
                outcome.output
            );
        }
    }
    // Most bad values are refused; the rest are options that accept anything (ignored Azurite
    // options, the PFX password, …).
    assert!(
        refused * 4 > cases.len() * 3,
        "{refused} of {}",
        cases.len()
    );
}

/// The lines a server printed at start-up, up to and including its readiness line.
fn start_up_lines(s: &Server) -> Vec<String> {
    let out = s.output();
    let mut lines: Vec<String> = Vec::new();
    for line in out.lines() {
        lines.push(line.to_string());
        if line.starts_with("Azurite Table service") {
            return lines;
        }
    }
    panic!("no readiness line:\n{out}");
}

/// Each command prints its own readiness line, word for word as Azurite's (src/azurite.ts
/// for `azurite`, src/table/main.ts for `azurite-table`), whether it is named by a leading
/// word or by the program's own name (the links the image makes); the line comes last.
#[test]
fn the_readiness_line_is_that_of_the_command_started_as() {
    let links = tempfile::tempdir().unwrap();
    for name in ["azurite", "azurite-table"] {
        std::os::unix::fs::symlink(BIN, links.path().join(name)).unwrap();
    }
    let link = |name: &str| links.path().join(name).to_str().unwrap().to_string();
    let all_in_one = "Azurite Table service is successfully listening at http://127.0.0.1:";
    let standalone = "Azurite Table service successfully started on 127.0.0.1:";
    let cases: [(Option<String>, &[&str], &str); 5] = [
        (None, &[], all_in_one),
        (None, &["azurite"], all_in_one),
        (None, &["azurite-table"], standalone),
        (Some(link("azurite")), &[], all_in_one),
        (Some(link("azurite-table")), &[], standalone),
    ];
    for (program, words, expected) in cases {
        let mut args: Vec<&str> = words.to_vec();
        args.extend([
            "--tableHost",
            "127.0.0.1",
            "--tablePort",
            "0",
            "--inMemoryPersistence",
        ]);
        let s = match &program {
            Some(p) => Server::start_program(p, &args, &[]),
            None => Server::start(&args, &[]),
        };
        let lines = start_up_lines(&s);
        let ready = lines.last().unwrap();
        assert_eq!(
            ready,
            &format!("{expected}{}", s.port),
            "{program:?} {words:?}: {lines:#?}"
        );
        let other = if expected == all_in_one {
            standalone
        } else {
            all_in_one
        };
        assert!(!s.output().contains(other), "{program:?} {words:?}");
        // No Blob or Queue service is claimed.
        assert!(!s.output().contains("Blob service"));
        assert!(!s.output().contains("Queue service"));
    }
}

/// The start-up lines name the console, and say what realism is on before the readiness
/// line (a log reader sees why answers are less polite before the first request).
#[test]
fn start_up_names_the_console_and_what_realism_is_on_before_ready() {
    let s = Server::start(
        &[
            "--port",
            "0",
            "--in-memory",
            "--simulate-targets",
            "--target-partition-rate",
            "7",
            "--page-breaks",
            "partition",
        ],
        &[],
    );
    let lines = start_up_lines(&s);
    let console = format!("Console: http://127.0.0.1:{}/_tablestore/console/", s.port);
    assert!(lines.contains(&console), "{lines:#?}");
    let realism = lines
        .iter()
        .find(|l| l.contains("production realism is on"))
        .unwrap_or_else(|| panic!("no realism line before ready: {lines:#?}"));
    assert!(
        realism.contains("--simulate-targets: 7 entities/s per partition"),
        "{realism}"
    );
    assert!(realism.contains("--page-breaks partition"), "{realism}");
    drop(s);
    let s = Server::start(&["--port", "0", "--in-memory", "--no-console"], &[]);
    let lines = start_up_lines(&s);
    assert!(lines.contains(&"Console: off (--no-console)".to_string()));
    assert!(!s.output().contains("production realism"));
}

/// A `--location` holding Azurite's table database gets one sentence naming the import
/// command; `--import-azurite-if-present` imports it once.
#[tokio::test]
async fn an_azurite_folder_is_named_and_imported_once_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/azurite/__azurite_db_table__.json"
        ),
        dir.path().join("__azurite_db_table__.json"),
    )
    .unwrap();
    let s = Server::start(&["--port", "0", "--location", location], &[]);
    let lines = start_up_lines(&s);
    let note: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("__azurite_db_table__.json"))
        .collect();
    assert_eq!(note.len(), 1, "{lines:#?}");
    assert!(
        note[0].contains(&format!(
            "`tablestore import --from-azurite {location} --location {location}`"
        )),
        "{}",
        note[0]
    );
    assert!(
        note[0].contains("--import-azurite-if-present"),
        "{}",
        note[0]
    );
    let (status, _) = get(&format!("{}/Tables", s.account_url())).await;
    assert_eq!(status, StatusCode::OK);
    drop(s);

    let importing = || {
        Server::start(
            &[
                "--port",
                "0",
                "--location",
                location,
                "--import-azurite-if-present",
            ],
            &[],
        )
    };
    let s = importing();
    let lines = start_up_lines(&s);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("Azurite: imported 8 entities in 2 tables from ")),
        "{lines:#?}"
    );
    let (status, body) = get(&format!("{}/Tables", s.account_url())).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains("\"TableName\""), "{body}");
    drop(s);
    // Once: the next start finds it imported.
    let s = importing();
    let lines = start_up_lines(&s);
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with("__azurite_db_table__.json already imported")),
        "{lines:#?}"
    );
}

/// Prometheus cannot sign Shared Key: with `--metrics-token`, a scrape as Prometheus sends it
/// (plain HTTP, `Authorization: Bearer <token>`, its Accept header) gets the metrics, while
/// the token opens no table and a wrong token or none is refused.
#[tokio::test]
async fn prometheus_scrapes_metrics_with_the_metrics_token() {
    let token = "0123456789abcdef0123456789abcdef";
    let s = Server::start(
        &["--port", "0", "--in-memory", "--metrics-token", token],
        &[],
    );
    let lines = start_up_lines(&s);
    assert!(
        lines.iter().any(|l| l.starts_with("Metrics: ")),
        "{lines:#?}"
    );
    let scrape = |authorization: Option<String>| {
        let mut request = reqwest::Client::new()
            .get(format!("{}/metrics", s.endpoint()))
            // What Prometheus 2.x sends (scrape/scrape.go, acceptHeader).
            .header(
                "Accept",
                "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
            )
            .header("User-Agent", "Prometheus/2.53.0")
            .header("X-Prometheus-Scrape-Timeout-Seconds", "10");
        if let Some(value) = authorization {
            request = request.header("Authorization", value);
        }
        request.send()
    };
    let r = scrape(Some(format!("Bearer {token}"))).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/plain; version=0.0.4")));
    let text = r.text().await.unwrap();
    assert!(text.contains("# TYPE "), "{text}");
    for refused in [
        None,
        Some(format!("Bearer {token}x")),
        Some("Bearer nope".into()),
    ] {
        let r = scrape(refused.clone()).await.unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{refused:?}");
    }
    // The token opens nothing but the metrics.
    let r = reqwest::Client::new()
        .get(format!("{}/Tables", s.account_url()))
        .header("Authorization", format!("Bearer {token}"))
        .header("x-ms-version", "2019-02-02")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.text().await.unwrap().contains("AuthenticationFailed"));
    let r = reqwest::Client::new()
        .get(format!("{}/_tablestore/insight", s.endpoint()))
        .header("Authorization", format!("Bearer {token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // A signed request still works, as without the token.
    let (status, _) = get(&format!("{}/metrics", s.endpoint())).await;
    assert_eq!(status, StatusCode::OK);
}

fn admin(args: &[&str]) -> Output {
    let mut all = vec!["admin"];
    all.extend_from_slice(args);
    run(&all)
}

/// `tablestore admin` signs for the user (the development key by default) and prints what
/// the control endpoints answer; a refusal is one sentence and exit status 1.
#[test]
fn admin_reaches_the_control_endpoints() {
    let s = Server::start(&["--port", "0", "--in-memory"], &[]);
    let url = s.endpoint();
    let text = |out: &Output| String::from_utf8_lossy(&out.stdout).into_owned();
    let out = admin(&["metrics", "--url", &url]);
    assert!(out.status.success(), "{out:?}");
    assert!(text(&out).contains("# TYPE "), "{}", text(&out));
    // Without --url: the port TABLESTORE_PORT names, as the server reads it.
    let out = piped(
        BIN,
        ["admin", "metrics"],
        [("TABLESTORE_PORT", s.port.to_string())],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = admin(&["--url", &url, "insight", "--settle"]);
    assert!(out.status.success(), "{out:?}");
    let insight: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(insight.is_object(), "{insight}");

    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[rules]]\nname = \"slow\"\naction = \"latency\"\nlatency_ms = 1\n",
    )
    .unwrap();
    let out = admin(&["faults", "set", rules.to_str().unwrap(), "--url", &url]);
    assert!(out.status.success(), "{out:?}");
    let out = admin(&["faults", "--url", &url]);
    assert!(text(&out).contains("\"slow\""), "{}", text(&out));
    let out = admin(&["faults", "clear", "--url", &url]);
    assert!(out.status.success(), "{out:?}");
    let out = admin(&["faults", "show", "--url", &url]);
    assert!(!text(&out).contains("\"slow\""), "{}", text(&out));

    // Another account's key: refused by the server, one sentence.
    let out = admin(&[
        "metrics",
        "--url",
        &url,
        "--account-key",
        "a2V5a2V5a2V5a2V5",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(&format!(
            "tablestore admin: GET {url}/metrics answered 403 AuthenticationFailed: "
        )),
        "{stderr}"
    );
    // What to check (issue 43: it said only "answered 403").
    assert!(
        stderr.contains("; check --account and --account-key"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("\\n") && !stderr.contains("RequestId"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    drop(s);
    let out = admin(&["metrics", "--url", &url]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is the server running there?"),
        "{out:?}"
    );
}

/// Issue 43, item 7: a mistyped command is answered with the command meant, exit status 2;
/// another word lists the commands.
#[test]
fn a_mistyped_command_is_answered_with_did_you_mean() {
    let out = run(&["imprt", "people.jsonl"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        "tablestore: `imprt` is not a command: did you mean `tablestore import`?"
    );
    let out = run(&["serve"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the commands are `tablestore import`"),
        "{stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}

/// `program args` with standard output into a pipe whose reader is already gone, as in
/// `tablestore --help | head` once head has exited; returns (exit code, stderr).
fn into_a_closed_pipe(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(BIN)
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 43, item 7: `tablestore --help | head` printed "ERROR: Pipe to stdout was broken";
/// every command that writes to standard output ends quietly when its reader is gone.
#[test]
fn a_closed_standard_output_ends_quietly() {
    for args in [
        &["--help"][..],
        &["--version"],
        &["export", "--help"],
        &["admin", "--help"],
    ] {
        let (code, stderr) = into_a_closed_pipe(args, &[]);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert_eq!(stderr, "", "{args:?}");
    }
    // An export's summary line and the admin command's answer.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = dir.path().join("Tab.jsonl");
    std::fs::write(&file, "{\"PartitionKey\":\"p\",\"RowKey\":\"1\"}\n").unwrap();
    let (code, stderr) = into_a_closed_pipe(
        &[
            "import",
            "--location",
            data.to_str().unwrap(),
            "-q",
            file.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
    let s = Server::start(&["--port", "0", "--in-memory"], &[]);
    let (code, stderr) = into_a_closed_pipe(&["admin", "metrics", "--url", &s.endpoint()], &[]);
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
}

/// Issue 43, item 7: the advice for a busy port names the option the user typed (`--port`,
/// `--tablePort` or `TABLESTORE_PORT`), not always Azurite's.
#[test]
fn a_busy_port_is_answered_with_the_option_used() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 4] = [
        (&["--port", &port], &[], "choose another port with --port"),
        (
            &[&format!("--port={port}")],
            &[],
            "choose another port with --port",
        ),
        (
            &["--tablePort", &port],
            &[],
            "choose another port with --tablePort",
        ),
        (
            &[],
            &[("TABLESTORE_PORT", &port)],
            "choose another port with TABLESTORE_PORT=",
        ),
    ];
    for (args, env, expected) in cases {
        let mut all = vec!["--in-memory", "--host", "127.0.0.1"];
        all.extend_from_slice(args);
        let out = piped(BIN, &all, env.iter().copied()).output().unwrap();
        assert_one_clear_sentence(&out, expected);
        let other = if expected.contains("--tablePort") {
            "--port"
        } else {
            "--tablePort"
        };
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains(&format!("with {other}")),
            "{args:?} {env:?}: {out:?}"
        );
    }
}

/// Issue 43, item 7: a key in `AZURITE_ACCOUNTS` that is not base64 is named by its account,
/// with what is wrong and what a key must be (it said "Invalid symbol 33, offset 9.").
#[test]
fn a_bad_account_key_names_its_account() {
    let out = piped(
        BIN,
        ["--port", "0", "--in-memory"],
        [("AZURITE_ACCOUNTS", "good:a2V5MQ==;acct1:abcdefgh!xyz")],
    )
    .output()
    .unwrap();
    assert_one_clear_sentence(&out, "for account acct1");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not base64 (character 9, '!', is not a base64 character)")
            && stderr.contains("openssl rand -base64 32")
            && !stderr.contains("Invalid symbol"),
        "{stderr}"
    );
}

/// Issue 43, item 8: the Cosmos flavour's readiness line says Cosmos (it printed Azurite's),
/// in words a wait for "Table service is successfully listening" still matches, and its last
/// start-up line is `Started` with CRLF, what Testcontainers' Cosmos modules wait for.
#[test]
fn the_cosmos_flavour_says_cosmos_and_ends_with_started() {
    let mut child = piped(
        BIN,
        ["--flavor", "cosmos", "--port", "0", "--in-memory"],
        std::iter::empty::<(&str, &str)>(),
    )
    .spawn()
    .unwrap();
    // The raw bytes (a line reader would drop the CR), up to the line end after `Started`.
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut chunk) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&chunk[..n]);
            if seen
                .windows(8)
                .any(|w| w == b"Started\n" || w == b"tarted\r\n")
            {
                break;
            }
        }
        let _ = tx.send(seen);
    });
    let seen = rx.recv_timeout(Duration::from_secs(20));
    let _ = child.kill();
    let _ = child.wait();
    let out = String::from_utf8(seen.expect("start-up lines within 20 s")).unwrap();
    let port = out
        .lines()
        .find_map(|l| l.strip_prefix("tablestore listening on http://127.0.0.1:"))
        .expect("a listening line");
    assert!(
        out.ends_with(&format!(
            "\nCosmos DB Table service is successfully listening at http://127.0.0.1:{port}\nStarted\r\n"
        )),
        "{out:?}"
    );
    assert!(!out.contains("Azurite"), "{out}");
}

/// A SIGTERM sent as soon as the start-up lines appear stops the server gracefully (exit 0):
/// the signal handlers are installed before the banner is printed. It was a race, lost when
/// a watcher stopped the server right after its readiness line (the JS helper's
/// `start()`/`stop()` with nothing in between), which then died of the signal.
#[test]
fn a_sigterm_right_after_start_up_is_a_graceful_stop() {
    for flavor in ["storage", "cosmos"] {
        let mut s = Server::start(&["--flavor", flavor, "--port", "0", "--in-memory"], &[]);
        let status = Command::new("kill")
            .args(["-TERM", &s.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = s.child.wait().unwrap();
        assert_eq!(exit.code(), Some(0), "{flavor}: {exit:?}");
    }
}
