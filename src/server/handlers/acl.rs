//! Get/Set Table ACL: the table's stored access policies, kept in the table record in
//! Azure's `SignedIdentifiers` XML form (Azure docs: "Get Table ACL", "Set Table ACL").

use axum::http::StatusCode;
use axum::response::Response;

use super::store_error;
use crate::auth::{decode_signed_identifiers, encode_signed_identifiers, AclError};
use crate::protocol::{ApiError, ErrorCode};
use crate::server::call::Call;
use crate::server::AppState;
use crate::store::StoreError;

fn acl_error(e: &AclError) -> ApiError {
    let code = match e.code() {
        "InvalidXmlNodeValue" => ErrorCode::InvalidXmlNodeValue,
        _ => ErrorCode::InvalidXmlDocument,
    };
    ApiError::with_message(code, e.message())
}

/// Azure answers the ACL operations on a missing table with `ResourceNotFound` ("The
/// specified resource does not exist."), not the `TableNotFound` of table and entity
/// operations (recorded from the live service by an SDK's own test suite).
fn acl_store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::TableNotFound => ApiError::new(ErrorCode::ResourceNotFound),
        other => store_error(other),
    }
}

pub async fn get_table_acl(
    state: &AppState,
    call: &Call,
    table: String,
) -> Result<Response, ApiError> {
    let table = call.table(table);
    let info = state
        .store
        .get_table(&table)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::new(ErrorCode::ResourceNotFound))?;
    // Stored bytes were written by encode_signed_identifiers; re-encoding normalises them.
    let identifiers = if info.acl.is_empty() {
        Vec::new()
    } else {
        decode_signed_identifiers(&info.acl).map_err(|e| acl_error(&e))?
    };
    let mut r = call.ctx.plain_response(StatusCode::OK);
    let body = encode_signed_identifiers(&identifiers);
    if call.is_head {
        r.header("content-type", "application/xml");
    } else {
        r.body("application/xml", body);
    }
    Ok(r.into_response())
}

pub async fn set_table_acl(
    state: &AppState,
    call: &Call,
    table: String,
) -> Result<Response, ApiError> {
    let identifiers = decode_signed_identifiers(&call.body).map_err(|e| acl_error(&e))?;
    let encoded = encode_signed_identifiers(&identifiers);
    let table = call.table(table);
    state
        .store
        .set_table_acl(&table, encoded)
        .await
        .map_err(acl_store_error)?;
    Ok(call
        .ctx
        .plain_response(StatusCode::NO_CONTENT)
        .into_response())
}
