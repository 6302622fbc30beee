//! `POST /$batch`: decode the multipart body, turn each sub-request into the same operation
//! the single-entity path uses, check the change-set rules, commit once, and answer 202 with
//! one sub-response per operation — or, on failure, only the failing operation's response
//! with its index prefixed to the message (spec §7).

use axum::http::StatusCode;
use axum::response::Response;

use super::entities::{insert_op, table_info, write_op};
use super::store_error;
use crate::batch::{check_rules, RuleViolation};
use crate::model::entity::etag_for;
use crate::model::TableRef;
use crate::model::{Entity, EntityKey, WriteKind, WriteOp};
use crate::protocol::batch::{
    decode_batch, encode_changeset_response, encode_query_response, BatchBody, SubRequest,
    SubResponse,
};
use crate::protocol::error::ErrorFormat;
use crate::protocol::headers::{negotiate_metadata, Metadata, ReturnPreference};
use crate::protocol::json::{self, EntityContext};
use crate::protocol::operation::{parse_operation, Operation, OperationHeaders};
use crate::protocol::uri::{entity_path, parse_resource, split_account, QueryParams};
use crate::protocol::{ApiError, ErrorCode};
use crate::server::auth::{auth_error, authz_operation};
use crate::server::dispatch::Call;
use crate::server::AppState;

/// One decoded write of a change set, with what its sub-response needs.
struct ChangesetWrite {
    table: String,
    op: WriteOp,
    prefer: Option<ReturnPreference>,
    metadata: Metadata,
}

/// Error codes Azure reports without the `N:` index prefix when they fail at index 0 of a
/// change set (observed, spec §7.6).
fn omits_index_prefix(code: ErrorCode, index: usize) -> bool {
    index == 0
        && matches!(
            code,
            ErrorCode::ResourceNotFound | ErrorCode::UpdateConditionNotSatisfied
        )
}

fn error_sub_response(
    call: &Call,
    index: usize,
    error: &ApiError,
    prefer: Option<ReturnPreference>,
) -> SubResponse {
    let text = if omits_index_prefix(error.code, index) {
        error.message.to_string()
    } else {
        format!("{index}:{}", error.message)
    };
    let indexed = ApiError::with_message(error.code, text);
    let time = crate::model::EdmDateTime::now().to_fixed7();
    let message = indexed.full_message(&call.ctx.request_id, &time);
    let (content_type, body) = indexed.render_body(ErrorFormat::Json, &message);
    let mut headers = vec![
        ("X-Content-Type-Options".to_string(), "nosniff".to_string()),
        ("Cache-Control".to_string(), "no-cache".to_string()),
    ];
    if let Some(p) = prefer {
        headers.push(("Preference-Applied".to_string(), p.as_str().to_string()));
    }
    headers.push(("DataServiceVersion".to_string(), "3.0;".to_string()));
    headers.push(("Content-Type".to_string(), content_type.to_string()));
    SubResponse {
        status: error.status().as_u16(),
        headers,
        body,
    }
}

/// The path of a sub-request below the account: absolute or relative URL, path or host style.
fn sub_request_path<'a>(call: &Call, path: &'a str) -> &'a str {
    let account = &call.ctx.account;
    match split_account(None, path, |_| false, false) {
        Some(p) if p.account == *account => p.rest,
        _ => path,
    }
}

fn parse_sub_operation(call: &Call, sub: &SubRequest) -> Result<Operation, ApiError> {
    let (path, query) = sub.path_and_query();
    let resource = parse_resource(sub_request_path(call, path))?;
    let query = QueryParams::parse(query)?;
    let x_methods: Vec<&str> = sub.header("x-http-method").into_iter().collect();
    parse_operation(
        &sub.method,
        resource,
        &query,
        OperationHeaders {
            x_http_method: &x_methods,
            if_match: sub.header("if-match"),
            if_none_match: sub.header("if-none-match"),
        },
    )
}

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

fn decode_write(call: &Call, sub: &SubRequest) -> Result<ChangesetWrite, ApiError> {
    let operation = parse_sub_operation(call, sub)?;
    authorize_sub_operation(call, &operation)?;
    let prefer = ReturnPreference::parse(sub.header("prefer"));
    let metadata = negotiate_metadata(sub.header("accept"), None)?;
    let (table, op) = match operation {
        Operation::InsertEntity { table } => {
            (table, insert_op(&sub.body, sub.header("content-type"))?)
        }
        op @ (Operation::UpdateEntity(..)
        | Operation::MergeEntity(..)
        | Operation::DeleteEntity(..)
        | Operation::InsertOrReplaceEntity(_)
        | Operation::InsertOrMergeEntity(_)) => {
            write_op(op, &sub.body, sub.header("content-type"))?
        }
        _ => {
            return Err(ApiError::with_message(
                ErrorCode::InvalidInput,
                "A change set may contain only insert, update, merge and delete operations.",
            ))
        }
    };
    call.check_key(&op.key.partition_key, &op.key.row_key)?;
    Ok(ChangesetWrite {
        table,
        op,
        prefer,
        metadata,
    })
}

