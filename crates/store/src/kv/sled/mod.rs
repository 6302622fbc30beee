//! sled backend (the default, on disk): one tree per keyspace. A multi-key write is made
//! atomic across crashes with an intent record ([`intent`]), not with `sled::Batch`,
//! whose process-wide lock would serialise every write of the server.
//!
//! A full disk: writes are refused while less than [`SledOptions::min_free_bytes`] is free,
//! so sled itself should never see one.
//!
//! Recovery from a failed write anyway: once a write to its log fails (the disk filled up
//! behind our back, an I/O error),
//! sled refuses every later write until the database is reopened. So after a failed write or
//! flush, the next write (`Backend::begin_write`) first checks that the file system has room again
//! and, if so, reopens the database on the same folder (waiting for running reads to let go
//! of the old one). Reads keep working meanwhile; writes answer `StoreError::DiskFull` or
//! `StoreError::Reopening` until room
//! is back. Reopening recovers exactly what sled had made durable, so writes acknowledged in
//! durable mode are kept, and writes that were not flushed are gone; the generation number
//! changes, so a commit whose write went to the old database is never acknowledged.

use parking_lot::{Mutex, RwLock};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::contract::footprint::{folder_bytes, Footprint, Totals};
use crate::encoding::lz4;
use crate::{Backend, Kv, Space, StoreError};

pub(crate) mod intent;

/// Least time between two attempts to reopen a failed store.
const RECOVERY_INTERVAL: Duration = Duration::from_millis(200);
/// How long a reopen waits for readers of the old database to finish.
const RECOVERY_WAIT: Duration = Duration::from_secs(2);
/// With more than [`ROOMY`] times the reserve free, the free space is read again only after
/// this long: a `statvfs` per write was 2 % of a single insert's CPU, and no write rate fills
/// the difference (over 100 MiB with the default reserve) in 100 ms.
const FREE_SPACE_RECHECK: Duration = Duration::from_millis(100);
const ROOMY: u64 = 16;

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
    /// Entity values are stored as [`lz4`] frames (store format 2).
    framed: bool,
    /// Until when (ms since `opened`) the free space need not be read again.
    roomy_until_ms: AtomicU64,
    opened: Instant,
    intent_ids: intent::Ids,
    /// Tests: called with a multi-key write's first key between its intent and its rows.
    #[cfg(test)]
    hold_apply: std::sync::OnceLock<HoldApply>,
}

/// Tests: what a multi-key write calls with its first key between its intent and its rows.
#[cfg(test)]
type HoldApply = Box<dyn Fn(&[u8]) + Send + Sync>;

struct Handles {
    db: sled::Db,
    tables: sled::Tree,
    entities: sled::Tree,
    /// Multi-key writes in progress ([`intent`]).
    intents: sled::Tree,
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
    /// Writes are refused (`StoreError::DiskFull`, answered 503 ServerBusy) while the file system
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

/// The on-disk layout of a data folder, fixed when it is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Size of sled's log segments in bytes (a power of two, 256 B … 16 MiB).
    pub segment_size: usize,
    pub compression: Compression,
}

/// How a data folder keeps its size down (`--compression`), fixed when it is created: sled
/// refuses to open a folder with another log compression than it was created with, and
/// values written one way cannot be read the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Each entity compressed on its own with LZ4 ([`crate::encoding::lz4`], store format 2);
    /// sled's log uncompressed. New folders since LZ4 was introduced (the default).
    #[default]
    Lz4,
    /// sled's zstd compression of its whole log (store format 1): a smaller folder than with
    /// LZ4 (the log compresses whole nodes), writes about half as fast. New folders before LZ4.
    Zstd,
    /// Neither (store format 1): the fastest writes, a folder about twice the data.
    Off,
}

impl Compression {
    /// The name `--compression` takes and the start-up line prints.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
            Compression::Off => "off",
        }
    }

    /// The store format a new folder with this compression gets.
    fn format(self) -> &'static [u8] {
        match self {
            Compression::Lz4 => FORMAT_LZ4_VALUES,
            Compression::Zstd | Compression::Off => FORMAT_RAW_VALUES,
        }
    }
}

impl Layout {
    /// sled's segment size with the given compression.
    pub const fn new(compression: Compression) -> Layout {
        Layout {
            segment_size: 512 * 1024,
            compression,
        }
    }
}

impl Default for Layout {
    fn default() -> Self {
        Layout::new(Compression::default())
    }
}

