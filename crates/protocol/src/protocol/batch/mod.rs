//! The `$batch` (entity group transaction) codec. `decode.rs` and `encode.rs` own the
//! framing (boundaries, part headers, inner request/status lines; Azure docs: "Performing
//! entity group transactions"): a `multipart/mixed` request body becomes [`SubRequest`]s and
//! [`SubResponse`]s become a `multipart/mixed` response. `operations.rs` reads each
//! sub-request as the same operation and write a top-level request would be, and builds each
//! operation's sub-response. Pure bytes <-> typed values: no I/O, and nothing from the
//! `store`, `query`, `batch` or `server` modules.
//!
//! Decoding is a line scanner over the raw bytes (no regexes): it never panics, and its work is
//! linear in the input size (each byte is visited a bounded number of times).

mod decode;
mod encode;
mod operations;

#[cfg(test)]
mod golden_tests;

use std::borrow::Cow;
use std::fmt;

pub use decode::decode_batch;
pub use encode::{encode_changeset_response, encode_query_response};
pub(crate) use operations::omits_index_prefix;
pub use operations::{
    decode_change, error_sub_response, parse_sub_operation, retrieve_sub_response,
    write_sub_response, ChangeWrite,
};

/// One operation of a batch, exactly as the client wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubRequest {
    /// The verb as written: `POST`, `PUT`, `MERGE`, `PATCH`, `DELETE` or `GET`.
    pub(crate) method: String,
    /// The request-target as written in the request line (absolute or relative, still
    /// percent-encoded).
    pub(crate) url: String,
    /// The inner request headers in order, names as written (the part's MIME headers are not here).
    pub(crate) headers: Vec<(String, String)>,
    /// The body, possibly empty. Leading blank lines are removed (clients put one or two blank
    /// lines before a JSON body) and so is trailing whitespace beyond `Content-Length` when that
    /// header is present. Old JS SDKs sent the literal text `undefined` as a DELETE body: callers
    /// should ignore the body of a DELETE.
    pub body: Vec<u8>,
    /// `Content-ID` from the part's MIME headers, else from the inner request headers.
    pub(crate) content_id: Option<String>,
}

impl SubRequest {
    /// The first inner header called `name`, compared ASCII case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The path and query of [`SubRequest::url`]. An absolute URL loses its `scheme://authority`
    /// (the host may be anything, e.g. a debugging proxy); a fragment is dropped. The path stays
    /// percent-encoded and still carries the account segment in path style. The query is the
    /// text after `?` (without it), `None` when there is no `?`.
    pub fn path_and_query(&self) -> (&str, Option<&str>) {
        split_path_and_query(&self.url)
    }
}

/// Splits a request-target into (path, query); see [`SubRequest::path_and_query`].
fn split_path_and_query(url: &str) -> (&str, Option<&str>) {
    let mut rest = url;
    if let Some(i) = rest.find("://") {
        let scheme = &rest[..i];
        let is_scheme = !scheme.is_empty()
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if is_scheme {
            let after = &rest[i + 3..];
            let authority_end = after.find(['/', '?', '#']).unwrap_or(after.len());
            rest = &after[authority_end..];
        }
    }
    if let Some(i) = rest.find('#') {
        rest = &rest[..i];
    }
    let (path, query) = match rest.find('?') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    (if path.is_empty() { "/" } else { path }, query)
}

/// What a `$batch` body holds: one change set of writes, or a single query (one `GET`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchBody {
    /// The operations of the one change set, in request order (at least one).
    Changeset(Vec<SubRequest>),
    /// A batch whose only part is an `application/http` `GET` of a single entity.
    Query(SubRequest),
}

/// One sub-response to encode. Headers are written in the order given, names as given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubResponse {
    pub(crate) status: u16,
    /// Names are the server's own (a `String` each was a thousand allocations a `$batch`).
    pub(crate) headers: Vec<(&'static str, Cow<'static, str>)>,
    pub(crate) body: Vec<u8>,
}

