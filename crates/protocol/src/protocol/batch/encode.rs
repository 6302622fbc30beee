//! Encoding of `$batch` responses (Azure docs: "Performing entity group transactions").
//!
//! Byte layout, CRLF everywhere, as Azure writes it (recordings of the real service made by the
//! JS SDK's and azure-storage-node's test suites):
//!
//! ```text
//! --batchresponse_<id>
//! Content-Type: multipart/mixed; boundary=changesetresponse_<id>
//!
//! --changesetresponse_<id>                 } once per sub-response
//! Content-Type: application/http           }
//! Content-Transfer-Encoding: binary        }
//!                                          }
//! HTTP/1.1 <code> <reason>                 }
//! <header>: <value>                        } in the order given
//!                                          }
//! <body, possibly empty>                   }
//! --changesetresponse_<id>--
//! --batchresponse_<id>--
//! ```
//!
//! so an empty-bodied sub-response ends in two blank lines before the next delimiter, exactly
//! like Azure's. A query batch response has no change set level. The JS SDK splits the body on
//! the literal `--changesetresponse_` and reads `ETag: (.*)` and `RowKey='(.*)'`, so the
//! boundaries must keep those prefixes and headers are written as `Name: value`.
//!
//! Cosmos DB for Table ends the change-set delimiters, the parts' MIME headers and the blank
//! line after them with a bare LF, and the closing change-set delimiter too; the batch
//! delimiters and each inner HTTP message keep CRLF (recordings of the Python SDK's suite
//! against a Cosmos account, `Azure/azure-sdk-for-python-assets`: `test_batch_insert_merge`,
//! `test_batch_all_operations_together`, `test_batch_update_if_doesnt_match`):
//!
//! ```text
//! --changesetresponse_<id>\n
//! Content-Type: application/http\n
//! Content-Transfer-Encoding: binary\n
//! \n
//! HTTP/1.1 204 No Content\r\n
//! …
//! --changesetresponse_<id>--\n
//! --batchresponse_<id>--\r\n
//! ```

use super::SubResponse;
use crate::protocol::dialect::Dialect;

/// Encodes the response to a change set batch. Returns the outer `Content-Type`
/// (`multipart/mixed; boundary=batchresponse_<uuid>`) and the body. `responses` are written
/// in order; on failure the caller passes only the failed operation's sub-response.
pub fn encode_changeset_response(
    responses: &[SubResponse],
    dialect: &Dialect,
) -> (String, Vec<u8>) {
    let batch = format!("batchresponse_{}", uuid::Uuid::new_v4());
    let changeset = format!("changesetresponse_{}", uuid::Uuid::new_v4());
    let body = encode_changeset_response_with_boundaries(responses, &batch, &changeset, dialect);
    (content_type(&batch), body)
}

/// [`encode_changeset_response`] with the boundaries given (for deterministic tests). They
/// should start with `batchresponse_` and `changesetresponse_` respectively.
pub(crate) fn encode_changeset_response_with_boundaries(
    responses: &[SubResponse],
    batch_boundary: &str,
    changeset_boundary: &str,
    dialect: &Dialect,
) -> Vec<u8> {
    let size: usize = responses
        .iter()
        .map(|r| r.body.len() + 160 + changeset_boundary.len())
        .sum();
    let mut out = Vec::with_capacity(size + 128);
    // The line break of the change-set level (see the module's notes).
    let part_break = dialect.batch_part_break;
    line(&mut out, &["--", batch_boundary]);
    line(
        &mut out,
        &[
            "Content-Type: multipart/mixed; boundary=",
            changeset_boundary,
        ],
    );
    line(&mut out, &[]);
    for response in responses {
        line_ending(&mut out, &["--", changeset_boundary], part_break);
        http_part(&mut out, response, part_break);
    }
    line_ending(&mut out, &["--", changeset_boundary, "--"], part_break);
    line(&mut out, &["--", batch_boundary, "--"]);
    out
}