/// zstd level of folders with a compressed log: level 1 is zstd's fastest; higher levels gain
/// little on the store's small log messages and cost write throughput.
const ZSTD_LEVEL: i32 = 1;

/// How the data folder at `path` is compressed (`None`: no folder there yet).
pub fn folder_compression(path: &Path) -> Option<Compression> {
    existing_layout(path).map(|layout| layout.compression)
}

/// A folder's layout as recorded when it was created: sled's `conf` file (`segment_size: N`,
/// `use_compression: bool`, `version: 0.34`, then a CRC) and the store format in the marker
/// file. `None` for a new folder.
fn existing_layout(path: &Path) -> Option<Layout> {
    let bytes = std::fs::read(path.join("conf")).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
    };
    let segment_size = field("segment_size:")?.parse().ok()?;
    let log_compressed: bool = field("use_compression:")?.parse().ok()?;
    let compression = if log_compressed {
        Compression::Zstd
    } else if marker_format(path).as_deref() == Some(FORMAT_LZ4_VALUES) {
        Compression::Lz4
    } else {
        Compression::Off
    };
    Some(Layout {
        segment_size,
        compression,
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
        sled::Error::Io(source) => StoreError::io("sled", source),
        other => StoreError::Io {
            doing: "sled".into(),
            source: Arc::new(other),
        },
    }
}

fn unavailable() -> StoreError {
    StoreError::Reopening("the store is being reopened after a failed write")
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
        .use_compression(layout.compression == Compression::Zstd)
        .compression_factor(ZSTD_LEVEL);
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
                // sled says so only in its message (an `Other` I/O error); from here on the
                // variant says it.
                return Err(StoreError::FolderInUse);
            }
            Err(other) => return Err(io(other)),
        }
    };
    let tables = db.open_tree("tables").map_err(io)?;
    let entities = db.open_tree("entities").map_err(io)?;
    let intents = db.open_tree(intent::TREE).map_err(io)?;
    let handles = Handles {
        db,
        tables,
        entities,
        intents,
    };
    let replayed = intent::replay(&handles.intents, |space| handles.tree(space))?;
    if replayed > 0 {
        handles.db.flush().map_err(io)?;
        tracing::info!(replayed, "applied the writes a crash interrupted");
    }
    Ok(handles)
}

/// A file beside sled's own, saying that tablestore initialised the folder's store, and in
/// which format.
const MARKER_FILE: &str = "tablestore-format";
const MARKER_PREFIX: &str = "tablestore data folder, store format ";
/// The same fact inside the store (table-metadata keyspace, outside every account's range).
const FORMAT_KEY: &[u8] = b"\xFF\xFCstore-format";
/// Store format 1: entity values stored as they are encoded.
const FORMAT_RAW_VALUES: &[u8] = b"1";
/// Store format 2: entity values stored as [`crate::encoding::lz4`] frames.
const FORMAT_LZ4_VALUES: &[u8] = b"2";

/// Written into the store as its very last write at a clean shutdown, and into the marker
/// file: if the next start does not find the same value, the log lost its end (truncated or
/// damaged; sled would silently recover the readable prefix).
const CLEAN_SHUTDOWN_KEY: &[u8] = b"\xFF\xFCclean-shutdown";
/// The entity totals ([`Totals::encode`]) as of the last clean shutdown, written just before
/// its token; trusted only when the token matches.
const TOTALS_KEY: &[u8] = b"\xFF\xFCentity-totals";

