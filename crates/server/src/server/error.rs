//! The edge where typed errors become Azure's: [`ExecError`] (and the store, auth, ACL and
//! batch-rule errors inside it) to [`ApiError`], in one place. Failures of the server itself
//! are logged here with their cause; the client sees Azure's generic message.

use crate::auth::AclError;
use crate::batch::RuleViolation;
use crate::exec::ExecError;
use crate::protocol::{ApiError, ErrorCode};
use crate::store::StoreError;

impl From<ExecError> for ApiError {
    fn from(e: ExecError) -> ApiError {
        match e {
            ExecError::Store(e) => store_error(e),
            ExecError::ResourceNotFound => ApiError::new(ErrorCode::ResourceNotFound),
            ExecError::Denied(e) => super::auth::auth_error(&e),
            ExecError::StoredAcl(e) => acl_error(&e),
            ExecError::Rule(rule) => rule_error(rule),
            ExecError::Refused(e) => e,
            ExecError::Misplaced {
                target,
                account,
                table,
                found,
            } => match found {
                true => target.storage_error(&account, &table),
                // Azure looks the table up first (recorded: 404 `TableNotFound` to the
                // Python suite's Create Table before the table existed).
                false => ApiError::new(ErrorCode::TableNotFound)
                    .with_cause(crate::protocol::dialect::table_in_service_url_cause(&table)),
            },
            ExecError::Contract(what) => {
                tracing::error!(error = what, "the store broke its contract");
                ApiError::new(ErrorCode::InternalError)
            }
        }
    }
}

/// Maps store failures to Azure errors.
fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::TableNotFound => ApiError::new(ErrorCode::TableNotFound),
        StoreError::TableAlreadyExists => ApiError::new(ErrorCode::TableAlreadyExists),
        StoreError::EntityNotFound => ApiError::new(ErrorCode::ResourceNotFound),
        StoreError::EntityAlreadyExists => ApiError::new(ErrorCode::EntityAlreadyExists),
        StoreError::PreconditionFailed => ApiError::new(ErrorCode::UpdateConditionNotSatisfied),
        StoreError::EntityLimit(l) => crate::protocol::json::entity_limit_error(l),
        StoreError::Unavailable { .. } => {
            tracing::warn!(error = %e, "the store's database is unavailable");
            ApiError::new(ErrorCode::ServerBusy)
        }
        StoreError::Corrupt(_) => {
            tracing::error!(error = %e, "stored data could not be decoded");
            ApiError::new(ErrorCode::InternalError)
        }
        StoreError::FolderInUse
        | StoreError::DiskFull { .. }
        | StoreError::Reopening(_)
        | StoreError::Io { .. }
        | StoreError::Database { .. } => {
            tracing::error!(error = %e, "the store failed");
            ApiError::new(ErrorCode::ServerBusy)
        }
    }
}

/// The ACL codec's errors (a Set Table ACL body, or a stored document read back).
pub(crate) fn acl_error(e: &AclError) -> ApiError {
    let code = match e.code() {
        "InvalidXmlNodeValue" => ErrorCode::InvalidXmlNodeValue,
        _ => ErrorCode::InvalidXmlDocument,
    };
    ApiError::with_message(code, e.message())
}

/// The Azure error for a broken `$batch` rule (messages as the service words them).
fn rule_error(rule: RuleViolation) -> ApiError {
    match rule {
        RuleViolation::TooManyOperations => ApiError::with_message(
            ErrorCode::InvalidInput,
            "The batch request operation exceeds the maximum 100 changes per change set.",
        ),
        RuleViolation::DifferentTables => ApiError::with_message(
            ErrorCode::InvalidInput,
            "All commands in a batch must operate on the same table.",
        ),
        RuleViolation::DifferentPartitions => {
            ApiError::new(ErrorCode::CommandsInBatchActOnDifferentPartitions)
        }
        RuleViolation::DuplicateRow => ApiError::new(ErrorCode::InvalidDuplicateRow),
        RuleViolation::QueryNotSingleRetrieve => ApiError::with_message(
            ErrorCode::InvalidInput,
            "A query batch may contain only a single retrieve of one entity.",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::limits::EntityLimitError;

    /// A database that is down or lost (the PostgreSQL store) is Azure's 503 ServerBusy with
    /// Azure's message ("Common REST API error codes"); the reason goes to the log only.
    #[test]
    fn an_unavailable_database_is_server_busy() {
        let e = store_error(StoreError::unavailable(
            "cannot reach the PostgreSQL database t at 127.0.0.1:5432 (refused)",
        ));
        assert_eq!(e.code, ErrorCode::ServerBusy);
        assert_eq!(e.status().as_u16(), 503);
        assert_eq!(
            e.message,
            "The server is currently unable to receive requests. Please retry your request."
        );
        assert!(!e.message.contains("PostgreSQL"));
    }

    /// A change set answers a failure of the store for the whole request (`exec` decides by
    /// `StoreError::is_failure`): exactly the store errors that map to a 5xx.
    #[test]
    fn store_failures_are_exactly_the_server_errors() {
        let errors = [
            StoreError::TableNotFound,
            StoreError::TableAlreadyExists,
            StoreError::EntityNotFound,
            StoreError::EntityAlreadyExists,
            StoreError::PreconditionFailed,
            StoreError::EntityLimit(EntityLimitError::EntityTooLarge),
            StoreError::FolderInUse,
            StoreError::DiskFull {
                free: 0,
                reserve: 1,
            },
            StoreError::Reopening("a test"),
            StoreError::io("testing", std::io::Error::other("x")),
            StoreError::database("refused"),
            StoreError::unavailable("down"),
            StoreError::Corrupt("bytes".into()),
        ];
        for e in errors {
            let failure = e.is_failure();
            let status = store_error(e.clone()).status();
            assert_eq!(failure, status.is_server_error(), "{e}: {status}");
        }
    }

    #[test]
    fn each_rule_has_its_azure_error() {
        assert_eq!(
            rule_error(RuleViolation::DifferentPartitions).code,
            ErrorCode::CommandsInBatchActOnDifferentPartitions
        );
        assert_eq!(
            rule_error(RuleViolation::DuplicateRow).code,
            ErrorCode::InvalidDuplicateRow
        );
        assert_eq!(
            rule_error(RuleViolation::TooManyOperations).code,
            ErrorCode::InvalidInput
        );
    }
}
