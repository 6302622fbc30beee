//! Round trips through the export formats: random entities of every Edm type, extreme values
//! and awkward keys, exported from one store and imported into a fresh one, read back equal.

use std::sync::Arc;

use proptest::prelude::*;

use super::local::LocalEndpoint;
use super::progress::Progress;
use super::transfer::{self, ExportOptions, Format, ImportOptions};
use super::{Endpoint, Mode};
use crate::model::{EdmDateTime, EdmValue, Entity, Property};
use crate::store::memory::MemoryKv;
use crate::store::{Durability, KvStore, Store};

const ACCOUNT: &str = "devstoreaccount1";

/// An empty in-memory store.
fn open_memory() -> Arc<dyn Store> {
    KvStore::open(MemoryKv::new(), Durability::Relaxed).expect("a memory store always opens")
}

/// An endpoint over `store`, waiting for it on a runtime the tests share.
fn endpoint(store: &Arc<dyn Store>, label: &str) -> LocalEndpoint {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    let runtime = RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime")
    });
    LocalEndpoint::new(Arc::clone(store), runtime.handle().clone(), ACCOUNT, label)
}

fn key() -> impl Strategy<Value = String> {
    // Unicode, quotes, `%`, `~`, spaces, commas and the empty key; never / \ # ? or controls.
    proptest::collection::vec(
        prop_oneof![
            Just("'".to_string()),
            Just("\"".to_string()),
            Just("%".to_string()),
            Just("~".to_string()),
            Just(",".to_string()),
            Just(" ".to_string()),
            Just("ü".to_string()),
            Just("日本".to_string()),
            Just("😀".to_string()),
            "[a-z0-9]{1,3}",
        ],
        0..5,
    )
    .prop_map(|parts| parts.concat())
}

fn datetime() -> impl Strategy<Value = EdmDateTime> {
    prop_oneof![
        Just("1601-01-01T00:00:00Z".to_string()),
        Just("9999-12-31T23:59:59.9999999Z".to_string()),
        Just("1970-01-01T00:00:00.0000001Z".to_string()),
        (
            1601u32..9999,
            1u32..13,
            1u32..29,
            0u32..24,
            0u32..10_000_000
        )
            .prop_map(|(y, m, d, h, f)| format!("{y:04}-{m:02}-{d:02}T{h:02}:00:00.{f:07}Z")),
    ]
    .prop_map(|text| EdmDateTime::parse(&text).expect("valid datetime"))
}

fn value() -> impl Strategy<Value = EdmValue> {
    prop_oneof![
        prop_oneof![
            Just(String::new()),
            Just("a,b\n\"c\"\r\n".to_string()),
            Just(" lead and trail ".to_string()),
            ".{0,20}",
        ]
        .prop_map(EdmValue::String),
        any::<bool>().prop_map(EdmValue::Boolean),
        prop_oneof![Just(i32::MIN), Just(i32::MAX), Just(0), any::<i32>()]
            .prop_map(EdmValue::Int32),
        prop_oneof![Just(i64::MIN), Just(i64::MAX), any::<i64>()].prop_map(EdmValue::Int64),
        prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0),
            Just(f64::MIN_POSITIVE),
            Just(f64::MAX),
            Just(f64::MIN),
            Just(5.0),
            any::<f64>(),
        ]
        .prop_map(EdmValue::Double),
        datetime().prop_map(EdmValue::DateTime),
        any::<[u8; 16]>().prop_map(EdmValue::Guid),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(EdmValue::Binary),
    ]
}

fn entity() -> impl Strategy<Value = Entity> {
    (
        key(),
        key(),
        proptest::collection::btree_map("[A-Z][a-zA-Z0-9_]{0,8}", value(), 0..8),
    )
        .prop_map(|(partition_key, row_key, props)| Entity {
            partition_key,
            row_key,
            timestamp: EdmDateTime(0),
            properties: props
                .into_iter()
                .map(|(name, value)| Property { name, value })
                .collect(),
        })
}

/// Keys and `(name, value)` texts of an entity.
type Comparable = (String, String, Vec<(String, String)>);

/// What an entity is, Timestamp aside; doubles by their bits so NaN and -0.0 compare.
fn comparable(e: &Entity) -> Comparable {
    let mut props: Vec<(String, String)> = e
        .properties
        .iter()
        .map(|p| {
            let v = match &p.value {
                EdmValue::Double(d) => format!("Double({:x})", d.to_bits()),
                other => format!("{other:?}"),
            };
            (p.name.clone(), v)
        })
        .collect();
    props.sort();
    (e.partition_key.clone(), e.row_key.clone(), props)
}

fn all_entities(store: &Arc<dyn Store>, table: &str) -> Vec<Comparable> {
    let ep = endpoint(store, "test");
    let mut out = Vec::new();
    ep.scan(table, None, None, &mut |e| {
        out.push(comparable(&e));
        Ok(true)
    })
    .unwrap();
    out
}

