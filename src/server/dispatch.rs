//! The catch-all route: a browser's visit to `/` (`front_page`), the insight endpoints and
//! console (`handlers::insight`), else admit
//! the request (`intake`), then a table from operation to
//! handler, then the finishing touches every response gets (error rendering, the access
//! log's auth field, CORS). axum's matcher cannot express `t(PartitionKey='a',RowKey='b')`
//! nor a MERGE verb, hence one route.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::Request;
use axum::response::Response;

use super::call::Call;
use super::connections::ConnectionAbort;
use super::context::RequestContext;
use super::handlers::{acl, batch, entities, insight, service, tables};
use super::intake::{admit, discard_unread, Admitted};
use super::AppState;
use crate::protocol::operation::Operation;
use crate::protocol::ApiError;

pub async fn dispatch(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request<Body>,
) -> Response {
    let (parts, body) = request.into_parts();
    if parts.uri.path() == super::realism::FAULTS_PATH {
        return super::realism::faults_endpoint(&state, parts, body, peer).await;
    }
    let abort = parts.extensions.get::<ConnectionAbort>().cloned();
    let ctx = RequestContext::new(&parts.headers, state.config.flavor());
    if super::front_page::is_browser_visit(&parts) {
        discard_unread(body);
        let mut response = super::front_page::answer(&state, &ctx);
        response.extensions_mut().insert(insight::Charged {
            operation: "FrontPage",
            account: None,
        });
        return response;
    }
    if let Some(r) = insight::route(&state, &parts, &ctx, peer).await {
        discard_unread(body);
        return r;
    }
    let Admitted {
        call,
        operation,
        error_format,
        auth_outcome,
        method,
    } = match admit(&state, peer, parts, body).await {
        Ok(admitted) => admitted,
        Err(response) => return response,
    };
    let realism = match super::realism::before_dispatch(
        &state,
        &call,
        &operation,
        &method,
        abort.as_ref(),
        error_format,
    )
    .await
    {
        Ok(consulted) => consulted,
        Err(response) => return response,
    };
    let charged = insight::Charged {
        operation: insight::operation_name(&operation),
        account: Some(call.ctx.data_account().to_string()),
    };
    let response = match route(&state, &call, operation).await {
        Ok(response) => response,
        Err(e) => call.ctx.error_response(&e, error_format),
    };
    let mut response =
        super::realism::after_commit(&state, realism, &call.ctx, response, abort.as_ref()).await;
    response.extensions_mut().insert(auth_outcome);
    response.extensions_mut().insert(charged);
    if let Some(origin) = call.header("origin") {
        let account = call.ctx.data_account();
        service::decorate_cors(&state, account, origin, &method, &mut response).await;
    }
    response
}

/// Each operation's handler.
async fn route(state: &AppState, call: &Call, operation: Operation) -> Result<Response, ApiError> {
    match operation {
        Operation::QueryTables => tables::query_tables(state, call).await,
        Operation::GetTable { table } => tables::get_table(state, call, table).await,
        Operation::CreateTable => tables::create_table(state, call).await,
        Operation::DeleteTable { table } => tables::delete_table(state, call, table).await,
        Operation::QueryEntities { table } => entities::query_entities(state, call, table).await,
        Operation::GetEntity(e) => entities::get_entity(state, call, e).await,
        Operation::InsertEntity { table } => entities::insert_entity(state, call, table).await,
        write @ (Operation::UpdateEntity(..)
        | Operation::MergeEntity(..)
        | Operation::DeleteEntity(..)
        | Operation::InsertOrReplaceEntity(_)
        | Operation::InsertOrMergeEntity(_)) => entities::write_entity(state, call, write).await,
        Operation::GetServiceProperties => service::get_service_properties(state, call).await,
        Operation::SetServiceProperties => service::set_service_properties(state, call).await,
        Operation::GetServiceStats => service::get_service_stats(state, call).await,
        Operation::GetTableAcl { table } => acl::get_table_acl(state, call, table).await,
        Operation::SetTableAcl { table } => acl::set_table_acl(state, call, table).await,
        Operation::Batch => batch::batch(state, call).await,
    }
}
