//! The full-table filter scan without HTTP: the query executor over the RAM tier (over the
//! memory backend, so no disk is involved), on a table shaped like the load benchmark's
//! (`tablestore-bench`: ten typed properties, ~800 encoded bytes, `Bucket` = i % 1000), with
//! the benchmark's filter `Bucket eq 7` (0.1 % of the rows). Prints CPU time per scan and per
//! row, for the executor's one-thread path and its split path (both cores when free).
//!
//! `cargo bench --bench scan` (`SCAN_ENTITIES`, default 100000; `SCAN_ROUNDS`, default 30).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tablestore::model::{
    EdmDateTime, EdmValue, EntityKey, IfMatch, Property, TableRef, WriteKind, WriteOp,
};
use tablestore::protocol::filter::parse;
use tablestore::query::{eval, execute_raw_page, PageLimits, PageRead};
use tablestore::store::kv::memory::MemoryKv;
use tablestore::store::tier::{TierOptions, TieredKv};
use tablestore::store::{Durability, KeyRange, KvStore, Store, StoredRow};

/// The server's allocator (src/main.rs), so rows are laid out in memory as in the server.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PARTITIONS: u64 = 100;
const BUCKETS: u64 = 1000;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The benchmark entity's properties (values differ; shape and sizes match).
fn entity(i: u64) -> Vec<Property> {
    let p = |name: &str, value| Property {
        name: name.into(),
        value,
    };
    let words = ["table ", "entity ", "storage ", "partition "];
    let mut description = String::with_capacity(700);
    let mut n = i;
    while description.len() < 640 {
        description.push_str(words[(n % 4) as usize]);
        n = n
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407)
            >> 7;
    }
    vec![
        p("Name", EdmValue::String(format!("entity-{i}"))),
        p("Count", EdmValue::Int32(i as i32)),
        p("Bucket", EdmValue::Int32((i % BUCKETS) as i32)),
        p("Big", EdmValue::Int64(i as i64 * 1_000_003)),
        p("Score", EdmValue::Double(i as f64 * 0.5)),
        p("Active", EdmValue::Boolean(i.is_multiple_of(2))),
        p("Created", EdmValue::DateTime(EdmDateTime(i as i64))),
        p("Uid", EdmValue::Guid([i as u8; 16])),
        p("Blob", EdmValue::Binary(vec![i as u8; 96])),
        p("Description", EdmValue::String(description)),
    ]
}

/// This process's CPU time (all threads), from /proc/self/stat's utime + stime (clock ticks,
/// 10 ms on Linux): coarse, so the figure is taken over many scans.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may contain spaces) start at field 3 (state).
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let entities = env_u64("SCAN_ENTITIES", 100_000);
    let rounds = env_u64("SCAN_ROUNDS", 30);
    let tier = TieredKv::new(
        MemoryKv::new(),
        TierOptions {
            background: false,
            ..TierOptions::with_budget_mib(4096)
        },
    );
    let store = KvStore::open(tier, Durability::Durable).expect("store");
    let table = runtime
        .block_on(store.create_table(&TableRef::new("devstoreaccount1", "scan")))
        .expect("table")
        .id;
    let per_partition = entities.div_ceil(PARTITIONS);
    for p in 0..PARTITIONS {
        let ops: Vec<WriteOp> = (0..per_partition)
            .map(|j| p * per_partition + j)
            .filter(|&i| i < entities)
            .map(|i| WriteOp {
                limits: Default::default(),
                kind: WriteKind::Insert,
                key: EntityKey {
                    partition_key: format!("p{p:03}"),
                    row_key: format!("r{i:010}"),
                },
                properties: entity(i),
                if_match: IfMatch::Any,
            })
            .collect();
        for chunk in ops.chunks(100) {
            runtime.block_on(store.commit(table, chunk)).expect("load");
        }
    }
    let filter = Arc::new(parse("Bucket eq 7").expect("filter"));
    let matches = move |row: &StoredRow<'_>| eval::matches(&filter, row);
    // As the server runs it: a read job on the blocking pool.
    let scan = || {
        let read = PageRead::new(
            vec![KeyRange::all()],
            matches.clone(),
            None,
            PageLimits::default(),
        );
        let page = runtime
            .block_on(execute_raw_page(&*store as &dyn Store, table, read))
            .expect("scan");
        assert_eq!(
            page.rows.len() as u64,
            entities.div_ceil(BUCKETS).min(entities)
        );
        black_box(page.examined)
    };
    // The first scans make the table resident and warm the caches.
    for _ in 0..3 {
        scan();
    }
    let (cpu0, wall0) = (cpu_time(), Instant::now());
    for _ in 0..rounds {
        scan();
    }
    let (cpu, wall) = (cpu_time() - cpu0, wall0.elapsed());
    let per = |d: Duration| d.as_secs_f64() * 1e3 / rounds as f64;
    println!(
        "full-table filter scan, {entities} rows, {rounds} scans: {:.2} ms wall, {:.2} ms CPU per scan ({:.0} ns CPU per row)",
        per(wall),
        per(cpu),
        cpu.as_nanos() as f64 / (rounds * entities) as f64
    );
}
