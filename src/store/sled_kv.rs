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
            Err(sled::Error::Io(ref inner))
                if inner.to_string().contains("could not acquire lock")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(sled::Error::Io(ref inner))
                if inner.to_string().contains("could not acquire lock") =>
            {
                return Err(StoreError::Io(format!(
                    "the data folder is in use by another process ({inner})"
                )))
            }
            Err(other) => return Err(io(other)),
        }
    };
    let tables = db.open_tree("tables").map_err(io)?;
    let entities = db.open_tree("entities").map_err(io)?;
    Ok(Handles {
        db,
        tables,
        entities,
    })
}

/// A file beside sled's own, saying that tablestore initialised the folder's store.
const MARKER_FILE: &str = "tablestore-format";
const MARKER_TEXT: &str = "tablestore data folder, store format 1\n";
/// The same fact inside the store (table-metadata keyspace, outside every account's range).
const FORMAT_KEY: &[u8] = b"\xFF\xFCstore-format";
const FORMAT: &[u8] = b"1";

/// Written into the store as its very last write at a clean shutdown, and into the marker
/// file: if the next start does not find the same value, the log lost its end (truncated or
/// damaged; sled would silently recover the readable prefix).
const CLEAN_SHUTDOWN_KEY: &[u8] = b"\xFF\xFCclean-shutdown";

/// The marker file's content: the format line, and after a clean shutdown its token.
fn marker_text(clean_token: Option<&str>) -> String {
    match clean_token {
        Some(t) => format!("{MARKER_TEXT}clean-shutdown {t}\n"),
        None => MARKER_TEXT.to_string(),
    }
}

/// Reads the marker: `None` if absent, else the clean-shutdown token if there is one.
fn read_marker(path: &Path) -> Option<Option<String>> {
    let text = std::fs::read_to_string(path.join(MARKER_FILE)).ok()?;
    Some(text.lines().find_map(|l| {
        l.strip_prefix("clean-shutdown ")
            .map(|t| t.trim().to_string())
    }))
}

/// Replaces the marker atomically (write, sync, rename, sync the folder).
fn write_marker(path: &Path, clean_token: Option<&str>) -> std::io::Result<()> {
    let tmp = path.join(format!("{MARKER_FILE}.tmp"));
    std::fs::write(&tmp, marker_text(clean_token))?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, path.join(MARKER_FILE))?;
    std::fs::File::open(path)?.sync_all()
}

/// Checks that an existing store was found where one was initialised, and marks a new one.
/// sled recovers a damaged log as far as it is readable, which can be nothing at all; the
/// marker file turns "my data vanished" into a start-up error.
fn check_format(path: &Path, handles: &Handles) -> Result<(), StoreError> {
    let marker = read_marker(path);
    let stored = handles.tables.get(FORMAT_KEY).map_err(io)?;
    let marker_error = |e: std::io::Error| StoreError::Io(format!("writing {MARKER_FILE}: {e}"));
    match (marker, stored) {
        (_, Some(v)) if v.as_ref() != FORMAT => Err(StoreError::Corrupt(format!(
            "unknown store format {:?}",
            String::from_utf8_lossy(&v)
        ))),
        (Some(_), None) => Err(StoreError::Corrupt(
            "the folder holds a tablestore store, but its data is missing or unreadable \
             (damaged or deleted files); refusing to start over it. Move the folder away to \
             start afresh."
                .into(),
        )),
        (Some(Some(token)), Some(_)) => {
            let last = handles.tables.get(CLEAN_SHUTDOWN_KEY).map_err(io)?;
            if last.as_deref() != Some(token.as_bytes()) {
                return Err(StoreError::Corrupt(
                    "the store's log ends before the last write of its last clean shutdown: \
                     the folder was truncated or damaged; refusing to start over it"
                        .into(),
                ));
            }
            // The token is only good for the next start.
            write_marker(path, None).map_err(marker_error)
        }
        (Some(None), Some(_)) => Ok(()),
        (None, stored) => {
            if stored.is_none() {
                handles.tables.insert(FORMAT_KEY, FORMAT).map_err(io)?;
                handles.db.flush().map_err(io)?;
            }
            write_marker(path, None).map_err(marker_error)
        }
    }
}

impl SledKv {
    pub fn open(path: &Path, options: &SledOptions) -> Result<SledKv, StoreError> {
        let handles = open_handles(path, options)?;
        check_format(path, &handles)?;
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
        let free = fs4::available_space(&self.path).map_err(|e| StoreError::Io(e.to_string()))?;
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

impl Drop for SledKv {
    /// Closes the database; if nothing failed, ends its log with a clean-shutdown token and
    /// records the token in the marker file for the next start to check.
    fn drop(&mut self) {
        let handles = self
            .current
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(handles) = handles else { return };
        if self.failed.load(Ordering::Acquire) {
            return;
        }
        let token = uuid::Uuid::new_v4().to_string();
        let written = handles
            .tables
            .insert(CLEAN_SHUTDOWN_KEY, token.as_bytes())
            .and_then(|_| handles.db.flush());
        drop(handles);
        if written.is_ok() {
            if let Err(e) = write_marker(&self.path, Some(&token)) {
                tracing::warn!(error = %e, "could not record the clean shutdown");
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

#[cfg(test)]
crate::store_conformance!(
    durable: true,
    open: |dir: &std::path::Path| -> std::sync::Arc<dyn crate::store::Store> {
        crate::store::sled_kv::open_for_tests(dir)
    },
);

/// Opens a durable sled store over `dir`, waiting briefly while a store closed just before
/// (a background purge may still hold it) lets go of the folder.
#[cfg(test)]
fn open_for_tests(dir: &std::path::Path) -> std::sync::Arc<dyn crate::store::Store> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match SledKv::open(dir, &SledOptions::default()) {
            Ok(kv) => {
                return crate::store::KvStore::open(kv, crate::store::Durability::Durable)
                    .expect("open the store")
            }
            Err(e) if Instant::now() > deadline => panic!("opening sled in {dir:?}: {e:?}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}
