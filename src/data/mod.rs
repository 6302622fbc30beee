//! Moving data in and out of tables: `tablestore export` / `tablestore import`, `--seed` at
//! start-up, and Azurite's table database.
//!
//! Formats ([`jsonl`]: one entity per line in the wire's typed JSON; [`csv`]: Storage
//! Explorer's typed CSV; [`azurite`]: Azurite's LokiJS file) are read and written as streams of
//! entities. Endpoints ([`local`]: a data folder or a running server's store; [`remote`]: any
//! Table endpoint over HTTP) list tables, scan them in key order and take batches of writes.
//! [`transfer`] joins the two with checkpoints for `--resume`, and [`progress`] reports;
//! [`sentences`] says what an endpoint's failures mean.
//!
//! Depends on model, protocol (the wire's typed JSON, `$filter`), query (evaluating `$filter`
//! on a data folder), store, and auth (Shared Key signing for remote endpoints).

pub(crate) mod azurite;
pub mod cli;
pub(crate) mod csv;
pub(crate) mod jsonl;
pub(crate) mod local;
pub(crate) mod progress;
pub(crate) mod remote;
pub(crate) mod sentences;
pub(crate) mod transfer;

use std::fmt;

use percent_encoding::utf8_percent_encode;

use crate::model::{Entity, WriteOp};

/// A failure of an export or import, as one sentence for the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError(pub String);

impl DataError {
    pub(crate) fn new(message: impl Into<String>) -> DataError {
        DataError(message.into())
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DataError {}

impl From<std::io::Error> for DataError {
    fn from(e: std::io::Error) -> DataError {
        DataError(e.to_string())
    }
}

/// What an import does when an entity with the same keys already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum Mode {
    /// Insert Entity: an existing entity is an error and the import stops.
    #[default]
    Insert,
    /// Insert Or Replace Entity: the imported entity replaces the existing one.
    Replace,
    /// Insert Or Merge Entity: imported properties are merged into the existing entity.
    Merge,
    /// Insert Entity, leaving existing entities as they are.
    Skip,
}

/// Why a batch was refused, as far as an import needs to tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WriteError {
    /// An operation inserted an entity that exists (Insert Entity's `EntityAlreadyExists`).
    Exists { index: usize },
    /// Anything else, as a sentence.
    Other(String),
}

/// A table's stored access policies, as an endpoint has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TableAcl {
    /// A Get Table ACL body with at least one policy.
    Policies(String),
    /// No policy is set.
    Empty,
    /// The endpoint has no stored access policies at all (Cosmos DB for Table answers Get
    /// Table ACL with 501 NotImplemented): a sentence saying so, for the user.
    Unsupported(String),
}

/// A source or target of entities: one account of a data folder or of a Table endpoint.
pub(crate) trait Endpoint {
    /// The account's name.
    fn account(&self) -> &str;
    /// Where this is, for messages (a folder or a URL).
    fn describe(&self) -> String;
    /// Names of the account's tables, as created.
    fn list_tables(&self) -> Result<Vec<String>, DataError>;
    /// The table's name as created, if it exists (names are case-insensitive).
    fn find_table(&self, name: &str) -> Result<Option<String>, DataError>;
    /// Visits the table's entities in key order, those after `after` only, that match the
    /// `$filter` text, until `visit` returns `Ok(false)`.
    fn scan(
        &self,
        table: &str,
        filter: Option<&str>,
        after: Option<(&str, &str)>,
        visit: &mut dyn FnMut(Entity) -> Result<bool, DataError>,
    ) -> Result<(), DataError>;
    /// Creates the table unless it exists.
    fn ensure_table(&self, table: &str) -> Result<(), DataError>;
    /// The table's stored access policies (a Get Table ACL body).
    fn table_acl(&self, table: &str) -> Result<TableAcl, DataError>;
    /// Replaces the table's stored access policies with a Set Table ACL body.
    fn set_table_acl(&self, table: &str, xml: &str) -> Result<(), DataError>;
    /// Applies operations on one partition atomically (at most 100).
    fn write_batch(&self, table: &str, ops: &[WriteOp]) -> Result<(), WriteError>;
    /// Makes every write so far durable (a checkpoint follows it).
    fn sync(&self) -> Result<(), DataError>;
}

/// Operations per entity group transaction: Azure's limit for one `$batch` change set.
pub(crate) const MAX_BATCH: usize = 100;

/// A table name as a file name: a Table storage name (ASCII letters and digits) as it is,
/// any other character percent-encoded, so no name writes outside the folder.
pub fn table_file_stem(table: &str) -> Result<String, DataError> {
    if table.is_empty() {
        return Err(DataError::new("an empty table name cannot be a file name"));
    }
    Ok(utf8_percent_encode(table, NOT_FILE_SAFE).to_string())
}

/// What a file stem percent-encodes: all but ASCII letters and digits, so a Table storage
/// name (letters and digits) is its own stem and a Cosmos name (any character but `/ \ # ?`)
/// becomes a portable one; the manifest keeps the name itself.
const NOT_FILE_SAFE: &percent_encoding::AsciiSet = percent_encoding::NON_ALPHANUMERIC;

/// Peak resident memory of this process in bytes (Linux `VmHWM`), for summaries and tests.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests;
