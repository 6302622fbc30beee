//! Opens the store a configuration names: PostgreSQL, the memory store, or sled in a data
//! folder with the RAM tier in front (unless its budget is 0). The one place that knows how engines and the RAM tier
//! stack under [`KvStore`]: at most two layers (the tier and the engine) sit below the
//! contract the server sees. The server, the data commands and the tests all open their
//! stores through [`open`].

use std::path::PathBuf;
use std::sync::Arc;

use crate::kv::memory::MemoryKv;
/// What a configuration choosing a store needs to know of the engines: sled's compressions
/// (and a folder's own), PostgreSQL's URLs.
pub use crate::kv::sled::{folder_compression, Compression};
use crate::kv::sled::{Layout, SledKv, SledOptions};
use crate::postgres::PgStore;
pub use crate::postgres::{display_url, is_postgres_url};
use crate::tier::memory_limit::ProcessLimit;
use crate::tier::{TierOptions, TieredKv};
use crate::{Backend, Durability, KvStore, Store, StoreError};

/// Which store to open, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreOptions {
    /// A PostgreSQL database; the store's tables in `schema` when given.
    Postgres { url: String, schema: Option<String> },
    /// In memory: nothing is kept after exit.
    Memory { durability: Durability },
    /// sled in a data folder.
    Disk(DiskOptions),
}

/// The on-disk store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskOptions {
    /// The data folder (created when missing).
    pub dir: PathBuf,
    pub durability: Durability,
    /// sled's page cache.
    pub cache_bytes: u64,
    /// How a folder created now compresses its data (an existing one keeps its own).
    pub compression: Compression,
    /// The RAM tier's budget; 0 reads everything from disk.
    pub memory_budget_mib: u64,
    /// Whether the RAM tier also keeps the whole process near the budget (on in every real
    /// server; tests that need the tier to load and evict at a tiny budget turn it off).
    pub process_limit: bool,
}

impl DiskOptions {
    /// A data folder opened by a bulk transfer (`tablestore export` and `import`): writes are
    /// made durable when the transfer flushes (at its checkpoints), sled's default page cache,
    /// and no RAM tier (a transfer reads each table once).
    pub fn for_transfer(dir: PathBuf, compression: Compression) -> DiskOptions {
        DiskOptions {
            dir,
            durability: Durability::Relaxed,
            cache_bytes: SledOptions::default().cache_capacity,
            compression,
            memory_budget_mib: 0,
            process_limit: false,
        }
    }
}

/// Opens the store `options` name (a PostgreSQL store's connections live on the runtime this
/// is awaited on).
pub async fn open(options: &StoreOptions) -> Result<Arc<dyn Store>, StoreError> {
    match options {
        StoreOptions::Postgres { url, schema } => {
            Ok(PgStore::open_in_schema(url, schema.as_deref()).await?)
        }
        StoreOptions::Memory { durability } => Ok(KvStore::open(MemoryKv::new(), *durability)?),
        StoreOptions::Disk(disk) => open_disk(disk),
    }
}

fn open_disk(disk: &DiskOptions) -> Result<Arc<dyn Store>, StoreError> {
    std::fs::create_dir_all(&disk.dir)
        .map_err(|e| StoreError::io("creating the data folder", e))?;
    let options = SledOptions {
        cache_capacity: disk.cache_bytes,
        layout: Layout::new(disk.compression),
        ..SledOptions::default()
    };
    let kv = SledKv::open(&disk.dir, &options)?;
    over_tier(kv, disk)
}

/// The store over `kv`, with the RAM tier in front unless its budget is 0.
fn over_tier<B: Backend>(kv: B, disk: &DiskOptions) -> Result<Arc<dyn Store>, StoreError> {
    if disk.memory_budget_mib == 0 {
        return Ok(KvStore::open(kv, disk.durability)?);
    }
    let tier = TieredKv::new(kv, TierOptions::with_budget_mib(disk.memory_budget_mib));
    if disk.process_limit {
        tier.limit_process_memory(ProcessLimit::for_budget_mib(disk.memory_budget_mib));
    }
    Ok(KvStore::open(tier, disk.durability)?)
}
