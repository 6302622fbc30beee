//! Query Entities / Get Entity / Query Tables with `$filter`, `$select`, `$top` and
//! continuation, over HTTP against an in-process server. Plans are checked through the opt-in
//! `x-tablestore-debug-plan` headers (issue 3).

use crate::common;

use std::sync::Arc;

use common::url::encode as enc;
use common::{Reply, TestServer};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tablestore::config::{FlavorArg, DEV_ACCOUNT};
use tablestore::model::{EdmValue, EntityKey, IfMatch, Property, TableRef, WriteKind, WriteOp};
use tablestore::store::kv::memory::MemoryKv;
use tablestore::store::{Durability, KvStore, Store};

type Keys<'a> = &'a [(&'a str, &'a str)];

const DEBUG: (&str, &str) = ("x-tablestore-debug-plan", "true");

/// `GET /{table}()?$filter=…{extra}` with the plan headers requested.
async fn query(t: &TestServer, table: &str, filter: &str, extra: &str) -> Reply {
    let path = format!("/{table}()?$filter={}{extra}", enc(filter));
    t.send("GET", &path, &[DEBUG], None).await
}

fn keys(r: &Reply) -> Vec<(String, String)> {
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    r.json()["value"]
        .as_array()
        .expect("value array")
        .iter()
        .map(key_of)
        .collect()
}

/// `(PartitionKey, RowKey)` of an entity as JSON.
fn key_of(e: &Value) -> (String, String) {
    (
        e["PartitionKey"].as_str().unwrap_or_default().to_string(),
        e["RowKey"].as_str().unwrap_or_default().to_string(),
    )
}

fn rks(r: &Reply) -> Vec<String> {
    keys(r).into_iter().map(|(_, rk)| rk).collect()
}

fn plan(r: &Reply) -> &str {
    r.header("x-tablestore-plan").expect("plan header")
}

fn examined(r: &Reply) -> u64 {
    r.header("x-tablestore-examined")
        .expect("examined header")
        .parse()
        .expect("number")
}

/// Every key `filter` (and the `extra` query options) selects in `table`, following
/// continuation tokens, and the number of pages.
async fn all_keys(
    t: &TestServer,
    table: &str,
    filter: Option<&str>,
    extra: &str,
) -> (Vec<(String, String)>, usize) {
    let filter_param = filter.map(|f| format!("$filter={}&", enc(f)));
    let path = format!("/{table}()?{}{extra}", filter_param.unwrap_or_default());
    let (entities, pages) = t.query_all(&path).await;
    (entities.iter().map(key_of).collect(), pages)
}

fn sorted_unique(keys: &[(String, String)]) -> bool {
    keys.windows(2).all(|w| w[0] < w[1])
}

fn op(pk: &str, rk: &str, props: Vec<(&str, EdmValue)>) -> WriteOp {
    WriteOp {
        limits: Default::default(),
        kind: WriteKind::InsertOrReplace,
        key: EntityKey {
            partition_key: pk.into(),
            row_key: rk.into(),
        },
        properties: props
            .into_iter()
            .map(|(n, v)| Property {
                name: n.into(),
                value: v,
            })
            .collect(),
        if_match: IfMatch::Any,
    }
}

/// A memory store holding `table`, filled through the store API (fast, no HTTP).
async fn filled_store(table: &str, partitions: usize, rows: usize) -> Arc<dyn Store> {
    let store = KvStore::open(MemoryKv::new(), Durability::Relaxed).expect("store");
    let info = store
        .create_table(&TableRef::new(DEV_ACCOUNT, table))
        .await
        .expect("create");
    for p in 0..partitions {
        let pk = format!("p{p:03}");
        for chunk in (0..rows).collect::<Vec<_>>().chunks(100) {
            let ops: Vec<WriteOp> = chunk
                .iter()
                .map(|&r| {
                    op(
                        &pk,
                        &format!("r{r:04}"),
                        vec![("N", EdmValue::Int32(r as i32))],
                    )
                })
                .collect();
            store.commit(info.id, &ops).await.expect("commit");
        }
    }
    store
}