/// Encodes the response to a query batch (a single `GET`): the batch part holds the
/// `application/http` sub-response directly. Returns the outer `Content-Type` and the body.
pub fn encode_query_response(response: &SubResponse) -> (String, Vec<u8>) {
    let batch = format!("batchresponse_{}", uuid::Uuid::new_v4());
    let body = encode_query_response_with_boundary(response, &batch);
    (content_type(&batch), body)
}

/// [`encode_query_response`] with the boundary given (for deterministic tests).
pub(crate) fn encode_query_response_with_boundary(
    response: &SubResponse,
    batch_boundary: &str,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(response.body.len() + 256);
    line(&mut out, &["--", batch_boundary]);
    http_part(&mut out, response, b"\r\n");
    line(&mut out, &["--", batch_boundary, "--"]);
    out
}

fn content_type(batch_boundary: &str) -> String {
    format!("multipart/mixed; boundary={batch_boundary}")
}

/// MIME headers (their lines ended by `part_break`), status line, headers, blank line, body
/// and the line break that precedes the next delimiter.
fn http_part(out: &mut Vec<u8>, response: &SubResponse, part_break: &[u8]) {
    line_ending(out, &["Content-Type: application/http"], part_break);
    line_ending(out, &["Content-Transfer-Encoding: binary"], part_break);
    line_ending(out, &[], part_break);
    out.extend_from_slice(b"HTTP/1.1 ");
    push_status(out, response.status);
    line(out, &[" ", reason_phrase(response.status)]);
    for (name, value) in &response.headers {
        push_clean(out, name);
        out.extend_from_slice(b": ");
        push_clean(out, value);
        out.extend_from_slice(b"\r\n");
    }
    line(out, &[]);
    out.extend_from_slice(&response.body);
    line(out, &[]);
}

