//! The server: the executor and the axum front end over the store, with the layers beside
//! the request path, and the configuration they run with.
//!
//! Dependencies point downwards only; the crates below are named as they are in every crate
//! of tablestore (`crate::model`, `crate::protocol`, `crate::auth`, `crate::store`), and
//! `tests/it/layering.rs` checks the arrows between this crate's modules:
//! - [`query`]: runs a query against the store: plan, evaluate, page.
//! - `batch`: entity group transactions: change-set rules, the table lookup, one atomic
//!   commit and each operation's outcome.
//! - `exec`: the executor: one typed operation in (for the caller's scope: account, SAS
//!   permissions and key range), one typed outcome or error out; owns planning, paging and
//!   the rules of `$batch`.
//! - `realism`: production realism, off by default: scalability targets, early page ends,
//!   deleted-name memory, fault injection; the server consults it at named points.
//! - `insight`: query classes, bounded statistics and design advice from the design guide,
//!   fed with each request's outcome; Prometheus metrics.
//! - [`console`]: the web console's embedded assets (a client of the REST API and insight).
//! - [`config`]: command line and environment (with Azurite's options as aliases).
//! - [`server`]: the axum front end, deliberately thin: admit → decode → execute → encode,
//!   with layers beside it.
//!
//! What is `pub` is what the crates above use: the `tablestore` command and its test fixture
//! (the root crate) and the data tools (`crates/tools`).
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

use tablestore_auth as auth;
use tablestore_protocol::{model, protocol};
use tablestore_store as store;

pub(crate) mod batch;
pub mod config;
pub mod console;
mod exec;
pub(crate) mod insight;
pub mod query;
pub(crate) mod realism;
pub mod server;