/// Table `people`: partitions `a`, `b`, `c` with rows `1`..`9` and typed properties.
async fn people() -> TestServer {
    people_as(FlavorArg::Storage).await
}

/// [`people`] on a server answering as `flavor`.
async fn people_as(flavor: FlavorArg) -> TestServer {
    let t = TestServer::start_as(flavor).await;
    t.create_table("people").await;
    for pk in ["a", "b", "c"] {
        for i in 1..=9 {
            let mut e = json!({
                "PartitionKey": pk, "RowKey": i.to_string(),
                "Age": i * 10,
                "Big": i.to_string(), "Big@odata.type": "Edm.Int64",
                "Score": (i as f64) + 0.5,
                "Name": format!("n{i}"),
                "Active": i % 2 == 0,
            });
            if i == 5 {
                // Same name, other types; and a property only some entities have.
                e["Age"] = json!("50");
                e["Only5"] = json!("x");
            }
            t.insert("people", &e).await;
        }
    }
    t
}

#[tokio::test]
async fn every_filter_shape_plans_and_answers() {
    let t = people().await;
    // (filter, plan, expected keys, entities examined)
    let cases: &[(&str, &str, Keys, u64)] = &[
        (
            "PartitionKey eq 'b' and RowKey eq '3'",
            "point+filter",
            &[("b", "3")],
            1,
        ),
        (
            "'3' eq RowKey and 'b' eq PartitionKey",
            "point+filter",
            &[("b", "3")],
            1,
        ),
        (
            "PartitionKey eq 'c' and RowKey ge '7'",
            "partition-range+filter",
            &[("c", "7"), ("c", "8"), ("c", "9")],
            3,
        ),
        (
            "PartitionKey eq 'a' and RowKey gt '2' and RowKey le '4'",
            "partition-range+filter",
            &[("a", "3"), ("a", "4")],
            2,
        ),
        (
            "PartitionKey eq 'b' and Age ge 80",
            "partition+filter",
            &[("b", "8"), ("b", "9")],
            9,
        ),
        (
            "PartitionKey ge 'b' and PartitionKey lt 'c' and RowKey eq '1'",
            "partition-span+filter",
            &[("b", "1")],
            9,
        ),
        (
            "PartitionKey eq 'a' and (RowKey eq '1' or RowKey eq '9')",
            "union(2):point,point+filter",
            &[("a", "1"), ("a", "9")],
            2,
        ),
        (
            "(PartitionKey eq 'c' and RowKey eq '2') or (PartitionKey eq 'a' and RowKey eq '8')",
            "union(2):point,point+filter",
            &[("a", "8"), ("c", "2")],
            2,
        ),
        (
            "PartitionKey ne 'b' and RowKey eq '1'",
            "union(2):partition-span,partition-span+filter",
            &[("a", "1"), ("c", "1")],
            18,
        ),
        (
            "PartitionKey eq 'a' and PartitionKey eq 'b'",
            "empty+filter",
            &[],
            0,
        ),
        ("PartitionKey eq 1", "empty+filter", &[], 0),
        (
            "Age eq 90",
            "scan+filter",
            &[("a", "9"), ("b", "9"), ("c", "9")],
            27,
        ),
    ];
    for (filter, want_plan, want, want_examined) in cases {
        let r = query(&t, "people", filter, "").await;
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(p, r)| (p.to_string(), r.to_string()))
            .collect();
        assert_eq!(keys(&r), want, "{filter}");
        assert_eq!(plan(&r), *want_plan, "{filter}");
        assert_eq!(examined(&r), *want_examined, "{filter}");
    }
    // Without the opt-in header there are no plan headers.
    let r = t
        .send(
            "GET",
            &format!("/people()?$filter={}", enc("Age eq 90")),
            &[],
            None,
        )
        .await;
    assert_eq!(r.header("x-tablestore-plan"), None);
    assert_eq!(r.header("x-tablestore-examined"), None);
}

