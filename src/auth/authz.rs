//! Authorization: may this [`Principal`] perform this operation (Azure docs: "Create a service SAS", "Create an account SAS")?
//!
//! * Shared Key and bearer principals may do everything on their account (the emulator has no
//!   RBAC; see [`bearer`](super::bearer) for what a token proves).
//! * A service SAS reaches only entities of its table `tn` (case-insensitive), with `r`
//!   (query/get), `a` (insert), `u` (update/merge), `a`+`u` (upserts), `d` (delete); it never
//!   reaches service properties/stats, table listing/creation/deletion or ACLs
//!   (`AuthorizationFailure`).
//! * An account SAS needs `t` in `ss` (`AuthorizationServiceMismatch`), the resource type in
//!   `srt` (`AuthorizationResourceTypeMismatch`) and the permission in `sp`
//!   (`AuthorizationPermissionMismatch`); ACL operations are never allowed
//!   (`AuthorizationFailure`).
//!
//! `$batch`: [`AuthzOperation::Batch`] only checks what the batch as a whole needs (table match
//! when known, `srt=o`); the server must also authorize every sub-operation with its own
//! operation and table and, for a SAS with a key range, check each entity key
//! ([`SasGrant::check_key`]).
//!
//! Depends on nothing else in the crate.

use super::error::AuthError;
use super::sas::{SasGrant, SasKind, SasPermissions};
use super::Principal;

/// The operations whose authorization differs, named as in Azure docs: "Table service REST API".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthzOperation {
    GetServiceProperties,
    SetServiceProperties,
    GetServiceStats,
    QueryTables,
    CreateTable,
    DeleteTable,
    GetTableAcl,
    SetTableAcl,
    QueryEntities,
    GetEntity,
    InsertEntity,
    UpdateEntity,
    MergeEntity,
    DeleteEntity,
    InsertOrReplaceEntity,
    InsertOrMergeEntity,
    Batch,
}

/// Resource level of an operation (account SAS `srt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Service,
    Table,
    Entity,
}

/// Permission an operation needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    Read,
    Write,
    List,
    CreateOrWrite,
    Delete,
    Add,
    Update,
    AddAndUpdate,
    /// Nothing by itself (`$batch`: sub-operations are checked one by one).
    Nothing,
    /// Never through a SAS (ACL operations).
    Forbidden,
}

impl AuthzOperation {
    /// Every operation, for table-driven tests and docs.
    pub const ALL: [AuthzOperation; 17] = [
        AuthzOperation::GetServiceProperties,
        AuthzOperation::SetServiceProperties,
        AuthzOperation::GetServiceStats,
        AuthzOperation::QueryTables,
        AuthzOperation::CreateTable,
        AuthzOperation::DeleteTable,
        AuthzOperation::GetTableAcl,
        AuthzOperation::SetTableAcl,
        AuthzOperation::QueryEntities,
        AuthzOperation::GetEntity,
        AuthzOperation::InsertEntity,
        AuthzOperation::UpdateEntity,
        AuthzOperation::MergeEntity,
        AuthzOperation::DeleteEntity,
        AuthzOperation::InsertOrReplaceEntity,
        AuthzOperation::InsertOrMergeEntity,
        AuthzOperation::Batch,
    ];

    fn level(self) -> Level {
        use AuthzOperation::*;
        match self {
            GetServiceProperties | SetServiceProperties | GetServiceStats => Level::Service,
            QueryTables | CreateTable | DeleteTable | GetTableAcl | SetTableAcl => Level::Table,
            QueryEntities
            | GetEntity
            | InsertEntity
            | UpdateEntity
            | MergeEntity
            | DeleteEntity
            | InsertOrReplaceEntity
            | InsertOrMergeEntity
            | Batch => Level::Entity,
        }
    }

    fn need(self) -> Need {
        use AuthzOperation::*;
        match self {
            GetServiceProperties | GetServiceStats | QueryEntities | GetEntity => Need::Read,
            SetServiceProperties => Need::Write,
            QueryTables => Need::List,
            CreateTable => Need::CreateOrWrite,
            DeleteTable | DeleteEntity => Need::Delete,
            InsertEntity => Need::Add,
            UpdateEntity | MergeEntity => Need::Update,
            InsertOrReplaceEntity | InsertOrMergeEntity => Need::AddAndUpdate,
            Batch => Need::Nothing,
            GetTableAcl | SetTableAcl => Need::Forbidden,
        }
    }

