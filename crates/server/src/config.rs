//! Command line and environment. Every option has a `TABLESTORE_*` environment variable, and
//! Azurite's table options (`--tableHost`, `--inMemoryPersistence`, `-l`, `-s`, `-d`, `-L`, …)
//! and environment (`AZURITE_ACCOUNTS`, `AZURITE_SKIP_API_VERSION_CHECK`) are accepted as
//! aliases, so `tablestore` can replace `azurite-table` without changing its command line.
//! Azurite's blob and queue options are accepted and ignored with a warning.
//!
//! Depends on nothing else in the crate but the store's [`Durability`] and [`Compression`]
//! and its test for a PostgreSQL URL.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::builder::BoolishValueParser;
use clap::parser::ValueSource;
use clap::{ArgAction, Args, CommandFactory, FromArgMatches, Parser, ValueEnum};

use crate::protocol::dialect::{Dialect, Flavor};
use crate::store::open::Compression;
use crate::store::open::{DiskOptions, StoreOptions};
use crate::store::Durability;

/// The well-known development account and its published key.
pub const DEV_ACCOUNT: &str = "devstoreaccount1";
pub const DEV_ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// The Table port of the Azure Cosmos DB emulator (`/TablePort`'s default; Azure docs: "Command-line
/// and PowerShell reference for Azure Cosmos DB emulator"): `--flavor cosmos` listens there
/// unless told otherwise.
pub const COSMOS_EMULATOR_PORT: u16 = 8902;

/// The Table port the SDKs and tools expect (Azurite's).
pub const TABLE_PORT: u16 = 10002;

/// Folder, inside the workspace (`--location`), that holds the on-disk store.
pub const STORE_DIR_NAME: &str = "__tablestore__";

/// Azurite's switch for skipping the version check by environment; only the exact value
/// `true` enables it (Azurite README, "Skip API Version Check with an Environment Variable").
pub(crate) const AZURITE_SKIP_API_VERSION_CHECK: &str = "AZURITE_SKIP_API_VERSION_CHECK";

/// `--flavor`: which service the server answers as (docs/cosmos.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FlavorArg {
    /// Azure Table storage.
    Storage,
    /// Azure Cosmos DB for Table, as its emulator: port 8902, account `localhost`.
    Cosmos,
}

impl From<FlavorArg> for Flavor {
    fn from(arg: FlavorArg) -> Flavor {
        match arg {
            FlavorArg::Storage => Flavor::Storage,
            FlavorArg::Cosmos => Flavor::Cosmos,
        }
    }
}

/// The start-up defaults each flavour brings (the wire differences are its dialect's,
/// `protocol::dialect`): Cosmos's are its emulator's.
impl FlavorArg {
    /// The port served when none is given: Azurite's 10002, or the Cosmos DB emulator's 8902.
    pub fn default_port(self) -> u16 {
        match self {
            FlavorArg::Storage => TABLE_PORT,
            FlavorArg::Cosmos => COSMOS_EMULATOR_PORT,
        }
    }

    /// The account served and shown when none is configured: the development account, or the
    /// Cosmos DB emulator's `localhost`.
    pub fn default_account(self) -> &'static str {
        match self {
            FlavorArg::Storage => DEV_ACCOUNT,
            FlavorArg::Cosmos => crate::auth::accounts::COSMOS_EMULATOR_ACCOUNT_NAME,
        }
    }

    /// The accounts served when none are configured, with their published keys.
    fn default_accounts(self) -> crate::auth::Accounts {
        match self {
            FlavorArg::Storage => crate::auth::Accounts::dev(),
            FlavorArg::Cosmos => crate::auth::Accounts::cosmos_emulator(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DurabilityArg {
    /// Every acknowledged write is flushed to disk first (concurrent writes share a flush).
    Durable,
    /// Writes are flushed in the background every 500 ms.
    Relaxed,
}

/// Whether the RAM tier keeps the whole process near its budget (`--tier-process-limit`,
/// tests only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TierProcessLimitArg {
    On,
    Off,
}

/// How a new data folder is compressed (`--compression`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompressionArg {
    /// Each entity compressed on its own with LZ4: nearly the write speed of no compression,
    /// a folder 1.2–2.3× the data.
    Lz4,
    /// sled's zstd compression of its whole log: a folder 0.7–1.3× the data, about half the
    /// write throughput.
    Zstd,
    /// Uncompressed: the fastest writes, a folder about twice the size of the data.
    Off,
}

impl From<CompressionArg> for Compression {
    fn from(arg: CompressionArg) -> Compression {
        match arg {
            CompressionArg::Lz4 => Compression::Lz4,
            CompressionArg::Zstd => Compression::Zstd,
            CompressionArg::Off => Compression::Off,
        }
    }
}

/// The store `--store` names.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum StoreArg {
    /// sled in `<location>/__tablestore__` (or memory with `--inMemoryPersistence`).
    Sled,
    Memory,
    /// A PostgreSQL database; `schema` (tests only) puts the store's tables in a schema of
    /// their own, created if missing.
    Postgres {
        url: String,
        schema: Option<String>,
    },
}

impl std::fmt::Debug for StoreArg {
    /// Never shows the database password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreArg::Sled => f.write_str("Sled"),
            StoreArg::Memory => f.write_str("Memory"),
            StoreArg::Postgres { .. } => f.write_str("Postgres(<url>)"),
        }
    }
}

fn parse_store(text: &str) -> Result<StoreArg, String> {
    match text.trim() {
        t if t.eq_ignore_ascii_case("sled") => Ok(StoreArg::Sled),
        t if t.eq_ignore_ascii_case("memory") => Ok(StoreArg::Memory),
        t if crate::store::open::is_postgres_url(t) => Ok(StoreArg::Postgres {
            url: t.to_string(),
            schema: None,
        }),
        _ => Err(
            "expected sled, memory or a PostgreSQL URL (postgres://user[:password]@host[:port]/database)"
                .into(),
        ),
    }
}

/// Set to a PostgreSQL URL, `Config::for_tests` servers use that database, each in a fresh
/// schema of its own (scripts/ci/postgres.sh runs integration tests so).
pub(crate) const TEST_STORE_ENV: &str = "TABLESTORE_TEST_STORE";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OAuthLevel {
    /// Accept bearer tokens over HTTPS: their form, audience and lifetime are checked, not
    /// their signature (docs/tls.md says exactly what is checked).
    Basic,
}

