//! sled backend (the default, on disk): one tree per keyspace. A multi-key write is one
//! `sled::Batch`, which sled applies atomically.
//!
//! A full disk: writes are refused while less than [`SledOptions::min_free_bytes`] is free,
//! so sled itself should never see one.
//!
//! Recovery from a failed write anyway: once a write to its log fails (the disk filled up
//! behind our back, an I/O error),
//! sled refuses every later write until the database is reopened. So after a failed write or
//! flush, the next write (`Kv::begin_write`) first checks that the file system has room again
//! and, if so, reopens the database on the same folder (waiting for running reads to let go
//! of the old one). Reads keep working meanwhile; writes answer `StoreError::Io` until room
//! is back. Reopening recovers exactly what sled had made durable, so writes acknowledged in
//! durable mode are kept, and writes that were not flushed are gone; the generation number
//! changes, so a commit whose write went to the old database is never acknowledged.

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use super::{Kv, Space, StoreError};

/// Least time between two attempts to reopen a failed store.
const RECOVERY_INTERVAL: Duration = Duration::from_millis(200);
/// How long a reopen waits for readers of the old database to finish.
const RECOVERY_WAIT: Duration = Duration::from_secs(2);

pub struct SledKv {
    path: PathBuf,
    options: SledOptions,
    /// The open database; `None` only while it is being reopened.
    current: RwLock<Option<Arc<Handles>>>,
    /// A write or flush failed since the database was (re)opened.
    failed: AtomicBool,
    /// Bumped at every reopen (unflushed writes of the old database are gone).
    generation: AtomicU64,
    last_attempt: Mutex<Option<Instant>>,
}

struct Handles {
    db: sled::Db,
    tables: sled::Tree,
    entities: sled::Tree,
}

impl Handles {
    fn tree(&self, space: Space) -> &sled::Tree {
        match space {
            Space::Tables => &self.tables,
            Space::Entities => &self.entities,
        }
    }
}

/// Options for opening the on-disk store.
#[derive(Debug, Clone)]
pub struct SledOptions {
    /// Page cache size in bytes.
    pub cache_capacity: u64,
    /// Background flush interval; `None` flushes only when asked.
    pub flush_every_ms: Option<u64>,
    /// Writes are refused (`StoreError::Io`, answered 503 ServerBusy) while the file system
    /// has less free space than this, so sled never runs into a full disk: a write that
    /// fails inside sled poisons the database until it is reopened, and reads that happen to
    /// reorganise pages fail with it. 8 MiB covers the largest request (a 4 MiB batch) and
    /// sled's segment and blob overhead.
    pub min_free_bytes: u64,
}

impl Default for SledOptions {
    fn default() -> Self {
        SledOptions {
            cache_capacity: 64 * 1024 * 1024,
            flush_every_ms: Some(500),
            min_free_bytes: 8 * 1024 * 1024,
        }
    }
}

fn io(e: sled::Error) -> StoreError {
    match e {
        sled::Error::Corruption { .. } => StoreError::Corrupt(e.to_string()),
        other => StoreError::Io(other.to_string()),
    }
}

fn unavailable() -> StoreError {
    StoreError::Io("the store is being reopened after a failed write".into())
}

fn open_handles(path: &Path, options: &SledOptions) -> Result<Handles, StoreError> {
    let db = sled::Config::new()
        .path(path)
        .cache_capacity(options.cache_capacity)
        .flush_every_ms(options.flush_every_ms)
        .mode(sled::Mode::HighThroughput)
        .open()
        .map_err(|e| match e {
            sled::Error::Io(ref inner) if inner.to_string().contains("could not acquire lock") => {
                StoreError::Io(format!(
                    "the data folder is in use by another process ({inner})"
                ))
            }
            other => io(other),
        })?;
    let tables = db.open_tree("tables").map_err(io)?;
    let entities = db.open_tree("entities").map_err(io)?;
    Ok(Handles {
        db,
        tables,
        entities,
    })
}

impl SledKv {
    pub fn open(path: &Path, options: &SledOptions) -> Result<SledKv, StoreError> {
        let handles = open_handles(path, options)?;
        Ok(SledKv {
            path: path.to_path_buf(),
            options: options.clone(),
            current: RwLock::new(Some(Arc::new(handles))),
            failed: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            last_attempt: Mutex::new(None),
        })
    }

    fn handles(&self) -> Option<Arc<Handles>> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Runs a write against the open database; a failure marks the store for reopening.
    fn write<T>(&self, f: impl FnOnce(&Handles) -> sled::Result<T>) -> Result<T, StoreError> {
        let handles = self.handles().ok_or_else(unavailable)?;
        f(&handles).map_err(|e| {
            if matches!(e, sled::Error::Io(_)) {
                self.failed.store(true, Ordering::Release);
            }
            io(e)
        })
    }

