//! Bad input over raw HTTP (issue 2): every malformed request gets Azure's answer (status,
//! `x-ms-error-code`, error body) — never a panic, hang or 500 — and the server keeps answering.

use crate::common;

use common::assert::{assert_alive, assert_error, assert_error_message, xml_error_code};
use common::raw;
use common::{Reply, Signing, TestServer};
use reqwest::StatusCode;
use serde_json::json;

/// An unsigned request to an absolute URL (outside the account URL) or with a byte body.
async fn send_to(
    t: &TestServer,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Reply {
    let req = common::request(&t.client, method, url, headers, body, Signing::None);
    t.exchange(req).await
}

/// A server in process with a table. These tests are about input handling, and several send
/// raw or unsigned requests, so authentication is off (its refusals are covered by
/// tests/it/auth.rs).
async fn with_table(name: &str) -> TestServer {
    filled(TestServer::start_with(unsigned()).await, name).await
}

/// [`with_table`] on a loopback port, for the requests only raw HTTP can send (bytes a URL
/// cannot hold, no `Accept` at all, broken framing).
async fn with_table_listening(name: &str) -> TestServer {
    filled(TestServer::listening_with(unsigned()).await, name).await
}

fn unsigned() -> tablestore::config::Config {
    let mut config = tablestore::config::Config::for_tests();
    config.disable_auth = true;
    config
}

async fn filled(t: TestServer, name: &str) -> TestServer {
    t.create_table(name).await;
    t.insert(name, &json!({"PartitionKey": "p", "RowKey": "r", "v": 1}))
        .await;
    t
}

/// Asserts an error in the OData XML form (`Accept` not JSON).
fn assert_xml_error(r: &Reply, status: u16, code: &str) {
    assert_eq!(r.status.as_u16(), status, "{}", r.text());
    assert_eq!(r.header("x-ms-error-code"), Some(code));
    assert_eq!(
        r.header("content-type"),
        Some("application/xml;charset=utf-8")
    );
    assert_eq!(xml_error_code(r), code);
    let text = r.text();
    assert!(
        text.starts_with(r#"<?xml version="1.0" encoding="utf-8"?><error xmlns="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><code>"#),
        "{text}"
    );
    let id = r.header("x-ms-request-id").expect("request id");
    assert!(text.contains(&format!("\nRequestId:{id}\nTime:")), "{text}");
    assert!(text.ends_with("</message></error>"), "{text}");
}

#[tokio::test]
async fn malformed_json_bodies_are_invalid_input() {
    let t = with_table("bodies").await;
    let entity = "/bodies(PartitionKey='p',RowKey='r')";
    let bodies: Vec<Vec<u8>> = vec![
        br#"{"PartitionKey":"#.to_vec(),
        br#"{"PartitionKey":"p","RowKey":"r",}"#.to_vec(),
        br#"{"PartitionKey":"p" "RowKey":"r"}"#.to_vec(),
        br#""just a string""#.to_vec(),
        b"123".to_vec(),
        b"null".to_vec(),
        br#"[{"PartitionKey":"p","RowKey":"r"}]"#.to_vec(),
        br#"{"PartitionKey":"p","RowKey":"r"} trailing"#.to_vec(),
        br#"{"PartitionKey":"p","RowKey":"r","s":"\ud800"}"#.to_vec(),
        br#"{'PartitionKey':'p'}"#.to_vec(),
        b"\xff\xfe{}".to_vec(),
        b"{\"PartitionKey\":\"p\xff\",\"RowKey\":\"r\"}".to_vec(),
        b"not json at all".to_vec(),
    ];
    for body in bodies {
        for (method, path, headers) in [
            ("POST", format!("{}/bodies", t.base()), vec![]),
            ("POST", format!("{}/Tables", t.base()), vec![]),
            (
                "PUT",
                format!("{}{entity}", t.base()),
                vec![("If-Match", "*")],
            ),
            ("MERGE", format!("{}{entity}", t.base()), vec![]),
        ] {
            let r = send_to(&t, method, &path, &headers, Some(body.clone())).await;
            assert_error(&r, 400, "InvalidInput");
        }
    }
    // An empty body on insert is not an entity either.
    let r = send_to(
        &t,
        "POST",
        &format!("{}/bodies", t.base()),
        &[],
        Some(Vec::new()),
    )
    .await;
    assert_error(&r, 400, "InvalidInput");
    // The stored entity is untouched.
    let g = t.send("GET", entity, &[], None).await;
    assert_eq!(g.json()["v"], 1);
    assert_alive(&t).await;
}

#[tokio::test]
async fn deeply_nested_json_is_refused_without_harm() {
    let t = with_table("nested").await;
    let depth = 100_000;
    let arrays = format!(
        r#"{{"PartitionKey":"p","RowKey":"deep","a":{}{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let objects = format!(
        r#"{{"PartitionKey":"p","RowKey":"deep","a":{}1{}}}"#,
        r#"{"b":"#.repeat(depth),
        "}".repeat(depth)
    );
    let unclosed = format!(r#"{{"TableName":{}"#, "[".repeat(depth));
    for body in [&arrays, &objects] {
        let r = t.send("POST", "/nested", &[], Some(body)).await;
        assert_error(&r, 400, "InvalidInput");
        let r = t
            .send(
                "MERGE",
                "/nested(PartitionKey='p',RowKey='r')",
                &[],
                Some(body),
            )
            .await;
        assert_error(&r, 400, "InvalidInput");
        let r = t.send("POST", "/Tables", &[], Some(body)).await;
        assert_error(&r, 400, "InvalidInput");
    }
    let r = t.send("POST", "/Tables", &[], Some(&unclosed)).await;
    assert_error(&r, 400, "InvalidInput");
    // Nesting that is legal JSON but shallow is still not a property value.
    let r = t
        .send(
            "POST",
            "/nested",
            &[],
            Some(r#"{"PartitionKey":"p","RowKey":"x","a":[[[1]]]}"#),
        )
        .await;
    assert_error(&r, 400, "InvalidInput");
    assert_alive(&t).await;
}

#[tokio::test]
async fn request_content_types_other_than_json_are_415() {
    let t = with_table("ctypes").await;
    let entity = r#"{"PartitionKey":"p","RowKey":"new","v":1}"#;
    let table = r#"{"TableName":"another"}"#;
    let cases = [
        ("text/plain", "MediaTypeNotSupported"),
        ("application/x-www-form-urlencoded", "MediaTypeNotSupported"),
        ("application/atom+xml", "AtomFormatNotSupported"),
        ("application/atom+xml;type=entry", "AtomFormatNotSupported"),
        ("application/xml", "AtomFormatNotSupported"),
    ];
    for (ct, code) in cases {
        let h = [("Content-Type", ct)];
        let r = t.send("POST", "/ctypes", &h, Some(entity)).await;
        assert_error(&r, 415, code);
        let r = t.send("POST", "/Tables", &h, Some(table)).await;
        assert_error(&r, 415, code);
        let r = t
            .send(
                "PUT",
                "/ctypes(PartitionKey='p',RowKey='r')",
                &h,
                Some(entity),
            )
            .await;
        assert_error(&r, 415, code);
        let r = t
            .send(
                "MERGE",
                "/ctypes(PartitionKey='p',RowKey='r')",
                &h,
                Some(entity),
            )
            .await;
        assert_error(&r, 415, code);
    }
    // JSON with any parameters, in any case, is fine.
    for (i, ct) in [
        "application/json",
        "application/json;odata=nometadata",
        "application/json;odata=minimalmetadata;type=entry;charset=utf-8",
        "application/json; charset=utf-8",
        "Application/JSON",
    ]
    .into_iter()
    .enumerate()
    {
        let body = json!({"PartitionKey": "p", "RowKey": format!("ok{i}")}).to_string();
        let r = t
            .send("POST", "/ctypes", &[("Content-Type", ct)], Some(&body))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{ct}: {}", r.text());
    }
    assert_alive(&t).await;
}

#[tokio::test]
async fn atom_and_verbose_accept_are_415() {
    let t = with_table("accepts").await;
    let paths = [
        ("GET", "/Tables", None),
        ("GET", "/Tables('accepts')", None),
        ("GET", "/accepts()", None),
        ("GET", "/accepts(PartitionKey='p',RowKey='r')", None),
        (
            "POST",
            "/accepts",
            Some(r#"{"PartitionKey":"p","RowKey":"n"}"#),
        ),
        ("POST", "/Tables", Some(r#"{"TableName":"fresh"}"#)),
    ];
    for (method, path, body) in paths {
        for accept in [
            "application/atom+xml",
            "application/atom+xml,application/xml",
        ] {
            let r = t.send(method, path, &[("Accept", accept)], body).await;
            assert_xml_error(&r, 415, "AtomFormatNotSupported");
            assert!(r.text().contains("Atom format is not supported."));
        }
        let r = t
            .send(
                method,
                path,
                &[("Accept", "application/json;odata=verbose")],
                body,
            )
            .await;
        assert_error(&r, 415, "JsonVerboseFormatNotSupported");
        let with_format = if path.contains('?') {
            format!("{path}&$format=application%2Fjson%3Bodata%3Dverbose")
        } else {
            format!("{path}?$format=application%2Fjson%3Bodata%3Dverbose")
        };
        let r = t.send(method, &with_format, &[], body).await;
        assert_error(&r, 415, "JsonVerboseFormatNotSupported");
    }
    // Nothing was written by the refused requests.
    let r = t.send("GET", "/Tables", &[], None).await;
    assert_eq!(r.json()["value"].as_array().map(Vec::len), Some(1));
    let r = t
        .send("GET", "/accepts(PartitionKey='p',RowKey='n')", &[], None)
        .await;
    assert_error(&r, 404, "ResourceNotFound");
}

#[tokio::test]
async fn accept_any_gets_json_success_bodies_and_xml_error_bodies() {
    let t = with_table_listening("anyaccept").await;
    let r = t
        .send(
            "GET",
            "/anyaccept(PartitionKey='p',RowKey='r')",
            &[("Accept", "*/*")],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.header("content-type"),
        Some("application/json;odata=minimalmetadata;streaming=true;charset=utf-8")
    );
    assert_eq!(r.json()["v"], 1);
    let r = t
        .send(
            "GET",
            "/anyaccept(PartitionKey='p',RowKey='x')",
            &[("Accept", "*/*")],
            None,
        )
        .await;
    assert_xml_error(&r, 404, "ResourceNotFound");
    assert!(r
        .text()
        .contains(r#"<message xml:lang="en-US">The specified resource does not exist."#));
    let r = t
        .send(
            "PATCH",
            "/anyaccept(PartitionKey='p',RowKey='r')",
            &[
                ("Accept", "*/*"),
                ("If-Match", "W/\"datetime'2001-01-01T00%3A00%3A00Z'\""),
            ],
            Some(r#"{"v":2}"#),
        )
        .await;
    assert_xml_error(&r, 412, "UpdateConditionNotSatisfied");
    // No Accept at all (reqwest would send `*/*`): JSON for successes and errors [emu].
    let (status, text) = raw::exchange_text(
        t.server.addr(),
        b"GET /devstoreaccount1/Tables('nope') HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 404);
    let lower = text.to_ascii_lowercase();
    assert!(
        lower.contains("\r\nx-ms-error-code: tablenotfound\r\n"),
        "{text}"
    );
    assert!(
        lower.contains("\r\ncontent-type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n"),
        "{text}"
    );
    assert!(
        text.contains(r#"{"odata.error":{"code":"TableNotFound""#),
        "{text}"
    );
    let (status, text) = raw::exchange_text(
        t.server.addr(),
        b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 200);
    assert!(text.contains(r#"{"odata.metadata":"#), "{text}");
}

#[tokio::test]
async fn verbs_a_resource_does_not_support_are_405() {
    let t = with_table("verbs").await;
    let not_allowed = [
        ("PUT", "/Tables"),
        ("DELETE", "/Tables"),
        ("PATCH", "/Tables"),
        ("MERGE", "/Tables"),
        ("POST", "/Tables('verbs')"),
        ("PUT", "/Tables('verbs')"),
        ("MERGE", "/Tables('verbs')"),
        ("PUT", "/verbs"),
        ("DELETE", "/verbs"),
        ("MERGE", "/verbs"),
        ("PUT", "/verbs()"),
        ("DELETE", "/verbs()"),
        ("GET", "/$batch"),
        ("PUT", "/$batch"),
    ];
    for (method, path) in not_allowed {
        let r = t.send(method, path, &[], Some("{}")).await;
        assert_error_message(
            &r,
            405,
            "MethodNotAllowed",
            "The requested method is not allowed on the specified resource.",
        );
    }
    for method in ["FOO", "PROPFIND", "TRACE"] {
        let r = t.send(method, "/Tables", &[], None).await;
        assert_error(&r, 405, "UnsupportedHttpVerb");
        let r = t
            .send(method, "/verbs(PartitionKey='p',RowKey='r')", &[], None)
            .await;
        assert_error(&r, 405, "UnsupportedHttpVerb");
    }
    // The table and entity are still there.
    let r = t
        .send("GET", "/verbs(PartitionKey='p',RowKey='r')", &[], None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn x_http_method_misuse() {
    let t = with_table("tunnel").await;
    let url = "/tunnel(PartitionKey='p',RowKey='r')";
    for method in ["PUT", "MERGE", "GET", "DELETE"] {
        let r = t
            .send(
                method,
                url,
                &[("X-HTTP-Method", "MERGE"), ("If-Match", "*")],
                Some("{}"),
            )
            .await;
        assert_error_message(
            &r,
            400,
            "XMethodNotUsingPost",
            "The request uses X-HTTP-Method with an HTTP verb other than POST.",
        );
    }
    for value in ["GET", "POST", "FOO", ""] {
        let r = t
            .send(
                "POST",
                url,
                &[("X-HTTP-Method", value), ("If-Match", "*")],
                Some("{}"),
            )
            .await;
        assert_error_message(
            &r,
            400,
            "XMethodIncorrectValue",
            "The specified X-HTTP-Method is invalid.",
        );
    }
    let r = t
        .send(
            "POST",
            url,
            &[
                ("X-HTTP-Method", "MERGE"),
                ("X-HTTP-Method", "PUT"),
                ("If-Match", "*"),
            ],
            Some("{}"),
        )
        .await;
    assert_error_message(
        &r,
        400,
        "XMethodIncorrectCount",
        "More than one X-HTTP-Method is specified.",
    );
    let r = t
        .send(
            "POST",
            url,
            &[("X-HTTP-Method", "MERGE, DELETE"), ("If-Match", "*")],
            Some("{}"),
        )
        .await;
    assert_error(&r, 400, "XMethodIncorrectCount");
    // Lower case is accepted.
    let r = t
        .send(
            "POST",
            url,
            &[("X-HTTP-Method", "merge"), ("If-Match", "*")],
            Some(r#"{"w":2}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    // POST /{table} is always an insert, whatever X-HTTP-Method says [emu].
    let r = t
        .send(
            "POST",
            "/tunnel",
            &[("X-HTTP-Method", "MERGE")],
            Some(r#"{"PartitionKey":"p","RowKey":"ins"}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let g = t.send("GET", url, &[], None).await;
    assert_eq!(
        (g.json()["v"].clone(), g.json()["w"].clone()),
        (json!(1), json!(2))
    );
}

#[tokio::test]
async fn bad_x_ms_version_is_invalid_header_value() {
    let t = with_table("versions").await;
    for v in [
        "2019-2-02",
        "latest",
        "",
        "2019-02-02x",
        "02-02-2019",
        "2019/02/02",
    ] {
        let r = t.send("GET", "/Tables", &[("x-ms-version", v)], None).await;
        assert_error_message(
            &r,
            400,
            "InvalidHeaderValue",
            "The value for one of the HTTP headers is not in the correct format.",
        );
    }
    for v in ["2019-02-02", "2019-07-07", "2020-12-06", "2015-12-11"] {
        let r = t.send("GET", "/Tables", &[("x-ms-version", v)], None).await;
        assert_eq!(r.status, StatusCode::OK, "{v}");
        assert_eq!(r.header("x-ms-version"), Some(v));
    }
}

#[tokio::test]
async fn unknown_accounts_and_the_secondary_endpoint() {
    let t = with_table("accts").await;
    let endpoint = t.server.endpoint();
    for path in [
        "/nosuchaccount/Tables",
        "/nosuchaccount/accts(PartitionKey='p',RowKey='r')",
    ] {
        let r = send_to(&t, "GET", &format!("{endpoint}{path}"), &[], None).await;
        assert_error(&r, 403, "AuthenticationFailed");
    }
    // The secondary endpoint reads the primary's data and refuses writes.
    let secondary = format!("{endpoint}/devstoreaccount1-secondary");
    let r = send_to(
        &t,
        "GET",
        &format!("{secondary}/accts(PartitionKey='p',RowKey='r')"),
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let r = send_to(
        &t,
        "POST",
        &format!("{secondary}/Tables"),
        &[],
        Some(br#"{"TableName":"onsecondary"}"#.to_vec()),
    )
    .await;
    assert_error(&r, 403, "InsufficientAccountPermissions");
    assert_alive(&t).await;
}

#[tokio::test]
async fn bad_percent_encoding_and_invalid_utf8_in_the_path() {
    let t = with_table_listening("enc").await;
    for path in [
        "/enc(PartitionKey='%FF',RowKey='r')",
        "/enc(PartitionKey='%C3',RowKey='r')",
        "/enc(PartitionKey='%E6%BC',RowKey='r')",
        "/Tables('%FF')",
        "/%FF%FE()",
    ] {
        let r = t.send("GET", path, &[], None).await;
        assert_error(&r, 400, "InvalidUri");
        let r = t.send("DELETE", path, &[("If-Match", "*")], None).await;
        assert_error(&r, 400, "InvalidUri");
    }
    // An invalid escape is taken literally: a key that does not exist.
    let r = t
        .send("GET", "/enc(PartitionKey='%G1',RowKey='r')", &[], None)
        .await;
    assert_error(&r, 404, "ResourceNotFound");
    // Raw non-ASCII bytes in the request line.
    let addr = t.server.addr();
    let (status, _) = raw::exchange_text(
        addr,
        b"GET /devstoreaccount1/enc(PartitionKey='\xff',RowKey='r') HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = raw::exchange_text(addr, b"this is not http\r\n\r\n").await;
    assert_eq!(status, 400);
    let (status, text) = raw::exchange_text(
        addr,
        b"GET /devstoreaccount1/Tables HTTP/1.1\r\nHost: 127.0.0.1\r\nx-ms-version: \xff\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert_alive(&t).await;
}

#[tokio::test]
async fn a_body_with_broken_chunked_framing_is_a_bad_request_not_413() {
    let t = with_table_listening("chunks").await;
    let (status, text) = raw::exchange_text(
        t.server.addr(),
        b"POST /devstoreaccount1/chunks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nZZZ\r\nabc\r\n0\r\n\r\n",
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("\r\nx-ms-error-code: invalidinput\r\n"),
        "{text}"
    );
    // Well-formed chunked bodies are fine.
    let (status, text) = raw::exchange_text(
        t.server.addr(),
        b"POST /devstoreaccount1/chunks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n10\r\n{\"PartitionKey\":\r\n12\r\n\"p\",\"RowKey\":\"ch\"}\r\n0\r\n\r\n",
    )
    .await;
    assert_eq!(status, 201, "{text}");
    assert_alive(&t).await;
}

#[tokio::test]
async fn malformed_key_predicates_are_invalid_input() {
    let t = with_table("preds").await;
    let count_message = "The number of keys specified in the URI does not match number of key properties for the resource.";
    let bad = [
        "/preds(PartitionKey='p')",
        "/preds(RowKey='r')",
        "/preds(PartitionKey='p',PartitionKey='q')",
        "/preds(PartitionKey='p',RowKey='r',RowKey='s')",
        "/preds(PartitionKey='p',RowKey='r',Other='x')",
        "/preds(PartitionKey=p,RowKey=r)",
        "/preds(PartitionKey='p,RowKey='r')",
        "/preds(PartitionKey='p' RowKey='r')",
        "/preds('p')",
        "/preds(partitionkey='p',rowkey='r')",
        "/preds(PartitionKey='p',)",
        "/preds(,)",
        "/preds(PartitionKey='p',RowKey='r'",
        "/preds(PartitionKey='p',RowKey='r')x",
        "/preds(PartitionKey='p',RowKey='r",
    ];
    for path in bad {
        for (method, headers, body) in [
            ("GET", vec![], None),
            ("PUT", vec![("If-Match", "*")], Some("{}")),
            ("MERGE", vec![], Some("{}")),
            ("DELETE", vec![("If-Match", "*")], None),
        ] {
            let r = t.send(method, path, &headers, body).await;
            assert_error_message(&r, 400, "InvalidInput", count_message);
        }
    }
    let r = t
        .send("GET", "/preds(PartitionKey='p',RowKey='r')", &[], None)
        .await;
    assert_eq!(r.json()["v"], 1, "the entity is untouched");
    for path in [
        "/Tables(preds)",
        "/Tables('preds'",
        "/Tables('preds')x",
        "/Tables('a','b')",
    ] {
        let r = t.send("DELETE", path, &[], None).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{path}: {}", r.text());
        assert!(r.header("x-ms-error-code").is_some());
    }
    let names = t.send("GET", "/Tables", &[], None).await.json();
    assert_eq!(names["value"][0]["TableName"], "preds");
}

#[tokio::test]
async fn root_account_root_health_and_odd_paths() {
    let t = with_table("paths").await;
    let endpoint = t.server.endpoint();
    let r = send_to(&t, "GET", &format!("{endpoint}/_health"), &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.text(), "OK");
    for url in [
        format!("{endpoint}/"),
        format!("{endpoint}/devstoreaccount1"),
        format!("{endpoint}/devstoreaccount1/"),
        format!("{endpoint}/devstoreaccount1/paths/extra"),
    ] {
        let r = send_to(&t, "GET", &url, &[], None).await;
        assert_error(&r, 400, "InvalidUri");
    }
    // Unknown query parameters are ignored [emu]; the table name in the path may carry a slash.
    let r = t
        .send("GET", "/paths()?unknown=1&timeout=30", &[], None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = t.send("GET", "/Tables/", &[], None).await;
    assert_eq!(r.status, StatusCode::OK, "trailing slash: {}", r.text());
    // Service-level query parameters that are incomplete or unknown.
    for (query, code) in [
        ("?restype=service", "MissingRequiredQueryParameter"),
        ("?comp=properties", "InvalidQueryParameterValue"),
        ("?restype=service&comp=bogus", "InvalidQueryParameterValue"),
    ] {
        let r = send_to(
            &t,
            "GET",
            &format!("{endpoint}/devstoreaccount1/{query}"),
            &[],
            None,
        )
        .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(r.header("x-ms-error-code"), Some(code), "{query}");
    }
    assert_alive(&t).await;
}
