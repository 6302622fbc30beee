//! The dialect: everything in which the server's answers differ by flavour, as one value
//! built once at start-up from `--flavor` ([`Flavor::dialect`]) and carried by each request
//! (the request context, the caller's scope). Where a difference is data (a limit, a header
//! set, an order) it is a field of [`Dialect`]; where it is behaviour (an error's envelope,
//! a request rule) it is a method. The rest of the server asks the dialect and never the
//! flavour: a new difference is a field or a method here (docs/architecture.md, "A new
//! Cosmos difference").
//!
//! Table storage's answers are the defaults elsewhere in `protocol`; each Cosmos difference
//! cites its public evidence, chiefly the Python `azure-data-tables` test recordings made
//! against a Cosmos account (`Azure/azure-sdk-for-python-assets`,
//! `…/azure-data-tables/tests/recordings/*_cosmos*`, named here by test) and Microsoft's "API
//! for Table FAQ" (docs/cosmos.md lists them).

use super::batch::{omits_index_prefix, SubResponse};
use super::error::{ApiError, ErrorCode, ErrorFormat};
use super::headers::Metadata;
use super::operation::{Misplaced, Operation};
use crate::model::entity::etag_with;
use crate::model::limits::{EntityLimits, MAX_PAGE_SIZE};
use crate::model::names::NameCase;
use crate::model::{EdmDateTime, FractionDigits, TableName, TableNameError, WriteKind, WriteOp};

/// The service whose wire behaviour the server reproduces, as the command line names it
/// (`--flavor`). Nothing branches on it but [`Flavor::dialect`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// Azure Table storage (`<account>.table.core.windows.net`).
    #[default]
    Storage,
    /// Azure Cosmos DB for Table (`<account>.table.cosmos.azure.com`), as its Windows emulator
    /// serves it on port 8902.
    Cosmos,
}

impl Flavor {
    /// The flavour's dialect.
    pub fn dialect(self) -> &'static Dialect {
        match self {
            Flavor::Storage => &STORAGE,
            Flavor::Cosmos => &COSMOS,
        }
    }
}

