//! Runs the PostgreSQL store's async work (tokio-postgres, deadpool) for the synchronous
//! [`Store`](crate::store::Store) contract.
//!
//! The store owns a small multi-threaded runtime of its own: the pool's connections and their
//! background tasks live there, whatever runtime (or none) the caller runs on, so they outlive
//! a test's runtime and are never starved by busy request workers. A call spawns its future
//! there and waits for the answer on a channel. A caller on a worker of a multi-threaded tokio
//! runtime (the server's handlers call point reads and writes inline) waits inside
//! `block_in_place`, so tokio moves that worker's other tasks elsewhere meanwhile; any other
//! thread (the blocking pool, a plain thread, a current-thread runtime) simply blocks.

use std::future::Future;
use std::sync::mpsc;

use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

/// Worker threads of the store's runtime: they only drive sockets and decode rows.
const WORKERS: usize = 2;

pub struct Bridge {
    /// `None` only while dropping.
    runtime: Option<Runtime>,
}

impl Bridge {
    pub fn new() -> std::io::Result<Bridge> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .thread_name("tablestore-postgres")
            .enable_all()
            .build()?;
        Ok(Bridge {
            runtime: Some(runtime),
        })
    }

    fn handle(&self) -> &Handle {
        self.runtime
            .as_ref()
            .expect("the runtime lives as long as the bridge")
            .handle()
    }

    /// Runs `work` on the store's runtime and waits for its result.
    pub fn run<T, F>(&self, work: F) -> T
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        self.handle().spawn(async move {
            let _ = tx.send(work.await);
        });
        let wait = move || rx.recv();
        let received = match Handle::try_current() {
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        };
        // The task sends before it ends; it is only dropped unsent if the runtime shut down,
        // which happens only when the bridge itself is dropped.
        received.expect("the store's runtime ran the work")
    }

    /// Starts `work` on the store's runtime without waiting for it.
    pub fn spawn<F>(&self, work: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.handle().spawn(work);
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which tokio forbids inside another runtime (a server
        // shutting down drops its store there): let its threads wind down on their own.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_from_plain_threads_and_from_both_runtime_flavors() {
        let bridge = std::sync::Arc::new(Bridge::new().unwrap());
        assert_eq!(bridge.run(async { 1 + 1 }), 2);
        let b = std::sync::Arc::clone(&bridge);
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(current.block_on(async move { b.run(async { 3 }) }), 3);
        let b = std::sync::Arc::clone(&bridge);
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let answer = multi.block_on(async move {
            tokio::spawn(async move { b.run(async { 4 }) })
                .await
                .unwrap()
        });
        assert_eq!(answer, 4);
        // Dropping the store inside a runtime must not panic.
        multi.block_on(async move { drop(bridge) });
    }
}
