//! The service's limits over raw HTTP (issue 2, Azure docs: "Understanding the Table service data model"): property count, name length and
//! rules, value sizes, entity size (also reached by a merge), keys, value types, duplicates,
//! and the request body size.

use crate::common;

use common::assert::{assert_alive, assert_error, assert_error_message};
use common::{TestServer, JSON_NONE};
use reqwest::StatusCode;
use serde_json::{json, Map, Value};

const TOO_MANY: &str = "The entity contains more properties than allowed. Each entity can include up to 252 properties to store data. Each entity also has 3 system properties.";
const VALUE_TOO_LARGE: &str = "The property value is larger than the maximum size permitted.";
const NEED_VALUE: &str = "The values are not specified for all properties in the entity.";

fn entity(pk: &str, rk: &str, props: impl IntoIterator<Item = (String, Value)>) -> Value {
    let mut m = Map::new();
    m.insert("PartitionKey".into(), json!(pk));
    m.insert("RowKey".into(), json!(rk));
    for (k, v) in props {
        m.insert(k, v);
    }
    Value::Object(m)
}

fn numbered(prefix: &str, n: usize) -> impl Iterator<Item = (String, Value)> + '_ {
    (0..n).map(move |i| (format!("{prefix}{i:03}"), json!(i)))
}

async fn raw_post(t: &TestServer, table: &str, body: &str) -> common::Reply {
    t.send("POST", &format!("/{table}"), &[], Some(body)).await
}

#[tokio::test]
async fn at_most_252_custom_properties() {
    let t = TestServer::with_table("props").await;
    let r = t
        .post_entity("props", &entity("p", "ok", numbered("p", 252)), &[])
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let body = r.json();
    assert_eq!(body.as_object().expect("object").len(), 2 + 3 + 252);
    let r = t
        .post_entity("props", &entity("p", "over", numbered("p", 253)), &[])
        .await;
    assert_error_message(&r, 400, "TooManyProperties", TOO_MANY);
    // Nulls are not properties, so they do not count.
    let mut props: Vec<(String, Value)> = numbered("p", 252).collect();
    props.push(("nothing".into(), Value::Null));
    let r = t
        .post_entity("props", &entity("p", "nulls", props), &[])
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    // The same limit on replace and upsert.
    let big = entity("p", "ok", numbered("q", 253)).to_string();
    for (method, headers) in [
        ("PUT", vec![("If-Match", "*")]),
        ("PUT", vec![]),
        ("MERGE", vec![]),
    ] {
        let r = t
            .send(
                method,
                "/props(PartitionKey='p',RowKey='ok')",
                &headers,
                Some(&big),
            )
            .await;
        assert_error(&r, 400, "TooManyProperties");
    }
    let r = t
        .post_entity("props", &entity("p", "over", numbered("p", 255)), &[])
        .await;
    assert_error(&r, 400, "TooManyProperties");
}

#[tokio::test]
async fn property_names_up_to_255_characters() {
    let t = TestServer::with_table("names").await;
    let ok = "n".repeat(255);
    let r = t
        .post_entity("names", &entity("p", "ok", [(ok.clone(), json!(1))]), &[])
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    assert_eq!(r.json()[ok.as_str()], 1);
    let long = "n".repeat(256);
    let r = t
        .post_entity("names", &entity("p", "long", [(long, json!(1))]), &[])
        .await;
    assert_error_message(
        &r,
        400,
        "PropertyNameTooLong",
        "The property name exceeds the maximum allowed length (255).",
    );
}

