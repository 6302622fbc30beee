//! The write-ahead log of the on-disk store: a [`Kv`] backend that wraps another one (sled) and
//! takes sled's apply off the request path. A write ([`Kv::apply`], inside
//! [`super::KvStore`]'s commit, under its partition lock) is appended to the log buffer with a
//! log sequence number (LSN) and put into an ordered map of *pending* entries, which every read
//! consults before the backend; [`Kv::flush`] writes the buffer and `fdatasync`s the log (the
//! store's group commit shares one flush among concurrent writers). A background thread moves
//! pending entries to the backend in large batches, flushes the backend, drops them from the
//! map and deletes the log files they came from.
//!
//! On disk: a folder `wal` beside sled's files holds numbered log files. Each starts with a
//! version header; each record is `length, crc32, payload` (payload: LSN, keyspace, the
//! batch's final key → value/removal entries), so a torn tail is detected and dropped. The
//! background cycle *rotates* the log (writes and syncs the current file, starts the next) at
//! an LSN, applies every pending entry to the backend and flushes it, and only then deletes
//! the files up to that LSN, oldest first: the backend therefore always holds everything
//! written before the oldest remaining file, and replaying the remaining files in order (last
//! value wins, so replaying twice does no harm) restores every write they hold. Start-up
//! replays them into the backend before serving; a clean shutdown applies everything and
//! leaves no file behind.
//!
//! Back-pressure: a write waits ([`Kv::begin_write`]) while the pending entries exceed
//! [`WalOptions::pending_bytes`], so memory stays bounded when writes outrun the backend.
//! When a log write fails, writes are refused until a background cycle has moved everything
//! pending into the backend (which makes it durable without the broken log) and started a
//! fresh file; nothing that was visible is discarded, so the generation never changes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{visit_entries, Footprint, Kv, LayeredBytes, Space, StoreError};

/// First bytes of every log file: what it is and the format version.
const HEADER: &[u8; 8] = b"TSWAL\0\0\x01";
/// Folder of the log files, inside the data folder.
pub const WAL_DIR: &str = "wal";
/// Entries per backend batch when applying or replaying.
const APPLY_CHUNK: usize = 4096;
/// What one pending entry costs besides its key and value bytes (map node, two allocations).
const ENTRY_OVERHEAD: u64 = 80;
/// Largest record accepted on replay (a 4 MiB change set encodes well below this).
const MAX_RECORD: u32 = 1 << 30;

type Batch = Vec<(Vec<u8>, Option<Vec<u8>>)>;
/// A pending entry as read out of the map: key and value (`None`: removed).
type Pending = (Arc<[u8]>, Option<Arc<[u8]>>);
/// A pending entry as a cycle applies it: key, LSN, value.
type Applying = (Arc<[u8]>, u64, Option<Arc<[u8]>>);

/// How the log is sized and paced.
#[derive(Debug, Clone)]
pub struct WalOptions {
    /// Writes wait while acknowledged writes not yet in the backend exceed this many bytes.
    pub pending_bytes: u64,
    /// A background cycle starts as soon as this many bytes are pending ...
    pub apply_bytes: u64,
    /// ... and at least this often while anything is pending.
    pub apply_interval: Duration,
    /// How long a write waits for room before it is refused (503 ServerBusy).
    pub wait_for_room: Duration,
}

impl WalOptions {
    /// `mib` MiB of pending writes at most, a cycle at each quarter of it or every 250 ms.
    pub fn with_buffer_mib(mib: u64) -> WalOptions {
        let pending_bytes = mib.saturating_mul(1024 * 1024).max(1);
        WalOptions {
            pending_bytes,
            apply_bytes: (pending_bytes / 4).max(1),
            apply_interval: Duration::from_millis(250),
            wait_for_room: Duration::from_secs(10),
        }
    }
}

fn space_index(space: Space) -> usize {
    match space {
        Space::Tables => 0,
        Space::Entities => 1,
    }
}

const SPACES: [Space; 2] = [Space::Tables, Space::Entities];

struct Entry {
    lsn: u64,
    value: Option<Arc<[u8]>>,
}

fn entry_cost(key: &[u8], value: Option<&[u8]>) -> u64 {
    (key.len() + value.map_or(0, <[u8]>::len)) as u64 + ENTRY_OVERHEAD
}

/// What the writers, readers and the background cycle share under one lock.
#[derive(Default)]
struct Mem {
    /// Entries not yet in the backend, per keyspace: the newest value (or removal) of a key.
    pending: [BTreeMap<Arc<[u8]>, Entry>; 2],
    /// Bytes of `pending` ([`entry_cost`]).
    bytes: u64,
    /// Encoded records not yet written to the log file.
    buf: Vec<u8>,
    next_lsn: u64,
    /// Everything up to this LSN is in the backend (flushed).
    applied_lsn: u64,
    /// The file whose write failed, and why (writes are refused until a cycle that started
    /// after the failure has moved everything into the backend).
    failed: Option<(u64, String)>,
    /// Someone waits for a cycle (back-pressure, footprint).
    urgent: bool,
    stop: bool,
}

struct LogFile {
    file: File,
    seq: u64,
    /// Bytes written and synced.
    len: u64,
}

