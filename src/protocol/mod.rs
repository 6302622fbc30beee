//! Wire ⇄ typed values: URIs, headers, JSON payloads, errors, continuation tokens.
//! Pure functions; never imports `store`, `query` or `server`.

pub mod batch;
pub mod continuation;
pub mod error;
pub mod filter;
pub mod headers;
pub mod json;
pub mod operation;
pub mod service_properties;
pub mod uri;
pub mod xml_tree;

pub use error::{ApiError, ErrorCode};
