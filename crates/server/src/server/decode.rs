//! The decode step: a request let in ([`Call`]) and its [`Operation`] become the executor's
//! typed [`Op`] and the [`Reply`] the client asked for (metadata level, `Prefer`, `$select`).
//! Every check here reads the request only; nothing touches the store.

use axum::http::header;

use crate::exec::{BatchInput, EntityQuery, Op, Resume, SubRequestInput, TableQuery};
use crate::model::limits::{MAX_PAGE_SIZE, MAX_XML_BODY};
use crate::model::WriteOp;
use crate::protocol::batch::{
    decode_batch, decode_change, parse_sub_operation, BatchBody, ChangeWrite, SubRequest,
};
use crate::protocol::continuation::{
    decode_cosmos_entity_token, decode_cosmos_table_token, decode_token, CosmosEntityPosition,
};
use crate::protocol::dialect::{self, Dialect};
use crate::protocol::filter::Expr;
use crate::protocol::headers::{
    self, check_json_content_type, negotiate_metadata, ReturnPreference,
};
use crate::protocol::operation::{Misplaced, Operation};
use crate::protocol::service_properties::PropertiesUpdate;
use crate::protocol::uri::QueryParams;
use crate::protocol::write::{decode_insert, decode_write};
use crate::protocol::{filter, json, ApiError, ErrorCode};
use crate::query::unordered::OrderKey;
use crate::server::call::Call;
use crate::server::context::names;
use crate::server::encode::{Reply, SubReply};

/// Decodes what `operation` needs from the request.
pub(crate) fn decode(call: &Call, operation: Operation) -> Result<(Op, Reply), ApiError> {
    let plain = Reply::default();
    Ok(match operation {
        Operation::QueryTables => query_tables(call)?,
        Operation::GetTable { table } => (Op::GetTable { table }, with_metadata(call)?),
        Operation::CreateTable => create_table(call)?,
        Operation::DeleteTable { table } => (Op::DeleteTable { table }, plain),
        Operation::QueryEntities { table } => query_entities(call, table)?,
        Operation::GetEntity(entity) => {
            let reply = with_metadata(call)?;
            let filter = parse_filter(call);
            (Op::GetEntity { entity, filter }, with_select(call, reply))
        }
        Operation::InsertEntity { table } => {
            let reply = with_metadata(call)?;
            let dialect = call.ctx.dialect;
            dialect.check_request_size(call.body.len())?;
            let limits = dialect.entity_limits;
            let mut op = decode_insert(&call.body, call.header(header::CONTENT_TYPE), limits)?;
            dialect.apply_write_rules(&mut op)?;
            (Op::Write { table, op }, with_prefer(call, reply))
        }
        write @ (Operation::UpdateEntity(..)
        | Operation::MergeEntity(..)
        | Operation::DeleteEntity(..)
        | Operation::InsertOrReplaceEntity(_)
        | Operation::InsertOrMergeEntity(_)) => {
            let dialect = call.ctx.dialect;
            dialect.check_request_size(call.body.len())?;
            let content_type = call.header(header::CONTENT_TYPE);
            let limits = dialect.entity_limits;
            let (table, mut op) = decode_write(write, &call.body, content_type, limits)?;
            dialect.apply_write_rules(&mut op)?;
            (Op::Write { table, op }, plain)
        }
        Operation::GetServiceProperties => (Op::GetServiceProperties, plain),
        Operation::SetServiceProperties => {
            let update = PropertiesUpdate::decode(xml_body(call)?)?;
            (Op::SetServiceProperties(update), plain)
        }
        Operation::GetServiceStats => (get_service_stats(call)?, plain),
        Operation::GetTableAcl { table } => (Op::GetTableAcl { table }, plain),
        Operation::SetTableAcl { table } => (set_table_acl(call, table)?, plain),
        Operation::Batch => batch(call)?,
        Operation::BelowTable(Misplaced { table, target }) => match target {
            Some(target) => (Op::BelowTable { table, target }, plain),
            // Not a shape an SDK sends: the URL names no resource (as before).
            None => {
                let cause = dialect::table_in_service_url_cause(&table);
                return Err(ApiError::new(ErrorCode::InvalidUri).with_cause(cause));
            }
        },
    })
}

/// `$filter`, parsed; a bad one is worded as the dialect words it.
fn parse_filter(call: &Call) -> Result<Option<Expr>, ApiError> {
    filter::parse_param(call.query.get("$filter")).map_err(|e| call.ctx.dialect.filter_error(e))
}

/// A reply in the metadata level `Accept` and `$format` ask for.
fn with_metadata(call: &Call) -> Result<Reply, ApiError> {
    let accept = call.header(header::ACCEPT);
    let format = call
        .ctx
        .dialect
        .metadata_format(accept, call.query.get("$format"));
    Ok(Reply {
        metadata: negotiate_metadata(accept, format)?,
        ..Reply::default()
    })
}

