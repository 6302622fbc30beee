//! Assertions on answers: Azure's error shape (JSON and XML), DateTime and ETag texts, and
//! that the server still answers.

use reqwest::StatusCode;

use super::{Reply, TestServer};

/// Content-Type of every OData JSON error body, as the service sends it (docs/decisions.md #2).
pub const JSON_ERROR_CONTENT_TYPE: &str =
    "application/json;odata=minimalmetadata;streaming=true;charset=utf-8";

/// Asserts Azure's error answer in the JSON form: the status, `x-ms-error-code` (sent on every
/// error by this server), the `odata.error` body with the code, and a message that ends with
/// the request id and time lines, the service's error format (docs/decisions.md #1, #2).
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
    // Azure writes details (a string to sign, which property) on lines after `Time:`.
    let time = message
        .split("\nTime:")
        .nth(1)
        .and_then(|rest| rest.split('\n').next())
        .unwrap_or_default();
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
