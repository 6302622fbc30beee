//! The RAM tier of the on-disk store: a [`Kv`] backend that wraps another one (sled) and keeps
//! whole tables that fit a memory budget as an in-memory ordered copy, so point reads and scans
//! of those tables never walk the backend's pages. The backend stays the store of record.
//!
//! Exactly in step: a write goes to the backend first and, once the backend has applied it, to
//! the copy, before [`Kv::apply`] returns (so inside [`crate::KvStore`]'s commit, under its
//! partition lock). A read is served from the copy only while the table is *resident*; the copy
//! therefore never shows a state the backend does not hold. When the backend discards unflushed
//! writes (it was reopened after a failed write: its generation changed), every copy is dropped.
//!
//! Residency is per table (docs/decisions.md says why not per range): the first read of a table
//! that is not resident asks for it to be loaded (in a background thread; reads go to the
//! backend meanwhile). Writes that land while a table is being loaded are recorded and replayed
//! onto the loaded copy, so the copy is complete when it becomes resident. When the budget is
//! exceeded (a load, or writes growing a table), the least recently read tables are evicted; a
//! table larger than the whole budget is not kept. An evicted table is not reloaded for a while
//! (at least [`TierOptions::reload_pause`], and four times as long as its last load took; a
//! table found too large, twenty pauses or ten times its attempt), so tables that do not fit
//! together keep the loader busy a fifth of the time at most.

use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub mod memory_limit;

use crate::encoding::key::{deleted_table_of, deleted_tables_start, table_prefix};
use crate::kv::memory::{as_slice, middle_key, range_is_valid};
use crate::{Backend, Kv, LayeredBytes, Space, StoreError};
use memory_limit::ProcessLimit;

/// A resident row: key and value, shared with the readers that copied them out.
type Row = (Arc<[u8]>, Arc<[u8]>);
type Rows = BTreeMap<Arc<[u8]>, Arc<[u8]>>;
type Batch = Vec<(Vec<u8>, Option<Vec<u8>>)>;
/// A batch as the copy keeps it: each key and value copied once into the shared form the
/// rows hold (a clone of the batch, then a second copy into the rows, cost a write twice).
type Copied = Vec<(Arc<[u8]>, Option<Arc<[u8]>>)>;

/// What one resident row costs besides its key and value bytes: the map's node slot, two
/// reference-counted allocations and allocator rounding (measured on the 100,000-row benchmark
/// table: within a few percent).
const ROW_OVERHEAD: u64 = 96;
/// Rows visited (or copied) under one read lock; writers to the table wait at most this long.
const CHUNK: usize = 1024;

/// How often the loader thread reads the process's resident set ([`ProcessLimit`]).
const PROBE_INTERVAL: Duration = Duration::from_millis(250);
/// Most doublings of a table's reload pause after it was refused or evicted for room again
/// and again (`2^8` times the pause).
const MAX_STRIKES: u32 = 8;

/// Rows whose values a scan touches before filtering them (see [`touch`]).
const TOUCH_AHEAD: usize = 32;

/// Reads the first two cache lines of each value of a group of rows: independent loads the CPU
/// overlaps, where the filter's reads, one row after another, would each wait for memory
/// (every value is its own allocation). The filter then finds them in cache.
fn touch(group: &[(&[u8], &[u8])]) {
    let mut sum = 0u8;
    for (_, v) in group {
        sum ^= v.first().copied().unwrap_or(0) ^ v.get(64).copied().unwrap_or(0);
    }
    std::hint::black_box(sum);
}

fn row_cost(key: &[u8], value: &[u8]) -> u64 {
    (key.len() + value.len()) as u64 + ROW_OVERHEAD
}

/// How the RAM tier is sized and behaves.
#[derive(Debug, Clone)]
pub struct TierOptions {
    /// Bytes of rows kept in RAM at most (keys, values and per-row overhead).
    pub budget_bytes: u64,
    /// Least time a table evicted stays on disk before a read may load it again.
    pub reload_pause: Duration,
    /// Load tables in a background thread (the server); `false` loads them in the reading
    /// thread before serving it (tests, so that residency is deterministic).
    pub background: bool,
}

impl TierOptions {
    pub fn with_budget_mib(mib: u64) -> TierOptions {
        TierOptions {
            budget_bytes: mib.saturating_mul(1024 * 1024),
            reload_pause: Duration::from_millis(250),
            background: true,
        }
    }
}

/// A table's copy while it is resident.
struct Resident {
    rows: RwLock<Rows>,
}

enum Slot {
    Resident {
        table: Arc<Resident>,
        /// Bytes counted against the budget for it.
        bytes: u64,
        last_read: u64,
        /// How long loading it took.
        load_time: Duration,
        /// Writes made it larger since the last probe of the process's memory.
        grown: bool,
    },
    /// Being loaded: writes that land meanwhile are recorded to be replayed onto the copy.
    Loading {
        token: u64,
        overlay: Copied,
        /// Bytes reserved so far by the loader.
        bytes: u64,
        started: Instant,
    },
    /// Evicted, or too large for the budget: not loaded again before this moment.
    Evicted(Instant),
    /// The table was deleted: never loaded again.
    Deleted,
}

struct State {
    tables: HashMap<u64, Slot>,
    /// Bytes counted against the budget (resident tables and loads in progress).
    used: u64,
    /// Read clock for least-recently-read eviction.
    clock: u64,
    next_token: u64,
    /// The backend generation the copies were built in.
    generation: u64,
    reload_pause: Duration,
    /// Times in a row each table was refused or given back for room: every strike doubles its
    /// next pause, so a table that does not fit is not copied again and again.
    strikes: HashMap<u64, u32>,
}

