//! Entity operations: Query Entities, Get Entity, Insert, and the writes (Update, Merge,
//! Delete, Insert Or Replace, Insert Or Merge), which share one path into `Store::commit`.

use axum::http::StatusCode;
use axum::response::Response;

use super::{metadata, observe, parse_top, store_error, wants_plan};
use crate::insight::class::{filtered_properties, single_partition};
use crate::insight::{Event, Observation, QueryClass};
use crate::model::entity::etag_as;
use crate::model::{EdmDateTime, Entity, TableRef, WriteKind, WriteOp};
use crate::protocol::continuation::{
    decode_cosmos_entity_token, decode_token, encode_cosmos_entity_token, encode_token,
    COSMOS_NEXT_ROW_KEY,
};
use crate::protocol::headers::{self, ReturnPreference};
use crate::protocol::json::{self, EntityContext};
use crate::protocol::operation::{EntityRef, Operation};
use crate::protocol::uri::entity_path;
use crate::protocol::write::{decode_insert, decode_write};
use crate::protocol::{filter, flavor};
use crate::protocol::{ApiError, ErrorCode};
use crate::query::plan::plan_entities;
use crate::query::unordered::{OrderKey, UnorderedPage, UnorderedPageRead};
use crate::query::{eval, execute_raw_page, PageLimits, PageRead};
use crate::server::call::Call;
use crate::server::AppState;
use crate::store::{read_with, Store, StoredRow, TableInfo};

pub async fn table_info(store: &dyn Store, table: &TableRef) -> Result<TableInfo, ApiError> {
    store
        .get_table(table)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::new(ErrorCode::TableNotFound))
}

/// The table a point read names and, if it exists, the entity.
pub async fn read_entity(
    store: &dyn Store,
    table: &TableRef,
    partition_key: &str,
    row_key: &str,
) -> Result<(TableInfo, Option<Entity>), ApiError> {
    let info = table_info(store, table).await?;
    let found = store
        .get_entity(info.id, partition_key, row_key)
        .await
        .map_err(store_error)?;
    Ok((info, found))
}

fn entity_context<'a>(
    call: &'a Call,
    metadata: crate::protocol::headers::Metadata,
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
        flavor: call.ctx.flavor,
    }
}

/// Resume position from `NextPartitionKey`/`NextRowKey` (tokens this server issued; a raw
/// key is accepted too).
fn resume_position(call: &Call) -> Option<(String, String)> {
    let decode = |name: &str| {
        call.query
            .get(name)
            .map(|t| decode_token(t).unwrap_or_else(|| t.to_string()))
    };
    let pk = decode("NextPartitionKey")?;
    Some((pk, decode("NextRowKey").unwrap_or_default()))
}

/// Pages counted for `x-tablestore-pages` before giving up (the header then says `1000+`).
const MAX_COUNTED_PAGES: u64 = 1000;

pub async fn query_entities(
    state: &AppState,
    call: &Call,
    table: String,
) -> Result<Response, ApiError> {
    let metadata = metadata(call)?;
    super::reject_unsupported_options(&call.query)?;
    let filter = filter::parse_param(call.query.get("$filter"))
        .map_err(|e| flavor::filter_error(call.ctx.flavor, e))?;
    let limits = PageLimits {
        top: parse_top(&call.query)?,
        ..PageLimits::default()
    };
    let mut plan = plan_entities(filter.as_ref());
    // A SAS with a key range sees only its range: read only the planned ranges' overlap with it.
    let sas_range = crate::server::auth::sas_key_range(call.principal.as_ref());
    if let Some(sas) = &sas_range {
        plan.ranges = plan
            .ranges
            .iter()
            .filter_map(|r| r.intersect(sas))
            .collect();
    }
    if limits.top == 0 {
        // `$top=0`: an empty page with no continuation (a continuation would point back at
        // the same place, and a client paging on it would never finish).
        plan.ranges.clear();
    }
    let description = plan.to_string();
    let class = QueryClass::of_plan(&plan);
    let partition = single_partition(&plan);
    let properties = filtered_properties(filter.as_ref());
    let resume = resume_position(call);
    let table = call.table(table);
    let count_pages = wants_plan(call);
    let store = &*state.store;
    let info = table_info(store, &table).await?;
    let filter = std::sync::Arc::new(filter);
    let matches = move |row: &StoredRow<'_>| eval::matches_opt(filter.as_ref().as_ref(), row);
    let read = |resume: Option<(String, String)>| {
        let job = PageRead::new(plan.ranges.clone(), matches.clone(), resume, limits);
        async move {
            execute_raw_page(store, info.id, job)
                .await
                .map_err(store_error)
        }
    };
    if call.ctx.flavor.is_cosmos() {
        // Cosmos answers in no key order, with its own continuation tokens.
        let after = cosmos_resume(call)?;
        let seed = state.config.cosmos_shuffle_seed;
        let job = UnorderedPageRead::new(
            plan.ranges.clone(),
            matches.clone(),
            seed,
            after,
            limits.top,
        );
        let page = if plan.ranges.is_empty() {
            UnorderedPage::default()
        } else {
            read_with(store, info.id, job)
                .await
                .map_err(store_error)?
                .into_page()
        };
        let next = page.next.map(|k| {
            let token = encode_cosmos_entity_token(k.hash, &k.partition_key, &k.row_key);
            (token, COSMOS_NEXT_ROW_KEY.to_string())
        });
        let shown = ShownPage {
            rows: page.rows,
            examined: page.examined,
            next,
            pages: None,
        };
        return Ok(encode_query_page(
            call,
            metadata,
            &info.name,
            shown,
            (description, class, partition, properties),
        ));
    }
    let mut page = read(resume).await?;
    // Opt-in debugging only: the pages the whole result takes from here.
    let mut pages = None;
    if count_pages {
        let (mut n, mut next) = (1u64, page.next.clone());
        while let Some(at) = next.filter(|_| n < MAX_COUNTED_PAGES) {
            next = read(Some(at)).await?.next;
            n += 1;
        }
        pages = Some(n);
    }
    crate::server::realism::cut_page(state, &mut page);
    let shown = ShownPage {
        next: page
            .next
            .map(|(pk, rk)| (encode_token(&pk), encode_token(&rk))),
        rows: page.rows,
        examined: page.examined,
        pages,
    };
    Ok(encode_query_page(
        call,
        metadata,
        &info.name,
        shown,
        (description, class, partition, properties),
    ))
}