fn rule_error(v: &RuleViolation) -> ApiError {
    match v {
        RuleViolation::TooManyOperations => ApiError::with_message(
            ErrorCode::InvalidInput,
            "The batch request operation exceeds the maximum 100 changes per change set.",
        ),
        RuleViolation::DifferentTables => ApiError::with_message(
            ErrorCode::InvalidInput,
            "All commands in a batch must operate on the same table.",
        ),
        RuleViolation::DifferentPartitions => {
            ApiError::new(ErrorCode::CommandsInBatchActOnDifferentPartitions)
        }
        RuleViolation::DuplicateRow => ApiError::new(ErrorCode::InvalidDuplicateRow),
    }
}

fn accepted(call: &Call, content_type: String, body: Vec<u8>) -> Response {
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
    error: &ApiError,
    prefer: Option<ReturnPreference>,
) -> Response {
    let (ct, body) = encode_changeset_response(&[error_sub_response(call, index, error, prefer)]);
    accepted(call, ct, body)
}

pub async fn batch(state: &AppState, call: &Call) -> Result<Response, ApiError> {
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
    if subs.len() > crate::batch::MAX_OPERATIONS {
        let prefer = subs
            .get(99)
            .and_then(|s| ReturnPreference::parse(s.header("prefer")));
        return Ok(changeset_failure(
            call,
            99,
            &rule_error(&RuleViolation::TooManyOperations),
            prefer,
        ));
    }
    let mut writes = Vec::with_capacity(subs.len());
    for (index, sub) in subs.iter().enumerate() {
        match decode_write(call, sub) {
            Ok(w) => writes.push(w),
            Err(e) => {
                let prefer = ReturnPreference::parse(sub.header("prefer"));
                return Ok(changeset_failure(call, index, &e, prefer));
            }
        }
    }
    if writes.is_empty() {
        return Ok(accepted(
            call,
            encode_changeset_response(&[]).0,
            encode_changeset_response(&[]).1,
        ));
    }
    let pairs: Vec<(&str, &WriteOp)> = writes.iter().map(|w| (w.table.as_str(), &w.op)).collect();
    if let Err((index, v)) = check_rules(&pairs) {
        return Ok(changeset_failure(
            call,
            index,
            &rule_error(&v),
            writes[index].prefer,
        ));
    }
    drop(pairs);
    // The store takes the operations as one slice; the rest of each write stays for its
    // sub-response.
    let (ops, writes): (Vec<WriteOp>, Vec<ChangesetWrite>) = writes
        .into_iter()
        .map(|mut w| {
            let (kind, if_match) = (w.op.kind, w.op.if_match);
            let op = std::mem::replace(
                &mut w.op,
                WriteOp {
                    kind,
                    key: EntityKey {
                        partition_key: String::new(),
                        row_key: String::new(),
                    },
                    properties: Vec::new(),
                    if_match,
                },
            );
            (op, w)
        })
        .unzip();
    let account = call.ctx.data_account().to_string();
    let table = writes[0].table.clone();
    let outcome = state
        .write(|store| {
            let info = match table_info(store, &TableRef::new(account.as_str(), table.as_str())) {
                Ok(i) => i,
                Err(e) => return Ok((Err((0, e)), store.generation())),
            };
            Ok(match crate::batch::execute(store, info.id, &ops) {
                Ok(committed) => (Ok((info, committed.stamps)), committed.generation),
                Err(e) => (Err((e.index, store_error(e.error))), store.generation()),
            })
        })
        .await?;
    let (info, stamps) = match outcome {
        Ok(v) => v,
        // A server-side failure (disk full, I/O error) is not the operation's fault: answer
        // it at the top level (503 ServerBusy, 500), which clients retry, instead of as a
        // failed operation inside a 202. Nothing of the change set was applied.
        Err((_, e)) if e.status().is_server_error() => return Err(e),
        Err((index, e)) => return Ok(changeset_failure(call, index, &e, writes[index].prefer)),
    };
    let responses: Vec<SubResponse> = writes
        .into_iter()
        .zip(ops)
        .zip(stamps)
        .map(|((mut w, op), ts)| {
            w.op = op;
            success_sub_response(call, &info.name, w, ts)
        })
        .collect();
    let (ct, body) = encode_changeset_response(&responses);
    Ok(accepted(call, ct, body))
}

