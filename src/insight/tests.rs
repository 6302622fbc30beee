//! Each advice rule triggered by a scenario and left quiet by its good-design twin, and the
//! statistics' memory bound. Time is injected (seconds since start), so rates are exact.

use super::stats::{Stats, HOT_PARTITIONS, MAX_TABLES};
use super::*;
use crate::model::{EdmValue, EntityKey, IfMatch, Property};

fn op(kind: WriteKind, pk: &str, rk: &str, properties: Vec<Property>) -> WriteOp {
    WriteOp {
        kind,
        key: EntityKey {
            partition_key: pk.to_string(),
            row_key: rk.to_string(),
        },
        properties,
        if_match: IfMatch::Any,
    }
}

fn insert(pk: &str, rk: &str) -> Observation {
    Observation::writes(
        "acct",
        "t",
        &[op(WriteKind::Insert, pk, rk, vec![prop("V", "x")])],
        None,
    )
}

fn prop(name: &str, value: &str) -> Property {
    Property {
        name: name.to_string(),
        value: EdmValue::String(value.to_string()),
    }
}

fn query(class: QueryClass, examined: u64, returned: u64, props: &[&str]) -> Observation {
    let partition = matches!(
        class,
        QueryClass::Point | QueryClass::Range | QueryClass::PartitionScan
    )
    .then(|| "Sales".to_string());
    Observation::query(
        "acct",
        "t",
        class,
        examined,
        returned,
        partition,
        props.iter().map(|p| p.to_string()).collect(),
    )
}

fn rules(stats: &Stats) -> Vec<Rule> {
    stats
        .active_advice()
        .into_iter()
        .map(|(_, _, r)| r)
        .collect()
}

/// Runs `scenario` on fresh statistics and returns the rules that fired.
fn fired(scenario: impl FnOnce(&mut Stats)) -> Vec<Rule> {
    let mut s = Stats::default();
    scenario(&mut s);
    rules(&s)
}

#[test]
fn table_scan_over_a_large_table_and_its_twin() {
    // Scenario: `LastName eq 'Jones'` reads 100,000 entities to return 12.
    let bad = fired(|s| {
        s.observe(&query(QueryClass::TableScan, 100_000, 12, &["LastName"]), 0);
    });
    assert_eq!(bad, vec![Rule::TableScan]);
    // Twin: the same lookup through an index entity is a point query; and reading a small
    // reference table whole (the guide's "cache in the client") is fine.
    let good = fired(|s| {
        s.observe(&query(QueryClass::Point, 1, 1, &[]), 0);
        s.observe(&query(QueryClass::TableScan, 300, 300, &[]), 0);
    });
    assert!(good.is_empty(), "{good:?}");
}

#[test]
fn partition_scans_on_one_property_and_their_twin() {
    let bad = fired(|s| {
        for i in 0..5 {
            s.observe(&query(QueryClass::PartitionScan, 500, 1, &["Email"]), i);
        }
    });
    assert_eq!(bad, vec![Rule::PartitionScanOnProperty]);
    // Twin: the intra-partition index (`RowKey ge 'email_a' and RowKey lt 'email_b'`) is a
    // range query; a partition scan that keeps most of what it reads is not flagged either.
    let good = fired(|s| {
        for i in 0..20 {
            s.observe(&query(QueryClass::Range, 3, 3, &[]), i);
            s.observe(&query(QueryClass::PartitionScan, 500, 400, &["Email"]), i);
        }
    });
    assert!(good.is_empty(), "{good:?}");
    // Four repeats are not yet a pattern.
    let few = fired(|s| {
        for i in 0..4 {
            s.observe(&query(QueryClass::PartitionScan, 500, 1, &["Email"]), i);
        }
    });
    assert!(few.is_empty());
}

#[test]
fn append_only_inserts_and_their_twin() {
    // Scenario: PartitionKey = the current minute, always the last partition.
    let bad = fired(|s| {
        for i in 0..600u64 {
            s.observe(
                &insert(&format!("2026-11-25T18:{:02}", i / 60), &i.to_string()),
                i,
            );
        }
    });
    assert_eq!(bad, vec![Rule::PrependAppend]);
    // Twin: compound PartitionKey (department + employee id) in arrival order that is not
    // key order; the time order lives in the RowKey.
    let good = fired(|s| {
        for i in 0..600u64 {
            let employee = (i * 7919) % 100;
            s.observe(
                &insert(&format!("Sales_{employee:03}"), &format!("{i:08}")),
                i,
            );
        }
    });
    assert!(good.is_empty(), "{good:?}");
}

