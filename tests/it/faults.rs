//! Faults of the environment, against the real binary:
//!
//! * Disk full (a size-limited tmpfs, else a loop-mounted ext4 image; skipped with a printed
//!   reason where mounting is not permitted): writes fail with 503 `ServerBusy` (Azure docs: "Common REST API error codes":
//!   the service's "retry later" code; SDK retry policies retry it), reads keep working,
//!   nothing acknowledged is damaged, and writes succeed again once space is freed, without
//!   a restart.
//! * An unusable or corrupted data folder: a clear start-up error and a non-zero exit, never
//!   a panic.
//! * A data folder in use by another running instance: a clear error; the first instance is
//!   unaffected.
//! * One damaged entity in a readable folder: the reads that meet it fail with 500
//!   `InternalError`, the others succeed, the server keeps serving.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::batch::BatchBody;
use common::child::{ChildServer, Client, Signer};
use rand::{RngExt as _, SeedableRng as _};
use rand_pcg::Pcg64;
use serde_json::{json, Value};

/// A file system mounted for one test, unmounted (lazily) when dropped.
struct Mount {
    dir: PathBuf,
    how: &'static str,
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

fn run(cmd: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Mounts a small file system of `mib` MiB at `dir`: tmpfs, else a loop-mounted ext4 image.
fn small_filesystem(dir: &Path, image: &Path, mib: u64) -> Result<Mount, String> {
    let d = dir.to_str().ok_or("path")?;
    let tmpfs = run(
        "mount",
        &["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs", d],
    );
    if tmpfs.is_ok() {
        return Ok(Mount {
            dir: dir.to_path_buf(),
            how: "tmpfs",
        });
    }
    let img = image.to_str().ok_or("path")?;
    let ext4 = run("truncate", &["-s", &format!("{mib}M"), img])
        .and_then(|()| run("mkfs.ext4", &["-q", "-F", img]))
        .and_then(|()| run("mount", &["-o", "loop", img, d]));
    match ext4 {
        Ok(()) => Ok(Mount {
            dir: dir.to_path_buf(),
            how: "ext4 loop image",
        }),
        Err(e) => Err(format!("tmpfs: {}; ext4 loop: {e}", tmpfs.unwrap_err())),
    }
}

fn entity(rk: usize, data: &str) -> Value {
    json!({"PartitionKey": "p", "RowKey": format!("{rk:05}"), "data": data, "n": rk as i64})
}

/// Inserts row `rk` into the `full` table, whatever the answer.
async fn insert_row(client: &Client, rk: usize, data: &str) -> common::Reply {
    let prefer = [("Prefer", "return-no-content")];
    client
        .post_entity("full", &entity(rk, data), &prefer)
        .await
        .expect("answered")
}

fn assert_server_busy(r: &common::Reply, dir: &Path) {
    assert_eq!(r.status.as_u16(), 503, "{}", r.text());
    assert_eq!(r.error_code(), "ServerBusy", "{}", r.text());
    let text = r.text();
    assert!(
        !text.contains(dir.to_str().unwrap_or("/")) && !text.contains("/tmp"),
        "error leaks a path: {text}"
    );
}

/// Once the disk is full every write fails (nothing frees space by itself) until space is
/// freed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_full_fails_writes_with_server_busy_and_recovers_when_space_is_freed() {
    let root = tempfile::tempdir().unwrap();
    let mnt = root.path().join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let mount = match small_filesystem(&mnt, &root.path().join("fs.img"), 24) {
        Ok(m) => m,
        Err(why) => {
            println!("SKIPPED disk-full test: cannot mount a small file system here ({why})");
            return;
        }
    };
    println!("disk-full test on a {}", mount.how);
    let data_dir = mnt.join("data");
    let server = ChildServer::start(&data_dir, &[]);
    let client = Client::new(&server.endpoint(), Signer::dev());
    client.create_table("full").await;
    // A balloon takes most of the space, so the store fills up after a few writes (the
    // server keeps 8 MiB in reserve and refuses writes below it).
    let balloon = mnt.join("balloon");
    let free = fs4::available_space(&mnt).unwrap();
    let keep = (8 + 3) * 1024 * 1024;
    std::fs::write(&balloon, vec![0u8; free.saturating_sub(keep) as usize]).unwrap();

    // Letters that do not repeat: the store compresses entities, so "xxx…" would never fill it.
    let mut rng = Pcg64::seed_from_u64(1);
    let data: String = (0..30_000)
        .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
        .collect();
    let mut acknowledged = Vec::new();
    let mut failures = 0;
    let mut first_failure = None;
    for rk in 0..2000 {
        let r = insert_row(&client, rk, &data).await;
        if r.status.as_u16() == 204 {
            assert_eq!(failures, 0, "a write succeeded after the disk was full");
            failures = 0;
            acknowledged.push((rk, r.header("etag").unwrap().to_string()));
        } else {
            assert_server_busy(&r, &data_dir);
            failures += 1;
            first_failure.get_or_insert(rk);
            if failures == 5 {
                break;
            }
        }
    }
    assert_eq!(failures, 5, "the disk never filled up");
    assert!(!acknowledged.is_empty());
    println!(
        "{} writes acknowledged before the disk was full",
        acknowledged.len()
    );

    // Batches and table creation fail the same way, at the top level.
    let mut batch = BatchBody::new(&client.account_url());
    let entity = entity(9999, &data).to_string();
    batch.op(
        "POST",
        "/full",
        &[("Prefer", "return-no-content")],
        Some(&entity),
    );
    let r = client.send_batch(&batch).await.unwrap();
    assert_server_busy(&r, &data_dir);

    // Reads keep working and see every acknowledged write.
    for (rk, etag) in &acknowledged {
        let r = client
            .send(
                "GET",
                &format!("/full(PartitionKey='p',RowKey='{rk:05}')"),
                &[],
                None,
            )
            .await
            .unwrap();
        assert_eq!(
            r.status.as_u16(),
            200,
            "{rk}: {} {}",
            r.text(),
            server.log_so_far()
        );
        assert_eq!(r.header("etag"), Some(etag.as_str()));
        assert_eq!(r.json()["data"].as_str().map(str::len), Some(30_000));
    }
    let r = client.send("GET", "/full()", &[], None).await.unwrap();
    assert_eq!(r.status.as_u16(), 200);
    assert!(client.healthy().await);

    // Free the space: writes succeed again (within a short retry), without a restart.
    std::fs::remove_file(&balloon).unwrap();
    let started = Instant::now();
    let next = 5000;
    loop {
        let r = insert_row(&client, next, "small").await;
        if r.status.as_u16() == 204 {
            break;
        }
        assert_server_busy(&r, &data_dir);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "writes did not resume after space was freed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for rk in 5001..5020 {
        assert_eq!(insert_row(&client, rk, &data).await.status.as_u16(), 204);
    }

    // Nothing acknowledged was damaged, also after a restart.
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
    let server = ChildServer::start(&data_dir, &[]);
    let client = Client::new(&server.endpoint(), Signer::dev());
    for (rk, etag) in &acknowledged {
        let r = client
            .send(
                "GET",
                &format!("/full(PartitionKey='p',RowKey='{rk:05}')"),
                &[],
                None,
            )
            .await
            .unwrap();
        assert_eq!(r.status.as_u16(), 200, "{}", r.text());
        assert_eq!(r.header("etag"), Some(etag.as_str()));
    }
    for rk in 5000..5020 {
        let r = client
            .send(
                "GET",
                &format!("/full(PartitionKey='p',RowKey='{rk:05}')"),
                &[],
                None,
            )
            .await
            .unwrap();
        assert_eq!(r.status.as_u16(), 200);
    }
    assert!(server.terminate().success());
    drop(mount);
}

/// Fills a data folder through a server and stops it cleanly.
async fn populated_folder(dir: &Path) {
    let server = ChildServer::start(dir, &[]);
    let client = Client::new(&server.endpoint(), Signer::dev());
    client.create_table("full").await;
    for rk in 0..200 {
        assert_eq!(
            insert_row(&client, rk, &"y".repeat(300))
                .await
                .status
                .as_u16(),
            204
        );
    }
    assert!(server.terminate().success());
}

/// The start-up must fail with a non-zero exit and a message naming the folder, not panic.
fn assert_refuses_to_start(dir: &Path, what: &str) {
    let failure = match ChildServer::try_start(dir, &[]) {
        Ok(server) => {
            server.kill9();
            panic!("{what}: the server started");
        }
        Err(f) => f,
    };
    let status = failure.status.expect("the process exited");
    let all = format!("{}{}", failure.stdout, failure.stderr);
    assert!(!status.success(), "{what}: exit status {status:?}");
    assert_ne!(status.code(), Some(101), "{what}: panicked: {all}");
    assert!(!all.contains("panicked"), "{what}: panicked: {all}");
    // One sentence naming the data folder and what to do, without Rust debug text.
    assert!(
        failure.stderr.contains("data folder") && failure.stderr.contains("--location"),
        "{what}: unclear message: {all}"
    );
    assert!(
        !failure.stderr.contains("Io(") && !failure.stderr.contains("Os {"),
        "{what}: debug text: {all}"
    );
    println!("{what}: {}", failure.stderr.trim());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusable_or_corrupted_data_folders_fail_cleanly() {
    let root = tempfile::tempdir().unwrap();

    // The location is a file.
    let file = root.path().join("a-file");
    std::fs::write(&file, b"not a folder").unwrap();
    assert_refuses_to_start(&file, "location is a file");

    let good = root.path().join("good");
    populated_folder(&good).await;
    let copy = |name: &str| {
        let dir = root.path().join(name);
        let out = Command::new("cp")
            .arg("-r")
            .arg(&good)
            .arg(&dir)
            .status()
            .unwrap();
        assert!(out.success());
        dir
    };

    // The log file replaced by a folder.
    let d = copy("db-is-folder");
    std::fs::remove_file(d.join("__tablestore__").join("db")).unwrap();
    std::fs::create_dir(d.join("__tablestore__").join("db")).unwrap();
    assert_refuses_to_start(&d, "db is a folder");

    // The log file overwritten with random bytes.
    let d = copy("random-db");
    let len = std::fs::metadata(d.join("__tablestore__").join("db"))
        .unwrap()
        .len() as usize;
    let mut rng = Pcg64::seed_from_u64(2);
    let noise: Vec<u8> = (0..len).map(|_| rng.random()).collect();
    std::fs::write(d.join("__tablestore__").join("db"), noise).unwrap();
    assert_refuses_to_start(&d, "random bytes in db");

    // The log file cut in half.
    let d = copy("truncated-db");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(d.join("__tablestore__").join("db"))
        .unwrap();
    f.set_len(len as u64 / 2).unwrap();
    drop(f);
    assert_refuses_to_start(&d, "truncated db");

    // Bytes overwritten in the middle of the log.
    let d = copy("scribbled-db");
    let mut bytes = std::fs::read(d.join("__tablestore__").join("db")).unwrap();
    let mid = bytes.len() / 3;
    bytes[mid..mid + 64].fill(b'X');
    std::fs::write(d.join("__tablestore__").join("db"), bytes).unwrap();
    assert_refuses_to_start(&d, "scribbled db");

    // Unreadable files (only meaningful when not running as root).
    let d = copy("unreadable");
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(true);
    if is_root {
        println!("SKIPPED unreadable-folder case: running as root, permissions do not apply");
    } else {
        assert!(Command::new("chmod")
            .args(["-R", "000"])
            .arg(&d)
            .status()
            .unwrap()
            .success());
        assert_refuses_to_start(&d, "unreadable folder");
        let _ = Command::new("chmod").args(["-R", "700"]).arg(&d).status();
    }

    // The untouched folder still opens with all its data.
    let server = ChildServer::start(&good, &[]);
    let client = Client::new(&server.endpoint(), Signer::dev());
    let r = client.send("GET", "/full()", &[], None).await.unwrap();
    assert_eq!(r.json()["value"].as_array().map(Vec::len), Some(200));
    assert!(server.terminate().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_in_use_by_another_instance_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("shared");
    let first = ChildServer::start(&dir, &[]);
    let client = Client::new(&first.endpoint(), Signer::dev());
    client.create_table("full").await;

    let failure = match ChildServer::try_start(&dir, &[]) {
        Ok(second) => {
            second.kill9();
            panic!("a second instance started on a folder in use");
        }
        Err(f) => f,
    };
    let status = failure.status.expect("exited");
    assert!(!status.success());
    assert_ne!(status.code(), Some(101));
    assert!(
        failure
            .stderr
            .contains("another tablestore is using the data folder"),
        "unclear message: {}",
        failure.stderr
    );
    // The first instance is unaffected.
    assert_eq!(
        insert_row(&client, 1, "still here").await.status.as_u16(),
        204
    );
    assert!(first.terminate().success());
}

/// One entity damaged on disk (its LZ4 frame cut short, written with sled itself while the
/// server was stopped): the reads that meet it answer 500 `InternalError` in Azure's error
/// body, every other entity stays readable, and the server keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_entity_fails_the_reads_that_meet_it_not_the_server() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("damaged");
    populated_folder(&dir).await;
    {
        let db = sled::open(dir.join("__tablestore__")).expect("open the stopped store");
        let entities = db.open_tree("entities").unwrap();
        // One partition, rows 00000…00199 in key order: the eighth is row 00007.
        let (key, frame) = entities.iter().nth(7).unwrap().unwrap();
        entities.insert(key, &frame[..frame.len() / 2]).unwrap();
        db.flush().unwrap();
    }
    let server = ChildServer::start(&dir, &[]);
    let client = Client::new(&server.endpoint(), Signer::dev());
    let get = |rk: &str| format!("/full(PartitionKey='p',RowKey='{rk}')");
    for _ in 0..2 {
        let r = client.send("GET", &get("00007"), &[], None).await.unwrap();
        assert_eq!(r.status.as_u16(), 500, "{}", r.text());
        assert_eq!(r.error_code(), "InternalError", "{}", r.text());
        let r = client.send("GET", &get("00008"), &[], None).await.unwrap();
        assert_eq!(r.status.as_u16(), 200, "{}", r.text());
        assert_eq!(r.json()["n"], 8);
        // A query that reads through the damaged entity fails whole: no page without it.
        let r = client.send("GET", "/full()", &[], None).await.unwrap();
        assert_eq!(r.status.as_u16(), 500, "{}", r.text());
        assert_eq!(r.error_code(), "InternalError", "{}", r.text());
        // One that does not meet it is answered.
        let r = client
            .send(
                "GET",
                "/full()?$filter=PartitionKey%20eq%20'p'%20and%20RowKey%20ge%20'00100'",
                &[],
                None,
            )
            .await
            .unwrap();
        assert_eq!(r.json()["value"].as_array().map(Vec::len), Some(100));
    }
    assert!(server.terminate().success());
}
