//! Each advice rule triggered by its scenario (and by nothing else) and left quiet by its
//! good-design twin; the precision suite: ordinary workloads that raise no advice at all; and
//! the statistics' memory bound. Time is injected (seconds since start), so rates are exact.

use super::advice::Rule;
use super::stats::{Stats, HOT_PARTITIONS, MAX_TABLES};
use super::*;
use crate::model::{EdmValue, EntityKey, IfMatch, Property};
use crate::protocol::dialect::{Dialect, COSMOS, STORAGE};

fn op(kind: WriteKind, pk: &str, rk: &str, properties: Vec<Property>) -> WriteOp {
    WriteOp {
        limits: Default::default(),
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
    // Scans that compare only the keys (`RowKey ne 'x'`) have no property to index.
    let keys_only = fired(|s| {
        for i in 0..10 {
            let q = query(
                QueryClass::PartitionScan,
                500,
                1,
                &["PartitionKey", "RowKey"],
            );
            s.observe(&q, i);
        }
    });
    assert!(keys_only.is_empty(), "{keys_only:?}");
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
    // Scenario: PartitionKey = the current minute, always the last partition, one insert a
    // second for ten minutes.
    let bad = fired(|s| {
        for i in 0..600u64 {
            s.observe(
                &insert(&format!("2026-11-25T18:{:02}", i / 60), &i.to_string()),
                i,
            );
        }
    });
    assert_eq!(bad, vec![Rule::PrependAppend]);
    // The same keys loaded in one go (an import in key order) are not a stream of inserts.
    let bulk = fired(|s| {
        for i in 0..600u64 {
            s.observe(
                &insert(&format!("2026-11-25T18:{:02}", i / 60), &i.to_string()),
                i / 400,
            );
        }
    });
    assert!(bulk.is_empty(), "{bulk:?}");
    // Nor is a stream into one partition, or two: no sequence of partitions moves the edge.
    for partitions in [1u64, 2] {
        let few = fired(|s| {
            for i in 0..600u64 {
                s.observe(&insert(&format!("p{}", i % partitions), &i.to_string()), i);
            }
        });
        assert!(few.is_empty(), "{partitions} partitions: {few:?}");
    }
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

/// 2,100 inserts into partition `hot` in each of `seconds`.
fn hot_load(s: &mut Stats, seconds: impl IntoIterator<Item = u64>) {
    for second in seconds {
        for i in 0..2100 {
            s.observe(&insert("hot", &format!("{second}-{i:06}")), second);
        }
    }
}

#[test]
fn hot_partition_and_its_twin() {
    // Scenario: 2,100 inserts a second into one partition for five seconds in a row.
    let bad = fired(|s| hot_load(s, 7..7 + advice::SUSTAINED_SECONDS));
    assert_eq!(bad, vec![Rule::HotPartition]);
    // A shorter burst, or busy seconds that are not consecutive, are not a sustained load.
    let burst = fired(|s| hot_load(s, 7..7 + advice::SUSTAINED_SECONDS - 1));
    assert!(burst.is_empty(), "{burst:?}");
    let apart = fired(|s| hot_load(s, (0..advice::SUSTAINED_SECONDS * 2).step_by(2)));
    assert!(apart.is_empty(), "{apart:?}");
    // Twin: the same 2,100 entities per second over 10 partitions (210 each), for 3 seconds.
    let good = fired(|s| {
        for second in 0..3 {
            for i in 0..2100u64 {
                let pk = format!("p{}", (i * 7) % 10);
                s.observe(&insert(&pk, &format!("{second}-{i:06}")), second);
            }
        }
    });
    assert!(good.is_empty(), "{good:?}");
}

#[test]
fn account_target_and_its_twin() {
    let busy = |s: &mut Stats, seconds: std::ops::Range<u64>, per_second: u32| {
        for second in seconds {
            for _ in 0..per_second {
                s.transaction("acct", second);
            }
        }
    };
    let bad = fired(|s| busy(s, 3..3 + advice::SUSTAINED_SECONDS, 20_001));
    assert_eq!(bad, vec![Rule::AccountTarget]);
    // One second over the target is a spike, not a sustained load.
    let spike = fired(|s| busy(s, 3..4, 30_000));
    assert!(spike.is_empty(), "{spike:?}");
    let good = fired(|s| busy(s, 0..10, 15_000));
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
            s.observe(&batch(10, 3_900_000), 0);
        }),
        vec![Rule::LargeBatch]
    );
    // Twins: a small batch, and a full batch of 100 small entities (the guide's advice to
    // batch writes; 100 operations are within the limit).
    assert!(fired(|s| {
        s.observe(&batch(20, 20_000), 0);
        s.observe(&batch(100, 60_000), 0);
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

/// A query's first page that `$top` cut (see `class::top_first_n`).
fn top_page(class: QueryClass, top: u64) -> Observation {
    let mut o = query(class, top + 1, top, &["Timestamp"]);
    if let Event::Query { top_first_n, .. } = &mut o.event {
        *top_first_n = class::top_first_n(class, true, top as usize, top as usize, true);
    }
    o
}

/// An application that reads "the latest 10" of a partition with `$top` again and again
/// (the log tail pattern).
fn log_tail_reads(s: &mut Stats) {
    for i in 0..advice::PORTABILITY_REPEATS {
        s.observe(&top_page(QueryClass::PartitionScan, 10), i);
    }
}

/// The log tail's twins: one fewer such read; full-key point queries with `$top=1`; the
/// same queries without `$top` (all matches, in any order).
fn log_tail_twins(s: &mut Stats) {
    for i in 1..advice::PORTABILITY_REPEATS {
        s.observe(&top_page(QueryClass::Range, 10), i);
    }
    for i in 0..100 {
        s.observe(&top_page(QueryClass::Point, 1), i);
        s.observe(&query(QueryClass::PartitionScan, 10, 10, &[]), i);
    }
}

#[test]
fn portability_on_repeated_top_in_key_order_and_its_twin() {
    // Cosmos DB for Table would return other entities.
    assert_eq!(fired(log_tail_reads), vec![Rule::Portability]);
    let good = fired(log_tail_twins);
    assert!(good.is_empty(), "{good:?}");
}

/// Runs `scenario` on fresh statistics of a `--flavor cosmos` server.
fn fired_cosmos(scenario: impl FnOnce(&mut Stats)) -> Vec<Rule> {
    let mut s = Stats::for_dialect(&COSMOS);
    scenario(&mut s);
    rules(&s)
}

#[test]
fn under_cosmos_top_for_the_first_n_has_no_key_order() {
    // The read that is a portability warning under storage is wrong under Cosmos.
    assert_eq!(fired_cosmos(log_tail_reads), vec![Rule::NoKeyOrder]);
    let good = fired_cosmos(log_tail_twins);
    assert!(good.is_empty(), "{good:?}");
}

#[test]
fn under_cosmos_a_large_cross_partition_query_states_its_request_units() {
    let mut s = Stats::for_dialect(&COSMOS);
    let new = s.observe(&query(QueryClass::TableScan, 5000, 3, &["Email"]), 0);
    let mut rules: Vec<Rule> = new.iter().map(|a| a.rule).collect();
    rules.sort();
    assert_eq!(rules, vec![Rule::TableScan, Rule::RequestUnitCost]);
    let cost = &new
        .iter()
        .find(|a| a.rule == Rule::RequestUnitCost)
        .expect("the request-unit advice")
        .example;
    // 4,997 entities examined only (0.1 RU each) and 3 of 1 KB returned: 502.7 RU.
    assert!(cost.contains("about 502.7 RU"), "{cost}");
    assert!(cost.contains("1.3 s of a 400 RU/s table"), "{cost}");
    // A union of key ranges spans partitions too; one partition's scan does not.
    let union = fired_cosmos(|s| {
        s.observe(&query(QueryClass::UnionOfKeyRanges, 2000, 1500, &[]), 0);
    });
    assert_eq!(union, vec![Rule::RequestUnitCost]);
    let good = fired_cosmos(|s| {
        s.observe(&query(QueryClass::PartitionScan, 5000, 4000, &[]), 0);
        s.observe(&query(QueryClass::TableScan, 999, 999, &[]), 0);
    });
    assert!(good.is_empty(), "{good:?}");
}

#[test]
fn under_cosmos_storage_targets_give_no_advice_and_storage_has_no_cosmos_rules() {
    // A partition far over Storage's 2,000 entities/s for 5 seconds: Cosmos has no such
    // target (its throttling is by request units).
    let hot = |s: &mut Stats| {
        for second in 0..advice::SUSTAINED_SECONDS {
            for i in 0..2100 {
                s.observe(
                    &Observation {
                        event: Event::Read {
                            partition: "p".into(),
                        },
                        ..insert("p", &i.to_string())
                    },
                    second,
                );
            }
        }
    };
    assert_eq!(fired(hot), vec![Rule::HotPartition]);
    assert!(fired_cosmos(hot).is_empty());
    let mut cosmos = Stats::for_dialect(&COSMOS);
    for second in 0..advice::SUSTAINED_SECONDS {
        for _ in 0..=advice::ACCOUNT_TARGET_PER_SECOND {
            assert!(cosmos.transaction("acct", second).is_empty());
        }
    }
    // Under storage the large table scan raises no request-unit advice.
    let storage = fired(|s| {
        s.observe(&query(QueryClass::TableScan, 5000, 3, &["Email"]), 0);
    });
    assert_eq!(storage, vec![Rule::TableScan]);
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
    // Per table: HOT_PARTITIONS + 16 + 16 + 16 + 2 keys of at most ~131 bytes each.
    assert!(
        key_bytes <= (HOT_PARTITIONS + 50) * 131,
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

// ---- Precision: ordinary workloads raise no advice -------------------------------------

/// A change set of `rows` inserts (Insert, or Insert Or Replace with `upsert`) into one
/// partition, about 400 bytes an entity on the wire.
fn change_set(table: &str, pk: &str, rows: std::ops::Range<u32>, upsert: bool) -> Observation {
    let kind = if upsert {
        WriteKind::InsertOrReplace
    } else {
        WriteKind::Insert
    };
    let ops: Vec<WriteOp> = rows
        .map(|r| {
            op(
                kind,
                pk,
                &format!("{r:06}"),
                vec![prop("Name", &format!("name {r}")), prop("City", "Utrecht")],
            )
        })
        .collect();
    let operations = ops.len();
    Observation::writes(
        "acct",
        table,
        &ops,
        Some(BatchFacts {
            operations,
            body_bytes: operations * 400,
        }),
    )
}

#[test]
fn precision_an_import_in_key_order_raises_nothing() {
    // `tablestore import` of a 2,000-entity export: 20 partitions of 100, in key order, one
    // change set of 100 per partition, all within a second or two; and with `--mode replace`
    // a larger export (20,000 entities over 8 seconds).
    for (partitions, upsert, per_second) in [(20u32, false, 12u32), (200, true, 25)] {
        let quiet = fired(|s| {
            for p in 0..partitions {
                let set = change_set("t", &format!("dept{p:03}"), 0..100, upsert);
                s.observe(&set, u64::from(p / per_second));
            }
        });
        assert!(quiet.is_empty(), "{partitions} partitions: {quiet:?}");
    }
}

#[test]
fn precision_batches_of_100_into_a_few_partitions_raise_nothing() {
    // An application writing full change sets round-robin into five partitions for two
    // minutes: 5 change sets a second, 500 entities a second in all.
    let quiet = fired(|s| {
        for second in 0..120u64 {
            for p in 0..5u32 {
                let first = (second as u32) * 100;
                s.observe(
                    &change_set("t", &format!("tenant{p}"), first..first + 100, false),
                    second,
                );
            }
        }
    });
    assert!(quiet.is_empty(), "{quiet:?}");
}

#[test]
fn precision_one_partition_tables_raise_nothing() {
    // A test suite or a small application that keeps everything in one partition, inserting
    // one entity a second for twenty minutes.
    let quiet = fired(|s| {
        for i in 0..1200u64 {
            s.observe(&insert("p", &format!("{i:06}")), i);
        }
    });
    assert!(quiet.is_empty(), "{quiet:?}");
}

#[test]
fn precision_reading_a_large_partition_raises_nothing() {
    // A 20,000-entity partition read whole, page after page (1,000 entities a page) within two
    // seconds, twice; point reads of it; and a range query.
    let page = || query(QueryClass::PartitionScan, 1001, 1000, &[]);
    let quiet = fired(|s| {
        for round in 0..2u64 {
            for i in 0..20u64 {
                s.observe(&page(), round * 10 + i / 10);
            }
        }
        for i in 0..500u64 {
            s.observe(
                &Observation {
                    account: "acct".into(),
                    table: "t".into(),
                    event: Event::Read {
                        partition: "Sales".into(),
                    },
                },
                30 + i / 100,
            );
        }
        s.observe(&query(QueryClass::Range, 101, 100, &[]), 40);
    });
    assert!(quiet.is_empty(), "{quiet:?}");
}

#[test]
fn precision_an_sdk_test_suites_traffic_raises_nothing() {
    // The shape of the SDK suites' traffic: many small tables, each created, written with
    // single inserts, upserts, merges and small change sets, read by key, queried with every
    // class over a few dozen entities, paged with small `$top`, and deleted, with the
    // account's table list queried now and then.
    let quiet = fired(|s| {
        for (n, second) in (0..300u64).map(|n| (n, n / 4)) {
            let table = format!("suite{n}");
            s.transaction("acct", second);
            for i in 0..30u32 {
                let w = Observation::writes(
                    "acct",
                    &table,
                    &[op(
                        if i % 3 == 0 {
                            WriteKind::InsertOrMerge
                        } else {
                            WriteKind::Insert
                        },
                        &format!("p{}", i % 3),
                        &format!("{i:03}"),
                        vec![prop("Name", "x")],
                    )],
                    None,
                );
                s.observe(&w, second);
                s.transaction("acct", second);
            }
            s.observe(&change_set(&table, "batch", 0..10, false), second);
            for (class, examined, returned) in [
                (QueryClass::Point, 1, 1),
                (QueryClass::Range, 5, 5),
                (QueryClass::PartitionScan, 11, 4),
                (QueryClass::TableScan, 41, 7),
                (QueryClass::TableScan, 3, 2),
                (QueryClass::UnionOfKeyRanges, 2, 2),
                (QueryClass::Empty, 0, 0),
            ] {
                let q = Observation {
                    table: table.clone(),
                    ..query(class, examined, returned, &["Name"])
                };
                s.observe(&q, second);
                s.transaction("acct", second);
            }
            // One listing paged with a small `$top`: its first page is cut in key order.
            let paged = Observation {
                table: table.clone(),
                ..top_page(QueryClass::PartitionScan, 5)
            };
            s.observe(&paged, second);
            let tables = Observation::query(
                "acct",
                "Tables",
                QueryClass::TableScan,
                n + 1,
                n + 1,
                None,
                vec![],
            );
            s.observe(&tables, second);
        }
    });
    assert!(quiet.is_empty(), "{quiet:?}");
}

#[test]
fn tables_are_told_apart_as_the_flavour_does() {
    // `Orders` and `orders`: one table to Table storage, two to Cosmos DB, each shown under
    // the name it was first seen by.
    let names = |dialect: &'static Dialect| {
        let mut s = Stats::for_dialect(dialect);
        for table in ["Orders", "orders"] {
            let seen = Observation {
                table: table.into(),
                ..insert("p", "r")
            };
            s.observe(&seen, 0);
        }
        let snap = s.snapshot(0, None);
        let tables = snap["accounts"]["acct"]["tables"]
            .as_array()
            .unwrap()
            .clone();
        let mut names: Vec<String> = tables
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(&STORAGE), ["Orders"]);
    assert_eq!(names(&COSMOS), ["Orders", "orders"]);
}
