//! Test state on a running server (docs/test-isolation.md): reset, named snapshots and
//! accounts on demand, under `/_tablestore/` beside insight and faults:
//!
//! ```text
//! POST   /_tablestore/reset[?account=A]                 back to the start-up state
//! GET    /_tablestore/snapshots                         list
//! PUT    /_tablestore/snapshots/NAME[?account=A]        save (replaces NAME)
//! GET    /_tablestore/snapshots/NAME                    describe
//! POST   /_tablestore/snapshots/NAME/restore[?account=A]
//! DELETE /_tablestore/snapshots/NAME
//! GET    /_tablestore/accounts                          list
//! POST   /_tablestore/accounts[?name=N]                 create (random key), 201 with its
//!                                                       connection string
//! DELETE /_tablestore/accounts/NAME                     delete (its data too)
//! ```
//!
//! Who may call: `--disable-auth` opens them as it opens every table; otherwise the caller
//! signs with an account key (Shared Key or Shared Key Lite over `/{account}{path}`, as for
//! insight and faults) or presents `--admin-token` as a bearer token. The key of an account
//! the server started with, and the token, open everything; the key of an account created at
//! run time opens that account's reset and snapshots and its deletion only.
//!
//! Atomic for clients: every Table request passes the [`gate::Gate`]; a reset, restore or
//! account deletion closes it for the switch alone (the store's [`StoreState::switch`]: one
//! write), after staging the new data where no request sees it. Requests that were running
//! finish first; those arriving wait and then see the new state.

pub(crate) mod gate;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use base64::Engine as _;
use serde_json::json;

use super::context::RequestContext;
use super::insight::Charged;
use super::AppState;
use crate::auth::live::AccountChangeError;
use crate::auth::AccountKeys;
use crate::config::{connection_string_for, Config};
use crate::protocol::error::ErrorFormat;
use crate::protocol::{ApiError, ErrorCode};
use crate::store::state::{
    install, BadName, Image, Installed, Shelf, ShelfError, SnapshotInfo, SnapshotName, StateScope,
    StoreState,
};
use crate::store::{Store, StoreError};
use gate::Gate;

pub(crate) const STATE_PREFIX: &str = "/_tablestore/";
const RESET_PATH: &str = "/_tablestore/reset";
const SNAPSHOTS_PATH: &str = "/_tablestore/snapshots";
const ACCOUNTS_PATH: &str = "/_tablestore/accounts";
/// The folder beside the data folder (`__tablestore__`) that holds its snapshots.
pub(crate) const SNAPSHOT_DIR_NAME: &str = "__tablestore_snapshots__";

/// The server's state controls: the gate, the snapshots, the start-up image.
pub struct Control {
    pub(crate) gate: Gate,
    shelf: Shelf,
    /// What a reset brings back (set once at start-up; empty until then).
    baseline: OnceLock<Arc<Image>>,
    /// One state operation at a time.
    ops: tokio::sync::Mutex<()>,
}

impl Control {
    pub(crate) fn new(config: &Config) -> Control {
        let shelf = if config.is_on_disk() {
            Shelf::in_folder(&config.location.join(SNAPSHOT_DIR_NAME))
        } else {
            Shelf::in_memory()
        };
        Control {
            gate: Gate::new(),
            shelf,
            baseline: OnceLock::new(),
            ops: tokio::sync::Mutex::new(()),
        }
    }

    /// Sets what a reset brings back (once; later calls change nothing).
    pub fn set_baseline(&self, image: Image) {
        let _ = self.baseline.set(Arc::new(image));
    }

    fn baseline(&self) -> Arc<Image> {
        self.baseline
            .get()
            .cloned()
            .unwrap_or_else(|| Arc::new(Image::empty(StateScope::Server)))
    }
}