#[tokio::test]
async fn invalid_property_names() {
    let t = TestServer::with_table("badnames").await;
    for name in [
        "1abc", "a-b", "a b", "a.b", "a$", "", "a/b", "a\u{0}b", "tab\t", "a@b", "ä-ö",
    ] {
        let r = t
            .post_entity(
                "badnames",
                &entity("p", "r", [(name.to_string(), json!(1))]),
                &[],
            )
            .await;
        assert_error_message(
            &r,
            400,
            "PropertyNameInvalid",
            "The property name is invalid.",
        );
        let r = t
            .send(
                "MERGE",
                "/badnames(PartitionKey='p',RowKey='r')",
                &[],
                Some(&entity("p", "r", [(name.to_string(), json!(1))]).to_string()),
            )
            .await;
        assert_error(&r, 400, "PropertyNameInvalid");
    }
    // Unicode letters, digits and `_` are fine; so is a null-valued property with a good name.
    for (i, name) in ["_under", "啊齄丂狛狜", "Ünïcode9", "a_1_b"]
        .into_iter()
        .enumerate()
    {
        let r = t
            .post_entity(
                "badnames",
                &entity("p", &format!("ok{i}"), [(name.to_string(), json!("v"))]),
                &[],
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{name}: {}", r.text());
        assert_eq!(r.json()[name], "v");
    }
}

#[tokio::test]
async fn string_values_up_to_32k_utf16_units_and_binary_up_to_64k_bytes() {
    let t = TestServer::with_table("sizes").await;
    let cases: Vec<(&str, Value, bool)> = vec![
        ("s_max", json!("a".repeat(32768)), true),
        ("s_over", json!("a".repeat(32769)), false),
        // U+1F600 is two UTF-16 units.
        ("s_emoji_max", json!("😀".repeat(16384)), true),
        (
            "s_emoji_over",
            json!(format!("{}a", "😀".repeat(16384))),
            false,
        ),
        // Three UTF-8 bytes but one UTF-16 unit each: 32768 of them fit.
        ("s_cjk_max", json!("漢".repeat(32768)), true),
    ];
    for (rk, value, fits) in cases {
        let r = t
            .post_entity(
                "sizes",
                &entity("p", rk, [("v".to_string(), value.clone())]),
                &[],
            )
            .await;
        if fits {
            assert_eq!(r.status, StatusCode::CREATED, "{rk}: {}", r.text());
            let g = t
                .send(
                    "GET",
                    &format!("/sizes(PartitionKey='p',RowKey='{rk}')"),
                    &[],
                    None,
                )
                .await;
            assert_eq!(g.json()["v"], value, "{rk} round trip");
        } else {
            assert_error_message(&r, 400, "PropertyValueTooLarge", VALUE_TOO_LARGE);
        }
    }
    use base64::Engine as _;
    let b64 = |n: usize| base64::engine::general_purpose::STANDARD.encode(vec![7u8; n]);
    let bin = |rk: &str, n: usize| {
        let mut e = entity("p", rk, []);
        e["b@odata.type"] = json!("Edm.Binary");
        e["b"] = json!(b64(n));
        e
    };
    let r = t.post_entity("sizes", &bin("b_max", 65536), &[]).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let r = t.post_entity("sizes", &bin("b_over", 65537), &[]).await;
    assert_error_message(&r, 400, "PropertyValueTooLarge", VALUE_TOO_LARGE);
    // The same check on replace and merge.
    let too_long = json!({"v": "a".repeat(32769)}).to_string();
    for method in ["PUT", "MERGE"] {
        let r = t
            .send(
                method,
                "/sizes(PartitionKey='p',RowKey='s_max')",
                &[("If-Match", "*")],
                Some(&too_long),
            )
            .await;
        assert_error(&r, 400, "PropertyValueTooLarge");
    }
}

fn big_strings(prefix: &str, n: usize) -> impl Iterator<Item = (String, Value)> + '_ {
    (0..n).map(move |i| (format!("{prefix}{i:02}"), json!("x".repeat(32768))))
}