struct Shared<B: Backend> {
    inner: B,
    options: TierOptions,
    state: Mutex<State>,
    stop: AtomicBool,
    /// Loads started / finished (for [`TieredKv::wait_for_loads`]).
    loads_requested: AtomicU64,
    loads_done: AtomicU64,
    /// The whole process's memory limit, when the server set one.
    process_limit: OnceLock<ProcessLimit>,
    /// The process's resident bytes at the last probe (0: not probed).
    last_rss: AtomicU64,
    /// Whether the log already said that memory outside the tier passes the limit.
    told_over_limit: AtomicBool,
}

/// The backend `inner` with the RAM tier in front of it.
pub struct TieredKv<B: Backend> {
    shared: Arc<Shared<B>>,
    requests: Option<mpsc::Sender<(u64, u64)>>,
    loader: Option<JoinHandle<()>>,
}

/// Resident bytes and tables, for metrics and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg(test)]
pub(crate) struct TierUsage {
    pub(crate) budget_bytes: u64,
    pub(crate) used_bytes: u64,
    pub(crate) resident_tables: usize,
}

/// The table a key belongs to (its first 8 bytes).
fn table_of(key: &[u8]) -> Option<u64> {
    key.get(..8)
        .and_then(|p| p.try_into().ok())
        .map(u64::from_be_bytes)
}

/// The table a range lies in, if it lies in one.
fn table_of_range(start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> Option<u64> {
    let table = match start {
        Bound::Included(k) | Bound::Excluded(k) => table_of(k)?,
        Bound::Unbounded => return None,
    };
    let within = match end {
        Bound::Included(e) => table_of(e) == Some(table),
        Bound::Excluded(e) => {
            table_of(e) == Some(table)
                || table
                    .checked_add(1)
                    .is_some_and(|next| e.as_slice() == table_prefix(next))
        }
        Bound::Unbounded => table == u64::MAX,
    };
    within.then_some(table)
}

fn table_bounds(table: u64) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let start = Bound::Included(table_prefix(table).to_vec());
    let end = match table.checked_add(1) {
        Some(next) => Bound::Excluded(table_prefix(next).to_vec()),
        None => Bound::Unbounded,
    };
    (start, end)
}

impl State {
    /// Drops every copy if the backend's generation moved (it discarded unflushed writes).
    fn check_generation(&mut self, generation: u64) {
        if self.generation != generation {
            self.tables.clear();
            self.used = 0;
            self.generation = generation;
        }
    }

    /// Evicts least recently read tables until `used` fits the budget; `spare` is never
    /// evicted. Returns whether it fits.
    fn make_room(&mut self, budget: u64, spare: Option<u64>) -> bool {
        while self.used > budget {
            let victim = self
                .tables
                .iter()
                .filter(|(id, _)| Some(**id) != spare)
                .filter_map(|(id, slot)| match slot {
                    Slot::Resident { last_read, .. } => Some((*last_read, *id)),
                    _ => None,
                })
                .min();
            let Some((_, id)) = victim else {
                return false;
            };
            self.evict(id);
        }
        true
    }

    /// Table `id` was deleted: out of RAM, and never loaded again (its entities are about to be
    /// purged).
    fn forget(&mut self, id: u64) {
        self.evict(id);
        self.tables.insert(id, Slot::Deleted);
    }

    /// Moves table `id` out of RAM until its reload pause has passed.
    fn evict(&mut self, id: u64) {
        let pause = match self.tables.get(&id) {
            Some(Slot::Resident { load_time, .. }) => self.reload_pause.max(*load_time * 4),
            _ => self.reload_pause,
        };
        self.evict_for(id, pause);
    }

    /// Keeps table `id`, found too large for the room there is, out of RAM for a long while,
    /// twice as long as the time before if it was refused before.
    fn refuse(&mut self, id: u64) {
        let pause = match self.tables.get(&id) {
            Some(Slot::Loading { started, .. }) => {
                (self.reload_pause * 20).max(started.elapsed() * 10)
            }
            _ => self.reload_pause * 20,
        };
        let strikes = self.strikes.entry(id).or_insert(0);
        let pause = pause * (1u32 << (*strikes).min(MAX_STRIKES));
        *strikes += 1;
        self.evict_for(id, pause);
    }

    fn evict_for(&mut self, id: u64, pause: Duration) {
        let until = Instant::now() + pause;
        if let Some(Slot::Resident { bytes, .. } | Slot::Loading { bytes, .. }) =
            self.tables.insert(id, Slot::Evicted(until))
        {
            self.used -= bytes;
            tracing::debug!(table_id = id, bytes, ?pause, "RAM tier: table evicted");
        }
    }
}