impl LogFile {
    /// Appends `buf` and syncs. On failure, cuts the file back to what was synced before (so
    /// a broken write leaves no partial record behind a later file) and says why.
    fn append(&mut self, buf: &[u8]) -> Result<(), String> {
        match self.file.write_all(buf).and_then(|_| self.file.sync_data()) {
            Ok(()) => {
                self.len += buf.len() as u64;
                Ok(())
            }
            Err(e) => {
                let _ = self
                    .file
                    .set_len(self.len)
                    .and_then(|_| self.file.sync_data());
                let why = format!("writing the write-ahead log failed: {e}");
                tracing::error!("{why}");
                Err(why)
            }
        }
    }
}

struct Shared<B: Kv> {
    inner: B,
    dir: PathBuf,
    options: WalOptions,
    mem: Mutex<Mem>,
    /// The background cycle has work (or should stop).
    work: Condvar,
    /// A cycle ended: room for writers, progress for footprint.
    progress: Condvar,
    /// The file being appended to; held while writing to it.
    log: Mutex<LogFile>,
}

/// The backend `inner` behind a write-ahead log.
pub struct WalKv<B: Kv> {
    shared: Arc<Shared<B>>,
    applier: Option<JoinHandle<()>>,
    /// Tests: drop like a crash (no final cycle, unflushed records lost; the log stays).
    crash_on_drop: std::sync::atomic::AtomicBool,
}

fn io_error(what: &str, e: std::io::Error) -> StoreError {
    StoreError::Io(format!("{what}: {e}"))
}

fn file_name(seq: u64) -> String {
    format!("{seq:020}.log")
}

/// The log files in `dir`, oldest first.
fn log_files(dir: &Path) -> Result<Vec<(u64, PathBuf)>, StoreError> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io_error("reading the log folder", e))? {
        let entry = entry.map_err(|e| io_error("reading the log folder", e))?;
        let name = entry.file_name();
        let Some(seq) = name
            .to_str()
            .and_then(|n| n.strip_suffix(".log"))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        files.push((seq, entry.path()));
    }
    files.sort();
    Ok(files)
}

fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error("syncing the log folder", e))
}

/// Creates log file `seq` with its header, durably (file and folder entry).
fn create_log(dir: &Path, seq: u64) -> Result<LogFile, StoreError> {
    let path = dir.join(file_name(seq));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .map_err(|e| io_error("creating a log file", e))?;
    file.write_all(HEADER)
        .and_then(|_| file.sync_all())
        .map_err(|e| io_error("writing a log file", e))?;
    sync_dir(dir)?;
    Ok(LogFile {
        file,
        seq,
        len: HEADER.len() as u64,
    })
}

/// Deletes the log files up to `seq`, oldest first, each deletion durable before the next, so
/// what remains after a crash is always the newest files.
fn delete_logs_up_to(dir: &Path, seq: u64) -> Result<(), StoreError> {
    for (s, path) in log_files(dir)? {
        if s > seq {
            break;
        }
        std::fs::remove_file(&path).map_err(|e| io_error("deleting a log file", e))?;
        sync_dir(dir)?;
    }
    Ok(())
}

/// Appends one record (LSN, keyspace, entries) to `out`.
fn encode_record(out: &mut Vec<u8>, lsn: u64, space: Space, batch: &Batch) {
    let start = out.len();
    out.extend_from_slice(&[0; 8]); // length and checksum, filled in below
    out.extend_from_slice(&lsn.to_le_bytes());
    out.push(space_index(space) as u8);
    out.extend_from_slice(&(batch.len() as u32).to_le_bytes());
    for (k, v) in batch {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
        match v {
            Some(v) => {
                out.push(1);
                out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                out.extend_from_slice(v);
            }
            None => out.push(0),
        }
    }
    let payload = &out[start + 8..];
    let len = payload.len() as u32;
    let crc = crc32fast::hash(payload);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// A decoded record.
#[derive(Debug, PartialEq)]
struct Record {
    lsn: u64,
    space: Space,
    batch: Batch,
}

/// Decodes a payload whose checksum matched; `None` if it is malformed anyway.
fn decode_payload(p: &[u8]) -> Option<Record> {
    fn take<'a>(p: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        if p.len() < n {
            return None;
        }
        let (head, rest) = p.split_at(n);
        *p = rest;
        Some(head)
    }
    fn u32_of(p: &mut &[u8]) -> Option<usize> {
        Some(u32::from_le_bytes(take(p, 4)?.try_into().ok()?) as usize)
    }
    let mut p = p;
    let lsn = u64::from_le_bytes(take(&mut p, 8)?.try_into().ok()?);
    let space = *SPACES.get(take(&mut p, 1)?[0] as usize)?;
    let count = u32_of(&mut p)?;
    let mut batch = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        let klen = u32_of(&mut p)?;
        let key = take(&mut p, klen)?.to_vec();
        let value = match take(&mut p, 1)?[0] {
            0 => None,
            1 => {
                let vlen = u32_of(&mut p)?;
                Some(take(&mut p, vlen)?.to_vec())
            }
            _ => return None,
        };
        batch.push((key, value));
    }
    p.is_empty().then_some(Record { lsn, space, batch })
}

/// Reading one record from a log file.
enum Read_ {
    Record(Record),
    /// Clean end of the file.
    End,
    /// A record that is cut short or fails its checksum, at this offset.
    Bad,
}