async fn typing_rules_over_http(flavor: FlavorArg) {
    let t = people_as(flavor).await;
    let rows = |r: Reply| rks(&r);
    // Int32 literal matches the Int32 values only; the String "50" never matches a number.
    let r = query(&t, "people", "PartitionKey eq 'a' and Age ge 40", "").await;
    assert_eq!(rows(r), ["4", "6", "7", "8", "9"]);
    // Int64 property: only the L literal matches; Int32/Double literals do not.
    let r = query(&t, "people", "PartitionKey eq 'a' and Big eq 3L", "").await;
    assert_eq!(rows(r), ["3"]);
    let r = query(&t, "people", "PartitionKey eq 'a' and Big eq 3", "").await;
    assert!(rows(r).is_empty());
    let r = query(&t, "people", "PartitionKey eq 'a' and Score eq 3", "").await;
    assert!(rows(r).is_empty());
    let r = query(&t, "people", "PartitionKey eq 'a' and Score lt 3.0", "").await;
    assert_eq!(rows(r), ["1", "2"]);
    // Mismatched types are false under `ne` too; `not` is plain negation.
    let r = query(&t, "people", "PartitionKey eq 'a' and Age ne 10", "").await;
    assert_eq!(rows(r), ["2", "3", "4", "6", "7", "8", "9"]);
    let r = query(&t, "people", "PartitionKey eq 'a' and not Age eq 10", "").await;
    assert_eq!(rows(r), ["2", "3", "4", "5", "6", "7", "8", "9"]);
    // Missing property: false for every operator, `ne` included; true under `not`.
    let r = query(&t, "people", "PartitionKey eq 'a' and Only5 ne 'y'", "").await;
    assert_eq!(rows(r), ["5"]);
    let r = query(&t, "people", "PartitionKey eq 'a' and not Only5 eq 'x'", "").await;
    assert_eq!(rows(r), ["1", "2", "3", "4", "6", "7", "8", "9"]);
    // Booleans, strings (ordinal), Timestamp as a DateTime.
    let r = query(&t, "people", "PartitionKey eq 'a' and Active eq true", "").await;
    assert_eq!(rows(r), ["2", "4", "6", "8"]);
    let r = query(&t, "people", "PartitionKey eq 'a' and Name ge 'n8'", "").await;
    assert_eq!(rows(r), ["8", "9"]);
    let r = query(
        &t,
        "people",
        "PartitionKey eq 'a' and Timestamp gt datetime'2000-01-01T00:00:00Z'",
        "",
    )
    .await;
    assert_eq!(rows(r).len(), 9);
    let r = query(
        &t,
        "people",
        "Timestamp lt datetime'2000-01-01T00:00:00Z'",
        "",
    )
    .await;
    assert!(rows(r).is_empty());
}