fn with_prefer(call: &Call, reply: Reply) -> Reply {
    Reply {
        prefer: ReturnPreference::parse(call.header(names::PREFER)),
        ..reply
    }
}

fn with_select(call: &Call, reply: Reply) -> Reply {
    Reply {
        select: json::parse_select(call.query.get("$select")),
        ..reply
    }
}

/// Whether the request asked for the query plan headers (`x-tablestore-debug-plan: true`).
fn wants_plan(call: &Call) -> bool {
    call.header(headers::X_TABLESTORE_DEBUG_PLAN)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// `$top`: 0..=1000 entities (or tables) per page; absent means 1000. Azure answers `$top=0`
/// with zero entities (Storage Explorer sends it; Azurite issue #1428 compares the two).
/// Cosmos takes more (`Dialect::max_top`), its pages cut at 4 MB instead
/// (`query::unordered`).
fn parse_top(query: &QueryParams, dialect: &Dialect) -> Result<usize, ApiError> {
    let most = dialect.max_top;
    match query.get("$top") {
        None => Ok(MAX_PAGE_SIZE),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n <= most => Ok(n),
            _ => Err(ApiError::with_message(
                ErrorCode::InvalidQueryParameterValue,
                format!("Value for one of the query parameters specified in the request URI is invalid. ($top={v})"),
            )),
        },
    }
}

/// OData query options the Table service does not support: answered 501 NotImplemented
/// rather than silently ignored [emu, Azure docs: "Query operators supported for the Table service"].
fn reject_unsupported_options(query: &QueryParams) -> Result<(), ApiError> {
    const UNSUPPORTED: [&str; 8] = [
        "$orderby",
        "$skip",
        "$expand",
        "$count",
        "$inlinecount",
        "$skiptoken",
        "$search",
        "$apply",
    ];
    match UNSUPPORTED.iter().find(|o| query.get(o).is_some()) {
        Some(option) => Err(ApiError::with_message(
            ErrorCode::NotImplemented,
            format!("The query option {option} is not supported by the Table service."),
        )),
        None => Ok(()),
    }
}

fn query_tables(call: &Call) -> Result<(Op, Reply), ApiError> {
    let reply = with_metadata(call)?;
    reject_unsupported_options(&call.query)?;
    let filter = parse_filter(call)?;
    let dialect = call.ctx.dialect;
    let top = parse_top(&call.query, dialect)?;
    let token = call.query.get("NextTableName");
    let (start, after) = match token {
        _ if dialect.key_order => {
            let start = token.map(|t| decode_token(t).unwrap_or_else(|| t.to_ascii_lowercase()));
            (start, None)
        }
        None => (None, None),
        Some(t) => {
            let position = decode_cosmos_table_token(t).ok_or_else(|| dialect.token_refused());
            (None, Some(position?))
        }
    };
    let query = TableQuery {
        filter,
        top,
        start,
        after,
    };
    let reply = Reply {
        debug_plan: wants_plan(call),
        ..reply
    };
    Ok((Op::QueryTables(query), reply))
}

fn create_table(call: &Call) -> Result<(Op, Reply), ApiError> {
    let reply = with_metadata(call)?;
    check_json_content_type(call.header(header::CONTENT_TYPE))?;
    let requested = json::decode_table_name(&call.body)?;
    let table = call.ctx.dialect.parse_table_name(&requested)?;
    Ok((Op::CreateTable { table }, with_prefer(call, reply)))
}

fn query_entities(call: &Call, table: String) -> Result<(Op, Reply), ApiError> {
    let reply = with_metadata(call)?;
    reject_unsupported_options(&call.query)?;
    let filter = parse_filter(call)?;
    let top = parse_top(&call.query, call.ctx.dialect)?;
    let debug_plan = wants_plan(call);
    let query = EntityQuery {
        table,
        filter,
        top,
        resume: match call.ctx.dialect.key_order {
            true => resume_position(&call.query),
            false => position_resume(&call.query, call.ctx.dialect),
        },
        count_pages: debug_plan,
    };
    let reply = Reply {
        debug_plan,
        ..with_select(call, reply)
    };
    Ok((Op::QueryEntities(query), reply))
}

/// Resume position from `NextPartitionKey`/`NextRowKey` (tokens this server issued; a raw
/// key is accepted too).
fn resume_position(query: &QueryParams) -> Resume {
    let decode = |name: &str| {
        query
            .get(name)
            .map(|t| decode_token(t).unwrap_or_else(|| t.to_string()))
    };
    match decode("NextPartitionKey") {
        Some(pk) => Resume::Keys(pk, decode("NextRowKey").unwrap_or_default()),
        None => Resume::Start,
    }
}

