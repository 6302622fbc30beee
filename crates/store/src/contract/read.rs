//! Scans as jobs the store runs: the query executor's page logic (look-ahead, scan budget,
//! the two-core split) is synchronous and visits stored rows in place, so it is written once
//! as a [`ReadJob`] over a [`RowSource`] (a synchronous view of one table's rows) and handed
//! to [`Store::read`], which runs it on the blocking pool so that it sees each change set
//! whole. [`ReadPool`] bounds how many such jobs run at once.

use std::any::Any;
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::{KeyRange, Store, StoreError, StoredRow, TableId};

/// One table's stored rows, as a read job sees them.
pub trait RowSource: Sync {
    /// Visits the stored rows of `range` in key order, without copying or decoding them,
    /// until `visit` returns false.
    fn scan_raw(
        &self,
        range: &KeyRange,
        visit: &mut dyn FnMut(StoredRow<'_>) -> bool,
    ) -> Result<(), StoreError>;

    /// A PartitionKey near the middle of `range` at which a scan of it may be split in two,
    /// each half read by its own thread: the rows before that partition, and the partition
    /// with the rows after it (both non-empty). `None` when the range holds fewer than
    /// `min_rows` rows or the store would not gain by it (it reads the range from disk).
    fn split_point(&self, _range: &KeyRange, _min_rows: usize) -> Option<String> {
        None
    }
}

/// Synchronous work over one table's rows (the scans behind one response page).
pub trait ReadJob: Any + Send {
    /// Reads what the job needs from `rows`. The store may run it again from the start (a
    /// change set was committed while it read), so each run begins from a clean state.
    fn run(&mut self, rows: &dyn RowSource) -> Result<(), StoreError>;
}

/// Runs `job` over `table` with [`Store::read`] and gives it back with what it read.
pub async fn read_with<J: ReadJob>(
    store: &dyn Store,
    table: TableId,
    job: J,
) -> Result<J, StoreError> {
    let done: Box<dyn Any> = store.read(table, Box::new(job)).await?;
    done.downcast::<J>()
        .map(|job| *job)
        .map_err(|_| StoreError::Corrupt("the store gave back another read job".into()))
}

/// A read job made of a function: `read` reads the rows into a fresh `T` on each run.
pub(crate) struct ReadFn<T, F> {
    read: F,
    out: T,
}

impl<T, F> ReadJob for ReadFn<T, F>
where
    T: Default + Send + 'static,
    F: FnMut(&dyn RowSource, &mut T) -> Result<(), StoreError> + Send + 'static,
{
    fn run(&mut self, rows: &dyn RowSource) -> Result<(), StoreError> {
        self.out = T::default();
        (self.read)(rows, &mut self.out)
    }
}

/// Runs `read` over `table` as a read job ([`ReadFn`]) and returns what it read.
pub async fn read_fn<T, F>(store: &dyn Store, table: TableId, read: F) -> Result<T, StoreError>
where
    T: Default + Send + 'static,
    F: FnMut(&dyn RowSource, &mut T) -> Result<(), StoreError> + Send + 'static,
{
    let job = ReadFn {
        read,
        out: T::default(),
    };
    Ok(read_with(store, table, job).await?.out)
}

/// Bounds the read jobs running on the blocking pool at once; the rest wait their turn.
/// Unbounded, 32 concurrent full-table scans each pulled their own pages through sled's cache
/// and took the server from ~120 MiB to over 300 MiB resident, for no more scans per second.
pub(crate) struct ReadPool {
    permits: Arc<Semaphore>,
}

impl ReadPool {
    /// A few jobs per core keep the cores busy while a scan waits on the disk.
    pub(crate) fn new() -> ReadPool {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        ReadPool {
            permits: Arc::new(Semaphore::new((cores * 4).clamp(4, 64))),
        }
    }

    /// Runs `work` on the blocking pool once a permit is free. The permit goes with the work:
    /// a caller that stops waiting (its client went away) does not free it early.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| stopped("the store's read permits were closed"))?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work()
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "a read job stopped");
            StoreError::Io {
                doing: "running a read".into(),
                source: Arc::new(e),
            }
        })?
    }
}

impl ReadPool {
    /// Runs `job` with `read` (which runs it over the store's rows) on the blocking pool, and
    /// gives it back.
    pub(crate) async fn run_job(
        &self,
        mut job: Box<dyn ReadJob>,
        read: impl FnOnce(&mut dyn ReadJob) -> Result<(), StoreError> + Send + 'static,
    ) -> Result<Box<dyn ReadJob>, StoreError> {
        self.run(move || {
            read(&mut *job)?;
            Ok(job)
        })
        .await
    }
}

fn stopped(why: &'static str) -> StoreError {
    StoreError::Io {
        doing: "running a read".into(),
        source: Arc::new(std::io::Error::other(why)),
    }
}
