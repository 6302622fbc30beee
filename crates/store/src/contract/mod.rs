//! The store contract: what the executor, the server and the data tools see of storage.
//! [`Store`] (tables and entities, asynchronous), its errors ([`StoreError`], [`CommitError`]),
//! [`TableInfo`] and [`Durability`]; read jobs ([`read`]: how a scan is handed to a store),
//! the rows a scan lends ([`row`]) and how much a store holds ([`footprint`]). Every store
//! implements it: the table layer over an engine ([`crate::KvStore`]) and PostgreSQL
//! ([`crate::postgres::PgStore`]); the conformance suite (`crate::conformance`) says what it
//! promises.

pub mod footprint;
pub mod read;
pub mod row;

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;

use crate::model::limits::EntityLimitError;
use crate::model::{EdmDateTime, Entity, TableId, TableRef, WriteOp};
use crate::{Footprint, ReadJob};

/// Why a store operation failed: first the outcomes of the request itself (each answered with
/// its own Azure code), then failures of the store, which keep their cause as
/// [`std::error::Error::source`]. Callers decide on the variant, never on the text.
#[derive(Debug, Clone)]
pub enum StoreError {
    TableNotFound,
    TableAlreadyExists,
    EntityNotFound,
    EntityAlreadyExists,
    /// If-Match named an ETag that is not the entity's current one.
    PreconditionFailed,
    /// A merge would make the entity exceed a whole-entity limit.
    EntityLimit(EntityLimitError),
    /// Another process (a running server) holds the data folder.
    FolderInUse,
    /// Writes are refused while the file system has less free space than the reserve.
    DiskFull {
        free: u64,
        reserve: u64,
    },
    /// An earlier write failed and the store reopens itself; writes are refused meanwhile.
    Reopening(&'static str),
    /// The backend failed while doing `doing`; the source says why.
    Io {
        doing: Cow<'static, str>,
        source: ErrorSource,
    },
    /// The database refused the work or the configuration; `message` is one sentence for
    /// the user (it names the database and what to do).
    Database {
        message: String,
        source: Option<ErrorSource>,
    },
    /// The database behind the store cannot be reached (down, restarting, connection lost);
    /// the request may succeed when retried. `message` is one sentence.
    Unavailable {
        message: String,
        source: Option<ErrorSource>,
    },
    /// Stored bytes could not be decoded, or the folder is not the store it should be.
    Corrupt(String),
}

/// The cause of a [`StoreError`], shared so that the error stays cheap to clone (a failed
/// flush is reported to every writer that waited for it).
pub(crate) type ErrorSource = Arc<dyn std::error::Error + Send + Sync>;

impl StoreError {
    /// Whether the store failed, rather than refused the request: the request was not at
    /// fault and may succeed when retried.
    pub fn is_failure(&self) -> bool {
        !matches!(
            self,
            StoreError::TableNotFound
                | StoreError::TableAlreadyExists
                | StoreError::EntityNotFound
                | StoreError::EntityAlreadyExists
                | StoreError::PreconditionFailed
                | StoreError::EntityLimit(_)
        )
    }

    /// An I/O failure while doing `doing`.
    pub fn io(doing: impl Into<Cow<'static, str>>, source: std::io::Error) -> StoreError {
        StoreError::Io {
            doing: doing.into(),
            source: Arc::new(source),
        }
    }

    /// The database refused: `message` is one sentence for the user.
    pub fn database(message: impl Into<String>) -> StoreError {
        StoreError::Database {
            message: message.into(),
            source: None,
        }
    }

    /// The database cannot be reached now: `message` is one sentence for the user.
    pub fn unavailable(message: impl Into<String>) -> StoreError {
        StoreError::Unavailable {
            message: message.into(),
            source: None,
        }
    }