fn read_record(r: &mut impl Read) -> Result<Read_, StoreError> {
    let mut head = [0u8; 8];
    let n = read_full(r, &mut head)?;
    if n == 0 {
        return Ok(Read_::End);
    }
    if n < 8 {
        return Ok(Read_::Bad);
    }
    let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
    let crc = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
    if len > MAX_RECORD {
        return Ok(Read_::Bad);
    }
    let mut payload = vec![0u8; len as usize];
    if read_full(r, &mut payload)? < payload.len() || crc32fast::hash(&payload) != crc {
        return Ok(Read_::Bad);
    }
    Ok(decode_payload(&payload).map_or(Read_::Bad, Read_::Record))
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<usize, StoreError> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error("reading the write-ahead log", e)),
        }
    }
    Ok(n)
}

fn corrupt(path: &Path, what: &str) -> StoreError {
    StoreError::Corrupt(format!(
        "the write-ahead log {} is damaged ({what}) before its end, so acknowledged writes \
         after that point cannot be recovered; refusing to start (restore the data folder \
         from a backup, or move the wal folder away to start without those writes)",
        path.display()
    ))
}

/// Replays the log files of `dir` into `inner` (in order, last value wins) and flushes it.
/// A bad record ends the log if it is in the last file and nothing valid follows it (a torn
/// tail: writes whose flush never returned); anywhere else it is an error. Returns the files
/// replayed and the highest LSN seen.
fn replay<B: Kv>(inner: &B, dir: &Path) -> Result<(Vec<u64>, u64), StoreError> {
    let files = log_files(dir)?;
    let started = Instant::now();
    let mut last_lsn = 0u64;
    let mut records = 0u64;
    let mut chunks: [Batch; 2] = [Vec::new(), Vec::new()];
    let count = files.len();
    for (i, (_, path)) in files.iter().enumerate() {
        let last_file = i + 1 == count;
        let file = File::open(path).map_err(|e| io_error("opening the write-ahead log", e))?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut r = std::io::BufReader::with_capacity(1 << 20, file);
        let mut header = [0u8; 8];
        let n = read_full(&mut r, &mut header)?;
        if n < HEADER.len() && last_file && header[..n] == HEADER[..n] {
            continue; // created, header not yet on disk: empty
        }
        if header[..7] != HEADER[..7] {
            return Err(corrupt(path, "not a tablestore write-ahead log"));
        }
        if header[7] != HEADER[7] {
            return Err(StoreError::Corrupt(format!(
                "the write-ahead log {} has format version {}, which this tablestore does not \
                 read; start the version that wrote it",
                path.display(),
                header[7]
            )));
        }
        loop {
            match read_record(&mut r)? {
                Read_::End => break,
                Read_::Record(rec) => {
                    if rec.lsn <= last_lsn {
                        return Err(corrupt(path, "records out of order"));
                    }
                    last_lsn = rec.lsn;
                    records += 1;
                    let chunk = &mut chunks[space_index(rec.space)];
                    chunk.extend(rec.batch);
                    if chunk.len() >= APPLY_CHUNK {
                        inner.apply(rec.space, std::mem::take(chunk))?;
                    }
                }
                Read_::Bad => {
                    // A valid record after the bad one means the damage is not a torn tail.
                    let follows = matches!(read_record(&mut r), Ok(Read_::Record(_)));
                    if !last_file || follows {
                        return Err(corrupt(path, "a record fails its checksum"));
                    }
                    tracing::warn!(
                        file = %path.display(),
                        size,
                        "dropped the torn end of the write-ahead log (writes whose flush never returned)"
                    );
                    break;
                }
            }
        }
    }
    for space in SPACES {
        let chunk = std::mem::take(&mut chunks[space_index(space)]);
        if !chunk.is_empty() {
            inner.apply(space, chunk)?;
        }
    }
    if records > 0 {
        inner.flush()?;
        tracing::info!(
            records,
            files = count,
            seconds = started.elapsed().as_secs_f64(),
            "replayed the write-ahead log"
        );
    }
    Ok((files.into_iter().map(|(s, _)| s).collect(), last_lsn))
}

impl<B: Kv> Shared<B> {
    fn mem(&self) -> MutexGuard<'_, Mem> {
        self.mem.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes the buffered records and syncs the log.
    fn flush_log(&self) -> Result<(), StoreError> {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let buf = {
            let mut mem = self.mem();
            if let Some((_, why)) = &mem.failed {
                return Err(StoreError::Io(why.clone()));
            }
            std::mem::take(&mut mem.buf)
        };
        if buf.is_empty() {
            // Every earlier record was written and synced by the flush (or rotation) that
            // took it, under this lock.
            return Ok(());
        }
        if let Err(why) = log.append(&buf) {
            self.mem().failed = Some((log.seq, why.clone()));
            self.work.notify_one();
            return Err(StoreError::Io(why));
        }
        Ok(())
    }

