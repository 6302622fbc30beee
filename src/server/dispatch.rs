//! The catch-all route: resolve the account, parse the operation, read the body, call the
//! operation's handler. axum's matcher cannot express `t(PartitionKey='a',RowKey='b')` nor a
//! MERGE verb, hence one route.

use axum::body::{to_bytes, Body};
use axum::extract::State;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::Response;
use bytes::Bytes;

use super::context::RequestContext;
use super::handlers::{entities, service, tables};
use super::AppState;
use crate::model::limits::MAX_REQUEST_BODY;
use crate::protocol::error::ErrorFormat;
use crate::protocol::headers::{self, is_valid_version};
use crate::protocol::operation::{parse_operation, Operation, OperationHeaders};
use crate::protocol::uri::{parse_resource, split_account, QueryParams};
use crate::protocol::{ApiError, ErrorCode};

/// Path of the readiness probe; `_` cannot start an account name, so it never collides.
pub const HEALTH_PATH: &str = "/_health";

/// Everything a handler needs from the request.
pub struct Call {
    pub ctx: RequestContext,
    pub headers: HeaderMap,
    pub query: QueryParams,
    pub body: Bytes,
    pub is_head: bool,
}

impl Call {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub async fn dispatch(State(state): State<AppState>, request: Request<Body>) -> Response {
    let (parts, body) = request.into_parts();
    let mut ctx = RequestContext::new(&parts.headers);
    let path = parts.uri.path();
    if path == HEALTH_PATH {
        let mut r = ctx.plain_response(StatusCode::OK);
        r.body("text/plain; charset=utf-8", b"OK".to_vec());
        return r.into_response();
    }
    if let Some(v) = parts.headers.get(headers::X_MS_VERSION) {
        // `--skipApiVersionCheck` accepts any value, as Azurite's switch does.
        if !state.config.skip_api_version_check
            && !v.to_str().map(is_valid_version).unwrap_or(false)
        {
            return ctx.error(&ApiError::new(ErrorCode::InvalidHeaderValue));
        }
    }
    let host = parts
        .headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .or(parts.uri.host());
    let config = &state.config;
    let host_style = !config.disable_product_style_url;
    let Some(account_path) = split_account(host, path, |a| config.is_known_account(a), host_style)
    else {
        return ctx.error(&ApiError::new(ErrorCode::InvalidUri));
    };
    ctx.account = account_path.account.clone();
    if !config.is_known_account(ctx.data_account()) {
        return ctx.error(&ApiError::with_message(
            ErrorCode::AuthenticationFailed,
            format!(
                "Server failed to authenticate the request. The account '{}' is not known to this server.",
                ctx.data_account()
            ),
        ));
    }
    let host_text = host.unwrap_or("127.0.0.1");
    ctx.base_url = if account_path.path_style {
        format!("http://{host_text}/{}", ctx.account)
    } else {
        format!("http://{host_text}")
    };
    let query = match QueryParams::parse(parts.uri.query()) {
        Ok(q) => q,
        Err(e) => return ctx.error(&e),
    };
    let operation = match parse_resource(account_path.rest).and_then(|resource| {
        let x_methods: Vec<&str> = parts
            .headers
            .get_all(headers::X_HTTP_METHOD)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .collect();
        let header = |n: &str| parts.headers.get(n).and_then(|v| v.to_str().ok());
        parse_operation(
            parts.method.as_str(),
            resource,
            &query,
            OperationHeaders {
                x_http_method: &x_methods,
                if_match: header("if-match"),
                if_none_match: header("if-none-match"),
            },
        )
    }) {
        Ok(op) => op,
        Err(e) => return ctx.error(&e),
    };
    let error_format = match operation {
        Operation::GetTableAcl { .. }
        | Operation::SetTableAcl { .. }
        | Operation::GetServiceProperties
        | Operation::SetServiceProperties
        | Operation::GetServiceStats => ErrorFormat::StorageXml,
        _ => ctx.error_format,
    };
    if ctx.account.ends_with("-secondary") && operation.is_write() {
        return ctx.error_response(
            &ApiError::new(ErrorCode::InsufficientAccountPermissions),
            error_format,
        );
    }
    let body = match to_bytes(body, MAX_REQUEST_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return ctx.error_response(&ApiError::new(ErrorCode::RequestBodyTooLarge), error_format)
        }
    };
    let call = Call {
        ctx,
        is_head: parts.method == axum::http::Method::HEAD,
        headers: parts.headers,
        query,
        body,
    };
    let result = match operation {
        Operation::QueryTables => tables::query_tables(&state, &call).await,
        Operation::GetTable { table } => tables::get_table(&state, &call, table).await,
        Operation::CreateTable => tables::create_table(&state, &call).await,
        Operation::DeleteTable { table } => tables::delete_table(&state, &call, table).await,
        Operation::QueryEntities { table } => entities::query_entities(&state, &call, table).await,
        Operation::GetEntity(e) => entities::get_entity(&state, &call, e).await,
        Operation::InsertEntity { table } => entities::insert_entity(&state, &call, table).await,
        Operation::UpdateEntity(..)
        | Operation::MergeEntity(..)
        | Operation::DeleteEntity(..)
        | Operation::InsertOrReplaceEntity(_)
        | Operation::InsertOrMergeEntity(_) => {
            entities::write_entity(&state, &call, operation).await
        }
        Operation::GetTableAcl { .. }
        | Operation::SetTableAcl { .. }
        | Operation::GetServiceProperties
        | Operation::SetServiceProperties
        | Operation::GetServiceStats
        | Operation::Batch => service::not_implemented(&call).await,
    };
    match result {
        Ok(response) => response,
        Err(e) => call.ctx.error_response(&e, error_format),
    }
}
