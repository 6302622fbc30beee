//! Wire ⇄ typed values: URIs, headers, JSON payloads, errors, continuation tokens.
//! Pure functions; never imports `store`, `query` or `server`.

pub mod continuation;
pub mod error;
pub mod filter;
pub mod headers;
pub mod json;
pub mod operation;
pub mod uri;

pub use error::{ApiError, ErrorCode};
