//! The byte layout every store shares: [`key`] (keys in Azure's order: table id, PartitionKey,
//! RowKey; table metadata keys), [`codec`] (stored entity and table values) and [`lz4`] (the
//! per-value frames of the sled store's new data folders). Only the store reads it; the layers
//! above see key ranges and rows ([`crate::KeyRange`], [`crate::StoredRow`]).

pub mod codec;
pub mod key;
pub mod lz4;