/// How the server answers as one flavour: the data that differs as fields, the behaviour
/// that differs as methods. Two exist, [`STORAGE`] and [`COSMOS`].
#[derive(Debug, PartialEq, Eq)]
pub struct Dialect {
    /// The flavour this is the dialect of (the start-up lines and logs name it).
    pub flavor: Flavor,
    /// The service's name, as the front page says what the server answers as.
    pub service: &'static str,
    /// The command line that starts a server in this dialect.
    pub command: &'static str,
    /// Whether responses carry Storage's service headers (`Server`, `x-ms-version`, the echoed
    /// `x-ms-client-request-id`, `Cache-Control`, `X-Content-Type-Options`, `x-ms-error-code`,
    /// and in `$batch` `DataServiceVersion`, `DataServiceId`). Cosmos answers with `Date` and
    /// `x-ms-request-id` only (recordings: every Cosmos response lacks them, e.g.
    /// `test_get_entity`'s Delete Table 204; inside a change set only `ETag`,
    /// `Preference-Applied`, `Location`, `Content-Type` and `Content-ID`,
    /// `test_batch_all_operations_together`).
    pub storage_headers: bool,
    /// The fractional digits of a DateTime's text, in values, `Timestamp` and ETags: Cosmos
    /// always writes 7 (`1973-10-04T00:00:00.0000000Z`; the Python SDK's Cosmos recordings,
    /// e.g. `test_table_entity_cosmos…test_datetime_milliseconds`; its ETag
    /// `W/"datetime'2021-09-29T20%3A31%3A09.3447688Z'"` carries the same text).
    pub datetime_digits: FractionDigits,
    /// The Content-Type of a 204 to an upsert (Insert Or Replace / Insert Or Merge without
    /// `If-Match`): Cosmos sends `application/json` with the empty body, Storage none
    /// (recordings: `test_insert_or_replace_entity_with_existing_entity`, 14 of 14 upserts).
    pub upsert_content_type: Option<&'static str>,
    /// Whether Create Table answers with an ETag: Cosmos does, `W/"datetime'…'"` (recording
    /// `test_get_entity`, its Create Table 201); Storage sends none.
    pub create_table_etag: bool,
    /// The limits an entity is held to: Storage's accounted ones, or Cosmos's 2 MB JSON item
    /// ("Azure Cosmos DB service quotas", per-item limits).
    pub entity_limits: EntityLimits,
    /// Whether table names are Storage's identifiers or Cosmos's free-form names (1–254
    /// characters, none of `/ \ # ?`, no trailing space: the Python SDK's
    /// `_validate_cosmos_tablename`).
    pub free_form_table_names: bool,
    /// How table names tell tables apart: case-insensitively on Storage, case-sensitively on
    /// Cosmos (API for Table FAQ: "Table names in Azure Table storage aren't case-sensitive,
    /// but they are in Azure Cosmos DB for Table").
    pub name_case: NameCase,
    /// Whether queries are answered in key order and paged by key (`NextPartitionKey` /
    /// `NextRowKey` / `NextTableName` are keys). Cosmos answers in no key order (API for
    /// Table FAQ: query results aren't sorted in PartitionKey/RowKey order), and its tokens
    /// are positions (`query::unordered`, `protocol::continuation`).
    pub key_order: bool,
    /// The largest `$top`: Storage's 1000; Cosmos takes any `$top` an `Int32` holds
    /// ("TakeCount isn't limited to 1000", API for Table FAQ), its pages cut at 4 MB instead.
    pub max_top: usize,
    /// The most bytes a request may carry beyond which the dialect itself refuses it, a
    /// `$batch` or a single entity's: Cosmos's 2 MB (FAQ: "Batches can only have up to 2 MBs";
    /// "Azure Cosmos DB service quotas": "Maximum request size" 2 MB). `None`: Storage's 4 MiB
    /// limit, applied as the body is read.
    pub max_request_bytes: Option<usize>,
    /// Whether a Query Tables page filled to its size carries a continuation even when no
    /// table follows. Cosmos does, and answers the next request with an empty page (Go
    /// `aztables` suite, recording `TestQueryTable_cosmos`, 2024-02-26: four matches with
    /// `$top=2`, a token after each full page, then `{"value":[]}` without one); Storage ends
    /// a page without one when no table after it lies in the filter's range
    /// (`query::execute_table_page`).
    pub full_table_page_continues: bool,
    /// Whether the query plan headers (`x-tablestore-debug-plan`) are offered for Query
    /// Tables: Cosmos's own order is not a plan this server reports.
    pub table_plan_headers: bool,
    /// Whether the account is found at the endpoint's root rather than in the host name or
    /// the first path segment: Cosmos's endpoint is the account (its emulator's connection
    /// string names `TableEndpoint=http://localhost:8902/`).
    pub account_at_root: bool,
    /// Whether `OPTIONS` preflights are answered: Cosmos DB for Table has no CORS (FAQ: "CORS
    /// isn't currently supported") and answers 501.
    pub cors: bool,
    /// Whether a SAS narrowed to a key range (`spk`/`srk`/`epk`/`erk`) is honoured; Cosmos
    /// answers 501 (recording `test_sas_add_outside_range`).
    pub sas_key_ranges: bool,
    /// Where an entity's `odata.*` members and `Timestamp` go and what its metadata URL
    /// says ([`EntityLayout`]).
    pub entity_layout: EntityLayout,
    /// The line break between a change set's parts in a `$batch` response (see
    /// `batch::encode`): Storage's CRLF, Cosmos's LF.
    pub batch_part_break: &'static [u8],
    /// Whether a change set's sub-responses are numbered `Content-ID: 1..n` in order, whatever
    /// the request's parts said (recording `test_batch_all_operations_together`: the SDK sent
    /// `0..n-1`); Storage sends none.
    pub numbers_sub_responses: bool,
    /// How the server's throughput is limited when `--simulate-targets` asks: Storage's
    /// scalability targets per account and partition, or Cosmos's request units per table.
    pub throughput: Throughput,
}

