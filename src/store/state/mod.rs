//! Whole-store state for test isolation: an [`Image`] of a scope (the whole server or one
//! account: its tables, their entities and ACLs, its service properties), captured from a
//! store and installed into it again, and the [`Shelf`] that keeps named images (snapshots).
//! Reset is the install of the image the server started with; `server::state` drives it.
//!
//! Installing is two steps, so that the part that takes time never holds requests off:
//! [`StoreState::stage`] writes the image's tables under table ids never used before, which
//! no request can reach; [`StoreState::switch`] then, in one atomic write, removes the
//! scope's current tables and service properties and puts the staged ones in their place.
//! The removed tables' entities are purged in the background, as after Delete Table. A crash
//! before the switch leaves the old state whole (the staged ids are marked for purging when
//! they are staged, so a restart removes them); after it, the new state.
//!
//! Depends on the store's key layout and codecs only; knows nothing about HTTP.

pub(crate) mod file;
mod kv;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;

use super::StoreError;

/// What an image covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StateScope {
    /// Every account's data.
    Server,
    /// One account's data.
    Account(String),
}

impl StateScope {
    /// The account, for a scope of one.
    pub(crate) fn account(&self) -> Option<&str> {
        match self {
            StateScope::Server => None,
            StateScope::Account(a) => Some(a),
        }
    }
}

/// One entity of an image: its key after the table id (`enc(PartitionKey) ‖ enc(RowKey)`)
/// and its stored value ([`super::codec`]).
pub(crate) type ImageRow = (Box<[u8]>, Arc<[u8]>);

/// One table of an image, with its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImageTable {
    pub(crate) account: String,
    /// The identity its metadata is stored under ([`crate::model::names::table_identity`]).
    pub(crate) identity: String,
    /// The name with the casing used at creation.
    pub(crate) name: String,
    pub(crate) acl: Vec<u8>,
    /// Its entities. The values are shared with the store where it keeps them as shared
    /// bytes (the memory store), so an image copies keys, not entities.
    pub(crate) rows: Vec<ImageRow>,
}

/// The data of a scope at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub(crate) scope: StateScope,
    pub(crate) tables: Vec<ImageTable>,
    /// (account, service properties document).
    pub(crate) service_properties: Vec<(String, Vec<u8>)>,
}

impl Image {
    /// Nothing at all in `scope`.
    pub(crate) fn empty(scope: StateScope) -> Image {
        Image {
            scope,
            tables: Vec::new(),
            service_properties: Vec::new(),
        }
    }

    /// The part of this image that lies in `scope`, which then covers it; `None` when the
    /// image lies in `scope` already (no copy needed).
    pub(crate) fn narrowed(&self, scope: &StateScope) -> Option<Image> {
        if *scope == self.scope {
            return None;
        }
        let narrowed = |account: Option<&str>| Image {
            scope: scope.clone(),
            tables: self
                .tables
                .iter()
                .filter(|t| account.is_none_or(|a| t.account == a))
                .cloned()
                .collect(),
            service_properties: self
                .service_properties
                .iter()
                .filter(|(a, _)| account.is_none_or(|b| a == b))
                .cloned()
                .collect(),
        };
        Some(narrowed(scope.account()))
    }

    pub(crate) fn entities(&self) -> u64 {
        self.tables.iter().map(|t| t.rows.len() as u64).sum()
    }

    /// The bytes of the rows' keys and values.
    pub(crate) fn data_bytes(&self) -> u64 {
        self.tables
            .iter()
            .flat_map(|t| t.rows.iter())
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum()
    }
}

/// An image's tables written under fresh table ids by [`StoreState::stage`], not yet
/// reachable.
#[derive(Debug)]
pub struct Staged {
    pub(crate) scope: StateScope,
    pub(crate) tables: Vec<StagedTable>,
    pub(crate) service_properties: Vec<(String, Vec<u8>)>,
    pub(crate) entities: u64,
}

#[derive(Debug)]
pub(crate) struct StagedTable {
    pub(crate) id: u64,
    pub(crate) account: String,
    pub(crate) identity: String,
    pub(crate) name: String,
    pub(crate) acl: Vec<u8>,
}

/// What a switch replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Installed {
    /// Tables of the scope removed (their entities are purged in the background).
    pub tables_removed: usize,
    /// Tables now in the scope, and their entities.
    pub tables: usize,
    pub entities: u64,
}

/// The state capability of a store (see the module's first lines). The caller holds
/// requests off around [`StoreState::capture`] and [`StoreState::switch`]: neither is
/// atomic with respect to a concurrent writer.
#[async_trait]
pub trait StoreState: Send + Sync {
    /// The scope's tables, entities, ACLs and service properties.
    async fn capture(&self, scope: &StateScope) -> Result<Image, StoreError>;
    /// Writes the image's tables under fresh table ids (marked for purging until switched
    /// in), where no request reaches them.
    async fn stage(&self, image: &Image) -> Result<Staged, StoreError>;
    /// In one atomic write: the scope's current tables and service properties removed (their
    /// entities purged in the background), the staged ones in their place.
    async fn switch(&self, staged: Staged) -> Result<Installed, StoreError>;
    /// Gives staged tables up (their entities are purged).
    async fn discard(&self, staged: Staged);
}

/// Stages and switches `image` in: the store's scope holds exactly the image afterwards.
pub(crate) async fn install(
    state: &dyn StoreState,
    image: &Image,
) -> Result<Installed, StoreError> {
    let staged = state.stage(image).await?;
    state.switch(staged).await
}

/// A snapshot's name: 1 to 64 letters, digits, `-`, `_` and `.`, not starting with `.`; so
/// it is a plain file name on every file system and never a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SnapshotName(String);

