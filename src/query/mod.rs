//! Runs queries against the store: key ranges in order, a residual predicate, a page size,
//! continuation from any key this server issued, and a bound on how much one page may scan.
//! [`plan`] turns a parsed `$filter` into the ranges to read, [`eval`] decides whether a row
//! matches; this module executes pages. A page of entities is a [`PageRead`]: a synchronous
//! job over the table's rows that the store runs on the blocking pool, consistently
//! ([`Store::read`]). Depends on `model`, the filter AST of `protocol` and the `store`
//! contract, never on `server`.

pub mod eval;
pub mod plan;
mod split;
pub(crate) mod unordered;

use std::time::{Duration, Instant};

use crate::model::names::{is_case_sensitive_identity, name_of_identity, NameCase};
use crate::model::TableRef;
use crate::protocol::filter::Expr;
use crate::store::{
    read_with, KeyRange, ReadJob, RowSource, Store, StoreError, StoredRow, StoredRows, TableId,
    TableInfo,
};

/// Limits on one page of results.
#[derive(Debug, Clone, Copy)]
pub struct PageLimits {
    /// Most entities returned (0..=1000; the handler answers 0 without reading).
    pub(crate) top: usize,
    /// Most entities examined before the page ends early with a continuation token (Azure
    /// ends a page after 5 s of work; a count keeps our pages predictable).
    pub(crate) max_examined: u64,
    /// Wall-clock bound on one page's scan.
    pub(crate) max_duration: Duration,
}

impl Default for PageLimits {
    fn default() -> Self {
        PageLimits {
            top: 1000,
            max_examined: 1_000_000,
            max_duration: Duration::from_secs(2),
        }
    }
}

/// One page of a query with its matching entities as stored (key and value bytes), for a
/// caller that encodes them straight from the bytes instead of decoding them.
#[derive(Debug, Default)]
pub struct RawPage {
    pub rows: StoredRows,
    /// Where the next page starts (PartitionKey, RowKey), if more entities may match.
    pub(crate) next: Option<(String, String)>,
    /// Entities read from the store for this page (including the look-ahead).
    pub examined: u64,
}

/// A row predicate that scan threads share.
pub(crate) type Matcher<'a> = dyn Fn(&StoredRow<'_>) -> bool + Sync + 'a;

/// One page of a query as a read job: reads `ranges` (sorted, non-overlapping) in order
/// starting at `resume`, keeps the rows for which `matches` holds, as stored. Rows are
/// tested in place on their stored bytes and never decoded here. A large range read from RAM
/// may be scanned in two halves at once when a core is free ([`split`]); the page is the
/// same either way.
pub struct PageRead<M> {
    ranges: Vec<KeyRange>,
    matches: M,
    resume: Option<(String, String)>,
    limits: PageLimits,
    page: RawPage,
}

