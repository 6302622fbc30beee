//! The data tools of the `tablestore` command: tables in and out of a data folder, a running
//! server or files, and the signed client of a running server's control endpoints.
//!
//! - [`data`]: `tablestore export` / `import`, `--seed` and Azurite's database.
//! - [`admin`]: `tablestore admin`, a signed client of a running server's insight, metrics
//!   and fault rules.
//!
//! `data` never imports `admin` (`tests/it/layering.rs`); the crates below are named as they
//! are in every crate of tablestore (`crate::store`, `crate::config`, …).
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

use tablestore_auth as auth;
use tablestore_protocol::{model, protocol};
use tablestore_server::{config, query};
use tablestore_store as store;

pub mod admin;
pub mod data;
