//! `POST /$batch`: glue only. `protocol::batch` decodes the multipart body and each
//! sub-request, the caller's SAS is checked per operation here, `batch` executes the change
//! set (rules, preconditions, one atomic commit, per-operation outcomes), and
//! `protocol::batch` encodes the answer: 202 with one sub-response per operation, or only
//! the failing operation's, its index prefixed to the message.

use axum::http::StatusCode;
use axum::response::Response;

use super::entities::read_entity;
use super::store_error;
use crate::batch::{self, ChangeSet, Failure};
use crate::insight::{BatchFacts, Observation};
use crate::protocol::batch::{
    decode_batch, decode_change, encode_changeset_response, encode_query_response,
    error_sub_response, parse_sub_operation, retrieve_sub_response, write_sub_response, BatchBody,
    ChangeWrite, SubRequest, SubResponse,
};
use crate::protocol::headers::{negotiate_metadata, ReturnPreference};
use crate::protocol::json::EntityContext;
use crate::protocol::operation::Operation;
use crate::protocol::{flavor, ApiError, ErrorCode};
use crate::server::auth::{auth_error, authz_operation};
use crate::server::call::Call;
use crate::server::AppState;

/// The outer request was authorized for `$batch`; each sub-operation must also be allowed
/// for the caller (SAS permissions and key range).
fn authorize_sub_operation(call: &Call, operation: &Operation) -> Result<(), ApiError> {
    let Some(principal) = &call.principal else {
        return Ok(());
    };
    principal
        .authorize(authz_operation(operation), operation.table())
        .map_err(|e| auth_error(&e))
}

/// Decodes one change-set sub-request into its write, checking the caller may make it.
fn decode_write(call: &Call, sub: &SubRequest) -> Result<ChangeWrite, ApiError> {
    let operation = parse_sub_operation(&call.ctx.account, sub)?;
    authorize_sub_operation(call, &operation)?;
    let mut change = decode_change(operation, sub)?;
    flavor::apply_write_rules(call.ctx.flavor, &mut change.op)?;
    call.check_key(&change.op.key.partition_key, &change.op.key.row_key)?;
    Ok(change)
}

fn accepted(call: &Call, (content_type, body): (String, Vec<u8>)) -> Response {
    let mut r = call.ctx.odata_response(StatusCode::ACCEPTED);
    if let Ok(v) = axum::http::HeaderValue::from_str(&content_type) {
        r.headers.insert("content-type", v);
    }
    r.body = body;
    r.into_response()
}

fn changeset_failure(
    call: &Call,
    index: usize,
    operations: usize,
    error: &ApiError,
    prefer: Option<ReturnPreference>,
) -> Response {
    let failed = error_sub_response(
        &call.ctx.request_id,
        index,
        operations,
        error,
        prefer,
        call.ctx.flavor,
    );
    accepted(call, encode_changeset_response(&[failed]))
}

/// The answer to a change set that failed (nothing of it was applied).
fn failure_response(
    call: &Call,
    failed: batch::Failed,
    operations: usize,
    prefer: Option<ReturnPreference>,
) -> Result<Response, ApiError> {
    let error = match failed.failure {
        Failure::Rule(rule) => rule.api_error(),
        Failure::Store(e) => store_error(e),
    };
    // A server-side failure (disk full, I/O error) is not the operation's fault: answer it
    // at the top level (503 ServerBusy, 500), which clients retry, instead of as a failed
    // operation inside a 202.
    if error.status().is_server_error() {
        return Err(error);
    }
    Ok(changeset_failure(
        call,
        failed.index,
        operations,
        &error,
        prefer,
    ))
}

pub async fn batch(state: &AppState, call: &Call) -> Result<Response, ApiError> {
    flavor::check_batch_size(call.ctx.flavor, call.body.len())?;
    let content_type = call.header("content-type").unwrap_or("");
    let decoded = decode_batch(content_type, &call.body)
        .map_err(|e| ApiError::with_message(ErrorCode::InvalidInput, e.to_string()))?;
    match decoded {
        BatchBody::Query(sub) => query(state, call, sub).await,
        BatchBody::Changeset(subs) => changeset(state, call, subs).await,
    }
}

