//! Entity operations over raw HTTP (issue 2): insert and get at every metadata level, key
//! escaping, replace/merge/upsert/delete with their preconditions, every EDM type, `$select` on
//! a point get, and the standard response headers.

use crate::common;

use common::assert::{
    assert_alive, assert_datetime_text, assert_error, assert_error_message, etag_timestamp,
};
use common::raw;
use common::url::entity_url;
use common::{Reply, TestServer, JSON_FULL, JSON_MINIMAL, JSON_NONE};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tablestore::config::FlavorArg;

const STALE_ETAG: &str = "W/\"datetime'2001-01-01T00%3A00%3A00.1234567Z'\"";

async fn get(t: &TestServer, path: &str, accept: &str) -> Reply {
    t.send("GET", path, &[("Accept", accept)], None).await
}

async fn etag_of(t: &TestServer, path: &str) -> String {
    let r = get(t, path, JSON_MINIMAL).await;
    assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text());
    r.header("etag").expect("ETag").to_string()
}

/// The body the insert below is answered with: custom properties in body order (keys sent
/// mid-body still come first), annotations only where the type cannot be inferred.
const SAMPLE_BODY: &str = r#"{"Name":"Ann","PartitionKey":"pk","Age":23,"RowKey":"ROWKEY","Big@odata.type":"Edm.Int64","Big":"255","Score":200.25,"When":"2008-07-10T00:00:00.0000000Z","When@odata.type":"Edm.DateTime","Id@odata.type":"Edm.Guid","Id":"C9DA6455-213D-42C9-9A79-3E9149A57833","Active":true,"Data@odata.type":"Edm.Binary","Data":"AQIDBA==","D@odata.type":"Edm.Double","D":5,"N":"NaN","N@odata.type":"Edm.Double","Nothing":null,"Timestamp":"2000-01-01T00:00:00Z","odata.etag":"ignored"}"#;
const SAMPLE_CUSTOM_ANNOTATED: &str = r#""Name":"Ann","Age":23,"Big@odata.type":"Edm.Int64","Big":"255","Score":200.25,"When@odata.type":"Edm.DateTime","When":"2008-07-10T00:00:00Z","Id@odata.type":"Edm.Guid","Id":"c9da6455-213d-42c9-9a79-3e9149a57833","Active":true,"Data@odata.type":"Edm.Binary","Data":"AQIDBA==","D":5.0,"N@odata.type":"Edm.Double","N":"NaN""#;
const SAMPLE_CUSTOM_PLAIN: &str = r#""Name":"Ann","Age":23,"Big":"255","Score":200.25,"When":"2008-07-10T00:00:00Z","Id":"c9da6455-213d-42c9-9a79-3e9149a57833","Active":true,"Data":"AQIDBA==","D":5.0,"N":"NaN""#;

fn expected_body(base: &str, accept: &str, rk: &str, etag: &str) -> String {
    let ts = etag_timestamp(etag);
    let etag_json = serde_json::to_string(etag).expect("string");
    let metadata = format!("{base}/$metadata#people/@Element");
    match accept {
        JSON_NONE => format!(
            r#"{{"PartitionKey":"pk","RowKey":"{rk}","Timestamp":"{ts}",{SAMPLE_CUSTOM_PLAIN}}}"#
        ),
        JSON_MINIMAL => format!(
            r#"{{"odata.metadata":"{metadata}","odata.etag":{etag_json},"PartitionKey":"pk","RowKey":"{rk}","Timestamp":"{ts}",{SAMPLE_CUSTOM_ANNOTATED}}}"#
        ),
        _ => format!(
            r#"{{"odata.metadata":"{metadata}","odata.type":"devstoreaccount1.people","odata.id":"{base}/people(PartitionKey='pk',RowKey='{rk}')","odata.etag":{etag_json},"odata.editLink":"people(PartitionKey='pk',RowKey='{rk}')","PartitionKey":"pk","RowKey":"{rk}","Timestamp@odata.type":"Edm.DateTime","Timestamp":"{ts}",{SAMPLE_CUSTOM_ANNOTATED}}}"#
        ),
    }
}

#[tokio::test]
async fn insert_answers_201_with_the_entity_at_each_metadata_level_and_get_agrees() {
    let t = TestServer::start().await;
    t.create_table("people").await;
    let base = t.base();
    for (accept, rk, level) in [
        (JSON_NONE, "none", "nometadata"),
        (JSON_MINIMAL, "minimal", "minimalmetadata"),
        (JSON_FULL, "full", "fullmetadata"),
    ] {
        let body = SAMPLE_BODY.replace("ROWKEY", rk);
        let r = t
            .send("POST", "/people", &[("Accept", accept)], Some(&body))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
        let etag = r.header("etag").expect("ETag on insert").to_string();
        let ts = etag_timestamp(&etag);
        assert_datetime_text(&ts);
        assert_eq!(
            r.text(),
            expected_body(&base, accept, rk, &etag),
            "{accept}"
        );
        assert_eq!(
            r.header("content-type"),
            Some(format!("application/json;odata={level};streaming=true;charset=utf-8").as_str())
        );
        assert_eq!(
            r.header("location"),
            Some(format!("{base}/people(PartitionKey='pk',RowKey='{rk}')").as_str())
        );
        assert_eq!(r.header("dataserviceid"), None);
        assert_eq!(r.header("preference-applied"), None);
        if accept != JSON_NONE {
            assert_eq!(
                r.json()["odata.etag"],
                etag.as_str(),
                "ETag header = odata.etag"
            );
        }

        let g = get(
            &t,
            &format!("/people(PartitionKey='pk',RowKey='{rk}')"),
            accept,
        )
        .await;
        assert_eq!(g.status, StatusCode::OK, "{}", g.text());
        assert_eq!(g.header("etag"), Some(etag.as_str()));
        assert_eq!(
            g.text(),
            expected_body(&base, accept, rk, &etag),
            "GET {accept}"
        );
        assert_eq!(g.header("location"), None);
        assert!(g.header("x-ms-continuation-NextPartitionKey").is_none());
    }
}

