//! Where the wire differs by flavour: small functions that take the [`Flavor`] and return what
//! the encode step writes (header set, Content-Types, error envelope and texts, request rules
//! Cosmos DB for Table applies before execution). Storage's answers are the defaults
//! elsewhere in `protocol`; each Cosmos difference cites its public evidence, chiefly the
//! Python `azure-data-tables` test recordings made against a Cosmos account
//! (`Azure/azure-sdk-for-python-assets`, `…/azure-data-tables/tests/recordings/*_cosmos*`,
//! named here by test) and Microsoft's "API for Table FAQ" (docs/cosmos.md lists them).

use super::error::{ApiError, ErrorCode, ErrorFormat};
use super::headers::Metadata;
use super::operation::{Misplaced, Operation};
use crate::model::entity::etag_as;
use crate::model::{EdmDateTime, Flavor, TableNameError, WriteKind, WriteOp};

/// Whether responses carry Storage's service headers (`Server`, `x-ms-version`, the echoed
/// `x-ms-client-request-id`, `Cache-Control`, `X-Content-Type-Options`, `x-ms-error-code`).
/// Cosmos answers with `Date` and `x-ms-request-id` only (recordings: every Cosmos response
/// lacks them, e.g. `test_get_entity`'s Delete Table 204).
pub fn sends_storage_headers(flavor: Flavor) -> bool {
    flavor == Flavor::Storage
}

/// The Content-Type of a JSON answer: Storage's `…;streaming=true;charset=utf-8`, Cosmos's
/// `application/json; odata=<level>` (recordings: `test_get_entity`,
/// `test_get_entity_full_metadata`, `test_get_entity_no_metadata`).
pub fn json_content_type(metadata: Metadata, flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::Storage => metadata.content_type(),
        Flavor::Cosmos => match metadata {
            Metadata::None => "application/json; odata=nometadata",
            Metadata::Minimal => "application/json; odata=minimalmetadata",
            Metadata::Full => "application/json; odata=fullmetadata",
        },
    }
}

/// The Content-Type of a 204 to an upsert (Insert Or Replace / Insert Or Merge without
/// `If-Match`): Cosmos sends `application/json` with the empty body, Storage none
/// (recordings: `test_insert_or_replace_entity_with_existing_entity`, 14 of 14 upserts).
pub fn upsert_no_content_type(flavor: Flavor) -> Option<&'static str> {
    (flavor == Flavor::Cosmos).then_some("application/json")
}

/// The ETag of a table Cosmos has just created (Storage sends none): Cosmos answers Create
/// Table with `ETag: W/"datetime'…'"` (recording `test_get_entity`, its Create Table 201).
pub fn create_table_etag(flavor: Flavor, created: EdmDateTime) -> Option<String> {
    (flavor == Flavor::Cosmos).then(|| etag_as(created, flavor))
}

/// The Cosmos text of an error, where it differs from Storage's (recordings:
/// `test_create_table_fail_on_exist`, `test_insert_entity_missing_pk`,
/// `test_insert_entity_empty_string_pk`).
fn cosmos_text(code: ErrorCode) -> Option<&'static str> {
    match code {
        ErrorCode::TableAlreadyExists => Some("The specified table already exists."),
        ErrorCode::PropertiesNeedValue => Some("PartitionKey/RowKey cannot be empty"),
        ErrorCode::NotImplemented => Some("The requested operation is not supported."),
        _ => None,
    }
}

