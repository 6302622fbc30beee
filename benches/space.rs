//! Why the data folder is larger than the data: the store (tablestore's own `KvStore` over
//! sled) goes through the standard run's kinds of writes, and after each phase this prints the
//! logical size (stored keys + values of the live entities, the store's own count) next to
//! the folder's size.
//! docs/performance.md ("Disk use") quotes it.
//!
//! `cargo bench --bench space` with, in the environment:
//! - `SPACE_ENTITIES` (default 100000): entities per table;
//! - `SPACE_SEGMENT` (default sled's 524288): sled segment size in bytes;
//! - `SPACE_COMPRESSION` (default lz4, as new folders; zstd = sled's log compression at
//!   level 1; off): how the folder is compressed;
//! - `SPACE_FLUSH_OPS` (default 32): single writes per flush, as the group commit shares a
//!   flush among the requests in flight (the benchmark keeps 32 in flight).
//!
//! The store lives in a temporary folder that is removed afterwards.

use std::time::{Duration, Instant};

use tablestore::model::{EdmDateTime, EdmValue, EntityKey, IfMatch, Property, TableRef};
use tablestore::model::{WriteKind, WriteOp};
use tablestore::store::kv::sled::{Compression, Layout, SledKv, SledOptions};
use tablestore::store::{Durability, KeyRange, KvStore, RowSource, Store, TableId};

const PARTITIONS: usize = 100;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The load benchmark's entity (`tablestore-bench`'s `data.rs`): ten properties of eight EDM
/// types, ~1 KiB as JSON, random bytes where the benchmark has them.
fn entity(i: usize, version: u64) -> Vec<Property> {
    let mut seed = (i as u64) ^ 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let p = |name: &str, value: EdmValue| Property {
        name: name.into(),
        value,
    };
    let mut uid = [0u8; 16];
    uid[..8].copy_from_slice(&next().to_le_bytes());
    uid[8..].copy_from_slice(&next().to_le_bytes());
    let blob: Vec<u8> = (0..12).flat_map(|_| next().to_le_bytes()).collect();
    const WORDS: [&str; 8] = [
        "table",
        "entity",
        "storage",
        "partition",
        "row",
        "bench",
        "query",
        "value",
    ];
    let mut description = String::new();
    while description.len() < 560 {
        description.push_str(WORDS[(next() % 8) as usize]);
        description.push(' ');
    }
    vec![
        p("Name", EdmValue::String(format!("entity-{i}"))),
        p("Count", EdmValue::Int32((i as u64 + version) as i32)),
        p("Bucket", EdmValue::Int32((i % 1000) as i32)),
        p("Big", EdmValue::Int64(i as i64 * 1_000_003 + (1 << 40))),
        p("Score", EdmValue::Double(i as f64 * 0.5 + 0.125)),
        p("Active", EdmValue::Boolean(i.is_multiple_of(2))),
        p(
            "Created",
            EdmValue::DateTime(EdmDateTime(15_778_368_000_000_000 + i as i64)),
        ),
        p("Uid", EdmValue::Guid(uid)),
        p("Blob", EdmValue::Binary(blob)),
        p("Description", EdmValue::String(description)),
    ]
}

fn key(i: usize) -> EntityKey {
    EntityKey {
        partition_key: format!("p{:05}", i % PARTITIONS),
        row_key: format!("r{:08}", i / PARTITIONS),
    }
}

fn op(kind: WriteKind, i: usize, properties: Vec<Property>) -> WriteOp {
    WriteOp {
        limits: Default::default(),
        kind,
        key: key(i),
        properties,
        if_match: IfMatch::Any,
    }
}

struct Run {
    runtime: tokio::runtime::Runtime,
    dir: tempfile::TempDir,
    options: SledOptions,
    flush_ops: usize,
}

