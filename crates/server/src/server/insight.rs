//! The endpoints outside Azure's URL space that show what `crate::insight` saw:
//! `GET /_tablestore/insight` (JSON statistics and advice) and `GET /metrics` (Prometheus
//! text format). Account names cannot start with `_`, so `/_tablestore/…` never collides with
//! an account; `/metrics` is served unless an account is named `metrics`.
//!
//! Access: with authentication on, the caller signs the request with an account key (Shared
//! Key or Shared Key Lite, canonicalized resource `/{account}{path}`); the insight JSON then
//! shows that account only, and the metrics (which carry no account, table or key labels)
//! are the whole server's. With `--disable-auth` both are open, like every other path. With
//! `--metrics-token TOKEN`, `Authorization: Bearer TOKEN` also opens `/metrics` (for
//! Prometheus, which cannot sign Shared Key), and nothing else.

use std::net::SocketAddr;

use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;

use super::context::{RequestContext, ResponseParts};
use super::AppState;
use crate::auth::{authenticate_with, AuthOptions, NoPolicies, Principal, RequestView};
use crate::protocol::operation::Operation;
use crate::protocol::{ApiError, ErrorCode};
use crate::store::Footprint;
use subtle::ConstantTimeEq as _;

pub(super) const INSIGHT_PATH: &str = "/_tablestore/insight";
pub(super) const METRICS_PATH: &str = "/metrics";
/// Where browsers look for a site's icon. `favicon.ico` is no account name (those are letters
/// and digits), so the path is never an account's.
pub(super) const FAVICON_PATH: &str = "/favicon.ico";

/// A request a browser makes by itself (no signature, no `x-ms-version`): SDK-shaped requests
/// to the same path keep the Table service's answer.
fn browser_shaped(parts: &Parts) -> bool {
    let headers = &parts.headers;
    !headers.contains_key(axum::http::header::AUTHORIZATION)
        && !headers.contains_key("x-ms-version")
}

/// What the access log and the statistics learn about a request from dispatch: the REST
/// operation and the account charged with a transaction (`None` before authentication).
#[derive(Debug, Clone)]
pub(super) struct Charged {
    pub(crate) operation: &'static str,
    pub(crate) account: Option<String>,
}

/// Whether the request is for the console, its icon, insight or the metrics.
pub(super) fn is_for_insight(state: &AppState, parts: &Parts) -> bool {
    let path = parts.uri.path();
    path.starts_with("/_tablestore/console")
        || path == INSIGHT_PATH
        || (path == METRICS_PATH && !state.accounts.current().contains("metrics"))
        || (path == FAVICON_PATH && !state.config.no_console && browser_shaped(parts))
}

/// Answers the insight endpoints; `None` for any other path.
pub(super) async fn route(state: &AppState, parts: &Parts, peer: SocketAddr) -> Option<Response> {
    let path = parts.uri.path();
    let icon = path == FAVICON_PATH && !state.config.no_console && browser_shaped(parts);
    let console_path = path.starts_with("/_tablestore/console");
    let metrics = path == METRICS_PATH && !state.accounts.current().contains("metrics");
    if !console_path && !icon && path != INSIGHT_PATH && !metrics {
        return None;
    }
    let ctx = &RequestContext::new(&parts.headers, state.dialect);
    if console_path || icon {
        let mut response = console(state, parts, ctx, path);
        response.extensions_mut().insert(Charged {
            operation: "Console",
            account: None,
        });
        return Some(response);
    }
    let operation = if metrics { "Metrics" } else { "Insight" };
    let mut response = answer(state, parts, ctx, peer, metrics)
        .await
        .unwrap_or_else(|e| ctx.error(&e));
    response.extensions_mut().insert(Charged {
        operation,
        account: None,
    });
    Some(response)
}

