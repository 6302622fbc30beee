//! Wire ⇄ typed values: URIs, operations, headers, JSON payloads, entity writes, the
//! `$batch` codec, errors, continuation tokens. Pure functions; imports nothing of the crate
//! but `model` (tests/it/layering.rs checks it).

pub mod batch;
pub mod continuation;
pub mod dialect;
pub mod error;
pub mod filter;
pub mod headers;
pub mod json;
pub mod operation;
pub mod request_units;
pub mod service_properties;
pub mod uri;
pub mod write;
pub(crate) mod xml_tree;

pub use error::{ApiError, ErrorCode};
