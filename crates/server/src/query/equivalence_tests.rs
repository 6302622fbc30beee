//! Property test: for random tables and random filters, planning + paged execution (tiny pages,
//! tiny scan budgets, so every page boundary and union-of-ranges resume is exercised) returns
//! exactly what evaluating the filter on every entity returns — same entities, key order, no
//! duplicates.

use proptest::prelude::*;

use super::plan::plan_entities;
use super::split::Split;
use super::{eval, read_page, PageLimits};
use crate::model::edm::compare_ordinal;
use crate::model::{EdmValue, Entity, EntityKey, IfMatch, Property, TableRef, WriteKind, WriteOp};
use crate::protocol::filter::{parse, CmpOp, Expr, MAX_COMPARISONS};
use crate::store::kv::memory::MemoryKv;
use crate::store::{block_on, Durability, KeyRange, KvStore, RowSource, Store, TableId};

/// Keys from a small alphabet so filters hit them often; includes the empty key, a quote,
/// non-ASCII and a character whose UTF-16 order differs from its code-point order.
const KEYS: &[&str] = &[
    "",
    "a",
    "aa",
    "ab",
    "b",
    "a'b",
    "é",
    "\u{FF21}",
    "\u{1F600}",
    "z",
];

pub(super) fn arb_key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS).prop_map(str::to_string)
}

fn arb_value() -> impl Strategy<Value = EdmValue> {
    prop_oneof![
        (-3i32..3).prop_map(EdmValue::Int32),
        (-3i64..3).prop_map(EdmValue::Int64),
        (-3i32..3).prop_map(|d| EdmValue::Double(f64::from(d) / 2.0)),
        arb_key().prop_map(EdmValue::String),
        any::<bool>().prop_map(EdmValue::Boolean),
    ]
}

pub(super) type RawEntity = (String, String, Vec<(String, EdmValue)>);

pub(super) fn arb_entity() -> impl Strategy<Value = RawEntity> {
    let props = prop::collection::vec(
        (prop::sample::select(&["N", "X", "S"][..]), arb_value()),
        0..3,
    )
    .prop_map(first_of_each_name);
    (arb_key(), arb_key(), props)
}

/// Keeps the first property of each name (an entity has each property once).
pub(super) fn first_of_each_name(props: Vec<(&str, EdmValue)>) -> Vec<(String, EdmValue)> {
    let mut out: Vec<(String, EdmValue)> = Vec::new();
    for (name, value) in props {
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.to_string(), value));
        }
    }
    out
}

fn arb_op() -> impl Strategy<Value = CmpOp> {
    prop::sample::select(
        &[
            CmpOp::Eq,
            CmpOp::Ne,
            CmpOp::Gt,
            CmpOp::Ge,
            CmpOp::Lt,
            CmpOp::Le,
        ][..],
    )
}

pub(super) fn arb_filter() -> impl Strategy<Value = Expr> {
    let key_literal = prop_oneof![
        8 => arb_key().prop_map(EdmValue::String),
        1 => (0i32..2).prop_map(EdmValue::Int32),
    ];
    let key_cmp = (
        prop::sample::select(&["PartitionKey", "RowKey"][..]),
        arb_op(),
        key_literal,
    )
        .prop_map(|(p, op, v)| Expr::compare(p, op, v));
    let prop_cmp = (
        prop::sample::select(&["N", "X", "S", "Missing"][..]),
        arb_op(),
        arb_value(),
    )
        .prop_map(|(p, op, v)| Expr::compare(p, op, v));
    let leaf = prop_oneof![
        6 => key_cmp,
        2 => prop_cmp,
        1 => any::<bool>().prop_map(Expr::Const),
    ];
    leaf.prop_recursive(4, 15, 2, |inner| {
        prop_oneof![
            1 => inner.clone().prop_map(Expr::not),
            2 => (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::and(a, b)),
            2 => (inner.clone(), inner).prop_map(|(a, b)| Expr::or(a, b)),
        ]
    })
}

fn key_of(e: &Entity) -> (String, String) {
    (e.partition_key.clone(), e.row_key.clone())
}

fn load(entities: &[RawEntity]) -> (std::sync::Arc<KvStore<MemoryKv>>, TableId) {
    let store = KvStore::open(MemoryKv::new(), Durability::Relaxed).expect("memory store");
    let table = block_on(load_into(&*store, "equiv", entities));
    (store, table)
}

/// Creates table `name` in `store` and writes `entities` into it, one InsertOrReplace each.
pub(super) async fn load_into(store: &dyn Store, name: &str, entities: &[RawEntity]) -> TableId {
    let table = store
        .create_table(&TableRef::new("acct", name))
        .await
        .expect("table")
        .id;
    for (pk, rk, props) in entities {
        let op = WriteOp {
            limits: Default::default(),
            kind: WriteKind::InsertOrReplace,
            key: EntityKey {
                partition_key: pk.clone(),
                row_key: rk.clone(),
            },
            properties: props
                .iter()
                .map(|(n, v)| Property {
                    name: n.clone(),
                    value: v.clone(),
                })
                .collect(),
            if_match: IfMatch::Any,
        };
        store.commit(table, &[op]).await.expect("insert");
    }
    table
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn planned_paged_equals_naive(
        entities in prop::collection::vec(arb_entity(), 0..30),
        filter in arb_filter(),
        top in 1usize..4,
        max_examined in 1u64..5,
    ) {
        prop_assume!(filter.comparison_count() <= MAX_COMPARISONS);
        // Go through the text form, as a request does.
        let text = filter.to_string();
        let expr = parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e:?}")))?;
        let (store, table) = load(&entities);

        let rows = store.rows(table);
        let mut all: Vec<Entity> = Vec::new();
        rows.scan_raw(&KeyRange::all(), &mut |row| {
            all.push(row.view().expect("entity").into_entity());
            true
        })
        .map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        for w in all.windows(2) {
            let order = compare_ordinal(&w[0].partition_key, &w[1].partition_key)
                .then_with(|| compare_ordinal(&w[0].row_key, &w[1].row_key));
            prop_assert_eq!(order, std::cmp::Ordering::Less);
        }
        let expected: Vec<_> = all.iter().filter(|e| eval::matches(&expr, *e)).map(key_of).collect();

        let plan = plan_entities(Some(&expr));
        let limits = PageLimits { top, max_examined, ..PageLimits::default() };
        let mut got = Vec::new();
        let mut resume: Option<(String, String)> = None;
        let mut pages = 0;
        loop {
            let page = read_page(
                &rows,
                &plan.ranges,
                &|e| eval::matches(&expr, e),
                resume.as_ref().map(|(p, r)| (p.as_str(), r.as_str())),
                limits,
                Split::IfCoreFree,
            ).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            prop_assert!(page.rows.len() <= top);
            got.extend(page.rows.iter().map(|row| row.keys().expect("keys")));
            pages += 1;
            prop_assert!(pages < 1000, "paging does not terminate");
            match page.next {
                Some(next) => resume = Some(next),
                None => break,
            }
        }
        prop_assert_eq!(got, expected, "filter {} plan {} ranges {:?}", text, plan, plan.ranges);
    }
}
