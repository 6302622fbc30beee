//! The floor under tablestore's throughput: raw sled 0.34, no HTTP, no JSON, no tablestore
//! code except the key encoding, doing what the load benchmark's workloads ask of it. If a
//! workload's target is above what sled itself does on the machine, no server built on it can
//! meet the target; docs/performance.md quotes these figures.
//!
//! `cargo bench --bench sled_floor` (`SLED_FLOOR_ENTITIES`, default 100000; the store goes in
//! a temporary folder that is removed afterwards).

use std::hint::black_box;
use std::time::{Duration, Instant};

use tablestore::store::encoding::key::entity_key;

/// The encoded size of the load benchmark's ~1 KiB JSON entity in tablestore's value codec.
const VALUE_BYTES: usize = 800;
const PARTITIONS: usize = 100;
const CACHE_BYTES: u64 = 32 * 1024 * 1024;

fn key(i: usize) -> Vec<u8> {
    entity_key(
        1,
        &format!("p{:03}", i % PARTITIONS),
        &format!("r{:010}", i / PARTITIONS),
    )
}

fn report(what: &str, count: usize, elapsed: Duration) {
    println!(
        "{what:<48} {:>12.0} /s {:>9.0} ns each",
        count as f64 / elapsed.as_secs_f64(),
        elapsed.as_nanos() as f64 / count as f64
    );
}

fn rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// A small deterministic generator, so runs read the same keys.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % below
    }
}

fn open(path: &std::path::Path) -> (sled::Db, sled::Tree) {
    let db = sled::Config::new()
        .path(path)
        .cache_capacity(CACHE_BYTES)
        .mode(sled::Mode::HighThroughput)
        .open()
        .expect("open sled");
    let tree = db.open_tree("entities").expect("open tree");
    (db, tree)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let n: usize = std::env::var("SLED_FLOOR_ENTITIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("temporary folder");
    let value = vec![0x5au8; VALUE_BYTES];
    println!(
        "raw sled 0.34, {n} entries of {VALUE_BYTES} B in {PARTITIONS} partitions, 32 MiB cache"
    );

    {
        let (db, tree) = open(dir.path());
        let start = Instant::now();
        for i in 0..n {
            tree.insert(key(i), &value[..]).unwrap();
        }
        report("insert, one thread, no flush", n, start.elapsed());
        db.flush().unwrap();

        // Batches of 100 into one partition, as `$batch` does (fresh keys).
        let start = Instant::now();
        let mut written = 0;
        for b in 0..(n / 100) {
            let mut batch = sled::Batch::default();
            for j in 0..100 {
                let k = entity_key(
                    2,
                    &format!("b{:03}", b % PARTITIONS),
                    &format!("r{b:06}{j:03}"),
                );
                batch.insert(k, &value[..]);
            }
            tree.apply_batch(batch).unwrap();
            written += 100;
        }
        db.flush().unwrap();
        report(
            "apply_batch of 100, one thread, + final flush",
            written,
            start.elapsed(),
        );

        // Two writer threads (the machine's core count), as concurrent requests would.
        let start = Instant::now();
        std::thread::scope(|s| {
            for t in 0..2 {
                let tree = tree.clone();
                let value = &value;
                s.spawn(move || {
                    for b in 0..(n / 200) {
                        let mut batch = sled::Batch::default();
                        for j in 0..100 {
                            let k = entity_key(
                                3 + t,
                                &format!("b{:03}", b % PARTITIONS),
                                &format!("r{b:06}{j:03}"),
                            );
                            batch.insert(k, &value[..]);
                        }
                        tree.apply_batch(batch).unwrap();
                    }
                });
            }
        });
        report("apply_batch of 100, two threads", n, start.elapsed());
        db.flush().unwrap();
    }

    // Reopen so reads start from a cold cache, as after a restart.
    let (_db, tree) = open(dir.path());
    let table = entity_key(1, "", "");
    let prefix = &table[..8];
    let mut rng = Lcg(42);
    let reads = n.min(200_000);
    let start = Instant::now();
    for _ in 0..reads {
        black_box(tree.get(key(rng.next(n))).unwrap());
    }
    report("random get, one thread", reads, start.elapsed());

    for round in ["first", "second"] {
        let start = Instant::now();
        let mut count = 0usize;
        for item in tree.scan_prefix(prefix) {
            let (_k, v) = item.unwrap();
            black_box(v[VALUE_BYTES / 2]);
            count += 1;
        }
        assert_eq!(count, n);
        report(
            &format!("full scan of the table ({round} pass)"),
            count,
            start.elapsed(),
        );
    }
    if let Some(rss) = rss_mib() {
        println!("{:<48} {rss:>12.1} MiB", "resident memory at the end");
    }
}
