//! Test state against faults, with the real binary on a data folder: `kill -9` while a
//! snapshot is saved or restored leaves the old or the new state whole after a restart, and
//! a full disk under the snapshots answers a clear error with the data untouched. The
//! `tablestore admin` commands for reset, snapshots and accounts, as a user types them.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::batch::BatchBody;
use common::child::{ChildServer, Client, Signer};
use rand::{RngExt as _, SeedableRng as _};
use rand_pcg::Pcg64;
use serde_json::json;

async fn control(client: &Client, method: &str, path: &str) -> common::Reply {
    try_control(client, method, path)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// A control call that may go unanswered (the server is killed under it).
async fn try_control(
    client: &Client,
    method: &str,
    path: &str,
) -> Result<common::Reply, reqwest::Error> {
    let url = format!("{}{path}", client.endpoint);
    let signing = common::Signing::As(&client.signer);
    let req = common::request(&client.http, method, &url, &[], None, signing);
    common::Reply::read(req.send().await?).await
}

/// `n` entities in `table` (created), `bytes` of payload each, in change sets of 100.
async fn fill(client: &Client, table: &str, n: usize, bytes: usize) {
    client.create_table(table).await;
    let payload = "x".repeat(bytes);
    for start in (0..n).step_by(100) {
        let mut batch = BatchBody::new(&client.account_url());
        for i in start..(start + 100).min(n) {
            let body = json!({"PartitionKey": "p", "RowKey": format!("{i:06}"), "data": payload});
            batch.op("POST", &format!("/{table}"), &[], Some(&body.to_string()));
        }
        let r = client.send_batch(&batch).await.unwrap();
        assert_eq!(r.status.as_u16(), 202, "{}", r.text());
    }
}

/// The tables and their entity counts.
async fn contents(client: &Client) -> Vec<(String, usize)> {
    let r = client.call("GET", "/Tables", &[], None).await;
    let mut out = Vec::new();
    for t in r.json()["value"].as_array().unwrap() {
        let name = t["TableName"].as_str().unwrap().to_string();
        let (rows, _) = common::query_all(&format!("/{name}()?$select=RowKey"), |_, path| {
            let client = client.clone();
            async move { client.call("GET", &path, &[], None).await }
        })
        .await;
        out.push((name, rows.len()));
    }
    out
}

fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

/// `kill -9` at a random moment of a restore, then a restart: the folder holds either the
/// state before the restore or the snapshot's, whole; and it serves writes again. The kill
/// comes within the time a whole restore takes (measured first), so rounds land before,
/// during and after the switch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_restore_leaves_the_old_or_the_new_state_whole() {
    let seed = seed();
    println!("seed {seed}");
    let mut rng = Pcg64::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut server = ChildServer::start(dir.path(), &[]);
    let client = Client::new(&server.endpoint(), Signer::dev());
    fill(&client, "big", 10_000, 200).await;
    let r = control(&client, "PUT", "/_tablestore/snapshots/big").await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    let new = contents(&client).await;
    let back_to_old = |client: Client| async move {
        control(&client, "POST", "/_tablestore/reset").await;
        fill(&client, "small", 10, 10).await;
    };
    back_to_old(client.clone()).await;
    let old = contents(&client).await;
    // How long a whole restore takes here.
    let started = std::time::Instant::now();
    let r = control(&client, "POST", "/_tablestore/snapshots/big/restore").await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text());
    let whole = started.elapsed();
    assert_eq!(contents(&client).await, new);
    back_to_old(client).await;
    let mut seen = Vec::new();
    for round in 0..6 {
        let client = Client::new(&server.endpoint(), Signer::dev());
        let restoring = {
            let client = client.clone();
            tokio::spawn(async move {
                try_control(&client, "POST", "/_tablestore/snapshots/big/restore").await
            })
        };
        let delay = whole.mul_f64(rng.random_range(0.0..1.2));
        tokio::time::sleep(delay).await;
        server.kill9();
        let _ = restoring.await;
        server = ChildServer::start(dir.path(), &[]);
        let client = Client::new(&server.endpoint(), Signer::dev());
        let after = contents(&client).await;
        assert!(
            after == old || after == new,
            "round {round} (seed {seed}): {after:?} is neither {old:?} nor {new:?}"
        );
        seen.push(if after == new { "new" } else { "old" });
        if after == new {
            back_to_old(client.clone()).await;
            assert_eq!(contents(&client).await, old);
        }
    }
    println!("a whole restore took {whole:?}; states after each kill: {seen:?}");
    // Writes work after the last restart.
    let client = Client::new(&server.endpoint(), Signer::dev());
    client.create_table("afterwards").await;
}

