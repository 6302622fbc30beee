//! An Azure Table storage-compatible server: a fast local endpoint for the Azure Tables SDKs.
//!
//! Layout:
//!
//! * [`auth`]: Shared Key, Shared Key Lite, SAS and bearer authentication, SAS authorization,
//!   configured accounts and the table ACL (`SignedIdentifiers`) codec. Pure functions; depends
//!   on nothing else in the crate.
#![forbid(unsafe_code)]

pub mod auth;