impl<B: Backend> Shared<B> {
    fn lock(&self) -> parking_lot::MutexGuard<'_, State> {
        let mut state = self.state.lock();
        state.check_generation(self.inner.generation());
        state
    }

    /// Loads table `id` (its slot is `Loading { token }`) from the backend and makes it
    /// resident, unless it does not fit the budget or the slot changed meanwhile.
    fn load(&self, id: u64, token: u64) {
        let generation = self.inner.generation();
        let (start, end) = table_bounds(id);
        let mut rows = Rows::new();
        let mut pending = 0u64;
        let mut complete = true;
        for (n, entry) in self.inner.range(Space::Entities, start, end).enumerate() {
            let Ok((k, v)) = entry else {
                complete = false;
                break;
            };
            let (k, v) = (k.as_ref(), v.as_ref());
            pending += row_cost(k, v);
            rows.insert(Arc::from(k), Arc::from(v));
            if n % CHUNK == CHUNK - 1
                && (self.stop.load(Ordering::Relaxed)
                    || !self.reserve(id, token, std::mem::take(&mut pending)))
            {
                complete = false;
                break;
            }
        }
        let mut state = self.lock();
        let current =
            matches!(state.tables.get(&id), Some(Slot::Loading { token: t, .. }) if *t == token);
        if !current || state.generation != generation {
            return;
        }
        if !complete {
            // Too large for the budget (or the read failed): stays on disk for a while.
            state.refuse(id);
            return;
        }
        let Some(Slot::Loading {
            overlay,
            bytes: reserved,
            started,
            ..
        }) = state.tables.remove(&id)
        else {
            unreachable!("checked above")
        };
        let (added, removed) = apply_rows(&mut rows, overlay);
        let bytes = (reserved + pending + added).saturating_sub(removed);
        state.used = state.used - reserved + bytes;
        state.clock += 1;
        let last_read = state.clock;
        state.tables.insert(
            id,
            Slot::Resident {
                table: Arc::new(Resident {
                    rows: RwLock::new(rows),
                }),
                bytes,
                last_read,
                load_time: started.elapsed(),
                grown: false,
            },
        );
        tracing::debug!(table_id = id, bytes, load_time = ?started.elapsed(), "RAM tier: table loaded");
        if state.make_room(self.options.budget_bytes, Some(id)) {
            state.strikes.remove(&id);
        } else {
            state.refuse(id);
        }
    }

    /// Counts `more` bytes of a load in progress against the budget, evicting other tables
    /// to make room. False if the slot is gone (evicted, generation changed) or the table does
    /// not fit.
    fn reserve(&self, id: u64, token: u64, more: u64) -> bool {
        let mut state = self.lock();
        match state.tables.get_mut(&id) {
            Some(Slot::Loading {
                token: t, bytes, ..
            }) if *t == token => *bytes += more,
            _ => return false,
        }
        state.used += more;
        if !state.make_room(self.options.budget_bytes, Some(id)) {
            return false;
        }
        drop(state);
        // A load makes the process grow: it stops within one headroom of the process limit.
        self.probe()
            .is_none_or(|(rss, limit)| rss + limit.headroom_bytes <= limit.limit_bytes)
    }

    /// Reads the process's resident bytes, if the server set a limit: `(bytes, limit)`.
    fn probe(&self) -> Option<(u64, &ProcessLimit)> {
        let limit = self.process_limit.get()?;
        let rss = (limit.probe)()?;
        self.last_rss.store(rss, Ordering::Relaxed);
        Some((rss, limit))
    }

    /// Whether the last probe left less than two headrooms under the process limit: no load
    /// starts then.
    fn no_room_for_loads(&self) -> bool {
        let Some(limit) = self.process_limit.get() else {
            return false;
        };
        let rss = self.last_rss.load(Ordering::Relaxed);
        rss > 0 && rss + 2 * limit.headroom_bytes > limit.limit_bytes
    }

    /// Within one headroom of the process limit, gives back what makes the process grow: loads
    /// in progress, then tables that writes made larger since the last probe (least recently
    /// read first), until an estimated two headrooms are free. Tables that are only read stay:
    /// they do not grow, and what else holds the memory (the backend's cache and index, freed
    /// memory the allocator keeps) would not shrink by giving them back.
    fn keep_within_process_limit(&self) {
        let Some((rss, limit)) = self.probe() else {
            return;
        };
        let mut state = self.lock();
        if rss + limit.headroom_bytes > limit.limit_bytes {
            let mut excess = rss + 2 * limit.headroom_bytes - limit.limit_bytes;
            let mut growing: Vec<(u64, u64, u64)> = state
                .tables
                .iter()
                .filter_map(|(id, slot)| match slot {
                    Slot::Loading { bytes, .. } => Some((0, *id, *bytes)),
                    Slot::Resident {
                        last_read,
                        bytes,
                        grown: true,
                        ..
                    } => Some((*last_read, *id, *bytes)),
                    _ => None,
                })
                .collect();
            growing.sort_unstable();
            for (_, id, bytes) in growing {
                if excess == 0 {
                    break;
                }
                tracing::debug!(
                    table_id = id,
                    rss,
                    "RAM tier: table given back for the process limit"
                );
                state.refuse(id);
                excess = excess.saturating_sub(bytes);
            }
            if excess > 0 && !self.told_over_limit.swap(true, Ordering::Relaxed) {
                tracing::info!(
                    resident_mib = rss >> 20,
                    limit_mib = limit.limit_bytes >> 20,
                    "the server is above --memory-budget + 64 MiB with no table growing in the \
                     RAM tier (the on-disk store's cache and index, requests): no table is loaded \
                     into RAM until it is below; a larger --memory-budget or a smaller --cache-mb \
                     gives the tier room again"
                );
            }
        }
        for slot in state.tables.values_mut() {
            if let Slot::Resident { grown, .. } = slot {
                *grown = false;
            }
        }
    }
}

/// The copy's form of `batch`.
fn copied(batch: &Batch) -> Copied {
    batch
        .iter()
        .map(|(k, v)| (Arc::from(k.as_slice()), v.as_deref().map(Arc::from)))
        .collect()
}

/// Applies `batch` to a table's rows; returns the bytes the rows gained and lost.
fn apply_rows(rows: &mut Rows, batch: Copied) -> (u64, u64) {
    let (mut added, mut removed) = (0, 0);
    for (k, v) in batch {
        let key_len = k.len();
        let old = match v {
            Some(v) => {
                added += row_cost(&k, &v);
                rows.insert(k, v)
            }
            None => rows.remove(&*k),
        };
        if let Some(old) = old {
            removed += (key_len + old.len()) as u64 + ROW_OVERHEAD;
        }
    }
    (added, removed)
}