/// An error as the flavour words it. Cosmos rewrites Storage's texts for the codes it words
/// differently, unless the error already carries a text of its own choosing.
pub fn flavoured_error(error: &ApiError, flavor: Flavor) -> ApiError {
    let mut e = error.clone();
    // A missing table is `ResourceNotFound` on Cosmos, in a batch too (recordings:
    // `test_get_entity_not_existing`, `test_new_non_existent_table`).
    if flavor == Flavor::Cosmos && e.code == ErrorCode::TableNotFound {
        e = ApiError::new(ErrorCode::ResourceNotFound);
    }
    if flavor == Flavor::Cosmos && e.message == e.code.default_message() {
        if let Some(text) = cosmos_text(e.code) {
            e.message = text.into();
        }
    }
    if flavor == Flavor::Cosmos && e.diagnostics.is_none() && has_activity_line(&e) {
        e.diagnostics = Some(COSMOS_GATEWAY_SDK.into());
    }
    e
}

/// What Cosmos's Table gateway names itself as after the activity id in its diagnostics
/// (recordings `test_insert_entity_missing_pk`, `test_query_invalid_filter`,
/// `test_sas_add_outside_range`, `test_retention_too_long`, and the end of
/// `test_batch_inserts`'s 429).
pub const COSMOS_GATEWAY_SDK: &str =
    "documentdb-dotnet-sdk/2.14.0 Host/64-bit MicrosoftWindowsNT/6.2.9200.0";

/// Whether Cosmos writes `\r\nActivityId: <id>, <gateway>` after this error's text: the
/// recordings show the line on exactly these texts (its 400s and 501s) and never on a 404,
/// 409 or 412 (`test_get_entity_not_existing`, `test_insert_entity_conflict`,
/// `test_update_entity_with_if_doesnt_match`) nor inside `$batch`.
fn has_activity_line(error: &ApiError) -> bool {
    // (code, text) pairs as recorded: `test_insert_entity_missing_pk` and
    // `test_insert_entity_empty_string_pk` (PropertiesNeedValue), `test_query_invalid_filter`
    // (InvalidInput), `test_sas_add_outside_range` and `test_retention_too_long`
    // (NotImplemented).
    const RECORDED: [(ErrorCode, &str); 4] = [
        (
            ErrorCode::PropertiesNeedValue,
            "PartitionKey/RowKey cannot be empty",
        ),
        (ErrorCode::InvalidInput, "Request url is invalid."),
        (
            ErrorCode::NotImplemented,
            "Shared access signature with PartitionKey or RowKey are not supported",
        ),
        (
            ErrorCode::NotImplemented,
            "The requested operation is not supported.",
        ),
    ];
    RECORDED
        .iter()
        .any(|(code, text)| error.code == *code && error.message == *text)
}

/// The message value of an error: Storage's `text\nRequestId:<id>\nTime:<time>`, Cosmos's
/// `text\nRequestID:<id>\n` (capital `ID`, no time; recordings: every Cosmos error), with
/// `\r\nActivityId: <id>, <diagnostics>` before the `RequestID` line when the error carries
/// diagnostics (recording `test_batch_inserts`, its 429: the activity id is the request id).
pub fn error_message(error: &ApiError, flavor: Flavor, request_id: &str, time: &str) -> String {
    match (flavor, &error.diagnostics) {
        (Flavor::Storage, _) => error.full_message(request_id, time),
        (Flavor::Cosmos, None) => format!("{}\nRequestID:{request_id}\n", error.message),
        (Flavor::Cosmos, Some(diagnostics)) => format!(
            "{}\r\nActivityId: {request_id}, {diagnostics}\nRequestID:{request_id}\n",
            error.message
        ),
    }
}

/// What kind of request an error answers: Cosmos types its errors by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// GET or HEAD.
    Read,
    /// POST without `X-HTTP-Method` (Insert Entity, Create Table, `$batch`).
    Post,
    /// PUT, DELETE, MERGE, POST tunnelling another verb, …
    OtherWrite,
}

impl RequestKind {
    pub fn of(method: &str, tunnelled: bool) -> RequestKind {
        match method {
            "GET" | "HEAD" => RequestKind::Read,
            "POST" if !tunnelled => RequestKind::Post,
            _ => RequestKind::OtherWrite,
        }
    }
}