/// The whole store as it is now, for what a reset brings back when the store is the
/// process's own (in memory: what start-up left in it); empty for a store without state.
pub async fn image_of(store: &Arc<dyn Store>) -> Result<Image, String> {
    match store.state() {
        Some(state) => state
            .capture(&StateScope::Server)
            .await
            .map_err(|e| e.to_string()),
        None => Ok(Image::empty(StateScope::Server)),
    }
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Caller {
    /// `--disable-auth`, `--admin-token`, or the key of a start-up account: everything.
    Owner,
    /// The key of an account created at run time: that account only.
    Account(String),
}

impl Caller {
    fn may(&self, scope: &StateScope) -> Result<(), ApiError> {
        match (self, scope) {
            (Caller::Owner, _) => Ok(()),
            (Caller::Account(a), StateScope::Account(b)) if a == b => Ok(()),
            (Caller::Account(a), _) => Err(ApiError::with_message(
                ErrorCode::AuthorizationFailure,
                format!(
                    "The key of account {a}, created at run time, opens that account's own \
                     state only (add ?account={a}); the whole server's needs the key of an \
                     account the server started with, or --admin-token."
                ),
            )),
        }
    }
}

/// Answers the state endpoints; `None` for any other path.
pub(crate) async fn route(state: &AppState, parts: &Parts, peer: SocketAddr) -> Option<Response> {
    let path = parts.uri.path();
    let operation = if path == RESET_PATH {
        "Reset"
    } else if path == SNAPSHOTS_PATH || path.starts_with("/_tablestore/snapshots/") {
        "Snapshot"
    } else if path == ACCOUNTS_PATH || path.starts_with("/_tablestore/accounts/") {
        "Accounts"
    } else {
        return None;
    };
    let mut ctx = RequestContext::new(&parts.headers, state.dialect);
    ctx.error_format = ErrorFormat::Json;
    let answer = match caller(state, parts, peer) {
        Ok(caller) => answer(state, parts, &ctx, &caller).await,
        Err(e) => Err(e),
    };
    let mut response = answer.unwrap_or_else(|e| ctx.error(&e));
    response.extensions_mut().insert(Charged {
        operation,
        account: None,
    });
    Some(response)
}

/// The caller, from `--disable-auth`, the admin token or an account key.
fn caller(state: &AppState, parts: &Parts, peer: SocketAddr) -> Result<Caller, ApiError> {
    if state.config.disable_auth {
        return Ok(Caller::Owner);
    }
    if let Some(expected) = state.config.admin_token.as_deref() {
        if super::insight::presents_token(parts, expected, "--admin-token")? {
            return Ok(Caller::Owner);
        }
    }
    match super::insight::caller(state, parts, peer)? {
        None => Ok(Caller::Owner),
        Some(account) if state.accounts.is_start_up(&account) => Ok(Caller::Owner),
        Some(account) => Ok(Caller::Account(account)),
    }
}

/// The value of query parameter `name` (percent-decoded).
fn query_param(parts: &Parts, name: &str) -> Option<String> {
    parts.uri.query()?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then(|| {
            percent_encoding::percent_decode_str(v)
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

fn verb_not_allowed() -> ApiError {
    ApiError::new(ErrorCode::UnsupportedHttpVerb)
}

async fn answer(
    state: &AppState,
    parts: &Parts,
    ctx: &RequestContext,
    caller: &Caller,
) -> Result<Response, ApiError> {
    let path = parts.uri.path();
    let method = &parts.method;
    if path == RESET_PATH {
        if method != Method::POST {
            return Err(verb_not_allowed());
        }
        let scope = scope_param(state, parts)?;
        caller.may(&scope)?;
        let started = Instant::now();
        let installed = reset(state, &scope).await?;
        return Ok(json_answer(
            ctx,
            StatusCode::OK,
            &installed_json(&scope, &installed, started),
        ));
    }
    if let Some(rest) = path.strip_prefix(SNAPSHOTS_PATH) {
        return snapshots(state, parts, ctx, caller, rest).await;
    }
    if let Some(rest) = path.strip_prefix(ACCOUNTS_PATH) {
        return accounts(state, parts, ctx, caller, rest).await;
    }
    Err(ApiError::new(ErrorCode::InvalidUri))
}

/// `?account=A` as a scope (the server's without it); the account must be served.
fn scope_param(state: &AppState, parts: &Parts) -> Result<StateScope, ApiError> {
    match query_param(parts, "account") {
        None => Ok(StateScope::Server),
        Some(account) => {
            if !state.accounts.current().contains(&account) {
                return Err(account_not_found(&account));
            }
            Ok(StateScope::Account(account))
        }
    }
}

fn account_not_found(account: &str) -> ApiError {
    ApiError::with_message(
        ErrorCode::ResourceNotFound,
        format!("This server has no account named {account:?}."),
    )
}

fn snapshot_not_found(name: &SnapshotName) -> ApiError {
    ApiError::with_message(
        ErrorCode::ResourceNotFound,
        format!(
            "There is no snapshot named {:?} (GET /_tablestore/snapshots lists them).",
            name.as_str()
        ),
    )
}

fn bad_name(e: &BadName) -> ApiError {
    let mut text = e.to_string();
    if let Some(first) = text.get(..1) {
        text = first.to_uppercase() + &text[1..];
    }
    ApiError::with_message(ErrorCode::InvalidInput, format!("{text}."))
}

/// The store's state capability, or 501 for a store without one.
fn store_state(state: &AppState) -> Result<&dyn StoreState, ApiError> {
    state.store.state().ok_or_else(|| {
        ApiError::with_message(
            ErrorCode::NotImplemented,
            "This store keeps no snapshots: reset and snapshots are not available.",
        )
    })
}

/// A store failure: logged, answered 503 with a sentence.
fn store_failed(doing: &str, e: &StoreError) -> ApiError {
    tracing::error!(error = %e, "{doing} failed");
    ApiError::with_message(
        ErrorCode::ServerBusy,
        format!("{doing} failed ({e}); the data is as it was before the call."),
    )
}

fn shelf_error(name: &SnapshotName, e: ShelfError) -> ApiError {
    match e {
        ShelfError::NotFound => snapshot_not_found(name),
        ShelfError::NoSpace(io) => {
            tracing::error!(error = %io, snapshot = name.as_str(), "no space for a snapshot");
            ApiError::with_message(
                ErrorCode::ServerBusy,
                format!(
                    "Snapshot {:?} was not saved: the disk holding the snapshots is full ({io}). \
                     The data and the other snapshots are untouched; free space or delete \
                     snapshots, then save again.",
                    name.as_str()
                ),
            )
        }
        ShelfError::Store(e) => store_failed(&format!("Snapshot {:?}", name.as_str()), &e),
    }
}

/// Installs `image` (whose scope says what it replaces), the switch inside the closed gate;
/// then insight forgets what the scope held.
async fn install_atomically(state: &AppState, image: &Image) -> Result<Installed, ApiError> {
    let store = store_state(state)?;
    let staged = store
        .stage(image)
        .await
        .map_err(|e| store_failed("Staging the new state", &e))?;
    let installed = {
        let _closed = state.control.gate.close().await;
        store.switch(staged).await
    }
    .map_err(|e| store_failed("Switching to the new state", &e))?;
    forget(state, &image.scope);
    Ok(installed)
}

/// Insight forgets the statistics and advice of what a scope held.
fn forget(state: &AppState, scope: &StateScope) {
    state.insight.forget(scope.account());
}

/// Brings `scope` back to the start-up state.
pub(crate) async fn reset(state: &AppState, scope: &StateScope) -> Result<Installed, ApiError> {
    let _op = state.control.ops.lock().await;
    let baseline = state.control.baseline();
    let narrowed = baseline.narrowed(scope);
    install_atomically(state, narrowed.as_ref().unwrap_or(&baseline)).await
}

fn installed_json(
    scope: &StateScope,
    installed: &Installed,
    started: Instant,
) -> serde_json::Value {
    json!({
        "scope": scope_word(scope),
        "account": scope.account(),
        "tablesRemoved": installed.tables_removed,
        "tables": installed.tables,
        "entities": installed.entities,
        "milliseconds": (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
    })
}

fn scope_word(scope: &StateScope) -> &'static str {
    match scope {
        StateScope::Server => "server",
        StateScope::Account(_) => "account",
    }
}

fn info_json(info: &SnapshotInfo) -> serde_json::Value {
    json!({
        "name": info.name,
        "scope": scope_word(&info.scope),
        "account": info.scope.account(),
        "tables": info.tables,
        "entities": info.entities,
        "dataBytes": info.data_bytes,
        "fileBytes": info.file_bytes,
        "created": chrono::DateTime::from_timestamp(info.created, 0)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
    })
}

fn json_answer(ctx: &RequestContext, status: StatusCode, body: &serde_json::Value) -> Response {
    let mut r = ctx.plain_response(status);
    r.body(
        "application/json",
        serde_json::to_vec_pretty(body).unwrap_or_default(),
    );
    r.header("cache-control", "no-store");
    r.into_response()
}

/// `/_tablestore/snapshots…`; `rest` is the path after `/_tablestore/snapshots`.
async fn snapshots(
    state: &AppState,
    parts: &Parts,
    ctx: &RequestContext,
    caller: &Caller,
    rest: &str,
) -> Result<Response, ApiError> {
    let method = &parts.method;
    if rest.is_empty() || rest == "/" {
        if method != Method::GET {
            return Err(verb_not_allowed());
        }
        let list = state
            .control
            .shelf
            .list()
            .map_err(|e| match e {
                ShelfError::Store(e) => store_failed("Listing the snapshots", &e),
                _ => ApiError::new(ErrorCode::InternalError),
            })?
            .iter()
            .filter(|i| caller.may(&i.scope).is_ok())
            .map(info_json)
            .collect::<Vec<_>>();
        let kept = if state.control.shelf.is_durable() {
            "disk"
        } else {
            "memory"
        };
        return Ok(json_answer(
            ctx,
            StatusCode::OK,
            &json!({ "kept": kept, "snapshots": list }),
        ));
    }
    let rest = &rest[1..];
    let (raw_name, restore) = match rest.strip_suffix("/restore") {
        Some(name) => (name, true),
        None => (rest, false),
    };
    let decoded = percent_encoding::percent_decode_str(raw_name).decode_utf8_lossy();
    let name = SnapshotName::parse(&decoded).map_err(|e| bad_name(&e))?;
    let shelf = &state.control.shelf;
    match (method.clone(), restore) {
        (Method::PUT, false) => {
            let scope = scope_param(state, parts)?;
            caller.may(&scope)?;
            let store = store_state(state)?;
            let _op = state.control.ops.lock().await;
            let image = {
                let _closed = state.control.gate.close().await;
                store.capture(&scope).await
            }
            .map_err(|e| store_failed("Reading the data for the snapshot", &e))?;
            let info = shelf
                .save(&name, image)
                .map_err(|e| shelf_error(&name, e))?;
            Ok(json_answer(ctx, StatusCode::CREATED, &info_json(&info)))
        }
        (Method::GET | Method::HEAD, false) => {
            let info = shelf.info(&name).map_err(|e| shelf_error(&name, e))?;
            caller
                .may(&info.scope)
                .map_err(|_| snapshot_not_found(&name))?;
            Ok(json_answer(ctx, StatusCode::OK, &info_json(&info)))
        }
        (Method::DELETE, false) => {
            let info = shelf.info(&name).map_err(|e| shelf_error(&name, e))?;
            caller
                .may(&info.scope)
                .map_err(|_| snapshot_not_found(&name))?;
            let _op = state.control.ops.lock().await;
            shelf.delete(&name).map_err(|e| shelf_error(&name, e))?;
            Ok(ctx.plain_response(StatusCode::NO_CONTENT).into_response())
        }
        (Method::POST, true) => {
            let started = Instant::now();
            let _op = state.control.ops.lock().await;
            let image = shelf.load(&name).map_err(|e| shelf_error(&name, e))?;
            // `?account=A` restores A's part of a server snapshot.
            let scope = match (query_param(parts, "account"), &image.scope) {
                (None, scope) => scope.clone(),
                (Some(a), StateScope::Server) => StateScope::Account(a),
                (Some(a), StateScope::Account(b)) if &a == b => image.scope.clone(),
                (Some(a), StateScope::Account(b)) => {
                    return Err(ApiError::with_message(
                        ErrorCode::InvalidInput,
                        format!(
                            "Snapshot {:?} holds account {b}'s data; it cannot be restored \
                             into account {a}.",
                            name.as_str()
                        ),
                    ))
                }
            };
            caller.may(&scope)?;
            if let Some(account) = scope.account() {
                if !state.accounts.current().contains(account) {
                    return Err(account_not_found(account));
                }
            }
            let narrowed = image.narrowed(&scope);
            let installed = install_atomically(state, narrowed.as_ref().unwrap_or(&image)).await?;
            Ok(json_answer(
                ctx,
                StatusCode::OK,
                &installed_json(&scope, &installed, started),
            ))
        }
        _ => Err(verb_not_allowed()),
    }
}

/// An account name Azure accepts: 3 to 24 lower-case letters and digits.
fn valid_account_name(name: &str) -> bool {
    (3..=24).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// `/_tablestore/accounts…`; `rest` is the path after `/_tablestore/accounts`.
async fn accounts(
    state: &AppState,
    parts: &Parts,
    ctx: &RequestContext,
    caller: &Caller,
    rest: &str,
) -> Result<Response, ApiError> {
    let method = &parts.method;
    if rest.is_empty() || rest == "/" {
        return match *method {
            Method::GET => {
                let live = &state.accounts;
                let list: Vec<_> = live
                    .current()
                    .names()
                    .filter(|n| {
                        *caller == Caller::Owner || *caller == Caller::Account(n.to_string())
                    })
                    .map(|n| json!({ "name": n, "startUp": live.is_start_up(n) }))
                    .collect();
                Ok(json_answer(
                    ctx,
                    StatusCode::OK,
                    &json!({ "accounts": list }),
                ))
            }
            Method::POST => {
                caller.may(&StateScope::Server)?;
                create_account(state, parts, ctx).await
            }
            _ => Err(verb_not_allowed()),
        };
    }
    let name = percent_encoding::percent_decode_str(&rest[1..])
        .decode_utf8_lossy()
        .into_owned();
    if *method != Method::DELETE {
        return Err(verb_not_allowed());
    }
    if !state.accounts.current().contains(&name) {
        return Err(account_not_found(&name));
    }
    let scope = StateScope::Account(name.clone());
    caller.may(&scope)?;
    if state.accounts.is_start_up(&name) {
        return Err(ApiError::with_message(
            ErrorCode::InvalidInput,
            format!(
                "Account {name} was given at start-up and stays for the server's life; only \
                 accounts created at run time can be deleted (reset empties it: POST \
                 /_tablestore/reset?account={name})."
            ),
        ));
    }
    let store = store_state(state)?;
    let _op = state.control.ops.lock().await;
    let staged = store
        .stage(&Image::empty(scope.clone()))
        .await
        .map_err(|e| store_failed("Deleting the account's data", &e))?;
    let switched = {
        let _closed = state.control.gate.close().await;
        match state.accounts.remove(&name) {
            Ok(()) => store.switch(staged).await,
            Err(_) => {
                store.discard(staged).await;
                Ok(Installed::default())
            }
        }
    };
    switched.map_err(|e| store_failed("Deleting the account's data", &e))?;
    forget(state, &scope);
    Ok(ctx.plain_response(StatusCode::NO_CONTENT).into_response())
}

/// Creates an account with a random key (and the name `?name=` gives, else a random one),
/// empty: data a former account of that name left is removed first.
async fn create_account(
    state: &AppState,
    parts: &Parts,
    ctx: &RequestContext,
) -> Result<Response, ApiError> {
    let name = match query_param(parts, "name") {
        Some(name) if valid_account_name(&name) => name,
        Some(name) => {
            return Err(ApiError::with_message(
                ErrorCode::InvalidInput,
                format!(
                    "{name:?} is not an account name: use 3 to 24 lower-case letters and digits."
                ),
            ))
        }
        None => format!("acct{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
    };
    if state.accounts.current().contains(&name) {
        return Err(ApiError::with_message(
            ErrorCode::AccountAlreadyExists,
            format!("This server already has an account named {name}."),
        ));
    }
    // 64 bytes, as Azure's keys; four v4 UUIDs are 488 bits from the OS's random source.
    let mut key_bytes = [0u8; 64];
    for chunk in key_bytes.chunks_mut(16) {
        chunk.copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    }
    let key = base64::engine::general_purpose::STANDARD.encode(key_bytes);
    let keys = AccountKeys::from_base64(&key, None)
        .map_err(|_| ApiError::new(ErrorCode::InternalError))?;
    {
        let _op = state.control.ops.lock().await;
        // No request reaches an account before it is added: the wipe needs no gate.
        if let Some(store) = state.store.state() {
            install(store, &Image::empty(StateScope::Account(name.clone())))
                .await
                .map_err(|e| store_failed("Preparing the account", &e))?;
        }
        match state.accounts.add(&name, keys) {
            Ok(()) => {}
            Err(AccountChangeError::Exists) => {
                return Err(ApiError::with_message(
                    ErrorCode::AccountAlreadyExists,
                    format!("This server already has an account named {name}."),
                ))
            }
            Err(_) => return Err(ApiError::new(ErrorCode::InternalError)),
        }
    }
    forget(state, &StateScope::Account(name.clone()));
    let host = parts
        .headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let scheme = super::Scheme::of(&parts.extensions).as_str();
    let endpoint = format!("{scheme}://{host}");
    let connection_string = connection_string_for(ctx.dialect.flavor, &endpoint, &name, &key);
    let table_endpoint = ctx.dialect.table_endpoint(&endpoint, &name);
    Ok(json_answer(
        ctx,
        StatusCode::CREATED,
        &json!({
            "name": name,
            "key": key,
            "connectionString": connection_string,
            "tableEndpoint": table_endpoint,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_names_follow_azures_rule() {
        assert!(valid_account_name("worker1"));
        assert!(valid_account_name("abc"));
        assert!(!valid_account_name("ab"));
        assert!(!valid_account_name("Worker1"));
        assert!(!valid_account_name("a-b-c"));
        assert!(!valid_account_name(&"a".repeat(25)));
    }

    #[test]
    fn runtime_accounts_reach_their_own_scope_only() {
        let me = Caller::Account("w1".into());
        assert!(me.may(&StateScope::Account("w1".into())).is_ok());
        assert!(me.may(&StateScope::Account("w2".into())).is_err());
        let e = me.may(&StateScope::Server).unwrap_err();
        assert_eq!(e.code, ErrorCode::AuthorizationFailure);
        assert!(Caller::Owner.may(&StateScope::Server).is_ok());
    }
}
