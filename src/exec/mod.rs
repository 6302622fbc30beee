//! The executor: one typed operation in, one typed outcome out.
//!
//! [`execute`] runs an [`Op`] (an operation with its request already decoded) for a caller's
//! [`Scope`] (the account and the caller's grant) and returns an [`Outcome`] or an
//! [`ExecError`]. It owns the work between the wire and the store: query planning, the SAS
//! key range, `$top`, paging, the rules of `$batch`, and which missing thing an operation
//! reports. The server decodes requests into [`Op`]s, encodes [`Outcome`]s, and turns an
//! [`ExecError`] into Azure's error once, at its edge; the layers beside the request path
//! (insight, realism, the request log) read the outcome.
//!
//! Knows nothing about HTTP. Depends on `model`, `protocol` (the filter AST, operations, the
//! service-properties document), `store` (the contract only), `query`, `batch` and `auth`
//! (the caller's grant, the ACL codec); never on `server`.

mod batch;
mod entities;
mod error;
mod scope;
mod service;
mod tables;

pub(crate) use batch::{AppliedChangeSet, BatchInput, BatchOutcome, SubRequestInput};
pub(crate) use entities::{EntityPage, EntityQuery, Resume, Written, MAX_COUNTED_PAGES};
pub(crate) use error::ExecError;
pub(crate) use scope::{authz_operation, ResultOrder, Scope};
pub(crate) use service::properties as service_properties;
pub(crate) use tables::{TableQuery, TablesPage};

use crate::auth::SignedIdentifier;
use crate::model::{EdmDateTime, Entity, TableName, TableRef, WriteOp};
use crate::protocol::filter::Expr;
use crate::protocol::operation::{EntityRef, MisplacedOperation};
use crate::protocol::service_properties::{PropertiesUpdate, ServiceProperties};
use crate::protocol::ApiError;
use crate::store::{Store, TableInfo};

/// An operation with everything its request carries, decoded.
#[derive(Debug)]
pub(crate) enum Op {
    QueryTables(TableQuery),
    GetTable {
        table: String,
    },
    CreateTable {
        table: TableName,
    },
    DeleteTable {
        table: String,
    },
    GetTableAcl {
        table: String,
    },
    /// The policies already encoded as stored.
    SetTableAcl {
        table: String,
        encoded: Vec<u8>,
    },
    QueryEntities(EntityQuery),
    /// `filter`: the point query's optional `$filter`, or why it could not be parsed
    /// (answered after the key check: a key outside the caller's SAS range is refused first).
    GetEntity {
        entity: EntityRef,
        filter: Result<Option<Expr>, ApiError>,
    },
    /// Insert Entity and every other single-entity write, to the table the URL names.
    Write {
        table: String,
        op: WriteOp,
    },
    Batch(BatchInput),
    GetServiceProperties,
    SetServiceProperties(PropertiesUpdate),
    GetServiceStats,
    /// A request below a table's name: never run, answered by whether the table exists.
    BelowTable {
        table: String,
        target: MisplacedOperation,
    },
}

/// What an operation did.
#[derive(Debug)]
pub(crate) enum Outcome {
    Tables(TablesPage),
    /// Get Table: the table as created.
    Table(TableInfo),
    TableCreated(TableInfo),
    TableDeleted,
    TableAcl(Vec<SignedIdentifier>),
    TableAclSet,
    Entities(EntityPage),
    /// Get Entity: the table (named as created) and the entity.
    Entity {
        table: TableRef,
        entity: Entity,
    },
    Written(Written),
    Batch(BatchOutcome),
    ServiceProperties(ServiceProperties),
    ServicePropertiesSet,
    /// Replication stats, with the secondary's last sync time: this server has no replica,
    /// so the secondary is always in sync.
    ServiceStats(EdmDateTime),
}

/// Runs `op` for `scope` against `store`.
pub(crate) async fn execute(
    store: &dyn Store,
    scope: &Scope,
    op: Op,
) -> Result<Outcome, ExecError> {
    Ok(match op {
        Op::QueryTables(q) => Outcome::Tables(tables::query(store, scope, q).await?),
        Op::GetTable { table } => Outcome::Table(tables::get(store, scope, table).await?),
        Op::CreateTable { table } => {
            Outcome::TableCreated(tables::create(store, scope, table).await?)
        }
        Op::DeleteTable { table } => {
            tables::delete(store, scope, table).await?;
            Outcome::TableDeleted
        }
        Op::GetTableAcl { table } => Outcome::TableAcl(tables::get_acl(store, scope, table).await?),
        Op::SetTableAcl { table, encoded } => {
            tables::set_acl(store, scope, table, encoded).await?;
            Outcome::TableAclSet
        }
        Op::QueryEntities(q) => Outcome::Entities(entities::query(store, scope, q).await?),
        Op::GetEntity { entity, filter } => {
            let (table, entity) = entities::get(store, scope, entity, filter).await?;
            Outcome::Entity { table, entity }
        }
        Op::Write { table, op } => {
            Outcome::Written(entities::write(store, scope, table, op).await?)
        }
        Op::Batch(input) => Outcome::Batch(batch::execute(store, scope, input).await?),
        Op::GetServiceProperties => {
            Outcome::ServiceProperties(service::properties(store, scope.account()).await?)
        }
        Op::SetServiceProperties(update) => {
            service::set_properties(store, scope, update).await?;
            Outcome::ServicePropertiesSet
        }
        Op::GetServiceStats => Outcome::ServiceStats(EdmDateTime::now()),
        Op::BelowTable { table, target } => {
            let found = store
                .get_table(&scope.table(table.as_str()))
                .await?
                .is_some();
            return Err(ExecError::Misplaced {
                target,
                account: scope.account().to_string(),
                table,
                found,
            });
        }
    })
}
