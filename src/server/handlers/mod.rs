//! One handler per operation; each stays short: decode, one store call, encode.

pub mod acl;
pub mod batch;
pub mod entities;
pub mod insight;
pub mod service;
pub mod tables;

use crate::protocol::{ApiError, ErrorCode};
use crate::store::StoreError;

/// Maps store failures to Azure errors. `missing_table` differs by operation (Delete Table
/// answers ResourceNotFound, entity operations TableNotFound).
pub fn store_error(e: StoreError) -> ApiError {
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

use crate::model::limits::MAX_PAGE_SIZE;
use crate::protocol::headers::{negotiate_metadata, Metadata};
use crate::protocol::uri::QueryParams;
use crate::server::call::Call;

/// `$top`: 0..=1000 entities (or tables) per page; absent means 1000. Azure answers `$top=0`
/// with zero entities (Storage Explorer sends it; Azurite issue #1428 compares the two).
pub fn parse_top(query: &QueryParams) -> Result<usize, ApiError> {
    match query.get("$top") {
        None => Ok(MAX_PAGE_SIZE),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n <= MAX_PAGE_SIZE => Ok(n),
            _ => Err(ApiError::with_message(
                ErrorCode::InvalidQueryParameterValue,
                format!("Value for one of the query parameters specified in the request URI is invalid. ($top={v})"),
            )),
        },
    }
}

/// Whether the request asked for the query plan headers (`x-tablestore-debug-plan: true`).
pub fn wants_plan(call: &Call) -> bool {
    call.header(crate::protocol::headers::X_TABLESTORE_DEBUG_PLAN)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Attaches what a successful request did, for the access log and the insight statistics
/// (read by `middleware::request_log`).
pub fn observe(
    mut response: axum::response::Response,
    observation: crate::insight::Observation,
) -> axum::response::Response {
    response.extensions_mut().insert(observation);
    response
}

/// Response metadata level from `Accept` and `$format`.
pub fn metadata(call: &Call) -> Result<Metadata, ApiError> {
    negotiate_metadata(call.header("accept"), call.query.get("$format"))
}

/// OData query options the Table service does not support: answered 501 NotImplemented
/// rather than silently ignored [emu, Azure docs: "Query operators supported for the Table service"].
pub fn reject_unsupported_options(query: &QueryParams) -> Result<(), ApiError> {
    for option in [
        "$orderby",
        "$skip",
        "$expand",
        "$count",
        "$inlinecount",
        "$skiptoken",
        "$search",
        "$apply",
    ] {
        if query.get(option).is_some() {
            return Err(ApiError::with_message(
                ErrorCode::NotImplemented,
                format!("The query option {option} is not supported by the Table service."),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