impl<B: Backend> TieredKv<B> {
    pub fn new(inner: B, options: TierOptions) -> TieredKv<B> {
        let generation = inner.generation();
        // Tables deleted before (their purge resumes when the store opens) are never loaded.
        let deleted: HashMap<u64, Slot> = inner
            .range(Space::Tables, deleted_tables_start(), Bound::Unbounded)
            .filter_map(Result::ok)
            .filter_map(|(k, _)| deleted_table_of(k.as_ref()))
            .map(|id| (id, Slot::Deleted))
            .collect();
        let background = options.background;
        let reload_pause = options.reload_pause;
        let shared = Arc::new(Shared {
            inner,
            options,
            state: Mutex::new(State {
                tables: deleted,
                used: 0,
                clock: 0,
                next_token: 0,
                generation,
                reload_pause,
                strikes: HashMap::new(),
            }),
            stop: AtomicBool::new(false),
            loads_requested: AtomicU64::new(0),
            loads_done: AtomicU64::new(0),
            process_limit: OnceLock::new(),
            last_rss: AtomicU64::new(0),
            told_over_limit: AtomicBool::new(false),
        });
        let (requests, loader) = if background {
            let (tx, rx) = mpsc::channel::<(u64, u64)>();
            let worker = Arc::clone(&shared);
            let handle = std::thread::Builder::new()
                .name("ram-tier-loader".into())
                .spawn(move || loop {
                    match rx.recv_timeout(PROBE_INTERVAL) {
                        Ok((id, token)) => {
                            if worker.stop.load(Ordering::Relaxed) {
                                break;
                            }
                            worker.load(id, token);
                            worker.loads_done.fetch_add(1, Ordering::AcqRel);
                        }
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                    worker.keep_within_process_limit();
                });
            match handle {
                Ok(h) => (Some(tx), Some(h)),
                Err(e) => {
                    tracing::warn!(error = %e, "could not start the RAM tier's loader; reads go to disk");
                    (None, None)
                }
            }
        } else {
            (None, None)
        };
        TieredKv {
            shared,
            requests,
            loader,
        }
    }

    /// Keeps the whole process under `limit` too: the loader thread probes its resident set
    /// every [`PROBE_INTERVAL`] and gives tables back while it is above; loads stop at it.
    /// Set once (a second call is ignored).
    pub(crate) fn limit_process_memory(&self, limit: ProcessLimit) {
        let _ = self.shared.process_limit.set(limit);
        self.shared.keep_within_process_limit();
    }

    /// Checks the process limit now (what the loader thread does every [`PROBE_INTERVAL`]).
    #[cfg(test)]
    pub(crate) fn keep_within_process_limit(&self) {
        self.shared.keep_within_process_limit();
    }

    /// Bytes and tables resident now.
    #[cfg(test)]
    pub(crate) fn usage(&self) -> TierUsage {
        let state = self.shared.lock();
        TierUsage {
            budget_bytes: self.shared.options.budget_bytes,
            used_bytes: state.used,
            resident_tables: state
                .tables
                .values()
                .filter(|s| matches!(s, Slot::Resident { .. }))
                .count(),
        }
    }

    /// Whether table `id` is served from RAM now.
    #[cfg(test)]
    pub(crate) fn is_resident(&self, id: u64) -> bool {
        matches!(
            self.shared.lock().tables.get(&id),
            Some(Slot::Resident { .. })
        )
    }

    /// Waits (up to `timeout`) until every load asked for so far has finished.
    #[cfg(test)]
    pub(crate) fn wait_for_loads(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.shared.loads_done.load(Ordering::Acquire)
            < self.shared.loads_requested.load(Ordering::Acquire)
        {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }

    /// Evicts table `id` now (tests: eviction at a chosen moment).
    #[cfg(test)]
    pub(crate) fn evict(&self, id: u64) {
        self.shared.lock().evict(id);
    }

    /// The copy of table `id` if it is resident (marking it read); else asks for it to be
    /// loaded unless it was evicted recently, and returns `None` (read the backend).
    fn resident(&self, id: u64) -> Option<Arc<Resident>> {
        let mut state = self.shared.lock();
        state.clock += 1;
        let now = state.clock;
        match state.tables.get_mut(&id) {
            Some(Slot::Resident {
                table, last_read, ..
            }) => {
                *last_read = now;
                return Some(Arc::clone(table));
            }
            Some(Slot::Loading { .. } | Slot::Deleted) => return None,
            Some(Slot::Evicted(until)) if Instant::now() < *until => return None,
            _ => {}
        }
        if self.shared.options.budget_bytes == 0 || self.shared.no_room_for_loads() {
            return None;
        }
        let token = state.next_token;
        state.next_token += 1;
        state.tables.insert(
            id,
            Slot::Loading {
                token,
                overlay: Vec::new(),
                bytes: 0,
                started: Instant::now(),
            },
        );
        drop(state);
        match &self.requests {
            Some(tx) => {
                self.shared.loads_requested.fetch_add(1, Ordering::AcqRel);
                if tx.send((id, token)).is_err() {
                    self.shared.loads_done.fetch_add(1, Ordering::AcqRel);
                    self.shared.lock().evict(id);
                }
                None
            }
            None if self.shared.options.background => {
                self.shared.lock().evict(id);
                None
            }
            None => {
                self.shared.load(id, token);
                match self.shared.lock().tables.get(&id) {
                    Some(Slot::Resident { table, .. }) => Some(Arc::clone(table)),
                    _ => None,
                }
            }
        }
    }

    /// [`Kv::apply`] (`new_keys`: [`Backend::apply_new_keys`]): the backend first, then the
    /// copy. A table marked deleted in the metadata is forgotten at once.
    fn apply_to_backend(
        &self,
        space: Space,
        batch: Batch,
        new_keys: bool,
    ) -> Result<(), StoreError> {
        let backend = |batch: Batch| {
            if new_keys {
                self.shared.inner.apply_new_keys(space, batch)
            } else {
                self.shared.inner.apply(space, batch)
            }
        };
        if space == Space::Tables {
            let deleted: Vec<u64> = batch
                .iter()
                .filter(|(_, v)| v.is_some())
                .filter_map(|(k, _)| deleted_table_of(k))
                .collect();
            backend(batch)?;
            if !deleted.is_empty() {
                let mut state = self.shared.lock();
                for id in deleted {
                    state.forget(id);
                }
            }
            return Ok(());
        }
        let Some(id) = batch.first().and_then(|(k, _)| table_of(k)) else {
            return backend(batch);
        };
        if batch.iter().any(|(k, _)| table_of(k) != Some(id)) {
            // Not one table's batch (never made by the store): no copy can hold it all; drop
            // the copies it touches.
            let mut state = self.shared.lock();
            for (k, _) in &batch {
                if let Some(t) = table_of(k) {
                    state.evict(t);
                }
            }
            drop(state);
            return backend(batch);
        }
        // Whether the copy needs this batch is only known after the backend applied it (a
        // load may start in between), so keep a copy of it when the table is in RAM at all.
        let wanted = !matches!(
            self.shared.lock().tables.get(&id),
            None | Some(Slot::Evicted(_) | Slot::Deleted)
        );
        let copy = wanted.then(|| copied(&batch));
        backend(batch)?;
        let (table, copy) = {
            let mut state = self.shared.lock();
            match (state.tables.get_mut(&id), copy) {
                (Some(Slot::Resident { table, .. }), Some(copy)) => (Arc::clone(table), copy),
                (Some(Slot::Loading { overlay, .. }), Some(copy)) => {
                    overlay.extend(copy);
                    return Ok(());
                }
                (Some(Slot::Resident { .. } | Slot::Loading { .. }), None) => {
                    // Became resident (or started loading) between the check and the write:
                    // the copy may lack this write, so it cannot be trusted.
                    state.evict(id);
                    return Ok(());
                }
                _ => return Ok(()),
            }
        };
        // The rows are applied outside the tier's lock: writes to other tables (and reads of
        // any table) do not wait for them. If the table is evicted meanwhile, a later load
        // reads the backend, which already holds this write.
        let (added, removed) = {
            let mut rows = table.rows.write();
            apply_rows(&mut rows, copy)
        };
        let mut state = self.shared.lock();
        let budget = self.shared.options.budget_bytes;
        let Some(Slot::Resident {
            table: current,
            bytes,
            grown,
            ..
        }) = state.tables.get_mut(&id)
        else {
            return Ok(());
        };
        if !Arc::ptr_eq(current, &table) {
            return Ok(()); // evicted and loaded again: the new copy was counted as loaded
        }
        *bytes = (*bytes + added).saturating_sub(removed);
        *grown |= added > removed;
        state.used = (state.used + added).saturating_sub(removed);
        if !state.make_room(budget, Some(id)) {
            state.refuse(id);
        }
        Ok(())
    }
}

impl<B: Backend> Drop for TieredKv<B> {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.requests = None;
        if let Some(loader) = self.loader.take() {
            let _ = loader.join();
        }
    }
}

/// A range read from the copy (a chunk of rows at a time, never holding its lock between
/// calls) or from the backend.
pub struct TierIter<'a, B: Kv + 'a>(Source<'a, B>);

enum Source<'a, B: Kv + 'a> {
    Ram {
        table: Arc<Resident>,
        next_start: Option<Bound<Vec<u8>>>,
        end: Bound<Vec<u8>>,
        buffer: std::vec::IntoIter<Row>,
    },
    Disk(B::Iter<'a>),
}

type Item<T> = Result<(LayeredBytes<T>, LayeredBytes<T>), StoreError>;

impl<'a, B: Kv + 'a> Iterator for TierIter<'a, B> {
    type Item = Item<B::Bytes>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Source::Disk(inner) => inner
                .next()
                .map(|r| r.map(|(k, v)| (LayeredBytes::Backend(k), LayeredBytes::Backend(v)))),
            Source::Ram {
                table,
                next_start,
                end,
                buffer,
            } => {
                if let Some((k, v)) = buffer.next() {
                    return Some(Ok((LayeredBytes::Held(k), LayeredBytes::Held(v))));
                }
                let start = next_start.take()?;
                if !range_is_valid(&start, end) {
                    return None;
                }
                let rows = table.rows.read();
                let chunk: Vec<Row> = rows
                    .range::<[u8], _>((as_slice(&start), as_slice(end)))
                    .take(CHUNK)
                    .map(|(k, v)| (Arc::clone(k), Arc::clone(v)))
                    .collect();
                drop(rows);
                if chunk.len() == CHUNK {
                    *next_start = Some(Bound::Excluded(chunk[CHUNK - 1].0.to_vec()));
                }
                *buffer = chunk.into_iter();
                buffer
                    .next()
                    .map(|(k, v)| Ok((LayeredBytes::Held(k), LayeredBytes::Held(v))))
            }
        }
    }
}

