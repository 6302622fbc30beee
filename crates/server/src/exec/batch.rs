//! `$batch`: a change set (the caller's grant for each operation, the rules of entity group
//! transactions, one atomic commit) or a query batch (one Get Entity). The outcome names the
//! operation that failed, or holds each write's Timestamp; nothing of a failed change set is
//! applied.

use super::{entities, ExecError, Scope};
use crate::batch::{self, ChangeSet, Failure, RuleViolation};
use crate::model::{EdmDateTime, Entity, TableRef, WriteOp};
use crate::protocol::operation::Operation;
use crate::protocol::ApiError;
use crate::store::Store;

/// One `$batch` sub-request as the protocol decoded it.
#[derive(Debug)]
pub(crate) enum SubRequestInput<T> {
    /// Its request line names no operation; the protocol's reason.
    Unreadable(ApiError),
    /// Its operation, and what it carries or why that could not be decoded.
    Named {
        operation: Operation,
        decoded: Result<T, ApiError>,
    },
}

impl<T> SubRequestInput<T> {
    /// The operation, once the caller's grant allows it, and what it carries.
    fn admit(self, scope: &Scope) -> Result<(Operation, T), ExecError> {
        match self {
            SubRequestInput::Unreadable(e) => Err(ExecError::Refused(e)),
            SubRequestInput::Named { operation, decoded } => {
                scope.authorize(&operation)?;
                Ok((operation, decoded.map_err(ExecError::Refused)?))
            }
        }
    }
}

/// A `$batch` request.
#[derive(Debug)]
pub(crate) enum BatchInput {
    /// A change set: each operation's write (and the table its URL names), and the size of
    /// the request body in bytes.
    ChangeSet {
        writes: Vec<SubRequestInput<(String, WriteOp)>>,
        size: usize,
    },
    /// A query batch: one retrieve (what it carries is whether its `Accept` can be met).
    Retrieve(SubRequestInput<()>),
}

/// What a `$batch` did.
#[derive(Debug)]
pub(crate) enum BatchOutcome {
    /// Every operation of the change set was applied.
    Applied(AppliedChangeSet),
    /// The change set held no operation.
    Empty,
    /// Operation `index` of `operations` failed; nothing was applied.
    Failed {
        index: usize,
        operations: usize,
        error: ExecError,
    },
    /// The query batch's entity.
    Retrieved { table: TableRef, entity: Entity },
    /// The query batch's retrieve failed.
    RetrieveFailed(ExecError),
}

/// An applied change set.
#[derive(Debug)]
pub(crate) struct AppliedChangeSet {
    /// The table, named as created.
    pub(crate) table: TableRef,
    /// The writes in order, and each one's Timestamp.
    pub(crate) ops: Vec<WriteOp>,
    pub(crate) stamps: Vec<EdmDateTime>,
    /// The request body's size in bytes.
    pub(crate) size: usize,
}

pub(crate) async fn execute(
    store: &dyn Store,
    scope: &Scope,
    input: BatchInput,
) -> Result<BatchOutcome, ExecError> {
    match input {
        BatchInput::ChangeSet { writes, size } => change_set(store, scope, writes, size).await,
        BatchInput::Retrieve(sub) => Ok(match retrieve(store, scope, sub).await {
            Ok((table, entity)) => BatchOutcome::Retrieved { table, entity },
            Err(error) => BatchOutcome::RetrieveFailed(error),
        }),
    }
}

async fn change_set(
    store: &dyn Store,
    scope: &Scope,
    writes: Vec<SubRequestInput<(String, WriteOp)>>,
    size: usize,
) -> Result<BatchOutcome, ExecError> {
    let operations = writes.len();
    let failed = |index, error| BatchOutcome::Failed {
        index,
        operations,
        error,
    };
    if let Err((index, rule)) = batch::check_count(operations) {
        return Ok(failed(index, ExecError::Rule(rule)));
    }
    let mut changes = ChangeSet::with_capacity(operations);
    for (index, sub) in writes.into_iter().enumerate() {
        match admit_write(scope, sub) {
            Ok((table, op)) => changes.push(table, op),
            Err(e) => return Ok(failed(index, e)),
        }
    }
    match batch::execute(store, scope.account(), scope.case(), &changes).await {
        Ok(Some(applied)) => Ok(BatchOutcome::Applied(AppliedChangeSet {
            table: scope.table(scope.shown(applied.table).name),
            ops: changes.ops,
            stamps: applied.stamps,
            size,
        })),
        Ok(None) => Ok(BatchOutcome::Empty),
        Err(f) => match f.failure {
            Failure::Rule(rule) => Ok(failed(f.index, ExecError::Rule(rule))),
            // A failure of the store (disk full, I/O error) is not the operation's fault: it
            // is answered for the whole request (503 ServerBusy, 500), which clients retry,
            // instead of as a failed operation inside a 202.
            Failure::Store(e) if e.is_failure() => Err(ExecError::Store(e)),
            Failure::Store(e) => Ok(failed(f.index, ExecError::Store(e))),
        },
    }
}

/// A change-set operation the caller may make: its table and write.
fn admit_write(
    scope: &Scope,
    sub: SubRequestInput<(String, WriteOp)>,
) -> Result<(String, WriteOp), ExecError> {
    let (_, (table, op)) = sub.admit(scope)?;
    scope.check_key(&op.key.partition_key, &op.key.row_key)?;
    Ok((table, op))
}

/// The query batch's retrieve: the table (named as created) and the entity.
async fn retrieve(
    store: &dyn Store,
    scope: &Scope,
    sub: SubRequestInput<()>,
) -> Result<(TableRef, Entity), ExecError> {
    let (operation, decoded) = match sub {
        SubRequestInput::Unreadable(e) => return Err(ExecError::Refused(e)),
        SubRequestInput::Named { operation, decoded } => (operation, decoded),
    };
    scope.authorize(&operation)?;
    let Operation::GetEntity(entity) = operation else {
        return Err(ExecError::Rule(RuleViolation::QueryNotSingleRetrieve));
    };
    scope.check_key(&entity.partition_key, &entity.row_key)?;
    decoded.map_err(ExecError::Refused)?;
    let (info, found) = entities::read(store, scope, &entity).await?;
    let entity = found.ok_or(ExecError::ResourceNotFound)?;
    Ok((scope.table(info.name), entity))
}