fn round_trip(entities: &[Entity], format: Format) {
    let source_store = open_memory();
    let source = endpoint(&source_store, "source");
    source.ensure_table("Fixture").unwrap();
    let mut progress = Progress::new("loaded", true);
    transfer::load(
        &source,
        "Fixture",
        entities.iter().cloned().map(Ok),
        Mode::Replace,
        false,
        &mut progress,
        &mut || Ok(()),
        &mut |_| Ok(()),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let options = ExportOptions {
        format,
        ..ExportOptions::default()
    };
    transfer::export(&source, dir.path(), &options, &mut progress).unwrap();

    let target_store = open_memory();
    let target = endpoint(&target_store, "target");
    let tables = transfer::sources(dir.path(), None).unwrap();
    let options = ImportOptions::default();
    transfer::import(&tables, &[&target], None, &options, &mut progress).unwrap();
    assert_eq!(
        all_entities(&target_store, "Fixture"),
        all_entities(&source_store, "Fixture")
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn jsonl_round_trip(entities in proptest::collection::vec(entity(), 0..30)) {
        round_trip(&entities, Format::Jsonl);
    }

    #[test]
    fn csv_round_trip(entities in proptest::collection::vec(entity(), 0..30)) {
        round_trip(&entities, Format::Csv);
    }
}

#[test]
fn every_type_and_extreme_survives_both_formats() {
    let values = vec![
        EdmValue::String(String::new()),
        EdmValue::Int32(i32::MIN),
        EdmValue::Int64(i64::MAX),
        EdmValue::Double(f64::NAN),
        EdmValue::Double(f64::NEG_INFINITY),
        EdmValue::Double(-0.0),
        EdmValue::Boolean(false),
        EdmValue::DateTime(EdmDateTime::parse("9999-12-31T23:59:59.9999999Z").unwrap()),
        EdmValue::Guid([0xAB; 16]),
        EdmValue::Binary(Vec::new()),
    ];
    let entity = Entity {
        partition_key: "'%~ü".into(),
        row_key: String::new(),
        timestamp: EdmDateTime(0),
        properties: values
            .into_iter()
            .enumerate()
            .map(|(i, value)| Property {
                name: format!("P{i}"),
                value,
            })
            .collect(),
    };
    round_trip(std::slice::from_ref(&entity), Format::Jsonl);
    round_trip(std::slice::from_ref(&entity), Format::Csv);
}

#[test]
fn import_modes_decide_what_happens_to_existing_entities() {
    let store = open_memory();
    let ep = endpoint(&store, "test");
    ep.ensure_table("Tab").unwrap();
    let mut progress = Progress::new("loaded", true);
    let one = |v: i32| Entity {
        partition_key: "p".into(),
        row_key: "r".into(),
        timestamp: EdmDateTime(0),
        properties: vec![Property {
            name: format!("V{v}"),
            value: EdmValue::Int32(v),
        }],
    };
    let mut load = |mode, e: Entity| {
        transfer::load(
            &ep,
            "Tab",
            std::iter::once(Ok(e)),
            mode,
            false,
            &mut progress,
            &mut || Ok(()),
            &mut |_| Ok(()),
        )
    };
    load(Mode::Insert, one(1)).unwrap();
    let e = load(Mode::Insert, one(2)).unwrap_err();
    assert!(
        e.0.contains("already exists") && e.0.contains("--mode"),
        "{e}"
    );
    let skipped = load(Mode::Skip, one(3)).unwrap();
    assert_eq!(skipped.skipped, 1);
    load(Mode::Merge, one(4)).unwrap();
    let names = |store: &Arc<dyn Store>| {
        let mut names = Vec::new();
        endpoint(store, "t")
            .scan("Tab", None, None, &mut |e| {
                names.extend(e.properties.into_iter().map(|p| p.name));
                Ok(true)
            })
            .unwrap();
        names
    };
    assert_eq!(names(&store), ["V1", "V4"]);
    load(Mode::Replace, one(5)).unwrap();
    assert_eq!(names(&store), ["V5"]);
}

#[test]
fn a_resumed_insert_tolerates_what_the_interrupted_run_wrote_then_stops_tolerating() {
    let store = open_memory();
    let ep = endpoint(&store, "test");
    ep.ensure_table("Tab").unwrap();
    let mut progress = Progress::new("loaded", true);
    // Partitions of 100: one batch each.
    let entity = |i: usize| Entity {
        partition_key: format!("p{:05}", i / 100),
        row_key: format!("r{i:07}"),
        timestamp: EdmDateTime(0),
        properties: Vec::new(),
    };
    let mut load = |range: std::ops::Range<usize>, replay: bool| {
        transfer::load(
            &ep,
            "Tab",
            range.map(|i| Ok(entity(i))),
            Mode::Insert,
            replay,
            &mut progress,
            &mut || Ok(()),
            &mut |_| Ok(()),
        )
    };
    // What an interrupted run wrote after its checkpoint (0): more than any fixed window, and
    // one entity further on that was there before.
    load(0..25_000, false).unwrap();
    load(25_150..25_151, false).unwrap();
    let e = load(0..25_200, true).unwrap_err();
    assert!(e.0.contains("r0025150") && e.0.contains("--mode"), "{e}");
    // The first 25,000 were tolerated and the next batch went in before the conflict.
    let mut count = 0;
    ep.scan("Tab", None, None, &mut |_| {
        count += 1;
        Ok(true)
    })
    .unwrap();
    assert_eq!(count, 25_101);
}