#[tokio::test]
async fn insert_with_prefer_return_no_content_is_204_with_headers_only() {
    let t = TestServer::start().await;
    t.create_table("quiet").await;
    let r = t
        .post_entity(
            "quiet",
            &json!({"PartitionKey": "a", "RowKey": "b", "x": 1}),
            &[("Prefer", "return-no-content")],
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    assert!(r.body.is_empty());
    let url = format!("{}/quiet(PartitionKey='a',RowKey='b')", t.base());
    assert_eq!(r.header("location"), Some(url.as_str()));
    assert_eq!(r.header("dataserviceid"), Some(url.as_str()));
    assert_eq!(r.header("preference-applied"), Some("return-no-content"));
    assert_eq!(r.header("content-type"), None);
    let etag = r.header("etag").expect("ETag").to_string();
    assert_eq!(
        etag_of(&t, "/quiet(PartitionKey='a',RowKey='b')").await,
        etag
    );

    let r = t
        .post_entity(
            "quiet",
            &json!({"PartitionKey": "a", "RowKey": "c"}),
            &[("Prefer", "return-content")],
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.header("preference-applied"), Some("return-content"));
    assert_eq!(r.json()["RowKey"], "c");
}

#[tokio::test]
async fn location_percent_encodes_keys_like_azure() {
    let t = TestServer::start().await;
    t.create_table("chars").await;
    let base = t.base();
    let cases = [
        (":@", "=& ", "PartitionKey='%3A%40',RowKey='%3D%26%20'"),
        ("+,$", "x", "PartitionKey='%2B%2C%24',RowKey='x'"),
        (
            "A'aaa_bbbb2\"",
            "y",
            "PartitionKey='A''aaa_bbbb2%22',RowKey='y'",
        ),
        ("é", "漢", "PartitionKey='%C3%A9',RowKey='%E6%BC%A2'"),
        ("", "", "PartitionKey='',RowKey=''"),
        ("a-b.c~d", "Z9", "PartitionKey='a-b.c~d',RowKey='Z9'"),
    ];
    for (pk, rk, expected) in cases {
        let r = t
            .post_entity(
                "chars",
                &json!({"PartitionKey": pk, "RowKey": rk, "v": 1}),
                &[("Prefer", "return-no-content")],
            )
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{pk:?}: {}", r.text());
        let location = r.header("location").expect("Location");
        assert_eq!(location, format!("{base}/chars({expected})"));
        // The Location is a working URL for the entity.
        let path = location.strip_prefix(&base).expect("under the account URL");
        let g = get(&t, path, JSON_NONE).await;
        assert_eq!(g.status, StatusCode::OK, "GET {path}: {}", g.text());
        assert_eq!(g.json()["PartitionKey"], pk);
        assert_eq!(g.json()["RowKey"], rk);
        // Full metadata writes the same key text into odata.id and odata.editLink.
        let g = get(&t, path, JSON_FULL).await;
        assert_eq!(g.json()["odata.id"], location);
        assert_eq!(g.json()["odata.editLink"], format!("chars({expected})"));
    }
}

/// The legacy .NET libraries (WindowsAzure.Storage, Microsoft.Azure.Cosmos.Table) address
/// Insert Entity as `POST /{table}()` and Create Table as `POST /Tables()`; merges are POST
/// with `X-HTTP-Method: MERGE` on the entity URL with raw (doubled) quotes.
#[tokio::test]
async fn legacy_dotnet_request_shapes() {
    let t = TestServer::start().await;
    let legacy = [
        ("MaxDataServiceVersion", "3.0;NetFx"),
        ("DataServiceVersion", "3.0;"),
        ("x-ms-version", "2017-07-29"),
    ];
    let r = t
        .send(
            "POST",
            "/Tables()",
            &legacy,
            Some(r#"{"TableName":"legacy"}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let mut headers = legacy.to_vec();
    headers.push(("Prefer", "return-no-content"));
    let r = t
        .send(
            "POST",
            "/legacy()",
            &headers,
            Some(r#"{"PartitionKey":"o'p","RowKey":"r","v":1}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    assert_eq!(
        r.header("location"),
        Some(format!("{}/legacy(PartitionKey='o''p',RowKey='r')", t.base()).as_str())
    );
    let r = t
        .send(
            "POST",
            "/legacy()",
            &legacy,
            Some(r#"{"PartitionKey":"o'p","RowKey":"r","v":2}"#),
        )
        .await;
    assert_error(&r, 409, "EntityAlreadyExists");
    let r = t
        .send(
            "POST",
            "/nolegacy()",
            &legacy,
            Some(r#"{"PartitionKey":"p","RowKey":"r"}"#),
        )
        .await;
    assert_error(&r, 404, "TableNotFound");
    let mut headers = legacy.to_vec();
    headers.extend([("X-HTTP-Method", "MERGE"), ("If-Match", "*")]);
    let r = t
        .send(
            "POST",
            "/legacy(PartitionKey='o''p',RowKey='r')",
            &headers,
            Some(r#"{"PartitionKey":"o'p","RowKey":"r","w":2}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    let e = get(&t, "/legacy(PartitionKey='o''p',RowKey='r')", JSON_NONE)
        .await
        .json();
    assert_eq!((e["v"].clone(), e["w"].clone()), (json!(1), json!(2)));
}

#[tokio::test]
async fn duplicate_insert_conflicts_and_missing_table_is_table_not_found() {
    let t = TestServer::start().await;
    t.create_table("dups").await;
    let e = json!({"PartitionKey": "p", "RowKey": "r", "v": 1});
    let r = t.post_entity("dups", &e, &[]).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let etag = r.header("etag").expect("ETag").to_string();
    let r = t
        .post_entity(
            "dups",
            &json!({"PartitionKey": "p", "RowKey": "r", "v": 2}),
            &[],
        )
        .await;
    assert_error_message(
        &r,
        409,
        "EntityAlreadyExists",
        "The specified entity already exists.",
    );
    // The stored entity is untouched.
    let g = get(&t, "/dups(PartitionKey='p',RowKey='r')", JSON_NONE).await;
    assert_eq!(g.json()["v"], 1);
    assert_eq!(g.header("etag"), Some(etag.as_str()));

    let r = t.post_entity("nosuchtable", &e, &[]).await;
    assert_error_message(
        &r,
        404,
        "TableNotFound",
        "The table specified does not exist.",
    );
}

#[tokio::test]
async fn get_entity_missing_entity_and_missing_table() {
    let t = TestServer::start().await;
    t.create_table("lookup").await;
    let r = get(&t, "/lookup(PartitionKey='p',RowKey='r')", JSON_MINIMAL).await;
    assert_error_message(
        &r,
        404,
        "ResourceNotFound",
        "The specified resource does not exist.",
    );
    let r = get(&t, "/nothere(PartitionKey='p',RowKey='r')", JSON_MINIMAL).await;
    assert_error(&r, 404, "TableNotFound");
}

#[tokio::test]
async fn keys_are_unescaped_from_the_url_in_every_form() {
    let t = TestServer::start().await;
    t.create_table("esc").await;
    let keys = [
        "it's",
        "''",
        ":@+,$=& ",
        "a+b",
        "100%",
        "(paren)",
        "PartitionKey='x',RowKey='y'",
        "ünïcödé 漢字 😀",
        "",
        "~!*",
    ];
    for (i, pk) in keys.iter().enumerate() {
        let rk = format!("r{i}");
        t.insert("esc", &json!({"PartitionKey": pk, "RowKey": rk, "i": i}))
            .await;
        // Fully percent-encoded (Python style).
        let r = get(&t, &entity_url("esc", pk, &rk), JSON_NONE).await;
        assert_eq!(r.status, StatusCode::OK, "{pk:?}: {}", r.text());
        assert_eq!(r.json()["PartitionKey"], *pk);
        assert_eq!(r.json()["i"], i);
    }
    // Raw quotes doubled (.NET/Go style), percent-encoded quotes (JS style), spaces around
    // the pairs, keys in either order.
    let forms = [
        "/esc(PartitionKey='it''s',RowKey='r0')",
        "/esc(PartitionKey=%27it%27%27s%27,RowKey=%27r0%27)",
        "/esc(RowKey='r0',PartitionKey='it''s')",
        "/esc(PartitionKey='it''s', RowKey='r0')",
        "/esc( PartitionKey = 'it''s' , RowKey = 'r0' )",
    ];
    for path in forms {
        let r = get(&t, path, JSON_NONE).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.text());
        assert_eq!(r.json()["PartitionKey"], "it's");
    }
    // `+` is a literal plus in a path, never a space.
    let r = get(&t, "/esc(PartitionKey='a+b',RowKey='r3')", JSON_NONE).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let r = get(&t, "/esc(PartitionKey='a b',RowKey='r3')", JSON_NONE).await;
    assert_error(&r, 404, "ResourceNotFound");
    // Empty keys.
    let r = get(&t, "/esc(PartitionKey='',RowKey='r8')", JSON_NONE).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["i"], 8);
}

#[tokio::test]
async fn empty_keys_work_for_every_operation() {
    let t = TestServer::start().await;
    t.create_table("empties").await;
    let url = "/empties(PartitionKey='',RowKey='')";
    let r = t
        .post_entity(
            "empties",
            &json!({"PartitionKey": "", "RowKey": "", "v": 1}),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let r = t
        .send("PUT", url, &[("If-Match", "*")], Some(r#"{"v":2}"#))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    let r = t
        .send("MERGE", url, &[("If-Match", "*")], Some(r#"{"w":3}"#))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let g = get(&t, url, JSON_NONE).await;
    assert_eq!(g.json()["v"], 2);
    assert_eq!(g.json()["w"], 3);
    let r = t.send("DELETE", url, &[("If-Match", "*")], None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = get(&t, url, JSON_NONE).await;
    assert_error(&r, 404, "ResourceNotFound");
}

async fn update_replaces_the_whole_property_set(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    t.create_table("repl").await;
    let url = "/repl(PartitionKey='p',RowKey='r')";
    let first = t
        .insert(
            "repl",
            &json!({"PartitionKey": "p", "RowKey": "r", "a": 1, "b": "x", "c": true}),
        )
        .await;
    let first_etag = first.header("etag").expect("ETag").to_string();
    let r = t
        .send(
            "PUT",
            url,
            &[("If-Match", "*")],
            Some(r#"{"PartitionKey":"p","RowKey":"r","a":"now a string","c":null,"d":2.5}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    assert!(r.body.is_empty());
    assert_eq!(r.header("content-type"), None);
    assert_eq!(r.header("location"), None);
    let etag = r.header("etag").expect("new ETag").to_string();
    assert_ne!(etag, first_etag);
    let g = get(&t, url, JSON_MINIMAL).await;
    assert_eq!(g.header("etag"), Some(etag.as_str()));
    let body = g.json();
    assert_eq!(body["a"], "now a string");
    assert_eq!(body["d"], 2.5);
    for gone in ["b", "c"] {
        assert!(body.get(gone).is_none(), "{gone} was removed: {body}");
    }
    assert_eq!(body["Timestamp"], etag_timestamp(&etag));
}

#[tokio::test]
async fn merge_keeps_absent_properties_and_overwrites_value_and_type() {
    let t = TestServer::start().await;
    t.create_table("merges").await;
    let url = "/merges(PartitionKey='p',RowKey='r')";
    t.insert(
        "merges",
        &json!({"PartitionKey": "p", "RowKey": "r", "a": 1, "b": "keep", "c": 3}),
    )
    .await;
    for (method, headers) in [
        ("MERGE", vec![("If-Match", "*")]),
        ("PATCH", vec![("If-Match", "*")]),
        ("POST", vec![("If-Match", "*"), ("X-HTTP-Method", "MERGE")]),
    ] {
        let body = json!({
            "a": "a string now",
            "c": null,
            "d@odata.type": "Edm.Int64",
            "d": method.len().to_string(),
        });
        let r = t.send(method, url, &headers, Some(&body.to_string())).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{method}: {}", r.text());
        assert!(r.body.is_empty());
        let etag = r.header("etag").expect("ETag").to_string();
        let g = get(&t, url, JSON_MINIMAL).await;
        assert_eq!(g.header("etag"), Some(etag.as_str()));
        let e = g.json();
        assert_eq!(e["a"], "a string now", "{method}");
        assert!(e.get("a@odata.type").is_none());
        assert_eq!(e["b"], "keep", "{method}: absent properties are kept");
        assert_eq!(e["c"], 3, "{method}: null in a merge is ignored");
        assert_eq!(e["d@odata.type"], "Edm.Int64");
        assert_eq!(e["d"], method.len().to_string());
    }
}

#[tokio::test]
async fn upserts_without_if_match_create_and_modify() {
    let t = TestServer::start().await;
    t.create_table("ups").await;
    // Insert Or Replace.
    let url = "/ups(PartitionKey='p',RowKey='replace')";
    let r = t.send("PUT", url, &[], Some(r#"{"a":1,"b":2}"#)).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    assert!(r.header("etag").is_some());
    assert_eq!(r.header("location"), None);
    let r = t.send("PUT", url, &[], Some(r#"{"c":3}"#)).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let e = get(&t, url, JSON_NONE).await.json();
    assert_eq!(e["c"], 3);
    assert!(e.get("a").is_none(), "replaced: {e}");
    assert_eq!(e["PartitionKey"], "p");
    assert_eq!(e["RowKey"], "replace");
    // Insert Or Merge, with each verb.
    for (i, (method, headers)) in [
        ("MERGE", vec![]),
        ("PATCH", vec![]),
        ("POST", vec![("X-HTTP-Method", "MERGE")]),
    ]
    .into_iter()
    .enumerate()
    {
        let url = format!("/ups(PartitionKey='p',RowKey='merge{i}')");
        let r = t
            .send(method, &url, &headers, Some(r#"{"a":1,"b":2}"#))
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{method}: {}", r.text());
        let r = t
            .send(method, &url, &headers, Some(r#"{"b":20,"c":30}"#))
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        let e = get(&t, &url, JSON_NONE).await.json();
        assert_eq!(
            (e["a"].clone(), e["b"].clone(), e["c"].clone()),
            (json!(1), json!(20), json!(30))
        );
    }
    // POST + X-HTTP-Method: PUT is Insert Or Replace too.
    let url = "/ups(PartitionKey='p',RowKey='tunnel')";
    let r = t
        .send("POST", url, &[("X-HTTP-Method", "PUT")], Some(r#"{"z":1}"#))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    assert_eq!(get(&t, url, JSON_NONE).await.json()["z"], 1);
}

#[tokio::test]
async fn if_match_star_matching_stale_and_malformed_etags() {
    let t = TestServer::start().await;
    t.create_table("cond").await;
    let url = "/cond(PartitionKey='p',RowKey='r')";
    let r = t
        .insert("cond", &json!({"PartitionKey": "p", "RowKey": "r", "v": 0}))
        .await;
    let mut etag = r.header("etag").expect("ETag").to_string();
    for (i, method) in ["PUT", "MERGE", "PATCH"].into_iter().enumerate() {
        // The current ETag matches.
        let body = json!({"v": i + 1}).to_string();
        let r = t
            .send(method, url, &[("If-Match", etag.as_str())], Some(&body))
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{method}: {}", r.text());
        let new_etag = r.header("etag").expect("ETag").to_string();
        assert_ne!(new_etag, etag);
        // The old one no longer does.
        let r = t
            .send(method, url, &[("If-Match", etag.as_str())], Some(&body))
            .await;
        assert_error_message(
            &r,
            412,
            "UpdateConditionNotSatisfied",
            "The update condition specified in the request was not satisfied.",
        );
        etag = new_etag;
    }
    // `:` may be sent unencoded [emu].
    let decoded = etag.replace("%3A", ":");
    let r = t
        .send(
            "MERGE",
            url,
            &[("If-Match", decoded.as_str())],
            Some(r#"{"w":1}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    etag = r.header("etag").expect("ETag").to_string();
    // Malformed ETags are InvalidInput, for every conditional verb.
    for bad in [
        "bogus",
        "\"0x8D\"",
        "W/\"datetime'not a date'\"",
        "W/\"datetime'2020-01-01T00%3A00%3A00Z'",
    ] {
        for method in ["PUT", "MERGE", "DELETE"] {
            let body = (method != "DELETE").then_some(r#"{"v":9}"#);
            let r = t.send(method, url, &[("If-Match", bad)], body).await;
            assert_error_message(
                &r,
                400,
                "InvalidInput",
                &format!("The etag value '{bad}' specified in one of the request headers is not valid. Please make sure only one etag value is specified and is valid."),
            );
        }
    }
    // Nothing changed since the last successful write.
    assert_eq!(etag_of(&t, url).await, etag);
    // A stale ETag on delete.
    let r = t
        .send("DELETE", url, &[("If-Match", STALE_ETAG)], None)
        .await;
    assert_error(&r, 412, "UpdateConditionNotSatisfied");
    // The matching ETag deletes.
    let r = t
        .send("DELETE", url, &[("If-Match", etag.as_str())], None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
}

/// On a loopback port: the header bytes no URL or client library sends go as raw HTTP.
#[tokio::test]
async fn unreadable_or_repeated_if_match_never_becomes_an_unconditional_write() {
    let t = TestServer::listening().await;
    t.create_table("guard").await;
    let url = "/guard(PartitionKey='p',RowKey='r')";
    let r = t
        .insert(
            "guard",
            &json!({"PartitionKey": "p", "RowKey": "r", "v": 0}),
        )
        .await;
    let etag = r.header("etag").expect("ETag").to_string();
    // Two If-Match headers: not one valid ETag.
    for method in ["PUT", "MERGE", "DELETE"] {
        let body = (method != "DELETE").then_some(r#"{"v":1}"#);
        let r = t
            .send(
                method,
                url,
                &[("If-Match", etag.as_str()), ("If-Match", "*")],
                body,
            )
            .await;
        assert_error(&r, 400, "InvalidInput");
    }
    // A value that is not text (obs-text bytes) in If-Match or If-None-Match.
    for (method, header, body) in [
        ("PUT", "If-Match", "{\"v\":2}"),
        ("MERGE", "If-Match", "{\"v\":2}"),
        ("DELETE", "If-Match", ""),
        ("PUT", "If-None-Match", "{\"v\":2}"),
    ] {
        let mut raw = format!(
            "{method} /devstoreaccount1/guard(PartitionKey='p',RowKey='r') HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{header}: W/\"datetime'",
            body.len()
        )
        .into_bytes();
        raw.push(0xFF);
        raw.extend_from_slice(format!("'\"\r\nConnection: close\r\n\r\n{body}").as_bytes());
        let (status, text) = raw::exchange_text(t.server.addr(), &raw).await;
        assert_eq!(status, 400, "{method} {header}: {text}");
        assert!(
            text.to_ascii_lowercase()
                .contains("\r\nx-ms-error-code: invalidinput\r\n"),
            "{text}"
        );
    }
    let g = get(&t, url, JSON_NONE).await;
    assert_eq!(g.json()["v"], 0, "nothing was written");
    assert_eq!(g.header("etag"), Some(etag.as_str()));
}

#[tokio::test]
async fn if_match_on_a_missing_entity_is_resource_not_found() {
    let t = TestServer::start().await;
    t.create_table("absent").await;
    let url = "/absent(PartitionKey='p',RowKey='r')";
    for if_match in ["*", STALE_ETAG] {
        for method in ["PUT", "MERGE", "PATCH"] {
            let r = t
                .send(method, url, &[("If-Match", if_match)], Some(r#"{"v":1}"#))
                .await;
            assert_error(&r, 404, "ResourceNotFound");
        }
        let r = t
            .send(
                "POST",
                url,
                &[("If-Match", if_match), ("X-HTTP-Method", "MERGE")],
                Some(r#"{"v":1}"#),
            )
            .await;
        assert_error(&r, 404, "ResourceNotFound");
        let r = t.send("DELETE", url, &[("If-Match", if_match)], None).await;
        assert_error_message(
            &r,
            404,
            "ResourceNotFound",
            "The specified resource does not exist.",
        );
    }
    // Nothing was created by the failed conditional writes.
    let r = get(&t, url, JSON_NONE).await;
    assert_error(&r, 404, "ResourceNotFound");
    // Writes on a missing table.
    let r = t
        .send(
            "PUT",
            "/ghost(PartitionKey='p',RowKey='r')",
            &[],
            Some("{}"),
        )
        .await;
    assert_error(&r, 404, "TableNotFound");
    let r = t
        .send(
            "DELETE",
            "/ghost(PartitionKey='p',RowKey='r')",
            &[("If-Match", "*")],
            None,
        )
        .await;
    assert_error(&r, 404, "TableNotFound");
}

#[tokio::test]
async fn delete_entity_needs_if_match() {
    let t = TestServer::start().await;
    t.create_table("dels").await;
    let url = "/dels(PartitionKey='p',RowKey='r')";
    t.insert("dels", &json!({"PartitionKey": "p", "RowKey": "r"}))
        .await;
    let r = t.send("DELETE", url, &[], None).await;
    // Azure docs: "Delete Entity": missing If-Match → 400 InvalidInput [emu; Azure's code unverified].
    assert_error(&r, 400, "InvalidInput");
    assert_eq!(
        get(&t, url, JSON_NONE).await.status,
        StatusCode::OK,
        "not deleted"
    );
    let r = t
        .send(
            "DELETE",
            url,
            &[("If-Match", "*"), ("If-None-Match", "*")],
            None,
        )
        .await;
    assert_error_message(
        &r,
        400,
        "InvalidInput",
        "If-None-Match HTTP header cannot be specified for DELETE operations.",
    );
    let r = t.send("DELETE", url, &[("If-Match", "*")], None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert!(r.body.is_empty());
    assert_eq!(r.header("etag"), None, "delete returns no ETag");
    let r = get(&t, url, JSON_NONE).await;
    assert_error(&r, 404, "ResourceNotFound");
    // POST + X-HTTP-Method: DELETE.
    t.insert("dels", &json!({"PartitionKey": "p", "RowKey": "r"}))
        .await;
    let r = t
        .send(
            "POST",
            url,
            &[("If-Match", "*"), ("X-HTTP-Method", "DELETE")],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    assert_error(&get(&t, url, JSON_NONE).await, 404, "ResourceNotFound");
    // If-None-Match on PUT.
    let r = t
        .send("PUT", url, &[("If-None-Match", "*")], Some("{}"))
        .await;
    assert_error(&r, 400, "InvalidInput");
}

#[tokio::test]
async fn every_edm_type_round_trips() {
    let t = TestServer::start().await;
    t.create_table("types").await;
    let body = r#"{"PartitionKey":"p","RowKey":"r",
        "Str":"héllo \"quoted\" \\ \n 漢字 😀","Empty":"",
        "B1":true,"B2":false,"B3@odata.type":"Edm.Boolean","B3":true,
        "I1":2147483647,"I2":-2147483648,"I3@odata.type":"Edm.Int32","I3":123,
        "L1@odata.type":"Edm.Int64","L1":"9223372036854775807","L2@odata.type":"Edm.Int64","L2":"-9223372036854775808","L3@odata.type":"Edm.Int64","L3":42,
        "D1":1234.1234,"D2@odata.type":"Edm.Double","D2":5,"D3":3.0,"D4@odata.type":"Edm.Double","D4":"1.23456789012346e+24",
        "D5@odata.type":"Edm.Double","D5":"NaN","D6@odata.type":"Edm.Double","D6":"Infinity","D7@odata.type":"Edm.Double","D7":"-Infinity","D8":-0.5,"D9":1e-7,
        "T1@odata.type":"Edm.DateTime","T1":"1973-10-04T00:00:00.000000Z",
        "T2@odata.type":"Edm.DateTime","T2":"2021-02-05T17:15:16.1110000Z",
        "T3@odata.type":"Edm.DateTime","T3":"2023-04-11T21:16:40.331+00:00",
        "T4@odata.type":"Edm.DateTime","T4":"2023-04-11T21:16:40.331047814Z",
        "T5@odata.type":"Edm.DateTime","T5":"2021-02-05T17:15:16.7935715Z",
        "T6@odata.type":"Edm.DateTime","T6":"1601-01-01T00:00:00Z",
        "T7@odata.type":"Edm.DateTime","T7":"9999-12-31T23:59:59.9999999Z",
        "T8@odata.type":"Edm.DateTime","T8":"2023-04-11T23:16:40+02:00",
        "G1@odata.type":"Edm.Guid","G1":"4185404A-5818-48C3-B9BE-F217DF0DBA6F",
        "X1@odata.type":"Edm.Binary","X1":"AQIDBA==","X2@odata.type":"Edm.Binary","X2":"",
        "S1@odata.type":"Edm.String","S1":"annotated"}"#;
    let r = t
        .send(
            "POST",
            "/types",
            &[("Prefer", "return-no-content")],
            Some(body),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    let url = "/types(PartitionKey='p',RowKey='r')";
    let g = get(&t, url, JSON_MINIMAL).await;
    let text = g.text();
    let e = g.json();
    let expect: &[(&str, Value, Option<&str>)] = &[
        ("Str", json!("héllo \"quoted\" \\ \n 漢字 😀"), None),
        ("Empty", json!(""), None),
        ("B1", json!(true), None),
        ("B2", json!(false), None),
        ("B3", json!(true), None),
        ("I1", json!(2147483647), None),
        ("I2", json!(-2147483648i64), None),
        ("I3", json!(123), None),
        ("L1", json!("9223372036854775807"), Some("Edm.Int64")),
        ("L2", json!("-9223372036854775808"), Some("Edm.Int64")),
        ("L3", json!("42"), Some("Edm.Int64")),
        ("D1", json!(1234.1234), None),
        ("D2", json!(5.0), None),
        ("D3", json!(3.0), None),
        ("D4", json!(1.23456789012346e24), None),
        ("D5", json!("NaN"), Some("Edm.Double")),
        ("D6", json!("Infinity"), Some("Edm.Double")),
        ("D7", json!("-Infinity"), Some("Edm.Double")),
        ("D8", json!(-0.5), None),
        ("D9", json!(1e-7), None),
        ("T1", json!("1973-10-04T00:00:00Z"), Some("Edm.DateTime")),
        (
            "T2",
            json!("2021-02-05T17:15:16.111Z"),
            Some("Edm.DateTime"),
        ),
        (
            "T3",
            json!("2023-04-11T21:16:40.331Z"),
            Some("Edm.DateTime"),
        ),
        (
            "T4",
            json!("2023-04-11T21:16:40.3310478Z"),
            Some("Edm.DateTime"),
        ),
        (
            "T5",
            json!("2021-02-05T17:15:16.7935715Z"),
            Some("Edm.DateTime"),
        ),
        ("T6", json!("1601-01-01T00:00:00Z"), Some("Edm.DateTime")),
        (
            "T7",
            json!("9999-12-31T23:59:59.9999999Z"),
            Some("Edm.DateTime"),
        ),
        ("T8", json!("2023-04-11T21:16:40Z"), Some("Edm.DateTime")),
        (
            "G1",
            json!("4185404a-5818-48c3-b9be-f217df0dba6f"),
            Some("Edm.Guid"),
        ),
        ("X1", json!("AQIDBA=="), Some("Edm.Binary")),
        ("X2", json!(""), Some("Edm.Binary")),
        ("S1", json!("annotated"), None),
    ];
    for (name, value, annotation) in expect {
        assert_eq!(&e[*name], value, "{name} in {text}");
        let key = format!("{name}@odata.type");
        assert_eq!(
            e.get(&key).and_then(Value::as_str),
            *annotation,
            "annotation of {name}"
        );
    }
    // Integral doubles keep their decimal point on the wire: `5` sent as Double is `5.0`.
    assert!(text.contains(r#""D2":5.0,"#), "{text}");
    assert!(text.contains(r#""D3":3.0,"#), "{text}");
    assert!(text.contains(r#""I3":123,"#), "{text}");
    // Nometadata: no annotations, Int64 still a string, special doubles still strings.
    let e = get(&t, url, JSON_NONE).await.json();
    assert!(
        e.as_object()
            .expect("object")
            .keys()
            .all(|k| !k.contains("@odata") && !k.starts_with("odata.")),
        "{e}"
    );
    assert_eq!(e["L1"], "9223372036854775807");
    assert_eq!(e["D5"], "NaN");
    // Full metadata adds the Timestamp annotation only; custom annotations as in minimal.
    let e = get(&t, url, JSON_FULL).await.json();
    assert_eq!(e["Timestamp@odata.type"], "Edm.DateTime");
    assert_eq!(e["L1@odata.type"], "Edm.Int64");
    assert!(e.get("I1@odata.type").is_none());
    assert!(e.get("Str@odata.type").is_none());
    assert!(e.get("B1@odata.type").is_none());
    assert!(e.get("D1@odata.type").is_none());
    // What comes back can be sent back unchanged (clients echo bodies), types intact.
    let full = get(&t, url, JSON_FULL).await.json();
    let r = t
        .send("PUT", url, &[("If-Match", "*")], Some(&full.to_string()))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    let again = get(&t, url, JSON_FULL).await.json();
    for (name, _, _) in expect {
        assert_eq!(again[*name], full[*name], "{name} after an echo");
    }
}

async fn unannotated_large_integers_are_stored_as_double(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    t.create_table("bigs").await;
    t.insert(
        "bigs",
        &json!({"PartitionKey": "p", "RowKey": "r", "big": 2147483648i64, "neg": -2147483649i64}),
    )
    .await;
    let g = get(&t, "/bigs(PartitionKey='p',RowKey='r')", JSON_MINIMAL).await;
    let text = g.text();
    assert!(text.contains(r#""big":2147483648.0"#), "{text}");
    assert!(text.contains(r#""neg":-2147483649.0"#), "{text}");
}

#[tokio::test]
async fn select_on_a_point_get() {
    let t = TestServer::start().await;
    t.create_table("sel").await;
    let r = t
        .send(
            "POST",
            "/sel",
            &[],
            Some(r#"{"PartitionKey":"p","RowKey":"r","age":30,"sex":"f","big@odata.type":"Edm.Int64","big":"7"}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let base = t.base();
    let g = get(
        &t,
        "/sel(PartitionKey='p',RowKey='r')?$select=big,sex",
        JSON_MINIMAL,
    )
    .await;
    assert_eq!(g.status, StatusCode::OK, "{}", g.text());
    let etag = g.header("etag").expect("ETag").to_string();
    let etag_json = serde_json::to_string(&etag).expect("string");
    assert_eq!(
        g.text(),
        format!(
            r#"{{"odata.metadata":"{base}/$metadata#sel/@Element&$select=big,sex","odata.etag":{etag_json},"sex":"f","big@odata.type":"Edm.Int64","big":"7"}}"#
        )
    );
    // System properties only when listed; spaces after commas are accepted.
    let g = get(
        &t,
        "/sel(PartitionKey='p',RowKey='r')?$select=RowKey,%20age",
        JSON_NONE,
    )
    .await;
    assert_eq!(g.text(), r#"{"RowKey":"r","age":30}"#);
    // The list is echoed as URL text: `$select=age%2C%20sex` gives `&$select=age,%20sex`
    // [rec: Py test_query_entities_with_select].
    let g = get(
        &t,
        "/sel(PartitionKey='p',RowKey='r')?$select=age%2C%20sex",
        JSON_MINIMAL,
    )
    .await;
    assert_eq!(
        g.json()["odata.metadata"],
        format!("{base}/$metadata#sel/@Element&$select=age,%20sex")
    );
    assert_eq!(g.json()["age"], 30);
    assert_eq!(g.json()["sex"], "f");
    // A lone space selects everything and echoes an empty list (Azure docs: "Querying tables and entities").
    let g = get(
        &t,
        "/sel(PartitionKey='p',RowKey='r')?$select=%20",
        JSON_MINIMAL,
    )
    .await;
    assert_eq!(
        g.json()["odata.metadata"],
        format!("{base}/$metadata#sel/@Element&$select=")
    );
    assert_eq!(g.json()["PartitionKey"], "p");
    assert_eq!(g.json()["big"], "7");
    let g = get(&t, "/sel(PartitionKey='p',RowKey='r')?$select=*", JSON_NONE).await;
    assert_eq!(g.json()["PartitionKey"], "p");
    assert_eq!(g.json()["age"], 30);
}

async fn prefer_is_ignored_by_updates_merges_and_deletes(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    t.create_table("pref").await;
    let url = "/pref(PartitionKey='p',RowKey='r')";
    t.insert("pref", &json!({"PartitionKey": "p", "RowKey": "r"}))
        .await;
    for prefer in ["return-content", "return-no-content"] {
        for (method, if_match) in [("PUT", "*"), ("MERGE", "*"), ("PUT", ""), ("MERGE", "")] {
            let mut headers = vec![("Prefer", prefer)];
            if !if_match.is_empty() {
                headers.push(("If-Match", if_match));
            }
            let r = t.send(method, url, &headers, Some(r#"{"v":1}"#)).await;
            assert_eq!(r.status, StatusCode::NO_CONTENT, "{method} {prefer}");
            assert!(r.body.is_empty());
            assert_eq!(r.header("preference-applied"), None);
            assert_eq!(r.header("dataserviceid"), None);
        }
    }
    let r = t
        .send(
            "DELETE",
            url,
            &[("If-Match", "*"), ("Prefer", "return-content")],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(r.header("preference-applied"), None);
}

#[tokio::test]
async fn standard_response_headers_on_successes_and_errors() {
    let t = TestServer::start().await;
    t.create_table("hdrs").await;
    let url = "/hdrs(PartitionKey='p',RowKey='r')";
    t.insert("hdrs", &json!({"PartitionKey": "p", "RowKey": "r"}))
        .await;
    let mut request_ids = Vec::new();
    for (method, path, expected) in [
        ("GET", url, 200),
        ("GET", "/hdrs(PartitionKey='p',RowKey='missing')", 404),
        ("GET", "/Tables", 200),
        ("DELETE", "/Tables('nope')", 404),
    ] {
        let r = t
            .send(
                method,
                path,
                &[
                    ("x-ms-client-request-id", "my-client-id 42"),
                    ("x-ms-version", "2020-12-06"),
                ],
                None,
            )
            .await;
        assert_eq!(r.status.as_u16(), expected, "{method} {path}");
        assert_eq!(r.header("x-ms-client-request-id"), Some("my-client-id 42"));
        assert_eq!(
            r.header("x-ms-version"),
            Some("2020-12-06"),
            "echoed verbatim"
        );
        let id = r
            .header("x-ms-request-id")
            .expect("x-ms-request-id")
            .to_string();
        assert!(uuid_like(&id), "request id is a GUID: {id}");
        request_ids.push(id);
        let date = r.header("date").expect("Date");
        assert!(
            date.ends_with(" GMT") && date.len() == 29,
            "RFC 1123 Date: {date}"
        );
        assert_eq!(r.header("cache-control"), Some("no-cache"));
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(r.header("dataserviceversion"), None);
    }
    request_ids.sort();
    request_ids.dedup();
    assert_eq!(request_ids.len(), 4, "a fresh request id per request");
    // Without x-ms-version the server still answers with one; without a client id none is echoed.
    let r = t.send("GET", url, &[], None).await;
    assert!(r.header("x-ms-version").is_some());
    assert_eq!(r.header("x-ms-client-request-id"), None);
    // A client id over 1 KiB is not echoed.
    let long = "x".repeat(1025);
    let r = t
        .send(
            "GET",
            url,
            &[("x-ms-client-request-id", long.as_str())],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("x-ms-client-request-id"), None);
    let ok = "y".repeat(1024);
    let r = t
        .send("GET", url, &[("x-ms-client-request-id", ok.as_str())], None)
        .await;
    assert_eq!(r.header("x-ms-client-request-id"), Some(ok.as_str()));
    assert_alive(&t).await;
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36
        && s.chars().enumerate().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

#[tokio::test]
async fn timestamps_and_etags_change_on_every_write() {
    let t = TestServer::start().await;
    t.create_table("stamps").await;
    let url = "/stamps(PartitionKey='p',RowKey='r')";
    let r = t
        .insert("stamps", &json!({"PartitionKey": "p", "RowKey": "r"}))
        .await;
    let mut etags = vec![r.header("etag").expect("ETag").to_string()];
    for i in 0..20 {
        let method = if i % 2 == 0 { "PUT" } else { "MERGE" };
        let r = t
            .send(method, url, &[("If-Match", "*")], Some(r#"{"v":1}"#))
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        etags.push(r.header("etag").expect("ETag").to_string());
    }
    let stamps: Vec<String> = etags.iter().map(|e| etag_timestamp(e)).collect();
    for s in &stamps {
        assert_datetime_text(s);
    }
    let mut sorted = stamps.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        stamps.len(),
        "every write gets a distinct ETag"
    );
    let e = get(&t, url, JSON_MINIMAL).await.json();
    assert_eq!(e["Timestamp"], stamps[stamps.len() - 1]);
}

#[tokio::test]
async fn body_keys_must_match_the_url_keys() {
    let t = TestServer::start().await;
    t.create_table("keyed").await;
    let url = "/keyed(PartitionKey='p',RowKey='r')";
    let r = t
        .send(
            "PUT",
            url,
            &[],
            Some(r#"{"PartitionKey":"other","RowKey":"r"}"#),
        )
        .await;
    assert_error(&r, 400, "InvalidInput");
    let r = t
        .send(
            "MERGE",
            url,
            &[],
            Some(r#"{"PartitionKey":"p","RowKey":"other"}"#),
        )
        .await;
    assert_error(&r, 400, "InvalidInput");
    // Matching keys in the body are fine.
    let r = t
        .send(
            "PUT",
            url,
            &[],
            Some(r#"{"PartitionKey":"p","RowKey":"r","v":1}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_alive(&t).await;
}

/// A value that does not read as its declared type is Azure's 400 `InvalidInput` "An error
/// occurred while processing this request." (Azurite's commit ad3114ce compared the Double
/// overflow with Azure); the property and type follow after `Time:`, as Azure's details do.
/// A `null`, typed or not, is no such value: Azure drops it (docs/compatibility.md).
#[tokio::test]
async fn unreadable_typed_values_get_azures_message() {
    let t = TestServer::start().await;
    t.create_table("typed").await;
    for (value, ty) in [
        (json!("1.797693134862316e308"), "Edm.Double"),
        (json!(""), "Edm.DateTime"),
        (json!("abc"), "Edm.Int32"),
    ] {
        let body = json!({"PartitionKey": "p", "RowKey": "r", "v": value, "v@odata.type": ty});
        let r = t.send("POST", "/typed", &[], Some(&body.to_string())).await;
        assert_error(&r, 400, "InvalidInput");
        let message = r.json()["odata.error"]["message"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            message.starts_with("An error occurred while processing this request.\nRequestId:"),
            "{ty}: {message}"
        );
        assert!(
            message.ends_with(&format!("\nThe value of property 'v' is not a valid {ty}.")),
            "{ty}: {message}"
        );
    }
    // The largest finite Double is a value; a typed null is dropped.
    let body = json!({"PartitionKey": "p", "RowKey": "max", "v": "1.797693134862315e308", "v@odata.type": "Edm.Double", "n": null, "n@odata.type": "Edm.DateTime"});
    let r = t.send("POST", "/typed", &[], Some(&body.to_string())).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    assert!(r.json().get("n").is_none(), "{}", r.text());
}

// The cases above whose behaviour is the same under both flavours, run under each.
both_flavours!(
    update_replaces_the_whole_property_set,
    unannotated_large_integers_are_stored_as_double,
    prefer_is_ignored_by_updates_merges_and_deletes,
);
