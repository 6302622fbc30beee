//! Asynchronous group commit: a write handler applies its operations, then awaits a flush
//! that covers them. One flusher thread runs `Store::flush` whenever writes are waiting, so
//! all writes applied before a flush starts share it, and no request thread blocks while
//! waiting (waiters are woken through a `watch` channel).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use tokio::sync::watch;

use crate::protocol::{ApiError, ErrorCode};
use crate::store::Store;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Flushed {
    /// Every ticket up to this one has been through a flush.
    through: u64,
    /// The flush that covered tickets up to this one failed.
    failed_through: u64,
    /// The store generation when the last flush ended.
    generation: u64,
}

struct Shared {
    store: Arc<dyn Store>,
    /// Tickets handed out so far.
    requested: AtomicU64,
    flushed: watch::Sender<Flushed>,
    signal: Arc<Signal>,
    /// Flushes run so far (the `tablestore_group_commit_flushes_total` metric).
    flushes: AtomicU64,
}

/// Where the flusher sleeps. It holds this strongly but the store only weakly, so closing the
/// server drops the store at once (and the store's clean-shutdown work runs).
#[derive(Default)]
struct Signal {
    /// Set when a waiter arrives.
    pending: Mutex<bool>,
    wake: Condvar,
}

pub struct GroupCommit {
    shared: Arc<Shared>,
}

impl GroupCommit {
    /// Starts the flusher thread; it ends once this value is dropped.
    pub fn start(store: Arc<dyn Store>) -> GroupCommit {
        let (flushed, _) = watch::channel(Flushed::default());
        let signal = Arc::new(Signal::default());
        let shared = Arc::new(Shared {
            store,
            requested: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            flushed,
            signal: Arc::clone(&signal),
        });
        let weak = Arc::downgrade(&shared);
        let spawned = std::thread::Builder::new()
            .name("group-commit".into())
            .spawn(move || flusher(weak, signal));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start the group-commit thread");
        }
        GroupCommit { shared }
    }

    /// Flushes run so far.
    pub fn flushes(&self) -> u64 {
        self.shared.flushes.load(Ordering::Relaxed)
    }

    /// Waits until everything applied before this call (in store generation `generation`)
    /// is durable. Returns at once when the store does not need syncing (memory, relaxed
    /// durability). A write whose generation ended before a flush covered it may be lost, so
    /// it is refused (503 ServerBusy), never acknowledged.
    pub async fn wait(&self, generation: u64) -> Result<(), ApiError> {
        if !self.shared.store.needs_sync() {
            return Ok(());
        }
        let mut rx = self.shared.flushed.subscribe();
        let ticket = self.shared.requested.fetch_add(1, Ordering::SeqCst) + 1;
        {
            let signal = &self.shared.signal;
            let mut pending = signal.pending.lock().unwrap_or_else(|e| e.into_inner());
            *pending = true;
            signal.wake.notify_one();
        }
        loop {
            let state = *rx.borrow_and_update();
            if state.through >= ticket {
                if state.failed_through >= ticket || state.generation != generation {
                    return Err(ApiError::new(ErrorCode::ServerBusy));
                }
                return Ok(());
            }
            if rx.changed().await.is_err() {
                return Err(ApiError::new(ErrorCode::InternalError));
            }
        }
    }
}

fn flusher(shared: Weak<Shared>, signal: Arc<Signal>) {
    loop {
        {
            let pending = signal.pending.lock().unwrap_or_else(|e| e.into_inner());
            let (mut pending, _) = signal
                .wake
                .wait_timeout_while(pending, Duration::from_millis(100), |p| !*p)
                .unwrap_or_else(|e| e.into_inner());
            let woken = *pending;
            *pending = false;
            drop(pending);
            if shared.strong_count() == 0 {
                return;
            }
            if !woken {
                continue;
            }
        }
        let Some(s) = shared.upgrade() else {
            return;
        };
        // Every ticket handed out before this point belongs to a write already applied.
        let covers = s.requested.load(Ordering::SeqCst);
        let result = s.store.flush();
        s.flushes.fetch_add(1, Ordering::Relaxed);
        let generation = s.store.generation();
        let failed = result.is_err();
        if let Err(e) = result {
            tracing::error!(error = ?e, "flushing the store failed; the waiting writes are refused");
        }
        s.flushed.send_modify(|f| {
            f.through = f.through.max(covers);
            f.generation = generation;
            if failed {
                f.failed_through = f.failed_through.max(covers);
            }
        });
    }
}
