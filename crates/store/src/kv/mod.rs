//! The key-value engines under the table layer ([`crate::KvStore`]): [`Kv`], what an engine
//! must do, [`Backend`], what it may do better than the table layer's defaults, and the
//! engines, each in its folder: [`memory`] (`--in-memory`, tests) and [`sled`] (on disk). The
//! RAM tier ([`crate::tier`]) is one more [`Kv`], layered over an engine.
//!
//! A new engine implements [`Kv`] and [`Backend`] (often empty), passes the conformance suite
//! (`crate::store_conformance!` next to it) and is stacked in [`crate::open`].

pub mod memory;
pub mod sled;

use std::ops::Bound;
use std::sync::Arc;

use crate::{Footprint, StoreError};

/// What an ordered key-value engine must do for the table layer ([`crate::KvStore`]): point
/// reads, range reads in key order, atomic batches of puts and removes, and a flush, over two
/// keyspaces ([`Space`]). Nothing more: what an engine can do better than the table layer's
/// defaults is [`Backend`]'s.
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
    /// Applies all puts (`Some`) and removes (`None`) atomically.
    fn apply(&self, space: Space, batch: Vec<(Vec<u8>, Option<Vec<u8>>)>)
        -> Result<(), StoreError>;
    fn flush(&self) -> Result<(), StoreError>;
    /// Whether [`Kv::flush`] does any work (false for memory).
    fn is_persistent(&self) -> bool;
}

/// What the table layer asks of the stack under it beyond [`Kv`]: an engine's own abilities
/// and protocols, each with the answer of an engine that has none, so an engine implements
/// only what it has (`impl Backend for MyKv {}` for none). The RAM tier passes each through
/// to the engine under it, answering [`Backend::split_point`] itself for the tables it holds.
pub trait Backend: Kv {
    /// The key of an entry near the middle of a range holding at least `min_rows` entries
    /// (never the range's first entry), for scanning the range's halves at once; `None` when
    /// the range is smaller or the backend reads it from disk (two cursors would only add
    /// seeks to a scan bound by the backend's pages). The memory engine and the RAM tier.
    fn split_point(
        &self,
        _space: Space,
        _start: &Bound<Vec<u8>>,
        _end: &Bound<Vec<u8>>,
        _min_rows: usize,
    ) -> Option<Vec<u8>> {
        None
    }
    /// [`Kv::apply`] of puts only, to keys the caller found holding no value under the lock
    /// that orders every write of them (the partition lock): a backend may make such a write
    /// crash-atomic more cheaply (sled: a record of its keys only, see `kv/sled/intent.rs`).
    fn apply_new_keys(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        self.apply(space, batch)
    }
    /// sled's recovery protocol, with [`Backend::generation`]: called before a write, a
    /// backend may reopen itself here after a failed write (sled refuses all writes after
    /// one failed). Returns the backend's generation.
    fn begin_write(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
    /// A number that changes whenever the backend discarded writes that were not yet flushed
    /// (by reopening). A write is durable only if its flush ended in the generation it was
    /// applied in.
    fn generation(&self) -> u64 {
        0
    }
    /// The entity keyspace's totals and the bytes on disk ([`crate::Store::footprint`]).
    fn footprint(&self) -> Option<Footprint> {
        None
    }
    /// A value read from the backend as shared bytes, for an image of the store's state
    /// ([`crate::state::Image`]): a copy, unless the backend already holds it shared (the
    /// memory engine), so an image of the memory store shares its entities' bytes.
    fn share(bytes: Self::Bytes) -> Arc<[u8]> {
        Arc::from(bytes.as_ref())
    }
    /// [`Backend::apply_new_keys`] of entities whose values are shared bytes (an image's, being
    /// restored): a backend that keeps values shared (the memory engine) keeps these as they
    /// are, so a restored entity shares its bytes with the snapshot; others copy them.
    fn put_new_shared(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Arc<[u8]>)>,
    ) -> Result<(), StoreError> {
        let batch = batch
            .into_iter()
            .map(|(k, v)| (k, Some(v.to_vec())))
            .collect();
        self.apply_new_keys(space, batch)
    }
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

/// Bytes a [`Kv`] layered over a backend (the RAM tier) holds itself, shared with the readers
/// that copied them out, or the backend's own.
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

/// The two keyspaces of every engine: table metadata and entities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    Tables,
    Entities,
}
