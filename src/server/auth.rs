//! Connects the auth library to requests: builds the [`RequestView`], resolves stored access
//! policies from the store, maps operations to what they need and auth errors to Azure errors
//! (each with its cause for the server's log, `auth::cause`).

use std::net::IpAddr;

use axum::http::request::Parts;

use super::context::RequestContext;
use super::AppState;
use crate::auth::{authenticate_with, cause, AuthError, AuthOptions, Principal, RequestView};
use crate::exec::authz_operation;
use crate::protocol::operation::Operation;
use crate::protocol::{ApiError, ErrorCode};

/// Azure's error for an auth failure, with its cause for the server's log (and, for a
/// signature that did not match, the string-to-sign the server computed, for its debug log).
pub(crate) fn auth_error(e: &AuthError) -> ApiError {
    auth_error_because(e, cause::cause(e, chrono::Utc::now()))
}

fn auth_error_because(e: &AuthError, because: String) -> ApiError {
    let debug = e
        .string_to_sign()
        .map(|sts| format!("string-to-sign the server computed: {sts}"));
    wire_error(e).with_cause_and_debug(because, debug)
}

/// The error as Azure sends it.
fn wire_error(e: &AuthError) -> ApiError {
    let code = match e.code() {
        "AuthenticationFailed" => ErrorCode::AuthenticationFailed,
        "InvalidAuthenticationInfo" => ErrorCode::InvalidAuthenticationInfo,
        "AuthorizationFailure" => ErrorCode::AuthorizationFailure,
        "AuthorizationPermissionMismatch" => ErrorCode::AuthorizationPermissionMismatch,
        "AuthorizationResourceTypeMismatch" => ErrorCode::AuthorizationResourceTypeMismatch,
        "AuthorizationServiceMismatch" => ErrorCode::AuthorizationServiceMismatch,
        "AuthorizationSourceIPMismatch" => ErrorCode::AuthorizationSourceIPMismatch,
        "AuthorizationProtocolMismatch" => ErrorCode::AuthorizationProtocolMismatch,
        "InsufficientAccountPermissions" => ErrorCode::InsufficientAccountPermissions,
        _ => ErrorCode::AuthenticationFailed,
    };
    let mut error = ApiError::with_message(code, e.message())
        .with_detail(e.authentication_error_detail())
        .with_challenge(e.www_authenticate());
    // A few reasons have another status than the code's usual one (a stored-policy conflict
    // is 400, a rejected bearer token 401).
    if let Ok(status) = axum::http::StatusCode::from_u16(e.status()) {
        if status != code.status() {
            error = error.with_status(status);
        }
    }
    error
}

/// The table whose stored access policies a service SAS names (its `tn` when it has an
/// `si`), looked up before authentication: the store is asynchronous, the auth library not.
async fn sas_policy_table(
    state: &AppState,
    account: &str,
    raw_query: Option<&str>,
) -> Option<crate::store::TableInfo> {
    let pairs = crate::auth::canonical::parse_query(raw_query?);
    let value = |name: &str| pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v);
    value("si")?;
    let table = crate::model::TableRef::new(account, value("tn")?.as_str());
    state.store.get_table(&table).await.ok().flatten()
}

/// Authenticates and authorizes a request for `operation`. Returns the principal, whose SAS
/// key range the executor enforces. `is_https` is whether the request came over TLS (SAS
/// `spr=https`, bearer tokens).
pub(crate) async fn check(
    state: &AppState,
    parts: &Parts,
    ctx: &RequestContext,
    path_style: bool,
    operation: &Operation,
    client_ip: Option<IpAddr>,
    is_https: bool,
) -> Result<Principal, ApiError> {
    let policy_table = sas_policy_table(state, ctx.data_account(), parts.uri.query()).await;
    let (own_table, data_account) = (policy_table.as_ref(), ctx.data_account());
    let policies = |account: &str, table: &str, id: &str| {
        stored_policy(own_table, data_account, account, table, id)
    };
    let now = chrono::Utc::now();
    let view = RequestView {
        method: parts.method.as_str(),
        raw_path: parts.uri.path(),
        raw_query: parts.uri.query(),
        headers: &parts.headers,
        account: ctx.data_account(),
        path_style,
        is_https,
        client_ip,
        now,
    };
    // Bearer tokens only with `--oauth`, as in Azurite (without it Azurite has no token
    // authenticator and refuses them); the auth library then also requires HTTPS.
    let options = AuthOptions {
        allow_bearer: state.config.oauth.is_some(),
        ..AuthOptions::default()
    };
    let principal = authenticate_with(&view, &state.accounts.current(), &policies, &options)
        .map_err(|e| auth_error(&e))?;
    authorize(&principal, operation, ctx).map_err(|e| {
        let because = match principal.sas() {
            Some(grant) => {
                let op = authz_operation(operation);
                cause::sas_denial(&e, grant, op, operation.table(), now)
            }
            None => cause::cause(&e, now),
        };
        auth_error_because(&e, because)
    })?;
    Ok(principal)
}

/// Whether `principal` may run `operation`: writes never reach the read-only `-secondary`
/// endpoint, and a SAS must grant the operation on its table.
fn authorize(
    principal: &Principal,
    operation: &Operation,
    ctx: &RequestContext,
) -> Result<(), AuthError> {
    let op = authz_operation(operation);
    op.check_secondary(ctx.account.ends_with("-secondary"))?;
    principal.authorize(op, operation.table())
}

/// The stored access policy a SAS names by `id` (`si=`), from the ACL of the request's own
/// table (`policy_table`, read once per request); none for any other account or table.
fn stored_policy(
    policy_table: Option<&crate::store::TableInfo>,
    data_account: &str,
    account: &str,
    table: &str,
    id: &str,
) -> Option<crate::auth::AccessPolicy> {
    let info =
        policy_table.filter(|t| account == data_account && t.name.eq_ignore_ascii_case(table))?;
    let identifiers = crate::auth::decode_signed_identifiers(&info.acl).ok()?;
    identifiers
        .into_iter()
        .find(|s| s.id == id)
        .map(|s| s.access_policy.unwrap_or_default())
}
