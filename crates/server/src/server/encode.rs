//! The encode step: an [`Outcome`] becomes the HTTP answer the client asked for ([`Reply`]),
//! with Azure's headers and body for each operation. Reads the request only through its
//! context; the only failure here is a stored row that cannot be read back.
//!
//! The place where a wire flavour plugs in: every answer is written here, from the typed
//! outcome and the reply, and nowhere else.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;

use crate::auth::encode_signed_identifiers;
use crate::exec::{AppliedChangeSet, BatchOutcome, EntityPage, ExecError, Outcome, TablesPage};
use crate::exec::{Written, MAX_COUNTED_PAGES};
use crate::insight::QueryClass;
use crate::model::{EdmDateTime, Entity, TableRef, WriteKind};
use crate::protocol::batch::{
    encode_changeset_response, encode_query_response, error_sub_response, retrieve_sub_response,
    write_sub_response, ChangeWrite, SubResponse,
};
use crate::protocol::continuation::{
    encode_cosmos_entity_start_token, encode_cosmos_entity_token, encode_cosmos_table_token,
    encode_token, COSMOS_NEXT_ROW_KEY,
};
use crate::protocol::headers::{self, Metadata, ReturnPreference};
use crate::protocol::json::{self, EntityContext};
use crate::protocol::service_properties::ServiceProperties;
use crate::protocol::uri::entity_path;
use crate::protocol::ApiError;
use crate::query::unordered::UnorderedNext;
use crate::server::call::Call;
use crate::server::context::{names, ResponseParts};
use crate::store::TableInfo;

/// How the client asked to be answered, read from the request before it ran.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reply {
    /// The OData metadata level (`Accept`, `$format`).
    pub(crate) metadata: Metadata,
    /// The `Prefer` header's return preference (inserts).
    pub(crate) prefer: Option<ReturnPreference>,
    /// The `$select` list, parsed.
    pub(crate) select: Option<Vec<String>>,
    /// Whether the query plan headers were asked for (`x-tablestore-debug-plan: true`).
    pub(crate) debug_plan: bool,
    /// `$batch`: how each sub-request wants its sub-response.
    pub(crate) subs: Vec<SubReply>,
}

/// How one `$batch` sub-request wants its sub-response.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SubReply {
    pub(crate) prefer: Option<ReturnPreference>,
    /// `None` when its `Accept` could not be met (its operation then failed).
    pub(crate) metadata: Option<Metadata>,
}

/// The answer to `outcome`.
pub(crate) fn encode(call: &Call, reply: &Reply, outcome: Outcome) -> Result<Response, ApiError> {
    let ctx = &call.ctx;
    Ok(match outcome {
        Outcome::Tables(page) => tables(call, reply, &page),
        Outcome::Table(info) => table(call, reply, &info),
        Outcome::TableCreated(info) => table_created(call, reply, &info),
        Outcome::TableDeleted => ctx.odata_response(StatusCode::NO_CONTENT).into_response(),
        Outcome::TableAcl(identifiers) => {
            let mut r = ctx.plain_response(StatusCode::OK);
            let body = encode_signed_identifiers(&identifiers);
            if call.is_head {
                r.header(header::CONTENT_TYPE, "application/xml");
            } else {
                r.body("application/xml", body);
            }
            r.into_response()
        }
        Outcome::TableAclSet => ctx.plain_response(StatusCode::NO_CONTENT).into_response(),
        Outcome::Entities(page) => entities(call, reply, &page)?,
        Outcome::Entity { table, entity } => entity_found(call, reply, &table, &entity),
        Outcome::Written(written) => write(call, reply, written),
        Outcome::Batch(outcome) => batch(call, reply, outcome),
        Outcome::ServiceProperties(properties) => service_properties(call, &properties),
        Outcome::ServicePropertiesSet => ctx.plain_response(StatusCode::ACCEPTED).into_response(),
        Outcome::ServiceStats(last_sync) => {
            let body = format!(
                "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceStats><GeoReplication><Status>live</Status><LastSyncTime>{}</LastSyncTime></GeoReplication></StorageServiceStats>",
                last_sync.to_rfc1123()
            );
            let mut r = ctx.plain_response(StatusCode::OK);
            r.body("application/xml", body.into_bytes());
            r.into_response()
        }
    })
}

