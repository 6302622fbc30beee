//! Tests against `tests/golden/batch/` (bodies sent by the official SDKs, captured on loopback by
//! `tests/golden/batch/capture/run.sh`, plus hand-written legacy bodies) and property tests:
//! arbitrary input never panics, and encode -> decode round-trips generated sub-requests.

use super::*;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    // The fixtures are the repository's, two folders above this crate.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/batch")
}

fn load(name: &str) -> (String, Vec<u8>) {
    let dir = golden_dir();
    let ct = std::fs::read_to_string(dir.join(format!("{name}.content-type")))
        .unwrap_or_else(|e| panic!("{name}.content-type: {e}"));
    let body = std::fs::read(dir.join(format!("{name}.http")))
        .unwrap_or_else(|e| panic!("{name}.http: {e}"));
    (ct.trim().to_owned(), body)
}

fn decode_fixture(name: &str) -> BatchBody {
    let (ct, body) = load(name);
    decode_batch(&ct, &body).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn changeset(name: &str) -> Vec<SubRequest> {
    match decode_fixture(name) {
        BatchBody::Changeset(ops) => ops,
        BatchBody::Query(q) => panic!("{name}: expected a change set, got query {q:?}"),
    }
}

const ETAG: &str = "W/\"datetime'2024-01-01T00%3A00%3A00.0000000Z'\"";
const TABLE: &str = "/devstoreaccount1/batchtable";

/// What one decoded operation of an SDK fixture must look like.
struct Want {
    method: &'static str,
    /// Path after the table name: "" for inserts, else the key predicate as the SDK wrote it.
    key: &'static str,
    if_match: Option<&'static str>,
    /// `(RowKey, Value)` of the JSON body, or `None` for an empty body.
    body: Option<(&'static str, i64)>,
}

fn op(
    method: &'static str,
    key: &'static str,
    if_match: Option<&'static str>,
    body: Option<(&'static str, i64)>,
) -> Want {
    Want {
        method,
        key,
        if_match,
        body,
    }
}

fn key(rk: &'static str) -> &'static str {
    match rk {
        "r1" => "(PartitionKey='pk1',RowKey='r1')",
        "r2" => "(PartitionKey='pk1',RowKey='r2')",
        "r3" => "(PartitionKey='pk1',RowKey='r3')",
        "r4" => "(PartitionKey='pk1',RowKey='r4')",
        other => other,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Sdk {
    Py,
    Js,
}

fn check(name: &str, sdk: Sdk, ops: &[SubRequest], want: &[Want]) {
    assert_eq!(ops.len(), want.len(), "{name}: operation count");
    for (i, (got, want)) in ops.iter().zip(want).enumerate() {
        let ctx = format!("{name} op {i}");
        assert_eq!(got.method, want.method, "{ctx}");
        assert!(
            got.url.starts_with("http://127.0.0.1:"),
            "{ctx}: absolute URL expected, got {}",
            got.url
        );
        let (path, query) = got.path_and_query();
        assert_eq!(path, format!("{TABLE}{}", want.key), "{ctx}");
        assert_eq!(query, None, "{ctx}");
        assert_eq!(got.header("If-Match"), want.if_match, "{ctx}");
        assert_eq!(got.header("DataServiceVersion"), Some("3.0"), "{ctx}");
        match sdk {
            // Python numbers the parts from 0 in the part's MIME headers.
            Sdk::Py => {
                assert_eq!(got.content_id, Some(i.to_string()), "{ctx}");
                assert_eq!(got.header("x-ms-version"), Some("2019-02-02"), "{ctx}");
                assert_eq!(got.header("Prefer"), None, "{ctx}");
            }
            Sdk::Js => {
                assert_eq!(got.content_id, None, "{ctx}");
                let prefer = (want.method == "POST").then_some("return-no-content");
                assert_eq!(got.header("Prefer"), prefer, "{ctx}");
            }
        }
        match want.body {
            None => assert!(got.body.is_empty(), "{ctx}: body {:?}", got.body),
            Some((rk, value)) => {
                let v: Value = serde_json::from_slice(&got.body)
                    .unwrap_or_else(|e| panic!("{ctx}: body is not JSON: {e}"));
                assert_eq!(v["PartitionKey"], "pk1", "{ctx}");
                assert_eq!(v["RowKey"], rk, "{ctx}");
                assert_eq!(v["Value"], value, "{ctx}");
                if sdk == Sdk::Py {
                    let cl = got
                        .header("Content-Length")
                        .expect("Python sends Content-Length");
                    assert_eq!(cl, got.body.len().to_string(), "{ctx}");
                }
                let ct = got.header("Content-Type").expect("content type");
                assert!(ct.starts_with("application/json"), "{ctx}: {ct}");
            }
        }
    }
}

/// Every `.http` file in the directory decodes (new fixtures are covered automatically).
#[test]
fn every_fixture_decodes() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(golden_dir()).expect("golden dir") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_some_and(|e| e == "http") {
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("file name")
                .to_owned();
            let _ = decode_fixture(&name);
            names.push(name);
        }
    }
    assert!(names.len() >= 21, "fixtures found: {names:?}");
}

fn sdk_cases(sdk: Sdk) {
    let p = match sdk {
        Sdk::Py => "py",
        Sdk::Js => "js",
    };
    let name = |case: &str| format!("{p}_{case}");
    let cases: Vec<(&str, Vec<Want>)> = vec![
        (
            "create",
            vec![
                op("POST", "", None, Some(("r1", 1))),
                op("POST", "", None, None),
            ],
        ),
        (
            "update_replace",
            vec![op("PUT", key("r1"), Some("*"), Some(("r1", 2)))],
        ),
        (
            "update_merge",
            vec![op("PATCH", key("r1"), Some("*"), Some(("r1", 3)))],
        ),
        (
            "update_etag",
            vec![
                op("PUT", key("r1"), Some(ETAG), Some(("r1", 4))),
                op("PATCH", key("r2"), Some(ETAG), Some(("r2", 5))),
            ],
        ),
        (
            "upsert_replace",
            vec![op("PUT", key("r1"), None, Some(("r1", 6)))],
        ),
        (
            "upsert_merge",
            vec![op("PATCH", key("r1"), None, Some(("r1", 7)))],
        ),
        ("delete", vec![op("DELETE", key("r1"), Some("*"), None)]),
        (
            "delete_etag",
            // The JS SDK (13.3.2) drops the etag of a "delete" action in submitTransaction.
            vec![op(
                "DELETE",
                key("r1"),
                Some(if sdk == Sdk::Py { ETAG } else { "*" }),
                None,
            )],
        ),
        (
            "mixed",
            vec![
                op("POST", "", None, Some(("a'b c/\u{fc}", 1))),
                op("PATCH", key("r2"), Some("*"), Some(("r2", 2))),
                op("PUT", key("r3"), None, Some(("r3", 3))),
                op("PATCH", key("r4"), None, Some(("r4", 4))),
                op(
                    "DELETE",
                    // Python percent-encodes the doubled quote, JS leaves it.
                    if sdk == Sdk::Py {
                        "(PartitionKey='pk1',RowKey='a%27%27b%20c%2F%C3%BCd')"
                    } else {
                        "(PartitionKey='pk1',RowKey='a''b%20c%2F%C3%BCd')"
                    },
                    Some("*"),
                    None,
                ),
            ],
        ),
    ];
    for (case, mut want) in cases {
        let n = name(case);
        let ops = changeset(&n);
        if case == "create" {
            // The typed entity is checked separately below.
            want[1].body = None;
            check(&n, sdk, &ops[..1], &want[..1]);
            assert_eq!(ops.len(), 2, "{n}");
            assert_eq!(ops[1].method, "POST");
        } else {
            check(&n, sdk, &ops, &want);
        }
    }
}

#[test]
fn python_sdk_fixtures() {
    sdk_cases(Sdk::Py);
}

#[test]
fn js_sdk_fixtures() {
    sdk_cases(Sdk::Js);
}

#[test]
fn typed_entity_bodies() {
    let py = changeset("py_create");
    let v: Value = serde_json::from_slice(&py[1].body).expect("json");
    assert_eq!(
        v,
        json!({
            "PartitionKey": "pk1", "PartitionKey@odata.type": "Edm.String",
            "RowKey": "typed", "RowKey@odata.type": "Edm.String",
            "Name": "Ada", "Name@odata.type": "Edm.String",
            "Age": 36,
            "Big": "1099511627776", "Big@odata.type": "Edm.Int64",
            "Ratio": 1.5, "Ratio@odata.type": "Edm.Double",
            "Active": true,
            "When": "2024-01-02T03:04:05.000000Z", "When@odata.type": "Edm.DateTime",
            "Id": "11111111-2222-3333-4444-555555555555", "Id@odata.type": "Edm.Guid",
            "Blob": "AAH+", "Blob@odata.type": "Edm.Binary"
        })
    );
    let js = changeset("js_create");
    let v: Value = serde_json::from_slice(&js[1].body).expect("json");
    assert_eq!(
        v,
        json!({
            "PartitionKey": "pk1", "RowKey": "typed", "Name": "Ada", "Age": 36,
            "Big": "1099511627776", "Big@odata.type": "Edm.Int64",
            "Ratio": 1.5, "Active": true,
            "When": "2024-01-02T03:04:05.000Z", "When@odata.type": "Edm.DateTime",
            "Id": "11111111-2222-3333-4444-555555555555", "Id@odata.type": "Edm.Guid",
            "Blob": "AAH+", "Blob@odata.type": "Edm.Binary"
        })
    );
    assert_eq!(
        js[1].header("Content-Type"),
        Some("application/json;odata=nometadata")
    );
}

/// The JS SDK writes two blank lines before every body (and before the empty body of a
/// DELETE); bodies must come out without them.
#[test]
fn js_double_blank_lines() {
    let (_, raw) = load("js_mixed");
    assert!(raw.windows(6).any(|w| w == b"\r\n\r\n\r\n"));
    for op in changeset("js_mixed") {
        assert!(!op.body.starts_with(b"\r") && !op.body.starts_with(b"\n"));
    }
}

#[test]
fn spec_sample_fixture() {
    let ops = changeset("spec_sample");
    assert_eq!(ops.len(), 2);
    assert_eq!(ops[0].method, "POST");
    assert_eq!(ops[0].url, "http://127.0.0.1:10002/devstoreaccount1/Blogs");
    assert_eq!(
        ops[0].headers,
        [
            ("Content-Type", "application/json"),
            ("Accept", "application/json;odata=minimalmetadata"),
            ("Prefer", "return-no-content"),
            ("DataServiceVersion", "3.0;"),
        ]
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
    );
    assert_eq!(
        ops[0].body,
        br#"{"PartitionKey":"Channel_19","RowKey":"1","Rating":9,"Text":".NET..."}"#
    );
    assert_eq!(ops[1].method, "MERGE");
    assert_eq!(
        ops[1].path_and_query(),
        (
            "/devstoreaccount1/Blogs(PartitionKey='Channel_19',RowKey='3')",
            None
        )
    );
    assert_eq!(ops[1].header("if-match"), Some("*"));
    assert_eq!(
        ops[1].body,
        br#"{"PartitionKey":"Channel_19","RowKey":"3","Rating":9,"Text":"PDC 2008..."}"#
    );
    assert!(ops.iter().all(|o| o.content_id.is_none()));
}

#[test]
fn legacy_lf_lowercase_fixture() {
    let (ct, raw) = load("legacy_lf_lowercase");
    assert!(!raw.contains(&b'\r'), "fixture must use bare LF");
    assert!(ct.contains("boundary=\"batch_blahblahblah\""));
    let ops = changeset("legacy_lf_lowercase");
    let summary: Vec<_> = ops
        .iter()
        .map(|o| {
            (
                o.method.as_str(),
                o.content_id.as_deref(),
                o.header("IF-MATCH"),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("POST", Some("1"), None),
            (
                "PUT",
                Some("2"),
                Some("W/\"datetime'2013-10-14T18%3A25%3A49.8922467Z'\"")
            ),
            ("MERGE", Some("3"), Some("*")),
            ("DELETE", Some("4"), Some("*")),
        ]
    );
    assert_eq!(
        ops[0].body,
        br#"{"PartitionKey":"Channel_19","RowKey":"1","Rating":9}"#
    );
    assert_eq!(ops[0].header("DataServiceVersion"), Some("3.0;"));
    assert_eq!(ops[0].header("Prefer"), Some("return-no-content"));
    assert_eq!(
        ops[1].path_and_query().0,
        "/devstoreaccount1/Blogs(PartitionKey=%27Channel_19%27,RowKey=%272%27)"
    );
    assert_eq!(
        ops[1].body,
        br#"{"PartitionKey":"Channel_19","RowKey":"2","Rating":3}"#
    );
    assert!(ops[2].body.is_empty(), "MERGE without a body");
    assert!(ops[3].body.is_empty());
}

#[test]
fn legacy_query_fixture() {
    let BatchBody::Query(q) = decode_fixture("legacy_query") else {
        panic!("expected a query batch");
    };
    assert_eq!(q.method, "GET");
    assert_eq!(
        q.path_and_query(),
        (
            "/testtable(PartitionKey=%27tests%27,RowKey=%27insert1%27)",
            None
        )
    );
    assert_eq!(q.content_id.as_deref(), Some("0"));
    assert_eq!(
        q.header("Accept"),
        Some("application/json;odata=minimalmetadata")
    );
    assert!(q.body.is_empty());
}

/// Every SDK fixture re-decodes identically with bare LF line endings and lower-cased MIME
/// header names (what older clients send).
#[test]
fn fixtures_survive_lf_and_lowercase() {
    for name in ["py_mixed", "js_mixed", "py_create", "spec_sample"] {
        let (ct, raw) = load(name);
        let want = decode_batch(&ct, &raw).expect("decodes");
        let text = String::from_utf8(raw).expect("utf-8 fixture");
        let lf = text
            .replace("\r\n", "\n")
            .replace(
                "Content-Type: application/http",
                "content-type: application/http",
            )
            .replace("Content-Transfer-Encoding", "content-transfer-encoding")
            .replace("Content-ID:", "content-id:");
        let got = decode_batch(&ct, lf.as_bytes()).expect("decodes with LF");
        // Bodies have no inner line breaks, so they compare equal byte for byte.
        assert_eq!(got, want, "{name}");
    }
}

// ---------------------------------------------------------------------------------------
// Property tests

/// How the round-trip encoder writes a request body.
#[derive(Debug, Clone)]
struct Style {
    eol: &'static str,
    content_id_in_part: bool,
    lowercase_mime: bool,
    blank_lines_before_body: usize,
    close: Close,
}

#[derive(Debug, Clone, Copy)]
enum Close {
    Full,
    BatchWithoutDashes,
    Nothing,
}

/// A client-side encoder used only by the tests: writes `ops` as a change set (or `query` as
/// a query batch) the way the SDKs do, with the variations of `style`.
fn encode_request(ops: &[SubRequest], query: bool, style: &Style) -> Vec<u8> {
    let eol = style.eol;
    let mime = |name: &str| {
        if style.lowercase_mime {
            name.to_ascii_lowercase()
        } else {
            name.to_owned()
        }
    };
    let line = |out: &mut Vec<u8>, s: &str| {
        out.extend_from_slice(s.as_bytes());
        out.extend_from_slice(eol.as_bytes());
    };
    let mut out = Vec::new();
    line(&mut out, "--batch_rt");
    if !query {
        let ct = format!(
            "{}: multipart/mixed; boundary=changeset_rt",
            mime("Content-Type")
        );
        line(&mut out, &ct);
        line(&mut out, "");
    }
    for op in ops {
        if !query {
            line(&mut out, "--changeset_rt");
        }
        line(
            &mut out,
            &format!("{}: application/http", mime("Content-Type")),
        );
        line(
            &mut out,
            &format!("{}: binary", mime("Content-Transfer-Encoding")),
        );
        if let (Some(id), true) = (&op.content_id, style.content_id_in_part) {
            line(&mut out, &format!("{}: {id}", mime("Content-ID")));
        }
        line(&mut out, "");
        line(&mut out, &format!("{} {} HTTP/1.1", op.method, op.url));
        if let (Some(id), false) = (&op.content_id, style.content_id_in_part) {
            line(&mut out, &format!("Content-ID: {id}"));
        }
        for (n, v) in &op.headers {
            line(&mut out, &format!("{n}: {v}"));
        }
        for _ in 0..style.blank_lines_before_body {
            line(&mut out, "");
        }
        // The body verbatim, then the line break that belongs to the next delimiter.
        out.extend_from_slice(&op.body);
        line(&mut out, "");
    }
    let tail = match (style.close, query) {
        (Close::Full, false) => format!("--changeset_rt--{eol}--batch_rt--{eol}"),
        (Close::Full, true) => format!("--batch_rt--{eol}"),
        (Close::BatchWithoutDashes, false) => format!("--changeset_rt--{eol}--batch_rt{eol}"),
        (Close::BatchWithoutDashes, true) => format!("--batch_rt{eol}"),
        (Close::Nothing, _) => String::new(),
    };
    out.extend_from_slice(tail.as_bytes());
    out
}

fn style() -> impl Strategy<Value = Style> {
    (
        prop_oneof![Just("\r\n"), Just("\n")],
        any::<bool>(),
        any::<bool>(),
        1usize..=3,
        prop_oneof![
            Just(Close::Full),
            Just(Close::BatchWithoutDashes),
            Just(Close::Nothing)
        ],
    )
        .prop_map(
            |(eol, content_id_in_part, lowercase_mime, blank_lines_before_body, close)| Style {
                eol,
                content_id_in_part,
                lowercase_mime,
                blank_lines_before_body,
                close,
            },
        )
}

fn url() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("http://127.0.0.1:10002/devstoreaccount1/"),
            Just("https://acct.table.core.windows.net/"),
            Just("/devstoreaccount1/"),
            Just(""),
        ],
        "[a-zA-Z][a-zA-Z0-9]{0,10}",
        prop::option::of(("[a-zA-Z0-9%]{0,12}", "[a-zA-Z0-9%]{0,12}")),
        prop::option::of("[a-zA-Z0-9$=&%]{0,20}"),
    )
        .prop_map(|(base, table, key, query)| {
            let mut u = format!("{base}{table}");
            if let Some((pk, rk)) = key {
                u.push_str(&format!("(PartitionKey='{pk}',RowKey='{rk}')"));
            }
            if let Some(q) = query {
                u.push('?');
                u.push_str(&q);
            }
            u
        })
}

/// A body as it survives framing: no leading line break, no trailing CR/LF, no line that could
/// be a delimiter (no `_` in the alphabet).
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(String::new()),
        "[a-zA-Z0-9{}\":,. -]([a-zA-Z0-9{}\":,.\n -]{0,200}[a-zA-Z0-9{}\"])?",
    ]
    .prop_map(String::into_bytes)
}

