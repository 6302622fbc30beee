//! Service-level operations: Get/Set Table Service Properties, Get Table Service Stats, and
//! CORS (preflight answers and the headers added to actual cross-origin requests).

use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::Response;

use super::store_error;
use crate::model::EdmDateTime;
use crate::protocol::service_properties::ServiceProperties;
use crate::protocol::{ApiError, ErrorCode};
use crate::server::call::Call;
use crate::server::context::RequestContext;
use crate::server::AppState;

async fn load(state: &AppState, account: &str) -> Result<ServiceProperties, ApiError> {
    let stored = state
        .store
        .get_service_properties(account)
        .await
        .map_err(store_error)?;
    Ok(stored
        .and_then(|b| ServiceProperties::decode(&b))
        .unwrap_or_default())
}

pub async fn get_service_properties(state: &AppState, call: &Call) -> Result<Response, ApiError> {
    let properties = load(state, call.ctx.data_account()).await?;
    let mut r = call.ctx.plain_response(StatusCode::OK);
    r.body("application/xml", properties.encode());
    Ok(r.into_response())
}

pub async fn set_service_properties(state: &AppState, call: &Call) -> Result<Response, ApiError> {
    let current = load(state, call.ctx.data_account()).await?;
    let next = current.apply_update(&call.body)?;
    state
        .store
        .set_service_properties(call.ctx.data_account(), next.encode())
        .await
        .map_err(store_error)?;
    Ok(call
        .ctx
        .plain_response(StatusCode::ACCEPTED)
        .into_response())
}

/// Replication stats: this server has no replica, so the secondary is always `live` and in
/// sync as of now [emu, Azure docs: "Get Table Service Stats"]. Azure offers them on the
/// `-secondary` endpoint only and answers the primary with 400 `InvalidQueryParameterValue`
/// (azure-cosmos-table-dotnet issue #26 quotes the response).
pub async fn get_service_stats(_state: &AppState, call: &Call) -> Result<Response, ApiError> {
    if !call.ctx.account.ends_with("-secondary") {
        return Err(ApiError::new(ErrorCode::InvalidQueryParameterValue));
    }
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime>{}</LastSyncTime></GeoReplication></StorageServiceStats>",
        EdmDateTime::now().to_rfc1123()
    );
    let mut r = call.ctx.plain_response(StatusCode::OK);
    r.body("application/xml", body.into_bytes());
    Ok(r.into_response())
}

/// `OPTIONS` on any path: always anonymous; answered from the account's CORS rules.
pub async fn preflight(
    state: &AppState,
    ctx: &RequestContext,
    headers: &axum::http::HeaderMap,
) -> Response {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    let (Some(origin), Some(method)) = (header("origin"), header("access-control-request-method"))
    else {
        return ctx.error(&ApiError::with_message(
            ErrorCode::InvalidHeaderValue,
            "A required CORS header is not present.",
        ));
    };
    let properties = match load(state, ctx.data_account()).await {
        Ok(p) => p,
        Err(e) => return ctx.error(&e),
    };
    let requested_headers = header("access-control-request-headers").unwrap_or("");
    let Some(rule) = properties
        .matching_cors_rule(origin, method)
        .filter(|r| r.allows_headers(requested_headers))
    else {
        return ctx.error(&ApiError::new(ErrorCode::CorsPreflightFailure));
    };
    let mut r = ctx.plain_response(StatusCode::OK);
    let allow_origin = if rule.allows_any_origin() {
        "*"
    } else {
        origin
    };
    r.header("access-control-allow-origin", allow_origin)
        .header("access-control-allow-methods", method)
        .header(
            "access-control-max-age",
            &rule.max_age_in_seconds.to_string(),
        )
        .header("access-control-allow-credentials", "true");
    if !requested_headers.is_empty() {
        r.header("access-control-allow-headers", requested_headers);
    }
    r.into_response()
}

/// Adds CORS headers to an actual request's response when its `Origin` matches a rule.
/// CORS never makes an actual request fail.
pub async fn decorate_cors(
    state: &AppState,
    account: &str,
    origin: &str,
    method: &Method,
    response: &mut Response,
) {
    let Ok(properties) = load(state, account).await else {
        return;
    };
    if properties.cors.is_empty() {
        return;
    }
    let h = response.headers_mut();
    let is_read = method == Method::GET || method == Method::HEAD;
    match properties.matching_cors_rule(origin, method.as_str()) {
        Some(rule) => {
            let any = rule.allows_any_origin();
            let allow = if any { "*" } else { origin };
            if let Ok(v) = HeaderValue::from_str(allow) {
                h.insert("access-control-allow-origin", v);
            }
            if let Ok(v) = HeaderValue::from_str(&rule.exposed_headers) {
                h.insert("access-control-expose-headers", v);
            }
            if !any {
                h.insert(
                    "access-control-allow-credentials",
                    HeaderValue::from_static("true"),
                );
                if is_read {
                    h.insert("vary", HeaderValue::from_static("Origin"));
                }
            }
        }
        None if is_read => {
            h.insert("vary", HeaderValue::from_static("Origin"));
        }
        None => {}
    }
}