/// Where an entity's JSON puts its members. Storage: `odata.metadata` (single entity only),
/// `odata.type`, `odata.id`, `odata.etag`, `odata.editLink`, then the keys and `Timestamp`,
/// then the properties; a feed's `odata.metadata` before `value`; the metadata URL echoes
/// `$select`. Cosmos DB: `odata.type`, `odata.id`, `odata.editLink`, `odata.metadata`,
/// `odata.etag`, the keys, the properties, then `Timestamp`; a feed's `odata.metadata` after
/// `value`; a single entity's metadata URL names the table as a path segment and echoes no
/// `$select` (Python SDK Cosmos recordings `test_get_entity`, `test_get_entity_with_select`,
/// `test_get_entity_full_metadata`, `test_query_entities_full_metadata`,
/// `test_batch_insert_merge`'s Query Tables). Minimal metadata writes `odata.metadata` and
/// `odata.etag` only, in that order, on both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityLayout {
    Storage,
    Cosmos,
}

/// How a server's throughput is limited ([`Dialect::throughput`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throughput {
    /// Table storage's scalability targets, per account and per partition.
    ScalabilityTargets,
    /// Cosmos DB's request units per second, per table.
    RequestUnits,
}

/// Azure Table storage's dialect (the default).
pub static STORAGE: Dialect = Dialect {
    flavor: Flavor::Storage,
    service: "Azure Table storage",
    command: "tablestore",
    storage_headers: true,
    datetime_digits: FractionDigits::Trimmed,
    upsert_content_type: None,
    create_table_etag: false,
    entity_limits: EntityLimits::Accounted,
    free_form_table_names: false,
    name_case: NameCase::Insensitive,
    key_order: true,
    max_top: MAX_PAGE_SIZE,
    max_request_bytes: None,
    full_table_page_continues: false,
    table_plan_headers: true,
    account_at_root: false,
    cors: true,
    sas_key_ranges: true,
    entity_layout: EntityLayout::Storage,
    batch_part_break: b"\r\n",
    numbers_sub_responses: false,
    throughput: Throughput::ScalabilityTargets,
};

/// Azure Cosmos DB for Table's dialect (`--flavor cosmos`).
pub static COSMOS: Dialect = Dialect {
    flavor: Flavor::Cosmos,
    service: "Azure Cosmos DB for Table",
    command: "tablestore --flavor cosmos",
    storage_headers: false,
    datetime_digits: FractionDigits::Seven,
    upsert_content_type: Some("application/json"),
    create_table_etag: true,
    entity_limits: EntityLimits::JsonItem,
    free_form_table_names: true,
    name_case: NameCase::Sensitive,
    key_order: false,
    max_top: i32::MAX as usize,
    max_request_bytes: Some(COSMOS_MAX_REQUEST_BYTES),
    full_table_page_continues: true,
    table_plan_headers: false,
    account_at_root: true,
    cors: false,
    sas_key_ranges: false,
    entity_layout: EntityLayout::Cosmos,
    batch_part_break: b"\n",
    numbers_sub_responses: true,
    throughput: Throughput::RequestUnits,
};

impl Default for &'static Dialect {
    fn default() -> Self {
        &STORAGE
    }
}

impl Dialect {
    /// Whether this is Cosmos DB for Table's dialect: for the methods below, which hold the
    /// behaviour that differs, and nowhere else.
    fn cosmos(&self) -> bool {
        self.flavor == Flavor::Cosmos
    }

    /// A DateTime's text as this dialect writes it.
    pub fn datetime_text(&self, t: EdmDateTime) -> crate::model::edm::DateTimeText {
        t.text_with(self.datetime_digits)
    }

    /// An entity's ETag, from its Timestamp, as this dialect writes it.
    pub fn etag(&self, timestamp: EdmDateTime) -> String {
        etag_with(timestamp, self.datetime_digits)
    }

    /// The Table endpoint a client of the account at `endpoint` (scheme, host and port) uses:
    /// `{endpoint}/{account}`, or the root, `{endpoint}/`, where the account is at the root
    /// ([`Dialect::account_at_root`]), as in the Cosmos emulator's own connection string
    /// (`…;TableEndpoint=http://localhost:8902/;`).
    pub fn table_endpoint(&self, endpoint: &str, account: &str) -> String {
        match self.account_at_root {
            true => format!("{endpoint}/"),
            false => format!("{endpoint}/{account}"),
        }
    }

    /// The ETag of a table just created, where the dialect sends one.
    pub fn create_table_etag(&self, created: EdmDateTime) -> Option<String> {
        self.create_table_etag.then(|| self.etag(created))
    }