/// `kill -9` while a snapshot is written (within the time a whole save takes, measured
/// first): after a restart the snapshot is either absent or whole, and the data untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_save_leaves_no_half_snapshot() {
    let seed = seed();
    println!("seed {seed}");
    let mut rng = Pcg64::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut server = ChildServer::start(dir.path(), &[]);
    let client = Client::new(&server.endpoint(), Signer::dev());
    fill(&client, "data", 10_000, 300).await;
    let data = vec![("data".to_string(), 10_000)];
    let started = std::time::Instant::now();
    assert_eq!(
        control(&client, "PUT", "/_tablestore/snapshots/s")
            .await
            .status
            .as_u16(),
        201
    );
    let whole = started.elapsed();
    control(&client, "DELETE", "/_tablestore/snapshots/s").await;
    let mut seen = Vec::new();
    for round in 0..5 {
        let client = Client::new(&server.endpoint(), Signer::dev());
        let saving = {
            let client = client.clone();
            tokio::spawn(
                async move { try_control(&client, "PUT", "/_tablestore/snapshots/s").await },
            )
        };
        tokio::time::sleep(whole.mul_f64(rng.random_range(0.0..1.2))).await;
        server.kill9();
        let _ = saving.await;
        server = ChildServer::start(dir.path(), &[]);
        let client = Client::new(&server.endpoint(), Signer::dev());
        assert_eq!(contents(&client).await, data, "round {round} (seed {seed})");
        let r = control(&client, "GET", "/_tablestore/snapshots/s").await;
        match r.status.as_u16() {
            404 => seen.push("none"),
            200 => {
                assert_eq!(r.json()["entities"], 10_000, "round {round} (seed {seed})");
                let r = control(&client, "POST", "/_tablestore/snapshots/s/restore").await;
                assert_eq!(r.status.as_u16(), 200, "round {round}: {}", r.text());
                assert_eq!(contents(&client).await, data);
                control(&client, "DELETE", "/_tablestore/snapshots/s").await;
                seen.push("whole");
            }
            other => panic!("round {round}: {other} {}", r.text()),
        }
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("__tablestore_snapshots__"))
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(
            leftovers
                .iter()
                .all(|n| !n.to_string_lossy().ends_with(".tmp")),
            "{leftovers:?}"
        );
    }
    println!("a whole save took {whole:?}; snapshots after each kill: {seen:?}");
}

/// A file system of `mib` MiB mounted at `dir` for the test (tmpfs); `None` with the reason
/// where mounting is not permitted.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn small_tmpfs(dir: &Path, mib: u64) -> Result<Mounted, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let out = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
        .arg(dir)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(Mounted(dir.to_path_buf()))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// The disk holding the snapshots fills up during a save: 503 with a sentence saying so,
/// the data and the snapshot saved before under the same name untouched, no file left over.
#[tokio::test]
async fn a_full_disk_during_a_save_is_a_clear_error_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let shelf = dir.path().join("__tablestore_snapshots__");
    let _mount = match small_tmpfs(&shelf, 1) {
        Ok(m) => m,
        Err(why) => {
            println!("skipped: cannot mount a small tmpfs here ({why})");
            return;
        }
    };
    let server = ChildServer::start(dir.path(), &[]);
    let client = Client::new(&server.endpoint(), Signer::dev());
    fill(&client, "data", 10, 100).await;
    let r = control(&client, "PUT", "/_tablestore/snapshots/s").await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.text());
    // 3 MiB of entities do not fit the 1 MiB file system.
    fill(&client, "more", 3000, 1000).await;
    let r = control(&client, "PUT", "/_tablestore/snapshots/s").await;
    assert_eq!(r.status.as_u16(), 503, "{}", r.text());
    assert_eq!(r.error_code(), "ServerBusy");
    assert!(
        r.text().contains("the disk holding the snapshots is full"),
        "{}",
        r.text()
    );
    let files: Vec<String> = std::fs::read_dir(&shelf)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, vec!["s.snapshot"]);
    assert_eq!(
        contents(&client).await,
        vec![("data".to_string(), 10), ("more".to_string(), 3000)]
    );
    // The earlier snapshot is whole.
    let r = control(&client, "POST", "/_tablestore/snapshots/s/restore").await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text());
    assert_eq!(contents(&client).await, vec![("data".to_string(), 10)]);
}

