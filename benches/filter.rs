//! `$filter` cost: parse, plan, evaluate, and the three together, for typical SDK filters.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use tablestore::model::{EdmDateTime, EdmValue, Entity, Property};
use tablestore::protocol::filter::parse;
use tablestore::query::eval::matches;
use tablestore::query::plan::plan_entities;

const FILTERS: &[(&str, &str)] = &[
    ("point", "PartitionKey eq 'customers' and RowKey eq '0001234'"),
    (
        "range",
        "PartitionKey eq 'customers' and RowKey ge '0001000' and RowKey lt '0002000' and Age gt 30",
    ),
    (
        "union",
        "PartitionKey eq 'p' and (RowKey eq 'a' or RowKey eq 'b' or RowKey eq 'c' or RowKey eq 'd')",
    ),
    (
        "typed-scan",
        "(Age ge 18 and Age lt 65) and not (Name eq 'x') and Joined gt datetime'2020-01-01T00:00:00Z' and Big ne 5L",
    ),
];

fn entity() -> Entity {
    let prop = |name: &str, value: EdmValue| Property {
        name: name.into(),
        value,
    };
    Entity {
        partition_key: "customers".into(),
        row_key: "0001234".into(),
        timestamp: EdmDateTime::now(),
        properties: vec![
            prop("Name", EdmValue::String("Smith".into())),
            prop("Age", EdmValue::Int32(42)),
            prop("Big", EdmValue::Int64(7)),
            prop(
                "Joined",
                EdmValue::DateTime(EdmDateTime::parse("2021-06-01T00:00:00Z").expect("valid")),
            ),
        ],
    }
}

fn bench(c: &mut Criterion) {
    let e = entity();
    for (name, text) in FILTERS {
        let expr = parse(text).expect("valid filter");
        c.bench_function(&format!("parse/{name}"), |b| {
            b.iter(|| parse(black_box(text)))
        });
        c.bench_function(&format!("plan/{name}"), |b| {
            b.iter(|| plan_entities(Some(black_box(&expr))))
        });
        c.bench_function(&format!("eval/{name}"), |b| {
            b.iter(|| matches(black_box(&expr), black_box(&e)))
        });
        c.bench_function(&format!("all/{name}"), |b| {
            b.iter(|| {
                let expr = parse(black_box(text)).expect("valid filter");
                let plan = plan_entities(Some(&expr));
                (plan.ranges.len(), matches(&expr, black_box(&e)))
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
