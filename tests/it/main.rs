//! The integration tests, as one binary: one module per area (each was its own binary, and
//! linking the whole crate once per file was most of a cold build), and `common`, the kit they
//! share. Run one area with `cargo test --test it <module>::`.

#[path = "../common/mod.rs"]
#[macro_use]
mod common;

mod accounts;
mod alloc_budget;
mod arbitrary_input;
mod auth;
mod auth_golden;
mod batch;
mod cli;
mod client_shapes;
mod concurrency;
mod cosmos;
mod crash;
mod data;
mod dropin;
mod durability;
mod entities;
mod errors;
mod faults;
mod fuzz_regressions;
mod hostile_batch;
mod hostile_filter;
mod hostile_http;
mod hostile_json;
mod hostile_xml;
mod insight;
mod layering;
mod limits;
mod persistence;
mod query;
mod realism;
mod refusal_log;
mod rust_sdk;
mod scale_out;
mod security;
mod service;
mod service_url;
mod smoke;
mod soak;
mod state;
mod state_faults;
mod store_postgres;
mod tables;
mod tls;