/// A bare `true`/`false` is a boolean of its own: the whole filter (a health check's
/// `$filter=false`), or an operand of `and`/`or`/`not` (the .NET SDK's LINQ filters built from
/// `PredicateBuilder.False`, Azure/Azurite#1787). It narrows the plan as a constant would.
/// `True` is not the literal (filters are case-sensitive): it is a property name.
#[tokio::test]
async fn bare_true_and_false_are_boolean_expressions() {
    let t = people().await;
    let r = query(&t, "people", "false", "").await;
    assert!(keys(&r).is_empty(), "{}", r.text());
    assert_eq!(examined(&r), 0, "false reads nothing");
    let r = query(&t, "people", "true", "").await;
    assert_eq!(keys(&r).len(), 27);
    assert_eq!(plan(&r), "scan+filter");
    let r = query(&t, "people", "not false", "").await;
    assert_eq!(keys(&r).len(), 27);
    // Azurite's query test 14, with this table's keys.
    let r = query(
        &t,
        "people",
        "(true and RowKey eq '1') and ((false or PartitionKey eq 'a') or PartitionKey eq 'b') or PartitionKey eq 'c'",
        "",
    )
    .await;
    let mut got = keys(&r);
    got.sort();
    let mut want: Vec<(String, String)> =
        (1..=9).map(|i| ("c".to_string(), i.to_string())).collect();
    want.extend([
        ("a".to_string(), "1".to_string()),
        ("b".to_string(), "1".to_string()),
    ]);
    want.sort();
    assert_eq!(got, want);
    // `false or …` reads the other side's range only: one partition.
    let r = query(&t, "people", "false or PartitionKey eq 'b'", "").await;
    assert_eq!(keys(&r).len(), 9);
    assert_eq!(plan(&r), "partition+filter");
    let r = query(&t, "people", "PartitionKey eq 'a' and not true", "").await;
    assert!(keys(&r).is_empty());
    // Query Tables takes them too.
    let r = t
        .send(
            "GET",
            &format!("/Tables?$filter={}", enc("false")),
            &[],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.json()["value"].as_array().map(Vec::len), Some(0));
    // Still refused: other letter cases and a bare boolean next to a literal.
    for bad in ["True", "FALSE and Age eq 10", "Active eq True", "true true"] {
        let r = query(&t, "people", bad, "").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(r.error_code(), "InvalidInput", "{bad}");
    }
}

#[tokio::test]
async fn filter_errors_are_invalid_input_with_azure_messages() {
    let t = people().await;
    let r = query(&t, "people", "aaa bbb ccc", "").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.error_code(), "InvalidInput");
    let msg = r.json()["odata.error"]["message"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.starts_with("Syntax error at position 7 in 'aaa bbb ccc'.\nRequestId:"),
        "{msg}"
    );
    for bad in [
        "startswith(Name,'n') eq true",
        "Age add 1 eq 2",
        "Name eq null",
        "Name eq Age",
        "Active",
        "not Active",
        "Age eq 2147483648",
        "Name eq 'unterminated",
        "PartitionKey EQ 'a'",
    ] {
        let r = query(&t, "people", bad, "").await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(r.error_code(), "InvalidInput", "{bad}");
    }
    let sixteen = (0..16)
        .map(|i| format!("Age eq {i}"))
        .collect::<Vec<_>>()
        .join(" or ");
    let r = query(&t, "people", &sixteen, "").await;
    assert_eq!(r.error_code(), "InvalidInput");
    let fifteen = (0..15)
        .map(|i| format!("Age eq {}", i * 10))
        .collect::<Vec<_>>()
        .join(" or ");
    let r = query(&t, "people", &fifteen, "").await;
    // Ages 10..90 match except entity 5, whose Age is a String.
    assert_eq!(keys(&r).len(), 8 * 3, "{}", r.text());
    // An empty $filter means no filter (the real service answers it).
    let r = t.send("GET", "/people()?$filter=", &[DEBUG], None).await;
    assert_eq!(keys(&r).len(), 27);
    assert_eq!(plan(&r), "scan");
    // A bad filter on a missing table is still a filter error.
    let r = query(&t, "nosuchtable", "aaa bbb ccc", "").await;
    assert_eq!(r.error_code(), "InvalidInput");
    let r = query(&t, "nosuchtable", "Age eq 1", "").await;
    assert_eq!(r.error_code(), "TableNotFound");
}

#[tokio::test]
async fn top_rules() {
    let t = people().await;
    for bad in ["1001", "-1", "abc", "1.5", ""] {
        let r = t
            .send("GET", &format!("/people()?$top={bad}"), &[], None)
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "$top={bad}");
        assert_eq!(r.error_code(), "InvalidQueryParameterValue", "$top={bad}");
        let r = t
            .send("GET", &format!("/Tables?$top={bad}"), &[], None)
            .await;
        assert_eq!(
            r.error_code(),
            "InvalidQueryParameterValue",
            "tables $top={bad}"
        );
    }
    let r = t.send("GET", "/people()?$top=1000", &[], None).await;
    assert_eq!(keys(&r).len(), 27);
    let r = query(&t, "people", "Age ge 50", "&$top=2").await;
    assert_eq!(
        keys(&r),
        [("a".into(), "6".into()), ("a".into(), "7".into())]
    );
    assert!(r.header("x-ms-continuation-nextpartitionkey").is_some());
}