impl Run {
    /// Waits for the store's `work`.
    fn wait<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        self.runtime.block_on(work)
    }

    fn open(&self) -> std::sync::Arc<KvStore<SledKv>> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match SledKv::open(self.dir.path(), &self.options) {
                Ok(kv) => return KvStore::open(kv, Durability::Relaxed).expect("open the store"),
                Err(e) if Instant::now() > deadline => panic!("open: {e:?}"),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    /// The store's own count (checked against a scan by the store conformance suite).
    fn report(&self, phase: &str, store: &dyn Store, started: Instant) {
        self.wait(store.flush()).expect("flush");
        let f = self
            .wait(store.footprint())
            .expect("the sled store counts its data");
        let (n, bytes) = (f.entities, f.logical_bytes);
        let disk = f.disk_bytes.unwrap_or(0);
        println!(
            "{phase:<44} {n:>8} {:>10.1} {:>10.1} {:>6.2}× {:>7.1}",
            bytes as f64 / 1048576.0,
            disk as f64 / 1048576.0,
            disk as f64 / bytes.max(1) as f64,
            started.elapsed().as_secs_f64()
        );
    }

    /// Single-entity commits, flushed every `flush_ops` as the group commit would.
    fn singles(&self, store: &dyn Store, table: TableId, ops: impl Iterator<Item = WriteOp>) {
        for (n, op) in ops.enumerate() {
            self.wait(store.commit(table, &[op])).expect("commit");
            if (n + 1) % self.flush_ops == 0 {
                self.wait(store.flush()).expect("flush");
            }
        }
    }

    /// `$batch`es of 100 inserts into one partition each, flushed after every batch.
    fn load(&self, store: &dyn Store, table: TableId, n: usize) {
        let per_partition = n.div_ceil(PARTITIONS);
        for p in 0..PARTITIONS {
            let rows: Vec<usize> = (0..per_partition)
                .map(|j| j * PARTITIONS + p)
                .filter(|&i| i < n)
                .collect();
            for chunk in rows.chunks(100) {
                let ops: Vec<WriteOp> = chunk
                    .iter()
                    .map(|&i| op(WriteKind::Insert, i, entity(i, 0)))
                    .collect();
                self.wait(store.commit(table, &ops)).expect("batch");
                self.wait(store.flush()).expect("flush");
            }
        }
    }
}

fn main() {
    let n = env("SPACE_ENTITIES", 100_000);
    let compression = match std::env::var("SPACE_COMPRESSION").as_deref() {
        Ok("zstd") => Compression::Zstd,
        Ok("off") => Compression::Off,
        Ok("lz4") | Err(_) => Compression::Lz4,
        Ok(other) => panic!("SPACE_COMPRESSION={other}: use lz4, zstd or off"),
    };
    let options = SledOptions {
        cache_capacity: 16 * 1024 * 1024,
        layout: Layout {
            segment_size: env("SPACE_SEGMENT", 512 * 1024),
            compression,
        },
        ..SledOptions::default()
    };
    let run = Run {
        runtime: tokio::runtime::Runtime::new().expect("a runtime"),
        dir: tempfile::tempdir().expect("temporary folder"),
        flush_ops: env("SPACE_FLUSH_OPS", 32).max(1),
        options,
    };
    println!(
        "store space: {n} entities per table, segment {} B, compression {}, a flush every {} single writes",
        run.options.layout.segment_size,
        run.options.layout.compression.name(),
        run.flush_ops
    );
    println!(
        "{:<44} {:>8} {:>10} {:>10} {:>7} {:>7}",
        "after", "entities", "data MiB", "folder MiB", "ratio", "s"
    );
    let started = Instant::now();
    let store = run.open();
    let main = run
        .wait(store.create_table(&TableRef::new("devstoreaccount1", "main")))
        .expect("create")
        .id;

    run.load(&*store, main, n);
    run.report("load (batches of 100)", &*store, started);

    run.singles(
        &*store,
        main,
        (0..n).map(|i| op(WriteKind::InsertOrReplace, i, entity(i, 1))),
    );
    run.report("upsert every entity once", &*store, started);

    let merge = |i: usize, v: i32| {
        op(
            WriteKind::Merge,
            i,
            vec![
                Property {
                    name: "Count".into(),
                    value: EdmValue::Int32(v),
                },
                Property {
                    name: "Score".into(),
                    value: EdmValue::Double(v as f64 + 0.5),
                },
            ],
        )
    };
    run.singles(&*store, main, (0..n).map(|i| merge(i, 2)));
    run.report("merge two properties of each", &*store, started);

    for round in 2..5 {
        run.singles(
            &*store,
            main,
            (0..n).map(|i| op(WriteKind::InsertOrReplace, i, entity(i, round))),
        );
    }
    run.report("upsert every entity 3 more times", &*store, started);

    run.singles(
        &*store,
        main,
        (0..n)
            .step_by(2)
            .map(|i| op(WriteKind::Delete, i, Vec::new())),
    );
    run.report("delete every other entity", &*store, started);

    let scratch_ref = TableRef::new("devstoreaccount1", "scratch");
    let scratch = run
        .wait(store.create_table(&scratch_ref))
        .expect("create")
        .id;
    run.load(&*store, scratch, n);
    run.report("load a second table", &*store, started);
    run.wait(store.delete_table(&scratch_ref))
        .expect("delete table");
    // The purge runs in the background; wait until the table's rows are gone.
    let deadline = Instant::now() + Duration::from_secs(300);
    let any_row = || {
        let mut found = false;
        store
            .rows(scratch)
            .scan_raw(&KeyRange::all(), &mut |_| {
                found = true;
                false
            })
            .expect("scan");
        found
    };
    while any_row() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    run.report("delete the second table (purged)", &*store, started);
    // Idle time: sled's flusher cleans segments every flush interval.
    std::thread::sleep(Duration::from_secs(5));
    run.report("5 s idle", &*store, started);
    drop(store);
    std::thread::sleep(Duration::from_millis(500));
    let store = run.open();
    run.report("closed and reopened", &*store, started);
}