#[tokio::test]
async fn entities_over_one_mebibyte_are_refused() {
    let t = TestServer::with_table("huge").await;
    // 15 strings of 64 KiB each: under 1 MiB by the service's size formula.
    let r = t
        .post_entity(
            "huge",
            &entity("p", "fits", big_strings("s", 15)),
            &[("Prefer", "return-no-content")],
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    // 16 of them: just over.
    let r = t
        .post_entity("huge", &entity("p", "over", big_strings("s", 16)), &[])
        .await;
    assert_error_message(
        &r,
        400,
        "EntityTooLarge",
        "The entity is larger than the maximum size permitted.",
    );
    let r = t
        .send("GET", "/huge(PartitionKey='p',RowKey='over')", &[], None)
        .await;
    assert_error(&r, 404, "ResourceNotFound");
    // Binary counts its bytes.
    let mut e = entity("p", "bins", []);
    use base64::Engine as _;
    let chunk = base64::engine::general_purpose::STANDARD.encode(vec![1u8; 65536]);
    for i in 0..16 {
        e[format!("b{i:02}@odata.type")] = json!("Edm.Binary");
        e[format!("b{i:02}")] = json!(chunk);
    }
    let r = t.post_entity("huge", &e, &[]).await;
    assert_error(&r, 400, "EntityTooLarge");
}

#[tokio::test]
async fn a_merge_that_would_exceed_the_limits_is_refused_and_changes_nothing() {
    let t = TestServer::with_table("grow").await;
    let url = "/grow(PartitionKey='p',RowKey='r')";
    let r = t
        .post_entity("grow", &entity("p", "r", big_strings("s", 15)), &[])
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let etag = r.header("etag").expect("ETag").to_string();
    let more = Value::Object(big_strings("t", 1).collect()).to_string();
    for headers in [
        vec![("If-Match", "*")],
        vec![("If-Match", etag.as_str())],
        vec![],
    ] {
        let r = t.send("MERGE", url, &headers, Some(&more)).await;
        assert_error(&r, 400, "EntityTooLarge");
    }
    // Overwriting an existing property with a value of the same size is fine.
    let same = Value::Object(big_strings("s", 1).collect()).to_string();
    let r = t
        .send("MERGE", url, &[("If-Match", etag.as_str())], Some(&same))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    let etag = r.header("etag").expect("ETag").to_string();
    let g = t.send("GET", url, &[("Accept", JSON_NONE)], None).await;
    assert_eq!(g.header("etag"), Some(etag.as_str()));
    assert_eq!(g.json().as_object().expect("object").len(), 3 + 15);

    // Property count through merges.
    let r = t
        .post_entity("grow", &entity("q", "r", numbered("p", 250)), &[])
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let url = "/grow(PartitionKey='q',RowKey='r')";
    let three = Value::Object(numbered("new", 3).collect()).to_string();
    let r = t
        .send("MERGE", url, &[("If-Match", "*")], Some(&three))
        .await;
    assert_error_message(&r, 400, "TooManyProperties", TOO_MANY);
    let r = t.send("PATCH", url, &[], Some(&three)).await;
    assert_error(&r, 400, "TooManyProperties");
    let two = Value::Object(numbered("new", 2).collect()).to_string();
    let r = t.send("MERGE", url, &[("If-Match", "*")], Some(&two)).await;
    assert_eq!(
        r.status,
        StatusCode::NO_CONTENT,
        "252 properties fit: {}",
        r.text()
    );
    let r = t.send("MERGE", url, &[("If-Match", "*")], Some(&two)).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "overwriting adds nothing");
    let g = t.send("GET", url, &[("Accept", JSON_NONE)], None).await;
    assert_eq!(g.json().as_object().expect("object").len(), 3 + 252);
}

#[tokio::test]
async fn keys_up_to_1024_characters() {
    let t = TestServer::with_table("keys").await;
    let max = "k".repeat(1024);
    let over = "k".repeat(1025);
    let r = t.post_entity("keys", &entity(&max, "r", []), &[]).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let r = t.post_entity("keys", &entity("p", &max, []), &[]).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let g = t
        .send(
            "GET",
            &format!("/keys(PartitionKey='p',RowKey='{max}')"),
            &[],
            None,
        )
        .await;
    assert_eq!(g.status, StatusCode::OK);
    let r = t.post_entity("keys", &entity(&over, "r", []), &[]).await;
    assert_error(&r, 400, "KeyValueTooLarge");
    let r = t.post_entity("keys", &entity("p", &over, []), &[]).await;
    assert_error(&r, 400, "KeyValueTooLarge");
    // Upserts take the keys from the URL.
    for method in ["PUT", "MERGE"] {
        let r = t
            .send(
                method,
                &format!("/keys(PartitionKey='p',RowKey='{over}')"),
                &[],
                Some("{}"),
            )
            .await;
        assert_error(&r, 400, "KeyValueTooLarge");
    }
    // UTF-16 units: 512 two-unit characters fill the key exactly.
    let emoji = "😀".repeat(512);
    let r = t.post_entity("keys", &entity(&emoji, "r", []), &[]).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let r = t
        .post_entity("keys", &entity(&format!("{emoji}a"), "r", []), &[])
        .await;
    assert_error(&r, 400, "KeyValueTooLarge");
}