/// The entity totals: those recorded at a clean shutdown, else a count of the entity tree
/// (a scan, about a second per million entities).
fn load_totals(handles: &Handles, clean: bool, framed: bool) -> Result<Totals, StoreError> {
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
    let entries = handles.entities.iter().map(|r| r.map_err(io));
    let totals = if framed {
        Totals::count(entries, lz4::value_len)?
    } else {
        Totals::count(entries, <[u8]>::len)?
    };
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
fn marker_text(format: &[u8], clean_token: Option<&str>) -> String {
    let format = String::from_utf8_lossy(format);
    match clean_token {
        Some(t) => format!("{MARKER_PREFIX}{format}\nclean-shutdown {t}\n"),
        None => format!("{MARKER_PREFIX}{format}\n"),
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

/// The store format the marker names (`None`: no marker).
fn marker_format(path: &Path) -> Option<Vec<u8>> {
    let text = std::fs::read_to_string(path.join(MARKER_FILE)).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(MARKER_PREFIX))
        .map(|f| f.trim().as_bytes().to_vec())
}

/// Replaces the marker atomically (write, sync, rename, sync the folder).
fn write_marker(path: &Path, format: &[u8], clean_token: Option<&str>) -> std::io::Result<()> {
    let tmp = path.join(format!("{MARKER_FILE}.tmp"));
    std::fs::write(&tmp, marker_text(format, clean_token))?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, path.join(MARKER_FILE))?;
    std::fs::File::open(path)?.sync_all()
}

/// What [`check_format`] found.
struct Checked {
    /// The last shutdown was clean (so what it recorded last is current).
    clean: bool,
    /// Entity values are [`crate::encoding::lz4`] frames (store format 2).
    framed: bool,
}

/// Checks that an existing store was found where one was initialised, and marks a new one
/// with the format `new` asks for. sled recovers a damaged log as far as it is readable,
/// which can be nothing at all; the marker file turns "my data vanished" into a start-up
/// error.
fn check_format(path: &Path, handles: &Handles, new: Compression) -> Result<Checked, StoreError> {
    let marker = read_marker(path);
    let stored = handles.tables.get(FORMAT_KEY).map_err(io)?;
    let marker_error = |e| StoreError::io(format!("writing {MARKER_FILE}"), e);
    let framed = |format: &[u8]| format == FORMAT_LZ4_VALUES;
    match (marker, stored) {
        (_, Some(v)) if v != FORMAT_RAW_VALUES && v != FORMAT_LZ4_VALUES => {
            Err(StoreError::Corrupt(format!(
                "unknown store format {:?} (written by a newer tablestore?)",
                String::from_utf8_lossy(&v)
            )))
        }
        (Some(_), None) => Err(StoreError::Corrupt(
            "the folder holds a tablestore store, but its data is missing or unreadable \
             (damaged or deleted files); refusing to start over it. Move the folder away to \
             start afresh."
                .into(),
        )),
        (Some(Some(token)), Some(format)) => {
            let last = handles.tables.get(CLEAN_SHUTDOWN_KEY).map_err(io)?;
            if last.as_deref() != Some(token.as_bytes()) {
                return Err(StoreError::Corrupt(
                    "the store's log ends before the last write of its last clean shutdown: \
                     the folder was truncated or damaged; refusing to start over it"
                        .into(),
                ));
            }
            // The token is only good for the next start.
            write_marker(path, &format, None).map_err(marker_error)?;
            Ok(Checked {
                clean: true,
                framed: framed(&format),
            })
        }
        (Some(None), Some(format)) => Ok(Checked {
            clean: false,
            framed: framed(&format),
        }),
        (None, stored) => {
            let format = match stored {
                Some(format) => format.to_vec(),
                None => {
                    // A folder from before the marker holds raw values; only an empty store
                    // takes the format asked for.
                    let format = if handles.entities.is_empty() {
                        new.format()
                    } else {
                        FORMAT_RAW_VALUES
                    };
                    handles.tables.insert(FORMAT_KEY, format).map_err(io)?;
                    handles.db.flush().map_err(io)?;
                    format.to_vec()
                }
            };
            write_marker(path, &format, None).map_err(marker_error)?;
            Ok(Checked {
                clean: false,
                framed: framed(&format),
            })
        }
    }
}

impl SledKv {
    pub fn open(path: &Path, options: &SledOptions) -> Result<SledKv, StoreError> {
        let handles = open_handles(path, options)?;
        let checked = check_format(path, &handles, options.layout.compression)?;
        let totals = load_totals(&handles, checked.clean, checked.framed)?;
        Ok(SledKv {
            path: path.to_path_buf(),
            options: options.clone(),
            current: RwLock::new(Some(Arc::new(handles))),
            failed: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            last_attempt: Mutex::new(None),
            totals,
            framed: checked.framed,
            roomy_until_ms: AtomicU64::new(0),
            opened: Instant::now(),
            intent_ids: intent::Ids::default(),
            #[cfg(test)]
            hold_apply: std::sync::OnceLock::new(),
        })
    }

    /// The store format of the folder.
    fn format(&self) -> &'static [u8] {
        if self.framed {
            FORMAT_LZ4_VALUES
        } else {
            FORMAT_RAW_VALUES
        }
    }

    /// Whether values of `space` are [`lz4`] frames.
    fn frames(&self, space: Space) -> bool {
        self.framed && space == Space::Entities
    }

    /// The length of the value a stored entry of `space` holds.
    fn value_len(&self, space: Space, stored: &[u8]) -> usize {
        if self.frames(space) {
            lz4::value_len(stored)
        } else {
            stored.len()
        }
    }

    fn handles(&self) -> Option<Arc<Handles>> {
        self.current.read().clone()
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
        let now_ms = self.opened.elapsed().as_millis() as u64;
        if now_ms < self.roomy_until_ms.load(Ordering::Relaxed) {
            return Ok(());
        }
        let free = fs4::available_space(&self.path)
            .map_err(|e| StoreError::io("reading the free disk space", e))?;
        if free > self.options.min_free_bytes.saturating_mul(ROOMY) {
            let until = now_ms + FREE_SPACE_RECHECK.as_millis() as u64;
            self.roomy_until_ms.store(until, Ordering::Relaxed);
        }
        if free < self.options.min_free_bytes {
            return Err(StoreError::DiskFull {
                free,
                reserve: self.options.min_free_bytes,
            });
        }
        Ok(())
    }

    /// Reopens the database after a failed write, once the disk has room again.
    fn recover(&self) -> Result<(), StoreError> {
        {
            let mut last = self.last_attempt.lock();
            if last.is_some_and(|t| t.elapsed() < RECOVERY_INTERVAL) {
                return Err(StoreError::Reopening(
                    "a previous write failed (is the disk full?); retrying shortly",
                ));
            }
            *last = Some(Instant::now());
        }
        self.check_free_space()?;
        let mut current = self.current.write();
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
            return Err(StoreError::Reopening(
                "cannot reopen the store while reads are running",
            ));
        }
        drop(old);
        // sled's background threads let go of the folder lock shortly after the drop.
        let mut attempt = 0;
        loop {
            match open_handles(&self.path, &self.options) {
                Ok(handles) => {
                    // Writes that were not flushed are gone: count again.
                    match load_totals(&handles, false, self.framed) {
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

    /// [`Kv::apply`]; `new_keys`: [`Backend::apply_new_keys`], whose intent names the keys only.
    fn apply_with_intent(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        new_keys: bool,
    ) -> Result<(), StoreError> {
        let counted = space == Space::Entities;
        // Compressed before any lock is taken.
        let frames = self.frames(space);
        let batch: Vec<StoredEntry> = batch
            .into_iter()
            .map(|(k, v)| {
                let len = v.as_ref().map(Vec::len);
                let stored = match v {
                    Some(v) if frames => Some(lz4::encode(&v)),
                    other => other,
                };
                (k, stored, len)
            })
            .collect();
        let old_len = |stored: sled::IVec| self.value_len(space, &stored);
        self.write(|h| {
            let tree = h.tree(space);
            // A single key is atomic by itself; several are made atomic across a crash by an
            // intent record ([`intent`]): sled's batch would serialise every write of the
            // process.
            let intent = match batch.as_slice() {
                [_] => None,
                _ => {
                    let id = self.intent_ids.next();
                    let record = if new_keys {
                        intent::encode_new_keys(space, batch.iter().map(|(k, _, _)| k.as_slice()))
                    } else {
                        let entries = batch.iter().map(|(k, v, _)| (k.as_slice(), v.as_deref()));
                        intent::encode(space, entries)
                    };
                    h.intents.insert(id, record)?;
                    #[cfg(test)]
                    if let (Some(hold), Some((key, _, _))) = (self.hold_apply.get(), batch.first())
                    {
                        hold(key);
                    }
                    Some(id)
                }
            };
            for (k, v, new) in &batch {
                let old = match v {
                    Some(v) => tree.insert(k.as_slice(), v.as_slice())?,
                    None => tree.remove(k.as_slice())?,
                };
                if counted {
                    self.totals.change(k.len(), old.map(old_len), *new);
                }
            }
            if let Some(id) = intent {
                h.intents.remove(id)?;
            }
            Ok(())
        })
    }
}

impl Drop for SledKv {
    /// Closes the database; if nothing failed, ends its log with a clean-shutdown token and
    /// records the token in the marker file for the next start to check.
    fn drop(&mut self) {
        let handles = self.current.get_mut().take();
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
            if let Err(e) = write_marker(&self.path, self.format(), Some(&token)) {
                tracing::warn!(error = %e, "could not record the clean shutdown");
            }
        }
    }
}

/// (key, what is stored under it or `None` to remove it, the length of the value it holds).
type StoredEntry = (Vec<u8>, Option<Vec<u8>>, Option<usize>);

/// A sled range, or nothing for an empty (inverted) range, which sled would panic on. Holds
/// the database it reads, so a reopen waits for it.
pub struct SledIter {
    inner: Option<sled::Iter>,
    /// Values are [`lz4`] frames to decode.
    framed: bool,
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
        let entry = self.inner.as_mut()?.next()?.map_err(io);
        Some(match entry {
            Ok((k, v)) if self.framed => lz4::decode(&v).map(|v| (k, v)),
            other => other,
        })
    }
}

impl Kv for SledKv {
    type Bytes = sled::IVec;
    type Iter<'a> = SledIter;

    fn get(&self, space: Space, key: &[u8]) -> Result<Option<sled::IVec>, StoreError> {
        let handles = self.handles().ok_or_else(unavailable)?;
        let stored = handles.tree(space).get(key).map_err(io)?;
        match stored {
            Some(frame) if self.frames(space) => lz4::decode(&frame).map(Some),
            other => Ok(other),
        }
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
                framed: false,
                error: Some(unavailable()),
                _handles: None,
            };
        };
        SledIter {
            inner: valid.then(|| handles.tree(space).range::<Vec<u8>, _>((start, end))),
            framed: self.frames(space),
            error: None,
            _handles: Some(handles),
        }
    }

    fn apply(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        self.apply_with_intent(space, batch, false)
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.write(|h| h.db.flush().map(drop))
    }

    fn is_persistent(&self) -> bool {
        true
    }
}

