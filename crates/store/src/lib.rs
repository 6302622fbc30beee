//! Ordered storage of tables and entities; knows nothing about OData or HTTP.
//!
//! The rooms, from the contract down:
//! - [`contract`]: [`Store`], the asynchronous interface the rest of the server uses (the
//!   executor awaits it directly), its errors, read jobs and rows. Re-exported here.
//! - [`table`]: [`KvStore`], the one implementation of [`Store`] over any ordered key-value
//!   engine ([`Kv`]). Preconditions (If-Match, insert-must-not-exist) are checked inside
//!   [`Store::commit`] under a per-partition lock and applied as one atomic engine batch, so
//!   conditional writes never race and a batch is all-or-nothing; the commit then awaits the
//!   store's one group commit when the durability mode asks for it. The store stamps
//!   Timestamps from a process-wide monotonic clock, so every write gets a distinct Timestamp
//!   and hence a distinct ETag.
//! - [`kv`]: what an engine must do ([`Kv`]) and the engines, each in its folder:
//!   [`kv::memory`] (BTreeMaps) and [`kv::sled`] (on disk).
//! - [`tier`]: the RAM tier, a [`Kv`] that keeps whole tables of the engine under it in
//!   memory.
//! - [`postgres`]: the contract on PostgreSQL, for several nodes over one database.
//! - [`encoding`]: the byte layout every store shares: keys in Azure's order, stored values,
//!   LZ4 frames.
//! - [`state`]: reset, snapshots and restore of a store's accounts (`/_tablestore/…`), as a
//!   capability a store offers through [`Store::state`].
//! - [`open`]: the one function that stacks engines: which store a configuration names, with
//!   the RAM tier in front of sled.
//! - `conformance`: the one suite every store passes (tests and the `testing` feature).
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

#[cfg(any(test, feature = "testing"))]
pub mod conformance;
pub mod contract;
pub mod encoding;
pub mod kv;
pub mod open;
pub mod postgres;
pub mod state;
pub mod table;
pub mod tier;

/// The model, under the name it has in every crate of tablestore.
use tablestore_protocol::model;

#[cfg(any(test, feature = "testing"))]
pub use contract::block_on;
pub use contract::footprint::Footprint;
pub use contract::read::{read_fn, read_with, ReadJob, RowSource};
pub use contract::row::{StoredRow, StoredRows};
pub use contract::{CommitError, Durability, Store, StoreError, TableInfo};
pub use encoding::key::{KeyBound, KeyRange};
pub use kv::{Backend, Kv, LayeredBytes, Space};
pub use model::{TableId, TableRef};
pub use table::{KvRows, KvStore};