#[tokio::test]
async fn forbidden_key_characters() {
    let t = TestServer::with_table("badkeys").await;
    for c in [
        "/", "\\", "#", "?", "\t", "\n", "\r", "\u{0}", "\u{1f}", "\u{7f}", "\u{85}", "\u{9f}",
    ] {
        let key = format!("a{c}b");
        let r = t.post_entity("badkeys", &entity(&key, "r", []), &[]).await;
        assert_error(&r, 400, "InvalidInput");
        let r = t.post_entity("badkeys", &entity("p", &key, []), &[]).await;
        assert_error(&r, 400, "InvalidInput");
        let url = common::url::entity_url("badkeys", "p", &key);
        let r = t.send("PUT", &url, &[], Some("{}")).await;
        assert_error(&r, 400, "InvalidInput");
    }
    let r = t.send("GET", "/badkeys()", &[], None).await;
    assert_eq!(r.json()["value"], json!([]), "nothing was stored");
}

#[tokio::test]
async fn missing_null_or_non_string_keys() {
    let t = TestServer::with_table("nokeys").await;
    for body in [
        r#"{"RowKey":"r"}"#,
        r#"{"PartitionKey":"p"}"#,
        r#"{}"#,
        r#"{"PartitionKey":null,"RowKey":"r"}"#,
        r#"{"PartitionKey":"p","RowKey":null,"v":1}"#,
    ] {
        let r = raw_post(&t, "nokeys", body).await;
        assert_error_message(&r, 400, "PropertiesNeedValue", NEED_VALUE);
    }
    for body in [
        r#"{"PartitionKey":5,"RowKey":"r"}"#,
        r#"{"PartitionKey":"p","RowKey":true}"#,
        r#"{"PartitionKey":"p","RowKey":["r"]}"#,
        r#"{"PartitionKey@odata.type":"Edm.Int32","PartitionKey":"5","RowKey":"r"}"#,
    ] {
        let r = raw_post(&t, "nokeys", body).await;
        assert_error(&r, 400, "InvalidInput");
    }
    // Edm.String on the keys is accepted [rec: Py].
    let r = raw_post(
        &t,
        "nokeys",
        r#"{"PartitionKey@odata.type":"Edm.String","PartitionKey":"p","RowKey":"r"}"#,
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
}

#[tokio::test]
async fn values_that_do_not_fit_their_type() {
    let t = TestServer::with_table("typed").await;
    let annotated = |ty: &str, v: Value| {
        let mut e = entity("p", "r", []);
        e["v@odata.type"] = json!(ty);
        e["v"] = v;
        e
    };
    // DateTime outside 1601-01-01 .. 9999-12-31.
    for v in ["1600-12-31T23:59:59.9999999Z", "0001-01-01T00:00:00Z"] {
        let r = t
            .post_entity("typed", &annotated("Edm.DateTime", json!(v)), &[])
            .await;
        assert_error(&r, 400, "OutOfRangeInput");
    }
    let bad: Vec<(&str, Value)> = vec![
        ("Edm.DateTime", json!("2020-13-01T00:00:00Z")),
        ("Edm.DateTime", json!("yesterday")),
        ("Edm.DateTime", json!("10000-01-01T00:00:00Z")),
        ("Edm.DateTime", json!(5)),
        ("Edm.Int32", json!(2147483648i64)),
        ("Edm.Int32", json!(-2147483649i64)),
        ("Edm.Int32", json!(1.5)),
        ("Edm.Int64", json!("9223372036854775808")),
        ("Edm.Int64", json!("abc")),
        ("Edm.Int64", json!("1.0")),
        ("Edm.Double", json!("abc")),
        ("Edm.Double", json!(true)),
        ("Edm.Guid", json!("not-a-guid")),
        ("Edm.Guid", json!("4185404a581848c3b9bef217df0dba6f")),
        ("Edm.Binary", json!("not base64!")),
        ("Edm.Binary", json!(12)),
        ("Edm.Boolean", json!(1)),
        ("Edm.String", json!(5)),
    ];
    for (ty, v) in bad {
        let r = t.post_entity("typed", &annotated(ty, v), &[]).await;
        assert_error(&r, 400, "InvalidInput");
    }
    // Unknown type names, and annotations that are not strings.
    for ty in [
        "Edm.Single",
        "Edm.Decimal",
        "edm.string",
        "Edm.DateTimeOffset",
        "String",
    ] {
        let r = t
            .post_entity("typed", &annotated(ty, json!("1")), &[])
            .await;
        assert_error(&r, 400, "InvalidInput");
    }
    let r = raw_post(
        &t,
        "typed",
        r#"{"PartitionKey":"p","RowKey":"r","v@odata.type":5,"v":"1"}"#,
    )
    .await;
    assert_error(&r, 400, "InvalidInput");
    // Arrays and objects are not property values.
    for v in [json!([1, 2]), json!({"a": 1}), json!([])] {
        let r = t
            .post_entity("typed", &entity("p", "r", [("v".to_string(), v)]), &[])
            .await;
        assert_error(&r, 400, "InvalidInput");
    }
    let r = t.send("GET", "/typed()", &[], None).await;
    assert_eq!(r.json()["value"], json!([]), "nothing was stored");
}

#[tokio::test]
async fn duplicate_property_names() {
    let t = TestServer::with_table("dupes").await;
    for body in [
        r#"{"PartitionKey":"p","RowKey":"r","a":1,"a":2}"#,
        r#"{"PartitionKey":"p","RowKey":"r","a":1,"b":2,"a":"x"}"#,
        r#"{"PartitionKey":"p","PartitionKey":"p","RowKey":"r"}"#,
        r#"{"PartitionKey":"p","RowKey":"r","a@odata.type":"Edm.Int64","a@odata.type":"Edm.Int64","a":"1"}"#,
    ] {
        let r = raw_post(&t, "dupes", body).await;
        assert_error_message(
            &r,
            400,
            "DuplicatePropertiesSpecified",
            "A property is specified more than one time.",
        );
    }
    for method in ["PUT", "MERGE"] {
        let r = t
            .send(
                method,
                "/dupes(PartitionKey='p',RowKey='r')",
                &[],
                Some(r#"{"a":1,"a":2}"#),
            )
            .await;
        assert_error(&r, 400, "DuplicatePropertiesSpecified");
    }
}

#[tokio::test]
async fn request_bodies_over_4_mib_are_refused_with_413() {
    let t = TestServer::with_table("bodies").await;
    const LIMIT: usize = 4 * 1024 * 1024;
    let small = r#"{"PartitionKey":"p","RowKey":"exact","v":1}"#;
    // Exactly 4 MiB (JSON whitespace padding) is read and accepted.
    let exact = format!("{small}{}", " ".repeat(LIMIT - small.len()));
    assert_eq!(exact.len(), LIMIT);
    let r = raw_post(&t, "bodies", &exact).await;
    assert_eq!(
        r.status,
        StatusCode::CREATED,
        "{}",
        &r.text()[..r.text().len().min(300)]
    );
    // One byte more is refused.
    let over = format!("{exact} ");
    let r = raw_post(&t, "bodies", &over).await;
    assert_error(&r, 413, "RequestBodyTooLarge");
    // Much more is refused the same way, also on updates.
    let big = format!(
        r#"{{"PartitionKey":"p","RowKey":"big","v":"{}"}}"#,
        "a".repeat(2 * LIMIT)
    );
    let r = raw_post(&t, "bodies", &big).await;
    assert_error(&r, 413, "RequestBodyTooLarge");
    let r = t
        .send(
            "PUT",
            "/bodies(PartitionKey='p',RowKey='big')",
            &[],
            Some(&big),
        )
        .await;
    assert_error(&r, 413, "RequestBodyTooLarge");
    let r = t.send("POST", "/Tables", &[], Some(&big)).await;
    assert_error(&r, 413, "RequestBodyTooLarge");
    assert_alive(&t).await;
    let r = t
        .send("GET", "/bodies(PartitionKey='p',RowKey='big')", &[], None)
        .await;
    assert_error(&r, 404, "ResourceNotFound");
}
