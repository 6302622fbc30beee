//! The catch-all route: resolve the account, parse the operation, read the body, call the
//! operation's handler. axum's matcher cannot express `t(PartitionKey='a',RowKey='b')` nor a
//! MERGE verb, hence one route.

use axum::body::{to_bytes, Body};
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::Response;
use bytes::Bytes;

use super::auth;
use super::connections::is_body_timeout;
use super::context::RequestContext;
use super::handlers::{acl, batch, entities, service, tables};
use super::middleware::AuthOutcome;
use super::{AppState, Scheme};
use crate::auth::Principal;
use crate::model::limits::MAX_REQUEST_BODY;
use crate::model::TableRef;
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
    /// Who is calling (`None` with `--disable-auth`); handlers enforce its SAS key range.
    pub principal: Option<Principal>,
    pub headers: HeaderMap,
    pub query: QueryParams,
    pub body: Bytes,
    pub is_head: bool,
}

impl Call {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Table `name` of the account the request addresses.
    pub fn table(&self, name: impl Into<String>) -> TableRef {
        TableRef::new(self.ctx.data_account(), name)
    }

    /// Refuses an entity key outside the caller's SAS key range.
    pub fn check_key(&self, partition_key: &str, row_key: &str) -> Result<(), ApiError> {
        auth::check_key(self.principal.as_ref(), partition_key, row_key)
    }
}

pub async fn dispatch(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request<Body>,
) -> Response {
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
    let accounts = &state.accounts;
    let host_style = !state.config.disable_product_style_url;
    let Some(account_path) = split_account(host, path, |a| accounts.contains(a), host_style) else {
        return ctx.error(&ApiError::new(ErrorCode::InvalidUri));
    };
    ctx.account = account_path.account.clone();
    if !accounts.contains(ctx.data_account()) {
        let mut response = ctx.error(&ApiError::new(ErrorCode::AuthenticationFailed));
        response
            .extensions_mut()
            .insert(AuthOutcome("denied".to_string()));
        return response;
    }
    let host_text = host.unwrap_or("127.0.0.1");
    let scheme = Scheme::of(&parts.extensions);
    let scheme_text = scheme.as_str();
    ctx.base_url = if account_path.path_style {
        format!("{scheme_text}://{host_text}/{}", ctx.account)
    } else {
        format!("{scheme_text}://{host_text}")
    };
    if parts.method == axum::http::Method::OPTIONS {
        return service::preflight(&state, &ctx, &parts.headers).await;
    }
    let query = match QueryParams::parse(parts.uri.query()) {
        Ok(q) => q,
        Err(e) => return ctx.error(&e),
    };
    let operation = match parse_resource(account_path.rest).and_then(|resource| {
        // Every value of these headers counts, readable or not: an If-Match that is not
        // text, or sent twice, must fail as a bad ETag rather than vanish and turn a
        // conditional write into an unconditional upsert.
        let all_values = |n: &str| -> Option<String> {
            let values: Vec<String> = parts
                .headers
                .get_all(n)
                .iter()
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .collect();
            (!values.is_empty()).then(|| values.join(", "))
        };
        let x_method_values = all_values(headers::X_HTTP_METHOD);
        let x_methods: Vec<&str> = x_method_values
            .as_deref()
            .map(|v| v.split(',').collect())
            .unwrap_or_default();
        let if_match = all_values("if-match");
        let if_none_match = all_values("if-none-match");
        parse_operation(
            parts.method.as_str(),
            resource,
            &query,
            OperationHeaders {
                x_http_method: &x_methods,
                if_match: if_match.as_deref(),
                if_none_match: if_none_match.as_deref(),
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
    let principal = if state.config.disable_auth {
        if ctx.account.ends_with("-secondary") && operation.is_write() {
            return ctx.error_response(
                &ApiError::new(ErrorCode::InsufficientAccountPermissions),
                error_format,
            );
        }
        None
    } else {
        match auth::check(
            &state,
            &parts,
            &ctx,
            account_path.path_style,
            &operation,
            Some(peer.ip()),
            scheme == Scheme::Https,
        ) {
            Ok(p) => Some(p),
            Err(e) => {
                let mut response = ctx.error_response(&e, error_format);
                response
                    .extensions_mut()
                    .insert(AuthOutcome("denied".to_string()));
                return response;
            }
        }
    };
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_REQUEST_BODY as u64) {
        return closing(
            ctx.error_response(&ApiError::new(ErrorCode::RequestBodyTooLarge), error_format),
        );
    }
    let body = match to_bytes(body, MAX_REQUEST_BODY).await {
        Ok(b) => b,
        Err(e) => return closing(ctx.error_response(&body_error(&e), error_format)),
    };
    let auth_outcome = AuthOutcome(auth_label(principal.as_ref()).to_string());
    let call = Call {
        ctx,
        principal,
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
        Operation::GetServiceProperties => service::get_service_properties(&state, &call).await,
        Operation::SetServiceProperties => service::set_service_properties(&state, &call).await,
        Operation::GetServiceStats => service::get_service_stats(&state, &call).await,
        Operation::GetTableAcl { table } => acl::get_table_acl(&state, &call, table).await,
        Operation::SetTableAcl { table } => acl::set_table_acl(&state, &call, table).await,
        Operation::Batch => batch::batch(&state, &call).await,
    };
    let mut response = match result {
        Ok(response) => response,
        Err(e) => call.ctx.error_response(&e, error_format),
    };
    response.extensions_mut().insert(auth_outcome);
    if let Some(origin) = call.header("origin") {
        service::decorate_cors(
            &state,
            call.ctx.data_account(),
            origin,
            &parts.method,
            &mut response,
        )
        .await;
    }
    response
}

/// The access log's `auth` field: how the request was let in.
fn auth_label(principal: Option<&Principal>) -> &'static str {
    match principal {
        None => "disabled",
        Some(Principal::SharedKey { .. }) => "SharedKey",
        Some(Principal::Sas(grant)) => match grant.kind {
            crate::auth::SasKind::Service => "ServiceSAS",
            crate::auth::SasKind::Account => "AccountSAS",
        },
        Some(Principal::Bearer { .. }) => "Bearer",
    }
}

/// The error for a request body that could not be read: too large, too slow (the
/// connection's body deadline, `ServeLimits::body_read_timeout`), or broken off.
fn body_error(e: &axum::Error) -> ApiError {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        if err.is::<http_body_util::LengthLimitError>() {
            return ApiError::new(ErrorCode::RequestBodyTooLarge);
        }
        current = err.source();
    }
    if is_body_timeout(e) {
        // Azure's code for a request that exceeded the server's time; 408 tells HTTP
        // clients (and the SDK retry policies) that the request was not processed.
        return ApiError::new(ErrorCode::OperationTimedOut)
            .with_status(StatusCode::REQUEST_TIMEOUT);
    }
    ApiError::with_message(
        ErrorCode::InvalidInput,
        "The request body could not be read completely.",
    )
}

/// Marks a response as the last on its connection (the request body was not consumed).
fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}