fn entity_context<'a>(
    call: &'a Call,
    metadata: Metadata,
    table: &'a str,
    select: Option<&'a [String]>,
) -> EntityContext<'a> {
    EntityContext {
        metadata,
        base_url: &call.ctx.base_url,
        account: &call.ctx.account,
        table,
        select,
        select_raw: call.query.get("$select"),
        dialect: call.ctx.dialect,
    }
}

/// The plan headers a query answers with when asked (`x-tablestore-debug-plan: true`).
fn plan_headers(
    r: &mut ResponseParts,
    plan: &str,
    examined: u64,
    class: QueryClass,
    returned: usize,
) {
    r.header(headers::X_TABLESTORE_PLAN, plan)
        .header(headers::X_TABLESTORE_EXAMINED, &examined.to_string())
        .header(headers::X_TABLESTORE_CLASS, class.as_str())
        .header(headers::X_TABLESTORE_RETURNED, &returned.to_string());
}

fn tables(call: &Call, reply: &Reply, tables: &TablesPage) -> Response {
    let page = &tables.page;
    tracing::debug!(
        request_id = %call.ctx.request_id,
        plan = %page.plan,
        examined = page.examined,
        returned = page.names.len(),
        more = page.next.is_some(),
        "query tables"
    );
    let mut r = call.ctx.odata_response(StatusCode::OK);
    if let Some(next) = &page.next {
        r.header(headers::CONTINUATION_NEXT_TABLE_NAME, &encode_token(next));
    }
    if let Some((hash, folded)) = &tables.hashed_next {
        let token = encode_cosmos_table_token(*hash, folded);
        r.header(headers::CONTINUATION_NEXT_TABLE_NAME, &token);
    }
    // Cosmos's own order is not a plan this server reports.
    if reply.debug_plan && call.ctx.dialect.table_plan_headers {
        let class = QueryClass::of_table_plan(&page.plan);
        plan_headers(&mut r, &page.plan, page.examined, class, page.names.len());
    }
    let names = page.names.iter().map(String::as_str);
    let (base_url, account) = (&call.ctx.base_url, &call.ctx.account);
    let dialect = call.ctx.dialect;
    let body = json::encode_table_page(names, reply.metadata, base_url, account, dialect);
    r.body(call.ctx.json_content_type(reply.metadata), body);
    r.into_response()
}

/// The table's JSON as the body of `r`.
fn table_body(r: &mut ResponseParts, call: &Call, reply: &Reply, info: &TableInfo) {
    let (base_url, account) = (&call.ctx.base_url, &call.ctx.account);
    let body = json::encode_table(&info.name, reply.metadata, base_url, account);
    r.body(call.ctx.json_content_type(reply.metadata), body);
}

fn table(call: &Call, reply: &Reply, info: &TableInfo) -> Response {
    let mut r = call.ctx.odata_response(StatusCode::OK);
    table_body(&mut r, call, reply, info);
    r.into_response()
}

fn table_created(call: &Call, reply: &Reply, info: &TableInfo) -> Response {
    let name = crate::protocol::uri::table_segment(&info.name);
    let location = format!("{}/Tables('{name}')", call.ctx.base_url);
    if reply.prefer == Some(ReturnPreference::NoContent) {
        let mut r = call.ctx.odata_response(StatusCode::NO_CONTENT);
        r.header(header::LOCATION, &location);
        if call.ctx.dialect.storage_headers {
            r.header(names::DATA_SERVICE_ID, &location);
        }
        r.header(names::PREFERENCE_APPLIED, "return-no-content");
        return r.into_response();
    }
    let mut r = call.ctx.odata_response(StatusCode::CREATED);
    r.header(header::LOCATION, &location);
    if let Some(etag) = call.ctx.dialect.create_table_etag(EdmDateTime::now()) {
        r.header(header::ETAG, &etag);
    }
    if reply.prefer == Some(ReturnPreference::Content) {
        r.header(names::PREFERENCE_APPLIED, "return-content");
    }
    table_body(&mut r, call, reply, info);
    r.into_response()
}

