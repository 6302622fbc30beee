//! Command line of `tablestore-bench`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub const DEV_ACCOUNT: &str = "devstoreaccount1";
pub const DEV_ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const LONG_ABOUT: &str = "\
Load generator for Azure Table storage-compatible servers (tablestore, Azurite, ...).

It creates its own tables (random names starting with --table-prefix), preloads one of them
with --entities entities in --partitions partitions (via $batch, falling back to single
inserts when the server rejects $batch), then runs each selected workload in turn with
--concurrency keep-alive connections, each with one request in flight. Every request is
signed with Shared Key Lite. A workload runs for --duration seconds or --ops operations,
whichever ends first (after --warmup seconds that are not measured).

Workloads (--workloads, comma separated, default all, run in the order given):
  insert        POST one ~1 KiB entity (Prefer: return-no-content) into a fresh table
  point-read    GET one preloaded entity by PartitionKey and RowKey
  upsert        PUT a preloaded entity without If-Match (insert-or-replace)
  merge         MERGE two properties into a preloaded entity with If-Match: *
  delete        DELETE with If-Match: * from a pool table loaded beforehand (--delete-pool
                entities, or --ops); ends early when the pool is used up
  batch-insert  POST $batch: one change set of --batch-size inserts in one partition
  range-query   $filter=PartitionKey eq 'p' and RowKey ge 'a' and RowKey lt 'b' over
                --range-rows consecutive rows of one preloaded partition
  scan-filter   $filter=Bucket eq N over the whole preloaded table (matches 0.1 %),
                following continuation tokens to the end; one operation = one full scan
  bulk-load     $batch inserts into a fresh table until --bulk-entities entities exist
                (ignores --duration/--ops; capped by --bulk-max-seconds); reports
                entities/s per second as a timeline

Entities have PartitionKey, RowKey and ten properties: Name, Description (String), Count,
Bucket (Int32), Big (Int64), Score (Double), Active (Boolean), Created (DateTime),
Uid (Guid), Blob (Binary); about 1 KiB of JSON each. Bucket = index % 1000.

Reported per workload: successful operations, ops/s, ent/s (entities written per second
for batch-insert and bulk-load, rows returned per second for queries), latency
p50/p90/p99/max of successful operations, errors by HTTP status (\"batch:409\" is a
failed $batch sub-response, \"io\"/\"timeout\" are transport failures), and \"bad\", the
count of successful queries that returned a different number of rows than expected. With
--server-pid (Linux): the server's CPU time per operation (utime+stime delta from
/proc/PID/stat) and its peak resident memory (VmRSS sampled every 250 ms during the workload,
and VmHWM, the lifetime peak). With --data-dir: the folder's size after each workload. From
a server that publishes tablestore_store_logical_bytes in GET /metrics: the data it holds.

Only loopback endpoints are accepted unless --allow-remote is given. Several endpoints,
comma separated, spread the connections over them round-robin (several nodes over one
database, docs/scale-out.md).

Examples:
  tablestore-bench --endpoint http://127.0.0.1:10002/devstoreaccount1
  tablestore-bench --workloads insert,point-read --duration 5 --concurrency 16
  tablestore-bench --endpoint http://127.0.0.1:10002/devstoreaccount1,http://127.0.0.1:10012/devstoreaccount1
  tablestore-bench --server-pid $(pgrep -n tablestore) --data-dir /tmp/data --json out.json
  tablestore-bench compare --baseline azurite.json --candidate tablestore.json --floor floor.json
  tablestore-bench floor --port 10102     # the HTTP floor: answers every workload, stores nothing";

#[derive(Debug, Parser)]
#[command(
    name = "tablestore-bench",
    version,
    about = "Load generator for Azure Table storage-compatible servers",
    long_about = LONG_ABOUT,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compare two --json result files and print a markdown table of ratios.
    Compare(CompareArgs),
    /// Serve the HTTP floor: a trivial Table endpoint that answers every workload's requests
    /// without storing anything, on tablestore's HTTP stack (docs/performance.md).
    Floor(FloorArgs),
}

#[derive(Debug, Clone, Args)]
pub struct FloorArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,

    /// Port to listen on (0: any free port, printed at start-up).
    #[arg(long, default_value_t = 10002)]
    pub port: u16,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Results of the server we compare against (e.g. Azurite).
    #[arg(long)]
    pub baseline: PathBuf,

    /// Results of the server being measured (e.g. tablestore).
    #[arg(long)]
    pub candidate: PathBuf,

    /// Results of the same run against the HTTP floor (`tablestore-bench floor`): adds the
    /// candidate's rates as a ratio to the floor's.
    #[arg(long)]
    pub floor: Option<PathBuf>,

    /// Write the markdown here instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum)]
pub enum Workload {
    Insert,
    PointRead,
    Upsert,
    Merge,
    Delete,
    BatchInsert,
    RangeQuery,
    ScanFilter,
    BulkLoad,
}

