//! `tablestore-bench floor` as its own process, measured by `tablestore-bench` as
//! scripts/bench-compare.sh does: the readiness line, `GET /_health`, every workload completing
//! without an error, the server figures read from `/proc` for the floor's pid, the results
//! file, and `compare --floor`. A few seconds in all; no figure is asserted.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BENCH: &str = env!("CARGO_BIN_EXE_tablestore-bench");

/// The floor process, killed when dropped if it is still running.
struct Floor {
    child: Child,
    addr: String,
}

impl Floor {
    fn start() -> Floor {
        let mut child = Command::new(BENCH)
            .args(["floor", "--host", "127.0.0.1", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("tablestore-bench starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the floor prints its address");
        let addr = line
            .strip_prefix("tablestore-bench floor listening on http://")
            .unwrap_or_else(|| panic!("unexpected readiness line: {line}"))
            .to_string();
        let endpoint = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("the floor prints its endpoint");
        assert_eq!(
            endpoint,
            format!("Table endpoint: http://{addr}/devstoreaccount1")
        );
        Floor { child, addr }
    }

    /// Stops the floor with SIGTERM, as bench-compare.sh does; its exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "the floor ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn get_health(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET /_health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("an answer");
    answer
}

#[test]
fn the_benchmark_runs_every_workload_against_the_floor_process() {
    let floor = Floor::start();
    let health = get_health(&floor.addr);
    assert!(health.starts_with("HTTP/1.1 200 OK\r\n"), "{health}");
    assert!(health.ends_with("\r\n\r\nOK"), "{health}");

    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("floor.json");
    let pid = floor.child.id().to_string();
    let out = Command::new(BENCH)
        .args([
            "--endpoint",
            &format!("http://{}/devstoreaccount1", floor.addr),
            "--wait-ready",
            "10",
            "--server-pid",
            &pid,
            "--label",
            "floor",
            "--keep-tables",
            "--quiet",
            "--duration",
            "0.3",
            "--warmup",
            "0.1",
            "--concurrency",
            "4",
            "--entities",
            "5000",
            "--partitions",
            "10",
            "--bulk-entities",
            "3000",
            "--delete-pool",
            "1000",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("the benchmark runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).expect("a JSON results file");
    assert_eq!(report["label"], "floor");
    assert_eq!(report["preload"]["entities"], 5000);
    assert_eq!(report["preload"]["errors"], serde_json::json!({}));
    let workloads = report["workloads"].as_array().unwrap();
    let names: Vec<&str> = workloads
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "insert",
            "point-read",
            "upsert",
            "merge",
            "delete",
            "batch-insert",
            "range-query",
            "scan-filter",
            "bulk-load"
        ]
    );
    for w in workloads {
        let name = &w["name"];
        assert!(w["ops"].as_u64().unwrap() > 0, "{name}: no operation");
        assert_eq!(w["failed"], 0, "{name}: {}", w["error_sample"]);
        assert_eq!(w["errors"], serde_json::json!({}), "{name}");
        assert_eq!(w["bad_results"], 0, "{name}: wrong row counts");
        // The floor's own CPU and memory, from /proc, as for any server.
        if cfg!(target_os = "linux") {
            assert!(w["server"]["cpu_ms"].is_number(), "{name}: {}", w["server"]);
            assert!(
                w["server"]["vmhwm_kib"].as_u64().unwrap_or(0) > 0,
                "{name}: {}",
                w["server"]
            );
        }
    }
    assert_eq!(workloads[8]["entities"], 3000, "bulk-load wrote them all");

    // The floor's results as the floor column of a comparison.
    let md = dir.path().join("comparison.md");
    let out = Command::new(BENCH)
        .args(["compare", "--baseline"])
        .arg(&json)
        .arg("--candidate")
        .arg(&json)
        .arg("--floor")
        .arg(&json)
        .arg("--out")
        .arg(&md)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("| floor/floor | errors (floor / floor / floor) |"),
        "{md}"
    );
    assert_eq!(md.matches(" 1.00× | 0 / 0 / 0 |").count(), 9, "{md}");

    let status = floor.stop();
    assert!(
        status.success(),
        "the floor exits cleanly on SIGTERM: {status}"
    );
}

#[test]
fn a_busy_port_is_one_sentence() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let out = Command::new(BENCH)
        .args(["floor", "--host", "127.0.0.1", "--port", &port])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "tablestore-bench: cannot listen on 127.0.0.1:{port}:"
        )) && err.contains("choose another with --port")
            && err.lines().count() == 1,
        "{err}"
    );
}
