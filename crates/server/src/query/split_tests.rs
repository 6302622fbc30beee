//! Property test: a page read on two threads ([`super::split`]) is the page the plain scan
//! reads — same rows, continuation and examined count — for random tables (many partitions,
//! so ranges split), random filters, page sizes and scan budgets, page after page, over the
//! memory store and the RAM tier.

use proptest::prelude::*;

use super::equivalence_tests::{arb_filter, arb_key, first_of_each_name, load_into, RawEntity};
use super::plan::plan_entities;
use super::split::Split;
use super::{eval, read_page, PageLimits, RawPage};
use crate::model::EdmValue;
use crate::protocol::filter::{parse, Expr, MAX_COMPARISONS};
use crate::store::kv::memory::MemoryKv;
use crate::store::tier::{TierOptions, TieredKv};
use crate::store::{block_on, Durability, KeyRange, KvStore, RowSource, Store};

/// Entities over many partitions (so ranges split) with Int32 and String properties.
fn arb_row() -> impl Strategy<Value = RawEntity> {
    let partition = prop_oneof![(0u8..12).prop_map(|p| format!("p{p:02}")), arb_key(),];
    let value = prop_oneof![
        (-3i32..3).prop_map(EdmValue::Int32),
        arb_key().prop_map(EdmValue::String),
    ];
    (
        partition,
        arb_key(),
        prop::collection::vec((prop::sample::select(&["N", "X", "S"][..]), value), 0..3)
            .prop_map(first_of_each_name),
    )
}

/// A page as comparable data: rows' keys and values, continuation, examined count.
type Seen = (
    Vec<(String, String, Vec<u8>)>,
    Option<(String, String)>,
    u64,
);

fn seen(page: &RawPage) -> Seen {
    let rows = page
        .rows
        .iter()
        .map(|row| {
            let (pk, rk) = row.keys().expect("keys");
            let view = row.view().expect("view");
            (pk, rk, format!("{:?}", view.properties).into_bytes())
        })
        .collect();
    (rows, page.next.clone(), page.examined)
}

/// Every page of the query both ways; fails on the first page that differs.
fn compare_pages(
    rows: &dyn RowSource,
    ranges: &[KeyRange],
    expr: Option<&Expr>,
    limits: PageLimits,
) -> Result<usize, TestCaseError> {
    let matches = |row: &crate::store::StoredRow<'_>| eval::matches_opt(expr, row);
    let mut resume: Option<(String, String)> = None;
    let mut pages = 0;
    loop {
        let at = resume.as_ref().map(|(p, r)| (p.as_str(), r.as_str()));
        let plain = read_page(rows, ranges, &matches, at, limits, Split::Never)
            .map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        let split = read_page(rows, ranges, &matches, at, limits, Split::Always(2))
            .map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        prop_assert_eq!(
            seen(&split),
            seen(&plain),
            "page {} from {:?}",
            pages,
            resume
        );
        pages += 1;
        prop_assert!(pages < 2000, "paging does not terminate");
        match plain.next {
            Some(next) => resume = Some(next),
            None => return Ok(pages),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn split_pages_equal_plain_pages(
        rows in prop::collection::vec(arb_row(), 0..80),
        filter in prop::option::of(arb_filter()),
        top in 1usize..8,
        max_examined in 1u64..40,
        tiered in any::<bool>(),
    ) {
        let expr = match &filter {
            Some(f) => {
                prop_assume!(f.comparison_count() <= MAX_COMPARISONS);
                let text = f.to_string();
                Some(parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e:?}")))?)
            }
            None => None,
        };
        let rows: Box<dyn RowSource> = if tiered {
            let tier = TieredKv::new(
                MemoryKv::new(),
                TierOptions { background: false, ..TierOptions::with_budget_mib(64) },
            );
            let store = KvStore::open(tier, Durability::Relaxed).expect("store");
            let table = block_on(load_into(&*store, "split", &rows));
            Box::new(store.rows(table))
        } else {
            let store = KvStore::open(MemoryKv::new(), Durability::Relaxed).expect("store");
            let table = block_on(load_into(&*store, "split", &rows));
            Box::new(store.rows(table))
        };
        let limits = PageLimits { top, max_examined, ..PageLimits::default() };
        let planned = plan_entities(expr.as_ref()).ranges;
        compare_pages(&*rows, &planned, expr.as_ref(), limits)?;
        compare_pages(&*rows, &[KeyRange::all()], expr.as_ref(), limits)?;
        // Whole pages too: no page budget, the most rows a page returns.
        compare_pages(&*rows, &[KeyRange::all()], expr.as_ref(), PageLimits::default())?;
    }
}

#[test]
fn a_large_range_splits_at_a_partition_start_and_a_partition_does_not() {
    let store = KvStore::open(MemoryKv::new(), Durability::Relaxed).expect("store");
    let rows: Vec<_> = (0..40)
        .map(|i| (format!("p{:02}", i / 4), format!("r{i:02}"), Vec::new()))
        .collect();
    let table = block_on(load_into(&*store, "split", &rows));
    let middle = store
        .rows(table)
        .split_point(&KeyRange::all(), 8)
        .expect("a split point");
    assert!(
        middle.as_str() > "p00" && middle.as_str() <= "p09",
        "{middle}"
    );
    assert_eq!(
        store.rows(table).split_point(&KeyRange::all(), 41),
        None,
        "too few rows"
    );
    assert_eq!(
        store
            .rows(table)
            .split_point(&KeyRange::partition("p03"), 2),
        None
    );
    let tier = TieredKv::new(
        MemoryKv::new(),
        TierOptions {
            background: false,
            ..TierOptions::with_budget_mib(64)
        },
    );
    let tiered = KvStore::open(tier, Durability::Relaxed).expect("store");
    let table = block_on(async {
        let table = load_into(&*tiered, "split", &rows).await;
        // Resident once read; then it splits like the memory store.
        let _ = tiered.get_entity(table, "p00", "r00").await;
        table
    });
    assert_eq!(
        tiered.rows(table).split_point(&KeyRange::all(), 8),
        Some(middle)
    );
}