fn entities(call: &Call, reply: &Reply, query: &EntityPage) -> Result<Response, ApiError> {
    let page = &query.page;
    let description = query.plan.to_string();
    let class = QueryClass::of_plan(&query.plan);
    tracing::debug!(
        request_id = %call.ctx.request_id,
        table = %query.table.name,
        plan = %description,
        class = %class,
        examined = page.examined,
        returned = page.rows.len(),
        more = page.next.is_some() || query.unordered_next.is_some(),
        "query entities"
    );
    let mut r = call.ctx.odata_response(StatusCode::OK);
    if let Some((pk, rk)) = &page.next {
        r.header(headers::CONTINUATION_NEXT_PARTITION_KEY, &encode_token(pk))
            .header(headers::CONTINUATION_NEXT_ROW_KEY, &encode_token(rk));
    }
    if let Some(next) = &query.unordered_next {
        let token = match next {
            UnorderedNext::After(k) => {
                encode_cosmos_entity_token(k.position, &k.partition_key, &k.row_key)
            }
            UnorderedNext::FromStart => encode_cosmos_entity_start_token(),
        };
        r.header(headers::CONTINUATION_NEXT_PARTITION_KEY, &token)
            .header(headers::CONTINUATION_NEXT_ROW_KEY, COSMOS_NEXT_ROW_KEY);
    }
    if let Some(pages) = query.pages {
        plan_headers(&mut r, &description, page.examined, class, page.rows.len());
        let pages = match pages >= MAX_COUNTED_PAGES {
            true => format!("{pages}+"),
            false => pages.to_string(),
        };
        r.header(headers::X_TABLESTORE_PAGES, &pages);
    }
    let rows = page.rows.entities().map_err(ExecError::Store)?;
    let ctx = entity_context(
        call,
        reply.metadata,
        &query.table.name,
        reply.select.as_deref(),
    );
    r.body(
        call.ctx.json_content_type(reply.metadata),
        json::encode_entity_page(&rows, &ctx),
    );
    Ok(r.into_response())
}

fn entity_found(call: &Call, reply: &Reply, table: &TableRef, entity: &Entity) -> Response {
    let ctx = entity_context(call, reply.metadata, &table.name, reply.select.as_deref());
    let mut r = call.ctx.odata_response(StatusCode::OK);
    r.header(header::ETAG, &call.ctx.dialect.etag(entity.timestamp));
    r.body(
        call.ctx.json_content_type(reply.metadata),
        json::encode_entity(entity, &ctx),
    );
    r.into_response()
}

fn write(call: &Call, reply: &Reply, written: Written) -> Response {
    let etag = call.ctx.dialect.etag(written.timestamp);
    let kind = written.op.kind;
    match kind {
        WriteKind::Insert => inserted(call, reply, written, &etag),
        WriteKind::Delete => call
            .ctx
            .odata_response(StatusCode::NO_CONTENT)
            .into_response(),
        _ => {
            let mut r = call.ctx.odata_response(StatusCode::NO_CONTENT);
            r.header(header::ETAG, &etag);
            let upsert = matches!(kind, WriteKind::InsertOrReplace | WriteKind::InsertOrMerge);
            let upsert_type = call.ctx.dialect.upsert_content_type;
            if let Some(content_type) = upsert_type.filter(|_| upsert) {
                r.header(header::CONTENT_TYPE, content_type);
            }
            r.into_response()
        }
    }
}