/// Which multipart level an error refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MultipartLevel {
    /// The outer `batch_…` body (the request's own Content-Type).
    Batch,
    /// The `changeset_…` body nested in the batch part.
    Changeset,
}

impl fmt::Display for MultipartLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MultipartLevel::Batch => "batch",
            MultipartLevel::Changeset => "change set",
        })
    }
}

/// What is wrong inside one part (see [`BatchDecodeError::MalformedPart`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartProblem {
    /// A header line that is not `name: value` (or a name with invalid characters, or bytes
    /// that are not UTF-8). The line is shortened to at most 100 characters.
    MalformedHeader { line: String },
    /// A change set part whose Content-Type is not `application/http`.
    NotApplicationHttp { content_type: String },
    /// A `Content-Transfer-Encoding` other than `binary`, `8bit` or `7bit`.
    UnsupportedTransferEncoding { value: String },
    /// The part has MIME headers but no inner request line.
    MissingRequestLine,
}

impl fmt::Display for PartProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartProblem::MalformedHeader { line } => write!(f, "malformed header line '{line}'"),
            PartProblem::NotApplicationHttp { content_type } => write!(
                f,
                "content type '{content_type}' where application/http was expected"
            ),
            PartProblem::UnsupportedTransferEncoding { value } => {
                write!(f, "unsupported Content-Transfer-Encoding '{value}'")
            }
            PartProblem::MissingRequestLine => f.write_str("no request line"),
        }
    }
}

/// Why a `$batch` body could not be decoded. Operation indexes are 0-based positions within
/// the change set (the numbering Azure uses in its `N:` message prefixes); `None` means the
/// batch-level part. Quoted input is shortened to at most 100 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BatchDecodeError {
    /// The request's Content-Type is not `multipart/mixed`.
    NotMultipartMixed { content_type: String },
    /// A `multipart/mixed` Content-Type without a `boundary` parameter.
    MissingBoundary { level: MultipartLevel },
    /// A boundary that is empty, longer than 200 bytes, or not printable ASCII.
    InvalidBoundary {
        level: MultipartLevel,
        boundary: String,
    },
    /// No `--boundary` line occurs in the body.
    BoundaryNotFound { level: MultipartLevel },
    /// The batch holds no parts at all.
    EmptyBatch,
    /// The batch part is neither a change set (`multipart/mixed`) nor a query
    /// (`application/http`); `content_type` is empty when the part had none.
    NoChangeset { content_type: String },
    /// More than one change set.
    MultipleChangesets,
    /// A query part next to a change set.
    WritesMixedWithQuery,
    /// More than one query part.
    MultipleQueries,
    /// A change set without operations.
    EmptyChangeset,
    /// A part whose framing is broken.
    MalformedPart {
        index: Option<usize>,
        problem: PartProblem,
    },
    /// An inner request line that is not `<VERB> <URL> HTTP/<version>`.
    MalformedRequestLine { index: Option<usize>, line: String },
    /// A `GET` inside a change set.
    GetInChangeset { index: usize },
    /// A verb other than POST, PUT, MERGE, PATCH or DELETE inside a change set.
    UnsupportedMethod { index: usize, method: String },
    /// A batch-level `application/http` part that is not a `GET` (writes need a change set).
    WriteOutsideChangeset { method: String },
}

