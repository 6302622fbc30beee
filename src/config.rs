//! Command line and environment. Every flag has an environment-variable equivalent.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use crate::store::Durability;

/// The well-known development account and its published key.
pub const DEV_ACCOUNT: &str = "devstoreaccount1";
pub const DEV_ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DurabilityArg {
    /// Every acknowledged write is flushed to disk first (concurrent writes share a flush).
    Durable,
    /// Writes are flushed in the background every 500 ms.
    Relaxed,
}

#[derive(Debug, Clone, Parser)]
#[command(
    name = "tablestore",
    version,
    about = "An Azure Table storage-compatible server for local development and CI"
)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "TABLESTORE_HOST", default_value = "127.0.0.1")]
    pub host: String,

    /// Port to listen on (10002 is the Table port the SDKs and tools expect).
    #[arg(long, env = "TABLESTORE_PORT", default_value_t = 10002)]
    pub port: u16,

    /// Data folder of the on-disk store.
    #[arg(long, env = "TABLESTORE_LOCATION", default_value = "tablestore-data")]
    pub location: PathBuf,

    /// Keep everything in memory (nothing is written to disk; data is lost at exit).
    #[arg(long, env = "TABLESTORE_IN_MEMORY")]
    pub in_memory: bool,

    /// When acknowledged writes reach the disk.
    #[arg(long, env = "TABLESTORE_DURABILITY", value_enum, default_value_t = DurabilityArg::Durable)]
    pub durability: DurabilityArg,

    /// Log filter (error, warn, info, debug, trace, or a tracing directive).
    #[arg(long, env = "TABLESTORE_LOG", default_value = "info")]
    pub log_level: String,

    /// Accounts and keys, in Azurite's format `name1:key1:key2;name2:key1` (replaces the
    /// default `devstoreaccount1` unless it is listed).
    #[arg(long, env = "AZURITE_ACCOUNTS")]
    pub accounts: Option<String>,

    /// Accept unsigned requests (for poking the server with curl). Off by default.
    #[arg(long, env = "TABLESTORE_DISABLE_AUTH")]
    pub disable_auth: bool,

    /// Page cache of the on-disk store, in MiB.
    #[arg(long, env = "TABLESTORE_CACHE_MB", default_value_t = 64)]
    pub cache_mb: u64,
}

impl Config {
    /// A configuration for tests: in memory, loopback, ephemeral port.
    pub fn for_tests() -> Config {
        Config {
            host: "127.0.0.1".into(),
            port: 0,
            location: PathBuf::from("unused"),
            in_memory: true,
            durability: DurabilityArg::Durable,
            log_level: "warn".into(),
            accounts: None,
            disable_auth: false,
            cache_mb: 16,
        }
    }

    pub fn durability(&self) -> Durability {
        match self.durability {
            DurabilityArg::Durable => Durability::Durable,
            DurabilityArg::Relaxed => Durability::Relaxed,
        }
    }

    /// The accounts served (data of different accounts never mix): `--accounts` /
    /// `AZURITE_ACCOUNTS` if given, else the development account.
    pub fn accounts(&self) -> Result<crate::auth::Accounts, String> {
        match self
            .accounts
            .as_deref()
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            Some(text) => crate::auth::Accounts::parse_azurite(text).map_err(|e| format!("{e:?}")),
            None => Ok(crate::auth::Accounts::dev()),
        }
    }
}

/// The connection string a client pastes to reach `endpoint` (e.g. `http://127.0.0.1:10002`).
pub fn connection_string(endpoint: &str, account: &str, key: &str) -> String {
    format!(
        "DefaultEndpointsProtocol=http;AccountName={account};AccountKey={key};TableEndpoint={endpoint}/{account};"
    )
}