fn sub_request(method: impl Strategy<Value = &'static str>) -> impl Strategy<Value = SubRequest> {
    (
        method,
        url(),
        prop::collection::vec(
            ("[A-Za-z][A-Za-z0-9-]{0,15}", "[!-~]([ -~]{0,30}[!-~])?"),
            0..6,
        ),
        body(),
        prop::option::of("[0-9]{1,3}"),
        any::<bool>(),
    )
        .prop_map(|(method, url, headers, body, content_id, with_length)| {
            let mut headers: Vec<(String, String)> = headers
                .into_iter()
                .filter(|(n, _)| {
                    !n.eq_ignore_ascii_case("content-id")
                        && !n.eq_ignore_ascii_case("content-length")
                })
                .collect();
            if with_length {
                headers.push(("Content-Length".into(), body.len().to_string()));
            }
            SubRequest {
                method: method.to_owned(),
                url,
                headers,
                body,
                content_id,
            }
        })
}

/// What the decoder should return for `op` written with `style`: a `Content-ID` written among
/// the inner headers also stays in `headers`.
fn expected(op: &SubRequest, style: &Style) -> SubRequest {
    let mut want = op.clone();
    if let (Some(id), false) = (&op.content_id, style.content_id_in_part) {
        want.headers.insert(0, ("Content-ID".into(), id.clone()));
    }
    want
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(ct in "[ -~]{0,80}", body in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = decode_batch(&ct, &body);
        let _ = decode_batch("multipart/mixed; boundary=b", &body);
    }

    /// Bodies assembled from structural lines reach deep into the decoder.
    #[test]
    fn structured_noise_never_panics(
        lines in prop::collection::vec(prop_oneof![
            Just("--b"), Just("--b--"), Just("--cs"), Just("--cs--"), Just("--b \t"),
            Just("Content-Type: multipart/mixed; boundary=cs"),
            Just("content-type: multipart/mixed; boundary=\"cs\""),
            Just("Content-Type: multipart/mixed"),
            Just("Content-Type: application/http"), Just("Content-Transfer-Encoding: binary"),
            Just("Content-ID: 1"), Just(""), Just(" "), Just(" folded"), Just("\r"),
            Just("POST http://h/t HTTP/1.1"), Just("GET /t HTTP/1.1"), Just("MERGE /t HTTP/1.1"),
            Just("DELETE"), Just("Content-Length: 3"), Just("Content-Length: 99999999999999999999"),
            Just("{}"), Just("x:"), Just(":"), Just("\u{ff}\u{fe}"),
        ], 0..60),
        eol in prop_oneof![Just("\r\n"), Just("\n")],
    ) {
        let body = lines.join(eol);
        let _ = decode_batch("multipart/mixed; boundary=b", body.as_bytes());
    }

    /// Random edits of a real SDK body never panic.
    #[test]
    fn mutated_fixture_never_panics(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..20),
    ) {
        let (ct, mut raw) = load("py_mixed");
        for (at, byte, kind) in edits {
            let i = at.index(raw.len() + 1);
            match kind {
                0 => raw.insert(i, byte),
                1 if i < raw.len() => { raw.remove(i); }
                _ if i < raw.len() => raw[i] = byte,
                _ => {}
            }
        }
        let _ = decode_batch(&ct, &raw);
    }

    #[test]
    fn changeset_round_trip(
        ops in prop::collection::vec(
            sub_request(prop_oneof![Just("POST"), Just("PUT"), Just("MERGE"), Just("PATCH"), Just("DELETE")]),
            1..8,
        ),
        style in style(),
    ) {
        let raw = encode_request(&ops, false, &style);
        let got = decode_batch("multipart/mixed; boundary=batch_rt", &raw);
        let want: Vec<_> = ops.iter().map(|o| expected(o, &style)).collect();
        prop_assert_eq!(got, Ok(BatchBody::Changeset(want)));
    }

    #[test]
    fn query_round_trip(mut op in sub_request(Just("GET")), style in style()) {
        op.body.clear();
        op.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("content-length"));
        let raw = encode_request(std::slice::from_ref(&op), true, &style);
        let got = decode_batch("multipart/mixed; boundary=\"batch_rt\"", &raw);
        prop_assert_eq!(got, Ok(BatchBody::Query(expected(&op, &style))));
    }

    /// Work is linear: a body of many tiny parts decodes, and the error paths do not rescan.
    #[test]
    fn many_parts(n in 1usize..400) {
        let mut body = String::from("--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n");
        for _ in 0..n {
            body.push_str("--c\r\nContent-Type: application/http\r\n\r\nDELETE /t HTTP/1.1\r\n\r\n");
        }
        body.push_str("--c--\r\n--b--\r\n");
        let Ok(BatchBody::Changeset(ops)) = decode_batch("multipart/mixed; boundary=b", body.as_bytes()) else {
            panic!("decodes");
        };
        prop_assert_eq!(ops.len(), n);
    }
}