async fn changeset(
    state: &AppState,
    call: &Call,
    subs: Vec<SubRequest>,
) -> Result<Response, ApiError> {
    if let Err((index, rule)) = batch::check_count(subs.len()) {
        let prefer = subs
            .get(index)
            .and_then(|s| ReturnPreference::parse(s.header("prefer")));
        return Ok(changeset_failure(
            call,
            index,
            subs.len(),
            &rule.api_error(),
            prefer,
        ));
    }
    // The store takes the writes as one slice; the rest of each stays for its sub-response.
    let mut changes = ChangeSet::with_capacity(subs.len());
    let mut wanted = Vec::with_capacity(subs.len());
    for (index, sub) in subs.iter().enumerate() {
        match decode_write(call, sub) {
            Ok(ChangeWrite {
                table,
                op,
                prefer,
                metadata,
            }) => {
                changes.push(table, op);
                wanted.push((prefer, metadata));
            }
            Err(e) => {
                let prefer = ReturnPreference::parse(sub.header("prefer"));
                return Ok(changeset_failure(call, index, subs.len(), &e, prefer));
            }
        }
    }
    if changes.is_empty() {
        return Ok(accepted(call, encode_changeset_response(&[])));
    }
    if let Err(failed) = batch::check(&changes) {
        let prefer = wanted[failed.index].0;
        return failure_response(call, failed, subs.len(), prefer);
    }
    let account = call.ctx.data_account();
    let outcome = batch::execute(&*state.store, account, &changes).await;
    let applied = match outcome {
        Ok(Some(applied)) => applied,
        Ok(None) => return Ok(accepted(call, encode_changeset_response(&[]))),
        Err(failed) => {
            let prefer = wanted[failed.index].0;
            return failure_response(call, failed, subs.len(), prefer);
        }
    };
    let facts = BatchFacts {
        operations: changes.ops.len(),
        body_bytes: call.body.len(),
    };
    let observed = Observation::writes(account, &applied.table.name, &changes.ops, Some(facts));
    let responses: Vec<SubResponse> = changes
        .tables
        .into_iter()
        .zip(changes.ops)
        .zip(wanted)
        .zip(applied.stamps)
        .map(|(((table, op), (prefer, metadata)), stamp)| {
            let write = ChangeWrite {
                table,
                op,
                prefer,
                metadata,
            };
            write_sub_response(
                &call.ctx.base_url,
                &call.ctx.account,
                &applied.table.name,
                write,
                stamp,
                call.ctx.flavor,
            )
        })
        .collect();
    let responses = flavor::number_sub_responses(call.ctx.flavor, responses);
    let response = accepted(call, encode_changeset_response(&responses));
    Ok(super::observe(response, observed))
}

/// A query batch: one GET of a single entity.
async fn query(state: &AppState, call: &Call, sub: SubRequest) -> Result<Response, ApiError> {
    let respond = |r: SubResponse| accepted(call, encode_query_response(&r));
    let fail = |e: &ApiError| {
        respond(error_sub_response(
            &call.ctx.request_id,
            0,
            1,
            e,
            None,
            call.ctx.flavor,
        ))
    };
    let operation = match parse_sub_operation(&call.ctx.account, &sub) {
        Ok(op) => op,
        Err(e) => return Ok(fail(&e)),
    };
    if let Err(e) = authorize_sub_operation(call, &operation) {
        return Ok(fail(&e));
    }
    let Operation::GetEntity(entity) = operation else {
        return Ok(fail(&ApiError::with_message(
            ErrorCode::InvalidInput,
            "A query batch may contain only a single retrieve of one entity.",
        )));
    };
    if let Err(e) = call.check_key(&entity.partition_key, &entity.row_key) {
        return Ok(fail(&e));
    }
    let metadata = match negotiate_metadata(sub.header("accept"), None) {
        Ok(m) => m,
        Err(e) => return Ok(fail(&e)),
    };
    let table = call.table(entity.table.as_str());
    let found = read_entity(
        &*state.store,
        &table,
        &entity.partition_key,
        &entity.row_key,
    )
    .await;
    let (info, found) = match found {
        Ok((info, Some(found))) => (info, found),
        Ok((_, None)) => return Ok(fail(&ApiError::new(ErrorCode::ResourceNotFound))),
        Err(e) => return Ok(fail(&e)),
    };
    let ctx = EntityContext {
        metadata,
        base_url: &call.ctx.base_url,
        account: &call.ctx.account,
        table: &info.name,
        select: None,
        select_raw: None,
        flavor: call.ctx.flavor,
    };
    Ok(respond(retrieve_sub_response(&found, &ctx)))
}