    /// One background cycle: rotate the log, apply every pending entry to the backend, flush
    /// it, drop the entries and the old files. After a failed log write it is also the
    /// recovery (the broken file's contents are then in the backend).
    fn cycle(&self) -> Result<(), StoreError> {
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let (upto, buf, snapshot, broken) = {
            let mut mem = self.mem();
            if mem.pending.iter().all(BTreeMap::is_empty) && mem.buf.is_empty() {
                mem.applied_lsn = mem.next_lsn.saturating_sub(1);
                self.progress.notify_all();
                return Ok(());
            }
            let snapshot: Vec<Vec<Applying>> = mem
                .pending
                .iter()
                .map(|m| {
                    m.iter()
                        .map(|(k, e)| (Arc::clone(k), e.lsn, e.value.clone()))
                        .collect()
                })
                .collect();
            (
                mem.next_lsn.saturating_sub(1),
                std::mem::take(&mut mem.buf),
                snapshot,
                mem.failed.as_ref().is_some_and(|(seq, _)| *seq == log.seq),
            )
        };
        // The current file gets every record up to `upto`; later ones go to the next file.
        if !broken {
            if let Err(why) = log.append(&buf) {
                self.mem().failed = Some((log.seq, why));
            }
        }
        let old_seq = log.seq;
        *log = create_log(&self.dir, old_seq + 1)?;
        drop(log);

        self.inner.begin_write()?;
        for (space, entries) in SPACES.into_iter().zip(&snapshot) {
            for chunk in entries.chunks(APPLY_CHUNK) {
                let batch = chunk
                    .iter()
                    .map(|(k, _, v)| (k.to_vec(), v.as_ref().map(|v| v.to_vec())))
                    .collect();
                self.inner.apply(space, batch)?;
            }
        }
        self.inner.flush()?;
        // The backend holds everything up to `upto`: the files up to it may go.
        let deleted = delete_logs_up_to(&self.dir, old_seq);
        {
            let mut mem = self.mem();
            for (space, entries) in SPACES.into_iter().zip(&snapshot) {
                let map = &mut mem.pending[space_index(space)];
                let mut freed = 0;
                for (k, lsn, v) in entries {
                    if map.get(k).is_some_and(|e| e.lsn == *lsn) {
                        map.remove(k);
                        freed += entry_cost(k, v.as_deref());
                    }
                }
                mem.bytes -= freed;
            }
            mem.applied_lsn = upto;
            if mem.failed.as_ref().is_some_and(|(seq, _)| *seq <= old_seq) {
                // Everything the broken file held is in the backend now; new records go to
                // the fresh file.
                mem.failed = None;
                tracing::warn!("the write-ahead log was started afresh; writing again");
            }
        }
        self.progress.notify_all();
        deleted
    }