impl<B: Backend> Kv for TieredKv<B> {
    type Bytes = LayeredBytes<B::Bytes>;
    type Iter<'a> = TierIter<'a, B>;

    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Self::Bytes>, StoreError> {
        if space == Space::Entities {
            if let Some(table) = table_of(key).and_then(|id| self.resident(id)) {
                let rows = table.rows.read();
                return Ok(rows.get(key).map(|v| LayeredBytes::Held(Arc::clone(v))));
            }
        }
        Ok(self
            .shared
            .inner
            .get(space, key)?
            .map(LayeredBytes::Backend))
    }

    fn range(&self, space: Space, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> Self::Iter<'_> {
        if space == Space::Entities {
            if let Some(table) = table_of_range(&start, &end).and_then(|id| self.resident(id)) {
                return TierIter(Source::Ram {
                    table,
                    next_start: Some(start),
                    end,
                    buffer: Vec::new().into_iter(),
                });
            }
        }
        TierIter(Source::Disk(self.shared.inner.range(space, start, end)))
    }

    fn visit(
        &self,
        space: Space,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), StoreError> {
        let resident = (space == Space::Entities)
            .then(|| table_of_range(&start, &end))
            .flatten()
            .and_then(|id| self.resident(id));
        let Some(table) = resident else {
            return self.shared.inner.visit(space, start, end, visit);
        };
        // In place, a chunk of rows per read lock, resuming after the last row visited.
        let mut start = start;
        loop {
            if !range_is_valid(&start, &end) {
                return Ok(());
            }
            let rows = table.rows.read();
            let mut last = None;
            let mut group: Vec<(&[u8], &[u8])> = Vec::with_capacity(TOUCH_AHEAD);
            let mut in_range = rows.range::<[u8], _>((as_slice(&start), as_slice(&end)));
            let mut seen = 0;
            loop {
                group.clear();
                group.extend(
                    in_range
                        .by_ref()
                        .take(TOUCH_AHEAD.min(CHUNK - seen))
                        .map(|(k, v)| (&**k, &**v)),
                );
                if group.is_empty() {
                    break;
                }
                touch(&group);
                seen += group.len();
                for (k, v) in &group {
                    if !visit(k, v) {
                        return Ok(());
                    }
                }
                if seen == CHUNK {
                    last = group.last().map(|(k, _)| k.to_vec());
                    break;
                }
            }
            drop(in_range);
            drop(rows);
            match last {
                Some(k) => start = Bound::Excluded(k),
                None => return Ok(()),
            }
        }
    }

