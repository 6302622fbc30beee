//! Admission of one request: health probe, `x-ms-version`, the account (path or host
//! style), CORS preflight, the [`Operation`] (`protocol::operation`), authentication and
//! authorization, and the body (4 MiB at most). What comes out is a [`Call`] for the
//! operation's handler, or the response that ends the request here.

use std::net::SocketAddr;

use axum::body::{to_bytes, Body, HttpBody as _};
use axum::http::request::Parts;
use axum::http::{header, HeaderName, Method, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use http_body_util::BodyExt as _;

use super::auth;
use super::call::Call;
use super::connections::is_body_timeout;
use super::context::{names, RequestContext};
use super::health::HEALTH_PATH;
use super::middleware::AuthOutcome;
use super::{AppState, Scheme};
use crate::auth::Principal;
use crate::exec::Scope;
use crate::model::limits::MAX_REQUEST_BODY;
use crate::protocol::dialect::{self, RequestKind};
use crate::protocol::error::ErrorFormat;
use crate::protocol::headers::is_valid_version;
use crate::protocol::operation::{parse_operation, Operation, OperationHeaders};
use crate::protocol::uri::{
    authorization_account, parse_resource, split_account, split_account_at_root, AccountPath,
    QueryParams, Resource,
};
use crate::protocol::{ApiError, ErrorCode};

/// A request let in: the call for the handler, its operation, how its errors are rendered
/// and how it was authenticated (for the access log).
pub(crate) struct Admitted {
    pub(crate) call: Call,
    pub(crate) operation: Operation,
    pub(crate) error_format: ErrorFormat,
    pub(crate) auth_outcome: AuthOutcome,
    pub(crate) method: Method,
}

/// Admits a request, or answers it (health probe, preflight, any refusal).
pub(crate) async fn admit(
    state: &AppState,
    peer: SocketAddr,
    parts: Parts,
    body: Body,
) -> Result<Admitted, Response> {
    let head = match admit_head(state, peer, &parts).await {
        Ok(head) => head,
        Err(response) => {
            discard_unread(body);
            return Err(response);
        }
    };
    let ctx = head.ctx;
    let body = read_body(&parts, body)
        .await
        .map_err(|e| closing(ctx.error_response(&e, head.error_format)))?;
    let auth_outcome = AuthOutcome(auth_label(head.principal.as_ref()));
    let call = Call {
        scope: Scope::new(ctx.data_account(), head.principal)
            .for_dialect(ctx.dialect, state.config.cosmos_shuffle_seed),
        ctx,
        is_head: parts.method == axum::http::Method::HEAD,
        headers: parts.headers,
        query: head.query,
        body,
    };
    Ok(Admitted {
        call,
        operation: head.operation,
        error_format: head.error_format,
        auth_outcome,
        method: parts.method,
    })
}

/// The request's body, at most 4 MiB. A body declared larger is refused before it is read
/// (and discarded in the background).
async fn read_body(parts: &Parts, body: Body) -> Result<Bytes, ApiError> {
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(n) if n > MAX_REQUEST_BODY as u64 => {
            discard_in_background(body, 0);
            Err(ApiError::new(ErrorCode::RequestBodyTooLarge))
        }
        // A declared length within the limit: hyper delivers exactly that many bytes.
        Some(_) => to_bytes(body, MAX_REQUEST_BODY)
            .await
            .map_err(|e| body_error(&e)),
        None => read_unsized_body(body).await,
    }
}

/// What the request line and headers decide: the context, the query, the operation, how
/// errors are rendered and who is calling.
struct Head {
    ctx: RequestContext,
    query: QueryParams,
    operation: Operation,
    error_format: ErrorFormat,
    principal: Option<Principal>,
}