const AFTER_HELP: &str = "\
Azurite compatibility: a leading `azurite` or `azurite-table` word is skipped, so a Docker or
Compose command written for mcr.microsoft.com/azure-storage/azurite works unchanged, e.g.
`tablestore azurite-table --tableHost 0.0.0.0 --tablePort 10002 -l /data`.
Readiness: GET /_health answers 200 once the server serves requests; the last start-up line is
the readiness line of the Azurite command it was started as (docs/configuration.md).
Other commands: `tablestore export --help`, `tablestore import --help` (moving data) and
`tablestore admin --help` (insight, metrics and fault rules of a running server).
Documentation: docs/configuration.md";

#[derive(Debug, Clone, Parser)]
#[command(
    name = "tablestore",
    version,
    disable_version_flag = true,
    about = "An Azure Table storage-compatible server for local development and CI \
             (a drop-in replacement for Azurite's table endpoint)",
    after_help = AFTER_HELP
)]
pub struct Config {
    /// Address to listen on (0.0.0.0 accepts connections from other machines and containers).
    #[arg(
        long,
        visible_alias = "tableHost",
        env = "TABLESTORE_HOST",
        default_value = "127.0.0.1",
        value_name = "HOST"
    )]
    pub host: String,

    /// Port to listen on (10002 is the Table port the SDKs and tools expect, 8902 with
    /// `--flavor cosmos`; 0 picks a free one).
    #[arg(
        long,
        visible_alias = "tablePort",
        env = "TABLESTORE_PORT",
        default_value_t = TABLE_PORT,
        value_name = "PORT"
    )]
    pub port: u16,

    /// Which service to answer as: `storage` (Azure Table storage) or `cosmos` (Azure Cosmos DB
    /// for Table, as its emulator: port 8902, account `localhost` with the emulator's key,
    /// the Table endpoint at the root; docs/cosmos.md).
    #[arg(long, env = "TABLESTORE_FLAVOR", value_enum, default_value_t = FlavorArg::Storage)]
    pub flavor: FlavorArg,

    /// With `--flavor cosmos`: answer queries in a fixed shuffle of the keys, seeded with N,
    /// in place of creation order. Cosmos does not sort results by PartitionKey/RowKey and
    /// promises no order; a shuffle (another seed, another one) shakes out code that assumes
    /// any (docs/cosmos.md).
    #[arg(long, env = "TABLESTORE_COSMOS_SHUFFLE_SEED", value_name = "N")]
    pub cosmos_shuffle_seed: Option<u64>,

    /// Workspace folder: the on-disk store lives in its `__tablestore__` subfolder
    /// (default: the current directory, as Azurite).
    #[arg(
        short = 'l',
        long,
        env = "TABLESTORE_LOCATION",
        default_value = ".",
        value_name = "DIR"
    )]
    pub location: PathBuf,

    /// Keep everything in memory (nothing is written to disk; data is lost at exit).
    #[arg(
        long,
        visible_alias = "inMemoryPersistence",
        env = "TABLESTORE_IN_MEMORY",
        value_parser = BoolishValueParser::new()
    )]
    pub in_memory: bool,

    /// Where the data lives: `sled` (the default: a folder under --location), `memory` (as
    /// --inMemoryPersistence) or a PostgreSQL database,
    /// `postgres://user[:password]@host[:port]/database`, which any number of tablestore
    /// nodes may share (docs/scale-out.md).
    #[arg(
        long,
        env = "TABLESTORE_STORE",
        value_name = "STORE",
        default_value = "sled",
        value_parser = parse_store,
        hide_default_value = false
    )]
    pub(crate) store: StoreArg,

    /// When acknowledged writes reach the disk.
    #[arg(long, env = "TABLESTORE_DURABILITY", value_enum, default_value_t = DurabilityArg::Durable)]
    pub(crate) durability: DurabilityArg,

    /// Log filter (error, warn, info, debug, trace, or a tracing directive).
    #[arg(
        long,
        env = "TABLESTORE_LOG",
        default_value = "info",
        value_name = "FILTER"
    )]
    pub log_level: String,

    /// Page cache of the on-disk store, in MiB.
    #[arg(
        long,
        env = "TABLESTORE_CACHE_MB",
        default_value_t = 32,
        value_name = "MIB"
    )]
    pub(crate) cache_mb: u64,

    /// RAM tier of the on-disk store, in MiB: tables that fit are read from an in-memory
    /// copy kept in step with the disk (the least recently read ones leave it first); 0 reads
    /// everything from disk. Ignored by the in-memory and PostgreSQL stores.
    #[arg(
        long,
        env = "TABLESTORE_MEMORY_BUDGET",
        default_value_t = 256,
        value_name = "MIB"
    )]
    pub memory_budget: u64,

    /// Tests only: `off` stops the RAM tier from also keeping the whole process near
    /// `--memory-budget` + 64 MiB, so that a tiny budget still loads and evicts tables (no real
    /// server is that small). A field that tests set, read here with every other option
    /// rather than by the store.
    #[arg(
        long,
        env = "TABLESTORE_TIER_PROCESS_LIMIT",
        hide = true,
        value_enum,
        default_value_t = TierProcessLimitArg::On
    )]
    pub(crate) tier_process_limit: TierProcessLimitArg,

    /// Removed (the write-ahead log it sized): kept only to answer its use with a sentence.
    #[arg(
        long = "write-buffer",
        env = "TABLESTORE_WRITE_BUFFER",
        hide = true,
        value_name = "MIB"
    )]
    pub(crate) removed_write_buffer: Option<String>,

    /// Compression of a new data folder: lz4 (default) compresses each entity on its own (a
    /// folder 1.2–2.3× the data); zstd compresses sled's whole log (0.7–1.3×, writes about
    /// half as fast); off writes fastest with a folder 1.8–3.6× the data. A folder keeps what
    /// it was created with. Ignored by the in-memory and PostgreSQL stores.
    #[arg(long, env = "TABLESTORE_COMPRESSION", value_enum, default_value_t = CompressionArg::Lz4)]
    pub(crate) compression: CompressionArg,

    /// No access log: one line per request is not printed.
    #[arg(short = 's', long, env = "TABLESTORE_SILENT",
        value_parser = BoolishValueParser::new())]
    pub(crate) silent: bool,

    /// Append a debug log (every request and response with headers and bodies, and debug
    /// events) to FILE.
    #[arg(short = 'd', long, env = "TABLESTORE_DEBUG", value_name = "FILE")]
    pub debug: Option<PathBuf>,

    /// Loose mode: ignore unsupported headers and query parameters. tablestore always does,
    /// so this is accepted for Azurite compatibility.
    #[arg(short = 'L', long, env = "TABLESTORE_LOOSE",
        value_parser = BoolishValueParser::new())]
    pub(crate) loose: bool,

    /// Accept any x-ms-version value instead of answering 400 InvalidHeaderValue
    /// (also enabled by AZURITE_SKIP_API_VERSION_CHECK=true).
    #[arg(
        long,
        visible_alias = "skipApiVersionCheck",
        env = "TABLESTORE_SKIP_API_VERSION_CHECK",
        value_parser = BoolishValueParser::new()
    )]
    pub skip_api_version_check: bool,

    /// Always take the account from the first path segment, never from the Host name
    /// (`devstoreaccount1.table.localhost`).
    #[arg(
        long,
        visible_alias = "disableProductStyleUrl",
        env = "TABLESTORE_DISABLE_PRODUCT_STYLE_URL",
        value_parser = BoolishValueParser::new()
    )]
    pub disable_product_style_url: bool,

    /// Accept every request without checking its signature or SAS.
    #[arg(long, env = "TABLESTORE_DISABLE_AUTH",
        value_parser = BoolishValueParser::new())]
    pub disable_auth: bool,

    /// Do not serve the web console at /_tablestore/console/.
    #[arg(long, env = "TABLESTORE_NO_CONSOLE",
        value_parser = BoolishValueParser::new())]
    pub no_console: bool,

    /// Let GET /metrics through with `Authorization: Bearer TOKEN` (as Prometheus sends with
    /// its `authorization` setting), besides an account-key signature; the tables stay closed
    /// to the token (docs/insight.md).
    #[arg(
        long,
        env = "TABLESTORE_METRICS_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub metrics_token: Option<String>,

    /// Let the state calls (reset, snapshots, accounts on demand: docs/test-isolation.md)
    /// through with `Authorization: Bearer TOKEN`, besides the key of an account the server
    /// started with.
    #[arg(
        long,
        env = "TABLESTORE_ADMIN_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub(crate) admin_token: Option<String>,

    /// Accounts and keys, Azurite's format `name:key1[:key2];name2:key1[:key2]` (base64 keys).
    /// When set, these replace devstoreaccount1.
    #[arg(
        long = "accounts",
        env = "AZURITE_ACCOUNTS",
        hide_env_values = true,
        value_name = "LIST"
    )]
    pub accounts_env: Option<String>,

    /// HTTPS: certificate file, PEM (with --key) or PFX (with --pwd).
    #[arg(long, env = "TABLESTORE_CERT", value_name = "FILE")]
    pub cert: Option<PathBuf>,

    /// HTTPS: private key of a PEM certificate.
    #[arg(long, env = "TABLESTORE_KEY", value_name = "FILE")]
    pub key: Option<PathBuf>,

    /// HTTPS: password of a PFX certificate.
    #[arg(
        long,
        env = "TABLESTORE_PWD",
        hide_env_values = true,
        value_name = "PASSWORD"
    )]
    pub pwd: Option<String>,

    /// OAuth (bearer token) authentication level; requires HTTPS. Without it bearer tokens
    /// are refused, as in Azurite.
    #[arg(long, env = "TABLESTORE_OAUTH", value_enum, value_name = "LEVEL")]
    pub oauth: Option<OAuthLevel>,

    /// Probe GET /_health on the configured host and port, then exit 0 (ready) or 1.
    /// For container health checks.
    #[arg(long)]
    pub healthcheck: bool,

    /// Import an export (a .jsonl/.csv file or an export folder) before listening. Entities
    /// that exist are left as they are; an on-disk store records what it seeded, so restarting
    /// with the same seed does nothing (docs/data.md).
    #[arg(long, env = "TABLESTORE_SEED", value_name = "PATH")]
    pub seed: Option<PathBuf>,

    /// Like --seed, but a missing PATH is no error (the Docker image seeds from /seed this way).
    #[arg(long, env = "TABLESTORE_SEED_IF_PRESENT", value_name = "PATH")]
    pub seed_if_present: Option<PathBuf>,

    /// When the --location folder holds Azurite's table database (__azurite_db_table__.json),
    /// import it before listening, once (entities that exist are left as they are).
    #[arg(long, env = "TABLESTORE_IMPORT_AZURITE_IF_PRESENT",
        value_parser = BoolishValueParser::new())]
    pub import_azurite_if_present: bool,

    /// Print version.
    #[arg(short = 'v', visible_short_alias = 'V', long, action = ArgAction::Version)]
    version: Option<bool>,

    #[command(flatten)]
    pub realism: RealismArgs,

    #[command(flatten)]
    pub(crate) azurite: AzuriteOptions,

    /// Whether `--location` was given on the command line (not by default or environment).
    #[arg(skip)]
    location_on_command_line: bool,

    /// Whether `--host` or `--port` was given on the command line.
    #[arg(skip)]
    endpoint_on_command_line: bool,

    /// The Azurite command this process was started as, if any (its readiness line is printed).
    #[arg(skip)]
    pub started_as: StartedAs,

    /// How the user named the port and the host (`--port` or `--tablePort`, `--host` or
    /// `--tableHost`, or the environment variable), so advice names the option they used.
    #[arg(skip)]
    pub port_named_as: String,
    #[arg(skip)]
    pub host_named_as: String,
}

