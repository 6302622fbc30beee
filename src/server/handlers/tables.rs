//! Query Tables, Get Table, Create Table, Delete Table.

use axum::http::StatusCode;
use axum::response::Response;

use super::{metadata, parse_top, store_error, wants_plan};
use crate::insight::{Observation, QueryClass};
use crate::model::{EdmDateTime, TableName, TableNameError};
use crate::protocol::continuation::{
    decode_cosmos_table_token, decode_token, encode_cosmos_table_token, encode_token,
};
use crate::protocol::headers::{self, check_json_content_type, ReturnPreference};
use crate::protocol::{filter, flavor, json, ApiError, ErrorCode};
use crate::query::unordered::unordered_table_page;
use crate::query::{execute_table_page, TablePage};
use crate::server::call::Call;
use crate::server::AppState;
use crate::store::StoreError;

pub async fn query_tables(state: &AppState, call: &Call) -> Result<Response, ApiError> {
    let metadata = metadata(call)?;
    super::reject_unsupported_options(&call.query)?;
    let filter = filter::parse_param(call.query.get("$filter"))
        .map_err(|e| flavor::filter_error(call.ctx.flavor, e))?;
    let top = parse_top(&call.query)?;
    if call.ctx.flavor.is_cosmos() {
        return query_tables_unordered(state, call, metadata, filter.as_ref(), top).await;
    }
    let start = call
        .query
        .get("NextTableName")
        .map(|t| decode_token(t).unwrap_or_else(|| t.to_ascii_lowercase()));
    let account = call.ctx.data_account();
    let page = if top == 0 {
        // `$top=0`: an empty page with no continuation, as for Query Entities.
        TablePage {
            plan: "none ($top=0)".into(),
            ..TablePage::default()
        }
    } else {
        execute_table_page(
            &*state.store,
            account,
            filter.as_ref(),
            start.as_deref(),
            top,
        )
        .await
        .map_err(store_error)?
    };
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
    let class = QueryClass::of_table_plan(&page.plan);
    if wants_plan(call) {
        r.header(headers::X_TABLESTORE_PLAN, &page.plan)
            .header(headers::X_TABLESTORE_EXAMINED, &page.examined.to_string())
            .header(headers::X_TABLESTORE_CLASS, class.as_str())
            .header(
                headers::X_TABLESTORE_RETURNED,
                &page.names.len().to_string(),
            );
    }
    // The account's table list is observed as the (reserved, so never a real table) `Tables`.
    let observed = Observation::query(
        call.ctx.data_account(),
        "Tables",
        class,
        page.examined,
        page.names.len() as u64,
        None,
        Vec::new(),
    );
    let body = json::encode_table_page(
        page.names.iter().map(String::as_str),
        metadata,
        &call.ctx.base_url,
        &call.ctx.account,
    );
    r.body(call.ctx.json_content_type(metadata), body);
    Ok(super::observe(r.into_response(), observed))
}

/// Query Tables as Cosmos answers it: in no name order (recording
/// `test_query_tables_per_page`), paged with an opaque `NextTableName`. Every matching name of
/// the account is read per page; Cosmos accounts hold at most 500 containers
/// ("Azure Cosmos DB service quotas"), so this stays small.
async fn query_tables_unordered(
    state: &AppState,
    call: &Call,
    metadata: crate::protocol::headers::Metadata,
    filter: Option<&crate::protocol::filter::Expr>,
    top: usize,
) -> Result<Response, ApiError> {
    let after = match call.query.get("NextTableName") {
        None => None,
        Some(t) => Some(decode_cosmos_table_token(t).ok_or_else(|| {
            ApiError::with_message(ErrorCode::InvalidInput, "Request url is invalid.")
        })?),
    };
    // Every matching name, read a key-ordered page at a time.
    let (mut all, mut examined) = (Vec::new(), 0);
    let mut plan;
    let mut start: Option<String> = None;
    loop {
        let account = call.ctx.data_account();
        let page = execute_table_page(&*state.store, account, filter, start.as_deref(), 1000)
            .await
            .map_err(store_error)?;
        all.extend(page.names);
        examined += page.examined;
        plan = page.plan;
        match page.next {
            Some(next) => start = Some(next),
            None => break,
        }
    }
    let (names, next) = if top == 0 {
        (Vec::new(), None)
    } else {
        unordered_table_page(all, state.config.cosmos_shuffle_seed, after.as_ref(), top)
    };
    let mut r = call.ctx.odata_response(StatusCode::OK);
    if let Some((hash, folded)) = &next {
        r.header(
            headers::CONTINUATION_NEXT_TABLE_NAME,
            &encode_cosmos_table_token(*hash, folded),
        );
    }
    let class = QueryClass::of_table_plan(&plan);
    let observed = Observation::query(
        call.ctx.data_account(),
        "Tables",
        class,
        examined,
        names.len() as u64,
        None,
        Vec::new(),
    );
    let body = json::encode_table_page(
        names.iter().map(String::as_str),
        metadata,
        &call.ctx.base_url,
        &call.ctx.account,
    );
    r.body(call.ctx.json_content_type(metadata), body);
    Ok(super::observe(r.into_response(), observed))
}