/// Whether Cosmos types this error `odata=minimalmetadata`, as for a read, rather than
/// `odata=fullmetadata`. Recorded: every read's error; a plain POST's 409 conflicts and its
/// 501 (`test_create_table_fail_on_exist`, `test_insert_entity_conflict`,
/// `test_sas_add_outside_range`). Full: errors of PUT, DELETE and MERGE, a plain POST's 400
/// `PropertiesNeedValue` (`test_delete_entity_not_existing`, `test_merge_entity_not_existing`,
/// `test_insert_entity_missing_pk`) and its errors not recorded (the 429 of a write among
/// them).
fn typed_as_read(error: &ApiError, kind: RequestKind) -> bool {
    match kind {
        RequestKind::Read => true,
        RequestKind::Post => matches!(
            error.code,
            ErrorCode::TableAlreadyExists
                | ErrorCode::EntityAlreadyExists
                | ErrorCode::NotImplemented
        ),
        RequestKind::OtherWrite => false,
    }
}

/// The error body and its Content-Type. Cosmos answers JSON only (FAQ: "only supports the
/// JSON format, not ATOM"), with `"lang":"en-us"` and a trailing CRLF, typed
/// `odata=minimalmetadata` or `odata=fullmetadata` by the request and the error, whatever
/// `Accept` said ([`typed_as_read`]).
pub fn error_body(
    error: &ApiError,
    flavor: Flavor,
    format: ErrorFormat,
    message: &str,
    request: RequestKind,
) -> (&'static str, Vec<u8>) {
    match flavor {
        Flavor::Storage => error.render_body(format, message),
        Flavor::Cosmos => {
            let body = serde_json::json!({
                "odata.error": {
                    "code": error.code.as_str(),
                    "message": {"lang": "en-us", "value": message},
                }
            });
            let mut bytes = body.to_string().into_bytes();
            bytes.extend_from_slice(b"\r\n");
            let content_type = if typed_as_read(error, request) {
                "application/json; odata=minimalmetadata"
            } else {
                "application/json; odata=fullmetadata"
            };
            (content_type, bytes)
        }
    }
}

/// Request rules Cosmos applies before anything executes: `PATCH` is refused with 405 (the
/// SDKs send Merge as `POST` + `X-HTTP-Method: MERGE` to Cosmos; Azure/azure-sdk-for-net#13555),
/// and the surfaces Cosmos lacks answer 501 `NotImplemented` (FAQ: service properties, stats,
/// table ACLs; recordings: `test_retention_too_long` for Set Service Properties).
pub fn check_operation(
    flavor: Flavor,
    method: &str,
    operation: &Operation,
) -> Result<(), ApiError> {
    if flavor == Flavor::Storage {
        return Ok(());
    }
    if method.eq_ignore_ascii_case("PATCH") {
        return Err(ApiError::new(ErrorCode::MethodNotAllowed).with_cause(merge_as_patch_cause()));
    }
    if let Operation::BelowTable(Misplaced { table, .. }) = operation {
        return Err(below_table_refusal(table));
    }
    if let Some(table) = operation.table() {
        check_table_in_url(table)?;
    }
    match operation {
        Operation::GetServiceProperties
        | Operation::SetServiceProperties
        | Operation::GetServiceStats
        | Operation::GetTableAcl { .. }
        | Operation::SetTableAcl { .. } => Err(not_supported()),
        _ => Ok(()),
    }
}

/// Cosmos's answer to a request below a table's name (a service URL that ends with a table
/// name): 400 `InvalidInput` "Request url is invalid." whatever the method, as the .NET SDK's
/// `ThrowsWithTableNameInUri` recorded it for Create Table, Delete Table and Query Tables and
/// the Python SDK's live test `test_client_with_url_ends_with_table_name` (Cosmos) asserts it
/// for `$batch`. The Python SDK adds its hint ("…the account URL used to create the Client
/// includes an invalid path, for example the table name…") to exactly this code and text.
/// Storage looks the table up first (`MisplacedOperation::storage_error`).
fn below_table_refusal(table: &str) -> ApiError {
    ApiError::with_message(ErrorCode::InvalidInput, "Request url is invalid.")
        .with_cause(table_in_service_url_cause(table))
}