/// The command a server was started as: `tablestore`, or one of Azurite's, named by the
/// program's own name (a link called `azurite-table`) or by a leading word
/// (`tablestore azurite-table …`, as in a command written for Azurite's image).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StartedAs {
    #[default]
    Tablestore,
    /// `azurite`, the all-in-one command.
    Azurite,
    /// `azurite-table`, the Table service alone.
    AzuriteTable,
}

/// `--page-breaks`: where query pages end early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PageBreaksArg {
    /// At each change of PartitionKey, as Azure ends pages of cross-partition queries.
    Partition,
    /// At seeded random points, including empty pages that still carry a token.
    Random,
}

/// `--target-error`: the answer to a request over a scalability target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TargetErrorArg {
    /// 503 ServerBusy.
    ServerBusy,
    /// 500 OperationTimedOut.
    OperationTimedOut,
}

/// Production realism (docs/realism.md): Azure's less polite behaviours, each off unless
/// switched on.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Production realism (all off by default; docs/realism.md)")]
pub struct RealismArgs {
    /// Throttle as Azure does over its scalability targets: 503 ServerBusy past the
    /// per-partition, per-table and per-account budgets below.
    #[arg(long, env = "TABLESTORE_SIMULATE_TARGETS", value_parser = BoolishValueParser::new())]
    pub simulate_targets: bool,