    fn apply(&self, space: Space, batch: Batch) -> Result<(), StoreError> {
        self.apply_to_backend(space, batch, false)
    }

    fn flush(&self) -> Result<(), StoreError> {
        self.shared.inner.flush()
    }

    fn is_persistent(&self) -> bool {
        self.shared.inner.is_persistent()
    }
}

/// Split points of the tables it holds; the rest is the engine's.
impl<B: Backend> Backend for TieredKv<B> {
    fn split_point(
        &self,
        space: Space,
        start: &Bound<Vec<u8>>,
        end: &Bound<Vec<u8>>,
        min_rows: usize,
    ) -> Option<Vec<u8>> {
        // Only a resident table: a disk scan is bound by the backend's pages, not by cores.
        let table = (space == Space::Entities)
            .then(|| table_of_range(start, end))
            .flatten()
            .and_then(|id| self.resident(id))?;
        let rows = table.rows.read();
        middle_key(&rows, start, end, min_rows)
    }

    fn apply_new_keys(&self, space: Space, batch: Batch) -> Result<(), StoreError> {
        self.apply_to_backend(space, batch, true)
    }

    fn begin_write(&self) -> Result<u64, StoreError> {
        self.shared.inner.begin_write()
    }

    fn generation(&self) -> u64 {
        self.shared.inner.generation()
    }

    /// The backend's count: every write reaches it, resident or not.
    fn footprint(&self) -> Option<crate::Footprint> {
        self.shared.inner.footprint()
    }

    fn share(bytes: Self::Bytes) -> Arc<[u8]> {
        match bytes {
            LayeredBytes::Held(held) => held,
            LayeredBytes::Backend(b) => B::share(b),
        }
    }
}

/// Opens the tiered store over sled in `dir` with `options`, waiting briefly while a store
/// closed just before lets go of the folder.
#[cfg(test)]
fn open_sled_for_tests(
    dir: &std::path::Path,
    options: TierOptions,
) -> Arc<crate::KvStore<TieredKv<crate::kv::sled::SledKv>>> {
    let kv = crate::kv::sled::open_kv_for_tests(dir, &Default::default());
    crate::KvStore::open(TieredKv::new(kv, options), crate::Durability::Durable)
        .expect("open the store")
}

/// Every table fits and is loaded at its first read.
#[cfg(test)]
mod roomy {
    crate::store_conformance!(
        durable: true,
        open: |dir: &std::path::Path| -> std::sync::Arc<dyn crate::Store> {
            super::super::open_sled_for_tests(dir, super::super::TierOptions {
                budget_bytes: 64 << 20,
                reload_pause: std::time::Duration::ZERO,
                background: false,
            })
        },
    );
}

/// A budget of a dozen small rows: tables are loaded, outgrow it and are evicted mid-check,
/// and take turns being resident.
#[cfg(test)]
mod tight {
    crate::store_conformance!(
        durable: true,
        open: |dir: &std::path::Path| -> std::sync::Arc<dyn crate::Store> {
            super::super::open_sled_for_tests(dir, super::super::TierOptions {
                budget_bytes: 2000,
                reload_pause: std::time::Duration::ZERO,
                background: false,
            })
        },
    );
}