#[tokio::test]
async fn select_with_filter() {
    let t = people().await;
    let path = format!(
        "/people()?$filter={}&$select=Name,Age,Nope",
        enc("PartitionKey eq 'b' and RowKey le '2'")
    );
    let r = t.send("GET", &path, &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    let v = r.json();
    assert!(v["odata.metadata"]
        .as_str()
        .unwrap_or_default()
        .ends_with("$metadata#people&$select=Name,Age,Nope"));
    let rows = v["value"].as_array().expect("array");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["Name"], "n1");
    assert_eq!(rows[0]["Age"], 10);
    assert_eq!(rows[0]["Nope"], Value::Null);
    assert!(rows[0].get("PartitionKey").is_none());
    assert!(rows[0].get("Score").is_none());
    assert!(rows[0].get("odata.etag").is_some());
}

async fn get_entity_with_filter_is_an_extra_predicate(flavor: FlavorArg) {
    let t = people_as(flavor).await;
    let get = |f: &str| format!("/people(PartitionKey='a',RowKey='3')?$filter={}", enc(f));
    let r = t.send("GET", &get("Age eq 30"), &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["RowKey"], "3");
    let r = t.send("GET", &get("Age eq 31"), &[], None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.error_code(), "ResourceNotFound");
    let r = t.send("GET", &get("Age eq"), &[], None).await;
    assert_eq!(r.error_code(), "InvalidInput");
}

#[tokio::test]
async fn continuation_across_more_than_a_thousand_results() {
    let t = TestServer::start_with_store(filled_store("big", 3, 700).await).await;
    // 2,100 entities; the filter keeps 1,400 of them across two partitions.
    let (all, pages) = all_keys(&t, "big", Some("PartitionKey ge 'p001'"), "").await;
    assert_eq!(all.len(), 1400);
    assert_eq!(pages, 2);
    assert!(sorted_unique(&all));
    // No filter: 2,100 entities over three pages.
    let (all, pages) = all_keys(&t, "big", None, "").await;
    assert_eq!((all.len(), pages), (2100, 3));
    assert!(sorted_unique(&all));
    // A non-key predicate: one match in ten.
    let (all, _) = all_keys(&t, "big", Some("N ge 630"), "").await;
    assert_eq!(all.len(), 210);
    assert!(sorted_unique(&all));
}

#[tokio::test]
async fn union_plans_page_with_small_top() {
    let t = TestServer::start_with_store(filled_store("uni", 4, 20).await).await;
    let filter = "(PartitionKey eq 'p003' and RowKey ge 'r0018') or (PartitionKey eq 'p000' and (RowKey eq 'r0001' or RowKey eq 'r0005')) or PartitionKey eq 'p002'";
    let r = query(&t, "uni", filter, "").await;
    assert_eq!(
        plan(&r),
        "union(4):point,point,partition,partition-range+filter"
    );
    let (expected, _) = all_keys(&t, "uni", Some(filter), "").await;
    assert_eq!(expected.len(), 2 + 20 + 2);
    for top in [1, 2, 3, 7] {
        let (all, pages) = all_keys(&t, "uni", Some(filter), &format!("$top={top}")).await;
        assert_eq!(all, expected, "$top={top}");
        assert!(pages >= expected.len() / top, "$top={top}");
    }
}

