//! The catch-all route. A request takes a side door (the faults endpoint, a browser's visit
//! to `/`, the insight endpoints and console) or the pipeline:
//!
//! ```text
//! admit (intake) ─► decode ─► exec::execute ─► encode
//!        realism around the last three; the outcome's marks left for the layers
//! ```
//!
//! The layers around the route (`server::App`) read what the pipeline leaves in the
//! response's extensions: the request log and insight the [`Observation`], the operation
//! charged and the auth outcome; CORS the account. axum's matcher cannot express
//! `t(PartitionKey='a',RowKey='b')` nor a MERGE verb, hence one route.

use std::net::SocketAddr;

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::Request;
use axum::response::Response;

use super::call::Call;
use super::connections::ConnectionAbort;
use super::context::RequestContext;
use super::decode::decode;
use super::encode::encode;
use super::insight::{self, operation_name, Charged};
use super::intake::{admit, discard_unread, Admitted};
use super::AppState;
use crate::insight::Observation;
use crate::protocol::error::ErrorFormat;
use crate::protocol::operation::Operation;
use crate::protocol::ApiError;

/// The route: `peer` sent `request`; `abort` ends its connection without an answer.
pub(crate) async fn dispatch(
    state: &AppState,
    peer: SocketAddr,
    abort: Option<&ConnectionAbort>,
    request: Request<Body>,
) -> Response {
    let (parts, body) = request.into_parts();
    // The side doors run boxed: their futures, held inline, made every request's future (which
    // hyper moves once per request) several KiB larger.
    if parts.uri.path() == super::realism::FAULTS_PATH {
        return Box::pin(super::realism::faults_endpoint(state, parts, body, peer)).await;
    }
    if let Some(response) = side_door(state, &parts, peer).await {
        discard_unread(body);
        return response;
    }
    // Read before the account is checked: a change of state between the check and the gate
    // (an account deleted) is then seen.
    let epoch = state.control.gate.epoch();
    match admit(state, peer, parts, body).await {
        Ok(admitted) => pipeline(state, admitted, abort, epoch).await,
        Err(response) => response,
    }
}

/// The answers outside the Table service: the front page and the insight endpoints.
async fn side_door(state: &AppState, parts: &Parts, peer: SocketAddr) -> Option<Response> {
    if let Some(visit) = super::front_page::visit(parts) {
        let ctx = RequestContext::new(&parts.headers, state.dialect);
        let mut response = super::front_page::answer(state, &ctx, visit, parts);
        response.extensions_mut().insert(Charged {
            operation: "FrontPage",
            account: None,
        });
        return Some(response);
    }
    if parts.uri.path().starts_with(super::state::STATE_PREFIX) {
        if let Some(response) = Box::pin(super::state::route(state, parts, peer)).await {
            return Some(response);
        }
    }
    if !insight::is_for_insight(state, parts) {
        return None;
    }
    Box::pin(insight::route(state, parts, peer)).await
}

/// An admitted request through the state gate, realism and the pipeline, its answer marked
/// for the layers. `epoch`: the gate's before the request was admitted.
async fn pipeline(
    state: &AppState,
    admitted: Admitted,
    abort: Option<&ConnectionAbort>,
    epoch: u64,
) -> Response {
    let Admitted {
        call,
        operation,
        error_format,
        auth_outcome,
        method,
    } = admitted;
    // A reset, restore or account deletion waits for this request, or this request for it.
    let _pass = state.control.gate.pass().await;
    if state.control.gate.epoch() != epoch
        && !state.accounts.current().contains(call.ctx.data_account())
    {
        // The account was deleted while the request was being admitted.
        let refused = ApiError::new(crate::protocol::ErrorCode::AuthenticationFailed);
        return call.ctx.error_response(&refused, error_format);
    }
    let charged = Charged {
        operation: operation_name(&operation),
        account: Some(call.scope.account().to_string()),
    };
    let request = super::realism::Guarded {
        call: &call,
        method: &method,
        abort,
        format: error_format,
    };
    let run = |operation| answer(state, &call, operation, error_format);
    let mut response = match super::realism::around(state, request, operation, run).await {
        Ok(response) => response,
        // Realism answered (or dropped) the request before it ran.
        Err(response) => return response,
    };
    response.extensions_mut().insert(auth_outcome);
    response.extensions_mut().insert(charged);
    response
}

/// decode → execute → encode; an error becomes Azure's error response.
async fn answer(
    state: &AppState,
    call: &Call,
    operation: Operation,
    format: ErrorFormat,
) -> Response {
    match run(state, call, operation).await {
        Ok(response) => response,
        Err(e) => call.ctx.error_response(&e, format),
    }
}

async fn run(state: &AppState, call: &Call, operation: Operation) -> Result<Response, ApiError> {
    let (op, reply) = decode(call, operation)?;
    let mut outcome = crate::exec::execute(&*state.store, &call.scope, op).await?;
    super::realism::cut_page(state, &mut outcome);
    let observation = Observation::from_outcome(&outcome);
    let mut response = encode(call, &reply, outcome)?;
    if let Some(observation) = observation {
        response.extensions_mut().insert(observation);
    }
    Ok(response)
}