/// sled's intents that name new keys only, its recovery protocol (module documentation) and
/// its totals.
impl Backend for SledKv {
    fn apply_new_keys(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        self.apply_with_intent(space, batch, true)
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
    open: |dir: &std::path::Path| -> std::sync::Arc<dyn crate::Store> {
        crate::kv::sled::open_for_tests(dir)
    },
);

/// Store format 1 (entity values as they are, sled's log compressed with zstd): what folders
/// created before LZ4 hold, and what `--compression zstd` still creates.
#[cfg(test)]
mod raw_values {
    crate::store_conformance!(
        durable: true,
        open: |dir: &std::path::Path| -> std::sync::Arc<dyn crate::Store> {
            let options = crate::kv::sled::SledOptions {
                layout: crate::kv::sled::Layout::new(crate::kv::sled::Compression::Zstd),
                ..crate::kv::sled::SledOptions::default()
            };
            let kv = crate::kv::sled::open_kv_for_tests(dir, &options);
            crate::KvStore::open(kv, crate::Durability::Durable).expect("store")
        },
    );
}

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
pub(crate) fn open_for_tests(dir: &std::path::Path) -> std::sync::Arc<dyn crate::Store> {
    let kv = open_kv_for_tests(dir, &SledOptions::default());
    crate::KvStore::open(kv, crate::Durability::Durable).expect("open the store")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EdmValue, EntityKey, IfMatch, Property, TableRef, WriteKind, WriteOp};
    use crate::{block_on, Durability, KvStore, RowSource, Store};

