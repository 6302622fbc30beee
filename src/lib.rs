//! An Azure Table storage–compatible server: the `tablestore` command and the library users
//! embed in their tests.
//!
//! The server is a workspace whose crates are its layers (docs/architecture.md); an import
//! that points up does not compile:
//!
//! ```text
//! tablestore (this crate)     startup: the `tablestore` command; testing: TestServer
//!   crates/tools              data: export, import, --seed, Azurite's data; admin
//!   crates/server             query, batch, exec, realism, insight, config, console, server
//!     crates/store            the Store contract, KvStore, the engines, the RAM tier, PostgreSQL
//!     crates/auth             Shared Key, SAS, bearer tokens, the table ACL codec (pure)
//!       crates/protocol       model and protocol: names, EDM values, entities; wire codecs (pure)
//! crates/bench                tablestore-bench, the load generator (shares no code)
//! ```
//!
//! # Public surface
//!
//! This crate re-exports what users and the repository's own tests, benches and fuzz targets
//! need, under the paths they have always had; each crate below keeps everything else
//! `pub(crate)` (`#![warn(unreachable_pub)]`, an error under the CI's clippy):
//! - [`startup::main`]: the whole `tablestore` command; `src/main.rs` only adds the allocator.
//! - [`testing::TestServer`]: the in-process server to embed in tests (ours in `tests/it`,
//!   and users', docs/sdk/rust.md), with [`config::Config`] to start it with and
//!   [`server::ServeLimits`] for its connection limits; [`testing::InProcessServer`], the
//!   same with no socket, which `tests/it` sends most requests to (through
//!   `server::InProcess`, the one entry into the server's application that needs no
//!   connection).
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
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub use tablestore_auth as auth;
pub use tablestore_protocol::{model, protocol};
use tablestore_server::console;
pub use tablestore_server::{config, query, server};
pub use tablestore_store as store;
/// The store conformance suite's macro (the `testing` feature).
#[cfg(feature = "testing")]
pub use tablestore_store::store_conformance;
use tablestore_tools::admin;
pub use tablestore_tools::data;

pub mod startup;
pub mod testing;
