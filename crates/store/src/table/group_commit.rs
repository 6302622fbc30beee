//! The store's group commit: a write applies its operations, then awaits a flush that covers
//! them. One flusher thread runs the backend's flush whenever writes are waiting, so every
//! write applied before a flush starts shares it, and no request thread blocks meanwhile
//! (waiters are woken through a `watch` channel).
//!
//! A write is acknowledged only if the flush that covered it succeeded in the backend
//! generation the write was applied in: a backend that reopened itself in between (after a
//! failed write) may have lost it, so it is refused with [`StoreError::Reopening`].

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::watch;

use crate::StoreError;

/// What the flusher did last.
#[derive(Debug, Clone, Default)]
struct Flushed {
    /// Every ticket up to this one has been through a flush.
    through: u64,
    /// The flush that covered tickets up to this one failed, with this error.
    failed_through: u64,
    failure: Option<StoreError>,
    /// The backend generation when the last flush ended.
    generation: u64,
    /// The backend is gone: no flush will come.
    closed: bool,
}

/// One flush of the backend: its result and the backend generation after it; `None` once
/// the backend is gone (the store closed).
pub(crate) type FlushFn = dyn Fn() -> Option<(Result<(), StoreError>, u64)> + Send + Sync;

struct Shared {
    /// Tickets handed out so far.
    requested: AtomicU64,
    flushed: watch::Sender<Flushed>,
    /// Flushes run so far (the `tablestore_group_commit_flushes_total` metric).
    flushes: AtomicU64,
}

/// Where the flusher sleeps. It holds this strongly but [`Shared`] only weakly, so that the
/// thread ends soon after the store is dropped.
#[derive(Default)]
struct Signal {
    /// Set when a waiter arrives.
    pending: Mutex<bool>,
    wake: Condvar,
}

pub(crate) struct GroupCommit {
    shared: Arc<Shared>,
    signal: Arc<Signal>,
}

impl GroupCommit {
    /// Starts the flusher thread; it ends once this value is dropped or `flush` says the
    /// backend is gone. `flush` must hold the backend weakly, so that closing the store
    /// drops it at once (and its clean-shutdown work runs).
    pub(crate) fn start(flush: Box<FlushFn>) -> Result<GroupCommit, StoreError> {
        let (flushed, _) = watch::channel(Flushed::default());
        let signal = Arc::new(Signal::default());
        let shared = Arc::new(Shared {
            requested: AtomicU64::new(0),
            flushes: AtomicU64::new(0),
            flushed,
        });
        let weak = Arc::downgrade(&shared);
        let thread_signal = Arc::clone(&signal);
        std::thread::Builder::new()
            .name("group-commit".into())
            .spawn(move || flusher(weak, thread_signal, flush))
            .map_err(|e| StoreError::io("starting the group-commit thread", e))?;
        Ok(GroupCommit { shared, signal })
    }

    /// Flushes run so far.
    pub(crate) fn flushes(&self) -> u64 {
        self.shared.flushes.load(Ordering::Relaxed)
    }

    /// Waits until everything applied before this call (in backend generation `generation`)
    /// is durable.
    pub(crate) async fn wait(&self, generation: u64) -> Result<(), StoreError> {
        let mut rx = self.shared.flushed.subscribe();
        let ticket = self.shared.requested.fetch_add(1, Ordering::SeqCst) + 1;
        {
            let mut pending = self.signal.pending.lock();
            // Already pending: the flusher has not taken the last signal yet and will see this
            // write's ticket too (a wake-up per write was a system call per write).
            if !*pending {
                *pending = true;
                self.signal.wake.notify_one();
            }
        }
        loop {
            {
                let state = rx.borrow_and_update();
                if state.closed {
                    return Err(StoreError::Reopening(
                        "the store closed before the write was flushed",
                    ));
                }
                if state.through >= ticket {
                    if state.failed_through >= ticket {
                        return Err(state
                            .failure
                            .clone()
                            .unwrap_or(StoreError::Reopening("flushing the store failed")));
                    }
                    if state.generation != generation {
                        return Err(StoreError::Reopening(
                            "the store was reopened before the write was flushed",
                        ));
                    }
                    return Ok(());
                }
            }
            if rx.changed().await.is_err() {
                return Err(StoreError::Reopening(
                    "the store closed before the write was flushed",
                ));
            }
        }
    }
}

