//! Test state's targets (issue #42; docs/performance.md, "Test state"): reset, restore and
//! a new account, through the HTTP endpoints of an in-process server, in memory and on a
//! data folder; and what the request gate costs a request when nothing is reset.
//!
//!     cargo bench --bench state [-- --quick]
//!
//! Prints one line per measurement: the median and the worst of its runs.

use std::time::{Duration, Instant};

// The server binary's allocator (src/main.rs), so the numbers are the binary's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use serde_json::json;
use tablestore::auth::canonical;
use tablestore::config::{Config, DEV_ACCOUNT, DEV_ACCOUNT_KEY};
use tablestore::testing::TestServer;

struct Bench {
    http: reqwest::Client,
    server: TestServer,
}

fn sign(account: &str, key: &str, path: &str) -> (String, String) {
    use base64::Engine as _;
    let key = base64::engine::general_purpose::STANDARD
        .decode(key)
        .expect("base64 key");
    let date = chrono::Utc::now()
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    let resource = canonical::canonicalized_resource(account, path, None);
    let sts = canonical::shared_key_lite_string_to_sign(&date, &resource);
    let auth = format!(
        "SharedKeyLite {account}:{}",
        canonical::compute_signature(&key, &sts)
    );
    (date, auth)
}

impl Bench {
    async fn start(config: Config) -> Bench {
        Bench {
            http: reqwest::Client::new(),
            server: TestServer::start_with(config).await.expect("server"),
        }
    }

    async fn call_as(
        &self,
        account: &str,
        key: &str,
        method: reqwest::Method,
        path: &str,
        query: &str,
        body: Option<String>,
    ) -> (u16, String) {
        let (date, auth) = sign(account, key, path);
        let url = format!("{}{path}{query}", self.server.endpoint());
        let mut req = self
            .http
            .request(method, url)
            .header("x-ms-date", date)
            .header("x-ms-version", "2019-02-02")
            .header("Authorization", auth)
            .header("Accept", "application/json;odata=nometadata");
        if let Some(b) = body {
            req = req.header("Content-Type", "application/json").body(b);
        }
        let r = req.send().await.expect("answered");
        let status = r.status().as_u16();
        (status, r.text().await.unwrap_or_default())
    }

    async fn call(&self, method: reqwest::Method, path: &str, query: &str) -> (u16, String) {
        self.call_as(DEV_ACCOUNT, DEV_ACCOUNT_KEY, method, path, query, None)
            .await
    }

    /// `n` entities of ~100 bytes in table `t`, in change sets of 100.
    async fn fill(&self, table: &str, n: usize) {
        let path = format!("/{DEV_ACCOUNT}/Tables");
        let body = json!({ "TableName": table }).to_string();
        let (s, text) = self
            .call_as(
                DEV_ACCOUNT,
                DEV_ACCOUNT_KEY,
                reqwest::Method::POST,
                &path,
                "",
                Some(body),
            )
            .await;
        assert!(s == 201 || s == 204, "{s} {text}");
        let base = format!("{}/{DEV_ACCOUNT}", self.server.endpoint());
        for start in (0..n).step_by(100) {
            let mut parts = String::new();
            for i in start..(start + 100).min(n) {
                let body = json!({"PartitionKey": format!("p{}", i / 100), "RowKey": format!("{i:07}"), "data": "x".repeat(64)});
                parts.push_str(&format!(
                    "--cs\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
                     POST {base}/{table} HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json;odata=nometadata\r\nPrefer: return-no-content\r\n\r\n{body}\r\n"
                ));
            }
            let batch = format!(
                "--b\r\nContent-Type: multipart/mixed; boundary=cs\r\n\r\n{parts}--cs--\r\n--b--\r\n"
            );
            let path = format!("/{DEV_ACCOUNT}/$batch");
            let (date, auth) = sign(DEV_ACCOUNT, DEV_ACCOUNT_KEY, &path);
            let r = self
                .http
                .post(format!("{}{path}", self.server.endpoint()))
                .header("x-ms-date", date)
                .header("x-ms-version", "2019-02-02")
                .header("Authorization", auth)
                .header("Content-Type", "multipart/mixed; boundary=b")
                .body(batch)
                .send()
                .await
                .expect("batch");
            assert_eq!(r.status().as_u16(), 202);
        }
    }
}

fn summary(name: &str, runs: &mut [Duration], target: &str) {
    runs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name:<58} median {:>8.2} ms   worst {:>8.2} ms   ({} runs; target {target})",
        ms(runs[runs.len() / 2]),
        ms(runs[runs.len() - 1]),
        runs.len()
    );
}

async fn timed<F: std::future::Future<Output = (u16, String)>>(f: F) -> Duration {
    let started = Instant::now();
    let (status, text) = f.await;
    let took = started.elapsed();
    assert!((200..300).contains(&status), "{status} {text}");
    took
}