    fn open(dir: &Path, layout: Layout) -> Arc<KvStore<SledKv>> {
        let options = SledOptions {
            layout,
            ..SledOptions::default()
        };
        KvStore::open(open_kv_for_tests(dir, &options), Durability::Durable).expect("store")
    }

    /// The folder as a bare sled database, once the store dropped before has let go of it:
    /// sled's own I/O threads can hold the folder's lock for a moment after the last handle
    /// is dropped, so a lock refusal is waited out (bounded) rather than failed on.
    fn open_raw(dir: &Path) -> sled::Db {
        let mut tries = 0;
        loop {
            match sled::Config::new().path(dir).open() {
                Ok(db) => return db,
                Err(e) if tries < 500 && e.to_string().contains("could not acquire lock") => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => panic!("opening {} as a bare sled database: {e}", dir.display()),
            }
        }
    }

    fn insert(store: &dyn Store, table: &str, rows: std::ops::Range<u32>) {
        let text = EdmValue::String("words repeat and repeat ".repeat(20));
        write(store, table, rows, WriteKind::Insert, |_| {
            Some(("text", text.clone()))
        });
    }

    fn insert_or_replace(store: &dyn Store, table: &str, rows: std::ops::Range<u32>) {
        write(store, table, rows, WriteKind::InsertOrReplace, |r| {
            Some(("n", EdmValue::Int32(r as i32)))
        });
    }