/// Where a query without key order (Cosmos's) resumes: the position its `NextPartitionKey`
/// token holds. A token that is not ours is refused (once the table is found) as the dialect
/// refuses it.
fn position_resume(query: &QueryParams, dialect: &Dialect) -> Resume {
    let Some(token) = query.get("NextPartitionKey") else {
        return Resume::Start;
    };
    match decode_cosmos_entity_token(token) {
        Some(CosmosEntityPosition::After {
            position,
            partition_key,
            row_key,
        }) => Resume::After(OrderKey {
            position,
            partition_key,
            row_key,
        }),
        Some(CosmosEntityPosition::Start) => Resume::Start,
        None => Resume::Unreadable(dialect.token_refused()),
    }
}

/// Replication stats are offered on the `-secondary` endpoint only: Azure answers the
/// primary with 400 `InvalidQueryParameterValue` (azure-cosmos-table-dotnet issue #26 quotes
/// the response).
fn get_service_stats(call: &Call) -> Result<Op, ApiError> {
    if !call.ctx.account.ends_with("-secondary") {
        return Err(ApiError::new(ErrorCode::InvalidQueryParameterValue));
    }
    Ok(Op::GetServiceStats)
}

/// The XML body of Set Table ACL or Set Table Service Properties; one over [`MAX_XML_BODY`]
/// is refused unparsed with Azure's answer to a body over its limit (413
/// `RequestBodyTooLarge`).
fn xml_body(call: &Call) -> Result<&[u8], ApiError> {
    if call.body.len() > MAX_XML_BODY {
        return Err(ApiError::new(ErrorCode::RequestBodyTooLarge));
    }
    Ok(&call.body)
}

fn set_table_acl(call: &Call, table: String) -> Result<Op, ApiError> {
    let identifiers = crate::auth::decode_signed_identifiers(xml_body(call)?)
        .map_err(|e| super::error::acl_error(&e))?;
    let encoded = crate::auth::encode_signed_identifiers(&identifiers);
    Ok(Op::SetTableAcl { table, encoded })
}

/// `$batch`: the multipart body, then each sub-request's operation and what it carries.
fn batch(call: &Call) -> Result<(Op, Reply), ApiError> {
    call.ctx.dialect.check_request_size(call.body.len())?;
    let content_type = call.header(header::CONTENT_TYPE).unwrap_or("");
    let decoded = decode_batch(content_type, &call.body)
        .map_err(|e| ApiError::with_message(ErrorCode::InvalidInput, e.to_string()))?;
    let (account, dialect) = (call.ctx.account.as_str(), call.ctx.dialect);
    let (input, subs) = match decoded {
        BatchBody::Changeset(subs) => {
            let (writes, replies) = subs.iter().map(|s| change(account, dialect, s)).unzip();
            let size = call.body.len();
            (BatchInput::ChangeSet { writes, size }, replies)
        }
        BatchBody::Query(sub) => {
            let (retrieve, reply) = retrieve(account, &sub);
            (BatchInput::Retrieve(retrieve), vec![reply])
        }
    };
    let reply = Reply {
        subs,
        ..Reply::default()
    };
    Ok((Op::Batch(input), reply))
}

/// One change-set sub-request: its write, and how it wants its sub-response.
fn change(
    account: &str,
    dialect: &Dialect,
    sub: &SubRequest,
) -> (SubRequestInput<(String, WriteOp)>, SubReply) {
    let prefer = ReturnPreference::parse(sub.header("prefer"));
    let operation = match parse_sub_operation(account, sub) {
        Ok(operation) => operation,
        Err(e) => {
            let reply = SubReply {
                prefer,
                metadata: None,
            };
            return (SubRequestInput::Unreadable(e), reply);
        }
    };
    let (decoded, metadata) = match decode_change(operation.clone(), sub, dialect.entity_limits) {
        Ok(ChangeWrite {
            table,
            mut op,
            metadata,
            ..
        }) => {
            let ruled = dialect.apply_write_rules(&mut op).map(|()| (table, op));
            (ruled, Some(metadata))
        }
        Err(e) => (Err(e), None),
    };
    let input = SubRequestInput::Named { operation, decoded };
    (input, SubReply { prefer, metadata })
}

/// A query batch's one sub-request: its operation, and whether its `Accept` can be met.
fn retrieve(account: &str, sub: &SubRequest) -> (SubRequestInput<()>, SubReply) {
    let operation = match parse_sub_operation(account, sub) {
        Ok(operation) => operation,
        Err(e) => return (SubRequestInput::Unreadable(e), SubReply::default()),
    };
    let metadata = negotiate_metadata(sub.header("accept"), None);
    let reply = SubReply {
        prefer: None,
        metadata: metadata.as_ref().ok().copied(),
    };
    let decoded = metadata.map(|_| ());
    (SubRequestInput::Named { operation, decoded }, reply)
}