async fn reset_of(config: Config, label: &str, entities: usize, runs: usize, target: &str) {
    let b = Bench::start(config).await;
    let mut times = Vec::new();
    for _ in 0..runs {
        b.fill("big", entities).await;
        times.push(timed(b.call(reqwest::Method::POST, "/_tablestore/reset", "")).await);
    }
    summary(
        &format!("reset, {label}, {entities} entities"),
        &mut times,
        target,
    );
    // The background purge of a reset: until the store counts no entity.
    b.fill("big", entities).await;
    b.call(reqwest::Method::POST, "/_tablestore/reset", "")
        .await;
    let started = Instant::now();
    loop {
        let (_, text) = b
            .call(reqwest::Method::GET, "/_tablestore/insight", "")
            .await;
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if doc["store"]["entities"] == 0 || started.elapsed() > Duration::from_secs(60) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let mut purge = vec![started.elapsed()];
    summary(
        &format!("  then the background purge of {entities} entities"),
        &mut purge,
        "-",
    );
}

async fn restore_of(config: Config, label: &str, entities: usize, runs: usize, target: &str) {
    let b = Bench::start(config).await;
    b.fill("snap", entities).await;
    let (s, t) = b
        .call(reqwest::Method::PUT, "/_tablestore/snapshots/s", "")
        .await;
    assert_eq!(s, 201, "{t}");
    let mut times = Vec::new();
    let mut saves = Vec::new();
    for _ in 0..runs {
        b.call(reqwest::Method::POST, "/_tablestore/reset", "")
            .await;
        times.push(
            timed(b.call(
                reqwest::Method::POST,
                "/_tablestore/snapshots/s/restore",
                "",
            ))
            .await,
        );
        saves.push(timed(b.call(reqwest::Method::PUT, "/_tablestore/snapshots/s2", "")).await);
    }
    summary(
        &format!("restore, {label}, {entities} entities"),
        &mut times,
        target,
    );
    summary(
        &format!("save, {label}, {entities} entities"),
        &mut saves,
        "-",
    );
}

async fn new_account(runs: usize) {
    let b = Bench::start(Config::for_tests()).await;
    let mut times = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let (s, text) = b
            .call(reqwest::Method::POST, "/_tablestore/accounts", "")
            .await;
        assert_eq!(s, 201, "{text}");
        let created: serde_json::Value = serde_json::from_str(&text).unwrap();
        let (name, key) = (
            created["name"].as_str().unwrap(),
            created["key"].as_str().unwrap(),
        );
        let path = format!("/{name}/Tables");
        let (s, text) = b
            .call_as(name, key, reqwest::Method::GET, &path, "", None)
            .await;
        assert_eq!(s, 200, "{text}");
        times.push(started.elapsed());
    }
    summary(
        "new account: create call → its first answer",
        &mut times,
        "≤ 5 ms",
    );
}

/// A point read's round trip, to set the gate's cost beside.
async fn point_reads(runs: usize) {
    let b = Bench::start(Config::for_tests()).await;
    b.fill("reads", 100).await;
    let path = format!("/{DEV_ACCOUNT}/reads(PartitionKey='p0',RowKey='0000001')");
    let mut times = Vec::new();
    for _ in 0..runs {
        times.push(timed(b.call(reqwest::Method::GET, &path, "")).await);
    }
    summary("point read (for scale)", &mut times, "-");
}

fn main() {
    // `--gate N`: only N passes of the gate on one thread (for an instruction count:
    // `valgrind --tool=callgrind target/release/deps/state-* --gate N`).
    let args: Vec<String> = std::env::args().collect();
    if let Some(n) = args
        .iter()
        .position(|a| a == "--gate")
        .and_then(|i| args.get(i + 1))
    {
        gate_passes(n.parse().expect("--gate N"));
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (runs, big) = if quick { (3, 10_000) } else { (7, 100_000) };
    runtime.block_on(async {
        let disk = tempfile::tempdir().expect("temp dir");
        let on_disk = |sub: &str| {
            let mut c = Config::for_tests();
            c.in_memory = false;
            c.location = disk.path().join(sub);
            c
        };
        reset_of(Config::for_tests(), "in memory", big, runs, "≤ 10 ms").await;
        reset_of(on_disk("reset"), "data folder", big, runs, "≤ 1 s").await;
        restore_of(Config::for_tests(), "in memory", 10_000, runs, "≤ 20 ms").await;
        restore_of(on_disk("restore"), "data folder", 10_000, runs, "≤ 1 s").await;
        new_account(runs * 3).await;
        point_reads(200).await;
    });
    gate_cost();
}

/// `n` passes of the gate on this thread.
fn gate_passes(n: u32) {
    let gate = tablestore::server::StateGate::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    rt.block_on(async {
        for _ in 0..n {
            let pass = gate.pass().await;
            std::hint::black_box(&pass);
        }
    });
}

/// The gate every request passes: passing it and leaving, alone and with other threads
/// passing theirs at once.
fn gate_cost() {
    use tablestore::server::StateGate as Gate;
    let gate = std::sync::Arc::new(Gate::new());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let n = 5_000_000u32;
    let per = |threads: usize| {
        let started = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..threads {
                let gate = std::sync::Arc::clone(&gate);
                s.spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .build()
                        .expect("runtime");
                    rt.block_on(async {
                        for _ in 0..n {
                            let pass = gate.pass().await;
                            std::hint::black_box(&pass);
                        }
                    });
                });
            }
        });
        started.elapsed().as_secs_f64() * 1e9 / f64::from(n)
    };
    rt.block_on(async {});
    println!(
        "gate: pass and leave, 1 thread                            {:>8.1} ns",
        per(1)
    );
    println!(
        "gate: pass and leave, 2 threads at once (per pass, each)  {:>8.1} ns",
        per(2)
    );
}