/// A page of Query Entities as answered: its rows, the continuation headers' values, and the
/// debugging counts.
struct ShownPage {
    rows: crate::store::StoredRows,
    examined: u64,
    /// (`NextPartitionKey`, `NextRowKey`) as sent.
    next: Option<(String, String)>,
    pages: Option<u64>,
}

/// The plan description, query class, single partition and filtered properties of a query,
/// for the debugging headers and the insight observation.
type QueryFacts = (String, QueryClass, Option<String>, Vec<String>);

fn encode_query_page(
    call: &Call,
    metadata: crate::protocol::headers::Metadata,
    table: &str,
    page: ShownPage,
    (description, class, partition, properties): QueryFacts,
) -> Response {
    tracing::debug!(
        request_id = %call.ctx.request_id,
        table = %table,
        plan = %description,
        class = %class,
        examined = page.examined,
        returned = page.rows.len(),
        more = page.next.is_some(),
        "query entities"
    );
    let pages = page.pages;
    let select = json::parse_select(call.query.get("$select"));
    let ctx = entity_context(call, metadata, table, select.as_deref());
    let mut r = call.ctx.odata_response(StatusCode::OK);
    if let Some((pk, rk)) = &page.next {
        r.header(headers::CONTINUATION_NEXT_PARTITION_KEY, pk)
            .header(headers::CONTINUATION_NEXT_ROW_KEY, rk);
    }
    if let Some(pages) = pages {
        let pages = if pages >= MAX_COUNTED_PAGES {
            format!("{pages}+")
        } else {
            pages.to_string()
        };
        r.header(headers::X_TABLESTORE_PLAN, &description)
            .header(headers::X_TABLESTORE_EXAMINED, &page.examined.to_string())
            .header(headers::X_TABLESTORE_CLASS, class.as_str())
            .header(headers::X_TABLESTORE_RETURNED, &page.rows.len().to_string())
            .header(headers::X_TABLESTORE_PAGES, &pages);
    }
    let observed = Observation::query(
        call.ctx.data_account(),
        table,
        class,
        page.examined,
        page.rows.len() as u64,
        partition,
        properties,
    );
    let entities = match page.rows.entities() {
        Ok(e) => e,
        Err(e) => return call.ctx.error(&store_error(e)),
    };
    r.body(
        call.ctx.json_content_type(metadata),
        json::encode_entity_page(&entities, &ctx),
    );
    observe(r.into_response(), observed)
}

/// Where a Cosmos query resumes: the position its `NextPartitionKey` token holds. A token
/// that is not ours is refused as Cosmos refuses a bad request URL.
fn cosmos_resume(call: &Call) -> Result<Option<OrderKey>, ApiError> {
    let Some(token) = call.query.get("NextPartitionKey") else {
        return Ok(None);
    };
    let (hash, partition_key, row_key) = decode_cosmos_entity_token(token).ok_or_else(|| {
        ApiError::with_message(ErrorCode::InvalidInput, "Request url is invalid.")
    })?;
    Ok(Some(OrderKey {
        hash,
        partition_key,
        row_key,
    }))
}