/// The log's cause for a request below a table's name, in both flavours.
pub fn table_in_service_url_cause(table: &str) -> String {
    format!(
        "the URL names table '{table}' before the resource: the client's service URL ends with \
         a table name; end TableEndpoint (or the account URL) at the account"
    )
}

/// The log's cause for Cosmos's 405 to `PATCH`. The SDKs send Merge as `PATCH` to what they
/// take for Azure Table storage and as `POST` + `X-HTTP-Method: MERGE` to what they take for
/// Cosmos, deciding by the endpoint's host name alone (Python `_is_cosmos_endpoint`, .NET
/// `IsPremiumEndpoint`, JS `isCosmosEndpoint`): a `PATCH` here means a client reached this
/// server under another name, such as a Compose service name (docs/cosmos.md, "Other host
/// names").
fn merge_as_patch_cause() -> &'static str {
    "Cosmos DB for Table refuses PATCH (405), as Cosmos does: Merge must come as POST with \
     X-HTTP-Method: MERGE. The client took this endpoint for Azure Table storage, as the SDKs \
     do for a host name that is neither localhost nor contains .table.cosmos.; reach the \
     server under such a name (docs/cosmos.md, \"Other host names\")"
}

/// A table named in a request URL with a character no Cosmos table name has: 400
/// `InvalidInput` with the texts the Python SDK's `_validate_tablename_error` lists for entity
/// operations and Delete Table on such names ("The table name contains an invalid character",
/// "Table name cannot end with a space.").
fn check_table_in_url(table: &str) -> Result<(), ApiError> {
    if table.contains(['\\', '#', '?']) {
        return Err(ApiError::with_message(
            ErrorCode::InvalidInput,
            "The table name contains an invalid character.",
        ));
    }
    if table.ends_with(' ') {
        return Err(ApiError::with_message(
            ErrorCode::InvalidInput,
            "Table name cannot end with a space.",
        ));
    }
    Ok(())
}

/// Create Table's answer to a name Cosmos refuses, as the Python SDK's
/// `_validate_tablename_error` records the service: 500 `InternalServerError` for a forbidden
/// character or a trailing space, 400 `BadRequest` "The input name is invalid." for a name of
/// 255 or more characters (its live test `test_table_name_errors_bad_length`), and the same for
/// an empty one (not recorded). Control characters and parentheses are tablestore's own
/// refusal: they cannot travel in the `Location` header or be told from a key predicate.
pub fn cosmos_table_name_error(error: TableNameError) -> ApiError {
    match error {
        TableNameError::CosmosCharacter => ApiError::with_message(
            ErrorCode::InternalServerError,
            "The resource name presented contains invalid character.",
        ),
        TableNameError::CosmosTrailingSpace => ApiError::with_message(
            ErrorCode::InternalServerError,
            "The resource name can't end with space.",
        ),
        TableNameError::CosmosUnservable => ApiError::with_message(
            ErrorCode::InvalidInput,
            "tablestore cannot serve a table name with a control character or a parenthesis.",
        ),
        TableNameError::CosmosLength | TableNameError::Length | TableNameError::Characters => {
            ApiError::with_message(ErrorCode::BadRequest, "The input name is invalid.")
        }
    }
}

/// Cosmos's 501 for a surface it does not have.
pub fn not_supported() -> ApiError {
    ApiError::with_message(
        ErrorCode::NotImplemented,
        "The requested operation is not supported.",
    )
}

/// Cosmos's 501 for a SAS restricted to a key range (`spk`/`srk`/`epk`/`erk`; recording
/// `test_sas_add_outside_range`).
pub fn sas_key_range_not_supported() -> ApiError {
    ApiError::with_message(
        ErrorCode::NotImplemented,
        "Shared access signature with PartitionKey or RowKey are not supported",
    )
}