fn flusher(shared: Weak<Shared>, signal: Arc<Signal>, flush: Box<FlushFn>) {
    // Tickets covered by the flushes so far.
    let mut flushed = 0;
    loop {
        {
            let mut pending = signal.pending.lock();
            signal
                .wake
                .wait_while_for(&mut pending, |p| !*p, Duration::from_millis(100));
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
        if covers == flushed {
            // The waiter that woke us was covered by the flush that just ended.
            continue;
        }
        flushed = covers;
        let Some((result, generation)) = flush() else {
            s.flushed.send_modify(|f| f.closed = true);
            return;
        };
        s.flushes.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = &result {
            tracing::error!(error = %e, "flushing the store failed; the waiting writes are refused");
        }
        s.flushed.send_modify(|f| {
            f.through = f.through.max(covers);
            f.generation = generation;
            if let Err(e) = result {
                f.failed_through = f.failed_through.max(covers);
                f.failure = Some(e);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// A backend whose flushes are counted and can be made to fail or to reopen it.
    #[derive(Default)]
    struct Backend {
        flushes: AtomicU64,
        generation: AtomicU64,
        fail: AtomicBool,
    }

    fn start(backend: &Arc<Backend>) -> GroupCommit {
        let weak = Arc::downgrade(backend);
        GroupCommit::start(Box::new(move || {
            let b = weak.upgrade()?;
            b.flushes.fetch_add(1, Ordering::SeqCst);
            let result = if b.fail.load(Ordering::SeqCst) {
                Err(StoreError::io(
                    "flushing",
                    std::io::Error::other("disk gone"),
                ))
            } else {
                Ok(())
            };
            Some((result, b.generation.load(Ordering::SeqCst)))
        }))
        .expect("start")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writes_share_flushes_and_each_waits_for_one() {
        let backend = Arc::new(Backend::default());
        let group = Arc::new(start(&backend));
        let waits: Vec<_> = (0..64)
            .map(|_| {
                let group = Arc::clone(&group);
                tokio::spawn(async move { group.wait(0).await })
            })
            .collect();
        for w in waits {
            w.await.expect("task").expect("durable");
        }
        let flushes = backend.flushes.load(Ordering::SeqCst);
        assert!(flushes >= 1, "a waiting write was flushed");
        assert_eq!(group.flushes(), flushes);
    }

    #[tokio::test]
    async fn a_failed_flush_or_a_reopen_refuses_the_writes_it_covered() {
        let backend = Arc::new(Backend::default());
        let group = start(&backend);
        backend.fail.store(true, Ordering::SeqCst);
        let err = group.wait(0).await.expect_err("the flush failed");
        assert_eq!(err.io_kind(), Some(std::io::ErrorKind::Other));
        backend.fail.store(false, Ordering::SeqCst);
        group.wait(0).await.expect("a later flush succeeds");
        // Applied in generation 0, flushed in generation 1: possibly lost, never acknowledged.
        backend.generation.store(1, Ordering::SeqCst);
        assert!(matches!(group.wait(0).await, Err(StoreError::Reopening(_))));
        group.wait(1).await.expect("applied after the reopen");
    }

    #[test]
    fn the_flusher_ends_with_the_backend() {
        let backend = Arc::new(Backend::default());
        let group = start(&backend);
        drop(backend);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let result = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(5), group.wait(0)).await });
        assert!(
            matches!(result, Ok(Err(StoreError::Reopening(_)))),
            "a write whose backend is gone is refused, not left waiting: {result:?}"
        );
    }
}