fn success_sub_response(
    call: &Call,
    table: &str,
    w: ChangesetWrite,
    ts: crate::model::EdmDateTime,
) -> SubResponse {
    let mut headers = vec![
        ("X-Content-Type-Options".to_string(), "nosniff".to_string()),
        ("Cache-Control".to_string(), "no-cache".to_string()),
    ];
    let etag = etag_for(ts);
    if w.op.kind != WriteKind::Insert {
        headers.push(("DataServiceVersion".to_string(), "1.0;".to_string()));
        if w.op.kind != WriteKind::Delete {
            headers.push(("ETag".to_string(), etag));
        }
        return SubResponse {
            status: 204,
            headers,
            body: Vec::new(),
        };
    }
    let location = format!(
        "{}/{}",
        call.ctx.base_url,
        entity_path(table, &w.op.key.partition_key, &w.op.key.row_key)
    );
    if w.prefer == Some(ReturnPreference::NoContent) {
        headers.push((
            "Preference-Applied".to_string(),
            "return-no-content".to_string(),
        ));
        headers.push(("DataServiceVersion".to_string(), "3.0;".to_string()));
        headers.push(("Location".to_string(), location.clone()));
        headers.push(("DataServiceId".to_string(), location));
        headers.push(("ETag".to_string(), etag));
        return SubResponse {
            status: 204,
            headers,
            body: Vec::new(),
        };
    }
    if w.prefer == Some(ReturnPreference::Content) {
        headers.push((
            "Preference-Applied".to_string(),
            "return-content".to_string(),
        ));
    }
    headers.push(("DataServiceVersion".to_string(), "3.0;".to_string()));
    headers.push((
        "Content-Type".to_string(),
        w.metadata.content_type().to_string(),
    ));
    headers.push(("Location".to_string(), location));
    headers.push(("ETag".to_string(), etag));
    let entity = Entity {
        partition_key: w.op.key.partition_key,
        row_key: w.op.key.row_key,
        timestamp: ts,
        properties: w.op.properties,
    };
    let ctx = EntityContext {
        metadata: w.metadata,
        base_url: &call.ctx.base_url,
        account: &call.ctx.account,
        table,
        select: None,
        select_raw: None,
    };
    SubResponse {
        status: 201,
        headers,
        body: json::encode_entity(&entity, &ctx),
    }
}

/// A query batch: one GET of a single entity.
async fn query(state: &AppState, call: &Call, sub: SubRequest) -> Result<Response, ApiError> {
    let respond = |r: SubResponse| {
        let (ct, body) = encode_query_response(&r);
        accepted(call, ct, body)
    };
    let operation = match parse_sub_operation(call, &sub) {
        Ok(op) => op,
        Err(e) => return Ok(respond(error_sub_response(call, 0, &e, None))),
    };
    if let Err(e) = authorize_sub_operation(call, &operation) {
        return Ok(respond(error_sub_response(call, 0, &e, None)));
    }
    let Operation::GetEntity(entity) = operation else {
        let e = ApiError::with_message(
            ErrorCode::InvalidInput,
            "A query batch may contain only a single retrieve of one entity.",
        );
        return Ok(respond(error_sub_response(call, 0, &e, None)));
    };
    if let Err(e) = call.check_key(&entity.partition_key, &entity.row_key) {
        return Ok(respond(error_sub_response(call, 0, &e, None)));
    }
    let metadata = match negotiate_metadata(sub.header("accept"), None) {
        Ok(m) => m,
        Err(e) => return Ok(respond(error_sub_response(call, 0, &e, None))),
    };
    let account = call.ctx.data_account().to_string();
    let found = state.inline(|store| {
        let info = table_info(
            store,
            &TableRef::new(account.as_str(), entity.table.as_str()),
        )?;
        let found = store
            .get_entity(info.id, &entity.partition_key, &entity.row_key)
            .map_err(store_error)?
            .ok_or_else(|| ApiError::new(ErrorCode::ResourceNotFound))?;
        Ok((info, found))
    });
    let (info, found) = match found {
        Ok(v) => v,
        Err(e) => return Ok(respond(error_sub_response(call, 0, &e, None))),
    };
    let ctx = EntityContext {
        metadata,
        base_url: &call.ctx.base_url,
        account: &call.ctx.account,
        table: &info.name,
        select: None,
        select_raw: None,
    };
    Ok(respond(SubResponse {
        status: 200,
        headers: vec![
            ("X-Content-Type-Options".to_string(), "nosniff".to_string()),
            ("Cache-Control".to_string(), "no-cache".to_string()),
            ("DataServiceVersion".to_string(), "3.0;".to_string()),
            (
                "Content-Type".to_string(),
                metadata.content_type().to_string(),
            ),
            ("ETag".to_string(), found.etag()),
        ],
        body: json::encode_entity(&found, &ctx),
    }))
}