/// The longest RowKey Cosmos takes, in UTF-8 bytes (FAQ: "Row keys can only be up to 255
/// bytes").
pub(crate) const COSMOS_MAX_ROW_KEY_BYTES: usize = 255;
/// The longest PartitionKey Cosmos takes, in UTF-8 bytes (FAQ: "the length of PartitionKey is
/// 1 KB").
pub(crate) const COSMOS_MAX_PARTITION_KEY_BYTES: usize = 1024;

/// Cosmos's rules for a write's keys and properties, applied to the decoded write: empty keys
/// are refused with 400 `PropertiesNeedValue` (recordings:
/// `test_insert_entity_empty_string_pk`/`_rk`; Storage accepts them), keys longer than
/// Cosmos's limits with 400 `KeyValueTooLarge` (the code is Storage's: Cosmos's own is not
/// recorded), and a property named `Etag` is dropped (recording `test_etag_duplicate_field`).
pub fn apply_write_rules(flavor: Flavor, op: &mut WriteOp) -> Result<(), ApiError> {
    if flavor == Flavor::Storage {
        return Ok(());
    }
    if op.kind != WriteKind::Delete {
        let key = &op.key;
        if key.partition_key.is_empty() || key.row_key.is_empty() {
            return Err(ApiError::new(ErrorCode::PropertiesNeedValue));
        }
        if key.row_key.len() > COSMOS_MAX_ROW_KEY_BYTES
            || key.partition_key.len() > COSMOS_MAX_PARTITION_KEY_BYTES
        {
            return Err(ApiError::new(ErrorCode::KeyValueTooLarge));
        }
        op.properties.retain(|p| p.name != "Etag");
    }
    Ok(())
}

/// The most bytes a Cosmos request may carry, a `$batch` or a single entity's (FAQ: "Batches
/// can only have up to 2 MBs"; "Azure Cosmos DB service quotas": "Maximum request size" 2 MB;
/// Storage's limit is 4 MiB).
pub(crate) const COSMOS_MAX_REQUEST_BYTES: usize = 2 * 1024 * 1024;

/// Cosmos's limit on a request body: 413 (the Python SDK's Cosmos test
/// `test_batch_request_too_large` expects its `RequestTooLargeError`, raised on a 413). The
/// code is Storage's for a body over its limit: Cosmos's own code and text are not recorded.
pub fn check_request_size(flavor: Flavor, body_bytes: usize) -> Result<(), ApiError> {
    if flavor == Flavor::Cosmos && body_bytes > COSMOS_MAX_REQUEST_BYTES {
        return Err(ApiError::with_message(
            ErrorCode::RequestBodyTooLarge,
            "The request body is too large and exceeds the maximum permissible limit of 2 MB.",
        ));
    }
    Ok(())
}

/// A `$filter` that does not parse: Cosmos answers `InvalidInput` "Request url is invalid."
/// (recording `test_query_invalid_filter`), Storage names the position.
pub fn filter_error(flavor: Flavor, error: ApiError) -> ApiError {
    match flavor {
        Flavor::Storage => error,
        Flavor::Cosmos => {
            ApiError::with_message(ErrorCode::InvalidInput, "Request url is invalid.")
        }
    }
}

/// A change set that names one row twice: Storage answers 202 with the failed operation
/// inside (`InvalidDuplicateRow` at the duplicate's index), Cosmos refuses the whole request
/// with 400 `InvalidDuplicateRow` "<index>:The batch request contains multiple changes with
/// same row key. An entity can appear only once in a batch request." in its JSON envelope.
/// Evidence: the Java `azure-data-tables` suite's `submitTransactionWithSameRowKeys` (its
/// Cosmos branch expects a `TableServiceException` with status 400 and that code and text,
/// where Storage's gives a `TableTransactionFailedException`). `None`: answered inside the
/// 202, as Storage does.
pub fn batch_error_at_top_level(
    flavor: Flavor,
    error: &ApiError,
    index: usize,
) -> Option<ApiError> {
    (flavor == Flavor::Cosmos && error.code == ErrorCode::InvalidDuplicateRow).then(|| {
        ApiError::with_message(
            ErrorCode::InvalidDuplicateRow,
            format!("{index}:{}", error.message),
        )
    })
}