async fn answer(
    state: &AppState,
    parts: &Parts,
    ctx: &RequestContext,
    peer: SocketAddr,
    metrics: bool,
) -> Result<Response, ApiError> {
    if parts.method != axum::http::Method::GET && parts.method != axum::http::Method::HEAD {
        return Err(ApiError::new(ErrorCode::UnsupportedHttpVerb));
    }
    let account = match metrics_token_presented(state, parts, metrics)? {
        true => None,
        false => caller(state, parts, peer)?,
    };
    let mut r = ctx.plain_response(StatusCode::OK);
    if metrics {
        let flushes = state.store.group_commit_flushes();
        let footprint = footprint(state).await;
        let text = state.insight.metrics(flushes, footprint);
        r.body(
            "text/plain; version=0.0.4; charset=utf-8",
            text.into_bytes(),
        );
    } else {
        r.body(
            "application/json",
            insight_document(state, parts, account).await,
        );
    }
    r.header("cache-control", "no-store");
    Ok(r.into_response())
}

/// The insight document for `account` (all accounts when `None`).
async fn insight_document(state: &AppState, parts: &Parts, account: Option<String>) -> Vec<u8> {
    let insight = state.insight.clone();
    // `?settle` waits (briefly) until the requests before this one are counted.
    if parts
        .uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "settle"))
    {
        let i = insight.clone();
        let _ =
            tokio::task::spawn_blocking(move || i.settle(std::time::Duration::from_secs(2))).await;
    }
    let mut snapshot = insight.snapshot(account.as_deref());
    if let Some(f) = footprint(state).await {
        snapshot["store"] = store_json(&f);
    }
    serde_json::to_vec_pretty(&snapshot).unwrap_or_default()
}

/// Whether a request for the metrics carries the server's `--metrics-token` as a bearer
/// token (`Authorization: Bearer TOKEN`, what Prometheus sends with its `authorization`
/// setting); `false` when it carries no bearer token, so the account-key check applies. A
/// bearer token that is not the metrics token is refused, and the token opens nothing else.
fn metrics_token_presented(
    state: &AppState,
    parts: &Parts,
    metrics: bool,
) -> Result<bool, ApiError> {
    let Some(expected) = state.config.metrics_token.as_deref().filter(|_| metrics) else {
        return Ok(false);
    };
    presents_token(parts, expected, "--metrics-token")
}

/// Whether the request carries `expected` as its bearer token (`Authorization: Bearer
/// TOKEN`), compared in constant time; `false` when it carries no bearer token. A bearer
/// token that is not `expected` is refused with a sentence naming `option`, the server
/// option that sets it.
pub(super) fn presents_token(
    parts: &Parts,
    expected: &str,
    option: &str,
) -> Result<bool, ApiError> {
    let presented = parts
        .headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    match presented {
        None => Ok(false),
        Some(token) if bool::from(token.as_bytes().ct_eq(expected.as_bytes())) => Ok(true),
        Some(_) => Err(ApiError::with_message(
            ErrorCode::AuthenticationFailed,
            format!("The bearer token is not this server's {option}."),
        )),
    }
}

/// The console's static files (see `crate::console`), and its icon at `/favicon.ico` for
/// browser-shaped requests: anyone may load them; they carry no data and no credential. Off
/// with `--no-console`.
fn console(state: &AppState, parts: &Parts, ctx: &RequestContext, path: &str) -> Response {
    use crate::console::SECURITY_HEADERS;
    let not_found = |message: &str| {
        ctx.error(&ApiError::with_message(
            ErrorCode::ResourceNotFound,
            message.to_string(),
        ))
    };
    if state.config.no_console {
        return not_found("The console is turned off (--no-console).");
    }
    if parts.method != axum::http::Method::GET && parts.method != axum::http::Method::HEAD {
        return ctx.error(&ApiError::new(ErrorCode::UnsupportedHttpVerb));
    }
    let Some(mut r) = console_file(state, ctx, path) else {
        return not_found("No such console file.");
    };
    for (name, value) in SECURITY_HEADERS {
        r.header(name, value);
    }
    r.into_response()
}