    /// Per-partition target, entities per second (a change set counts each entity).
    #[arg(
        long,
        env = "TABLESTORE_TARGET_PARTITION_RATE",
        default_value_t = 2000,
        value_name = "N"
    )]
    pub target_partition_rate: u32,

    /// Per-table target, transactions per second.
    #[arg(
        long,
        env = "TABLESTORE_TARGET_TABLE_RATE",
        default_value_t = 20000,
        value_name = "N"
    )]
    pub(crate) target_table_rate: u32,

    /// Per-account target, transactions per second.
    #[arg(
        long,
        env = "TABLESTORE_TARGET_ACCOUNT_RATE",
        default_value_t = 20000,
        value_name = "N"
    )]
    pub(crate) target_account_rate: u32,

    /// The answer over a target.
    #[arg(long, env = "TABLESTORE_TARGET_ERROR", value_enum, default_value_t = TargetErrorArg::ServerBusy)]
    pub(crate) target_error: TargetErrorArg,

    /// With --flavor cosmos, --simulate-targets throttles by request units instead of the
    /// targets above: each table's budget, RU per second [default: 400, Cosmos's default
    /// for a new table]. Over it, 429 TooManyRequests (docs/cosmos.md prices each
    /// operation).
    #[arg(long, env = "TABLESTORE_COSMOS_TABLE_RUS", value_name = "N")]
    pub cosmos_table_rus: Option<u32>,

    /// End query pages early with a continuation token: at partition boundaries or at
    /// seeded random points (never losing or repeating an entity).
    #[arg(long, env = "TABLESTORE_PAGE_BREAKS", value_enum, value_name = "MODE")]
    pub page_breaks: Option<PageBreaksArg>,

    /// Seed of the random page breaks.
    #[arg(
        long,
        env = "TABLESTORE_REALISM_SEED",
        default_value_t = 0,
        value_name = "N"
    )]
    pub realism_seed: u64,

    /// Answer 409 TableBeingDeleted for a table name deleted less than
    /// --table-purge-seconds ago.
    #[arg(long, env = "TABLESTORE_SIMULATE_LIFECYCLE", value_parser = BoolishValueParser::new())]
    pub simulate_lifecycle: bool,

    /// How long a deleted table's name stays unusable with --simulate-lifecycle (Azure: at
    /// least 40 s).
    #[arg(
        long,
        env = "TABLESTORE_TABLE_PURGE_SECONDS",
        default_value_t = 40,
        value_name = "SECONDS"
    )]
    pub table_purge_seconds: u64,

    /// Fault-injection rules (TOML or JSON) to load at start; PUT /_tablestore/faults
    /// replaces them at run time.
    #[arg(long, env = "TABLESTORE_FAULTS", value_name = "FILE")]
    pub faults: Option<PathBuf>,
}

impl Default for RealismArgs {
    fn default() -> Self {
        RealismArgs {
            simulate_targets: false,
            target_partition_rate: 2000,
            target_table_rate: 20000,
            target_account_rate: 20000,
            target_error: TargetErrorArg::ServerBusy,
            cosmos_table_rus: None,
            page_breaks: None,
            realism_seed: 0,
            simulate_lifecycle: false,
            table_purge_seconds: 40,
            faults: None,
        }
    }
}

/// Azurite options that have no effect here: the table keep-alive timeout, telemetry (there
/// is none), and the blob and queue services (not served). They are accepted so that command
/// lines written for the all-in-one Azurite image keep working.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Azurite options accepted and ignored")]
pub(crate) struct AzuriteOptions {
    /// Azurite table keep-alive timeout in seconds (not applied: an idle connection is closed
    /// after 30 s without a request).
    #[arg(long = "tableKeepAliveTimeout", value_name = "SECONDS")]
    pub(crate) table_keep_alive_timeout: Option<u64>,

    /// Azurite telemetry switch (tablestore collects no telemetry).
    #[arg(long = "disableTelemetry")]
    pub(crate) disable_telemetry: bool,

    /// Blob service address (blob is not served).
    #[arg(long = "blobHost", value_name = "HOST")]
    pub(crate) blob_host: Option<String>,

    /// Blob service port (blob is not served).
    #[arg(long = "blobPort", value_name = "PORT")]
    pub(crate) blob_port: Option<u16>,

    /// Blob keep-alive timeout (blob is not served).
    #[arg(long = "blobKeepAliveTimeout", value_name = "SECONDS")]
    pub(crate) blob_keep_alive_timeout: Option<u64>,

    /// Queue service address (queue is not served).
    #[arg(long = "queueHost", value_name = "HOST")]
    pub(crate) queue_host: Option<String>,

    /// Queue service port (queue is not served).
    #[arg(long = "queuePort", value_name = "PORT")]
    pub(crate) queue_port: Option<u16>,

    /// Queue keep-alive timeout (queue is not served).
    #[arg(long = "queueKeepAliveTimeout", value_name = "SECONDS")]
    pub(crate) queue_keep_alive_timeout: Option<u64>,

    /// In-memory blob/queue content limit (blob and queue are not served).
    #[arg(long = "extentMemoryLimit", value_name = "MEGABYTES")]
    pub(crate) extent_memory_limit: Option<u64>,
}

impl Config {
    /// A configuration for tests: in memory, loopback, ephemeral port.
    pub fn for_tests() -> Config {
        Config {
            host: "127.0.0.1".into(),
            port: 0,
            flavor: FlavorArg::Storage,
            cosmos_shuffle_seed: None,
            location: PathBuf::from("unused"),
            in_memory: true,
            store: StoreArg::Sled,
            durability: DurabilityArg::Durable,
            log_level: "warn".into(),
            cache_mb: 16,
            memory_budget: 256,
            tier_process_limit: TierProcessLimitArg::On,
            removed_write_buffer: None,
            compression: CompressionArg::Lz4,
            silent: false,
            debug: None,
            loose: false,
            skip_api_version_check: false,
            disable_product_style_url: false,
            disable_auth: false,
            no_console: false,
            metrics_token: None,
            admin_token: None,
            accounts_env: None,
            cert: None,
            key: None,
            pwd: None,
            oauth: None,
            healthcheck: false,
            seed: None,
            seed_if_present: None,
            import_azurite_if_present: false,
            version: None,
            realism: RealismArgs::default(),
            azurite: AzuriteOptions::default(),
            location_on_command_line: false,
            endpoint_on_command_line: false,
            started_as: StartedAs::Tablestore,
            port_named_as: String::new(),
            host_named_as: String::new(),
        }
        .with_test_store(std::env::var(TEST_STORE_ENV).ok())
    }

