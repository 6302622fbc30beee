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
}

struct Shared {
    store: Arc<dyn Store>,
    /// Tickets handed out so far.
    requested: AtomicU64,
    /// Set when a waiter arrives; the flusher sleeps on it.
    pending: Mutex<bool>,
    wake: Condvar,
    flushed: watch::Sender<Flushed>,
}

pub struct GroupCommit {
    shared: Arc<Shared>,
}

impl GroupCommit {
    /// Starts the flusher thread; it ends once this value is dropped.
    pub fn start(store: Arc<dyn Store>) -> GroupCommit {
        let (flushed, _) = watch::channel(Flushed::default());
        let shared = Arc::new(Shared {
            store,
            requested: AtomicU64::new(0),
            pending: Mutex::new(false),
            wake: Condvar::new(),
            flushed,
        });
        let weak = Arc::downgrade(&shared);
        let spawned = std::thread::Builder::new()
            .name("group-commit".into())
            .spawn(move || flusher(weak));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "could not start the group-commit thread");
        }
        GroupCommit { shared }
    }

    /// Waits until everything applied before this call is durable. Returns at once when the
    /// store does not need syncing (memory, relaxed durability).
    pub async fn wait(&self) -> Result<(), ApiError> {
        if !self.shared.store.needs_sync() {
            return Ok(());
        }
        let mut rx = self.shared.flushed.subscribe();
        let ticket = self.shared.requested.fetch_add(1, Ordering::SeqCst) + 1;
        {
            let mut pending = self
                .shared
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            *pending = true;
            self.shared.wake.notify_one();
        }
        loop {
            let state = *rx.borrow_and_update();
            if state.through >= ticket {
                if state.failed_through >= ticket {
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

fn flusher(shared: Weak<Shared>) {
    loop {
        let Some(s) = shared.upgrade() else {
            return;
        };
        {
            let pending = s.pending.lock().unwrap_or_else(|e| e.into_inner());
            let (mut pending, _) = s
                .wake
                .wait_timeout_while(pending, Duration::from_millis(100), |p| !*p)
                .unwrap_or_else(|e| e.into_inner());
            if !*pending {
                continue;
            }
            *pending = false;
        }
        // Every ticket handed out before this point belongs to a write already applied.
        let covers = s.requested.load(Ordering::SeqCst);
        let result = s.store.flush();
        let failed = result.is_err();
        if let Err(e) = result {
            tracing::error!(error = ?e, "flushing the store failed; the waiting writes are refused");
        }
        s.flushed.send_modify(|f| {
            f.through = f.through.max(covers);
            if failed {
                f.failed_through = f.failed_through.max(covers);
            }
        });
    }
}