/// Everything decided before the body is read, or the response that ends the request there.
async fn admit_head(state: &AppState, peer: SocketAddr, parts: &Parts) -> Result<Head, Response> {
    let mut ctx = RequestContext::new(&parts.headers, state.dialect);
    if parts.uri.path() == HEALTH_PATH {
        let mut r = ctx.plain_response(StatusCode::OK);
        r.body("text/plain; charset=utf-8", b"OK".to_vec());
        return Err(r.into_response());
    }
    if !version_accepted(state, parts) {
        return Err(ctx.error(&ApiError::new(ErrorCode::InvalidHeaderValue)));
    }
    let account_path =
        resolve_account(state, parts, &mut ctx).map_err(|refusal| refusal.answer(&ctx))?;
    if parts.method == axum::http::Method::OPTIONS {
        if !ctx.dialect.cors {
            return Err(ctx.error(&dialect::not_supported()));
        }
        return Err(super::cors::preflight(state, &ctx, &parts.headers).await);
    }
    let query = QueryParams::parse(parts.uri.query()).map_err(|e| ctx.error(&e))?;
    let operation = parse_resource(account_path.rest)
        .and_then(|resource| operation_of(parts, resource, &query))
        .map_err(|e| ctx.error(&e))?;
    let error_format = error_format_of(&operation, ctx.error_format);
    let caller = Caller {
        peer,
        path_style: account_path.path_style,
        error_format,
    };
    let principal = authenticate(state, parts, &ctx, &operation, &caller).await?;
    dialect_rules(&ctx, parts, &operation, principal.as_ref()).map_err(|e| ctx.error(&e))?;
    Ok(Head {
        ctx,
        query,
        operation,
        error_format,
        principal,
    })
}

/// `x-ms-version`, when sent, must be a version the service knows; `--skipApiVersionCheck`
/// accepts any value, as Azurite's switch does.
fn version_accepted(state: &AppState, parts: &Parts) -> bool {
    match parts.headers.get(names::X_MS_VERSION) {
        Some(v) => {
            state.config.skip_api_version_check || v.to_str().map(is_valid_version).unwrap_or(false)
        }
        None => true,
    }
}

/// Why no account could be taken from a request.
enum AccountRefusal {
    /// The path and host name name no account (`InvalidUri`).
    NoAccount,
    /// An account this server does not have (`AuthenticationFailed`, as Azure answers); the
    /// cause says which, for the log.
    Unknown(String),
}

impl AccountRefusal {
    fn answer(self, ctx: &RequestContext) -> Response {
        match self {
            AccountRefusal::NoAccount => ctx.error(
                &ApiError::new(ErrorCode::InvalidUri)
                    .with_cause("the URL names no account: its path is empty"),
            ),
            AccountRefusal::Unknown(cause) => {
                denied(ctx.error(&ApiError::new(ErrorCode::AuthenticationFailed).with_cause(cause)))
            }
        }
    }
}

/// The log's cause for a request to an account this server does not have. The commonest is
/// an endpoint URL without the account segment (`TableEndpoint=http://host:10002/`): its
/// first path segment is then a resource (`Tables`, `$batch`, a table) taken for the account.
fn unknown_account_cause(
    accounts: &crate::auth::Accounts,
    headers: &axum::http::HeaderMap,
    account: &str,
) -> String {
    let configured: Vec<&str> = accounts.names().collect();
    let configured = configured.join(", ");
    let signed = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(authorization_account)
        .filter(|a| accounts.contains(a));
    let resource_like =
        account == "Tables" || account == "$batch" || account.contains(['(', ')', '\'']);
    match signed {
        Some(signer) => format!(
            "unknown account '{account}': the request is signed for account '{signer}', so the \
             URL probably lacks the account segment (use http://<host>:<port>/{signer}, as the \
             connection string's TableEndpoint)"
        ),
        None if resource_like => format!(
            "the URL names no account: its first path segment '{account}' is a resource, not \
             an account; the endpoint probably lacks the account segment (configured: \
             {configured})"
        ),
        None => format!(
            "account '{account}' is not configured on this server (configured: {configured}; \
             add accounts with AZURITE_ACCOUNTS or --accounts)"
        ),
    }
}