    /// With `url` (the value of [`TEST_STORE_ENV`]) a PostgreSQL URL: the store is that
    /// database, in a new schema named after a random UUID, so test servers never share data.
    fn with_test_store(mut self, url: Option<String>) -> Config {
        if let Some(url) = url.filter(|u| crate::store::open::is_postgres_url(u)) {
            self.in_memory = false;
            self.store = StoreArg::Postgres {
                url,
                schema: Some(format!("test_{}", uuid::Uuid::new_v4().simple())),
            };
        }
        self
    }

    /// The PostgreSQL store's URL and schema, when `--store` names one.
    pub fn postgres(&self) -> Option<(&str, Option<&str>)> {
        match &self.store {
            StoreArg::Postgres { url, schema } => Some((url, schema.as_deref())),
            _ => None,
        }
    }

    /// Whether the store keeps nothing after exit (`--inMemoryPersistence`, `--store memory`).
    pub fn is_in_memory(&self) -> bool {
        self.in_memory || self.store == StoreArg::Memory
    }

    /// Whether data lives in a folder under `--location` (sled).
    pub fn is_on_disk(&self) -> bool {
        !self.is_in_memory() && self.postgres().is_none()
    }

    /// Parses `args` (program name first). Environment variables named in the options are read
    /// by clap; `env` answers the Azurite-only fallbacks (`AZURITE_SKIP_API_VERSION_CHECK`).
    pub fn try_parse_args<I, T>(
        args: I,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let (args, started_as) =
            skip_azurite_program_word(args.into_iter().map(Into::into).collect())?;
        let matches = Config::command().try_get_matches_from(&args)?;
        let mut config = Config::from_arg_matches(&matches)?;
        config.started_as = started_as;
        let azurite = started_as != StartedAs::Tablestore;
        config.port_named_as = named_as(
            &args,
            matches.value_source("port"),
            ["--port", "--tablePort"],
            "TABLESTORE_PORT",
            azurite,
        );
        config.host_named_as = named_as(
            &args,
            matches.value_source("host"),
            ["--host", "--tableHost"],
            "TABLESTORE_HOST",
            azurite,
        );
        let on_command_line = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
        config.location_on_command_line = on_command_line("location");
        config.endpoint_on_command_line = on_command_line("host") || on_command_line("port");
        if matches.value_source("port") == Some(ValueSource::DefaultValue) {
            config.port = config.flavor.default_port();
        }
        if let Some(source) = matches.value_source("removed_write_buffer") {
            let given = match source {
                ValueSource::EnvVariable => "TABLESTORE_WRITE_BUFFER",
                _ => "--write-buffer",
            };
            return Err(Config::command().error(
                clap::error::ErrorKind::UnknownArgument,
                format!("{given} was removed: the write-ahead log it sized measured slower than the store's own log on every write workload (docs/performance.md); drop it"),
            ));
        }
        if config.in_memory && config.postgres().is_some() {
            return Err(Config::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                "--inMemoryPersistence and --store postgres://… name two different stores: pass only one of them",
            ));
        }
        if env(AZURITE_SKIP_API_VERSION_CHECK).as_deref() == Some("true") {
            config.skip_api_version_check = true;
        }
        Ok(config)
    }

    /// Whether `--host` or `--port` was given on the command line (not by default or
    /// environment).
    pub fn endpoint_on_command_line(&self) -> bool {
        self.endpoint_on_command_line
    }

    /// The configuration of a `tablestore` server from its NUL-separated command line (as in
    /// `/proc/<pid>/cmdline`), read with this process's environment; `None` when the command
    /// is not a `tablestore` server. `--healthcheck` uses it to find the port that the
    /// container's main process (PID 1) listens on.
    pub fn of_server_command_line(
        cmdline: &[u8],
        env: impl Fn(&str) -> Option<String>,
    ) -> Option<Config> {
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        // Our binary by its own name, or by the Azurite names the image links to it (Azurite's
        // own image runs `node …/azurite`, whose program is `node`).
        let program = Path::new(args.first()?).file_stem()?.to_str()?;
        if !matches!(program, "tablestore" | "azurite" | "azurite-table") {
            return None;
        }
        Config::try_parse_args(args, env)
            .ok()
            .filter(|c| !c.healthcheck)
    }

    /// How a data folder created now is compressed.
    pub fn new_folder_compression(&self) -> Compression {
        self.compression.into()
    }

    pub(crate) fn durability(&self) -> Durability {
        match self.durability {
            DurabilityArg::Durable => Durability::Durable,
            DurabilityArg::Relaxed => Durability::Relaxed,
        }
    }

    /// The service the server answers as.
    pub fn flavor(&self) -> Flavor {
        self.flavor.into()
    }

    /// How the server answers: the flavour's dialect, the one value requests consult for what
    /// differs (`protocol::dialect`).
    pub fn dialect(&self) -> &'static Dialect {
        self.flavor().dialect()
    }

    /// The accounts served (data of different accounts never mix): `--accounts` /
    /// `AZURITE_ACCOUNTS` if given, else the development account (`localhost`, the Cosmos DB
    /// emulator's, with `--flavor cosmos`).
    pub(crate) fn accounts(&self) -> Result<crate::auth::Accounts, String> {
        match self
            .accounts_env
            .as_deref()
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            Some(text) => crate::auth::Accounts::parse_azurite(text).map_err(|e| e.to_string()),
            None => Ok(self.flavor.default_accounts()),
        }
    }

    /// The account that start-up output and test fixtures show, with its base64 key1:
    /// `devstoreaccount1` (`localhost` with `--flavor cosmos`) when it is served, otherwise
    /// the first configured account (in name order).
    pub fn default_account(&self) -> Result<(String, String), String> {
        use base64::Engine as _;
        let accounts = self.accounts()?;
        let preferred = self.flavor.default_account();
        let name = if accounts.contains(preferred) {
            preferred
        } else {
            accounts
                .names()
                .next()
                .ok_or_else(|| "no accounts configured".to_string())?
        };
        let key = accounts
            .get(name)
            .map(|k| base64::engine::general_purpose::STANDARD.encode(k.primary()))
            .ok_or_else(|| format!("account {name} has no key"))?;
        Ok((name.to_string(), key))
    }

    /// `true` when a certificate is configured (the server then speaks HTTPS only).
    pub fn https(&self) -> bool {
        self.cert.is_some()
    }

    /// The folder of the on-disk store: `<location>/__tablestore__`.
    pub fn store_dir(&self) -> PathBuf {
        self.location.join(STORE_DIR_NAME)
    }

    /// Options that belong to one flavour, checked against the flavour asked for.
    pub fn check_flavor_options(&self) -> Result<(), String> {
        if self.cosmos_shuffle_seed.is_some() && self.dialect().key_order {
            return Err(
                "--cosmos-shuffle-seed (TABLESTORE_COSMOS_SHUFFLE_SEED) applies to \
                        --flavor cosmos only: Table storage answers queries in \
                        PartitionKey/RowKey order"
                    .to_string(),
            );
        }
        Ok(())
    }

    /// `--metrics-token`, checked: a token Prometheus can send in one header.
    pub fn checked_metrics_token(&self) -> Result<Option<&str>, String> {
        checked_token(
            self.metrics_token.as_deref(),
            "--metrics-token (TABLESTORE_METRICS_TOKEN)",
        )
    }

    /// `--admin-token`, checked as `--metrics-token` is.
    pub fn checked_admin_token(&self) -> Result<Option<&str>, String> {
        checked_token(
            self.admin_token.as_deref(),
            "--admin-token (TABLESTORE_ADMIN_TOKEN)",
        )
    }

    /// The store to open (`crate::store::open`).
    pub(crate) fn store_options(&self) -> StoreOptions {
        if let Some((url, schema)) = self.postgres() {
            return StoreOptions::Postgres {
                url: url.to_string(),
                schema: schema.map(str::to_string),
            };
        }
        if self.is_in_memory() {
            return StoreOptions::Memory {
                durability: self.durability(),
            };
        }
        StoreOptions::Disk(DiskOptions {
            dir: self.store_dir(),
            durability: self.durability(),
            cache_bytes: self.cache_mb * 1024 * 1024,
            compression: self.new_folder_compression(),
            memory_budget_mib: self.memory_budget,
            process_limit: self.tier_process_limit == TierProcessLimitArg::On,
        })
    }

    /// Options that were accepted but have no effect, one sentence each, for the start-up log.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let a = &self.azurite;
        let ignored_services: [(&str, bool); 7] = [
            ("--blobHost", a.blob_host.is_some()),
            ("--blobPort", a.blob_port.is_some()),
            (
                "--blobKeepAliveTimeout",
                a.blob_keep_alive_timeout.is_some(),
            ),
            ("--queueHost", a.queue_host.is_some()),
            ("--queuePort", a.queue_port.is_some()),
            (
                "--queueKeepAliveTimeout",
                a.queue_keep_alive_timeout.is_some(),
            ),
            ("--extentMemoryLimit", a.extent_memory_limit.is_some()),
        ];
        let named: Vec<&str> = ignored_services
            .iter()
            .filter(|(_, set)| *set)
            .map(|(name, _)| *name)
            .collect();
        if !named.is_empty() {
            out.push(format!(
                "ignoring {}: tablestore serves only the Table service (port {})",
                named.join(", "),
                self.port
            ));
        }
        if a.table_keep_alive_timeout.is_some() {
            // The server's request-head timeout (`ServeLimits::header_read_timeout`); a test in
            // tests/it/cli.rs keeps the two equal without config depending on server.
            out.push(
                "ignoring --tableKeepAliveTimeout: an idle connection is closed after 30 s without a request"
                    .to_string(),
            );
        }
        if self.oauth.is_some() && self.cert.is_none() {
            out.push(
                "--oauth basic without --cert: the server speaks plain HTTP, where bearer tokens \
                 are always refused (\"Authentication scheme Bearer is not allowed with HTTP.\"); \
                 add --cert and --key to accept them"
                    .to_string(),
            );
        }
        if self.cert.is_some() && self.key.is_some() && self.pwd.is_some() {
            out.push(
                "ignoring --pwd: with --key the certificate is read as PEM (--pwd is for PFX files)"
                    .to_string(),
            );
        }
        if !self.is_on_disk() && self.location_on_command_line {
            let why = if self.postgres().is_some() {
                "the data lives in the PostgreSQL database --store names"
            } else {
                "--inMemoryPersistence keeps nothing on disk"
            };
            out.push(format!(
                "ignoring --location {}: {why}",
                self.location.display()
            ));
        }
        out
    }
}

