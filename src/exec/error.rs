//! [`ExecError`]: why an operation was not carried out, as typed values. The server turns
//! it into Azure's error once, at its edge; nothing here knows status codes or messages.

use crate::auth::{AclError, AuthError};
use crate::batch::RuleViolation;
use crate::protocol::operation::MisplacedOperation;
use crate::protocol::ApiError;
use crate::store::StoreError;

#[derive(Debug, Clone)]
pub(crate) enum ExecError {
    /// The store refused the operation (a missing table or entity, a precondition, a
    /// limit) or failed.
    Store(StoreError),
    /// What the operation addresses does not exist, and the operation answers that as a
    /// missing resource (a missing entity; a missing table for Delete Table and the ACL
    /// operations, which Azure answers with `ResourceNotFound`, not `TableNotFound`).
    ResourceNotFound,
    /// The caller's grant does not allow the key or the `$batch` sub-operation.
    Denied(AuthError),
    /// The table's stored access policies could not be read back.
    StoredAcl(AclError),
    /// A `$batch` breaks a rule of entity group transactions.
    Rule(RuleViolation),
    /// A `$batch` sub-request the protocol could not decode, carried to its place among
    /// the others (the first failing operation answers for the whole change set).
    Refused(ApiError),
    /// A request below a table's name (a service URL that ends with a table name), not run:
    /// what it meant, the table it named and whether that table exists (Azure's answer
    /// depends on it).
    Misplaced {
        target: MisplacedOperation,
        account: String,
        table: String,
        found: bool,
    },
    /// The store broke its contract (`what` says how); answered as an internal error.
    Contract(&'static str),
}

impl From<StoreError> for ExecError {
    fn from(e: StoreError) -> ExecError {
        ExecError::Store(e)
    }
}

impl From<AuthError> for ExecError {
    fn from(e: AuthError) -> ExecError {
        ExecError::Denied(e)
    }
}