#[tokio::test]
async fn concurrent_writes_between_pages() {
    let t = TestServer::start().await;
    t.create_table("moving").await;
    for i in 0..40 {
        t.insert(
            "moving",
            &json!({"PartitionKey": "c", "RowKey": format!("{:03}", i * 10), "Keep": true}),
        )
        .await;
    }
    let filter = enc("PartitionKey eq 'c'");
    let mut seen: Vec<String> = Vec::new();
    let mut token = String::new();
    let mut page = 0;
    loop {
        let r = t
            .send(
                "GET",
                &format!("/moving()?$filter={filter}&$top=7{token}"),
                &[],
                None,
            )
            .await;
        seen.extend(rks(&r));
        page += 1;
        // Between pages: insert rows before, inside and after the cursor (an `x` suffix
        // keeps them apart from the original rows) and delete one added earlier.
        let n = page * 3;
        for rk in [
            format!("{n:03}x"),
            format!("{:03}x", 200 + n),
            format!("{:03}x", 395 - n),
        ] {
            let w = t
                .send(
                    "PUT",
                    &format!("/moving(PartitionKey='c',RowKey='{rk}')"),
                    &[],
                    Some(&json!({"Keep": false}).to_string()),
                )
                .await;
            assert_eq!(w.status, StatusCode::NO_CONTENT, "{}", w.text());
        }
        let added = format!("{:03}x", 200 + n - 3);
        let d = t
            .send(
                "DELETE",
                &format!("/moving(PartitionKey='c',RowKey='{added}')"),
                &[("If-Match", "*")],
                None,
            )
            .await;
        assert!(
            page == 1 || d.status == StatusCode::NO_CONTENT,
            "{}",
            d.text()
        );
        match (
            r.header("x-ms-continuation-nextpartitionkey"),
            r.header("x-ms-continuation-nextrowkey"),
        ) {
            (Some(pk), Some(rk)) => {
                token = format!("&NextPartitionKey={}&NextRowKey={}", enc(pk), enc(rk))
            }
            _ => break,
        }
    }
    // Strictly increasing: no duplicates, key order.
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    // Rows inserted ahead of the cursor show up (the scan is live, not a snapshot).
    assert!(seen.iter().any(|rk| rk.ends_with('x')), "{seen:?}");
    // Every entity that existed throughout was returned.
    for i in 0..40 {
        let rk = format!("{:03}", i * 10);
        assert!(seen.contains(&rk), "{rk} missing from {seen:?}");
    }
}

