//! sled backend (the default, on disk): one tree per keyspace. A multi-key write is one
//! `sled::Batch`, which sled applies atomically.

use std::ops::Bound;
use std::path::Path;

use super::{Kv, Space, StoreError};

pub struct SledKv {
    db: sled::Db,
    tables: sled::Tree,
    entities: sled::Tree,
}

/// Options for opening the on-disk store.
#[derive(Debug, Clone)]
pub struct SledOptions {
    /// Page cache size in bytes.
    pub cache_capacity: u64,
    /// Background flush interval; `None` flushes only when asked.
    pub flush_every_ms: Option<u64>,
}

impl Default for SledOptions {
    fn default() -> Self {
        SledOptions {
            cache_capacity: 64 * 1024 * 1024,
            flush_every_ms: Some(500),
        }
    }
}

fn io(e: sled::Error) -> StoreError {
    match e {
        sled::Error::Corruption { .. } => StoreError::Corrupt(e.to_string()),
        other => StoreError::Io(other.to_string()),
    }
}

impl SledKv {
    pub fn open(path: &Path, options: &SledOptions) -> Result<SledKv, StoreError> {
        let config = sled::Config::new()
            .path(path)
            .cache_capacity(options.cache_capacity)
            .flush_every_ms(options.flush_every_ms)
            .mode(sled::Mode::HighThroughput);
        // sled's file lock outlives a closed database by a moment (its flusher thread exits
        // asynchronously), so a restart in the same process retries briefly; another live
        // instance still gets the error after the wait.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let db = loop {
            match config.open() {
                Ok(db) => break db,
                Err(sled::Error::Io(e))
                    if e.to_string().contains("lock") && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(e) => return Err(io(e)),
            }
        };
        let tables = db.open_tree("tables").map_err(io)?;
        let entities = db.open_tree("entities").map_err(io)?;
        Ok(SledKv {
            db,
            tables,
            entities,
        })
    }

    fn tree(&self, space: Space) -> &sled::Tree {
        match space {
            Space::Tables => &self.tables,
            Space::Entities => &self.entities,
        }
    }
}

/// A sled range, or nothing for an empty (inverted) range, which sled would panic on.
pub struct SledIter {
    inner: Option<sled::Iter>,
}

impl Iterator for SledIter {
    type Item = Result<(sled::IVec, sled::IVec), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.as_mut()?.next().map(|r| r.map_err(io))
    }
}

impl Kv for SledKv {
    type Bytes = sled::IVec;
    type Iter<'a> = SledIter;

    fn get(&self, space: Space, key: &[u8]) -> Result<Option<sled::IVec>, StoreError> {
        self.tree(space).get(key).map_err(io)
    }

    fn range(&self, space: Space, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> SledIter {
        let valid = match (&start, &end) {
            (Bound::Included(s), Bound::Included(e)) => s <= e,
            (Bound::Included(s), Bound::Excluded(e))
            | (Bound::Excluded(s), Bound::Included(e))
            | (Bound::Excluded(s), Bound::Excluded(e)) => s < e,
            _ => true,
        };
        SledIter {
            inner: valid.then(|| self.tree(space).range::<Vec<u8>, _>((start, end))),
        }
    }

    fn apply(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        let tree = self.tree(space);
        if let [(k, v)] = batch.as_slice() {
            return match v {
                Some(v) => tree.insert(k.as_slice(), v.as_slice()).map(drop),
                None => tree.remove(k.as_slice()).map(drop),
            }
            .map_err(io);
        }
        let mut b = sled::Batch::default();
        for (k, v) in batch {
            match v {
                Some(v) => b.insert(k, v),
                None => b.remove(k),
            }
        }
        tree.apply_batch(b).map_err(io)
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.db.flush().map(drop).map_err(io)
    }

    fn is_persistent(&self) -> bool {
        true
    }
}
