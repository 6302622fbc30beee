//! Service-level and ACL operations not yet implemented answer Azure's NotImplemented.

use axum::response::Response;

use crate::protocol::{ApiError, ErrorCode};
use crate::server::dispatch::Call;

pub async fn not_implemented(_call: &Call) -> Result<Response, ApiError> {
    Err(ApiError::new(ErrorCode::NotImplemented))
}
