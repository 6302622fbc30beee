//! Assertions and raw-socket helpers shared by the core integration suites (tables, entities,
//! limits, errors, persistence, concurrency). Lives beside `common` so that the suites can
//! check Azure's error shape in one place.
#![allow(dead_code)] // each test file uses a different subset of these helpers

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::{Reply, TestServer};

/// Content-Type of every OData JSON error body (spec §3.6, §9.1).
pub const JSON_ERROR_CONTENT_TYPE: &str =
    "application/json;odata=minimalmetadata;streaming=true;charset=utf-8";

/// Asserts Azure's error answer in the JSON form: the status, `x-ms-error-code` (sent on every
/// error by this server), the `odata.error` body with the code, and a message that ends with
/// the request id and time lines (spec §9.1).
pub fn assert_error(r: &Reply, status: u16, code: &str) {
    assert_eq!(
        r.status.as_u16(),
        status,
        "status for {code}; body: {}",
        r.text()
    );
    assert_eq!(
        r.header("x-ms-error-code"),
        Some(code),
        "x-ms-error-code; body: {}",
        r.text()
    );
    assert_eq!(
        r.header("content-type"),
        Some(JSON_ERROR_CONTENT_TYPE),
        "error content type"
    );
    let body = r.json();
    assert_eq!(body["odata.error"]["code"], code, "body code: {body}");
    assert_eq!(body["odata.error"]["message"]["lang"], "en-US");
    let message = body["odata.error"]["message"]["value"]
        .as_str()
        .expect("message value is a string");
    let request_id = r.header("x-ms-request-id").expect("x-ms-request-id");
    assert!(
        message.contains(&format!("\nRequestId:{request_id}\nTime:")),
        "message carries the request id and time: {message:?}"
    );
    let time = message.rsplit("\nTime:").next().unwrap_or_default();
    assert_eq!(time.len(), 28, "Time has 7 fractional digits: {time}");
    assert!(time.ends_with('Z'));
    assert!(r.header("x-ms-version").is_some(), "x-ms-version on errors");
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
}

/// Like [`assert_error`] and also checks the human text before the request id line.
pub fn assert_error_message(r: &Reply, status: u16, code: &str, text: &str) {
    assert_error(r, status, code);
    let body = r.json();
    let message = body["odata.error"]["message"]["value"]
        .as_str()
        .unwrap_or_default();
    let human = message.split("\nRequestId:").next().unwrap_or_default();
    assert_eq!(human, text, "message text of {code}");
}

/// The `<code>` of an XML error body (`<error>` or `<m:error>` form).
pub fn xml_error_code(r: &Reply) -> String {
    let text = r.text();
    let start = text
        .find("code>")
        .unwrap_or_else(|| panic!("XML error body: {text}"))
        + 5;
    let end = text[start..].find('<').expect("closing tag") + start;
    text[start..end].to_string()
}

/// The Timestamp text inside an ETag `W/"datetime'2021-02-12T08%3A28%3A27.47468Z'"`.
pub fn etag_timestamp(etag: &str) -> String {
    etag.strip_prefix("W/\"datetime'")
        .and_then(|e| e.strip_suffix("'\""))
        .unwrap_or_else(|| panic!("ETag of the datetime form: {etag}"))
        .replace("%3A", ":")
}

/// Checks Azure's DateTime text: `YYYY-MM-DDTHH:MM:SS[.f{1,7}]Z`, no trailing fraction zeros.
pub fn assert_datetime_text(s: &str) {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    assert!(b.len() >= 20, "{s}");
    assert!(
        digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10),
        "{s}"
    );
    assert!(
        b[10] == b'T' && digits(11..13) && b[13] == b':' && digits(14..16) && b[16] == b':',
        "{s}"
    );
    assert!(digits(17..19), "{s}");
    assert_eq!(b[b.len() - 1], b'Z', "{s}");
    if b.len() > 20 {
        assert_eq!(b[19], b'.', "{s}");
        let frac = &s[20..s.len() - 1];
        assert!((1..=7).contains(&frac.len()), "{s}");
        assert!(frac.bytes().all(|c| c.is_ascii_digit()), "{s}");
        assert!(!frac.ends_with('0'), "trailing zero in {s}");
    }
}

/// The server still answers a plain request (after an error that might have hurt it).
pub async fn assert_alive(t: &TestServer) {
    let r = t.send("GET", "/Tables", &[], None).await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "server still answers: {}",
        r.text()
    );
}

/// A raw HTTP/1.1 exchange over TCP: writes `request` as is and reads until the server closes
/// the connection (send `Connection: close`). Returns the status code and the whole response.
pub async fn raw_exchange(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request).await.expect("write request");
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut buf))
        .await
        .expect("the server answers and closes the connection");
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .unwrap_or_else(|| panic!("an HTTP status line: {text:?}"));
    (status, text)
}

/// Inserts `entity` with `Prefer: return-content` semantics left to the caller's headers and
/// returns the reply (unlike `TestServer::insert`, which asserts a 204).
pub async fn post_entity(
    t: &TestServer,
    table: &str,
    entity: &Value,
    headers: &[(&str, &str)],
) -> Reply {
    t.send(
        "POST",
        &format!("/{table}"),
        headers,
        Some(&entity.to_string()),
    )
    .await
}

/// `Table(PartitionKey='…',RowKey='…')` with quotes doubled and the keys percent-encoded
/// (everything but unreserved characters and `'`), as a well-behaved client writes it.
pub fn entity_url(table: &str, pk: &str, rk: &str) -> String {
    format!(
        "/{table}(PartitionKey='{}',RowKey='{}')",
        encode_key(pk),
        encode_key(rk)
    )
}

pub fn encode_key(key: &str) -> String {
    let doubled = key.replace('\'', "''");
    let mut out = String::new();
    for b in doubled.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'\'') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