#[tokio::test]
async fn query_tables_filter_on_table_name() {
    let t = TestServer::start().await;
    for name in ["alpha", "Apple", "banana", "Berry", "cherry", "azure"] {
        t.create_table(name).await;
    }
    let names = |r: &Reply| -> Vec<String> {
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        r.json()["value"]
            .as_array()
            .expect("array")
            .iter()
            .map(|v| v["TableName"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let tables = |f: &str| format!("/Tables?$filter={}", enc(f));
    let r = t
        .send("GET", &tables("TableName eq 'banana'"), &[DEBUG], None)
        .await;
    assert_eq!(names(&r), ["banana"]);
    assert_eq!(plan(&r), "names(1)+filter");
    assert_eq!(examined(&r), 1);
    // Comparisons use the name as created, ordinally: 'Apple' and 'Berry' sort before 'a'.
    let r = t
        .send(
            "GET",
            &tables("TableName ge 'a' and TableName lt 'b'"),
            &[DEBUG],
            None,
        )
        .await;
    assert_eq!(names(&r), ["alpha", "azure"]);
    assert_eq!(plan(&r), "scan+filter");
    let r = t.send("GET", &tables("TableName lt 'a'"), &[], None).await;
    assert_eq!(names(&r), ["Apple", "Berry"]);
    let r = t
        .send("GET", &tables("TableName eq 'apple'"), &[], None)
        .await;
    assert!(names(&r).is_empty());
    let r = t
        .send(
            "GET",
            &tables("TableName eq 'Apple' or TableName eq 'cherry'"),
            &[],
            None,
        )
        .await;
    assert_eq!(names(&r), ["Apple", "cherry"]);
    let r = t.send("GET", &tables("Other eq 'x'"), &[], None).await;
    assert!(names(&r).is_empty());
    let r = t.send("GET", &tables("TableName eq"), &[], None).await;
    assert_eq!(r.error_code(), "InvalidInput");
    // Filter + $top + continuation, in lower-cased name order.
    let mut got = Vec::new();
    let mut token = String::new();
    loop {
        let r = t
            .send(
                "GET",
                &format!("{}&$top=1{token}", tables("TableName ne 'cherry'")),
                &[],
                None,
            )
            .await;
        got.extend(names(&r));
        match r.header("x-ms-continuation-nexttablename") {
            Some(next) => token = format!("&NextTableName={}", enc(next)),
            None => break,
        }
    }
    assert_eq!(got, ["alpha", "Apple", "azure", "banana", "Berry"]);
}

/// Issue 3: on a table of 100,000 entities a point query and a range query read only what
/// they need.
#[tokio::test]
async fn hundred_thousand_entities_examine_only_their_range() {
    let t = TestServer::start_with_store(filled_store("huge", 100, 1000).await).await;
    let r = query(
        &t,
        "huge",
        "PartitionKey eq 'p050' and RowKey eq 'r0500'",
        "",
    )
    .await;
    assert_eq!(keys(&r), [("p050".into(), "r0500".into())]);
    assert_eq!(plan(&r), "point+filter");
    assert_eq!(examined(&r), 1);

    let r = query(
        &t,
        "huge",
        "PartitionKey eq 'p077' and RowKey ge 'r0100' and RowKey lt 'r0200'",
        "",
    )
    .await;
    assert_eq!(keys(&r).len(), 100);
    assert_eq!(plan(&r), "partition-range+filter");
    assert_eq!(examined(&r), 100);

    let r = query(
        &t,
        "huge",
        "PartitionKey eq 'p001' and (RowKey eq 'r0001' or RowKey eq 'r0999')",
        "",
    )
    .await;
    assert_eq!(keys(&r).len(), 2);
    assert_eq!(examined(&r), 2);

    // A whole partition: 1,000 rows, one page, nothing beyond the partition read.
    let r = query(&t, "huge", "PartitionKey eq 'p099'", "").await;
    assert_eq!(keys(&r).len(), 1000);
    assert_eq!(examined(&r), 1000);
    assert!(r.header("x-ms-continuation-nextpartitionkey").is_none());

    // Two partitions: a full page plus the look-ahead row.
    let r = query(
        &t,
        "huge",
        "PartitionKey ge 'p010' and PartitionKey lt 'p012'",
        "",
    )
    .await;
    assert_eq!(keys(&r).len(), 1000);
    assert_eq!(examined(&r), 1001);

    // A key that does not exist reads nothing beyond its (empty) range.
    let r = query(&t, "huge", "PartitionKey eq 'p050' and RowKey eq 'zzz'", "").await;
    assert!(keys(&r).is_empty());
    assert_eq!(examined(&r), 0);
}

/// OData options the service does not support are refused, not silently ignored.
async fn unsupported_query_options_are_not_implemented(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    t.create_table("opts").await;
    for path in [
        "/opts()?$orderby=RowKey",
        "/opts()?$skip=5",
        "/Tables?$orderby=TableName",
    ] {
        let r = t.send("GET", path, &[], None).await;
        assert_eq!(r.status.as_u16(), 501, "{path}: {}", r.text());
        assert_eq!(r.error_code(), "NotImplemented");
    }
}

/// The test kit's URL encoder (tests/common/url.rs), used for every filter here.
#[test]
fn url_encoder_keeps_quotes_in_keys_and_unreserved_characters() {
    use common::url::{encode, encode_key, entity_url};
    assert_eq!(encode_key("a'b c/é-~"), "a''b%20c%2F%C3%A9-~");
    assert_eq!(encode("2020-01-01T00:00:00Z"), "2020-01-01T00%3A00%3A00Z");
    assert_eq!(
        entity_url("t", "p", "r'"),
        "/t(PartitionKey='p',RowKey='r''')"
    );
}

// The cases above whose behaviour is the same under both flavours, run under each.
both_flavours!(
    unsupported_query_options_are_not_implemented,
    typing_rules_over_http,
    get_entity_with_filter_is_an_extra_predicate,
);
