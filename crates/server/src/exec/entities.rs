//! Entity operations: Query Entities (plan, the caller's key range, `$top`, one page in the
//! scope's order, and on request the count of key-ordered pages), Get Entity, and every single-entity write (one commit).

use std::sync::Arc;

use super::{ExecError, ResultOrder, Scope};
use crate::model::{EdmDateTime, Entity, TableRef, WriteOp};
use crate::protocol::filter::Expr;
use crate::protocol::operation::EntityRef;
use crate::protocol::ApiError;
use crate::query::plan::{plan_entities, Plan};
use crate::query::unordered::{
    OrderKey, UnorderedNext, UnorderedPage, UnorderedPageRead, UnorderedStart,
    COSMOS_MAX_PAGE_BYTES,
};
use crate::query::{eval, execute_raw_page, PageLimits, PageRead, RawPage};
use crate::store::{read_with, Store, StoreError, StoredRow, TableInfo};

/// Query Entities as the request asks it.
#[derive(Debug)]
pub(crate) struct EntityQuery {
    /// The table as the URL names it.
    pub(crate) table: String,
    pub(crate) filter: Option<Expr>,
    /// Most entities in the page (0..=1000).
    pub(crate) top: usize,
    /// Where the page starts, from a continuation.
    pub(crate) resume: Resume,
    /// Count the pages the whole result takes from here (opt-in debugging).
    pub(crate) count_pages: bool,
}

/// Where a page of Query Entities starts.
#[derive(Debug)]
pub(crate) enum Resume {
    /// The first page.
    Start,
    /// Key order's continuation: (PartitionKey, RowKey) of the first row of the page.
    Keys(String, String),
    /// Hashed order's continuation: the position of the last row already answered.
    After(OrderKey),
    /// A continuation token the scope's order cannot read: refused once the table is found.
    Unreadable(ApiError),
}

/// One page of Query Entities.
#[derive(Debug)]
pub(crate) struct EntityPage {
    /// The table, named as created.
    pub(crate) table: TableRef,
    /// The matching entities as stored, where the next page starts, and how many were read.
    pub(crate) page: RawPage,
    /// The plan executed: the filter's key ranges, narrowed to the caller's SAS range.
    pub(crate) plan: Plan,
    pub(crate) filter: Option<Arc<Expr>>,
    /// The pages the whole result takes from here (counted up to [`MAX_COUNTED_PAGES`]),
    /// when the query asked for them.
    pub(crate) pages: Option<u64>,
    /// Unordered (`page.next` is then `None`): where the next page starts.
    pub(crate) unordered_next: Option<UnorderedNext>,
    /// Unordered: where this page began (a page cut short continues from it).
    pub(crate) unordered_start: Option<UnorderedStart>,
    /// The query's first page (no continuation was given).
    pub(crate) first_page: bool,
    /// The most entities the page could hold (`$top`, or the 1,000-entity page limit).
    pub(crate) top: usize,
}

/// Pages counted before giving up (the count then reads `1000+`).
pub(crate) const MAX_COUNTED_PAGES: u64 = 1000;

/// A committed single-entity write.
#[derive(Debug)]
pub(crate) struct Written {
    /// The table, named as created.
    pub(crate) table: TableRef,
    pub(crate) op: WriteOp,
    pub(crate) timestamp: EdmDateTime,
}

/// The table `table` names, which must exist.
pub(crate) async fn table_info(
    store: &dyn Store,
    table: &TableRef,
) -> Result<TableInfo, ExecError> {
    store
        .get_table(table)
        .await?
        .ok_or(ExecError::Store(StoreError::TableNotFound))
}

/// The table `name` names in `scope`, which must exist, named as `scope` shows it.
pub(crate) async fn scoped_table(
    store: &dyn Store,
    scope: &Scope,
    name: impl Into<String>,
) -> Result<TableInfo, ExecError> {
    Ok(scope.shown(table_info(store, &scope.table(name)).await?))
}

/// The table as created, in `scope`'s account.
fn named(scope: &Scope, info: &TableInfo) -> TableRef {
    scope.table(info.name.as_str())
}