/// The `$format` a request's metadata level is negotiated with, beside its `Accept`. Storage
/// lets `$format` win (Azure docs: "Payload format for Table service operations"); Cosmos
/// answers as a JSON `Accept` says and ignores `$format` then (Go `aztables` suite, recording
/// `TestListTables_cosmos`, 2024-02-26: `Accept: application/json;odata=minimalmetadata` with
/// `$format=application/json;odata=fullmetadata` got `odata=minimalmetadata`). Without a
/// JSON `Accept`, `$format` counts on Cosmos too (not recorded).
pub fn metadata_format<'a>(
    flavor: Flavor,
    accept: Option<&str>,
    format: Option<&'a str>,
) -> Option<&'a str> {
    let json_accept = accept.is_some_and(|a| {
        a.split(',').any(|media| {
            let base = media.split(';').next().unwrap_or("").trim();
            base.eq_ignore_ascii_case("application/json")
        })
    });
    match flavor {
        Flavor::Cosmos if json_accept => None,
        _ => format,
    }
}

/// Whether a Query Tables page filled to its size carries a continuation even when no table
/// follows. Cosmos does, and answers the next request with an empty page (Go `aztables` suite,
/// recording `TestQueryTable_cosmos`, 2024-02-26: four matches with `$top=2`, a token after
/// each full page, then `{"value":[]}` without one); Storage ends a page without one when no
/// table after it lies in the filter's range (`query::execute_table_page`).
pub fn full_table_page_continues(flavor: Flavor) -> bool {
    flavor == Flavor::Cosmos
}