    fn delete(store: &dyn Store, table: &str, rows: std::ops::Range<u32>) {
        write(store, table, rows, WriteKind::Delete, |_| None);
    }

    /// Writes rows `00000`… of partition `p` (creating the table), each with the property
    /// `property` gives it, all in one commit.
    fn write(
        store: &dyn Store,
        table: &str,
        rows: std::ops::Range<u32>,
        kind: WriteKind,
        property: impl Fn(u32) -> Option<(&'static str, EdmValue)>,
    ) {
        let id = match block_on(store.get_table(&TableRef::new("a", table))).expect("get") {
            Some(t) => t.id,
            None => {
                block_on(store.create_table(&TableRef::new("a", table)))
                    .expect("create")
                    .id
            }
        };
        let ops: Vec<WriteOp> = rows
            .map(|r| WriteOp {
                limits: Default::default(),
                kind,
                key: EntityKey {
                    partition_key: "p".into(),
                    row_key: format!("{r:05}"),
                },
                properties: property(r)
                    .map(|(name, value)| Property {
                        name: name.into(),
                        value,
                    })
                    .into_iter()
                    .collect(),
                if_match: IfMatch::Any,
            })
            .collect();
        block_on(store.commit(id, &ops)).expect("commit");
    }

    /// Change sets of two partitions proceed in parallel: while one is held in the middle of
    /// its apply (between its intent and its rows), a change set of another partition of the
    /// same table commits; a point read of the held partition waits for its change set rather
    /// than see part of it. With the RAM tier over sled, as the server runs.
    #[test]
    fn change_sets_of_two_partitions_proceed_in_parallel() {
        use crate::tier::{TierOptions, TieredKv};
        use std::sync::mpsc;
        use std::time::Duration;

        let dir = tempfile::tempdir().unwrap();
        let kv = open_kv_for_tests(dir.path(), &SledOptions::default());
        let (entered_tx, entered) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let released = Mutex::new(released);
        let armed = Arc::new(AtomicBool::new(false));
        let hold_armed = Arc::clone(&armed);
        let _ = kv.hold_apply.set(Box::new(move |first_key: &[u8]| {
            let held = crate::encoding::key::decode_entity_key(first_key)
                .is_some_and(|(partition, _)| partition == "held");
            if held && hold_armed.load(Ordering::SeqCst) {
                entered_tx.send(()).unwrap();
                released.lock().recv().unwrap();
            }
        }));
        let mut tier = TierOptions::with_budget_mib(16);
        tier.background = false;
        let store = KvStore::open(TieredKv::new(kv, tier), Durability::Durable).unwrap();
        let table = block_on(store.create_table(&TableRef::new("a", "t")))
            .unwrap()
            .id;
        assert_ne!(
            KvStore::<TieredKv<SledKv>>::stripe(table.0, "held"),
            KvStore::<TieredKv<SledKv>>::stripe(table.0, "free"),
            "the partitions must not share a lock stripe for this test"
        );
        let ops = |partition: &str, n: i32| -> Vec<WriteOp> {
            (0..3)
                .map(|r| WriteOp {
                    limits: Default::default(),
                    kind: WriteKind::InsertOrReplace,
                    key: EntityKey {
                        partition_key: partition.into(),
                        row_key: format!("r{r}"),
                    },
                    properties: vec![Property {
                        name: "n".into(),
                        value: EdmValue::Int32(n),
                    }],
                    if_match: IfMatch::Any,
                })
                .collect()
        };
        let n_of = |e: Option<crate::model::Entity>| e.map(|e| e.properties[0].value.clone());
        block_on(store.commit(table, &ops("held", 0))).unwrap();
        armed.store(true, Ordering::SeqCst);

        let held = {
            let store = Arc::clone(&store);
            std::thread::spawn(move || block_on(store.commit(table, &ops("held", 1))).map(drop))
        };
        entered
            .recv_timeout(Duration::from_secs(10))
            .expect("the held change set reached its apply");
        let (done_tx, done) = mpsc::channel();
        let free = {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let result = block_on(store.commit(table, &ops("free", 1))).map(drop);
                done_tx.send(()).unwrap();
                result
            })
        };
        done.recv_timeout(Duration::from_secs(10))
            .expect("the other partition's change set committed while the first was held");
        free.join().unwrap().unwrap();
        let (read_tx, read) = mpsc::channel();
        let reader = {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                let value = block_on(store.get_entity(table, "held", "r2")).unwrap();
                read_tx.send(()).unwrap();
                value
            })
        };
        assert!(
            read.recv_timeout(Duration::from_millis(300)).is_err(),
            "a point read of the held partition waits for its change set"
        );
        release.send(()).unwrap();
        held.join().unwrap().unwrap();
        read.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(n_of(reader.join().unwrap()), Some(EdmValue::Int32(1)));
        for r in 0..3 {
            let row = format!("r{r}");
            assert_eq!(
                n_of(block_on(store.get_entity(table, "free", &row)).unwrap()),
                Some(EdmValue::Int32(1))
            );
        }
    }

    fn conf(dir: &Path) -> String {
        String::from_utf8_lossy(&std::fs::read(dir.join("conf")).expect("sled conf")).into_owned()
    }

    fn marker(dir: &Path) -> String {
        std::fs::read_to_string(dir.join(MARKER_FILE)).expect("marker")
    }

    fn entity_count(store: &KvStore<SledKv>, table: &str) -> usize {
        decoded(store, table)
            .iter()
            .inspect(|e| assert!(e.is_ok(), "{e:?}"))
            .count()
    }

    /// Whether each row of `table` decodes, in key order, up to the first that does not.
    fn decoded(store: &KvStore<SledKv>, table: &str) -> Vec<Result<(), StoreError>> {
        let t = block_on(store.get_table(&TableRef::new("a", table)))
            .unwrap()
            .expect("table");
        let mut rows = Vec::new();
        let scanned =
            store
                .rows(t.id)
                .scan_raw(&crate::encoding::key::KeyRange::all(), &mut |row| {
                    rows.push(row.view().map(drop));
                    true
                });
        // A row that cannot be read ends the scan with its error.
        if let Err(e) = scanned {
            rows.push(Err(e));
        }
        rows
    }

    /// New folders compress each entity with LZ4 (store format 2) over an uncompressed log.
    #[test]
    fn new_folders_compress_each_value() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), Layout::default());
        insert(&*store, "t", 0..10);
        drop(store);
        assert!(conf(dir.path()).contains("use_compression: false"));
        assert!(marker(dir.path()).starts_with("tablestore data folder, store format 2\n"));
        assert_eq!(existing_layout(dir.path()), Some(Layout::default()));
        assert_eq!(folder_compression(dir.path()), Some(Compression::Lz4));

        let store = open(dir.path(), Layout::new(Compression::Off));
        assert_eq!(entity_count(&store, "t"), 10);
        let t = block_on(store.get_table(&TableRef::new("a", "t")))
            .unwrap()
            .unwrap();
        let e = block_on(store.get_entity(t.id, "p", "00007"))
            .unwrap()
            .expect("entity");
        assert_eq!(
            e.properties[0].value,
            EdmValue::String("words repeat and repeat ".repeat(20))
        );
    }

    /// Folders of store format 1 (zstd-compressed or uncompressed log, values as they are)
    /// keep their layout whatever `--compression` says now: sled refuses another log
    /// compression, and their values are not frames.
    #[test]
    fn format_1_folders_keep_their_layout() {
        for created in [Compression::Zstd, Compression::Off] {
            let dir = tempfile::tempdir().unwrap();
            let store = open(dir.path(), Layout::new(created));
            insert(&*store, "old", 0..50);
            drop(store);
            assert!(marker(dir.path()).starts_with("tablestore data folder, store format 1\n"));
            assert_eq!(folder_compression(dir.path()), Some(created));

            let store = open(dir.path(), Layout::default());
            assert_eq!(entity_count(&store, "old"), 50);
            insert(&*store, "old", 50..60);
            assert_eq!(block_on(store.footprint()).unwrap().entities, 60);
            drop(store);
            assert_eq!(folder_compression(dir.path()), Some(created));
            let store = open(dir.path(), Layout::default());
            assert_eq!(block_on(store.footprint()).unwrap().entities, 60);
            assert_eq!(entity_count(&store, "old"), 60);
        }
    }

    /// A folder from before the marker file and the format key holds raw values: it must not
    /// be taken for a new folder of format 2.
    #[test]
    fn a_folder_from_before_the_format_key_stays_format_1() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), Layout::new(Compression::Off));
        insert(&*store, "old", 0..5);
        drop(store);
        {
            let db = open_raw(dir.path());
            db.open_tree("tables").unwrap().remove(FORMAT_KEY).unwrap();
            db.flush().unwrap();
        }
        std::fs::remove_file(dir.path().join(MARKER_FILE)).unwrap();
        let store = open(dir.path(), Layout::default());
        assert_eq!(entity_count(&store, "old"), 5);
        drop(store);
        assert!(marker(dir.path()).starts_with("tablestore data folder, store format 1\n"));
    }

    /// A damaged frame on disk is an error on the reads that meet it (the server answers them
    /// 500 `InternalError`), never a panic; the other entities stay readable.
    #[test]
    fn a_damaged_frame_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), Layout::default());
        insert(&*store, "t", 0..3);
        drop(store);
        {
            let db = open_raw(dir.path());
            let entities = db.open_tree("entities").unwrap();
            let (key, frame) = entities.iter().nth(1).unwrap().unwrap();
            let mut damaged = frame.to_vec();
            damaged.truncate(damaged.len() / 2);
            entities.insert(key, damaged).unwrap();
            db.flush().unwrap();
        }
        let store = open(dir.path(), Layout::default());
        let t = block_on(store.get_table(&TableRef::new("a", "t")))
            .unwrap()
            .unwrap();
        assert!(block_on(store.get_entity(t.id, "p", "00000"))
            .unwrap()
            .is_some());
        assert!(matches!(
            block_on(store.get_entity(t.id, "p", "00001")),
            Err(StoreError::Corrupt(_))
        ));
        let results: Vec<bool> = decoded(&store, "t").iter().map(Result::is_ok).collect();
        assert_eq!(results[..2], [true, false]);
    }

    /// The logical size counts values, not their compressed frames.
    #[test]
    fn logical_size_is_the_same_in_every_layout() {
        let footprints: Vec<Footprint> = [Compression::Lz4, Compression::Zstd, Compression::Off]
            .into_iter()
            .map(|c| {
                let dir = tempfile::tempdir().unwrap();
                let store = open(dir.path(), Layout::new(c));
                insert(&*store, "t", 0..40);
                // Replace some rows in one batch and delete others.
                insert_or_replace(&*store, "t", 10..20);
                delete(&*store, "t", 30..32);
                delete(&*store, "t", 32..33);
                block_on(store.footprint()).unwrap()
            })
            .collect();
        assert_eq!(footprints[0].entities, 37);
        for f in &footprints[1..] {
            assert_eq!(
                (f.entities, f.logical_bytes),
                (footprints[0].entities, footprints[0].logical_bytes)
            );
        }
    }

    #[test]
    fn compression_shrinks_the_folder() {
        let sizes: Vec<u64> = [Compression::Off, Compression::Lz4, Compression::Zstd]
            .into_iter()
            .map(|c| {
                let dir = tempfile::tempdir().unwrap();
                let store = open(dir.path(), Layout::new(c));
                insert(&*store, "t", 0..2000);
                drop(store);
                folder_bytes(dir.path())
            })
            .collect();
        assert!(sizes[1] * 2 < sizes[0], "{sizes:?}");
        assert!(sizes[2] * 2 < sizes[0], "{sizes:?}");
    }

    /// After a shutdown that was not clean, the totals recorded by the previous clean one
    /// are stale: the store counts again.
    #[test]
    fn totals_are_counted_again_after_an_unclean_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), Layout::default());
        insert(&*store, "t", 0..30);
        let expected = block_on(store.footprint()).unwrap();
        drop(store);
        // What a crash after more writes looks like to the next start: totals that no longer
        // match the data, and no clean-shutdown token.
        {
            let db = open_raw(dir.path());
            let tables = db.open_tree("tables").unwrap();
            tables
                .insert(TOTALS_KEY, Totals::default().encode())
                .unwrap();
            db.flush().unwrap();
        }
        write_marker(dir.path(), FORMAT_LZ4_VALUES, None).unwrap();
        let store = open(dir.path(), Layout::default());
        let f = block_on(store.footprint()).unwrap();
        assert_eq!((f.entities, f.logical_bytes), (30, expected.logical_bytes));
        assert!(f.logical_bytes > 30 * 400);
        assert!(f.disk_bytes.unwrap() > 0);
    }
}
