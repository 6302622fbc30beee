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

use super::footprint::{folder_bytes, Footprint, Totals};
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
    /// The entity tree's count and bytes (docs/performance.md, "Disk use").
    totals: Totals,
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
    /// How a *new* data folder stores its log ([`Layout`]). sled fixes the layout when it
    /// creates a folder and refuses to open it with another, so an existing folder keeps
    /// the one it was created with (read from sled's `conf` file).
    pub layout: Layout,
}

/// The on-disk layout of sled's log, fixed when a data folder is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Size of sled's log segments in bytes (a power of two, 256 B … 16 MiB).
    pub segment_size: usize,
    /// zstd level of sled's log compression, or `None` for an uncompressed log.
    pub compression: Option<i32>,
}

impl Layout {
    /// What folders created before compression was introduced use: sled's defaults.
    pub const UNCOMPRESSED: Layout = Layout {
        segment_size: 512 * 1024,
        compression: None,
    };
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            segment_size: 512 * 1024,
            compression: Some(DEFAULT_ZSTD_LEVEL),
        }
    }
}

/// zstd level of new folders: level 1 is zstd's fastest; higher levels gain little on the
/// store's small log messages and cost write throughput (docs/performance.md, "Disk use").
const DEFAULT_ZSTD_LEVEL: i32 = 1;

/// Whether the sled folder at `path` has a compressed log (`None`: no folder there yet).
pub fn folder_is_compressed(path: &Path) -> Option<bool> {
    existing_layout(path).map(|layout| layout.compression.is_some())
}

/// sled's own record of a folder's layout (its `conf` file: `segment_size: N`,
/// `use_compression: bool`, `version: 0.34`, then a CRC); `None` for a new folder.
fn existing_layout(path: &Path) -> Option<Layout> {
    let bytes = std::fs::read(path.join("conf")).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
    };
    let segment_size = field("segment_size:")?.parse().ok()?;
    let compressed: bool = field("use_compression:")?.parse().ok()?;
    Some(Layout {
        segment_size,
        // The level is not recorded; any level reads a compressed log.
        compression: compressed.then_some(DEFAULT_ZSTD_LEVEL),
    })
}