/// A status code's digits.
fn push_status(out: &mut Vec<u8>, status: u16) {
    let mut digits = [0u8; 5];
    let mut n = status;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

fn line(out: &mut Vec<u8>, pieces: &[&str]) {
    line_ending(out, pieces, b"\r\n");
}

fn line_ending(out: &mut Vec<u8>, pieces: &[&str], ending: &[u8]) {
    for p in pieces {
        out.extend_from_slice(p.as_bytes());
    }
    out.extend_from_slice(ending);
}

/// Header text without CR or LF, so a caller-supplied value cannot break the framing.
fn push_clean(out: &mut Vec<u8>, s: &str) {
    if memchr::memchr2(b'\r', b'\n', s.as_bytes()).is_none() {
        // The usual case, copied whole (byte by byte it was a third of a `$batch`'s encode).
        out.extend_from_slice(s.as_bytes());
    } else {
        out.extend(s.bytes().filter(|b| *b != b'\r' && *b != b'\n'));
    }
}

/// The reason phrase written after a sub-response status code (Azure's, e.g. `No Content`,
/// `Precondition Failed`). Unknown codes get `Unknown`.
pub(crate) fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Request Entity Too Large",
        414 => "Request-URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Requested Range Not Satisfiable",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::dialect::{COSMOS, STORAGE};

    fn h(name: &'static str, value: &str) -> (&'static str, std::borrow::Cow<'static, str>) {
        (name, value.to_owned().into())
    }

    fn text(bytes: &[u8]) -> &str {
        std::str::from_utf8(bytes).expect("utf-8")
    }

    /// A change-set answer holding `response` only, with boundaries `batchresponse_b` and
    /// `changesetresponse_c`.
    fn alone_in_a_change_set(response: SubResponse, dialect: &Dialect) -> Vec<u8> {
        encode_changeset_response_with_boundaries(
            &[response],
            "batchresponse_b",
            "changesetresponse_c",
            dialect,
        )
    }

    /// The sample of Azure docs: "Performing entity group transactions", with the body layout Azure really uses (blank line after the
    /// headers, then the empty body, then the delimiter's CRLF) and without `Content-ID`.
    #[test]
    fn changeset_response_bytes() {
        let insert = SubResponse {
            status: 204,
            headers: vec![
                h("X-Content-Type-Options", "nosniff"),
                h("Cache-Control", "no-cache"),
                h("Preference-Applied", "return-no-content"),
                h("DataServiceVersion", "3.0;"),
                h("Location", "http://127.0.0.1:10002/devstoreaccount1/Blogs(PartitionKey='Channel_19',RowKey='1')"),
                h("DataServiceId", "http://127.0.0.1:10002/devstoreaccount1/Blogs(PartitionKey='Channel_19',RowKey='1')"),
                h("ETag", "W/\"datetime'2013-10-14T18%3A25%3A49.8922467Z'\""),
            ],
            body: Vec::new(),
        };
        let merge = SubResponse {
            status: 204,
            headers: vec![
                h("X-Content-Type-Options", "nosniff"),
                h("Cache-Control", "no-cache"),
                h("DataServiceVersion", "1.0;"),
                h("ETag", "W/\"datetime'2013-10-14T18%3A25%3A49.8932467Z'\""),
            ],
            body: Vec::new(),
        };
        let got = encode_changeset_response_with_boundaries(
            &[insert, merge],
            "batchresponse_e69b1c6c-62ff-471e-ab88-9a4aeef0a880",
            "changesetresponse_a6253244-7e21-42a8-a149-479ee9e94a25",
            &STORAGE,
        );
        let want = "--batchresponse_e69b1c6c-62ff-471e-ab88-9a4aeef0a880\r\n\
Content-Type: multipart/mixed; boundary=changesetresponse_a6253244-7e21-42a8-a149-479ee9e94a25\r\n\
\r\n\
--changesetresponse_a6253244-7e21-42a8-a149-479ee9e94a25\r\n\
Content-Type: application/http\r\n\
Content-Transfer-Encoding: binary\r\n\
\r\n\
HTTP/1.1 204 No Content\r\n\
X-Content-Type-Options: nosniff\r\n\
Cache-Control: no-cache\r\n\
Preference-Applied: return-no-content\r\n\
DataServiceVersion: 3.0;\r\n\
Location: http://127.0.0.1:10002/devstoreaccount1/Blogs(PartitionKey='Channel_19',RowKey='1')\r\n\
DataServiceId: http://127.0.0.1:10002/devstoreaccount1/Blogs(PartitionKey='Channel_19',RowKey='1')\r\n\
ETag: W/\"datetime'2013-10-14T18%3A25%3A49.8922467Z'\"\r\n\
\r\n\
\r\n\
--changesetresponse_a6253244-7e21-42a8-a149-479ee9e94a25\r\n\
Content-Type: application/http\r\n\
Content-Transfer-Encoding: binary\r\n\
\r\n\
HTTP/1.1 204 No Content\r\n\
X-Content-Type-Options: nosniff\r\n\
Cache-Control: no-cache\r\n\
DataServiceVersion: 1.0;\r\n\
ETag: W/\"datetime'2013-10-14T18%3A25%3A49.8932467Z'\"\r\n\
\r\n\
\r\n\
--changesetresponse_a6253244-7e21-42a8-a149-479ee9e94a25--\r\n\
--batchresponse_e69b1c6c-62ff-471e-ab88-9a4aeef0a880--\r\n";
        assert_eq!(text(&got), want);
    }

    /// A failure (Azure docs: "Performing entity group transactions"): only the failed operation's sub-response, with its JSON error body.
    #[test]
    fn failure_response_bytes() {
        let failed = SubResponse {
            status: 409,
            headers: vec![
                h("X-Content-Type-Options", "nosniff"),
                h("DataServiceVersion", "3.0;"),
                h("Content-Type", "application/json;odata=minimalmetadata;streaming=true;charset=utf-8"),
            ],
            body: br#"{"odata.error":{"code":"EntityAlreadyExists","message":{"lang":"en-US","value":"0:The specified entity already exists."}}}"#.to_vec(),
        };
        let got = alone_in_a_change_set(failed, &STORAGE);
        let want = "--batchresponse_b\r\n\
Content-Type: multipart/mixed; boundary=changesetresponse_c\r\n\
\r\n\
--changesetresponse_c\r\n\
Content-Type: application/http\r\n\
Content-Transfer-Encoding: binary\r\n\
\r\n\
HTTP/1.1 409 Conflict\r\n\
X-Content-Type-Options: nosniff\r\n\
DataServiceVersion: 3.0;\r\n\
Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\
\r\n\
{\"odata.error\":{\"code\":\"EntityAlreadyExists\",\"message\":{\"lang\":\"en-US\",\"value\":\"0:The specified entity already exists.\"}}}\r\n\
--changesetresponse_c--\r\n\
--batchresponse_b--\r\n";
        assert_eq!(text(&got), want);
    }

    /// Cosmos's framing, byte for byte as recorded (`test_batch_all_operations_together`, its
    /// first two sub-responses, and `test_batch_update_if_doesnt_match`, a failure).
    #[test]
    fn cosmos_changeset_response_bytes() {
        let upsert = SubResponse {
            status: 204,
            headers: vec![
                h("ETag", "W/\"datetime'2021-09-29T20%3A07%3A42.1169672Z'\""),
                h("Preference-Applied", "return-no-content"),
                h("Content-ID", "1"),
            ],
            body: Vec::new(),
        };
        let delete = SubResponse {
            status: 204,
            headers: vec![h("Content-ID", "2")],
            body: Vec::new(),
        };
        let got = encode_changeset_response_with_boundaries(
            &[upsert, delete],
            "batchresponse_aeebf9d6-0fcd-40bd-a31b-552e9a053bbf",
            "changesetresponse_d1167b77-f03c-4cfa-bd1f-094c26ffe713",
            &COSMOS,
        );
        let want = "--batchresponse_aeebf9d6-0fcd-40bd-a31b-552e9a053bbf\r\n\
Content-Type: multipart/mixed; boundary=changesetresponse_d1167b77-f03c-4cfa-bd1f-094c26ffe713\r\n\
\r\n\
--changesetresponse_d1167b77-f03c-4cfa-bd1f-094c26ffe713\n\
Content-Type: application/http\n\
Content-Transfer-Encoding: binary\n\
\n\
HTTP/1.1 204 No Content\r\n\
ETag: W/\"datetime'2021-09-29T20%3A07%3A42.1169672Z'\"\r\n\
Preference-Applied: return-no-content\r\n\
Content-ID: 1\r\n\
\r\n\
\r\n\
--changesetresponse_d1167b77-f03c-4cfa-bd1f-094c26ffe713\n\
Content-Type: application/http\n\
Content-Transfer-Encoding: binary\n\
\n\
HTTP/1.1 204 No Content\r\n\
Content-ID: 2\r\n\
\r\n\
\r\n\
--changesetresponse_d1167b77-f03c-4cfa-bd1f-094c26ffe713--\n\
--batchresponse_aeebf9d6-0fcd-40bd-a31b-552e9a053bbf--\r\n";
        assert_eq!(text(&got), want);

        let failed = SubResponse {
            status: 412,
            headers: vec![h("Content-Type", "application/json;odata=fullmetadata")],
            body: br#"{"odata.error":{}}"#.to_vec(),
        };
        let got = alone_in_a_change_set(failed, &COSMOS);
        let want = "--batchresponse_b\r\n\
Content-Type: multipart/mixed; boundary=changesetresponse_c\r\n\
\r\n\
--changesetresponse_c\n\
Content-Type: application/http\n\
Content-Transfer-Encoding: binary\n\
\n\
HTTP/1.1 412 Precondition Failed\r\n\
Content-Type: application/json;odata=fullmetadata\r\n\
\r\n\
{\"odata.error\":{}}\r\n\
--changesetresponse_c--\n\
--batchresponse_b--\r\n";
        assert_eq!(text(&got), want);
    }

    #[test]
    fn empty_changeset_response_bytes() {
        let got = encode_changeset_response_with_boundaries(
            &[],
            "batchresponse_b",
            "changesetresponse_c",
            &STORAGE,
        );
        assert_eq!(
            text(&got),
            "--batchresponse_b\r\nContent-Type: multipart/mixed; boundary=changesetresponse_c\r\n\r\n\
--changesetresponse_c--\r\n--batchresponse_b--\r\n"
        );
    }

    /// Same layout as Azure's answer to a single-GET batch (azure-storage-node recording).
    #[test]
    fn query_response_bytes() {
        let ok = SubResponse {
            status: 200,
            headers: vec![
                h("DataServiceVersion", "3.0;"),
                h(
                    "Content-Type",
                    "application/json;odata=minimalmetadata;streaming=true;charset=utf-8",
                ),
                h("X-Content-Type-Options", "nosniff"),
                h("Cache-Control", "no-cache"),
                h("ETag", "W/\"datetime'2014-01-31T10%3A39%3A48.8625852Z'\""),
            ],
            body: br#"{"PartitionKey":"tests","RowKey":"insert1"}"#.to_vec(),
        };
        let got = encode_query_response_with_boundary(&ok, "batchresponse_q");
        let want = "--batchresponse_q\r\n\
Content-Type: application/http\r\n\
Content-Transfer-Encoding: binary\r\n\
\r\n\
HTTP/1.1 200 OK\r\n\
DataServiceVersion: 3.0;\r\n\
Content-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\
X-Content-Type-Options: nosniff\r\n\
Cache-Control: no-cache\r\n\
ETag: W/\"datetime'2014-01-31T10%3A39%3A48.8625852Z'\"\r\n\
\r\n\
{\"PartitionKey\":\"tests\",\"RowKey\":\"insert1\"}\r\n\
--batchresponse_q--\r\n";
        assert_eq!(text(&got), want);
    }

    #[test]
    fn fresh_boundaries_and_content_type() {
        let (ct, body) = encode_changeset_response(
            &[SubResponse {
                status: 204,
                ..SubResponse::default()
            }],
            &STORAGE,
        );
        let boundary = ct
            .strip_prefix("multipart/mixed; boundary=batchresponse_")
            .expect("content type prefix");
        assert_eq!(boundary.len(), 36);
        let body = text(&body);
        assert!(body.starts_with(&format!("--batchresponse_{boundary}\r\n")));
        assert!(body.ends_with(&format!("--batchresponse_{boundary}--\r\n")));
        // What the JS SDK does: split on the literal prefix; 1 sub-response + head + tail.
        assert_eq!(body.split("--changesetresponse_").count(), 3);

        let (ct2, _) = encode_changeset_response(&[], &STORAGE);
        assert_ne!(ct, ct2, "boundaries are fresh per response");

        let (qct, qbody) = encode_query_response(&SubResponse {
            status: 200,
            ..SubResponse::default()
        });
        assert!(qct.starts_with("multipart/mixed; boundary=batchresponse_"));
        assert!(!text(&qbody).contains("changesetresponse_"));
    }

    #[test]
    fn header_text_cannot_break_framing() {
        let r = SubResponse {
            status: 204,
            headers: vec![h("X-Evil\r\n", "a\r\n--changesetresponse_c--\r\nb")],
            body: Vec::new(),
        };
        let got = encode_changeset_response_with_boundaries(
            &[r],
            "batchresponse_b",
            "changesetresponse_c",
            &STORAGE,
        );
        assert!(text(&got).contains("\r\nX-Evil: a--changesetresponse_c--b\r\n"));
    }

    #[test]
    fn reason_phrases() {
        for (code, phrase) in [
            (200, "OK"),
            (201, "Created"),
            (202, "Accepted"),
            (204, "No Content"),
            (400, "Bad Request"),
            (403, "Forbidden"),
            (404, "Not Found"),
            (409, "Conflict"),
            (412, "Precondition Failed"),
            (413, "Request Entity Too Large"),
            (500, "Internal Server Error"),
            (503, "Service Unavailable"),
            (299, "Unknown"),
        ] {
            assert_eq!(reason_phrase(code), phrase, "{code}");
        }
    }
}