impl<M> PageRead<M>
where
    M: Fn(&StoredRow<'_>) -> bool + Send + Sync + 'static,
{
    pub fn new(
        ranges: Vec<KeyRange>,
        matches: M,
        resume: Option<(String, String)>,
        limits: PageLimits,
    ) -> PageRead<M> {
        PageRead {
            ranges,
            matches,
            resume,
            limits,
            page: RawPage::default(),
        }
    }

    /// The page the last run read.
    pub(crate) fn into_page(self) -> RawPage {
        self.page
    }
}

impl<M> ReadJob for PageRead<M>
where
    M: Fn(&StoredRow<'_>) -> bool + Send + Sync + 'static,
{
    fn run(&mut self, rows: &dyn RowSource) -> Result<(), StoreError> {
        let resume = self.resume.as_ref().map(|(p, r)| (p.as_str(), r.as_str()));
        self.page = read_page(
            rows,
            &self.ranges,
            &self.matches,
            resume,
            self.limits,
            split::Split::IfCoreFree,
        )?;
        Ok(())
    }
}

/// Executes one page of a query on `table` (see [`PageRead`]); the store runs it so that it
/// sees each change set whole or not at all.
pub async fn execute_raw_page<M>(
    store: &dyn Store,
    table: TableId,
    read: PageRead<M>,
) -> Result<RawPage, StoreError>
where
    M: Fn(&StoredRow<'_>) -> bool + Send + Sync + 'static,
{
    if read.ranges.is_empty() {
        // Nothing to read (`$top=0`, or a SAS range that leaves none of the plan).
        return Ok(RawPage::default());
    }
    Ok(read_with(store, table, read).await?.into_page())
}

/// Reads one page from `rows` (the body of [`PageRead`], which the store may run again).
fn read_page(
    rows: &dyn RowSource,
    ranges: &[KeyRange],
    matches: &Matcher<'_>,
    resume: Option<(&str, &str)>,
    limits: PageLimits,
    split: split::Split,
) -> Result<RawPage, StoreError> {
    let mut builder = PageBuilder::new(limits);
    for range in ranges {
        let range = match resume {
            Some((pk, rk)) => match range.resume_from(pk, rk) {
                Some(r) => r,
                None => continue,
            },
            None => range.clone(),
        };
        if !split::scan_split(rows, &range, matches, &mut builder, split)? {
            builder.scan(rows, &range, matches)?;
        }
        if builder.done {
            break;
        }
    }
    Ok(builder.page)
}

/// A page being filled, one row after another, with the page's limits.
struct PageBuilder {
    page: RawPage,
    limits: PageLimits,
    started: Instant,
    /// The page is complete (`page.next` is set).
    done: bool,
}

impl PageBuilder {
    fn new(limits: PageLimits) -> PageBuilder {
        PageBuilder {
            page: RawPage::default(),
            limits,
            started: Instant::now(),
            done: false,
        }
    }

    /// Reads `range` in order until the page is complete or the range ends.
    fn scan(
        &mut self,
        rows: &dyn RowSource,
        range: &KeyRange,
        matches: &Matcher<'_>,
    ) -> Result<(), StoreError> {
        let mut failure = None;
        rows.scan_raw(range, &mut |row| match self.offer(&row, matches) {
            Ok(more) => more,
            Err(e) => {
                failure = Some(e);
                false
            }
        })?;
        failure.map_or(Ok(()), Err)
    }

    /// Takes the next row in key order; false once the page is complete.
    fn offer(&mut self, row: &StoredRow<'_>, matches: &Matcher<'_>) -> Result<bool, StoreError> {
        let page = &mut self.page;
        page.examined += 1;
        // Look-ahead: the first entity after a full page is where the next page starts;
        // so is the first one past the scan budget.
        let filled = page.rows.len() >= self.limits.top;
        let over_budget = page.examined > self.limits.max_examined
            || (page.examined.is_multiple_of(256)
                && self.started.elapsed() > self.limits.max_duration);
        if filled || over_budget {
            page.next = Some(row.keys()?);
            self.done = true;
            return Ok(false);
        }
        if matches(row) {
            page.rows.push(row);
        }
        Ok(true)
    }
}

/// One page of Query Tables.
#[derive(Debug, Default)]
pub struct TablePage {
    /// Names with the casing used at creation.
    pub(crate) names: Vec<String>,
    /// Lower-cased name of the table the next page starts at.
    pub(crate) next: Option<String>,
    /// Tables read from the store for this page.
    pub(crate) examined: u64,
    /// `scan`, `names(N)` (exact lookups), with `+filter` when a filter is applied.
    pub(crate) plan: String,
}

/// Tables read from the store at a time while a filter skips some.
const TABLE_BATCH: usize = 1000;

/// Runs a page of Query Tables: tables of `account` in identity order (the lower-cased name,
/// for every table the storage flavour creates) from `start_folded`, those matching `filter`
/// (on `TableName`), at most `top`. A filter that pins `TableName` to a few exact values is
/// answered by looking those names up. Tables are named and told apart as `case` says: a
/// case-insensitive reader does not see the tables only a case-sensitive one can address
/// (Cosmos names with capitals), and a case-sensitive reader knows each table by the name its
/// identity spells.
pub async fn execute_table_page(
    store: &dyn Store,
    account: &str,
    case: NameCase,
    filter: Option<&Expr>,
    start_folded: Option<&str>,
    top: usize,
) -> Result<TablePage, StoreError> {
    let mut page = TablePage::default();
    let after_start = |identity: &str| start_folded.is_none_or(|s| identity >= s);
    let shown = |table: TableInfo| match case {
        NameCase::Insensitive => table.name,
        NameCase::Sensitive => name_of_identity(&table.identity),
    };
    let suffix = if filter.is_some() { "+filter" } else { "" };
    if let Some(names) = plan::plan_table_names(filter) {
        page.plan = format!("names({}){suffix}", names.len());
        let mut refs: Vec<TableRef> = names
            .into_iter()
            .map(|n| TableRef::in_case(account, n, case))
            .collect();
        refs.sort_by_key(TableRef::identity);
        refs.dedup_by_key(|r| r.identity());
        for table_ref in refs.into_iter().filter(|r| after_start(&r.identity())) {
            if page.names.len() >= top {
                page.next = Some(table_ref.identity());
                break;
            }
            page.examined += 1;
            if let Some(table) = store.get_table(&table_ref).await? {
                let name = shown(table);
                if eval::matches_opt(filter, &eval::TableRow { name: &name }) {
                    page.names.push(name);
                }
            }
        }
        return Ok(page);
    }
    page.plan = format!("scan{suffix}");
    // Where the filter's `TableName` range ends: a full page continues only at a table inside
    // it. Azure sees the range is done and sends no continuation then (Go `aztables` suite,
    // recording `TestQueryTable_storage`, 2024-02-26: `TableName ge 'zzza' and TableName lt
    // 'zzzb'` with `$top=2` over zzza0…zzza3 and zzzb4 ends its second page without one).
    let range = plan::TableNameRange::of(filter);
    // Without a filter, the page and the table after it (where the next page starts) are
    // all that is read; with one, batches until the page is full or the tables end.
    let batch = if filter.is_some() {
        TABLE_BATCH
    } else {
        top + 1
    };
    let mut from = start_folded.map(str::to_string);
    // The batch after the first starts at the last table read: skip it.
    let mut skip: Option<String> = None;
    loop {
        let tables = store.list_tables(account, from.as_deref(), batch).await?;
        let complete = tables.len() < batch;
        let last = tables.last().map(|t| t.identity.clone());
        for table in tables {
            let identity = table.identity.clone();
            if skip.as_ref() == Some(&identity)
                || (case == NameCase::Insensitive && is_case_sensitive_identity(&identity))
            {
                continue;
            }
            if page.names.len() >= top {
                // Past a full page: where the next page starts, if anywhere.
                if range.admits(&shown(table)) {
                    page.next = Some(identity);
                    return Ok(page);
                }
                continue;
            }
            page.examined += 1;
            let name = shown(table);
            if eval::matches_opt(filter, &eval::TableRow { name: &name }) {
                page.names.push(name);
            }
        }
        if complete {
            return Ok(page);
        }
        skip.clone_from(&last);
        from = last;
    }
}

#[cfg(test)]
mod equivalence_tests;
#[cfg(test)]
mod split_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        EdmValue, EdmValueRef, Entity, EntityKey, EntityView, IfMatch, Property, WriteKind, WriteOp,
    };
    use crate::store::memory::MemoryKv;
    use crate::store::{Durability, KvStore};

    async fn store_with(n: usize) -> (std::sync::Arc<KvStore<MemoryKv>>, TableId) {
        let store = KvStore::open(MemoryKv::new(), Durability::Durable).unwrap();
        let t = store
            .create_table(&TableRef::new("acct", "tbl"))
            .await
            .unwrap();
        for i in 0..n {
            let op = WriteOp {
                limits: Default::default(),
                kind: WriteKind::Insert,
                key: EntityKey {
                    partition_key: format!("p{}", i % 3),
                    row_key: format!("{i:04}"),
                },
                properties: vec![Property {
                    name: "n".into(),
                    value: EdmValue::Int32(i as i32),
                }],
                if_match: IfMatch::Any,
            };
            store.commit(t.id, &[op]).await.unwrap();
        }
        (store, t.id)
    }

    async fn all_pages<M>(
        store: &dyn Store,
        table: TableId,
        ranges: &[KeyRange],
        top: usize,
        pred: M,
    ) -> (Vec<Entity>, usize)
    where
        M: Fn(&StoredRow<'_>) -> bool + Clone + Send + Sync + 'static,
    {
        let mut out = Vec::new();
        let mut resume: Option<(String, String)> = None;
        let mut pages = 0;
        loop {
            let limits = PageLimits {
                top,
                max_examined: 7,
                ..PageLimits::default()
            };
            let read = PageRead::new(ranges.to_vec(), pred.clone(), resume.take(), limits);
            let page = execute_raw_page(store, table, read).await.unwrap();
            pages += 1;
            out.extend(decoded(&page));
            match page.next {
                Some(n) => resume = Some(n),
                None => return (out, pages),
            }
        }
    }

    fn decoded(page: &RawPage) -> Vec<Entity> {
        let views = page.rows.entities().unwrap();
        views.into_iter().map(EntityView::into_entity).collect()
    }

    #[tokio::test]
    async fn pages_cover_everything_once_in_order() {
        let (store, t) = store_with(50).await;
        let (all, pages) =
            all_pages(&*store, t, &[KeyRange::all()], 4, |_: &StoredRow<'_>| true).await;
        assert_eq!(all.len(), 50);
        assert!(pages >= 13);
        let keys: Vec<_> = all
            .iter()
            .map(|e| (e.partition_key.clone(), e.row_key.clone()))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(keys, sorted);
    }

    #[tokio::test]
    async fn selective_scan_is_bounded_and_complete() {
        let (store, t) = store_with(60).await;
        let pred = |r: &StoredRow<'_>| matches!(r.property("n"), Some(EdmValueRef::Int32(n)) if n % 20 == 0);
        let (all, pages) = all_pages(&*store, t, &[KeyRange::all()], 1000, pred).await;
        assert_eq!(all.len(), 3);
        assert!(pages > 5, "pages end after max_examined entities");
    }

    #[tokio::test]
    async fn a_page_read_as_a_job_is_the_page_read_directly() {
        let (store, t) = store_with(40).await;
        let pred = |r: &StoredRow<'_>| matches!(r.property("n"), Some(EdmValueRef::Int32(n)) if n % 3 == 0);
        let limits = PageLimits {
            top: 5,
            ..PageLimits::default()
        };
        let direct = read_page(
            &store.rows(t),
            &[KeyRange::all()],
            &pred,
            None,
            limits,
            split::Split::Never,
        )
        .unwrap();
        let job = execute_raw_page(
            &*store,
            t,
            PageRead::new(vec![KeyRange::all()], pred, None, limits),
        )
        .await
        .unwrap();
        assert_eq!(job.next, direct.next);
        assert_eq!(job.examined, direct.examined);
        let (views, expected) = (job.rows.entities().unwrap(), decoded(&direct));
        assert_eq!(views.len(), 5);
        for (view, entity) in views.iter().zip(&expected) {
            let expected = EntityView::of(entity);
            assert_eq!(view.partition_key, expected.partition_key);
            assert_eq!(view.row_key, expected.row_key);
            assert_eq!(view.timestamp, expected.timestamp);
            assert_eq!(view.properties, expected.properties);
        }
    }

    #[tokio::test]
    async fn union_of_ranges() {
        let (store, t) = store_with(30).await;
        let ranges = [
            KeyRange::point("p0", "0003"),
            KeyRange::point("p2", "0005"),
            KeyRange::partition("zz"),
        ];
        let (all, _) = all_pages(&*store, t, &ranges, 1, |_: &StoredRow<'_>| true).await;
        let keys: Vec<_> = all.iter().map(|e| e.row_key.as_str()).collect();
        assert_eq!(keys, vec!["0003", "0005"]);
    }
}