impl Default for SledOptions {
    fn default() -> Self {
        SledOptions {
            cache_capacity: 64 * 1024 * 1024,
            flush_every_ms: Some(500),
            min_free_bytes: 8 * 1024 * 1024,
            layout: Layout::default(),
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
    let layout = existing_layout(path).unwrap_or(options.layout);
    // `mode` is not read anywhere in sled 0.34; it is set for a later sled that might.
    let config = sled::Config::new()
        .path(path)
        .cache_capacity(options.cache_capacity)
        .flush_every_ms(options.flush_every_ms)
        .mode(sled::Mode::HighThroughput)
        .segment_size(layout.segment_size)
        .use_compression(layout.compression.is_some())
        .compression_factor(layout.compression.unwrap_or(DEFAULT_ZSTD_LEVEL));
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
/// The entity totals ([`Totals::encode`]) as of the last clean shutdown, written just before
/// its token; trusted only when the token matches.
const TOTALS_KEY: &[u8] = b"\xFF\xFCentity-totals";

/// The entity totals: those recorded at a clean shutdown, else a count of the entity tree
/// (a scan, about a second per million entities).
fn load_totals(handles: &Handles, clean: bool) -> Result<Totals, StoreError> {
    if clean {
        if let Some(t) = handles
            .tables
            .get(TOTALS_KEY)
            .map_err(io)?
            .and_then(|b| Totals::decode(&b))
        {
            return Ok(t);
        }
    }
    let started = Instant::now();
    let totals = Totals::count(handles.entities.iter().map(|r| r.map_err(io)))?;
    let elapsed = started.elapsed();
    if elapsed > Duration::from_secs(1) {
        tracing::info!(
            entities = totals.get().0,
            seconds = elapsed.as_secs_f64(),
            "counted the stored entities (the last shutdown was not clean)"
        );
    }
    Ok(totals)
}

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
/// marker file turns "my data vanished" into a start-up error. Returns whether the last
/// shutdown was clean (so what it recorded last is current).
fn check_format(path: &Path, handles: &Handles) -> Result<bool, StoreError> {
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
            write_marker(path, None).map_err(marker_error)?;
            Ok(true)
        }
        (Some(None), Some(_)) => Ok(false),
        (None, stored) => {
            if stored.is_none() {
                handles.tables.insert(FORMAT_KEY, FORMAT).map_err(io)?;
                handles.db.flush().map_err(io)?;
            }
            write_marker(path, None).map_err(marker_error)?;
            Ok(false)
        }
    }
}

impl SledKv {
    pub fn open(path: &Path, options: &SledOptions) -> Result<SledKv, StoreError> {
        let handles = open_handles(path, options)?;
        let clean = check_format(path, &handles)?;
        let totals = load_totals(&handles, clean)?;
        Ok(SledKv {
            path: path.to_path_buf(),
            options: options.clone(),
            current: RwLock::new(Some(Arc::new(handles))),
            failed: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            last_attempt: Mutex::new(None),
            totals,
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
                    // Writes that were not flushed are gone: count again.
                    match load_totals(&handles, false) {
                        Ok(t) => self.totals.set(&t),
                        Err(e) => tracing::warn!(error = ?e, "recounting the stored entities"),
                    }
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
            .insert(TOTALS_KEY, self.totals.encode())
            .and_then(|_| handles.tables.insert(CLEAN_SHUTDOWN_KEY, token.as_bytes()))
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
        let counted = space == Space::Entities;
        self.write(|h| {
            let tree = h.tree(space);
            if let [(k, v)] = batch.as_slice() {
                let old = match v {
                    Some(v) => tree.insert(k.as_slice(), v.as_slice())?,
                    None => tree.remove(k.as_slice())?,
                };
                if counted {
                    let new = v.as_ref().map(Vec::len);
                    self.totals.change(k.len(), old.map(|o| o.len()), new);
                }
                return Ok(());
            }
            // sled's batch does not return the entries it replaces: read their sizes first
            // (commits hold their partition's lock, so nothing changes them in between). A
            // key written twice in one batch replaces its own earlier value.
            let mut changes = Vec::new();
            if counted {
                changes.reserve(batch.len());
                let mut pending: std::collections::HashMap<&[u8], Option<usize>> =
                    std::collections::HashMap::new();
                for (k, v) in &batch {
                    let new = v.as_ref().map(Vec::len);
                    let old = match pending.insert(k.as_slice(), new) {
                        Some(earlier) => earlier,
                        None => tree.get(k)?.map(|o| o.len()),
                    };
                    changes.push((k.len(), old, new));
                }
            }
            let mut b = sled::Batch::default();
            for (k, v) in batch {
                match v {
                    Some(v) => b.insert(k, v),
                    None => b.remove(k),
                }
            }
            tree.apply_batch(b)?;
            for (key_len, old, new) in changes {
                self.totals.change(key_len, old, new);
            }
            Ok(())
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

    fn footprint(&self) -> Option<Footprint> {
        let (entities, logical_bytes) = self.totals.get();
        Some(Footprint {
            entities,
            logical_bytes,
            disk_bytes: Some(folder_bytes(&self.path)),
        })
    }
}

#[cfg(test)]
crate::store_conformance!(
    durable: true,
    open: |dir: &std::path::Path| -> std::sync::Arc<dyn crate::store::Store> {
        crate::store::sled_kv::open_for_tests(dir)
    },
);

/// Opens sled over `dir` with `options`, waiting up to 10 s while a store closed just before
/// (a background purge or flusher may still hold it) lets go of the folder.
#[cfg(test)]
pub(crate) fn open_kv_for_tests(dir: &std::path::Path, options: &SledOptions) -> SledKv {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match SledKv::open(dir, options) {
            Ok(kv) => return kv,
            Err(e) if Instant::now() > deadline => panic!("opening sled in {dir:?}: {e:?}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Opens a durable sled store over `dir` (see [`open_kv_for_tests`]).
#[cfg(test)]
fn open_for_tests(dir: &std::path::Path) -> std::sync::Arc<dyn crate::store::Store> {
    let kv = open_kv_for_tests(dir, &SledOptions::default());
    crate::store::KvStore::open(kv, crate::store::Durability::Durable).expect("open the store")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EdmValue, EntityKey, IfMatch, Property, TableRef, WriteKind, WriteOp};
    use crate::store::{Durability, KvStore, Store};

    fn open(dir: &Path, layout: Layout) -> Arc<KvStore<SledKv>> {
        let options = SledOptions {
            layout,
            ..SledOptions::default()
        };
        KvStore::open(open_kv_for_tests(dir, &options), Durability::Durable).expect("store")
    }

    fn insert(store: &dyn Store, table: &str, rows: std::ops::Range<u32>) {
        let id = match store.get_table(&TableRef::new("a", table)).expect("get") {
            Some(t) => t.id,
            None => {
                store
                    .create_table(&TableRef::new("a", table))
                    .expect("create")
                    .id
            }
        };
        let ops: Vec<WriteOp> = rows
            .map(|r| WriteOp {
                kind: WriteKind::Insert,
                key: EntityKey {
                    partition_key: "p".into(),
                    row_key: format!("{r:05}"),
                },
                properties: vec![Property {
                    name: "text".into(),
                    value: EdmValue::String("words repeat and repeat ".repeat(20)),
                }],
                if_match: IfMatch::Any,
            })
            .collect();
        store.commit(id, &ops).expect("commit");
    }

    fn conf(dir: &Path) -> String {
        String::from_utf8_lossy(&std::fs::read(dir.join("conf")).expect("sled conf")).into_owned()
    }

    #[test]
    fn new_folders_are_compressed() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), Layout::default());
        insert(&*store, "t", 0..10);
        drop(store);
        assert!(conf(dir.path()).contains("use_compression: true"));
        assert_eq!(existing_layout(dir.path()), Some(Layout::default()));
    }

    /// A folder written before compression keeps its uncompressed log: sled refuses to open
    /// a folder with another compression setting than it was created with.
    #[test]
    fn an_uncompressed_folder_from_before_still_opens() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), Layout::UNCOMPRESSED);
        insert(&*store, "old", 0..50);
        drop(store);
        assert!(conf(dir.path()).contains("use_compression: false"));

        let store = open(dir.path(), Layout::default());
        let t = store
            .get_table(&TableRef::new("a", "old"))
            .unwrap()
            .expect("table");
        assert!(store.get_entity(t.id, "p", "00049").unwrap().is_some());
        insert(&*store, "old", 50..60);
        assert_eq!(store.footprint().unwrap().entities, 60);
        drop(store);
        assert!(conf(dir.path()).contains("use_compression: false"));
        let store = open(dir.path(), Layout::default());
        assert_eq!(store.footprint().unwrap().entities, 60);
    }

    #[test]
    fn compression_shrinks_the_folder() {
        let sizes: Vec<u64> = [Layout::UNCOMPRESSED, Layout::default()]
            .into_iter()
            .map(|layout| {
                let dir = tempfile::tempdir().unwrap();
                let store = open(dir.path(), layout);
                insert(&*store, "t", 0..2000);
                drop(store);
                folder_bytes(dir.path())
            })
            .collect();
        assert!(sizes[1] * 2 < sizes[0], "{sizes:?}");
    }

    /// After a shutdown that was not clean, the totals recorded by the previous clean one
    /// are stale: the store counts again.
    #[test]
    fn totals_are_counted_again_after_an_unclean_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), Layout::default());
        insert(&*store, "t", 0..30);
        let expected = store.footprint().unwrap();
        drop(store);
        // What a crash after more writes looks like to the next start: totals that no longer
        // match the data, and no clean-shutdown token.
        {
            let db = sled::Config::new()
                .path(dir.path())
                .use_compression(true)
                .open()
                .unwrap();
            let tables = db.open_tree("tables").unwrap();
            tables
                .insert(TOTALS_KEY, Totals::default().encode())
                .unwrap();
            db.flush().unwrap();
        }
        write_marker(dir.path(), None).unwrap();
        let store = open(dir.path(), Layout::default());
        let f = store.footprint().unwrap();
        assert_eq!((f.entities, f.logical_bytes), (30, expected.logical_bytes));
        assert!(f.logical_bytes > 30 * 400);
        assert!(f.disk_bytes.unwrap() > 0);
    }
}
