//! The operations inside a `$batch`, as the Table service reads and answers them: each
//! sub-request becomes the same [`Operation`] a top-level request would (`operation.rs`), a
//! change-set write becomes its [`WriteOp`] through the one write decoder (`write.rs`), and
//! each outcome becomes its [`SubResponse`] (a failure names its operation's index).

use std::borrow::Cow;

use super::{SubRequest, SubResponse};
use crate::model::limits::EntityLimits;
use crate::model::{EdmDateTime, Entity, WriteKind, WriteOp};
use crate::protocol::dialect::Dialect;
use crate::protocol::headers::{negotiate_metadata, Metadata, ReturnPreference};
use crate::protocol::json::{self, EntityContext};
use crate::protocol::operation::{parse_operation, Operation, OperationHeaders};
use crate::protocol::uri::{entity_path, parse_resource, split_account, QueryParams, Resource};
use crate::protocol::write::decode_any_write;
use crate::protocol::{ApiError, ErrorCode};

/// The path of a sub-request below the account: absolute or relative URL, path or host style.
fn sub_request_path<'a>(account: &str, path: &'a str) -> &'a str {
    match split_account(None, path, |_| false, false) {
        Some(p) if p.account == *account => p.rest,
        _ => path,
    }
}

/// The operation a sub-request of a batch sent to `account` asks for.
pub fn parse_sub_operation(account: &str, sub: &SubRequest) -> Result<Operation, ApiError> {
    let (path, query) = sub.path_and_query();
    let resource = parse_resource(sub_request_path(account, path))?;
    // A table name before the resource names no operation inside a batch.
    if matches!(resource, Resource::BelowTable { .. }) {
        return Err(ApiError::new(ErrorCode::InvalidUri));
    }
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

/// One write of a change set as decoded, with how its sub-response is wanted.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeWrite {
    /// The table the operation's URL names.
    pub table: String,
    pub op: WriteOp,
    pub prefer: Option<ReturnPreference>,
    pub metadata: Metadata,
}

/// Decodes the write of a change-set sub-request whose operation is `operation`, held to
/// `limits`.
pub fn decode_change(
    operation: Operation,
    sub: &SubRequest,
    limits: EntityLimits,
) -> Result<ChangeWrite, ApiError> {
    let prefer = ReturnPreference::parse(sub.header("prefer"));
    let metadata = negotiate_metadata(sub.header("accept"), None)?;
    let content_type = sub.header("content-type");
    let (table, op) = decode_any_write(operation, &sub.body, content_type, limits, || {
        ApiError::with_message(
            ErrorCode::InvalidInput,
            "A change set may contain only insert, update, merge and delete operations.",
        )
    })?;
    Ok(ChangeWrite {
        table,
        op,
        prefer,
        metadata,
    })
}

/// Error codes Azure reports without the `N:` index prefix when the change set holds that one
/// operation only; in a longer change set they carry it, `0:` included (CloudStub's
/// Azure.Data.Tables test suite, written against a storage account: a one-delete transaction
/// of a missing entity fails with "The specified resource does not exist.", a two-delete one
/// with "0:The specified resource does not exist."; the same for a stale ETag).
pub(crate) fn omits_index_prefix(code: ErrorCode, operations: usize) -> bool {
    operations == 1
        && matches!(
            code,
            ErrorCode::ResourceNotFound | ErrorCode::UpdateConditionNotSatisfied
        )
}

/// A sub-response's first headers: Storage's OData pair; none on Cosmos, whose inner
/// responses carry only `ETag`, `Preference-Applied`, `Location`, `Content-Type` and
/// `Content-ID` (recording `test_batch_all_operations_together`).
fn standard_headers(dialect: &Dialect) -> Vec<(&'static str, Cow<'static, str>)> {
    if !dialect.storage_headers {
        return Vec::new();
    }
    vec![
        ("X-Content-Type-Options", Cow::Borrowed("nosniff")),
        ("Cache-Control", Cow::Borrowed("no-cache")),
    ]
}

/// `DataServiceVersion: <v>` on Storage; Cosmos sends none.
fn push_data_service_version(
    headers: &mut Vec<(&'static str, Cow<'static, str>)>,
    dialect: &Dialect,
    v: &'static str,
) {
    if dialect.storage_headers {
        headers.push(("DataServiceVersion", Cow::Borrowed(v)));
    }
}

/// The sub-response of the operation at `index` (of `operations` in its change set, 1 for a
/// query batch) that failed with `error`: its message starts with the index, as Azure's does.
pub fn error_sub_response(
    request_id: &str,
    index: usize,
    operations: usize,
    error: &ApiError,
    prefer: Option<ReturnPreference>,
    dialect: &Dialect,
) -> SubResponse {
    let (content_type, body) = dialect.sub_response_error(error, index, operations, request_id);
    let mut headers = standard_headers(dialect);
    if let Some(p) = prefer {
        headers.push(("Preference-Applied", Cow::Borrowed(p.as_str())));
    }
    push_data_service_version(&mut headers, dialect, "3.0;");
    headers.push(("Content-Type", Cow::Borrowed(content_type)));
    SubResponse {
        status: dialect.error(error).status().as_u16(),
        headers,
        body,
    }
}