/// The account the request is for (from the path or the host name) and the rest of its
/// path; fills in the context's account, base URL and the kind of request.
fn resolve_account<'a>(
    state: &AppState,
    parts: &'a Parts,
    ctx: &mut RequestContext,
) -> Result<AccountPath<'a>, AccountRefusal> {
    let path = parts.uri.path();
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or(parts.uri.host());
    let accounts = state.accounts.current();
    let host_style = !state.config.disable_product_style_url;
    let account_path = if ctx.dialect.account_at_root {
        let root = root_account(&accounts, &parts.headers);
        split_account_at_root(host, path, |a| accounts.contains(a), host_style, root)
    } else {
        split_account(host, path, |a| accounts.contains(a), host_style)
    };
    let Some(mut account_path) = account_path else {
        return Err(AccountRefusal::NoAccount);
    };
    ctx.account = std::mem::take(&mut account_path.account);
    ctx.request_kind = RequestKind::of(
        parts.method.as_str(),
        parts.headers.contains_key(names::X_HTTP_METHOD),
    );
    if !accounts.contains(ctx.data_account()) {
        let cause = unknown_account_cause(&accounts, &parts.headers, ctx.data_account());
        return Err(AccountRefusal::Unknown(cause));
    }
    let host_text = host.unwrap_or("127.0.0.1");
    let scheme_text = Scheme::of(&parts.extensions).as_str();
    // Built with its length known (`format!` grew it two or three times).
    let mut base_url =
        String::with_capacity(scheme_text.len() + 4 + host_text.len() + ctx.account.len());
    base_url.push_str(scheme_text);
    base_url.push_str("://");
    base_url.push_str(host_text);
    if account_path.path_style {
        base_url.push('/');
        base_url.push_str(&ctx.account);
    }
    ctx.base_url = base_url;
    Ok(account_path)
}

/// The operation the method, resource, query and headers ask for.
fn operation_of(
    parts: &Parts,
    resource: Resource,
    query: &QueryParams,
) -> Result<Operation, ApiError> {
    // Every value of these headers counts, readable or not: an If-Match that is not
    // text, or sent twice, must fail as a bad ETag rather than vanish and turn a
    // conditional write into an unconditional upsert.
    let all_values = |n: HeaderName| -> Option<String> {
        let mut values = parts.headers.get_all(n).into_iter();
        let mut joined = String::from_utf8_lossy(values.next()?.as_bytes()).into_owned();
        for v in values {
            joined.push_str(", ");
            joined.push_str(&String::from_utf8_lossy(v.as_bytes()));
        }
        Some(joined)
    };
    let x_method_values = all_values(names::X_HTTP_METHOD);
    let x_methods: Vec<&str> = x_method_values
        .as_deref()
        .map(|v| v.split(',').collect())
        .unwrap_or_default();
    let if_match = all_values(header::IF_MATCH);
    let if_none_match = all_values(header::IF_NONE_MATCH);
    parse_operation(
        parts.method.as_str(),
        resource,
        query,
        OperationHeaders {
            x_http_method: &x_methods,
            if_match: if_match.as_deref(),
            if_none_match: if_none_match.as_deref(),
        },
    )
}

/// ACL and service-properties operations answer errors in Storage's XML; the rest as the
/// request's `Accept` asks.
fn error_format_of(operation: &Operation, requested: ErrorFormat) -> ErrorFormat {
    match operation {
        Operation::GetTableAcl { .. }
        | Operation::SetTableAcl { .. }
        | Operation::GetServiceProperties
        | Operation::SetServiceProperties
        | Operation::GetServiceStats => ErrorFormat::StorageXml,
        _ => requested,
    }
}

/// What authentication needs to know about the caller besides the request.
struct Caller {
    peer: SocketAddr,
    /// The account came from the path (not the host name).
    path_style: bool,
    error_format: ErrorFormat,
}

