//! Write operations as the store executes them, one variant per REST entity write.

use super::edm::EdmDateTime;
use super::entity::{EntityKey, Property};
use super::limits::EntityLimits;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Insert Entity: fails with EntityAlreadyExists if the key exists.
    Insert,
    /// Update Entity (replace) with If-Match: the entity must exist.
    Update,
    /// Merge Entity with If-Match: the entity must exist.
    Merge,
    /// Delete Entity with If-Match: the entity must exist.
    Delete,
    /// PUT without If-Match.
    InsertOrReplace,
    /// MERGE/PATCH without If-Match.
    InsertOrMerge,
}

/// The `If-Match` precondition of Update, Merge and Delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfMatch {
    /// `If-Match: *` — any existing entity.
    Any,
    /// A specific ETag, held as the Timestamp it encodes (Timestamps are unique per write).
    ETag(EdmDateTime),
    /// A weak ETag (`W/"…"`) of a form this server never issues: it matches no entity, so
    /// the write fails with 412 as on Azure (Azurite issue #1229 compares the two).
    Unmatchable,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WriteOp {
    pub kind: WriteKind,
    pub key: EntityKey,
    /// New properties (Insert/Update/upserts) or properties to merge; empty for Delete.
    pub properties: Vec<Property>,
    /// Required for Update, Merge and Delete; ignored for the others.
    pub if_match: IfMatch,
    /// The limits the entity a merge leaves is checked against (the store's check; the
    /// decode step checks the written properties themselves).
    pub limits: EntityLimits,
}