pub async fn get_entity(
    state: &AppState,
    call: &Call,
    entity: EntityRef,
) -> Result<Response, ApiError> {
    let metadata = metadata(call)?;
    call.check_key(&entity.partition_key, &entity.row_key)?;
    // [emu] `$filter` on a point query is an extra predicate: an entity it rejects is
    // answered like a missing one (the swagger accepts the parameter; Azure's use is unknown).
    let filter = filter::parse_param(call.query.get("$filter"))
        .map_err(|e| flavor::filter_error(call.ctx.flavor, e))?;
    let table = call.table(entity.table.as_str());
    let (info, found) = read_entity(
        &*state.store,
        &table,
        &entity.partition_key,
        &entity.row_key,
    )
    .await?;
    let found = found
        .filter(|e| eval::matches_opt(filter.as_ref(), e))
        .ok_or_else(|| ApiError::new(ErrorCode::ResourceNotFound))?;
    let select = json::parse_select(call.query.get("$select"));
    let ctx = entity_context(call, metadata, &info.name, select.as_deref());
    let mut r = call.ctx.odata_response(StatusCode::OK);
    r.header("etag", &etag_as(found.timestamp, call.ctx.flavor));
    r.body(
        call.ctx.json_content_type(metadata),
        json::encode_entity(&found, &ctx),
    );
    let observed = Observation {
        account: table.account.clone(),
        table: info.name.clone(),
        event: Event::Read {
            partition: entity.partition_key.clone(),
        },
    };
    Ok(observe(r.into_response(), observed))
}

/// Commits one write to `table`; returns the table and the write's Timestamp.
async fn commit_one(
    state: &AppState,
    table: &TableRef,
    op: &WriteOp,
) -> Result<(TableInfo, EdmDateTime), ApiError> {
    let store = &*state.store;
    let info = table_info(store, table).await?;
    let stamps = store
        .commit(info.id, std::slice::from_ref(op))
        .await
        .map_err(|e| store_error(e.error))?;
    let timestamp = stamps
        .first()
        .copied()
        .ok_or_else(|| ApiError::new(ErrorCode::InternalError))?;
    Ok((info, timestamp))
}

pub async fn insert_entity(
    state: &AppState,
    call: &Call,
    table: String,
) -> Result<Response, ApiError> {
    let metadata = metadata(call)?;
    let mut op = decode_insert(&call.body, call.header("content-type"))?;
    flavor::apply_write_rules(call.ctx.flavor, &mut op)?;
    call.check_key(&op.key.partition_key, &op.key.row_key)?;
    let table = call.table(table);
    let (info, timestamp) = commit_one(state, &table, &op).await?;
    let location = format!(
        "{}/{}",
        call.ctx.base_url,
        entity_path(&info.name, &op.key.partition_key, &op.key.row_key)
    );
    let etag = etag_as(timestamp, call.ctx.flavor);
    let observed = Observation::writes(&table.account, &info.name, std::slice::from_ref(&op), None);
    let preference = ReturnPreference::parse(call.header(headers::PREFER));
    if preference == Some(ReturnPreference::NoContent) {
        let mut r = call.ctx.odata_response(StatusCode::NO_CONTENT);
        r.header("etag", &etag).header("location", &location);
        if flavor::sends_storage_headers(call.ctx.flavor) {
            r.header(headers::DATA_SERVICE_ID, &location);
        }
        r.header(headers::PREFERENCE_APPLIED, "return-no-content");
        return Ok(observe(r.into_response(), observed));
    }
    let entity = Entity {
        partition_key: op.key.partition_key,
        row_key: op.key.row_key,
        timestamp,
        properties: op.properties,
    };
    let ctx = entity_context(call, metadata, &info.name, None);
    let mut r = call.ctx.odata_response(StatusCode::CREATED);
    r.header("etag", &etag).header("location", &location);
    if preference == Some(ReturnPreference::Content) {
        r.header(headers::PREFERENCE_APPLIED, "return-content");
    }
    r.body(
        call.ctx.json_content_type(metadata),
        json::encode_entity(&entity, &ctx),
    );
    Ok(observe(r.into_response(), observed))
}

pub async fn write_entity(
    state: &AppState,
    call: &Call,
    operation: Operation,
) -> Result<Response, ApiError> {
    let (table, mut op) = decode_write(operation, &call.body, call.header("content-type"))?;
    flavor::apply_write_rules(call.ctx.flavor, &mut op)?;
    call.check_key(&op.key.partition_key, &op.key.row_key)?;
    let is_delete = op.kind == WriteKind::Delete;
    let table = call.table(table);
    let (info, timestamp) = commit_one(state, &table, &op).await?;
    let name = info.name;
    let mut r = call.ctx.odata_response(StatusCode::NO_CONTENT);
    if !is_delete {
        r.header("etag", &etag_as(timestamp, call.ctx.flavor));
    }
    let upsert = matches!(
        op.kind,
        WriteKind::InsertOrReplace | WriteKind::InsertOrMerge
    );
    if let Some(content_type) = flavor::upsert_no_content_type(call.ctx.flavor).filter(|_| upsert) {
        r.header("content-type", content_type);
    }
    let observed = Observation::writes(&table.account, &name, std::slice::from_ref(&op), None);
    Ok(observe(r.into_response(), observed))
}