#[test]
fn hot_partition_and_its_twin() {
    // Scenario: 2,100 inserts into one partition within one second.
    let bad = fired(|s| {
        for i in 0..2100 {
            s.observe(&insert("hot", &format!("{i:06}")), 7);
        }
    });
    assert!(bad.contains(&Rule::HotPartition), "{bad:?}");
    // Twin: the same 2,100 entities per second over 10 partitions (210 each), for 3 seconds.
    let good = fired(|s| {
        for second in 0..3 {
            for i in 0..2100u64 {
                let pk = format!("p{}", (i * 7) % 10);
                s.observe(&insert(&pk, &format!("{second}-{i:06}")), second);
            }
        }
    });
    assert!(!good.contains(&Rule::HotPartition), "{good:?}");
}

#[test]
fn account_target_and_its_twin() {
    let bad = fired(|s| {
        for _ in 0..20_001 {
            s.transaction("acct", 3);
        }
    });
    assert_eq!(bad, vec![Rule::AccountTarget]);
    let good = fired(|s| {
        for second in 0..3 {
            for _ in 0..15_000 {
                s.transaction("acct", second);
            }
        }
    });
    assert!(good.is_empty());
}

#[test]
fn large_and_wide_entities_and_their_twins() {
    let big = "x".repeat(480 * 1024); // 960 KiB by the UTF-16 formula
    let bad = fired(|s| {
        s.observe(
            &Observation::writes(
                "acct",
                "t",
                &[op(WriteKind::Insert, "p", "1", vec![prop("Photo", &big)])],
                None,
            ),
            0,
        );
        let wide: Vec<Property> = (0..230).map(|i| prop(&format!("D{i:03}"), "1")).collect();
        s.observe(
            &Observation::writes("acct", "t", &[op(WriteKind::Insert, "p", "2", wide)], None),
            0,
        );
    });
    assert_eq!(bad, vec![Rule::LargeEntity, Rule::WideEntity]);
    // Twins: the photo's blob address instead of the photo; 365 counters split over two
    // entities of 183 and 182 properties (the wide entities pattern).
    let good = fired(|s| {
        s.observe(
            &Observation::writes(
                "acct",
                "t",
                &[op(
                    WriteKind::Insert,
                    "p",
                    "1",
                    vec![prop(
                        "PhotoUrl",
                        "https://example.blob.core.windows.net/p/1.jpg",
                    )],
                )],
                None,
            ),
            0,
        );
        for (rk, n) in [("01", 183), ("02", 182)] {
            let part: Vec<Property> = (0..n).map(|i| prop(&format!("D{i:03}"), "1")).collect();
            s.observe(
                &Observation::writes("acct", "t", &[op(WriteKind::Insert, "p", rk, part)], None),
                0,
            );
        }
    });
    assert!(good.is_empty(), "{good:?}");
}

#[test]
fn large_batches_and_their_twin() {
    let batch = |n: usize, bytes: usize| {
        let ops: Vec<WriteOp> = (0..n)
            .map(|i| op(WriteKind::InsertOrReplace, &format!("p{i}"), "r", vec![]))
            .collect();
        Observation::writes(
            "acct",
            "t",
            &ops,
            Some(BatchFacts {
                operations: n,
                body_bytes: bytes,
            }),
        )
    };
    assert_eq!(
        fired(|s| {
            s.observe(&batch(95, 60_000), 0);
        }),
        vec![Rule::LargeBatch]
    );
    assert_eq!(
        fired(|s| {
            s.observe(&batch(10, 3_900_000), 0);
        }),
        vec![Rule::LargeBatch]
    );
    assert!(fired(|s| {
        s.observe(&batch(20, 20_000), 0);
    })
    .is_empty());
}

#[test]
fn examined_far_more_than_returned_and_its_twin() {
    // A range query whose non-key filter discards almost everything it reads.
    let bad = fired(|s| {
        s.observe(&query(QueryClass::Range, 5000, 3, &["Amount"]), 0);
    });
    assert_eq!(bad, vec![Rule::ExaminedFarMoreThanReturned]);
    // Twin: the selective part is in the RowKey (compound key), so the range is the answer.
    let good = fired(|s| {
        s.observe(&query(QueryClass::Range, 3, 3, &[]), 0);
        s.observe(&query(QueryClass::Range, 5000, 1500, &["Amount"]), 0);
    });
    assert!(good.is_empty(), "{good:?}");
}

