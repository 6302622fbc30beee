//! Hostile `$filter` (and other query options) over HTTP: deep nesting, huge literals, long
//! chains, broken syntax, odd encodings. Every request is answered promptly with a JSON
//! Azure error (or, for well-formed extremes, a normal result) and the server stays healthy.
//!
//! These tests assert the generic contract ("a 4xx or 5xx Azure error, or 200, quickly, and
//! still healthy"); the exact answers to broken filters (400 `InvalidInput` with Azure's
//! message and position) are asserted by the parser's own tests (docs/query.md).

use crate::common;

use std::time::{Duration, Instant};

use common::url::encode as enc;
use common::TestServer;
use tablestore::config::FlavorArg;

fn hostile_filters() -> Vec<(&'static str, String)> {
    let parens = 8_000;
    let chain: Vec<String> = (0..1_000).map(|i| format!("n eq {i}")).collect();
    vec![
        (
            "deep parentheses",
            format!("{}n eq 1{}", "(".repeat(parens), ")".repeat(parens)),
        ),
        ("unbalanced parentheses", "(".repeat(15_000)),
        ("closing parentheses", ")".repeat(15_000)),
        ("not chain", format!("{}n eq 1", "not ".repeat(5_000))),
        ("long and chain", chain.join(" and ")),
        ("long or chain", chain.join(" or ")),
        (
            "huge string literal",
            format!("s eq '{}'", "x".repeat(40_000)),
        ),
        ("huge quote run", format!("s eq '{}'", "''".repeat(5_000))),
        ("unterminated string", "s eq 'abc".into()),
        ("huge integer", format!("n eq {}", "9".repeat(20_000))),
        ("huge Int64", format!("n eq {}L", "9".repeat(5_000))),
        (
            "huge double",
            format!("n eq 1{}.5e99999", "0".repeat(5_000)),
        ),
        ("bad datetime", "d eq datetime'not a date'".into()),
        ("bad guid", "g eq guid'xyz'".into()),
        ("bad binary", "b eq X'zz'".into()),
        ("odd binary", "b eq X'abc'".into()),
        ("unknown operator", "n xx 1".into()),
        ("unknown function", "substringof('a', s)".into()),
        ("empty", String::new()),
        ("only spaces", "     ".into()),
        ("control characters", "n eq \u{1}\u{2}\u{0}".into()),
        ("unicode", "s eq '\u{1F600}\u{FFFF}\u{10FFFF}'".into()),
        ("lone operators", "and or not eq".into()),
        ("property named like keywords", "and eq 'or'".into()),
    ]
}

/// Answered within a few seconds: 200 with a JSON body, or an Azure error.
fn assert_answered(what: &str, r: &common::Reply, took: Duration) {
    assert!(took < Duration::from_secs(5), "{what}: took {took:?}");
    let status = r.status.as_u16();
    if status == 200 {
        let _ = r.json();
        return;
    }
    assert!(
        (400..600).contains(&status) && status != 500,
        "{what}: {status} {}",
        r.text()
    );
    if status != 414 {
        assert!(
            !r.error_code().is_empty(),
            "{what}: not an Azure error: {}",
            r.text()
        );
    }
}

async fn hostile_filters_on_entities_and_tables(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    t.create_table("hfilter").await;
    t.insert(
        "hfilter",
        &serde_json::json!({"PartitionKey": "p", "RowKey": "r", "n": 1, "s": "x"}),
    )
    .await;
    let client = t.signed_client();
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for (what, filter) in hostile_filters() {
        for path in ["/hfilter()", "/Tables"] {
            let url = format!("{path}?$filter={}", enc(&filter));
            let started = Instant::now();
            let r = client.send("GET", &url, &[], None).await.expect("answered");
            assert_answered(&format!("{what} on {path}"), &r, started.elapsed());
            *statuses.entry(r.status.as_u16()).or_default() += 1;
        }
    }
    println!("statuses: {statuses:?}");
    assert!(client.healthy().await);
    // Still serving queries.
    let r = t.send("GET", "/hfilter()", &[], None).await;
    assert_eq!(r.json()["value"].as_array().map(Vec::len), Some(1));
}

async fn hostile_query_options(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    t.create_table("hfilter").await;
    let client = t.signed_client();
    let long_select = (0..5_000)
        .map(|i| format!("p{i}"))
        .collect::<Vec<_>>()
        .join(",");
    let cases = [
        ("$top negative", "$top=-1".to_string()),
        ("$top huge", format!("$top={}", "9".repeat(100))),
        ("$top not a number", "$top=abc".into()),
        ("$select huge", format!("$select={long_select}")),
        ("$select garbage", "$select=%00,,,%FF".into()),
        ("$format unknown", "$format=xml".into()),
        (
            "bad continuation",
            "NextPartitionKey=%FF%FE&NextRowKey=!!!".into(),
        ),
        (
            "huge continuation",
            format!("NextPartitionKey={}", "A".repeat(30_000)),
        ),
        ("repeated parameter", "$top=1&$top=2&$top=3".into()),
        ("unknown parameters", "a=1&b&=c&&&".into()),
        (
            "filter twice",
            "$filter=n%20eq%201&$filter=n%20eq%202".into(),
        ),
    ];
    for (what, query) in cases {
        let started = Instant::now();
        let r = client
            .send("GET", &format!("/hfilter()?{query}"), &[], None)
            .await
            .expect("answered");
        assert_answered(what, &r, started.elapsed());
    }
    assert!(client.healthy().await);
}

// The cases above whose behaviour is the same under both flavours, run under each.
both_flavours!(
    hostile_filters_on_entities_and_tables,
    hostile_query_options,
);