/// A bearer token option's value, checked: what one `Authorization` header can carry.
fn checked_token<'a>(value: Option<&'a str>, option: &str) -> Result<Option<&'a str>, String> {
    match value {
        None => Ok(None),
        Some(t) if t.is_empty() || t.len() > 1024 || !t.bytes().all(|b| b.is_ascii_graphic()) => Err(format!(
            "{option} must be 1 to 1024 visible ASCII characters without spaces, e.g. the output of `openssl rand -hex 32`"
        )),
        Some(t) => Ok(Some(t)),
    }
}

/// How the user named an option with an Azurite alias (`names`: ours, then Azurite's): the
/// spelling last given on the command line, else the environment variable that set it, else
/// the spelling of the command started as (Azurite's for `azurite`/`azurite-table`).
fn named_as(
    args: &[OsString],
    source: Option<ValueSource>,
    names: [&str; 2],
    variable: &str,
    azurite: bool,
) -> String {
    let given = args.iter().rev().find_map(|arg| {
        let arg = arg.to_str()?;
        names
            .into_iter()
            .find(|name| arg == *name || arg.strip_prefix(name).is_some_and(|r| r.starts_with('=')))
    });
    match (source, given) {
        (Some(ValueSource::CommandLine), Some(name)) => name.to_string(),
        (Some(ValueSource::EnvVariable), _) => variable.to_string(),
        _ if azurite => names[1].to_string(),
        _ => names[0].to_string(),
    }
}

/// Drops a leading `azurite` or `azurite-table` argument: the Azurite image runs its command
/// line as given (`azurite-table --tableHost 0.0.0.0`), ours runs `tablestore` with it as
/// arguments. The program's own name counts too (the image links `azurite` and
/// `azurite-table` to `tablestore`, for Testcontainers modules that set the entrypoint).
/// `azurite-blob` and `azurite-queue` are refused: those services are not served.
fn skip_azurite_program_word(
    mut args: Vec<OsString>,
) -> Result<(Vec<OsString>, StartedAs), clap::Error> {
    let name_of = |arg: Option<&OsString>| {
        let text = arg?.to_str()?;
        let stem = Path::new(text).file_stem().and_then(|n| n.to_str())?;
        Some(stem.to_string())
    };
    let as_command = |name: &str| {
        match name {
        "azurite" => Ok(Some(StartedAs::Azurite)),
        "azurite-table" => Ok(Some(StartedAs::AzuriteTable)),
        service @ ("azurite-blob" | "azurite-queue") => Err(Config::command().error(
            clap::error::ErrorKind::InvalidValue,
            format!("`{service}` is not served: tablestore implements only the Table service (use `azurite-table` or no command)"),
        )),
        _ => Ok(None),
    }
    };
    let program = match name_of(args.first()) {
        Some(name) => as_command(&name)?,
        None => None,
    };
    let word = match name_of(args.get(1)) {
        Some(name) => as_command(&name)?,
        None => None,
    };
    if word.is_some() {
        args.remove(1);
    }
    Ok((args, word.or(program).unwrap_or_default()))
}