impl Workload {
    pub const ALL: [Workload; 9] = [
        Workload::Insert,
        Workload::PointRead,
        Workload::Upsert,
        Workload::Merge,
        Workload::Delete,
        Workload::BatchInsert,
        Workload::RangeQuery,
        Workload::ScanFilter,
        Workload::BulkLoad,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::Insert => "insert",
            Workload::PointRead => "point-read",
            Workload::Upsert => "upsert",
            Workload::Merge => "merge",
            Workload::Delete => "delete",
            Workload::BatchInsert => "batch-insert",
            Workload::RangeQuery => "range-query",
            Workload::ScanFilter => "scan-filter",
            Workload::BulkLoad => "bulk-load",
        }
    }

    /// Reads or rewrites the preloaded table.
    pub fn uses_preload(self) -> bool {
        matches!(
            self,
            Workload::PointRead
                | Workload::Upsert
                | Workload::Merge
                | Workload::RangeQuery
                | Workload::ScanFilter
        )
    }

    /// One operation writes many entities (throughput is also reported in entities/s).
    pub fn is_batch(self) -> bool {
        matches!(self, Workload::BatchInsert | Workload::BulkLoad)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Metadata {
    Nometadata,
    Minimalmetadata,
    Fullmetadata,
}

impl Metadata {
    pub fn accept(self) -> &'static str {
        match self {
            Metadata::Nometadata => "application/json;odata=nometadata",
            Metadata::Minimalmetadata => "application/json;odata=minimalmetadata",
            Metadata::Fullmetadata => "application/json;odata=fullmetadata",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoadMode {
    /// $batch if the server accepts it, otherwise single inserts.
    Auto,
    /// $batch change sets of --batch-size inserts.
    Batch,
    /// One insert per request.
    Single,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Table endpoint including the account in path style. Several, comma separated (the nodes
    /// of one scale-out deployment): connections are spread over them round-robin.
    #[arg(
        long,
        env = "TABLESTORE_BENCH_ENDPOINT",
        default_value = "http://127.0.0.1:10002/devstoreaccount1"
    )]
    pub endpoint: String,

    /// Account name used for signing.
    #[arg(long, env = "TABLESTORE_BENCH_ACCOUNT", default_value = DEV_ACCOUNT)]
    pub account: String,

    /// Account key (base64) used for signing.
    #[arg(long, env = "TABLESTORE_BENCH_KEY", default_value = DEV_ACCOUNT_KEY, hide_default_value = true)]
    pub key: String,

    /// Workloads to run, comma separated, in this order (default: all).
    #[arg(long, value_delimiter = ',', value_enum)]
    pub workloads: Vec<Workload>,

    /// Connections, each with one request in flight.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub concurrency: u64,

    /// Measured seconds per workload.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,

    /// Stop a workload after this many measured operations (whichever of --duration/--ops ends first).
    #[arg(long)]
    pub ops: Option<u64>,

    /// Unmeasured seconds before each workload (not for bulk-load).
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,

    /// Entities in the preloaded table read by point-read, upsert, merge, range-query, scan-filter.
    #[arg(long, default_value_t = 100_000)]
    pub entities: u64,

    /// Partitions of the preloaded table (and of write workloads).
    #[arg(long, default_value_t = 100)]
    pub partitions: u64,

    /// How the preloaded table and the delete pool are filled.
    #[arg(long, value_enum, default_value_t = LoadMode::Auto)]
    pub preload: LoadMode,

    /// Use this table as the preloaded table. If it already exists it is assumed to hold the
    /// --entities/--partitions layout of an earlier run and is not loaded again; it is never
    /// deleted at the end.
    #[arg(long)]
    pub preload_table: Option<String>,

    /// Entities written by bulk-load.
    #[arg(long, default_value_t = 200_000)]
    pub bulk_entities: u64,

    /// Upper bound on the duration of bulk-load, seconds.
    #[arg(long, default_value_t = 600.0)]
    pub bulk_max_seconds: f64,

    /// Entities loaded for the delete workload to delete (default: --ops if given, else 50000).
    #[arg(long)]
    pub delete_pool: Option<u64>,

    /// Inserts per $batch change set (1..=100).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub batch_size: u64,

    /// Rows returned by one range-query.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub range_rows: u64,

    /// Response format requested with Accept.
    #[arg(long, value_enum, default_value_t = Metadata::Minimalmetadata)]
    pub metadata: Metadata,

    /// x-ms-version sent with every request.
    #[arg(long, default_value = "2019-02-02")]
    pub api_version: String,

    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,

    /// Upper bound on one scan-filter operation (all its pages), seconds.
    #[arg(long, default_value_t = 300.0)]
    pub scan_timeout: f64,

    /// Upper bound on preloading and on loading the delete pool, seconds.
    #[arg(long, default_value_t = 1800.0)]
    pub setup_timeout: f64,

    /// Wait up to this many seconds for the endpoint to answer before starting.
    #[arg(long, default_value_t = 0.0)]
    pub wait_ready: f64,

    /// Process id of the server, for CPU time and peak memory (Linux /proc).
    #[arg(long)]
    pub server_pid: Option<u32>,

    /// The server's data folder; its size is reported after each workload.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,

    /// Write machine-readable results to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,

    /// Name of the server under test, recorded in the results (e.g. tablestore, azurite).
    #[arg(long)]
    pub label: Option<String>,

    /// Prefix of the tables this run creates.
    #[arg(long, default_value = "bench")]
    pub table_prefix: String,

    /// Keep the tables this run created (default: delete them at the end).
    #[arg(long)]
    pub keep_tables: bool,

    /// Client runtime threads (default: available cores, at most 4).
    #[arg(long)]
    pub threads: Option<usize>,

    /// Seed of the workload's random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Accept an endpoint that is not a loopback address.
    #[arg(long)]
    pub allow_remote: bool,

    /// No progress lines on standard error.
    #[arg(long)]
    pub quiet: bool,
    /// A shell command run just before each workload's measured phase as `CMD start WORKLOAD`
    /// and just after it as `CMD end WORKLOAD` (after the warm-up and any setup, with no
    /// request in flight): for profilers that count only the measured requests
    /// (scripts/profile-request-path.sh zeroes and dumps callgrind's counters with it). A
    /// hook that fails stops the run.
    #[arg(long)]
    pub phase_hook: Option<String>,
}

impl RunArgs {
    pub fn selected(&self) -> Vec<Workload> {
        if self.workloads.is_empty() {
            return Workload::ALL.to_vec();
        }
        let mut out: Vec<Workload> = Vec::new();
        for w in &self.workloads {
            if !out.contains(w) {
                out.push(*w);
            }
        }
        out
    }

    pub fn validate(&self) -> Result<(), String> {
        let pos = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("--{name} must be a positive number of seconds"))
            }
        };
        pos("duration", self.duration)?;
        pos("timeout", self.timeout)?;
        pos("scan-timeout", self.scan_timeout)?;
        pos("setup-timeout", self.setup_timeout)?;
        pos("bulk-max-seconds", self.bulk_max_seconds)?;
        if !(self.warmup.is_finite() && self.warmup >= 0.0) {
            return Err("--warmup must be zero or more seconds".into());
        }
        if !(self.wait_ready.is_finite() && self.wait_ready >= 0.0) {
            return Err("--wait-ready must be zero or more seconds".into());
        }
        if self.entities == 0 && self.selected().iter().any(|w| w.uses_preload()) {
            return Err("--entities must be at least 1 for the read workloads".into());
        }
        if self.partitions == 0 {
            return Err("--partitions must be at least 1".into());
        }
        if self.ops == Some(0) {
            return Err("--ops must be at least 1".into());
        }
        let p = &self.table_prefix;
        if p.is_empty()
            || p.len() > 40
            || !p.starts_with(|c: char| c.is_ascii_alphabetic())
            || !p.chars().all(|c| c.is_ascii_alphanumeric())
        {
            return Err(
                "--table-prefix must be 1-40 letters or digits, starting with a letter".into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn workloads_parse_in_order_and_dedupe() {
        let c = Cli::try_parse_from([
            "tablestore-bench",
            "--workloads",
            "scan-filter,insert,scan-filter",
        ])
        .unwrap();
        assert_eq!(
            c.run.selected(),
            vec![Workload::ScanFilter, Workload::Insert]
        );
        let c = Cli::try_parse_from(["tablestore-bench"]).unwrap();
        assert_eq!(c.run.selected().len(), 9);
        assert!(c.run.validate().is_ok());
        for w in Workload::ALL {
            let v = w.to_possible_value().unwrap();
            assert_eq!(v.get_name(), w.name());
        }
    }

    #[test]
    fn compare_subcommand_and_validation() {
        let c = Cli::try_parse_from([
            "tablestore-bench",
            "compare",
            "--baseline",
            "a.json",
            "--candidate",
            "b.json",
        ])
        .unwrap();
        assert!(matches!(c.command, Some(Command::Compare(_))));
        let c = Cli::try_parse_from(["tablestore-bench", "floor", "--port", "0"]).unwrap();
        match c.command {
            Some(Command::Floor(f)) => assert_eq!((f.host.as_str(), f.port), ("127.0.0.1", 0)),
            other => panic!("not the floor: {other:?}"),
        }
        assert!(Cli::try_parse_from(["tablestore-bench", "floor", "--port", "70000"]).is_err());
        let c = Cli::try_parse_from(["tablestore-bench", "--duration", "0"]).unwrap();
        assert!(c.run.validate().is_err());
        let c = Cli::try_parse_from(["tablestore-bench", "--table-prefix", "1x"]).unwrap();
        assert!(c.run.validate().is_err());
        assert!(Cli::try_parse_from(["tablestore-bench", "--batch-size", "101"]).is_err());
    }
}