    /// Refuses to write while the file system is (nearly) full.
    fn check_free_space(&self) -> Result<(), StoreError> {
        if self.options.min_free_bytes == 0 {
            return Ok(());
        }
        let free = fs2::available_space(&self.path).map_err(|e| StoreError::Io(e.to_string()))?;
        if free < self.options.min_free_bytes {
            return Err(StoreError::Io(format!(
                "not enough free disk space: {free} bytes free, {} kept in reserve",
                self.options.min_free_bytes
            )));
        }
        Ok(())
    }

    /// Reopens the database after a failed write, once the disk has room again.
    fn recover(&self) -> Result<(), StoreError> {
        {
            let mut last = self.last_attempt.lock().unwrap_or_else(|e| e.into_inner());
            if last.is_some_and(|t| t.elapsed() < RECOVERY_INTERVAL) {
                return Err(StoreError::Io(
                    "a previous write failed (is the disk full?); retrying shortly".into(),
                ));
            }
            *last = Some(Instant::now());
        }
        self.check_free_space()?;
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        if !self.failed.load(Ordering::Acquire) {
            return Ok(()); // another writer recovered first
        }
        let Some(old) = current.take() else {
            return Err(unavailable());
        };
        // Readers (point reads, scans) hold their own reference; wait for them to finish so
        // sled releases its lock on the folder.
        let deadline = Instant::now() + RECOVERY_WAIT;
        while Arc::strong_count(&old) > 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if Arc::strong_count(&old) > 1 {
            *current = Some(old);
            return Err(StoreError::Io(
                "cannot reopen the store while reads are running".into(),
            ));
        }
        drop(old);
        // sled's background threads let go of the folder lock shortly after the drop.
        let mut attempt = 0;
        loop {
            match open_handles(&self.path, &self.options) {
                Ok(handles) => {
                    *current = Some(Arc::new(handles));
                    self.generation.fetch_add(1, Ordering::AcqRel);
                    self.failed.store(false, Ordering::Release);
                    tracing::warn!("the store was reopened after a failed write; writing again");
                    return Ok(());
                }
                Err(e) if attempt < 50 => {
                    attempt += 1;
                    tracing::debug!(error = ?e, "reopening the store");
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    tracing::error!(error = ?e, "the store could not be reopened");
                    return Err(e);
                }
            }
        }
    }
}

/// A sled range, or nothing for an empty (inverted) range, which sled would panic on. Holds
/// the database it reads, so a reopen waits for it.
pub struct SledIter {
    inner: Option<sled::Iter>,
    /// An error to yield first (the store was being reopened).
    error: Option<StoreError>,
    _handles: Option<Arc<Handles>>,
}

impl Iterator for SledIter {
    type Item = Result<(sled::IVec, sled::IVec), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.error.take() {
            return Some(Err(e));
        }
        self.inner.as_mut()?.next().map(|r| r.map_err(io))
    }
}

impl Kv for SledKv {
    type Bytes = sled::IVec;
    type Iter<'a> = SledIter;

    fn get(&self, space: Space, key: &[u8]) -> Result<Option<sled::IVec>, StoreError> {
        let handles = self.handles().ok_or_else(unavailable)?;
        handles.tree(space).get(key).map_err(io)
    }

    fn range(&self, space: Space, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> SledIter {
        let valid = match (&start, &end) {
            (Bound::Included(s), Bound::Included(e)) => s <= e,
            (Bound::Included(s), Bound::Excluded(e))
            | (Bound::Excluded(s), Bound::Included(e))
            | (Bound::Excluded(s), Bound::Excluded(e)) => s < e,
            _ => true,
        };
        let Some(handles) = self.handles() else {
            return SledIter {
                inner: None,
                error: Some(unavailable()),
                _handles: None,
            };
        };
        SledIter {
            inner: valid.then(|| handles.tree(space).range::<Vec<u8>, _>((start, end))),
            error: None,
            _handles: Some(handles),
        }
    }

    fn apply(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        self.write(|h| {
            let tree = h.tree(space);
            if let [(k, v)] = batch.as_slice() {
                return match v {
                    Some(v) => tree.insert(k.as_slice(), v.as_slice()).map(drop),
                    None => tree.remove(k.as_slice()).map(drop),
                };
            }
            let mut b = sled::Batch::default();
            for (k, v) in batch {
                match v {
                    Some(v) => b.insert(k, v),
                    None => b.remove(k),
                }
            }
            tree.apply_batch(b)
        })
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.write(|h| h.db.flush().map(drop))
    }

    fn is_persistent(&self) -> bool {
        true
    }

    fn begin_write(&self) -> Result<u64, StoreError> {
        self.check_free_space()?;
        if self.failed.load(Ordering::Acquire) {
            self.recover()?;
        }
        Ok(self.generation.load(Ordering::Acquire))
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }
}