/// As the server runs it: loads in the background while reads go to disk.
#[cfg(test)]
mod background {
    crate::store_conformance!(
        durable: true,
        open: |dir: &std::path::Path| -> std::sync::Arc<dyn crate::Store> {
            super::super::open_sled_for_tests(dir, super::super::TierOptions {
                budget_bytes: 64 << 20,
                reload_pause: std::time::Duration::ZERO,
                background: true,
            })
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::key::entity_key;
    use crate::kv::memory::MemoryKv;

    fn inline(budget_bytes: u64) -> TieredKv<MemoryKv> {
        TieredKv::new(
            MemoryKv::new(),
            TierOptions {
                budget_bytes,
                reload_pause: Duration::from_secs(3600),
                background: false,
            },
        )
    }

    fn put(kv: &impl Kv, table: u64, rk: &str, value: &[u8]) {
        kv.apply(
            Space::Entities,
            vec![(entity_key(table, "p", rk), Some(value.to_vec()))],
        )
        .expect("apply");
    }

    fn read(kv: &impl Kv, table: u64, rk: &str) -> Option<Vec<u8>> {
        kv.get(Space::Entities, &entity_key(table, "p", rk))
            .expect("get")
            .map(|b| b.as_ref().to_vec())
    }

    fn all(kv: &impl Kv, table: u64) -> Vec<Vec<u8>> {
        let (start, end) = table_bounds(table);
        let mut out = Vec::new();
        kv.visit(Space::Entities, start, end, &mut |_, v| {
            out.push(v.to_vec());
            true
        })
        .expect("visit");
        out
    }

    #[test]
    fn a_read_loads_the_table_and_writes_go_through_to_both_tiers() {
        let kv = inline(1 << 20);
        put(&kv, 1, "a", b"1");
        assert!(!kv.is_resident(1));
        assert_eq!(read(&kv, 1, "a"), Some(b"1".to_vec()));
        assert!(kv.is_resident(1));
        put(&kv, 1, "b", b"2");
        kv.apply(Space::Entities, vec![(entity_key(1, "p", "a"), None)])
            .expect("remove");
        assert_eq!(all(&kv, 1), vec![b"2".to_vec()]);
        // The backend holds the same.
        assert_eq!(all(&kv.shared.inner, 1), vec![b"2".to_vec()]);
        let usage = kv.usage();
        assert_eq!(usage.resident_tables, 1);
        assert_eq!(
            usage.used_bytes,
            row_cost(&entity_key(1, "p", "b"), b"2"),
            "the count follows inserts and removes"
        );
    }

    #[test]
    fn the_least_recently_read_table_is_evicted_and_a_table_over_budget_is_not_kept() {
        let row = row_cost(&entity_key(1, "p", "a"), &[0; 100]);
        let kv = inline(row * 3);
        for t in 1..=3 {
            put(&kv, t, "a", &[0; 100]);
        }
        read(&kv, 1, "a");
        read(&kv, 2, "a");
        read(&kv, 3, "a");
        assert!(kv.is_resident(1) && kv.is_resident(2) && kv.is_resident(3));
        read(&kv, 1, "a"); // 2 is now the least recently read
        put(&kv, 3, "b", &[0; 100]);
        assert!(kv.is_resident(1) && !kv.is_resident(2) && kv.is_resident(3));
        assert!(kv.usage().used_bytes <= row * 3);
        // Table 4 alone is larger than the budget: it stays on disk, reads still see it.
        for rk in ["a", "b", "c", "d"] {
            put(&kv, 4, rk, &[0; 100]);
        }
        assert_eq!(all(&kv, 4).len(), 4);
        assert!(!kv.is_resident(4));
        assert!(kv.usage().used_bytes <= row * 3);
        // Evicted tables are read from disk, and stay there during the reload pause.
        assert_eq!(read(&kv, 2, "a"), Some(vec![0; 100]));
        assert!(!kv.is_resident(2));
    }

    /// A process limit of `limit_bytes` (headroom 50) whose probe reports `rss`.
    fn limit(limit_bytes: u64, rss: &Arc<AtomicU64>) -> ProcessLimit {
        let rss = Arc::clone(rss);
        ProcessLimit {
            limit_bytes,
            headroom_bytes: 50,
            probe: Arc::new(move || Some(rss.load(Ordering::Relaxed))),
        }
    }

    #[test]
    fn over_the_process_limit_growing_tables_are_given_back_and_read_ones_stay() {
        let kv = inline(1 << 20);
        let rss = Arc::new(AtomicU64::new(500));
        kv.limit_process_memory(limit(10_000, &rss));
        for t in 1..=3 {
            put(&kv, t, "a", &[t as u8; 100]);
            read(&kv, t, "a");
        }
        kv.keep_within_process_limit();
        // 2 and 3 grow; 2 is the least recently read of them.
        put(&kv, 2, "b", &[2; 100]);
        put(&kv, 3, "b", &[3; 100]);
        read(&kv, 3, "a");
        // Within a headroom of the limit: the excess (two headrooms) is less than table 2.
        rss.store(10_000, Ordering::Relaxed);
        kv.keep_within_process_limit();
        assert!(kv.is_resident(1) && !kv.is_resident(2) && kv.is_resident(3));
        assert_eq!(
            read(&kv, 2, "b"),
            Some(vec![2; 100]),
            "read from the backend"
        );
        // Still over, nothing grew since: the tables that are read stay, and no load starts.
        kv.keep_within_process_limit();
        assert!(kv.is_resident(1) && kv.is_resident(3));
        put(&kv, 5, "a", &[5; 100]);
        assert_eq!(read(&kv, 5, "a"), Some(vec![5; 100]));
        assert!(!kv.is_resident(5));
        // Room again: loads start.
        rss.store(500, Ordering::Relaxed);
        kv.keep_within_process_limit();
        put(&kv, 6, "a", &[6; 100]);
        read(&kv, 6, "a");
        assert!(kv.is_resident(6));
    }

    #[test]
    fn a_load_stops_within_a_headroom_of_the_process_limit() {
        let kv = inline(1 << 30);
        let rss = Arc::new(AtomicU64::new(500));
        kv.limit_process_memory(limit(10_000, &rss));
        let batch: Batch = (0..2 * CHUNK)
            .map(|n| (entity_key(7, "p", &format!("{n:05}")), Some(vec![7; 10])))
            .collect();
        kv.apply(Space::Entities, batch).expect("apply");
        // The last probe said there is room; the probe during the copy says there is not.
        rss.store(9_960, Ordering::Relaxed);
        assert_eq!(all(&kv, 7).len(), 2 * CHUNK);
        assert!(!kv.is_resident(7), "the copy was given up");
        assert_eq!(kv.usage().used_bytes, 0);
        // With room, the next load (after the pause) keeps it.
        let kv = inline(1 << 30);
        rss.store(500, Ordering::Relaxed);
        kv.limit_process_memory(limit(10_000, &rss));
        put(&kv, 7, "a", b"1");
        read(&kv, 7, "a");
        assert!(kv.is_resident(7));
    }

    #[test]
    fn each_refusal_in_a_row_doubles_the_pause() {
        let kv = inline(1 << 20);
        let pause_after_refusal = || {
            let mut state = kv.shared.lock();
            state.refuse(9);
            match state.tables.get(&9) {
                Some(Slot::Evicted(until)) => until.duration_since(Instant::now()),
                _ => panic!("not evicted"),
            }
        };
        let first = pause_after_refusal();
        let second = pause_after_refusal();
        let third = pause_after_refusal();
        assert!(first >= Duration::from_secs(3600 * 20 - 1), "{first:?}");
        assert!(second > first.mul_f64(1.9) && third > second.mul_f64(1.9));
    }

    #[test]
    fn the_loader_thread_gives_growing_tables_back_by_itself() {
        let kv = TieredKv::new(MemoryKv::new(), TierOptions::with_budget_mib(1));
        let rss = Arc::new(AtomicU64::new(500));
        kv.limit_process_memory(limit(1 << 20, &rss));
        put(&kv, 1, "a", b"1");
        read(&kv, 1, "a");
        assert!(kv.wait_for_loads(Duration::from_secs(10)));
        assert!(kv.is_resident(1));
        rss.store(1 << 21, Ordering::Relaxed);
        put(&kv, 1, "b", b"2");
        let deadline = Instant::now() + Duration::from_secs(10);
        while kv.is_resident(1) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!kv.is_resident(1));
        assert_eq!(read(&kv, 1, "b"), Some(b"2".to_vec()));
    }

    #[test]
    fn writes_during_a_load_reach_the_copy() {
        let kv = inline(1 << 20);
        put(&kv, 1, "a", b"old");
        // A load asked for, then a write before the loader reads the backend.
        let token = {
            let mut state = kv.shared.lock();
            state.tables.insert(
                1,
                Slot::Loading {
                    token: 7,
                    overlay: Vec::new(),
                    bytes: 0,
                    started: Instant::now(),
                },
            );
            7
        };
        put(&kv, 1, "a", b"new");
        put(&kv, 1, "b", b"b");
        kv.shared.load(1, token);
        assert!(kv.is_resident(1));
        assert_eq!(all(&kv, 1), vec![b"new".to_vec(), b"b".to_vec()]);
        // A load whose slot was taken away (evicted meanwhile) leaves nothing behind.
        kv.evict(1);
        kv.shared.load(1, token);
        assert!(!kv.is_resident(1));
        assert_eq!(kv.usage().used_bytes, 0);
    }

    #[test]
    fn ranges_are_served_from_ram_in_chunks_and_deleted_tables_are_forgotten() {
        let kv = inline(64 << 20);
        let n = CHUNK * 2 + 5;
        let batch = (0..n)
            .map(|i| (entity_key(9, "p", &format!("{i:05}")), Some(vec![1u8; 8])))
            .collect();
        kv.apply(Space::Entities, batch).expect("apply");
        let (start, end) = table_bounds(9);
        let from_disk = kv
            .range(Space::Entities, start.clone(), end.clone())
            .count();
        assert!(kv.is_resident(9));
        let keys: Vec<Vec<u8>> = kv
            .range(Space::Entities, start.clone(), end.clone())
            .map(|r| r.expect("row").0.as_ref().to_vec())
            .collect();
        assert_eq!((from_disk, keys.len()), (n, n));
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let mut visited = 0;
        kv.visit(Space::Entities, start.clone(), end.clone(), &mut |_, _| {
            visited += 1;
            visited < CHUNK + 3
        })
        .expect("visit");
        assert_eq!(visited, CHUNK + 3, "stops when asked, across a chunk");
        let mut in_place = Vec::new();
        kv.visit(Space::Entities, start.clone(), end.clone(), &mut |k, _| {
            in_place.push(k.to_vec());
            true
        })
        .expect("visit");
        assert_eq!(in_place, keys, "every row once, in order, across chunks");
        // An inverted range is empty, not a panic.
        let backwards = kv
            .range(Space::Entities, end.clone(), start.clone())
            .count();
        assert_eq!(backwards, 0);
        // The store deletes table 9: its marker reaches the metadata through the tier.
        kv.apply(
            Space::Tables,
            vec![(crate::encoding::key::deleted_table_key(9), Some(Vec::new()))],
        )
        .expect("mark table 9 deleted");
        assert!(!kv.is_resident(9));
        assert_eq!(kv.range(Space::Entities, start, end).count(), n);
        assert!(!kv.is_resident(9), "a deleted table is never loaded again");
    }

    #[test]
    fn ranges_across_tables_go_to_the_backend() {
        assert_eq!(
            table_of_range(
                &Bound::Included(table_prefix(3).to_vec()),
                &Bound::Excluded(table_prefix(4).to_vec())
            ),
            Some(3)
        );
        assert_eq!(
            table_of_range(
                &Bound::Included(table_prefix(3).to_vec()),
                &Bound::Excluded(table_prefix(5).to_vec())
            ),
            None
        );
        assert_eq!(table_of_range(&Bound::Unbounded, &Bound::Unbounded), None);
        assert_eq!(
            table_of_range(
                &Bound::Included(table_prefix(3).to_vec()),
                &Bound::Unbounded
            ),
            None
        );
    }

    #[test]
    fn background_loads_finish_and_the_loader_stops_with_the_store() {
        let kv = TieredKv::new(MemoryKv::new(), TierOptions::with_budget_mib(1));
        put(&kv, 1, "a", b"1");
        assert_eq!(read(&kv, 1, "a"), Some(b"1".to_vec()), "served from disk");
        assert!(kv.wait_for_loads(Duration::from_secs(10)));
        assert!(kv.is_resident(1));
        put(&kv, 1, "a", b"2");
        assert_eq!(read(&kv, 1, "a"), Some(b"2".to_vec()));
        drop(kv); // joins the loader
    }
}

/// The tiered store against the memory store on random operation sequences, with evictions
/// and restarts (close and reopen over the same folder) in between: same answers, same data.
#[cfg(test)]
mod model {
    use proptest::prelude::*;

    use super::*;
    use crate::conformance::model_check;

    const BUDGET: u64 = 1500;

    fn open(dir: &std::path::Path) -> Arc<crate::KvStore<TieredKv<crate::kv::sled::SledKv>>> {
        open_sled_for_tests(
            dir,
            TierOptions {
                budget_bytes: BUDGET,
                reload_pause: Duration::ZERO,
                background: false,
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn tiered_store_answers_like_the_memory_store(
            // Evict table 0 or 1.
            steps in model_check::steps(0..2usize, 1)
        ) {
            model_check::run(
                steps,
                open,
                |kv, ids, t| {
                    kv.evict(ids[t].0);
                    Ok(())
                },
                |kv| {
                    prop_assert!(kv.usage().used_bytes <= BUDGET);
                    Ok(())
                },
            )?;
        }
    }
}
