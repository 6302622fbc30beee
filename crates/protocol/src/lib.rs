//! The Table service's model and wire protocol, the bottom layer of tablestore: pure
//! functions over bytes and typed values, with no runtime, storage or HTTP server.
//!
//! - [`model`]: domain types (names, table references, EDM values, entities, write
//!   operations, limits).
//! - [`protocol`]: wire ⇄ typed values (URIs, operations, headers, JSON, entity writes, the
//!   `$batch` codec, errors, continuation tokens); never touches the store.
//!
//! What is `pub` here is what the crates above use (the store, the server, the tools) and what
//! the fuzz targets and property tests drive; the rest is `pub(crate)`.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod model;
pub mod protocol;