/// Why a snapshot name was refused (one sentence each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadName {
    Empty,
    TooLong,
    /// `/`, `\`, `..`, a leading `.` or a control character: it would name a path.
    PathCharacters,
    /// Any other character.
    Character(char),
}

impl std::fmt::Display for BadName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadName::Empty => f.write_str("a snapshot needs a name"),
            BadName::TooLong => f.write_str("a snapshot name has at most 64 characters"),
            BadName::PathCharacters => f.write_str(
                "a snapshot name cannot hold path characters (/, \\, .., a leading dot)",
            ),
            BadName::Character(c) => write!(
                f,
                "a snapshot name holds letters, digits, -, _ and . only, not {c:?}"
            ),
        }
    }
}

impl SnapshotName {
    pub fn parse(text: &str) -> Result<SnapshotName, BadName> {
        if text.is_empty() {
            return Err(BadName::Empty);
        }
        if text.contains(['/', '\\'])
            || text.contains("..")
            || text.starts_with('.')
            || text.chars().any(char::is_control)
        {
            return Err(BadName::PathCharacters);
        }
        if let Some(c) = text
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return Err(BadName::Character(c));
        }
        if text.len() > 64 {
            return Err(BadName::TooLong);
        }
        Ok(SnapshotName(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a listing says about one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub name: String,
    pub scope: StateScope,
    pub tables: usize,
    pub entities: u64,
    /// Bytes of its entities' keys and values.
    pub data_bytes: u64,
    /// Bytes of its file (`None`: held in memory).
    pub file_bytes: Option<u64>,
    /// When it was saved, seconds since the Unix epoch.
    pub created: i64,
}

impl SnapshotInfo {
    fn of(name: &SnapshotName, image: &Image, created: i64, file_bytes: Option<u64>) -> Self {
        SnapshotInfo {
            name: name.as_str().to_string(),
            scope: image.scope.clone(),
            tables: image.tables.len(),
            entities: image.entities(),
            data_bytes: image.data_bytes(),
            file_bytes,
            created,
        }
    }
}

/// Why a shelf operation failed.
#[derive(Debug)]
pub enum ShelfError {
    NotFound,
    /// The snapshot folder's file system is full: the snapshot was not saved, nothing else
    /// changed.
    NoSpace(std::io::Error),
    /// Reading or writing the snapshot failed otherwise.
    Store(StoreError),
}

impl From<StoreError> for ShelfError {
    fn from(e: StoreError) -> ShelfError {
        ShelfError::Store(e)
    }
}

/// Where named images are kept: in memory (the memory store, PostgreSQL) or as files in a
/// folder beside the data folder (sled), which survive a restart.
pub enum Shelf {
    Memory(Mutex<BTreeMap<SnapshotName, (Arc<Image>, i64)>>),
    Folder(PathBuf),
}

impl Shelf {
    pub fn in_memory() -> Shelf {
        Shelf::Memory(Mutex::new(BTreeMap::new()))
    }

    /// Snapshots as files in `dir` (created when the first is saved). Files a crash left
    /// half-written are removed.
    pub fn in_folder(dir: &Path) -> Shelf {
        file::remove_unfinished(dir);
        Shelf::Folder(dir.to_path_buf())
    }

    /// Whether snapshots survive a restart.
    pub(crate) fn is_durable(&self) -> bool {
        matches!(self, Shelf::Folder(_))
    }

    /// Saves `image` under `name`, replacing a snapshot of that name: whole or not at all.
    pub(crate) fn save(
        &self,
        name: &SnapshotName,
        image: Image,
    ) -> Result<SnapshotInfo, ShelfError> {
        let created = chrono::Utc::now().timestamp();
        match self {
            Shelf::Memory(map) => {
                let info = SnapshotInfo::of(name, &image, created, None);
                map.lock().insert(name.clone(), (Arc::new(image), created));
                Ok(info)
            }
            Shelf::Folder(dir) => {
                let bytes = file::write(dir, name, &image, created)?;
                Ok(SnapshotInfo::of(name, &image, created, Some(bytes)))
            }
        }
    }

    pub(crate) fn load(&self, name: &SnapshotName) -> Result<Arc<Image>, ShelfError> {
        match self {
            Shelf::Memory(map) => map
                .lock()
                .get(name)
                .map(|(image, _)| Arc::clone(image))
                .ok_or(ShelfError::NotFound),
            Shelf::Folder(dir) => file::read(dir, name).map(|(image, _)| Arc::new(image)),
        }
    }

    /// The snapshot's description, without its rows where the shelf allows.
    pub(crate) fn info(&self, name: &SnapshotName) -> Result<SnapshotInfo, ShelfError> {
        match self {
            Shelf::Memory(map) => map
                .lock()
                .get(name)
                .map(|(image, created)| SnapshotInfo::of(name, image, *created, None))
                .ok_or(ShelfError::NotFound),
            Shelf::Folder(dir) => file::info(dir, name),
        }
    }

    pub(crate) fn list(&self) -> Result<Vec<SnapshotInfo>, ShelfError> {
        match self {
            Shelf::Memory(map) => Ok(map
                .lock()
                .iter()
                .map(|(name, (image, created))| SnapshotInfo::of(name, image, *created, None))
                .collect()),
            Shelf::Folder(dir) => file::list(dir),
        }
    }

    pub(crate) fn delete(&self, name: &SnapshotName) -> Result<(), ShelfError> {
        match self {
            Shelf::Memory(map) => map
                .lock()
                .remove(name)
                .map(drop)
                .ok_or(ShelfError::NotFound),
            Shelf::Folder(dir) => file::delete(dir, name),
        }
    }
}

#[cfg(test)]
mod tests;