    /// The kind of the I/O error behind this one, if an I/O error caused it.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        let mut cause = std::error::Error::source(self);
        while let Some(e) = cause {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                return Some(io.kind());
            }
            cause = e.source();
        }
        None
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::TableNotFound => f.write_str("the table does not exist"),
            StoreError::TableAlreadyExists => f.write_str("the table already exists"),
            StoreError::EntityNotFound => f.write_str("the entity does not exist"),
            StoreError::EntityAlreadyExists => f.write_str("the entity already exists"),
            StoreError::PreconditionFailed => f.write_str("the entity's ETag does not match"),
            StoreError::EntityLimit(l) => write!(f, "the entity cannot be stored: {l}"),
            StoreError::FolderInUse => f.write_str("the data folder is in use by another process"),
            StoreError::DiskFull { free, reserve } => write!(
                f,
                "not enough free disk space: {free} bytes free, {reserve} kept in reserve"
            ),
            StoreError::Reopening(why) => f.write_str(why),
            StoreError::Io { doing, source } => write!(f, "{doing}: {source}"),
            StoreError::Database { message, .. } | StoreError::Unavailable { message, .. } => {
                f.write_str(message)
            }
            StoreError::Corrupt(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Io { source, .. } => Some(&**source as _),
            StoreError::Database { source, .. } | StoreError::Unavailable { source, .. } => {
                source.as_deref().map(|s| s as _)
            }
            _ => None,
        }
    }
}

/// Equal when of the same kind with the same details (a failure's cause compares by its text).
impl PartialEq for StoreError {
    fn eq(&self, other: &StoreError) -> bool {
        use StoreError::*;
        match (self, other) {
            (TableNotFound, TableNotFound)
            | (TableAlreadyExists, TableAlreadyExists)
            | (EntityNotFound, EntityNotFound)
            | (EntityAlreadyExists, EntityAlreadyExists)
            | (PreconditionFailed, PreconditionFailed)
            | (FolderInUse, FolderInUse) => true,
            (EntityLimit(a), EntityLimit(b)) => a == b,
            (
                DiskFull {
                    free: a,
                    reserve: r,
                },
                DiskFull {
                    free: b,
                    reserve: s,
                },
            ) => a == b && r == s,
            (Reopening(a), Reopening(b)) => a == b,
            (Corrupt(a), Corrupt(b)) => a == b,
            (Io { .. }, Io { .. })
            | (Database { .. }, Database { .. })
            | (Unavailable { .. }, Unavailable { .. }) => self.to_string() == other.to_string(),
            _ => false,
        }
    }
}

impl Eq for StoreError {}

/// Failure of one operation of a [`Store::commit`]; nothing of the commit was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitError {
    pub index: usize,
    pub error: StoreError,
}

/// A table as the store knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    pub id: TableId,
    /// Name with the casing used at creation.
    pub name: String,
    /// The identity it is stored under ([`crate::model::names::table_identity`]).
    pub identity: String,
    /// Stored access policies (opaque bytes owned by the auth layer).
    pub acl: Vec<u8>,
}