impl fmt::Display for BatchDecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use BatchDecodeError as E;
        match self {
            E::NotMultipartMixed { content_type } => write!(
                f,
                "the batch Content-Type '{content_type}' is not multipart/mixed"
            ),
            E::MissingBoundary { level } => {
                write!(f, "the {level} Content-Type has no boundary parameter")
            }
            E::InvalidBoundary { level, boundary } => {
                write!(f, "the {level} boundary '{boundary}' is not valid")
            }
            E::BoundaryNotFound { level } => {
                write!(f, "the {level} body contains no line with its boundary")
            }
            E::EmptyBatch => f.write_str("the batch contains no change set"),
            E::NoChangeset { content_type } if content_type.is_empty() => {
                f.write_str("the batch part has no Content-Type; expected a change set")
            }
            E::NoChangeset { content_type } => write!(
                f,
                "the batch part has Content-Type '{content_type}'; expected a change set"
            ),
            E::MultipleChangesets => f.write_str("the batch contains more than one change set"),
            E::WritesMixedWithQuery => f.write_str("the batch mixes a query with a change set"),
            E::MultipleQueries => f.write_str("the batch contains more than one query"),
            E::EmptyChangeset => f.write_str("the change set contains no operations"),
            E::MalformedPart {
                index: Some(i),
                problem,
            } => write!(f, "operation {i} of the change set: {problem}"),
            E::MalformedPart {
                index: None,
                problem,
            } => write!(f, "the batch part: {problem}"),
            E::MalformedRequestLine { index, line } => match index {
                Some(i) => write!(f, "operation {i} has a malformed request line '{line}'"),
                None => write!(f, "the query has a malformed request line '{line}'"),
            },
            E::GetInChangeset { index } => {
                write!(
                    f,
                    "operation {index} is a GET, which a change set cannot contain"
                )
            }
            E::UnsupportedMethod { index, method } => write!(
                f,
                "operation {index} uses the method '{method}', which a change set cannot contain"
            ),
            E::WriteOutsideChangeset { method } => write!(
                f,
                "a {method} request outside a change set; only a single GET may stand alone"
            ),
        }
    }
}

impl std::error::Error for BatchDecodeError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(url: &str) -> SubRequest {
        SubRequest {
            method: "GET".into(),
            url: url.into(),
            headers: vec![
                ("If-Match".into(), "*".into()),
                ("if-match".into(), "second".into()),
            ],
            body: Vec::new(),
            content_id: None,
        }
    }

    #[test]
    fn path_and_query_table() {
        let cases: &[(&str, (&str, Option<&str>))] = &[
            (
                "http://127.0.0.1:10002/devstoreaccount1/Blogs",
                ("/devstoreaccount1/Blogs", None),
            ),
            (
                "https://acct.table.core.windows.net/t(PartitionKey='a',RowKey='b')?$format=json",
                ("/t(PartitionKey='a',RowKey='b')", Some("$format=json")),
            ),
            ("/devstoreaccount1/t?", ("/devstoreaccount1/t", Some(""))),
            ("/devstoreaccount1/t", ("/devstoreaccount1/t", None)),
            ("http://host", ("/", None)),
            ("http://host:1?x=1", ("/", Some("x=1"))),
            ("http://host/p#frag", ("/p", None)),
            ("t(PartitionKey='a')", ("t(PartitionKey='a')", None)),
            (
                "/t(PartitionKey='a%3A//b')",
                ("/t(PartitionKey='a%3A//b')", None),
            ),
            // Not a scheme: ':' inside a key before "//".
            (
                "/t(PartitionKey='x://y')",
                ("/t(PartitionKey='x://y')", None),
            ),
            ("", ("/", None)),
        ];
        for (url, want) in cases {
            assert_eq!(req(url).path_and_query(), *want, "url {url:?}");
        }
    }

    #[test]
    fn header_is_case_insensitive_and_first_wins() {
        let r = req("/");
        assert_eq!(r.header("IF-MATCH"), Some("*"));
        assert_eq!(r.header("if-match"), Some("*"));
        assert_eq!(r.header("Prefer"), None);
    }

    #[test]
    fn errors_display() {
        let e = BatchDecodeError::GetInChangeset { index: 2 };
        assert_eq!(
            e.to_string(),
            "operation 2 is a GET, which a change set cannot contain"
        );
        let e = BatchDecodeError::MalformedPart {
            index: Some(0),
            problem: PartProblem::MissingRequestLine,
        };
        assert_eq!(
            e.to_string(),
            "operation 0 of the change set: no request line"
        );
        let e = BatchDecodeError::MissingBoundary {
            level: MultipartLevel::Changeset,
        };
        assert_eq!(
            e.to_string(),
            "the change set Content-Type has no boundary parameter"
        );
    }
}