/// Who is calling (`None` with `--disable-auth`), or the refusal. Even without
/// authentication, a write to the read-only `-secondary` endpoint is refused.
async fn authenticate(
    state: &AppState,
    parts: &Parts,
    ctx: &RequestContext,
    operation: &Operation,
    caller: &Caller,
) -> Result<Option<Principal>, Response> {
    if state.config.disable_auth {
        if ctx.account.ends_with("-secondary") && operation.is_write() {
            return Err(ctx.error_response(
                &ApiError::new(ErrorCode::InsufficientAccountPermissions),
                caller.error_format,
            ));
        }
        return Ok(None);
    }
    let https = Scheme::of(&parts.extensions) == Scheme::Https;
    auth::check(
        state,
        parts,
        ctx,
        caller.path_style,
        operation,
        Some(caller.peer.ip()),
        https,
    )
    .await
    .map(Some)
    .map_err(|e| denied(ctx.error_response(&e, caller.error_format)))
}

/// A refusal marked as such for the access log.
fn denied(mut response: Response) -> Response {
    response.extensions_mut().insert(AuthOutcome("denied"));
    response
}

/// What the dialect does not support (checked after authentication, as Cosmos does): some
/// operations, and SAS tokens narrowed to a key range.
fn dialect_rules(
    ctx: &RequestContext,
    parts: &Parts,
    operation: &Operation,
    principal: Option<&Principal>,
) -> Result<(), ApiError> {
    ctx.dialect
        .check_operation(parts.method.as_str(), operation)?;
    match principal.and_then(Principal::sas) {
        Some(grant) => ctx
            .dialect
            .check_sas_key_range(grant.key_range().is_unbounded()),
        None => Ok(()),
    }
}

/// The account a request to a Cosmos endpoint's root addresses: the one its Shared Key
/// signature names when that is configured (each account of `AZURITE_ACCOUNTS` can use the
/// emulator's URL shape with its own connection string), else the emulator's `localhost`
/// when served, else the first configured account.
fn root_account<'a>(
    accounts: &'a crate::auth::Accounts,
    headers: &'a axum::http::HeaderMap,
) -> &'a str {
    let signed = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(authorization_account)
        .filter(|a| accounts.contains(a));
    let emulator = crate::auth::accounts::COSMOS_EMULATOR_ACCOUNT_NAME;
    signed
        .or_else(|| accounts.contains(emulator).then_some(emulator))
        .or_else(|| accounts.names().next())
        .unwrap_or(emulator)
}

/// How much of an over-long body is read and dropped after the 413 is answered.
const DISCARD_LIMIT: usize = 64 * 1024 * 1024;

/// Reads a body sent without `Content-Length` (chunked) up to the request limit; past it the
/// answer is 413 and the rest is discarded.
async fn read_unsized_body(mut body: Body) -> Result<Bytes, ApiError> {
    let mut buf = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| body_error(&e))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if buf.len() + data.len() > MAX_REQUEST_BODY {
            discard_in_background(body, buf.len() + data.len());
            return Err(ApiError::new(ErrorCode::RequestBodyTooLarge));
        }
        buf.extend_from_slice(&data);
    }
    Ok(buf.freeze())
}

/// Keeps reading the body of a request answered before its body was read (a refusal, the
/// health probe, a preflight), as after a 413 ([`discard_in_background`]). Dropped unread,
/// it makes hyper stop reading and close the connection once the answer is written: the
/// bytes still on their way then reset the connection, so a client still sending loses the
/// answer, and one that reuses the connection (the SDKs do after an error) sees a reset
/// instead of its next answer. Azure answers and keeps the connection.
pub(super) fn discard_unread(body: Body) {
    if !body.is_end_stream() {
        discard_in_background(body, 0);
    }
}

/// Keeps reading an over-long body after its 413 is answered, dropping each piece as it
/// arrives (memory stays bounded), up to [`DISCARD_LIMIT`] or the body's read deadline. The
/// SDKs send the whole body before they read the answer: a connection closed under them is a
/// broken pipe (`EPIPE`) in place of Azure's `RequestBodyTooLarge`.
fn discard_in_background(mut body: Body, already: usize) {
    tokio::spawn(async move {
        let mut read = already;
        while let Some(Ok(frame)) = body.frame().await {
            read += frame.data_ref().map_or(0, Bytes::len);
            if read > MAX_REQUEST_BODY + DISCARD_LIMIT {
                break;
            }
        }
    });
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