/// A large body (about 4 MiB of operations, the service's payload limit) decodes quickly.
#[test]
fn large_body_is_linear() {
    let entity = format!(
        "{{\"PartitionKey\":\"p\",\"Data\":\"{}\"}}",
        "x".repeat(40_000)
    );
    let mut body = String::from("--b\r\nContent-Type: multipart/mixed; boundary=c\r\n\r\n");
    for i in 0..100 {
        body.push_str(&format!(
            "--c\r\nContent-Type: application/http\r\n\r\nPUT /t(PartitionKey='p',RowKey='{i}') HTTP/1.1\r\n\r\n{entity}\r\n"
        ));
    }
    body.push_str("--c--\r\n--b--\r\n");
    let start = std::time::Instant::now();
    let Ok(BatchBody::Changeset(ops)) =
        decode_batch("multipart/mixed; boundary=b", body.as_bytes())
    else {
        panic!("decodes");
    };
    assert_eq!(ops.len(), 100);
    assert!(ops.iter().all(|o| o.body == entity.as_bytes()));
    // Generous bound for a debug build on a loaded machine; a quadratic scan would take minutes.
    assert!(start.elapsed() < std::time::Duration::from_secs(5));

    // One huge line without any line break, and a body of only line breaks.
    let one_line = vec![b'a'; 4 << 20];
    assert!(decode_batch("multipart/mixed; boundary=b", &one_line).is_err());
    let breaks = vec![b'\n'; 4 << 20];
    assert!(decode_batch("multipart/mixed; boundary=b", &breaks).is_err());
}
