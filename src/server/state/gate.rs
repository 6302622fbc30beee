//! The gate every request of the Table service passes, so that a reset, restore or
//! account deletion is atomic for clients: while one runs ([`Gate::close`]), requests that
//! were running finish first, and new ones wait until it is done; so a request sees the
//! state before or after, never a mix, and no change set is cut in two.
//!
//! Open (nearly always), passing costs two atomic additions on a counter of the thread's own
//! stripe and two loads of a flag that only a reset writes: nothing that cores contend for,
//! no allocation, no lock. It is a "big reader" lock: readers count themselves on per-thread
//! stripes (each on its own cache line), the writer raises the flag and waits until every
//! stripe is empty. A reader counts itself and then reads the flag, the writer raises the
//! flag and then reads the counts, both sequentially consistent: one of the two sees the
//! other, so no reader runs while the writer thinks the gate empty.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use tokio::sync::{Mutex, MutexGuard, Notify};

/// Stripes of the reader count; requests on the same thread share one.
const STRIPES: usize = 64;

/// One stripe, alone on its cache line (128 bytes: a pair of lines on x86, one on ARM).
#[repr(align(128))]
#[derive(Default)]
struct Stripe(AtomicUsize);

pub struct Gate {
    stripes: Box<[Stripe]>,
    closed: AtomicBool,
    /// Bumped each time the gate closes: a request that read it before being admitted knows
    /// whether a change ran between its admission and its pass.
    epoch: AtomicU64,
    /// Wakes the closer when the last reader leaves.
    drained: Notify,
    /// Wakes readers when the gate opens.
    opened: Notify,
    /// One closer at a time.
    closer: Mutex<()>,
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's stripe (assigned round-robin at its first request).
#[inline]
fn stripe_index() -> usize {
    STRIPE.with(|s| {
        let i = s.get();
        if i != usize::MAX {
            return i;
        }
        let i = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
        s.set(i);
        i
    })
}

/// A request inside the gate; leaving is dropping it.
pub struct Pass<'a> {
    gate: &'a Gate,
    stripe: usize,
}

impl Drop for Pass<'_> {
    #[inline]
    fn drop(&mut self) {
        self.gate.stripes[self.stripe]
            .0
            .fetch_sub(1, Ordering::SeqCst);
        if self.gate.closed.load(Ordering::SeqCst) {
            self.gate.drained.notify_waiters();
        }
    }
}

/// The gate held closed; dropping it opens the gate.
pub(crate) struct Closed<'a> {
    gate: &'a Gate,
    _closer: MutexGuard<'a, ()>,
}

impl Drop for Closed<'_> {
    fn drop(&mut self) {
        self.gate.closed.store(false, Ordering::SeqCst);
        self.gate.opened.notify_waiters();
    }
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

impl Gate {
    pub fn new() -> Gate {
        Gate {
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
            closed: AtomicBool::new(false),
            epoch: AtomicU64::new(0),
            drained: Notify::new(),
            opened: Notify::new(),
            closer: Mutex::new(()),
        }
    }

    /// The number of times the gate has closed so far.
    #[inline]
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// Passes the gate: at once while it is open, else once it opens.
    #[inline]
    pub async fn pass(&self) -> Pass<'_> {
        let stripe = stripe_index();
        loop {
            self.stripes[stripe].0.fetch_add(1, Ordering::SeqCst);
            if !self.closed.load(Ordering::SeqCst) {
                return Pass { gate: self, stripe };
            }
            // Closed: step back out (waking the closer if we were the last) and wait.
            let opened = self.opened.notified();
            tokio::pin!(opened);
            opened.as_mut().enable();
            self.stripes[stripe].0.fetch_sub(1, Ordering::SeqCst);
            self.drained.notify_waiters();
            if self.closed.load(Ordering::SeqCst) {
                opened.await;
            }
        }
    }

    /// Closes the gate: new requests wait, and this returns once every request inside has
    /// left. The gate opens again when the returned guard is dropped.
    pub(crate) async fn close(&self) -> Closed<'_> {
        let closer = self.closer.lock().await;
        self.epoch.fetch_add(1, Ordering::SeqCst);
        self.closed.store(true, Ordering::SeqCst);
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.inside() == 0 {
                break;
            }
            drained.await;
        }
        Closed {
            gate: self,
            _closer: closer,
        }
    }

    /// Requests inside the gate now.
    fn inside(&self) -> usize {
        self.stripes
            .iter()
            .map(|s| s.0.load(Ordering::SeqCst))
            .fold(0usize, usize::wrapping_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn an_open_gate_lets_requests_through_at_once() {
        let gate = Gate::new();
        let a = gate.pass().await;
        let b = gate.pass().await;
        assert_eq!(gate.inside(), 2);
        drop((a, b));
        assert_eq!(gate.inside(), 0);
        assert_eq!(gate.epoch(), 0);
    }

    /// A close waits for the requests inside; requests arriving meanwhile wait for it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn closing_waits_for_requests_inside_and_holds_new_ones() {
        let gate = Arc::new(Gate::new());
        let log = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let inside = gate.pass().await;
        let (closing_tx, closing_rx) = tokio::sync::oneshot::channel();
        let closer = {
            let (gate, log) = (Arc::clone(&gate), Arc::clone(&log));
            tokio::spawn(async move {
                let close = gate.close();
                tokio::pin!(close);
                // Polled once: the flag is up before the late request below tries to pass.
                let first = futures::poll!(close.as_mut());
                assert!(
                    first.is_pending(),
                    "a request is inside: the close must wait"
                );
                closing_tx.send(()).unwrap();
                let closed = close.await;
                log.lock().push("closed");
                tokio::time::sleep(Duration::from_millis(20)).await;
                log.lock().push("opening");
                drop(closed);
            })
        };
        closing_rx.await.unwrap();
        let late = {
            let (gate, log) = (Arc::clone(&gate), Arc::clone(&log));
            tokio::spawn(async move {
                let _pass = gate.pass().await;
                log.lock().push("late request");
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(log.lock().is_empty(), "{:?}", log.lock());
        log.lock().push("first request leaves");
        drop(inside);
        closer.await.unwrap();
        late.await.unwrap();
        assert_eq!(
            *log.lock(),
            vec!["first request leaves", "closed", "opening", "late request"]
        );
        assert_eq!(gate.epoch(), 1);
    }

    /// Many requests on many threads against closes: no request is ever inside while the
    /// gate is held closed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn no_request_runs_while_the_gate_is_closed() {
        let gate = Arc::new(Gate::new());
        let held = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (gate, held) = (Arc::clone(&gate), Arc::clone(&held));
            tasks.push(tokio::spawn(async move {
                for _ in 0..2000 {
                    let _pass = gate.pass().await;
                    assert!(!held.load(Ordering::SeqCst), "a request ran inside a close");
                    tokio::task::yield_now().await;
                }
            }));
        }
        for _ in 0..50 {
            let closed = gate.close().await;
            held.store(true, Ordering::SeqCst);
            tokio::task::yield_now().await;
            held.store(false, Ordering::SeqCst);
            drop(closed);
            tokio::task::yield_now().await;
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(gate.inside(), 0);
    }
}