/// The store contract: tables addressed by [`TableRef`], entities by the [`TableId`] a table
/// resolved to, key ranges ([`KeyRange`](crate::KeyRange)) and rows ([`StoredRow`](crate::StoredRow)) in Azure's key order.
/// Every implementation passes the one conformance suite (`conformance`, in test builds).
///
/// Asynchronous, so that the server awaits the store on its own runtime: a point read or a
/// commit runs where it is awaited (`KvStore`'s take microseconds; PostgreSQL's await the
/// database), scans run as [`ReadJob`]s on the blocking pool, and a commit returns once the
/// write is as durable as the store's durability mode promises.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Creates the table; its name must be valid ([`crate::model::TableName::parse`]).
    async fn create_table(&self, table: &TableRef) -> Result<TableInfo, StoreError>;
    /// Removes the table and (eventually, in the background) its entities.
    async fn delete_table(&self, table: &TableRef) -> Result<(), StoreError>;
    /// Looks a table up by name, case-insensitively or case-sensitively as `table` says.
    async fn get_table(&self, table: &TableRef) -> Result<Option<TableInfo>, StoreError>;
    /// At most `limit` tables of an account, ordered by identity (the lower-cased name of every
    /// table the storage flavour creates), from `start_folded` (inclusive).
    async fn list_tables(
        &self,
        account: &str,
        start_folded: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TableInfo>, StoreError>;
    async fn set_table_acl(&self, table: &TableRef, acl: Vec<u8>) -> Result<(), StoreError>;
    async fn get_entity(
        &self,
        table: TableId,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Option<Entity>, StoreError>;
    /// Runs `job` (the scans of `table` behind one response page) over the table's rows on
    /// the blocking pool, so that it sees each change set committed to `table` whole or not
    /// at all while commits go on (the store may run it again from the start for that), and
    /// gives it back. Not across jobs: the next page reads later data.
    /// [`read::read_with`] is the typed way to call it.
    async fn read(
        &self,
        table: TableId,
        job: Box<dyn ReadJob>,
    ) -> Result<Box<dyn ReadJob>, StoreError>;
    /// Applies all operations atomically (all share one PartitionKey when more than one), or
    /// none. Returns the new Timestamp of each operation (`Delete`'s is unused) once they are
    /// as durable as the store promises ([`Durability`]).
    async fn commit(
        &self,
        table: TableId,
        ops: &[WriteOp],
    ) -> Result<Vec<EdmDateTime>, CommitError>;
    /// Forces everything written so far to stable storage.
    async fn flush(&self) -> Result<(), StoreError>;
    /// The account's service properties document (opaque to the store), if ever set.
    async fn get_service_properties(&self, account: &str) -> Result<Option<Vec<u8>>, StoreError>;
    async fn set_service_properties(
        &self,
        account: &str,
        properties: Vec<u8>,
    ) -> Result<(), StoreError>;
    /// The stored entities' count and logical size, and the data folder's size. `None` if
    /// the store does not keep count.
    async fn footprint(&self) -> Option<Footprint> {
        None
    }
    /// Flushes the store's group commit has run (the `tablestore_group_commit_flushes_total`
    /// metric); 0 for stores that have none.
    fn group_commit_flushes(&self) -> u64 {
        0
    }
    /// Reset, snapshots and restore ([`crate::state`]); `None` for a store without them.
    fn state(&self) -> Option<&dyn crate::state::StoreState> {
        None
    }
}

/// Runs `future` to completion on a runtime of its own: for synchronous tests (property
/// tests) of code that awaits the store.
#[cfg(any(test, feature = "testing"))]
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

/// When an acknowledged write reaches stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Every commit is flushed before it returns; concurrent commits share one flush.
    #[default]
    Durable,
    /// The backend flushes in the background (sled: every 500 ms); a crash may lose the
    /// last moments of writes. Graceful shutdown still flushes.
    Relaxed,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every store error reads as words (logs and start-up lines print it), never as Rust's
    /// debug text, and keeps its cause.
    #[test]
    fn store_errors_read_as_words_and_keep_their_cause() {
        let errors = [
            StoreError::EntityLimit(EntityLimitError::TooManyProperties),
            StoreError::EntityLimit(EntityLimitError::EntityTooLarge),
            StoreError::EntityLimit(EntityLimitError::KeysTooLongForStore),
            StoreError::FolderInUse,
            StoreError::DiskFull {
                free: 1,
                reserve: 2,
            },
            StoreError::io("writing", std::io::ErrorKind::StorageFull.into()),
            StoreError::database("the database said no"),
            StoreError::Corrupt("the entity".into()),
        ];
        for e in &errors {
            let text = e.to_string();
            assert!(
                !text.contains('{') && !text.contains("::") && !text.contains("Error("),
                "{text}"
            );
            if let StoreError::EntityLimit(l) = e {
                assert!(!text.contains(&format!("{l:?}")), "debug text: {text}");
            }
        }
        let io = &errors[5];
        assert!(std::error::Error::source(io).is_some());
        assert_eq!(io.io_kind(), Some(std::io::ErrorKind::StorageFull));
    }
}