fn admin(server: &ChildServer, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(common::child::binary())
        .arg("admin")
        .args(["--url", &server.endpoint()])
        .args(args)
        .env_remove("TABLESTORE_ACCOUNT_KEY")
        .env_remove("TABLESTORE_ADMIN_TOKEN")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `tablestore admin reset|snapshot|account`, as a user types them.
#[tokio::test]
async fn the_admin_commands_reset_snapshot_and_make_accounts() {
    let dir = tempfile::tempdir().unwrap();
    let server = ChildServer::start(dir.path(), &["--inMemoryPersistence"]);
    let client = Client::new(&server.endpoint(), Signer::dev());
    fill(&client, "tab", 3, 1).await;
    let (code, out, err) = admin(&server, &["snapshot", "save", "three"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"entities\": 3"), "{out}");
    let (code, out, _) = admin(&server, &["snapshot", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("\"three\""), "{out}");
    let (code, _, err) = admin(&server, &["reset"]);
    assert_eq!(code, 0, "{err}");
    assert!(contents(&client).await.is_empty());
    let (code, _, err) = admin(&server, &["snapshot", "restore", "three"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(contents(&client).await, vec![("tab".to_string(), 3)]);
    let (code, out, _) = admin(&server, &["snapshot", "delete", "three"]);
    assert_eq!((code, out.trim()), (0, "snapshot three deleted"));

    // Errors: one sentence, exit 1.
    let (code, _, err) = admin(&server, &["snapshot", "restore", "three"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("404 ResourceNotFound: There is no snapshot named \"three\""),
        "{err}"
    );
    let (code, _, err) = admin(&server, &["snapshot", "save", "../x"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("400 InvalidInput") && err.contains("path characters"),
        "{err}"
    );

    // Accounts on demand; --account scopes a reset to one account.
    let (code, out, err) = admin(&server, &["account", "create", "--name", "worker7"]);
    assert_eq!(code, 0, "{err}");
    let created: serde_json::Value = serde_json::from_str(&out).unwrap();
    let worker = Client::new(
        &server.endpoint(),
        Signer::new("worker7", created["key"].as_str().unwrap()),
    );
    fill(&worker, "wtab", 2, 1).await;
    fill(&client, "dev", 1, 1).await;
    let (code, _, err) = admin(&server, &["reset", "--account", "worker7"]);
    assert_eq!(code, 0, "{err}");
    assert!(contents(&worker).await.is_empty());
    let untouched = vec![("dev".to_string(), 1), ("tab".to_string(), 3)];
    assert_eq!(contents(&client).await, untouched);
    let (code, out, _) = admin(&server, &["account", "delete", "worker7"]);
    assert_eq!((code, out.trim()), (0, "account worker7 deleted"));
    let (code, _, err) = admin(&server, &["account", "delete", "devstoreaccount1"]);
    assert_eq!(code, 1);
    assert!(err.contains("given at start-up"), "{err}");
}

/// `--seed` is what a reset brings back, on a data folder (which also kept data of its own
/// from before: a reset is "as if started afresh") and in memory.
#[tokio::test]
async fn a_reset_brings_the_seed_back() {
    let work = tempfile::tempdir().unwrap();
    let seed = work.path().join("seed");
    std::fs::create_dir(&seed).unwrap();
    let lines: String = (0..5)
        .map(|i| format!("{{\"PartitionKey\":\"p\",\"RowKey\":\"{i}\",\"n\":{i}}}\n"))
        .collect();
    std::fs::write(seed.join("Seeded.jsonl"), lines).unwrap();
    let seed_arg = seed.to_str().unwrap();
    for args in [
        vec!["--seed", seed_arg],
        vec!["--seed", seed_arg, "--inMemoryPersistence"],
    ] {
        let data = tempfile::tempdir().unwrap();
        let server = ChildServer::start(data.path(), &args);
        let client = Client::new(&server.endpoint(), Signer::dev());
        assert_eq!(contents(&client).await, vec![("Seeded".to_string(), 5)]);
        fill(&client, "later", 3, 1).await;
        client
            .call(
                "DELETE",
                "/Seeded(PartitionKey='p',RowKey='0')",
                &[("If-Match", "*")],
                None,
            )
            .await;
        let r = control(&client, "POST", "/_tablestore/reset").await;
        assert_eq!(r.status.as_u16(), 200, "{args:?}: {}", r.text());
        assert_eq!(r.json()["entities"], 5, "{args:?}");
        assert_eq!(
            contents(&client).await,
            vec![("Seeded".to_string(), 5)],
            "{args:?}"
        );
    }
}