/// Cosmos numbers a change set's sub-responses `Content-ID: 1..n` in order, whatever the
/// request's parts said (recording `test_batch_all_operations_together`: the SDK sent
/// `0..n-1`); Storage sends none.
pub fn number_sub_responses(
    flavor: Flavor,
    mut responses: Vec<super::batch::SubResponse>,
) -> Vec<super::batch::SubResponse> {
    if flavor == Flavor::Cosmos {
        for (i, r) in responses.iter_mut().enumerate() {
            r.headers.push(("Content-ID", (i + 1).to_string().into()));
        }
    }
    responses
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EntityKey, Property};

    #[test]
    fn cosmos_diagnostics_follow_the_activity_id_and_storage_writes_none() {
        let e = ApiError::with_message(ErrorCode::TooManyRequests, "text")
            .with_diagnostics("StatusCode: 429\r\n".into());
        assert_eq!(
            error_message(&e, Flavor::Cosmos, "rid", "unused"),
            "text\r\nActivityId: rid, StatusCode: 429\r\n\nRequestID:rid\n"
        );
        assert_eq!(
            error_message(&e, Flavor::Storage, "rid", "t"),
            "text\nRequestId:rid\nTime:t"
        );
    }

    /// The recorded 400s and 501s carry the activity line; a 404, 409 or 412 does not, nor
    /// does anything under Storage.
    #[test]
    fn the_activity_line_is_on_the_recorded_errors_only() {
        let line = |e: ApiError, flavor: Flavor| {
            let e = flavoured_error(&e, flavor);
            error_message(&e, flavor, "rid", "t").contains("\r\nActivityId: rid, ")
        };
        for e in [
            ApiError::new(ErrorCode::PropertiesNeedValue),
            filter_error(Flavor::Cosmos, ApiError::new(ErrorCode::InvalidInput)),
            sas_key_range_not_supported(),
            not_supported(),
        ] {
            assert!(line(e.clone(), Flavor::Cosmos), "{e}");
            assert!(!line(e.clone(), Flavor::Storage), "{e}");
        }
        assert_eq!(
            error_message(
                &flavoured_error(
                    &ApiError::new(ErrorCode::PropertiesNeedValue),
                    Flavor::Cosmos
                ),
                Flavor::Cosmos,
                "rid",
                "t"
            ),
            "PartitionKey/RowKey cannot be empty\r\nActivityId: rid, documentdb-dotnet-sdk/2.14.0 \
             Host/64-bit MicrosoftWindowsNT/6.2.9200.0\nRequestID:rid\n"
        );
        for code in [
            ErrorCode::ResourceNotFound,
            ErrorCode::TableNotFound,
            ErrorCode::EntityAlreadyExists,
            ErrorCode::TableAlreadyExists,
            ErrorCode::UpdateConditionNotSatisfied,
            ErrorCode::MethodNotAllowed,
            ErrorCode::InvalidInput,
        ] {
            assert!(!line(ApiError::new(code), Flavor::Cosmos), "{code:?}");
        }
    }

    #[test]
    fn cosmos_error_envelope() {
        let e = flavoured_error(
            &ApiError::new(ErrorCode::TableAlreadyExists),
            Flavor::Cosmos,
        );
        let message = error_message(&e, Flavor::Cosmos, "rid", "unused");
        assert_eq!(
            message,
            "The specified table already exists.\nRequestID:rid\n"
        );
        let (ct, body) = error_body(
            &e,
            Flavor::Cosmos,
            ErrorFormat::ODataXml,
            &message,
            RequestKind::OtherWrite,
        );
        assert_eq!(ct, "application/json; odata=fullmetadata");
        let text = String::from_utf8(body).unwrap();
        assert!(text.ends_with("}\r\n"), "{text}");
        let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(v["odata.error"]["message"]["lang"], "en-us");
        assert_eq!(v["odata.error"]["code"], "TableAlreadyExists");
        // Storage is untouched.
        let s = flavoured_error(
            &ApiError::new(ErrorCode::TableAlreadyExists),
            Flavor::Storage,
        );
        assert_eq!(s.message, "The table specified already exists.");
        assert_eq!(
            error_body(
                &s,
                Flavor::Storage,
                ErrorFormat::Json,
                "m",
                RequestKind::Post
            ),
            s.render_body(ErrorFormat::Json, "m")
        );
    }

    #[test]
    fn cosmos_write_rules() {
        let op = |pk: &str, rk: &str| WriteOp {
            limits: Default::default(),
            kind: WriteKind::Insert,
            key: EntityKey {
                partition_key: pk.into(),
                row_key: rk.into(),
            },
            if_match: crate::model::IfMatch::Any,
            properties: vec![
                Property {
                    name: "Etag".into(),
                    value: crate::model::EdmValue::String("x".into()),
                },
                Property {
                    name: "etag".into(),
                    value: crate::model::EdmValue::String("y".into()),
                },
            ],
        };
        let mut empty = op("", "r");
        let e = apply_write_rules(Flavor::Cosmos, &mut empty).unwrap_err();
        assert_eq!(e.code, ErrorCode::PropertiesNeedValue);
        let mut long = op("p", &"r".repeat(256));
        let e = apply_write_rules(Flavor::Cosmos, &mut long).unwrap_err();
        assert_eq!(e.code, ErrorCode::KeyValueTooLarge);
        let mut fine = op("p", &"r".repeat(255));
        apply_write_rules(Flavor::Cosmos, &mut fine).unwrap();
        assert_eq!(fine.properties.len(), 1);
        assert_eq!(fine.properties[0].name, "etag");
        let mut storage = op("", "");
        apply_write_rules(Flavor::Storage, &mut storage).unwrap();
        assert_eq!(storage.properties.len(), 2);
    }
}