    fn run_applier(&self) {
        let mut last_error: Option<Instant> = None;
        loop {
            {
                let mut mem = self.mem();
                let deadline = Instant::now() + self.options.apply_interval;
                loop {
                    if mem.stop {
                        return;
                    }
                    if mem.urgent || mem.failed.is_some() || mem.bytes >= self.options.apply_bytes {
                        break;
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    mem = self
                        .work
                        .wait_timeout(mem, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                mem.urgent = false;
            }
            if let Err(e) = self.cycle() {
                if last_error.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                    tracing::warn!(error = ?e, "applying the write-ahead log to the store failed; retrying");
                    last_error = Some(Instant::now());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// Waits (up to `timeout`) until everything written so far is in the backend.
    fn drain(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut mem = self.mem();
        let target = mem.next_lsn.saturating_sub(1);
        while mem.applied_lsn < target && !mem.pending.iter().all(BTreeMap::is_empty) {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            mem.urgent = true;
            self.work.notify_one();
            mem = self
                .progress
                .wait_timeout(mem, (deadline - now).min(Duration::from_millis(50)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

/// Replays what the log in `dir/wal` holds into `inner` and deletes its files: for opening a
/// data folder without the log (`--write-buffer 0`, the data commands), after a crash of a
/// server that had it on. `dir` is the data folder (`inner` must hold its lock).
pub fn recover_log<B: Kv>(inner: &B, dir: &Path) -> Result<(), StoreError> {
    recover_into(inner, dir).map(drop)
}

/// [`recover_log`]; returns the log folder, the last file number and the last LSN seen.
fn recover_into<B: Kv>(inner: &B, dir: &Path) -> Result<(PathBuf, u64, u64), StoreError> {
    let dir = dir.join(WAL_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| io_error("creating the log folder", e))?;
    let (replayed, last_lsn) = replay(inner, &dir)?;
    let last_seq = replayed.last().copied().unwrap_or(0);
    if !replayed.is_empty() {
        delete_logs_up_to(&dir, last_seq)?;
    }
    Ok((dir, last_seq, last_lsn))
}

impl<B: Kv> WalKv<B> {
    /// Replays the log in `dir/wal` into `inner`, then starts a fresh log and the background
    /// cycle. `dir` is the data folder (`inner` must hold its lock).
    pub fn open(inner: B, dir: &Path, options: WalOptions) -> Result<WalKv<B>, StoreError> {
        let (dir, last_seq, last_lsn) = recover_into(&inner, dir)?;
        let log = create_log(&dir, last_seq + 1)?;
        let shared = Arc::new(Shared {
            inner,
            dir,
            options,
            mem: Mutex::new(Mem {
                next_lsn: last_lsn + 1,
                applied_lsn: last_lsn,
                ..Mem::default()
            }),
            work: Condvar::new(),
            progress: Condvar::new(),
            log: Mutex::new(log),
        });
        let worker = Arc::clone(&shared);
        let applier = std::thread::Builder::new()
            .name("wal-apply".into())
            .spawn(move || worker.run_applier())
            .map_err(|e| io_error("starting the write-ahead log's thread", e))?;
        Ok(WalKv {
            shared,
            applier: Some(applier),
            crash_on_drop: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Bytes of acknowledged writes not yet in the backend.
    pub fn pending_bytes(&self) -> u64 {
        self.shared.mem().bytes
    }

    /// Waits (up to `timeout`) until everything written so far is in the backend.
    pub fn drain(&self, timeout: Duration) -> bool {
        self.shared.drain(timeout)
    }

    /// Tests: when dropped, stop like a crash would (the log is left to replay).
    pub fn crash_on_drop(&self) {
        self.crash_on_drop
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl<B: Kv> Drop for WalKv<B> {
    /// Stops the background cycle and moves everything into the backend, leaving no log.
    fn drop(&mut self) {
        self.shared.mem().stop = true;
        self.shared.work.notify_all();
        if let Some(applier) = self.applier.take() {
            let _ = applier.join();
        }
        if self
            .crash_on_drop
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        if let Err(e) = self.shared.cycle() {
            tracing::warn!(error = ?e, "applying the write-ahead log at shutdown failed; it is replayed at the next start");
        }
    }
}

/// A range: the pending entries in it (taken when the range was asked for) merged in key
/// order with the backend's, pending ones winning and removals hiding the backend's rows.
/// Taking the pending entries first means an entry missing from them was already in the
/// backend when the backend's range reached it.
pub struct WalIter<'a, B: Kv + 'a> {
    log: std::iter::Peekable<std::vec::IntoIter<Pending>>,
    inner: std::iter::Peekable<B::Iter<'a>>,
}

impl<'a, B: Kv + 'a> Iterator for WalIter<'a, B> {
    type Item = Result<(LayeredBytes<B::Bytes>, LayeredBytes<B::Bytes>), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let order = match (self.log.peek(), self.inner.peek()) {
                (None, None) => return None,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) | (_, Some(Err(_))) => std::cmp::Ordering::Greater,
                (Some((lk, _)), Some(Ok((ik, _)))) => (**lk).cmp(ik.as_ref()),
            };
            if order == std::cmp::Ordering::Greater {
                let item = self.inner.next()?;
                return Some(
                    item.map(|(k, v)| (LayeredBytes::Backend(k), LayeredBytes::Backend(v))),
                );
            }
            if order == std::cmp::Ordering::Equal {
                self.inner.next(); // replaced or removed by the pending entry
            }
            let (k, v) = self.log.next()?;
            if let Some(v) = v {
                return Some(Ok((LayeredBytes::Held(k), LayeredBytes::Held(v))));
            }
        }
    }
}

fn in_range(key: &[u8], start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    let after_start = match start {
        Bound::Included(s) => key >= s.as_slice(),
        Bound::Excluded(s) => key > s.as_slice(),
        Bound::Unbounded => true,
    };
    let before_end = match end {
        Bound::Included(e) => key <= e.as_slice(),
        Bound::Excluded(e) => key < e.as_slice(),
        Bound::Unbounded => true,
    };
    after_start && before_end
}

impl<B: Kv> WalKv<B> {
    /// The pending entries of a range, in key order.
    fn pending_range(
        &self,
        space: Space,
        start: &Bound<Vec<u8>>,
        end: &Bound<Vec<u8>>,
    ) -> Vec<Pending> {
        if !super::memory::range_is_valid(start, end) {
            return Vec::new();
        }
        let mem = self.shared.mem();
        let map = &mem.pending[space_index(space)];
        let lower = match start {
            Bound::Included(s) => Bound::Included(s.as_slice()),
            Bound::Excluded(s) => Bound::Excluded(s.as_slice()),
            Bound::Unbounded => Bound::Unbounded,
        };
        map.range::<[u8], _>((lower, Bound::Unbounded))
            .take_while(|(k, _)| in_range(k, start, end))
            .map(|(k, e)| (Arc::clone(k), e.value.clone()))
            .collect()
    }
}

impl<B: Kv> Kv for WalKv<B> {
    type Bytes = LayeredBytes<B::Bytes>;
    type Iter<'a> = WalIter<'a, B>;

    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Self::Bytes>, StoreError> {
        if let Some(e) = self.shared.mem().pending[space_index(space)].get(key) {
            return Ok(e.value.clone().map(LayeredBytes::Held));
        }
        Ok(self
            .shared
            .inner
            .get(space, key)?
            .map(LayeredBytes::Backend))
    }

    fn range(&self, space: Space, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> Self::Iter<'_> {
        let log = self.pending_range(space, &start, &end);
        WalIter {
            log: log.into_iter().peekable(),
            inner: self.shared.inner.range(space, start, end).peekable(),
        }
    }

    fn visit(
        &self,
        space: Space,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), StoreError> {
        let log = self.pending_range(space, &start, &end);
        if log.is_empty() {
            return self.shared.inner.visit(space, start, end, visit);
        }
        let merged = WalIter::<B> {
            log: log.into_iter().peekable(),
            inner: self.shared.inner.range(space, start, end).peekable(),
        };
        visit_entries(merged, visit)
    }

    fn apply(&self, space: Space, batch: Batch) -> Result<(), StoreError> {
        let mut mem = self.shared.mem();
        let lsn = mem.next_lsn;
        mem.next_lsn += 1;
        encode_record(&mut mem.buf, lsn, space, &batch);
        let mut bytes = mem.bytes;
        let map = &mut mem.pending[space_index(space)];
        for (k, v) in batch {
            bytes += entry_cost(&k, v.as_deref());
            let key_len = k.len();
            let entry = Entry {
                lsn,
                value: v.map(Arc::from),
            };
            if let Some(old) = map.insert(Arc::from(k), entry) {
                bytes -= entry_cost(&[], old.value.as_deref()) + key_len as u64;
            }
        }
        mem.bytes = bytes;
        if mem.bytes >= self.shared.options.apply_bytes {
            self.shared.work.notify_one();
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.shared.flush_log()
    }

    fn is_persistent(&self) -> bool {
        true
    }

    fn begin_write(&self) -> Result<u64, StoreError> {
        self.shared.inner.begin_write()?;
        let options = &self.shared.options;
        let deadline = Instant::now() + options.wait_for_room;
        let mut mem = self.shared.mem();
        loop {
            if let Some((_, why)) = &mem.failed {
                return Err(StoreError::Io(why.clone()));
            }
            if mem.bytes <= options.pending_bytes {
                return Ok(0);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(StoreError::Io(
                    "writes arrive faster than the store can apply them; retry shortly".into(),
                ));
            }
            mem.urgent = true;
            self.shared.work.notify_one();
            mem = self
                .shared
                .progress
                .wait_timeout(mem, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Never changes: a failed log write discards nothing that was visible (see the module
    /// comment), and a reopen of the backend loses nothing that is still pending here.
    fn generation(&self) -> u64 {
        0
    }

    /// The backend's count, once everything written so far has reached it.
    fn footprint(&self) -> Option<Footprint> {
        self.shared.drain(Duration::from_secs(5));
        self.shared.inner.footprint()
    }

    fn forget_table(&self, table_id: u64) {
        self.shared.inner.forget_table(table_id)
    }
}

/// Opens the store over sled in `dir` behind the log with `options`, with the RAM tier in
/// front when `tier` is given, waiting briefly while a store closed just before lets go of
/// the folder.
#[cfg(test)]
pub(crate) fn open_sled_for_tests(
    dir: &Path,
    options: WalOptions,
    tier: Option<super::tiered::TierOptions>,
) -> Arc<dyn super::Store> {
    use super::{Durability, KvStore};
    let kv = super::sled_kv::open_kv_for_tests(dir, &Default::default());
    let wal = WalKv::open(kv, dir, options).expect("open the log");
    match tier {
        Some(t) => KvStore::open(super::tiered::TieredKv::new(wal, t), Durability::Durable)
            .expect("open the store"),
        None => KvStore::open(wal, Durability::Durable).expect("open the store"),
    }
}

/// Bounds small enough that the conformance checks' writes wait for room and background
/// cycles run in the middle of them.
#[cfg(test)]
fn tiny() -> WalOptions {
    WalOptions {
        pending_bytes: 2000,
        apply_bytes: 600,
        apply_interval: Duration::from_millis(3),
        wait_for_room: Duration::from_secs(20),
    }
}

/// The log alone over sled, with tiny bounds.
#[cfg(test)]
mod tight {
    crate::store_conformance!(
        durable: true,
        open: |dir: &std::path::Path| -> std::sync::Arc<dyn crate::store::Store> {
            super::super::open_sled_for_tests(dir, super::super::tiny(), None)
        },
    );
}

/// The log with cycles only at the end (everything read from the pending map).
#[cfg(test)]
mod pending {
    crate::store_conformance!(
        durable: true,
        open: |dir: &std::path::Path| -> std::sync::Arc<dyn crate::store::Store> {
            super::super::open_sled_for_tests(dir, super::super::WalOptions {
                apply_interval: std::time::Duration::from_secs(3600),
                ..super::super::WalOptions::with_buffer_mib(64)
            }, None)
        },
    );
}

/// The RAM tier (a budget that forces eviction) over the log with tiny bounds, as the server
/// stacks them.
#[cfg(test)]
mod tiered {
    crate::store_conformance!(
        durable: true,
        open: |dir: &std::path::Path| -> std::sync::Arc<dyn crate::store::Store> {
            super::super::open_sled_for_tests(dir, super::super::tiny(), Some(
                crate::store::tiered::TierOptions {
                    budget_bytes: 2000,
                    reload_pause: std::time::Duration::ZERO,
                    background: false,
                }))
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::memory::MemoryKv;

    fn quiet() -> WalOptions {
        WalOptions {
            apply_interval: Duration::from_secs(3600),
            ..WalOptions::with_buffer_mib(64)
        }
    }

    fn put(kv: &impl Kv, key: &str, value: &str) {
        kv.apply(
            Space::Entities,
            vec![(key.as_bytes().to_vec(), Some(value.as_bytes().to_vec()))],
        )
        .unwrap();
    }

    fn all(kv: &impl Kv, space: Space) -> Vec<(String, String)> {
        kv.range(space, Bound::Unbounded, Bound::Unbounded)
            .map(|r| {
                let (k, v) = r.unwrap();
                (
                    String::from_utf8_lossy(k.as_ref()).into_owned(),
                    String::from_utf8_lossy(v.as_ref()).into_owned(),
                )
            })
            .collect()
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Writes a log in `dir` (flushed, never applied) and leaves it as a crash would.
    fn write_log(dir: &Path, writes: impl FnOnce(&WalKv<MemoryKv>)) {
        let wal = WalKv::open(MemoryKv::new(), dir, quiet()).unwrap();
        writes(&wal);
        wal.flush().unwrap();
        wal.crash_on_drop();
    }

    fn the_log(dir: &Path) -> PathBuf {
        let files = log_files(&dir.join(WAL_DIR)).unwrap();
        let mut with_records: Vec<PathBuf> = files
            .into_iter()
            .filter(|(_, p)| std::fs::metadata(p).unwrap().len() > HEADER.len() as u64)
            .map(|(_, p)| p)
            .collect();
        assert_eq!(with_records.len(), 1, "one log file with records");
        with_records.pop().unwrap()
    }

    #[test]
    fn reads_see_pending_writes_merged_in_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let inner = MemoryKv::new();
        for k in ["a", "c", "e"] {
            inner
                .apply(Space::Entities, vec![(k.into(), Some(b"disk".to_vec()))])
                .unwrap();
        }
        let wal = WalKv::open(inner, dir.path(), quiet()).unwrap();
        put(&wal, "b", "log");
        put(&wal, "c", "log");
        wal.apply(Space::Entities, vec![(b"e".to_vec(), None)])
            .unwrap();
        put(&wal, "f", "log");
        assert_eq!(
            all(&wal, Space::Entities),
            pairs(&[("a", "disk"), ("b", "log"), ("c", "log"), ("f", "log")])
        );
        assert!(wal.get(Space::Entities, b"e").unwrap().is_none());
        assert_eq!(
            wal.get(Space::Entities, b"c").unwrap().unwrap().as_ref(),
            b"log"
        );
        let mut seen = Vec::new();
        wal.visit(
            Space::Entities,
            Bound::Excluded(b"a".to_vec()),
            Bound::Included(b"c".to_vec()),
            &mut |k, _| {
                seen.push(k.to_vec());
                true
            },
        )
        .unwrap();
        assert_eq!(seen, vec![b"b".to_vec(), b"c".to_vec()]);
        assert!(wal.pending_bytes() > 0);
        // A cycle moves everything to the backend and empties the map.
        assert!(wal.drain(Duration::from_secs(10)));
        assert_eq!(wal.pending_bytes(), 0);
        assert_eq!(
            all(&wal.shared.inner, Space::Entities),
            pairs(&[("a", "disk"), ("b", "log"), ("c", "log"), ("f", "log")])
        );
    }

    #[test]
    fn a_cycle_truncates_the_log_and_a_clean_close_leaves_none() {
        let dir = tempfile::tempdir().unwrap();
        let wal = WalKv::open(MemoryKv::new(), dir.path(), quiet()).unwrap();
        put(&wal, "k", "1");
        wal.flush().unwrap();
        let before = log_files(&dir.path().join(WAL_DIR)).unwrap();
        assert_eq!(before.len(), 1);
        assert!(std::fs::metadata(&before[0].1).unwrap().len() > HEADER.len() as u64);
        assert!(wal.drain(Duration::from_secs(10)));
        let after = log_files(&dir.path().join(WAL_DIR)).unwrap();
        assert_eq!(after.len(), 1, "{after:?}");
        assert!(after[0].0 > before[0].0, "the old file is gone");
        assert_eq!(
            std::fs::metadata(&after[0].1).unwrap().len(),
            HEADER.len() as u64
        );
        drop(wal);
        // A clean close applies everything and leaves only an empty file at most.
        let left = log_files(&dir.path().join(WAL_DIR)).unwrap();
        assert!(left
            .iter()
            .all(|(_, p)| std::fs::metadata(p).unwrap().len() == HEADER.len() as u64));
    }

    #[test]
    fn replay_restores_the_log_and_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        write_log(dir.path(), |wal| {
            put(wal, "a", "1");
            put(wal, "b", "1");
            put(wal, "a", "2");
            wal.apply(Space::Entities, vec![(b"b".to_vec(), None)])
                .unwrap();
            wal.apply(Space::Tables, vec![(b"t".to_vec(), Some(b"x".to_vec()))])
                .unwrap();
        });
        let wal_dir = dir.path().join(WAL_DIR);
        // Replaying twice (a crash during the first replay) gives the same state.
        let inner = MemoryKv::new();
        replay(&inner, &wal_dir).unwrap();
        replay(&inner, &wal_dir).unwrap();
        assert_eq!(all(&inner, Space::Entities), pairs(&[("a", "2")]));
        assert_eq!(all(&inner, Space::Tables), pairs(&[("t", "x")]));
        // Recovery deletes the files; a second recovery finds nothing.
        recover_log(&inner, dir.path()).unwrap();
        assert!(log_files(&wal_dir).unwrap().is_empty());
        recover_log(&inner, dir.path()).unwrap();
        assert_eq!(all(&inner, Space::Entities), pairs(&[("a", "2")]));
    }

    #[test]
    fn a_torn_tail_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        write_log(dir.path(), |wal| {
            put(wal, "a", "1");
            put(wal, "b", "2");
        });
        let path = the_log(dir.path());
        let len = std::fs::metadata(&path).unwrap().len();
        // Cut the last record short: the first one stays.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 3).unwrap();
        let inner = MemoryKv::new();
        replay(&inner, &dir.path().join(WAL_DIR)).unwrap();
        assert_eq!(all(&inner, Space::Entities), pairs(&[("a", "1")]));
        // Zeros after the records (a file extended but not written) are a torn tail too.
        f.set_len(len + 4096).unwrap();
        let inner = MemoryKv::new();
        replay(&inner, &dir.path().join(WAL_DIR)).unwrap();
        assert_eq!(all(&inner, Space::Entities), pairs(&[("a", "1")]));
    }

    #[test]
    fn a_checksum_mismatch_at_the_end_is_a_torn_tail_and_in_the_middle_an_error() {
        let dir = tempfile::tempdir().unwrap();
        write_log(dir.path(), |wal| {
            put(wal, "a", "first");
            put(wal, "b", "second");
        });
        let path = the_log(dir.path());
        let bytes = std::fs::read(&path).unwrap();
        let at = |needle: &[u8]| {
            bytes
                .windows(needle.len())
                .position(|w| w == needle)
                .unwrap()
        };
        // Damage the last record: dropped.
        let mut last = bytes.clone();
        last[at(b"second")] ^= 1;
        std::fs::write(&path, &last).unwrap();
        let inner = MemoryKv::new();
        replay(&inner, &dir.path().join(WAL_DIR)).unwrap();
        assert_eq!(all(&inner, Space::Entities), pairs(&[("a", "first")]));
        // Damage the first record, followed by a valid one: a start-up error, nothing lost
        // silently.
        let mut first = bytes.clone();
        first[at(b"first")] ^= 1;
        std::fs::write(&path, &first).unwrap();
        let e = replay(&MemoryKv::new(), &dir.path().join(WAL_DIR)).unwrap_err();
        let StoreError::Corrupt(message) = e else {
            panic!("{e:?}")
        };
        assert!(message.contains("is damaged"), "{message}");
        // An unknown version is refused with its number.
        let mut version = bytes.clone();
        version[7] = 9;
        std::fs::write(&path, &version).unwrap();
        let e = replay(&MemoryKv::new(), &dir.path().join(WAL_DIR)).unwrap_err();
        assert!(format!("{e:?}").contains("format version 9"), "{e:?}");
    }

    #[test]
    fn damage_in_an_older_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        write_log(dir.path(), |wal| put(wal, "a", "first"));
        let path = the_log(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        // A newer file after it (opening replays and deletes the older one: put it back).
        write_log(dir.path(), |wal| put(wal, "b", "second"));
        let n = bytes.len();
        bytes[n - 1] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            replay(&MemoryKv::new(), &dir.path().join(WAL_DIR)),
            Err(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn writes_wait_for_room_and_are_refused_after_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let wal = WalKv::open(
            MemoryKv::new(),
            dir.path(),
            WalOptions {
                pending_bytes: 100,
                apply_bytes: u64::MAX,
                apply_interval: Duration::from_secs(3600),
                wait_for_room: Duration::from_millis(50),
            },
        )
        .unwrap();
        wal.begin_write().unwrap();
        put(&wal, "k", &"v".repeat(200));
        // Over the bound: the write asks for a cycle and waits for it; the cycle makes room.
        wal.begin_write().unwrap();
        assert_eq!(wal.pending_bytes(), 0);
        // The byte count follows replacements exactly.
        put(&wal, "k", "short");
        put(&wal, "k", "shorter");
        assert_eq!(wal.pending_bytes(), entry_cost(b"k", Some(b"shorter")));
    }

    #[test]
    fn records_round_trip() {
        let batch: Batch = vec![
            (b"k1".to_vec(), Some(b"v".to_vec())),
            (Vec::new(), None),
            (b"k2".to_vec(), Some(Vec::new())),
        ];
        let mut out = Vec::new();
        encode_record(&mut out, 42, Space::Tables, &batch);
        let mut r = out.as_slice();
        let Read_::Record(rec) = read_record(&mut r).unwrap() else {
            panic!("a record")
        };
        assert_eq!(
            rec,
            Record {
                lsn: 42,
                space: Space::Tables,
                batch
            }
        );
        assert!(matches!(read_record(&mut r).unwrap(), Read_::End));
    }
}

/// The store behind the log against the memory store on random operation sequences, with
/// background cycles, waits for them, and restarts both clean and as after a crash (the log
/// replayed) in between: same answers, same data.
#[cfg(test)]
mod model {
    use proptest::prelude::*;

    use super::*;
    use crate::store::conformance::model_check::{self, After};
    use crate::store::sled_kv::{open_kv_for_tests, SledKv};
    use crate::store::{Durability, KvStore};

    #[derive(Debug, Clone)]
    enum LogStep {
        /// Wait until the background cycles have applied everything.
        Drain,
        /// Drop the store as a kill would (nothing more applied), then reopen: the log replays.
        Crash,
    }

    const PENDING_BYTES: u64 = 1500;

    fn open(dir: &Path) -> Arc<KvStore<WalKv<SledKv>>> {
        let options = WalOptions {
            pending_bytes: PENDING_BYTES,
            apply_bytes: 700,
            apply_interval: Duration::from_millis(7),
            wait_for_room: Duration::from_secs(20),
        };
        KvStore::open(
            WalKv::open(open_kv_for_tests(dir, &Default::default()), dir, options).expect("log"),
            Durability::Durable,
        )
        .expect("store")
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn logged_store_answers_like_the_memory_store(
            steps in model_check::steps(prop_oneof![Just(LogStep::Drain), Just(LogStep::Crash)], 2)
        ) {
            model_check::run(
                steps,
                open,
                |kv, _, step| {
                    match step {
                        LogStep::Drain => prop_assert!(kv.drain(Duration::from_secs(10))),
                        LogStep::Crash => {
                            kv.crash_on_drop();
                            return Ok(After::Reopen);
                        }
                    }
                    Ok(After::Continue)
                },
                |kv| {
                    prop_assert!(kv.pending_bytes() <= PENDING_BYTES + 4096);
                    Ok(())
                },
            )?;
        }
    }
}