    /// The Content-Type of a JSON answer: Storage's `…;streaming=true;charset=utf-8`, Cosmos's
    /// `application/json; odata=<level>` (recordings: `test_get_entity`,
    /// `test_get_entity_full_metadata`, `test_get_entity_no_metadata`).
    pub fn json_content_type(&self, metadata: Metadata) -> &'static str {
        if !self.cosmos() {
            return metadata.content_type();
        }
        match metadata {
            Metadata::None => "application/json; odata=nometadata",
            Metadata::Minimal => "application/json; odata=minimalmetadata",
            Metadata::Full => "application/json; odata=fullmetadata",
        }
    }

    /// An error as the dialect words it. Cosmos rewrites Storage's texts for the codes it
    /// words differently, unless the error already carries a text of its own choosing.
    pub fn error(&self, error: &ApiError) -> ApiError {
        let mut e = error.clone();
        if !self.cosmos() {
            return e;
        }
        // A missing table is `ResourceNotFound` on Cosmos, in a batch too (recordings:
        // `test_get_entity_not_existing`, `test_new_non_existent_table`).
        if e.code == ErrorCode::TableNotFound {
            e = ApiError::new(ErrorCode::ResourceNotFound);
        }
        if e.message == e.code.default_message() {
            if let Some(text) = cosmos_text(e.code) {
                e.message = text.into();
            }
        }
        if e.diagnostics.is_none() && has_activity_line(&e) {
            e.diagnostics = Some(COSMOS_GATEWAY_SDK.into());
        }
        e
    }

    /// The message value of an error: Storage's `text\nRequestId:<id>\nTime:<time>`, Cosmos's
    /// `text\nRequestID:<id>\n` (capital `ID`, no time; recordings: every Cosmos error), with
    /// `\r\nActivityId: <id>, <diagnostics>` before the `RequestID` line when the error carries
    /// diagnostics (recording `test_batch_inserts`, its 429: the activity id is the request id).
    pub fn error_message(&self, error: &ApiError, request_id: &str, time: &str) -> String {
        if !self.cosmos() {
            return error.full_message(request_id, time);
        }
        match &error.diagnostics {
            None => format!("{}\nRequestID:{request_id}\n", error.message),
            Some(diagnostics) => format!(
                "{}\r\nActivityId: {request_id}, {diagnostics}\nRequestID:{request_id}\n",
                error.message
            ),
        }
    }

    /// The error body and its Content-Type. Cosmos answers JSON only (FAQ: "only supports the
    /// JSON format, not ATOM"), with `"lang":"en-us"` and a trailing CRLF, typed
    /// `odata=minimalmetadata` or `odata=fullmetadata` by the request and the error, whatever
    /// `Accept` said ([`typed_as_read`]).
    pub fn error_body(
        &self,
        error: &ApiError,
        format: ErrorFormat,
        message: &str,
        request: RequestKind,
    ) -> (&'static str, Vec<u8>) {
        if !self.cosmos() {
            return error.render_body(format, message);
        }
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

    /// A failed `$batch` operation's error as its sub-response carries it: the Content-Type
    /// and body of the error, its message prefixed with the operation's `index` (of
    /// `operations` in its change set) as Azure's is. Storage omits the prefix where
    /// [`omits_index_prefix`] says; Cosmos prefixes the index and adds a blank line, except
    /// for a missing table (recordings: `test_batch_update_if_doesnt_match`,
    /// `test_new_non_existent_table`), types the error `odata=fullmetadata` without the
    /// space, and ends its JSON with the delimiter's CRLF alone, not the CRLF it ends a
    /// top-level error with (recording `test_batch_update_if_doesnt_match`).
    pub fn sub_response_error(
        &self,
        error: &ApiError,
        index: usize,
        operations: usize,
        request_id: &str,
    ) -> (&'static str, Vec<u8>) {
        let missing_table = error.code == ErrorCode::TableNotFound;
        let error = &self.error(error);
        let text = match self.cosmos() {
            false if omits_index_prefix(error.code, operations) => error.message.to_string(),
            false => format!("{index}:{}", error.message),
            true if missing_table => error.message.to_string(),
            true => format!("{index}:{}\n", error.message),
        };
        let indexed = ApiError::with_message(error.code, text);
        let time = EdmDateTime::now().to_fixed7();
        let message = self.error_message(&indexed, request_id, &time);
        let (content_type, mut body) = self.error_body(
            &indexed,
            ErrorFormat::Json,
            &message,
            RequestKind::OtherWrite,
        );
        if !self.cosmos() {
            return (content_type, body);
        }
        if body.ends_with(b"\r\n") {
            body.truncate(body.len() - 2);
        }
        ("application/json;odata=fullmetadata", body)
    }

    /// Request rules Cosmos applies before anything executes: `PATCH` is refused with 405
    /// (the SDKs send Merge as `POST` + `X-HTTP-Method: MERGE` to Cosmos;
    /// Azure/azure-sdk-for-net#13555), and the surfaces Cosmos lacks answer 501
    /// `NotImplemented` (FAQ: service properties, stats, table ACLs; recordings:
    /// `test_retention_too_long` for Set Service Properties).
    pub fn check_operation(&self, method: &str, operation: &Operation) -> Result<(), ApiError> {
        if !self.cosmos() {
            return Ok(());
        }
        if method.eq_ignore_ascii_case("PATCH") {
            let refusal = ApiError::new(ErrorCode::MethodNotAllowed);
            return Err(refusal.with_cause(merge_as_patch_cause()));
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

    /// Refuses a SAS narrowed to a key range where the dialect does not honour one
    /// ([`Dialect::sas_key_ranges`]).
    pub fn check_sas_key_range(&self, unbounded: bool) -> Result<(), ApiError> {
        match self.sas_key_ranges || unbounded {
            true => Ok(()),
            false => Err(sas_key_range_not_supported()),
        }
    }

    /// A table name by the dialect's rules: Storage's identifiers or Cosmos's free-form names
    /// ([`Dialect::free_form_table_names`]).
    pub fn table_name(&self, name: &str) -> Result<TableName, TableNameError> {
        match self.free_form_table_names {
            true => TableName::parse_free_form(name),
            false => TableName::parse(name),
        }
    }

    /// A table name a Create Table body carries, by the dialect's rules, or the answer to a
    /// name they refuse: Storage's 400 `OutOfRangeInput` for its length and
    /// `InvalidResourceName` for its characters; Cosmos's as [`cosmos_table_name_error`].
    pub fn parse_table_name(&self, name: &str) -> Result<TableName, ApiError> {
        self.table_name(name).map_err(|e| match e {
            TableNameError::Length => ApiError::with_message(
                ErrorCode::OutOfRangeInput,
                "The specified resource name length is not within the permissible limits.",
            ),
            TableNameError::Characters => ApiError::new(ErrorCode::InvalidResourceName),
            free_form => cosmos_table_name_error(free_form),
        })
    }

    /// Cosmos's rules for a write's keys and properties, applied to the decoded write: empty
    /// keys are refused with 400 `PropertiesNeedValue` (recordings:
    /// `test_insert_entity_empty_string_pk`/`_rk`; Storage accepts them), keys longer than
    /// Cosmos's limits with 400 `KeyValueTooLarge` (the code is Storage's: Cosmos's own is not
    /// recorded), and a property named `Etag` is dropped (recording
    /// `test_etag_duplicate_field`).
    pub fn apply_write_rules(&self, op: &mut WriteOp) -> Result<(), ApiError> {
        if !self.cosmos() || op.kind == WriteKind::Delete {
            return Ok(());
        }
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
        Ok(())
    }

    /// The dialect's own limit on a request body ([`Dialect::max_request_bytes`]): 413 (the
    /// Python SDK's Cosmos test `test_batch_request_too_large` expects its
    /// `RequestTooLargeError`, raised on a 413). The code is Storage's for a body over its
    /// limit: Cosmos's own code and text are not recorded.
    pub fn check_request_size(&self, body_bytes: usize) -> Result<(), ApiError> {
        match self.max_request_bytes {
            Some(most) if body_bytes > most => Err(ApiError::with_message(
                ErrorCode::RequestBodyTooLarge,
                "The request body is too large and exceeds the maximum permissible limit of 2 MB.",
            )),
            _ => Ok(()),
        }
    }

    /// A `$filter` that does not parse: Cosmos answers `InvalidInput` "Request url is
    /// invalid." (recording `test_query_invalid_filter`), Storage names the position.
    pub fn filter_error(&self, error: ApiError) -> ApiError {
        match self.cosmos() {
            false => error,
            true => invalid_url(),
        }
    }

    /// A continuation token the dialect did not issue: Cosmos refuses it as a bad request
    /// URL (Storage reads an unknown token as a raw key and never calls this).
    pub fn token_refused(&self) -> ApiError {
        invalid_url()
    }

    /// A change set that names one row twice: Storage answers 202 with the failed operation
    /// inside (`InvalidDuplicateRow` at the duplicate's index), Cosmos refuses the whole
    /// request with 400 `InvalidDuplicateRow` "<index>:The batch request contains multiple
    /// changes with same row key. An entity can appear only once in a batch request." in its
    /// JSON envelope. Evidence: the Java `azure-data-tables` suite's
    /// `submitTransactionWithSameRowKeys` (its Cosmos branch expects a
    /// `TableServiceException` with status 400 and that code and text, where Storage's gives
    /// a `TableTransactionFailedException`). `None`: answered inside the 202, as Storage does.
    pub fn batch_error_at_top_level(&self, error: &ApiError, index: usize) -> Option<ApiError> {
        (self.cosmos() && error.code == ErrorCode::InvalidDuplicateRow).then(|| {
            ApiError::with_message(
                ErrorCode::InvalidDuplicateRow,
                format!("{index}:{}", error.message),
            )
        })
    }

    /// The `$format` a request's metadata level is negotiated with, beside its `Accept`.
    /// Storage lets `$format` win (Azure docs: "Payload format for Table service
    /// operations"); Cosmos answers as a JSON `Accept` says and ignores `$format` then (Go
    /// `aztables` suite, recording `TestListTables_cosmos`, 2024-02-26: `Accept:
    /// application/json;odata=minimalmetadata` with `$format=application/json;odata=fullmetadata`
    /// got `odata=minimalmetadata`). Without a JSON `Accept`, `$format` counts on Cosmos too
    /// (not recorded).
    pub fn metadata_format<'a>(
        &self,
        accept: Option<&str>,
        format: Option<&'a str>,
    ) -> Option<&'a str> {
        let json_accept = accept.is_some_and(|a| {
            a.split(',').any(|media| {
                let base = media.split(';').next().unwrap_or("").trim();
                base.eq_ignore_ascii_case("application/json")
            })
        });
        match self.cosmos() && json_accept {
            true => None,
            false => format,
        }
    }

    /// A change set's sub-responses, numbered where the dialect numbers them
    /// ([`Dialect::numbers_sub_responses`]).
    pub fn number_sub_responses(&self, mut responses: Vec<SubResponse>) -> Vec<SubResponse> {
        if self.numbers_sub_responses {
            for (i, r) in responses.iter_mut().enumerate() {
                r.headers.push(("Content-ID", (i + 1).to_string().into()));
            }
        }
        responses
    }
}