pub async fn get_table(state: &AppState, call: &Call, table: String) -> Result<Response, ApiError> {
    let metadata = metadata(call)?;
    let table = call.table(table);
    let info = state
        .store
        .get_table(&table)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::new(ErrorCode::TableNotFound))?;
    let mut r = call.ctx.odata_response(StatusCode::OK);
    r.body(
        call.ctx.json_content_type(metadata),
        json::encode_table(&info.name, metadata, &call.ctx.base_url, &call.ctx.account),
    );
    Ok(r.into_response())
}

pub async fn create_table(state: &AppState, call: &Call) -> Result<Response, ApiError> {
    let metadata = metadata(call)?;
    check_json_content_type(call.header("content-type"))?;
    let requested = json::decode_table_name(&call.body)?;
    let name = TableName::parse(&requested).map_err(|e| match e {
        TableNameError::Length => ApiError::with_message(
            ErrorCode::OutOfRangeInput,
            "The specified resource name length is not within the permissible limits.",
        ),
        TableNameError::Characters => ApiError::new(ErrorCode::InvalidResourceName),
    })?;
    let table = call.table(name.as_str());
    let info = state
        .store
        .create_table(&table)
        .await
        .map_err(store_error)?;
    let location = format!("{}/Tables('{}')", call.ctx.base_url, info.name);
    let preference = ReturnPreference::parse(call.header(headers::PREFER));
    if preference == Some(ReturnPreference::NoContent) {
        let mut r = call.ctx.odata_response(StatusCode::NO_CONTENT);
        r.header("location", &location);
        if flavor::sends_storage_headers(call.ctx.flavor) {
            r.header(headers::DATA_SERVICE_ID, &location);
        }
        r.header(headers::PREFERENCE_APPLIED, "return-no-content");
        return Ok(r.into_response());
    }
    let mut r = call.ctx.odata_response(StatusCode::CREATED);
    r.header("location", &location);
    if let Some(etag) = flavor::create_table_etag(call.ctx.flavor, EdmDateTime::now()) {
        r.header("etag", &etag);
    }
    if preference == Some(ReturnPreference::Content) {
        r.header(headers::PREFERENCE_APPLIED, "return-content");
    }
    r.body(
        call.ctx.json_content_type(metadata),
        json::encode_table(&info.name, metadata, &call.ctx.base_url, &call.ctx.account),
    );
    Ok(r.into_response())
}

pub async fn delete_table(
    state: &AppState,
    call: &Call,
    table: String,
) -> Result<Response, ApiError> {
    let table = call.table(table);
    state
        .store
        .delete_table(&table)
        .await
        .map_err(|e| match e {
            // Azure answers a missing table here with ResourceNotFound [rec: Py].
            StoreError::TableNotFound => ApiError::new(ErrorCode::ResourceNotFound),
            other => store_error(other),
        })?;
    Ok(call
        .ctx
        .odata_response(StatusCode::NO_CONTENT)
        .into_response())
}