    /// The SAS permission letters this operation needs, as the log names them.
    pub(crate) fn needed_permission(self) -> &'static str {
        match self.need() {
            Need::Read => "r",
            Need::Write => "w",
            Need::List => "l",
            Need::CreateOrWrite => "c or w",
            Need::Delete => "d",
            Need::Add => "a",
            Need::Update => "u",
            Need::AddAndUpdate => "a and u",
            Need::Nothing => "none",
            Need::Forbidden => "none: not allowed through a SAS",
        }
    }

    /// `true` for operations that do not change state (allowed on the secondary endpoint).
    pub(crate) fn is_read_only(self) -> bool {
        use AuthzOperation::*;
        matches!(
            self,
            GetServiceProperties
                | GetServiceStats
                | QueryTables
                | GetTableAcl
                | QueryEntities
                | GetEntity
        )
    }

    /// Azure's secondary endpoint is read-only: a state-changing operation sent there is 403
    /// `InsufficientAccountPermissions`.
    pub(crate) fn check_secondary(self, is_secondary: bool) -> Result<(), AuthError> {
        if is_secondary && !self.is_read_only() {
            Err(AuthError::InsufficientAccountPermissions)
        } else {
            Ok(())
        }
    }
}

fn has(permissions: &SasPermissions, need: Need) -> bool {
    match need {
        Need::Read => permissions.read,
        Need::Write => permissions.write,
        Need::List => permissions.list,
        Need::CreateOrWrite => permissions.create || permissions.write,
        Need::Delete => permissions.delete,
        Need::Add => permissions.add,
        Need::Update => permissions.update,
        Need::AddAndUpdate => permissions.add && permissions.update,
        Need::Nothing => true,
        Need::Forbidden => false,
    }
}

fn authorize_sas(
    grant: &SasGrant,
    op: AuthzOperation,
    table: Option<&str>,
) -> Result<(), AuthError> {
    let need = op.need();
    match grant.kind {
        SasKind::Service => {
            if op.level() != Level::Entity || need == Need::Forbidden {
                return Err(AuthError::AuthorizationFailure);
            }
            let tn = grant.table_name.as_deref().unwrap_or("");
            match table {
                Some(t) if t.eq_ignore_ascii_case(tn) => {}
                // `$batch` before its body is parsed: sub-operations carry the table.
                None if op == AuthzOperation::Batch => {}
                _ => return Err(AuthError::AuthorizationFailure),
            }
            if !has(&grant.permissions, need) {
                return Err(AuthError::AuthorizationPermissionMismatch);
            }
        }
        SasKind::Account => {
            if !grant.services.table {
                return Err(AuthError::AuthorizationServiceMismatch);
            }
            if need == Need::Forbidden {
                return Err(AuthError::AuthorizationFailure);
            }
            let level_ok = match op.level() {
                Level::Service => grant.resource_types.service,
                Level::Table => grant.resource_types.container,
                Level::Entity => grant.resource_types.object,
            };
            if !level_ok {
                return Err(AuthError::AuthorizationResourceTypeMismatch);
            }
            if !has(&grant.permissions, need) {
                return Err(AuthError::AuthorizationPermissionMismatch);
            }
        }
    }
    Ok(())
}

impl Principal {
    /// The account this principal was authenticated for.
    #[cfg(test)]
    pub(crate) fn account(&self) -> &str {
        match self {
            Principal::SharedKey { account } | Principal::Bearer { account, .. } => account,
            Principal::Sas(grant) => &grant.account,
        }
    }

    /// The SAS grant, when the principal is a SAS (for key-range clipping).
    pub(crate) fn sas(&self) -> Option<&SasGrant> {
        match self {
            Principal::Sas(grant) => Some(grant),
            _ => None,
        }
    }

    /// Checks that this principal may perform `op` on `table` (the table addressed, or `None`
    /// for service-level operations and Query Tables). Key ranges are not checked here: use
    /// [`SasGrant::allows_key`] / [`SasGrant::check_key`] per entity and
    /// [`SasGrant::key_range`] to clip queries.
    pub fn authorize(&self, op: AuthzOperation, table: Option<&str>) -> Result<(), AuthError> {
        match self {
            Principal::SharedKey { .. } | Principal::Bearer { .. } => Ok(()),
            Principal::Sas(grant) => authorize_sas(grant, op, table),
        }
    }
}
