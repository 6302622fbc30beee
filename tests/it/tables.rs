//! Table operations over raw HTTP (issue 2): Create Table at the three metadata levels and with
//! `Prefer`, name rules, Delete Table, Query Tables order and paging, Get Table.

use crate::common;

use common::assert::{assert_alive, assert_error, assert_error_message};
use common::url::encode_key;
use common::{TestServer, JSON_FULL, JSON_MINIMAL, JSON_NONE};
use reqwest::StatusCode;
use serde_json::json;
use tablestore::config::FlavorArg;

async fn create(t: &TestServer, name: &str, headers: &[(&str, &str)]) -> common::Reply {
    t.send(
        "POST",
        "/Tables",
        headers,
        Some(&json!({ "TableName": name }).to_string()),
    )
    .await
}

async fn table_names(t: &TestServer, query: &str) -> (Vec<String>, Option<String>) {
    let r = t.send("GET", &format!("/Tables{query}"), &[], None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let names = r.json()["value"]
        .as_array()
        .expect("value array")
        .iter()
        .map(|v| v["TableName"].as_str().expect("TableName").to_string())
        .collect();
    (
        names,
        r.header("x-ms-continuation-NextTableName")
            .map(str::to_string),
    )
}

#[tokio::test]
async fn create_table_201_body_matches_azure_byte_for_byte_at_each_metadata_level() {
    let t = TestServer::start().await;
    let base = t.base();
    let cases = [
        (
            JSON_NONE,
            "nometa",
            r#"{"TableName":"nometa"}"#.to_string(),
            "nometadata",
        ),
        (
            JSON_MINIMAL,
            "minimalmeta",
            format!(
                r#"{{"odata.metadata":"{base}/$metadata#Tables/@Element","TableName":"minimalmeta"}}"#
            ),
            "minimalmetadata",
        ),
        (
            JSON_FULL,
            "fullmeta",
            format!(
                r#"{{"odata.metadata":"{base}/$metadata#Tables/@Element","odata.type":"devstoreaccount1.Tables","odata.id":"{base}/Tables('fullmeta')","odata.editLink":"Tables('fullmeta')","TableName":"fullmeta"}}"#
            ),
            "fullmetadata",
        ),
    ];
    for (accept, name, expected, level) in cases {
        let r = create(&t, name, &[("Accept", accept)]).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
        assert_eq!(r.text(), expected, "{accept}");
        assert_eq!(
            r.header("content-type"),
            Some(format!("application/json;odata={level};streaming=true;charset=utf-8").as_str())
        );
        assert_eq!(
            r.header("location"),
            Some(format!("{base}/Tables('{name}')").as_str())
        );
        // Without Prefer: neither Preference-Applied nor DataServiceId [rec: JS, Py].
        assert_eq!(r.header("preference-applied"), None);
        assert_eq!(r.header("dataserviceid"), None);
        assert_eq!(r.header("cache-control"), Some("no-cache"));
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        // No top-level DataServiceVersion header.
        assert_eq!(r.header("dataserviceversion"), None);
        assert!(r.header("etag").is_none(), "tables have no ETag");
    }
}

#[tokio::test]
async fn create_table_with_return_no_content_is_204_with_location_and_data_service_id() {
    let t = TestServer::start().await;
    let r = create(&t, "quiet", &[("Prefer", "return-no-content")]).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    assert!(r.body.is_empty());
    let url = format!("{}/Tables('quiet')", t.base());
    assert_eq!(r.header("location"), Some(url.as_str()));
    assert_eq!(r.header("dataserviceid"), Some(url.as_str()));
    assert_eq!(r.header("preference-applied"), Some("return-no-content"));
    assert_eq!(r.header("content-type"), None);
    // The table exists.
    let (names, _) = table_names(&t, "").await;
    assert_eq!(names, vec!["quiet"]);
}

async fn create_table_with_return_content_is_201_with_preference_applied(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    let r = create(
        &t,
        "loud",
        &[("Prefer", "return-content"), ("Accept", JSON_NONE)],
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.header("preference-applied"), Some("return-content"));
    assert_eq!(r.text(), r#"{"TableName":"loud"}"#);
    assert_eq!(r.header("dataserviceid"), None);
}

#[tokio::test]
async fn duplicate_table_names_conflict_case_insensitively_and_keep_the_creation_case() {
    let t = TestServer::start().await;
    let r = create(&t, "MyTable", &[]).await;
    assert_eq!(r.status, StatusCode::CREATED);
    for again in ["MyTable", "mytable", "MYTABLE"] {
        let r = create(&t, again, &[]).await;
        assert_error_message(
            &r,
            409,
            "TableAlreadyExists",
            "The table specified already exists.",
        );
    }
    let (names, _) = table_names(&t, "").await;
    assert_eq!(names, vec!["MyTable"], "the case used at creation is kept");
    // Addressed in another case, the table answers with its own name.
    let r = t.send("GET", "/Tables('mytable')", &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["TableName"], "MyTable");
    let r = t
        .send(
            "POST",
            "/MYTABLE",
            &[],
            Some(r#"{"PartitionKey":"p","RowKey":"r"}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(
        r.header("location"),
        Some(format!("{}/MyTable(PartitionKey='p',RowKey='r')", t.base()).as_str())
    );
}

#[tokio::test]
async fn invalid_table_names_are_refused_with_the_misspelt_message() {
    let t = TestServer::start().await;
    for name in [
        "my_table",
        "1abc",
        "啊齄丂狛",
        "tables",
        "Tables",
        "TABLES",
        "a-bc",
        "ab c",
        "abc!",
    ] {
        let r = create(&t, name, &[]).await;
        assert_error_message(
            &r,
            400,
            "InvalidResourceName",
            "The specifed resource name contains invalid characters.",
        );
    }
    let (names, _) = table_names(&t, "").await;
    assert!(names.is_empty(), "nothing was created: {names:?}");
}

#[tokio::test]
async fn table_name_length_limits_are_3_to_63() {
    let t = TestServer::start().await;
    for name in [
        "ab".to_string(),
        "a".repeat(64),
        String::new(),
        "x".to_string(),
    ] {
        let r = create(&t, &name, &[]).await;
        assert_error_message(
            &r,
            400,
            "OutOfRangeInput",
            "The specified resource name length is not within the permissible limits.",
        );
    }
    for name in ["abc".to_string(), "a".repeat(63)] {
        let r = create(&t, &name, &[]).await;
        assert_eq!(r.status, StatusCode::CREATED, "{name}: {}", r.text());
    }
}

#[tokio::test]
async fn missing_or_non_string_table_name_is_a_bad_request() {
    let t = TestServer::start().await;
    let r = t.send("POST", "/Tables", &[], Some("{}")).await;
    assert_error(&r, 400, "PropertiesNeedValue");
    let r = t
        .send("POST", "/Tables", &[], Some(r#"{"Name":"abc"}"#))
        .await;
    assert_error(&r, 400, "PropertiesNeedValue");
    for body in [
        r#"{"TableName":5}"#,
        r#"{"TableName":["abc"]}"#,
        r#"{"TableName":true}"#,
    ] {
        let r = t.send("POST", "/Tables", &[], Some(body)).await;
        assert_error(&r, 400, "InvalidInput");
    }
    for body in ["", "not json", "[]", r#"{"TableName":"abc""#] {
        let r = t.send("POST", "/Tables", &[], Some(body)).await;
        assert_error(&r, 400, "InvalidInput");
    }
    // Other members are ignored [emu].
    let r = t
        .send(
            "POST",
            "/Tables",
            &[],
            Some(r#"{"TableName":"extra","Other":1}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_alive(&t).await;
}

#[tokio::test]
async fn delete_table_is_204_and_a_missing_table_is_resource_not_found() {
    let t = TestServer::start().await;
    t.create_table("Doomed").await;
    let r = t.send("DELETE", "/Tables('doomed')", &[], None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    assert!(r.body.is_empty());
    assert!(r.header("x-ms-request-id").is_some());
    let (names, _) = table_names(&t, "").await;
    assert!(names.is_empty());
    let r = t.send("DELETE", "/Tables('Doomed')", &[], None).await;
    assert_error_message(
        &r,
        404,
        "ResourceNotFound",
        "The specified resource does not exist.",
    );
    let r = t.send("DELETE", "/Tables('neverwas')", &[], None).await;
    assert_error(&r, 404, "ResourceNotFound");
    // Entity operations on the deleted table: TableNotFound.
    let r = t.send("GET", "/Doomed()", &[], None).await;
    assert_error(&r, 404, "TableNotFound");
    let r = t
        .send(
            "POST",
            "/Doomed",
            &[],
            Some(r#"{"PartitionKey":"p","RowKey":"r"}"#),
        )
        .await;
    assert_error_message(
        &r,
        404,
        "TableNotFound",
        "The table specified does not exist.",
    );
}

#[tokio::test]
async fn deleting_a_table_removes_its_entities() {
    let t = TestServer::start().await;
    t.create_table("reborn").await;
    for i in 0..20 {
        t.insert(
            "reborn",
            &json!({"PartitionKey": format!("p{}", i % 3), "RowKey": format!("r{i}"), "v": i}),
        )
        .await;
    }
    let r = t.send("DELETE", "/Tables('reborn')", &[], None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    t.create_table("Reborn").await;
    let r = t.send("GET", "/Reborn()", &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.json()["value"],
        json!([]),
        "the re-created table is empty"
    );
    let r = t
        .send("GET", "/Reborn(PartitionKey='p0',RowKey='r0')", &[], None)
        .await;
    assert_error(&r, 404, "ResourceNotFound");
    let (names, _) = table_names(&t, "").await;
    assert_eq!(names, vec!["Reborn"]);
}

#[tokio::test]
async fn query_tables_orders_by_lower_cased_name() {
    let t = TestServer::start().await;
    let created = [
        "testTable",
        "byPageTest",
        "TestTestTest",
        "createTableNew",
        "CreateSimpleEntityBatchPerf",
        "TestChars3",
        "Zebra",
        "apple",
        "Banana",
    ];
    for name in created {
        t.create_table(name).await;
    }
    let (names, next) = table_names(&t, "").await;
    assert_eq!(
        names,
        vec![
            "apple",
            "Banana",
            "byPageTest",
            "CreateSimpleEntityBatchPerf",
            "createTableNew",
            "TestChars3",
            "testTable",
            "TestTestTest",
            "Zebra"
        ]
    );
    assert_eq!(next, None);
}

#[tokio::test]
async fn query_tables_body_at_each_metadata_level() {
    let t = TestServer::start().await;
    t.create_table("Alpha").await;
    t.create_table("beta").await;
    let base = t.base();
    let r = t
        .send("GET", "/Tables", &[("Accept", JSON_NONE)], None)
        .await;
    assert_eq!(
        r.text(),
        r#"{"value":[{"TableName":"Alpha"},{"TableName":"beta"}]}"#
    );
    assert_eq!(
        r.header("content-type"),
        Some("application/json;odata=nometadata;streaming=true;charset=utf-8")
    );
    let r = t
        .send("GET", "/Tables", &[("Accept", JSON_MINIMAL)], None)
        .await;
    assert_eq!(
        r.text(),
        format!(
            r#"{{"odata.metadata":"{base}/$metadata#Tables","value":[{{"TableName":"Alpha"}},{{"TableName":"beta"}}]}}"#
        )
    );
    let r = t
        .send("GET", "/Tables", &[("Accept", JSON_FULL)], None)
        .await;
    assert_eq!(
        r.text(),
        format!(
            r#"{{"odata.metadata":"{base}/$metadata#Tables","value":[{{"odata.type":"devstoreaccount1.Tables","odata.id":"{base}/Tables('Alpha')","odata.editLink":"Tables('Alpha')","TableName":"Alpha"}},{{"odata.type":"devstoreaccount1.Tables","odata.id":"{base}/Tables('beta')","odata.editLink":"Tables('beta')","TableName":"beta"}}]}}"#
        )
    );
    // $format overrides Accept.
    let r = t
        .send(
            "GET",
            "/Tables?$format=application%2Fjson%3Bodata%3Dnometadata",
            &[("Accept", JSON_FULL)],
            None,
        )
        .await;
    assert_eq!(
        r.text(),
        r#"{"value":[{"TableName":"Alpha"},{"TableName":"beta"}]}"#
    );
    // No tables: an empty list.
    let t2 = TestServer::start().await;
    let r = t2
        .send("GET", "/Tables", &[("Accept", JSON_NONE)], None)
        .await;
    assert_eq!(r.text(), r#"{"value":[]}"#);
}

#[tokio::test]
async fn query_tables_pages_with_top_and_next_table_name_until_exhausted() {
    let t = TestServer::start().await;
    let mut all: Vec<String> = (0..7).map(|i| format!("Page{i}t")).collect();
    all.push("aFirst".into());
    for name in &all {
        t.create_table(name).await;
    }
    all.sort_by_key(|n| n.to_ascii_lowercase());
    let mut seen = Vec::new();
    let mut query = "?$top=3".to_string();
    let mut pages = 0;
    loop {
        let (names, next) = table_names(&t, &query).await;
        pages += 1;
        assert!(names.len() <= 3);
        seen.extend(names);
        match next {
            Some(token) => {
                assert!(!token.is_empty());
                query = format!("?$top=3&NextTableName={}", encode_key(&token));
            }
            None => break,
        }
        assert!(pages < 10, "paging terminates");
    }
    assert_eq!(seen, all);
    assert_eq!(pages, 3);
}

#[tokio::test]
async fn query_tables_gives_no_token_when_the_last_page_is_exactly_full() {
    let t = TestServer::start().await;
    for name in ["one1", "two2", "three3", "four4"] {
        t.create_table(name).await;
    }
    let (first, next) = table_names(&t, "?$top=2").await;
    assert_eq!(first, vec!["four4", "one1"]);
    let token = next.expect("a continuation after the first page");
    let (second, next) =
        table_names(&t, &format!("?$top=2&NextTableName={}", encode_key(&token))).await;
    assert_eq!(second, vec!["three3", "two2"]);
    assert_eq!(next, None, "no token once the tables are exhausted");
    let (all, next) = table_names(&t, "?$top=4").await;
    assert_eq!(all.len(), 4);
    assert_eq!(next, None);
}

#[tokio::test]
async fn bad_top_values_are_invalid_query_parameter_values() {
    let t = TestServer::start().await;
    t.create_table("topt").await;
    for top in ["-1", "abc", "1.5", ""] {
        let r = t
            .send("GET", &format!("/Tables?$top={top}"), &[], None)
            .await;
        assert_error(&r, 400, "InvalidQueryParameterValue");
        let r = t
            .send("GET", &format!("/topt()?$top={top}"), &[], None)
            .await;
        assert_error(&r, 400, "InvalidQueryParameterValue");
    }
    let (names, _) = table_names(&t, "?$top=1000").await;
    assert_eq!(names, vec!["topt"]);
}

#[tokio::test]
async fn get_table_returns_the_single_table() {
    let t = TestServer::start().await;
    t.create_table("Single").await;
    let base = t.base();
    let r = t.send("GET", "/Tables('Single')", &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.text(),
        format!(r#"{{"odata.metadata":"{base}/$metadata#Tables/@Element","TableName":"Single"}}"#)
    );
    let r = t
        .send("GET", "/Tables('single')", &[("Accept", JSON_NONE)], None)
        .await;
    assert_eq!(r.text(), r#"{"TableName":"Single"}"#);
    let r = t.send("GET", "/Tables(%27Single%27)", &[], None).await;
    assert_eq!(r.status, StatusCode::OK, "percent-encoded quotes");
    let r = t.send("GET", "/Tables('nothere')", &[], None).await;
    assert_error(&r, 404, "TableNotFound");
}

/// A page that ends the filter's `TableName` range carries no continuation, as Azure's (Go
/// `aztables` suite, recording `TestQueryTable_storage`, 2024-02-26: four `zzza…` tables and
/// `zzzb4`, `TableName ge 'zzza' and TableName lt 'zzzb'` with `$top=2` gives two pages, the
/// second without `NextTableName`). A range that goes on still continues.
#[tokio::test]
async fn a_page_that_ends_the_filters_name_range_has_no_continuation() {
    let t = TestServer::start().await;
    for name in ["zzza0", "zzza1", "zzza2", "zzza3", "zzzb4", "zzzc5"] {
        assert_eq!(create(&t, name, &[]).await.status, StatusCode::CREATED);
    }
    let filter = common::url::encode("TableName ge 'zzza' and TableName lt 'zzzb'");
    let (first, token) = table_names(&t, &format!("?$filter={filter}&$top=2")).await;
    assert_eq!(first, ["zzza0", "zzza1"]);
    let token = token.expect("the range goes on after the first page");
    let query = format!(
        "?$filter={filter}&$top=2&NextTableName={}",
        encode_key(&token)
    );
    let (second, token) = table_names(&t, &query).await;
    assert_eq!(second, ["zzza2", "zzza3"]);
    assert_eq!(token, None, "zzzb4 is past the range");
    // `zzzb4` lies in this range: the full page continues, and the next page has it.
    let filter = common::url::encode("TableName ge 'zzza2' and TableName le 'zzzb4'");
    let (first, token) = table_names(&t, &format!("?$filter={filter}&$top=2")).await;
    assert_eq!(first, ["zzza2", "zzza3"]);
    assert!(token.is_some());
    // Without a filter every full page continues, as before.
    let (_, token) = table_names(&t, "?$top=6").await;
    assert!(token.is_none(), "six tables, one page");
    let (_, token) = table_names(&t, "?$top=5").await;
    assert!(token.is_some());
}

/// Storage lets `$format` win over `Accept` (Azure docs: "Payload format for Table service
/// operations"); Cosmos does the opposite (tests/it/cosmos.rs).
#[tokio::test]
async fn storage_lets_format_win_over_accept() {
    let t = TestServer::start().await;
    assert_eq!(create(&t, "formats", &[]).await.status, StatusCode::CREATED);
    let r = t
        .send(
            "GET",
            "/Tables?$format=application%2Fjson%3Bodata%3Dfullmetadata",
            &[("Accept", JSON_MINIMAL)],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("application/json;odata=fullmetadata"),
        "{:?}",
        r.headers
    );
    assert!(
        r.json()["value"][0]["odata.type"].is_string(),
        "{}",
        r.text()
    );
}

// The cases above whose behaviour is the same under both flavours, run under each.
both_flavours!(create_table_with_return_content_is_201_with_preference_applied,);
