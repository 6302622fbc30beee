//! An Azure Table storage–compatible server.
//!
//! Layout (dependencies point downwards only; `tests/it/layering.rs` checks the arrows):
//! - [`model`]: domain types (names, table references, EDM values, entities, write
//!   operations, limits).
//! - [`protocol`]: wire ⇄ typed values (URIs, operations, headers, JSON, entity writes, the
//!   `$batch` codec, errors, continuation tokens); pure functions, never touches the store.
//! - [`store`]: ordered storage of tables and entities behind the [`store::Store`] contract,
//!   with one conformance suite for every store (`store::conformance`, compiled for tests
//!   only: `cfg(test)` or the `testing` feature).
//! - [`query`]: runs a query against the store: plan, evaluate, page.
//! - [`batch`]: entity group transactions: change-set rules, the table lookup, one atomic
//!   commit and each operation's outcome.
//! - `exec`: the executor: one typed operation in (for the caller's scope: account, SAS
//!   permissions and key range), one typed outcome or error out; owns planning, paging and
//!   the rules of `$batch`.
//! - [`auth`]: Shared Key, Shared Key Lite, SAS and bearer authentication, SAS authorization,
//!   configured accounts and the table ACL (`SignedIdentifiers`) codec; depends on nothing
//!   else in the crate.
//! - [`realism`]: production realism, off by default: scalability targets, early page ends,
//!   deleted-name memory, fault injection; the server consults it at named points.
//! - [`server`]: the axum front end, deliberately thin: admit → decode → execute → encode,
//!   with layers beside it; only [`testing`] depends on it.
//! - [`insight`]: query classes, bounded statistics and design advice from the design guide,
//!   fed with each request's outcome; Prometheus metrics.
//! - [`console`]: the web console's embedded assets (a client of the REST API and insight).
//! - [`config`]: command line and environment (with Azurite's options as aliases).
//! - [`admin`]: `tablestore admin`, a signed client of a running server's control endpoints.
//! - [`startup`]: the `tablestore` command: subcommands, start-up checks and their
//!   one-sentence errors, logging, the banner, serving until Ctrl-C or SIGTERM.
//! - [`testing`]: [`testing::TestServer`], a real server to embed in your own tests.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub(crate) mod admin;
pub mod auth;
pub(crate) mod batch;
pub mod config;
pub(crate) mod console;
pub mod data;
mod exec;
pub(crate) mod insight;
pub mod model;
pub mod protocol;
pub mod query;
pub(crate) mod realism;
pub mod server;
pub mod startup;
pub mod store;
pub mod testing;
