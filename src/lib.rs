//! An Azure Table storage–compatible server.
//!
//! # Public surface
//!
//! Everything is `pub(crate)` unless something outside the library needs it, and
//! `#![warn(unreachable_pub)]` (an error under the CI's clippy) keeps it so. What stays
//! public, and who needs it:
//! - [`startup::main`]: the whole `tablestore` command; `src/main.rs` only adds the allocator.
//! - [`testing::TestServer`]: the in-process server to embed in tests (ours in `tests/it`,
//!   and users', docs/sdk/rust.md), with [`config::Config`] to start it with and
//!   [`server::ServeLimits`] for its connection limits.
//! - [`config`]: also the development account ([`config::DEV_ACCOUNT`],
//!   [`config::DEV_ACCOUNT_KEY`]) that tests sign with, and [`config::Config::try_parse_args`]
//!   for the command-line tests.
//! - [`protocol`] (URIs, operations, JSON, `$batch`, `$filter`, service properties, headers,
//!   continuation tokens) and [`auth`] (authentication, SAS, the ACL codec, request signing
//!   in [`auth::canonical`]): the parsers of untrusted input that the fuzz targets (`fuzz/`)
//!   and the property tests (`tests/it/arbitrary_input.rs`, `fuzz_regressions.rs`) drive,
//!   and the signer of the tests' own requests.
//! - [`model`], [`store`] and [`query`]: entities, the `Store` contract, its engines and the
//!   query planner, for the store-level tests (`durability`, `store_postgres`, which runs the
//!   `store_conformance!` suite with the `testing` feature) and the benches (`benches/`).
//! - [`data::cli::seed`] with [`store::open`], and [`server::realism::options`]: the Cosmos
//!   tests seed a store and check the realism options as start-up does (`tests/it/cosmos.rs`).
//!
//! The bench binary (`src/bin/tablestore-bench`) uses none of it.
//!
//! # Layout
//!
//! Dependencies point downwards only; `tests/it/layering.rs` checks the arrows:
//! - [`model`]: domain types (names, table references, EDM values, entities, write
//!   operations, limits).
//! - [`protocol`]: wire ⇄ typed values (URIs, operations, headers, JSON, entity writes, the
//!   `$batch` codec, errors, continuation tokens); pure functions, never touches the store.
//! - [`store`]: ordered storage of tables and entities behind the [`store::Store`] contract,
//!   with one conformance suite for every store (`store::conformance`, compiled for tests
//!   only: `cfg(test)` or the `testing` feature).
//! - [`query`]: runs a query against the store: plan, evaluate, page.
//! - `batch`: entity group transactions: change-set rules, the table lookup, one atomic
//!   commit and each operation's outcome.
//! - `exec`: the executor: one typed operation in (for the caller's scope: account, SAS
//!   permissions and key range), one typed outcome or error out; owns planning, paging and
//!   the rules of `$batch`.
//! - [`auth`]: Shared Key, Shared Key Lite, SAS and bearer authentication, SAS authorization,
//!   configured accounts and the table ACL (`SignedIdentifiers`) codec; depends on nothing
//!   else in the crate.
//! - `realism`: production realism, off by default: scalability targets, early page ends,
//!   deleted-name memory, fault injection; the server consults it at named points.
//! - [`server`]: the axum front end, deliberately thin: admit → decode → execute → encode,
//!   with layers beside it; only [`startup`] and [`testing`] depend on it.
//! - `insight`: query classes, bounded statistics and design advice from the design guide,
//!   fed with each request's outcome; Prometheus metrics.
//! - `console`: the web console's embedded assets (a client of the REST API and insight).
//! - [`data`]: `tablestore export` / `import`, `--seed` and Azurite's database.
//! - [`config`]: command line and environment (with Azurite's options as aliases).
//! - `admin`: `tablestore admin`, a signed client of a running server's control endpoints.
//! - [`startup`]: the `tablestore` command: subcommands, start-up checks and their
//!   one-sentence errors, logging, the banner, serving until Ctrl-C or SIGTERM.
//! - [`testing`]: [`testing::TestServer`], a real server to embed in your own tests.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub use tablestore_auth as auth;
pub use tablestore_protocol::{model, protocol};
use tablestore_server::console;
pub use tablestore_server::{config, query, server};
pub use tablestore_store as store;
pub use tablestore_store::store_conformance;
use tablestore_tools::admin;
pub use tablestore_tools::data;

pub mod startup;
pub mod testing;
