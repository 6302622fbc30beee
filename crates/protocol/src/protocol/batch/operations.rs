//! The operations inside a `$batch`, as the Table service reads and answers them: each
//! sub-request becomes the same [`Operation`] a top-level request would (`operation.rs`), a
//! change-set write becomes its [`WriteOp`] through the one write decoder (`write.rs`), and
//! each outcome becomes its [`SubResponse`] (a failure names its operation's index).

use std::borrow::Cow;

use super::{SubRequest, SubResponse};
use crate::model::entity::etag_as;
use crate::model::limits::EntityLimits;
use crate::model::{EdmDateTime, Entity, Flavor, WriteKind, WriteOp};
use crate::protocol::error::ErrorFormat;
use crate::protocol::flavor::{
    error_body, error_message, flavoured_error, json_content_type, sends_storage_headers,
    upsert_no_content_type, RequestKind,
};
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
fn omits_index_prefix(code: ErrorCode, operations: usize) -> bool {
    operations == 1
        && matches!(
            code,
            ErrorCode::ResourceNotFound | ErrorCode::UpdateConditionNotSatisfied
        )
}

/// A sub-response's first headers: Storage's OData pair; none on Cosmos, whose inner
/// responses carry only `ETag`, `Preference-Applied`, `Location`, `Content-Type` and
/// `Content-ID` (recording `test_batch_all_operations_together`).
fn standard_headers(flavor: Flavor) -> Vec<(&'static str, Cow<'static, str>)> {
    if !sends_storage_headers(flavor) {
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
    flavor: Flavor,
    v: &'static str,
) {
    if sends_storage_headers(flavor) {
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
    flavor: Flavor,
) -> SubResponse {
    let missing_table = error.code == ErrorCode::TableNotFound;
    let error = &flavoured_error(error, flavor);
    let text = match flavor {
        Flavor::Storage if omits_index_prefix(error.code, operations) => error.message.to_string(),
        Flavor::Storage => format!("{index}:{}", error.message),
        // Cosmos prefixes the index and adds a blank line, except for a missing table
        // (recordings: `test_batch_update_if_doesnt_match`, `test_new_non_existent_table`).
        Flavor::Cosmos if missing_table => error.message.to_string(),
        Flavor::Cosmos => format!("{index}:{}\n", error.message),
    };
    let indexed = ApiError::with_message(error.code, text);
    let time = EdmDateTime::now().to_fixed7();
    let message = error_message(&indexed, flavor, request_id, &time);
    let (content_type, mut body) = error_body(
        &indexed,
        flavor,
        ErrorFormat::Json,
        &message,
        RequestKind::OtherWrite,
    );
    let content_type = match flavor {
        Flavor::Storage => content_type,
        Flavor::Cosmos => "application/json;odata=fullmetadata",
    };
    // Inside a change set Cosmos's error JSON is followed by the delimiter's CRLF alone, not
    // the CRLF it ends a top-level error with (recording `test_batch_update_if_doesnt_match`).
    if body.ends_with(b"\r\n") && flavor == Flavor::Cosmos {
        body.truncate(body.len() - 2);
    }
    let mut headers = standard_headers(flavor);
    if let Some(p) = prefer {
        headers.push(("Preference-Applied", Cow::Borrowed(p.as_str())));
    }
    push_data_service_version(&mut headers, flavor, "3.0;");
    headers.push(("Content-Type", Cow::Borrowed(content_type)));
    SubResponse {
        status: error.status().as_u16(),
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
    flavor: Flavor,
) -> SubResponse {
    let mut headers = standard_headers(flavor);
    let etag = etag_as(timestamp, flavor);
    if write.op.kind != WriteKind::Insert {
        push_data_service_version(&mut headers, flavor, "1.0;");
        if write.op.kind != WriteKind::Delete {
            headers.push(("ETag", Cow::Owned(etag)));
        }
        let upsert = matches!(
            write.op.kind,
            WriteKind::InsertOrReplace | WriteKind::InsertOrMerge
        );
        if let Some(ct) = upsert_no_content_type(flavor).filter(|_| upsert) {
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
        push_data_service_version(&mut headers, flavor, "3.0;");
        headers.push(("Location", Cow::Owned(location.clone())));
        if sends_storage_headers(flavor) {
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
    push_data_service_version(&mut headers, flavor, "3.0;");
    headers.push((
        "Content-Type",
        Cow::Borrowed(json_content_type(write.metadata, flavor)),
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
        flavor,
    };
    SubResponse {
        status: 201,
        headers,
        body: json::encode_entity(&entity, &ctx),
    }
}

/// The sub-response of a query batch's retrieve: 200 with the entity.
pub fn retrieve_sub_response(found: &Entity, ctx: &EntityContext<'_>) -> SubResponse {
    let mut headers = standard_headers(ctx.flavor);
    push_data_service_version(&mut headers, ctx.flavor, "3.0;");
    headers.extend([
        (
            "Content-Type",
            Cow::Borrowed(json_content_type(ctx.metadata, ctx.flavor)),
        ),
        ("ETag", Cow::Owned(etag_as(found.timestamp, ctx.flavor))),
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
        let change = decode_change(op, &s, EntityLimits::Storage).unwrap();
        assert_eq!(change.table, "people");
        assert_eq!(change.prefer, Some(ReturnPreference::NoContent));
        let get = sub(
            "GET",
            "/devstoreaccount1/people(PartitionKey='p',RowKey='r')",
            "",
        );
        let op = parse_sub_operation("devstoreaccount1", &get).unwrap();
        let err = decode_change(op, &get, EntityLimits::Storage).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
    }

    #[test]
    fn failures_name_their_index() {
        let e = ApiError::new(ErrorCode::EntityAlreadyExists);
        let r = error_sub_response("rid", 3, 5, &e, None, Flavor::Storage);
        assert_eq!(r.status, 409);
        assert!(String::from_utf8_lossy(&r.body).contains("3:The specified entity already exists."));
        let missing = ApiError::new(ErrorCode::ResourceNotFound);
        let r = error_sub_response("rid", 0, 1, &missing, None, Flavor::Storage);
        let body = String::from_utf8_lossy(&r.body);
        assert!(body.contains("The specified resource does not exist."));
        assert!(!body.contains("0:The specified"), "no index prefix alone");
        let r = error_sub_response("rid", 0, 2, &missing, None, Flavor::Storage);
        let body = String::from_utf8_lossy(&r.body);
        assert!(
            body.contains("0:The specified resource does not exist."),
            "{body}"
        );
    }
}