fn inserted(call: &Call, reply: &Reply, written: Written, etag: &str) -> Response {
    let Written {
        table,
        op,
        timestamp,
    } = written;
    let key = &op.key;
    let path = entity_path(&table.name, &key.partition_key, &key.row_key);
    let location = format!("{}/{path}", call.ctx.base_url);
    if reply.prefer == Some(ReturnPreference::NoContent) {
        let mut r = call.ctx.odata_response(StatusCode::NO_CONTENT);
        r.header(header::ETAG, etag)
            .header(header::LOCATION, &location);
        if call.ctx.dialect.storage_headers {
            r.header(names::DATA_SERVICE_ID, &location);
        }
        r.header(names::PREFERENCE_APPLIED, "return-no-content");
        return r.into_response();
    }
    let entity = Entity {
        partition_key: op.key.partition_key,
        row_key: op.key.row_key,
        timestamp,
        properties: op.properties,
    };
    let ctx = entity_context(call, reply.metadata, &table.name, None);
    let mut r = call.ctx.odata_response(StatusCode::CREATED);
    r.header(header::ETAG, etag)
        .header(header::LOCATION, &location);
    if reply.prefer == Some(ReturnPreference::Content) {
        r.header(names::PREFERENCE_APPLIED, "return-content");
    }
    r.body(
        call.ctx.json_content_type(reply.metadata),
        json::encode_entity(&entity, &ctx),
    );
    r.into_response()
}

fn service_properties(call: &Call, properties: &ServiceProperties) -> Response {
    let mut r = call.ctx.plain_response(StatusCode::OK);
    r.body("application/xml", properties.encode());
    r.into_response()
}

/// `$batch` is answered 202 with a multipart body: one sub-response per operation, or only
/// the failing operation's, its index prefixed to the message.
fn batch(call: &Call, reply: &Reply, outcome: BatchOutcome) -> Response {
    let (request_id, dialect) = (call.ctx.request_id.as_str(), call.ctx.dialect);
    match outcome {
        BatchOutcome::Applied(applied) => {
            let responses = applied_subs(call, reply, applied);
            accepted(call, encode_changeset_response(&responses, dialect))
        }
        BatchOutcome::Empty => accepted(call, encode_changeset_response(&[], dialect)),
        BatchOutcome::Failed {
            index,
            operations,
            error,
        } => {
            let prefer = reply.subs.get(index).and_then(|s| s.prefer);
            let error = ApiError::from(error);
            if let Some(whole) = dialect.batch_error_at_top_level(&error, index) {
                return call.ctx.error(&whole);
            }
            let failed = error_sub_response(request_id, index, operations, &error, prefer, dialect);
            accepted(call, encode_changeset_response(&[failed], dialect))
        }
        BatchOutcome::Retrieved { table, entity } => {
            let metadata = reply.subs.first().and_then(|s| s.metadata);
            let ctx = EntityContext {
                metadata: metadata.unwrap_or_default(),
                base_url: &call.ctx.base_url,
                account: &call.ctx.account,
                table: &table.name,
                select: None,
                select_raw: None,
                dialect,
            };
            accepted(
                call,
                encode_query_response(&retrieve_sub_response(&entity, &ctx)),
            )
        }
        BatchOutcome::RetrieveFailed(error) => {
            let error = ApiError::from(error);
            let failed = error_sub_response(request_id, 0, 1, &error, None, dialect);
            accepted(call, encode_query_response(&failed))
        }
    }
}

/// Each applied write's sub-response, as its sub-request asked for it.
fn applied_subs(call: &Call, reply: &Reply, applied: AppliedChangeSet) -> Vec<SubResponse> {
    let AppliedChangeSet {
        table, ops, stamps, ..
    } = applied;
    let wanted = reply
        .subs
        .iter()
        .copied()
        .chain(std::iter::repeat(SubReply::default()));
    let responses = ops
        .into_iter()
        .zip(wanted)
        .zip(stamps)
        .map(|((op, wanted), stamp)| {
            let write = ChangeWrite {
                table: table.name.clone(),
                op,
                prefer: wanted.prefer,
                metadata: wanted.metadata.unwrap_or_default(),
            };
            let (base_url, account) = (&call.ctx.base_url, &call.ctx.account);
            let dialect = call.ctx.dialect;
            write_sub_response(base_url, account, &table.name, write, stamp, dialect)
        })
        .collect();
    call.ctx.dialect.number_sub_responses(responses)
}

fn accepted(call: &Call, (content_type, body): (String, Vec<u8>)) -> Response {
    let mut r = call.ctx.odata_response(StatusCode::ACCEPTED);
    if let Ok(v) = HeaderValue::from_str(&content_type) {
        r.headers.insert(header::CONTENT_TYPE, v);
    }
    r.body = body;
    r.into_response()
}