/// Cosmos's 400 for a request URL it cannot use (a bad `$filter`, a token it did not issue).
fn invalid_url() -> ApiError {
    ApiError::with_message(ErrorCode::InvalidInput, "Request url is invalid.")
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
        TableNameError::ForbiddenCharacter => ApiError::with_message(
            ErrorCode::InternalServerError,
            "The resource name presented contains invalid character.",
        ),
        TableNameError::TrailingSpace => ApiError::with_message(
            ErrorCode::InternalServerError,
            "The resource name can't end with space.",
        ),
        TableNameError::Unservable => ApiError::with_message(
            ErrorCode::InvalidInput,
            "tablestore cannot serve a table name with a control character or a parenthesis.",
        ),
        TableNameError::FreeFormLength | TableNameError::Length | TableNameError::Characters => {
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

/// The most bytes a Cosmos request may carry, a `$batch` or a single entity's (FAQ: "Batches
/// can only have up to 2 MBs"; "Azure Cosmos DB service quotas": "Maximum request size" 2 MB;
/// Storage's limit is 4 MiB).
pub(crate) const COSMOS_MAX_REQUEST_BYTES: usize = 2 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EntityKey, Property};

    #[test]
    fn cosmos_diagnostics_follow_the_activity_id_and_storage_writes_none() {
        let e = ApiError::with_message(ErrorCode::TooManyRequests, "text")
            .with_diagnostics("StatusCode: 429\r\n".into());
        assert_eq!(
            COSMOS.error_message(&e, "rid", "unused"),
            "text\r\nActivityId: rid, StatusCode: 429\r\n\nRequestID:rid\n"
        );
        assert_eq!(
            STORAGE.error_message(&e, "rid", "t"),
            "text\nRequestId:rid\nTime:t"
        );
    }

    /// The recorded 400s and 501s carry the activity line; a 404, 409 or 412 does not, nor
    /// does anything under Storage.
    #[test]
    fn the_activity_line_is_on_the_recorded_errors_only() {
        let line = |e: ApiError, dialect: &Dialect| {
            let e = dialect.error(&e);
            dialect
                .error_message(&e, "rid", "t")
                .contains("\r\nActivityId: rid, ")
        };
        for e in [
            ApiError::new(ErrorCode::PropertiesNeedValue),
            COSMOS.filter_error(ApiError::new(ErrorCode::InvalidInput)),
            sas_key_range_not_supported(),
            not_supported(),
        ] {
            assert!(line(e.clone(), &COSMOS), "{e}");
            assert!(!line(e.clone(), &STORAGE), "{e}");
        }
        assert_eq!(
            COSMOS.error_message(
                &COSMOS.error(&ApiError::new(ErrorCode::PropertiesNeedValue)),
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
            assert!(!line(ApiError::new(code), &COSMOS), "{code:?}");
        }
    }

    #[test]
    fn cosmos_error_envelope() {
        let e = COSMOS.error(&ApiError::new(ErrorCode::TableAlreadyExists));
        let message = COSMOS.error_message(&e, "rid", "unused");
        assert_eq!(
            message,
            "The specified table already exists.\nRequestID:rid\n"
        );
        let (ct, body) =
            COSMOS.error_body(&e, ErrorFormat::ODataXml, &message, RequestKind::OtherWrite);
        assert_eq!(ct, "application/json; odata=fullmetadata");
        let text = String::from_utf8(body).unwrap();
        assert!(text.ends_with("}\r\n"), "{text}");
        let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(v["odata.error"]["message"]["lang"], "en-us");
        assert_eq!(v["odata.error"]["code"], "TableAlreadyExists");
        // Storage is untouched.
        let s = STORAGE.error(&ApiError::new(ErrorCode::TableAlreadyExists));
        assert_eq!(s.message, "The table specified already exists.");
        assert_eq!(
            STORAGE.error_body(&s, ErrorFormat::Json, "m", RequestKind::Post),
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
        let e = COSMOS.apply_write_rules(&mut empty).unwrap_err();
        assert_eq!(e.code, ErrorCode::PropertiesNeedValue);
        let mut long = op("p", &"r".repeat(256));
        let e = COSMOS.apply_write_rules(&mut long).unwrap_err();
        assert_eq!(e.code, ErrorCode::KeyValueTooLarge);
        let mut fine = op("p", &"r".repeat(255));
        COSMOS.apply_write_rules(&mut fine).unwrap();
        assert_eq!(fine.properties.len(), 1);
        assert_eq!(fine.properties[0].name, "etag");
        let mut storage = op("", "");
        STORAGE.apply_write_rules(&mut storage).unwrap();
        assert_eq!(storage.properties.len(), 2);
    }

    #[test]
    fn each_flavour_has_its_own_dialect() {
        for flavor in [Flavor::Storage, Flavor::Cosmos] {
            assert_eq!(flavor.dialect().flavor, flavor);
        }
        assert_ne!(Flavor::Storage.dialect(), Flavor::Cosmos.dialect());
        assert_eq!(<&Dialect>::default(), &STORAGE);
    }

    /// The DateTime text and the ETag carry the same digits: Storage's trimmed, Cosmos's
    /// seven (recording `test_get_entity`: `2021-09-29T20:31:09.3447688Z` in both).
    #[test]
    fn dates_and_etags_in_each_dialect() {
        let t = EdmDateTime::parse("2011-11-04T00:05:23.283Z").unwrap();
        assert_eq!(
            STORAGE.datetime_text(t).as_str(),
            "2011-11-04T00:05:23.283Z"
        );
        assert_eq!(
            COSMOS.datetime_text(t).as_str(),
            "2011-11-04T00:05:23.2830000Z"
        );
        assert_eq!(
            STORAGE.etag(t),
            "W/\"datetime'2011-11-04T00%3A05%3A23.283Z'\""
        );
        assert_eq!(
            COSMOS.etag(t),
            "W/\"datetime'2011-11-04T00%3A05%3A23.2830000Z'\""
        );
        assert_eq!(STORAGE.create_table_etag(t), None);
        assert_eq!(COSMOS.create_table_etag(t), Some(COSMOS.etag(t)));
    }

    #[test]
    fn table_names_and_endpoints_in_each_dialect() {
        assert!(STORAGE.parse_table_name("my table").is_err());
        assert_eq!(
            COSMOS.parse_table_name("my table").unwrap().as_str(),
            "my table"
        );
        assert_eq!(
            STORAGE.parse_table_name("ab").unwrap_err().code,
            ErrorCode::OutOfRangeInput
        );
        assert_eq!(
            STORAGE.parse_table_name("a-b").unwrap_err().code,
            ErrorCode::InvalidResourceName
        );
        assert_eq!(
            COSMOS.parse_table_name("a/b").unwrap_err().code,
            ErrorCode::InternalServerError
        );
        assert_eq!(
            COSMOS.parse_table_name("").unwrap_err().code,
            ErrorCode::BadRequest
        );
        let endpoint = "http://localhost:8902";
        assert_eq!(
            STORAGE.table_endpoint(endpoint, "acct"),
            "http://localhost:8902/acct"
        );
        assert_eq!(
            COSMOS.table_endpoint(endpoint, "acct"),
            "http://localhost:8902/"
        );
    }

    /// Only Cosmos refuses a SAS narrowed to a key range, and a request body over 2 MB.
    #[test]
    fn key_ranges_and_request_size_in_each_dialect() {
        assert!(STORAGE.check_sas_key_range(false).is_ok());
        assert!(COSMOS.check_sas_key_range(true).is_ok());
        let refused = COSMOS.check_sas_key_range(false).unwrap_err();
        assert_eq!(refused.code, ErrorCode::NotImplemented);
        let over = COSMOS_MAX_REQUEST_BYTES + 1;
        assert!(STORAGE.check_request_size(over).is_ok());
        assert!(COSMOS.check_request_size(COSMOS_MAX_REQUEST_BYTES).is_ok());
        let e = COSMOS.check_request_size(over).unwrap_err();
        assert_eq!(e.code, ErrorCode::RequestBodyTooLarge);
    }

    /// A failed change-set operation: Storage prefixes the index; Cosmos also ends the text
    /// with a line break and its JSON without the CRLF, typed full metadata without a space
    /// (recording `test_batch_update_if_doesnt_match`); a missing table has no index.
    #[test]
    fn sub_response_errors_in_each_dialect() {
        let e = ApiError::new(ErrorCode::UpdateConditionNotSatisfied);
        let (ct, body) = STORAGE.sub_response_error(&e, 2, 3, "rid");
        assert_eq!(
            ct,
            "application/json;odata=minimalmetadata;streaming=true;charset=utf-8"
        );
        let text = String::from_utf8(body).unwrap();
        assert!(text.contains("\"2:The update condition"), "{text}");
        let (ct, body) = COSMOS.sub_response_error(&e, 2, 3, "rid");
        assert_eq!(ct, "application/json;odata=fullmetadata");
        let text = String::from_utf8(body).unwrap();
        assert!(text.ends_with('}'), "{text}");
        assert!(text.contains("\"2:The update condition"), "{text}");
        assert!(text.contains("\\n\\nRequestID:rid"), "{text}");
        let missing = ApiError::new(ErrorCode::TableNotFound);
        let (_, body) = COSMOS.sub_response_error(&missing, 0, 1, "rid");
        let text = String::from_utf8(body).unwrap();
        assert!(text.contains("\"ResourceNotFound\""), "{text}");
        assert!(!text.contains("\"0:"), "{text}");
    }
}