/// The connection string a client pastes to reach `endpoint` (e.g. `http://127.0.0.1:10002`
/// or `https://…`; `DefaultEndpointsProtocol` follows the endpoint's scheme).
#[cfg(test)]
pub(crate) fn connection_string(endpoint: &str, account: &str, key: &str) -> String {
    connection_string_for(Flavor::Storage, endpoint, account, key)
}

/// [`connection_string`] for a flavour. Cosmos's Table endpoint is the root, with no account
/// segment, as in the emulator's own connection string
/// (`…;TableEndpoint=http://localhost:8902/;`); `endpoint` should then name `localhost`, the
/// host the SDKs take for a Cosmos endpoint.
pub fn connection_string_for(flavor: Flavor, endpoint: &str, account: &str, key: &str) -> String {
    let protocol = if endpoint.starts_with("https://") {
        "https"
    } else {
        "http"
    };
    let table_endpoint = flavor.dialect().table_endpoint(endpoint, account);
    format!(
        "DefaultEndpointsProtocol={protocol};AccountName={account};AccountKey={key};TableEndpoint={table_endpoint};"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, clap::Error> {
        let mut all = vec!["tablestore"];
        all.extend_from_slice(args);
        Config::try_parse_args(all, |_| None)
    }

    #[test]
    fn store_choice() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.store, StoreArg::Sled);
        assert!(c.is_on_disk() && c.postgres().is_none());
        let c = parse(&["--store", "memory"]).unwrap();
        assert!(c.is_in_memory() && !c.is_on_disk());
        let c = parse(&["--store", "postgres://u:secret@db:5433/t"]).unwrap();
        assert_eq!(c.postgres(), Some(("postgres://u:secret@db:5433/t", None)));
        assert!(!c.is_on_disk() && !c.is_in_memory());
        assert!(
            !format!("{c:?}").contains("secret"),
            "the password must not be logged"
        );
        let e = parse(&["--store", "mysql://x"]).unwrap_err().to_string();
        assert!(
            e.contains("expected sled, memory or a PostgreSQL URL"),
            "{e}"
        );
        let e = parse(&["--inMemoryPersistence", "--store", "postgres://u@h/d"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("name two different stores"), "{e}");
        // Test servers: each in a fresh schema of the database TABLESTORE_TEST_STORE names.
        let a = Config::for_tests().with_test_store(Some("postgres://u@h/d".into()));
        let b = Config::for_tests().with_test_store(Some("postgres://u@h/d".into()));
        let (url, schema_a) = a.postgres().unwrap();
        assert_eq!(url, "postgres://u@h/d");
        assert_ne!(schema_a, b.postgres().unwrap().1);
        assert!(Config::for_tests().with_test_store(None).is_in_memory());
    }

    #[test]
    fn realism_is_off_by_default_and_its_defaults_match_the_command_line() {
        let c = parse(&[]).unwrap();
        let d = RealismArgs::default();
        assert!(!c.realism.simulate_targets && !c.realism.simulate_lifecycle);
        assert!(c.realism.page_breaks.is_none() && c.realism.faults.is_none());
        assert_eq!(
            (
                c.realism.target_partition_rate,
                c.realism.target_table_rate,
                c.realism.target_account_rate,
                c.realism.target_error,
                c.realism.realism_seed,
                c.realism.table_purge_seconds,
            ),
            (
                d.target_partition_rate,
                d.target_table_rate,
                d.target_account_rate,
                d.target_error,
                d.realism_seed,
                d.table_purge_seconds,
            )
        );
        let on = parse(&[
            "--simulate-targets",
            "--target-partition-rate",
            "7",
            "--page-breaks",
            "random",
            "--simulate-lifecycle",
            "--table-purge-seconds",
            "3",
        ])
        .unwrap();
        assert!(on.realism.simulate_targets && on.realism.simulate_lifecycle);
        assert_eq!(on.realism.target_partition_rate, 7);
        assert_eq!(on.realism.page_breaks, Some(PageBreaksArg::Random));
        assert_eq!(on.realism.table_purge_seconds, 3);
        assert!(parse(&["--page-breaks", "sometimes"]).is_err());
    }

    #[test]
    fn azurite_table_flags_are_aliases() {
        let c = parse(&[
            "--tableHost",
            "0.0.0.0",
            "--tablePort",
            "0",
            "--inMemoryPersistence",
            "--loose",
            "--skipApiVersionCheck",
            "--disableProductStyleUrl",
            "-s",
            "-d",
            "/tmp/debug.log",
            "--oauth",
            "basic",
            "--cert",
            "c.pem",
            "--key",
            "k.pem",
            "--pwd",
            "secret",
        ])
        .unwrap();
        assert_eq!(c.host, "0.0.0.0");
        assert_eq!(c.port, 0);
        assert!(c.in_memory && c.loose && c.skip_api_version_check);
        assert!(c.disable_product_style_url && c.silent);
        assert_eq!(c.debug.as_deref(), Some(Path::new("/tmp/debug.log")));
        assert_eq!(c.oauth, Some(OAuthLevel::Basic));
        assert_eq!(c.cert.as_deref(), Some(Path::new("c.pem")));
        assert_eq!(c.key.as_deref(), Some(Path::new("k.pem")));
        assert_eq!(c.pwd.as_deref(), Some("secret"));
    }

    #[test]
    fn short_flags_and_location() {
        let c = parse(&["-l", "/data", "-L", "--silent"]).unwrap();
        assert_eq!(c.location, PathBuf::from("/data"));
        assert_eq!(c.store_dir(), PathBuf::from("/data").join(STORE_DIR_NAME));
        assert!(c.loose && c.silent);
        let d = parse(&[]).unwrap();
        assert_eq!(d.location, PathBuf::from("."));
        assert_eq!((d.host.as_str(), d.port), ("127.0.0.1", 10002));
        assert!(!d.in_memory && !d.silent && !d.skip_api_version_check && !d.disable_auth);
    }

    #[test]
    fn leading_azurite_word_is_skipped() {
        let c = parse(&["azurite-table", "--tableHost", "0.0.0.0"]).unwrap();
        assert_eq!(c.host, "0.0.0.0");
        let c = parse(&["azurite", "-l", "/data", "--blobHost", "0.0.0.0"]).unwrap();
        assert_eq!(c.location, PathBuf::from("/data"));
        assert!(c.warnings()[0].contains("--blobHost"));
        let c = parse(&["/usr/local/bin/azurite-table"]).unwrap();
        assert_eq!(c.port, 10002);
        let e = parse(&["azurite-blob", "--blobHost", "0.0.0.0"]).unwrap_err();
        assert!(e.to_string().contains("only the Table service"), "{e}");
    }

    /// The Azurite command a server was started as: by its leading word, or by the
    /// program's own name (a link); a plain `tablestore` is neither.
    #[test]
    fn the_azurite_command_started_as_is_known() {
        let started = |args: &[&str]| Config::try_parse_args(args.to_vec(), |_| None);
        let as_of = |args: &[&str]| started(args).unwrap().started_as;
        assert_eq!(as_of(&["tablestore"]), StartedAs::Tablestore);
        assert_eq!(as_of(&["tablestore", "azurite"]), StartedAs::Azurite);
        assert_eq!(
            as_of(&["tablestore", "azurite-table", "-s"]),
            StartedAs::AzuriteTable
        );
        assert_eq!(
            as_of(&["/usr/local/bin/azurite", "--blobHost", "0.0.0.0"]),
            StartedAs::Azurite
        );
        assert_eq!(as_of(&["azurite-table.exe"]), StartedAs::AzuriteTable);
        // A leading word names the command whatever the link is called.
        assert_eq!(
            as_of(&["azurite", "azurite-table", "-s"]),
            StartedAs::AzuriteTable
        );
        let e = started(&["/usr/local/bin/azurite-queue"]).unwrap_err();
        assert!(e.to_string().contains("only the Table service"), "{e}");
    }

    #[test]
    fn ignored_options_warn() {
        let c = parse(&[
            "--blobHost",
            "0.0.0.0",
            "--queueHost",
            "0.0.0.0",
            "--blobPort",
            "10000",
            "--queuePort",
            "10001",
            "--tableKeepAliveTimeout",
            "5",
            "--disableTelemetry",
        ])
        .unwrap();
        let w = c.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("--blobHost, --blobPort, --queueHost, --queuePort"));
        let c = parse(&["--inMemoryPersistence", "-l", "/data"]).unwrap();
        assert!(c.warnings()[0].contains("--location"));
        assert!(parse(&[]).unwrap().warnings().is_empty());
    }

    #[test]
    fn azurite_skip_version_env_needs_exact_true() {
        let on = Config::try_parse_args(["t"], |n| {
            (n == AZURITE_SKIP_API_VERSION_CHECK).then(|| "true".to_string())
        })
        .unwrap();
        assert!(on.skip_api_version_check);
        let off = Config::try_parse_args(["t"], |n| {
            (n == AZURITE_SKIP_API_VERSION_CHECK).then(|| "TRUE".to_string())
        })
        .unwrap();
        assert!(!off.skip_api_version_check);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(parse(&["--no-such-flag"]).is_err());
        assert!(parse(&["--debug"]).is_err());
        assert!(parse(&["--oauth", "fancy"]).is_err());
        assert!(parse(&["--tablePort", "70000"]).is_err());
        let v = parse(&["--version"]).unwrap_err();
        assert_eq!(v.kind(), clap::error::ErrorKind::DisplayVersion);
        let v = parse(&["-v"]).unwrap_err();
        assert_eq!(v.kind(), clap::error::ErrorKind::DisplayVersion);
    }

    #[test]
    fn server_command_line_is_read_back() {
        let c = Config::of_server_command_line(
            b"/usr/local/bin/tablestore\0azurite-table\0--tablePort\09999\0",
            |_| None,
        )
        .unwrap();
        assert_eq!(c.port, 9999);
        assert!(Config::of_server_command_line(b"node\0azurite\0", |_| None).is_none());
        // The image's `azurite` link to tablestore, as a Testcontainers entrypoint.
        let c = Config::of_server_command_line(
            b"azurite\0--tableHost\x000.0.0.0\0--tablePort\x009998\0",
            |_| None,
        )
        .unwrap();
        assert_eq!(c.port, 9998);
        assert!(Config::of_server_command_line(b"tablestore\0--healthcheck\0", |_| None).is_none());
        assert!(parse(&["--tablePort", "1"])
            .unwrap()
            .endpoint_on_command_line());
        assert!(!parse(&["-s"]).unwrap().endpoint_on_command_line());
    }

    /// `--flavor cosmos` listens on the emulator's Table port unless a port is given, and
    /// serves the emulator's account unless accounts are configured.
    #[test]
    fn the_cosmos_flavor_takes_the_emulators_port_and_account() {
        let c = parse(&["--flavor", "cosmos"]).unwrap();
        assert_eq!(c.flavor(), Flavor::Cosmos);
        assert_eq!(c.port, COSMOS_EMULATOR_PORT);
        let (account, key) = c.default_account().unwrap();
        assert_eq!(account, "localhost");
        assert_eq!(key, crate::auth::accounts::COSMOS_EMULATOR_ACCOUNT_KEY);
        assert_eq!(
            parse(&["--flavor", "cosmos", "--tablePort", "9000"])
                .unwrap()
                .port,
            9000
        );
        assert_eq!(
            parse(&["--flavor", "cosmos", "--port", "0"]).unwrap().port,
            0
        );
        let d = parse(&[]).unwrap();
        assert_eq!((d.flavor(), d.port), (Flavor::Storage, 10002));
        assert_eq!(d.default_account().unwrap().0, DEV_ACCOUNT);
        let mut with_accounts = parse(&["--flavor", "cosmos"]).unwrap();
        with_accounts.accounts_env = Some("acct2:a2V5".into());
        assert_eq!(with_accounts.default_account().unwrap().0, "acct2");
        // The image's health check finds PID 1's port the same way.
        let pid1 = Config::of_server_command_line(b"tablestore\0--flavor\0cosmos\0", |_| None);
        assert_eq!(pid1.map(|c| c.port), Some(COSMOS_EMULATOR_PORT));
        let e = parse(&["--flavor", "mongo"]).unwrap_err().to_string();
        assert!(e.contains("storage") && e.contains("cosmos"), "{e}");
        assert_eq!(
            connection_string_for(Flavor::Cosmos, "http://localhost:8902", "localhost", "k"),
            "DefaultEndpointsProtocol=http;AccountName=localhost;AccountKey=k;TableEndpoint=http://localhost:8902/;"
        );
        assert_eq!(
            connection_string("http://127.0.0.1:10002", DEV_ACCOUNT, "k"),
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=k;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;"
        );
    }

    #[test]
    fn clap_definition_is_consistent() {
        Config::command().debug_assert();
    }
}