/// The sub-response of a committed write with Timestamp `timestamp` in table `table` (the
/// name as created): 201 with the entity for an Insert (unless `return-no-content`), 204
/// otherwise.
pub fn write_sub_response(
    base_url: &str,
    account: &str,
    table: &str,
    write: ChangeWrite,
    timestamp: EdmDateTime,
    dialect: &'static Dialect,
) -> SubResponse {
    let mut headers = standard_headers(dialect);
    let etag = dialect.etag(timestamp);
    if write.op.kind != WriteKind::Insert {
        push_data_service_version(&mut headers, dialect, "1.0;");
        if write.op.kind != WriteKind::Delete {
            headers.push(("ETag", Cow::Owned(etag)));
        }
        let upsert = matches!(
            write.op.kind,
            WriteKind::InsertOrReplace | WriteKind::InsertOrMerge
        );
        if let Some(ct) = dialect.upsert_content_type.filter(|_| upsert) {
            headers.push(("Content-Type", Cow::Borrowed(ct)));
        }
        return SubResponse {
            status: 204,
            headers,
            body: Vec::new(),
        };
    }
    let location = format!(
        "{base_url}/{}",
        entity_path(table, &write.op.key.partition_key, &write.op.key.row_key)
    );
    if write.prefer == Some(ReturnPreference::NoContent) {
        headers.push(("Preference-Applied", Cow::Borrowed("return-no-content")));
        push_data_service_version(&mut headers, dialect, "3.0;");
        headers.push(("Location", Cow::Owned(location.clone())));
        if dialect.storage_headers {
            headers.push(("DataServiceId", Cow::Owned(location)));
        }
        headers.push(("ETag", Cow::Owned(etag)));
        return SubResponse {
            status: 204,
            headers,
            body: Vec::new(),
        };
    }
    if write.prefer == Some(ReturnPreference::Content) {
        headers.push(("Preference-Applied", Cow::Borrowed("return-content")));
    }
    push_data_service_version(&mut headers, dialect, "3.0;");
    headers.push((
        "Content-Type",
        Cow::Borrowed(dialect.json_content_type(write.metadata)),
    ));
    headers.push(("Location", Cow::Owned(location)));
    headers.push(("ETag", Cow::Owned(etag)));
    let entity = Entity {
        partition_key: write.op.key.partition_key,
        row_key: write.op.key.row_key,
        timestamp,
        properties: write.op.properties,
    };
    let ctx = EntityContext {
        metadata: write.metadata,
        base_url,
        account,
        table,
        select: None,
        select_raw: None,
        dialect,
    };
    SubResponse {
        status: 201,
        headers,
        body: json::encode_entity(&entity, &ctx),
    }
}

/// The sub-response of a query batch's retrieve: 200 with the entity.
pub fn retrieve_sub_response(found: &Entity, ctx: &EntityContext<'_>) -> SubResponse {
    let mut headers = standard_headers(ctx.dialect);
    push_data_service_version(&mut headers, ctx.dialect, "3.0;");
    headers.extend([
        (
            "Content-Type",
            Cow::Borrowed(ctx.dialect.json_content_type(ctx.metadata)),
        ),
        ("ETag", Cow::Owned(ctx.dialect.etag(found.timestamp))),
    ]);
    SubResponse {
        status: 200,
        headers,
        body: json::encode_entity(found, ctx),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::dialect::STORAGE;

    fn sub(method: &str, url: &str, body: &str) -> SubRequest {
        SubRequest {
            method: method.into(),
            url: url.into(),
            headers: vec![("Prefer".into(), "return-no-content".into())],
            body: body.as_bytes().to_vec(),
            content_id: None,
        }
    }

    #[test]
    fn sub_requests_decode_like_top_level_requests() {
        let s = sub(
            "POST",
            "http://127.0.0.1:10002/devstoreaccount1/people",
            r#"{"PartitionKey":"p","RowKey":"r"}"#,
        );
        let op = parse_sub_operation("devstoreaccount1", &s).unwrap();
        assert_eq!(
            op,
            Operation::InsertEntity {
                table: "people".into()
            }
        );
        let change = decode_change(op, &s, EntityLimits::Accounted).unwrap();
        assert_eq!(change.table, "people");
        assert_eq!(change.prefer, Some(ReturnPreference::NoContent));
        let get = sub(
            "GET",
            "/devstoreaccount1/people(PartitionKey='p',RowKey='r')",
            "",
        );
        let op = parse_sub_operation("devstoreaccount1", &get).unwrap();
        let err = decode_change(op, &get, EntityLimits::Accounted).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
    }

    #[test]
    fn failures_name_their_index() {
        let e = ApiError::new(ErrorCode::EntityAlreadyExists);
        let r = error_sub_response("rid", 3, 5, &e, None, &STORAGE);
        assert_eq!(r.status, 409);
        assert!(String::from_utf8_lossy(&r.body).contains("3:The specified entity already exists."));
        let missing = ApiError::new(ErrorCode::ResourceNotFound);
        let r = error_sub_response("rid", 0, 1, &missing, None, &STORAGE);
        let body = String::from_utf8_lossy(&r.body);
        assert!(body.contains("The specified resource does not exist."));
        assert!(!body.contains("0:The specified"), "no index prefix alone");
        let r = error_sub_response("rid", 0, 2, &missing, None, &STORAGE);
        let body = String::from_utf8_lossy(&r.body);
        assert!(
            body.contains("0:The specified resource does not exist."),
            "{body}"
        );
    }
}
