//! Table operations: Query Tables, Get Table, Create Table, Delete Table, and the table's
//! stored access policies (Get/Set Table ACL).

use super::{ExecError, ResultOrder, Scope};
use crate::auth::{decode_signed_identifiers, SignedIdentifier};
use crate::model::TableName;
use crate::protocol::filter::Expr;
use crate::query::unordered::{key_hash, unordered_table_page};
use crate::query::{execute_table_page, TablePage};
use crate::store::{Store, StoreError, TableInfo};

/// Query Tables as the request asks it.
#[derive(Debug)]
pub(crate) struct TableQuery {
    pub(crate) filter: Option<Expr>,
    /// Most tables in the page (0..=1000).
    pub(crate) top: usize,
    /// The identity the page starts at (the lower-cased name), from a continuation (key order).
    pub(crate) start: Option<String>,
    /// The position of the last name already answered, from a continuation (hashed order):
    /// its hash and name.
    pub(crate) after: Option<(u64, String)>,
}

/// One page of Query Tables in an account.
#[derive(Debug)]
pub(crate) struct TablesPage {
    pub(crate) account: String,
    pub(crate) page: TablePage,
    /// In hashed order (`page.next` is then `None`): where the next page starts.
    pub(crate) hashed_next: Option<(u64, String)>,
}

pub(crate) async fn query(
    store: &dyn Store,
    scope: &Scope,
    query: TableQuery,
) -> Result<TablesPage, ExecError> {
    if let ResultOrder::Unordered { table_seed, .. } = scope.order() {
        return query_hashed(store, scope, query, table_seed).await;
    }
    let page = if query.top == 0 {
        // `$top=0`: an empty page with no continuation, as for Query Entities.
        TablePage {
            plan: "none ($top=0)".into(),
            ..TablePage::default()
        }
    } else {
        let (filter, start) = (query.filter.as_ref(), query.start.as_deref());
        execute_table_page(
            store,
            scope.account(),
            scope.case(),
            filter,
            start,
            query.top,
        )
        .await?
    };
    Ok(TablesPage {
        account: scope.account().to_string(),
        page,
        hashed_next: None,
    })
}

/// Query Tables in hashed order: every matching name of the account is read, a key-ordered
/// page at a time, for each page answered. Cosmos accounts hold at most 500 containers
/// ("Azure Cosmos DB service quotas"), so this stays small.
async fn query_hashed(
    store: &dyn Store,
    scope: &Scope,
    query: TableQuery,
    seed: u64,
) -> Result<TablesPage, ExecError> {
    let (mut all, mut examined) = (Vec::new(), 0);
    let mut plan;
    let mut start: Option<String> = None;
    loop {
        let (filter, from) = (query.filter.as_ref(), start.as_deref());
        let page =
            execute_table_page(store, scope.account(), scope.case(), filter, from, 1000).await?;
        all.extend(page.names);
        examined += page.examined;
        plan = page.plan;
        match page.next {
            Some(next) => start = Some(next),
            None => break,
        }
    }
    let (names, mut hashed_next) = if query.top == 0 {
        (Vec::new(), None)
    } else {
        unordered_table_page(all, seed, query.after.as_ref(), query.top)
    };
    // A full page continues even when nothing follows (Cosmos's way; the next page is empty).
    if hashed_next.is_none()
        && query.top > 0
        && names.len() == query.top
        && scope.dialect().full_table_page_continues
    {
        hashed_next = names
            .last()
            .map(|last| (key_hash(seed, &[last.as_bytes()]), last.clone()));
    }
    Ok(TablesPage {
        account: scope.account().to_string(),
        page: TablePage {
            names,
            next: None,
            examined,
            plan,
        },
        hashed_next,
    })
}

pub(crate) async fn get(
    store: &dyn Store,
    scope: &Scope,
    table: String,
) -> Result<TableInfo, ExecError> {
    super::entities::scoped_table(store, scope, table).await
}

pub(crate) async fn create(
    store: &dyn Store,
    scope: &Scope,
    table: TableName,
) -> Result<TableInfo, ExecError> {
    Ok(scope.shown(store.create_table(&scope.table(table.as_str())).await?))
}

/// Delete Table; Azure answers a missing table here with ResourceNotFound [rec: Py].
pub(crate) async fn delete(
    store: &dyn Store,
    scope: &Scope,
    table: String,
) -> Result<(), ExecError> {
    store
        .delete_table(&scope.table(table))
        .await
        .map_err(missing_is_resource_not_found)
}

/// Azure answers the ACL operations on a missing table with `ResourceNotFound` ("The
/// specified resource does not exist."), not the `TableNotFound` of table and entity
/// operations (recorded from the live service by an SDK's own test suite).
fn missing_is_resource_not_found(e: StoreError) -> ExecError {
    match e {
        StoreError::TableNotFound => ExecError::ResourceNotFound,
        other => ExecError::Store(other),
    }
}

pub(crate) async fn get_acl(
    store: &dyn Store,
    scope: &Scope,
    table: String,
) -> Result<Vec<SignedIdentifier>, ExecError> {
    let info = store
        .get_table(&scope.table(table))
        .await?
        .ok_or(ExecError::ResourceNotFound)?;
    // Stored bytes were written by encode_signed_identifiers; re-encoding normalises them.
    if info.acl.is_empty() {
        return Ok(Vec::new());
    }
    decode_signed_identifiers(&info.acl).map_err(ExecError::StoredAcl)
}

/// Set Table ACL with the policies already encoded.
pub(crate) async fn set_acl(
    store: &dyn Store,
    scope: &Scope,
    table: String,
    encoded: Vec<u8>,
) -> Result<(), ExecError> {
    store
        .set_table_acl(&scope.table(table), encoded)
        .await
        .map_err(missing_is_resource_not_found)
}