pub(crate) async fn query(
    store: &dyn Store,
    scope: &Scope,
    query: EntityQuery,
) -> Result<EntityPage, ExecError> {
    let plan = plan(scope, query.filter.as_ref(), query.top);
    let (first_page, top) = (matches!(query.resume, Resume::Start), query.top);
    let info = scoped_table(store, scope, query.table).await?;
    let filter = query.filter.map(Arc::new);
    let matcher = filter.clone();
    let matches = move |row: &StoredRow<'_>| eval::matches_opt(matcher.as_deref(), row);
    let limits = PageLimits {
        top: query.top,
        ..PageLimits::default()
    };
    if let ResultOrder::Unordered {
        entities: order, ..
    } = scope.order()
    {
        let after = match query.resume {
            Resume::After(key) => Some(key),
            Resume::Unreadable(e) => return Err(ExecError::Refused(e)),
            Resume::Start | Resume::Keys(..) => None,
        };
        let start = UnorderedStart {
            order,
            after: after.clone(),
        };
        let page = if plan.ranges.is_empty() {
            UnorderedPage::default()
        } else {
            let job = UnorderedPageRead::new(plan.ranges.clone(), matches, order, after, query.top)
                .with_max_bytes(COSMOS_MAX_PAGE_BYTES);
            read_with(store, info.id, job).await?.into_page()
        };
        return Ok(EntityPage {
            table: named(scope, &info),
            page: RawPage {
                rows: page.rows,
                next: None,
                examined: page.examined,
            },
            plan,
            filter,
            pages: None,
            unordered_next: page.next.map(UnorderedNext::After),
            unordered_start: Some(start),
            first_page,
            top,
        });
    }
    let read = |resume: Option<(String, String)>| {
        let job = PageRead::new(plan.ranges.clone(), matches.clone(), resume, limits);
        execute_raw_page(store, info.id, job)
    };
    let resume = match query.resume {
        Resume::Keys(partition_key, row_key) => Some((partition_key, row_key)),
        Resume::Start | Resume::After(_) | Resume::Unreadable(_) => None,
    };
    let page = read(resume).await?;
    let pages = match query.count_pages {
        true => Some(count_pages(&page, read).await?),
        false => None,
    };
    Ok(EntityPage {
        table: named(scope, &info),
        page,
        plan,
        filter,
        pages,
        unordered_next: None,
        unordered_start: None,
        first_page,
        top,
    })
}

/// The plan for `filter`, narrowed to what the caller may read and how much it asked for.
fn plan(scope: &Scope, filter: Option<&Expr>, top: usize) -> Plan {
    let mut plan = plan_entities(filter);
    // A SAS with a key range sees only its range: read only the planned ranges' overlap.
    if let Some(sas) = scope.key_range() {
        plan.ranges = plan
            .ranges
            .iter()
            .filter_map(|r| r.intersect(&sas))
            .collect();
    }
    if top == 0 {
        // `$top=0`: an empty page with no continuation (a continuation would point back at
        // the same place, and a client paging on it would never finish).
        plan.ranges.clear();
    }
    plan
}

/// The pages of a result from `first` on, reading each page after it (up to
/// [`MAX_COUNTED_PAGES`]).
async fn count_pages<F, R>(first: &RawPage, read: R) -> Result<u64, ExecError>
where
    R: Fn(Option<(String, String)>) -> F,
    F: std::future::Future<Output = Result<RawPage, StoreError>>,
{
    let (mut n, mut next) = (1u64, first.next.clone());
    while let Some(at) = next.filter(|_| n < MAX_COUNTED_PAGES) {
        next = read(Some(at)).await?.next;
        n += 1;
    }
    Ok(n)
}

/// Get Entity: the entity, if it exists and passes `filter`.
pub(crate) async fn get(
    store: &dyn Store,
    scope: &Scope,
    entity: EntityRef,
    filter: Result<Option<Expr>, ApiError>,
) -> Result<(TableRef, Entity), ExecError> {
    scope.check_key(&entity.partition_key, &entity.row_key)?;
    let filter = filter.map_err(ExecError::Refused)?;
    let (info, found) = read(store, scope, &entity).await?;
    // [emu] `$filter` on a point query is an extra predicate: an entity it rejects is
    // answered like a missing one (the swagger accepts the parameter; Azure's use is unknown).
    let found = found
        .filter(|e| eval::matches_opt(filter.as_ref(), e))
        .ok_or(ExecError::ResourceNotFound)?;
    Ok((named(scope, &info), found))
}

/// The table a point read names and, if it exists, the entity.
pub(crate) async fn read(
    store: &dyn Store,
    scope: &Scope,
    entity: &EntityRef,
) -> Result<(TableInfo, Option<Entity>), ExecError> {
    let info = scoped_table(store, scope, entity.table.as_str()).await?;
    let found = store
        .get_entity(info.id, &entity.partition_key, &entity.row_key)
        .await?;
    Ok((info, found))
}

/// One write to `table`, committed as durably as the store promises.
pub(crate) async fn write(
    store: &dyn Store,
    scope: &Scope,
    table: String,
    op: WriteOp,
) -> Result<Written, ExecError> {
    scope.check_key(&op.key.partition_key, &op.key.row_key)?;
    let info = scoped_table(store, scope, table).await?;
    let stamps = store
        .commit(info.id, std::slice::from_ref(&op))
        .await
        .map_err(|e| e.error)?;
    let timestamp = stamps
        .first()
        .copied()
        .ok_or(ExecError::Contract("a commit returned no Timestamp"))?;
    Ok(Written {
        table: named(scope, &info),
        op,
        timestamp,
    })
}
