//! The key-value engines under the table layer ([`crate::KvStore`]): [`Kv`], what an engine
//! must do, and the engines: [`memory`] (`--in-memory`, tests) and [`sled`] (on disk). The
//! RAM tier ([`crate::tier`]) is one more [`Kv`], layered over an engine.

pub mod memory;
pub mod sled;

use std::ops::Bound;
use std::sync::Arc;

use crate::{Footprint, StoreError};

/// The ordered key-value backend under [`KvStore`]. Two keyspaces: table metadata and entities.
pub trait Kv: Send + Sync + 'static {
    type Bytes: AsRef<[u8]> + Send;
    type Iter<'a>: Iterator<Item = Result<(Self::Bytes, Self::Bytes), StoreError>> + Send + 'a
    where
        Self: 'a;

    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Self::Bytes>, StoreError>;
    fn range(&self, space: Space, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> Self::Iter<'_>;
    /// Visits the entries of a range in key order, lent in place, until `visit` returns false.
    fn visit(
        &self,
        space: Space,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), StoreError> {
        visit_entries(self.range(space, start, end), visit)
    }
    /// The key of an entry near the middle of a range holding at least `min_rows` entries
    /// (never the range's first entry), for scanning the range's halves at once; `None` when
    /// the range is smaller or the backend reads it from disk (two cursors would only add
    /// seeks to a scan bound by the backend's pages).
    fn split_point(
        &self,
        _space: Space,
        _start: &Bound<Vec<u8>>,
        _end: &Bound<Vec<u8>>,
        _min_rows: usize,
    ) -> Option<Vec<u8>> {
        None
    }
    /// Applies all puts (`Some`) and removes (`None`) atomically.
    fn apply(&self, space: Space, batch: Vec<(Vec<u8>, Option<Vec<u8>>)>)
        -> Result<(), StoreError>;
    /// [`Kv::apply`] of puts only, to keys the caller found holding no value under the lock
    /// that orders every write of them (the partition lock): a backend may make such a write
    /// crash-atomic more cheaply (sled: a record of its keys only, see `intent`).
    fn apply_new_keys(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        self.apply(space, batch)
    }
    fn flush(&self) -> Result<(), StoreError>;
    /// Whether [`Kv::flush`] does any work (false for memory).
    fn is_persistent(&self) -> bool;
    /// Called before a write: a backend may reopen itself here after a failed write (sled
    /// refuses all writes after one failed). Returns the backend's generation.
    fn begin_write(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
    /// A number that changes whenever the backend discarded writes that were not yet flushed
    /// (by reopening). A write is durable only if its flush ended in the generation it was
    /// applied in.
    fn generation(&self) -> u64 {
        0
    }
    /// The entity keyspace's totals and the bytes on disk ([`Store::footprint`]).
    fn footprint(&self) -> Option<Footprint> {
        None
    }
    /// Table `table_id` was deleted: its entities are about to be purged and never read again.
    fn forget_table(&self, _table_id: u64) {}
}

/// Lends the entries of `entries` in order to `visit` until it returns false (the body of
/// [`Kv::visit`] for a backend that reads ranges as iterators).
pub(crate) fn visit_entries<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    entries: impl Iterator<Item = Result<(K, V), StoreError>>,
    visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
) -> Result<(), StoreError> {
    for entry in entries {
        let (k, v) = entry?;
        if !visit(k.as_ref(), v.as_ref()) {
            break;
        }
    }
    Ok(())
}

/// Bytes a [`Kv`] layered over a backend (the RAM tier, the write-ahead log) holds itself,
/// shared with the readers that copied them out, or the backend's own.
pub enum LayeredBytes<T> {
    Held(Arc<[u8]>),
    Backend(T),
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for LayeredBytes<T> {
    fn as_ref(&self) -> &[u8] {
        match self {
            LayeredBytes::Held(b) => b,
            LayeredBytes::Backend(b) => b.as_ref(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    Tables,
    Entities,
}