#[test]
fn advice_is_reported_once_per_table_and_rule() {
    let mut s = Stats::default();
    let first = s.observe(&query(QueryClass::TableScan, 10_000, 1, &["A"]), 0);
    assert_eq!(first.len(), 1);
    for i in 1..100 {
        assert!(s
            .observe(&query(QueryClass::TableScan, 10_000, 1, &["A"]), i)
            .is_empty());
    }
    let other_table = Observation {
        table: "other".into(),
        ..query(QueryClass::TableScan, 10_000, 1, &["A"])
    };
    assert_eq!(s.observe(&other_table, 100).len(), 1);
    let snap = s.snapshot(100, None);
    let advice = &snap["accounts"]["acct"]["tables"][1]["advice"][0];
    assert_eq!(advice["id"], "table-scan");
    assert_eq!(advice["count"], 100);
    assert_eq!(
        advice["guide_section"],
        Rule::TableScan.info().guide_section
    );
}

#[test]
fn memory_stays_bounded_under_a_million_partitions() {
    let mut s = Stats::default();
    // One million distinct partitions in one table, and a hot one among them.
    for i in 0..1_000_000u64 {
        s.observe(&insert(&format!("partition-{i:07}"), "r"), i / 10_000);
        if i % 10 == 0 {
            s.observe(&insert("the-hot-one", &i.to_string()), i / 10_000);
        }
    }
    let (tables, key_bytes) = s.footprint();
    assert_eq!(tables, 1);
    // Per table: HOT_PARTITIONS + 16 + 16 + 2 keys of at most ~131 bytes each.
    assert!(
        key_bytes <= (HOT_PARTITIONS + 34) * 131,
        "{key_bytes} bytes of keys"
    );
    let snap = s.snapshot(100, None);
    let hot = &snap["accounts"]["acct"]["tables"][0]["hot_partitions"];
    assert_eq!(hot.as_array().map(Vec::len), Some(HOT_PARTITIONS));
    assert_eq!(hot[0]["partition_key"], "the-hot-one");
    // And a million distinct tables are capped too.
    let mut s = Stats::default();
    for i in 0..(MAX_TABLES as u64 * 3) {
        let o = Observation {
            table: format!("t{i}"),
            ..insert("p", "r")
        };
        s.observe(&o, 0);
    }
    assert_eq!(s.footprint().0, MAX_TABLES);
}

#[test]
fn the_handle_counts_reports_off_the_request_path() {
    let insight = Insight::start();
    for _ in 0..3 {
        insight.report(Report {
            operation: "QueryEntities",
            status: 200,
            latency: Duration::from_millis(2),
            account: Some("acct".into()),
            observation: Some(query(QueryClass::TableScan, 5000, 5, &["X"])),
        });
    }
    assert!(insight.settle(Duration::from_secs(5)));
    let snap = insight.snapshot(Some("acct"));
    assert_eq!(
        snap["accounts"]["acct"]["tables"][0]["queries"]["table scan"],
        3
    );
    let store = crate::store::Footprint {
        entities: 7,
        logical_bytes: 5000,
        disk_bytes: Some(1234),
    };
    let text = insight.metrics(4, Some(store));
    assert!(
        text.contains("tablestore_queries_total{class=\"table_scan\"} 3"),
        "{text}"
    );
    assert!(
        text.contains("tablestore_group_commit_flushes_total 4"),
        "{text}"
    );
    assert!(text.contains("tablestore_store_size_bytes 1234"), "{text}");
    assert!(
        text.contains("tablestore_store_logical_bytes 5000"),
        "{text}"
    );
    assert!(text.contains("tablestore_store_entities 7"), "{text}");
    // A store that keeps no count: zeros, not stale values.
    let text = insight.metrics(4, None);
    assert!(text.contains("tablestore_store_size_bytes 0"), "{text}");
    assert!(text.contains("tablestore_store_logical_bytes 0"), "{text}");
    assert!(text
        .contains("tablestore_requests_total{operation=\"QueryEntities\",status_class=\"2xx\"} 3"));
}