/// The answer for the console file at `path` (`None`: there is none).
fn console_file(state: &AppState, ctx: &RequestContext, path: &str) -> Option<ResponseParts> {
    use crate::console::{asset, config_json, favicon, CONSOLE_PATH, FAVICON_TYPE};
    let mut r = if path == "/_tablestore/console" {
        let mut r = ctx.plain_response(StatusCode::PERMANENT_REDIRECT);
        r.header("location", CONSOLE_PATH);
        return Some(r);
    } else {
        ctx.plain_response(StatusCode::OK)
    };
    if path == format!("{CONSOLE_PATH}config.json") {
        let current = state.accounts.current();
        let accounts: Vec<String> = current.names().map(str::to_string).collect();
        let published: Vec<(String, &'static str)> = accounts
            .iter()
            .filter_map(|a| Some((a.clone(), current.published_key(a)?)))
            .collect();
        let config = config_json(!state.config.disable_auth, &accounts, &published);
        r.body("application/json", config.into_bytes());
    } else if path == FAVICON_PATH {
        r.body(FAVICON_TYPE, favicon().as_bytes().to_vec());
    } else {
        let (content_type, body) = asset(path)?;
        r.body(content_type, body.as_bytes().to_vec());
    }
    Some(r)
}

/// The account the caller proved it holds the key of (`None` with authentication off). The
/// rule of every `/_tablestore/` control endpoint (insight, faults): an account key only.
pub(super) fn caller(
    state: &AppState,
    parts: &Parts,
    peer: SocketAddr,
) -> Result<Option<String>, ApiError> {
    if state.config.disable_auth {
        return Ok(None);
    }
    let view = RequestView {
        method: parts.method.as_str(),
        raw_path: parts.uri.path(),
        raw_query: parts.uri.query(),
        headers: &parts.headers,
        account: claimed_account(parts),
        path_style: false,
        is_https: super::Scheme::of(&parts.extensions) == super::Scheme::Https,
        client_ip: Some(peer.ip()),
        now: chrono::Utc::now(),
    };
    let options = AuthOptions {
        allow_bearer: false,
        ..AuthOptions::default()
    };
    match authenticate_with(&view, &state.accounts.current(), &NoPolicies, &options) {
        Ok(Principal::SharedKey { account }) => Ok(Some(account)),
        Ok(_) => Err(ApiError::with_message(
            ErrorCode::AuthorizationFailure,
            "The insight endpoints need an account key (Shared Key); a SAS does not grant them.",
        )),
        Err(e) => Err(super::auth::auth_error(&e)),
    }
}

/// The account an `Authorization: SharedKey account:signature` header names (`""`: none).
fn claimed_account(parts: &Parts) -> &str {
    parts
        .headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .and_then(|(_, creds)| creds.split_once(':'))
        .map(|(account, _)| account.trim())
        .unwrap_or("")
}

/// The store's size (entities, logical bytes, bytes on disk).
async fn footprint(state: &AppState) -> Option<Footprint> {
    state.store.footprint().await
}

/// The insight document's `store` member: the whole server's data, all accounts together.
fn store_json(f: &Footprint) -> serde_json::Value {
    serde_json::json!({
        "entities": f.entities,
        "logicalBytes": f.logical_bytes,
        "diskBytes": f.disk_bytes,
        "diskToLogical": f.disk_bytes
            .filter(|_| f.logical_bytes > 0)
            .map(|d| (d as f64 / f.logical_bytes as f64 * 100.0).round() / 100.0),
    })
}

/// The REST operation's name, a bounded label for metrics.
pub(super) fn operation_name(op: &Operation) -> &'static str {
    match op {
        Operation::QueryTables => "QueryTables",
        Operation::GetTable { .. } => "GetTable",
        Operation::CreateTable => "CreateTable",
        Operation::DeleteTable { .. } => "DeleteTable",
        Operation::QueryEntities { .. } => "QueryEntities",
        Operation::GetEntity(_) => "GetEntity",
        Operation::InsertEntity { .. } => "InsertEntity",
        Operation::UpdateEntity(..) => "UpdateEntity",
        Operation::MergeEntity(..) => "MergeEntity",
        Operation::DeleteEntity(..) => "DeleteEntity",
        Operation::InsertOrReplaceEntity(_) => "InsertOrReplaceEntity",
        Operation::InsertOrMergeEntity(_) => "InsertOrMergeEntity",
        Operation::GetServiceProperties => "GetServiceProperties",
        Operation::SetServiceProperties => "SetServiceProperties",
        Operation::GetServiceStats => "GetServiceStats",
        Operation::GetTableAcl { .. } => "GetTableAcl",
        Operation::SetTableAcl { .. } => "SetTableAcl",
        Operation::Batch => "Batch",
        // Not a REST operation: a service URL that ends with a table name.
        Operation::BelowTable(_) => "Other",
    }
}
